/*
 * cq/cq.h - what the CQ files share beyond ibverbs.h: the objects, the
 * poll storage (cq.c), the WCEx record that cq_ex.c builds and wc_ex.c
 * reads; and what other files use of them: the type specs (core/module.c),
 * the factories of Context (device/context.c), the WC conversions
 * (qp/ah.c).
 */
#ifndef IBVERBS_CQ_CQ_H
#define IBVERBS_CQ_CQ_H

#include "ibverbs.h"

typedef struct {
	Handle h; /* obj: struct ibv_comp_channel *; parent: Context */
} CompChannelObject;

typedef struct {
	Handle h; /* obj: struct ibv_cq *; parent: Context */
	PyObject *channel; /* CompChannelObject or NULL (uses it) */
	unsigned int events_unacked; /* CQ events got, not yet acked */
	struct ibv_wc *wcs; /* preallocated poll storage */
	int wcs_len;
} CQObject;

extern PyType_Spec CompChannel_spec; /* channel.c */
extern PyType_Spec CQ_spec; /* cq.c */
extern PyType_Spec CQEx_spec; /* cq_ex.c; base: CQ */
extern PyType_Spec WC_spec; /* wc.c */
extern PyType_Spec WCEx_spec; /* wc_ex.c; base: WC */

/* The factories of Context, each beside its type. */
METHOD_DECL_NOARGS(context_create_comp_channel); /* channel.c */
METHOD_DECL(context_create_cq); /* cq.c */
METHOD_DECL(context_create_cq_ex); /* cq_ex.c */

/* wc.c: a new WC object holding a copy of *wc. */
PyObject *wc_new(const struct ibv_wc *wc);
/* wc.c: *out = the struct ibv_wc a WC (or WCEx) holds, field for field;
 * TypeError naming "what" for anything else.  0 or -1. */
int wc_to_c(PyObject *o, const char *what, struct ibv_wc *out);

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
