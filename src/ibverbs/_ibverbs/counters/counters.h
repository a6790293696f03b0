/*
 * counters/counters.h - the type specs of counters/ (core/module.c) and
 * the methods other tables name: Context.create_counters (counters.c);
 * Context.create_comp_cntr, Context.query_comp_cntr_caps and
 * QP.attach_comp_cntr (comp_cntr.c).  Each docstring is the exported
 * name__doc__ beside its function.
 */
#ifndef IBVERBS_COUNTERS_COUNTERS_H
#define IBVERBS_COUNTERS_COUNTERS_H

#include "ibverbs.h"

extern PyType_Spec Counters_spec; /* counters.c */
extern PyType_Spec CompCntr_spec; /* comp_cntr.c */

/* device/context.c's table */
PyObject *counters_create(PyObject *ctx, PyObject *unused);
extern const char counters_create__doc__[];
PyObject *comp_cntr_create(PyObject *ctx, PyObject *args, PyObject *kw);
extern const char comp_cntr_create__doc__[];
PyObject *comp_cntr_query_caps(PyObject *ctx, PyObject *unused);
extern const char comp_cntr_query_caps__doc__[];
/* qp/qp.c's table */
PyObject *qp_attach_comp_cntr(PyObject *qp, PyObject *args, PyObject *kw);
extern const char qp_attach_comp_cntr__doc__[];

/* comp_cntr.c: a CompCntr over cc, which another library's call made
 * (efa/: efadv_create_comp_cntr), as a child of the Context ctx; type is
 * its CompCntrType.  NULL when allocating fails (cc is then destroyed). */
PyObject *comp_cntr_adopt(PyObject *ctx, struct ibv_comp_cntr *cc, int type);

#endif /* IBVERBS_COUNTERS_COUNTERS_H */
