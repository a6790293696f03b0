/*
 * mem/mem.h - what mem/ shares beyond ibverbs.h, and what wr/ and qp/
 * use of it: the MW object and the MWBindInfo conversions (mw.c).
 */
#ifndef IBVERBS_MEM_MEM_H
#define IBVERBS_MEM_MEM_H

#include "ibverbs.h"

/* ibv_alloc_mw, ibv_dealloc_mw, ibv_bind_mw and ibv_inc_rkey are static
 * inline in <infiniband/verbs.h> (they jump through the provider's op
 * table, like the data-path verbs): mw.c calls them by name. */
typedef struct {
	Handle h; /* obj: struct ibv_mw *; parent: PD */
	/* The MR of the last bind posted (NULL: none, or an unbind): the
	 * kernel refuses to deregister an MR a window is bound to, so the
	 * window keeps it alive until it is closed or bound again. */
	PyObject *mr;
} MWObject;

#define MWP(self) ((struct ibv_mw *)HANDLE(self)->obj)

/* mw.c, for QPEx.wr_bind_mw and SendWR(bind_info=): an MWBindInfo into *bi (*mr_out: a new
 * reference to its MR), and o an open MW (TypeError/EBADF).  0 or -1. */
int bind_info_from_py(PyObject *o, struct ibv_mw_bind_info *bi,
		      PyObject **mr_out);
int mw_parse(PyObject *o, const char *name);
/* mw.c, for each bind posted (QP.bind_mw, a BIND_MW SendWR,
 * QPEx.wr_bind_mw): mw now holds mr (NULL: nothing) instead of the MR of
 * its previous bind. */
void mw_hold_mr(PyObject *mw, PyObject *mr);
/* mw.c, for SendWR.bind_info: an MWBindInfo of *bi and mr. */
PyObject *bind_info_to_py(const struct ibv_mw_bind_info *bi, PyObject *mr);

/* ------------------------------------------------------------------ */
/* Buffers, DMA handles, device memory, imported objects (issue 32)    */
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

/* o an open Buf of the PD pd (TypeError, EBADF, ValueError otherwise).
 * buf.c.  0 or -1. */
int buf_check(PyObject *o, PDObject *pd);
/* o an open DMAH of pd's Context.  dmah.c.  0 or -1. */
int dmah_check(PyObject *o, PDObject *pd);

/* import.c: the kinds of imported objects, whose close() unimports. */
extern const HandleKind pd_imported_kind, mr_imported_kind, dm_imported_kind;
/* Whether h was imported (its kind is one of the above). */
int handle_is_imported(Handle *h);
/* import.c: PD.import_mr(mr_handle) */
PyObject *mr_import(PDObject *pd, PyObject *args, PyObject *kw);

#endif /* IBVERBS_MEM_MEM_H */
