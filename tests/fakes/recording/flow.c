/*
 * flow.c - flow steering: create_flow/destroy_flow as verbs_context ops.
 *
 * The record has the ibv_flow_attr fields, then each spec that follows
 * it as spec[i].type, spec[i].size and spec[i].bytes (the whole spec,
 * header included, b:hex): a test decodes the bytes with the layout of
 * that spec type.
 */
#include "fake.h"

#include <stdio.h>

static struct ibv_flow *flow_create(struct ibv_qp *qp, struct ibv_flow_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_flow");
	const char *p = (const char *)(a + 1);
	struct ibv_flow *flow;
	char key[32];
	unsigned i;

	FAKE_U(&r, "qp_num", qp->qp_num);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	FAKE_U(&r, "attr.type", a->type);
	FAKE_U(&r, "attr.size", a->size);
	FAKE_U(&r, "attr.priority", a->priority);
	FAKE_U(&r, "attr.num_of_specs", a->num_of_specs);
	FAKE_U(&r, "attr.port", a->port);
	FAKE_X(&r, "attr.flags", a->flags);
	for (i = 0; i < a->num_of_specs; i++) {
		const struct ibv_flow_spec *s = (const void *)p;

		if ((size_t)(p - (const char *)a) + sizeof(s->hdr) > a->size ||
		    s->hdr.size < sizeof(s->hdr)) {
			fake_add(&r, "spec[%u].bad=1", i);
			break;
		}
		fake_add(&r, "spec[%u].type=0x%x spec[%u].size=%u", i,
			 s->hdr.type, i, s->hdr.size);
		snprintf(key, sizeof(key), "spec[%u].bytes", i);
		fake_bytes(&r, key, s, s->hdr.size);
		p += s->hdr.size;
	}
	fake_end(&r);
	if (err) {
		errno = err;
		return NULL;
	}
	flow = fake_new_obj("flow", sizeof(*flow));
	if (flow == NULL)
		return NULL;
	flow->context = qp->context;
	flow->handle = fake_next_id();
	return flow;
}

static int flow_destroy(struct ibv_flow *flow)
{
	int err = fake_record_simple("destroy_flow", "flow", flow);

	if (err)
		return err;
	fake_free_obj("flow", flow);
	return 0;
}

FAKE_CONTEXT_OPS(flow_ops)
{
	fc->vctx.ibv_create_flow = flow_create;
	fc->vctx.ibv_destroy_flow = flow_destroy;
}
