/*
 * wq/wq.h - what device/context.c takes from wq/: the factories of
 * Context for work queues (wq.c) and RSS indirection tables
 * (rwq_ind_table.c), with their docstrings.
 */
#ifndef IBVERBS_WQ_WQ_H
#define IBVERBS_WQ_WQ_H

#include "ibverbs.h"

PyObject *context_create_wq(PyObject *self, PyObject *args, PyObject *kw);
extern const char context_create_wq__doc__[];
PyObject *context_create_rwq_ind_table(PyObject *self, PyObject *args,
				       PyObject *kw);
extern const char context_create_rwq_ind_table__doc__[];

#endif /* IBVERBS_WQ_WQ_H */
