/*
 * xrc.c - XRC domains, opened XRC QPs, the extended SRQ (create_srq_ex,
 * get_srq_num) and tag-matching list operations (post_srq_ops): the
 * verbs.h inlines over verbs_context ops open_xrcd, close_xrcd, open_qp,
 * create_srq_ex, get_srq_num and post_srq_ops.
 *
 * Answers: an XRCD is a plain object; open_qp makes a QP in RESET with
 * the number asked for and no CQs; create_srq_ex makes an SRQ with the
 * sizes asked for (query_srq, modify_srq and destroy_srq of srq.c work on
 * it); get_srq_num answers the SRQ's handle; post_srq_ops gives each
 * TAG_ADD a fresh tm.handle and completes nothing.
 */
#include "fake.h"

/* verbs_xrcd is driver.h's (not installed): the fake's own. */
struct xrc_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t handle;
};

static struct ibv_xrcd *xrc_open_xrcd(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "open_xrcd");
	struct xrc_xrcd *x;

	FAKE_P(&r, "context", context);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	if (a->comp_mask & IBV_XRCD_INIT_ATTR_FD)
		FAKE_I(&r, "attr.fd", a->fd);
	if (a->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS)
		FAKE_X(&r, "attr.oflags", (unsigned int)a->oflags);
	x = fake_end_new(&r, err, "xrcd", sizeof(*x));
	if (x == NULL)
		return NULL;
	x->xrcd.context = context;
	x->handle = fake_next_id();
	return &x->xrcd;
}

static int xrc_close_xrcd(struct ibv_xrcd *xrcd)
{
	int err = fake_record_simple("close_xrcd", "xrcd", xrcd);

	if (err)
		return err;
	fake_free_obj("xrcd", (struct xrc_xrcd *)xrcd);
	return 0;
}

static struct ibv_qp *xrc_open_qp(struct ibv_context *context,
				  struct ibv_qp_open_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "open_qp");
	struct ibv_qp_cap cap = { 0 };
	struct fake_qp *q;
	struct ibv_qp *qp;

	FAKE_P(&r, "context", context);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	if (a->comp_mask & IBV_QP_OPEN_ATTR_NUM)
		FAKE_U(&r, "attr.qp_num", a->qp_num);
	if (a->comp_mask & IBV_QP_OPEN_ATTR_XRCD)
		FAKE_P(&r, "attr.xrcd", a->xrcd);
	if (a->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT)
		FAKE_P(&r, "attr.qp_context", a->qp_context);
	if (a->comp_mask & IBV_QP_OPEN_ATTR_TYPE)
		FAKE_U(&r, "attr.qp_type", a->qp_type);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	/* qp.c's QP (one translation unit): destroy_qp frees it */
	q = qp_new(context, NULL, a->qp_context, NULL, NULL, NULL, &cap,
		   a->qp_type, 0);
	if (q == NULL)
		return NULL;
	qp = &q->qpx.qp_base;
	qp->qp_num = a->qp_num;
	return qp;
}

/* Laid out as srq.c's SRQ (the ibv_srq, then its attributes), so that
 * query_srq, modify_srq and destroy_srq work on it. */
struct xrc_srq {
	struct ibv_srq srq;
	struct ibv_srq_attr attr;
};

static struct ibv_srq *xrc_create_srq_ex(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_srq_ex");
	uint32_t m = a->comp_mask;
	struct xrc_srq *s;

	FAKE_P(&r, "context", context);
	FAKE_P(&r, "attr.srq_context", a->srq_context);
	FAKE_U(&r, "attr.attr.max_wr", a->attr.max_wr);
	FAKE_U(&r, "attr.attr.max_sge", a->attr.max_sge);
	FAKE_U(&r, "attr.attr.srq_limit", a->attr.srq_limit);
	FAKE_X(&r, "attr.comp_mask", m);
	if (m & IBV_SRQ_INIT_ATTR_TYPE)
		FAKE_U(&r, "attr.srq_type", a->srq_type);
	if (m & IBV_SRQ_INIT_ATTR_PD)
		FAKE_P(&r, "attr.pd", a->pd);
	if (m & IBV_SRQ_INIT_ATTR_XRCD)
		FAKE_P(&r, "attr.xrcd", a->xrcd);
	if (m & IBV_SRQ_INIT_ATTR_CQ)
		FAKE_P(&r, "attr.cq", a->cq);
	if (m & IBV_SRQ_INIT_ATTR_TM) {
		FAKE_U(&r, "attr.tm_cap.max_num_tags", a->tm_cap.max_num_tags);
		FAKE_U(&r, "attr.tm_cap.max_ops", a->tm_cap.max_ops);
	}
	fake_end(&r);
	if (!err && (!(m & IBV_SRQ_INIT_ATTR_PD) || a->attr.max_wr == 0 ||
		     a->attr.max_wr > 4096 || a->attr.max_sge > 16))
		err = EINVAL;
	s = fake_new_unless(err, "srq", sizeof(*s));
	if (s == NULL)
		return NULL;
	s->srq.context = context;
	s->srq.srq_context = a->srq_context;
	s->srq.pd = a->pd;
	s->srq.handle = fake_next_id();
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	s->attr = a->attr;
	return &s->srq;
}

static int xrc_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	int err = fake_record_simple("get_srq_num", "srq", srq);

	if (err)
		return err;
	*srq_num = srq->handle;
	return 0;
}

static int xrc_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op)
{
	struct fake_rec r;
	int err = fake_begin(&r, "post_srq_ops");
	struct ibv_ops_wr *o;
	int i, j;

	FAKE_P(&r, "srq", srq);
	for (o = op, i = 0; o; o = o->next, i++) {
		fake_add(&r,
			 "op[%d].wr_id=%llu op[%d].opcode=%d op[%d].flags=0x%x "
			 "op[%d].tm.unexpected_cnt=%u op[%d].tm.handle=%u",
			 i, (unsigned long long)o->wr_id, i, (int)o->opcode, i,
			 (unsigned int)o->flags, i, o->tm.unexpected_cnt, i,
			 o->tm.handle);
		if (o->opcode != IBV_WR_TAG_ADD)
			continue;
		fake_add(
			&r,
			"op[%d].tm.add.recv_wr_id=%llu op[%d].tm.add.tag=0x%llx "
			"op[%d].tm.add.mask=0x%llx op[%d].tm.add.num_sge=%d",
			i, (unsigned long long)o->tm.add.recv_wr_id, i,
			(unsigned long long)o->tm.add.tag, i,
			(unsigned long long)o->tm.add.mask, i,
			o->tm.add.num_sge);
		for (j = 0; j < o->tm.add.num_sge; j++)
			fake_add(&r,
				 "op[%d].tm.add.sg_list[%d].addr=0x%llx "
				 "op[%d].tm.add.sg_list[%d].length=%u "
				 "op[%d].tm.add.sg_list[%d].lkey=%u",
				 i, j,
				 (unsigned long long)o->tm.add.sg_list[j].addr,
				 i, j, o->tm.add.sg_list[j].length, i, j,
				 o->tm.add.sg_list[j].lkey);
	}
	FAKE_I(&r, "count", i);
	fake_end(&r);
	if (err) {
		*bad_op = op;
		return err;
	}
	for (o = op; o; o = o->next)
		if (o->opcode == IBV_WR_TAG_ADD)
			o->tm.handle = fake_next_id();
	return 0;
}

FAKE_CONTEXT_OPS(xrc_ops)
{
	fc->vctx.open_xrcd = xrc_open_xrcd;
	fc->vctx.close_xrcd = xrc_close_xrcd;
	fc->vctx.open_qp = xrc_open_qp;
	fc->vctx.create_srq_ex = xrc_create_srq_ex;
	fc->vctx.get_srq_num = xrc_get_srq_num;
	fc->vctx.post_srq_ops = xrc_post_srq_ops;
}
