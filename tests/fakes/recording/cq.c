/*
 * cq.c - completion channels, CQs (plain and extended), polling and
 * completion events.
 *
 * Each CQ holds a ring of completions under its own lock (nothing
 * global on the data path when recording is off): the posts of qp.c push
 * into it, poll_cq and the extended CQ's start/next/end_poll pop from it.
 * An armed CQ with a channel signals it on its next completion.
 *
 * The extended CQ's extra fields are fixed (fake_set_wc_ex changes them):
 * completion_ts = ts_base + n, completion_wallclock_ns = wallclock_base +
 * n, where n counts the CQ's completions from 1; cvlan and flow_tag as
 * set (defaults below).
 */
#include "fake.h"

#include <sys/eventfd.h>
#include <unistd.h>

#define CQ_MAX_CQE 65536
#define CQ_CHANNEL_EVENTS 4096

static uint64_t cq_ts_base = 1000000;
static uint64_t cq_wallclock_base = 1700000000000000000ull;
static uint16_t cq_cvlan = 0x0123;
static uint32_t cq_flow_tag = 0xabcd;

struct cq_channel {
	struct ibv_comp_channel ch;
	pthread_mutex_t lock;
	struct ibv_cq *events[CQ_CHANNEL_EVENTS];
	unsigned head, count;
};

struct cq_fake {
	struct ibv_cq_ex x; /* begins with a struct ibv_cq */
	pthread_mutex_t lock; /* the ring */
	pthread_mutex_t poll_lock; /* start_poll .. end_poll */
	struct ibv_wc *ring;
	uint32_t cap, head, count;
	int armed;
	uint64_t pushed; /* completions queued so far */
	uint64_t cur_n; /* the n of cur */
	struct ibv_wc cur; /* the entry an extended poll is on */
	long overflows;
};

static long cq_overflows_total;

static struct cq_fake *cq_of(struct ibv_cq *cq)
{
	return (struct cq_fake *)cq;
}

static struct cq_fake *cqx_of(struct ibv_cq_ex *cq)
{
	return (struct cq_fake *)cq;
}

/* ------------------------------------------------------------------ */
/* Completion channels                                                 */
/* ------------------------------------------------------------------ */

FAKE_EXPORT struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_comp_channel");
	struct cq_channel *c;

	FAKE_P(&r, "context", context);
	c = fake_end_new(&r, err, "comp_channel", sizeof(*c));
	if (c == NULL)
		return NULL;
	c->ch.context = context;
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->ch.fd < 0) {
		err = errno;
		fake_free_obj("comp_channel", c);
		fake_set_errno(err);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	return &c->ch;
}

FAKE_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct cq_channel *c = (struct cq_channel *)channel;
	int err =
		fake_record_simple("destroy_comp_channel", "channel", channel);

	if (err)
		return err;
	if (channel->refcnt)
		return EBUSY;
	close(channel->fd);
	pthread_mutex_destroy(&c->lock);
	fake_free_obj("comp_channel", c);
	return 0;
}

/* Called with the CQ's lock held. */
static void cq_signal(struct cq_fake *q)
{
	struct cq_channel *c = (struct cq_channel *)q->x.channel;
	uint64_t one = 1;

	q->armed = 0;
	pthread_mutex_lock(&c->lock);
	if (c->count < CQ_CHANNEL_EVENTS) {
		c->events[(c->head + c->count) % CQ_CHANNEL_EVENTS] =
			(struct ibv_cq *)&q->x;
		c->count++;
		if (write(c->ch.fd, &one, sizeof(one)) != sizeof(one))
			c->count--;
	}
	pthread_mutex_unlock(&c->lock);
}

FAKE_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
				 struct ibv_cq **cq, void **cq_context)
{
	struct cq_channel *c = (struct cq_channel *)channel;
	struct fake_rec r;
	int err = fake_begin(&r, "get_cq_event");
	uint64_t v;

	FAKE_P(&r, "channel", channel);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return -1;
	}
	if (read(channel->fd, &v, sizeof(v)) != sizeof(v))
		return -1; /* errno from read: EAGAIN when non-blocking */
	pthread_mutex_lock(&c->lock);
	if (c->count == 0) {
		pthread_mutex_unlock(&c->lock);
		errno = EAGAIN;
		return -1;
	}
	*cq = c->events[c->head];
	c->head = (c->head + 1) % CQ_CHANNEL_EVENTS;
	c->count--;
	pthread_mutex_unlock(&c->lock);
	*cq_context = (*cq)->cq_context;
	return 0;
}

FAKE_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	struct fake_rec r;

	fake_begin(&r, "ack_cq_events");
	FAKE_P(&r, "cq", cq);
	FAKE_U(&r, "nevents", nevents);
	fake_end(&r);
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_mutex_unlock(&cq->mutex);
}

/* ------------------------------------------------------------------ */
/* The ring                                                            */
/* ------------------------------------------------------------------ */

int fake_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	struct cq_fake *q = cq_of(cq);
	int status = fake_take_failure("completion");
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	if (q->count == q->cap) {
		q->overflows++;
		__atomic_add_fetch(&cq_overflows_total, 1, __ATOMIC_RELAXED);
		rc = -1;
	} else {
		struct ibv_wc *slot = &q->ring[(q->head + q->count) % q->cap];

		*slot = *wc;
		if (status)
			slot->status = (enum ibv_wc_status)status;
		q->count++;
		q->pushed++;
		if (q->armed && q->x.channel)
			cq_signal(q);
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

/* Called with the lock held and count > 0. */
static void cq_pop(struct cq_fake *q, struct ibv_wc *out)
{
	*out = q->ring[q->head];
	q->head = (q->head + 1) % q->cap;
	q->count--;
}

static int cq_poll(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct cq_fake *q = cq_of(cq);
	int n = 0;

	if (fake_recording()) {
		struct fake_rec r;
		int err = fake_begin(&r, "poll_cq");

		FAKE_P(&r, "cq", cq);
		FAKE_I(&r, "num_entries", num_entries);
		fake_end(&r);
		if (err)
			return fake_neg_errno(err);
	}
	pthread_mutex_lock(&q->lock);
	while (n < num_entries && q->count > 0)
		cq_pop(q, &wc[n++]);
	pthread_mutex_unlock(&q->lock);
	return n;
}

static int cq_req_notify(struct ibv_cq *cq, int solicited_only)
{
	struct cq_fake *q = cq_of(cq);
	struct fake_rec r;
	int err = fake_begin(&r, "req_notify_cq");

	FAKE_P(&r, "cq", cq);
	FAKE_I(&r, "solicited_only", solicited_only);
	fake_end(&r);
	if (err)
		return err;
	pthread_mutex_lock(&q->lock);
	q->armed = 1;
	/* Completions already queued do not signal: only the next one, as
	 * on hardware. */
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Extended polling                                                    */
/* ------------------------------------------------------------------ */

/* Make the next entry current, or ENOENT.  start_poll takes the CQ's
 * poll lock and end_poll (or a start_poll that finds nothing) releases
 * it, as a provider does; the ring's own lock is held only while an entry
 * is taken, so a post between start_poll and end_poll from the polling
 * thread (its completion lands on this CQ) cannot deadlock. */
static int cq_ex_advance(struct cq_fake *q)
{
	int rc = ENOENT;

	pthread_mutex_lock(&q->lock);
	if (q->count > 0) {
		cq_pop(q, &q->cur);
		q->cur_n = q->pushed - q->count;
		q->x.status = q->cur.status;
		q->x.wr_id = q->cur.wr_id;
		rc = 0;
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

static int cq_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	int rc;

	if (fake_recording()) {
		struct fake_rec r;
		int err = fake_begin(&r, "start_poll");

		FAKE_P(&r, "cq", cq);
		FAKE_X(&r, "attr.comp_mask", attr->comp_mask);
		fake_end(&r);
		if (err)
			return err;
	}
	if (attr->comp_mask)
		return EINVAL;
	pthread_mutex_lock(&cqx_of(cq)->poll_lock);
	rc = cq_ex_advance(cqx_of(cq));
	if (rc)
		pthread_mutex_unlock(&cqx_of(cq)->poll_lock);
	return rc;
}

static int cq_next_poll(struct ibv_cq_ex *cq)
{
	if (fake_recording()) {
		int err = fake_record_simple("next_poll", "cq", cq);

		if (err) /* injected: the provider's failure, not ENOENT */
			return err;
	}
	return cq_ex_advance(cqx_of(cq));
}

static void cq_end_poll(struct ibv_cq_ex *cq)
{
	if (fake_recording())
		fake_record_simple("end_poll", "cq", cq);
	pthread_mutex_unlock(&cqx_of(cq)->poll_lock);
}

/* One reader per field: records "read_<field> cq=..." and answers the
 * current entry's value. */
#define CQ_READER(field, type, expr)                                  \
	static type cq_read_##field(struct ibv_cq_ex *cq)             \
	{                                                             \
		struct cq_fake *q = cqx_of(cq);                       \
		(void)q;                                              \
		if (fake_recording())                                 \
			fake_record_simple("read_" #field, "cq", cq); \
		return (type)(expr);                                  \
	}

CQ_READER(opcode, enum ibv_wc_opcode, q->cur.opcode)
CQ_READER(vendor_err, uint32_t, q->cur.vendor_err)
CQ_READER(byte_len, uint32_t, q->cur.byte_len)
CQ_READER(imm_data, __be32, q->cur.imm_data)
CQ_READER(qp_num, uint32_t, q->cur.qp_num)
CQ_READER(src_qp, uint32_t, q->cur.src_qp)
CQ_READER(wc_flags, unsigned int, q->cur.wc_flags)
CQ_READER(slid, uint32_t, q->cur.slid)
CQ_READER(sl, uint8_t, q->cur.sl)
CQ_READER(dlid_path_bits, uint8_t, q->cur.dlid_path_bits)
CQ_READER(completion_ts, uint64_t,
	  __atomic_load_n(&cq_ts_base, __ATOMIC_RELAXED) + q->cur_n)
CQ_READER(completion_wallclock_ns, uint64_t,
	  __atomic_load_n(&cq_wallclock_base, __ATOMIC_RELAXED) + q->cur_n)
CQ_READER(cvlan, uint16_t, __atomic_load_n(&cq_cvlan, __ATOMIC_RELAXED))
CQ_READER(flow_tag, uint32_t, __atomic_load_n(&cq_flow_tag, __ATOMIC_RELAXED))

/* Tag matching info: fixed, tag 0x1122334455667788 and priv 0xfeedbeef. */
static void cq_read_tm_info(struct ibv_cq_ex *cq, struct ibv_wc_tm_info *tm)
{
	if (fake_recording())
		fake_record_simple("read_tm_info", "cq", cq);
	memset(tm, 0, sizeof(*tm));
	tm->tag = 0x1122334455667788ull;
	tm->priv = 0xfeedbeef;
}

/* ------------------------------------------------------------------ */
/* Creation                                                            */
/* ------------------------------------------------------------------ */

static struct cq_fake *cq_new(struct ibv_context *context, int cqe,
			      void *cq_context,
			      struct ibv_comp_channel *channel, int comp_vector)
{
	struct cq_fake *q;

	if (cqe < 1 || cqe > CQ_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	q = fake_new_obj("cq", sizeof(*q));
	if (q == NULL)
		return NULL;
	q->ring = calloc((size_t)cqe, sizeof(*q->ring));
	if (q->ring == NULL) {
		fake_free_obj("cq", q);
		errno = ENOMEM;
		return NULL;
	}
	q->cap = (uint32_t)cqe;
	pthread_mutex_init(&q->lock, NULL);
	pthread_mutex_init(&q->poll_lock, NULL);
	pthread_mutex_init(&q->x.mutex, NULL);
	pthread_cond_init(&q->x.cond, NULL);
	q->x.context = context;
	q->x.channel = channel;
	q->x.cq_context = cq_context;
	q->x.cqe = cqe;
	q->x.handle = fake_next_id();
	if (channel)
		__atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_RELAXED);
	return q;
}

FAKE_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
					 void *cq_context,
					 struct ibv_comp_channel *channel,
					 int comp_vector)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_cq");
	struct cq_fake *q;

	FAKE_P(&r, "context", context);
	FAKE_I(&r, "cqe", cqe);
	FAKE_P(&r, "cq_context", cq_context);
	FAKE_P(&r, "channel", channel);
	FAKE_I(&r, "comp_vector", comp_vector);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	q = cq_new(context, cqe, cq_context, channel, comp_vector);
	return q ? (struct ibv_cq *)&q->x : NULL;
}

static struct ibv_cq_ex *cq_create_ex(struct ibv_context *context,
				      struct ibv_cq_init_attr_ex *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_cq_ex");
	struct cq_fake *q;

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "attr.cqe", a->cqe);
	FAKE_P(&r, "attr.cq_context", a->cq_context);
	FAKE_P(&r, "attr.channel", a->channel);
	FAKE_U(&r, "attr.comp_vector", a->comp_vector);
	FAKE_X(&r, "attr.wc_flags", a->wc_flags);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS)
		FAKE_X(&r, "attr.flags", a->flags);
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD)
		FAKE_P(&r, "attr.parent_domain", a->parent_domain);
	fake_end(&r);
	if (!err && (a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
						IBV_CQ_INIT_ATTR_MASK_PD)))
		err = EINVAL;
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	if (a->cqe > CQ_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	q = cq_new(context, (int)a->cqe, a->cq_context, a->channel,
		   (int)a->comp_vector);
	if (q == NULL)
		return NULL;
	q->x.start_poll = cq_start_poll;
	q->x.next_poll = cq_next_poll;
	q->x.end_poll = cq_end_poll;
	q->x.read_opcode = cq_read_opcode;
	q->x.read_vendor_err = cq_read_vendor_err;
	q->x.read_byte_len = cq_read_byte_len;
	q->x.read_imm_data = cq_read_imm_data;
	q->x.read_qp_num = cq_read_qp_num;
	q->x.read_src_qp = cq_read_src_qp;
	q->x.read_wc_flags = cq_read_wc_flags;
	q->x.read_slid = cq_read_slid;
	q->x.read_sl = cq_read_sl;
	q->x.read_dlid_path_bits = cq_read_dlid_path_bits;
	q->x.read_completion_ts = cq_read_completion_ts;
	q->x.read_completion_wallclock_ns = cq_read_completion_wallclock_ns;
	q->x.read_cvlan = cq_read_cvlan;
	q->x.read_flow_tag = cq_read_flow_tag;
	q->x.read_tm_info = cq_read_tm_info;
	return &q->x;
}

FAKE_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct cq_fake *q = cq_of(cq);
	struct fake_rec r;
	int err = fake_begin(&r, "resize_cq");
	struct ibv_wc *ring;
	uint32_t i;

	FAKE_P(&r, "cq", cq);
	FAKE_I(&r, "cqe", cqe);
	fake_end(&r);
	if (err)
		return err;
	if (cqe < 1 || cqe > CQ_MAX_CQE)
		return EINVAL;
	pthread_mutex_lock(&q->lock);
	if ((uint32_t)cqe < q->count) {
		pthread_mutex_unlock(&q->lock);
		return EINVAL;
	}
	ring = calloc((size_t)cqe, sizeof(*ring));
	if (ring == NULL) {
		pthread_mutex_unlock(&q->lock);
		return ENOMEM;
	}
	for (i = 0; i < q->count; i++)
		ring[i] = q->ring[(q->head + i) % q->cap];
	free(q->ring);
	q->ring = ring;
	q->head = 0;
	q->cap = (uint32_t)cqe;
	q->x.cqe = cqe;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

FAKE_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct cq_fake *q = cq_of(cq);
	int err = fake_record_simple("destroy_cq", "cq", cq);

	if (err)
		return err;
	if (cq->channel)
		__atomic_sub_fetch(&cq->channel->refcnt, 1, __ATOMIC_RELAXED);
	free(q->ring);
	pthread_mutex_destroy(&q->lock);
	pthread_mutex_destroy(&q->poll_lock);
	pthread_mutex_destroy(&q->x.mutex);
	pthread_cond_destroy(&q->x.cond);
	fake_free_obj("cq", q);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Controls                                                            */
/* ------------------------------------------------------------------ */

/* The extended CQ's fixed values (see the top of this file). */
FAKE_EXPORT void fake_set_wc_ex(uint64_t ts_base, uint64_t wallclock_base,
				unsigned int cvlan, unsigned int flow_tag)
{
	__atomic_store_n(&cq_ts_base, ts_base, __ATOMIC_RELAXED);
	__atomic_store_n(&cq_wallclock_base, wallclock_base, __ATOMIC_RELAXED);
	__atomic_store_n(&cq_cvlan, (uint16_t)cvlan, __ATOMIC_RELAXED);
	__atomic_store_n(&cq_flow_tag, (uint32_t)flow_tag, __ATOMIC_RELAXED);
}

/* Completions dropped because a CQ was full, all CQs together. */
FAKE_EXPORT long fake_cq_overflows(void)
{
	return __atomic_load_n(&cq_overflows_total, __ATOMIC_RELAXED);
}

FAKE_CONTEXT_OPS(cq_ops)
{
	fc->vctx.context.ops.poll_cq = cq_poll;
	fc->vctx.context.ops.req_notify_cq = cq_req_notify;
	fc->vctx.create_cq_ex = cq_create_ex;
}
