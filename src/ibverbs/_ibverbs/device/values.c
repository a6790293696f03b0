/*
 * values.c - the device's running values: Context.query_rt_values_ex()
 * (the free-running clock that WCEx.completion_ts counts in) and
 * Context.query_port_speed().
 *
 * ibv_query_rt_values_ex is static inline over a verbs_context op
 * (EOPNOTSUPP without one): called by name.  ibv_query_port_speed is
 * exported (rdma-core 62).  Soft-RoCE has neither op.
 */
#include "ibverbs.h"
#include <string.h>

#define CTX(self) ((struct ibv_context *)HANDLE(self)->obj)

/* Context.query_rt_values_ex(comp_mask=ValuesMask.RAW_CLOCK) -> ValuesEx */
PyObject *device_query_rt_values(ContextObject *ctx, PyObject *args,
				 PyObject *kw)
{
	static char *kwlist[] = { "comp_mask", NULL };
	PyObject *mask_o = NULL, *mod, *cls, *d, *res;
	struct ibv_values_ex v;
	uint32_t mask = IBV_VALUES_MASK_RAW_CLOCK;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:query_rt_values_ex",
					 kwlist, &mask_o))
		return NULL;
	if (mask_o != NULL && arg_u32(mask_o, "comp_mask", &mask) < 0)
		return NULL;
	HANDLE_CHECK(ctx);
	memset(&v, 0, sizeof(v));
	v.comp_mask = mask;
	rc = ibv_query_rt_values_ex(CTX(ctx), &v);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_query_rt_values_ex",
				       "comp_mask=0x%x", (unsigned int)mask);
	mod = module_cached(&ST.mod_objects, "ibverbs._objects");
	if (mod == NULL)
		return NULL;
	d = Py_BuildValue("{sNsLsl}", "comp_mask",
			  enum_from_int("ValuesMask", (long)v.comp_mask),
			  "raw_clock_sec", (long long)v.raw_clock.tv_sec,
			  "raw_clock_nsec", (long)v.raw_clock.tv_nsec);
	if (d == NULL)
		return NULL;
	cls = PyObject_GetAttrString(mod, "ValuesEx");
	if (cls == NULL) {
		Py_DECREF(d);
		return NULL;
	}
	res = make_record(cls, d);
	Py_DECREF(cls);
	return res;
}

/* Context.query_port_speed(port_num) -> int, in 100 Mb/s */
PyObject *device_query_port_speed(ContextObject *ctx, PyObject *args,
				  PyObject *kw)
{
	static char *kwlist[] = { "port_num", NULL };
	PyObject *port_o;
	uint64_t speed = 0;
	uint32_t port;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:query_port_speed", kwlist,
					 &port_o))
		return NULL;
	if (arg_u32(port_o, "port_num", &port) < 0)
		return NULL;
	IBV_REQUIRE_OPTIONAL(query_port_speed, ibv_query_port_speed,
			     "rdma-core 62");
	HANDLE_CHECK(ctx);
	rc = IBV.query_port_speed(CTX(ctx), port, &speed);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_query_port_speed",
				       "port_num=%u", (unsigned int)port);
	return PyLong_FromUnsignedLongLong(speed);
}
