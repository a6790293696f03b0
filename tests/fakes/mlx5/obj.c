/*
 * obj.c - the fake's mlx5dv_init_obj (test-only), in its two versions as
 * libmlx5 exports it: mlx5dv_init_obj@MLX5_1.0 (records as
 * "mlx5dv_init_obj@MLX5_1.0") and the default mlx5dv_init_obj@@MLX5_1.2.
 */
#include "fake_mlx5.h"

__asm__(".symver m5_init_obj_1_0, mlx5dv_init_obj@MLX5_1.0");
__asm__(".symver m5_init_obj_1_2, mlx5dv_init_obj@@MLX5_1.2");

FAKE_EXPORT int m5_init_obj_1_0(struct mlx5dv_obj *obj, uint64_t obj_type);
FAKE_EXPORT int m5_init_obj_1_2(struct mlx5dv_obj *obj, uint64_t obj_type);

int m5_init_obj_1_0(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	struct m5rec r;

	m5_begin(&r, "mlx5dv_init_obj@MLX5_1.0");
	M5_P(&r, "obj", obj);
	M5_X(&r, "obj_type", obj_type);
	m5_end(&r);
	return EOPNOTSUPP;
}

/* Fixed memory the fake's layouts point into: a ring whose bytes count
 * up, doorbell records. */
static unsigned char fake_ring[4096] __attribute__((aligned(64)));
static uint32_t fake_dbrec[2] = { 0x11, 0x22 };

int m5_init_obj_1_2(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_init_obj");
	size_t i;

	for (i = 0; i < sizeof(fake_ring); i++)
		fake_ring[i] = (unsigned char)i;
	M5_P(&r, "obj", obj);
	M5_X(&r, "obj_type", obj_type);
	if (obj_type & MLX5DV_OBJ_QP) {
		M5_P(&r, "qp.in", obj->qp.in);
		M5_X(&r, "qp.out.comp_mask", obj->qp.out->comp_mask);
		m5_bytes(&r, "qp.out", obj->qp.out, sizeof(*obj->qp.out));
	}
	if (obj_type & MLX5DV_OBJ_CQ) {
		M5_P(&r, "cq.in", obj->cq.in);
		m5_bytes(&r, "cq.out", obj->cq.out, sizeof(*obj->cq.out));
	}
	if (obj_type & MLX5DV_OBJ_SRQ) {
		M5_P(&r, "srq.in", obj->srq.in);
		M5_X(&r, "srq.out.comp_mask", obj->srq.out->comp_mask);
	}
	if (obj_type & MLX5DV_OBJ_PD)
		M5_P(&r, "pd.in", obj->pd.in);
	if (obj_type & MLX5DV_OBJ_DM) {
		M5_P(&r, "dm.in", obj->dm.in);
		M5_X(&r, "dm.out.comp_mask", obj->dm.out->comp_mask);
	}
	m5_bytes(&r, "obj_bytes", obj, sizeof(*obj));
	m5_end(&r);
	if (err)
		return err;
	if (obj_type & MLX5DV_OBJ_QP) {
		struct mlx5dv_qp *q = obj->qp.out;
		uint64_t m = q->comp_mask;
		int on_srq = obj->qp.in->srq != NULL;

		memset(q, 0, sizeof(*q));
		q->dbrec = fake_dbrec;
		q->sq.buf = fake_ring + 1024;
		q->sq.wqe_cnt = 8;
		q->sq.stride = 64;
		/* a QP on an SRQ has no receive queue of its own */
		q->rq.buf = on_srq ? NULL : fake_ring;
		q->rq.wqe_cnt = on_srq ? 0 : 16;
		q->rq.stride = on_srq ? 0 : 16;
		q->bf.reg = fake_ring + 3072;
		q->bf.size = 256;
		q->comp_mask = m & 3;
		q->uar_mmap_offset = 0x5000;
		q->tirn = 1;
		q->tisn = 2;
		q->rqn = 3;
		q->sqn = 4;
		q->tir_icm_addr = 0;
	}
	if (obj_type & MLX5DV_OBJ_CQ) {
		struct mlx5dv_cq *c = obj->cq.out;

		memset(c, 0, sizeof(*c));
		c->buf = fake_ring;
		c->dbrec = fake_dbrec;
		c->cqe_cnt = 16;
		c->cqe_size = 64;
		c->cq_uar = fake_ring + 3072;
		c->cqn = 0x77;
	}
	if (obj_type & MLX5DV_OBJ_SRQ) {
		struct mlx5dv_srq *s = obj->srq.out;

		memset(s, 0, sizeof(*s));
		s->buf = fake_ring;
		s->dbrec = fake_dbrec;
		s->stride = 32;
		s->head = 0;
		s->tail = 7;
		s->comp_mask = 1;
		s->srqn = 0x55;
	}
	if (obj_type & MLX5DV_OBJ_PD) {
		obj->pd.out->pdn = 0x33;
		obj->pd.out->comp_mask = 0;
	}
	if (obj_type & MLX5DV_OBJ_DM) {
		obj->dm.out->buf = fake_ring + 2048;
		obj->dm.out->length = 128;
		obj->dm.out->comp_mask = 1;
		obj->dm.out->remote_va = 0xabc000;
	}
	return 0;
}
