/*
 * mkey.c - the fake's mkeys (test-only): mlx5dv_create_mkey,
 * mlx5dv_destroy_mkey, and the function pointer mlx5.wr_mr_list calls
 * (wr_mr_list, recording its arguments and SGEs as "mlx5dv_wr_mr_list"),
 * which qp.c's mlx5dv_qp_ex_from_ibv_qp_ex hands out.  Arming a failure
 * of "mlx5dv_wr_mr_list" hands out a struct without that pointer, as
 * libmlx5 does for a QP created without MLX5DV_QP_EX_WITH_MR_LIST.
 * Answers: lkey 0x1234 + n, rkey 0x5678 + n for the n-th mkey.
 */
#include "fake_mlx5.h"

static uint32_t mkeys_made;

FAKE_EXPORT struct mlx5dv_mkey *
mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *attr)
{
	struct mlx5dv_mkey *mk;
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_create_mkey");

	M5_P(&r, "attr.pd", attr->pd);
	M5_X(&r, "attr.create_flags", attr->create_flags);
	M5_U(&r, "attr.max_entries", attr->max_entries);
	m5_bytes(&r, "attr", attr, sizeof(*attr));
	m5_end(&r);
	if (!err &&
	    !(attr->create_flags & MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT))
		err = EINVAL;
	if (err || (mk = calloc(1, sizeof(*mk))) == NULL) {
		m5_set_errno(err, ENOMEM);
		return NULL;
	}
	mk->lkey = 0x1234 + mkeys_made;
	mk->rkey = 0x5678 + mkeys_made;
	mkeys_made++;
	return mk;
}

FAKE_EXPORT int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mk)
{
	return m5_free_rec("mlx5dv_destroy_mkey", "lkey=0x%llx", mk->lkey, mk);
}

static void fake_wr_mr_list(struct mlx5dv_qp_ex *mqp, struct mlx5dv_mkey *mkey,
			    uint32_t access_flags, uint16_t num_sges,
			    struct ibv_sge *sge)
{
	struct m5rec r;

	m5_begin(&r, "mlx5dv_wr_mr_list");
	M5_P(&r, "mqp", mqp);
	M5_X(&r, "mkey.lkey", mkey->lkey);
	M5_X(&r, "access_flags", access_flags);
	M5_U(&r, "num_sges", num_sges);
	m5_bytes(&r, "sge", sge, num_sges * sizeof(*sge));
	m5_end(&r);
}

/* The wr_mr_list pointer mlx5dv_qp_ex_from_ibv_qp_ex (qp.c) hands out:
 * NULL while a failure of "mlx5dv_wr_mr_list" is armed. */
mr_list_fn fake_mr_list_op(void)
{
	struct m5rec r;

	return m5_begin(&r, "mlx5dv_wr_mr_list") != 0 ? NULL : fake_wr_mr_list;
}
