/*
 * efa/efa_abi.h - the structs and constants of libefa's efadv.h as of
 * rdma-core 65, under our own names (struct efa_m_*), so that the
 * extension builds against every header from rdma-core 33 on, where
 * efadv.h lacks most of them.  Plain C, no Python: the project's fake
 * libefa (tests/fakes/efa/) includes it too.  efa.h checks each layout
 * against the header's struct where the header has it.
 *
 * libefa takes the caller's struct size (inlen): it copies min(inlen,
 * its own size), and requires the bytes past its own size to be zero.
 * Passing sizeof of these structs, every unused byte zero, works with
 * older and newer libefa alike.
 */
#ifndef IBVERBS_EFA_EFA_ABI_H
#define IBVERBS_EFA_EFA_ABI_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

/* efadv_device_attr.device_caps */
#define EFA_M_CAPS_RDMA_READ (1u << 0)
#define EFA_M_CAPS_RNR_RETRY (1u << 1)
#define EFA_M_CAPS_CQ_WITH_SGID (1u << 2)
#define EFA_M_CAPS_RDMA_WRITE (1u << 3)
#define EFA_M_CAPS_UNSOLICITED_WRITE_RECV (1u << 4)
#define EFA_M_CAPS_CQ_WITH_EXT_MEM_DMABUF (1u << 5)
#define EFA_M_CAPS_COMP_CNTR (1u << 6)
/* driver_qp_type */
#define EFA_M_QP_DRIVER_TYPE_SRD 0u
/* efadv_qp_init_attr.flags */
#define EFA_M_QP_FLAGS_UNSOLICITED_WRITE_RECV (1u << 0)
#define EFA_M_QP_FLAGS_INLINE_WRITE (1u << 1)
/* efadv_qp_init_attr.wr_flags */
#define EFA_M_WR_EX_WITH_PROCESSING_HINTS (1u << 0)
/* efadv_wr_set_processing_hints' hints */
#define EFA_M_WR_PROCESSING_HINT_BURST_PPS_SENSITIVE (1u << 0)
/* efadv_sq_depth_attr.flags */
#define EFA_M_SQ_DEPTH_ATTR_INLINE_WRITE (1u << 0)
/* efadv_wq_attr.caps */
#define EFA_M_WQ_CAPS_64_BIT_REQ_ID (1u << 0)
/* efadv_cq_init_attr.wc_flags */
#define EFA_M_WC_EX_WITH_SGID (1u << 0)
#define EFA_M_WC_EX_WITH_IS_UNSOLICITED (1u << 1)
/* efadv_cq_init_attr.flags */
#define EFA_M_CQ_INIT_FLAGS_EXT_MEM_DMABUF (1u << 0)
/* efadv_memory_location.type */
#define EFA_M_MEMORY_LOCATION_VA 0u
#define EFA_M_MEMORY_LOCATION_DMABUF 1u
/* efadv_comp_cntr_init_attr.flags */
#define EFA_M_COMP_CNTR_INIT_WITH_COMP_EXTERNAL_MEM (1u << 0)
#define EFA_M_COMP_CNTR_INIT_WITH_ERR_EXTERNAL_MEM (1u << 1)
/* efadv_mr_attr.ic_id_validity */
#define EFA_M_MR_ATTR_VALIDITY_RECV_IC_ID (1u << 0)
#define EFA_M_MR_ATTR_VALIDITY_RDMA_READ_IC_ID (1u << 1)
#define EFA_M_MR_ATTR_VALIDITY_RDMA_RECV_IC_ID (1u << 2)

struct efa_m_device_attr {
	uint64_t comp_mask;
	uint32_t max_sq_wr;
	uint32_t max_rq_wr;
	uint16_t max_sq_sge;
	uint16_t max_rq_sge;
	uint16_t inline_buf_size;
	uint16_t inline_buf_size_ex;
	uint32_t device_caps;
	uint32_t max_rdma_size;
};

struct efa_m_ah_attr {
	uint64_t comp_mask;
	uint16_t ahn;
	uint8_t reserved[6];
};

struct efa_m_sq_depth_attr {
	uint64_t comp_mask;
	uint32_t flags;
	uint32_t max_send_sge;
	uint32_t max_rdma_sge;
	uint32_t max_inline_data;
};

struct efa_m_rq_depth_attr {
	uint64_t comp_mask;
	uint32_t max_recv_sge;
};

struct efa_m_qp_init_attr {
	uint64_t comp_mask;
	uint32_t driver_qp_type;
	uint16_t flags;
	uint8_t sl;
	uint8_t reserved;
	uint64_t wr_flags;
};

struct efa_m_wq_attr {
	uint64_t comp_mask;
	uint8_t *buffer;
	uint32_t entry_size;
	uint32_t num_entries;
	uint32_t *doorbell;
	uint32_t max_batch;
	uint16_t caps;
	uint8_t reserved[2];
};

struct efa_m_qp {
	uint64_t comp_mask;
	void (*wr_set_processing_hints)(struct efa_m_qp *efadv_qp,
					uint32_t hints);
};

struct efa_m_cq_init_attr {
	uint64_t comp_mask;
	uint64_t wc_flags;
	uint64_t flags;
	struct {
		uint8_t *buffer;
		uint64_t length;
		uint64_t offset;
		int32_t fd;
		uint8_t reserved[4];
	} ext_mem_dmabuf;
};

struct efa_m_cq_attr {
	uint64_t comp_mask;
	uint8_t *buffer;
	uint32_t entry_size;
	uint32_t num_entries;
	uint32_t *doorbell;
};

struct efa_m_cq {
	uint64_t comp_mask;
	int (*wc_read_sgid)(struct efa_m_cq *efadv_cq, union ibv_gid *sgid);
	bool (*wc_is_unsolicited)(struct efa_m_cq *efadv_cq);
};

struct efa_m_memory_location {
	uint8_t *ptr;
	struct {
		uint64_t offset;
		int32_t fd;
		uint32_t reserved;
	} dmabuf;
	uint8_t type;
	uint8_t reserved[7];
};

struct efa_m_comp_cntr_init_attr {
	uint64_t comp_mask;
	uint32_t flags;
	uint32_t reserved;
	struct efa_m_memory_location comp_cntr_ext_mem;
	struct efa_m_memory_location err_cntr_ext_mem;
};

struct efa_m_mr_attr {
	uint64_t comp_mask;
	uint16_t ic_id_validity;
	uint16_t recv_ic_id;
	uint16_t rdma_read_ic_id;
	uint16_t rdma_recv_ic_id;
};

/* The 13 exported functions, with the symbol version node that has each
 * and the rdma-core release that added it: X(name, node, release,
 * return type, parameters).  The fake libefa and the loader read it. */
struct ibv_comp_cntr;
struct ibv_comp_cntr_init_attr;
/* clang-format off */
#define EFA_SYMBOLS(X)                                                        \
	X(create_driver_qp, "EFA_1.0", "rdma-core 24", struct ibv_qp *,       \
	  (struct ibv_pd *, struct ibv_qp_init_attr *, uint32_t))             \
	X(create_qp_ex, "EFA_1.1", "rdma-core 26", struct ibv_qp *,           \
	  (struct ibv_context *, struct ibv_qp_init_attr_ex *,                \
	   struct efa_m_qp_init_attr *, uint32_t))                            \
	X(query_device, "EFA_1.1", "rdma-core 26", int,                       \
	  (struct ibv_context *, struct efa_m_device_attr *, uint32_t))       \
	X(query_ah, "EFA_1.1", "rdma-core 26", int,                           \
	  (struct ibv_ah *, struct efa_m_ah_attr *, uint32_t))                \
	X(create_cq, "EFA_1.2", "rdma-core 43", struct ibv_cq_ex *,           \
	  (struct ibv_context *, struct ibv_cq_init_attr_ex *,                \
	   struct efa_m_cq_init_attr *, uint32_t))                            \
	X(cq_from_ibv_cq_ex, "EFA_1.2", "rdma-core 43", struct efa_m_cq *,    \
	  (struct ibv_cq_ex *))                                               \
	X(query_mr, "EFA_1.3", "rdma-core 50", int,                           \
	  (struct ibv_mr *, struct efa_m_mr_attr *, uint32_t))                \
	X(query_qp_wqs, "EFA_1.4", "rdma-core 59", int,                       \
	  (struct ibv_qp *, struct efa_m_wq_attr *, struct efa_m_wq_attr *,   \
	   uint32_t))                                                         \
	X(query_cq, "EFA_1.4", "rdma-core 59", int,                           \
	  (struct ibv_cq *, struct efa_m_cq_attr *, uint32_t))                \
	X(get_max_sq_depth, "EFA_1.5", "rdma-core 63", int,                   \
	  (struct ibv_context *, struct efa_m_sq_depth_attr *, uint32_t))     \
	X(get_max_rq_depth, "EFA_1.5", "rdma-core 63", int,                   \
	  (struct ibv_context *, struct efa_m_rq_depth_attr *, uint32_t))     \
	X(qp_from_ibv_qp_ex, "EFA_1.6", "rdma-core 64", struct efa_m_qp *,    \
	  (struct ibv_qp_ex *))                                               \
	X(create_comp_cntr, "EFA_1.7", "rdma-core 65",                        \
	  struct ibv_comp_cntr *,                                             \
	  (struct ibv_context *, struct ibv_comp_cntr_init_attr *,            \
	   struct efa_m_comp_cntr_init_attr *, uint32_t))
/* clang-format on */

#endif /* IBVERBS_EFA_EFA_ABI_H */
