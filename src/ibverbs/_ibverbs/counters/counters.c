/*
 * counters.c - Counters: a counters object (ibv_counters), a child of
 * its Context.
 *
 * ibv_create_counters, ibv_destroy_counters,
 * ibv_attach_counters_point_flow and ibv_read_counters are static inline
 * in verbs.h over verbs_context ops (verbs_get_ctx_op: EOPNOTSUPP when
 * the provider has none), so they are called by name.
 *
 * rdma-core binds counters to a flow in two steps: attach_point_flow()
 * names which counter (packets or bytes) goes at which index, with no
 * flow yet; then the flow is created with a
 * FlowSpecActionCount(counters) spec (ibverbs.flow), whose
 * ibv_flow_spec_counter_action QP.create_flow fills with this object's
 * pointer.  read() returns the values in index order.
 */
#include "ibverbs.h"
#include "counters/counters.h"
#include <string.h>

typedef struct {
	Handle h; /* obj: struct ibv_counters *; parent: Context */
} CountersObject;

#define CNTP(self) ((struct ibv_counters *)HANDLE(self)->obj)

/* More values than any provider keeps in one counters object; bounds
 * read()'s allocation. */
#define COUNTERS_READ_MAX 4096

HANDLE_KIND(counters_kind, "Counters", "ibv_destroy_counters",
	    ibv_destroy_counters, NULL);

const char counters_create__doc__[] = PyDoc_STR(
	"Create a counters object, to count the packets or bytes a flow\n"
	"steering rule matches.\n"
	"\n"
	"Wraps ``ibv_create_counters`` (man page ibv_create_counters(3));\n"
	"never run on hardware here, checked against the recording double\n"
	"(rxe has no counters objects).\n"
	"\n"
	"Returns:\n"
	"    The new Counters (a child of this Context).\n"
	"\n"
	"Raises:\n"
	"    VerbsError: EBADF once the Context is closed; EOPNOTSUPP when\n"
	"        the provider has no counters objects; else the verb failed\n"
	"        (``errno``).");

/* Context.create_counters() */
PyObject *counters_create(PyObject *ctx, PyObject *unused)
{
	struct ibv_counters_init_attr attr;
	struct ibv_counters *c;

	HANDLE_CHECK(ctx);
	memset(&attr, 0, sizeof(attr));
	errno = 0;
	c = ibv_create_counters((struct ibv_context *)HANDLE(ctx)->obj, &attr);
	if (c == NULL)
		return verbs_error(errno_or(EINVAL), "ibv_create_counters");
	return handle_adopt(ST.Counters_type, &counters_kind, HANDLE(ctx), c);
}

PyDoc_STRVAR(counters_attach_point_flow__doc__,
	     "Say which counter goes at ``index`` of this object.\n"
	     "\n"
	     "With ``flow=None`` (what rdma-core's providers take) it prepares\n"
	     "the object for a flow created next with a\n"
	     "``flow.FlowSpecActionCount(counters)`` spec; a Flow binds it to\n"
	     "that existing rule where a provider allows it.\n"
	     "\n"
	     "Wraps ``ibv_attach_counters_point_flow`` (man page\n"
	     "ibv_attach_counters_point_flow(3)); never run on hardware here,\n"
	     "checked against the recording double.\n"
	     "\n"
	     "Args:\n"
	     "    counter_desc: a ``CounterDescription`` (PACKETS, BYTES).\n"
	     "    index: the position of the counter in ``read()``'s list.\n"
	     "    flow: a Flow of this Context, or None.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an argument has the wrong type.\n"
	     "    ValueError: a value is out of range, or the flow belongs to\n"
	     "        another Context.\n"
	     "    VerbsError: EBADF once this object or the flow is closed;\n"
	     "        else the verb failed (``errno``, EOPNOTSUPP without\n"
	     "        the provider op).");

#define ATTACH_POINT_FLOW_ARGS(X, S)                                    \
	X(S, ENUM, int, counter_desc, CounterDescription, 0, INT32_MAX) \
	X(S, UINT, uint32_t, index)                                     \
	X(S, HANDLE, PyObject *, flow, Flow, ARG_SAME_CONTEXT,          \
	  .flags = ARG_OPT | ARG_NONE)
ARGS_METHOD(static, counters_attach_point_flow, "Counters.attach_point_flow",
	    ATTACH_POINT_FLOW_ARGS, self, a)
{
	struct ibv_counter_attach_attr attr;
	int rc;

	memset(&attr, 0, sizeof(attr));
	attr.counter_desc = (enum ibv_counter_description)a->counter_desc;
	attr.index = a->index;
	rc = ibv_attach_counters_point_flow(
		CNTP(self), &attr,
		a->flow ? (struct ibv_flow *)HANDLE(a->flow)->obj : NULL);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_attach_counters_point_flow",
				       "counter_desc=%d index=%u%s",
				       a->counter_desc, (unsigned)a->index,
				       a->flow ? " with a flow" : "");
	Py_RETURN_NONE;
}

PyDoc_STRVAR(counters_read__doc__,
	     "Read the first ``ncounters`` values, in index order.\n"
	     "\n"
	     "Wraps ``ibv_read_counters`` (man page ibv_read_counters(3));\n"
	     "never run on hardware here, checked against the recording\n"
	     "double.\n"
	     "\n"
	     "Args:\n"
	     "    ncounters: how many values, 1..4096.\n"
	     "    flags: ``ReadCountersFlags`` (PREFER_CACHED: the driver's\n"
	     "        cached values, no device access).\n"
	     "\n"
	     "Returns:\n"
	     "    A list of ``ncounters`` ints.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an argument is not an int.\n"
	     "    ValueError: a value is out of range.\n"
	     "    VerbsError: EBADF once closed; else the verb failed\n"
	     "        (``errno``, EOPNOTSUPP without the provider op).");

#define READ_ARGS(X, S)                                      \
	X(S, INT, uint32_t, ncounters, 1, COUNTERS_READ_MAX) \
	X(S, FLAGS, uint32_t, flags, ReadCountersFlags, .flags = ARG_OPT)
ARGS_METHOD(static, counters_read, "Counters.read", READ_ARGS, self, a)
{
	uint32_t flags;
	uint64_t *vals;
	PyObject *res;
	long n, i;
	int rc;

	n = (long)a->ncounters;
	flags = a->flags;
	vals = PyMem_Calloc((size_t)n, sizeof(*vals));
	if (vals == NULL)
		return PyErr_NoMemory();
	if (handle_check(HANDLE(self)) < 0) {
		PyMem_Free(vals);
		return NULL;
	}
	rc = ibv_read_counters(CNTP(self), vals, (uint32_t)n, flags);
	if (rc != 0) {
		PyMem_Free(vals);
		return verbs_error_fmt(rc, "ibv_read_counters",
				       "ncounters=%ld flags=0x%x", n,
				       (unsigned)flags);
	}
	res = PyList_New(n);
	for (i = 0; res != NULL && i < n; i++) {
		PyObject *v = PyLong_FromUnsignedLongLong(vals[i]);

		/* PyList_SetItem steals v, even when it fails. */
		if (v == NULL || PyList_SetItem(res, i, v) < 0)
			Py_CLEAR(res);
	}
	PyMem_Free(vals);
	return res;
}

static PyObject *counters_repr(PyObject *self)
{
	return PyUnicode_FromString(HANDLE(self)->obj ?
					    "<ibverbs.Counters>" :
					    "<ibverbs.Counters closed>");
}

PyDoc_STRVAR(counters__doc__,
	     "A counters object (``struct ibv_counters``).\n"
	     "\n"
	     "Made by ``Context.create_counters()``; set up with\n"
	     "``attach_point_flow()``, bound to a flow by a\n"
	     "``flow.FlowSpecActionCount`` spec, read with ``read()``.\n"
	     "``close()`` wraps ``ibv_destroy_counters`` (man page\n"
	     "ibv_create_counters(3)).");

static PyMethodDef counters_methods[] = {
	METHOD_KW("attach_point_flow", counters_attach_point_flow),
	METHOD_KW("read", counters_read), HANDLE_METHODS_END
};

static PyGetSetDef counters_getset[] = {
	{ "context", handle_get_parent, NULL,
	  "The Context the counters object was created on.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(Counters_spec, "Counters", CountersObject, 0, counters__doc__,
		 handle_tp_dealloc, handle_tp_traverse, counters_repr,
		 counters_methods, counters_getset);
