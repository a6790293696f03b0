/*
 * batch_run.h - template: the progress() run of a batch, posting pieces
 * and reaping their completions in one C loop.  batch.c (SendBatch) and
 * recv_batch.c (RecvBatch) include it once each, after defining:
 *
 *   RUN_FN(name)      this batch's function (send_run_##name)
 *   RUN_OBJ           the batch object (SendBatchObject), with the
 *                     fields wrs, n, run_qp, run_posted and run_done
 *   RUN_NATIVE        its native WR (struct ibv_send_wr)
 *   RUN_CTX           what a post needs beside the QP (the QPEx)
 *   RUN_POST(b, qp, ctx, start, end, bad)
 *                     post rows [start, end): the verb's result, *bad
 *                     as the verb set it
 *   RUN_POST_ERROR(b, qp, ctx, rc, bad)
 *                     set the error of that refused post
 *   RUN_ROW(b, wr_id) the row in flight that completion is of, or -1
 *   RUN_NAME          the Python type, a string literal ("SendBatch")
 *   RUN_WHICH         the CQ's side, a string literal ("send")
 *   RUN_ROW_WHAT      what RUN_ROW finds ("a row in flight")
 *
 * and undefines them at its end.  Defines, static: RUN_FN(end),
 * RUN_FN(loop), RUN_FN(go) and RUN_FN(reset) (send_run_end, ...,
 * recv_run_end, ...), and the docstring lines RUN_DOC_COMPLETION_ERROR.
 * Calls batch_run_failed (batch_base.c).
 */

#define RUN_POLL 16 /* completions per ibv_poll_cq */

/* The CompletionError lines of progress()'s Raises, for the docstring
 * that follows the include (left defined). */
#define RUN_DOC_COMPLETION_ERROR                                             \
	"    CompletionError: a failed completion; its ``row`` attribute\n"  \
	"        and message name the row, ``posted`` is the rows the run\n" \
	"        had posted, ``after`` the WCs reaped with it (a list);\n"   \
	"        the rest flush, one completion each, left in the CQ.\n"

/* send_run_end, recv_run_end: no run under way. */
static void RUN_FN(end)(RUN_OBJ *b)
{
	Py_CLEAR(b->run_qp);
	b->run_posted = b->run_done = 0;
}

/* send_run_loop, recv_run_loop: one run's loop: post while the bound
 * allows, reap, until a poll comes back empty or every row is complete.
 * 0; -1 with an error set when a verb failed (the run's counts stay
 * true: it can go on); -2 with an error set when a completion failed or
 * is not the run's (it ends). */
static int RUN_FN(loop)(RUN_OBJ *b, PyObject *qp, RUN_CTX ctx,
			struct ibv_cq *cq, Py_ssize_t depth, Py_ssize_t piece)
{
	struct ibv_wc wc[RUN_POLL];
	RUN_NATIVE *bad = NULL;
	Py_ssize_t end, row, n = b->n;
	int got, k, rc, post_rc = 0;

	for (;;) {
		while (b->run_posted < n) {
			end = b->run_posted + piece < n ?
				      b->run_posted + piece :
				      n;
			if (end - b->run_done > depth)
				break;
			bad = NULL;
			rc = RUN_POST(b, qp, ctx, b->run_posted, end, &bad);
			if (rc != 0) {
				/* The rows before bad are posted (a send's
				 * next signaled row completes them). */
				if (bad != NULL &&
				    bad >= &b->wrs[b->run_posted] &&
				    bad < &b->wrs[end])
					b->run_posted = bad - b->wrs;
				post_rc = rc;
				break;
			}
			b->run_posted = end;
		}
		got = ibv_poll_cq(cq, RUN_POLL, wc);
		if (got == 0 && post_rc == 0)
			return 0;
		if (got < 0 || got > RUN_POLL) {
			verbs_error_fmt(EIO, "ibv_poll_cq",
					"the provider returned %d", got);
			return -1;
		}
		for (k = 0; k < got; k++) {
			row = RUN_ROW(b, wc[k].wr_id);
			if (wc[k].status != IBV_WC_SUCCESS) {
				batch_run_failed(RUN_NAME, wc, k, got, row,
						 b->run_posted);
				return -2;
			}
			if (row < 0) {
				PyErr_Format(
					PyExc_ValueError,
					"a completion of wr_id %llu is "
					"not " RUN_ROW_WHAT ": while "
					"progress() runs, the QP's " RUN_WHICH
					" CQ must carry only this "
					"batch's completions",
					(unsigned long long)wc[k].wr_id);
				return -2;
			}
			b->run_done = row + 1;
		}
		if (post_rc != 0) {
			/* Reported after the reap: a QP in error may refuse
			 * posts, and the failed completion that put it there
			 * (raised above) says more. */
			RUN_POST_ERROR(b, qp, ctx, post_rc, bad);
			return -1;
		}
		if (b->run_done == n)
			return 0;
	}
}

/* send_run_go, recv_run_go: progress() once its arguments are checked:
 * start the run on qp (or go on with it), loop, and end the run when it
 * is complete or a completion ended it.  The rows complete, or NULL. */
static PyObject *RUN_FN(go)(RUN_OBJ *b, PyObject *qp, RUN_CTX ctx, PyObject *cq,
			    Py_ssize_t depth, Py_ssize_t piece)
{
	Py_ssize_t done;
	int rc;

	OBJ_LOCKED_BEGIN(b);
	if (b->run_qp == NULL) {
		Py_INCREF(qp);
		b->run_qp = qp;
	}
	rc = RUN_FN(loop)(b, qp, ctx, (struct ibv_cq *)HANDLE(cq)->obj, depth,
			  piece);
	done = b->run_done;
	if (rc == -2 || done == b->n)
		RUN_FN(end)(b);
	OBJ_LOCKED_END();
	if (rc < 0)
		return NULL;
	return PyLong_FromSsize_t(done);
}

/* send_run_reset, recv_run_reset: the reset() method. */
static PyObject *RUN_FN(reset)(PyObject *self, PyObject *unused)
{
	OBJ_LOCKED_BEGIN(self);
	RUN_FN(end)((RUN_OBJ *)self);
	OBJ_LOCKED_END();
	Py_RETURN_NONE;
}

#undef RUN_POLL
#undef RUN_FN
#undef RUN_OBJ
#undef RUN_NATIVE
#undef RUN_CTX
#undef RUN_POST
#undef RUN_POST_ERROR
#undef RUN_ROW
#undef RUN_NAME
#undef RUN_WHICH
#undef RUN_ROW_WHAT
