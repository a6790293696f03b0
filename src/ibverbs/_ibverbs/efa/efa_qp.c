/*
 * efa_qp.c - efa.QP: an SRD QP made by efadv_create_qp_ex, a subclass
 * of QPEx (the wr_* builders work on it), with EFA's processing hints
 * (efadv_wr_set_processing_hints, a static inline of efadv.h over the
 * struct efadv_qp that efadv_qp_from_ibv_qp_ex returns) and the work
 * queues' layout (efadv_query_qp_wqs).
 *
 * efadv_qp_from_ibv_qp_ex is a bare container_of in libefa: it is only
 * ever called on an efa.QP, whose QP libefa made.
 */
#include "efa/efa.h"
#include "qp/qp.h"
#include <string.h>

/* ------------------------------------------------------------------ */
/* efa.create_qp                                                       */
/* ------------------------------------------------------------------ */

struct efa_qp_args {
	PyObject *pd;
	PyObject *init_attr;
	uint32_t driver_qp_type;
	uint16_t flags;
	uint8_t sl;
	uint64_t wr_flags;
};

static struct ibv_qp *efa_qp_make(struct ibv_context *ctx,
				  struct ibv_qp_init_attr_ex *ex, void *arg)
{
	const struct efa_qp_args *a = arg;
	struct efa_m_qp_init_attr ea;

	memset(&ea, 0, sizeof(ea));
	ea.driver_qp_type = a->driver_qp_type;
	ea.flags = a->flags;
	ea.sl = a->sl;
	ea.wr_flags = a->wr_flags;
	ex->qp_type = IBV_QPT_DRIVER; /* libefa requires it */
	return EFA.create_qp_ex(ctx, ex, &ea, sizeof(ea));
}

METHOD_DOC(efa_mod_create_qp,
	   "Create an EFA QP (SRD: reliable, unordered datagrams; SENDs\n"
	   "and RDMA READ/WRITE) that posts with the ``wr_*`` builders.\n"
	   "\n"
	   "Wraps ``efadv_create_qp_ex`` (efadv.h, rdma-core 26; flags 52,\n"
	   "sl 55, wr_flags 64) and ``ibv_qp_to_qp_ex``.  Addressed and\n"
	   "brought up as a UD QP: ``to_init(qkey=...)``, ``to_rtr()``,\n"
	   "``to_rts()``, each WR with ``wr_set_ud_addr()``.\n"
	   "\n"
	   "Args:\n"
	   "    pd: an open PD of an EFA device.\n"
	   "    init_attr: a QPInitAttrEx (its ``qp_type`` is replaced by\n"
	   "        DRIVER, as libefa requires; ``send_ops_flags`` say\n"
	   "        which builders the QP takes).\n"
	   "    driver_qp_type: ``DriverQPType.SRD``.\n"
	   "    flags: ``QPFlags`` bits (UNSOLICITED_WRITE_RECV,\n"
	   "        INLINE_WRITE).\n"
	   "    sl: the service level.\n"
	   "    wr_flags: ``WRFlags`` bits (WITH_PROCESSING_HINTS: the QP\n"
	   "        takes ``wr_set_processing_hints()``).\n"
	   "\n"
	   "Returns:\n"
	   "    The new efa.QP, in the RESET state.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: a CQ or SRQ is of another Context, or a value is\n"
	   "        out of range.\n" EFA_RAISES_LIB);

static const ArgSpec efa_qp_params[] = {
	ARG_HANDLE(struct efa_qp_args, pd, PD, ARG_ANY_PARENT),
	ARG_RECORD(struct efa_qp_args, init_attr, QPInitAttrEx),
	ARG_ENUM(struct efa_qp_args, driver_qp_type, DriverQPType, 0,
		 UINT32_MAX, .flags = ARG_OPT),
	ARG_FLAGS(struct efa_qp_args, flags, QPFlags, .flags = ARG_KWOPT),
	ARG_UINT(struct efa_qp_args, sl, .flags = ARG_KWOPT),
	ARG_FLAGS(struct efa_qp_args, wr_flags, WRFlags, .flags = ARG_KWOPT),
	ARG_END
};
METHOD_ARGS(efa_mod_create_qp, "_efa_create_qp", efa_qp_params);

ARGS_FUNCTION_OF(extern, efa_mod_create_qp, mod, struct efa_qp_args, a)
{
	PyObject *res;

	if (EFA_NEED(create_qp_ex, "rdma-core 26") < 0)
		return NULL;
	res = qpex_create((PDObject *)a->pd, a->init_attr, ST.EfaQP_type,
			  "efadv_create_qp_ex", efa_qp_make, a);
	if (res != NULL)
		QPO(res)->qp_type = IBV_QPT_DRIVER;
	return res;
}

/* ------------------------------------------------------------------ */
/* efa.QP.wr_set_processing_hints                                      */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(
	efa_qp_wr_set_processing_hints__doc__,
	"Give the work request being built processing hints.\n"
	"\n"
	"Wraps ``efadv_wr_set_processing_hints`` (a static inline of\n"
	"efadv.h, over ``efadv_qp_from_ibv_qp_ex``; rdma-core 64).  The\n"
	"QP must have been created with ``WRFlags.WITH_PROCESSING_HINTS``.\n"
	"\n"
	"Args:\n"
	"    hints: ``ProcessingHint`` bits (BURST_PPS_SENSITIVE).\n"
	"\n"
	"Raises:\n"
	"    TypeError: hints is not an int.\n"
	"    ValueError: hints is out of range.\n"
	"    ImportError: libefa.so.1 cannot be loaded.\n"
	"    VerbsError: EINVAL outside a batch or before a builder;\n"
	"        EOPNOTSUPP when libefa predates it or the QP was made\n"
	"        without WITH_PROCESSING_HINTS; EBADF once closed.");

#define EFA_HINTS_ARGS(X, S) X(S, FLAGS, uint32_t, hints, ProcessingHint)
ARGS_DECLARE(efa_hints, EFA_HINTS_ARGS);
METHOD_ARGS(efa_qp_wr_set_processing_hints, "EfaQP.wr_set_processing_hints",
	    efa_hints_params);

static PyObject *efa_qp_wr_set_processing_hints(PyObject *self, PyObject *args,
						PyObject *kw)
{
	static const char verb[] = "efadv_wr_set_processing_hints";
	struct efa_hints_args a;
	struct ibv_qp_ex *qpx;
	struct efa_m_qp *dv;

	HANDLE_CHECK(self);
	if (args_parse(&efa_qp_wr_set_processing_hints_args, self, args, kw,
		       &a) < 0 ||
	    EFA_NEED(qp_from_ibv_qp_ex, "rdma-core 64") < 0)
		return NULL;
	qpx = qpex_current_wr(self, verb);
	if (qpx == NULL)
		return NULL;
	dv = EFA.qp_from_ibv_qp_ex(qpx);
	if (dv == NULL || dv->wr_set_processing_hints == NULL)
		return verbs_error_fmt(EOPNOTSUPP, verb,
				       "the QP was created without "
				       "WRFlags.WITH_PROCESSING_HINTS");
	dv->wr_set_processing_hints(dv, a.hints);
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* efa.QP.query_wqs                                                    */
/* ------------------------------------------------------------------ */

/* One work queue as an EfaWQAttr: the ring's address and a read-only
 * memoryview of it, the doorbell's address and a memoryview of its 4
 * bytes, the sizes; qp is kept in the record. */
static PyObject *efa_wq_record(const struct efa_m_wq_attr *w, PyObject *qp)
{
	PyObject *d = PyDict_New();
	Py_ssize_t len = (Py_ssize_t)w->entry_size * w->num_entries;

	if (d == NULL || dict_set_u64(d, "buffer", (uintptr_t)w->buffer) < 0 ||
	    dict_set_u64(d, "entry_size", w->entry_size) < 0 ||
	    dict_set_u64(d, "num_entries", w->num_entries) < 0 ||
	    dict_set_u64(d, "doorbell", (uintptr_t)w->doorbell) < 0 ||
	    dict_set_u64(d, "max_batch", w->max_batch) < 0 ||
	    dict_set_u64(d, "caps", w->caps) < 0 ||
	    dict_set_steal(d, "ring",
			   w->buffer && len ?
				   PyMemoryView_FromMemory((char *)w->buffer,
							   len, PyBUF_READ) :
				   obj_or_none(NULL)) < 0 ||
	    dict_set_steal(d, "doorbell_view",
			   w->doorbell ?
				   PyMemoryView_FromMemory((char *)w->doorbell,
							   4, PyBUF_READ) :
				   obj_or_none(NULL)) < 0 ||
	    dict_set_steal(d, "qp", (Py_INCREF(qp), qp)) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return objects_record("EfaWQAttr", d);
}

PyDoc_STRVAR(efa_qp_query_wqs__doc__,
	     "The send and receive queues' rings and doorbells, for code\n"
	     "that posts without libefa (a GPU kernel, say).\n"
	     "\n"
	     "Wraps ``efadv_query_qp_wqs`` (efadv.h, rdma-core 59).  Each\n"
	     "record keeps the QP object alive; its memoryviews are\n"
	     "read-only and valid until the QP's ``close()``.\n"
	     "\n"
	     "Returns:\n"
	     "    A pair of ``EfaWQAttr`` (send, receive): ``buffer`` and\n"
	     "    ``doorbell`` (addresses, ints), ``ring`` and\n"
	     "    ``doorbell_view`` (read-only memoryviews, or None),\n"
	     "    ``entry_size``, ``num_entries``, ``max_batch``, ``caps``\n"
	     "    (``WQCaps`` bits) and ``qp``.\n"
	     "\n" EFA_RAISES_RING);

static PyObject *efa_qp_query_wqs(PyObject *self, PyObject *unused)
{
	struct efa_m_wq_attr sq, rq;
	PyObject *s, *r;
	int rc;

	HANDLE_CHECK(self);
	if (EFA_NEED(query_qp_wqs, "rdma-core 59") < 0)
		return NULL;
	memset(&sq, 0, sizeof(sq));
	memset(&rq, 0, sizeof(rq));
	rc = EFA.query_qp_wqs(QPP(self), &sq, &rq, sizeof(sq));
	if (rc != 0)
		return verbs_error(rc, "efadv_query_qp_wqs");
	s = efa_wq_record(&sq, self);
	if (s == NULL)
		return NULL;
	r = efa_wq_record(&rq, self);
	if (r == NULL) {
		Py_DECREF(s);
		return NULL;
	}
	return Py_BuildValue("(NN)", s, r);
}

PyDoc_STRVAR(efa_qp__doc__,
	     "An EFA QP (SRD) made by ``efa.create_qp()``: a QPEx, plus\n"
	     "``wr_set_processing_hints()`` and ``query_wqs()``.");

static PyMethodDef efa_qp_methods[] = {
	METHOD_KW("wr_set_processing_hints", efa_qp_wr_set_processing_hints),
	METHOD_NOARGS("query_wqs", efa_qp_query_wqs),
	{ NULL, NULL, 0, NULL }
};

/* The base's traverse (a GC type's spec must name one). */
static int efa_qp_traverse(PyObject *self, visitproc visit, void *arg)
{
	traverseproc base =
		(traverseproc)PyType_GetSlot(ST.QPEx_type, Py_tp_traverse);

	return base(self, visit, arg);
}

static PyType_Slot EfaQP_slots[] = { { Py_tp_traverse, efa_qp_traverse },
				     { Py_tp_doc, (void *)efa_qp__doc__ },
				     { Py_tp_methods, efa_qp_methods },
				     { 0, NULL } };

PyType_Spec EfaQP_spec = { "ibverbs.efa.QP", 0, 0,
			   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			   EfaQP_slots };
