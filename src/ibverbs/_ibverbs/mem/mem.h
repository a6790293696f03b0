/*
 * mem/mem.h - what mem/ shares beyond ibverbs.h, and what other files
 * use of it: the MR object (wr/sge.c), the type specs (core/module.c),
 * the factories of PD (pd.c) and of Context (device/context.c), the MW
 * object and the MWBindInfo conversions (mw.c; wr/ and qp/).
 */
#ifndef IBVERBS_MEM_MEM_H
#define IBVERBS_MEM_MEM_H

#include "ibverbs.h"

typedef struct {
	Handle h; /* obj: struct ibv_mr *; parent: PD */
	PyObject *owner; /* object whose memory is registered */
	uint64_t addr; /* address (iova for dma-buf MRs) */
	uint64_t length;
	int access;
	int is_dmabuf;
	PyObject *uses[2]; /* the handles it uses (its Buf, its DMAH) or
			    * NULL, released on close (mem/mr.c) */
} MRObject;

extern PyType_Spec PD_spec; /* pd.c */
extern PyType_Spec MR_spec; /* mr.c */
extern PyType_Spec MW_spec; /* mw.c */
extern PyType_Spec DM_spec; /* dm.c */
extern PyType_Spec Buf_spec; /* buf.c */
extern PyType_Spec DMAH_spec; /* dmah.c */
extern PyType_Spec TD_spec, ParentDomain_spec; /* domain.c */

/* The methods of PD that live beside the type they make (pd.c's table
 * names them). */
METHOD_DECL(pd_reg_mr); /* mr.c */
METHOD_DECL(pd_reg_mr_iova); /* mr.c */
METHOD_DECL(pd_reg_dmabuf_mr); /* mr.c */
METHOD_DECL(pd_reg_mr_ex); /* mr.c */
METHOD_DECL(pd_reg_buf_mr); /* mr.c */
METHOD_DECL_NOARGS(pd_alloc_null_mr); /* mr.c */
METHOD_DECL(pd_reg_dm_mr); /* dm.c */
METHOD_DECL(pd_reg_implicit_odp_mr); /* odp.c */
METHOD_DECL(pd_advise_mr); /* odp.c */
METHOD_DECL(pd_alloc_mw); /* mw.c */
METHOD_DECL(pd_alloc_buf); /* buf.c */
METHOD_DECL(pd_import_mr); /* import.c */

/* The factories of Context in mem/ (device/context.c's table names
 * them). */
METHOD_DECL(context_alloc_dm); /* dm.c */
METHOD_DECL(context_alloc_dmah); /* dmah.c */
METHOD_DECL(context_import_pd); /* import.c */
METHOD_DECL(context_import_dm); /* import.c */
PyObject *td_create(PyObject *ctx, PyObject *unused); /* domain.c */
extern const char td_create__doc__[];
PyObject *parent_domain_create(PyObject *ctx, PyObject *args, PyObject *kw);
extern const char parent_domain_create__doc__[];

/* mw.c: QP.bind_mw(mw, mw_bind) -> the new rkey (type 1 windows), for
 * qp/qp.c's table; ibverbs.inc_rkey(rkey), for core/module.c's. */
PyObject *qp_bind_mw(PyObject *self, PyObject *args, PyObject *kw);
extern const char qp_bind_mw__doc__[];
PyObject *mw_mod_inc_rkey(PyObject *mod, PyObject *arg);
extern const char mw_mod_inc_rkey__doc__[];

/* ibv_alloc_mw, ibv_dealloc_mw, ibv_bind_mw and ibv_inc_rkey are static
 * inline in <infiniband/verbs.h> (they jump through the provider's op
 * table, like the data-path verbs): mw.c calls them by name. */
typedef struct {
	Handle h; /* obj: struct ibv_mw *; parent: PD */
	/* The MR of the last bind posted (NULL: none, an unbind, or an
	 * invalidation posted): the kernel refuses to deregister an MR a
	 * window is bound to, so the window keeps it alive meanwhile.
	 * Changed only by mw.c, which keeps the windows that hold or park
	 * one on a list, for LOCAL_INV to find by rkey. */
	PyObject *mr;
	uint32_t bound_rkey; /* the rkey of that bind */
	/* A list of the MRs of its earlier binds (and of an invalidated
	 * one) until a sweep finds them unbound (mw.c). */
	PyObject *parked;
	void *held_prev, *held_next; /* that list (mw.c) */
} MWObject;

#define MWP(self) ((struct ibv_mw *)HANDLE(self)->obj)

/* mw.c, for QPEx.wr_bind_mw and SendWR(bind_info=): an MWBindInfo into *bi (*mr_out: a new
 * reference to its MR), and o an open MW (TypeError/EBADF).  0 or -1. */
int bind_info_from_py(PyObject *o, struct ibv_mw_bind_info *bi,
		      PyObject **mr_out);
int mw_parse(PyObject *o, const char *name);
/* mw.c, once a bind is posted (QP.bind_mw, a BIND_MW SendWR,
 * QPEx.wr_bind_mw; never before the post succeeded): mw now holds mr
 * (NULL: nothing, an unbind) bound under rkey; the MR of its previous
 * bind stays parked on it until a sweep finds it unbound.  Runs no
 * Python code. */
void mw_hold_mr(PyObject *mw, PyObject *mr, uint32_t rkey);
/* mw.c, once a LOCAL_INV of rkey is posted on a QP of pd: the MR of the
 * type 2 window of pd bound under rkey (if any) is parked.  Runs no
 * Python code. */
void mw_invalidated(const struct ibv_pd *pd, uint32_t rkey);
/* mw.c, for QPEx.wr_local_inv: a new reference to the type 2 window of
 * pd that holds an MR under rkey, or NULL (no error set). */
PyObject *mw_find_bound(const struct ibv_pd *pd, uint32_t rkey);
/* mw.c, for a QPEx batch: a record of mw_hold_mr(mw, mr, rkey) to keep
 * with the batch (a new tuple, or NULL with an error set), and, once
 * ibv_wr_complete succeeded, the records among its kept objects moved. */
PyObject *mw_hold_record(PyObject *mw, PyObject *mr, uint32_t rkey);
void mw_hold_records_apply(PyObject *const *kept, Py_ssize_t n);
/* mw.c, at a safe point (no WR linked, no lock held, no error set: it
 * may run Python code): deregister the parked MRs nothing else
 * references, when the kernel agrees they are unbound (else they stay
 * parked), and let go of the ones the caller closed.  mw_sweep_wanted:
 * whether any MR is parked (cheap). */
int mw_sweep_wanted(void);
void mw_sweep(void);
static inline void mw_sweep_if_wanted(void)
{
	if (mw_sweep_wanted())
		mw_sweep();
}
/* mw.c: how many MW objects exist.  While none does, no posted WR can
 * bind or invalidate a window and nothing is parked, so the data path
 * (wr/post.c) skips the window bookkeeping with one load and a test. */
extern Py_ssize_t mw_alive;
static inline int mw_any(void)
{
	return __atomic_load_n(&mw_alive, __ATOMIC_RELAXED) != 0;
}

/* mw.c, for SendWR.bind_info: an MWBindInfo of *bi and mr. */
PyObject *bind_info_to_py(const struct ibv_mw_bind_info *bi, PyObject *mr);

/* ------------------------------------------------------------------ */
/* Buffers, DMA handles, device memory, imported objects             */
/* ------------------------------------------------------------------ */

/* dm.c's object, shared with import.c (Context.import_dm). */
typedef struct {
	Handle h; /* obj: struct ibv_dm *; parent: Context */
	uint64_t length;
	uint32_t log_align_req;
} DMObject;

/* buf.c: a buffer from ibv_alloc_buf (obj: struct ibv_buf *; parent:
 * PD).  Its MRs (PD.reg_buf_mr, PD.reg_mr_ex(buf=...)) use it. */
typedef struct {
	Handle h;
	uint64_t addr; /* what ibv_alloc_buf returned */
	uint64_t size;
} BufObject;

/* dmah.c: a DMA handle (obj: struct ibv_dmah *; parent: Context).  The
 * MRs registered with it (PD.reg_mr_ex(dmah=...)) use it. */
typedef struct {
	Handle h;
	uint32_t comp_mask;
	uint32_t cpu_id;
	uint8_t ph;
	uint8_t tph_mem_type;
} DMAHObject;

/* mr.c: a new MR of pd for mr, just registered (deregistered if the
 * object cannot be made), holding owner (NULL or None: nothing).  kind:
 * NULL for mr.c's own; a feature's file (odp.c, dm.c) passes its kind,
 * whose release lets go of what it added. */
PyObject *mr_wrap(const HandleKind *kind, PDObject *pd, struct ibv_mr *mr,
		  PyObject *owner, uint64_t addr, uint64_t length, int access);

/* import.c: the kinds of imported objects, whose close() unimports. */
extern const HandleKind pd_imported_kind, mr_imported_kind, dm_imported_kind;
/* Whether h was imported (its kind is one of the above). */
int handle_is_imported(Handle *h);

#endif /* IBVERBS_MEM_MEM_H */
