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
