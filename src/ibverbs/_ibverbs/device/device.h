/*
 * device.h - what context.c takes from the other files of device/: the
 * GID table and the P_Key and device index lookups (gid.c).
 */
#ifndef IBVERBS_DEVICE_H
#define IBVERBS_DEVICE_H

#include "ibverbs.h"

PyObject *context_query_gid_table(PyObject *self, PyObject *unused);
extern const char context_query_gid_table__doc__[];
PyObject *context_find_gid(PyObject *self, PyObject *args, PyObject *kw);
extern const char context_find_gid__doc__[];
METHOD_DECL(context_get_pkey_index);
PyObject *context_get_device_index(PyObject *self, PyObject *unused);
extern const char context_get_device_index__doc__[];
PyObject *context_resolve_eth_l2_from_gid(PyObject *self, PyObject *arg);
extern const char context_resolve_eth_l2_from_gid__doc__[];

#endif
