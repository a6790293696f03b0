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

/* open_device: the double's ibv_open_device after the checks. */
FAKE_EXPORT struct ibv_context *
mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
	struct ibv_context *(*open)(struct ibv_device *) =
		(struct ibv_context * (*)(struct ibv_device *))
			m5_ibv("ibv_open_device");
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_open_device");

	M5_P(&r, "device", device);
	m5_str(&r, "device.name", device->name);
	M5_U(&r, "attr.flags", attr->flags);
	M5_X(&r, "attr.comp_mask", attr->comp_mask);
	/* rdma-core 65's struct: flags, comp_mask, fds */
	m5_bytes(&r, "attr", attr, 24);
	m5_end(&r);
	if (!err && m5_unsupported(device->name))
		err = EOPNOTSUPP;
	if (err || open == NULL) {
		m5_set_errno(err, ENOSYS);
		return NULL;
	}
	return open(device);
}

/* query_device: fills each group the caller asked for with fixed values
 * (field i of a group: 100 * (bit + 1) + i), answers comp_mask = asked &
 * 0x1ffff (bits 0..16, rdma-core 65's), version 1, flags 0x5. */
FAKE_EXPORT int mlx5dv_query_device(struct ibv_context *ctx,
				    struct mlx5dv_context *attrs)
{
	/* rdma-core 65's layout (what the binding passes) */
	struct m65 {
		uint8_t version;
		uint64_t flags, comp_mask;
		uint32_t cqe[2], swp[2], srq[5], tunnel, bfregs;
		uint64_t clock_nsec;
		uint32_t flow_action, dc_odp;
		void *hca_core_clock;
		uint8_t lag;
		struct {
			uint64_t bs;
			uint32_t bp;
			uint16_t bg, crc;
		} sig;
		uint8_t dci[2];
		size_t memcpy_len;
		struct {
			uint16_t st;
			uint8_t eng, wim, deks;
			uint32_t flags;
		} crypto;
		uint64_t rd_atom, init_rd_atom;
		uint32_t reg_c0[2];
		uint32_t ooo[5];
	} *a = (struct m65 *)attrs;
	static char clock_page[64];
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_query_device");
	const char *caps = getenv("IBVERBS_FAKE_MLX5_CAPS");
	uint64_t m = a->comp_mask & 0x1ffff;
	int i;

	/* the groups the device has, when the test says (default: all) */
	if (caps != NULL && *caps)
		m &= strtoull(caps, NULL, 0);

	M5_P(&r, "ctx", ctx);
	M5_X(&r, "attrs.comp_mask", a->comp_mask);
	m5_bytes(&r, "attrs", a, sizeof(*a));
	m5_end(&r);
	if (err)
		return err;
	memset(a, 0, sizeof(*a));
	a->version = 1;
	a->flags = 0x5;
	a->comp_mask = m;
	for (i = 0; i < 2; i++) {
		if (m & 1)
			a->cqe[i] = 100 + i;
		if (m & 2)
			a->swp[i] = 200 + i;
	}
	for (i = 0; i < 5 && (m & 4); i++)
		a->srq[i] = 300 + i;
	if (m & 8)
		a->tunnel = 400;
	if (m & 16)
		a->bfregs = 500;
	if (m & 32)
		a->clock_nsec = 600;
	if (m & 64)
		a->flow_action = 700;
	if (m & 128)
		a->dc_odp = 800;
	if (m & 256)
		a->hca_core_clock = clock_page;
	if (m & 512)
		a->lag = 2;
	if (m & 1024) {
		a->sig.bs = 1100;
		a->sig.bp = 1101;
		a->sig.bg = 1102;
		a->sig.crc = 1103;
	}
	if (m & 2048) {
		a->dci[0] = 12;
		a->dci[1] = 13;
	}
	if (m & 4096)
		a->memcpy_len = 1300;
	if (m & 8192) {
		a->crypto.st = 1400;
		a->crypto.eng = 1;
		a->crypto.wim = 2;
		a->crypto.deks = 3;
		a->crypto.flags = 1404;
	}
	if (m & (1u << 14)) {
		a->rd_atom = 1500;
		a->init_rd_atom = 1501;
	}
	if (m & (1u << 15)) {
		a->reg_c0[0] = 1600;
		a->reg_c0[1] = 1601;
	}
	for (i = 0; i < 5 && (m & (1u << 16)); i++)
		a->ooo[i] = 1700 + i;
	return 0;
}

FAKE_EXPORT int mlx5dv_get_data_direct_sysfs_path(struct ibv_context *context,
						  char *buf, size_t buf_len)
{
	static const char path[] = "/sys/devices/pci0000:00/0000:00:1f.6";
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_get_data_direct_sysfs_path");

	M5_P(&r, "context", context);
	M5_U(&r, "buf_len", buf_len);
	m5_end(&r);
	if (err)
		return err;
	if (buf_len < sizeof(path))
		return ENOSPC;
	memcpy(buf, path, sizeof(path));
	return 0;
}

/* reg_dmabuf_mr: the double's ibv_reg_dmabuf_mr makes the MR. */
FAKE_EXPORT struct ibv_mr *mlx5dv_reg_dmabuf_mr(struct ibv_pd *pd,
						uint64_t offset, size_t length,
						uint64_t iova, int fd,
						int access, int mlx5_access)
{
	struct ibv_mr *(*reg)(struct ibv_pd *, uint64_t, size_t, uint64_t, int,
			      int) =
		(struct ibv_mr *
		 (*)(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int))
			m5_ibv("ibv_reg_dmabuf_mr");
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_reg_dmabuf_mr");

	M5_P(&r, "pd", pd);
	M5_U(&r, "offset", offset);
	M5_U(&r, "length", length);
	M5_X(&r, "iova", iova);
	m5_add(&r, "fd=%d", fd);
	M5_X(&r, "access", access);
	M5_X(&r, "mlx5_access", mlx5_access);
	m5_end(&r);
	if (err || reg == NULL) {
		m5_set_errno(err, ENOSYS);
		return NULL;
	}
	return reg(pd, offset, length, iova, fd, access);
}
