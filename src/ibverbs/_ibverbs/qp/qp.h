/*
 * qp/qp.h - what the files of qp/ (QP, QPEx, SRQ, AH, Flow, FlowAction)
 * share beyond ibverbs.h, and what other files use of them: the type
 * specs (core/module.c), the factories of PD (mem/pd.c) and of Context
 * (device/context.c), creating a QP with another call (cm/), the
 * QP's own calls and its batch check (wr/post.c), the names of the QP
 * states.  QPObject itself is in ibverbs.h: cm/cm.h holds one.
 */
#ifndef IBVERBS_QP_QP_H
#define IBVERBS_QP_QP_H

#include "ibverbs.h"

typedef struct {
	Handle h; /* obj: struct ibv_srq *; parent: PD */
	/* Context.create_srq_ex (create_srq_ex.c): the XRCD and CQ of an XRC
	 * or tag-matching SRQ (used), or NULL; srq_type, an ibv_srq_type. */
	PyObject *xrcd;
	PyObject *cq;
	int srq_type;
} SRQObject;

#define SRQP(self) ((struct ibv_srq *)HANDLE(self)->obj)

typedef struct {
	Handle h; /* obj: struct ibv_ah *; parent: PD */
} AHObject;

extern PyType_Spec QP_spec; /* qp.c */
extern PyType_Spec QPEx_spec; /* qp_ex.c; base: QP */
extern PyType_Spec SRQ_spec; /* srq.c */
extern PyType_Spec AH_spec; /* ah.c */
extern PyType_Spec Flow_spec; /* flow.c */
extern PyType_Spec FlowAction_spec; /* flow_action.c */

/* The methods of PD that live beside the type they make (mem/pd.c's
 * table names them). */
METHOD_DECL(pd_create_qp); /* qp.c */
METHOD_DECL(pd_create_qp_ex); /* qp_ex.c */
METHOD_DECL(pd_create_srq); /* srq.c */
METHOD_DECL(pd_create_ah); /* ah.c */
METHOD_DECL(pd_create_ah_from_wc); /* ah.c */

/* The factories of Context in qp/ (device/context.c's table names
 * them). */
METHOD_DECL(context_create_qp_ex); /* qp_ex.c */
METHOD_DECL(context_init_ah_from_wc); /* ah.c */
METHOD_DECL(context_create_srq_ex); /* create_srq_ex.c: any SRQ type */
PyObject *flow_action_esp_create(PyObject *ctx, PyObject *args,
				 PyObject *kw); /* flow_action.c */
extern const char flow_action_esp_create__doc__[];

/* flow.c: QP.create_flow (qp.c's table), and ibverbs._flow_layouts
 * (core/module.c's). */
PyObject *flow_create(PyObject *qp, PyObject *args, PyObject *kw);
extern const char qp_create_flow__doc__[];
PyObject *flow_mod_layouts(PyObject *mod, PyObject *unused);
extern const char flow_mod_layouts__doc__[];

/* qp.c: before ibv_destroy_qp, detach the QP from the groups it is still
 * in (the kernel refuses to destroy a QP in a group: EBUSY). */
void qp_leave_groups(Handle *h);

/* qp.c: ibv_modify_qp raising a VerbsError that names the transition
 * ("to_rtr: RC QP 17 INIT -> RTR"), and ibv_query_qp returning its code;
 * both GIL-free, the QP busy.  0 / -1 resp. an errno. */
int qp_modify(PyObject *self, const char *what, struct ibv_qp_attr *attr,
	      int mask);
int qp_query_raw(PyObject *self, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init);

/* VerbsError(EBUSY) naming what, while a QPEx's wr_start() batch is open
 * (in_batch: the provider holds the send queue's lock until wr_complete);
 * post_send (wr/post.c) and qp_modify (qp.c) check it.  0 or -1. */
static inline int qp_check_idle(PyObject *self, const char *what)
{
	if (!QPO(self)->in_batch)
		return 0;
	verbs_error_fmt(EBUSY, NULL,
			"%s: a wr_start() batch is open on this QP; "
			"wr_complete() or wr_abort() first",
			what);
	return -1;
}

/* init_attr.<name>: None (*out NULL), or an open handle of type t (tname
 * in messages) whose parent is parent (pname) (*out a new reference).
 * 0 / -1.  For QP and QPEx creation. */
int init_attr_handle(PyObject *ia, const char *name, PyTypeObject *t,
		     const char *tname, Handle *parent, const char *pname,
		     PyObject **out);
/* qp.c: PD.create_qp's body, for it, CMID.create_qp (cm/cm.c) and
 * QPEx (qp_ex.c): a QP of type (ST.QP_type, or a subclass) made from
 * init_attr by create (it returns NULL with errno, or with a Python
 * exception set) with arg, of the given kind, naming verb in errors.
 * flags: QP_CREATE_NO_CQ lets send_cq and recv_cq be None (XRC receive
 * and RSS QPs).  qp_release is qp_kind's release. */
typedef struct ibv_qp *(*qp_create_fn)(struct ibv_pd *pd,
				       struct ibv_qp_init_attr *init,
				       void *arg);
#define QP_CREATE_NO_CQ 1
PyObject *qp_create(PDObject *pd, PyObject *init_attr, const HandleKind *kind,
		    const char *verb, qp_create_fn create, void *arg,
		    PyTypeObject *type, int flags);
void qp_release(Handle *h);

/* qp_ex.c: PD.create_qp_ex's body, for it and for efa/ (a QPEx subclass
 * made by a provider library's call): init_attr (a QPInitAttrEx) read
 * into a struct ibv_qp_init_attr_ex, then make(ctx, ex, arg) (NULL: the
 * provider's create_qp_ex op), which returns NULL with errno, or with a
 * Python exception set; verb names it in errors; a QP of type (QPEx or
 * a subclass). */
typedef struct ibv_qp *(*qpex_make_fn)(struct ibv_context *ctx,
				       struct ibv_qp_init_attr_ex *ex,
				       void *arg);
PyObject *qpex_create(PDObject *pd, PyObject *init_attr, PyTypeObject *type,
		      const char *verb, qpex_make_fn make, void *arg);
/* qp_ex.c: the struct ibv_qp_ex of the QPEx self while a builder's WR is
 * open in a wr_start() batch (what a setter of that WR needs); NULL with
 * VerbsError (EBADF, EINVAL) set otherwise. */
struct ibv_qp_ex *qpex_current_wr(PyObject *self, const char *verb);
/* qp_ex.c: for a provider's own destination setter (mlx5/'s DC setters):
 * after qpex_current_wr, mark the current WR of the DRIVER-type QPEx
 * self addressed and hold ah (an AH) until the batch ends.  0, or -1
 * with VerbsError EINVAL (not a DRIVER QP, destination set already). */
int qpex_driver_addr(PyObject *self, PyObject *ah, const char *verb);

/* rate_limit_ece.c: the hardware-only QP verbs (qp.c's method table names
 * them). */
PyObject *qp_modify_rate_limit(PyObject *self, PyObject *args, PyObject *kw);
extern const char qp_modify_rate_limit__doc__[];
PyObject *qp_query_ece(PyObject *self, PyObject *unused);
extern const char qp_query_ece__doc__[];
PyObject *qp_set_ece(PyObject *self, PyObject *arg);
extern const char qp_set_ece__doc__[];

/* "RESET", "INIT", ... for an enum ibv_qp_state, "?" if none. */
static const char *const qp_state_names[] = {
	"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN"
};

static inline const char *qp_state_name(unsigned int s)
{
	return s < sizeof(qp_state_names) / sizeof(qp_state_names[0]) ?
		       qp_state_names[s] :
		       "?";
}

#endif /* IBVERBS_QP_QP_H */
