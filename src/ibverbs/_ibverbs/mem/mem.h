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
} MWObject;

#define MWP(self) ((struct ibv_mw *)HANDLE(self)->obj)

/* mw.c, for QPEx.wr_bind_mw and SendWR(bind_info=): an MWBindInfo into *bi (*mr_out: a new
 * reference to its MR), and o an open MW (TypeError/EBADF).  0 or -1. */
int bind_info_from_py(PyObject *o, struct ibv_mw_bind_info *bi,
		      PyObject **mr_out);
int mw_parse(PyObject *o, const char *name);
/* mw.c, for SendWR.bind_info: an MWBindInfo of *bi and mr. */
PyObject *bind_info_to_py(const struct ibv_mw_bind_info *bi, PyObject *mr);

#endif /* IBVERBS_MEM_MEM_H */
