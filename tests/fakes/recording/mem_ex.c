/*
 * mem_ex.c - recorders of the memory, import and device verbs of rdma-core 59-64:
 * ibv_reg_mr_ex, ibv_alloc_buf/free_buf/reg_buf_mr/export_buf_dmabuf_fd,
 * ibv_alloc_dmah/dealloc_dmah, ibv_rereg_mr, ibv_import_device/pd/mr/dm
 * and their unimports, ibv_dm_export_dmabuf_fd, ibv_query_port_speed, and
 * the ops behind ibv_alloc_null_mr and ibv_query_rt_values_ex.
 *
 * The structs rdma-core 59..65 added are declared here with mem_ex_ names
 * (their layout as rdma-core 65's verbs.h has it) and the verbs bound to
 * their libibverbs names with asm labels, so this builds against rdma-core
 * 44 headers and the newest alike.
 *
 * Fixed answers: alloc_buf hands page-aligned memory; export fds are
 * dup(0); query_port_speed answers 4000; query_rt_values answers
 * raw_clock {tv_sec 12, tv_nsec 345678} and comp_mask RAW_CLOCK; an
 * imported PD/MR/DM gets the handle asked for (an MR: addr 0x1000,
 * length 4096); import_device opens fake0 and closes cmd_fd.
 */
#include <stdlib.h>
#include <unistd.h>

struct mem_ex_dmah {
	struct ibv_context *context;
};

struct mem_ex_dmah_init_attr {
	uint32_t comp_mask;
	uint32_t cpu_id;
	uint8_t ph;
	uint8_t tph_mem_type;
};

struct mem_ex_mr_init_attr {
	size_t length;
	int access;
	uint64_t comp_mask;
	uint64_t iova;
	void *addr;
	int fd;
	uint64_t fd_offset;
	struct mem_ex_dmah *dmah;
	struct mem_ex_buf *buf;
};

struct mem_ex_buf {
	struct ibv_pd *pd;
	void *addr;
	size_t size;
};

#define MEM_EX_VERB(ret, c_name, sym, args)       \
	FAKE_EXPORT ret c_name args __asm__(sym); \
	FAKE_EXPORT ret c_name args

/* Unimport verbs: record, then free the process's struct only. */
static void mem_ex_forget(const char *verb, const char *kind, void *obj)
{
	fake_record_simple(verb, kind, obj);
	fake_free_obj(kind, obj);
}

/* Import verbs: record the parent and the handle; the injected errno. */
static int mem_ex_import_rec(const char *verb, const char *pkey, const void *p,
			     const char *hkey, uint32_t handle)
{
	struct fake_rec r;
	int err = fake_begin(&r, verb);

	FAKE_P(&r, pkey, p);
	FAKE_U(&r, hkey, handle);
	fake_end(&r);
	fake_set_errno(err);
	return err;
}

MEM_EX_VERB(struct ibv_mr *, mem_ex_reg_mr_ex, "ibv_reg_mr_ex",
	    (struct ibv_pd * pd, struct mem_ex_mr_init_attr *a))
{
	struct fake_rec r;
	int err = fake_begin(&r, "reg_mr_ex");

	FAKE_P(&r, "pd", pd);
	FAKE_U(&r, "attr.length", a->length);
	FAKE_X(&r, "attr.access", (unsigned int)a->access);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	if (a->comp_mask & 1)
		FAKE_X(&r, "attr.iova", a->iova);
	if (a->comp_mask & 2)
		FAKE_P(&r, "attr.addr", a->addr);
	if (a->comp_mask & 4)
		FAKE_I(&r, "attr.fd", a->fd);
	if (a->comp_mask & 8)
		FAKE_U(&r, "attr.fd_offset", a->fd_offset);
	if (a->comp_mask & 16)
		FAKE_P(&r, "attr.dmah", a->dmah);
	if (a->comp_mask & 32)
		FAKE_P(&r, "attr.buf", a->buf);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	return mem_new_mr(pd,
			  (a->comp_mask & 2) ? a->addr :
					       (void *)(uintptr_t)a->fd_offset,
			  a->length);
}

MEM_EX_VERB(void *, mem_ex_alloc_buf, "ibv_alloc_buf",
	    (struct ibv_pd * pd, size_t size, struct mem_ex_buf **buf))
{
	struct fake_rec r;
	int err = fake_begin(&r, "alloc_buf");
	struct mem_ex_buf *b;

	FAKE_P(&r, "pd", pd);
	FAKE_U(&r, "size", size);
	b = fake_end_new(&r, err, "buf", sizeof(*b));
	if (b == NULL)
		return NULL;
	if (posix_memalign(&b->addr, 4096, size)) {
		fake_free_obj("buf", b);
		errno = ENOMEM;
		return NULL;
	}
	b->pd = pd;
	b->size = size;
	*buf = b;
	return b->addr;
}

MEM_EX_VERB(void, mem_ex_free_buf, "ibv_free_buf", (struct mem_ex_buf * buf))
{
	fake_record_simple("free_buf", "buf", buf);
	free(buf->addr);
	fake_free_obj("buf", buf);
}

MEM_EX_VERB(struct ibv_mr *, mem_ex_reg_buf_mr, "ibv_reg_buf_mr",
	    (struct ibv_pd * pd, struct mem_ex_buf *buf, void *addr,
	     size_t length, int access))
{
	struct fake_rec r;
	int err = fake_begin(&r, "reg_buf_mr");

	FAKE_P(&r, "pd", pd);
	FAKE_P(&r, "buf", buf);
	FAKE_P(&r, "addr", addr);
	FAKE_U(&r, "length", length);
	FAKE_X(&r, "access", (unsigned int)access);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	return mem_new_mr(pd, addr, length);
}

/* One fd-returning verb of an object: dup(0), or -1 with the injected
 * errno. */
static int mem_ex_export(const char *verb, const char *key, const void *obj)
{
	int err = fake_record_simple(verb, key, obj);

	if (err) {
		fake_set_errno(err);
		return -1;
	}
	return dup(0);
}

MEM_EX_VERB(int, mem_ex_export_buf_dmabuf_fd, "ibv_export_buf_dmabuf_fd",
	    (struct mem_ex_buf * buf))
{
	return mem_ex_export("export_buf_dmabuf_fd", "buf", buf);
}

MEM_EX_VERB(int, mem_ex_dm_export_dmabuf_fd, "ibv_dm_export_dmabuf_fd",
	    (struct ibv_dm * dm))
{
	return mem_ex_export("dm_export_dmabuf_fd", "dm", dm);
}

MEM_EX_VERB(struct mem_ex_dmah *, mem_ex_alloc_dmah, "ibv_alloc_dmah",
	    (struct ibv_context * context, struct mem_ex_dmah_init_attr *a))
{
	struct fake_rec r;
	int err = fake_begin(&r, "alloc_dmah");
	struct mem_ex_dmah *d;

	FAKE_P(&r, "context", context);
	FAKE_X(&r, "attr.comp_mask", a->comp_mask);
	if (a->comp_mask & 1)
		FAKE_U(&r, "attr.cpu_id", a->cpu_id);
	if (a->comp_mask & 2)
		FAKE_U(&r, "attr.ph", a->ph);
	if (a->comp_mask & 4)
		FAKE_U(&r, "attr.tph_mem_type", a->tph_mem_type);
	d = fake_end_new(&r, err, "dmah", sizeof(*d));
	if (d != NULL)
		d->context = context;
	return d;
}

MEM_EX_VERB(int, mem_ex_dealloc_dmah, "ibv_dealloc_dmah",
	    (struct mem_ex_dmah * d))
{
	return fake_destroy_simple("dealloc_dmah", "dmah", "dmah", d);
}

MEM_EX_VERB(int, mem_ex_query_port_speed, "ibv_query_port_speed",
	    (struct ibv_context * context, uint32_t port_num, uint64_t *speed))
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_port_speed");

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "port_num", port_num);
	fake_end(&r);
	if (err)
		return err;
	*speed = 4000;
	return 0;
}

MEM_EX_VERB(int, mem_ex_rereg_mr, "ibv_rereg_mr",
	    (struct ibv_mr * mr, int flags, struct ibv_pd *pd, void *addr,
	     size_t length, int access))
{
	struct fake_rec r;
	int err = fake_begin(&r, "rereg_mr");

	FAKE_P(&r, "mr", mr);
	FAKE_X(&r, "flags", (unsigned int)flags);
	FAKE_P(&r, "pd", pd);
	FAKE_P(&r, "addr", addr);
	FAKE_U(&r, "length", length);
	FAKE_X(&r, "access", (unsigned int)access);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return -4; /* IBV_REREG_MR_ERR_CMD */
	}
	if (flags & 2)
		mr->pd = pd;
	if (flags & 1) {
		mr->addr = addr;
		mr->length = length;
	}
	mr->lkey = mr->rkey = fake_next_id();
	return 0;
}

MEM_EX_VERB(struct ibv_context *, mem_ex_import_device, "ibv_import_device",
	    (int cmd_fd))
{
	struct fake_rec r;
	int err = fake_begin(&r, "import_device");
	struct ibv_device **list;
	struct ibv_context *ctx;

	FAKE_I(&r, "cmd_fd", cmd_fd);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	list = ibv_get_device_list(NULL);
	ctx = list ? ibv_open_device(list[0]) : NULL;
	if (list)
		ibv_free_device_list(list);
	if (ctx != NULL)
		close(cmd_fd); /* the context owns it, as libibverbs' does */
	return ctx;
}

MEM_EX_VERB(struct ibv_pd *, mem_ex_import_pd, "ibv_import_pd",
	    (struct ibv_context * context, uint32_t handle))
{
	struct ibv_pd *pd;

	if (mem_ex_import_rec("import_pd", "context", context, "pd_handle",
			      handle))
		return NULL;
	pd = fake_new_obj("pd", sizeof(*pd));
	if (pd != NULL) {
		pd->context = context;
		pd->handle = handle;
	}
	return pd;
}

MEM_EX_VERB(void, mem_ex_unimport_pd, "ibv_unimport_pd", (struct ibv_pd * pd))
{
	mem_ex_forget("unimport_pd", "pd", pd);
}

MEM_EX_VERB(struct ibv_mr *, mem_ex_import_mr, "ibv_import_mr",
	    (struct ibv_pd * pd, uint32_t handle))
{
	struct ibv_mr *mr;

	if (mem_ex_import_rec("import_mr", "pd", pd, "mr_handle", handle))
		return NULL;
	mr = mem_new_mr(pd, (void *)(uintptr_t)0x1000, 4096);
	if (mr != NULL)
		mr->handle = handle;
	return mr;
}

MEM_EX_VERB(void, mem_ex_unimport_mr, "ibv_unimport_mr", (struct ibv_mr * mr))
{
	mem_ex_forget("unimport_mr", "mr", mr);
}

MEM_EX_VERB(struct ibv_dm *, mem_ex_import_dm, "ibv_import_dm",
	    (struct ibv_context * context, uint32_t handle))
{
	struct ibv_dm *dm;

	if (mem_ex_import_rec("import_dm", "context", context, "dm_handle",
			      handle))
		return NULL;
	dm = fake_new_obj("dm", sizeof(*dm));
	if (dm != NULL)
		dm->context = context;
	return dm;
}

MEM_EX_VERB(void, mem_ex_unimport_dm, "ibv_unimport_dm", (struct ibv_dm * dm))
{
	mem_ex_forget("unimport_dm", "dm", dm);
}

static struct ibv_mr *mem_ex_alloc_null_mr(struct ibv_pd *pd)
{
	int err = fake_record_simple("alloc_null_mr", "pd", pd);

	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	return mem_new_mr(pd, NULL, SIZE_MAX);
}

static int mem_ex_query_rt_values(struct ibv_context *context,
				  struct ibv_values_ex *v)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_rt_values");

	FAKE_P(&r, "context", context);
	FAKE_X(&r, "values.comp_mask", v->comp_mask);
	fake_end(&r);
	if (err)
		return err;
	v->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	v->raw_clock.tv_sec = 12;
	v->raw_clock.tv_nsec = 345678;
	return 0;
}

FAKE_CONTEXT_OPS(mem_ex_ops)
{
	fc->vctx.alloc_null_mr = mem_ex_alloc_null_mr;
	fc->vctx.query_rt_values = mem_ex_query_rt_values;
}
