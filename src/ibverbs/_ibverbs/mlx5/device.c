/*
 * device.c - the device-level mlx5 direct verbs: mlx5.is_supported,
 * mlx5.open_device, mlx5.query_device, mlx5.get_data_direct_sysfs_path
 * and mlx5.reg_dmabuf_mr.
 *
 * A device is named as ibverbs.Context takes it: a str, or a Device
 * record of get_device_list() (its name).  Each call looks the name up in
 * a fresh ibv_get_device_list(), calls the verb with that struct
 * ibv_device, and frees the list.
 */
#include "mlx5/mlx5.h"
#include "mem/mem.h"
#include <stddef.h>
#include <string.h>

/* The device's name from a str or an object with a str .name: a new
 * UTF-8 bytes object, or NULL with TypeError/ValueError naming "device". */
static PyObject *device_name_bytes(PyObject *device)
{
	PyObject *name, *utf8;

	if (PyUnicode_Check(device)) {
		name = device;
		Py_INCREF(name);
	} else {
		name = PyObject_GetAttrString(device, "name");
		if (name == NULL || !PyUnicode_Check(name)) {
			if (name == NULL &&
			    !PyErr_ExceptionMatches(PyExc_AttributeError))
				return NULL;
			PyErr_Clear();
			Py_XDECREF(name);
			arg_type_error_hint("device", "str or Device", 0,
					    device, "a device's name");
			return NULL;
		}
	}
	utf8 = PyUnicode_AsUTF8String(name);
	Py_DECREF(name);
	if (utf8 == NULL)
		return NULL;
	if ((Py_ssize_t)strlen(PyBytes_AsString(utf8)) != PyBytes_Size(utf8)) {
		Py_DECREF(utf8);
		PyErr_SetString(PyExc_ValueError,
				"device: embedded null character");
		return NULL;
	}
	return utf8;
}

/* The device list and, in *dev, the device called name (verb: for the
 * error).  The list to free with IBV.free_device_list, or NULL with
 * VerbsError(ENODEV) set. */
static struct ibv_device **device_lookup(const char *name, const char *verb,
					 struct ibv_device **dev)
{
	struct ibv_device **list;
	int i, n = 0;

	errno = 0;
	list = IBV.get_device_list(&n);
	if (list == NULL) {
		verbs_error_fmt(errno && errno != ENOSYS ? errno : ENODEV,
				"ibv_get_device_list",
				"cannot list RDMA devices to find %s", name);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(IBV.get_device_name(list[i]), name) == 0) {
			*dev = list[i];
			return list;
		}
	}
	IBV.free_device_list(list);
	verbs_error_fmt(ENODEV, verb, "no RDMA device named '%s'", name);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* mlx5.is_supported(device)                                           */
/* ------------------------------------------------------------------ */

METHOD_DOC(mlx5_mod_is_supported,
	   "Whether the device is driven by the mlx5 provider (an NVIDIA\n"
	   "ConnectX or BlueField NIC): the mlx5 direct verbs work on it\n"
	   "and on what it makes.\n"
	   "\n"
	   "Wraps ``mlx5dv_is_supported`` (man page mlx5dv_is_supported(3),\n"
	   "rdma-core 22).  False on Soft-RoCE (rxe), siw and EFA devices.\n"
	   "\n"
	   "Args:\n"
	   "    device: the device's name, or a Device of\n"
	   "        ``ibverbs.get_device_list()``.\n"
	   "\n"
	   "Returns:\n"
	   "    True or False.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: device is neither a str nor a Device.\n"
	   "    ImportError: libmlx5.so.1 cannot be loaded (install\n"
	   "        ibverbs-providers).\n"
	   "    VerbsError: ENODEV when no device has that name;\n"
	   "        EOPNOTSUPP when the loaded libmlx5 predates rdma-core\n"
	   "        22.");

#define IS_SUPPORTED_ARGS(X, S) X(S, OBJECT, PyObject *, device)
ARGS_FUNCTION(extern, mlx5_mod_is_supported, "_mlx5_is_supported",
	      IS_SUPPORTED_ARGS, mod, a)
{
	struct ibv_device **list, *dev = NULL;
	PyObject *name;
	bool ok;

	MLX5_NEED(is_supported);
	name = device_name_bytes(a->device);
	if (name == NULL)
		return NULL;
	list = device_lookup(PyBytes_AsString(name), "mlx5dv_is_supported",
			     &dev);
	Py_DECREF(name);
	if (list == NULL)
		return NULL;
	ok = MLX5.is_supported(dev);
	IBV.free_device_list(list);
	return PyBool_FromLong(ok);
}

/* ------------------------------------------------------------------ */
/* The mirror of struct mlx5dv_context, checked against the header      */
/* ------------------------------------------------------------------ */

#define M5_SAME(f)                                                       \
	_Static_assert(                                                  \
		offsetof(struct m5_context, f) ==                        \
				offsetof(struct mlx5dv_context, f) &&    \
			sizeof(((struct m5_context *)0)->f) ==           \
				sizeof(((struct mlx5dv_context *)0)->f), \
		"struct m5_context." #f " differs from mlx5dv.h")
M5_SAME(version);
M5_SAME(flags);
M5_SAME(comp_mask);
M5_SAME(cqe_comp_caps);
M5_SAME(sw_parsing_caps);
M5_SAME(striding_rq_caps);
M5_SAME(tunnel_offloads_caps);
M5_SAME(max_dynamic_bfregs);
M5_SAME(max_clock_info_update_nsec);
M5_SAME(flow_action_flags);
M5_SAME(dc_odp_caps);
M5_SAME(hca_core_clock);
M5_SAME(num_lag_ports);
_Static_assert(offsetof(struct m5_context_attr, comp_mask) ==
		       offsetof(struct mlx5dv_context_attr, comp_mask),
	       "struct m5_context_attr differs from mlx5dv.h");
#ifdef IBVERBS_HAVE_MLX5DV_DCI_STREAMS
M5_SAME(sig_caps);
M5_SAME(dci_streams_caps);
M5_SAME(max_wr_memcpy_length);
M5_SAME(crypto_caps);
#endif
#ifdef IBVERBS_HAVE_MLX5DV_MAX_DC_RD_ATOM
M5_SAME(max_dc_rd_atom);
M5_SAME(max_dc_init_rd_atom);
#endif
#ifdef IBVERBS_HAVE_MLX5DV_REG_C0
M5_SAME(reg_c0);
#endif
#ifdef IBVERBS_HAVE_MLX5DV_OOO
M5_SAME(ooo_recv_wrs_caps);
_Static_assert(sizeof(struct m5_context) == sizeof(struct mlx5dv_context),
	       "struct m5_context's size differs from mlx5dv.h");
#endif
/* rdma-core 65's attr ends in fds (read only with its comp_mask bit);
 * older headers' is a prefix of it. */
_Static_assert(sizeof(struct m5_context_attr) >=
		       sizeof(struct mlx5dv_context_attr),
	       "struct m5_context_attr is shorter than mlx5dv.h's");
_Static_assert(offsetof(struct m5_context_attr, flags) ==
		       offsetof(struct mlx5dv_context_attr, flags),
	       "struct m5_context_attr differs from mlx5dv.h");
#undef M5_SAME

/* ------------------------------------------------------------------ */
/* mlx5.open_device(device, flags=0)                                   */
/* ------------------------------------------------------------------ */

/* A Context opened by mlx5dv_open_device: ibv_close_device closes it, as
 * any Context (device/context.c's kind does the same). */
static int m5_context_destroy(Handle *h)
{
	return IBV.close_device(h->obj);
}
static const HandleKind m5_context_kind = { "Context", "ibv_close_device",
					    m5_context_destroy, NULL };

METHOD_DOC(mlx5_mod_open_device,
	   "Open an mlx5 device with the mlx5 provider's options.\n"
	   "\n"
	   "Wraps ``mlx5dv_open_device`` (man page mlx5dv_open_device(3),\n"
	   "rdma-core 21).  ``flags`` is ``mlx5dv_context_attr.flags``\n"
	   "(``CONTEXT_FLAGS_DEVX`` = 1: a DEVX context, for the raw\n"
	   "firmware commands); ``comp_mask`` is 0.\n"
	   "\n"
	   "Args:\n"
	   "    device: the device's name, or a Device.\n"
	   "    flags: ``MLX5DV_CONTEXT_FLAGS_*`` bits.\n"
	   "\n"
	   "Returns:\n"
	   "    An ``ibverbs.Context``, as ``ibverbs.Context(name)`` gives.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: device is neither a str nor a Device.\n"
	   "    ValueError: flags is out of range.\n"
	   "    ImportError: libmlx5.so.1 cannot be loaded.\n"
	   "    VerbsError: ENODEV when no device has that name;\n"
	   "        EOPNOTSUPP on a device of another provider (Soft-RoCE,\n"
	   "        EFA) or when libmlx5 predates rdma-core 21; else the\n"
	   "        verb failed (``errno``).");

#define OPEN_DEVICE_ARGS(X, S)           \
	X(S, OBJECT, PyObject *, device) \
	X(S, UINT, uint32_t, flags, .flags = ARG_OPT)
ARGS_FUNCTION(extern, mlx5_mod_open_device, "_mlx5_open_device",
	      OPEN_DEVICE_ARGS, mod, a)
{
	struct m5_context_attr attr;
	struct ibv_device **list, *dev = NULL;
	struct ibv_context *ctx;
	ContextObject *self;
	PyObject *name;
	int err;

	MLX5_NEED(open_device);
	name = device_name_bytes(a->device);
	if (name == NULL)
		return NULL;
	list = device_lookup(PyBytes_AsString(name), "mlx5dv_open_device",
			     &dev);
	if (list == NULL) {
		Py_DECREF(name);
		return NULL;
	}
	memset(&attr, 0, sizeof(attr));
	attr.flags = a->flags;
	errno = 0;
	ctx = MLX5.open_device(dev, (struct mlx5dv_context_attr *)&attr);
	err = errno_or(EOPNOTSUPP);
	IBV.free_device_list(list);
	if (ctx == NULL) {
		PyObject *e = verbs_error_fmt(err, "mlx5dv_open_device",
					      "%s flags=0x%x",
					      PyBytes_AsString(name),
					      (unsigned)a->flags);
		Py_DECREF(name);
		return e;
	}
	self = (ContextObject *)PyType_GenericAlloc(ST.Context_type, 0);
	if (self == NULL) {
		IBV.close_device(ctx);
		Py_DECREF(name);
		return NULL;
	}
	handle_init(HANDLE(self), &m5_context_kind, NULL);
	HANDLE_SET_OBJ(self, ctx);
	self->name = PyUnicode_FromString(PyBytes_AsString(name));
	Py_DECREF(name);
	if (self->name == NULL) {
		Py_DECREF(self);
		return NULL;
	}
	return (PyObject *)self;
}

/* ------------------------------------------------------------------ */
/* mlx5.query_device(ctx)                                              */
/* ------------------------------------------------------------------ */

/* d[key] = a dict of the n (name, value) pairs, or None when the bit
 * was not returned.  0 / -1. */
static int set_group(PyObject *d, const char *key, int have, int n,
		     const char *const *names, const uint64_t *vals)
{
	PyObject *g;
	int i;

	if (!have)
		return dict_set_steal(d, key, (Py_INCREF(Py_None), Py_None));
	g = PyDict_New();
	if (g == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (dict_set_u64(g, names[i], vals[i]) < 0) {
			Py_DECREF(g);
			return -1;
		}
	}
	return dict_set_steal(d, key, g);
}

/* d[key] = v, or None when the bit was not returned.  0 / -1. */
static int set_opt(PyObject *d, const char *key, int have, uint64_t v)
{
	if (!have)
		return dict_set_steal(d, key, (Py_INCREF(Py_None), Py_None));
	return dict_set_u64(d, key, v);
}

#define GROUP(key, bit, ...)                                                 \
	do {                                                                 \
		static const char *const n_[] = { __VA_ARGS__ };             \
		if (set_group(d, key, (m & (bit)) != 0,                      \
			      (int)(sizeof(n_) / sizeof(n_[0])), n_, v) < 0) \
			goto fail;                                           \
	} while (0)

static PyObject *context_dict(const struct m5_context *c)
{
	PyObject *d = PyDict_New();
	uint64_t m = c->comp_mask, v[5];

	if (d == NULL)
		return NULL;
	if (dict_set_u64(d, "version", c->version) < 0 ||
	    dict_set_u64(d, "flags", c->flags) < 0 ||
	    dict_set_u64(d, "comp_mask", c->comp_mask) < 0)
		goto fail;
	v[0] = c->cqe_comp_caps.max_num;
	v[1] = c->cqe_comp_caps.supported_format;
	GROUP("cqe_comp_caps", 1u << 0, "max_num", "supported_format");
	v[0] = c->sw_parsing_caps.sw_parsing_offloads;
	v[1] = c->sw_parsing_caps.supported_qpts;
	GROUP("sw_parsing_caps", 1u << 1, "sw_parsing_offloads",
	      "supported_qpts");
	v[0] = c->striding_rq_caps.min_single_stride_log_num_of_bytes;
	v[1] = c->striding_rq_caps.max_single_stride_log_num_of_bytes;
	v[2] = c->striding_rq_caps.min_single_wqe_log_num_of_strides;
	v[3] = c->striding_rq_caps.max_single_wqe_log_num_of_strides;
	v[4] = c->striding_rq_caps.supported_qpts;
	GROUP("striding_rq_caps", 1u << 2, "min_single_stride_log_num_of_bytes",
	      "max_single_stride_log_num_of_bytes",
	      "min_single_wqe_log_num_of_strides",
	      "max_single_wqe_log_num_of_strides", "supported_qpts");
	if (set_opt(d, "tunnel_offloads_caps", m & (1u << 3),
		    c->tunnel_offloads_caps) < 0 ||
	    set_opt(d, "max_dynamic_bfregs", m & (1u << 4),
		    c->max_dynamic_bfregs) < 0 ||
	    set_opt(d, "max_clock_info_update_nsec", m & (1u << 5),
		    c->max_clock_info_update_nsec) < 0 ||
	    set_opt(d, "flow_action_flags", m & (1u << 6),
		    c->flow_action_flags) < 0 ||
	    set_opt(d, "dc_odp_caps", m & (1u << 7), c->dc_odp_caps) < 0 ||
	    set_opt(d, "hca_core_clock", m & (1u << 8),
		    (uint64_t)(uintptr_t)c->hca_core_clock) < 0 ||
	    set_opt(d, "num_lag_ports", m & (1u << 9), c->num_lag_ports) < 0)
		goto fail;
	v[0] = c->sig_caps.block_size;
	v[1] = c->sig_caps.block_prot;
	v[2] = c->sig_caps.t10dif_bg;
	v[3] = c->sig_caps.crc_type;
	GROUP("sig_caps", 1u << 10, "block_size", "block_prot", "t10dif_bg",
	      "crc_type");
	v[0] = c->dci_streams_caps.max_log_num_concurent;
	v[1] = c->dci_streams_caps.max_log_num_errored;
	GROUP("dci_streams_caps", 1u << 11, "max_log_num_concurent",
	      "max_log_num_errored");
	if (set_opt(d, "max_wr_memcpy_length", m & (1u << 12),
		    c->max_wr_memcpy_length) < 0)
		goto fail;
	v[0] = c->crypto_caps.failed_selftests;
	v[1] = c->crypto_caps.crypto_engines;
	v[2] = c->crypto_caps.wrapped_import_method;
	v[3] = c->crypto_caps.log_max_num_deks;
	v[4] = c->crypto_caps.flags;
	GROUP("crypto_caps", 1u << 13, "failed_selftests", "crypto_engines",
	      "wrapped_import_method", "log_max_num_deks", "flags");
	if (set_opt(d, "max_dc_rd_atom", m & (1u << 14), c->max_dc_rd_atom) <
		    0 ||
	    set_opt(d, "max_dc_init_rd_atom", m & (1u << 14),
		    c->max_dc_init_rd_atom) < 0)
		goto fail;
	v[0] = c->reg_c0.value;
	v[1] = c->reg_c0.mask;
	GROUP("reg_c0", 1u << 15, "value", "mask");
	v[0] = c->ooo_recv_wrs_caps.max_rc;
	v[1] = c->ooo_recv_wrs_caps.max_xrc;
	v[2] = c->ooo_recv_wrs_caps.max_dct;
	v[3] = c->ooo_recv_wrs_caps.max_ud;
	v[4] = c->ooo_recv_wrs_caps.max_uc;
	GROUP("ooo_recv_wrs_caps", 1u << 16, "max_rc", "max_xrc", "max_dct",
	      "max_ud", "max_uc");
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}
#undef GROUP

METHOD_DOC(mlx5_mod_query_device,
	   "Query the mlx5 capabilities of a device.\n"
	   "\n"
	   "Wraps ``mlx5dv_query_device`` (man page mlx5dv_query_device(3),\n"
	   "rdma-core 13), asking for every ``comp_mask`` bit this build\n"
	   "knows (CQE compression ... out-of-order receive WRs).\n"
	   "\n"
	   "Args:\n"
	   "    ctx: an open Context.\n"
	   "\n"
	   "Returns:\n"
	   "    A dict of ``struct mlx5dv_context``'s fields; a field (or a\n"
	   "    group of caps, itself a dict) the library did not fill is\n"
	   "    None.  ``comp_mask`` tells what it filled.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: ctx is not a Context.\n"
	   "    VerbsError: EBADF once ctx is closed; EOPNOTSUPP on a\n"
	   "        device of another provider; else the verb failed.");

#define QUERY_DEVICE_ARGS(X, S) \
	X(S, HANDLE, PyObject *, ctx, Context, ARG_ANY_PARENT)
ARGS_DECLARE(query_device, QUERY_DEVICE_ARGS);
METHOD_ARGS(mlx5_mod_query_device, "_mlx5_query_device", query_device_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_query_device, mod, struct query_device_args,
		 a)
{
	struct m5_context c;
	int rc;

	MLX5_NEED(query_device);
	memset(&c, 0, sizeof(c));
	c.comp_mask = M5_CONTEXT_MASK_ALL;
	rc = MLX5.query_device(HANDLE(a->ctx)->obj,
			       (struct mlx5dv_context *)&c);
	if (rc != 0)
		return verbs_error(rc < 0 ? -rc : rc, "mlx5dv_query_device");
	c.comp_mask &= M5_CONTEXT_MASK_ALL;
	return context_dict(&c);
}

/* ------------------------------------------------------------------ */
/* mlx5.get_data_direct_sysfs_path(ctx)                                */
/* ------------------------------------------------------------------ */

METHOD_DOC(mlx5_mod_get_data_direct_sysfs_path,
	   "The sysfs path of the data-direct device beside this NIC.\n"
	   "\n"
	   "Wraps ``mlx5dv_get_data_direct_sysfs_path`` (man page\n"
	   "mlx5dv_get_data_direct_sysfs_path(3), rdma-core 54): where a\n"
	   "data-direct device exists, GPU memory registered with\n"
	   "``reg_dmabuf_mr(..., mlx5_access=REG_DMABUF_ACCESS_DATA_DIRECT)``\n"
	   "is reached through it; its PCI location picks the GPU.\n"
	   "\n"
	   "Args:\n"
	   "    ctx: an open Context.\n"
	   "\n"
	   "Returns:\n"
	   "    The path (str).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: ctx is not a Context.\n"
	   "    VerbsError: EBADF once ctx is closed; ENODEV when the\n"
	   "        device has no data-direct device; EOPNOTSUPP on another\n"
	   "        provider's device or a libmlx5 before rdma-core 54.");

METHOD_ARGS(mlx5_mod_get_data_direct_sysfs_path,
	    "_mlx5_get_data_direct_sysfs_path", query_device_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_get_data_direct_sysfs_path, mod,
		 struct query_device_args, a)
{
	char buf[PATH_MAX];
	int rc;

	MLX5_NEED(get_data_direct_sysfs_path);
	memset(buf, 0, sizeof(buf));
	rc = MLX5.get_data_direct_sysfs_path(HANDLE(a->ctx)->obj, buf,
					     sizeof(buf));
	if (rc != 0)
		return verbs_error(rc < 0 ? -rc : rc,
				   "mlx5dv_get_data_direct_sysfs_path");
	buf[sizeof(buf) - 1] = '\0';
	return PyUnicode_DecodeFSDefault(buf);
}

/* ------------------------------------------------------------------ */
/* mlx5.reg_dmabuf_mr(pd, offset, length, iova, fd, access, ...)       */
/* ------------------------------------------------------------------ */

METHOD_DOC(mlx5_mod_reg_dmabuf_mr,
	   "Register a dma-buf (GPU memory) with mlx5 options: data direct.\n"
	   "\n"
	   "As ``PD.reg_dmabuf_mr``, plus ``mlx5_access``:\n"
	   "``REG_DMABUF_ACCESS_DATA_DIRECT`` (1) maps it through the\n"
	   "data-direct device (``get_data_direct_sysfs_path``).  The\n"
	   "verb runs with the GIL released.\n"
	   "\n"
	   "Wraps ``mlx5dv_reg_dmabuf_mr`` (man page\n"
	   "mlx5dv_reg_dmabuf_mr(3), rdma-core 54).\n"
	   "\n"
	   "Args:\n"
	   "    pd: an open PD.\n"
	   "    offset: start of the region within the dma-buf.\n"
	   "    length: bytes, 1 or more.\n"
	   "    iova: the address work requests use for its first byte.\n"
	   "    fd: the dma-buf file descriptor.\n"
	   "    access: ``AccessFlags``.\n"
	   "    mlx5_access: ``MLX5DV_REG_DMABUF_ACCESS_*`` bits.\n"
	   "    owner: the object that owns the memory, or None.\n"
	   "\n"
	   "Returns:\n"
	   "    An ``ibverbs.MR`` (``is_dmabuf`` True).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: length is 0 or a value is out of range.\n"
	   "    VerbsError: EBADF for a negative fd or a closed PD;\n"
	   "        EOPNOTSUPP on another provider's PD or a libmlx5\n"
	   "        before rdma-core 54; else the verb failed.");

#define REG_DMABUF_ARGS(X, S)                                   \
	X(S, HANDLE, PyObject *, pd, PD, ARG_ANY_PARENT)        \
	X(S, UINT, uint64_t, offset)                            \
	X(S, INT, uint64_t, length, 1, SIZE_MAX)                \
	X(S, UINT, uint64_t, iova)                              \
	X(S, INT, int, fd, INT_MIN, INT_MAX)                    \
	X(S, FLAGS, int, access, AccessFlags, .flags = ARG_OPT) \
	X(S, UINT, int, mlx5_access, .flags = ARG_KWOPT)        \
	X(S, OBJECT, PyObject *, owner, .flags = ARG_KWOPT | ARG_NONE)
ARGS_DECLARE(reg_dmabuf, REG_DMABUF_ARGS);
METHOD_ARGS(mlx5_mod_reg_dmabuf_mr, "_mlx5_reg_dmabuf_mr", reg_dmabuf_params);

PyObject *mlx5_mod_reg_dmabuf_mr(PyObject *mod, PyObject *args, PyObject *kw)
{
	struct reg_dmabuf_args a;
	struct ibv_mr *mr;
	PyObject *o;
	int err;

	if (args_parse(&mlx5_mod_reg_dmabuf_mr_args, NULL, args, kw, &a) < 0)
		return NULL;
	if (a.fd < 0)
		return verbs_error_fmt(EBADF, "mlx5dv_reg_dmabuf_mr",
				       "fd %d is not a file descriptor", a.fd);
	MLX5_NEED(reg_dmabuf_mr);
	HANDLE_BUSY_ENTER(a.pd);
	Py_BEGIN_ALLOW_THREADS
	errno = 0;
	mr = MLX5.reg_dmabuf_mr(HANDLE(a.pd)->obj, a.offset, a.length, a.iova,
				a.fd, a.access, a.mlx5_access);
	err = errno_or(EINVAL);
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(a.pd);
	if (mr == NULL)
		return verbs_error_fmt(err, "mlx5dv_reg_dmabuf_mr",
				       "fd=%d length=%llu access=0x%x "
				       "mlx5_access=0x%x",
				       a.fd, (unsigned long long)a.length,
				       (unsigned)a.access,
				       (unsigned)a.mlx5_access);
	o = mr_wrap(NULL, (PDObject *)a.pd, mr, a.owner, a.iova, a.length,
		    a.access);
	if (o != NULL)
		((MRObject *)o)->is_dmabuf = 1;
	return o;
}
