/*
 * mem.c - protection domains, memory regions (plain, at an iova, dmabuf,
 * on device memory), device memory, memory windows, advise_mr.
 *
 * Keys and handles come from fake_next_id(); an MR's lkey and rkey are
 * equal.  Its addr is what libibverbs sets: the address (also for the
 * iova variants), the offset for a dmabuf MR, the dm_offset for a DM MR.
 * Device memory is host memory of the requested length.
 */
#include "fake.h"

struct ibv_pd *fake_new_pd(struct ibv_context *context, int err)
{
	struct ibv_pd *pd = fake_new_unless(err, "pd", sizeof(*pd));

	if (pd == NULL)
		return NULL;
	pd->context = context;
	pd->handle = fake_next_id();
	return pd;
}

FAKE_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct fake_rec r;
	int err = fake_begin(&r, "alloc_pd");

	FAKE_P(&r, "context", context);
	fake_end(&r);
	return fake_new_pd(context, err);
}

FAKE_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	return fake_destroy_simple("dealloc_pd", "pd", "pd", pd);
}

/* ------------------------------------------------------------------ */
/* Memory regions                                                      */
/* ------------------------------------------------------------------ */

static struct ibv_mr *mem_new_mr(struct ibv_pd *pd, void *addr, size_t length)
{
	struct ibv_mr *mr = fake_new_obj("mr", sizeof(*mr));

	if (mr == NULL)
		return NULL;
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->handle = fake_next_id();
	mr->lkey = mr->rkey = fake_next_id();
	return mr;
}

/* reg_mr and its iova variants: record pd, addr, length (iova), access,
 * then fail or register. */
static struct ibv_mr *mem_reg(const char *verb, struct ibv_pd *pd, void *addr,
			      size_t length, const uint64_t *iova,
			      unsigned int access)
{
	struct fake_rec r;
	int err = fake_begin(&r, verb);

	FAKE_P(&r, "pd", pd);
	FAKE_P(&r, "addr", addr);
	FAKE_U(&r, "length", length);
	if (iova)
		FAKE_X(&r, "iova", *iova);
	FAKE_X(&r, "access", access);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	return mem_new_mr(pd, addr, length);
}

FAKE_EXPORT struct ibv_mr *FAKE_VERB(ibv_reg_mr)(struct ibv_pd *pd, void *addr,
						 size_t length, int access)
{
	return mem_reg("reg_mr", pd, addr, length, NULL, (unsigned int)access);
}

FAKE_EXPORT struct ibv_mr *FAKE_VERB(ibv_reg_mr_iova)(struct ibv_pd *pd,
						      void *addr, size_t length,
						      uint64_t iova, int access)
{
	return mem_reg("reg_mr_iova", pd, addr, length, &iova,
		       (unsigned int)access);
}

FAKE_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					    size_t length, uint64_t iova,
					    unsigned int access)
{
	return mem_reg("reg_mr_iova2", pd, addr, length, &iova, access);
}

FAKE_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					     size_t length, uint64_t iova,
					     int fd, int access)
{
	struct fake_rec r;
	int err = fake_begin(&r, "reg_dmabuf_mr");

	FAKE_P(&r, "pd", pd);
	FAKE_U(&r, "offset", offset);
	FAKE_U(&r, "length", length);
	FAKE_X(&r, "iova", iova);
	FAKE_I(&r, "fd", fd);
	FAKE_X(&r, "access", (unsigned int)access);
	fake_end(&r);
	if (!err && fd < 0)
		err = EBADF;
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	/* libibverbs sets addr to the offset */
	return mem_new_mr(pd, (void *)(uintptr_t)offset, length);
}

FAKE_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	return fake_destroy_simple("dereg_mr", "mr", "mr", mr);
}

static int mem_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges)
{
	struct fake_rec r;
	int err = fake_begin(&r, "advise_mr");
	uint32_t i;

	FAKE_P(&r, "pd", pd);
	FAKE_U(&r, "advice", advice);
	FAKE_X(&r, "flags", flags);
	FAKE_U(&r, "num_sges", num_sges);
	for (i = 0; i < num_sges; i++)
		fake_add(&r,
			 "sg_list[%u].addr=0x%llx sg_list[%u].length=%u "
			 "sg_list[%u].lkey=%u",
			 i, (unsigned long long)sg_list[i].addr, i,
			 sg_list[i].length, i, sg_list[i].lkey);
	fake_end(&r);
	return err;
}

/* ------------------------------------------------------------------ */
/* Device memory                                                       */
/* ------------------------------------------------------------------ */

struct mem_dm {
	struct ibv_dm dm;
	size_t length;
	unsigned char *bytes;
};

/* Log at most this many bytes of a copy to or from device memory. */
#define MEM_DM_LOG_BYTES 64

static int mem_dm_range(struct mem_dm *d, uint64_t off, size_t len)
{
	return off > d->length || len > d->length - off ? EINVAL : 0;
}

static int mem_memcpy_to_dm(struct ibv_dm *dm, uint64_t dm_offset,
			    const void *host_addr, size_t length)
{
	struct mem_dm *d = (struct mem_dm *)dm;
	struct fake_rec r;
	int err = fake_begin(&r, "memcpy_to_dm");

	FAKE_P(&r, "dm", dm);
	FAKE_U(&r, "dm_offset", dm_offset);
	FAKE_P(&r, "host_addr", host_addr);
	FAKE_U(&r, "length", length);
	fake_bytes(&r, "data", host_addr,
		   length < MEM_DM_LOG_BYTES ? length : MEM_DM_LOG_BYTES);
	fake_end(&r);
	if (!err)
		err = mem_dm_range(d, dm_offset, length);
	if (err)
		return err;
	memcpy(d->bytes + dm_offset, host_addr, length);
	return 0;
}

static int mem_memcpy_from_dm(void *host_addr, struct ibv_dm *dm,
			      uint64_t dm_offset, size_t length)
{
	struct mem_dm *d = (struct mem_dm *)dm;
	struct fake_rec r;
	int err = fake_begin(&r, "memcpy_from_dm");

	FAKE_P(&r, "host_addr", host_addr);
	FAKE_P(&r, "dm", dm);
	FAKE_U(&r, "dm_offset", dm_offset);
	FAKE_U(&r, "length", length);
	fake_end(&r);
	if (!err)
		err = mem_dm_range(d, dm_offset, length);
	if (err)
		return err;
	memcpy(host_addr, d->bytes + dm_offset, length);
	return 0;
}

static struct ibv_dm *mem_alloc_dm(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr)
{
	struct fake_rec r;
	int err = fake_begin(&r, "alloc_dm");
	struct mem_dm *d;

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "attr.length", attr->length);
	FAKE_U(&r, "attr.log_align_req", attr->log_align_req);
	FAKE_X(&r, "attr.comp_mask", attr->comp_mask);
	fake_end(&r);
	if (!err && (attr->length == 0 || attr->length > (1 << 20)))
		err = EINVAL;
	d = fake_new_unless(err, "dm", sizeof(*d));
	if (d == NULL)
		return NULL;
	d->bytes = calloc(1, attr->length);
	if (d->bytes == NULL) {
		fake_free_obj("dm", d);
		errno = ENOMEM;
		return NULL;
	}
	d->length = attr->length;
	d->dm.context = context;
	d->dm.memcpy_to_dm = mem_memcpy_to_dm;
	d->dm.memcpy_from_dm = mem_memcpy_from_dm;
	d->dm.handle = fake_next_id();
	return &d->dm;
}

static int mem_free_dm(struct ibv_dm *dm)
{
	struct mem_dm *d = (struct mem_dm *)dm;
	int err = fake_record_simple("free_dm", "dm", dm);

	if (err)
		return err;
	free(d->bytes);
	fake_free_obj("dm", d);
	return 0;
}

static struct ibv_mr *mem_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access)
{
	struct fake_rec r;
	int err = fake_begin(&r, "reg_dm_mr");
	struct ibv_mr *mr;

	FAKE_P(&r, "pd", pd);
	FAKE_P(&r, "dm", dm);
	FAKE_U(&r, "dm_offset", dm_offset);
	FAKE_U(&r, "length", length);
	FAKE_X(&r, "access", access);
	fake_end(&r);
	if (!err)
		err = mem_dm_range((struct mem_dm *)dm, dm_offset, length);
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	mr = mem_new_mr(pd, (void *)(uintptr_t)dm_offset, length);
	return mr;
}

/* ------------------------------------------------------------------ */
/* Memory windows (bind_mw is a post: qp.c)                            */
/* ------------------------------------------------------------------ */

static struct ibv_mw *mem_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct fake_rec r;
	int err = fake_begin(&r, "alloc_mw");
	struct ibv_mw *mw;

	FAKE_P(&r, "pd", pd);
	FAKE_U(&r, "type", type);
	mw = fake_end_new(&r, err, "mw", sizeof(*mw));
	if (mw == NULL)
		return NULL;
	mw->context = pd->context;
	mw->pd = pd;
	mw->type = type;
	mw->handle = fake_next_id();
	mw->rkey = fake_next_id() << 8;
	return mw;
}

static int mem_dealloc_mw(struct ibv_mw *mw)
{
	return fake_destroy_simple("dealloc_mw", "mw", "mw", mw);
}

FAKE_CONTEXT_OPS(mem_ops)
{
	fc->vctx.context.ops.alloc_mw = mem_alloc_mw;
	fc->vctx.context.ops.dealloc_mw = mem_dealloc_mw;
	fc->vctx.advise_mr = mem_advise_mr;
	fc->vctx.alloc_dm = mem_alloc_dm;
	fc->vctx.free_dm = mem_free_dm;
	fc->vctx.reg_dm_mr = mem_reg_dm_mr;
}
