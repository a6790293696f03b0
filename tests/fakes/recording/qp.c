/*
 * qp.c - queue pairs: create (plain and extended), modify, query,
 * destroy, and ibv_qp_to_qp_ex.  The posts are in post.c, the extended
 * QP's wr_* builders in qp_ex.c.
 *
 * A new QP is in RESET with the caps it was asked for (the fake does not
 * round them up); modify_qp stores each field its mask names and
 * query_qp answers them.
 */
#include "fake.h"

static void qp_cap_fields(struct fake_rec *r, const char *p,
			  const struct ibv_qp_cap *c)
{
	fake_add(r,
		 "%s.max_send_wr=%u %s.max_recv_wr=%u %s.max_send_sge=%u "
		 "%s.max_recv_sge=%u %s.max_inline_data=%u",
		 p, c->max_send_wr, p, c->max_recv_wr, p, c->max_send_sge, p,
		 c->max_recv_sge, p, c->max_inline_data);
}

/* The fields ibv_qp_init_attr and ibv_qp_init_attr_ex share. */
static void qp_init_fields(struct fake_rec *r, void *qp_context,
			   struct ibv_cq *send_cq, struct ibv_cq *recv_cq,
			   struct ibv_srq *srq, const struct ibv_qp_cap *cap,
			   enum ibv_qp_type qp_type, int sq_sig_all)
{
	if (!r->on)
		return;
	FAKE_P(r, "attr.qp_context", qp_context);
	FAKE_P(r, "attr.send_cq", send_cq);
	FAKE_P(r, "attr.recv_cq", recv_cq);
	FAKE_P(r, "attr.srq", srq);
	qp_cap_fields(r, "attr.cap", cap);
	FAKE_U(r, "attr.qp_type", qp_type);
	FAKE_I(r, "attr.sq_sig_all", sq_sig_all);
}

static struct fake_qp *qp_new(struct ibv_context *context, struct ibv_pd *pd,
			      void *qp_context, struct ibv_cq *send_cq,
			      struct ibv_cq *recv_cq, struct ibv_srq *srq,
			      const struct ibv_qp_cap *cap,
			      enum ibv_qp_type qp_type, int sq_sig_all)
{
	struct fake_qp *q;
	struct ibv_qp *qp;

	if (cap->max_send_wr > 4096 || cap->max_recv_wr > 4096 ||
	    cap->max_send_sge > 16 || cap->max_recv_sge > 16 ||
	    cap->max_inline_data > 1024) {
		errno = EINVAL;
		return NULL;
	}
	q = fake_new_obj("qp", sizeof(*q));
	if (q == NULL)
		return NULL;
	qp = &q->qpx.qp_base;
	qp->context = context;
	qp->qp_context = qp_context;
	qp->pd = pd;
	qp->send_cq = send_cq;
	qp->recv_cq = recv_cq;
	qp->srq = srq;
	qp->handle = fake_next_id();
	qp->qp_num = fake_next_id();
	qp->state = IBV_QPS_RESET;
	qp->qp_type = qp_type;
	pthread_mutex_init(&qp->mutex, NULL);
	pthread_cond_init(&qp->cond, NULL);
	pthread_mutex_init(&q->batch_lock, NULL);
	q->sq_sig_all = sq_sig_all;
	q->cap = *cap;
	q->attr.qp_state = IBV_QPS_RESET;
	q->attr.cap = *cap;
	return q;
}

FAKE_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
					 struct ibv_qp_init_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_qp");
	struct fake_qp *q;

	FAKE_P(&r, "pd", pd);
	qp_init_fields(&r, a->qp_context, a->send_cq, a->recv_cq, a->srq,
		       &a->cap, a->qp_type, a->sq_sig_all);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	q = qp_new(pd->context, pd, a->qp_context, a->send_cq, a->recv_cq,
		   a->srq, &a->cap, a->qp_type, a->sq_sig_all);
	return q ? &q->qpx.qp_base : NULL;
}

static struct ibv_qp *qp_create_ex(struct ibv_context *context,
				   struct ibv_qp_init_attr_ex *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_qp_ex");
	uint32_t m = a->comp_mask;
	struct fake_qp *q;

	FAKE_P(&r, "context", context);
	qp_init_fields(&r, a->qp_context, a->send_cq, a->recv_cq, a->srq,
		       &a->cap, a->qp_type, a->sq_sig_all);
	FAKE_X(&r, "attr.comp_mask", m);
	if (m & IBV_QP_INIT_ATTR_PD)
		FAKE_P(&r, "attr.pd", a->pd);
	if (m & IBV_QP_INIT_ATTR_XRCD)
		FAKE_P(&r, "attr.xrcd", a->xrcd);
	if (m & IBV_QP_INIT_ATTR_CREATE_FLAGS) {
		FAKE_X(&r, "attr.create_flags", a->create_flags);
		if (a->create_flags & IBV_QP_CREATE_SOURCE_QPN)
			FAKE_U(&r, "attr.source_qpn", a->source_qpn);
	}
	if (m & IBV_QP_INIT_ATTR_MAX_TSO_HEADER)
		FAKE_U(&r, "attr.max_tso_header", a->max_tso_header);
	if (m & IBV_QP_INIT_ATTR_IND_TABLE)
		FAKE_P(&r, "attr.rwq_ind_tbl", a->rwq_ind_tbl);
	if (m & IBV_QP_INIT_ATTR_RX_HASH) {
		const struct ibv_rx_hash_conf *h = &a->rx_hash_conf;

		FAKE_U(&r, "attr.rx_hash_conf.rx_hash_function",
		       h->rx_hash_function);
		FAKE_U(&r, "attr.rx_hash_conf.rx_hash_key_len",
		       h->rx_hash_key_len);
		if (h->rx_hash_key)
			fake_bytes(&r, "attr.rx_hash_conf.rx_hash_key",
				   h->rx_hash_key, h->rx_hash_key_len);
		FAKE_X(&r, "attr.rx_hash_conf.rx_hash_fields_mask",
		       h->rx_hash_fields_mask);
	}
	if (m & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		FAKE_X(&r, "attr.send_ops_flags", a->send_ops_flags);
	fake_end(&r);
	if (!err && (m & IBV_QP_INIT_ATTR_PD) == 0 &&
	    a->qp_type != IBV_QPT_XRC_RECV)
		err = EINVAL;
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	q = qp_new(context, a->pd, a->qp_context, a->send_cq, a->recv_cq,
		   a->srq, &a->cap, a->qp_type, a->sq_sig_all);
	if (q == NULL)
		return NULL;
	if (m & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		fake_qp_ex_init(q, a->send_ops_flags);
	return &q->qpx.qp_base;
}

FAKE_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct fake_qp *q = fake_qp_of(qp);

	/* An injected failure: a provider that made a plain QP. */
	if (fake_record_simple("qp_to_qp_ex", "qp", qp) != 0)
		return NULL;
	return q->has_ex ? &q->qpx : NULL;
}

/* Record each field attr_mask names, under its ibv_qp_attr name. */
static void qp_attr_fields(struct fake_rec *r, const struct ibv_qp_attr *a,
			   int mask)
{
	if (!r->on)
		return;
	if (mask & IBV_QP_STATE)
		FAKE_U(r, "attr.qp_state", a->qp_state);
	if (mask & IBV_QP_CUR_STATE)
		FAKE_U(r, "attr.cur_qp_state", a->cur_qp_state);
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		FAKE_U(r, "attr.en_sqd_async_notify", a->en_sqd_async_notify);
	if (mask & IBV_QP_ACCESS_FLAGS)
		FAKE_X(r, "attr.qp_access_flags", a->qp_access_flags);
	if (mask & IBV_QP_PKEY_INDEX)
		FAKE_U(r, "attr.pkey_index", a->pkey_index);
	if (mask & IBV_QP_PORT)
		FAKE_U(r, "attr.port_num", a->port_num);
	if (mask & IBV_QP_QKEY)
		FAKE_X(r, "attr.qkey", a->qkey);
	if (mask & IBV_QP_AV)
		fake_add_ah_attr(r, "attr.ah_attr", &a->ah_attr);
	if (mask & IBV_QP_PATH_MTU)
		FAKE_U(r, "attr.path_mtu", a->path_mtu);
	if (mask & IBV_QP_TIMEOUT)
		FAKE_U(r, "attr.timeout", a->timeout);
	if (mask & IBV_QP_RETRY_CNT)
		FAKE_U(r, "attr.retry_cnt", a->retry_cnt);
	if (mask & IBV_QP_RNR_RETRY)
		FAKE_U(r, "attr.rnr_retry", a->rnr_retry);
	if (mask & IBV_QP_RQ_PSN)
		FAKE_U(r, "attr.rq_psn", a->rq_psn);
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		FAKE_U(r, "attr.max_rd_atomic", a->max_rd_atomic);
	if (mask & IBV_QP_ALT_PATH) {
		fake_add_ah_attr(r, "attr.alt_ah_attr", &a->alt_ah_attr);
		FAKE_U(r, "attr.alt_pkey_index", a->alt_pkey_index);
		FAKE_U(r, "attr.alt_port_num", a->alt_port_num);
		FAKE_U(r, "attr.alt_timeout", a->alt_timeout);
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		FAKE_U(r, "attr.min_rnr_timer", a->min_rnr_timer);
	if (mask & IBV_QP_SQ_PSN)
		FAKE_U(r, "attr.sq_psn", a->sq_psn);
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		FAKE_U(r, "attr.max_dest_rd_atomic", a->max_dest_rd_atomic);
	if (mask & IBV_QP_PATH_MIG_STATE)
		FAKE_U(r, "attr.path_mig_state", a->path_mig_state);
	if (mask & IBV_QP_CAP)
		qp_cap_fields(r, "attr.cap", &a->cap);
	if (mask & IBV_QP_DEST_QPN)
		FAKE_U(r, "attr.dest_qp_num", a->dest_qp_num);
	if (mask & IBV_QP_RATE_LIMIT)
		FAKE_U(r, "attr.rate_limit", a->rate_limit);
}

/* Copy the fields mask names from a into the QP's stored attributes. */
static void qp_store(struct fake_qp *q, const struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr *s = &q->attr;

#define QP_TAKE(bit, field) \
	if (mask & (bit))   \
		s->field = a->field;
	QP_TAKE(IBV_QP_STATE, qp_state)
	QP_TAKE(IBV_QP_EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify)
	QP_TAKE(IBV_QP_ACCESS_FLAGS, qp_access_flags)
	QP_TAKE(IBV_QP_PKEY_INDEX, pkey_index)
	QP_TAKE(IBV_QP_PORT, port_num)
	QP_TAKE(IBV_QP_QKEY, qkey)
	QP_TAKE(IBV_QP_AV, ah_attr)
	QP_TAKE(IBV_QP_PATH_MTU, path_mtu)
	QP_TAKE(IBV_QP_TIMEOUT, timeout)
	QP_TAKE(IBV_QP_RETRY_CNT, retry_cnt)
	QP_TAKE(IBV_QP_RNR_RETRY, rnr_retry)
	QP_TAKE(IBV_QP_RQ_PSN, rq_psn)
	QP_TAKE(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic)
	QP_TAKE(IBV_QP_ALT_PATH, alt_ah_attr)
	QP_TAKE(IBV_QP_ALT_PATH, alt_pkey_index)
	QP_TAKE(IBV_QP_ALT_PATH, alt_port_num)
	QP_TAKE(IBV_QP_ALT_PATH, alt_timeout)
	QP_TAKE(IBV_QP_MIN_RNR_TIMER, min_rnr_timer)
	QP_TAKE(IBV_QP_SQ_PSN, sq_psn)
	QP_TAKE(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic)
	QP_TAKE(IBV_QP_PATH_MIG_STATE, path_mig_state)
	QP_TAKE(IBV_QP_CAP, cap)
	QP_TAKE(IBV_QP_DEST_QPN, dest_qp_num)
	QP_TAKE(IBV_QP_RATE_LIMIT, rate_limit)
#undef QP_TAKE
}

FAKE_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			      int attr_mask)
{
	struct fake_qp *q = fake_qp_of(qp);
	struct fake_rec r;
	int err = fake_begin(&r, "modify_qp");

	FAKE_U(&r, "qp_num", qp->qp_num);
	FAKE_X(&r, "attr_mask", (unsigned int)attr_mask);
	qp_attr_fields(&r, attr, attr_mask);
	fake_end(&r);
	if (err)
		return err;
	pthread_mutex_lock(&qp->mutex);
	qp_store(q, attr, attr_mask);
	if (attr_mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	q->attr.cur_qp_state = qp->state;
	pthread_mutex_unlock(&qp->mutex);
	return 0;
}

FAKE_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			     int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct fake_qp *q = fake_qp_of(qp);
	struct fake_rec r;
	int err = fake_begin(&r, "query_qp");

	FAKE_U(&r, "qp_num", qp->qp_num);
	FAKE_X(&r, "attr_mask", (unsigned int)attr_mask);
	fake_end(&r);
	if (err)
		return err;
	pthread_mutex_lock(&qp->mutex);
	*attr = q->attr;
	attr->qp_state = attr->cur_qp_state = qp->state;
	pthread_mutex_unlock(&qp->mutex);
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = qp->send_cq;
	init_attr->recv_cq = qp->recv_cq;
	init_attr->srq = qp->srq;
	init_attr->cap = q->cap;
	init_attr->qp_type = qp->qp_type;
	init_attr->sq_sig_all = q->sq_sig_all;
	return 0;
}

FAKE_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct fake_qp *q = fake_qp_of(qp);
	struct fake_rec r;
	int err = fake_begin(&r, "destroy_qp");

	FAKE_U(&r, "qp_num", qp->qp_num);
	fake_end(&r);
	if (err)
		return err;
	fake_qp_ex_fini(q);
	pthread_mutex_destroy(&q->batch_lock);
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	fake_free_obj("qp", q);
	return 0;
}

FAKE_CONTEXT_OPS(qp_ops)
{
	fc->vctx.create_qp_ex = qp_create_ex;
}
