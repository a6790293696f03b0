/*
 * cq.c - the fake's mlx5dv_create_cq (test-only): records every field and
 * byte, checks comp_mask and cqe_size as libmlx5 does, and answers with
 * the double's extended CQ.
 */
#include "fake_mlx5.h"

FAKE_EXPORT struct ibv_cq_ex *
mlx5dv_create_cq(struct ibv_context *context,
		 struct ibv_cq_init_attr_ex *cq_attr,
		 struct mlx5dv_cq_init_attr *mlx5_cq_attr)
{
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_create_cq");
	struct mlx5dv_cq_init_attr *m = mlx5_cq_attr;

	M5_P(&r, "context", context);
	M5_U(&r, "cq_attr.cqe", cq_attr->cqe);
	M5_X(&r, "cq_attr.wc_flags", cq_attr->wc_flags);
	M5_X(&r, "cq_attr.comp_mask", cq_attr->comp_mask);
	M5_X(&r, "cq_attr.flags", cq_attr->flags);
	M5_X(&r, "attr.comp_mask", m->comp_mask);
	M5_U(&r, "attr.cqe_comp_res_format", m->cqe_comp_res_format);
	M5_X(&r, "attr.flags", m->flags);
	M5_U(&r, "attr.cqe_size", m->cqe_size);
	m5_bytes(&r, "attr", m, sizeof(*m));
	m5_end(&r);
	if (!err && (m->comp_mask & ~7ull))
		err = EINVAL;
	if (!err && (m->comp_mask & 4) && m->cqe_size != 64 &&
	    m->cqe_size != 128)
		err = EINVAL;
	if (!err && (m->comp_mask & 2) && (m->flags & ~1u))
		err = EINVAL;
	if (err) {
		m5_set_errno(err, 0);
		return NULL;
	}
	return ibv_create_cq_ex(context, cq_attr);
}
