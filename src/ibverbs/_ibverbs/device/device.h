/*
 * device.h - the type specs of device/ (core/module.c), and what
 * context.c takes from the other files of device/: the async events
 * (event.c), query_device_ex (device_ex.c), the clock and port speed
 * (clock_and_speed.c), the GID table and the P_Key and device index
 * lookups (gid.c).
 */
#ifndef IBVERBS_DEVICE_H
#define IBVERBS_DEVICE_H

#include "ibverbs.h"

extern PyType_Spec Context_spec; /* context.c */
extern PyType_Spec AsyncEvent_spec; /* event.c */

/* event.c: Context.get_async_event, and the ack of an event on close. */
METHOD_DECL_NOARGS(context_get_async_event);
PyObject *async_event_ack_for(ContextObject *ctx, PyObject *ev);
/* device_ex.c */
METHOD_DECL_NOARGS(context_query_device_ex);
/* clock_and_speed.c */
METHOD_DECL(context_query_rt_values_ex);
METHOD_DECL(context_query_port_speed);

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
