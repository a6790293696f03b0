/*
 * qp_ex.c - the extended QP's work-request builders (ibv_wr_*), one
 * recorder each: "wr_<name> qp_num=.. wr_id=.. wr_flags=.. <args>".
 *
 * wr_start takes the QP's batch lock, wr_complete or wr_abort releases
 * it.  Each builder adds a work request to the batch, each setter
 * (sge, inline data, UD address, XRC SRQ number) fills the last one;
 * wr_complete completes them all as post_send would (on the send CQ when
 * signaled) and answers ENOMEM when the batch held more than
 * cap.max_send_wr, EINVAL when the QP is not in RTS or a setter came
 * before any builder.  Every wr_* pointer is set, whatever send_ops_flags
 * asked for (the record shows what was asked).
 */
#include "fake.h"

struct qpx_wr {
	uint64_t wr_id;
	enum ibv_wc_opcode opcode;
	uint32_t bytes;
	int signaled;
};

struct qpx_batch {
	struct qpx_wr *wrs;
	size_t n, cap;
	int err;
};

static struct fake_qp *qpx_of(struct ibv_qp_ex *qpx)
{
	return (struct fake_qp *)qpx;
}

static struct qpx_batch *qpx_batch(struct ibv_qp_ex *qpx)
{
	return qpx_of(qpx)->batch;
}

/* Start the record of wr_<name> with the QP and its wr_id/wr_flags. */
static void qpx_rec(struct fake_rec *r, const char *verb, struct ibv_qp_ex *qpx,
		    int builder)
{
	int err = fake_begin(r, verb);

	if (err)
		qpx_batch(qpx)->err = err;
	FAKE_U(r, "qp_num", qpx->qp_base.qp_num);
	if (builder) {
		FAKE_U(r, "wr_id", qpx->wr_id);
		FAKE_X(r, "wr_flags", qpx->wr_flags);
	}
}

static void qpx_add(struct ibv_qp_ex *qpx, enum ibv_wc_opcode opcode)
{
	struct qpx_batch *b = qpx_batch(qpx);
	struct qpx_wr *w;

	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		struct qpx_wr *nw = realloc(b->wrs, cap * sizeof(*nw));

		if (nw == NULL) {
			b->err = ENOMEM;
			return;
		}
		b->wrs = nw;
		b->cap = cap;
	}
	w = &b->wrs[b->n++];
	w->wr_id = qpx->wr_id;
	w->opcode = opcode;
	w->bytes = 0;
	w->signaled = (qpx->wr_flags & IBV_SEND_SIGNALED) != 0;
}

static struct qpx_wr *qpx_last(struct ibv_qp_ex *qpx)
{
	struct qpx_batch *b = qpx_batch(qpx);

	if (b->n == 0) {
		b->err = EINVAL;
		return NULL;
	}
	return &b->wrs[b->n - 1];
}

static void qpx_start(struct ibv_qp_ex *qpx)
{
	struct fake_rec r;

	pthread_mutex_lock(&qpx_of(qpx)->batch_lock);
	qpx_batch(qpx)->n = 0;
	qpx_batch(qpx)->err = 0;
	qpx_rec(&r, "wr_start", qpx, 0);
	fake_end(&r);
}

static int qpx_complete(struct ibv_qp_ex *qpx)
{
	struct fake_qp *q = qpx_of(qpx);
	struct qpx_batch *b = q->batch;
	struct fake_rec r;
	int err;
	size_t i;

	qpx_rec(&r, "wr_complete", qpx, 0);
	FAKE_U(&r, "count", b->n);
	fake_end(&r);
	err = b->err;
	if (!err && qpx->qp_base.state != IBV_QPS_RTS)
		err = EINVAL;
	if (!err && b->n > q->cap.max_send_wr)
		err = ENOMEM;
	for (i = 0; !err && i < b->n; i++)
		fake_qp_complete_send(&qpx->qp_base, b->wrs[i].wr_id,
				      b->wrs[i].opcode, b->wrs[i].bytes,
				      b->wrs[i].signaled);
	b->n = 0;
	pthread_mutex_unlock(&q->batch_lock);
	return err;
}

static void qpx_abort(struct ibv_qp_ex *qpx)
{
	struct fake_qp *q = qpx_of(qpx);
	struct fake_rec r;

	qpx_rec(&r, "wr_abort", qpx, 0);
	FAKE_U(&r, "count", qpx_batch(qpx)->n);
	fake_end(&r);
	qpx_batch(qpx)->n = 0;
	pthread_mutex_unlock(&q->batch_lock);
}

/* ------------------------------------------------------------------ */
/* Builders                                                            */
/* ------------------------------------------------------------------ */

static void qpx_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr, uint64_t compare,
			       uint64_t swap)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_atomic_cmp_swp", qpx, 1);
	FAKE_U(&r, "rkey", rkey);
	FAKE_X(&r, "remote_addr", remote_addr);
	FAKE_U(&r, "compare", compare);
	FAKE_U(&r, "swap", swap);
	fake_end(&r);
	qpx_add(qpx, IBV_WC_COMP_SWAP);
}

static void qpx_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t remote_addr, uint64_t add)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_atomic_fetch_add", qpx, 1);
	FAKE_U(&r, "rkey", rkey);
	FAKE_X(&r, "remote_addr", remote_addr);
	FAKE_U(&r, "add", add);
	fake_end(&r);
	qpx_add(qpx, IBV_WC_FETCH_ADD);
}

static void qpx_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			     uint64_t remote_addr, const void *atomic_wr)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_atomic_write", qpx, 1);
	FAKE_U(&r, "rkey", rkey);
	FAKE_X(&r, "remote_addr", remote_addr);
	fake_bytes(&r, "atomic_wr", atomic_wr, 8);
	fake_end(&r);
	qpx_add(qpx, IBV_WC_ATOMIC_WRITE);
}

static void qpx_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
			const struct ibv_mw_bind_info *bi)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_bind_mw", qpx, 1);
	FAKE_P(&r, "mw", mw);
	FAKE_U(&r, "rkey", rkey);
	FAKE_P(&r, "bind_info.mr", bi->mr);
	FAKE_X(&r, "bind_info.addr", bi->addr);
	FAKE_U(&r, "bind_info.length", bi->length);
	FAKE_X(&r, "bind_info.mw_access_flags", bi->mw_access_flags);
	fake_end(&r);
	qpx_add(qpx, IBV_WC_BIND_MW);
	mw->rkey = rkey;
}

/* The builders that take one rkey-like number, or a remote address too. */
#define QPX_RKEY_BUILDER(name, opcode, key)                       \
	static void qpx_##name(struct ibv_qp_ex *qpx, uint32_t v) \
	{                                                         \
		struct fake_rec r;                                \
		qpx_rec(&r, "wr_" #name, qpx, 1);                 \
		FAKE_U(&r, key, v);                               \
		fake_end(&r);                                     \
		qpx_add(qpx, opcode);                             \
	}
#define QPX_REMOTE_BUILDER(name, opcode)                             \
	static void qpx_##name(struct ibv_qp_ex *qpx, uint32_t rkey, \
			       uint64_t remote_addr)                 \
	{                                                            \
		struct fake_rec r;                                   \
		qpx_rec(&r, "wr_" #name, qpx, 1);                    \
		FAKE_U(&r, "rkey", rkey);                            \
		FAKE_X(&r, "remote_addr", remote_addr);              \
		fake_end(&r);                                        \
		qpx_add(qpx, opcode);                                \
	}

QPX_RKEY_BUILDER(local_inv, IBV_WC_LOCAL_INV, "invalidate_rkey")
QPX_RKEY_BUILDER(send_inv, IBV_WC_SEND, "invalidate_rkey")
QPX_REMOTE_BUILDER(rdma_read, IBV_WC_RDMA_READ)
QPX_REMOTE_BUILDER(rdma_write, IBV_WC_RDMA_WRITE)

static void qpx_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr, __be32 imm)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_rdma_write_imm", qpx, 1);
	FAKE_U(&r, "rkey", rkey);
	FAKE_X(&r, "remote_addr", remote_addr);
	FAKE_X(&r, "imm_data", be32toh(imm));
	fake_end(&r);
	qpx_add(qpx, IBV_WC_RDMA_WRITE);
}

static void qpx_send(struct ibv_qp_ex *qpx)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_send", qpx, 1);
	fake_end(&r);
	qpx_add(qpx, IBV_WC_SEND);
}

static void qpx_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_send_imm", qpx, 1);
	FAKE_X(&r, "imm_data", be32toh(imm));
	fake_end(&r);
	qpx_add(qpx, IBV_WC_SEND);
}

static void qpx_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
			 uint16_t mss)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_send_tso", qpx, 1);
	fake_bytes(&r, "hdr", hdr, hdr_sz);
	FAKE_U(&r, "hdr_sz", hdr_sz);
	FAKE_U(&r, "mss", mss);
	fake_end(&r);
	qpx_add(qpx, IBV_WC_TSO);
}

/* ------------------------------------------------------------------ */
/* Setters                                                             */
/* ------------------------------------------------------------------ */

static void qpx_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			    uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_set_ud_addr", qpx, 0);
	FAKE_P(&r, "ah", ah);
	FAKE_U(&r, "remote_qpn", remote_qpn);
	FAKE_X(&r, "remote_qkey", remote_qkey);
	fake_end(&r);
	qpx_last(qpx);
}

static void qpx_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_set_xrc_srqn", qpx, 0);
	FAKE_U(&r, "remote_srqn", remote_srqn);
	fake_end(&r);
	qpx_last(qpx);
}

static void qpx_set_bytes(struct ibv_qp_ex *qpx, uint32_t bytes)
{
	struct qpx_wr *w = qpx_last(qpx);

	if (w)
		w->bytes = bytes;
}

static void qpx_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				size_t length)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_set_inline_data", qpx, 0);
	FAKE_P(&r, "addr", addr);
	FAKE_U(&r, "length", length);
	fake_bytes(&r, "data", addr, length < 64 ? length : 64);
	fake_end(&r);
	qpx_set_bytes(qpx, (uint32_t)length);
}

static void qpx_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				     const struct ibv_data_buf *bl)
{
	struct fake_rec r;
	uint32_t total = 0;
	size_t i;

	qpx_rec(&r, "wr_set_inline_data_list", qpx, 0);
	FAKE_U(&r, "num_buf", num_buf);
	for (i = 0; i < num_buf; i++) {
		fake_add(&r,
			 "buf_list[%zu].addr=0x%lx buf_list[%zu].length=%zu", i,
			 FAKE_PTR(bl[i].addr), i, bl[i].length);
		total += (uint32_t)bl[i].length;
	}
	fake_end(&r);
	qpx_set_bytes(qpx, total);
}

static void qpx_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
			uint32_t length)
{
	struct fake_rec r;

	qpx_rec(&r, "wr_set_sge", qpx, 0);
	FAKE_U(&r, "lkey", lkey);
	FAKE_X(&r, "addr", addr);
	FAKE_U(&r, "length", length);
	fake_end(&r);
	qpx_set_bytes(qpx, length);
}

static void qpx_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			     const struct ibv_sge *sg)
{
	struct fake_rec r;
	uint32_t total = 0;
	size_t i;

	qpx_rec(&r, "wr_set_sge_list", qpx, 0);
	FAKE_U(&r, "num_sge", num_sge);
	for (i = 0; i < num_sge; i++) {
		fake_add(&r,
			 "sg_list[%zu].addr=0x%llx sg_list[%zu].length=%u "
			 "sg_list[%zu].lkey=%u",
			 i, (unsigned long long)sg[i].addr, i, sg[i].length, i,
			 sg[i].lkey);
		total += sg[i].length;
	}
	fake_end(&r);
	qpx_set_bytes(qpx, total);
}

void fake_qp_ex_init(struct fake_qp *q, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *x = &q->qpx;

	(void)send_ops_flags;
	q->batch = calloc(1, sizeof(struct qpx_batch));
	if (q->batch == NULL)
		return; /* has_ex stays 0: ibv_qp_to_qp_ex answers NULL */
	q->has_ex = 1;
	x->wr_atomic_cmp_swp = qpx_atomic_cmp_swp;
	x->wr_atomic_fetch_add = qpx_atomic_fetch_add;
	x->wr_atomic_write = qpx_atomic_write;
	x->wr_bind_mw = qpx_bind_mw;
	x->wr_local_inv = qpx_local_inv;
	x->wr_rdma_read = qpx_rdma_read;
	x->wr_rdma_write = qpx_rdma_write;
	x->wr_rdma_write_imm = qpx_rdma_write_imm;
	x->wr_send = qpx_send;
	x->wr_send_imm = qpx_send_imm;
	x->wr_send_inv = qpx_send_inv;
	x->wr_send_tso = qpx_send_tso;
	x->wr_set_ud_addr = qpx_set_ud_addr;
	x->wr_set_xrc_srqn = qpx_set_xrc_srqn;
	x->wr_set_inline_data = qpx_set_inline_data;
	x->wr_set_inline_data_list = qpx_set_inline_data_list;
	x->wr_set_sge = qpx_set_sge;
	x->wr_set_sge_list = qpx_set_sge_list;
	x->wr_start = qpx_start;
	x->wr_complete = qpx_complete;
	x->wr_abort = qpx_abort;
}

void fake_qp_ex_fini(struct fake_qp *q)
{
	struct qpx_batch *b = q->batch;

	if (b) {
		free(b->wrs);
		free(b);
		q->batch = NULL;
	}
}
