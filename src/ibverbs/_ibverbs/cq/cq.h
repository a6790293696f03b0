/*
 * cq/cq.h - what the CQ files share beyond ibverbs.h: the poll storage
 * (cq.c), the WCEx record that cq_ex.c builds and wc_ex.c reads.
 */
#ifndef IBVERBS_CQ_CQ_H
#define IBVERBS_CQ_CQ_H

#include "ibverbs.h"

/* CQ.poll()/CQEx.poll(): a list of build(elem) for the first n elements
 * (size bytes each) of a CQ's poll storage *store, which is taken from
 * the CQ for the loop and given back after it.  NULL on an error. */
PyObject *list_from_store(void **store, int *store_len, size_t size, int n,
			  PyObject *(*build)(const void *elem));

/* CQ.resize(cqe)'s arguments, declared for CQEx.resize too, and the
 * resize itself (CQEx.resize refuses in a session first). */
struct cq_resize_args {
	int cqe;
};
extern const ArgSpec cq_resize_params[];
PyObject *cq_resize_to(PyObject *self, int cqe);

/* Fields a WCEx has beyond struct ibv_wc ("have" bits). */
enum {
	HAVE_TS = 1,
	HAVE_WALLCLOCK = 2,
	HAVE_CVLAN = 4,
	HAVE_FLOW_TAG = 8,
};

struct wc_ex {
	struct ibv_wc wc;
	uint64_t completion_ts;
	uint64_t completion_wallclock_ns;
	uint32_t flow_tag;
	uint16_t cvlan;
	uint16_t have;
};

/* Layout-compatible with wc.c's WCObject: the same head, then the ext. */
typedef struct {
	PyObject_HEAD
	struct wc_ex x;
} WCExObject;

#endif /* IBVERBS_CQ_CQ_H */
