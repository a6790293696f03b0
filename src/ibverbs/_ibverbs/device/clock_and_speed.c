/*
 * clock_and_speed.c - the device's running values: its clock,
 * Context.query_rt_values_ex() (the free-running clock that
 * WCEx.completion_ts counts in), and a port's speed,
 * Context.query_port_speed().
 *
 * ibv_query_rt_values_ex is static inline over a verbs_context op
 * (EOPNOTSUPP without one): called by name.  ibv_query_port_speed is
 * exported (rdma-core 62).  Soft-RoCE has neither op.
 */
#include "ibverbs.h"
#include "device/device.h"
#include <string.h>

#define CTX(self) ((struct ibv_context *)HANDLE(self)->obj)

/* Context.query_rt_values_ex(comp_mask=ValuesMask.RAW_CLOCK) -> ValuesEx */
METHOD_DOC(context_query_rt_values_ex,
	   "Read the device's running values: its free-running clock.\n"
	   "\n"
	   "``raw_clock_sec``/``raw_clock_nsec`` are the clock that\n"
	   "``WCEx.completion_ts`` counts in: sample it and the wall\n"
	   "clock together to turn completion timestamps into time (mlx5\n"
	   "gives ticks of ``DeviceAttrEx.hca_core_clock`` kHz in\n"
	   "``raw_clock_nsec``). Soft-RoCE has no such op (EOPNOTSUPP);\n"
	   "never run on hardware here, checked against the recording\n"
	   "double.\n"
	   "\n"
	   "Wraps ``ibv_query_rt_values_ex`` (man page\n"
	   "ibv_query_rt_values_ex(3)).\n"
	   "\n"
	   "Args:\n"
	   "    comp_mask: the ``ValuesMask`` of the values wanted.\n"
	   "\n"
	   "Returns:\n"
	   "    A ValuesEx (comp_mask: what the provider filled,\n"
	   "    raw_clock_sec, raw_clock_nsec).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: comp_mask is not an int.\n"
	   "    ValueError: comp_mask is out of range.\n" DOC_RAISES_VERB_AS(
		   "Context", ": EOPNOTSUPP without the op"));

#define RT_VALUES_ARGS(X, S)                                           \
	X(S, FLAGS, uint32_t, comp_mask, ValuesMask, .flags = ARG_OPT, \
	  .def = IBV_VALUES_MASK_RAW_CLOCK)
ARGS_DECLARE(rt_values, RT_VALUES_ARGS);
METHOD_ARGS(context_query_rt_values_ex, "Context.query_rt_values_ex",
	    rt_values_params);

PyObject *context_query_rt_values_ex(PyObject *self, PyObject *args,
				     PyObject *kw)
{
	ContextObject *ctx = (ContextObject *)self;
	PyObject *mod, *cls, *d, *res;
	struct rt_values_args a;
	struct ibv_values_ex v;
	uint32_t mask;
	int rc;

	HANDLE_CHECK(self);
	rc = args_parse(&context_query_rt_values_ex_args, self, args, kw, &a);
	if (rc < 0)
		return NULL;
	mask = a.comp_mask;
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
METHOD_DOC(context_query_port_speed,
	   "Query a port's effective speed, in units of 100 Mb/s.\n"
	   "\n"
	   "Soft-RoCE has no such op (EOPNOTSUPP); never run on hardware\n"
	   "here, checked against the recording double.\n"
	   "\n"
	   "Wraps ``ibv_query_port_speed`` (man page ibv_query_port_speed(3),\n"
	   "rdma-core 62).\n"
	   "\n"
	   "Args:\n"
	   "    port_num: the port, from 1.\n"
	   "\n"
	   "Returns:\n"
	   "    The speed (an int; 4000 is 400 Gb/s).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: port_num is not an int.\n"
	   "    ValueError: port_num is outside 0..2**32-1.\n"
	   "    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	   "        when libibverbs lacks the verb (rdma-core < 62) or the\n"
	   "        provider cannot; else the verb failed (``errno``).");

#define PORT_SPEED_ARGS(X, S) X(S, UINT, uint32_t, port_num)
ARGS_METHOD(extern, context_query_port_speed, "Context.query_port_speed",
	    PORT_SPEED_ARGS, self, a)
{
	ContextObject *ctx = (ContextObject *)self;
	uint64_t speed = 0;
	int rc;

	IBV_REQUIRE_OPTIONAL(query_port_speed, ibv_query_port_speed,
			     "rdma-core 62");
	rc = IBV.query_port_speed(CTX(ctx), a->port_num, &speed);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_query_port_speed",
				       "port_num=%u",
				       (unsigned int)a->port_num);
	return PyLong_FromUnsignedLongLong(speed);
}
