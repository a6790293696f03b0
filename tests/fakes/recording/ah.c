/*
 * ah.c - address handles.
 */
#include "fake.h"

#include <stdio.h>

void fake_add_ah_attr(struct fake_rec *r, const char *p,
		      const struct ibv_ah_attr *a)
{
	char key[64];

	if (!r->on)
		return;
	fake_add(r,
		 "%s.dlid=%u %s.sl=%u %s.src_path_bits=%u %s.static_rate=%u "
		 "%s.is_global=%u %s.port_num=%u",
		 p, a->dlid, p, a->sl, p, a->src_path_bits, p, a->static_rate,
		 p, a->is_global, p, a->port_num);
	snprintf(key, sizeof(key), "%s.grh.dgid", p);
	fake_bytes(r, key, a->grh.dgid.raw, 16);
	fake_add(r,
		 "%s.grh.flow_label=%u %s.grh.sgid_index=%u "
		 "%s.grh.hop_limit=%u %s.grh.traffic_class=%u",
		 p, a->grh.flow_label, p, a->grh.sgid_index, p,
		 a->grh.hop_limit, p, a->grh.traffic_class);
}

struct ibv_ah *fake_new_ah(struct ibv_pd *pd, int err)
{
	struct ibv_ah *ah = fake_new_unless(err, "ah", sizeof(*ah));

	if (ah == NULL)
		return NULL;
	ah->context = pd->context;
	ah->pd = pd;
	ah->handle = fake_next_id();
	return ah;
}

FAKE_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
					 struct ibv_ah_attr *attr)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_ah");

	FAKE_P(&r, "pd", pd);
	fake_add_ah_attr(&r, "attr", attr);
	fake_end(&r);
	if (!err && attr->port_num != 1)
		err = EINVAL;
	return fake_new_ah(pd, err);
}

FAKE_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	return fake_destroy_simple("destroy_ah", "ah", "ah", ah);
}
