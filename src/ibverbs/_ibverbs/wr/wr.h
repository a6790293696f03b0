/*
 * wr/wr.h - what the files of wr/ (SGE, SendWR, RecvWR, the
 * chains, the data path) share, and what qp/ and mem/ use of them: the WR
 * objects' structs, the names the templates define, linking and posting.
 */
#ifndef IBVERBS_WR_WR_H
#define IBVERBS_WR_WR_H

#include "ibverbs.h"

#include <string.h>

/* SGE (sge.c) and work requests (wr.c).  A WR object holds the native
 * struct, ready to post with no per-call conversion; small SGE lists live
 * inside the object.  "keep" holds what the SGEs point into (SGE -> MR -> owner) and
 * the AH, so a WR keeps that memory alive while it exists. */
#define WR_INLINE_SGES 2

extern PyType_Spec SGE_spec; /* sge.c */
extern PyType_Spec SendWR_spec; /* wr.c */
extern PyType_Spec RecvWR_spec; /* wr.c */
extern PyType_Spec SendWRChain_spec; /* wrchain.c */
extern PyType_Spec RecvWRChain_spec; /* wrchain.c */

typedef struct {
	PyObject_HEAD
	struct ibv_sge sge;
	PyObject *mr; /* MRObject or NULL for a raw address */
	PyObject *owner; /* SGE.owner: owner= given, else NULL (mr) */
} SGEObject;

#define SGEP(self) (&((SGEObject *)(self))->sge)

typedef struct {
	PyObject_HEAD
	struct ibv_send_wr wr; /* wr.next is NULL except while posting,
				      or while in a SendWRChain */
	struct ibv_sge *sges; /* sge_inline or PyMem_Malloc'd */
	struct ibv_sge sge_inline[WR_INLINE_SGES];
	PyObject *sg_list; /* tuple of SGE objects */
	PyObject *ah; /* AHObject or NULL (UD) */
	PyObject *imm; /* imm_data as given, or NULL */
	PyObject *chain; /* borrowed: the SendWRChain holding it */
	PyObject *mw; /* MWObject of a BIND_MW, or NULL (mw.c) */
	PyObject *bind_mr; /* MRObject of bind_info, or NULL (mw.c) */
} SendWRObject;

typedef struct {
	PyObject_HEAD
	struct ibv_recv_wr wr;
	struct ibv_sge *sges;
	struct ibv_sge sge_inline[WR_INLINE_SGES];
	PyObject *sg_list;
	PyObject *chain; /* borrowed: the RecvWRChain holding it */
} RecvWRObject;

/*
 * SendWRChain / RecvWRChain (wrchain.c): WRs linked through wr.next once,
 * posted many times.  Each member's "chain" points back here; a member
 * cannot be posted on its own, nor join another chain, until release().
 * Between posts only the handles in "checked" (the distinct MRs and AHs
 * the members use) are looked at; "dirty" (set when a member's AH
 * changes, or a check failed) asks for every member to be checked again.
 */
typedef struct {
	PyObject_HEAD
	PyObject *items; /* tuple of the member WRs; NULL: released */
	void *head; /* &first member->wr */
	PyObject **checked; /* strong references (PyMem_Malloc'd) */
	Py_ssize_t n_checked, cap_checked;
	int dirty;
} WRChainObject;

/* The names the WR templates (post_link.h, wrchain_kind.h) define, from
 * the one prefix a kind header sets (wr_kind_send.h: WR_PREFIX sendwr):
 * WRFN(link) is sendwr_link, CHFN(head) sendwrchain_head.  Each template
 * function carries its expanded names in the comment above it. */
#define WR_PASTE(a, b, c) a##b##_##c
#define WR_XPASTE(a, b, c) WR_PASTE(a, b, c)
#define WRFN(name) WR_XPASTE(WR_PREFIX, , name)
#define CHFN(name) WR_XPASTE(WR_PREFIX, chain, name)

/* Per-WR checks before a post (wr_check.c): MRs, AH, MW still open; the AH's
 * struct ibv_ah * stored in the WR.  0, or -1 with VerbsError(EBADF). */
int sendwr_ready(SendWRObject *w, Py_ssize_t i);
int recvwr_ready(RecvWRObject *w, Py_ssize_t i);
/* The head of a chain ready to post (wrchain.c), or NULL with an error
 * set (released, a member's MR or AH closed). */
struct ibv_send_wr *sendwrchain_head(PyObject *chain);
struct ibv_recv_wr *recvwrchain_head(PyObject *chain);
/* A member of a chain cannot be posted alone or in a list: ValueError,
 * -1 (wrchain.c; used by post.c too). */
int wr_member_error(const char *kind, Py_ssize_t i);

/* post.c: link one WR, a list/tuple of WRs or a SendWRChain/RecvWRChain
 * (linked already) through wr.next for one post, without allocating.
 * Returns the head, or NULL with TypeError/ValueError set (wrong type,
 * empty list, an AH that was closed).  The caller holds "arg" for the
 * duration of the post and calls *_unlink afterwards. */
struct ibv_send_wr *sendwr_link(PyObject *arg);
void sendwr_unlink(PyObject *arg);
struct ibv_recv_wr *recvwr_link(PyObject *arg);
void recvwr_unlink(PyObject *arg);
/* After a failed post of head: sets *bad to head for a single WR the
 * provider did not name, unlinks arg and returns *bad's position in arg
 * (0 for a single WR, the index in a list or chain), or -1. */
Py_ssize_t sendwr_failed(PyObject *arg, struct ibv_send_wr *head,
			 struct ibv_send_wr **bad);
Py_ssize_t recvwr_failed(PyObject *arg, struct ibv_recv_wr *head,
			 struct ibv_recv_wr **bad);
/* For a UD QP, after sendwr_link: every WR must be a SEND(_WITH_IMM) with
 * an AH, since providers dereference wr.ud.ah unchecked.  0, or -1 with
 * ValueError naming the WR's index (the caller then unlinks); wr_check.c. */
int sendwr_check_ud(const struct ibv_send_wr *head);
/* After a post on a QP of pd (wr_check.c): the memory windows' holds of
 * the BIND_MWs and LOCAL_INVs from head up to stop (excluded; NULL: all)
 * move (mem/mw.c); runs no Python code. */
void sendwr_posted(const struct ibv_pd *pd, struct ibv_send_wr *head,
		   const struct ibv_send_wr *stop);
/* post.c: the data-path methods (METH_O; the WR objects hold the native
 * structs, linked in place; GIL kept, no allocation). */
PyObject *qp_post_send(PyObject *self, PyObject *arg);
PyObject *qp_post_recv(PyObject *self, PyObject *arg);
PyObject *srq_post_recv(PyObject *self, PyObject *arg);
PyObject *wq_post_recv(PyObject *self, PyObject *arg);
/* Their docstrings, beside them in post.c (the method tables of qp.c,
 * srq.c and wq/wq.c name them). */
extern const char qp_post_send__doc__[], qp_post_recv__doc__[],
	srq_post_recv__doc__[], wq_post_recv__doc__[];

/* ------------------------------------------------------------------ */
/* Batches from columns of integers (columns.c, batch.c, recv_batch.c) */
/* ------------------------------------------------------------------ */

extern PyType_Spec SendBatch_spec; /* batch.c */
extern PyType_Spec RecvBatch_spec; /* recv_batch.c */

/* The start of SendBatch's and RecvBatch's objects: n WRs of wr_type,
 * linked through next, and their n SGEs, one per WR (PyMem, owned); the
 * MR the local offsets index (held), or NULL (addresses and lkeys), with
 * its address, length and lkey as built (a re-registered MR moved
 * them). */
/* run_qp, run_posted, run_done: progress()'s run (wr/templates/
 * batch_run.h): the QP of the run under way (strong), or NULL; the rows
 * posted and the rows complete. */
#define BATCH_HEAD(wr_type)          \
	PyObject_HEAD                \
	wr_type *wrs;                \
	struct ibv_sge *sges;        \
	Py_ssize_t n;                \
	PyObject *mr;                \
	uint64_t mr_addr, mr_length; \
	uint32_t mr_lkey;            \
	PyObject *run_qp;            \
	Py_ssize_t run_posted, run_done;

typedef struct {
	BATCH_HEAD(void)
} BatchBase;

/* batch_base.c: allocate n WRs of wr_size bytes and their SGEs, and hold
 * mr (or NULL): 0, or -1 with MemoryError (the object frees what was
 * allocated). */
int batch_init(BatchBase *b, Py_ssize_t n, size_t wr_size, PyObject *mr);
/* Exactly one of mr and lkey given (lkey None: not given): 0, or -1 with
 * ValueError. */
int batch_mr_or_lkey(PyObject *mr, PyObject *lkey);
/* The batch's MR (if any) is open and as built: 0, or -1 with EBADF or
 * ValueError. */
int batch_mr_ready(BatchBase *b);
/* ValueError "<type> row i: what (v)": -1. */
int batch_row_error(const char *type, Py_ssize_t i, const char *what,
		    unsigned long long v);
/* Row i's SGE fields, checked: the length fits 32 bits and, has_mr,
 * lies inside the MR's mr_length bytes from offset local.  0, or -1
 * with the ValueError of batch_row_error. */
static inline int batch_sge_check(const char *type, Py_ssize_t i,
				  uint64_t local, uint64_t len, int has_mr,
				  uint64_t mr_length)
{
	if (len > UINT32_MAX)
		return batch_row_error(type, i, "length does not fit 32 bits",
				       len);
	if (has_mr && (local > mr_length || len > mr_length - local))
		return batch_row_error(type, i,
				       "offset + length is past the MR's "
				       "end: offset",
				       local);
	return 0;
}

/* progress()'s checks of qp, whose which ("send", "receive") CQ is cq:
 * a plain CQ polled here, no run of the batch (run_qp) on another QP;
 * *depth cut to the queue's cap, *depth and *piece >= 1, *piece cut to
 * *depth.  0, or -1 with ValueError. */
int batch_progress_check(PyObject *qp, PyObject *cq, const char *which,
			 PyObject *run_qp, unsigned int cap, Py_ssize_t *depth,
			 Py_ssize_t *piece);
/* progress(): the CompletionError of the failed completion wcs[k] of
 * the got one poll reaped, of row (-1: not a row in flight) of a batch of
 * type batch ("SendBatch"), its ``row``, ``posted`` (the rows the run
 * had posted) and ``after`` (WCs of wcs[k+1..got), reaped with it)
 * attributes set: NULL. */
PyObject *batch_run_failed(const char *batch, const struct ibv_wc *wcs, int k,
			   int got, Py_ssize_t row, Py_ssize_t posted);
/* The batch's rows fit a queue of room WRs (what: "send", "receive";
 * type: the batch's, for the error): 0, or -1 with ValueError. */
int batch_check_rows(BatchBase *b, unsigned int room, const char *what,
		     const char *type);
/* A post method's (queue, a=None, b=None): queue of type qtype or qtype2
 * (NULL: none; qname in the error), a and b ints >= 0 (None or left out:
 * da and db); kwlist their names and fmt the PyArg format.  0 or -1. */
int batch_queue_args(PyObject *args, PyObject *kw, char **kwlist,
		     const char *fmt, PyTypeObject *qtype, PyTypeObject *qtype2,
		     const char *qname, PyObject **queue, Py_ssize_t da,
		     Py_ssize_t *a, Py_ssize_t db, Py_ssize_t *b);
/* No progress() run of b is under way (run_qp NULL; a post or an update
 * would race it): 0, or -1 with ValueError naming how many of its rows
 * are complete. */
int batch_idle(const BatchBase *b);
/* progress()'s arguments (queue, depth=None, piece=None): queue a QP,
 * depth (None: PY_SSIZE_T_MAX, cut later) and piece (None: 16) ints >=
 * 0.  0 or -1. */
int batch_progress_args(PyObject *args, PyObject *kw, PyObject **qp,
			Py_ssize_t *depth, Py_ssize_t *piece);
/* The end of QP.post_send_batch / post_recv_batch: drops the batch built
 * for the call and res, what its post returned.  Returns None, or NULL
 * (the error set) when res is NULL: the post failed. */
PyObject *batch_none_or_error(PyObject *batch, PyObject *res);
/* The slots and getters that read only the head: tp_traverse (the type
 * and the MR), tp_dealloc (calls the type's tp_clear, frees the rows),
 * sq_length, and the ``mr`` getter. */
int batch_traverse(PyObject *self, visitproc visit, void *arg);
void batch_dealloc(PyObject *self);
Py_ssize_t batch_length(PyObject *self);
PyObject *batch_get_mr(PyObject *self, void *closure);

/* A column: n items of itemsize bytes at data (owner keeps that memory
 * while the column is held), or, n < 0, the int scalar for every row.
 * A read column's rows are also at u64, as 64-bit values: data itself
 * when its items are aligned 8-byte ones, else wide, a widened copy. */
typedef struct {
	const char *name;
	const void *data;
	Py_ssize_t n;
	int itemsize, is_signed;
	uint64_t scalar;
	PyObject *owner;
	const uint64_t *u64; /* NULL: a scalar, or a written column */
	uint64_t *wide; /* PyMem, or NULL */
} Column;

/* column_get's flags: an int stands for every row; the column is written
 * (CQ.poll_into: writable memory, read-only buffers refused). */
#define COLUMN_SCALAR_OK 0x1
#define COLUMN_WRITE 0x2

/* Read o as the column called name: 0, or -1 with TypeError (not a
 * buffer of integers), ValueError (not 1-D, strided, not integers, a
 * negative row of a read column, read-only for COLUMN_WRITE).  Release
 * with column_release (also after a failure: a no-op then). */
int column_get(PyObject *o, const char *name, int flags, Column *c);
void column_release(Column *c);
/* A column of n rows (or a scalar): 0; else ValueError naming it, -1. */
int column_check_len(const Column *c, Py_ssize_t n);
int64_t column_signed_at(const Column *c, Py_ssize_t i);

/* Row i of a read column as an unsigned value (none is negative). */
static inline uint64_t column_at(const Column *c, Py_ssize_t i)
{
	return c->u64 ? c->u64[i] : c->scalar;
}

/* A read column as a loop over its rows reads it, with no branch: row i
 * is p[i & mask] (mask 0: the scalar, p pointing into the Column, which
 * must stay where it is for the loop). */
typedef struct {
	const uint64_t *p;
	Py_ssize_t mask;
} ColumnRows;

static inline ColumnRows column_rows(const Column *c)
{
	ColumnRows r = { c->u64 ? c->u64 : &c->scalar, c->u64 ? -1 : 0 };

	return r;
}

static inline uint64_t rows_at(ColumnRows r, Py_ssize_t i)
{
	return r.p[i & r.mask];
}

/* Store v into row i of a written column, cut to its item size. */
static inline void column_put(const Column *c, Py_ssize_t i, uint64_t v)
{
	char *p = (char *)c->data + i * c->itemsize;

	switch (c->itemsize) {
	case 8:
		memcpy(p, &v, 8);
		break;
	case 4: {
		uint32_t w = (uint32_t)v;

		memcpy(p, &w, 4);
		break;
	}
	case 2: {
		uint16_t w = (uint16_t)v;

		memcpy(p, &w, 2);
		break;
	}
	default:
		*(uint8_t *)p = (uint8_t)v;
	}
}

/* post.c: the error of a failed post (also the batches'): says which WR
 * (index idx, wr_id; idx < 0: the provider did not say) and, for a QP qp
 * in state qp_state, the usual causes; qp NULL: qp_state names the queue
 * ("SRQ").  Returns NULL with VerbsError set. */
PyObject *post_error(int rc, const char *verb, const char *kind, Py_ssize_t idx,
		     uint64_t wr_id, const struct ibv_qp *qp,
		     const char *qp_state);

/* QP.post_send_batch / QP.post_recv_batch (batch.c, recv_batch.c), for
 * qp/qp.c's method table, with their docstrings. */
PyObject *qp_post_send_batch(PyObject *self, PyObject *args, PyObject *kw);
PyObject *qp_post_recv_batch(PyObject *self, PyObject *args, PyObject *kw);
extern const char qp_post_send_batch__doc__[], qp_post_recv_batch__doc__[];

#endif /* IBVERBS_WR_WR_H */
