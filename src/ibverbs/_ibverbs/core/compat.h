/*
 * compat.h - declarations older rdma-core headers lack, for the exported
 * verbs the loader finds with dlsym (ibverbs.h's IBV_OPTIONAL_SYMBOLS).
 *
 * Built against rdma-core 33's headers the module still resolves these
 * verbs at run time, so it uses them where the loaded libibverbs has
 * them; without them the call raises VerbsError(EOPNOTSUPP) naming the
 * release.  Each prototype is rdma-core's own, behind setup.py's probe
 * (PROBES) for its declaration.
 */
#ifndef IBVERBS_COMPAT_H
#define IBVERBS_COMPAT_H

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#ifndef IBVERBS_HAVE_REG_DMABUF_MR
/* rdma-core 34 */
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				 size_t length, uint64_t iova, int fd,
				 int access);
#endif

#ifndef IBVERBS_HAVE_IS_FORK_INITIALIZED
/* rdma-core 35: returns enum ibv_fork_status (IBV_FORK_DISABLED 0,
 * IBV_FORK_ENABLED 1, IBV_FORK_UNNEEDED 2), an int-sized enum. */
int ibv_is_fork_initialized(void);
#endif

#ifndef IBVERBS_HAVE_QUERY_QP_DATA_IN_ORDER
/* rdma-core 41 */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
			       uint32_t flags);
#endif

/* ---- memory, import and device verbs (rdma-core 59-64) ---- */

#ifndef IBVERBS_HAVE_IMPORT_DM
/* rdma-core 35 */
struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle);
void ibv_unimport_dm(struct ibv_dm *dm);
#endif

#ifndef IBVERBS_HAVE_REG_MR_EX
/* rdma-core 59: ibv_reg_mr_ex and the DMA handles, with their structs and
 * masks as verbs.h defines them. */
struct ibv_dmah {
	struct ibv_context *context;
};

enum ibv_mr_init_attr_mask {
	IBV_REG_MR_MASK_IOVA = 1 << 0,
	IBV_REG_MR_MASK_ADDR = 1 << 1,
	IBV_REG_MR_MASK_FD = 1 << 2,
	IBV_REG_MR_MASK_FD_OFFSET = 1 << 3,
	IBV_REG_MR_MASK_DMAH = 1 << 4,
};

struct ibv_mr_init_attr {
	size_t length;
	int access;
	uint64_t comp_mask; /* enum ibv_mr_init_attr_mask */
	uint64_t iova;
	void *addr;
	int fd;
	uint64_t fd_offset;
	struct ibv_dmah *dmah;
};

enum ibv_tph_mem_type {
	IBV_TPH_MEM_TYPE_VM, /* volatile memory */
	IBV_TPH_MEM_TYPE_PM, /* persistent memory */
};

enum ibv_dmah_init_attr_mask {
	IBV_DMAH_INIT_ATTR_MASK_CPU_ID = 1 << 0,
	IBV_DMAH_INIT_ATTR_MASK_PH = 1 << 1,
	IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE = 1 << 2,
};

struct ibv_dmah_init_attr {
	uint32_t comp_mask;
	uint32_t cpu_id;
	uint8_t ph;
	uint8_t tph_mem_type; /* enum ibv_tph_mem_type */
};

struct ibv_mr *ibv_reg_mr_ex(struct ibv_pd *pd,
			     struct ibv_mr_init_attr *mr_init_attr);
struct ibv_dmah *ibv_alloc_dmah(struct ibv_context *context,
				struct ibv_dmah_init_attr *attr);
int ibv_dealloc_dmah(struct ibv_dmah *dmah);
#endif

#ifndef IBVERBS_HAVE_QUERY_PORT_SPEED
/* rdma-core 62 */
int ibv_dm_export_dmabuf_fd(struct ibv_dm *dm);
int ibv_query_port_speed(struct ibv_context *context, uint32_t port_num,
			 uint64_t *port_speed);
#endif

#ifndef IBVERBS_HAVE_ALLOC_BUF
/* rdma-core 64: struct ibv_buf is opaque; struct ibv_mr_init_attr gained
 * its last field, buf, with the mask bit below. */
struct ibv_buf;
enum { IBV_REG_MR_MASK_BUF = 1 << 5 };
void *ibv_alloc_buf(struct ibv_pd *pd, size_t size, struct ibv_buf **buf);
void ibv_free_buf(struct ibv_buf *buf);
struct ibv_mr *ibv_reg_buf_mr(struct ibv_pd *pd, struct ibv_buf *buf,
			      void *addr, size_t length, int access);
#endif

#ifndef IBVERBS_HAVE_EXPORT_BUF_DMABUF_FD
/* rdma-core 65 */
int ibv_export_buf_dmabuf_fd(struct ibv_buf *buf);
#endif

/* struct ibv_mr_init_attr as rdma-core 64 lays it out (buf last), whatever
 * the headers: mem/mr_ex.c fills this and passes it to ibv_reg_mr_ex, so
 * a build against rdma-core 59..63 headers still reaches the buf field of
 * a newer library; an older library reads only the fields before it. */
struct ibverbs_mr_init_attr {
	size_t length;
	int access;
	uint64_t comp_mask;
	uint64_t iova;
	void *addr;
	int fd;
	uint64_t fd_offset;
	struct ibv_dmah *dmah;
	struct ibv_buf *buf;
};

#ifndef IBVERBS_HAVE_COMP_CNTR
/* rdma-core 65 (IBVERBS_1.18): completion counters (counters/comp_cntr.c).
 * The enums, structs and prototypes as rdma-core's verbs.h has them. */
enum ibv_qp_attach_comp_cntr_op {
	IBV_QP_ATTACH_COMP_CNTR_OP_SEND = 1 << 0,
	IBV_QP_ATTACH_COMP_CNTR_OP_RECV = 1 << 1,
	IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_READ = 1 << 2,
	IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ = 1 << 3,
	IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE = 1 << 4,
	IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE = 1 << 5,
};

struct ibv_comp_cntr_caps {
	uint64_t max_value;
	uint32_t max_counters;
	uint32_t supported_qp_attach_ops;
};

struct ibv_comp_cntr {
	struct ibv_context *context;
	uint32_t handle;
};

enum ibv_comp_cntr_type {
	IBV_COMP_CNTR_TYPE_WRS,
	IBV_COMP_CNTR_TYPE_BYTES,
};

struct ibv_comp_cntr_init_attr {
	uint32_t comp_mask;
	enum ibv_comp_cntr_type type;
	uint32_t flags;
};

struct ibv_qp_attach_comp_cntr_attr {
	uint32_t comp_mask;
	uint32_t op_mask;
};

int _ibv_query_comp_cntr_caps(struct ibv_context *context,
			      struct ibv_comp_cntr_caps *caps,
			      size_t caps_size);
struct ibv_comp_cntr *
ibv_create_comp_cntr(struct ibv_context *context,
		     struct ibv_comp_cntr_init_attr *cc_attr);
int ibv_destroy_comp_cntr(struct ibv_comp_cntr *comp_cntr);
int ibv_set_comp_cntr(struct ibv_comp_cntr *comp_cntr, uint64_t value);
int ibv_set_err_comp_cntr(struct ibv_comp_cntr *comp_cntr, uint64_t value);
int ibv_inc_comp_cntr(struct ibv_comp_cntr *comp_cntr, uint64_t amount);
int ibv_inc_err_comp_cntr(struct ibv_comp_cntr *comp_cntr, uint64_t amount);
int ibv_read_comp_cntr(struct ibv_comp_cntr *comp_cntr, uint64_t *value);
int ibv_read_err_comp_cntr(struct ibv_comp_cntr *comp_cntr, uint64_t *value);
int ibv_qp_attach_comp_cntr(struct ibv_qp *qp, struct ibv_comp_cntr *comp_cntr,
			    struct ibv_qp_attach_comp_cntr_attr *attr);
#endif

#endif /* IBVERBS_COMPAT_H */
