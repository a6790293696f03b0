/*
 * module.c - the _ibverbs extension module: multi-phase init, type
 * creation and the module-level functions.  It calls into every file and
 * no file calls into it: the state they share is core/state.c's.
 */
#include "ibverbs.h"
#include "cm/cm.h"
#include "counters/counters.h"
#include "cq/cq.h"
#include "device/device.h"
#include "efa/efa.h"
#include "mem/mem.h"
#include "mlx5/mlx5.h"
#include "qp/qp.h"
#include "wq/wq.h"
#include "wr/wr.h"
#include "xrc/xrc.h"

static int module_executed;

/* ------------------------------------------------------------------ */
/* Module-level functions                                              */
/* ------------------------------------------------------------------ */

static PyObject *device_dict(struct ibv_device *dev)
{
	PyObject *d = PyDict_New();

	if (d == NULL)
		return NULL;
	if (dict_set_str(d, "name", IBV.get_device_name(dev)) < 0 ||
	    dict_set_u64(d, "guid", be64toh(IBV.get_device_guid(dev))) < 0 ||
	    dict_set_int(d, "node_type", dev->node_type) < 0 ||
	    dict_set_int(d, "transport_type", dev->transport_type) < 0 ||
	    dict_set_str(d, "ibdev_path", dev->ibdev_path) < 0 ||
	    dict_set_str(d, "dev_name", dev->dev_name) < 0) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *mod_device_list(PyObject *mod, PyObject *unused)
{
	struct ibv_device **list;
	PyObject *res;
	int i, n = 0;

	errno = 0;
	list = IBV.get_device_list(&n);
	if (list == NULL) {
		/* ENOSYS: the kernel has no RDMA subsystem; that is "no
		 * devices", not an error. */
		if (errno == ENOSYS)
			return PyList_New(0);
		return verbs_error_errno("ibv_get_device_list");
	}
	res = PyList_New(0);
	for (i = 0; res != NULL && i < n; i++) {
		PyObject *d = device_dict(list[i]);

		if (d == NULL || PyList_Append(res, d) < 0)
			Py_CLEAR(res);
		Py_XDECREF(d);
	}
	IBV.free_device_list(list);
	return res;
}

static PyObject *mod_fork_init(PyObject *mod, PyObject *unused)
{
	int rc = IBV.fork_init();

	if (rc != 0)
		return verbs_error(rc, "ibv_fork_init");
	Py_RETURN_NONE;
}

static PyObject *mod_is_fork_initialized(PyObject *mod, PyObject *unused)
{
	IBV_REQUIRE_OPTIONAL(is_fork_initialized, ibv_is_fork_initialized,
			     "rdma-core 35");
	/* IBV_FORK_DISABLED 0, IBV_FORK_ENABLED 1, IBV_FORK_UNNEEDED 2 */
	return PyLong_FromLong((long)IBV.is_fork_initialized());
}

static PyObject *mod_wc_status_str(PyObject *mod, PyObject *arg)
{
	long v;

	if (arg_int(arg, "status", 0, INT32_MAX, &v) < 0)
		return NULL;
	return PyUnicode_FromString(IBV.wc_status_str((enum ibv_wc_status)v));
}

static PyObject *mod_event_type_str(PyObject *mod, PyObject *arg)
{
	long v;

	if (arg_int(arg, "event_type", 0, INT32_MAX, &v) < 0)
		return NULL;
	return PyUnicode_FromString(IBV.event_type_str((enum ibv_event_type)v));
}

static PyMethodDef module_methods[] = {
	{ "_device_list", mod_device_list, METH_NOARGS,
	  "The RDMA devices as dicts (name, guid, node_type, transport_type,\n"
	  "ibdev_path, dev_name); ``ibverbs.get_device_list()`` wraps them.\n"
	  "An empty list when the kernel has no RDMA support (ENOSYS).\n"
	  "\n"
	  "Wraps ``ibv_get_device_list`` (man page ibv_get_device_list(3)).\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: the verb failed for another reason." },
	{ "fork_init", mod_fork_init, METH_NOARGS,
	  "Make registered memory safe across ``fork()`` on kernels that\n"
	  "need it: registered pages are left out of a child (madvise\n"
	  "DONTFORK).  Call it before opening any device; do not call it\n"
	  "where ``is_fork_initialized()`` returns 2 (the kernel copies\n"
	  "registered pages on fork).\n"
	  "\n"
	  "Wraps ``ibv_fork_init`` (man page ibv_fork_init(3)).\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: the verb failed (EINVAL once resources exist)." },
	{ "is_fork_initialized", mod_is_fork_initialized, METH_NOARGS,
	  "Whether fork protection is on.\n"
	  "\n"
	  "Wraps ``ibv_is_fork_initialized`` (man page\n"
	  "ibv_is_fork_initialized(3)).\n"
	  "\n"
	  "Returns:\n"
	  "    0 disabled, 1 enabled (``fork_init()`` ran), 2 unneeded (the\n"
	  "    kernel copies registered pages on fork).\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: EOPNOTSUPP when libibverbs predates the verb\n"
	  "        (rdma-core 35)." },
	{ "wc_status_str", mod_wc_status_str, METH_O,
	  "libibverbs' text for a completion status (a WCStatus value).\n"
	  "\n"
	  "Wraps ``ibv_wc_status_str`` (man page ibv_event_type_str(3)).\n"
	  "\n"
	  "Args:\n"
	  "    status: a WCStatus value (or int).\n"
	  "\n"
	  "Raises:\n"
	  "    TypeError: status is not an int.\n"
	  "    ValueError: status is negative or above 2**31-1." },
	{ "event_type_str", mod_event_type_str, METH_O,
	  "libibverbs' text for an async event type (an EventType value).\n"
	  "\n"
	  "Wraps ``ibv_event_type_str`` (man page ibv_event_type_str(3)).\n"
	  "\n"
	  "Args:\n"
	  "    event_type: an EventType value (or int).\n"
	  "\n"
	  "Raises:\n"
	  "    TypeError: event_type is not an int.\n"
	  "    ValueError: event_type is negative or above 2**31-1." },
	METHOD_NOARGS("has_rdmacm", cm_mod_has_rdmacm),
	METHOD_NOARGS("_rdmacm_status", cm_mod_rdmacm_status),
	METHOD_NOARGS("_flow_layouts", flow_mod_layouts),
	METHOD_O("inc_rkey", mw_mod_inc_rkey),
	METHOD_O("node_type_str", mod_node_type_str),
	METHOD_O("port_state_str", mod_port_state_str),
	METHOD_O("rate_to_mult", mod_rate_to_mult),
	METHOD_O("rate_to_mbps", mod_rate_to_mbps),
	METHOD_O("mult_to_ibv_rate", mod_mult_to_ibv_rate),
	METHOD_O("mbps_to_ibv_rate", mod_mbps_to_ibv_rate),
	METHOD_O("flow_label_to_udp_sport", mod_flow_label_to_udp_sport),
	METHOD_KW("is_qpt_supported", mod_is_qpt_supported),
	/* efa/: ibverbs.efa's functions (libefa.so.1, loaded on first use) */
	METHOD_NOARGS("_efa_libefa_status", efa_mod_libefa_status),
	METHOD_KW("_efa_query_device", efa_mod_query_device),
	METHOD_KW("_efa_get_max_sq_depth", efa_mod_get_max_sq_depth),
	METHOD_KW("_efa_get_max_rq_depth", efa_mod_get_max_rq_depth),
	METHOD_KW("_efa_query_ah", efa_mod_query_ah),
	METHOD_KW("_efa_query_mr", efa_mod_query_mr),
	METHOD_KW("_efa_create_comp_cntr", efa_mod_create_comp_cntr),
	METHOD_KW("_efa_create_driver_qp", efa_mod_create_driver_qp),
	METHOD_KW("_efa_create_qp", efa_mod_create_qp),
	METHOD_KW("_efa_create_cq", efa_mod_create_cq),
	/* mlx5/: ibverbs.mlx5's functions (libmlx5.so.1, loaded on first use) */
	MLX5_MODULE_METHODS{ NULL, NULL, 0, NULL }
};

/* ------------------------------------------------------------------ */
/* Exec: state, types, constants                                       */
/* ------------------------------------------------------------------ */

static const struct {
	const char *name;
	PyType_Spec *spec;
	PyTypeObject **slot;
} type_table[] = { { "Context", &Context_spec, &ST.Context_type },
		   { "PD", &PD_spec, &ST.PD_type },
		   { "MR", &MR_spec, &ST.MR_type },
		   { "CompChannel", &CompChannel_spec, &ST.CompChannel_type },
		   { "CQ", &CQ_spec, &ST.CQ_type },
		   { "QP", &QP_spec, &ST.QP_type },
		   { "SRQ", &SRQ_spec, &ST.SRQ_type },
		   { "AH", &AH_spec, &ST.AH_type },
		   { "SGE", &SGE_spec, &ST.SGE_type },
		   { "SendWR", &SendWR_spec, &ST.SendWR_type },
		   { "RecvWR", &RecvWR_spec, &ST.RecvWR_type },
		   { "SendWRChain", &SendWRChain_spec, &ST.SendWRChain_type },
		   { "RecvWRChain", &RecvWRChain_spec, &ST.RecvWRChain_type },
		   { "WC", &WC_spec, &ST.WC_type },
		   { "AsyncEvent", &AsyncEvent_spec, &ST.AsyncEvent_type },
		   { "CMID", &CMID_spec, &ST.CMID_type },
		   { "CMListener", &CMListener_spec, &ST.CMListener_type },
		   { "CMEvent", &CMEvent_spec, &ST.CMEvent_type },
		   { "DM", &DM_spec, &ST.DM_type },
		   { "Flow", &Flow_spec, &ST.Flow_type },
		   { "MW", &MW_spec, &ST.MW_type },
		   { "XRCD", &XRCD_spec, &ST.XRCD_type },
		   { "WQ", &WQ_spec, &ST.WQ_type },
		   { "RWQIndTable", &RWQIndTable_spec, &ST.RWQIndTable_type },
		   { "Buf", &Buf_spec, &ST.Buf_type },
		   { "DMAH", &DMAH_spec, &ST.DMAH_type },
		   { "TD", &TD_spec, &ST.TD_type },
		   { "Counters", &Counters_spec, &ST.Counters_type },
		   { "CompCntr", &CompCntr_spec, &ST.CompCntr_type },
		   { "FlowAction", &FlowAction_spec, &ST.FlowAction_type },
		   /* mlx5 DEVX and mkeys (mlx5/devx.c, mlx5/mkey.c) */
		   { "Mlx5DevxUmem", &Mlx5DevxUmem_spec,
		     &ST.Mlx5DevxUmem_type },
		   { "Mlx5DevxUAR", &Mlx5DevxUAR_spec, &ST.Mlx5DevxUAR_type },
		   { "Mlx5DevxObj", &Mlx5DevxObj_spec, &ST.Mlx5DevxObj_type },
		   { "Mlx5DevxEventChannel", &Mlx5DevxEventChannel_spec,
		     &ST.Mlx5DevxEventChannel_type },
		   { "Mlx5Mkey", &Mlx5Mkey_spec, &ST.Mlx5Mkey_type },
		   { "SendBatch", &SendBatch_spec, &ST.SendBatch_type },
		   { "RecvBatch", &RecvBatch_spec, &ST.RecvBatch_type },
		   { NULL, NULL, NULL } };

/* Subclasses of the types above, made after them. */
static const struct {
	const char *name;
	PyType_Spec *spec;
	PyTypeObject **slot;
	PyTypeObject **base;
} subtype_table[] = {
	{ "CQEx", &CQEx_spec, &ST.CQEx_type, &ST.CQ_type },
	{ "WCEx", &WCEx_spec, &ST.WCEx_type, &ST.WC_type },
	{ "QPEx", &QPEx_spec, &ST.QPEx_type, &ST.QP_type },
	{ "ParentDomain", &ParentDomain_spec, &ST.ParentDomain_type,
	  &ST.PD_type },
	/* efa/ */
	{ "EfaQP", &EfaQP_spec, &ST.EfaQP_type, &ST.QPEx_type },
	{ "EfaCQ", &EfaCQ_spec, &ST.EfaCQ_type, &ST.CQEx_type },
	/* mlx5/ */
	{ "Mlx5QP", &Mlx5QP_spec, &ST.Mlx5QP_type, &ST.QPEx_type },
	{ "Mlx5CQ", &Mlx5CQ_spec, &ST.Mlx5CQ_type, &ST.CQEx_type },
	{ NULL, NULL, NULL, NULL }
};

static const struct {
	const char *name;
	PyObject **slot;
} pyclass_table[] = { { "VerbsError", &ST.VerbsError },
		      { "CompletionError", &ST.CompletionError },
		      { "DeviceAttr", &ST.DeviceAttr },
		      { "PortAttr", &ST.PortAttr },
		      { "Gid", &ST.Gid },
		      { "GidEntry", &ST.GidEntry },
		      { "QPCap", &ST.QPCap },
		      { "AHAttr", &ST.AHAttr },
		      { "MWBindInfo", &ST.MWBindInfo },
		      { NULL, NULL } };

/* Keep the new type t (NULL: its creation failed) in *slot and add it
 * to the module as name.  0, or -1 with an exception set. */
static int add_type(PyObject *m, const char *name, PyTypeObject **slot,
		    PyObject *t)
{
	if (t == NULL)
		return -1;
	Py_XDECREF((PyObject *)*slot);
	*slot = (PyTypeObject *)t;
	Py_INCREF(t);
	if (PyModule_AddObject(m, name, t) < 0) {
		Py_DECREF(t);
		return -1;
	}
	return 0;
}

static int module_exec(PyObject *m)
{
	PyObject *objects, *consts;
	int i;

	if (module_executed) {
		PyErr_SetString(PyExc_ImportError,
				"ibverbs._ibverbs cannot be loaded more than "
				"once per process");
		return -1;
	}
	objects = PyImport_ImportModule("ibverbs._objects");
	if (objects == NULL)
		return -1;
	for (i = 0; pyclass_table[i].name; i++) {
		PyObject *c =
			PyObject_GetAttrString(objects, pyclass_table[i].name);

		if (c == NULL) {
			Py_DECREF(objects);
			return -1;
		}
		Py_XDECREF(*pyclass_table[i].slot);
		*pyclass_table[i].slot = c;
	}
	Py_DECREF(objects);

	if (ibv_loader_init(m) < 0 || handle_module_init(m) < 0)
		return -1;

	for (i = 0; type_table[i].name; i++) {
		if (add_type(m, type_table[i].name, type_table[i].slot,
			     PyType_FromSpec(type_table[i].spec)) < 0)
			return -1;
	}
	for (i = 0; subtype_table[i].name; i++) {
		/* A tuple of bases: CPython 3.9 takes no single type here. */
		PyObject *bases =
			PyTuple_Pack(1, (PyObject *)*subtype_table[i].base);
		PyObject *t;

		if (bases == NULL)
			return -1;
		t = PyType_FromSpecWithBases(subtype_table[i].spec, bases);
		Py_DECREF(bases);
		if (add_type(m, subtype_table[i].name, subtype_table[i].slot,
			     t) < 0)
			return -1;
	}
	consts = ibv_constants_dict();
	if (consts == NULL || PyModule_AddObject(m, "_constants", consts) < 0) {
		Py_XDECREF(consts);
		return -1;
	}
	consts = ibv_abi_constants();
	if (consts == NULL ||
	    PyModule_AddObject(m, "_abi_constants", consts) < 0) {
		Py_XDECREF(consts);
		return -1;
	}
	consts = args_specs();
	if (consts == NULL || PyModule_AddObject(m, "_specs", consts) < 0) {
		Py_XDECREF(consts);
		return -1;
	}
	module_executed = 1;
	return 0;
}

static int module_traverse(PyObject *m, visitproc visit, void *arg)
{
	return 0;
}

/* The free-threaded build declares that the module runs without the GIL
 * (otherwise importing it would turn the GIL back on for the whole
 * process): its shared state is guarded where the GIL used to do it
 * (core/handle.c says how). */
static PyModuleDef_Slot module_slots[] = { { Py_mod_exec, module_exec },
#ifdef Py_GIL_DISABLED
					   { Py_mod_gil, Py_MOD_GIL_NOT_USED },
#endif
					   { 0, NULL } };

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	"ibverbs._ibverbs",
	"The C core of ibverbs: libibverbs (dlopened at import) as types and\n"
	"functions.  Use the ibverbs package, which re-exports them.",
	0,
	module_methods,
	module_slots,
	module_traverse,
	NULL,
	NULL,
};

PyMODINIT_FUNC PyInit__ibverbs(void)
{
	return PyModuleDef_Init(&module_def);
}
