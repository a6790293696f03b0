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
#include <stddef.h>

extern PyType_Spec Context_spec; /* context.c */
extern PyType_Spec AsyncEvent_spec; /* event.c */

/* event.c: Context.get_async_event, and the ack of an event on close. */
METHOD_DECL_NOARGS(context_get_async_event);
PyObject *async_event_ack_for(ContextObject *ctx, PyObject *ev);
/* device_ex.c: query_device_ex, and the tables of the attribute structs
 * that the queries of context.c and device_ex.c turn into dicts. */
METHOD_DECL_NOARGS(context_query_device_ex);

/* One field of an attribute struct: its dict key, where it lies, and
 * how it reads: an integer of `size` bytes (ATTR_SIGNED sign-extends),
 * a big-endian GUID reported in host order, or a NUL-terminated text. */
enum attr_kind { ATTR_UNSIGNED, ATTR_SIGNED, ATTR_BE64, ATTR_TEXT };
typedef struct {
	const char *name;
	unsigned short off;
	unsigned char size;
	unsigned char kind; /* enum attr_kind */
} AttrField;
/* clang-format off */
#define ATTR_MEMBER(type, member) (((type *)0)->member)
/* An integer member of type (its kind from its signedness), keyed name. */
#define ATTR_INT_AS(type, member, name)                                   \
	{ #name, offsetof(type, member), sizeof(ATTR_MEMBER(type, member)), \
	  (__typeof__(ATTR_MEMBER(type, member)))-1 >                       \
			  (__typeof__(ATTR_MEMBER(type, member)))0 ?        \
		  ATTR_UNSIGNED : ATTR_SIGNED }
#define ATTR_INT(type, member) ATTR_INT_AS(type, member, member)
#define ATTR_GUID(type, member) { #member, offsetof(type, member), 8, ATTR_BE64 }
#define ATTR_STR(type, member) { #member, offsetof(type, member), 0, ATTR_TEXT }
/* clang-format on */
#define ATTR_COUNT(table) (sizeof(table) / sizeof((table)[0]))
/* d[name] = each field of the table in the struct at base.  0 / -1. */
int attr_fields_set(PyObject *d, const void *base, const AttrField *f,
		    size_t n);
/* A DeviceAttr of *a (Context.query_device, DeviceAttrEx.orig_attr). */
PyObject *device_attr_to_py(const struct ibv_device_attr *a);
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
