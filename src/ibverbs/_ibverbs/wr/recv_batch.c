/*
 * recv_batch.c - RecvBatch: receive work requests from columns of
 * integers (one buffer per row), built in C into native ibv_recv_wr and
 * ibv_sge arrays the batch owns and posted in pieces to a QP or an SRQ;
 * and QP.post_recv_batch, which builds one and posts it at once.
 *
 * As SendBatch (batch.c): the columns (columns.c) are checked once and
 * copied; the batch holds its MR, and each post checks it is open and
 * not re-registered.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include "qp/qp.h"
#include "cq/cq.h"
#include "wr/wr.h"

#include <string.h>

typedef struct {
	BATCH_HEAD(struct ibv_recv_wr)
} RecvBatchObject;

#define RB(o) ((RecvBatchObject *)(o))

#define RECV_BATCH_ARGS(X, S)                                               \
	X(S, HANDLE, PyObject *, mr, MR, ARG_ANY_PARENT, .flags = ARG_NONE) \
	X(S, OBJECT, PyObject *, local)                                     \
	X(S, OBJECT, PyObject *, lengths)                                   \
	X(S, OBJECT, PyObject *, lkey, .flags = ARG_KWOPT | ARG_NONE)       \
	X(S, OBJECT, PyObject *, wr_id, .flags = ARG_KWOPT | ARG_NONE)
ARGS_DECLARE(recv_batch, RECV_BATCH_ARGS);
METHOD_ARGS(recv_batch_new, "RecvBatch.__new__", recv_batch_params);
METHOD_ARGS(qp_post_recv_batch, "QP.post_recv_batch", recv_batch_params);

static int recv_row_error(Py_ssize_t i, const char *what, unsigned long long v)
{
	return batch_row_error("RecvBatch", i, what, v);
}

/* Check and store every row (the columns read as ColumnRows, the
 * batch's fields as locals: see send_rows in batch.c). */
static int recv_rows(RecvBatchObject *b, const Column *local,
		     const Column *lengths, const Column *lkey,
		     const Column *wr_id)
{
	ColumnRows off = column_rows(local), len = column_rows(lengths);
	ColumnRows key = column_rows(lkey), id = column_rows(wr_id);
	struct ibv_recv_wr *wrs = b->wrs;
	struct ibv_sge *sges = b->sges;
	uint64_t base = b->mr ? b->mr_addr : 0, length = b->mr_length;
	uint64_t seq = wr_id->n < 0 ? ~0ULL : 0;
	Py_ssize_t i, n = b->n;
	int has_mr = b->mr != NULL;

	for (i = 0; i < n; i++) {
		uint64_t o = rows_at(off, i), l = rows_at(len, i);
		uint64_t k = rows_at(key, i);

		if (batch_sge_check("RecvBatch", i, o, l, has_mr, length) < 0)
			return -1;
		if (k > UINT32_MAX)
			return recv_row_error(i, "lkey does not fit 32 bits",
					      k);
		sges[i].addr = o + base;
		sges[i].length = (uint32_t)l;
		sges[i].lkey = (uint32_t)k;
		wrs[i].wr_id = rows_at(id, i) + ((uint64_t)i & seq);
		wrs[i].sg_list = &sges[i];
		wrs[i].num_sge = 1;
		wrs[i].next = &wrs[i + 1];
	}
	wrs[n - 1].next = NULL;
	return 0;
}

static PyObject *recv_batch_build(PyTypeObject *tp,
				  const struct recv_batch_args *a)
{
	Column local, lengths, lkey, wr_id;
	RecvBatchObject *b = NULL;

	memset(&local, 0, sizeof(local));
	memset(&lengths, 0, sizeof(lengths));
	memset(&lkey, 0, sizeof(lkey));
	memset(&wr_id, 0, sizeof(wr_id));
	wr_id.name = "wr_id";
	wr_id.n = -1; /* wr_id=0: row k's is k */
	if (batch_mr_or_lkey(a->mr, a->lkey) < 0)
		return NULL;
	if (column_get(a->local, "local", 0, &local) < 0 ||
	    column_get(a->lengths, "lengths", COLUMN_SCALAR_OK, &lengths) < 0 ||
	    (a->lkey != NULL &&
	     column_get(a->lkey, "lkey", COLUMN_SCALAR_OK, &lkey) < 0) ||
	    (a->wr_id != NULL &&
	     column_get(a->wr_id, "wr_id", COLUMN_SCALAR_OK, &wr_id) < 0))
		goto fail;
	if (local.n == 0) {
		PyErr_SetString(PyExc_ValueError, "local has no rows");
		goto fail;
	}
	if (column_check_len(&lengths, local.n) < 0 ||
	    (lkey.name && column_check_len(&lkey, local.n) < 0) ||
	    column_check_len(&wr_id, local.n) < 0)
		goto fail;
	b = (RecvBatchObject *)PyType_GenericAlloc(tp, 0);
	if (b == NULL)
		goto fail;
	if (batch_init((BatchBase *)b, local.n, sizeof(*b->wrs), a->mr) < 0)
		goto fail;
	if (lkey.name == NULL) { /* the MR's, one for all */
		lkey.name = "lkey";
		lkey.n = -1;
		lkey.scalar = b->mr_lkey;
	}
	if (recv_rows(b, &local, &lengths, &lkey, &wr_id) < 0)
		goto fail;
	column_release(&local);
	column_release(&lengths);
	column_release(&lkey);
	column_release(&wr_id);
	return (PyObject *)b;
fail:
	column_release(&local);
	column_release(&lengths);
	column_release(&lkey);
	column_release(&wr_id);
	Py_XDECREF(b);
	return NULL;
}

static PyObject *recv_batch_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	struct recv_batch_args a;

	if (args_parse(&recv_batch_new_args, NULL, args, kw, &a) < 0)
		return NULL;
	return recv_batch_build(tp, &a);
}

/* Post rows [start, end) to the QP (is_qp) or SRQ queue: the verb's
 * return code, *bad as it set it.  The caller holds the batch's lock. */
static int recv_post_range(RecvBatchObject *b, PyObject *queue, int is_qp,
			   Py_ssize_t start, Py_ssize_t end,
			   struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr *last = &b->wrs[end - 1], *next = last->next;
	int rc;

	last->next = NULL;
	if (is_qp)
		rc = ibv_post_recv(QPP(queue), &b->wrs[start], bad);
	else
		rc = ibv_post_srq_recv(SRQP(queue), &b->wrs[start], bad);
	last->next = next;
	return rc;
}

/* The VerbsError of a failed post of rc, bad as the verb set it: NULL. */
static PyObject *recv_post_error(RecvBatchObject *b, PyObject *queue, int is_qp,
				 int rc, struct ibv_recv_wr *bad)
{
	return post_error(rc, is_qp ? "ibv_post_recv" : "ibv_post_srq_recv",
			  "receive", bad ? bad - b->wrs : -1,
			  bad ? bad->wr_id : 0, is_qp ? QPP(queue) : NULL,
			  is_qp ? qp_state_name(QPP(queue)->state) : "SRQ");
}

/* Post rows [start, end) to the QP or SRQ queue: the number posted, or
 * NULL. */
static PyObject *recv_batch_post_rows(RecvBatchObject *b, PyObject *queue,
				      Py_ssize_t start, Py_ssize_t end)
{
	struct ibv_recv_wr *bad = NULL;
	int is_qp = PyObject_TypeCheck(queue, ST.QP_type), rc;

	OBJ_LOCKED_BEGIN(b);
	rc = recv_post_range(b, queue, is_qp, start, end, &bad);
	OBJ_LOCKED_END();
	if (rc == 0)
		return PyLong_FromSsize_t(end - start);
	return recv_post_error(b, queue, is_qp, rc, bad);
}

/* A QP that receives itself (no SRQ), or an SRQ.  0 or -1. */
static int recv_queue_check(PyObject *queue)
{
	if (PyObject_TypeCheck(queue, ST.QP_type) && QPO(queue)->srq != NULL) {
		PyErr_SetString(PyExc_ValueError,
				"this QP receives through its SRQ: post the "
				"batch to qp.srq");
		return -1;
	}
	return 0;
}

PyDoc_STRVAR(recv_batch_post__doc__,
	     "Post rows ``start`` onwards as one receive post.\n"
	     "\n"
	     "Posts ``count`` rows (all the rest when None); on a QP never\n"
	     "more than its receive queue holds (``cap.max_recv_wr``). Checks\n"
	     "that the batch's MR is open; keeps the GIL.\n"
	     "\n"
	     "Wraps ``ibv_post_recv`` and ``ibv_post_srq_recv`` (man pages\n"
	     "ibv_post_recv(3), ibv_post_srq_recv(3)).\n"
	     "\n"
	     "Args:\n"
	     "    queue: a QP (without an SRQ) or an SRQ.\n"
	     "    start: the first row to post.\n"
	     "    count: the most rows to post, or None for the rest.\n"
	     "\n"
	     "Returns:\n"
	     "    How many rows were posted (0 when start is the end).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: queue is not a QP or SRQ, or start/count not\n"
	     "        ints.\n"
	     "    ValueError: start past the end, a negative count, a QP\n"
	     "        with an SRQ, the MR was re-registered, or a\n"
	     "        ``progress()`` run is under way.\n"
	     "    VerbsError: EBADF if the queue or the MR is closed; else\n"
	     "        the provider refused (the message names the row).");

static PyObject *recv_batch_post(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "queue", "start", "count", NULL };
	RecvBatchObject *b = RB(self);
	PyObject *queue;
	Py_ssize_t start, count, end;

	if (batch_queue_args(args, kw, kwlist, "O|OO:post", ST.QP_type,
			     ST.SRQ_type, "QP or SRQ", &queue, 0, &start,
			     PY_SSIZE_T_MAX, &count) < 0)
		return NULL;
	HANDLE_CHECK(queue);
	if (batch_idle((BatchBase *)b) < 0)
		return NULL;
	if (start > b->n) {
		PyErr_Format(PyExc_ValueError,
			     "start %zd is past the batch's %zd rows", start,
			     b->n);
		return NULL;
	}
	if (recv_queue_check(queue) < 0 || batch_mr_ready((BatchBase *)b) < 0)
		return NULL;
	if (PyObject_TypeCheck(queue, ST.QP_type) &&
	    count > (Py_ssize_t)QPO(queue)->cap.max_recv_wr)
		count = QPO(queue)->cap.max_recv_wr ?
				QPO(queue)->cap.max_recv_wr :
				1;
	end = count < b->n - start ? start + count : b->n;
	if (end == start)
		return PyLong_FromLong(0);
	return recv_batch_post_rows(b, queue, start, end);
}

/* ------------------------------------------------------------------ */
/* progress(): posting and reaping in one C loop                       */
/* ------------------------------------------------------------------ */

/* The next row in flight, if this is its wr_id, or -1: a QP's receives
 * complete in the order they were posted (completion k of the run is
 * row k). */
static inline Py_ssize_t recv_run_row(const RecvBatchObject *b, uint64_t wr_id)
{
	Py_ssize_t row = b->run_done;

	return row < b->run_posted && wr_id == b->wrs[row].wr_id ? row : -1;
}

#define RUN_FN(name) recv_run_##name
#define RUN_OBJ RecvBatchObject
#define RUN_NATIVE struct ibv_recv_wr
#define RUN_CTX int /* is_qp: 1 */
#define RUN_POST recv_post_range
#define RUN_POST_ERROR recv_post_error
#define RUN_ROW recv_run_row
#define RUN_NAME "RecvBatch"
#define RUN_WHICH "receive"
#define RUN_ROW_WHAT "the next row in flight"
#include "wr/templates/batch_run.h"

PyDoc_STRVAR(
	recv_batch_progress__doc__,
	"Post and reap the whole batch in pieces, in one C loop.\n"
	"\n"
	"Starts a run (or goes on with the one under way): posts pieces of\n"
	"``piece`` rows while at most ``depth`` rows are posted and not yet\n"
	"complete, and reaps the QP's receive CQ (a QP's receives complete\n"
	"in the order posted: the run's k-th completion is row k), until a\n"
	"poll finds nothing or every row is complete; then returns. Call it\n"
	"again (sleeping, or after a CQ event) until it returns\n"
	"``len(batch)``, which ends the run. While a run is under way the\n"
	"receive CQ must carry only this batch's completions, and\n"
	"``post()`` is refused. The completions' byte counts and immediate\n"
	"data are not kept: use ``post()`` and ``CQ.poll_into`` for them.\n"
	"Keeps the GIL, as ``QP.post_recv`` does.\n"
	"\n"
	"Wraps ``ibv_post_recv`` and ``ibv_poll_cq`` (man pages\n"
	"ibv_post_recv(3), ibv_poll_cq(3)).\n"
	"\n"
	"Args:\n"
	"    queue: the QP (without an SRQ), over a plain receive CQ.\n"
	"    depth: the most rows posted and not complete (None:\n"
	"        ``cap.max_recv_wr``; more is cut to it).\n"
	"    piece: rows per ``ibv_post_recv`` (more than depth is cut\n"
	"        to it).\n"
	"\n"
	"Returns:\n"
	"    How many rows are complete; ``len(batch)`` ends the run.\n"
	"\n"
	"Raises:\n"
	"    TypeError: queue is not a QP, or depth/piece not ints.\n"
	"    ValueError: depth or piece < 1, a QP with an SRQ, a CQEx or a\n"
	"        polled-elsewhere receive CQ, another QP's run under way,\n"
	"        the MR re-registered, or a completion that is not the\n"
	"        next row.\n" RUN_DOC_COMPLETION_ERROR
	"    VerbsError: EBADF if the QP or the MR is closed; else the\n"
	"        provider refused a post (the message names the row;\n"
	"        raised after the reap that follows it, so that a failed\n"
	"        completion raises first) or ``ibv_poll_cq`` failed. The\n"
	"        run stays under way (call\n"
	"        again to go on, or ``reset()``); a CompletionError or\n"
	"        ValueError ends it, the completions of rows still posted\n"
	"        left in the CQ.");

static PyObject *recv_batch_progress(PyObject *self, PyObject *args,
				     PyObject *kw)
{
	RecvBatchObject *b = RB(self);
	Py_ssize_t depth, piece;
	PyObject *qp, *cq;

	if (batch_progress_args(args, kw, &qp, &depth, &piece) < 0)
		return NULL;
	HANDLE_CHECK(qp);
	if (recv_queue_check(qp) < 0 || batch_mr_ready((BatchBase *)b) < 0)
		return NULL;
	cq = QPO(qp)->recv_cq;
	if (batch_progress_check(qp, cq, "receive", b->run_qp,
				 QPO(qp)->cap.max_recv_wr, &depth, &piece) < 0)
		return NULL;
	return recv_run_go(b, qp, 1, cq, depth, piece);
}

PyDoc_STRVAR(recv_run_reset__doc__,
	     "End the progress() run under way without waiting for it.\n"
	     "\n"
	     "The rows posted stay posted: their completions arrive in the\n"
	     "receive CQ as usual. Nothing happens when no run is under\n"
	     "way.");

/* The Args lines of QP.post_recv_batch and RecvBatch, and the first of
 * their Raises. */
#define RB_DOC_ARGS                                                        \
	"    mr: the MR ``local`` indexes, or None (``lkey`` given).\n"    \
	"    local: offsets into the MR (or addresses).\n"                 \
	"    lengths: bytes per buffer, or one int for all.\n"             \
	"    lkey: the local keys, one or a column, where mr is None.\n"   \
	"    wr_id: an int (row k gets ``wr_id + k``) or a column.\n"      \
	"\n"                                                               \
	"Raises:\n"                                                        \
	"    TypeError: a column is not an array of integers or an int.\n" \
	"    ValueError: a bad row (named), columns of different lengths,\n"

const char qp_post_recv_batch__doc__[] = PyDoc_STR(
	"Build the receive requests the columns describe, and post them.\n"
	"\n"
	"One ``ibv_post_recv`` call of every row: at most the receive\n"
	"queue's ``cap.max_recv_wr`` rows. The arguments are RecvBatch's;\n"
	"nothing is kept after the call.\n"
	"\n"
	"Wraps ``ibv_post_recv`` (man page ibv_post_recv(3)).\n"
	"\n"
	"Args:\n" RB_DOC_ARGS
	"        more rows than the receive queue holds, a QP with an SRQ.\n"
	"    VerbsError: EBADF if the QP or MR is closed; else the provider\n"
	"        refused (the message names the row).");

PyObject *qp_post_recv_batch(PyObject *self, PyObject *args, PyObject *kw)
{
	struct recv_batch_args a;
	RecvBatchObject *b;
	PyObject *res = NULL;

	HANDLE_CHECK(self);
	if (args_parse(&qp_post_recv_batch_args, NULL, args, kw, &a) < 0 ||
	    recv_queue_check(self) < 0)
		return NULL;
	b = (RecvBatchObject *)recv_batch_build(ST.RecvBatch_type, &a);
	if (b == NULL)
		return NULL;
	if (batch_check_rows((BatchBase *)b, QPO(self)->cap.max_recv_wr,
			     "receive", "RecvBatch") == 0 &&
	    batch_mr_ready((BatchBase *)b) == 0)
		res = recv_batch_post_rows(b, self, 0, b->n);
	return batch_none_or_error((PyObject *)b, res);
}

static int recv_batch_clear(PyObject *self)
{
	Py_CLEAR(RB(self)->run_qp);
	Py_CLEAR(RB(self)->mr);
	return 0;
}

static PyObject *recv_batch_repr(PyObject *self)
{
	return PyUnicode_FromFormat("<RecvBatch of %zd rows>", RB(self)->n);
}

static PyMethodDef recv_batch_methods[] = {
	METHOD_KW("post", recv_batch_post),
	METHOD_KW("progress", recv_batch_progress),
	METHOD_NOARGS("reset", recv_run_reset),
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef recv_batch_getset[] = {
	{ "mr", batch_get_mr, NULL,
	  "The MR the local offsets index, or None (addresses).", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

PyDoc_STRVAR(
	recv_batch__doc__,
	"Receive work requests described by columns of integers.\n"
	"\n"
	"Row k is one receive buffer of one SGE: ``lengths[k]`` bytes at\n"
	"``local[k]`` (an offset into ``mr``, or an address with ``lkey``).\n"
	"Columns as SendBatch's: any 1-D array of integers; lengths, lkey\n"
	"and wr_id may be one int. Checked once and copied into native\n"
	"``ibv_recv_wr`` and ``ibv_sge`` arrays the batch owns.\n"
	"``post(queue, start, count)`` posts rows to a QP or an SRQ;\n"
	"``progress(qp, depth, piece)`` posts and reaps the whole batch in\n"
	"one C loop.\n"
	"The batch holds its MR: a post after ``mr.close()`` is EBADF.\n"
	"\n"
	"Args:\n" RB_DOC_ARGS
	"        no rows, both or neither of mr and lkey.\n"
	"    VerbsError: EBADF if the MR is closed.");

static PyType_Slot recv_batch_slots[] = {
	{ Py_tp_doc, (void *)recv_batch__doc__ },
	{ Py_tp_new, recv_batch_new },
	{ Py_tp_dealloc, batch_dealloc },
	{ Py_tp_traverse, batch_traverse },
	{ Py_tp_clear, recv_batch_clear },
	{ Py_tp_repr, recv_batch_repr },
	{ Py_tp_methods, recv_batch_methods },
	{ Py_tp_getset, recv_batch_getset },
	{ Py_sq_length, batch_length },
	{ 0, NULL }
};

PyType_Spec RecvBatch_spec = { "ibverbs._ibverbs.RecvBatch",
			       sizeof(RecvBatchObject), 0,
			       Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			       recv_batch_slots };
