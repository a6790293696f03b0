/*
 * qp.c - the fake's QP verbs (test-only): mlx5dv_create_qp (records every
 * field and byte of both attrs; a DC QP is the double's RC QP),
 * mlx5dv_qp_ex_from_ibv_qp_ex (a table of recording DC setters for the
 * DCIs it made, and mkey.c's wr_mr_list for any QPEx), and the QP-level
 * verbs.
 */
#include "fake_mlx5.h"

struct fake_dv_qp {
	struct ibv_qp_ex *qpx;
	struct mlx5dv_qp_ex dv;
	struct fake_dv_qp *next;
};
static struct fake_dv_qp *dv_qps;

static void fake_dc_addr(struct mlx5dv_qp_ex *mqp, struct ibv_ah *ah,
			 uint32_t remote_dctn, uint64_t remote_dc_key)
{
	struct m5rec r;

	m5_begin(&r, "mlx5dv_wr_set_dc_addr");
	M5_P(&r, "mqp", mqp);
	M5_P(&r, "ah", ah);
	M5_U(&r, "remote_dctn", remote_dctn);
	M5_X(&r, "remote_dc_key", remote_dc_key);
	m5_end(&r);
}

static void fake_dc_addr_stream(struct mlx5dv_qp_ex *mqp, struct ibv_ah *ah,
				uint32_t remote_dctn, uint64_t remote_dc_key,
				uint16_t stream_id)
{
	struct m5rec r;

	m5_begin(&r, "mlx5dv_wr_set_dc_addr_stream");
	M5_P(&r, "mqp", mqp);
	M5_P(&r, "ah", ah);
	M5_U(&r, "remote_dctn", remote_dctn);
	M5_X(&r, "remote_dc_key", remote_dc_key);
	M5_U(&r, "stream_id", stream_id);
	m5_end(&r);
}

FAKE_EXPORT struct ibv_qp *
mlx5dv_create_qp(struct ibv_context *context,
		 struct ibv_qp_init_attr_ex *qp_attr,
		 struct mlx5dv_qp_init_attr *mlx5_qp_attr)
{
	struct mlx5dv_qp_init_attr *m = mlx5_qp_attr;
	struct verbs_context *vctx;
	struct fake_dv_qp *d;
	struct ibv_qp *qp;
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_create_qp");

	M5_P(&r, "context", context);
	M5_U(&r, "qp_attr.qp_type", qp_attr->qp_type);
	M5_X(&r, "qp_attr.comp_mask", qp_attr->comp_mask);
	M5_X(&r, "qp_attr.send_ops_flags", qp_attr->send_ops_flags);
	M5_X(&r, "qp_attr.create_flags", qp_attr->create_flags);
	M5_P(&r, "qp_attr.pd", qp_attr->pd);
	M5_U(&r, "qp_attr.cap.max_send_wr", qp_attr->cap.max_send_wr);
	M5_U(&r, "qp_attr.cap.max_recv_wr", qp_attr->cap.max_recv_wr);
	M5_X(&r, "attr.comp_mask", m->comp_mask);
	M5_X(&r, "attr.create_flags", m->create_flags);
	M5_U(&r, "attr.dc_init_attr.dc_type", m->dc_init_attr.dc_type);
	M5_X(&r, "attr.dc_init_attr.dct_access_key",
	     m->dc_init_attr.dct_access_key);
	M5_X(&r, "attr.send_ops_flags", m->send_ops_flags);
	/* rdma-core 65's struct: 40 bytes */
	m5_bytes(&r, "attr", m, 40);
	m5_end(&r);
	if (!err && (m->comp_mask & ~0xfull))
		err = EOPNOTSUPP;
	if (!err && (m->comp_mask & 2) &&
	    (qp_attr->qp_type != IBV_QPT_DRIVER ||
	     (m->dc_init_attr.dc_type != MLX5DV_DCTYPE_DCT &&
	      m->dc_init_attr.dc_type != MLX5DV_DCTYPE_DCI)))
		err = EINVAL;
	if (!err && (m->comp_mask & 8) &&
	    (!(m->comp_mask & 2) ||
	     m->dc_init_attr.dc_type != MLX5DV_DCTYPE_DCI))
		err = EINVAL;
	if (!err && (m->comp_mask & 1) && (m->create_flags & ~0xffu))
		err = EOPNOTSUPP;
	vctx = verbs_get_ctx_op(context, create_qp_ex);
	if (!err && vctx == NULL)
		err = EOPNOTSUPP;
	if (err) {
		m5_set_errno(err, 0);
		return NULL;
	}
	if (qp_attr->qp_type == IBV_QPT_DRIVER)
		qp_attr->qp_type = IBV_QPT_RC; /* the double: an RC QP */
	qp = vctx->create_qp_ex(context, qp_attr);
	if (qp == NULL)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (d != NULL) {
		d->qpx = (struct ibv_qp_ex *)qp; /* ibv_qp_ex begins with it */
		if ((m->comp_mask & 2) &&
		    m->dc_init_attr.dc_type == MLX5DV_DCTYPE_DCI) {
			d->dv.wr_set_dc_addr = fake_dc_addr;
			if (m->comp_mask & 8)
				d->dv.wr_set_dc_addr_stream =
					fake_dc_addr_stream;
		}
		d->next = dv_qps;
		dv_qps = d;
	}
	return qp;
}

FAKE_EXPORT struct mlx5dv_qp_ex *
mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
	/* a QPEx mlx5dv_create_qp did not make: only wr_mr_list (mkey.c) */
	static struct mlx5dv_qp_ex other;
	struct mlx5dv_qp_ex *dv = &other;
	struct fake_dv_qp *d;
	struct m5rec r;

	m5_begin(&r, "mlx5dv_qp_ex_from_ibv_qp_ex");
	M5_P(&r, "qp", qp);
	m5_end(&r);
	for (d = dv_qps; d; d = d->next)
		if (d->qpx == qp)
			dv = &d->dv;
	dv->wr_mr_list = fake_mr_list_op();
	return dv;
}

static int qp_verb(const char *verb, struct ibv_qp *qp, const char *key,
		   unsigned v)
{
	struct m5rec r;
	int err = m5_begin(&r, verb);

	M5_P(&r, "qp", qp);
	M5_U(&r, "qp.qp_num", qp->qp_num);
	if (key != NULL)
		M5_U(&r, key, v);
	m5_end(&r);
	return err;
}

FAKE_EXPORT int mlx5dv_modify_qp_udp_sport(struct ibv_qp *qp,
					   uint16_t udp_sport)
{
	return qp_verb("mlx5dv_modify_qp_udp_sport", qp, "udp_sport",
		       udp_sport);
}

FAKE_EXPORT int mlx5dv_modify_qp_lag_port(struct ibv_qp *qp, uint8_t port_num)
{
	int err =
		qp_verb("mlx5dv_modify_qp_lag_port", qp, "port_num", port_num);

	return err ? err : (port_num < 1 || port_num > 2 ? EINVAL : 0);
}

FAKE_EXPORT int mlx5dv_query_qp_lag_port(struct ibv_qp *qp, uint8_t *port_num,
					 uint8_t *active_port_num)
{
	int err = qp_verb("mlx5dv_query_qp_lag_port", qp, NULL, 0);

	if (err)
		return err;
	*port_num = 1;
	*active_port_num = 2;
	return 0;
}

FAKE_EXPORT int mlx5dv_dci_stream_id_reset(struct ibv_qp *qp,
					   uint16_t stream_id)
{
	return qp_verb("mlx5dv_dci_stream_id_reset", qp, "stream_id",
		       stream_id);
}
