/*
 * efa/efa.h - what the files of efa/ (the AWS EFA direct verbs of
 * libefa's efadv.h) share: the dlsym table of libefa.so.1 (efa_loader.c),
 * the type specs of efa.QP (efa_qp.c) and efa.CQ (efa_cq.c) for
 * core/module.c, and the module functions its table names.
 *
 * The structs are efa_abi.h's mirrors of rdma-core 65's; below, each is
 * checked against the header's own struct where the header has it (the
 * release of efadv.h is told by the verbs.h probes of the same release,
 * since both come from one rdma-core).
 */
#ifndef IBVERBS_EFA_EFA_H
#define IBVERBS_EFA_EFA_H

#include "ibverbs.h"
#include "efa/efa_abi.h"
#include <stddef.h>

/* ------------------------------------------------------------------ */
/* The layouts, against the header where it has them                  */
/* ------------------------------------------------------------------ */

#if defined(__has_include)
#if __has_include(<infiniband/efadv.h>)
#include <infiniband/efadv.h>
#define EFA_SAME(m, h, f)                                                \
	_Static_assert(offsetof(struct m, f) == offsetof(struct h, f) && \
			       sizeof(((struct m *)0)->f) ==             \
				       sizeof(((struct h *)0)->f),       \
		       #h "." #f)
#define EFA_SIZE(m, h) \
	_Static_assert(sizeof(struct m) == sizeof(struct h), #h " size")
/* rdma-core 26 on */
EFA_SIZE(efa_m_device_attr, efadv_device_attr);
EFA_SAME(efa_m_device_attr, efadv_device_attr, max_sq_wr);
EFA_SAME(efa_m_device_attr, efadv_device_attr, max_rq_wr);
EFA_SAME(efa_m_device_attr, efadv_device_attr, max_sq_sge);
EFA_SAME(efa_m_device_attr, efadv_device_attr, max_rq_sge);
EFA_SAME(efa_m_device_attr, efadv_device_attr, inline_buf_size);
EFA_SAME(efa_m_device_attr, efadv_device_attr, device_caps);
EFA_SAME(efa_m_device_attr, efadv_device_attr, max_rdma_size);
EFA_SIZE(efa_m_ah_attr, efadv_ah_attr);
EFA_SAME(efa_m_ah_attr, efadv_ah_attr, ahn);
EFA_SAME(efa_m_qp_init_attr, efadv_qp_init_attr, comp_mask);
EFA_SAME(efa_m_qp_init_attr, efadv_qp_init_attr, driver_qp_type);
#ifdef IBVERBS_HAVE_QP_DATA_IN_ORDER_CAPS /* rdma-core 47: has 43's */
EFA_SAME(efa_m_cq_init_attr, efadv_cq_init_attr, wc_flags);
EFA_SAME(efa_m_cq, efadv_cq, wc_read_sgid);
#endif
#ifdef IBVERBS_HAVE_REG_MR_EX /* rdma-core 59: has 50 to 59's */
EFA_SAME(efa_m_device_attr, efadv_device_attr, inline_buf_size_ex);
EFA_SAME(efa_m_qp_init_attr, efadv_qp_init_attr, flags);
EFA_SAME(efa_m_qp_init_attr, efadv_qp_init_attr, sl);
EFA_SIZE(efa_m_cq_init_attr, efadv_cq_init_attr);
EFA_SAME(efa_m_cq_init_attr, efadv_cq_init_attr, flags);
EFA_SAME(efa_m_cq_init_attr, efadv_cq_init_attr, ext_mem_dmabuf);
EFA_SIZE(efa_m_cq, efadv_cq);
EFA_SAME(efa_m_cq, efadv_cq, wc_is_unsolicited);
EFA_SIZE(efa_m_cq_attr, efadv_cq_attr);
EFA_SAME(efa_m_cq_attr, efadv_cq_attr, buffer);
EFA_SAME(efa_m_cq_attr, efadv_cq_attr, entry_size);
EFA_SAME(efa_m_cq_attr, efadv_cq_attr, num_entries);
EFA_SAME(efa_m_cq_attr, efadv_cq_attr, doorbell);
EFA_SIZE(efa_m_wq_attr, efadv_wq_attr);
EFA_SAME(efa_m_wq_attr, efadv_wq_attr, buffer);
EFA_SAME(efa_m_wq_attr, efadv_wq_attr, entry_size);
EFA_SAME(efa_m_wq_attr, efadv_wq_attr, num_entries);
EFA_SAME(efa_m_wq_attr, efadv_wq_attr, doorbell);
EFA_SAME(efa_m_wq_attr, efadv_wq_attr, max_batch);
EFA_SIZE(efa_m_mr_attr, efadv_mr_attr);
EFA_SAME(efa_m_mr_attr, efadv_mr_attr, ic_id_validity);
EFA_SAME(efa_m_mr_attr, efadv_mr_attr, recv_ic_id);
EFA_SAME(efa_m_mr_attr, efadv_mr_attr, rdma_read_ic_id);
EFA_SAME(efa_m_mr_attr, efadv_mr_attr, rdma_recv_ic_id);
#endif
#ifdef IBVERBS_HAVE_ALLOC_BUF /* rdma-core 64: has 63 and 64's */
EFA_SAME(efa_m_wq_attr, efadv_wq_attr, caps);
EFA_SIZE(efa_m_qp_init_attr, efadv_qp_init_attr);
EFA_SAME(efa_m_qp_init_attr, efadv_qp_init_attr, wr_flags);
EFA_SIZE(efa_m_sq_depth_attr, efadv_sq_depth_attr);
EFA_SAME(efa_m_sq_depth_attr, efadv_sq_depth_attr, flags);
EFA_SAME(efa_m_sq_depth_attr, efadv_sq_depth_attr, max_send_sge);
EFA_SAME(efa_m_sq_depth_attr, efadv_sq_depth_attr, max_rdma_sge);
EFA_SAME(efa_m_sq_depth_attr, efadv_sq_depth_attr, max_inline_data);
EFA_SIZE(efa_m_rq_depth_attr, efadv_rq_depth_attr);
EFA_SAME(efa_m_rq_depth_attr, efadv_rq_depth_attr, max_recv_sge);
EFA_SIZE(efa_m_qp, efadv_qp);
EFA_SAME(efa_m_qp, efadv_qp, wr_set_processing_hints);
#endif
#ifdef IBVERBS_HAVE_COMP_CNTR /* rdma-core 65 */
EFA_SIZE(efa_m_memory_location, efadv_memory_location);
EFA_SAME(efa_m_memory_location, efadv_memory_location, dmabuf);
EFA_SAME(efa_m_memory_location, efadv_memory_location, type);
EFA_SIZE(efa_m_comp_cntr_init_attr, efadv_comp_cntr_init_attr);
EFA_SAME(efa_m_comp_cntr_init_attr, efadv_comp_cntr_init_attr, flags);
EFA_SAME(efa_m_comp_cntr_init_attr, efadv_comp_cntr_init_attr,
	 comp_cntr_ext_mem);
EFA_SAME(efa_m_comp_cntr_init_attr, efadv_comp_cntr_init_attr,
	 err_cntr_ext_mem);
#endif
#undef EFA_SAME
#undef EFA_SIZE
#endif
#endif

/* ------------------------------------------------------------------ */
/* The dlsym table of libefa.so.1 (efa_loader.c)                       */
/* ------------------------------------------------------------------ */

#define EFA_DECL(name, node, since, ret, params) ret(*name) params;
struct efa_api {
	void *lib; /* set last: the table is complete */
	char path[512]; /* the file loaded */
	EFA_SYMBOLS(EFA_DECL)
};
#undef EFA_DECL

extern struct efa_api EFA;

/* Load libefa once.  0, or -1 with ImportError naming libefa.so.1 and
 * the package that has it.  Every symbol is optional. */
int efa_load(void);

/* Load libefa and check it exports efadv_<fn>: 0, or -1 with ImportError
 * (no library) or VerbsError(EOPNOTSUPP) naming efadv_<fn>, the file and
 * the rdma-core release that added it (since): core/loader.c's lib_need. */
#define EFA_NEED(fn, since)                                              \
	((efa_load() < 0 ||                                              \
	  lib_need((void *)EFA.fn, EFA.path, "efadv_" #fn, since) < 0) ? \
		 -1 :                                                    \
		 0)

/* The Raises lines the docstrings share: EFA_RAISES_RING for the ring
 * queries (efa.CQ.query, efa.QP.query_wqs). */
#define EFA_RAISES_RING                                               \
	"Raises:\n"                                                   \
	"    ImportError: libefa.so.1 cannot be loaded.\n"            \
	"    VerbsError: EBADF once closed; EOPNOTSUPP when libefa\n" \
	"        predates it or the device is not EFA; else the\n"    \
	"        function failed (``errno``)."
#define EFA_RAISES_LIB                                                     \
	"    ImportError: libefa.so.1 cannot be loaded (Debian/Ubuntu:\n"  \
	"        ibverbs-providers; RHEL/Fedora: libibverbs).\n"           \
	"    VerbsError: EBADF once an argument is closed; EOPNOTSUPP\n"   \
	"        when the loaded libefa predates the function, or for a\n" \
	"        device that is not an EFA device; else the function\n"    \
	"        failed (``errno``)."

/* memoryview's flag: in the limited API's headers from 3.11 only. */
#ifndef PyBUF_READ
#define PyBUF_READ 0x100
#endif

/* ------------------------------------------------------------------ */
/* The types and the module functions                                  */
/* ------------------------------------------------------------------ */

extern PyType_Spec EfaQP_spec; /* efa_qp.c; base: QPEx */
extern PyType_Spec EfaCQ_spec; /* efa_cq.c; base: CQEx */

/* efa_loader.c */
METHOD_DECL_NOARGS(efa_mod_libefa_status);
/* efa.c */
METHOD_DECL(efa_mod_query_device);
METHOD_DECL(efa_mod_get_max_sq_depth);
METHOD_DECL(efa_mod_get_max_rq_depth);
METHOD_DECL(efa_mod_query_ah);
METHOD_DECL(efa_mod_query_mr);
METHOD_DECL(efa_mod_create_comp_cntr);
METHOD_DECL(efa_mod_create_driver_qp);
/* efa_qp.c */
METHOD_DECL(efa_mod_create_qp);
/* efa_cq.c */
METHOD_DECL(efa_mod_create_cq);

#endif /* IBVERBS_EFA_EFA_H */
