/*
 * srq.c - shared receive queues (post_srq_recv is in post.c).
 */
#include "fake.h"

struct srq_fake {
	struct ibv_srq srq;
	struct ibv_srq_attr attr;
};

static void srq_attr_fields(struct fake_rec *r, const struct ibv_srq_attr *a)
{
	FAKE_U(r, "attr.max_wr", a->max_wr);
	FAKE_U(r, "attr.max_sge", a->max_sge);
	FAKE_U(r, "attr.srq_limit", a->srq_limit);
}

FAKE_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
					   struct ibv_srq_init_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_srq");
	struct srq_fake *s;

	FAKE_P(&r, "pd", pd);
	FAKE_P(&r, "srq_context", a->srq_context);
	srq_attr_fields(&r, &a->attr);
	fake_end(&r);
	if (!err && (a->attr.max_wr == 0 || a->attr.max_wr > 4096 ||
		     a->attr.max_sge > 16))
		err = EINVAL;
	s = fake_new_unless(err, "srq", sizeof(*s));
	if (s == NULL)
		return NULL;
	s->srq.context = pd->context;
	s->srq.srq_context = a->srq_context;
	s->srq.pd = pd;
	s->srq.handle = fake_next_id();
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	s->attr = a->attr;
	return &s->srq;
}

FAKE_EXPORT int ibv_modify_srq(struct ibv_srq *srq,
			       struct ibv_srq_attr *srq_attr, int srq_attr_mask)
{
	struct srq_fake *s = (struct srq_fake *)srq;
	struct fake_rec r;
	int err = fake_begin(&r, "modify_srq");

	FAKE_P(&r, "srq", srq);
	FAKE_X(&r, "srq_attr_mask", (unsigned int)srq_attr_mask);
	if (srq_attr_mask & IBV_SRQ_MAX_WR)
		FAKE_U(&r, "attr.max_wr", srq_attr->max_wr);
	if (srq_attr_mask & IBV_SRQ_LIMIT)
		FAKE_U(&r, "attr.srq_limit", srq_attr->srq_limit);
	fake_end(&r);
	if (err)
		return err;
	pthread_mutex_lock(&srq->mutex);
	if (srq_attr_mask & IBV_SRQ_MAX_WR)
		s->attr.max_wr = srq_attr->max_wr;
	if (srq_attr_mask & IBV_SRQ_LIMIT)
		s->attr.srq_limit = srq_attr->srq_limit;
	pthread_mutex_unlock(&srq->mutex);
	return 0;
}

FAKE_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct srq_fake *s = (struct srq_fake *)srq;
	int err = fake_record_simple("query_srq", "srq", srq);

	if (err)
		return err;
	pthread_mutex_lock(&srq->mutex);
	*attr = s->attr;
	pthread_mutex_unlock(&srq->mutex);
	return 0;
}

FAKE_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	int err = fake_record_simple("destroy_srq", "srq", srq);

	if (err)
		return err;
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	fake_free_obj("srq", (struct srq_fake *)srq);
	return 0;
}
