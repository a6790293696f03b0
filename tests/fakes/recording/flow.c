/*
 * flow.c - flow steering: create_flow/destroy_flow as verbs_context ops.
 *
 * The record has the ibv_flow_attr fields, then for each spec that
 * follows it: spec[i].type, spec[i].size, and, for the spec types of
 * verbs.h below, each field of its val and mask filters in host order
 * (spec[i].val.ether_type=2048, spec[i].mask.dst_mac=b:ffffffffffff),
 * read with the C compiler's layout of the struct (not the binding's);
 * action_tag records spec[i].tag_id.  Any other type records its bytes
 * (spec[i].bytes, the whole spec, header included).
 */
#include "fake.h"

#include <stdio.h>

enum flow_kind { FLOW_U8, FLOW_BE16, FLOW_BE32, FLOW_MAC, FLOW_IP6 };

struct flow_field {
	const char *name;
	size_t off; /* within the filter */
	enum flow_kind kind;
};

#define FLOW_F(type, field, kind)                   \
	{                                           \
#field, offsetof(type, field), kind \
	}
#define FLOW_END                 \
	{                        \
		NULL, 0, FLOW_U8 \
	}

static const struct flow_field flow_eth[] = {
	FLOW_F(struct ibv_flow_eth_filter, dst_mac, FLOW_MAC),
	FLOW_F(struct ibv_flow_eth_filter, src_mac, FLOW_MAC),
	FLOW_F(struct ibv_flow_eth_filter, ether_type, FLOW_BE16),
	FLOW_F(struct ibv_flow_eth_filter, vlan_tag, FLOW_BE16),
	FLOW_END,
};
static const struct flow_field flow_ipv4[] = {
	FLOW_F(struct ibv_flow_ipv4_filter, src_ip, FLOW_BE32),
	FLOW_F(struct ibv_flow_ipv4_filter, dst_ip, FLOW_BE32),
	FLOW_END,
};
static const struct flow_field flow_ipv4_ext[] = {
	FLOW_F(struct ibv_flow_ipv4_ext_filter, src_ip, FLOW_BE32),
	FLOW_F(struct ibv_flow_ipv4_ext_filter, dst_ip, FLOW_BE32),
	FLOW_F(struct ibv_flow_ipv4_ext_filter, proto, FLOW_U8),
	FLOW_F(struct ibv_flow_ipv4_ext_filter, tos, FLOW_U8),
	FLOW_F(struct ibv_flow_ipv4_ext_filter, ttl, FLOW_U8),
	FLOW_F(struct ibv_flow_ipv4_ext_filter, flags, FLOW_U8),
	FLOW_END,
};
static const struct flow_field flow_ipv6[] = {
	FLOW_F(struct ibv_flow_ipv6_filter, src_ip, FLOW_IP6),
	FLOW_F(struct ibv_flow_ipv6_filter, dst_ip, FLOW_IP6),
	FLOW_F(struct ibv_flow_ipv6_filter, flow_label, FLOW_BE32),
	FLOW_F(struct ibv_flow_ipv6_filter, next_hdr, FLOW_U8),
	FLOW_F(struct ibv_flow_ipv6_filter, traffic_class, FLOW_U8),
	FLOW_F(struct ibv_flow_ipv6_filter, hop_limit, FLOW_U8),
	FLOW_END,
};
static const struct flow_field flow_esp[] = {
	FLOW_F(struct ibv_flow_esp_filter, spi, FLOW_BE32),
	FLOW_F(struct ibv_flow_esp_filter, seq, FLOW_BE32),
	FLOW_END,
};
static const struct flow_field flow_tcp_udp[] = {
	FLOW_F(struct ibv_flow_tcp_udp_filter, dst_port, FLOW_BE16),
	FLOW_F(struct ibv_flow_tcp_udp_filter, src_port, FLOW_BE16),
	FLOW_END,
};
static const struct flow_field flow_gre[] = {
	FLOW_F(struct ibv_flow_gre_filter, c_ks_res0_ver, FLOW_BE16),
	FLOW_F(struct ibv_flow_gre_filter, protocol, FLOW_BE16),
	FLOW_F(struct ibv_flow_gre_filter, key, FLOW_BE32),
	FLOW_END,
};
static const struct flow_field flow_mpls[] = {
	FLOW_F(struct ibv_flow_mpls_filter, label, FLOW_BE32),
	FLOW_END,
};
static const struct flow_field flow_tunnel[] = {
	FLOW_F(struct ibv_flow_tunnel_filter, tunnel_id, FLOW_BE32),
	FLOW_END,
};

#define FLOW_SPEC(t, st, fields)                                             \
	{                                                                    \
		t, sizeof(st), offsetof(st, val), offsetof(st, mask), fields \
	}

static const struct {
	unsigned type; /* without IBV_FLOW_SPEC_INNER */
	size_t size, off_val, off_mask;
	const struct flow_field *fields;
} flow_specs[] = {
	FLOW_SPEC(IBV_FLOW_SPEC_ETH, struct ibv_flow_spec_eth, flow_eth),
	FLOW_SPEC(IBV_FLOW_SPEC_IPV4, struct ibv_flow_spec_ipv4, flow_ipv4),
	FLOW_SPEC(IBV_FLOW_SPEC_IPV4_EXT, struct ibv_flow_spec_ipv4_ext,
		  flow_ipv4_ext),
	FLOW_SPEC(IBV_FLOW_SPEC_IPV6, struct ibv_flow_spec_ipv6, flow_ipv6),
	FLOW_SPEC(IBV_FLOW_SPEC_ESP, struct ibv_flow_spec_esp, flow_esp),
	FLOW_SPEC(IBV_FLOW_SPEC_TCP, struct ibv_flow_spec_tcp_udp,
		  flow_tcp_udp),
	FLOW_SPEC(IBV_FLOW_SPEC_UDP, struct ibv_flow_spec_tcp_udp,
		  flow_tcp_udp),
	FLOW_SPEC(IBV_FLOW_SPEC_GRE, struct ibv_flow_spec_gre, flow_gre),
	FLOW_SPEC(IBV_FLOW_SPEC_MPLS, struct ibv_flow_spec_mpls, flow_mpls),
	FLOW_SPEC(IBV_FLOW_SPEC_VXLAN_TUNNEL, struct ibv_flow_spec_tunnel,
		  flow_tunnel),
};

static void flow_filter(struct fake_rec *r, unsigned i, const char *which,
			const unsigned char *f, const struct flow_field *fl)
{
	char key[64];

	for (; fl->name; fl++) {
		const unsigned char *p = f + fl->off;
		uint16_t v16;
		uint32_t v32;

		snprintf(key, sizeof(key), "spec[%u].%s.%s", i, which,
			 fl->name);
		switch (fl->kind) {
		case FLOW_U8:
			FAKE_U(r, key, *p);
			break;
		case FLOW_BE16:
			memcpy(&v16, p, 2);
			FAKE_U(r, key, be16toh(v16));
			break;
		case FLOW_BE32:
			memcpy(&v32, p, 4);
			FAKE_U(r, key, be32toh(v32));
			break;
		case FLOW_MAC:
			fake_bytes(r, key, p, 6);
			break;
		case FLOW_IP6:
			fake_bytes(r, key, p, 16);
			break;
		}
	}
}

/* Record one spec (its size checked against the attr's). */
static void flow_spec(struct fake_rec *r, unsigned i,
		      const struct ibv_flow_spec *s)
{
	unsigned base = s->hdr.type & ~(unsigned)IBV_FLOW_SPEC_INNER;
	const unsigned char *b = (const unsigned char *)s;
	char key[32];
	size_t k;

	fake_add(r, "spec[%u].type=0x%x spec[%u].size=%u", i, s->hdr.type, i,
		 s->hdr.size);
	for (k = 0; k < sizeof(flow_specs) / sizeof(flow_specs[0]); k++) {
		if (flow_specs[k].type != base)
			continue;
		if (s->hdr.size < flow_specs[k].size)
			break;
		flow_filter(r, i, "val", b + flow_specs[k].off_val,
			    flow_specs[k].fields);
		flow_filter(r, i, "mask", b + flow_specs[k].off_mask,
			    flow_specs[k].fields);
		return;
	}
	if (s->hdr.type == IBV_FLOW_SPEC_ACTION_TAG &&
	    s->hdr.size >= sizeof(struct ibv_flow_spec_action_tag)) {
		fake_add(r, "spec[%u].tag_id=%u", i, s->flow_tag.tag_id);
		return;
	}
	if (s->hdr.type == IBV_FLOW_SPEC_ACTION_DROP)
		return;
	snprintf(key, sizeof(key), "spec[%u].bytes", i);
	fake_bytes(r, key, s, s->hdr.size);
}

static struct ibv_flow *flow_create(struct ibv_qp *qp, struct ibv_flow_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_flow");
	const char *p = (const char *)(a + 1);
	struct ibv_flow *flow;
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

		size_t off = (size_t)(p - (const char *)a);

		if (off + sizeof(s->hdr) > a->size ||
		    s->hdr.size < sizeof(s->hdr) ||
		    off + s->hdr.size > a->size) {
			fake_add(&r, "spec[%u].bad=1", i);
			break;
		}
		flow_spec(&r, i, s);
		p += s->hdr.size;
	}
	flow = fake_end_new(&r, err, "flow", sizeof(*flow));
	if (flow == NULL)
		return NULL;
	flow->context = qp->context;
	flow->handle = fake_next_id();
	return flow;
}

static int flow_destroy(struct ibv_flow *flow)
{
	return fake_destroy_simple("destroy_flow", "flow", "flow", flow);
}

FAKE_CONTEXT_OPS(flow_ops)
{
	fc->vctx.ibv_create_flow = flow_create;
	fc->vctx.ibv_destroy_flow = flow_destroy;
}
