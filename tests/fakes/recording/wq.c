/*
 * wq.c - work queues and RSS indirection tables: the verbs.h inlines over
 * verbs_context ops create_wq, modify_wq, destroy_wq,
 * create_rwq_ind_table and destroy_rwq_ind_table, and the WQ's own
 * post_recv (ibv_post_wq_recv).
 *
 * Answers: a WQ in RESET with the sizes asked for (written back as
 * given), a fresh wq_num; modify_wq stores the state asked for; a posted
 * receive completes nothing (RSS has no traffic here); a table gets a
 * fresh ind_tbl_num.
 */
#include "fake.h"

static int wq_post_recv(struct ibv_wq *wq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr *w;
	struct fake_rec r;
	int err = fake_begin(&r, "post_wq_recv");
	int i, j;

	if (r.on) {
		FAKE_U(&r, "wq_num", wq->wq_num);
		for (w = wr, i = 0; w; w = w->next, i++) {
			fake_add(&r, "wr[%d].wr_id=%llu wr[%d].num_sge=%d", i,
				 (unsigned long long)w->wr_id, i, w->num_sge);
			for (j = 0; j < w->num_sge; j++)
				fake_add(&r,
					 "wr[%d].sg_list[%d].addr=0x%llx "
					 "wr[%d].sg_list[%d].length=%u "
					 "wr[%d].sg_list[%d].lkey=%u",
					 i, j,
					 (unsigned long long)w->sg_list[j].addr,
					 i, j, w->sg_list[j].length, i, j,
					 w->sg_list[j].lkey);
		}
		FAKE_I(&r, "count", i);
		fake_end(&r);
	}
	if (err) {
		*bad_wr = wr;
		return err;
	}
	return 0;
}

static struct ibv_wq *wq_create(struct ibv_context *context,
				struct ibv_wq_init_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_wq");
	struct ibv_wq *wq;

	FAKE_P(&r, "context", context);
	FAKE_P(&r, "attr.wq_context", a->wq_context);
	FAKE_U(&r, "attr.wq_type", a->wq_type);
	FAKE_U(&r, "attr.max_wr", a->max_wr);
	FAKE_U(&r, "attr.max_sge", a->max_sge);
	FAKE_P(&r, "attr.pd", a->pd);
	FAKE_P(&r, "attr.cq", a->cq);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	if (a->comp_mask & IBV_WQ_INIT_ATTR_FLAGS)
		FAKE_X(&r, "attr.create_flags", a->create_flags);
	fake_end(&r);
	if (!err && (a->max_wr == 0 || a->max_wr > 4096 || a->max_sge > 16))
		err = EINVAL;
	wq = fake_new_unless(err, "wq", sizeof(*wq));
	if (wq == NULL)
		return NULL;
	wq->context = context;
	wq->pd = a->pd;
	wq->cq = a->cq;
	wq->wq_num = fake_next_id();
	wq->handle = fake_next_id();
	wq->state = IBV_WQS_RESET;
	wq->wq_type = a->wq_type;
	wq->post_recv = wq_post_recv;
	return wq;
}

static int wq_modify(struct ibv_wq *wq, struct ibv_wq_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "modify_wq");

	FAKE_U(&r, "wq_num", wq->wq_num);
	FAKE_X(&r, "attr.attr_mask", a->attr_mask);
	if (a->attr_mask & IBV_WQ_ATTR_STATE)
		FAKE_U(&r, "attr.wq_state", a->wq_state);
	if (a->attr_mask & IBV_WQ_ATTR_CURR_STATE)
		FAKE_U(&r, "attr.curr_wq_state", a->curr_wq_state);
	if (a->attr_mask & IBV_WQ_ATTR_FLAGS) {
		FAKE_X(&r, "attr.flags", a->flags);
		FAKE_X(&r, "attr.flags_mask", a->flags_mask);
	}
	fake_end(&r);
	if (err)
		return err;
	if (a->attr_mask & IBV_WQ_ATTR_STATE)
		wq->state = a->wq_state;
	return 0;
}

static int wq_destroy(struct ibv_wq *wq)
{
	struct fake_rec r;
	int err = fake_begin(&r, "destroy_wq");

	FAKE_U(&r, "wq_num", wq->wq_num);
	fake_end(&r);
	if (err)
		return err;
	/* ibv_create_wq's inline initialised these */
	pthread_mutex_destroy(&wq->mutex);
	pthread_cond_destroy(&wq->cond);
	fake_free_obj("wq", wq);
	return 0;
}

static struct ibv_rwq_ind_table *
wq_create_ind_table(struct ibv_context *context,
		    struct ibv_rwq_ind_table_init_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_rwq_ind_table");
	struct ibv_rwq_ind_table *t;
	uint32_t i,
		n = a->log_ind_tbl_size < 16 ? 1u << a->log_ind_tbl_size : 0;

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "attr.log_ind_tbl_size", a->log_ind_tbl_size);
	for (i = 0; i < n; i++)
		fake_add(&r, "attr.ind_tbl[%u].wq_num=%u", i,
			 a->ind_tbl[i]->wq_num);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	fake_end(&r);
	if (!err && n == 0)
		err = EINVAL;
	t = fake_new_unless(err, "rwq_ind_table", sizeof(*t));
	if (t == NULL)
		return NULL;
	t->context = context;
	t->ind_tbl_handle = (int)fake_next_id();
	t->ind_tbl_num = (int)fake_next_id();
	return t;
}

static int wq_destroy_ind_table(struct ibv_rwq_ind_table *t)
{
	struct fake_rec r;
	int err = fake_begin(&r, "destroy_rwq_ind_table");

	FAKE_I(&r, "ind_tbl_num", t->ind_tbl_num);
	fake_end(&r);
	if (err)
		return err;
	fake_free_obj("rwq_ind_table", t);
	return 0;
}

FAKE_CONTEXT_OPS(wq_ops)
{
	fc->vctx.create_wq = wq_create;
	fc->vctx.modify_wq = wq_modify;
	fc->vctx.destroy_wq = wq_destroy;
	fc->vctx.create_rwq_ind_table = wq_create_ind_table;
	fc->vctx.destroy_rwq_ind_table = wq_destroy_ind_table;
}
