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

#endif /* IBVERBS_COMPAT_H */
