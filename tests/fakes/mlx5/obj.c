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

int m5_init_obj_1_2(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_init_obj");

	M5_P(&r, "obj", obj);
	M5_X(&r, "obj_type", obj_type);
	m5_end(&r);
	return err ? err : EOPNOTSUPP;
}
