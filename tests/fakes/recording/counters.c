/*
 * counters.c - counters objects and ESP flow actions (verbs_context
 * ops), and the completion counters (exported verbs of rdma-core 65).
 *
 * - create_counters makes a "counters"; read_counters answers
 *   value[i] = 1000 + i.
 * - create_flow_action_esp makes a "flow_action"; it and
 *   modify_flow_action_esp record the esp fields (esp.spi, ...), the
 *   AES-GCM key material (keymat.iv, ..., keymat.aes_key as bytes of
 *   key_len) when keymat_proto is AES_GCM with a full struct, the replay
 *   bitmap's size (replay.size) when replay_proto is BMP, and esn when
 *   comp_mask has IBV_FLOW_ACTION_ESP_MASK_ESN.
 * - The completion counters: Debian 12's headers (rdma-core 44) lack
 *   them, so this file declares rdma-core 65's layouts under its own
 *   names and gives the functions their libibverbs symbols with asm
 *   labels (no clash with a header that declares them).  A "comp_cntr"
 *   keeps its count and error count; set/inc change them, read answers
 *   them.  _ibv_query_comp_cntr_caps answers max_value 2^48-1,
 *   max_counters 64, supported_qp_attach_ops 0x3f.
 */
#include "fake.h"

/* ------------------------------------------------------------------ */
/* Counters objects                                                    */
/* ------------------------------------------------------------------ */

static struct ibv_counters *cnt_create(struct ibv_context *context,
				       struct ibv_counters_init_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_counters");
	struct ibv_counters *c;

	FAKE_P(&r, "context", context);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	c = fake_end_new(&r, err, "counters", sizeof(*c));
	if (c != NULL)
		c->context = context;
	return c;
}

static int cnt_destroy(struct ibv_counters *c)
{
	return fake_destroy_simple("destroy_counters", "counters", "counters",
				   c);
}

static int cnt_attach(struct ibv_counters *c, struct ibv_counter_attach_attr *a,
		      struct ibv_flow *flow)
{
	struct fake_rec r;
	int err = fake_begin(&r, "attach_counters_point_flow");

	FAKE_P(&r, "counters", c);
	FAKE_U(&r, "attr.counter_desc", a->counter_desc);
	FAKE_U(&r, "attr.index", a->index);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	FAKE_P(&r, "flow", flow);
	fake_end(&r);
	return err;
}

static int cnt_read(struct ibv_counters *c, uint64_t *values, uint32_t n,
		    uint32_t flags)
{
	struct fake_rec r;
	int err = fake_begin(&r, "read_counters");
	uint32_t i;

	FAKE_P(&r, "counters", c);
	FAKE_U(&r, "ncounters", n);
	FAKE_X(&r, "flags", flags);
	fake_end(&r);
	if (err)
		return err;
	for (i = 0; i < n; i++)
		values[i] = 1000 + i;
	return 0;
}

/* ------------------------------------------------------------------ */
/* ESP flow actions                                                    */
/* ------------------------------------------------------------------ */

static void cnt_esp_fields(struct fake_rec *r,
			   const struct ibv_flow_action_esp_attr *a)
{
	const struct ibv_flow_action_esp_keymat_aes_gcm *k = a->keymat_ptr;
	const struct ibv_flow_action_esp_replay_bmp *b = a->replay_ptr;

	FAKE_P(r, "esp.esp_attr", a->esp_attr);
	if (a->esp_attr != NULL) {
		FAKE_U(r, "esp.spi", a->esp_attr->spi);
		FAKE_U(r, "esp.seq", a->esp_attr->seq);
		FAKE_U(r, "esp.tfc_pad", a->esp_attr->tfc_pad);
		FAKE_X(r, "esp.flags", a->esp_attr->flags);
		FAKE_U(r, "esp.hard_limit_pkts", a->esp_attr->hard_limit_pkts);
	}
	FAKE_U(r, "keymat_proto", a->keymat_proto);
	FAKE_U(r, "keymat_len", a->keymat_len);
	FAKE_P(r, "keymat_ptr", k);
	if (k != NULL &&
	    a->keymat_proto == IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM &&
	    a->keymat_len == sizeof(*k)) {
		FAKE_U(r, "keymat.iv", k->iv);
		FAKE_U(r, "keymat.iv_algo", k->iv_algo);
		FAKE_U(r, "keymat.salt", k->salt);
		FAKE_U(r, "keymat.icv_len", k->icv_len);
		FAKE_U(r, "keymat.key_len", k->key_len);
		if (k->key_len <= sizeof(k->aes_key))
			fake_bytes(r, "keymat.aes_key", k->aes_key, k->key_len);
	}
	FAKE_U(r, "replay_proto", a->replay_proto);
	FAKE_U(r, "replay_len", a->replay_len);
	FAKE_P(r, "replay_ptr", b);
	if (b != NULL && a->replay_proto == IBV_FLOW_ACTION_ESP_REPLAY_BMP &&
	    a->replay_len == sizeof(*b))
		FAKE_U(r, "replay.size", b->size);
	FAKE_P(r, "esp_encap", a->esp_encap);
	FAKE_X(r, "comp_mask", a->comp_mask);
	if (a->comp_mask & IBV_FLOW_ACTION_ESP_MASK_ESN)
		FAKE_U(r, "esn", a->esn);
}

static struct ibv_flow_action *
cnt_create_esp(struct ibv_context *context, struct ibv_flow_action_esp_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_flow_action_esp");
	struct ibv_flow_action *fa;

	FAKE_P(&r, "context", context);
	cnt_esp_fields(&r, a);
	fa = fake_end_new(&r, err, "flow_action", sizeof(*fa));
	if (fa != NULL)
		fa->context = context;
	return fa;
}

static int cnt_modify_esp(struct ibv_flow_action *action,
			  struct ibv_flow_action_esp_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "modify_flow_action_esp");

	FAKE_P(&r, "action", action);
	cnt_esp_fields(&r, a);
	fake_end(&r);
	return err;
}

static int cnt_destroy_action(struct ibv_flow_action *action)
{
	return fake_destroy_simple("destroy_flow_action", "action",
				   "flow_action", action);
}

FAKE_CONTEXT_OPS(cnt_ops)
{
	fc->vctx.create_counters = cnt_create;
	fc->vctx.destroy_counters = cnt_destroy;
	fc->vctx.attach_counters_point_flow = cnt_attach;
	fc->vctx.read_counters = cnt_read;
	fc->vctx.create_flow_action_esp = cnt_create_esp;
	fc->vctx.modify_flow_action_esp = cnt_modify_esp;
	fc->vctx.destroy_flow_action = cnt_destroy_action;
}

/* ------------------------------------------------------------------ */
/* Completion counters (rdma-core 65's verbs.h layouts)                */
/* ------------------------------------------------------------------ */

struct cc_caps {
	uint64_t max_value;
	uint32_t max_counters;
	uint32_t supported_qp_attach_ops;
};

struct cc_init_attr {
	uint32_t comp_mask;
	int type; /* enum ibv_comp_cntr_type */
	uint32_t flags;
};

struct cc_attach_attr {
	uint32_t comp_mask;
	uint32_t op_mask;
};

struct cc_cntr {
	struct ibv_context *context; /* struct ibv_comp_cntr */
	uint32_t handle;
	uint64_t count, err_count; /* the fake's */
};

#define CC_VERB(ret, name, sym, ...)                    \
	FAKE_EXPORT ret name(__VA_ARGS__) __asm__(sym); \
	ret name(__VA_ARGS__)

CC_VERB(int, cc_query_caps, "_ibv_query_comp_cntr_caps",
	struct ibv_context *context, struct cc_caps *caps, size_t caps_size)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_comp_cntr_caps");

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "caps_size", caps_size);
	fake_end(&r);
	if (err)
		return err;
	if (caps_size < sizeof(*caps))
		return EINVAL;
	caps->max_value = (1ull << 48) - 1;
	caps->max_counters = 64;
	caps->supported_qp_attach_ops = 0x3f;
	return 0;
}

CC_VERB(struct cc_cntr *, cc_create, "ibv_create_comp_cntr",
	struct ibv_context *context, struct cc_init_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_comp_cntr");
	struct cc_cntr *c;

	FAKE_P(&r, "context", context);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	FAKE_I(&r, "attr.type", a->type);
	FAKE_X(&r, "attr.flags", a->flags);
	c = fake_end_new(&r, err, "comp_cntr", sizeof(*c));
	if (c == NULL)
		return NULL;
	c->context = context;
	c->handle = fake_next_id();
	return c;
}

CC_VERB(int, cc_destroy, "ibv_destroy_comp_cntr", struct cc_cntr *c)
{
	return fake_destroy_simple("destroy_comp_cntr", "comp_cntr",
				   "comp_cntr", c);
}

/* One of set/set_err/inc/inc_err: record, then *field = v or += v. */
static int cc_update(const char *verb, const char *key, struct cc_cntr *c,
		     uint64_t *field, uint64_t v, int add)
{
	struct fake_rec r;
	int err = fake_begin(&r, verb);

	FAKE_P(&r, "comp_cntr", c);
	FAKE_U(&r, key, v);
	fake_end(&r);
	if (err)
		return err;
	*field = add ? *field + v : v;
	return 0;
}

CC_VERB(int, cc_set, "ibv_set_comp_cntr", struct cc_cntr *c, uint64_t v)
{
	return cc_update("set_comp_cntr", "value", c, &c->count, v, 0);
}

CC_VERB(int, cc_set_err, "ibv_set_err_comp_cntr", struct cc_cntr *c, uint64_t v)
{
	return cc_update("set_err_comp_cntr", "value", c, &c->err_count, v, 0);
}

CC_VERB(int, cc_inc, "ibv_inc_comp_cntr", struct cc_cntr *c, uint64_t v)
{
	return cc_update("inc_comp_cntr", "amount", c, &c->count, v, 1);
}

CC_VERB(int, cc_inc_err, "ibv_inc_err_comp_cntr", struct cc_cntr *c, uint64_t v)
{
	return cc_update("inc_err_comp_cntr", "amount", c, &c->err_count, v, 1);
}

CC_VERB(int, cc_read, "ibv_read_comp_cntr", struct cc_cntr *c, uint64_t *v)
{
	int err = fake_record_simple("read_comp_cntr", "comp_cntr", c);

	if (err)
		return err;
	*v = c->count;
	return 0;
}

CC_VERB(int, cc_read_err, "ibv_read_err_comp_cntr", struct cc_cntr *c,
	uint64_t *v)
{
	int err = fake_record_simple("read_err_comp_cntr", "comp_cntr", c);

	if (err)
		return err;
	*v = c->err_count;
	return 0;
}

CC_VERB(int, cc_qp_attach, "ibv_qp_attach_comp_cntr", struct ibv_qp *qp,
	struct cc_cntr *c, struct cc_attach_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "qp_attach_comp_cntr");

	FAKE_P(&r, "qp", qp);
	FAKE_U(&r, "qp.qp_num", qp->qp_num);
	FAKE_P(&r, "comp_cntr", c);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	FAKE_X(&r, "attr.op_mask", a->op_mask);
	fake_end(&r);
	return err;
}
