/*
 * lookups.c - module functions that libibverbs answers without a device:
 * the text of node types and port states, the rate conversions, and the
 * two static inline helpers of verbs.h (ibv_flow_label_to_udp_sport,
 * ibv_is_qpt_supported).
 */
#include "ibverbs.h"

/* The Raises of a function of one int argument, 0..2**31-1. */
#define NONNEG_INT_RAISES(arg)                    \
	"Raises:\n"                               \
	"    TypeError: " arg " is not an int.\n" \
	"    ValueError: " arg " is negative or above 2**31-1."

const char mod_node_type_str__doc__[] = PyDoc_STR(
	"libibverbs' text for a node type (a NodeType value).\n"
	"\n"
	"Wraps ``ibv_node_type_str`` (man page ibv_node_type_str(3)).\n"
	"\n"
	"Args:\n"
	"    node_type: a NodeType value (or int).\n"
	"\n"
	"Returns:\n"
	"    The text, e.g. ``\"InfiniBand channel adapter\"``; ``\"unknown\"`` for a\n"
	"    value libibverbs does not know.\n"
	"\n"
	"Raises:\n"
	"    TypeError: node_type is not an int.\n"
	"    ValueError: node_type is outside -1..2**31-1.");

PyObject *mod_node_type_str(PyObject *mod, PyObject *arg)
{
	long v;

	if (arg_int(arg, "node_type", -1, INT32_MAX, &v) < 0)
		return NULL;
	return PyUnicode_FromString(IBV.node_type_str((enum ibv_node_type)v));
}

const char mod_port_state_str__doc__[] = PyDoc_STR(
	"libibverbs' text for a port state (a PortState value).\n"
	"\n"
	"Wraps ``ibv_port_state_str`` (man page ibv_port_state_str(3)).\n"
	"\n"
	"Args:\n"
	"    port_state: a PortState value (or int).\n"
	"\n"
	"Returns:\n"
	"    The text, e.g. ``\"active\"``.\n"
	"\n" NONNEG_INT_RAISES("port_state"));

PyObject *mod_port_state_str(PyObject *mod, PyObject *arg)
{
	long v;

	if (arg_int(arg, "port_state", 0, INT32_MAX, &v) < 0)
		return NULL;
	return PyUnicode_FromString(IBV.port_state_str((enum ibv_port_state)v));
}

/* The four rate conversions: an int in, an int out. */
static PyObject *rate_conv(PyObject *arg, const char *name, int (*f)(int))
{
	long v;

	if (arg_int(arg, name, 0, INT32_MAX, &v) < 0)
		return NULL;
	return PyLong_FromLong(f((int)v));
}

static int rate_to_mult_i(int v)
{
	return IBV.rate_to_mult((enum ibv_rate)v);
}

static int rate_to_mbps_i(int v)
{
	return IBV.rate_to_mbps((enum ibv_rate)v);
}

static int mult_to_rate_i(int v)
{
	return (int)IBV.mult_to_ibv_rate(v);
}

static int mbps_to_rate_i(int v)
{
	return (int)IBV.mbps_to_ibv_rate(v);
}

const char mod_rate_to_mult__doc__[] = PyDoc_STR(
	"A static rate as a multiple of 2.5 Gbit/s (``IBV_RATE_5_GBPS`` -> 2).\n"
	"\n"
	"Wraps ``ibv_rate_to_mult`` (man page ibv_rate_to_mult(3)).\n"
	"\n"
	"Args:\n"
	"    rate: an ``enum ibv_rate`` value (int).\n"
	"\n"
	"Returns:\n"
	"    The multiple, an int; -1 for a rate it does not know.\n"
	"\n" NONNEG_INT_RAISES("rate"));

PyObject *mod_rate_to_mult(PyObject *mod, PyObject *arg)
{
	return rate_conv(arg, "rate", rate_to_mult_i);
}

const char mod_rate_to_mbps__doc__[] =
	PyDoc_STR("A static rate in Mbit/s (``IBV_RATE_100_GBPS`` -> 103125).\n"
		  "\n"
		  "Wraps ``ibv_rate_to_mbps`` (man page ibv_rate_to_mbps(3)).\n"
		  "\n"
		  "Args:\n"
		  "    rate: an ``enum ibv_rate`` value (int).\n"
		  "\n"
		  "Returns:\n"
		  "    The Mbit/s, an int; -1 for a rate it does not know.\n"
		  "\n"
		  "Raises:\n"
		  "    TypeError: rate is not an int.\n"
		  "    ValueError: rate is negative or above 2**31-1.");

PyObject *mod_rate_to_mbps(PyObject *mod, PyObject *arg)
{
	return rate_conv(arg, "rate", rate_to_mbps_i);
}

const char mod_mult_to_ibv_rate__doc__[] = PyDoc_STR(
	"The static rate for a multiple of 2.5 Gbit/s (2 -> ``IBV_RATE_5_GBPS``).\n"
	"\n"
	"Wraps ``mult_to_ibv_rate`` (man page ibv_rate_to_mult(3)).\n"
	"\n"
	"Args:\n"
	"    mult: the multiple.\n"
	"\n"
	"Returns:\n"
	"    An ``enum ibv_rate`` value, an int; ``IBV_RATE_MAX`` (0) for a multiple with\n"
	"    no rate.\n"
	"\n" NONNEG_INT_RAISES("mult"));

PyObject *mod_mult_to_ibv_rate(PyObject *mod, PyObject *arg)
{
	return rate_conv(arg, "mult", mult_to_rate_i);
}

const char mod_mbps_to_ibv_rate__doc__[] = PyDoc_STR(
	"The static rate for a speed in Mbit/s (103125 -> ``IBV_RATE_100_GBPS``).\n"
	"\n"
	"Wraps ``mbps_to_ibv_rate`` (man page ibv_rate_to_mbps(3)).\n"
	"\n"
	"Args:\n"
	"    mbps: the speed in Mbit/s, exactly as ``rate_to_mbps`` gives\n"
	"        it.\n"
	"\n"
	"Returns:\n"
	"    An ``enum ibv_rate`` value, an int; ``IBV_RATE_MAX`` (0) for a speed with no\n"
	"    rate.\n"
	"\n" NONNEG_INT_RAISES("mbps"));

PyObject *mod_mbps_to_ibv_rate(PyObject *mod, PyObject *arg)
{
	return rate_conv(arg, "mbps", mbps_to_rate_i);
}

const char mod_flow_label_to_udp_sport__doc__[] = PyDoc_STR(
	"The RoCE v2 UDP source port that a GRH flow label maps to (in\n"
	"0xC000..0xFFFF), as the kernel and providers compute it.\n"
	"\n"
	"Wraps ``ibv_flow_label_to_udp_sport`` (static inline in verbs.h,\n"
	"with no man page of its own; the flow label is the GRH's, see\n"
	"ibv_create_ah(3)).\n"
	"\n"
	"Args:\n"
	"    flow_label: the 20-bit flow label.\n"
	"\n"
	"Returns:\n"
	"    The UDP source port, an int.\n"
	"\n"
	"Raises:\n"
	"    TypeError: flow_label is not an int.\n"
	"    ValueError: flow_label is outside 0..0xFFFFF.");

PyObject *mod_flow_label_to_udp_sport(PyObject *mod, PyObject *arg)
{
	long v;

	if (arg_int(arg, "flow_label", 0, 0xFFFFF, &v) < 0)
		return NULL;
	return PyLong_FromLong(ibv_flow_label_to_udp_sport((uint32_t)v));
}

const char mod_is_qpt_supported__doc__[] = PyDoc_STR(
	"Whether a capability mask names a QP type: bit ``qp_type`` of\n"
	"caps (the ``supported_qpts`` masks of the TSO and RSS caps).\n"
	"\n"
	"Wraps ``ibv_is_qpt_supported`` (static inline in verbs.h, with no\n"
	"man page of its own; the masks are in ibv_query_device_ex(3)).\n"
	"\n"
	"Args:\n"
	"    caps: the mask, 32 bits.\n"
	"    qp_type: a QPType value (or int), 0..30.\n"
	"\n"
	"Returns:\n"
	"    True or False.\n"
	"\n"
	"Raises:\n"
	"    TypeError: an argument is not an int.\n"
	"    ValueError: caps or qp_type is out of range.");

#define IS_QPT_SUPPORTED_ARGS(X, S)                      \
	X(S, UINT, uint32_t, caps, .flags = ARG_POSONLY) \
	X(S, ENUM, int, qp_type, QPType, 0, 30, .flags = ARG_POSONLY)
ARGS_FUNCTION(extern, mod_is_qpt_supported, "is_qpt_supported",
	      IS_QPT_SUPPORTED_ARGS, mod, a)
{
	return PyBool_FromLong(
		ibv_is_qpt_supported(a->caps, (enum ibv_qp_type)a->qp_type));
}
