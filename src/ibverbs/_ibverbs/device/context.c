/*
 * context.c - Context: an opened device (ibv_context) and its queries.
 */
#include "ibverbs.h"
#include "counters/counters.h"
#include "cq/cq.h"
#include "device/device.h"
#include "mem/mem.h"
#include "qp/qp.h"
#include "wq/wq.h"
#include "xrc/xrc.h"
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <string.h>
#include <arpa/inet.h>

HANDLE_KIND(context_kind, "Context", "ibv_close_device", IBV.close_device,
	    NULL);

#define CTX(self) ((struct ibv_context *)HANDLE(self)->obj)

/* The device called name, opened; NULL with VerbsError set. */
static struct ibv_context *context_open_named(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int i, n = 0, err = 0;

	errno = 0;
	list = IBV.get_device_list(&n);
	if (list == NULL) {
		verbs_error_fmt(errno == ENOSYS ? ENODEV : errno_or(ENODEV),
				"ibv_get_device_list",
				"cannot list RDMA devices to open %s", name);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(IBV.get_device_name(list[i]), name) == 0) {
			errno = 0;
			ctx = IBV.open_device(list[i]);
			err = errno_or(ENODEV);
			break;
		}
	}
	IBV.free_device_list(list);
	if (i == n)
		verbs_error_fmt(ENODEV, "ibv_open_device",
				"no RDMA device named '%s'", name);
	else if (ctx == NULL)
		verbs_error_fmt(err, "ibv_open_device", "%s", name);
	return ctx;
}

#define CONTEXT_NEW_ARGS(X, S) X(S, TEXT, PyObject *, name)
ARGS_DECLARE(context_new, CONTEXT_NEW_ARGS);
METHOD_ARGS(context_new, "Context.__new__", context_new_params);

/* Context(name): open the device called name. */
static PyObject *context_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	struct context_new_args a;
	struct ibv_context *ctx;
	ContextObject *self;
	const char *name;
	PyObject *utf8;

	if (args_parse(&context_new_args, NULL, args, kw, &a) < 0)
		return NULL;
	/* The Limited API of 3.9 has no PyUnicode_AsUTF8: the name's bytes
	 * live in utf8 while the device is opened. */
	utf8 = PyUnicode_AsUTF8String(a.name);
	if (utf8 == NULL)
		return NULL;
	name = PyBytes_AsString(utf8);
	if (name != NULL && (Py_ssize_t)strlen(name) != PyBytes_Size(utf8)) {
		PyErr_SetString(PyExc_ValueError, "embedded null character");
		name = NULL;
	}
	ctx = name != NULL ? context_open_named(name) : NULL;
	if (ctx == NULL) {
		Py_DECREF(utf8);
		return NULL;
	}
	self = (ContextObject *)PyType_GenericAlloc(type, 0);
	if (self == NULL) {
		IBV.close_device(ctx);
		Py_DECREF(utf8);
		return NULL;
	}
	handle_init(HANDLE(self), &context_kind, NULL);
	HANDLE_SET_OBJ(self, ctx);
	self->name = PyUnicode_FromString(name); /* a str, of a subclass too */
	Py_DECREF(utf8);
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

PyDoc_STRVAR(context_query_device__doc__,
	     "Query the device's attributes and limits.\n"
	     "\n"
	     "Wraps ``ibv_query_device`` (man page ibv_query_device(3)).\n"
	     "\n"
	     "Returns:\n"
	     "    A DeviceAttr (fw_ver, node_guid, max_qp, max_cqe, max_mr,\n"
	     "    phys_port_cnt, ...); GUIDs are host-order ints.\n"
	     "\n"
	     "Raises:\n" DOC_RAISES_VERB("Context"));

static PyObject *context_query_device(PyObject *self, PyObject *unused)
{
	struct ibv_device_attr a;
	int rc;

	HANDLE_CHECK(self);
	memset(&a, 0, sizeof(a));
	rc = IBV.query_device(CTX(self), &a);
	if (rc != 0)
		return verbs_error(rc, "ibv_query_device");
	return device_attr_to_py(&a);
}

/* ibv_query_port is a header macro: port_query (attrs.c) does what it
 * does, through the dlsym table. */

PyDoc_STRVAR(context_query_port__doc__,
	     "Query a port's attributes (state, MTUs, LID, link layer, ...).\n"
	     "\n"
	     "Wraps ``ibv_query_port`` (man page ibv_query_port(3)).\n"
	     "\n"
	     "Args:\n"
	     "    port_num: the port, from 1.\n"
	     "\n"
	     "Returns:\n"
	     "    A PortAttr; its ``port_num`` is the port asked for.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: port_num is not an int.\n"
	     "    ValueError: port_num is outside 1..255.\n" DOC_RAISES_VERB_AS(
		     "Context", ", e.g. EINVAL for no such port"));

/* The fields of struct ibv_port_attr, as PortAttr holds them. */
#define PA(f) ATTR_INT(struct ibv_port_attr, f)
static const AttrField port_attr_fields[] = {
	PA(state),	    PA(max_mtu),
	PA(active_mtu),	    PA(gid_tbl_len),
	PA(port_cap_flags), PA(max_msg_sz),
	PA(bad_pkey_cntr),  PA(qkey_viol_cntr),
	PA(pkey_tbl_len),   PA(lid),
	PA(sm_lid),	    PA(lmc),
	PA(max_vl_num),	    PA(sm_sl),
	PA(subnet_timeout), PA(init_type_reply),
	PA(active_width),   PA(active_speed),
	PA(phys_state),	    PA(link_layer),
	PA(flags),	    PA(port_cap_flags2),
};
#undef PA

#define QUERY_PORT_ARGS(X, S) X(S, INT, uint8_t, port_num, 1, 255)
ARGS_METHOD(static, context_query_port, "Context.query_port", QUERY_PORT_ARGS,
	    self, q)
{
	struct ibv_port_attr a;
	uint8_t port;
	PyObject *d;
	int rc;

	port = q->port_num;
	rc = port_query(CTX(self), port, &a);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_query_port", "port %d", port);
	d = PyDict_New();
	if (d == NULL)
		return NULL;
	if (attr_fields_set(d, &a, port_attr_fields,
			    ATTR_COUNT(port_attr_fields)) < 0 ||
	    dict_set_int(d, "port_num", port) < 0)
		goto fail;
	return make_record(ST.PortAttr, d);
fail:
	Py_DECREF(d);
	return NULL;
}

static PyObject *gid_to_py(const union ibv_gid *gid)
{
	PyObject *raw = PyBytes_FromStringAndSize((const char *)gid->raw, 16);
	PyObject *res;

	if (raw == NULL)
		return NULL;
	res = PyObject_CallFunctionObjArgs(ST.Gid, raw, NULL);
	Py_DECREF(raw); /* the call steals nothing */
	return res;
}

PyDoc_STRVAR(
	context_query_gid__doc__,
	"Read one entry of a port's GID table.\n"
	"\n"
	"Wraps ``ibv_query_gid`` (man page ibv_query_gid(3)).\n"
	"\n"
	"Args:\n"
	"    port_num: the port, from 1.\n"
	"    index: the GID table index, from 0.\n"
	"\n"
	"Returns:\n"
	"    The Gid (all zeros for an unused entry on most devices).\n"
	"\n"
	"Raises:\n"
	"    TypeError: an argument is not an int.\n"
	"    ValueError: port_num outside 1..255 or a negative index.\n" DOC_RAISES_VERB_AS(
		"Context", ", e.g. EINVAL past the table"));

#define QUERY_GID_ARGS(X, S)                 \
	X(S, INT, uint8_t, port_num, 1, 255) \
	X(S, INT, int, index, 0, INT32_MAX)
ARGS_METHOD(static, context_query_gid, "Context.query_gid", QUERY_GID_ARGS,
	    self, q)
{
	union ibv_gid gid;
	int rc;

	rc = IBV.query_gid(CTX(self), q->port_num, q->index, &gid);
	if (rc != 0)
		return verbs_error_fmt(rc < 0 ? errno_or(EINVAL) : rc,
				       "ibv_query_gid", "port %d index %d",
				       q->port_num, q->index);
	return gid_to_py(&gid);
}

PyDoc_STRVAR(context_query_gid_ex__doc__,
	     "Read a GID table entry with its type and network device.\n"
	     "\n"
	     "Wraps ``ibv_query_gid_ex`` (man page ibv_query_gid_ex(3)).\n"
	     "\n"
	     "Args:\n"
	     "    port: the port, from 1 (positional only).\n"
	     "    index: the GID table index, from 0 (positional only).\n"
	     "\n"
	     "Returns:\n"
	     "    ``(gid, gid_type, ndev_ifindex)``: gid_type is a\n"
	     "    ``GIDType`` value (IB, RoCE v1, RoCE v2), ndev_ifindex the\n"
	     "    interface index of the netdev behind a RoCE GID.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an argument is not an int, or not 2 given.\n"
	     "    ValueError: port outside 1..255 or a negative index.\n"
	     "    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	     "        when libibverbs lacks the verb (rdma-core < 32); else\n"
	     "        the verb failed (``errno``, e.g. ENODATA for an empty\n"
	     "        entry).");

/* Context.query_gid_ex and query_pkey: (port, index, /). */
#define PORT_INDEX_ARGS(X, S)                                  \
	X(S, INT, uint8_t, port, 1, 255, .flags = ARG_POSONLY) \
	X(S, UINT, int, index, .flags = ARG_POSONLY)
ARGS_DECLARE(port_index, PORT_INDEX_ARGS);
METHOD_ARGS(context_query_gid_ex, "Context.query_gid_ex", port_index_params);
METHOD_ARGS(context_query_pkey, "Context.query_pkey", port_index_params);

static PyObject *context_query_gid_ex(PyObject *self, PyObject *args,
				      PyObject *kw)
{
	struct port_index_args a;
	struct ibv_gid_entry e;
	PyObject *g;
	int rc;

	HANDLE_CHECK(self);
	IBV_REQUIRE_OPTIONAL(query_gid_ex, _ibv_query_gid_ex, "rdma-core 32");
	if (args_parse(&context_query_gid_ex_args, self, args, kw, &a) < 0)
		return NULL;
	memset(&e, 0, sizeof(e));
	rc = IBV.query_gid_ex(CTX(self), a.port, (uint32_t)a.index, &e, 0,
			      sizeof(e));
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_query_gid_ex",
				       "port %d index %d", a.port, a.index);
	g = gid_to_py(&e.gid);
	if (g == NULL)
		return NULL;
	return Py_BuildValue("(NII)", g, (unsigned)e.gid_type,
			     (unsigned)e.ndev_ifindex);
}

PyDoc_STRVAR(
	context_query_pkey__doc__,
	"Read one entry of a port's P_Key table.\n"
	"\n"
	"Wraps ``ibv_query_pkey`` (man page ibv_query_pkey(3)).\n"
	"\n"
	"Args:\n"
	"    port: the port, from 1 (positional only).\n"
	"    index: the P_Key table index, from 0 (positional only).\n"
	"\n"
	"Returns:\n"
	"    The P_Key, in host order (0xffff: the default partition).\n"
	"\n"
	"Raises:\n"
	"    TypeError: an argument is not an int, or not 2 given.\n"
	"    ValueError: port outside 1..255 or a negative index.\n" DOC_RAISES_VERB(
		"Context"));

static PyObject *context_query_pkey(PyObject *self, PyObject *args,
				    PyObject *kw)
{
	struct port_index_args a;
	__be16 pkey;
	int rc;

	HANDLE_CHECK(self);
	if (args_parse(&context_query_pkey_args, self, args, kw, &a) < 0)
		return NULL;
	rc = IBV.query_pkey(CTX(self), a.port, a.index, &pkey);
	if (rc != 0)
		return verbs_error_fmt(rc < 0 ? errno_or(EINVAL) : rc,
				       "ibv_query_pkey", "port %d index %d",
				       a.port, a.index);
	return PyLong_FromLong(ntohs(pkey));
}

/* ------------------------------------------------------------------ */
/* Factories                                                           */
/* ------------------------------------------------------------------ */

/* The PD factory lives here because PD's constructor is trivial. */
extern const HandleKind pd_kind; /* pd.c */

PyDoc_STRVAR(context_alloc_pd__doc__,
	     "Allocate a protection domain on this device.\n"
	     "\n"
	     "Wraps ``ibv_alloc_pd`` (man page ibv_alloc_pd(3)).\n"
	     "\n"
	     "Returns:\n"
	     "    The new PD (a child of this Context).\n"
	     "\n"
	     "Raises:\n" DOC_RAISES_VERB_AS("Context", ", e.g. ENOMEM"));

static PyObject *context_alloc_pd(PyObject *self, PyObject *unused)
{
	struct ibv_pd *pd;
	PDObject *o;

	HANDLE_CHECK(self);
	errno = 0;
	pd = IBV.alloc_pd(CTX(self));
	if (pd == NULL)
		return verbs_error_errno("ibv_alloc_pd");
	o = (PDObject *)handle_adopt(ST.PD_type, &pd_kind, HANDLE(self), pd);
	if (o == NULL)
		return NULL;
	return (PyObject *)o;
}

/* ---- import, DMA handles, running values ---- */

PyDoc_STRVAR(context_import_device__doc__,
	     "Open a Context over another process's device file.\n"
	     "\n"
	     "``cmd_fd`` is a descriptor of the exporter's ``Context.cmd_fd``\n"
	     "(passed over a Unix socket with SCM_RIGHTS, or inherited).\n"
	     "The binding imports a duplicate of it: ``cmd_fd`` stays the\n"
	     "caller's, and the Context's ``close()`` (``ibv_close_device``)\n"
	     "closes only the duplicate. Objects of the exporter are then\n"
	     "reached with ``import_pd()``, ``PD.import_mr()`` and\n"
	     "``import_dm()``. Soft-RoCE has no import op (EOPNOTSUPP); the\n"
	     "success path was never run on hardware here, checked against\n"
	     "the recording double.\n"
	     "\n"
	     "Wraps ``ibv_import_device`` (man page ibv_import_device(3)).\n"
	     "\n"
	     "Args:\n"
	     "    cmd_fd: a file descriptor of the device's command channel.\n"
	     "\n"
	     "Returns:\n"
	     "    The new Context.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: cmd_fd is not an int.\n"
	     "    ValueError: cmd_fd is out of range.\n"
	     "    VerbsError: EBADF when cmd_fd is no open descriptor;\n"
	     "        EOPNOTSUPP when libibverbs lacks the verb (rdma-core\n"
	     "        < 31) or the provider cannot import; else the verb\n"
	     "        failed (``errno``: EINVAL for a descriptor that is no\n"
	     "        device file, ENODEV for another device's).");

#define IMPORT_DEVICE_ARGS(X, S) X(S, INT, int, cmd_fd, 0, INT_MAX)
ARGS_FUNCTION(static, context_import_device, "Context.import_device",
	      IMPORT_DEVICE_ARGS, cls, a)
{
	struct ibv_context *ctx;
	ContextObject *self;
	int dup_fd, err, fd;

	fd = a->cmd_fd;
	IBV_REQUIRE_OPTIONAL(import_device, ibv_import_device, "rdma-core 31");
	dup_fd = fcntl((int)fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return verbs_error_fmt(errno, "ibv_import_device", "cmd_fd %ld",
				       fd);
	errno = 0;
	ctx = IBV.import_device(dup_fd);
	err = errno_or(EINVAL);
	if (ctx == NULL) {
		close(dup_fd);
		return verbs_error_fmt(err, "ibv_import_device", "cmd_fd %ld",
				       fd);
	}
	self = (ContextObject *)PyType_GenericAlloc((PyTypeObject *)cls, 0);
	if (self == NULL) {
		IBV.close_device(ctx);
		return NULL;
	}
	handle_init(HANDLE(self), &context_kind, NULL);
	HANDLE_SET_OBJ(self, ctx);
	self->name = PyUnicode_FromString(IBV.get_device_name(ctx->device));
	if (self->name == NULL) {
		Py_DECREF(self);
		return NULL;
	}
	return (PyObject *)self;
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

PyDoc_STRVAR(context_close__doc__,
	     "Close the device.\n"
	     "\n"
	     "Idempotent: closing a closed Context does nothing. The\n"
	     "Context stays open and usable after a refusal.\n"
	     "\n"
	     "Wraps ``ibv_close_device`` (man page ibv_open_device(3)).\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EBUSY while children (PDs, CQs, channels, DMs)\n"
	     "        are open, another thread waits in a blocking call on "
	     "it,\n"
	     "        or it is the Context of a CMID (close the CMID); else\n"
	     "        the verb failed (``errno``).");

static PyObject *context_close(PyObject *self, PyObject *unused)
{
	if (context_owned_by_cm(self))
		return NULL;
	return handle_meth_close(self, unused);
}

PyDoc_STRVAR(context_exit__doc__,
	     "Leave a ``with`` block: ``close()`` the Context.\n"
	     "\n"
	     "Does not swallow the block's exception.\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: as ``close()`` (EBUSY while children are open\n"
	     "        or for a CMID's Context).");

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

PyDoc_STRVAR(context_ack_async_event__doc__,
	     "Acknowledge an AsyncEvent of this Context.\n"
	     "\n"
	     "The same as ``event.ack()``: idempotent, an event acked\n"
	     "already is left alone.\n"
	     "\n"
	     "Wraps ``ibv_ack_async_event`` (man page\n"
	     "ibv_get_async_event(3)).\n"
	     "\n"
	     "Args:\n"
	     "    event: an AsyncEvent from ``get_async_event()``.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: event is not an AsyncEvent.\n"
	     "    ValueError: the event belongs to another Context.\n"
	     "    VerbsError: EBADF once the Context is closed.");

static PyObject *context_ack_async_event(PyObject *self, PyObject *ev)
{
	HANDLE_CHECK(self);
	/* Parsed by hand: one positional-only argument (METH_O). */
	return async_event_ack_for((ContextObject *)self, ev);
}

PyDoc_STRVAR(context_enter__doc__,
	     "Enter a ``with`` block: return the Context itself.\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EBADF once the Context is closed.");

PyDoc_STRVAR(context__doc__,
	     "Open the RDMA device called ``name`` (``struct ibv_context``).\n"
	     "\n"
	     "The root of the object tree: PDs, CQs, completion channels\n"
	     "and DMs are its children. Use it as a context manager or call\n"
	     "``close()``. ``ibverbs.get_device_list()`` lists the devices.\n"
	     "\n"
	     "Wraps ``ibv_get_device_list`` and ``ibv_open_device`` (man\n"
	     "pages ibv_get_device_list(3), ibv_open_device(3)).\n"
	     "\n"
	     "Args:\n"
	     "    name: the device name, e.g. ``\"rxe0\"`` or ``\"mlx5_0\"``.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: name is not a str.\n"
	     "    VerbsError: ENODEV when no device has that name (or none\n"
	     "        can be listed); else ``ibv_open_device`` failed\n"
	     "        (``errno``).");

static PyMethodDef context_methods[] = {
	METHOD_NOARGS("query_device", context_query_device),
	METHOD_KW("query_port", context_query_port),
	METHOD_KW("query_gid", context_query_gid),
	METHOD_KW("query_gid_ex", context_query_gid_ex),
	METHOD_KW("query_pkey", context_query_pkey),
	METHOD_NOARGS("query_gid_table", context_query_gid_table),
	METHOD_KW("find_gid", context_find_gid),
	METHOD_KW("init_ah_from_wc", context_init_ah_from_wc),
	METHOD_KW("get_pkey_index", context_get_pkey_index),
	METHOD_NOARGS("get_device_index", context_get_device_index),
	METHOD_O("resolve_eth_l2_from_gid", context_resolve_eth_l2_from_gid),
	METHOD_NOARGS("alloc_pd", context_alloc_pd),
	{ "create_cq", (PyCFunction)(void (*)(void))context_create_cq,
	  METH_VARARGS | METH_KEYWORDS, context_create_cq__doc__ },
	METHOD_NOARGS("create_comp_channel", context_create_comp_channel),
	METHOD_NOARGS("get_async_event", context_get_async_event),
	METHOD_O("ack_async_event", context_ack_async_event),
	METHOD_NOARGS("close", context_close),
	{ "__enter__", handle_meth_enter, METH_NOARGS, context_enter__doc__ },
	{ "__exit__", context_exit, METH_VARARGS, context_exit__doc__ },
	METHOD_KW("create_cq_ex", context_create_cq_ex),
	METHOD_NOARGS("query_device_ex", context_query_device_ex),
	METHOD_KW("alloc_dm", context_alloc_dm),
	METHOD_KW("create_qp_ex", context_create_qp_ex),
	METHOD_KW("open_xrcd", context_open_xrcd),
	METHOD_KW("open_qp", context_open_qp),
	METHOD_KW("create_srq_ex", context_create_srq_ex),
	METHOD_KW("create_wq", context_create_wq),
	METHOD_KW("create_rwq_ind_table", context_create_rwq_ind_table),
	{ "import_device", KW context_import_device,
	  METH_VARARGS | METH_KEYWORDS | METH_CLASS,
	  context_import_device__doc__ },
	METHOD_KW("import_pd", context_import_pd),
	METHOD_KW("import_dm", context_import_dm),
	METHOD_KW("alloc_dmah", context_alloc_dmah),
	METHOD_KW("query_rt_values_ex", context_query_rt_values_ex),
	METHOD_KW("query_port_speed", context_query_port_speed),
	/* domains, counters, flow actions (mem/domain.c, counters/,
	 * qp/flow_action.c) */
	METHOD_NOARGS("alloc_td", td_create),
	METHOD_KW("alloc_parent_domain", parent_domain_create),
	METHOD_NOARGS("create_counters", counters_create),
	METHOD_KW("create_comp_cntr", comp_cntr_create),
	METHOD_NOARGS("query_comp_cntr_caps", comp_cntr_query_caps),
	METHOD_KW("create_flow_action_esp", flow_action_esp_create),
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef context_getset[] = {
	{ "name", context_get_name, NULL,
	  "The device's name, as given to ``Context(name)``.", NULL },
	{ "num_comp_vectors", context_get_num_comp_vectors, NULL,
	  "Number of completion vectors (interrupts) for\n"
	  "``create_cq(comp_vector=...)``; EBADF once closed.",
	  NULL },
	{ "async_fd", context_get_async_fd, NULL,
	  "The file descriptor of async events, to select/poll on before\n"
	  "``get_async_event()``; EBADF once closed.",
	  NULL },
	{ "cmd_fd", context_get_cmd_fd, NULL,
	  "The file descriptor of the device's command channel\n"
	  "(``ibv_context.cmd_fd``); EBADF once closed.",
	  NULL },
	HANDLE_GETSETS,
	{ NULL, NULL, NULL, NULL, NULL }
};

/* clang-format off */
static PyType_Slot context_slots[] = {
	{ Py_tp_doc, (void *)context__doc__ },
	{ Py_tp_new, context_new },
	{ Py_tp_dealloc, context_dealloc },
	{ Py_tp_traverse, context_traverse },
	{ Py_tp_repr, context_repr },
	{ Py_tp_methods, context_methods },
	{ Py_tp_getset, context_getset },
	{ 0, NULL }
};
/* clang-format on */

PyType_Spec Context_spec = { "ibverbs._ibverbs.Context", sizeof(ContextObject),
			     0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			     context_slots };
