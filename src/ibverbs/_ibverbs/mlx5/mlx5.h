/*
 * mlx5/mlx5.h - the mlx5 direct verbs (libmlx5's mlx5dv.h) shared by the
 * files of mlx5/: the lazily loaded symbol table of libmlx5.so.1
 * (mlx5_loader.c), one symbol list per concern, the mirror structs of the
 * rdma-core 65 layouts the calls pass, the objects and type specs
 * (core/module.c names them) and the module functions.
 *
 * Files: mlx5_loader.c (the loader, _mlx5_status), device.c
 * (is_supported, open_device, query_device, the data-direct path,
 * reg_dmabuf_mr), cq.c (mlx5.CQ), qp.c (mlx5.QP and its DC setters),
 * obj.c (init_obj, get_cqe_opcode); devx.c and mkey.c (DEVX, mkeys) fill
 * MLX5_DEVX_SYMBOLS / MLX5_MKEY_SYMBOLS and their method lists below.
 */
#ifndef IBVERBS_MLX5_MLX5_H
#define IBVERBS_MLX5_MLX5_H

#include "ibverbs.h"
#include <infiniband/mlx5dv.h>
#include <limits.h>
#include <stdbool.h>

/* ------------------------------------------------------------------ */
/* Declarations older mlx5dv.h headers lack (identical to rdma-core     */
/* 65's, so a newer header's own declaration agrees with them)          */
/* ------------------------------------------------------------------ */

struct mlx5dv_devx_umem_in;
/* rdma-core 37 (MLX5_1.21) */
int mlx5dv_dci_stream_id_reset(struct ibv_qp *qp, uint16_t stream_id);
/* rdma-core 35 (MLX5_1.19) */
struct mlx5dv_devx_umem *
mlx5dv_devx_umem_reg_ex(struct ibv_context *ctx,
			struct mlx5dv_devx_umem_in *umem_in);
/* rdma-core 54 (MLX5_1.25) */
struct ibv_mr *mlx5dv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				    size_t length, uint64_t iova, int fd,
				    int access, int mlx5_access);
int mlx5dv_get_data_direct_sysfs_path(struct ibv_context *context, char *buf,
				      size_t buf_len);

/* ------------------------------------------------------------------ */
/* The symbol table of libmlx5.so.1: X(field, symbol, since)            */
/* ------------------------------------------------------------------ */

/* Every symbol is optional: a missing one is VerbsError(EOPNOTSUPP)
 * naming it and "since", from the call that needs it (MLX5_NEEDS).
 * mlx5dv_init_obj has two versions (MLX5_1.0 and MLX5_1.2); dlsym gives
 * the default one, MLX5_1.2, what a program linked today calls. */

/* device.c, cq.c, qp.c, obj.c */
#define MLX5_CORE_SYMBOLS(X)                                                 \
	X(is_supported, mlx5dv_is_supported, "rdma-core 22")                 \
	X(open_device, mlx5dv_open_device, "rdma-core 21")                   \
	X(query_device, mlx5dv_query_device, "rdma-core 13")                 \
	X(get_data_direct_sysfs_path, mlx5dv_get_data_direct_sysfs_path,     \
	  "rdma-core 54")                                                    \
	X(reg_dmabuf_mr, mlx5dv_reg_dmabuf_mr, "rdma-core 54")               \
	X(create_cq, mlx5dv_create_cq, "rdma-core 14")                       \
	X(create_qp, mlx5dv_create_qp, "rdma-core 16")                       \
	X(qp_ex_from_ibv_qp_ex, mlx5dv_qp_ex_from_ibv_qp_ex, "rdma-core 24") \
	X(modify_qp_udp_sport, mlx5dv_modify_qp_udp_sport, "rdma-core 33")   \
	X(modify_qp_lag_port, mlx5dv_modify_qp_lag_port, "rdma-core 30")     \
	X(query_qp_lag_port, mlx5dv_query_qp_lag_port, "rdma-core 30")       \
	X(dci_stream_id_reset, mlx5dv_dci_stream_id_reset, "rdma-core 37")   \
	X(init_obj, mlx5dv_init_obj, "rdma-core 13")

/* mkey.c: mkeys (wr_mr_list is an inline over mlx5dv_qp_ex). */
#define MLX5_MKEY_SYMBOLS(X)                               \
	X(create_mkey, mlx5dv_create_mkey, "rdma-core 24") \
	X(destroy_mkey, mlx5dv_destroy_mkey, "rdma-core 24")

/* devx.c: DEVX, raw PRM bytes. */
#define MLX5_DEVX_SYMBOLS(X)                                             \
	X(devx_alloc_uar, mlx5dv_devx_alloc_uar, "rdma-core 21")         \
	X(devx_free_uar, mlx5dv_devx_free_uar, "rdma-core 21")           \
	X(devx_general_cmd, mlx5dv_devx_general_cmd, "rdma-core 21")     \
	X(devx_obj_create, mlx5dv_devx_obj_create, "rdma-core 21")       \
	X(devx_obj_destroy, mlx5dv_devx_obj_destroy, "rdma-core 21")     \
	X(devx_obj_modify, mlx5dv_devx_obj_modify, "rdma-core 21")       \
	X(devx_obj_query, mlx5dv_devx_obj_query, "rdma-core 21")         \
	X(devx_qp_modify, mlx5dv_devx_qp_modify, "rdma-core 22")         \
	X(devx_qp_query, mlx5dv_devx_qp_query, "rdma-core 22")           \
	X(devx_query_eqn, mlx5dv_devx_query_eqn, "rdma-core 21")         \
	X(devx_umem_reg, mlx5dv_devx_umem_reg, "rdma-core 21")           \
	X(devx_umem_reg_ex, mlx5dv_devx_umem_reg_ex, "rdma-core 35")     \
	X(devx_umem_dereg, mlx5dv_devx_umem_dereg, "rdma-core 21")       \
	X(devx_create_event_channel, mlx5dv_devx_create_event_channel,   \
	  "rdma-core 25")                                                \
	X(devx_destroy_event_channel, mlx5dv_devx_destroy_event_channel, \
	  "rdma-core 25")                                                \
	X(devx_get_event, mlx5dv_devx_get_event, "rdma-core 25")         \
	X(devx_subscribe_devx_event, mlx5dv_devx_subscribe_devx_event,   \
	  "rdma-core 25")

#define MLX5_SYMBOLS(X)      \
	MLX5_CORE_SYMBOLS(X) \
	MLX5_MKEY_SYMBOLS(X) \
	MLX5_DEVX_SYMBOLS(X)

struct mlx5_api {
#define MLX5_DECL(field, sym, since) __typeof__(sym) *field;
	MLX5_SYMBOLS(MLX5_DECL)
#undef MLX5_DECL
	void *lib;
	char path[PATH_MAX];
};

extern struct mlx5_api MLX5;

/* Load libmlx5.so.1 ($IBVERBS_LIBMLX5, test-only, names another file)
 * once, under a lock in the free-threaded build.  0, or -1 with
 * ImportError naming the library and the package ibverbs-providers. */
int mlx5_load(void);

/* The symbol and the rdma-core release of a field of MLX5 ("?" for
 * none): for messages. */
const char *mlx5_symbol(const char *field);
const char *mlx5_since(const char *field);

/* In a function returning PyObject *: load the library, then raise
 * VerbsError(EOPNOTSUPP) naming the symbol of MLX5.field and the release
 * that added it when the loaded libmlx5 lacks it. */
#define MLX5_NEED(field)                                                   \
	do {                                                               \
		if (mlx5_load() < 0)                                       \
			return NULL;                                       \
		if (lib_need((void *)MLX5.field, "libmlx5",                \
			     mlx5_symbol(#field), mlx5_since(#field)) < 0) \
			return NULL;                                       \
	} while (0)

/* ------------------------------------------------------------------ */
/* Mirror structs: rdma-core 65's layouts, which only grow at the end   */
/* (the library reads what comp_mask selects); checked against the      */
/* header's struct field by field where the header has the field        */
/* (device.c, qp.c: _Static_assert, with setup.py's MLX5_PROBES).       */
/* ------------------------------------------------------------------ */

/* struct mlx5dv_context: query_device's out struct; comp_mask in/out. */
struct m5_context {
	uint8_t version;
	uint64_t flags;
	uint64_t comp_mask;
	struct {
		uint32_t max_num, supported_format;
	} cqe_comp_caps;
	struct {
		uint32_t sw_parsing_offloads, supported_qpts;
	} sw_parsing_caps;
	struct {
		uint32_t min_single_stride_log_num_of_bytes;
		uint32_t max_single_stride_log_num_of_bytes;
		uint32_t min_single_wqe_log_num_of_strides;
		uint32_t max_single_wqe_log_num_of_strides;
		uint32_t supported_qpts;
	} striding_rq_caps;
	uint32_t tunnel_offloads_caps;
	uint32_t max_dynamic_bfregs;
	uint64_t max_clock_info_update_nsec;
	uint32_t flow_action_flags;
	uint32_t dc_odp_caps;
	void *hca_core_clock;
	uint8_t num_lag_ports;
	/* rdma-core 37 */
	struct {
		uint64_t block_size;
		uint32_t block_prot;
		uint16_t t10dif_bg;
		uint16_t crc_type;
	} sig_caps;
	struct {
		uint8_t max_log_num_concurent, max_log_num_errored;
	} dci_streams_caps;
	size_t max_wr_memcpy_length;
	struct {
		uint16_t failed_selftests;
		uint8_t crypto_engines, wrapped_import_method, log_max_num_deks;
		uint32_t flags;
	} crypto_caps;
	/* rdma-core 47 */
	uint64_t max_dc_rd_atom;
	uint64_t max_dc_init_rd_atom;
	/* rdma-core 50 */
	struct {
		uint32_t value, mask;
	} reg_c0;
	/* rdma-core 55 */
	struct {
		uint32_t max_rc, max_xrc, max_dct, max_ud, max_uc;
	} ooo_recv_wrs_caps;
};

/* The comp_mask bits of struct m5_context this build knows (MLX5DV_
 * CONTEXT_MASK_*, bit 0 CQE_COMPRESION ... bit 16 OOO_RECV_WRS). */
#define M5_CONTEXT_MASK_ALL ((1ull << 17) - 1)

/* struct mlx5dv_context_attr (fds: rdma-core 54). */
struct m5_context_attr {
	uint32_t flags;
	uint64_t comp_mask;
	void *fds;
};

/* struct mlx5dv_qp_init_attr (the dci_streams member of the DC union:
 * rdma-core 37). */
struct m5_qp_init_attr {
	uint64_t comp_mask;
	uint32_t create_flags;
	struct {
		uint32_t dc_type; /* enum mlx5dv_dc_type */
		union {
			uint64_t dct_access_key;
			struct {
				uint8_t log_num_concurent;
				uint8_t log_num_errored;
			} dci_streams;
		};
	} dc_init_attr;
	uint64_t send_ops_flags;
};

/* MLX5DV_QP_INIT_ATTR_MASK_*, MLX5DV_DCTYPE_* */
#define M5_QP_MASK_CREATE_FLAGS (1ull << 0)
#define M5_QP_MASK_DC (1ull << 1)
#define M5_QP_MASK_SEND_OPS_FLAGS (1ull << 2)
#define M5_QP_MASK_DCI_STREAMS (1ull << 3)
#define M5_DCTYPE_DCT 1
#define M5_DCTYPE_DCI 2

/* struct mlx5dv_qp_ex: rdma-core 65's function table (what
 * mlx5dv_qp_ex_from_ibv_qp_ex returns); the inline setters of mlx5dv.h
 * call through it.  wr_set_dc_addr_stream: rdma-core 37. */
struct m5_qp_ex {
	uint64_t comp_mask;
	void (*wr_set_dc_addr)(struct m5_qp_ex *mqp, struct ibv_ah *ah,
			       uint32_t remote_dctn, uint64_t remote_dc_key);
	void *wr_mr_interleaved;
	void *wr_mr_list;
	void *wr_mkey_configure;
	void *wr_set_mkey_access_flags;
	void *wr_set_mkey_layout_list;
	void *wr_set_mkey_layout_interleaved;
	void *wr_set_mkey_sig_block;
	void *wr_raw_wqe;
	void (*wr_set_dc_addr_stream)(struct m5_qp_ex *mqp, struct ibv_ah *ah,
				      uint32_t remote_dctn,
				      uint64_t remote_dc_key,
				      uint16_t stream_id);
	void *wr_memcpy;
	void *wr_set_mkey_crypto;
};

/* mlx5_loader.c: _mlx5_status() -> (True, path) or (False, why). */
METHOD_DECL_NOARGS(mlx5_mod_status);

/* ------------------------------------------------------------------ */
/* device.c                                                            */
/* ------------------------------------------------------------------ */

METHOD_DECL(mlx5_mod_is_supported);
METHOD_DECL(mlx5_mod_open_device);
METHOD_DECL(mlx5_mod_query_device);
METHOD_DECL(mlx5_mod_get_data_direct_sysfs_path);
METHOD_DECL(mlx5_mod_reg_dmabuf_mr);

/* cq.c, qp.c: the types (core/module.c's subtype_table) and factories */
extern PyType_Spec Mlx5CQ_spec;
extern PyType_Spec Mlx5QP_spec;
METHOD_DECL(mlx5_mod_create_cq);
METHOD_DECL(mlx5_mod_create_qp);
METHOD_DECL(mlx5_mod_modify_qp_udp_sport);
METHOD_DECL(mlx5_mod_modify_qp_lag_port);
METHOD_DECL(mlx5_mod_query_qp_lag_port);
METHOD_DECL(mlx5_mod_dci_stream_id_reset);
/* obj.c */
METHOD_DECL(mlx5_mod_init_obj);
METHOD_DECL(mlx5_mod_get_cqe_opcode);

/* The module functions of mlx5/, for core/module.c's table (one line
 * there: MLX5_MODULE_METHODS), each entry followed by a comma.  devx.c
 * and mkey.c add theirs to MLX5_DEVX_MODULE_METHODS and
 * MLX5_MKEY_MODULE_METHODS. */
/* devx.c: DEVX as raw bytes; its types Mlx5DevxUmem, Mlx5DevxUAR,
 * Mlx5DevxObj, Mlx5DevxEventChannel.  mkey.c: Mlx5Mkey, wr_mr_list. */
extern PyType_Spec Mlx5DevxUmem_spec;
extern PyType_Spec Mlx5DevxUAR_spec;
extern PyType_Spec Mlx5DevxObj_spec;
extern PyType_Spec Mlx5DevxEventChannel_spec;
extern PyType_Spec Mlx5Mkey_spec;
METHOD_DECL(mlx5_mod_devx_general_cmd);
METHOD_DECL(mlx5_mod_devx_query_eqn);
METHOD_DECL(mlx5_mod_devx_qp_modify);
METHOD_DECL(mlx5_mod_devx_qp_query);
METHOD_DECL(mlx5_mod_devx_umem_reg);
METHOD_DECL(mlx5_mod_devx_umem_reg_ex);
METHOD_DECL(mlx5_mod_devx_alloc_uar);
METHOD_DECL(mlx5_mod_devx_obj_create);
METHOD_DECL(mlx5_mod_devx_create_event_channel);
METHOD_DECL(mlx5_mod_create_mkey);
METHOD_DECL(mlx5_mod_wr_mr_list);
/* clang-format off */
#define MLX5_DEVX_MODULE_METHODS \
	METHOD_KW("_mlx5_devx_general_cmd", mlx5_mod_devx_general_cmd), \
	METHOD_KW("_mlx5_devx_query_eqn", mlx5_mod_devx_query_eqn), \
	METHOD_KW("_mlx5_devx_qp_modify", mlx5_mod_devx_qp_modify), \
	METHOD_KW("_mlx5_devx_qp_query", mlx5_mod_devx_qp_query), \
	METHOD_KW("_mlx5_devx_umem_reg", mlx5_mod_devx_umem_reg), \
	METHOD_KW("_mlx5_devx_umem_reg_ex", mlx5_mod_devx_umem_reg_ex), \
	METHOD_KW("_mlx5_devx_alloc_uar", mlx5_mod_devx_alloc_uar), \
	METHOD_KW("_mlx5_devx_obj_create", mlx5_mod_devx_obj_create), \
	METHOD_KW("_mlx5_devx_create_event_channel", \
		  mlx5_mod_devx_create_event_channel),
#define MLX5_MKEY_MODULE_METHODS \
	METHOD_KW("_mlx5_create_mkey", mlx5_mod_create_mkey), \
	METHOD_KW("_mlx5_wr_mr_list", mlx5_mod_wr_mr_list),
/* clang-format on */
/* clang-format off */
#define MLX5_MODULE_METHODS \
	METHOD_NOARGS("_mlx5_status", mlx5_mod_status), \
	METHOD_KW("_mlx5_is_supported", mlx5_mod_is_supported), \
	METHOD_KW("_mlx5_open_device", mlx5_mod_open_device), \
	METHOD_KW("_mlx5_query_device", mlx5_mod_query_device), \
	METHOD_KW("_mlx5_get_data_direct_sysfs_path", \
		  mlx5_mod_get_data_direct_sysfs_path), \
	METHOD_KW("_mlx5_reg_dmabuf_mr", mlx5_mod_reg_dmabuf_mr), \
	METHOD_KW("_mlx5_create_cq", mlx5_mod_create_cq), \
	METHOD_KW("_mlx5_create_qp", mlx5_mod_create_qp), \
	METHOD_KW("_mlx5_modify_qp_udp_sport", mlx5_mod_modify_qp_udp_sport), \
	METHOD_KW("_mlx5_modify_qp_lag_port", mlx5_mod_modify_qp_lag_port), \
	METHOD_KW("_mlx5_query_qp_lag_port", mlx5_mod_query_qp_lag_port), \
	METHOD_KW("_mlx5_dci_stream_id_reset", mlx5_mod_dci_stream_id_reset), \
	METHOD_KW("_mlx5_init_obj", mlx5_mod_init_obj), \
	METHOD_KW("_mlx5_get_cqe_opcode", mlx5_mod_get_cqe_opcode), \
	MLX5_DEVX_MODULE_METHODS \
	MLX5_MKEY_MODULE_METHODS
/* clang-format on */

#endif /* IBVERBS_MLX5_MLX5_H */
