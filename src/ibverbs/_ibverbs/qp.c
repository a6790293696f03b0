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
 * The data path (post_send/post_recv, METH_O) is in post.c: the WR
 * objects already hold native ibv_*_wr structs, which it links in place;
 * the inline verbs jump straight to the provider.  No allocation, GIL
 * kept.
 */
#include "ibverbs.h"
#include <stddef.h>
#include <string.h>

static const char *type_name(int t)
{
	switch (t) {
	case IBV_QPT_RC:
		return "RC";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_UD:
		return "UD";
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

static int qp_destroy(Handle *h)
{
	return IBV.destroy_qp((struct ibv_qp *)h->obj);
}

/* After a successful destroy: the CQs and SRQ may be closed again. */
void qp_release(Handle *h)
{
	QPObject *q = (QPObject *)h;

	if (q->send_cq)
		handle_unuse(HANDLE(q->send_cq));
	if (q->recv_cq)
		handle_unuse(HANDLE(q->recv_cq));
	if (q->srq)
		handle_unuse(HANDLE(q->srq));
	Py_CLEAR(q->send_cq);
	Py_CLEAR(q->recv_cq);
	Py_CLEAR(q->srq);
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
	handle_dealloc(HANDLE(self));
}

/* ------------------------------------------------------------------ */
/* PD.create_qp(init_attr)                                             */
/* ------------------------------------------------------------------ */

/* getattr that tells "missing" (0, *out NULL) from an error (-1). */
static int opt_attr(PyObject *o, const char *name, PyObject **out)
{
	*out = PyObject_GetAttrString(o, name);
	if (*out != NULL)
		return 0;
	if (!PyErr_ExceptionMatches(PyExc_AttributeError))
		return -1;
	PyErr_Clear();
	return 0;
}

static int init_u32(PyObject *ia, const char *name, uint32_t dflt,
		    uint32_t *out)
{
	PyObject *v;
	char what[40];
	int rc;

	if (opt_attr(ia, name, &v) < 0)
		return -1;
	*out = dflt;
	if (v == NULL || v == Py_None) {
		Py_XDECREF(v);
		return 0;
	}
	snprintf(what, sizeof(what), "init_attr.%s", name);
	rc = arg_u32(v, what, out);
	Py_DECREF(v);
	return rc;
}

/* A CQ of the PD's Context; returns a new reference. */
static PyObject *get_cq(PDObject *pd, PyObject *ia, const char *name,
			PyObject *dflt)
{
	PyObject *cq;

	if (opt_attr(ia, name, &cq) < 0)
		return NULL;
	if (cq == NULL || cq == Py_None) {
		Py_XDECREF(cq);
		if (dflt == NULL) {
			PyErr_Format(PyExc_TypeError,
				     "init_attr.%s must be a CQ, not None",
				     name);
			return NULL;
		}
		Py_INCREF(dflt);
		return dflt;
	}
	if (!PyObject_TypeCheck(cq, ST.CQ_type)) {
		PyErr_Format(PyExc_TypeError,
			     "init_attr.%s must be a CQ, not %R", name,
			     (PyObject *)Py_TYPE(cq));
		goto fail;
	}
	if (handle_check(HANDLE(cq)) < 0)
		goto fail;
	if (HANDLE(cq)->parent != HANDLE(pd)->parent) {
		PyErr_Format(
			PyExc_ValueError,
			"init_attr.%s belongs to another Context than the PD",
			name);
		goto fail;
	}
	return cq;
fail:
	Py_DECREF(cq);
	return NULL;
}

/* The SRQ (new reference) or NULL with no error for None. */
static int get_srq(PDObject *pd, PyObject *ia, PyObject **out)
{
	PyObject *srq;

	*out = NULL;
	if (opt_attr(ia, "srq", &srq) < 0)
		return -1;
	if (srq == NULL || srq == Py_None) {
		Py_XDECREF(srq);
		return 0;
	}
	if (!PyObject_TypeCheck(srq, ST.SRQ_type)) {
		PyErr_Format(PyExc_TypeError,
			     "init_attr.srq must be an SRQ or None, not %R",
			     (PyObject *)Py_TYPE(srq));
		goto fail;
	}
	if (handle_check(HANDLE(srq)) < 0)
		goto fail;
	if (HANDLE(srq)->parent != HANDLE(pd)) {
		PyErr_SetString(PyExc_ValueError,
				"init_attr.srq belongs to another PD");
		goto fail;
	}
	*out = srq;
	return 0;
fail:
	Py_DECREF(srq);
	return -1;
}

static int get_qp_type(PyObject *ia, enum ibv_qp_type *out)
{
	PyObject *v;
	long t;
	int rc;

	if (opt_attr(ia, "qp_type", &v) < 0)
		return -1;
	*out = IBV_QPT_RC;
	if (v == NULL || v == Py_None) {
		Py_XDECREF(v);
		return 0;
	}
	rc = arg_int(v, "init_attr.qp_type", 0, INT32_MAX, &t);
	Py_DECREF(v);
	*out = (enum ibv_qp_type)t;
	return rc;
}

static int get_sig_all(PyObject *ia, int *out)
{
	PyObject *v;

	if (opt_attr(ia, "sq_sig_all", &v) < 0)
		return -1;
	*out = v ? PyObject_IsTrue(v) : 0;
	Py_XDECREF(v);
	return *out < 0 ? -1 : 0;
}

/* Fill *init from a QPInitAttr-like object; new references to the CQs
 * and SRQ (srq may be NULL) go to the caller. */
static int read_init_attr(PDObject *pd, PyObject *ia,
			  struct ibv_qp_init_attr *init, PyObject **scq,
			  PyObject **rcq, PyObject **srq)
{
	struct ibv_qp_cap *c = &init->cap;

	memset(init, 0, sizeof(*init));
	*scq = get_cq(pd, ia, "send_cq", NULL);
	if (*scq == NULL)
		return -1;
	*rcq = get_cq(pd, ia, "recv_cq", *scq);
	if (*rcq == NULL)
		return -1;
	if (get_srq(pd, ia, srq) < 0 || get_qp_type(ia, &init->qp_type) < 0 ||
	    get_sig_all(ia, &init->sq_sig_all) < 0 ||
	    init_u32(ia, "max_send_wr", 128, &c->max_send_wr) < 0 ||
	    init_u32(ia, "max_recv_wr", 128, &c->max_recv_wr) < 0 ||
	    init_u32(ia, "max_send_sge", 1, &c->max_send_sge) < 0 ||
	    init_u32(ia, "max_recv_sge", 1, &c->max_recv_sge) < 0 ||
	    init_u32(ia, "max_inline_data", 0, &c->max_inline_data) < 0)
		return -1;
	init->send_cq = HANDLE(*scq)->obj;
	init->recv_cq = HANDLE(*rcq)->obj;
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

PyObject *qp_create(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "init_attr", NULL };
	PyObject *ia;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:create_qp", kwlist, &ia))
		return NULL;
	return qp_create_with(pd, ia, &qp_kind, "ibv_create_qp", plain_create,
			      NULL);
}

PyObject *qp_create_with(PDObject *pd, PyObject *ia, const HandleKind *kind,
			 const char *verb, qp_create_fn create, void *arg)
{
	return qp_create_typed(pd, ia, kind, verb, create, arg, ST.QP_type);
}

PyObject *qp_create_typed(PDObject *pd, PyObject *ia, const HandleKind *kind,
			  const char *verb, qp_create_fn create, void *arg,
			  PyTypeObject *type)
{
	PyObject *scq = NULL, *rcq = NULL, *srq = NULL, *res = NULL;
	struct ibv_qp_init_attr init;
	struct ibv_qp *qp;
	QPObject *self;
	int err;

	if (read_init_attr(pd, ia, &init, &scq, &rcq, &srq) < 0)
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
	if (handle_check(HANDLE(pd)) < 0 || handle_check(HANDLE(scq)) < 0 ||
	    handle_check(HANDLE(rcq)) < 0 ||
	    (srq != NULL && handle_check(HANDLE(srq)) < 0)) {
		Py_DECREF(self);
		goto out;
	}
	init.send_cq = HANDLE(scq)->obj;
	init.recv_cq = HANDLE(rcq)->obj;
	init.srq = srq ? HANDLE(srq)->obj : NULL;
	init.qp_context = self;
	errno = 0;
	qp = create((struct ibv_pd *)HANDLE(pd)->obj, &init, arg);
	if (qp == NULL) {
		err = errno ? errno : EINVAL;
		Py_DECREF(self);
		if (!PyErr_Occurred())
			create_error(err, verb, &init);
		goto out;
	}
	handle_init(HANDLE(self), kind, HANDLE(pd));
	HANDLE(self)->obj = qp;
	self->qp_type = init.qp_type;
	self->cap = init.cap; /* create_qp wrote back the actual caps */
	self->sq_sig_all = init.sq_sig_all;
	/* Steal the references; mark the CQs/SRQ used until destroy. */
	self->send_cq = scq;
	self->recv_cq = rcq;
	self->srq = srq;
	scq = rcq = srq = NULL;
	handle_use(HANDLE(self->send_cq));
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

/* modify(mask, **attrs); the published package names it attr_mask. */
static PyObject *qp_meth_modify(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *mask_o = NULL, *alias_o = NULL;
	struct ibv_qp_attr attr;
	long mask;

	HANDLE_CHECK(self);
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

/* query(mask=all) -> (dict of the fields the mask covers, QPCap) */
static PyObject *qp_meth_query(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "mask", NULL };
	PyObject *mask_o = NULL, *d, *cap;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	long mask = QP_QUERY_ALL;
	int rc;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:query", kwlist, &mask_o))
		return NULL;
	if (mask_o && arg_int(mask_o, "mask", 0, INT32_MAX, &mask) < 0)
		return NULL;
	rc = qp_query_raw(self, &attr, (int)mask, &init);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_query_qp",
				       "QP %u, attr_mask 0x%lx",
				       QPP(self)->qp_num, mask);
	d = qp_attr_to_dict(&attr, (int)mask);
	if (d == NULL)
		return NULL;
	cap = qp_cap_to_py(&init.cap);
	if (cap == NULL) {
		Py_DECREF(d);
		return NULL;
	}
	return Py_BuildValue("(NN)", d, cap);
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

static PyMethodDef qp_methods[] = {
	{ "post_send", qp_post_send, METH_O,
	  "post_send(wr_or_list): post a SendWR or a list of them as one "
	  "chained ibv_post_send. On failure, VerbsError names the rejected "
	  "WR's index; VerbsError(EBUSY) while a QPEx's wr_start() batch "
	  "is open." },
	{ "post_recv", qp_post_recv, METH_O,
	  "post_recv(wr_or_list): post a RecvWR or a list (ibv_post_recv). "
	  "A QP with an SRQ refuses (ValueError)." },
	{ "modify", KW qp_meth_modify, METH_VARARGS | METH_KEYWORDS,
	  "modify(mask, **attrs) (ibv_modify_qp; mask also as attr_mask=): "
	  "keywords are struct "
	  "ibv_qp_attr field names; ah_attr takes an AHAttr, cap a QPCap." },
	{ "query", KW qp_meth_query, METH_VARARGS | METH_KEYWORDS,
	  "query(mask=all) -> (dict of attributes, QPCap) (ibv_query_qp)" },
	{ "to_init", KW qp_to_init, METH_VARARGS | METH_KEYWORDS,
	  "to_init(port, access, pkey_index=0, qkey=None): RESET -> INIT. "
	  "access applies to RC/UC, qkey to UD only (default 0x11111111)." },
	{ "to_rtr", KW qp_to_rtr, METH_VARARGS | METH_KEYWORDS,
	  "to_rtr(remote, *, sgid_index, mtu=None, port=None, "
	  "max_dest_rd_atomic=1, min_rnr_timer=12, hop_limit=64, sl=0, "
	  "traffic_class=0, flow_label=0): INIT -> RTR. remote is a QPInfo "
	  "(None for UD). mtu defaults to min(remote.mtu, the port's "
	  "active_mtu); port to the QP's port." },
	{ "to_rts", KW qp_to_rts, METH_VARARGS | METH_KEYWORDS,
	  "to_rts(psn=0, *, timeout=14, retry_cnt=7, rnr_retry=7, "
	  "max_rd_atomic=1): RTR -> RTS (the RC-only fields are ignored "
	  "for UC/UD)." },
	{ "create_flow", KW flow_create, METH_VARARGS | METH_KEYWORDS,
	  "create_flow(flow_attr) -> Flow (ibv_create_flow; flow.c)" },
	{ "bind_mw", KW qp_bind_mw, METH_VARARGS | METH_KEYWORDS,
	  "bind_mw(mw, mw_bind) -> int: bind a type 1 MW (ibv_bind_mw)" },
	HANDLE_METHODS,
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef qp_getset[] = {
	{ "qp_num", qp_get_qp_num, NULL, "the QP number", NULL },
	{ "qp_type", qp_get_qp_type, NULL, "QPType", NULL },
	{ "state", qp_get_state, NULL, "current QPState (ibv_query_qp)", NULL },
	{ "pd", handle_get_parent, NULL, "the PD", NULL },
	{ "context", qp_get_context, NULL, "the Context", NULL },
	{ "send_cq", qp_get_send_cq, NULL, "the send CQ (None once closed)",
	  NULL },
	{ "recv_cq", qp_get_recv_cq, NULL, "the receive CQ (None once closed)",
	  NULL },
	{ "srq", qp_get_srq, NULL, "the SRQ, or None", NULL },
	{ "cap", qp_get_cap, NULL,
	  "QPCap as ibv_create_qp reported it (query() has the device's current view)",
	  NULL },
	{ "sq_sig_all", qp_get_sq_sig_all, NULL, "every send WR is signaled",
	  NULL },
	{ "handle", qp_get_handle, NULL, "kernel handle of the QP", NULL },
	HANDLE_GETSETS,
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot qp_slots[] = {
	{ Py_tp_doc,
	  "A queue pair (ibv_qp); from PD.create_qp(QPInitAttr(...))." },
	{ Py_tp_new, handle_no_new },
	{ Py_tp_dealloc, qp_dealloc },
	{ Py_tp_traverse, qp_traverse },
	{ Py_tp_repr, qp_repr },
	{ Py_tp_methods, qp_methods },
	{ Py_tp_getset, qp_getset },
	{ 0, NULL }
};

/* BASETYPE: QPEx (qp_ex.c) derives from it; handle_no_new still keeps
 * Python code from making instances. */
PyType_Spec QP_spec = { "ibverbs._ibverbs.QP", sizeof(QPObject), 0,
			Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
				Py_TPFLAGS_BASETYPE,
			qp_slots };
