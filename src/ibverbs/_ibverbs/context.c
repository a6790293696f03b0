/*
 * context.c - Context: an opened device (ibv_context) and its queries.
 */
#include "ibverbs.h"
#include <string.h>
#include <arpa/inet.h>

static int context_destroy(Handle *h)
{
	return IBV.close_device((struct ibv_context *)h->obj);
}

static const HandleKind context_kind = { "Context", "ibv_close_device",
					 context_destroy, NULL };

#define CTX(self) ((struct ibv_context *)HANDLE(self)->obj)

/* Context(name): open the device called name. */
static PyObject *context_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", NULL };
	const char *name;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	ContextObject *self;
	int i, n = 0, err = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s:Context", kwlist, &name))
		return NULL;
	errno = 0;
	list = IBV.get_device_list(&n);
	if (list == NULL)
		return verbs_error_fmt(
			errno == ENOSYS ? ENODEV : (errno ? errno : ENODEV),
			"ibv_get_device_list",
			"cannot list RDMA devices to open %s", name);
	for (i = 0; i < n; i++) {
		if (strcmp(IBV.get_device_name(list[i]), name) == 0) {
			errno = 0;
			ctx = IBV.open_device(list[i]);
			err = errno ? errno : ENODEV;
			break;
		}
	}
	IBV.free_device_list(list);
	if (i == n)
		return verbs_error_fmt(ENODEV, "ibv_open_device",
				       "no RDMA device named '%s'", name);
	if (ctx == NULL)
		return verbs_error_fmt(err, "ibv_open_device", "%s", name);

	self = (ContextObject *)PyType_GenericAlloc(type, 0);
	if (self == NULL) {
		IBV.close_device(ctx);
		return NULL;
	}
	handle_init(HANDLE(self), &context_kind, NULL);
	HANDLE(self)->obj = ctx;
	self->name = PyUnicode_FromString(name);
	if (self->name == NULL) {
		Py_DECREF(self);
		return NULL;
	}
	return (PyObject *)self;
}

static int context_traverse(PyObject *self, visitproc visit, void *arg)
{
	return handle_traverse(HANDLE(self), visit, arg);
}

static void context_dealloc(PyObject *self)
{
	ContextObject *c = (ContextObject *)self;

	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	Py_CLEAR(c->name);
	handle_dealloc(HANDLE(self));
}

/* ------------------------------------------------------------------ */
/* Queries                                                             */
/* ------------------------------------------------------------------ */

static PyObject *context_query_device(PyObject *self, PyObject *unused)
{
	struct ibv_device_attr a;
	PyObject *d;
	int rc;

	HANDLE_CHECK(self);
	memset(&a, 0, sizeof(a));
	rc = IBV.query_device(CTX(self), &a);
	if (rc != 0)
		return verbs_error(rc, "ibv_query_device");
	d = PyDict_New();
	if (d == NULL)
		return NULL;
/* clang-format off */
#define U(f) if (dict_set_u64(d, #f, (uint64_t)a.f) < 0) goto fail;
	if (dict_set_str(d, "fw_ver", a.fw_ver) < 0)
		goto fail;
	U(node_guid) U(sys_image_guid) U(max_mr_size) U(page_size_cap)
	U(vendor_id) U(vendor_part_id) U(hw_ver) U(max_qp) U(max_qp_wr)
	U(device_cap_flags) U(max_sge) U(max_sge_rd) U(max_cq) U(max_cqe)
	U(max_mr) U(max_pd) U(max_qp_rd_atom) U(max_ee_rd_atom)
	U(max_res_rd_atom) U(max_qp_init_rd_atom) U(max_ee_init_rd_atom)
	U(atomic_cap) U(max_ee) U(max_rdd) U(max_mw) U(max_raw_ipv6_qp)
	U(max_raw_ethy_qp) U(max_mcast_grp) U(max_mcast_qp_attach)
	U(max_total_mcast_qp_attach) U(max_ah) U(max_fmr) U(max_map_per_fmr)
	U(max_srq) U(max_srq_wr) U(max_srq_sge) U(max_pkeys)
	U(local_ca_ack_delay) U(phys_port_cnt)
#undef U
		/* clang-format on */
		/* GUIDs are big-endian on the wire; report them as numbers. */
		if (dict_set_u64(d, "node_guid", be64toh(a.node_guid)) < 0 ||
		    dict_set_u64(d, "sys_image_guid",
				 be64toh(a.sys_image_guid)) < 0) goto fail;
	return make_record(ST.DeviceAttr, d);
fail:
	Py_DECREF(d);
	return NULL;
}

static int parse_port(PyObject *o, uint8_t *port)
{
	long v;

	if (arg_int(o, "port", 1, 255, &v) < 0)
		return -1;
	*port = (uint8_t)v;
	return 0;
}

/* ibv_query_port is a header macro: port_query (attrs.c) does what it
 * does, through the dlsym table. */

static PyObject *context_query_port(PyObject *self, PyObject *args,
				    PyObject *kw)
{
	static char *kwlist[] = { "port_num", NULL };
	struct ibv_port_attr a;
	PyObject *arg;
	uint8_t port;
	PyObject *d;
	int rc;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:query_port", kwlist,
					 &arg))
		return NULL;
	if (parse_port(arg, &port) < 0)
		return NULL;
	rc = port_query(CTX(self), port, &a);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_query_port", "port %d", port);
	d = PyDict_New();
	if (d == NULL)
		return NULL;
/* clang-format off */
#define U(f) if (dict_set_u64(d, #f, (uint64_t)a.f) < 0) goto fail;
	U(state) U(max_mtu) U(active_mtu) U(gid_tbl_len) U(port_cap_flags)
	U(max_msg_sz) U(bad_pkey_cntr) U(qkey_viol_cntr) U(pkey_tbl_len)
	U(lid) U(sm_lid) U(lmc) U(max_vl_num) U(sm_sl) U(subnet_timeout)
	U(init_type_reply) U(active_width) U(active_speed) U(phys_state)
	U(link_layer) U(flags) U(port_cap_flags2)
#undef U
		/* clang-format on */
		if (dict_set_int(d, "port_num", port) < 0) goto fail;
	return make_record(ST.PortAttr, d);
fail:
	Py_DECREF(d);
	return NULL;
}

static PyObject *gid_to_py(const union ibv_gid *gid)
{
	PyObject *raw = PyBytes_FromStringAndSize((const char *)gid->raw, 16);

	if (raw == NULL)
		return NULL;
	return PyObject_CallFunctionObjArgs(ST.Gid, raw,
					    NULL) /* steals nothing */;
}

static PyObject *context_query_gid(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "port_num", "index", NULL };
	PyObject *port_o, *index_o, *raw, *res;
	union ibv_gid gid;
	uint8_t port;
	long index;
	int rc;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:query_gid", kwlist,
					 &port_o, &index_o))
		return NULL;
	if (parse_port(port_o, &port) < 0 ||
	    arg_int(index_o, "index", 0, INT32_MAX, &index) < 0)
		return NULL;
	rc = IBV.query_gid(CTX(self), port, (int)index, &gid);
	if (rc != 0)
		return verbs_error_fmt(rc < 0 ? (errno ? errno : EINVAL) : rc,
				       "ibv_query_gid", "port %d index %ld",
				       port, index);
	raw = PyBytes_FromStringAndSize((const char *)gid.raw, 16);
	if (raw == NULL)
		return NULL;
	res = PyObject_CallFunctionObjArgs(ST.Gid, raw, NULL);
	Py_DECREF(raw);
	return res;
}

/* query_gid_ex(port, index) -> (Gid, gid_type, ndev_ifindex) */
static PyObject *context_query_gid_ex(PyObject *self, PyObject *args)
{
	PyObject *port_o, *index_o, *g;
	struct ibv_gid_entry e;
	uint8_t port;
	long index;
	int rc;

	HANDLE_CHECK(self);
	IBV_REQUIRE_OPTIONAL(query_gid_ex, _ibv_query_gid_ex, "rdma-core 32");
	if (!PyArg_UnpackTuple(args, "query_gid_ex", 2, 2, &port_o, &index_o))
		return NULL;
	if (parse_port(port_o, &port) < 0 ||
	    arg_int(index_o, "index", 0, INT32_MAX, &index) < 0)
		return NULL;
	memset(&e, 0, sizeof(e));
	rc = IBV.query_gid_ex(CTX(self), port, (uint32_t)index, &e, 0,
			      sizeof(e));
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_query_gid_ex",
				       "port %d index %ld", port, index);
	g = gid_to_py(&e.gid);
	if (g == NULL)
		return NULL;
	return Py_BuildValue("(NII)", g, (unsigned)e.gid_type,
			     (unsigned)e.ndev_ifindex);
}

static PyObject *context_query_pkey(PyObject *self, PyObject *args)
{
	PyObject *port_o, *index_o;
	uint8_t port;
	long index;
	__be16 pkey;
	int rc;

	HANDLE_CHECK(self);
	if (!PyArg_UnpackTuple(args, "query_pkey", 2, 2, &port_o, &index_o))
		return NULL;
	if (parse_port(port_o, &port) < 0 ||
	    arg_int(index_o, "index", 0, INT32_MAX, &index) < 0)
		return NULL;
	rc = IBV.query_pkey(CTX(self), port, (int)index, &pkey);
	if (rc != 0)
		return verbs_error_fmt(rc < 0 ? (errno ? errno : EINVAL) : rc,
				       "ibv_query_pkey", "port %d index %ld",
				       port, index);
	return PyLong_FromLong(ntohs(pkey));
}

/* ------------------------------------------------------------------ */
/* Factories                                                           */
/* ------------------------------------------------------------------ */

static PyObject *context_alloc_pd(PyObject *self, PyObject *unused);

static PyObject *context_create_cq(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return cq_create((ContextObject *)self, args, kw);
}

static PyObject *context_create_qp_ex(PyObject *self, PyObject *args,
				      PyObject *kw)
{
	HANDLE_CHECK(self);
	return qpex_create_ctx((ContextObject *)self, args, kw);
}

static PyObject *context_create_comp_channel(PyObject *self, PyObject *unused)
{
	HANDLE_CHECK(self);
	return channel_create((ContextObject *)self);
}

static PyObject *context_get_async_event(PyObject *self, PyObject *unused)
{
	HANDLE_CHECK(self);
	return async_event_get((ContextObject *)self);
}

/* ------------------------------------------------------------------ */
/* Attributes                                                          */
/* ------------------------------------------------------------------ */

static PyObject *context_get_name(PyObject *self, void *closure)
{
	PyObject *n = ((ContextObject *)self)->name;

	Py_INCREF(n);
	return n;
}

static PyObject *context_get_num_comp_vectors(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromLong(CTX(self)->num_comp_vectors);
}

static PyObject *context_get_async_fd(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromLong(CTX(self)->async_fd);
}

static PyObject *context_get_cmd_fd(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromLong(CTX(self)->cmd_fd);
}

/* A Context with a parent was opened by librdmacm for a CMID (cm.c): the
 * device is the CM's, and only closing the CMID releases it. */
static int context_owned_by_cm(PyObject *self)
{
	Handle *owner = HANDLE(self)->parent;

	if (owner == NULL || HANDLE(self)->obj == NULL)
		return 0;
	verbs_error_fmt(EBUSY, "ibv_close_device",
			"this Context belongs to "
			"%R (librdmacm opened the device); close that instead",
			(PyObject *)owner);
	return 1;
}

static PyObject *context_close(PyObject *self, PyObject *unused)
{
	if (context_owned_by_cm(self))
		return NULL;
	return handle_meth_close(self, unused);
}

static PyObject *context_exit(PyObject *self, PyObject *args)
{
	if (context_owned_by_cm(self))
		return NULL;
	return handle_meth_exit(self, args);
}

static PyObject *context_repr(PyObject *self)
{
	return PyUnicode_FromFormat("<ibverbs.Context %R%s>",
				    ((ContextObject *)self)->name,
				    HANDLE(self)->obj ? "" : " closed");
}

static PyObject *context_ack_async_event(PyObject *self, PyObject *ev)
{
	HANDLE_CHECK(self);
	return async_event_ack_for((ContextObject *)self, ev);
}

static PyMethodDef context_methods[] = {
	{ "query_device", context_query_device, METH_NOARGS,
	  "ibv_query_device() -> DeviceAttr" },
	{ "query_port", KW context_query_port, METH_VARARGS | METH_KEYWORDS,
	  "query_port(port_num) -> PortAttr (ibv_query_port)" },
	{ "query_gid", KW context_query_gid, METH_VARARGS | METH_KEYWORDS,
	  "query_gid(port_num, index) -> Gid (ibv_query_gid)" },
	{ "query_gid_ex", context_query_gid_ex, METH_VARARGS,
	  "query_gid_ex(port, index) -> (Gid, gid_type, ndev_ifindex)" },
	{ "query_pkey", context_query_pkey, METH_VARARGS,
	  "query_pkey(port, index) -> int (ibv_query_pkey)" },
	{ "alloc_pd", context_alloc_pd, METH_NOARGS,
	  "alloc_pd() -> PD (ibv_alloc_pd)" },
	{ "create_cq", (PyCFunction)(void (*)(void))context_create_cq,
	  METH_VARARGS | METH_KEYWORDS,
	  "create_cq(cqe, channel=None, comp_vector=0) -> CQ" },
	{ "create_comp_channel", context_create_comp_channel, METH_NOARGS,
	  "create_comp_channel() -> CompChannel" },
	{ "get_async_event", context_get_async_event, METH_NOARGS,
	  "get_async_event() -> AsyncEvent; blocks (GIL released) unless "
	  "async_fd is non-blocking, then VerbsError(EAGAIN)." },
	{ "ack_async_event", context_ack_async_event, METH_O,
	  "ack_async_event(event): ack an AsyncEvent of this context "
	  "(ibv_ack_async_event; the same as event.ack(), idempotent)." },
	{ "close", context_close, METH_NOARGS,
	  "Close the device. Idempotent; EBUSY while children are open, and "
	  "for the Context of a CMID (close the CMID)." },
	{ "__enter__", handle_meth_enter, METH_NOARGS, NULL },
	{ "__exit__", context_exit, METH_VARARGS, NULL },
	{ "create_qp_ex", KW context_create_qp_ex, METH_VARARGS | METH_KEYWORDS,
	  "create_qp_ex(init_attr) -> QPEx (ibv_create_qp_ex; init_attr.pd "
	  "names the PD)" },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef context_getset[] = {
	{ "name", context_get_name, NULL, "device name", NULL },
	{ "num_comp_vectors", context_get_num_comp_vectors, NULL, NULL, NULL },
	{ "async_fd", context_get_async_fd, NULL,
	  "fd to select/poll for async events", NULL },
	{ "cmd_fd", context_get_cmd_fd, NULL, NULL, NULL },
	HANDLE_GETSETS,
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot context_slots[] = {
	{ Py_tp_doc, "Context(name): an opened RDMA device (ibv_context)." },
	{ Py_tp_new, context_new },
	{ Py_tp_dealloc, context_dealloc },
	{ Py_tp_traverse, context_traverse },
	{ Py_tp_repr, context_repr },
	{ Py_tp_methods, context_methods },
	{ Py_tp_getset, context_getset },
	{ 0, NULL }
};

PyType_Spec Context_spec = { "ibverbs._ibverbs.Context", sizeof(ContextObject),
			     0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			     context_slots };

/* ------------------------------------------------------------------ */
/* PD factory lives here because PD's constructor is trivial           */
/* ------------------------------------------------------------------ */

extern const HandleKind pd_kind; /* pd.c */

static PyObject *context_alloc_pd(PyObject *self, PyObject *unused)
{
	struct ibv_pd *pd;
	PDObject *o;

	HANDLE_CHECK(self);
	errno = 0;
	pd = IBV.alloc_pd(CTX(self));
	if (pd == NULL)
		return verbs_error_errno("ibv_alloc_pd");
	o = HANDLE_ALLOC(PDObject, ST.PD_type);
	if (o == NULL) {
		IBV.dealloc_pd(pd);
		return NULL;
	}
	handle_init(HANDLE(o), &pd_kind, HANDLE(self));
	HANDLE(o)->obj = pd;
	return (PyObject *)o;
}
