/*
 * xrc/xrc.h - what device/context.c takes from xrc/: the factories of
 * Context for XRC domains and opened XRC QPs (xrcd.c), with their
 * docstrings.
 */
#ifndef IBVERBS_XRC_XRC_H
#define IBVERBS_XRC_XRC_H

#include "ibverbs.h"

PyObject *context_open_xrcd(PyObject *self, PyObject *args, PyObject *kw);
extern const char context_open_xrcd__doc__[];
PyObject *context_open_qp(PyObject *self, PyObject *args, PyObject *kw);
extern const char context_open_qp__doc__[];

#endif /* IBVERBS_XRC_XRC_H */
