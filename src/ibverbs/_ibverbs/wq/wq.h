/*
 * wq/wq.h - the objects of wq/, their type specs (core/module.c), and
 * what device/context.c takes from wq/: the factories of Context for
 * work queues (wq.c) and RSS indirection tables (rwq_ind_table.c), with
 * their docstrings.
 */
#ifndef IBVERBS_WQ_WQ_H
#define IBVERBS_WQ_WQ_H

#include "ibverbs.h"

typedef struct {
	Handle h; /* obj: struct ibv_wq *; parent: PD */
	PyObject *cq; /* CQObject (used) */
	int wq_type;
	uint32_t max_wr, max_sge; /* as created (the provider's answer) */
} WQObject;

typedef struct {
	Handle h; /* obj: struct ibv_rwq_ind_table *; parent: Context */
	PyObject *wqs; /* tuple of WQObject (each used) */
} RWQIndTableObject;

extern PyType_Spec WQ_spec; /* wq.c */
extern PyType_Spec RWQIndTable_spec; /* rwq_ind_table.c */

PyObject *context_create_wq(PyObject *self, PyObject *args, PyObject *kw);
extern const char context_create_wq__doc__[];
PyObject *context_create_rwq_ind_table(PyObject *self, PyObject *args,
				       PyObject *kw);
extern const char context_create_rwq_ind_table__doc__[];

#endif /* IBVERBS_WQ_WQ_H */
