/*
 * qp_ex.c - QPEx: a QP created with ibv_create_qp_ex and a set of
 * send_ops_flags, which posts through the ibv_wr_* calls: its batch
 * (wr_start, wr_complete, wr_abort), the builders (wr_send, wr_rdma_write,
 * ..., one per operation), the setters that attach data or a UD destination
 * to the work request the last builder started, and its method table.
 *
 * Each builder and setter converts and checks its arguments first (declared
 * beside it, parsed by core/args.c but for wr_set_sge's two signatures:
 * TypeError, ValueError; a closed MR, AH or MW: VerbsError EBADF), then the
 * batch's state (VerbsError EINVAL outside wr_start/wr_complete, for an
 * operation not in send_ops_flags, a setter without a builder or one the
 * operation does not take), then that the provider has the op (EOPNOTSUPP),
 * and only then calls the verbs.h inline, which jumps to the provider.  GIL
 * kept: nothing here blocks.  A new builder is a WREX_OP_* with its entry in
 * ops[] (verb, flag, bit, setters, provider's op), one function calling
 * qpex_begin_wr(self, WREX_OP_*) before the inline, and one line in
 * qpex_methods.
 *
 * QPEx is a subclass of QP (PyType_FromSpecWithBases): its object starts with
 * a QPObject, so modify, to_init/to_rtr/to_rts, post_recv, query and close
 * work as on any QP, and qp_create() (qp.c) reads the init attributes
 * QPInitAttr has.  ibv_create_qp_ex is a static inline of verbs.h that calls
 * the exported ibv_create_qp by name for a comp_mask of PD alone; this file
 * calls the provider's create_qp_ex op itself (verbs_get_ctx_op), as verbs.h
 * does, with IBV_QP_INIT_ATTR_PD and the comp_mask bits of what else
 * init_attr gives (send_ops_flags, create_flags, xrcd, rwq_ind_tbl,
 * rx_hash_conf, max_tso_header: ex_read).
 *
 * The batch.  The providers check nothing: a builder outside
 * wr_start/wr_complete, an operation the QP was not created for, a setter
 * with no builder before it or wr_start twice crash or deadlock (mlx5 and rxe
 * take the send queue's spinlock in wr_start and release it in
 * wr_complete/wr_abort).  So this file keeps the batch's state and every
 * builder and setter checks it before the provider is called (VerbsError
 * EINVAL); post_send and modify refuse (EBUSY, qp_check_idle in ibverbs.h:
 * the flag is the base QPObject's in_batch) while a batch is open, for they
 * take the same lock.  close() during a batch, and the deallocation of a QPEx
 * whose batch is open, abort the batch first (ibv_wr_abort: nothing of it is
 * posted), then destroy the QP.
 *
 * What a batch references stays alive until it ends: the SGE objects given to
 * the setters (and so their MRs and memory), the AHs of wr_set_ud_addr, and
 * the MWs and MRs of wr_bind_mw (and the window a wr_local_inv invalidates)
 * are held, the MRs, AHs and MWs marked used (handle_use), so closing one
 * raises EBUSY until wr_complete or wr_abort; the MW binds' records
 * (mem/mw.c) move the MR holds to their windows once wr_complete posted the
 * batch.  Inline data is copied by the provider during the setter (the
 * ibv_wr_post man page: "Inline setters will copy the send data during the
 * setter"), which this file relies on: the buffer is not held.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include "qp/qp.h"
#include "wr/wr.h"
#include <string.h>

/*
 * What the docstrings of the builders below share, written once: the
 * paragraph of a builder whose data comes from the setters, the common
 * arguments, and the Raises section of a builder that takes only ints
 * (op: the name of its operation).
 */
#define WRX_DATA_NEXT                                 \
	"Its data comes next: ``wr_set_sge*()`` or\n" \
	"``wr_set_inline_data*()``.\n"
#define WRX_ARG_RKEY "    rkey: the remote rkey, 32 bits.\n"
#define WRX_ARG_RADDR "    remote_addr: the remote address, 64 bits.\n"
#define WRX_ARG_IMM "    imm_data: 32-bit immediate data, in host order.\n"
#define WRX_RAISES(op)                                                   \
	"Raises:\n"                                                      \
	"    TypeError: an argument is not an int.\n"                    \
	"    ValueError: an argument is out of range, or on a UD QP\n"   \
	"        the previous WR has no ``wr_set_ud_addr()``.\n"         \
	"    VerbsError: EINVAL outside a batch or when\n"               \
	"        " op " is not in ``send_ops_flags``; EOPNOTSUPP when\n" \
	"        the provider lacks it; EBADF once the QP is closed."

/*
 * A QP created with ibv_create_qp_ex and IBV_QP_INIT_ATTR_SEND_OPS_FLAGS:
 * a QPObject first, so every QP method works on it, then the
 * struct ibv_qp_ex * and the state of the wr_start() batch, which the
 * providers do not check (they crash or deadlock on misuse).
 */
typedef struct {
	QPObject qp;
	struct ibv_qp_ex *qpx; /* ibv_qp_to_qp_ex(); NULL once closed */
	uint64_t send_ops_flags; /* as created */
	int cur_op; /* WREX_OP_* of the WR being built; 0: none yet */
	int cur_data; /* the current WR got its data setter */
	int cur_ud; /* the current WR got wr_set_ud_addr */
	unsigned int n_wr; /* builders called in this batch */
	/* What the open batch references (SGEs, MRs and AHs; MRs and AHs
	 * marked used, so they cannot be closed until the batch ends). */
	PyObject **keep;
	Py_ssize_t n_keep, cap_keep;
} QPExObject;

#define QPEXO(self) ((QPExObject *)(self))

/* The operations, in the order of enum ibv_qp_create_send_ops_flags. */
enum {
	WREX_OP_NONE = 0,
	WREX_OP_RDMA_WRITE,
	WREX_OP_RDMA_WRITE_IMM,
	WREX_OP_SEND,
	WREX_OP_SEND_IMM,
	WREX_OP_RDMA_READ,
	WREX_OP_ATOMIC_CMP_SWP,
	WREX_OP_ATOMIC_FETCH_ADD,
	WREX_OP_LOCAL_INV,
	WREX_OP_BIND_MW,
	WREX_OP_SEND_INV,
	WREX_OP_ATOMIC_WRITE,
	WREX_OP_FLUSH,
	WREX_OP_TSO,
	WREX_OP_COUNT
};

/* The data setters an operation takes (qpex_begin_setter's data). */
#define WREX_SET_SGE 1
#define WREX_SET_INLINE 2

/* ------------------------------------------------------------------ */
/* What each operation is (the verb's name, its send_ops_flags bit, the */
/* data setters it takes, the provider's op)                            */
/* ------------------------------------------------------------------ */

/* Where the provider's op is in struct ibv_qp_ex (NULL: not provided). */
#define QPX_FN(field) offsetof(struct ibv_qp_ex, field)

/* IBV_QP_EX_WITH_FLUSH is absent from rdma-core 44's headers: rdma-core's
 * ABI value, only used to name the bit in a message; and ibv_qp_ex has no
 * wr_flush (the builder refuses before it looks). */
#ifdef IBVERBS_HAVE_WR_FLUSH
#define WREX_FLUSH_BIT IBV_QP_EX_WITH_FLUSH
#define WREX_FLUSH_FN QPX_FN(wr_flush)
#else
#define WREX_FLUSH_BIT (1ull << 11)
#define WREX_FLUSH_FN 0
#endif
/* Likewise IBV_QP_EX_WITH_ATOMIC_WRITE before rdma-core 42. */
#ifdef IBVERBS_HAVE_WR_ATOMIC_WRITE
#define WREX_ATOMIC_WRITE_BIT IBV_QP_EX_WITH_ATOMIC_WRITE
#define WREX_ATOMIC_WRITE_FN QPX_FN(wr_atomic_write)
#else
#define WREX_ATOMIC_WRITE_BIT (1ull << 12)
#define WREX_ATOMIC_WRITE_FN 0
#endif

#define WREX_DATA (WREX_SET_SGE | WREX_SET_INLINE)

static const struct {
	const char *verb; /* "ibv_wr_send" */
	const char *flag; /* the QPCreateSendOpsFlags member */
	uint64_t bit;
	int setters; /* WREX_SET_SGE | WREX_SET_INLINE */
	size_t fn; /* QPX_FN(wr_send): the provider's op */
} ops[WREX_OP_COUNT] = {
	[WREX_OP_RDMA_WRITE] = { "ibv_wr_rdma_write", "RDMA_WRITE",
				 IBV_QP_EX_WITH_RDMA_WRITE, WREX_DATA,
				 QPX_FN(wr_rdma_write) },
	[WREX_OP_RDMA_WRITE_IMM] = { "ibv_wr_rdma_write_imm",
				     "RDMA_WRITE_WITH_IMM",
				     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
				     WREX_DATA, QPX_FN(wr_rdma_write_imm) },
	[WREX_OP_SEND] = { "ibv_wr_send", "SEND", IBV_QP_EX_WITH_SEND,
			   WREX_DATA, QPX_FN(wr_send) },
	[WREX_OP_SEND_IMM] = { "ibv_wr_send_imm", "SEND_WITH_IMM",
			       IBV_QP_EX_WITH_SEND_WITH_IMM, WREX_DATA,
			       QPX_FN(wr_send_imm) },
	[WREX_OP_RDMA_READ] = { "ibv_wr_rdma_read", "RDMA_READ",
				IBV_QP_EX_WITH_RDMA_READ, WREX_SET_SGE,
				QPX_FN(wr_rdma_read) },
	[WREX_OP_ATOMIC_CMP_SWP] = { "ibv_wr_atomic_cmp_swp",
				     "ATOMIC_CMP_AND_SWP",
				     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
				     WREX_SET_SGE, QPX_FN(wr_atomic_cmp_swp) },
	[WREX_OP_ATOMIC_FETCH_ADD] = { "ibv_wr_atomic_fetch_add",
				       "ATOMIC_FETCH_AND_ADD",
				       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
				       WREX_SET_SGE,
				       QPX_FN(wr_atomic_fetch_add) },
	[WREX_OP_LOCAL_INV] = { "ibv_wr_local_inv", "LOCAL_INV",
				IBV_QP_EX_WITH_LOCAL_INV, 0,
				QPX_FN(wr_local_inv) },
	[WREX_OP_BIND_MW] = { "ibv_wr_bind_mw", "BIND_MW",
			      IBV_QP_EX_WITH_BIND_MW, 0, QPX_FN(wr_bind_mw) },
	[WREX_OP_SEND_INV] = { "ibv_wr_send_inv", "SEND_WITH_INV",
			       IBV_QP_EX_WITH_SEND_WITH_INV, WREX_DATA,
			       QPX_FN(wr_send_inv) },
	[WREX_OP_ATOMIC_WRITE] = { "ibv_wr_atomic_write", "ATOMIC_WRITE",
				   WREX_ATOMIC_WRITE_BIT, 0,
				   WREX_ATOMIC_WRITE_FN },
	[WREX_OP_FLUSH] = { "ibv_wr_flush", "FLUSH", WREX_FLUSH_BIT, 0,
			    WREX_FLUSH_FN },
	[WREX_OP_TSO] = { "ibv_wr_send_tso", "TSO", IBV_QP_EX_WITH_TSO,
			  WREX_DATA, QPX_FN(wr_send_tso) },
};

/* Whether the provider set the op at offset fn of q's ibv_qp_ex (a QP
 * made without send_ops_flags has none). */
static int qpx_has(const QPExObject *q, size_t fn)
{
	void (*op)(void);

	if (q->qpx == NULL || fn == 0)
		return 0;
	memcpy(&op, (const char *)q->qpx + fn, sizeof(op));
	return op != NULL;
}

/* ------------------------------------------------------------------ */
/* The batch's state                                                   */
/* ------------------------------------------------------------------ */

static int needs_ud(QPExObject *q)
{
	return (q->qp.qp_type == IBV_QPT_UD ||
		q->qp.qp_type == IBV_QPT_DRIVER) &&
	       q->cur_op != WREX_OP_NONE && !q->cur_ud;
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

static int qpex_keep(PyObject *self, PyObject *o)
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

/* A QP created with send_ops_flags 0 (XRC receive, RSS) has no
 * struct ibv_qp_ex: nothing to post with. */
static PyObject *no_send_ops(const char *what)
{
	return verbs_error_fmt(EINVAL, what,
			       "this QP was created without send_ops_flags "
			       "(an XRC receive or RSS QP): it has no "
			       "ibv_wr_* API");
}

static PyObject *not_in_batch(const char *verb)
{
	return verbs_error_fmt(EINVAL, verb,
			       "no batch is open: call wr_start() first");
}

/* A builder's checks after those of its arguments: the batch's state
 * (EINVAL; ValueError when the previous WR lacks its UD destination),
 * then the provider's op (EOPNOTSUPP); then op's WR is the current one. */
static int qpex_begin_wr(PyObject *self, int op)
{
	QPExObject *q = QPEXO(self);
	const char *verb = ops[op].verb;

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
	if (needs_ud(q)) {
		ud_missing(q, verb);
		return -1;
	}
	if (!qpx_has(q, ops[op].fn)) {
		provider_lacks(verb);
		return -1;
	}
	q->cur_op = op;
	q->cur_data = q->cur_ud = 0;
	q->n_wr++;
	return 0;
}

/* A builder with arguments: m's parsing into a, then qpex_begin_wr. */
static int qpex_build(PyObject *self, const MethodArgs *m, PyObject *args,
		      PyObject *kw, void *a, int op)
{
	if (args_parse(m, self, args, kw, a) < 0)
		return -1;
	return qpex_begin_wr(self, op);
}

/* A setter's checks after those of its arguments: the batch's state
 * (EINVAL), then the provider's op (EOPNOTSUPP, fn: QPX_FN(wr_set_*)); then
 * the WR is marked as having its data (data: WREX_SET_*) or its UD
 * destination (data 0). */
static int qpex_begin_setter(PyObject *self, int data, const char *verb,
			     size_t fn)
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
		/* EFA's SRD QPs (efa/) are addressed as UD. */
		if (q->qp.qp_type != IBV_QPT_UD &&
		    q->qp.qp_type != IBV_QPT_DRIVER) {
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
	} else if (!(ops[q->cur_op].setters & data)) {
		verbs_error_fmt(EINVAL, verb, "%s takes %s",
				ops[q->cur_op].verb,
				ops[q->cur_op].setters == WREX_SET_SGE ?
					"SGEs only (wr_set_sge, "
					"wr_set_sge_list), not inline data" :
					"no data setter");
		return -1;
	} else if (q->cur_data) {
		verbs_error_fmt(EINVAL, verb,
				"work request %u (%s) already has its data: "
				"one data setter per work request",
				q->n_wr - 1, ops[q->cur_op].verb);
		return -1;
	}
	if (!qpx_has(q, fn)) {
		provider_lacks(verb);
		return -1;
	}
	if (data == 0)
		q->cur_ud = 1;
	else
		q->cur_data = 1;
	return 0;
}

struct ibv_qp_ex *qpex_current_wr(PyObject *self, const char *verb)
{
	QPExObject *q = QPEXO(self);

	if (handle_check(HANDLE(self)) < 0)
		return NULL;
	if (q->qpx == NULL) {
		no_send_ops(verb);
		return NULL;
	}
	if (!q->qp.in_batch) {
		not_in_batch(verb);
		return NULL;
	}
	if (q->cur_op == WREX_OP_NONE) {
		verbs_error_fmt(EINVAL, verb,
				"no work request to attach it to: call a "
				"builder (wr_send(), wr_rdma_write(), ...) "
				"first");
		return NULL;
	}
	return q->qpx;
}

int qpex_driver_addr(PyObject *self, PyObject *ah, const char *verb)
{
	QPExObject *q = QPEXO(self);

	if (q->qp.qp_type != IBV_QPT_DRIVER) {
		verbs_error_fmt(EINVAL, verb, "for DC (driver) QPs only");
		return -1;
	}
	if (q->cur_ud) {
		verbs_error_fmt(EINVAL, verb,
				"work request %u already has its destination",
				q->n_wr - 1);
		return -1;
	}
	if (qpex_keep(self, ah) < 0)
		return -1;
	q->cur_ud = 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* wr_start, wr_complete, wr_abort                                    */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(qpex_wr_start__doc__,
	     "Open a batch of work requests on the send queue.\n"
	     "\n"
	     "Then call builders (``wr_send()``, ...), each followed by its\n"
	     "setters, and end with ``wr_complete()`` or ``wr_abort()``.\n"
	     "``post_send()`` and ``modify()`` refuse (EBUSY) meanwhile.\n"
	     "\n"
	     "Wraps ``ibv_wr_start`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EINVAL when a batch is open already; EBADF\n"
	     "        once the QP is closed.");

static PyObject *qpex_wr_start(PyObject *self, PyObject *unused)
{
	QPExObject *q = QPEXO(self);

	HANDLE_CHECK(self);
	if (q->qpx == NULL)
		return no_send_ops("ibv_wr_start");
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

PyDoc_STRVAR(qpex_wr_complete__doc__,
	     "Post the open batch and close it.\n"
	     "\n"
	     "On failure nothing of the batch was posted. Either way the\n"
	     "batch ends and what it held is released.\n"
	     "\n"
	     "Wraps ``ibv_wr_complete`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Raises:\n"
	     "    ValueError: on a UD QP, the last WR has no\n"
	     "        ``wr_set_ud_addr()`` (the batch is aborted).\n"
	     "    VerbsError: EINVAL when no batch is open; EBADF once the\n"
	     "        QP is closed; else the provider refused (``errno``).");

static PyObject *qpex_wr_complete(PyObject *self, PyObject *unused)
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
	/* Posted: the batch's memory window holds move (mem/mw.c). */
	if (rc == 0)
		mw_hold_records_apply(q->keep, q->n_keep);
	batch_release(q);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_wr_complete",
				       "QP %u: the batch of %u work "
				       "request(s) was not posted",
				       qpn, n);
	mw_sweep_if_wanted();
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qpex_wr_abort__doc__,
	     "Discard the open batch: none of its WRs is posted.\n"
	     "\n"
	     "Does nothing when no batch is open.\n"
	     "\n"
	     "Wraps ``ibv_wr_abort`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EBADF once the QP is closed.");

static PyObject *qpex_wr_abort(PyObject *self, PyObject *unused)
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
	qp_leave_groups(h);
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

/* What create_qp_ex passes beyond QPInitAttr's fields: each member of
 * struct ibv_qp_init_attr_ex's comp_mask.  xrcd and ind_tbl are new
 * references, NULL for None; the pointers are taken in ex_create, after
 * the last Python code ran. */
struct ex_args {
	uint64_t send_ops_flags;
	uint32_t create_flags;
	uint32_t source_qpn;
	uint16_t max_tso_header;
	int has_tso, has_rx_hash;
	PyObject *xrcd, *ind_tbl;
	struct ibv_rx_hash_conf rx_hash; /* rx_hash_key points into key */
	uint8_t key[UINT8_MAX];
	qpex_make_fn make; /* NULL: the provider's create_qp_ex op */
	void *make_arg;
};

/* The handle behind o, or NULL with VerbsError(EBADF) when it was closed
 * while init_attr was read. */
static void *ex_obj(PyObject *o, const char *what)
{
	if (HANDLE(o)->obj == NULL)
		verbs_error_fmt(EBADF, "ibv_create_qp_ex",
				"init_attr.%s was closed", what);
	return HANDLE(o)->obj;
}

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
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	if (a->send_ops_flags) {
		ex.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ex.send_ops_flags = a->send_ops_flags;
	}
	if (a->create_flags) {
		ex.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		ex.create_flags = a->create_flags;
		ex.source_qpn = a->source_qpn;
	}
	if (a->xrcd) {
		ex.comp_mask |= IBV_QP_INIT_ATTR_XRCD;
		ex.xrcd = ex_obj(a->xrcd, "xrcd");
		if (ex.xrcd == NULL)
			return NULL;
	}
	if (a->ind_tbl) {
		ex.comp_mask |= IBV_QP_INIT_ATTR_IND_TABLE;
		ex.rwq_ind_tbl = ex_obj(a->ind_tbl, "rwq_ind_tbl");
		if (ex.rwq_ind_tbl == NULL)
			return NULL;
	}
	if (a->has_rx_hash) {
		ex.comp_mask |= IBV_QP_INIT_ATTR_RX_HASH;
		ex.rx_hash_conf = a->rx_hash;
		ex.rx_hash_conf.rx_hash_key = a->key;
	}
	if (a->has_tso) {
		ex.comp_mask |= IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
		ex.max_tso_header = a->max_tso_header;
	}
	if (a->make != NULL) {
		qp = a->make(pd->context, &ex, a->make_arg);
	} else {
		vctx = verbs_get_ctx_op(pd->context, create_qp_ex);
		if (vctx == NULL) {
			errno = EOPNOTSUPP;
			return NULL;
		}
		qp = vctx->create_qp_ex(pd->context, &ex);
	}
	if (qp != NULL)
		init->cap = ex.cap; /* the actual caps, as create_qp writes */
	return qp;
}

/* init_attr.pd: missing or None, or this very PD. */
static int ia_pd_matches(PDObject *pd, PyObject *ia)
{
	PyObject *v;
	int rc = 0;

	if (attr_optional(ia, "pd", &v) < 0)
		return -1;
	if (v == NULL)
		return 0;
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

/* init_attr.rx_hash_conf: None, or an RXHashConf-like object
 * (rx_hash_function, rx_hash_key bytes, rx_hash_fields_mask). */
static int ia_rx_hash(PyObject *ia, struct ex_args *a)
{
	PyObject *c, *key_o = NULL, *key = NULL;
	uint64_t fn, fields;
	char *p;
	Py_ssize_t n;
	int rc = -1;

	rc = attr_given(ia, "rx_hash_conf", &c);
	if (rc <= 0)
		return rc;
	rc = -1;
	if (attr_uint(c, "init_attr.rx_hash_conf", "rx_hash_function",
		      UINT8_MAX, 0, &fn) < 0 ||
	    attr_uint(c, "init_attr.rx_hash_conf", "rx_hash_fields_mask",
		      UINT64_MAX, 0, &fields) < 0 ||
	    attr_optional(c, "rx_hash_key", &key_o) < 0)
		goto out;
	if (key_o == NULL || key_o == Py_None) {
		PyErr_SetString(PyExc_TypeError,
				"init_attr.rx_hash_conf.rx_hash_key must be "
				"bytes");
		goto out;
	}
	key = PyBytes_FromObject(key_o);
	if (key == NULL || PyBytes_AsStringAndSize(key, &p, &n) < 0)
		goto out;
	if (n > UINT8_MAX) {
		PyErr_Format(PyExc_ValueError,
			     "init_attr.rx_hash_conf.rx_hash_key: %zd bytes, "
			     "more than %d",
			     n, UINT8_MAX);
		goto out;
	}
	memcpy(a->key, p, (size_t)n);
	a->rx_hash.rx_hash_function = (uint8_t)fn;
	a->rx_hash.rx_hash_key_len = (uint8_t)n;
	a->rx_hash.rx_hash_fields_mask = fields;
	a->has_rx_hash = 1;
	rc = 0;
out:
	Py_XDECREF(key);
	Py_XDECREF(key_o);
	Py_DECREF(c);
	return rc;
}

/* Every field of init_attr create_qp_ex passes beyond QPInitAttr's;
 * *no_cq: an XRC receive or RSS QP, which may have no CQs. */
static int ex_read(PDObject *pd, PyObject *ia, struct ex_args *a, int *no_cq)
{
	Handle *ctx = HANDLE(pd)->parent;
	uint64_t type, v, ops_dflt;
	int rc;

	memset(a, 0, sizeof(*a));
	if (attr_uint(ia, "init_attr", "qp_type", INT32_MAX, IBV_QPT_RC,
		      &type) < 0 ||
	    init_attr_handle(ia, "xrcd", ST.XRCD_type, "XRCD", ctx, "Context",
			     &a->xrcd) < 0 ||
	    init_attr_handle(ia, "rwq_ind_tbl", ST.RWQIndTable_type,
			     "RWQIndTable", ctx, "Context", &a->ind_tbl) < 0)
		return -1;
	*no_cq = type == IBV_QPT_XRC_RECV || a->ind_tbl != NULL;
	ops_dflt = *no_cq ? 0 : IBV_QP_EX_WITH_SEND;
	if (attr_uint(ia, "init_attr", "send_ops_flags", UINT64_MAX, ops_dflt,
		      &a->send_ops_flags) < 0 ||
	    attr_uint(ia, "init_attr", "create_flags", UINT32_MAX, 0, &v) < 0 ||
	    ia_rx_hash(ia, a) < 0)
		return -1;
	a->create_flags = (uint32_t)v;
	/* Given (not None), these two also set their comp_mask bits. */
	rc = attr_uint(ia, "init_attr", "source_qpn", QPN_MAX, 0, &v);
	if (rc < 0)
		return -1;
	if (rc) {
		a->source_qpn = (uint32_t)v;
		a->create_flags |= IBV_QP_CREATE_SOURCE_QPN;
	}
	rc = attr_uint(ia, "init_attr", "max_tso_header", UINT16_MAX, 0, &v);
	if (rc < 0)
		return -1;
	if (rc) {
		a->max_tso_header = (uint16_t)v;
		a->has_tso = 1;
	}
	return 0;
}

PyObject *qpex_create(PDObject *pd, PyObject *ia, PyTypeObject *type,
		      const char *verb, qpex_make_fn make, void *arg)
{
	struct ex_args a;
	PyObject *res = NULL;
	struct ibv_qp_ex *qpx;
	QPExObject *q;
	int no_cq;

	a.xrcd = a.ind_tbl = NULL;
	IBV_REQUIRE_OPTIONAL(qp_to_qp_ex, ibv_qp_to_qp_ex, "rdma-core 24");
	if (ia_pd_matches(pd, ia) < 0 || ex_read(pd, ia, &a, &no_cq) < 0)
		goto out;
	if (handle_check(HANDLE(pd)) < 0) /* that ran Python code */
		goto out;
	a.make = make;
	a.make_arg = arg;
	res = qp_create(pd, ia, &qpex_kind, verb, ex_create, &a, type,
			no_cq ? QP_CREATE_NO_CQ : 0);
	if (res == NULL)
		goto out;
	q = QPEXO(res);
	/* The QP uses its XRCD and indirection table until destroyed. */
	q->qp.xrcd = a.xrcd;
	q->qp.ind_tbl = a.ind_tbl;
	if (a.xrcd)
		handle_use(HANDLE(a.xrcd));
	if (a.ind_tbl)
		handle_use(HANDLE(a.ind_tbl));
	a.xrcd = a.ind_tbl = NULL;
	q->send_ops_flags = a.send_ops_flags;
	if (a.send_ops_flags == 0) /* nothing to post with: no qp_ex */
		goto out;
	qpx = IBV.qp_to_qp_ex(QPP(res));
	if (qpx == NULL) {
		/* The provider made a plain QP: destroy it. */
		if (handle_close(HANDLE(res)) < 0)
			PyErr_Clear();
		Py_CLEAR(res);
		verbs_error_fmt(EOPNOTSUPP, "ibv_qp_to_qp_ex",
				"the provider created no extended QP "
				"(it lacks the ibv_wr_* API)");
		goto out;
	}
	q->qpx = qpx;
out:
	Py_XDECREF(a.xrcd);
	Py_XDECREF(a.ind_tbl);
	return res;
}

METHOD_DOC(pd_create_qp_ex,
	   "Create an extended QP that posts with the ``ibv_wr_*`` calls.\n"
	   "\n"
	   "``init_attr`` is a ``QPInitAttrEx``: QPInitAttr's fields plus\n"
	   "``send_ops_flags`` (``QPCreateSendOpsFlags``: the builders the\n"
	   "QP may use; SEND when None), ``create_flags`` and ``pd``\n"
	   "(None or this PD).\n"
	   "\n"
	   "Wraps ``ibv_create_qp_ex`` and ``ibv_qp_to_qp_ex`` (man page\n"
	   "ibv_create_qp_ex(3)).\n"
	   "\n"
	   "Args:\n"
	   "    init_attr: a QPInitAttrEx, or any object with its fields.\n"
	   "\n"
	   "Returns:\n"
	   "    The new QPEx, in the RESET state.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: a field has the wrong type.\n"
	   "    ValueError: init_attr.pd is another PD, a CQ or SRQ is of\n"
	   "        another Context or PD, or a value is out of range.\n"
	   "    VerbsError: EBADF if the PD, a CQ or the SRQ is closed;\n"
	   "        EOPNOTSUPP when libibverbs lacks ``ibv_qp_to_qp_ex`` or\n"
	   "        the provider makes no extended QP; else the verb failed\n"
	   "        (``errno``).");

/* PD.create_qp_ex and Context.create_qp_ex: create_ex() reads it. */
#define CREATE_QP_EX_ARGS(X, S) \
	X(S, RECORD, PyObject *, init_attr, QPInitAttrEx)
ARGS_DECLARE(create_qp_ex, CREATE_QP_EX_ARGS);
METHOD_ARGS(pd_create_qp_ex, "PD.create_qp_ex", create_qp_ex_params);

ARGS_METHOD_OF(extern, pd_create_qp_ex, self, struct create_qp_ex_args, a)
{
	return qpex_create((PDObject *)self, a->init_attr, ST.QPEx_type,
			   "ibv_create_qp_ex", NULL, NULL);
}

/* Context.create_qp_ex(init_attr): init_attr.pd is required and must be
 * a PD of this Context (ibv_create_qp_ex takes both). */
METHOD_DOC(
	context_create_qp_ex,
	"Create an extended QP in the PD that ``init_attr.pd`` names.\n"
	"\n"
	"The same as ``init_attr.pd.create_qp_ex(init_attr)``, after\n"
	"checking that the PD is one of this Context's.\n"
	"\n"
	"Wraps ``ibv_create_qp_ex`` and ``ibv_qp_to_qp_ex`` (man page\n"
	"ibv_create_qp_ex(3)).\n"
	"\n"
	"Args:\n"
	"    init_attr: a QPInitAttrEx whose ``pd`` is a PD of this Context.\n"
	"\n"
	"Returns:\n"
	"    The new QPEx, in the RESET state.\n"
	"\n"
	"Raises:\n"
	"    TypeError: init_attr has no pd, or it is not a PD; a field\n"
	"        has the wrong type.\n"
	"    ValueError: the PD belongs to another Context; as\n"
	"        ``PD.create_qp_ex()``.\n"
	"    VerbsError: EBADF if the PD, a CQ or the SRQ is closed;\n"
	"        EOPNOTSUPP as ``PD.create_qp_ex()``; else the verb\n"
	"        failed (``errno``).");

METHOD_ARGS(context_create_qp_ex, "Context.create_qp_ex", create_qp_ex_params);

ARGS_METHOD_OF(extern, context_create_qp_ex, self, struct create_qp_ex_args, a)
{
	PyObject *pd, *res = NULL;

	pd = PyObject_GetAttrString(a->init_attr, "pd");
	if (pd == NULL) {
		if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
			PyErr_Clear();
			arg_type_error_hint(
				"init_attr", "QPInitAttrEx", 0, a->init_attr,
				"Context.create_qp_ex reads its pd");
		}
		return NULL;
	}
	if (!PyObject_TypeCheck(pd, ST.PD_type)) {
		arg_type_error_hint("init_attr.pd", "PD", 0, pd,
				    "Context.create_qp_ex needs one");
		goto out;
	}
	if (handle_check(HANDLE(pd)) < 0)
		goto out;
	if (HANDLE(pd)->parent != HANDLE(self)) {
		arg_other_parent_error("init_attr.pd", "Context");
		goto out;
	}
	res = qpex_create((PDObject *)pd, a->init_attr, ST.QPEx_type,
			  "ibv_create_qp_ex", NULL, NULL);
out:
	Py_DECREF(pd);
	return res;
}

#define QPX(self) (QPEXO(self)->qpx)

/* ------------------------------------------------------------------ */
/* Builders                                                            */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(qpex_wr_send__doc__,
	     "Start a SEND in the open batch.\n"
	     "\n" WRX_DATA_NEXT "\n"
	     "Wraps ``ibv_wr_send`` (man page ibv_wr_post(3)).\n"
	     "\n" WRX_RAISES("SEND"));

static PyObject *qpex_wr_send(PyObject *self, PyObject *unused)
{
	HANDLE_CHECK(self);
	if (qpex_begin_wr(self, WREX_OP_SEND) < 0)
		return NULL;
	ibv_wr_send(QPX(self));
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qpex_wr_send_imm__doc__,
	     "Start a SEND_WITH_IMM in the open batch.\n"
	     "\n" WRX_DATA_NEXT "\n"
	     "Wraps ``ibv_wr_send_imm`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n" WRX_ARG_IMM "\n" WRX_RAISES("SEND_WITH_IMM"));

#define IMM_ARGS(X, S) X(S, UINT, uint32_t, imm_data)
ARGS_DECLARE(imm, IMM_ARGS);
METHOD_ARGS(qpex_wr_send_imm, "QPEx.wr_send_imm", imm_params);

static PyObject *qpex_wr_send_imm(PyObject *self, PyObject *args, PyObject *kw)
{
	struct imm_args a;

	HANDLE_CHECK(self);
	if (qpex_build(self, &qpex_wr_send_imm_args, args, kw, &a,
		       WREX_OP_SEND_IMM) < 0)
		return NULL;
	ibv_wr_send_imm(QPX(self), htobe32(a.imm_data));
	Py_RETURN_NONE;
}

PyDoc_STRVAR(
	qpex_wr_send_inv__doc__,
	"Start a SEND_WITH_INV: a send that invalidates the peer's\n"
	"``invalidate_rkey`` (an MW's).\n"
	"\n" WRX_DATA_NEXT "\n"
	"Wraps ``ibv_wr_send_inv`` (man page ibv_wr_post(3)).\n"
	"\n"
	"Args:\n"
	"    invalidate_rkey: the rkey the peer invalidates on receipt (of one\n"
	"        of its MWs), 32 bits.\n"
	"\n" WRX_RAISES("SEND_WITH_INV"));

/* wr_send_inv and wr_local_inv */
#define INV_ARGS(X, S) X(S, UINT, uint32_t, invalidate_rkey)
ARGS_DECLARE(inv, INV_ARGS);
METHOD_ARGS(qpex_wr_send_inv, "QPEx.wr_send_inv", inv_params);

static PyObject *qpex_wr_send_inv(PyObject *self, PyObject *args, PyObject *kw)
{
	struct inv_args a;

	HANDLE_CHECK(self);
	if (qpex_build(self, &qpex_wr_send_inv_args, args, kw, &a,
		       WREX_OP_SEND_INV) < 0)
		return NULL;
	ibv_wr_send_inv(QPX(self), a.invalidate_rkey);
	Py_RETURN_NONE;
}

/* wr_rdma_write and wr_rdma_read */
#define RDMA_ARGS(X, S) \
	X(S, UINT, uint32_t, rkey) X(S, UINT, uint64_t, remote_addr)
ARGS_DECLARE(rdma, RDMA_ARGS);

PyDoc_STRVAR(qpex_wr_rdma_write__doc__,
	     "Start an RDMA_WRITE to the peer's memory.\n"
	     "\n" WRX_DATA_NEXT "\n"
	     "Wraps ``ibv_wr_rdma_write`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n" WRX_ARG_RKEY WRX_ARG_RADDR
	     "\n" WRX_RAISES("RDMA_WRITE"));

METHOD_ARGS(qpex_wr_rdma_write, "QPEx.wr_rdma_write", rdma_params);

static PyObject *qpex_wr_rdma_write(PyObject *self, PyObject *args,
				    PyObject *kw)
{
	struct rdma_args a;

	HANDLE_CHECK(self);
	if (qpex_build(self, &qpex_wr_rdma_write_args, args, kw, &a,
		       WREX_OP_RDMA_WRITE) < 0)
		return NULL;
	ibv_wr_rdma_write(QPX(self), a.rkey, a.remote_addr);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qpex_wr_rdma_write_imm__doc__,
	     "Start an RDMA_WRITE_WITH_IMM: the peer also gets a receive\n"
	     "completion with ``imm_data``.\n"
	     "\n" WRX_DATA_NEXT "\n"
	     "Wraps ``ibv_wr_rdma_write_imm`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n" WRX_ARG_RKEY WRX_ARG_RADDR WRX_ARG_IMM
	     "\n" WRX_RAISES("RDMA_WRITE_WITH_IMM"));

#define RDMA_IMM_ARGS(X, S)               \
	X(S, UINT, uint32_t, rkey)        \
	X(S, UINT, uint64_t, remote_addr) \
	X(S, UINT, uint32_t, imm_data)
ARGS_DECLARE(rdma_imm, RDMA_IMM_ARGS);
METHOD_ARGS(qpex_wr_rdma_write_imm, "QPEx.wr_rdma_write_imm", rdma_imm_params);

static PyObject *qpex_wr_rdma_write_imm(PyObject *self, PyObject *args,
					PyObject *kw)
{
	struct rdma_imm_args a;

	HANDLE_CHECK(self);
	if (qpex_build(self, &qpex_wr_rdma_write_imm_args, args, kw, &a,
		       WREX_OP_RDMA_WRITE_IMM) < 0)
		return NULL;
	ibv_wr_rdma_write_imm(QPX(self), a.rkey, a.remote_addr,
			      htobe32(a.imm_data));
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qpex_wr_rdma_read__doc__,
	     "Start an RDMA_READ; the SGEs set next receive the data.\n"
	     "\n"
	     "Wraps ``ibv_wr_rdma_read`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n" WRX_ARG_RKEY WRX_ARG_RADDR "\n" WRX_RAISES("RDMA_READ"));

METHOD_ARGS(qpex_wr_rdma_read, "QPEx.wr_rdma_read", rdma_params);

static PyObject *qpex_wr_rdma_read(PyObject *self, PyObject *args, PyObject *kw)
{
	struct rdma_args a;

	HANDLE_CHECK(self);
	if (qpex_build(self, &qpex_wr_rdma_read_args, args, kw, &a,
		       WREX_OP_RDMA_READ) < 0)
		return NULL;
	ibv_wr_rdma_read(QPX(self), a.rkey, a.remote_addr);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qpex_wr_atomic_cmp_swp__doc__,
	     "Start an 8-byte compare-and-swap on the peer's memory:\n"
	     "``swap`` is written where ``compare`` matches. The 8-byte\n"
	     "SGE set next receives the old value.\n"
	     "\n"
	     "Wraps ``ibv_wr_atomic_cmp_swp`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n" WRX_ARG_RKEY WRX_ARG_RADDR
	     "    compare: the value expected at remote_addr, 64 bits.\n"
	     "    swap: the value written there when it matches, 64 bits.\n"
	     "\n" WRX_RAISES("ATOMIC_CMP_AND_SWP"));

#define CMP_SWP_ARGS(X, S)                \
	X(S, UINT, uint32_t, rkey)        \
	X(S, UINT, uint64_t, remote_addr) \
	X(S, UINT, uint64_t, compare)     \
	X(S, UINT, uint64_t, swap)
ARGS_DECLARE(cmp_swp, CMP_SWP_ARGS);
METHOD_ARGS(qpex_wr_atomic_cmp_swp, "QPEx.wr_atomic_cmp_swp", cmp_swp_params);

static PyObject *qpex_wr_atomic_cmp_swp(PyObject *self, PyObject *args,
					PyObject *kw)
{
	struct cmp_swp_args a;

	HANDLE_CHECK(self);
	if (qpex_build(self, &qpex_wr_atomic_cmp_swp_args, args, kw, &a,
		       WREX_OP_ATOMIC_CMP_SWP) < 0)
		return NULL;
	ibv_wr_atomic_cmp_swp(QPX(self), a.rkey, a.remote_addr, a.compare,
			      a.swap);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qpex_wr_atomic_fetch_add__doc__,
	     "Start an 8-byte fetch-and-add of ``add`` on the peer's\n"
	     "memory. The 8-byte SGE set next receives the old value.\n"
	     "\n"
	     "Wraps ``ibv_wr_atomic_fetch_add`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n" WRX_ARG_RKEY WRX_ARG_RADDR
	     "    add: the value added at remote_addr, 64 bits (wraps).\n"
	     "\n" WRX_RAISES("ATOMIC_FETCH_AND_ADD"));

#define FETCH_ADD_ARGS(X, S)              \
	X(S, UINT, uint32_t, rkey)        \
	X(S, UINT, uint64_t, remote_addr) \
	X(S, UINT, uint64_t, add)
ARGS_DECLARE(fetch_add, FETCH_ADD_ARGS);
METHOD_ARGS(qpex_wr_atomic_fetch_add, "QPEx.wr_atomic_fetch_add",
	    fetch_add_params);

static PyObject *qpex_wr_atomic_fetch_add(PyObject *self, PyObject *args,
					  PyObject *kw)
{
	struct fetch_add_args a;

	HANDLE_CHECK(self);
	if (qpex_build(self, &qpex_wr_atomic_fetch_add_args, args, kw, &a,
		       WREX_OP_ATOMIC_FETCH_ADD) < 0)
		return NULL;
	ibv_wr_atomic_fetch_add(QPX(self), a.rkey, a.remote_addr, a.add);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(
	qpex_wr_local_inv__doc__,
	"Start a LOCAL_INV: invalidate the rkey of a local MW (no\n"
	"data).\n"
	"\n"
	"Wraps ``ibv_wr_local_inv`` (man page ibv_wr_post(3)).\n"
	"\n"
	"Args:\n"
	"    invalidate_rkey: the rkey of the local MW to invalidate, 32 bits.\n"
	"\n" WRX_RAISES("LOCAL_INV"));

METHOD_ARGS(qpex_wr_local_inv, "QPEx.wr_local_inv", inv_params);

static PyObject *qpex_wr_local_inv(PyObject *self, PyObject *args, PyObject *kw)
{
	struct inv_args a;
	PyObject *mw, *rec;

	HANDLE_CHECK(self);
	if (qpex_build(self, &qpex_wr_local_inv_args, args, kw, &a,
		       WREX_OP_LOCAL_INV) < 0)
		return NULL;
	/* A type 2 window of this PD bound under that rkey lets its MR go
	 * once the batch is posted (mem/mw.c). */
	mw = mw_find_bound(QPP(self)->pd, a.invalidate_rkey);
	if (mw != NULL) {
		rec = mw_hold_record(mw, NULL, 0);
		if (rec == NULL || qpex_keep(self, mw) < 0 ||
		    qpex_keep(self, rec) < 0) {
			Py_XDECREF(rec);
			Py_DECREF(mw);
			return NULL;
		}
		Py_DECREF(rec);
		Py_DECREF(mw);
	}
	ibv_wr_local_inv(QPX(self), a.invalidate_rkey);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qpex_wr_atomic_write__doc__,
	     "Start an ATOMIC_WRITE of 8 bytes to the peer (no setters).\n"
	     "\n"
	     "The provider copies ``data`` during the call.\n"
	     "\n"
	     "Wraps ``ibv_wr_atomic_write`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n" WRX_ARG_RKEY
	     "    remote_addr: the remote address (8-byte aligned).\n"
	     "    data: exactly 8 bytes (bytes or bytearray).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: data is not 8 bytes, or rkey/remote_addr not\n"
	     "        an int.\n"
	     "    ValueError: rkey or remote_addr is out of range.\n"
	     "    VerbsError: EOPNOTSUPP when built against rdma-core < 42\n"
	     "        headers or the provider lacks it; EINVAL outside a\n"
	     "        batch or when ATOMIC_WRITE is not in\n"
	     "        ``send_ops_flags``; EBADF once the QP is closed.");

/* wr_atomic_write(rkey, remote_addr, data): data is the 8 bytes to write
 * (bytes or bytearray); the provider copies them during the call. */
#define ATOMIC_WRITE_ARGS(X, S)           \
	X(S, UINT, uint32_t, rkey)        \
	X(S, UINT, uint64_t, remote_addr) \
	X(S, OBJECT, PyObject *, data)
ARGS_METHOD(static, qpex_wr_atomic_write, "QPEx.wr_atomic_write",
	    ATOMIC_WRITE_ARGS, self, a)
{
	PyObject *data;
	const char *p;

	data = a->data;
	if (PyBytes_Check(data) && PyBytes_Size(data) == 8) {
		p = PyBytes_AsString(data);
	} else if (PyByteArray_Check(data) && PyByteArray_Size(data) == 8) {
		p = PyByteArray_AsString(data);
	} else {
		PyErr_Format(PyExc_TypeError,
			     "data must be 8 bytes (bytes or bytearray), not "
			     "%R",
			     data);
		return NULL;
	}
#ifdef IBVERBS_HAVE_WR_ATOMIC_WRITE
	if (qpex_begin_wr(self, WREX_OP_ATOMIC_WRITE) < 0)
		return NULL;
	ibv_wr_atomic_write(QPX(self), a->rkey, a->remote_addr, p);
	Py_RETURN_NONE;
#else
	(void)p;
	return verbs_error_fmt(EOPNOTSUPP, "ibv_wr_atomic_write",
			       "the rdma-core headers this module was built "
			       "against lack ibv_wr_atomic_write (rdma-core 42 "
			       "or newer declares it)");
#endif
}

PyDoc_STRVAR(qpex_wr_flush__doc__,
	     "Start a FLUSH: make a range of the peer's memory persistent or\n"
	     "globally visible (no setters).\n"
	     "\n"
	     "Wraps ``ibv_wr_flush`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n" WRX_ARG_RKEY
	     "    remote_addr: start of the range, 64 bits.\n"
	     "    len: bytes, 64 bits.\n"
	     "    type: ``IBV_FLUSH_GLOBAL`` or ``IBV_FLUSH_PERSISTENT``.\n"
	     "    level: ``IBV_FLUSH_RANGE`` or ``IBV_FLUSH_MR``.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an argument is not an int.\n"
	     "    ValueError: an argument is out of range (type and level:\n"
	     "        0..255).\n"
	     "    VerbsError: EOPNOTSUPP when built against rdma-core < 45\n"
	     "        headers or the provider lacks it; EINVAL outside a\n"
	     "        batch or when FLUSH is not in ``send_ops_flags``;\n"
	     "        EBADF once the QP is closed.");

/* wr_flush(rkey, remote_addr, len, type, level).  Built against headers
 * without ibv_wr_flush (rdma-core < 45): EOPNOTSUPP, after the checks. */
#define FLUSH_ARGS(X, S)                  \
	X(S, UINT, uint32_t, rkey)        \
	X(S, UINT, uint64_t, remote_addr) \
	X(S, UINT, uint64_t, len)         \
	X(S, UINT, uint8_t, type)         \
	X(S, UINT, uint8_t, level)
ARGS_METHOD(static, qpex_wr_flush, "QPEx.wr_flush", FLUSH_ARGS, self, a)
{
#ifdef IBVERBS_HAVE_WR_FLUSH
	if (qpex_begin_wr(self, WREX_OP_FLUSH) < 0)
		return NULL;
	ibv_wr_flush(QPX(self), a->rkey, a->remote_addr, (size_t)a->len,
		     a->type, a->level);
	Py_RETURN_NONE;
#else
	return verbs_error_fmt(EOPNOTSUPP, "ibv_wr_flush",
			       "the rdma-core headers this module was built "
			       "against lack ibv_wr_flush (rdma-core 45 or "
			       "newer declares it)");
#endif
}

/* ------------------------------------------------------------------ */
/* Setters                                                             */
/* ------------------------------------------------------------------ */

/* An SGE object: its struct, its MR checked open.  0 or -1. */
static int sge_of(PyObject *o, const char *what, struct ibv_sge *out)
{
	SGEObject *s = (SGEObject *)o;

	if (!PyObject_TypeCheck(o, ST.SGE_type))
		return arg_type_error(what, "SGE", 0, o);
	if (s->mr != NULL && handle_check(HANDLE(s->mr)) < 0)
		return -1;
	*out = s->sge;
	return 0;
}

/* Hold an SGE (and mark its MR used) until the batch ends. */
static int keep_sge(PyObject *self, PyObject *o)
{
	PyObject *mr = ((SGEObject *)o)->mr;

	if (qpex_keep(self, o) < 0)
		return -1;
	return mr != NULL ? qpex_keep(self, mr) : 0;
}

static int check_num_sge(PyObject *self, Py_ssize_t n, const char *verb)
{
	uint32_t max = QPO(self)->cap.max_send_sge;

	if ((uint64_t)n > max) {
		PyErr_Format(PyExc_ValueError,
			     "%s: %zd SGEs, more than the QP's max_send_sge "
			     "(%u)",
			     verb, n, max);
		return -1;
	}
	return 0;
}

PyDoc_STRVAR(qpex_wr_set_sge__doc__,
	     "Give the last builder's WR its data: one SGE.\n"
	     "\n"
	     "Also ``wr_set_sge(sge)`` with an SGE object, which (with its\n"
	     "MR, marked used) is held until the batch ends.\n"
	     "\n"
	     "Wraps ``ibv_wr_set_sge`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    lkey: the lkey, or an SGE object (given alone).\n"
	     "    addr: the address (with an lkey).\n"
	     "    length: bytes, 32 bits (with an lkey).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: neither an SGE nor three ints.\n"
	     "    ValueError: a value is out of range, or max_send_sge is 0.\n"
	     "    VerbsError: EBADF if the SGE's MR or the QP is closed;\n"
	     "        EINVAL outside a batch, with no builder before it, when\n"
	     "        the WR takes no SGE or has its data already;\n"
	     "        EOPNOTSUPP when the provider lacks it.");

/* wr_set_sge(sge) or wr_set_sge(lkey, addr, length) */
static PyObject *qpex_wr_set_sge(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "lkey", "addr", "length", NULL };
	PyObject *a = NULL, *b = NULL, *c = NULL;
	struct ibv_sge sge;
	int is_obj;

	HANDLE_CHECK(self);
	/* Parsed by hand: two signatures, (sge) or (lkey, addr, length). */
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:wr_set_sge", kwlist,
					 &a, &b, &c))
		return NULL;
	is_obj = PyObject_TypeCheck(a, ST.SGE_type);
	if (is_obj) {
		if (b != NULL || c != NULL) {
			PyErr_SetString(PyExc_TypeError,
					"wr_set_sge() takes an SGE, or lkey, "
					"addr and length");
			return NULL;
		}
		if (sge_of(a, "sge", &sge) < 0)
			return NULL;
	} else {
		if (b == NULL || c == NULL) {
			PyErr_Format(PyExc_TypeError,
				     "wr_set_sge() takes an SGE, or lkey, "
				     "addr and length (got %R alone)",
				     (PyObject *)Py_TYPE(a));
			return NULL;
		}
		if (arg_u32(a, "lkey", &sge.lkey) < 0 ||
		    arg_u64(b, "addr", &sge.addr) < 0 ||
		    arg_u32(c, "length", &sge.length) < 0)
			return NULL;
	}
	if (check_num_sge(self, 1, "ibv_wr_set_sge") < 0 ||
	    qpex_begin_setter(self, WREX_SET_SGE, "ibv_wr_set_sge",
			      QPX_FN(wr_set_sge)) < 0)
		return NULL;
	if (is_obj && keep_sge(self, a) < 0) {
		QPEXO(self)->cur_data = 0;
		return NULL;
	}
	ibv_wr_set_sge(QPX(self), sge.lkey, sge.addr, sge.length);
	Py_RETURN_NONE;
}

#define SMALL_LIST 16

/* The list setters' start: o (the argument name, a list or tuple of
 * what) as a new tuple, so its items cannot change under us (a list's
 * owner might), and *arr: small when n items of size each fit
 * SMALL_LIST, else PyMem_Malloc'd (list_done frees it).  NULL with
 * TypeError or MemoryError set. */
static PyObject *list_start(PyObject *o, const char *name, const char *what,
			    void *small, size_t size, void **arr)
{
	PyObject *seq;
	Py_ssize_t n;

	*arr = small;
	if (!PyList_Check(o) && !PyTuple_Check(o)) {
		arg_type_error(name, what, 0, o);
		return NULL;
	}
	seq = PySequence_Tuple(o);
	if (seq == NULL)
		return NULL;
	n = PyTuple_Size(seq);
	if (n > SMALL_LIST) {
		*arr = PyMem_Malloc(n * size);
		if (*arr == NULL) {
			Py_DECREF(seq);
			PyErr_NoMemory();
			return NULL;
		}
	}
	return seq;
}

/* The list setters' end: free arr unless it is small, drop seq, and
 * answer None when ok, else NULL. */
static PyObject *list_done(int ok, PyObject *seq, void *arr, void *small)
{
	if (arr != small)
		PyMem_Free(arr);
	Py_DECREF(seq);
	if (!ok)
		return NULL;
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qpex_wr_set_sge_list__doc__,
	     "Give the last builder's WR its data: a list of SGEs.\n"
	     "\n"
	     "The SGEs (and their MRs) are held until the batch ends.\n"
	     "\n"
	     "Wraps ``ibv_wr_set_sge_list`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    sg_list: a list or tuple of SGEs.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: sg_list is not a list/tuple of SGEs.\n"
	     "    ValueError: more SGEs than the QP's max_send_sge.\n"
	     "    VerbsError: EBADF if an SGE's MR or the QP is closed;\n"
	     "        EINVAL outside a batch, with no builder before it, when\n"
	     "        the WR takes no SGE or has its data already;\n"
	     "        EOPNOTSUPP when the provider lacks it.");

/* wr_set_sge_list(sg_list): a list or tuple of SGE objects. */
#define SGE_LIST_ARGS(X, S) X(S, OBJECT, PyObject *, sg_list)
ARGS_METHOD(static, qpex_wr_set_sge_list, "QPEx.wr_set_sge_list", SGE_LIST_ARGS,
	    self, a)
{
	struct ibv_sge small[SMALL_LIST], *arr;
	PyObject *seq;
	Py_ssize_t i, n;
	int ok = 0;

	seq = list_start(a->sg_list, "sg_list", "list or tuple of SGEs", small,
			 sizeof(*arr), (void **)&arr);
	if (seq == NULL)
		return NULL;
	n = PyTuple_Size(seq);
	if (check_num_sge(self, n, "ibv_wr_set_sge_list") < 0)
		goto out;
	for (i = 0; i < n; i++) {
		char what[32];

		snprintf(what, sizeof(what), "sg_list[%zd]", i);
		if (sge_of(PyTuple_GetItem(seq, i), what, &arr[i]) < 0)
			goto out;
	}
	if (qpex_begin_setter(self, WREX_SET_SGE, "ibv_wr_set_sge_list",
			      QPX_FN(wr_set_sge_list)) < 0)
		goto out;
	for (i = 0; i < n; i++) {
		if (keep_sge(self, PyTuple_GetItem(seq, i)) < 0) {
			QPEXO(self)->cur_data = 0;
			goto out;
		}
	}
	ibv_wr_set_sge_list(QPX(self), (size_t)n, arr);
	ok = 1;
out:
	return list_done(ok, seq, arr, small);
}

/*
 * The bytes of a buffer for an inline setter: bytes and bytearray
 * directly, any other buffer (memoryview, array, numpy) through a copy
 * (the 3.9 Limited API has no buffer protocol).  *hold gets the object
 * that owns the bytes (new reference), released after the setter: the
 * provider copies inline data during the call.
 */
static int inline_buf(PyObject *o, const char *what, PyObject **hold,
		      struct ibv_data_buf *out)
{
	PyObject *mv;
	int rc;

	if (PyBytes_Check(o) || PyByteArray_Check(o)) {
		Py_INCREF(o);
		*hold = o;
	} else {
		rc = buffer_view(o, &mv);
		if (rc <= 0) {
			if (rc == 0)
				goto bad;
			return -1;
		}
		*hold = PyObject_Bytes(mv);
		Py_DECREF(mv);
		if (*hold == NULL)
			return -1;
	}
	if (PyBytes_Check(*hold)) {
		out->addr = PyBytes_AsString(*hold);
		out->length = (size_t)PyBytes_Size(*hold);
	} else {
		out->addr = PyByteArray_AsString(*hold);
		out->length = (size_t)PyByteArray_Size(*hold);
	}
	return 0;
bad:
	return arg_type_error_hint(what, "bytes-like object", 0, o,
				   "bytes, bytearray, memoryview, ...");
}

static int check_inline_len(PyObject *self, size_t total, const char *verb)
{
	uint32_t max = QPO(self)->cap.max_inline_data;

	if (total > max) {
		PyErr_Format(PyExc_ValueError,
			     "%s: %zu bytes of inline data, more than the "
			     "QP's max_inline_data (%u; ask for more in "
			     "QPInitAttrEx(max_inline_data=...))",
			     verb, total, max);
		return -1;
	}
	return 0;
}

PyDoc_STRVAR(qpex_wr_set_inline_data__doc__,
	     "Give the last builder's WR its data inline.\n"
	     "\n"
	     "The provider copies the bytes now (no MR needed).\n"
	     "\n"
	     "Wraps ``ibv_wr_set_inline_data`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    data: a bytes-like object (bytes, bytearray, memoryview).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: data is not bytes-like.\n"
	     "    ValueError: more bytes than the QP's max_inline_data.\n"
	     "    VerbsError: EINVAL outside a batch, with no builder before\n"
	     "        it, when the WR takes no inline data or has its data\n"
	     "        already; EOPNOTSUPP when the provider lacks it; EBADF\n"
	     "        once the QP is closed.");

#define INLINE_DATA_ARGS(X, S) X(S, OBJECT, PyObject *, data)
ARGS_DECLARE(inline_data, INLINE_DATA_ARGS);
METHOD_ARGS(qpex_wr_set_inline_data, "QPEx.wr_set_inline_data",
	    inline_data_params);

static PyObject *qpex_wr_set_inline_data(PyObject *self, PyObject *args,
					 PyObject *kw)
{
	struct inline_data_args a;
	struct ibv_data_buf buf;
	PyObject *hold = NULL;

	HANDLE_CHECK(self);
	if (args_parse(&qpex_wr_set_inline_data_args, self, args, kw, &a) < 0 ||
	    inline_buf(a.data, "data", &hold, &buf) < 0)
		return NULL;
	if (check_inline_len(self, buf.length, "ibv_wr_set_inline_data") < 0 ||
	    qpex_begin_setter(self, WREX_SET_INLINE, "ibv_wr_set_inline_data",
			      QPX_FN(wr_set_inline_data)) < 0) {
		Py_DECREF(hold);
		return NULL;
	}
	ibv_wr_set_inline_data(QPX(self), buf.addr, buf.length);
	Py_DECREF(hold);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(qpex_wr_set_inline_data_list__doc__,
	     "Give the last builder's WR its data inline, from several "
	     "buffers.\n"
	     "\n"
	     "The provider copies the bytes now.\n"
	     "\n"
	     "Wraps ``ibv_wr_set_inline_data_list`` (man page\n"
	     "ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    buf_list: a list or tuple of bytes-like objects.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: not a list/tuple of bytes-like objects.\n"
	     "    ValueError: more bytes in all than max_inline_data.\n"
	     "    VerbsError: as ``wr_set_inline_data()``.");

#define INLINE_DATA_LIST_ARGS(X, S) X(S, OBJECT, PyObject *, buf_list)
ARGS_METHOD(static, qpex_wr_set_inline_data_list,
	    "QPEx.wr_set_inline_data_list", INLINE_DATA_LIST_ARGS, self, a)
{
	struct ibv_data_buf small[SMALL_LIST], *arr;
	PyObject *seq, *holds;
	Py_ssize_t i, n;
	size_t total = 0;
	int ok = 0;

	seq = list_start(a->buf_list, "buf_list",
			 "list or tuple of bytes-like objects", small,
			 sizeof(*arr), (void **)&arr);
	if (seq == NULL)
		return NULL;
	n = PyTuple_Size(seq);
	holds = PyTuple_New(n);
	if (holds == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		PyObject *h = NULL;
		char what[32];

		snprintf(what, sizeof(what), "buf_list[%zd]", i);
		if (inline_buf(PyTuple_GetItem(seq, i), what, &h, &arr[i]) < 0)
			goto out;
		PyTuple_SetItem(holds, i, h); /* steals h */
		total += arr[i].length;
	}
	if (check_inline_len(self, total, "ibv_wr_set_inline_data_list") < 0 ||
	    qpex_begin_setter(self, WREX_SET_INLINE,
			      "ibv_wr_set_inline_data_list",
			      QPX_FN(wr_set_inline_data_list)) < 0)
		goto out;
	ibv_wr_set_inline_data_list(QPX(self), (size_t)n, arr);
	ok = 1;
out:
	Py_XDECREF(holds);
	return list_done(ok, seq, arr, small);
}

PyDoc_STRVAR(qpex_wr_set_ud_addr__doc__,
	     "Give the last builder's WR its UD destination (required on UD).\n"
	     "\n"
	     "The AH is held, and marked used, until the batch ends.\n"
	     "\n"
	     "Wraps ``ibv_wr_set_ud_addr`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    ah: an AH of the QP's Context.\n"
	     "    remote_qpn: the destination QP number, 24 bits.\n"
	     "    remote_qkey: its Q_Key, 32 bits.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: ah is not an AH, or a number is not an int.\n"
	     "    ValueError: a number is out of range, or the AH belongs to\n"
	     "        another Context.\n"
	     "    VerbsError: EBADF if the AH or the QP is closed; EINVAL\n"
	     "        outside a batch, with no builder before it, on a non-UD\n"
	     "        QP or when the WR has its destination already;\n"
	     "        EOPNOTSUPP when the provider lacks it.");

#define UD_ADDR_ARGS(X, S)                                 \
	X(S, HANDLE, PyObject *, ah, AH, ARG_SAME_CONTEXT) \
	X(S, INT, uint32_t, remote_qpn, 0, QPN_MAX)        \
	X(S, UINT, uint32_t, remote_qkey)
ARGS_METHOD(static, qpex_wr_set_ud_addr, "QPEx.wr_set_ud_addr", UD_ADDR_ARGS,
	    self, a)
{
	if (qpex_begin_setter(self, 0, "ibv_wr_set_ud_addr",
			      QPX_FN(wr_set_ud_addr)) < 0)
		return NULL;
	if (qpex_keep(self, a->ah) < 0) {
		QPEXO(self)->cur_ud = 0;
		return NULL;
	}
	ibv_wr_set_ud_addr(QPX(self), (struct ibv_ah *)HANDLE(a->ah)->obj,
			   a->remote_qpn, a->remote_qkey);
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* TSO and XRC: hardware only (rxe has neither op)                     */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(qpex_wr_send_tso__doc__,
	     "Start a TSO send (a large send the device segments) in the\n"
	     "open batch: ``hdr`` is the packet header the device repeats\n"
	     "(copied by the provider now), ``mss`` the segment size.\n"
	     "\n" WRX_DATA_NEXT "\n"
	     "Wraps ``ibv_wr_send_tso`` (man page ibv_wr_post(3)); the QP\n"
	     "needs ``QPInitAttrEx(max_tso_header=...)`` and the TSO\n"
	     "send op. Never run on hardware here; checked against the\n"
	     "recording double.\n"
	     "\n"
	     "Args:\n"
	     "    hdr: the header, a bytes-like object (``hdr_sz`` is its\n"
	     "        length, at most 65535).\n"
	     "    mss: the maximum segment size, 16 bits.\n"
	     "\n" WRX_RAISES("TSO"));

#define TSO_ARGS(X, S) X(S, OBJECT, PyObject *, hdr) X(S, UINT, uint16_t, mss)
ARGS_METHOD(static, qpex_wr_send_tso, "QPEx.wr_send_tso", TSO_ARGS, self, a)
{
	struct ibv_data_buf buf;
	PyObject *hold = NULL;

	if (inline_buf(a->hdr, "hdr", &hold, &buf) < 0)
		return NULL;
	if (buf.length > UINT16_MAX) {
		PyErr_Format(PyExc_ValueError,
			     "hdr: %zu bytes, more than 65535", buf.length);
		goto fail;
	}
	if (qpex_begin_wr(self, WREX_OP_TSO) < 0)
		goto fail;
	ibv_wr_send_tso(QPX(self), buf.addr, (uint16_t)buf.length, a->mss);
	Py_DECREF(hold);
	Py_RETURN_NONE;
fail:
	Py_DECREF(hold);
	return NULL;
}

PyDoc_STRVAR(qpex_wr_set_xrc_srqn__doc__,
	     "Give the last builder's WR its remote XRC SRQ (required on\n"
	     "an XRC_SEND QP: the SRQ number the target's\n"
	     "``SRQ.get_srq_num()`` gives).\n"
	     "\n"
	     "Wraps ``ibv_wr_set_xrc_srqn`` (man page ibv_wr_post(3)). Never\n"
	     "run on hardware here; checked against the recording double.\n"
	     "\n"
	     "Args:\n"
	     "    remote_srqn: the remote SRQ number, 24 bits.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: remote_srqn is not an int.\n"
	     "    ValueError: remote_srqn is out of range.\n"
	     "    VerbsError: EINVAL outside a batch, with no builder before\n"
	     "        it or on a QP that is not XRC_SEND; EOPNOTSUPP when the\n"
	     "        provider lacks it; EBADF once the QP is closed.");

#define XRC_SRQN_ARGS(X, S) X(S, INT, uint32_t, remote_srqn, 0, QPN_MAX)
ARGS_METHOD(static, qpex_wr_set_xrc_srqn, "QPEx.wr_set_xrc_srqn", XRC_SRQN_ARGS,
	    self, a)
{
	QPExObject *q = QPEXO(self);

	if (!q->qp.in_batch)
		return not_in_batch("ibv_wr_set_xrc_srqn");
	if (q->cur_op == WREX_OP_NONE)
		return verbs_error_fmt(EINVAL, "ibv_wr_set_xrc_srqn",
				       "no work request to attach it to: "
				       "call a builder first");
	if (q->qp.qp_type != IBV_QPT_XRC_SEND)
		return verbs_error_fmt(EINVAL, "ibv_wr_set_xrc_srqn",
				       "wr_set_xrc_srqn is for XRC_SEND QPs "
				       "only");
	if (!qpx_has(q, QPX_FN(wr_set_xrc_srqn)))
		return provider_lacks("ibv_wr_set_xrc_srqn");
	ibv_wr_set_xrc_srqn(QPX(self), a->remote_srqn);
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* wr_bind_mw (its MWBindInfo read by mem/mw.c)                       */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(qpex_wr_bind_mw__doc__,
	     "Start a BIND_MW: bind a type 2 window under a new rkey.\n"
	     "\n"
	     "The MW and the MR are held, and marked used, until the batch\n"
	     "ends. Choose the rkey with ``ibverbs.inc_rkey(mw.rkey)``; set\n"
	     "``mw.rkey`` to it once the bind completes.\n"
	     "\n"
	     "Wraps ``ibv_wr_bind_mw`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    mw: the MW.\n"
	     "    rkey: the window's new rkey, 32 bits.\n"
	     "    bind_info: an MWBindInfo (mr, addr, length,\n"
	     "        mw_access_flags).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: mw is not an MW, or bind_info lacks a field.\n"
	     "    ValueError: a value is out of range.\n"
	     "    VerbsError: EBADF if the QP, MW or MR is closed; EINVAL\n"
	     "        outside a batch or when BIND_MW is not in\n"
	     "        ``send_ops_flags``; EOPNOTSUPP when the provider lacks\n"
	     "        it.");

/*
 * wr_bind_mw(mw, rkey, bind_info): a BIND_MW in the open batch; rkey is
 * the window's new rkey.  The batch holds the MW and the MR (both marked
 * used, so neither closes) until wr_complete or wr_abort, and a record of
 * the bind, which moves the MR's hold to the MW once the batch is posted.
 */
#define BIND_MW_ARGS(X, S)                               \
	X(S, HANDLE, PyObject *, mw, MW, ARG_ANY_PARENT) \
	X(S, UINT, uint32_t, rkey)                       \
	X(S, RECORD, PyObject *, bind_info, MWBindInfo)
ARGS_DECLARE(bind_mw, BIND_MW_ARGS);
METHOD_ARGS(qpex_wr_bind_mw, "QPEx.wr_bind_mw", bind_mw_params);

static PyObject *qpex_wr_bind_mw(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *mw, *mr = NULL, *rec = NULL, *res = NULL;
	struct ibv_mw_bind_info bi;
	struct bind_mw_args a;

	HANDLE_CHECK(self);
	if (args_parse(&qpex_wr_bind_mw_args, self, args, kw, &a) < 0 ||
	    bind_info_from_py(a.bind_info, &bi, &mr) < 0)
		return NULL;
	mw = a.mw;
	/* Reading bind_info ran Python code: check the handles again. */
	if (handle_check(HANDLE(self)) < 0 || handle_check(HANDLE(mw)) < 0 ||
	    handle_check(HANDLE(mr)) < 0)
		goto out;
	bi.mr = HANDLE(mr)->obj;
	if (qpex_begin_wr(self, WREX_OP_BIND_MW) < 0 ||
	    qpex_keep(self, mw) < 0 || qpex_keep(self, mr) < 0)
		goto out;
	/* The hold moves once the batch is posted (mem/mw.c). */
	rec = mw_hold_record(mw, bi.length ? mr : NULL, a.rkey);
	if (rec == NULL || qpex_keep(self, rec) < 0)
		goto out;
	ibv_wr_bind_mw(QPEXO(self)->qpx, MWP(mw), a.rkey, &bi);
	res = Py_None;
	Py_INCREF(res);
out:
	Py_XDECREF(rec);
	Py_XDECREF(mr);
	return res;
}

/* ------------------------------------------------------------------ */
/* QPEx's methods (the QP's are inherited)                             */
/* ------------------------------------------------------------------ */

static PyMethodDef qpex_methods[] = {
	METHOD_NOARGS("wr_start", qpex_wr_start),
	METHOD_NOARGS("wr_complete", qpex_wr_complete),
	METHOD_NOARGS("wr_abort", qpex_wr_abort),
	METHOD_NOARGS("wr_send", qpex_wr_send),
	METHOD_KW("wr_send_imm", qpex_wr_send_imm),
	METHOD_KW("wr_send_inv", qpex_wr_send_inv),
	METHOD_KW("wr_rdma_write", qpex_wr_rdma_write),
	METHOD_KW("wr_rdma_write_imm", qpex_wr_rdma_write_imm),
	METHOD_KW("wr_rdma_read", qpex_wr_rdma_read),
	METHOD_KW("wr_atomic_cmp_swp", qpex_wr_atomic_cmp_swp),
	METHOD_KW("wr_atomic_fetch_add", qpex_wr_atomic_fetch_add),
	METHOD_KW("wr_local_inv", qpex_wr_local_inv),
	METHOD_KW("wr_atomic_write", qpex_wr_atomic_write),
	METHOD_KW("wr_flush", qpex_wr_flush),
	METHOD_KW("wr_set_sge", qpex_wr_set_sge),
	METHOD_KW("wr_set_sge_list", qpex_wr_set_sge_list),
	METHOD_KW("wr_set_inline_data", qpex_wr_set_inline_data),
	METHOD_KW("wr_set_inline_data_list", qpex_wr_set_inline_data_list),
	METHOD_KW("wr_set_ud_addr", qpex_wr_set_ud_addr),
	METHOD_KW("wr_bind_mw", qpex_wr_bind_mw),
	METHOD_KW("wr_send_tso", qpex_wr_send_tso),
	METHOD_KW("wr_set_xrc_srqn", qpex_wr_set_xrc_srqn),
	{ NULL, NULL, 0, NULL }
};

/* ------------------------------------------------------------------ */
/* wr_id, wr_flags, send_ops_flags                                     */
/* ------------------------------------------------------------------ */

/* wr_id and wr_flags share their accessors: closure is the field's name
 * ("wr_id": 64 bits; "wr_flags": 32 bits, read as SendFlags). */
static int is_wr_id(void *closure)
{
	return strcmp((const char *)closure, "wr_id") == 0;
}

static PyObject *get_wr_field(PyObject *self, void *closure)
{
	struct ibv_qp_ex *qpx;

	HANDLE_CHECK(self);
	qpx = QPEXO(self)->qpx;
	if (qpx == NULL)
		return no_send_ops(closure);
	if (is_wr_id(closure))
		return PyLong_FromUnsignedLongLong(qpx->wr_id);
	return enum_from_int("SendFlags", (long)qpx->wr_flags);
}

static int set_wr_field(PyObject *self, PyObject *v, void *closure)
{
	const char *name = closure;
	uint64_t id = 0;
	uint32_t f = 0;

	if (v == NULL) {
		PyErr_Format(PyExc_AttributeError, "cannot delete %s", name);
		return -1;
	}
	if (handle_check(HANDLE(self)) < 0)
		return -1;
	if (is_wr_id(closure) ? arg_u64(v, name, &id) : arg_u32(v, name, &f))
		return -1;
	if (QPEXO(self)->qpx == NULL) {
		no_send_ops(name);
		return -1;
	}
	if (is_wr_id(closure))
		QPEXO(self)->qpx->wr_id = id;
	else
		QPEXO(self)->qpx->wr_flags = f;
	return 0;
}

static PyObject *get_send_ops_flags(PyObject *self, void *closure)
{
	uint64_t f = QPEXO(self)->send_ops_flags;

	if (f > LONG_MAX) /* not a flag set the enum knows */
		return PyLong_FromUnsignedLongLong(f);
	return enum_from_int("QPCreateSendOpsFlags", (long)f);
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
	{ "wr_id", get_wr_field, set_wr_field,
	  "The wr_id of the WRs the next builders start\n"
	  "(``ibv_qp_ex.wr_id``); settable; EBADF once closed.",
	  "wr_id" },
	{ "wr_flags", get_wr_field, set_wr_field,
	  "The ``SendFlags`` of the WRs the next builders start\n"
	  "(``ibv_qp_ex.wr_flags``); settable; EBADF once closed.",
	  "wr_flags" },
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

/* BASETYPE: efa.QP (efa/efa_qp.c) derives from it. */
HANDLE_TYPE_SPEC(QPEx_spec, "QPEx", QPExObject, Py_TPFLAGS_BASETYPE,
		 qpex__doc__, qpex_dealloc, qpex_traverse, qpex_repr,
		 qpex_methods, qpex_getset);
