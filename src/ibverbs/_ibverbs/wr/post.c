/*
 * post.c - the data path's posts: QP.post_send(), QP.post_recv(),
 * SRQ.post_recv() and WQ.post_recv().  Around the inline verb, each
 * links the WR objects given (one WR, a list or tuple of them, or a
 * SendWRChain/RecvWRChain, linked already) into one native list through
 * wr.next, and after the post unlinks them again; on a failed post it
 * names the WR the provider rejected.  No allocation, GIL kept
 * (ibv_post_* never blocks).
 *
 * IBVERBS_BENCH_RELEASE_GIL (benchmarks/prepare.py only, never shipped)
 * releases the GIL around ibv_post_send/ibv_post_recv, and cq.c around
 * ibv_poll_cq in poll_count(), for the measurement of what that costs
 * (BENCHMARKS.md, "GIL").
 *
 * The data path is this file and wrchain.c; calls go one way: post.c
 * uses wrchain.c (a chain's head) and wr_check.c (the per-WR checks, and
 * sendwr_check_ud after linking), neither of which calls back here.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include "qp/qp.h"
#include "wr/wr.h"

/* ------------------------------------------------------------------ */
/* Linking and unlinking (the template is post_link.h)                 */
/* ------------------------------------------------------------------ */

#include "wr/templates/wr_kind_send.h"
#include "wr/templates/post_link.h"
#include "wr/templates/wr_kind_undef.h"

#include "wr/templates/wr_kind_recv.h"
#include "wr/templates/post_link.h"
#include "wr/templates/wr_kind_undef.h"

/* ------------------------------------------------------------------ */
/* Messages after a failed post                                       */
/* ------------------------------------------------------------------ */

/* Out of line: the post failed; say which WR and, for a QP (qp_state:
 * its state's name) and the usual causes, why; qp NULL: qp_state names
 * the queue (an SRQ, a WQ).  idx < 0: the provider did not say which. */
PyObject *post_error(int rc, const char *verb, const char *kind, Py_ssize_t idx,
		     uint64_t wr_id, const struct ibv_qp *qp,
		     const char *qp_state)
{
	const char *hint = "";

	if (qp == NULL) {
		if (idx < 0)
			return verbs_error_fmt(rc, verb,
					       "the %s rejected "
					       "the WRs without saying which",
					       qp_state);
		return verbs_error_fmt(rc, verb,
				       "%s WR at index %zd "
				       "(wr_id=%llu) was rejected",
				       kind, idx, (unsigned long long)wr_id);
	}
	if (rc == ENOMEM || rc == -ENOMEM)
		hint = " (the queue is full: too many WRs outstanding?)";
	else if (rc == EINVAL || rc == -EINVAL)
		hint = " (too many SGEs, an unsupported opcode or flag, or a "
		       "QP state that does not allow posting?)";
	if (idx < 0)
		return verbs_error_fmt(rc, verb,
				       "QP %u (%s) rejected the %s "
				       "WRs without saying which%s",
				       qp->qp_num, qp_state, kind, hint);
	return verbs_error_fmt(rc, verb,
			       "%s WR at index %zd (wr_id=%llu) was rejected "
			       "by QP %u (%s)%s",
			       kind, idx, (unsigned long long)wr_id, qp->qp_num,
			       qp_state, hint);
}

/* ------------------------------------------------------------------ */
/* QP.post_send(), QP.post_recv()                                      */
/* ------------------------------------------------------------------ */

const char qp_post_send__doc__[] = PyDoc_STR(
	"Post send work requests on the send queue.\n"
	"\n"
	"Takes one SendWR, a list or tuple of them (linked into one\n"
	"chain, posted in one call), or a SendWRChain. Allocates\n"
	"nothing and never blocks; the GIL is kept. A WR's SGEs, AH\n"
	"and MW are checked open first. Completions arrive on the\n"
	"send CQ (all of them with ``sq_sig_all``, else the SIGNALED\n"
	"ones).\n"
	"\n"
	"Wraps ``ibv_post_send`` (man page ibv_post_send(3)).\n"
	"\n"
	"Args:\n"
	"    wr_or_list: SendWR, list/tuple of SendWR, or SendWRChain\n"
	"        (positional only).\n"
	"\n"
	"Raises:\n"
	"    TypeError: not a SendWR, a list/tuple of them or a chain.\n"
	"    ValueError: an empty list, a WR twice or one that belongs\n"
	"        to a chain, a released chain, or on a UD QP a WR\n"
	"        without an AH or not a SEND/SEND_WITH_IMM.\n"
	"    VerbsError: EBADF if the QP, an SGE's MR, an AH or an MW\n"
	"        is closed; EBUSY while a QPEx ``wr_start()`` batch is\n"
	"        open; else the provider refused (``errno``, e.g. ENOMEM\n"
	"        for a full queue, EINVAL): the message names the index\n"
	"        and wr_id of the WR it rejected.");

PyObject *qp_post_send(PyObject *self, PyObject *arg)
{
	struct ibv_send_wr *head, *bad = NULL;
	Py_ssize_t idx;
	int rc;

	HANDLE_CHECK(self);
	/* A QPEx's open wr_start() batch holds the send queue's lock. */
	if (QPO(self)->in_batch && qp_check_idle(self, "post_send") < 0)
		return NULL;
	head = sendwr_link(arg);
	if (head == NULL)
		return NULL;
	/* Providers dereference wr.ud.ah unchecked on UD QPs. */
	if (QPO(self)->qp_type == IBV_QPT_UD && sendwr_check_ud(head) < 0) {
		sendwr_unlink(arg);
		return NULL;
	}
#ifdef IBVERBS_BENCH_RELEASE_GIL
	HANDLE_BUSY_ENTER(self);
	Py_BEGIN_ALLOW_THREADS
#endif
	rc = ibv_post_send(QPP(self), head, &bad);
#ifdef IBVERBS_BENCH_RELEASE_GIL
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(self);
#endif
	/* Memory windows: the holds of the BIND_MWs and LOCAL_INVs posted
	 * move (mem/mw.c); on a failure, those before the WR rejected
	 * (ibv_post_send(3)), none when the provider did not say which.
	 * Skipped while no window exists (mw_any). */
	if (rc == 0) {
		int windows = mw_any();

		if (windows)
			sendwr_posted(QPP(self)->pd, head, NULL);
		sendwr_unlink(arg);
		if (windows)
			mw_sweep_if_wanted();
		Py_RETURN_NONE;
	}
	if (bad != NULL && mw_any())
		sendwr_posted(QPP(self)->pd, head, bad);
	idx = sendwr_failed(arg, head, &bad);
	return post_error(rc, "ibv_post_send", "send", idx,
			  bad ? bad->wr_id : 0, QPP(self),
			  qp_state_name(QPP(self)->state));
}

const char qp_post_recv__doc__[] = PyDoc_STR(
	"Post receive work requests on the receive queue.\n"
	"\n"
	"Takes one RecvWR, a list or tuple of them (posted in one\n"
	"call), or a RecvWRChain; no allocation, GIL kept.\n"
	"\n"
	"Wraps ``ibv_post_recv`` (man page ibv_post_recv(3)).\n"
	"\n"
	"Args:\n"
	"    wr_or_list: RecvWR, list/tuple of RecvWR, or RecvWRChain\n"
	"        (positional only).\n"
	"\n"
	"Raises:\n"
	"    TypeError: not a RecvWR, a list/tuple of them or a chain.\n"
	"    ValueError: the QP receives through an SRQ (post to\n"
	"        ``qp.srq``), an empty list, a WR twice or one of a\n"
	"        chain, or a released chain.\n"
	"    VerbsError: EBADF if the QP or an SGE's MR is closed; else\n"
	"        the provider refused (``errno``, e.g. ENOMEM): the\n"
	"        message names the WR it rejected.");

PyObject *qp_post_recv(PyObject *self, PyObject *arg)
{
	struct ibv_recv_wr *head, *bad = NULL;
	Py_ssize_t idx;
	int rc;

	HANDLE_CHECK(self);
	if (QPO(self)->srq != NULL) {
		PyErr_SetString(PyExc_ValueError,
				"this QP receives through its SRQ: use "
				"qp.srq.post_recv()");
		return NULL;
	}
	head = recvwr_link(arg);
	if (head == NULL)
		return NULL;
#ifdef IBVERBS_BENCH_RELEASE_GIL
	HANDLE_BUSY_ENTER(self);
	Py_BEGIN_ALLOW_THREADS
#endif
	rc = ibv_post_recv(QPP(self), head, &bad);
#ifdef IBVERBS_BENCH_RELEASE_GIL
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(self);
#endif
	if (rc == 0) {
		recvwr_unlink(arg);
		Py_RETURN_NONE;
	}
	idx = recvwr_failed(arg, head, &bad);
	return post_error(rc, "ibv_post_recv", "receive", idx,
			  bad ? bad->wr_id : 0, QPP(self),
			  qp_state_name(QPP(self)->state));
}

/* ------------------------------------------------------------------ */
/* SRQ.post_recv()                                                     */
/* ------------------------------------------------------------------ */

const char srq_post_recv__doc__[] = PyDoc_STR(
	"Post receive work requests on the shared receive queue.\n"
	"\n"
	"Takes one RecvWR, a list or tuple of them (posted in one\n"
	"call), or a RecvWRChain; no allocation, GIL kept. Any QP\n"
	"created with this SRQ consumes them.\n"
	"\n"
	"Wraps ``ibv_post_srq_recv`` (man page ibv_post_srq_recv(3)).\n"
	"\n"
	"Args:\n"
	"    wr_or_list: RecvWR, list/tuple of RecvWR, or RecvWRChain\n"
	"        (positional only).\n"
	"\n"
	"Raises:\n"
	"    TypeError: not a RecvWR, a list/tuple of them or a chain.\n"
	"    ValueError: an empty list, a WR twice or one of a chain,\n"
	"        or a released chain.\n"
	"    VerbsError: EBADF if the SRQ or an SGE's MR is closed;\n"
	"        else the provider refused (``errno``, e.g. ENOMEM for a\n"
	"        full queue): the message names the WR it rejected.");

/* A shared or work receive queue's post: the inline verb of an SRQ or a
 * WQ, named verb, on the queue called what in errors. */
typedef int (*queue_post_fn)(void *queue, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad);

static inline PyObject *queue_post_recv(PyObject *self, PyObject *arg,
					queue_post_fn post, const char *verb,
					const char *what)
{
	struct ibv_recv_wr *head, *bad = NULL;
	Py_ssize_t idx;
	int rc;

	HANDLE_CHECK(self);
	head = recvwr_link(arg);
	if (head == NULL)
		return NULL;
	rc = post(HANDLE(self)->obj, head, &bad);
	if (rc == 0) {
		recvwr_unlink(arg);
		Py_RETURN_NONE;
	}
	idx = recvwr_failed(arg, head, &bad);
	return post_error(rc, verb, "receive", idx, bad ? bad->wr_id : 0, NULL,
			  what);
}

static int srq_post_fn(void *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	return ibv_post_srq_recv(srq, wr, bad);
}

/* post_recv(wr_or_list): METH_O, no allocation, GIL kept (never blocks). */
PyObject *srq_post_recv(PyObject *self, PyObject *arg)
{
	return queue_post_recv(self, arg, srq_post_fn, "ibv_post_srq_recv",
			       "SRQ");
}

/* ------------------------------------------------------------------ */
/* WQ.post_recv() (a hardware-only verb: no provider here has WQs)     */
/* ------------------------------------------------------------------ */

const char wq_post_recv__doc__[] = PyDoc_STR(
	"Post receive work requests on the WQ.\n"
	"\n"
	"Takes one RecvWR, a list or tuple of them (posted in one\n"
	"call), or a RecvWRChain, as ``QP.post_recv()``.\n"
	"\n"
	"Wraps ``ibv_post_wq_recv`` (man page ibv_post_wq_recv(3)).\n"
	"Never run on hardware here; checked against the recording\n"
	"double.\n"
	"\n"
	"Args:\n"
	"    wr_or_list: RecvWR, list/tuple of RecvWR, or RecvWRChain\n"
	"        (positional only).\n"
	"\n"
	"Raises:\n"
	"    TypeError: not a RecvWR, a list/tuple of them or a chain.\n"
	"    ValueError: an empty list, a WR twice or one of a chain.\n"
	"    VerbsError: EBADF if the WQ or an SGE's MR is closed;\n"
	"        else the provider refused (``errno``): the message\n"
	"        names the WR it rejected.");

static int wq_post_fn(void *wq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad)
{
	return ibv_post_wq_recv(wq, wr, bad);
}

PyObject *wq_post_recv(PyObject *self, PyObject *arg)
{
	return queue_post_recv(self, arg, wq_post_fn, "ibv_post_wq_recv", "WQ");
}
