/*
 * qp.c - QP: a queue pair (ibv_qp) of any type (RC, UC, UD, ...).
 *
 * Ownership: the QP is a child of its PD and "uses" its send/recv CQs and
 * its SRQ (handle_use), holding a reference to each, so none of them can
 * be closed under it; the references and uses are dropped in
 * qp_release(), after ibv_destroy_qp succeeded.
 *
 * qp_context is set to the Python object (borrowed), for what reads the
 * ibv_qp elsewhere; this package's own async events find their QP in the
 * handle tree (handle_find, event.c).  The verbs object never outlives
 * the Python object.
 *
 * The connection: to_init(), to_rtr() and to_rts(), the state
 * transitions with the attribute masks each QP type needs, and the parsing
 * of the remote end's QPInfo (any object with qp_num, psn, lid, gid and
 * mtu) into the address vector; each goes through qp_modify(), which names
 * the transition in a failure.
 *
 * The data path (post_send/post_recv, METH_O) is in wr/post.c: the WR
 * objects already hold native ibv_*_wr structs, which it links in place;
 * the inline verbs jump straight to the provider.  No allocation, GIL
 * kept.
 */
#include "ibverbs.h"
#include "counters/counters.h"
#include "mem/mem.h"
#include "qp/qp.h"
#include "wr/wr.h"
#include <arpa/inet.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The Raises section of to_init and to_rts, which take only ints (state:
 * the one the QP must be in). */
#define QP_TO_RAISES(state)                                            \
	"Raises:\n"                                                    \
	"    TypeError: an argument is not an int.\n"                  \
	"    ValueError: an argument is out of range.\n"               \
	"    VerbsError: EBADF once the QP is closed; EBUSY while a\n" \
	"        ``wr_start()`` batch is open; else the verb failed\n" \
	"        (``errno``, e.g. EINVAL when the QP is not in " state ")."

static const char *type_name(int t)
{
	switch (t) {
	case IBV_QPT_RC:
		return "RC";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_UD:
		return "UD";
	case IBV_QPT_DRIVER:
		return "DRIVER";
	case IBV_QPT_RAW_PACKET:
		return "RAW_PACKET";
	case IBV_QPT_XRC_SEND:
		return "XRC_SEND";
	case IBV_QPT_XRC_RECV:
		return "XRC_RECV";
	default:
		return "QP";
	}
}

/* ------------------------------------------------------------------ */
/* Lifetime                                                            */
/* ------------------------------------------------------------------ */

/* One group of QPObject.mcast. */
struct qp_mcast_group {
	union ibv_gid gid;
	uint16_t lid;
};

static int mcast_find(QPObject *q, const union ibv_gid *gid, uint16_t lid)
{
	int i;

	for (i = 0; i < q->n_mcast; i++)
		if (q->mcast[i].lid == lid &&
		    memcmp(q->mcast[i].gid.raw, gid->raw, 16) == 0)
			return i;
	return -1;
}

void qp_leave_groups(Handle *h)
{
	QPObject *q = (QPObject *)h;
	int i, kept = 0;

	/* A group that will not let go stays listed; ibv_destroy_qp then
	 * fails with EBUSY and the QP stays open. */
	for (i = 0; i < q->n_mcast; i++)
		if (IBV.detach_mcast((struct ibv_qp *)h->obj, &q->mcast[i].gid,
				     q->mcast[i].lid) != 0)
			q->mcast[kept++] = q->mcast[i];
	q->n_mcast = kept;
}

static int qp_destroy(Handle *h)
{
	qp_leave_groups(h);
	return IBV.destroy_qp((struct ibv_qp *)h->obj);
}

/* After a successful destroy: the CQs and SRQ may be closed again. */
void qp_release(Handle *h)
{
	QPObject *q = (QPObject *)h;

	handle_unuse_clear(&q->send_cq);
	handle_unuse_clear(&q->recv_cq);
	handle_unuse_clear(&q->srq);
	handle_unuse_clear(&q->xrcd);
	handle_unuse_clear(&q->ind_tbl);
}

static const HandleKind qp_kind = { "QP", "ibv_destroy_qp", qp_destroy,
				    qp_release };

static int qp_traverse(PyObject *self, visitproc visit, void *arg)
{
	QPObject *q = QPO(self);

	Py_VISIT(q->send_cq);
	Py_VISIT(q->recv_cq);
	Py_VISIT(q->srq);
	Py_VISIT(q->cmid);
	Py_VISIT(q->xrcd);
	Py_VISIT(q->ind_tbl);
	return handle_traverse(HANDLE(self), visit, arg);
}

static void qp_dealloc(PyObject *self)
{
	QPObject *q = QPO(self);

	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	/* Non-NULL only if the destroy failed (reported as unraisable):
	 * the CQs stay marked used, as the kernel QP still uses them. */
	Py_CLEAR(q->send_cq);
	Py_CLEAR(q->recv_cq);
	Py_CLEAR(q->srq);
	Py_CLEAR(q->cmid);
	PyMem_Free(q->mcast);
	q->mcast = NULL;
	Py_CLEAR(q->xrcd);
	Py_CLEAR(q->ind_tbl);
	handle_dealloc(HANDLE(self));
}

/* ------------------------------------------------------------------ */
/* PD.create_qp(init_attr)                                             */
/* ------------------------------------------------------------------ */

/* init_attr.<name>, a capacity of struct ibv_qp_cap. */
static int init_cap(PyObject *ia, const char *name, uint32_t dflt,
		    uint32_t *out)
{
	uint64_t v;

	if (attr_uint(ia, "init_attr", name, UINT32_MAX, dflt, &v) < 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* A CQ of the PD's Context; returns a new reference. */
static PyObject *get_cq(PDObject *pd, PyObject *ia, const char *name,
			PyObject *dflt)
{
	PyObject *cq;
	char what[32];

	if (attr_optional(ia, name, &cq) < 0)
		return NULL;
	snprintf(what, sizeof(what), "init_attr.%s", name);
	if (cq == NULL || cq == Py_None) {
		if (dflt == NULL) {
			arg_type_error(what, "CQ", 0, cq ? cq : Py_None);
			Py_XDECREF(cq);
			return NULL;
		}
		Py_XDECREF(cq);
		Py_INCREF(dflt);
		return dflt;
	}
	if (!PyObject_TypeCheck(cq, ST.CQ_type)) {
		arg_type_error(what, "CQ", 0, cq);
		goto fail;
	}
	if (handle_check(HANDLE(cq)) < 0)
		goto fail;
	if (HANDLE(cq)->parent != HANDLE(pd)->parent) {
		arg_other_parent_error(what, "Context");
		goto fail;
	}
	return cq;
fail:
	Py_DECREF(cq);
	return NULL;
}

int init_attr_handle(PyObject *ia, const char *name, PyTypeObject *t,
		     const char *tname, Handle *parent, const char *pname,
		     PyObject **out)
{
	PyObject *v;
	char what[32];
	int rc;

	*out = NULL;
	rc = attr_given(ia, name, &v);
	if (rc <= 0)
		return rc;
	snprintf(what, sizeof(what), "init_attr.%s", name);
	if (!PyObject_TypeCheck(v, t)) {
		arg_type_error(what, tname, 1, v);
		goto fail;
	}
	if (handle_check(HANDLE(v)) < 0)
		goto fail;
	if (HANDLE(v)->parent != parent) {
		arg_other_parent_error(what, pname);
		goto fail;
	}
	*out = v;
	return 0;
fail:
	Py_DECREF(v);
	return -1;
}

/* The SRQ (new reference) or NULL with no error for None. */
static int get_srq(PDObject *pd, PyObject *ia, PyObject **out)
{
	return init_attr_handle(ia, "srq", ST.SRQ_type, "SRQ", HANDLE(pd), "PD",
				out);
}

static int get_qp_type(PyObject *ia, enum ibv_qp_type *out)
{
	PyObject *v;
	long t;
	int rc;

	*out = IBV_QPT_RC;
	rc = attr_given(ia, "qp_type", &v);
	if (rc <= 0)
		return rc;
	rc = arg_int(v, "init_attr.qp_type", 0, INT32_MAX, &t);
	Py_DECREF(v);
	*out = (enum ibv_qp_type)t;
	return rc;
}

static int get_sig_all(PyObject *ia, int *out)
{
	PyObject *v;

	if (attr_optional(ia, "sq_sig_all", &v) < 0)
		return -1;
	*out = v ? PyObject_IsTrue(v) : 0;
	Py_XDECREF(v);
	return *out < 0 ? -1 : 0;
}

/* Fill *init from a QPInitAttr-like object; new references to the CQs
 * and SRQ (srq may be NULL) go to the caller. */
static int read_init_attr(PDObject *pd, PyObject *ia,
			  struct ibv_qp_init_attr *init, PyObject **scq,
			  PyObject **rcq, PyObject **srq, int flags)
{
	struct ibv_qp_cap *c = &init->cap;

	memset(init, 0, sizeof(*init));
	if (flags & QP_CREATE_NO_CQ) {
		/* An XRC receive or RSS QP: CQs only where given. */
		*scq = get_cq(pd, ia, "send_cq", Py_None);
		if (*scq == Py_None)
			Py_CLEAR(*scq);
		else if (*scq == NULL)
			return -1;
		*rcq = get_cq(pd, ia, "recv_cq", *scq ? *scq : Py_None);
		if (*rcq == Py_None)
			Py_CLEAR(*rcq);
		else if (*rcq == NULL)
			return -1;
	} else {
		*scq = get_cq(pd, ia, "send_cq", NULL);
		if (*scq == NULL)
			return -1;
		*rcq = get_cq(pd, ia, "recv_cq", *scq);
		if (*rcq == NULL)
			return -1;
	}
	if (get_srq(pd, ia, srq) < 0 || get_qp_type(ia, &init->qp_type) < 0 ||
	    get_sig_all(ia, &init->sq_sig_all) < 0 ||
	    init_cap(ia, "max_send_wr", 128, &c->max_send_wr) < 0 ||
	    init_cap(ia, "max_recv_wr", 128, &c->max_recv_wr) < 0 ||
	    init_cap(ia, "max_send_sge", 1, &c->max_send_sge) < 0 ||
	    init_cap(ia, "max_recv_sge", 1, &c->max_recv_sge) < 0 ||
	    init_cap(ia, "max_inline_data", 0, &c->max_inline_data) < 0)
		return -1;
	init->send_cq = *scq ? HANDLE(*scq)->obj : NULL;
	init->recv_cq = *rcq ? HANDLE(*rcq)->obj : NULL;
	init->srq = *srq ? HANDLE(*srq)->obj : NULL;
	return 0;
}

static PyObject *create_error(int err, const char *verb,
			      const struct ibv_qp_init_attr *i)
{
	return verbs_error_fmt(err, verb,
			       "%s QP with max_send_wr=%u max_recv_wr=%u "
			       "max_send_sge=%u max_recv_sge=%u "
			       "max_inline_data=%u%s",
			       type_name(i->qp_type), i->cap.max_send_wr,
			       i->cap.max_recv_wr, i->cap.max_send_sge,
			       i->cap.max_recv_sge, i->cap.max_inline_data,
			       i->srq ? " and an SRQ" : "");
}

static struct ibv_qp *plain_create(struct ibv_pd *pd,
				   struct ibv_qp_init_attr *init, void *arg)
{
	return IBV.create_qp(pd, init);
}

METHOD_DOC(pd_create_qp,
	   "Create a queue pair in this PD.\n"
	   "\n"
	   "``init_attr`` is a ``QPInitAttr`` (or any object with its\n"
	   "fields): send_cq (required), recv_cq (default: send_cq),\n"
	   "qp_type (default RC), srq, the capacities (max_send_wr=128,\n"
	   "max_recv_wr=128, max_send_sge=1, max_recv_sge=1,\n"
	   "max_inline_data=0) and sq_sig_all. The QP uses its CQs and\n"
	   "SRQ: they refuse ``close()`` (EBUSY) until the QP is closed.\n"
	   "``QP.cap`` holds the capacities the provider granted.\n"
	   "\n"
	   "Wraps ``ibv_create_qp`` (man page ibv_create_qp(3)).\n"
	   "\n"
	   "Args:\n"
	   "    init_attr: a QPInitAttr, or any object with its fields.\n"
	   "\n"
	   "Returns:\n"
	   "    The new QP, in the RESET state.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: a CQ or SRQ field has the wrong type, or\n"
	   "        send_cq is None.\n"
	   "    ValueError: a CQ of another Context, an SRQ of another PD,\n"
	   "        or a capacity out of range.\n"
	   "    VerbsError: EBADF if the PD, a CQ or the SRQ is closed;\n"
	   "        else the verb failed (``errno``, e.g. EINVAL for\n"
	   "        capacities beyond the device's limits).");

#define CREATE_QP_ARGS(X, S) X(S, RECORD, PyObject *, init_attr, QPInitAttr)
ARGS_METHOD(extern, pd_create_qp, "PD.create_qp", CREATE_QP_ARGS, self, a)
{
	return qp_create((PDObject *)self, a->init_attr, &qp_kind,
			 "ibv_create_qp", plain_create, NULL, ST.QP_type, 0);
}

PyObject *qp_create(PDObject *pd, PyObject *ia, const HandleKind *kind,
		    const char *verb, qp_create_fn create, void *arg,
		    PyTypeObject *type, int flags)
{
	PyObject *scq = NULL, *rcq = NULL, *srq = NULL, *res = NULL;
	struct ibv_qp_init_attr init;
	struct ibv_qp *qp;
	QPObject *self;
	int err;

	if (read_init_attr(pd, ia, &init, &scq, &rcq, &srq, flags) < 0)
		goto out;
	/* Allocate first: qp_context must be the Python object.  Until
	 * handle_init() it is linked nowhere, so a failure just frees it. */
	self = HANDLE_ALLOC(QPObject, type);
	if (self == NULL)
		goto out;
	/* Reading init_attr ran Python code (attribute reads, __bool__; a
	 * GC pass in the allocation can run finalizers): another thread or
	 * that code may have closed the PD, a CQ or the SRQ since they were
	 * checked.  Check again and take the pointers now. */
	if (handle_check(HANDLE(pd)) < 0 ||
	    (scq != NULL && handle_check(HANDLE(scq)) < 0) ||
	    (rcq != NULL && handle_check(HANDLE(rcq)) < 0) ||
	    (srq != NULL && handle_check(HANDLE(srq)) < 0)) {
		Py_DECREF(self);
		goto out;
	}
	init.send_cq = scq ? HANDLE(scq)->obj : NULL;
	init.recv_cq = rcq ? HANDLE(rcq)->obj : NULL;
	init.srq = srq ? HANDLE(srq)->obj : NULL;
	init.qp_context = self;
	errno = 0;
	qp = create((struct ibv_pd *)HANDLE(pd)->obj, &init, arg);
	if (qp == NULL) {
		err = errno_or(EINVAL);
		Py_DECREF(self);
		if (!PyErr_Occurred())
			create_error(err, verb, &init);
		goto out;
	}
	handle_init(HANDLE(self), kind, HANDLE(pd));
	HANDLE_SET_OBJ(self, qp);
	self->qp_type = init.qp_type;
	self->cap = init.cap; /* create_qp wrote back the actual caps */
	self->sq_sig_all = init.sq_sig_all;
	/* Steal the references; mark the CQs/SRQ used until destroy. */
	self->send_cq = scq;
	self->recv_cq = rcq;
	self->srq = srq;
	scq = rcq = srq = NULL;
	if (self->send_cq)
		handle_use(HANDLE(self->send_cq));
	if (self->recv_cq)
		handle_use(HANDLE(self->recv_cq));
	if (self->srq)
		handle_use(HANDLE(self->srq));
	res = (PyObject *)self;
out:
	Py_XDECREF(scq);
	Py_XDECREF(rcq);
	Py_XDECREF(srq);
	return res;
}

/* ------------------------------------------------------------------ */
/* modify / query (the field table is in attrs.c)                      */
/* ------------------------------------------------------------------ */

/* What query() asks for by default: every attribute a QP reports (not
 * RATE_LIMIT, which is set-only on most providers). */
#define QP_QUERY_ALL                                                           \
	(IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY |        \
	 IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | \
	 IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |     \
	 IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |          \
	 IBV_QP_ALT_PATH | IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN |              \
	 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PATH_MIG_STATE | IBV_QP_CAP |      \
	 IBV_QP_DEST_QPN)

/* ibv_modify_qp / ibv_query_qp are syscalls (slow on some devices): run
 * them without the GIL; "busy" makes a concurrent close() refuse. */
static int qp_modify_raw(PyObject *self, struct ibv_qp_attr *attr, int mask)
{
	struct ibv_qp *qp = QPP(self);
	int rc;

	if (qp == NULL)
		return EBADF; /* closed by Python code the caller ran */
	HANDLE_BUSY_ENTER(self);
	Py_BEGIN_ALLOW_THREADS
	rc = IBV.modify_qp(qp, attr, mask);
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(self);
	return rc;
}

int qp_query_raw(PyObject *self, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init)
{
	struct ibv_qp *qp = QPP(self);
	int rc;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	if (qp == NULL)
		return EBADF; /* closed by Python code the caller ran */
	HANDLE_BUSY_ENTER(self);
	Py_BEGIN_ALLOW_THREADS
	rc = IBV.query_qp(qp, attr, mask, init);
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(self);
	return rc;
}

/* Modify, raising VerbsError(ibv_modify_qp) that names the transition. */
int qp_modify(PyObject *self, const char *what, struct ibv_qp_attr *attr,
	      int mask)
{
	unsigned int from;
	int rc;

	/* Parsing the attributes may have run Python code (Gid(), an
	 * AHAttr's attributes) that closed the QP. */
	if (handle_check(HANDLE(self)) < 0 || qp_check_idle(self, what) < 0)
		return -1;
	from = QPP(self)->state;
	rc = qp_modify_raw(self, attr, mask);
	if (rc == 0)
		return 0;
	if (mask & IBV_QP_STATE)
		verbs_error_fmt(rc, "ibv_modify_qp",
				"%s: %s QP %u %s -> %s (attr_mask 0x%x)", what,
				type_name(QPO(self)->qp_type),
				QPP(self)->qp_num, qp_state_name(from),
				qp_state_name(attr->qp_state), mask);
	else
		verbs_error_fmt(rc, "ibv_modify_qp",
				"%s: %s QP %u in %s (attr_mask 0x%x)", what,
				type_name(QPO(self)->qp_type),
				QPP(self)->qp_num, qp_state_name(from), mask);
	return -1;
}

PyDoc_STRVAR(qp_modify__doc__,
	     "Modify the QP's attributes (a state transition, a timeout, "
	     "...).\n"
	     "\n"
	     "The keywords are ``struct ibv_qp_attr`` field names\n"
	     "(qp_state, path_mtu, dest_qp_num, rq_psn, ...); ``ah_attr``\n"
	     "and ``alt_ah_attr`` take an AHAttr, ``cap`` a QPCap. ``mask``\n"
	     "(``QPAttrMask``, also as ``attr_mask=``) says which the\n"
	     "verb applies. ``to_init()``, ``to_rtr()`` and ``to_rts()``\n"
	     "build the usual transitions. Runs with the GIL released.\n"
	     "\n"
	     "Wraps ``ibv_modify_qp`` (man page ibv_modify_qp(3)).\n"
	     "\n"
	     "Args:\n"
	     "    mask: ``QPAttrMask`` bits.\n"
	     "    attrs: the attribute values, by keyword.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: no mask or two, an unknown attribute, or a\n"
	     "        value of the wrong type.\n"
	     "    ValueError: a value is out of range.\n"
	     "    VerbsError: EBADF once the QP is closed; EBUSY while a\n"
	     "        ``wr_start()`` batch is open; else the verb failed\n"
	     "        (``errno``, e.g. EINVAL for a mask the transition\n"
	     "        does not allow; the message names the transition).");

/* modify(mask, **attrs); the published package names it attr_mask. */
static PyObject *qp_meth_modify(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *mask_o = NULL, *alias_o = NULL;
	struct ibv_qp_attr attr;
	long mask;

	HANDLE_CHECK(self);
	/* Parsed by hand: **attrs are struct ibv_qp_attr field names, and
	 * mask has the alias attr_mask. */
	if (kw) {
		mask_o = PyDict_GetItemString(kw, "mask");
		alias_o = PyDict_GetItemString(kw, "attr_mask");
	}
	if (PyTuple_Size(args) > 1 ||
	    (PyTuple_Size(args) == 1 && (mask_o || alias_o)) ||
	    (mask_o && alias_o)) {
		PyErr_SetString(PyExc_TypeError,
				"modify(mask, **attrs) takes one mask (mask= "
				"or attr_mask=) and attributes by keyword");
		return NULL;
	}
	if (PyTuple_Size(args) == 1)
		mask_o = PyTuple_GetItem(args, 0);
	else if (mask_o == NULL)
		mask_o = alias_o;
	if (mask_o == NULL) {
		PyErr_SetString(PyExc_TypeError,
				"modify() missing required argument 'mask'");
		return NULL;
	}
	if (arg_int(mask_o, "mask", 0, INT32_MAX, &mask) < 0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	if (qp_attr_from_kw(kw, &attr) < 0)
		return NULL;
	if (qp_modify(self, "modify", &attr, (int)mask) < 0)
		return NULL;
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qp_query__doc__,
	     "Query the QP's current attributes from the device.\n"
	     "\n"
	     "Runs with the GIL released.\n"
	     "\n"
	     "Wraps ``ibv_query_qp`` (man page ibv_query_qp(3)).\n"
	     "\n"
	     "Args:\n"
	     "    mask: ``QPAttrMask`` bits to ask for; default: every\n"
	     "        attribute a QP reports (not RATE_LIMIT).\n"
	     "\n"
	     "Returns:\n"
	     "    ``(attrs, cap)``: a dict of the ``struct ibv_qp_attr``\n"
	     "    fields the mask covers (qp_state, path_mtu, ah_attr, ...)\n"
	     "    and the QPCap the device reports now.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: mask is not an int.\n"
	     "    ValueError: mask is out of range.\n" DOC_RAISES_VERB("QP"));

/* query(mask=all) -> (dict of the fields the mask covers, QPCap) */
#define QUERY_ARGS(X, S)                                     \
	X(S, FLAGS, int, mask, QPAttrMask, .flags = ARG_OPT, \
	  .def = QP_QUERY_ALL)
ARGS_METHOD(static, qp_meth_query, "QP.query", QUERY_ARGS, self, a)
{
	PyObject *d, *cap;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int rc;

	rc = qp_query_raw(self, &attr, a->mask, &init);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_query_qp",
				       "QP %u, attr_mask 0x%x",
				       QPP(self)->qp_num, (unsigned)a->mask);
	d = qp_attr_to_dict(&attr, a->mask);
	if (d == NULL)
		return NULL;
	cap = qp_cap_to_py(&init.cap);
	if (cap == NULL) {
		Py_DECREF(d);
		return NULL;
	}
	return Py_BuildValue("(NN)", d, cap);
}

/* Default Q_Key of to_init() for UD QPs (both ends must agree). */
#define QP_DEFAULT_QKEY 0x11111111u

/* ------------------------------------------------------------------ */
/* State transitions with the masks each QP type needs                 */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(qp_to_init__doc__,
	     "Move the QP from RESET to INIT.\n"
	     "\n"
	     "The mask depends on the QP type: RC/UC set the port, P_Key\n"
	     "index and access flags; UD the port, P_Key index and Q_Key;\n"
	     "RAW_PACKET only the port.\n"
	     "\n"
	     "Wraps ``ibv_modify_qp`` (man page ibv_modify_qp(3)).\n"
	     "\n"
	     "Args:\n"
	     "    port: the port, 1..255.\n"
	     "    access: ``AccessFlags`` the QP allows its peer (RC/UC:\n"
	     "        REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC).\n"
	     "    pkey_index: P_Key table index (None: 0).\n"
	     "    qkey: Q_Key of a UD QP (None: 0x11111111).\n"
	     "\n" QP_TO_RAISES("RESET"));

/* to_init(port, access=0, pkey_index=None, qkey=None)
 * RC/UC: STATE|PKEY_INDEX|PORT|ACCESS_FLAGS; UD: STATE|PKEY_INDEX|PORT|QKEY
 * with qkey defaulting to 0x11111111; RAW_PACKET: STATE|PORT.  access
 * defaults to 0 (no remote access), as in the published package. */
#define TO_INIT_ARGS(X, S)                                            \
	X(S, INT, uint8_t, port, 1, UINT8_MAX)                        \
	X(S, FLAGS, int, access, AccessFlags, .flags = ARG_OPT)       \
	X(S, UINT, uint16_t, pkey_index, .flags = ARG_OPT | ARG_NONE) \
	X(S, UINT, uint32_t, qkey, .flags = ARG_OPT | ARG_NONE,       \
	  .def = QP_DEFAULT_QKEY)
ARGS_METHOD(static, qp_to_init, "QP.to_init", TO_INIT_ARGS, self, a)
{
	struct ibv_qp_attr attr;
	int mask = IBV_QP_STATE | IBV_QP_PORT;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = a->port;
	attr.pkey_index = a->pkey_index;
	attr.qkey = a->qkey;
	attr.qp_access_flags = (unsigned int)a->access;
	switch (QPO(self)->qp_type) {
	case IBV_QPT_UD:
	case IBV_QPT_DRIVER: /* EFA's SRD (efa/): brought up as UD */
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
		break;
	case IBV_QPT_RAW_PACKET:
		break;
	default:
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS;
		break;
	}
	if (qp_modify(self, "to_init", &attr, mask) < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* remote.<name>; a remote without it (None, not a QPInfo) is a
 * TypeError, not an AttributeError. */
static PyObject *remote_attr(PyObject *remote, const char *name)
{
	return attr_required(remote, name, "remote", "QPInfo");
}

/* An integer attribute of the remote QPInfo, range-checked. */
static int remote_int(PyObject *remote, const char *name, long min, long max,
		      long *out)
{
	PyObject *v = remote_attr(remote, name);
	char what[32];
	int rc;

	if (v == NULL)
		return -1;
	snprintf(what, sizeof(what), "remote.%s", name);
	rc = arg_int(v, what, min, max, out);
	Py_DECREF(v);
	return rc;
}

/* The remote GID (a Gid, 16 bytes or None) into the AV; is_global when it
 * is non-zero, as RoCE needs. */
static int remote_gid(PyObject *remote, struct ibv_ah_attr *ah)
{
	PyObject *g = remote_attr(remote, "gid"), *raw = NULL;
	static const uint8_t zero[16];
	int rc = -1;

	if (g == NULL)
		return -1;
	if (g == Py_None) {
		rc = 0;
		goto out;
	}
	if (PyBytes_Check(g)) {
		raw = g;
		Py_INCREF(raw);
	} else {
		PyObject *gid = PyObject_CallFunctionObjArgs(ST.Gid, g, NULL);

		if (gid == NULL)
			goto out;
		raw = PyObject_GetAttrString(gid, "raw");
		Py_DECREF(gid);
		if (raw == NULL)
			goto out;
	}
	if (!PyBytes_Check(raw) || PyBytes_Size(raw) != 16) {
		PyErr_SetString(PyExc_ValueError,
				"remote.gid must be 16 bytes");
		goto out;
	}
	memcpy(ah->grh.dgid.raw, PyBytes_AsString(raw), 16);
	ah->is_global = memcmp(ah->grh.dgid.raw, zero, 16) != 0;
	rc = 0;
out:
	Py_XDECREF(raw);
	Py_DECREF(g);
	return rc;
}

/* to_rtr's arguments; mask: the RTR_* bits of those given (not None).
 * Positional order as in the published package; port and flow_label
 * keyword-only. */
enum { RTR_SGID_INDEX = 1, RTR_MTU = 2, RTR_PORT = 4 };
#define RTR_OPT .flags = ARG_OPT | ARG_NONE
#define RTR_ARGS(X, S)                                                        \
	X(S, RECORD, PyObject *, remote, QPInfo, .flags = ARG_NONE)           \
	X(S, UINT, uint8_t, sgid_index, RTR_OPT, .mask = RTR_SGID_INDEX)      \
	X(S, ENUM, int, mtu, MTU, IBV_MTU_256, IBV_MTU_4096, RTR_OPT,         \
	  .mask = RTR_MTU)                                                    \
	X(S, UINT, uint8_t, hop_limit, RTR_OPT, .def = 64)                    \
	X(S, INT, uint8_t, min_rnr_timer, 0, 31, RTR_OPT, .def = 12)          \
	X(S, UINT, uint8_t, max_dest_rd_atomic, RTR_OPT, .def = 1)            \
	X(S, INT, uint8_t, sl, 0, 15, RTR_OPT)                                \
	X(S, UINT, uint8_t, traffic_class, RTR_OPT)                           \
	X(S, INT, uint8_t, port, 1, UINT8_MAX, .flags = ARG_KWOPT | ARG_NONE, \
	  .mask = RTR_PORT)                                                   \
	X(S, INT, uint32_t, flow_label, 0, 0xfffff,                           \
	  .flags = ARG_KWOPT | ARG_NONE)
ARGS_DECLARE_MASK(rtr, RTR_ARGS);
METHOD_ARGS_MASK(qp_to_rtr, "QP.to_rtr", rtr_params,
		 offsetof(struct rtr_args, mask));

/* The local port: as given, else the one the QP was moved to INIT on. */
static int local_port(PyObject *self, const struct rtr_args *a, uint8_t *port)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int rc;

	if (a->mask & RTR_PORT) {
		*port = a->port;
		return 0;
	}
	rc = qp_query_raw(self, &attr, IBV_QP_PORT, &init);
	if (rc != 0) {
		verbs_error_fmt(rc, "ibv_query_qp",
				"to_rtr: finding the "
				"QP's port (pass port=)");
		return -1;
	}
	*port = attr.port_num ? attr.port_num : 1;
	return 0;
}

/* Path MTU: as given, else min(remote.mtu, the local port's active_mtu). */
static int path_mtu(PyObject *self, PyObject *remote, const struct rtr_args *a,
		    uint8_t port, enum ibv_mtu *mtu)
{
	struct ibv_port_attr pa;
	long v;
	int rc;

	if (a->mask & RTR_MTU) {
		*mtu = (enum ibv_mtu)a->mtu;
		return 0;
	}
	if (remote_int(remote, "mtu", IBV_MTU_256, IBV_MTU_4096, &v) < 0 ||
	    handle_check(HANDLE(self)) < 0) /* that ran Python code */
		return -1;
	rc = port_query(QPP(self)->context, port, &pa);
	if (rc != 0) {
		verbs_error_fmt(rc, "ibv_query_port",
				"to_rtr: port %d "
				"(for the default path MTU)",
				port);
		return -1;
	}
	*mtu = (enum ibv_mtu)(v < (long)pa.active_mtu ? v :
							(long)pa.active_mtu);
	return 0;
}

/* The RC/UC part of to_rtr: address vector, path MTU, remote QPN/PSN. */
static int rtr_connected(PyObject *self, const struct rtr_args *a,
			 struct ibv_qp_attr *attr)
{
	/* None is no QPInfo: remote_attr() says so. */
	PyObject *remote = a->remote ? a->remote : Py_None;
	struct ibv_ah_attr *ah = &attr->ah_attr;
	long qpn, psn, lid;
	uint8_t port;

	if (!(a->mask & RTR_SGID_INDEX)) {
		PyErr_SetString(PyExc_TypeError,
				"to_rtr() missing required "
				"keyword argument 'sgid_index' (RC/UC QPs)");
		return -1;
	}
	if (remote_int(remote, "qp_num", 0, QPN_MAX, &qpn) < 0 ||
	    remote_int(remote, "psn", 0, PSN_MAX, &psn) < 0 ||
	    remote_int(remote, "lid", 0, UINT16_MAX, &lid) < 0 ||
	    remote_gid(remote, ah) < 0 || local_port(self, a, &port) < 0 ||
	    path_mtu(self, remote, a, port, &attr->path_mtu) < 0)
		return -1;
	attr->dest_qp_num = (uint32_t)qpn;
	attr->rq_psn = (uint32_t)psn;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->min_rnr_timer = a->min_rnr_timer;
	ah->dlid = (uint16_t)lid;
	ah->sl = a->sl;
	ah->port_num = port;
	ah->grh.sgid_index = a->sgid_index;
	ah->grh.hop_limit = a->hop_limit;
	ah->grh.traffic_class = a->traffic_class;
	ah->grh.flow_label = a->flow_label;
	return 0;
}

PyDoc_STRVAR(qp_to_rtr__doc__,
	     "Move the QP from INIT to RTR (ready to receive).\n"
	     "\n"
	     "For RC and UC, ``remote`` is the peer's QPInfo (qp_num, psn,\n"
	     "lid, gid, mtu): it sets the address vector (global when the\n"
	     "gid is not zero), the destination QP and the receive PSN.\n"
	     "mtu defaults to min(remote.mtu, the port's active_mtu);\n"
	     "port to the QP's port (the one to_init() set). UD and\n"
	     "RAW_PACKET QPs set only the state: remote may be None.\n"
	     "\n"
	     "Wraps ``ibv_modify_qp`` (man page ibv_modify_qp(3)).\n"
	     "\n"
	     "Args:\n"
	     "    remote: the peer's QPInfo (RC/UC), or None (UD).\n"
	     "    sgid_index: local GID index (required for RC/UC).\n"
	     "    mtu: path ``MTU``, or None for the default above.\n"
	     "    hop_limit: GRH hop limit (None: 64).\n"
	     "    min_rnr_timer: RC: RNR NAK timer code, 0..31 (None: 12).\n"
	     "    max_dest_rd_atomic: RC: incoming RDMA reads/atomics (None:\n"
	     "        1).\n"
	     "    sl: service level, 0..15 (None: 0).\n"
	     "    traffic_class: GRH traffic class (None: 0).\n"
	     "    port: the local port, or None for the QP's.\n"
	     "    flow_label: GRH flow label, 0..0xfffff (None: 0).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: remote is not a QPInfo, or sgid_index is\n"
	     "        missing for an RC/UC QP, or a value is not an int.\n"
	     "    ValueError: a value is out of range, or remote.gid is not\n"
	     "        16 bytes.\n"
	     "    VerbsError: EBADF once the QP is closed; EBUSY while a\n"
	     "        ``wr_start()`` batch is open; a failed\n"
	     "        ``ibv_query_port``/``ibv_query_qp`` for the defaults;\n"
	     "        else the verb failed (``errno``, e.g. EINVAL).");

/* to_rtr(remote, sgid_index=None, mtu=None, hop_limit=None (64),
 *        min_rnr_timer=None (12), max_dest_rd_atomic=None (1), sl=None (0),
 *        traffic_class=None (0), *, port=None, flow_label=None (0))
 * RC: STATE|AV|PATH_MTU|DEST_QPN|RQ_PSN|MAX_DEST_RD_ATOMIC|MIN_RNR_TIMER;
 * UC: STATE|AV|PATH_MTU|DEST_QPN|RQ_PSN; UD (remote may be None): STATE. */
static PyObject *qp_to_rtr(PyObject *self, PyObject *args, PyObject *kw)
{
	struct rtr_args a;
	struct ibv_qp_attr attr;
	int type = QPO(self)->qp_type, mask = IBV_QP_STATE;

	HANDLE_CHECK(self);
	if (args_parse(&qp_to_rtr_args, self, args, kw, &a) < 0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	if (type != IBV_QPT_UD && type != IBV_QPT_RAW_PACKET &&
	    type != IBV_QPT_DRIVER) {
		if (rtr_connected(self, &a, &attr) < 0)
			return NULL;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		/* An XRC initiator (XRC_SEND) receives nothing. */
		if (type != IBV_QPT_UC && type != IBV_QPT_XRC_SEND)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
	}
	if (qp_modify(self, "to_rtr", &attr, mask) < 0)
		return NULL;
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qp_to_rts__doc__,
	     "Move the QP from RTR to RTS (ready to send).\n"
	     "\n"
	     "All types set the send PSN; only RC also sets the timeout,\n"
	     "retry counts and outstanding RDMA reads/atomics (ignored for\n"
	     "UC and UD).\n"
	     "\n"
	     "Wraps ``ibv_modify_qp`` (man page ibv_modify_qp(3)).\n"
	     "\n"
	     "Args:\n"
	     "    psn: the first send PSN (the peer's RTR ``psn``), 24 bits\n"
	     "        (None: 0).\n"
	     "    timeout: RC: local ACK timeout code, 0..31 (None: 14).\n"
	     "    retry_cnt: RC: retries on timeout, 0..7 (None: 7).\n"
	     "    rnr_retry: RC: retries on RNR NAK, 0..7 (7: forever; None:\n"
	     "        7).\n"
	     "    max_rd_atomic: RC: outgoing RDMA reads/atomics (None: 1).\n"
	     "\n" QP_TO_RAISES("RTR"));

/* to_rts(psn=None (0), timeout=None (14), retry_cnt=None (7),
 *        rnr_retry=None (7), max_rd_atomic=None (1))
 * RC: STATE|SQ_PSN|TIMEOUT|RETRY_CNT|RNR_RETRY|MAX_QP_RD_ATOMIC;
 * UC/UD: STATE|SQ_PSN. */
#define RTS_OPT .flags = ARG_OPT | ARG_NONE
#define TO_RTS_ARGS(X, S)                                      \
	X(S, INT, uint32_t, psn, 0, PSN_MAX, RTS_OPT)          \
	X(S, INT, uint8_t, timeout, 0, 31, RTS_OPT, .def = 14) \
	X(S, INT, uint8_t, retry_cnt, 0, 7, RTS_OPT, .def = 7) \
	X(S, INT, uint8_t, rnr_retry, 0, 7, RTS_OPT, .def = 7) \
	X(S, UINT, uint8_t, max_rd_atomic, RTS_OPT, .def = 1)
ARGS_METHOD(static, qp_to_rts, "QP.to_rts", TO_RTS_ARGS, self, a)
{
	struct ibv_qp_attr attr;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = a->psn;
	attr.timeout = a->timeout;
	attr.retry_cnt = a->retry_cnt;
	attr.rnr_retry = a->rnr_retry;
	attr.max_rd_atomic = a->max_rd_atomic;
	/* An XRC initiator sends as RC does; an XRC target takes only
	 * the timeout (the kernel's RTR -> RTS table). */
	if (QPO(self)->qp_type == IBV_QPT_RC ||
	    QPO(self)->qp_type == IBV_QPT_XRC_SEND)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	else if (QPO(self)->qp_type == IBV_QPT_XRC_RECV)
		mask |= IBV_QP_TIMEOUT;
	if (qp_modify(self, "to_rts", &attr, mask) < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* Attributes                                                          */
/* ------------------------------------------------------------------ */

static PyObject *qp_get_qp_num(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(QPP(self)->qp_num);
}

static PyObject *qp_get_qp_type(PyObject *self, void *closure)
{
	return enum_from_int("QPType", QPO(self)->qp_type);
}

/* The device's view (ibv_query_qp), so a QP that an error completion
 * moved to ERR reads ERR; libibverbs also refreshes qp->state. */
static PyObject *qp_get_state(PyObject *self, void *closure)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int rc;

	HANDLE_CHECK(self);
	rc = qp_query_raw(self, &attr, IBV_QP_STATE, &init);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_query_qp", "QP %u state",
				       QPP(self)->qp_num);
	return enum_from_int("QPState", attr.qp_state);
}

static PyObject *qp_get_send_cq(PyObject *self, void *closure)
{
	return obj_or_none(QPO(self)->send_cq);
}

static PyObject *qp_get_recv_cq(PyObject *self, void *closure)
{
	return obj_or_none(QPO(self)->recv_cq);
}

static PyObject *qp_get_srq(PyObject *self, void *closure)
{
	return obj_or_none(QPO(self)->srq);
}

static PyObject *qp_get_xrcd(PyObject *self, void *closure)
{
	return obj_or_none(QPO(self)->xrcd);
}

static PyObject *qp_get_ind_tbl(PyObject *self, void *closure)
{
	return obj_or_none(QPO(self)->ind_tbl);
}

static PyObject *qp_get_context(PyObject *self, void *closure)
{
	Handle *pd = HANDLE(self)->parent;

	return obj_or_none(pd ? (PyObject *)pd->parent : NULL);
}

static PyObject *qp_get_cap(PyObject *self, void *closure)
{
	return qp_cap_to_py(&QPO(self)->cap);
}

static PyObject *qp_get_sq_sig_all(PyObject *self, void *closure)
{
	return PyBool_FromLong(QPO(self)->sq_sig_all);
}

static PyObject *qp_get_handle(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(QPP(self)->handle);
}

/* Uses the cached state: a repr must not make a syscall. */
static PyObject *qp_repr(PyObject *self)
{
	struct ibv_qp *qp = QPP(self);

	if (qp == NULL)
		return PyUnicode_FromFormat("<ibverbs.QP %s closed>",
					    type_name(QPO(self)->qp_type));
	return PyUnicode_FromFormat("<ibverbs.QP %s qp_num=%u %s>",
				    type_name(QPO(self)->qp_type), qp->qp_num,
				    qp_state_name(qp->state));
}

/* ------------------------------------------------------------------ */
/* Multicast groups (UD QPs) and the data-ordering query               */
/* ------------------------------------------------------------------ */

/* After a successful attach/detach: the group joins or leaves the list
 * that close() detaches.  None, or NULL (MemoryError).  Under the QP's
 * lock: threads may attach and detach on one QP at once. */
static PyObject *mcast_note(QPObject *q, const union ibv_gid *gid, uint16_t lid,
			    int attach)
{
	struct qp_mcast_group *grown;
	int i, nomem = 0;

	OBJ_LOCKED_BEGIN(q);
	i = mcast_find(q, gid, lid);
	if (!attach) {
		if (i >= 0)
			q->mcast[i] = q->mcast[--q->n_mcast];
	} else if (i < 0) { /* joined twice: rxe answers 0, one detach leaves */
		grown = PyMem_Realloc(q->mcast, (size_t)(q->n_mcast + 1) *
							sizeof(*grown));
		if (grown != NULL) {
			q->mcast = grown;
			q->mcast[q->n_mcast].gid = *gid;
			q->mcast[q->n_mcast].lid = lid;
			q->n_mcast++;
		}
		nomem = grown == NULL;
	}
	OBJ_LOCKED_END();
	if (nomem) {
		/* Not kept: leave the group again rather than fail close(). */
		IBV.detach_mcast((struct ibv_qp *)HANDLE(q)->obj, gid, lid);
		return PyErr_NoMemory();
	}
	Py_RETURN_NONE;
}

/* attach_mcast/detach_mcast(gid, lid=0): one body, the verb differs. */
#define MCAST_ARGS(X, S)                   \
	X(S, RECORD, PyObject *, gid, Gid) \
	X(S, UINT, uint16_t, lid, .flags = ARG_OPT)
ARGS_DECLARE(mcast, MCAST_ARGS);
METHOD_ARGS(qp_attach_mcast, "QP.attach_mcast", mcast_params);
METHOD_ARGS(qp_detach_mcast, "QP.detach_mcast", mcast_params);

static PyObject *qp_mcast(PyObject *self, PyObject *args, PyObject *kw,
			  int attach)
{
	const char *verb = attach ? "ibv_attach_mcast" : "ibv_detach_mcast";
	struct mcast_args a;
	union ibv_gid gid;
	char text[64];
	int rc;

	HANDLE_CHECK(self);
	if (args_parse(attach ? &qp_attach_mcast_args : &qp_detach_mcast_args,
		       self, args, kw, &a) < 0)
		return NULL;
	if (lib_need(attach ? (void *)IBV.attach_mcast :
			      (void *)IBV.detach_mcast,
		     "libibverbs", verb, "libibverbs 1.1") < 0)
		return NULL;
	if (a.gid == Py_None) {
		arg_type_error("gid", "Gid, 16 bytes or IPv6 text", 0, a.gid);
		return NULL;
	}
	if (gid_from_py(a.gid, &gid) < 0)
		return NULL;
	/* Gid() is Python code: it may have closed the QP. */
	HANDLE_CHECK(self);
	HANDLE_BUSY_ENTER(self);
	Py_BEGIN_ALLOW_THREADS
	rc = attach ? IBV.attach_mcast(QPP(self), &gid, a.lid) :
		      IBV.detach_mcast(QPP(self), &gid, a.lid);
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(self);
	if (rc == 0)
		return mcast_note(QPO(self), &gid, a.lid, attach);
	if (inet_ntop(AF_INET6, gid.raw, text, sizeof(text)) == NULL)
		snprintf(text, sizeof(text), "?");
	return verbs_error_fmt(rc, verb, "%s QP %u, group %s, lid %u",
			       type_name(QPO(self)->qp_type), QPP(self)->qp_num,
			       text, (unsigned)a.lid);
}

/* The Args and Raises of attach_mcast and detach_mcast, up to the
 * errno examples each ends with. */
#define MCAST_ARGS_RAISES                                                \
	"Args:\n"                                                        \
	"    gid: the group's GID: a Gid, 16 bytes or IPv6 text.\n"      \
	"    lid: the group's LID (InfiniBand), 0..0xffff.\n"            \
	"\n"                                                             \
	"Raises:\n"                                                      \
	"    TypeError: gid is not a GID's type, or lid not an int.\n"   \
	"    ValueError: gid is not 16 bytes or IPv6 text, lid out of\n" \
	"        range.\n"                                               \
	"    VerbsError: EBADF once the QP is closed; else the verb\n"   \
	"        failed (``errno``; "

PyDoc_STRVAR(qp_attach_mcast__doc__,
	     "Join a multicast group: the QP receives what is sent to it.\n"
	     "\n"
	     "Only UD QPs join groups. On RoCE v2 the group's GID is its IP\n"
	     "multicast address: ``::ffff:239.x.y.z`` for an IPv4 group\n"
	     "(``ff0e::ffff:239.x.y.z`` on RoCE v1), the address itself for\n"
	     "an IPv6 group; ``lid`` is 0 (on InfiniBand the SM gives the\n"
	     "group's MLID). Several QPs may join one group; each gets a\n"
	     "copy. ``close()`` leaves the groups the QP is still in. Runs\n"
	     "with the GIL released.\n"
	     "\n"
	     "Wraps ``ibv_attach_mcast`` (man page ibv_attach_mcast(3)).\n"
	     "\n" MCAST_ARGS_RAISES "e.g. EINVAL for a QP that is not\n"
	     "        UD or a GID that is no multicast group; rxe answers\n"
	     "        0 when this QP is already in the group).");

static PyObject *qp_attach_mcast(PyObject *self, PyObject *args, PyObject *kw)
{
	return qp_mcast(self, args, kw, 1);
}

PyDoc_STRVAR(qp_detach_mcast__doc__,
	     "Leave a multicast group that ``attach_mcast`` joined.\n"
	     "\n"
	     "From then on the QP gets nothing more sent to the group.\n"
	     "Runs with the GIL released.\n"
	     "\n"
	     "Wraps ``ibv_detach_mcast`` (man page ibv_attach_mcast(3)).\n"
	     "\n" MCAST_ARGS_RAISES "rxe answers EINVAL for a group\n"
	     "        this QP is not in).");

static PyObject *qp_detach_mcast(PyObject *self, PyObject *args, PyObject *kw)
{
	return qp_mcast(self, args, kw, 0);
}

PyDoc_STRVAR(qp_query_data_in_order__doc__,
	     "Ask whether the device writes the data of ``op`` in order.\n"
	     "\n"
	     "With ``flags`` 0 the answer is 1 when the data of a message\n"
	     "of opcode ``op`` lands in memory in order (a poller may\n"
	     "watch its last byte), else 0. With\n"
	     "``QueryQPDataInOrderFlags.RETURN_CAPS`` (rdma-core 47) it is\n"
	     "a mask of ``QueryQPDataInOrderCaps`` (WHOLE_MSG,\n"
	     "ALIGNED_128_BYTES); ``DEVICE_ONLY`` (rdma-core 61) asks about\n"
	     "the device alone, without the host CPU. libibverbs answers 0\n"
	     "for flags it does not know, on\n"
	     "CPUs other than x86 and for providers without the op (rxe).\n"
	     "\n"
	     "Wraps ``ibv_query_qp_data_in_order`` (man page\n"
	     "ibv_query_qp_data_in_order(3)); the symbol is optional\n"
	     "(rdma-core 41).\n"
	     "\n"
	     "Args:\n"
	     "    op: the ``WROpcode`` to ask about.\n"
	     "    flags: ``QueryQPDataInOrderFlags``, 0..2**32-1.\n"
	     "\n"
	     "Returns:\n"
	     "    The verb's answer, an int (see above).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: op or flags is not an int.\n"
	     "    ValueError: op or flags out of range.\n"
	     "    VerbsError: EBADF once the QP is closed; EOPNOTSUPP when\n"
	     "        the loaded libibverbs is older than rdma-core 41.");

#define DATA_IN_ORDER_ARGS(X, S)                    \
	X(S, ENUM, int, op, WROpcode, 0, INT32_MAX) \
	X(S, FLAGS, uint32_t, flags, QueryQPDataInOrderFlags, .flags = ARG_OPT)
ARGS_METHOD(static, qp_query_data_in_order, "QP.query_data_in_order",
	    DATA_IN_ORDER_ARGS, self, a)
{
	int rc;

	IBV_REQUIRE_OPTIONAL(query_qp_data_in_order, ibv_query_qp_data_in_order,
			     "rdma-core 41");
	rc = IBV.query_qp_data_in_order(QPP(self), (enum ibv_wr_opcode)a->op,
					a->flags);
	return PyLong_FromLong(rc);
}

PyDoc_STRVAR(qp__doc__,
	     "A queue pair (``struct ibv_qp``) of any type (RC, UC, UD, ...).\n"
	     "\n"
	     "Made by ``PD.create_qp(QPInitAttr(...))``. Connect it with\n"
	     "``to_init()``, ``to_rtr()`` and ``to_rts()`` (or ``modify()``),\n"
	     "then post with ``post_send()`` and ``post_recv()``. It uses\n"
	     "its CQs and SRQ, which refuse ``close()`` until it is closed.\n"
	     "``close()`` wraps ``ibv_destroy_qp`` (man page\n"
	     "ibv_create_qp(3)). The base class of QPEx.");

static PyMethodDef qp_methods[] = {
	METHOD_O("post_send", qp_post_send),
	METHOD_O("post_recv", qp_post_recv),
	METHOD_KW("post_send_batch", qp_post_send_batch),
	METHOD_KW("post_recv_batch", qp_post_recv_batch),
	{ "modify", KW qp_meth_modify, METH_VARARGS | METH_KEYWORDS,
	  qp_modify__doc__ },
	{ "query", KW qp_meth_query, METH_VARARGS | METH_KEYWORDS,
	  qp_query__doc__ },
	METHOD_KW("to_init", qp_to_init),
	METHOD_KW("to_rtr", qp_to_rtr),
	METHOD_KW("to_rts", qp_to_rts),
	{ "create_flow", KW flow_create, METH_VARARGS | METH_KEYWORDS,
	  qp_create_flow__doc__ },
	METHOD_KW("bind_mw", qp_bind_mw),
	METHOD_KW("attach_mcast", qp_attach_mcast),
	METHOD_KW("detach_mcast", qp_detach_mcast),
	METHOD_KW("query_data_in_order", qp_query_data_in_order),
	METHOD_KW("modify_rate_limit", qp_modify_rate_limit),
	METHOD_NOARGS("query_ece", qp_query_ece),
	METHOD_O("set_ece", qp_set_ece),
	METHOD_KW("attach_comp_cntr", qp_attach_comp_cntr),
	HANDLE_METHODS_END
};

static PyGetSetDef qp_getset[] = {
	{ "qp_num", qp_get_qp_num, NULL,
	  "The QP number the peer addresses; EBADF once closed.", NULL },
	{ "qp_type", qp_get_qp_type, NULL,
	  "The ``QPType`` it was created with.", NULL },
	{ "state", qp_get_state, NULL,
	  "The current ``QPState``, as the device reports it (an error\n"
	  "completion moves a QP to ERR); wraps ``ibv_query_qp``.",
	  NULL },
	{ "pd", handle_get_parent, NULL,
	  "The PD the QP was created in (the XRCD of a QP from\n"
	  "``Context.open_qp()``).",
	  NULL },
	{ "xrcd", qp_get_xrcd, NULL,
	  "The XRCD of an XRC receive QP from ``create_qp_ex``, or None.",
	  NULL },
	{ "rwq_ind_tbl", qp_get_ind_tbl, NULL,
	  "The RWQIndTable of an RSS QP, or None.", NULL },
	{ "context", qp_get_context, NULL, "The Context of the QP's PD.",
	  NULL },
	{ "send_cq", qp_get_send_cq, NULL,
	  "The send CQ (None once the QP is closed).", NULL },
	{ "recv_cq", qp_get_recv_cq, NULL,
	  "The receive CQ (None once the QP is closed).", NULL },
	{ "srq", qp_get_srq, NULL, "The SRQ the QP receives through, or None.",
	  NULL },
	{ "cap", qp_get_cap, NULL,
	  "The QPCap ``ibv_create_qp`` granted (``query()`` has the\n"
	  "device's current view).",
	  NULL },
	{ "sq_sig_all", qp_get_sq_sig_all, NULL,
	  "True when every send WR completes with a completion.", NULL },
	{ "handle", qp_get_handle, NULL,
	  "The QP's kernel handle (``ibv_qp.handle``); EBADF once closed.",
	  NULL },
	HANDLE_GETSETS_END
};

/* BASETYPE: QPEx (qp_ex.c) derives from it; handle_no_new still keeps
 * Python code from making instances. */
HANDLE_TYPE_SPEC(QP_spec, "QP", QPObject, Py_TPFLAGS_BASETYPE, qp__doc__,
		 qp_dealloc, qp_traverse, qp_repr, qp_methods, qp_getset);
