/*
 * rate_limit_ece.c - the hardware-only QP verbs: modify_qp_rate_limit (a
 * verbs_context op) and the exported ibv_set_ece / ibv_query_ece.
 *
 * Answers: the rate limit is accepted; set_ece refuses vendor_id 0 with
 * EOPNOTSUPP as libibverbs does; query_ece answers vendor_id 0xfa4e,
 * options 0x11, comp_mask 0x1.
 */
#include "fake.h"

static int qphw_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "modify_qp_rate_limit");

	FAKE_U(&r, "qp_num", qp->qp_num);
	FAKE_U(&r, "attr.rate_limit", a->rate_limit);
	FAKE_U(&r, "attr.max_burst_sz", a->max_burst_sz);
	FAKE_U(&r, "attr.typical_pkt_sz", a->typical_pkt_sz);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	fake_end(&r);
	return err;
}

FAKE_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	struct fake_rec r;
	int err = fake_begin(&r, "set_ece");

	FAKE_U(&r, "qp_num", qp->qp_num);
	FAKE_X(&r, "ece.vendor_id", ece->vendor_id);
	FAKE_X(&r, "ece.options", ece->options);
	FAKE_X(&r, "ece.comp_mask", ece->comp_mask);
	fake_end(&r);
	if (!err && ece->vendor_id == 0)
		err = EOPNOTSUPP;
	if (err)
		fake_set_errno(err);
	return err;
}

FAKE_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_ece");

	FAKE_U(&r, "qp_num", qp->qp_num);
	fake_end(&r);
	if (err)
		return err;
	ece->vendor_id = 0xfa4e;
	ece->options = 0x11;
	ece->comp_mask = 0x1;
	return 0;
}

FAKE_CONTEXT_OPS(qphw_ops)
{
	fc->vctx.modify_qp_rate_limit = qphw_rate_limit;
}
