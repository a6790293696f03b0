/*
 * batch.c - SendBatch: thousands of send work requests described by
 * columns of integers (one row per request), built in C into native
 * ibv_send_wr and ibv_sge arrays the batch owns, and posted in pieces;
 * and QP.post_send_batch, which builds one and posts it at once.
 *
 * A list of SendWR objects costs two Python objects per request to
 * build; a batch reads its columns (columns.c) once, checks every row
 * (bounds inside the MR, fields that fit their 32 bits) and fills the
 * structs.  The columns are copied into the structs: nothing of them is
 * held after the call.  update() rewrites the given columns only (the
 * next request's remote addresses), checking them all before it writes
 * any, so a refused update leaves the batch as it was.
 *
 * Lifetimes: the batch holds its MR (a strong reference); each post
 * checks that it is open (EBADF after close, never a post of a stale
 * lkey) and not re-registered since the build.  The post keeps the GIL,
 * as QP.post_send does.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include "qp/qp.h"
#include "cq/cq.h"
#include "wr/wr.h"

#include <arpa/inet.h>
#include <string.h>

typedef struct {
	BATCH_HEAD(struct ibv_send_wr)
	uint64_t remote_base;
	int opcode; /* of every row (the last may be its _WITH_IMM) */
	int imm; /* IMM_NONE, IMM_LAST or IMM_ALL */
	int signal_every; /* 0: only the last (and each post's last) */
	uint32_t inline_threshold; /* 0: none inline */
	uint64_t wr_id_base; /* row k's wr_id is wr_id_base + k ... */
	int wr_id_seq; /* ... when this is 1 (else a column gave them) */
	/* A UD batch: a tuple of the distinct AHs its rows point to (each
	 * checked open before a post), else NULL. */
	PyObject *ahs;
} SendBatchObject;

enum { IMM_NONE, IMM_LAST, IMM_ALL };

#define SB(o) ((SendBatchObject *)(o))

/* The columns of a build or an update; a column not given (name NULL)
 * keeps what the structs hold. */
struct send_cols {
	Column local, lengths, remote, rkey, lkey, wr_id, qpn, qkey;
};

static void send_cols_release(struct send_cols *c)
{
	column_release(&c->local);
	column_release(&c->lengths);
	column_release(&c->remote);
	column_release(&c->rkey);
	column_release(&c->lkey);
	column_release(&c->wr_id);
	column_release(&c->qpn);
	column_release(&c->qkey);
}

/* Read o (None or NULL: not given) into c. */
static int col_opt(PyObject *o, const char *name, int flags, Column *c)
{
	memset(c, 0, sizeof(*c));
	if (o == NULL || o == Py_None)
		return 0;
	return column_get(o, name, flags, c);
}

static int row_error(Py_ssize_t i, const char *what, unsigned long long v)
{
	return batch_row_error("SendBatch", i, what, v);
}

static int is_rdma(int opcode)
{
	return opcode == IBV_WR_RDMA_WRITE ||
	       opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
	       opcode == IBV_WR_RDMA_READ;
}

/* What the rows of a build or an update read of the batch, as locals:
 * the compiler then knows that no store into a WR changes them. */
struct send_shape {
	uint64_t base, length, remote_base, seq_mask;
	uint32_t inline_threshold;
	int has_mr, opcode;
	ColumnRows local, lengths, remote, rkey, lkey, wr_id, qpn, qkey;
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;
};

enum { ROW_CHECK, ROW_WRITE, ROW_BUILD, ROW_BUILD_RDMA, ROW_BUILD_UD };

/* In send_row: a 32-bit field of row i from column col: checked against max (what
 * names it in the error), stored into dst unless only checking. */
#define ROW_FIELD(has, col, max, what, dst)                   \
	do {                                                  \
		if (has) {                                    \
			v = rows_at(sh->col, i);              \
			if (v > (max))                        \
				return row_error(i, what, v); \
			if (mode != ROW_CHECK)                \
				dst = (uint32_t)v;            \
		}                                             \
	} while (0)

/*
 * Check row i of the given columns and (ROW_WRITE) store it, or
 * (ROW_BUILD) fill the whole WR and SGE but the signaling, which the
 * caller sets.  A column not given keeps the row's value (local offsets
 * and lengths are read back from the SGE, for the bounds of the other).
 * 0, or -1 with a ValueError naming the row.  Inlined with a constant
 * mode into each loop.
 */
static inline __attribute__((always_inline)) int
send_row(SendBatchObject *b, const struct send_shape *sh,
	 const struct send_cols *c, Py_ssize_t i, int mode)
{
	struct ibv_send_wr *wr = &sh->wrs[i];
	struct ibv_sge *sge = &sh->sges[i];
	/* A build reads every column (remote and rkey for RDMA only, the
	 * QPN and Q_Key for UD only), and these are constants once inlined;
	 * an update, those given. */
	int build = mode >= ROW_BUILD, rdma = mode == ROW_BUILD_RDMA;
	int ud = mode == ROW_BUILD_UD;
	int has_local = build || c->local.name,
	    has_len = build || c->lengths.name;
	int has_lkey = build || c->lkey.name, has_id = build || c->wr_id.name;
	int has_remote = rdma || (!build && c->remote.name);
	int has_rkey = rdma || (!build && c->rkey.name);
	int has_qpn = ud || (!build && c->qpn.name);
	int has_qkey = ud || (!build && c->qkey.name);
	uint64_t local, len, v;

	if (has_local || has_len) {
		local = has_local ? rows_at(sh->local, i) :
				    sge->addr - sh->base;
		len = has_len ? rows_at(sh->lengths, i) : sge->length;
		if (batch_sge_check("SendBatch", i, local, len, sh->has_mr,
				    sh->length) < 0)
			return -1;
		if (mode != ROW_CHECK) {
			sge->addr = local + sh->base;
			sge->length = (uint32_t)len;
			int inl = sh->inline_threshold &&
				  len <= sh->inline_threshold &&
				  sh->opcode != IBV_WR_RDMA_READ;

			if (build) /* calloc'd: no other flag yet */
				wr->send_flags = inl ? IBV_SEND_INLINE : 0;
			else if (inl)
				wr->send_flags |= IBV_SEND_INLINE;
			else
				wr->send_flags &= ~IBV_SEND_INLINE;
		}
	}
	ROW_FIELD(has_lkey, lkey, UINT32_MAX, "lkey does not fit 32 bits",
		  sge->lkey);
	if (has_remote) {
		v = rows_at(sh->remote, i);
		if (v + sh->remote_base < v)
			return row_error(i,
					 "remote_base + remote overflows 64 "
					 "bits: remote",
					 v);
		if (mode != ROW_CHECK)
			wr->wr.rdma.remote_addr = v + sh->remote_base;
	}
	ROW_FIELD(has_rkey, rkey, UINT32_MAX, "rkey does not fit 32 bits",
		  wr->wr.rdma.rkey);
	ROW_FIELD(has_qpn, qpn, QPN_MAX, "remote_qpn does not fit 24 bits",
		  wr->wr.ud.remote_qpn);
	ROW_FIELD(has_qkey, qkey, UINT32_MAX,
		  "remote_qkey does not fit 32 bits", wr->wr.ud.remote_qkey);
#undef ROW_FIELD
	/* An int wr_id is row k's wr_id + k: seq_mask is all ones then. */
	if (has_id && mode != ROW_CHECK)
		wr->wr_id =
			rows_at(sh->wr_id, i) + ((uint64_t)i & sh->seq_mask);
	if (build) {
		wr->next = wr + 1;
		wr->sg_list = sge;
		wr->num_sge = 1;
		wr->opcode = sh->opcode;
	}
	return 0;
}

/* Build every row in mode (a constant once inlined), with the
 * signaling. */
static inline __attribute__((always_inline)) int
send_build_rows(SendBatchObject *b, const struct send_shape *sh,
		const struct send_cols *c, int mode)
{
	Py_ssize_t i, n = b->n, every = b->signal_every, k = every;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		rc = send_row(b, sh, c, i, mode);
		if (every > 0 && --k == 0) {
			b->wrs[i].send_flags |= IBV_SEND_SIGNALED;
			k = every;
		}
	}
	return rc;
}

/* Every row: checked (ROW_CHECK), checked and stored (ROW_WRITE), or
 * built (ROW_BUILD: with the signaling, and the last row's next NULL;
 * RDMA and UD rows as the batch's opcode and AHs say). */
static int send_rows(SendBatchObject *b, const struct send_cols *cols, int mode)
{
	struct send_cols c = *cols;
	struct send_shape sh = {
		.base = b->mr ? b->mr_addr : 0,
		.length = b->mr_length,
		.remote_base = b->remote_base,
		.seq_mask = cols->wr_id.n < 0 ? ~0ULL : 0,
		.inline_threshold = b->inline_threshold,
		.has_mr = b->mr != NULL,
		.opcode = b->opcode,
		.local = column_rows(&c.local),
		.lengths = column_rows(&c.lengths),
		.remote = column_rows(&c.remote),
		.rkey = column_rows(&c.rkey),
		.lkey = column_rows(&c.lkey),
		.wr_id = column_rows(&c.wr_id),
		.qpn = column_rows(&c.qpn),
		.qkey = column_rows(&c.qkey),
		.wrs = b->wrs,
		.sges = b->sges,
	};
	Py_ssize_t i, n = b->n;
	int rc = 0;

	if (mode == ROW_CHECK) {
		for (i = 0; i < n && rc == 0; i++)
			rc = send_row(b, &sh, &c, i, ROW_CHECK);
		return rc;
	}
	if (mode == ROW_WRITE) {
		for (i = 0; i < n && rc == 0; i++)
			rc = send_row(b, &sh, &c, i, ROW_WRITE);
		return rc;
	}
	if (is_rdma(b->opcode))
		rc = send_build_rows(b, &sh, &c, ROW_BUILD_RDMA);
	else if (b->ahs != NULL)
		rc = send_build_rows(b, &sh, &c, ROW_BUILD_UD);
	else
		rc = send_build_rows(b, &sh, &c, ROW_BUILD);
	b->wrs[n - 1].next = NULL;
	b->wrs[n - 1].send_flags |= IBV_SEND_SIGNALED;
	return rc;
}

/* Every column given has b->n rows (or is one int). */
static int send_cols_check(const struct send_cols *c, Py_ssize_t n)
{
	const Column *all[] = { &c->local, &c->lengths, &c->remote, &c->rkey,
				&c->lkey,  &c->wr_id,	&c->qpn,    &c->qkey };
	size_t k;

	for (k = 0; k < sizeof(all) / sizeof(all[0]); k++) {
		if (all[k]->name != NULL && column_check_len(all[k], n) < 0)
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Building                                                            */
/* ------------------------------------------------------------------ */

struct send_batch_args {
	uint64_t mask; /* bit 0: imm_data given */
	PyObject *mr, *local, *lengths, *remote, *rkey, *lkey, *wr_id;
	PyObject *ah, *remote_qpn, *remote_qkey;
	uint64_t remote_base;
	int opcode, signal_every;
	uint32_t imm_data, inline_threshold;
};
#define SB_KW .flags = ARG_KWOPT
#define SB_KW_NONE .flags = ARG_KWOPT | ARG_NONE
static const ArgSpec send_batch_params[] = {
	ARG_HANDLE(struct send_batch_args, mr, MR, ARG_ANY_PARENT,
		   .flags = ARG_NONE),
	ARG_OBJECT(struct send_batch_args, local),
	ARG_OBJECT(struct send_batch_args, lengths),
	ARG_OBJECT(struct send_batch_args, remote, .flags = ARG_OPT | ARG_NONE),
	ARG_OBJECT(struct send_batch_args, rkey, .flags = ARG_OPT | ARG_NONE),
	ARG_ENUM(struct send_batch_args, opcode, WROpcode, IBV_WR_RDMA_WRITE,
		 IBV_WR_RDMA_READ, SB_KW, .def = IBV_WR_RDMA_WRITE),
	ARG_UINT(struct send_batch_args, remote_base, SB_KW),
	ARG_OBJECT(struct send_batch_args, lkey, SB_KW_NONE),
	ARG_OBJECT(struct send_batch_args, wr_id, SB_KW_NONE),
	ARG_INT(struct send_batch_args, signal_every, 0, INT32_MAX, SB_KW),
	ARG_UINT(struct send_batch_args, imm_data, SB_KW_NONE, .mask = 1),
	ARG_UINT(struct send_batch_args, inline_threshold, SB_KW),
	ARG_OBJECT(struct send_batch_args, ah, SB_KW_NONE),
	ARG_OBJECT(struct send_batch_args, remote_qpn, SB_KW_NONE),
	ARG_OBJECT(struct send_batch_args, remote_qkey, SB_KW_NONE),
	ARG_END
};
METHOD_ARGS_MASK(send_batch_new, "SendBatch.__new__", send_batch_params,
		 offsetof(struct send_batch_args, mask));
METHOD_ARGS_MASK(qp_post_send_batch, "QP.post_send_batch", send_batch_params,
		 offsetof(struct send_batch_args, mask));

/* The shared fields' rules, before any column is read. */
static int send_batch_check_args(const struct send_batch_args *a)
{
	if (is_rdma(a->opcode) && (a->remote == NULL || a->rkey == NULL)) {
		PyErr_SetString(PyExc_ValueError,
				"an RDMA WRITE or READ batch needs remote "
				"and rkey");
		return -1;
	}
	if (!is_rdma(a->opcode) && (a->remote != NULL || a->rkey != NULL)) {
		PyErr_SetString(PyExc_ValueError,
				"a SEND batch has no remote or rkey");
		return -1;
	}
	if (batch_mr_or_lkey(a->mr, a->lkey) < 0)
		return -1;
	if (a->ah == NULL &&
	    (a->remote_qpn != NULL || a->remote_qkey != NULL)) {
		PyErr_SetString(PyExc_ValueError,
				"remote_qpn and remote_qkey go with ah (a UD "
				"batch)");
		return -1;
	}
	if (a->ah != NULL && (is_rdma(a->opcode) || a->remote_qpn == NULL)) {
		PyErr_SetString(PyExc_ValueError,
				"a UD batch (ah given) is a SEND or "
				"SEND_WITH_IMM batch and needs remote_qpn");
		return -1;
	}
	if (a->opcode == IBV_WR_RDMA_READ && (a->mask & 1)) {
		PyErr_SetString(PyExc_ValueError,
				"an RDMA READ carries no imm_data");
		return -1;
	}
	return 0;
}

/* The AH of row i of ah (one AH, or a sequence of n), as a borrowed
 * reference to an open AH: NULL with TypeError or EBADF. */
static PyObject *ah_row(PyObject *ah, PyObject *seq, Py_ssize_t i)
{
	PyObject *o = seq ? PyTuple_GetItem(seq, i) : ah;

	if (!PyObject_TypeCheck(o, ST.AH_type)) {
		PyErr_Format(PyExc_TypeError,
			     "SendBatch row %zd: ah must be an AH, not %R", i,
			     (PyObject *)Py_TYPE(o));
		return NULL;
	}
	if (handle_check(HANDLE(o)) < 0)
		return NULL;
	return o;
}

/* A UD batch's AHs: each row's wr.ud.ah, and b->ahs the distinct AHs
 * (held for the batch's life).  0, or -1 with TypeError (not an AH, a
 * sequence of another length) or EBADF (a closed AH). */
static int send_batch_set_ahs(SendBatchObject *b, PyObject *ah)
{
	PyObject *seq = NULL, *set = NULL, *o, *prev = NULL;
	Py_ssize_t i;
	int rc = -1;

	if (!PyObject_TypeCheck(ah, ST.AH_type)) {
		if (!PySequence_Check(ah)) {
			PyErr_Format(PyExc_TypeError,
				     "ah must be an AH or a sequence of AHs, "
				     "one per row, not %R",
				     (PyObject *)Py_TYPE(ah));
			return -1;
		}
		seq = PySequence_Tuple(ah);
		if (seq == NULL)
			return -1;
		if (PyTuple_Size(seq) != b->n) {
			PyErr_Format(PyExc_ValueError,
				     "ah has %zd AHs for %zd rows",
				     PyTuple_Size(seq), b->n);
			goto out;
		}
	}
	set = PySet_New(NULL);
	if (set == NULL)
		goto out;
	for (i = 0; i < b->n; i++) {
		o = ah_row(ah, seq, i);
		if (o == NULL)
			goto out;
		if (o != prev && PySet_Add(set, o) < 0)
			goto out;
		prev = o;
		b->wrs[i].wr.ud.ah = (struct ibv_ah *)HANDLE(o)->obj;
	}
	b->ahs = PySequence_Tuple(set);
	rc = b->ahs ? 0 : -1;
out:
	Py_XDECREF(set);
	Py_XDECREF(seq);
	return rc;
}

/* The batch a->... describes, as a new SendBatchObject of type tp. */
static PyObject *send_batch_build(PyTypeObject *tp,
				  const struct send_batch_args *a)
{
	struct send_cols c;
	SendBatchObject *b = NULL;
	Py_ssize_t i, n;

	memset(&c, 0, sizeof(c));
	if (send_batch_check_args(a) < 0)
		return NULL;
	if (column_get(a->local, "local", 0, &c.local) < 0 ||
	    column_get(a->lengths, "lengths", COLUMN_SCALAR_OK, &c.lengths) <
		    0 ||
	    col_opt(a->remote, "remote", 0, &c.remote) < 0 ||
	    col_opt(a->rkey, "rkey", COLUMN_SCALAR_OK, &c.rkey) < 0 ||
	    col_opt(a->lkey, "lkey", COLUMN_SCALAR_OK, &c.lkey) < 0 ||
	    col_opt(a->wr_id, "wr_id", COLUMN_SCALAR_OK, &c.wr_id) < 0 ||
	    col_opt(a->remote_qpn, "remote_qpn", COLUMN_SCALAR_OK, &c.qpn) <
		    0 ||
	    col_opt(a->remote_qkey, "remote_qkey", COLUMN_SCALAR_OK, &c.qkey) <
		    0)
		goto fail;
	if (a->ah != NULL && c.qkey.name == NULL) {
		c.qkey.name = "remote_qkey"; /* 0 for every row */
		c.qkey.n = -1;
	}
	if (c.wr_id.name == NULL) {
		c.wr_id.name = "wr_id"; /* wr_id=0: row k's is k */
		c.wr_id.n = -1;
	}
	n = c.local.n;
	if (n == 0) {
		PyErr_SetString(PyExc_ValueError, "local has no rows");
		goto fail;
	}
	if (send_cols_check(&c, n) < 0)
		goto fail;
	b = (SendBatchObject *)PyType_GenericAlloc(tp, 0);
	if (b == NULL)
		goto fail;
	if (batch_init((BatchBase *)b, n, sizeof(*b->wrs), a->mr) < 0)
		goto fail;
	b->remote_base = a->remote_base;
	b->opcode = a->opcode;
	b->signal_every = a->signal_every;
	b->inline_threshold = a->inline_threshold;
	b->wr_id_seq = c.wr_id.n < 0;
	b->wr_id_base = c.wr_id.scalar;
	if (a->ah != NULL && send_batch_set_ahs(b, a->ah) < 0)
		goto fail;
	if (c.lkey.name == NULL) { /* the MR's, one for all */
		c.lkey.name = "lkey";
		c.lkey.n = -1;
		c.lkey.scalar = b->mr_lkey;
	}
	if (send_rows(b, &c, ROW_BUILD) < 0)
		goto fail;
	if (a->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
	    a->opcode == IBV_WR_SEND_WITH_IMM) {
		b->imm = IMM_ALL;
		for (i = 0; i < n; i++)
			b->wrs[i].imm_data = htonl(a->imm_data);
	} else if (a->mask & 1) {
		b->imm = IMM_LAST;
		b->wrs[n - 1].opcode = a->opcode == IBV_WR_SEND ?
					       IBV_WR_SEND_WITH_IMM :
					       IBV_WR_RDMA_WRITE_WITH_IMM;
		b->wrs[n - 1].imm_data = htonl(a->imm_data);
	}
	send_cols_release(&c);
	return (PyObject *)b;
fail:
	send_cols_release(&c);
	Py_XDECREF(b);
	return NULL;
}

static PyObject *send_batch_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	struct send_batch_args a;

	if (args_parse(&send_batch_new_args, NULL, args, kw, &a) < 0)
		return NULL;
	return send_batch_build(tp, &a);
}

/* ------------------------------------------------------------------ */
/* Posting                                                             */
/* ------------------------------------------------------------------ */

/* The batch's MR and AHs are open and as built; qp can take a batch (a
 * UD batch a UD QP, another batch any other).  0 or -1. */
static int send_batch_ready(SendBatchObject *b, PyObject *qp)
{
	Py_ssize_t i, n;

	if (QPO(qp)->in_batch && qp_check_idle(qp, "SendBatch.post") < 0)
		return -1;
	if ((QPO(qp)->qp_type == IBV_QPT_UD) != (b->ahs != NULL)) {
		PyErr_SetString(PyExc_ValueError,
				b->ahs ? "a UD batch (built with ah) posts to "
					 "a UD QP only" :
					 "a UD QP needs an AH per request: "
					 "build the SendBatch with ah=");
		return -1;
	}
	/* Providers dereference wr.ud.ah unchecked. */
	n = b->ahs ? PyTuple_Size(b->ahs) : 0;
	for (i = 0; i < n; i++) {
		if (handle_check(HANDLE(PyTuple_GetItem(b->ahs, i))) < 0)
			return -1;
	}
	return batch_mr_ready((BatchBase *)b);
}

/* The send_ops_flags bit and the provider's builder of opcode. */
static int wr_op_of(const struct ibv_qp_ex *x, int opcode, uint64_t *bit)
{
	switch (opcode) {
	case IBV_WR_RDMA_WRITE:
		*bit = IBV_QP_EX_WITH_RDMA_WRITE;
		return x->wr_rdma_write != NULL;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*bit = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
		return x->wr_rdma_write_imm != NULL;
	case IBV_WR_SEND:
		*bit = IBV_QP_EX_WITH_SEND;
		return x->wr_send != NULL;
	case IBV_WR_SEND_WITH_IMM:
		*bit = IBV_QP_EX_WITH_SEND_WITH_IMM;
		return x->wr_send_imm != NULL;
	default: /* IBV_WR_RDMA_READ */
		*bit = IBV_QP_EX_WITH_RDMA_READ;
		return x->wr_rdma_read != NULL;
	}
}

/* The wr_* path: *out is qp's struct ibv_qp_ex when qp is a QPEx whose
 * send_ops_flags and provider have every builder and setter the rows
 * use, else NULL (ibv_post_send posts them).  0, or -1 with VerbsError
 * when ibv_qp_to_qp_ex fails. */
static int send_batch_qpx(SendBatchObject *b, PyObject *qp,
			  struct ibv_qp_ex **out)
{
	struct ibv_qp_ex *x;
	unsigned long long flags;
	uint64_t bit, bit2 = 0;
	PyObject *o;
	int ok;

	*out = NULL;
	if (!PyObject_TypeCheck(qp, ST.QPEx_type))
		return 0;
	/* Read as Python does: a C call into qp/qp_ex.c would close a
	 * cycle between the type files (qp.c's table holds this file's
	 * QP.post_send_batch, qp_ex.c calls qp.c). */
	o = PyObject_GetAttrString(qp, "send_ops_flags");
	if (o == NULL)
		return -1;
	flags = PyLong_AsUnsignedLongLong(o);
	Py_DECREF(o);
	if (flags == (unsigned long long)-1 && PyErr_Occurred())
		return -1;
	ok = flags != 0;
	if (ok) {
		x = IBV.qp_to_qp_ex(QPP(qp));
		if (x == NULL) { /* NULL sets no errno */
			verbs_error_fmt(EOPNOTSUPP, "ibv_qp_to_qp_ex",
					"the provider gives this QPEx no "
					"struct ibv_qp_ex");
			return -1;
		}
		ok = x->wr_start && x->wr_complete && x->wr_set_sge &&
		     wr_op_of(x, b->opcode, &bit);
	}
	if (ok && b->imm == IMM_LAST) /* the last row's _WITH_IMM */
		ok = wr_op_of(x, b->wrs[b->n - 1].opcode, &bit2);
	if (ok && b->ahs != NULL && x->wr_set_ud_addr == NULL)
		ok = 0;
	if (ok && b->inline_threshold && x->wr_set_inline_data == NULL)
		ok = 0;
	if (ok && (flags & (bit | bit2)) == (bit | bit2))
		*out = x;
	return 0;
}

/* Rows [start, end) by the wr_* builders between ibv_wr_start and
 * ibv_wr_complete, the last signaled.  ibv_wr_complete's result; on a
 * failure no row is posted (*bad: the first). */
static int send_wr_range(SendBatchObject *b, struct ibv_qp_ex *x,
			 Py_ssize_t start, Py_ssize_t end,
			 struct ibv_send_wr **bad)
{
	Py_ssize_t i;
	int rc;

	ibv_wr_start(x);
	for (i = start; i < end; i++) {
		const struct ibv_send_wr *wr = &b->wrs[i];
		const struct ibv_sge *sge = wr->sg_list;

		x->wr_id = wr->wr_id;
		/* INLINE kept: rxe reads the inline data only of a WR whose
		 * wr_flags have it (mlx5 goes by the setter alone). */
		x->wr_flags = wr->send_flags |
			      (i == end - 1 ? IBV_SEND_SIGNALED : 0);
		switch (wr->opcode) {
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(x, wr->wr.rdma.rkey,
					  wr->wr.rdma.remote_addr);
			break;
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			ibv_wr_rdma_write_imm(x, wr->wr.rdma.rkey,
					      wr->wr.rdma.remote_addr,
					      wr->imm_data);
			break;
		case IBV_WR_SEND:
			ibv_wr_send(x);
			break;
		case IBV_WR_SEND_WITH_IMM:
			ibv_wr_send_imm(x, wr->imm_data);
			break;
		default:
			ibv_wr_rdma_read(x, wr->wr.rdma.rkey,
					 wr->wr.rdma.remote_addr);
		}
		if (b->ahs != NULL)
			ibv_wr_set_ud_addr(x, wr->wr.ud.ah,
					   wr->wr.ud.remote_qpn,
					   wr->wr.ud.remote_qkey);
		if (wr->send_flags & IBV_SEND_INLINE)
			ibv_wr_set_inline_data(x, (void *)(uintptr_t)sge->addr,
					       sge->length);
		else
			ibv_wr_set_sge(x, sge->lkey, sge->addr, sge->length);
	}
	rc = ibv_wr_complete(x);
	if (rc != 0)
		*bad = &b->wrs[start];
	return rc;
}

/* Post rows [start, end) as one ibv_post_send (qpx NULL) or one wr_*
 * batch of qpx; the last is signaled for this post (and restored
 * after).  The verb's result. */
static int send_post_range(SendBatchObject *b, struct ibv_qp *qp,
			   struct ibv_qp_ex *qpx, Py_ssize_t start,
			   Py_ssize_t end, struct ibv_send_wr **bad)
{
	struct ibv_send_wr *last = &b->wrs[end - 1], *next = last->next;
	unsigned int flags = last->send_flags;
	int rc;

	if (qpx != NULL)
		return send_wr_range(b, qpx, start, end, bad);
	last->next = NULL;
	last->send_flags |= IBV_SEND_SIGNALED;
	rc = ibv_post_send(qp, &b->wrs[start], bad);
	last->next = next;
	last->send_flags = flags;
	return rc;
}

/* The error of a refused post of the batch's rows to qp (by qpx's
 * ibv_wr_complete, or ibv_post_send): NULL. */
static PyObject *send_post_error(SendBatchObject *b, PyObject *qp,
				 struct ibv_qp_ex *qpx, int rc,
				 struct ibv_send_wr *bad)
{
	return post_error(rc, qpx ? "ibv_wr_complete" : "ibv_post_send", "send",
			  bad ? bad - b->wrs : -1, bad ? bad->wr_id : 0,
			  QPP(qp), qp_state_name(QPP(qp)->state));
}

/* Post rows [start, end): the number posted, or NULL. */
static PyObject *send_batch_post_rows(SendBatchObject *b, PyObject *qp,
				      Py_ssize_t start, Py_ssize_t end)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_qp_ex *qpx;
	int rc;

	if (send_batch_qpx(b, qp, &qpx) < 0)
		return NULL;
	OBJ_LOCKED_BEGIN(b);
	rc = send_post_range(b, QPP(qp), qpx, start, end, &bad);
	OBJ_LOCKED_END();
	if (rc == 0)
		return PyLong_FromSsize_t(end - start);
	return send_post_error(b, qp, qpx, rc, bad);
}

PyDoc_STRVAR(send_batch_post__doc__,
	     "Post rows ``start`` onwards, as one ``ibv_post_send`` call.\n"
	     "\n"
	     "On a QPEx whose ``send_ops_flags`` (and provider) have the\n"
	     "batch's operations, the rows go by the ``ibv_wr_*`` builders\n"
	     "between ``ibv_wr_start`` and ``ibv_wr_complete`` instead.\n"
	     "Posts ``count`` rows (all the rest when None), never more than\n"
	     "the send queue holds (the QP's ``cap.max_send_wr``) and never\n"
	     "past the last row; the last row posted is signaled. Checks\n"
	     "that the batch's MR is open; keeps the GIL.\n"
	     "\n"
	     "Wraps ``ibv_post_send`` or the ``ibv_wr_*`` calls (man pages\n"
	     "ibv_post_send(3), ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    queue: the QP: a UD one for a batch built with ``ah``,\n"
	     "        else RC, UC or XRC.\n"
	     "    start: the first row to post.\n"
	     "    count: the most rows to post, or None for the rest.\n"
	     "\n"
	     "Returns:\n"
	     "    How many rows were posted (0 when start is the end).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: queue is not a QP, or start/count not ints.\n"
	     "    ValueError: start past the end, a negative count, a QP of\n"
	     "        the wrong type (UD without ``ah`` or the reverse), or\n"
	     "        the MR was re-registered since the build.\n"
	     "    VerbsError: EBADF if the QP, the MR or an AH is closed;\n"
	     "        EBUSY in a QPEx ``wr_start()`` batch; EOPNOTSUPP when a\n"
	     "        QPEx has no ``struct ibv_qp_ex``; else the provider\n"
	     "        refused (the message names the row): the rows before\n"
	     "        it were posted (none, by a refused\n"
	     "        ``ibv_wr_complete``).");

static PyObject *send_batch_post(PyObject *self, PyObject *args, PyObject *kw)
{
	SendBatchObject *b = SB(self);
	Py_ssize_t start = 0, count = 0, end, room;
	PyObject *qp;

	static char *kwlist[] = { "queue", "start", "count", NULL };

	if (batch_queue_args(args, kw, kwlist, "O|OO:post", ST.QP_type, NULL,
			     "QP", &qp, 0, &start, PY_SSIZE_T_MAX, &count) < 0)
		return NULL;
	HANDLE_CHECK(qp);
	if (start > b->n) {
		PyErr_Format(PyExc_ValueError,
			     "start %zd is past the batch's %zd rows", start,
			     b->n);
		return NULL;
	}
	if (batch_idle((BatchBase *)b) < 0 || send_batch_ready(b, qp) < 0)
		return NULL;
	room = QPO(qp)->cap.max_send_wr ? QPO(qp)->cap.max_send_wr : 1;
	end = start + (count < room ? count : room);
	if (end > b->n)
		end = b->n;
	if (end == start)
		return PyLong_FromLong(0);
	return send_batch_post_rows(b, qp, start, end);
}

/* ------------------------------------------------------------------ */
/* progress(): posting and reaping in one C loop                       */
/* ------------------------------------------------------------------ */

/* The row in flight whose wr_id this is, or -1. */
static Py_ssize_t send_run_row(const SendBatchObject *b, uint64_t wr_id)
{
	Py_ssize_t i;

	if (b->wr_id_seq) {
		uint64_t r = wr_id - b->wr_id_base;

		return r >= (uint64_t)b->run_done &&
				       r < (uint64_t)b->run_posted ?
			       (Py_ssize_t)r :
			       -1;
	}
	for (i = b->run_done; i < b->run_posted; i++) {
		if (b->wrs[i].wr_id == wr_id)
			return i;
	}
	return -1;
}

#define RUN_FN(name) send_run_##name
#define RUN_OBJ SendBatchObject
#define RUN_NATIVE struct ibv_send_wr
#define RUN_CTX struct ibv_qp_ex *
#define RUN_POST(b, qp, qpx, start, end, bad) \
	send_post_range(b, QPP(qp), qpx, start, end, bad)
#define RUN_POST_ERROR send_post_error
#define RUN_ROW send_run_row
#define RUN_NAME "SendBatch"
#define RUN_WHICH "send"
#define RUN_ROW_WHAT "a row in flight"
#include "wr/templates/batch_run.h"

PyDoc_STRVAR(
	send_batch_progress__doc__,
	"Post and reap the whole batch in pieces, in one C loop.\n"
	"\n"
	"Starts a run (or goes on with the one under way): posts pieces of\n"
	"``piece`` rows (the last of each signaled) while at most ``depth``\n"
	"rows are in flight, and reaps the QP's send CQ into the batch's\n"
	"count of complete rows (a signaled row's completion completes the\n"
	"rows before it), until a poll finds nothing or every row is\n"
	"complete; then returns. Call it again (sleeping, or after a CQ\n"
	"event) until it returns ``len(batch)``, which ends the run. While a\n"
	"run is under way the send CQ must carry only this batch's\n"
	"completions, and ``post()``/``update()`` are refused. Keeps the\n"
	"GIL, as ``QP.post_send`` does. A QPEx posts as in ``post()``.\n"
	"\n"
	"Wraps ``ibv_post_send`` (or the ``ibv_wr_*`` calls) and\n"
	"``ibv_poll_cq`` (man pages ibv_post_send(3), ibv_wr_post(3),\n"
	"ibv_poll_cq(3)).\n"
	"\n"
	"Args:\n"
	"    queue: the QP (UD for a batch built with ``ah``, else RC,\n"
	"        UC or XRC), over a plain CQ.\n"
	"    depth: the most rows in flight (None: ``cap.max_send_wr``;\n"
	"        more is cut to it).\n"
	"    piece: rows per ``ibv_post_send`` (more than depth is cut\n"
	"        to it).\n"
	"\n"
	"Returns:\n"
	"    How many rows are complete; ``len(batch)`` ends the run.\n"
	"\n"
	"Raises:\n"
	"    TypeError: queue is not a QP, or depth/piece not ints.\n"
	"    ValueError: depth or piece < 1, a QP of the wrong type, a CQEx\n"
	"        or a polled-elsewhere send CQ, another QP's run under\n"
	"        way, the MR re-registered, or a completion that is not a\n"
	"        row in flight.\n" RUN_DOC_COMPLETION_ERROR
	"    VerbsError: EBADF if the QP, the MR or an AH is closed; EBUSY\n"
	"        in a QPEx ``wr_start()`` batch; EOPNOTSUPP when a QPEx has\n"
	"        no ``struct ibv_qp_ex``; else the provider refused\n"
	"        a post (the message names the row; raised after the\n"
	"        reap that follows it, so that a failed completion raises\n"
	"        first) or ``ibv_poll_cq`` failed.\n"
	"        The run stays under way (call again to go on, or\n"
	"        ``reset()``); a CompletionError or ValueError ends it, the\n"
	"        completions of rows still in flight left in the CQ.");

static PyObject *send_batch_progress(PyObject *self, PyObject *args,
				     PyObject *kw)
{
	SendBatchObject *b = SB(self);
	Py_ssize_t depth, piece;
	struct ibv_qp_ex *qpx;
	PyObject *qp, *cq;

	if (batch_progress_args(args, kw, &qp, &depth, &piece) < 0)
		return NULL;
	HANDLE_CHECK(qp);
	if (send_batch_ready(b, qp) < 0)
		return NULL;
	cq = QPO(qp)->send_cq;
	if (batch_progress_check(qp, cq, "send", b->run_qp,
				 QPO(qp)->cap.max_send_wr, &depth, &piece) < 0)
		return NULL;
	if (send_batch_qpx(b, qp, &qpx) < 0)
		return NULL;
	return send_run_go(b, qp, qpx, cq, depth, piece);
}

PyDoc_STRVAR(send_run_reset__doc__,
	     "End the progress() run under way without waiting for it.\n"
	     "\n"
	     "The rows in flight stay posted: their completions arrive in\n"
	     "the send CQ as usual. Nothing happens when no run is under\n"
	     "way.");

/* ------------------------------------------------------------------ */
/* Replacing columns                                                   */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(send_batch_update__doc__,
	     "Replace some columns, keeping the rest of the built requests.\n"
	     "\n"
	     "Only the columns given are read and written: the next request's\n"
	     "remote addresses cost one pass over one column. Every row is\n"
	     "checked before any is written, so a refused update leaves the\n"
	     "batch as it was.\n"
	     "\n"
	     "Args:\n"
	     "    local: offsets into the MR (or addresses, built with lkey).\n"
	     "    lengths: bytes per request, or one int for all.\n"
	     "    remote: remote addresses, or offsets from remote_base.\n"
	     "    rkey: one remote key for all, or a column.\n"
	     "    lkey: the local keys (a batch built without an MR).\n"
	     "    wr_id: the wr_ids: a column, or an int for ``wr_id + row``.\n"
	     "    imm_data: the immediate data (a batch built with one).\n"
	     "    remote_qpn: the destination QPNs, one or a column (UD).\n"
	     "    remote_qkey: the Q_Keys, one or a column (UD).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: a column is not an array of integers or an int.\n"
	     "    ValueError: a column's rows differ from the batch's, a row\n"
	     "        out of bounds (named), a column the batch does not have\n"
	     "        (remote of a SEND batch, lkey with an MR, remote_qpn of\n"
	     "        a batch without ah), or imm_data for a batch built\n"
	     "        without one.");

#define SEND_UPDATE_ARGS(X, S)                                \
	X(S, OBJECT, PyObject *, local, SB_KW_NONE)           \
	X(S, OBJECT, PyObject *, lengths, SB_KW_NONE)         \
	X(S, OBJECT, PyObject *, remote, SB_KW_NONE)          \
	X(S, OBJECT, PyObject *, rkey, SB_KW_NONE)            \
	X(S, OBJECT, PyObject *, lkey, SB_KW_NONE)            \
	X(S, OBJECT, PyObject *, wr_id, SB_KW_NONE)           \
	X(S, UINT, uint32_t, imm_data, SB_KW_NONE, .mask = 1) \
	X(S, OBJECT, PyObject *, remote_qpn, SB_KW_NONE)      \
	X(S, OBJECT, PyObject *, remote_qkey, SB_KW_NONE)
ARGS_DECLARE_MASK(send_update, SEND_UPDATE_ARGS);
METHOD_ARGS_MASK(send_batch_update, "SendBatch.update", send_update_params,
		 offsetof(struct send_update_args, mask));

static int send_update_check(SendBatchObject *b,
			     const struct send_update_args *a)
{
	const char *bad = NULL;

	if (!is_rdma(b->opcode) && (a->remote != NULL || a->rkey != NULL))
		bad = "a SEND batch has no remote or rkey";
	else if (b->mr != NULL && a->lkey != NULL)
		bad = "a batch built with an MR takes no lkey";
	else if (b->imm == IMM_NONE && (a->mask & 1))
		bad = "the batch was built without imm_data";
	else if (b->ahs == NULL &&
		 (a->remote_qpn != NULL || a->remote_qkey != NULL))
		bad = "remote_qpn and remote_qkey go with a UD batch (built "
		      "with ah)";
	if (bad == NULL)
		return 0;
	PyErr_SetString(PyExc_ValueError, bad);
	return -1;
}

static PyObject *send_batch_update(PyObject *self, PyObject *args, PyObject *kw)
{
	SendBatchObject *b = SB(self);
	struct send_update_args a;
	struct send_cols c;
	int rc = -1;

	memset(&c, 0, sizeof(c));
	if (args_parse(&send_batch_update_args, NULL, args, kw, &a) < 0 ||
	    send_update_check(b, &a) < 0 || batch_idle((BatchBase *)b) < 0)
		return NULL;
	if (col_opt(a.local, "local", 0, &c.local) < 0 ||
	    col_opt(a.lengths, "lengths", COLUMN_SCALAR_OK, &c.lengths) < 0 ||
	    col_opt(a.remote, "remote", 0, &c.remote) < 0 ||
	    col_opt(a.rkey, "rkey", COLUMN_SCALAR_OK, &c.rkey) < 0 ||
	    col_opt(a.lkey, "lkey", COLUMN_SCALAR_OK, &c.lkey) < 0 ||
	    col_opt(a.wr_id, "wr_id", COLUMN_SCALAR_OK, &c.wr_id) < 0 ||
	    col_opt(a.remote_qpn, "remote_qpn", COLUMN_SCALAR_OK, &c.qpn) < 0 ||
	    col_opt(a.remote_qkey, "remote_qkey", COLUMN_SCALAR_OK, &c.qkey) <
		    0 ||
	    send_cols_check(&c, b->n) < 0)
		goto out;
	OBJ_LOCKED_BEGIN(b);
	rc = send_rows(b, &c, ROW_CHECK);
	if (rc == 0) {
		send_rows(b, &c, ROW_WRITE);
		if (c.wr_id.name != NULL) {
			b->wr_id_seq = c.wr_id.n < 0;
			b->wr_id_base = c.wr_id.scalar;
		}
		if (a.mask & 1) {
			Py_ssize_t i = b->imm == IMM_ALL ? 0 : b->n - 1;

			for (; i < b->n; i++)
				b->wrs[i].imm_data = htonl(a.imm_data);
		}
	}
	OBJ_LOCKED_END();
out:
	send_cols_release(&c);
	if (rc < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* QP.post_send_batch                                                  */
/* ------------------------------------------------------------------ */

/* The Args lines of QP.post_send_batch and SendBatch, and the first of
 * their Raises. */
#define SB_DOC_ARGS                                                          \
	"    mr: the MR ``local`` indexes, or None (``lkey`` given).\n"      \
	"    local: offsets into the MR (or addresses).\n"                   \
	"    lengths: bytes per request, or one int for all.\n"              \
	"    remote: remote addresses, or offsets from remote_base\n"        \
	"        (RDMA WRITE and READ; None for SEND).\n"                    \
	"    rkey: one remote key for all, or a column.\n"                   \
	"    opcode: RDMA_WRITE (the default), RDMA_WRITE_WITH_IMM, SEND,\n" \
	"        SEND_WITH_IMM or RDMA_READ, for every row.\n"               \
	"    remote_base: added to every remote value.\n"                    \
	"    lkey: the local keys, one or a column, where mr is None.\n"     \
	"    wr_id: an int (row k gets ``wr_id + k``) or a column.\n"        \
	"    signal_every: signal every Nth row (0: only the last).\n"       \
	"    imm_data: the last row's immediate data (it becomes the\n"      \
	"        _WITH_IMM opcode); every row's with a _WITH_IMM opcode.\n"  \
	"    inline_threshold: rows of at most this many bytes are sent\n"   \
	"        inline (0: none).\n"                                        \
	"    ah: a UD batch's address handle: one AH for every row, or a\n"  \
	"        sequence of one per row (held while the batch lives);\n"    \
	"        SEND or SEND_WITH_IMM only.\n"                              \
	"    remote_qpn: the destination QPN of a UD batch, one or a\n"      \
	"        column.\n"                                                  \
	"    remote_qkey: its Q_Key, one (0 when left out) or a column.\n"   \
	"\n"                                                                 \
	"Raises:\n"                                                          \
	"    TypeError: a column is not an array of integers or an int,\n"   \
	"        or ah not an AH or a sequence of AHs.\n"                    \
	"    ValueError: a bad row (named: past the MR's end, a field over\n"

const char qp_post_send_batch__doc__[] = PyDoc_STR(
	"Build the send requests the columns describe, and post them.\n"
	"\n"
	"One ``ibv_post_send`` call of every row: at most the send queue's\n"
	"``cap.max_send_wr`` rows (a SendBatch posts more, in pieces).\n"
	"The arguments are SendBatch's; nothing is kept after the call.\n"
	"\n"
	"Wraps ``ibv_post_send`` (man page ibv_post_send(3)).\n"
	"\n"
	"Args:\n" SB_DOC_ARGS
	"        32 bits), columns of different lengths, more rows than\n"
	"        the send queue holds, a QP of the wrong type (UD without\n"
	"        ``ah`` or the reverse), ah without remote_qpn.\n"
	"    VerbsError: EBADF if the QP, MR or an AH is closed;\n"
	"        EOPNOTSUPP when a QPEx has no ``struct ibv_qp_ex``; else\n"
	"        the provider refused (the message names the row).");

PyObject *qp_post_send_batch(PyObject *self, PyObject *args, PyObject *kw)
{
	struct send_batch_args a;
	SendBatchObject *b;
	PyObject *res = NULL;

	HANDLE_CHECK(self);
	if (args_parse(&qp_post_send_batch_args, NULL, args, kw, &a) < 0)
		return NULL;
	b = (SendBatchObject *)send_batch_build(ST.SendBatch_type, &a);
	if (b == NULL)
		return NULL;
	if (batch_check_rows((BatchBase *)b, QPO(self)->cap.max_send_wr, "send",
			     "SendBatch") == 0 &&
	    send_batch_ready(b, self) == 0)
		res = send_batch_post_rows(b, self, 0, b->n);
	return batch_none_or_error((PyObject *)b, res);
}

/* ------------------------------------------------------------------ */
/* The type                                                            */
/* ------------------------------------------------------------------ */

static int send_batch_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(SB(self)->ahs);
	return batch_traverse(self, visit, arg);
}

static int send_batch_clear(PyObject *self)
{
	Py_CLEAR(SB(self)->mr);
	Py_CLEAR(SB(self)->run_qp);
	Py_CLEAR(SB(self)->ahs);
	return 0;
}

static PyObject *send_batch_repr(PyObject *self)
{
	SendBatchObject *b = SB(self);

	return PyUnicode_FromFormat("<SendBatch of %zd rows, opcode %d%s>",
				    b->n, b->opcode,
				    b->mr ? "" : ", by address");
}

static PyObject *send_batch_get_opcode(PyObject *self, void *closure)
{
	return enum_from_int("WROpcode", SB(self)->opcode);
}

static PyMethodDef send_batch_methods[] = {
	METHOD_KW("post", send_batch_post),
	METHOD_KW("progress", send_batch_progress),
	METHOD_NOARGS("reset", send_run_reset),
	METHOD_KW("update", send_batch_update),
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef send_batch_getset[] = {
	{ "mr", batch_get_mr, NULL,
	  "The MR the local offsets index, or None (addresses).", NULL },
	{ "opcode", send_batch_get_opcode, NULL,
	  "The WROpcode of every row (the last may carry an immediate).",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

PyDoc_STRVAR(
	send_batch__doc__,
	"Send work requests described by columns of integers, built in C.\n"
	"\n"
	"Row k is one request of one SGE: ``lengths[k]`` bytes at\n"
	"``local[k]`` (an offset into ``mr``, or an address with ``lkey``),\n"
	"to ``remote_base + remote[k]`` under ``rkey`` for an RDMA WRITE or\n"
	"READ, or for a UD SEND to ``remote_qpn[k]`` through ``ah`` (one AH\n"
	"or one per row). A column is any 1-D array of integers (numpy, array.array,\n"
	"memoryview, a torch CPU tensor); lengths, rkey, lkey and wr_id may\n"
	"be one int for every row. The columns are checked once (each row\n"
	"named in the error) and copied into native ``ibv_send_wr`` and\n"
	"``ibv_sge`` arrays the batch owns: nothing of them is held.\n"
	"``post(qp, start, count)`` posts rows in pieces the send queue\n"
	"holds (on a QPEx by its ``ibv_wr_*`` builders where its\n"
	"``send_ops_flags`` have the batch's operations);\n"
	"``update()`` replaces columns; ``len(batch)`` is the rows.\n"
	"The batch holds its MR: a post after ``mr.close()`` is EBADF.\n"
	"\n"
	"Args:\n" SB_DOC_ARGS
	"        32 bits, negative), columns of different lengths, no rows,\n"
	"        remote/rkey missing for RDMA (or given for SEND), both or\n"
	"        neither of mr and lkey, imm_data for a READ, ah with an\n"
	"        RDMA opcode or without remote_qpn (or remote_qpn without\n"
	"        ah), a sequence of AHs of another length than the rows.\n"
	"    VerbsError: EBADF if the MR or an AH is closed.");

static PyType_Slot send_batch_slots[] = {
	{ Py_tp_doc, (void *)send_batch__doc__ },
	{ Py_tp_new, send_batch_new },
	{ Py_tp_dealloc, batch_dealloc },
	{ Py_tp_traverse, send_batch_traverse },
	{ Py_tp_clear, send_batch_clear },
	{ Py_tp_repr, send_batch_repr },
	{ Py_tp_methods, send_batch_methods },
	{ Py_tp_getset, send_batch_getset },
	{ Py_sq_length, batch_length },
	{ 0, NULL }
};

PyType_Spec SendBatch_spec = { "ibverbs._ibverbs.SendBatch",
			       sizeof(SendBatchObject), 0,
			       Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			       send_batch_slots };
