/*
 * post.c - the data path: post_send, post_recv, post_srq_recv and
 * bind_mw, as context ops.
 *
 * Every posted work request completes at once (there is no wire): a send
 * queue WR on the QP's send CQ when it is signaled (or the QP signals
 * all), with byte_len = the sum of its SGE lengths; a receive on the
 * QP's receive CQ as IBV_WC_RECV, byte_len = the sum of its SGE lengths.
 * Receives posted to an SRQ are counted, not completed (nothing arrives).
 * Checks, as a provider makes them: a send needs the QP in RTS or SQD, a
 * receive a QP out of RESET and without an SRQ; num_sge within the caps.
 * With recording off, a post takes only the CQ's own lock.
 */
#include "fake.h"

#include <stdio.h>

/* Logged bytes of an inline SGE, at most. */
#define POST_INLINE_LOG 64

static enum ibv_wc_opcode post_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_TSO:
		return IBV_WC_TSO;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	default:
		return IBV_WC_SEND;
	}
}

static uint32_t post_sge_bytes(const struct ibv_sge *sg, int n)
{
	uint32_t total = 0;
	int i;

	for (i = 0; i < n; i++)
		total += sg[i].length;
	return total;
}

void fake_qp_complete_send(struct ibv_qp *qp, uint64_t wr_id,
			   enum ibv_wc_opcode opcode, uint32_t byte_len,
			   int signaled)
{
	struct ibv_wc wc;

	if (!signaled && !fake_qp_of(qp)->sq_sig_all)
		return;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = opcode;
	wc.byte_len = byte_len;
	wc.qp_num = qp->qp_num;
	fake_cq_push(qp->send_cq, &wc);
}

static void post_sge_fields(struct fake_rec *r, const char *p, int i,
			    const struct ibv_sge *sg, int n, int inl)
{
	int j;

	for (j = 0; j < n; j++) {
		fake_add(r,
			 "%s[%d].sg_list[%d].addr=0x%llx "
			 "%s[%d].sg_list[%d].length=%u "
			 "%s[%d].sg_list[%d].lkey=%u",
			 p, i, j, (unsigned long long)sg[j].addr, p, i, j,
			 sg[j].length, p, i, j, sg[j].lkey);
		if (inl && sg[j].addr) {
			char key[64];
			uint32_t len = sg[j].length < POST_INLINE_LOG ?
					       sg[j].length :
					       POST_INLINE_LOG;

			snprintf(key, sizeof(key), "%s[%d].sg_list[%d].data", p,
				 i, j);
			fake_bytes(r, key, (const void *)(uintptr_t)sg[j].addr,
				   len);
		}
	}
}

static void post_send_fields(struct fake_rec *r, struct ibv_qp *qp, int i,
			     const struct ibv_send_wr *w)
{
	const char *p = "wr";

	fake_add(r,
		 "wr[%d].wr_id=%llu wr[%d].opcode=%u wr[%d].send_flags=0x%x "
		 "wr[%d].num_sge=%d",
		 i, (unsigned long long)w->wr_id, i, w->opcode, i,
		 w->send_flags, i, w->num_sge);
	if (w->opcode != IBV_WR_BIND_MW && w->opcode != IBV_WR_LOCAL_INV)
		post_sge_fields(r, p, i, w->sg_list, w->num_sge,
				(w->send_flags & IBV_SEND_INLINE) != 0);
	switch (w->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		fake_add(r, "wr[%d].imm_data=0x%x", i, be32toh(w->imm_data));
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		fake_add(r, "wr[%d].invalidate_rkey=%u", i, w->invalidate_rkey);
		break;
	default:
		break;
	}
	switch (w->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_WRITE:
		fake_add(r,
			 "wr[%d].wr.rdma.remote_addr=0x%llx "
			 "wr[%d].wr.rdma.rkey=%u",
			 i, (unsigned long long)w->wr.rdma.remote_addr, i,
			 w->wr.rdma.rkey);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		fake_add(r,
			 "wr[%d].wr.atomic.remote_addr=0x%llx "
			 "wr[%d].wr.atomic.compare_add=%llu "
			 "wr[%d].wr.atomic.swap=%llu wr[%d].wr.atomic.rkey=%u",
			 i, (unsigned long long)w->wr.atomic.remote_addr, i,
			 (unsigned long long)w->wr.atomic.compare_add, i,
			 (unsigned long long)w->wr.atomic.swap, i,
			 w->wr.atomic.rkey);
		break;
	case IBV_WR_BIND_MW:
		fake_add(r,
			 "wr[%d].bind_mw.mw=0x%lx wr[%d].bind_mw.rkey=%u "
			 "wr[%d].bind_mw.bind_info.mr=0x%lx "
			 "wr[%d].bind_mw.bind_info.addr=0x%llx "
			 "wr[%d].bind_mw.bind_info.length=%llu "
			 "wr[%d].bind_mw.bind_info.mw_access_flags=0x%x",
			 i, FAKE_PTR(w->bind_mw.mw), i, w->bind_mw.rkey, i,
			 FAKE_PTR(w->bind_mw.bind_info.mr), i,
			 (unsigned long long)w->bind_mw.bind_info.addr, i,
			 (unsigned long long)w->bind_mw.bind_info.length, i,
			 w->bind_mw.bind_info.mw_access_flags);
		break;
	case IBV_WR_TSO:
		fake_add(r,
			 "wr[%d].tso.hdr=0x%lx wr[%d].tso.hdr_sz=%u "
			 "wr[%d].tso.mss=%u",
			 i, FAKE_PTR(w->tso.hdr), i, w->tso.hdr_sz, i,
			 w->tso.mss);
		break;
	default:
		break;
	}
	if (qp->qp_type == IBV_QPT_UD)
		fake_add(r,
			 "wr[%d].wr.ud.ah=0x%lx wr[%d].wr.ud.remote_qpn=%u "
			 "wr[%d].wr.ud.remote_qkey=0x%x",
			 i, FAKE_PTR(w->wr.ud.ah), i, w->wr.ud.remote_qpn, i,
			 w->wr.ud.remote_qkey);
	if (qp->qp_type == IBV_QPT_XRC_SEND)
		fake_add(r, "wr[%d].qp_type.xrc.remote_srqn=%u", i,
			 w->qp_type.xrc.remote_srqn);
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr)
{
	struct fake_qp *q = fake_qp_of(qp);
	struct ibv_send_wr *w;
	struct fake_rec r;
	int err = fake_begin(&r, "post_send");
	int i;

	if (r.on) {
		FAKE_U(&r, "qp_num", qp->qp_num);
		for (w = wr, i = 0; w; w = w->next, i++)
			post_send_fields(&r, qp, i, w);
		FAKE_I(&r, "count", i);
		fake_end(&r);
	}
	if (err) {
		*bad_wr = wr;
		return err;
	}
	for (w = wr; w; w = w->next) {
		if ((qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD) ||
		    w->num_sge < 0 ||
		    (uint32_t)w->num_sge > q->cap.max_send_sge) {
			*bad_wr = w;
			return EINVAL;
		}
		fake_qp_complete_send(qp, w->wr_id, post_wc_opcode(w->opcode),
				      post_sge_bytes(w->sg_list, w->num_sge),
				      w->send_flags & IBV_SEND_SIGNALED);
	}
	return 0;
}

static void post_recv_fields(struct fake_rec *r, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *w;
	int i;

	for (w = wr, i = 0; w; w = w->next, i++) {
		fake_add(r, "wr[%d].wr_id=%llu wr[%d].num_sge=%d", i,
			 (unsigned long long)w->wr_id, i, w->num_sge);
		post_sge_fields(r, "wr", i, w->sg_list, w->num_sge, 0);
	}
	FAKE_I(r, "count", i);
}

static int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr)
{
	struct fake_qp *q = fake_qp_of(qp);
	struct ibv_recv_wr *w;
	struct fake_rec r;
	int err = fake_begin(&r, "post_recv");
	struct ibv_wc wc;

	if (r.on) {
		FAKE_U(&r, "qp_num", qp->qp_num);
		post_recv_fields(&r, wr);
		fake_end(&r);
	}
	if (err) {
		*bad_wr = wr;
		return err;
	}
	for (w = wr; w; w = w->next) {
		if (qp->state == IBV_QPS_RESET || qp->srq != NULL ||
		    w->num_sge < 0 ||
		    (uint32_t)w->num_sge > q->cap.max_recv_sge) {
			*bad_wr = w;
			return EINVAL;
		}
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w->wr_id;
		wc.status = IBV_WC_SUCCESS;
		wc.opcode = IBV_WC_RECV;
		wc.byte_len = post_sge_bytes(w->sg_list, w->num_sge);
		wc.qp_num = qp->qp_num;
		wc.src_qp = qp->qp_num;
		fake_cq_push(qp->recv_cq, &wc);
	}
	return 0;
}

static long post_srq_posted;

static int post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr *w;
	struct fake_rec r;
	int err = fake_begin(&r, "post_srq_recv");
	long n = 0;

	if (r.on) {
		FAKE_P(&r, "srq", srq);
		post_recv_fields(&r, wr);
		fake_end(&r);
	}
	if (err) {
		*bad_wr = wr;
		return err;
	}
	for (w = wr; w; w = w->next)
		n++;
	__atomic_add_fetch(&post_srq_posted, n, __ATOMIC_RELAXED);
	return 0;
}

/* Receives posted to SRQs so far (they never complete). */
FAKE_EXPORT long fake_srq_posted(void)
{
	return __atomic_load_n(&post_srq_posted, __ATOMIC_RELAXED);
}

static int post_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
			struct ibv_mw_bind *b)
{
	struct fake_rec r;
	int err = fake_begin(&r, "bind_mw");

	FAKE_U(&r, "qp_num", qp->qp_num);
	FAKE_P(&r, "mw", mw);
	FAKE_U(&r, "mw_bind.wr_id", b->wr_id);
	FAKE_X(&r, "mw_bind.send_flags", b->send_flags);
	FAKE_P(&r, "mw_bind.bind_info.mr", b->bind_info.mr);
	FAKE_X(&r, "mw_bind.bind_info.addr", b->bind_info.addr);
	FAKE_U(&r, "mw_bind.bind_info.length", b->bind_info.length);
	FAKE_X(&r, "mw_bind.bind_info.mw_access_flags",
	       b->bind_info.mw_access_flags);
	fake_end(&r);
	if (err)
		return err;
	if (qp->state != IBV_QPS_RTS)
		return EINVAL;
	mw->rkey = ibv_inc_rkey(mw->rkey);
	fake_qp_complete_send(qp, b->wr_id, IBV_WC_BIND_MW, 0,
			      b->send_flags & IBV_SEND_SIGNALED);
	return 0;
}

FAKE_CONTEXT_OPS(post_ops)
{
	fc->vctx.context.ops.post_send = post_send;
	fc->vctx.context.ops.post_recv = post_recv;
	fc->vctx.context.ops.post_srq_recv = post_srq_recv;
	fc->vctx.context.ops.bind_mw = post_bind_mw;
}
