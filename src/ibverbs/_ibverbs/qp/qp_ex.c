/*
 * qp_ex.c - QPEx: a QP created with ibv_create_qp_ex and a set of
 * send_ops_flags, which posts through the ibv_wr_* calls (wr_ex.c).
 *
 * QPEx is a subclass of QP (PyType_FromSpecWithBases): its object starts
 * with a QPObject, so modify, to_init/to_rtr/to_rts, post_recv, query and
 * close work as on any QP, and qp_create_typed() (qp.c) reads the init
 * attributes.  ibv_create_qp_ex is a static inline of verbs.h that calls
 * the exported ibv_create_qp by name for a comp_mask of PD alone; this
 * file calls the provider's create_qp_ex op itself (verbs_get_ctx_op) with
 * IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, as verbs.h does.
 *
 * The batch.  The providers check nothing: a builder outside
 * wr_start/wr_complete, an operation the QP was not created for, a
 * setter with no builder before it or wr_start twice crash or deadlock
 * (mlx5 and rxe take the send queue's spinlock in wr_start and release it
 * in wr_complete/wr_abort).  So this file keeps the batch's state and
 * every builder and setter checks it before the provider is called
 * (VerbsError EINVAL); post_send and modify refuse (EBUSY, qp_check_idle
 * in ibverbs.h: the flag is the base QPObject's in_batch) while a batch
 * is open, for they take the same lock.  close() during a batch, and the
 * deallocation of a QPEx whose batch is open, abort the batch first
 * (ibv_wr_abort: nothing of it is posted), then destroy the QP.
 *
 * What a batch references stays alive until it ends: the SGE objects
 * given to the setters (and so their MRs and memory) and the AHs of
 * wr_set_ud_addr are held, the MRs and AHs marked used (handle_use), so
 * closing one raises EBUSY until wr_complete or wr_abort.  Inline data is
 * copied by the provider during the setter (the ibv_wr_post man page:
 * "Inline setters will copy the send data during the setter"), which this
 * file relies on: the buffer is not held.
 */
#include "ibverbs.h"
#include <string.h>

/* ------------------------------------------------------------------ */
/* What each operation is (the verb's name, its send_ops_flags bit, the */
/* data setters it takes)                                               */
/* ------------------------------------------------------------------ */

/* IBV_QP_EX_WITH_FLUSH is absent from rdma-core 44's headers: rdma-core's
 * ABI value, only used to name the bit in a message. */
#ifdef IBVERBS_HAVE_WR_FLUSH
#define WREX_FLUSH_BIT IBV_QP_EX_WITH_FLUSH
#else
#define WREX_FLUSH_BIT (1ull << 11)
#endif
/* Likewise IBV_QP_EX_WITH_ATOMIC_WRITE before rdma-core 42. */
#ifdef IBVERBS_HAVE_WR_ATOMIC_WRITE
#define WREX_ATOMIC_WRITE_BIT IBV_QP_EX_WITH_ATOMIC_WRITE
#else
#define WREX_ATOMIC_WRITE_BIT (1ull << 12)
#endif

static const struct {
	const char *verb; /* "ibv_wr_send" */
	const char *flag; /* the QPCreateSendOpsFlags member */
	uint64_t bit;
	int setters; /* WREX_SET_SGE | WREX_SET_INLINE */
} ops[WREX_OP_COUNT] = {
	[WREX_OP_RDMA_WRITE] = { "ibv_wr_rdma_write", "RDMA_WRITE",
				 IBV_QP_EX_WITH_RDMA_WRITE,
				 WREX_SET_SGE | WREX_SET_INLINE },
	[WREX_OP_RDMA_WRITE_IMM] = { "ibv_wr_rdma_write_imm",
				     "RDMA_WRITE_WITH_IMM",
				     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
				     WREX_SET_SGE | WREX_SET_INLINE },
	[WREX_OP_SEND] = { "ibv_wr_send", "SEND", IBV_QP_EX_WITH_SEND,
			   WREX_SET_SGE | WREX_SET_INLINE },
	[WREX_OP_SEND_IMM] = { "ibv_wr_send_imm", "SEND_WITH_IMM",
			       IBV_QP_EX_WITH_SEND_WITH_IMM,
			       WREX_SET_SGE | WREX_SET_INLINE },
	[WREX_OP_RDMA_READ] = { "ibv_wr_rdma_read", "RDMA_READ",
				IBV_QP_EX_WITH_RDMA_READ, WREX_SET_SGE },
	[WREX_OP_ATOMIC_CMP_SWP] = { "ibv_wr_atomic_cmp_swp",
				     "ATOMIC_CMP_AND_SWP",
				     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
				     WREX_SET_SGE },
	[WREX_OP_ATOMIC_FETCH_ADD] = { "ibv_wr_atomic_fetch_add",
				       "ATOMIC_FETCH_AND_ADD",
				       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
				       WREX_SET_SGE },
	[WREX_OP_LOCAL_INV] = { "ibv_wr_local_inv", "LOCAL_INV",
				IBV_QP_EX_WITH_LOCAL_INV, 0 },
	[WREX_OP_BIND_MW] = { "ibv_wr_bind_mw", "BIND_MW",
			      IBV_QP_EX_WITH_BIND_MW, 0 },
	[WREX_OP_SEND_INV] = { "ibv_wr_send_inv", "SEND_WITH_INV",
			       IBV_QP_EX_WITH_SEND_WITH_INV,
			       WREX_SET_SGE | WREX_SET_INLINE },
	[WREX_OP_ATOMIC_WRITE] = { "ibv_wr_atomic_write", "ATOMIC_WRITE",
				   WREX_ATOMIC_WRITE_BIT, 0 },
	[WREX_OP_FLUSH] = { "ibv_wr_flush", "FLUSH", WREX_FLUSH_BIT, 0 },
};

/* ------------------------------------------------------------------ */
/* The batch's state                                                   */
/* ------------------------------------------------------------------ */

static int needs_ud(QPExObject *q)
{
	return q->qp.qp_type == IBV_QPT_UD && q->cur_op != WREX_OP_NONE &&
	       !q->cur_ud;
}

static PyObject *ud_missing(QPExObject *q, const char *verb)
{
	PyErr_Format(PyExc_ValueError,
		     "%s: work request %u of the batch (%s on a UD QP) has "
		     "no destination: call wr_set_ud_addr(ah, remote_qpn, "
		     "remote_qkey) after its builder",
		     verb, q->n_wr - 1, ops[q->cur_op].verb);
	return NULL;
}

int qpex_keep(PyObject *self, PyObject *o)
{
	QPExObject *q = QPEXO(self);

	if (q->n_keep == q->cap_keep) {
		Py_ssize_t cap = q->cap_keep ? 2 * q->cap_keep : 16;
		PyObject **k = PyMem_Realloc(q->keep, cap * sizeof(*k));

		if (k == NULL) {
			PyErr_NoMemory();
			return -1;
		}
		q->keep = k;
		q->cap_keep = cap;
	}
	Py_INCREF(o);
	q->keep[q->n_keep++] = o;
	if (PyObject_TypeCheck(o, ST.MR_type) ||
	    PyObject_TypeCheck(o, ST.AH_type) ||
	    PyObject_TypeCheck(o, ST.MW_type))
		handle_use(HANDLE(o));
	return 0;
}

/* The batch is over (completed, aborted, or the QP gone): drop what it
 * held.  The decrefs run last, on an array detached from the QP, for they
 * can run arbitrary code (an SGE owner's finalizer) that may use the QP,
 * even open a new batch. */
static void batch_release(QPExObject *q)
{
	Py_ssize_t i, n = q->n_keep;
	PyObject **arr = q->keep;

	q->qp.in_batch = 0;
	q->cur_op = WREX_OP_NONE;
	q->cur_data = q->cur_ud = 0;
	q->n_wr = 0;
	if (n == 0)
		return;
	q->keep = NULL;
	q->n_keep = q->cap_keep = 0;
	for (i = 0; i < n; i++) {
		if (PyObject_TypeCheck(arr[i], ST.MR_type) ||
		    PyObject_TypeCheck(arr[i], ST.AH_type) ||
		    PyObject_TypeCheck(arr[i], ST.MW_type))
			handle_unuse(HANDLE(arr[i]));
	}
	for (i = 0; i < n; i++)
		Py_DECREF(arr[i]);
	PyMem_Free(arr);
}

/* An open batch ends without posting (close, dealloc, a failed check in
 * wr_complete). */
static void batch_abort(QPExObject *q)
{
	if (!q->qp.in_batch)
		return;
	if (q->qpx != NULL && HANDLE(q)->obj != NULL)
		ibv_wr_abort(q->qpx);
	batch_release(q);
}

static PyObject *not_in_batch(const char *verb)
{
	return verbs_error_fmt(EINVAL, verb,
			       "no batch is open: call wr_start() first");
}

int qpex_begin_wr(PyObject *self, int op, const char *verb, int provided)
{
	QPExObject *q = QPEXO(self);

	if (!q->qp.in_batch) {
		not_in_batch(verb);
		return -1;
	}
	if (!(q->send_ops_flags & ops[op].bit)) {
		verbs_error_fmt(EINVAL, verb,
				"%s is not in this QP's send_ops_flags "
				"(create it with QPCreateSendOpsFlags.%s)",
				ops[op].flag, ops[op].flag);
		return -1;
	}
	if (!provided) {
		verbs_error_fmt(EOPNOTSUPP, verb,
				"the provider does not implement it");
		return -1;
	}
	if (needs_ud(q)) {
		ud_missing(q, verb);
		return -1;
	}
	q->cur_op = op;
	q->cur_data = q->cur_ud = 0;
	q->n_wr++;
	return 0;
}

int qpex_begin_setter(PyObject *self, int data, const char *verb)
{
	QPExObject *q = QPEXO(self);

	if (!q->qp.in_batch) {
		not_in_batch(verb);
		return -1;
	}
	if (q->cur_op == WREX_OP_NONE) {
		verbs_error_fmt(EINVAL, verb,
				"no work request to attach it to: call a "
				"builder (wr_send(), wr_rdma_write(), ...) "
				"first");
		return -1;
	}
	if (data == 0) { /* wr_set_ud_addr */
		if (q->qp.qp_type != IBV_QPT_UD) {
			verbs_error_fmt(EINVAL, verb,
					"wr_set_ud_addr is for UD QPs only");
			return -1;
		}
		if (q->cur_ud) {
			verbs_error_fmt(EINVAL, verb,
					"work request %u already has its "
					"destination",
					q->n_wr - 1);
			return -1;
		}
		q->cur_ud = 1;
		return 0;
	}
	if (!(ops[q->cur_op].setters & data)) {
		verbs_error_fmt(EINVAL, verb, "%s takes %s",
				ops[q->cur_op].verb,
				ops[q->cur_op].setters == WREX_SET_SGE ?
					"SGEs only (wr_set_sge, "
					"wr_set_sge_list), not inline data" :
					"no data setter");
		return -1;
	}
	if (q->cur_data) {
		verbs_error_fmt(EINVAL, verb,
				"work request %u (%s) already has its data: "
				"one data setter per work request",
				q->n_wr - 1, ops[q->cur_op].verb);
		return -1;
	}
	q->cur_data = 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* wr_start, wr_complete, wr_abort                                    */
/* ------------------------------------------------------------------ */

PyObject *qpex_wr_start(PyObject *self, PyObject *unused)
{
	QPExObject *q = QPEXO(self);

	HANDLE_CHECK(self);
	if (q->qp.in_batch)
		return verbs_error_fmt(EINVAL, "ibv_wr_start",
				       "a batch is already open (%u work "
				       "requests): wr_complete() or "
				       "wr_abort() it first",
				       q->n_wr);
	ibv_wr_start(q->qpx);
	q->qp.in_batch = 1;
	q->cur_op = WREX_OP_NONE;
	q->cur_data = q->cur_ud = 0;
	q->n_wr = 0;
	Py_RETURN_NONE;
}

PyObject *qpex_wr_complete(PyObject *self, PyObject *unused)
{
	QPExObject *q = QPEXO(self);
	unsigned int n = q->n_wr, qpn;
	int rc;

	HANDLE_CHECK(self);
	if (!q->qp.in_batch)
		return not_in_batch("ibv_wr_complete");
	qpn = QPP(self)->qp_num; /* batch_release can run Python code */
	if (needs_ud(q)) {
		ud_missing(q, "ibv_wr_complete");
		batch_abort(q);
		return NULL;
	}
	rc = ibv_wr_complete(q->qpx);
	batch_release(q);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_wr_complete",
				       "QP %u: the batch of %u work "
				       "request(s) was not posted",
				       qpn, n);
	Py_RETURN_NONE;
}

PyObject *qpex_wr_abort(PyObject *self, PyObject *unused)
{
	HANDLE_CHECK(self);
	batch_abort(QPEXO(self));
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* Lifetime                                                            */
/* ------------------------------------------------------------------ */

/* An open batch is aborted first: its WRs are discarded, none posted. */
static int qpex_destroy(Handle *h)
{
	QPExObject *q = (QPExObject *)h;
	int rc;

	batch_abort(q);
	rc = IBV.destroy_qp((struct ibv_qp *)h->obj);
	if (rc == 0)
		q->qpx = NULL;
	return rc;
}

static const HandleKind qpex_kind = { "QPEx", "ibv_destroy_qp", qpex_destroy,
				      qp_release };

static int qpex_traverse(PyObject *self, visitproc visit, void *arg)
{
	QPExObject *q = QPEXO(self);
	traverseproc base =
		(traverseproc)PyType_GetSlot(ST.QP_type, Py_tp_traverse);
	Py_ssize_t i;

	for (i = 0; i < q->n_keep; i++)
		Py_VISIT(q->keep[i]);
	return base(self, visit, arg);
}

static void qpex_dealloc(PyObject *self)
{
	QPExObject *q = QPEXO(self);
	destructor base = (destructor)PyType_GetSlot(ST.QP_type, Py_tp_dealloc);

	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self)); /* aborts an open batch */
	/* Still open only if the destroy failed or the QP was inherited
	 * across fork(): drop the references, no verb. */
	batch_release(q);
	PyMem_Free(q->keep);
	q->keep = NULL;
	base(self);
}

/* ------------------------------------------------------------------ */
/* PD.create_qp_ex(init_attr), Context.create_qp_ex(init_attr)         */
/* ------------------------------------------------------------------ */

struct ex_args {
	uint64_t send_ops_flags;
	uint32_t create_flags;
};

static struct ibv_qp *ex_create(struct ibv_pd *pd,
				struct ibv_qp_init_attr *init, void *arg)
{
	struct ex_args *a = arg;
	struct ibv_qp_init_attr_ex ex;
	struct verbs_context *vctx;
	struct ibv_qp *qp;

	memset(&ex, 0, sizeof(ex));
	ex.qp_context = init->qp_context;
	ex.send_cq = init->send_cq;
	ex.recv_cq = init->recv_cq;
	ex.srq = init->srq;
	ex.cap = init->cap;
	ex.qp_type = init->qp_type;
	ex.sq_sig_all = init->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ex.pd = pd;
	ex.send_ops_flags = a->send_ops_flags;
	if (a->create_flags) {
		ex.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		ex.create_flags = a->create_flags;
	}
	vctx = verbs_get_ctx_op(pd->context, create_qp_ex);
	if (vctx == NULL) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = vctx->create_qp_ex(pd->context, &ex);
	if (qp != NULL)
		init->cap = ex.cap; /* the actual caps, as create_qp writes */
	return qp;
}

/* init_attr.<name> as an unsigned integer; missing or None: dflt. */
static int ia_uint(PyObject *ia, const char *name, uint64_t max, uint64_t dflt,
		   uint64_t *out)
{
	PyObject *v = PyObject_GetAttrString(ia, name);
	char what[48];
	int rc;

	*out = dflt;
	if (v == NULL) {
		if (!PyErr_ExceptionMatches(PyExc_AttributeError))
			return -1;
		PyErr_Clear();
		return 0;
	}
	if (v == Py_None) {
		Py_DECREF(v);
		return 0;
	}
	snprintf(what, sizeof(what), "init_attr.%s", name);
	rc = arg_u64(v, what, out);
	Py_DECREF(v);
	if (rc == 0 && *out > max) {
		PyErr_Format(PyExc_ValueError, "%s must be in range 0..%llu",
			     what, (unsigned long long)max);
		return -1;
	}
	return rc;
}

/* init_attr.pd: missing or None, or this very PD. */
static int ia_pd_matches(PDObject *pd, PyObject *ia)
{
	PyObject *v = PyObject_GetAttrString(ia, "pd");
	int rc = 0;

	if (v == NULL) {
		if (!PyErr_ExceptionMatches(PyExc_AttributeError))
			return -1;
		PyErr_Clear();
		return 0;
	}
	if (v != Py_None && v != (PyObject *)pd) {
		PyErr_Format(PyExc_ValueError,
			     "init_attr.pd is %R, not the PD whose "
			     "create_qp_ex was called",
			     v);
		rc = -1;
	}
	Py_DECREF(v);
	return rc;
}

static PyObject *create_ex(PDObject *pd, PyObject *ia)
{
	struct ex_args a;
	uint64_t cf;
	PyObject *res;
	struct ibv_qp_ex *qpx;
	QPExObject *q;

	IBV_REQUIRE_OPTIONAL(qp_to_qp_ex, ibv_qp_to_qp_ex, "rdma-core 24");
	if (ia_pd_matches(pd, ia) < 0 ||
	    ia_uint(ia, "send_ops_flags", UINT64_MAX, IBV_QP_EX_WITH_SEND,
		    &a.send_ops_flags) < 0 ||
	    ia_uint(ia, "create_flags", UINT32_MAX, 0, &cf) < 0)
		return NULL;
	a.create_flags = (uint32_t)cf;
	if (handle_check(HANDLE(pd)) < 0) /* that ran Python code */
		return NULL;
	res = qp_create_typed(pd, ia, &qpex_kind, "ibv_create_qp_ex", ex_create,
			      &a, ST.QPEx_type);
	if (res == NULL)
		return NULL;
	q = QPEXO(res);
	qpx = IBV.qp_to_qp_ex(QPP(res));
	if (qpx == NULL) {
		/* The provider made a plain QP: destroy it. */
		if (handle_close(HANDLE(res)) < 0)
			PyErr_Clear();
		Py_DECREF(res);
		return verbs_error_fmt(EOPNOTSUPP, "ibv_qp_to_qp_ex",
				       "the provider created no extended QP "
				       "(it lacks the ibv_wr_* API)");
	}
	q->qpx = qpx;
	q->send_ops_flags = a.send_ops_flags;
	return res;
}

PyObject *qpex_create(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "init_attr", NULL };
	PyObject *ia;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:create_qp_ex", kwlist,
					 &ia))
		return NULL;
	return create_ex(pd, ia);
}

/* Context.create_qp_ex(init_attr): init_attr.pd is required and must be
 * a PD of this Context (ibv_create_qp_ex takes both). */
PyObject *qpex_create_ctx(ContextObject *ctx, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "init_attr", NULL };
	PyObject *ia, *pd;
	PyObject *res = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:create_qp_ex", kwlist,
					 &ia))
		return NULL;
	pd = PyObject_GetAttrString(ia, "pd");
	if (pd == NULL) {
		if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError,
				     "init_attr must be a QPInitAttrEx with "
				     "a pd, not %R",
				     (PyObject *)Py_TYPE(ia));
		}
		return NULL;
	}
	if (!PyObject_TypeCheck(pd, ST.PD_type)) {
		PyErr_Format(PyExc_TypeError,
			     "init_attr.pd must be a PD (Context.create_qp_ex "
			     "needs one), not %R",
			     (PyObject *)Py_TYPE(pd));
		goto out;
	}
	if (handle_check(HANDLE(pd)) < 0)
		goto out;
	if (HANDLE(pd)->parent != HANDLE(ctx)) {
		PyErr_SetString(PyExc_ValueError,
				"init_attr.pd belongs to another Context");
		goto out;
	}
	res = create_ex((PDObject *)pd, ia);
out:
	Py_DECREF(pd);
	return res;
}

/* ------------------------------------------------------------------ */
/* wr_id, wr_flags, send_ops_flags                                     */
/* ------------------------------------------------------------------ */

static PyObject *get_wr_id(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLongLong(QPEXO(self)->qpx->wr_id);
}

static int set_wr_id(PyObject *self, PyObject *v, void *closure)
{
	uint64_t id;

	if (v == NULL) {
		PyErr_SetString(PyExc_AttributeError, "cannot delete wr_id");
		return -1;
	}
	if (handle_check(HANDLE(self)) < 0 || arg_u64(v, "wr_id", &id) < 0)
		return -1;
	QPEXO(self)->qpx->wr_id = id;
	return 0;
}

static PyObject *get_wr_flags(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return enum_from_int("SendFlags", (long)QPEXO(self)->qpx->wr_flags);
}

static int set_wr_flags(PyObject *self, PyObject *v, void *closure)
{
	uint32_t f;

	if (v == NULL) {
		PyErr_SetString(PyExc_AttributeError, "cannot delete wr_flags");
		return -1;
	}
	if (handle_check(HANDLE(self)) < 0 || arg_u32(v, "wr_flags", &f) < 0)
		return -1;
	QPEXO(self)->qpx->wr_flags = f;
	return 0;
}

static PyObject *get_send_ops_flags(PyObject *self, void *closure)
{
	PyObject *v = PyLong_FromUnsignedLongLong(QPEXO(self)->send_ops_flags);
	PyObject *mod, *cls, *res;

	if (v == NULL)
		return NULL;
	mod = module_cached(&ST.mod_enums, "ibverbs.enums");
	cls = mod ? PyObject_GetAttrString(mod, "QPCreateSendOpsFlags") : NULL;
	if (cls == NULL) {
		PyErr_Clear();
		return v;
	}
	res = PyObject_CallFunctionObjArgs(cls, v, NULL);
	Py_DECREF(cls);
	Py_DECREF(v);
	return res;
}

static PyObject *qpex_repr(PyObject *self)
{
	struct ibv_qp *qp = QPP(self);

	if (qp == NULL)
		return PyUnicode_FromString("<ibverbs.QPEx closed>");
	return PyUnicode_FromFormat("<ibverbs.QPEx qp_num=%u %s%s>", qp->qp_num,
				    qp_state_name(qp->state),
				    QPO(self)->in_batch ? " batch open" : "");
}

static PyGetSetDef qpex_getset[] = {
	{ "wr_id", get_wr_id, set_wr_id,
	  "The wr_id of the WRs the next builders start\n"
	  "(``ibv_qp_ex.wr_id``); settable; EBADF once closed.",
	  NULL },
	{ "wr_flags", get_wr_flags, set_wr_flags,
	  "The ``SendFlags`` of the WRs the next builders start\n"
	  "(``ibv_qp_ex.wr_flags``); settable; EBADF once closed.",
	  NULL },
	{ "send_ops_flags", get_send_ops_flags, NULL,
	  "The ``QPCreateSendOpsFlags`` the QP was created with: the\n"
	  "builders it may use.",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

PyDoc_STRVAR(qpex__doc__,
	     "An extended QP (``struct ibv_qp_ex``): posts with ``ibv_wr_*``.\n"
	     "\n"
	     "Made by ``PD.create_qp_ex(QPInitAttrEx(...))`` or\n"
	     "``Context.create_qp_ex()``. A QP (modify, to_init/to_rtr/\n"
	     "to_rts, post_recv, query, close work as on any QP) that also\n"
	     "posts in batches: ``wr_start()``, builders (``wr_send()``,\n"
	     "``wr_rdma_write()``, ...) each followed by its setters\n"
	     "(``wr_set_sge()``, ...), then ``wr_complete()`` or\n"
	     "``wr_abort()`` (man page ibv_wr_post(3)). The builders the QP\n"
	     "may use are its ``send_ops_flags``; each call checks the\n"
	     "batch's state before the provider sees it. ``close()`` aborts\n"
	     "an open batch first.");

/* clang-format off */
static PyType_Slot qpex_slots[] = {
	{ Py_tp_doc, (void *)qpex__doc__ },
	{ Py_tp_new, handle_no_new },
	{ Py_tp_dealloc, qpex_dealloc },
	{ Py_tp_traverse, qpex_traverse },
	{ Py_tp_repr, qpex_repr },
	{ Py_tp_methods, qpex_methods },
	{ Py_tp_getset, qpex_getset },
	{ 0, NULL }
};
/* clang-format on */

PyType_Spec QPEx_spec = { "ibverbs._ibverbs.QPEx", sizeof(QPExObject), 0,
			  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, qpex_slots };
