/*
 * efa.c - the efadv calls on a Context, AH, MR and PD: the device query
 * and the SQ/RQ depth limits, the AH and MR queries, the completion
 * counter and the driver QP of rdma-core 24 (efadv_create_driver_qp).
 * efa.QP (efadv_create_qp_ex) is in efa_qp.c, efa.CQ in efa_cq.c.
 *
 * libefa answers EOPNOTSUPP (or NULL with errno) for an object of
 * another provider: each call checks its device.  Each struct passed is
 * zeroed and its size is sizeof of efa_abi.h's mirror (efa_abi.h says
 * why that works with older and newer libefa alike).
 */
#include "efa/efa.h"
#include "counters/counters.h"
#include "qp/qp.h"
#include <string.h>

/* One record of the fields of a query (name and value). */
struct efa_field {
	const char *name;
	uint64_t v;
};

static PyObject *efa_record(const char *cls, const struct efa_field *f,
			    size_t n)
{
	PyObject *d = PyDict_New();
	size_t i;

	if (d == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		if (dict_set_u64(d, f[i].name, f[i].v) < 0) {
			Py_DECREF(d);
			return NULL;
		}
	}
	return objects_record(cls, d);
}

#define EFA_NF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* efadv_query_device                                                  */
/* ------------------------------------------------------------------ */

METHOD_DOC(efa_mod_query_device,
	   "The EFA device's limits and capabilities.\n"
	   "\n"
	   "Wraps ``efadv_query_device`` (efadv.h, rdma-core 26).\n"
	   "\n"
	   "Args:\n"
	   "    context: an open Context of an EFA device.\n"
	   "\n"
	   "Returns:\n"
	   "    An ``EfaDeviceAttr``: ``max_sq_wr``, ``max_rq_wr``,\n"
	   "    ``max_sq_sge``, ``max_rq_sge``, ``inline_buf_size``,\n"
	   "    ``inline_buf_size_ex`` (0 before rdma-core 52),\n"
	   "    ``device_caps`` (``DeviceCaps`` bits: RDMA_READ,\n"
	   "    RDMA_WRITE, CQ_WITH_SGID, ...) and ``max_rdma_size``, the\n"
	   "    longest RDMA READ or WRITE one work request may carry.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: context is not a Context.\n" EFA_RAISES_LIB);

#define EFA_CTX_ARGS(X, S) \
	X(S, HANDLE, PyObject *, context, Context, ARG_ANY_PARENT)
ARGS_FUNCTION(extern, efa_mod_query_device, "_efa_query_device", EFA_CTX_ARGS,
	      mod, a)
{
	struct efa_m_device_attr attr;
	int rc;

	if (EFA_NEED(query_device, "rdma-core 26") < 0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	rc = EFA.query_device((struct ibv_context *)HANDLE(a->context)->obj,
			      &attr, sizeof(attr));
	if (rc != 0)
		return verbs_error(rc, "efadv_query_device");
	{
		const struct efa_field f[] = {
			{ "max_sq_wr", attr.max_sq_wr },
			{ "max_rq_wr", attr.max_rq_wr },
			{ "max_sq_sge", attr.max_sq_sge },
			{ "max_rq_sge", attr.max_rq_sge },
			{ "inline_buf_size", attr.inline_buf_size },
			{ "inline_buf_size_ex", attr.inline_buf_size_ex },
			{ "device_caps", attr.device_caps },
			{ "max_rdma_size", attr.max_rdma_size },
		};
		return efa_record("EfaDeviceAttr", f, EFA_NF(f));
	}
}

/* ------------------------------------------------------------------ */
/* efadv_get_max_sq_depth, efadv_get_max_rq_depth                      */
/* ------------------------------------------------------------------ */

METHOD_DOC(efa_mod_get_max_sq_depth,
	   "The deepest send queue the device offers for the given shape\n"
	   "of work request.\n"
	   "\n"
	   "Wraps ``efadv_get_max_sq_depth`` (efadv.h, rdma-core 63).\n"
	   "\n"
	   "Args:\n"
	   "    context: an open Context of an EFA device.\n"
	   "    max_send_sge: SGEs per SEND.\n"
	   "    max_rdma_sge: SGEs per RDMA READ or WRITE.\n"
	   "    max_inline_data: inline bytes per work request.\n"
	   "    flags: ``SQDepthFlags`` bits (INLINE_WRITE).\n"
	   "\n"
	   "Returns:\n"
	   "    The maximum ``max_send_wr`` (an int).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: a value is out of range.\n" EFA_RAISES_LIB);

#define EFA_SQ_DEPTH_ARGS(X, S)                                    \
	X(S, HANDLE, PyObject *, context, Context, ARG_ANY_PARENT) \
	X(S, UINT, uint32_t, max_send_sge, .flags = ARG_OPT)       \
	X(S, UINT, uint32_t, max_rdma_sge, .flags = ARG_OPT)       \
	X(S, UINT, uint32_t, max_inline_data, .flags = ARG_OPT)    \
	X(S, FLAGS, uint32_t, flags, SQDepthFlags, .flags = ARG_KWOPT)
ARGS_FUNCTION(extern, efa_mod_get_max_sq_depth, "_efa_get_max_sq_depth",
	      EFA_SQ_DEPTH_ARGS, mod, a)
{
	struct efa_m_sq_depth_attr attr;
	int rc;

	if (EFA_NEED(get_max_sq_depth, "rdma-core 63") < 0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	attr.flags = a->flags;
	attr.max_send_sge = a->max_send_sge;
	attr.max_rdma_sge = a->max_rdma_sge;
	attr.max_inline_data = a->max_inline_data;
	rc = EFA.get_max_sq_depth((struct ibv_context *)HANDLE(a->context)->obj,
				  &attr, sizeof(attr));
	if (rc < 0)
		return verbs_error_fmt(-rc, "efadv_get_max_sq_depth",
				       "max_send_sge=%u max_rdma_sge=%u "
				       "max_inline_data=%u flags=0x%x",
				       a->max_send_sge, a->max_rdma_sge,
				       a->max_inline_data, a->flags);
	return PyLong_FromLong(rc);
}

METHOD_DOC(efa_mod_get_max_rq_depth,
	   "The deepest receive queue the device offers for the given\n"
	   "number of SGEs per receive.\n"
	   "\n"
	   "Wraps ``efadv_get_max_rq_depth`` (efadv.h, rdma-core 63).\n"
	   "\n"
	   "Args:\n"
	   "    context: an open Context of an EFA device.\n"
	   "    max_recv_sge: SGEs per receive.\n"
	   "\n"
	   "Returns:\n"
	   "    The maximum ``max_recv_wr`` (an int).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: a value is out of range.\n" EFA_RAISES_LIB);

#define EFA_RQ_DEPTH_ARGS(X, S)                                    \
	X(S, HANDLE, PyObject *, context, Context, ARG_ANY_PARENT) \
	X(S, UINT, uint32_t, max_recv_sge, .flags = ARG_OPT)
ARGS_FUNCTION(extern, efa_mod_get_max_rq_depth, "_efa_get_max_rq_depth",
	      EFA_RQ_DEPTH_ARGS, mod, a)
{
	struct efa_m_rq_depth_attr attr;
	int rc;

	if (EFA_NEED(get_max_rq_depth, "rdma-core 63") < 0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	attr.max_recv_sge = a->max_recv_sge;
	rc = EFA.get_max_rq_depth((struct ibv_context *)HANDLE(a->context)->obj,
				  &attr, sizeof(attr));
	if (rc < 0)
		return verbs_error_fmt(-rc, "efadv_get_max_rq_depth",
				       "max_recv_sge=%u", a->max_recv_sge);
	return PyLong_FromLong(rc);
}

/* ------------------------------------------------------------------ */
/* efadv_query_ah, efadv_query_mr                                      */
/* ------------------------------------------------------------------ */

METHOD_DOC(efa_mod_query_ah,
	   "The AH's number on the device: what a receiver sees in\n"
	   "``wc.slid`` for completions from that peer.\n"
	   "\n"
	   "Wraps ``efadv_query_ah`` (efadv.h, rdma-core 26).\n"
	   "\n"
	   "Args:\n"
	   "    ah: an open AH of an EFA device.\n"
	   "\n"
	   "Returns:\n"
	   "    An ``EfaAHAttr``: ``ahn``.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: ah is not an AH.\n" EFA_RAISES_LIB);

#define EFA_AH_ARGS(X, S) X(S, HANDLE, PyObject *, ah, AH, ARG_ANY_PARENT)
ARGS_FUNCTION(extern, efa_mod_query_ah, "_efa_query_ah", EFA_AH_ARGS, mod, a)
{
	struct efa_m_ah_attr attr;
	int rc;

	if (EFA_NEED(query_ah, "rdma-core 26") < 0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	rc = EFA.query_ah((struct ibv_ah *)HANDLE(a->ah)->obj, &attr,
			  sizeof(attr));
	if (rc != 0)
		return verbs_error(rc, "efadv_query_ah");
	{
		const struct efa_field f[] = { { "ahn", attr.ahn } };
		return efa_record("EfaAHAttr", f, EFA_NF(f));
	}
}

METHOD_DOC(efa_mod_query_mr,
	   "The interconnects an MR's traffic uses, for placement: the\n"
	   "ids the device reports valid, None for the others.\n"
	   "\n"
	   "Wraps ``efadv_query_mr`` (efadv.h, rdma-core 50).\n"
	   "\n"
	   "Args:\n"
	   "    mr: an open MR of an EFA device.\n"
	   "\n"
	   "Returns:\n"
	   "    An ``EfaMRAttr``: ``ic_id_validity`` (``MRAttrValidity``\n"
	   "    bits), ``recv_ic_id``, ``rdma_read_ic_id`` and\n"
	   "    ``rdma_recv_ic_id`` (an int, or None when not valid).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: mr is not an MR.\n" EFA_RAISES_LIB);

#define EFA_MR_ARGS(X, S) X(S, HANDLE, PyObject *, mr, MR, ARG_ANY_PARENT)
ARGS_DECLARE(efa_mr, EFA_MR_ARGS);
METHOD_ARGS(efa_mod_query_mr, "_efa_query_mr", efa_mr_params);

/* d[key] = v when bit is in valid, else None. */
static int efa_ic_id(PyObject *d, const char *key, unsigned valid, unsigned bit,
		     unsigned v)
{
	if (valid & bit)
		return dict_set_u64(d, key, v);
	return dict_set_steal(d, key, obj_or_none(NULL));
}

PyObject *efa_mod_query_mr(PyObject *mod, PyObject *args, PyObject *kw)
{
	struct efa_m_mr_attr attr;
	struct efa_mr_args a;
	PyObject *d;
	unsigned v;
	int rc;

	if (args_parse(&efa_mod_query_mr_args, NULL, args, kw, &a) < 0 ||
	    EFA_NEED(query_mr, "rdma-core 50") < 0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	rc = EFA.query_mr((struct ibv_mr *)HANDLE(a.mr)->obj, &attr,
			  sizeof(attr));
	if (rc != 0)
		return verbs_error(rc, "efadv_query_mr");
	v = attr.ic_id_validity;
	d = PyDict_New();
	if (d == NULL || dict_set_u64(d, "ic_id_validity", v) < 0 ||
	    efa_ic_id(d, "recv_ic_id", v, EFA_M_MR_ATTR_VALIDITY_RECV_IC_ID,
		      attr.recv_ic_id) < 0 ||
	    efa_ic_id(d, "rdma_read_ic_id", v,
		      EFA_M_MR_ATTR_VALIDITY_RDMA_READ_IC_ID,
		      attr.rdma_read_ic_id) < 0 ||
	    efa_ic_id(d, "rdma_recv_ic_id", v,
		      EFA_M_MR_ATTR_VALIDITY_RDMA_RECV_IC_ID,
		      attr.rdma_recv_ic_id) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return objects_record("EfaMRAttr", d);
}

/* ------------------------------------------------------------------ */
/* efadv_create_comp_cntr                                              */
/* ------------------------------------------------------------------ */

METHOD_DOC(efa_mod_create_comp_cntr,
	   "Create a completion counter with EFA's options: the counts may\n"
	   "live in memory of the caller's (where a GPU kernel can read\n"
	   "them).\n"
	   "\n"
	   "Wraps ``efadv_create_comp_cntr`` (efadv.h, rdma-core 65).\n"
	   "\n"
	   "Args:\n"
	   "    context: an open Context of an EFA device.\n"
	   "    type: a ``CompCntrType`` (WRS or BYTES).\n"
	   "    comp_addr: the address of 8 bytes that hold the completion\n"
	   "        count, or None (the device's own memory).\n"
	   "    err_addr: the same for the error count.\n"
	   "\n"
	   "Returns:\n"
	   "    A CompCntr (a child of context), as\n"
	   "    ``Context.create_comp_cntr()`` makes.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: a value is out of range.\n" EFA_RAISES_LIB);

#define EFA_CC_ARGS(X, S)                                                   \
	X(S, HANDLE, PyObject *, context, Context, ARG_ANY_PARENT)          \
	X(S, ENUM, int, type, CompCntrType, 0, INT32_MAX, .flags = ARG_OPT) \
	X(S, UINT, uint64_t, comp_addr, .flags = ARG_KWOPT | ARG_NONE,      \
	  .mask = 1)                                                        \
	X(S, UINT, uint64_t, err_addr, .flags = ARG_KWOPT | ARG_NONE, .mask = 2)
ARGS_FUNCTION_MASK(extern, efa_mod_create_comp_cntr, "_efa_create_comp_cntr",
		   EFA_CC_ARGS, mod, a)
{
	struct ibv_comp_cntr_init_attr attr;
	struct efa_m_comp_cntr_init_attr ea;
	struct ibv_comp_cntr *cc;

	if (EFA_NEED(create_comp_cntr, "rdma-core 65") < 0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	memset(&ea, 0, sizeof(ea));
	attr.type = (enum ibv_comp_cntr_type)a->type;
	if (a->mask & 1) {
		ea.flags |= EFA_M_COMP_CNTR_INIT_WITH_COMP_EXTERNAL_MEM;
		ea.comp_cntr_ext_mem.type = EFA_M_MEMORY_LOCATION_VA;
		ea.comp_cntr_ext_mem.ptr = (uint8_t *)(uintptr_t)a->comp_addr;
	}
	if (a->mask & 2) {
		ea.flags |= EFA_M_COMP_CNTR_INIT_WITH_ERR_EXTERNAL_MEM;
		ea.err_cntr_ext_mem.type = EFA_M_MEMORY_LOCATION_VA;
		ea.err_cntr_ext_mem.ptr = (uint8_t *)(uintptr_t)a->err_addr;
	}
	errno = 0;
	cc = EFA.create_comp_cntr((struct ibv_context *)HANDLE(a->context)->obj,
				  &attr, &ea, sizeof(ea));
	if (cc == NULL)
		return verbs_error_fmt(errno_or(EINVAL),
				       "efadv_create_comp_cntr",
				       "type=%d flags=0x%x", a->type,
				       (unsigned)ea.flags);
	return comp_cntr_adopt(a->context, cc, a->type);
}

/* ------------------------------------------------------------------ */
/* efadv_create_driver_qp                                              */
/* ------------------------------------------------------------------ */

static int efa_driver_qp_destroy(Handle *h)
{
	qp_leave_groups(h);
	return IBV.destroy_qp((struct ibv_qp *)h->obj);
}

static const HandleKind efa_driver_qp_kind = { "QP", "ibv_destroy_qp",
					       efa_driver_qp_destroy,
					       qp_release };

static struct ibv_qp *
efa_driver_qp_make(struct ibv_pd *pd, struct ibv_qp_init_attr *init, void *arg)
{
	init->qp_type = IBV_QPT_DRIVER; /* libefa requires it */
	return EFA.create_driver_qp(pd, init, *(uint32_t *)arg);
}

METHOD_DOC(efa_mod_create_driver_qp,
	   "Create an SRD QP the rdma-core 24 way (a plain QP, posted with\n"
	   "``post_send``; ``create_qp()`` makes one that takes the\n"
	   "``wr_*`` builders).\n"
	   "\n"
	   "Wraps ``efadv_create_driver_qp`` (efadv.h, rdma-core 24).\n"
	   "\n"
	   "Args:\n"
	   "    pd: an open PD of an EFA device.\n"
	   "    init_attr: a QPInitAttr (its ``qp_type`` is replaced by\n"
	   "        DRIVER, as libefa requires).\n"
	   "    driver_qp_type: ``DriverQPType.SRD``.\n"
	   "\n"
	   "Returns:\n"
	   "    The new QP, in the RESET state.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: a CQ or SRQ is of another Context, or a value is\n"
	   "        out of range.\n" EFA_RAISES_LIB);

#define EFA_DQP_ARGS(X, S)                                                \
	X(S, HANDLE, PyObject *, pd, PD, ARG_ANY_PARENT)                  \
	X(S, RECORD, PyObject *, init_attr, QPInitAttr)                   \
	X(S, ENUM, uint32_t, driver_qp_type, DriverQPType, 0, UINT32_MAX, \
	  .flags = ARG_OPT)
ARGS_FUNCTION(extern, efa_mod_create_driver_qp, "_efa_create_driver_qp",
	      EFA_DQP_ARGS, mod, a)
{
	PyObject *res;

	if (EFA_NEED(create_driver_qp, "rdma-core 24") < 0)
		return NULL;
	res = qp_create((PDObject *)a->pd, a->init_attr, &efa_driver_qp_kind,
			"efadv_create_driver_qp", efa_driver_qp_make,
			&a->driver_qp_type, ST.QP_type, 0);
	if (res != NULL)
		QPO(res)->qp_type = IBV_QPT_DRIVER;
	return res;
}
