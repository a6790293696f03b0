/*
 * xrc/xrc.h - the XRCD object, its type spec (core/module.c), and what
 * device/context.c takes from xrc/: the factories of Context for XRC
 * domains and opened XRC QPs (xrcd.c), with their docstrings.
 */
#ifndef IBVERBS_XRC_XRC_H
#define IBVERBS_XRC_XRC_H

#include "ibverbs.h"

typedef struct {
	Handle h; /* obj: struct ibv_xrcd *; parent: Context */
	int fd; /* as opened (-1: none) */
	int oflags;
} XRCDObject;

extern PyType_Spec XRCD_spec; /* xrcd.c */

PyObject *context_open_xrcd(PyObject *self, PyObject *args, PyObject *kw);
extern const char context_open_xrcd__doc__[];
PyObject *context_open_qp(PyObject *self, PyObject *args, PyObject *kw);
extern const char context_open_qp__doc__[];

#endif /* IBVERBS_XRC_XRC_H */
