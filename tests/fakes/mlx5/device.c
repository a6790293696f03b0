/*
 * device.c - the fake's device verbs (test-only): is_supported,
 * open_device, query_device, the data-direct path and reg_dmabuf_mr.
 */
#include "fake_mlx5.h"

FAKE_EXPORT bool mlx5dv_is_supported(struct ibv_device *device)
{
	struct m5rec r;

	m5_begin(&r, "mlx5dv_is_supported");
	M5_P(&r, "device", device);
	m5_str(&r, "device.name", device->name);
	m5_end(&r);
	return !m5_unsupported(device->name);
}
