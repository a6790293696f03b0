/*
 * wr_check.c - the per-WR checks before a post (post.c and wrchain.c run
 * them): a WR refuses to go out when a handle it names was closed since
 * it was built (VerbsError EBADF), since a closed MR has released its
 * memory and a stale lkey could name a newer region.  The handles' current
 * pointers (the AH, the MW and MR of a BIND_MW) are stored in the WR here.
 * sendwr_check_ud checks a linked list for a UD QP (post.c).
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include "wr/wr.h"

/* 0, or -1 with VerbsError(EBADF) when an SGE points into a closed MR. */
static int sg_list_check(PyObject *sg_list, Py_ssize_t wr_index)
{
	Py_ssize_t i, n = PyTuple_Size(sg_list);

	for (i = 0; i < n; i++) {
		PyObject *mr = ((SGEObject *)PyTuple_GetItem(sg_list, i))->mr;

		if (mr != NULL && HANDLE(mr)->obj == NULL) {
			verbs_error_fmt(EBADF, NULL,
					"work request %zd: sg_list[%zd] points "
					"into a closed MR",
					wr_index, i);
			return -1;
		}
	}
	return 0;
}

/* Per-WR checks before posting: MRs still open, AH still open (and its
 * current struct ibv_ah * in the WR), the MW and MR of a BIND_MW too. */
/* Before a post: the MW and the MR of a BIND_MW still open, their current
 * pointers in the WR.  0, or -1 with VerbsError(EBADF). */
static int sendwr_bind_ready(SendWRObject *w, Py_ssize_t i)
{
	void *mw = HANDLE(w->mw)->obj, *mr = HANDLE(w->bind_mr)->obj;

	if (mw == NULL || mr == NULL) {
		verbs_error_fmt(EBADF, NULL,
				"work request %zd: its %s is closed", i,
				mw == NULL ? "MW" : "bind_info's MR");
		return -1;
	}
	w->wr.bind_mw.mw = mw;
	w->wr.bind_mw.bind_info.mr = mr;
	return 0;
}

/* After a post on a QP of pd: the holds of the BIND_MWs and LOCAL_INVs
 * from head up to stop (excluded; NULL: all) move, as those WRs were
 * posted.  No Python code runs here (the WRs are still linked). */
void sendwr_posted(const struct ibv_pd *pd, struct ibv_send_wr *head,
		   const struct ibv_send_wr *stop)
{
	struct ibv_send_wr *w;

	for (w = head; w != NULL && w != stop; w = w->next) {
		if (w->opcode == IBV_WR_BIND_MW) {
			/* The native WR sits in its SendWR object. */
			char *at = (char *)w - offsetof(SendWRObject, wr);
			SendWRObject *o = (SendWRObject *)at;
			PyObject *mr =
				w->bind_mw.bind_info.length ? o->bind_mr : NULL;

			mw_hold_mr(o->mw, mr, w->bind_mw.rkey);
		} else if (w->opcode == IBV_WR_LOCAL_INV) {
			mw_invalidated(pd, w->invalidate_rkey);
		}
	}
}

int sendwr_ready(SendWRObject *w, Py_ssize_t i)
{
	if (w->ah != NULL) {
		void *ah = HANDLE(w->ah)->obj;

		if (ah == NULL) {
			verbs_error_fmt(EBADF, NULL,
					"work request %zd: its "
					"AH is closed",
					i);
			return -1;
		}
		w->wr.wr.ud.ah = ah;
	}
	if (w->wr.num_sge && sg_list_check(w->sg_list, i) < 0)
		return -1;
	if (w->mw != NULL && sendwr_bind_ready(w, i) < 0)
		return -1;
	return 0;
}

int recvwr_ready(RecvWRObject *w, Py_ssize_t i)
{
	if (w->wr.num_sge && sg_list_check(w->sg_list, i) < 0)
		return -1;
	return 0;
}

/* After linking, for a UD QP: providers dereference wr.ud.ah unchecked. */
int sendwr_check_ud(const struct ibv_send_wr *head)
{
	const struct ibv_send_wr *w;
	Py_ssize_t i = 0;

	for (w = head; w != NULL; w = w->next, i++) {
		if (w->opcode != IBV_WR_SEND &&
		    w->opcode != IBV_WR_SEND_WITH_IMM) {
			PyErr_Format(
				PyExc_ValueError,
				"work request %zd: a UD QP only posts SEND "
				"and SEND_WITH_IMM",
				i);
			return -1;
		}
		if (w->wr.ud.ah == NULL) {
			PyErr_Format(
				PyExc_ValueError,
				"work request %zd: a send on a UD QP needs "
				"an AH (SendWR(ah=..., remote_qpn=..., "
				"remote_qkey=...))",
				i);
			return -1;
		}
	}
	return 0;
}
