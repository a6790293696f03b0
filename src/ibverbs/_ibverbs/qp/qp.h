/*
 * qp/qp.h - what the QP files share beyond ibverbs.h, and what
 * cm/ and wr/post.c use of them: creating a QP with another call, the
 * names of the QP states.
 */
#ifndef IBVERBS_QP_QP_H
#define IBVERBS_QP_QP_H

#include "ibverbs.h"

/* qp.c, for cm.c: PD.create_qp's body with another creating call (it
 * returns NULL with errno, or with a Python exception set), the QP's
 * kind and the verb named in errors; qp_release is qp_kind's release. */
typedef struct ibv_qp *(*qp_create_fn)(struct ibv_pd *pd,
				       struct ibv_qp_init_attr *init,
				       void *arg);
PyObject *qp_create_with(PDObject *pd, PyObject *init_attr,
			 const HandleKind *kind, const char *verb,
			 qp_create_fn create, void *arg);
void qp_release(Handle *h);

/* qp.c: qp_create_with() for a given type (QPEx: a subclass of QP). */
PyObject *qp_create_typed(PDObject *pd, PyObject *init_attr,
			  const HandleKind *kind, const char *verb,
			  qp_create_fn create, void *arg, PyTypeObject *type);

/* qp_create_typed() with flags: QP_CREATE_NO_CQ lets send_cq and
 * recv_cq be None (XRC receive and RSS QPs, qp_ex.c). */
#define QP_CREATE_NO_CQ 1
PyObject *qp_create_flags(PDObject *pd, PyObject *init_attr,
			  const HandleKind *kind, const char *verb,
			  qp_create_fn create, void *arg, PyTypeObject *type,
			  int flags);

/* create_srq_ex.c: Context.create_srq_ex, an SRQ of any type (basic, XRC,
 * tag matching); device/context.c's method table names it. */
PyObject *context_create_srq_ex(PyObject *self, PyObject *args, PyObject *kw);
extern const char context_create_srq_ex__doc__[];

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
