/*
 * domains.c - thread domains, parent domains and CQ moderation, as
 * verbs_context ops (alloc_td, dealloc_td, alloc_parent_domain,
 * modify_cq).
 *
 * A parent domain is a struct ibv_pd counted as a "pd": the exported
 * ibv_dealloc_pd of mem.c frees it, as libibverbs' does.  modify_cq
 * records the moderation only when attr_mask has IBV_CQ_ATTR_MODERATE
 * and answers 0.
 */
#include "fake.h"

static struct ibv_td *dom_alloc_td(struct ibv_context *context,
				   struct ibv_td_init_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "alloc_td");
	struct ibv_td *td;

	FAKE_P(&r, "context", context);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	td = fake_end_new(&r, err, "td", sizeof(*td));
	if (td != NULL)
		td->context = context;
	return td;
}

static int dom_dealloc_td(struct ibv_td *td)
{
	return fake_destroy_simple("dealloc_td", "td", "td", td);
}

static struct ibv_pd *
dom_alloc_parent_domain(struct ibv_context *context,
			struct ibv_parent_domain_init_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "alloc_parent_domain");

	FAKE_P(&r, "context", context);
	FAKE_P(&r, "attr.pd", a->pd);
	FAKE_P(&r, "attr.td", a->td);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		FAKE_P(&r, "attr.alloc", a->alloc);
		FAKE_P(&r, "attr.free", a->free);
	}
	if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		FAKE_P(&r, "attr.pd_context", a->pd_context);
	fake_end(&r);
	if (!err && a->pd == NULL)
		err = EINVAL;
	return fake_new_pd(context, err);
}

static int dom_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *a)
{
	struct fake_rec r;
	int err = fake_begin(&r, "modify_cq");

	FAKE_P(&r, "cq", cq);
	FAKE_X(&r, "attr.attr_mask", a->attr_mask);
	if (a->attr_mask & IBV_CQ_ATTR_MODERATE) {
		FAKE_U(&r, "attr.moderate.cq_count", a->moderate.cq_count);
		FAKE_U(&r, "attr.moderate.cq_period", a->moderate.cq_period);
	}
	fake_end(&r);
	return err;
}

FAKE_CONTEXT_OPS(dom_ops)
{
	fc->vctx.alloc_td = dom_alloc_td;
	fc->vctx.dealloc_td = dom_dealloc_td;
	fc->vctx.alloc_parent_domain = dom_alloc_parent_domain;
	fc->vctx.modify_cq = dom_modify_cq;
}
