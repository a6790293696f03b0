/*
 * comp_cntr.c - CompCntr: a completion counter (ibv_comp_cntr), a child
 * of its Context; Context.query_comp_cntr_caps() and
 * QP.attach_comp_cntr().
 *
 * The verbs are exported by libibverbs since rdma-core 65 (IBVERBS_1.18)
 * and reached through the IBV table (IBV_COMP_CNTR_SYMBOLS): an older
 * libibverbs makes each call raise VerbsError(EOPNOTSUPP) naming the
 * verb and the release.  ibv_query_comp_cntr_caps is a static inline
 * over the exported _ibv_query_comp_cntr_caps(ctx, caps, sizeof(caps)).
 * Older headers lack the structs: core/compat.h declares them.
 *
 * A counter attached to a QP is counted by the device; the kernel keeps
 * its own reference, so the binding keeps none.
 */
#include "ibverbs.h"
#include "counters/counters.h"
#include <string.h>

typedef struct {
	Handle h; /* obj: struct ibv_comp_cntr *; parent: Context */
	int type; /* CompCntrType */
} CompCntrObject;

#define CCP(self) ((struct ibv_comp_cntr *)HANDLE(self)->obj)

#define COMP_CNTR_NEEDS(field, sym) \
	IBV_REQUIRE_OPTIONAL(field, sym, "rdma-core 65")

static int comp_cntr_destroy(Handle *h)
{
	if (IBV.destroy_comp_cntr == NULL)
		return EOPNOTSUPP; /* a library with the create verb only */
	return IBV.destroy_comp_cntr((struct ibv_comp_cntr *)h->obj);
}

static const HandleKind comp_cntr_kind = { "CompCntr", "ibv_destroy_comp_cntr",
					   comp_cntr_destroy, NULL };

const char comp_cntr_query_caps__doc__[] = PyDoc_STR(
	"Query what completion counters the device offers.\n"
	"\n"
	"Wraps ``ibv_query_comp_cntr_caps`` (man page\n"
	"ibv_query_comp_cntr_caps(3)); never run on hardware here, checked\n"
	"against the recording double.\n"
	"\n"
	"Returns:\n"
	"    A ``CompCntrCaps``: ``max_value``, ``max_counters`` and\n"
	"    ``supported_qp_attach_ops`` (``QPAttachCompCntrOp`` bits).\n"
	"\n"
	"Raises:\n"
	"    VerbsError: EBADF once the Context is closed; EOPNOTSUPP when\n"
	"        the loaded libibverbs predates rdma-core 65 or the\n"
	"        provider has none; else the verb failed (``errno``).");

/* Context.query_comp_cntr_caps() */
PyObject *comp_cntr_query_caps(PyObject *ctx, PyObject *unused)
{
	struct ibv_comp_cntr_caps caps;
	PyObject *d;
	int rc;

	HANDLE_CHECK(ctx);
	COMP_CNTR_NEEDS(query_comp_cntr_caps, ibv_query_comp_cntr_caps);
	memset(&caps, 0, sizeof(caps));
	rc = IBV.query_comp_cntr_caps((struct ibv_context *)HANDLE(ctx)->obj,
				      &caps, sizeof(caps));
	if (rc != 0)
		return verbs_error(rc, "ibv_query_comp_cntr_caps");
	d = PyDict_New();
	if (d == NULL || dict_set_u64(d, "max_value", caps.max_value) < 0 ||
	    dict_set_u64(d, "max_counters", caps.max_counters) < 0 ||
	    dict_set_u64(d, "supported_qp_attach_ops",
			 caps.supported_qp_attach_ops) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return objects_record("CompCntrCaps", d);
}

const char comp_cntr_create__doc__[] = PyDoc_STR(
	"Create a completion counter: a device-side count of the work\n"
	"requests (or bytes) completed, and of those completed in error,\n"
	"on the QPs it is attached to.\n"
	"\n"
	"Wraps ``ibv_create_comp_cntr`` (man page ibv_create_comp_cntr(3),\n"
	"rdma-core 65); never run on hardware here, checked against the\n"
	"recording double.\n"
	"\n"
	"Args:\n"
	"    type: a ``CompCntrType`` (WRS counts work requests, BYTES\n"
	"        bytes).\n"
	"    flags: the init attr's ``flags`` (none defined yet: 0).\n"
	"\n"
	"Returns:\n"
	"    The new CompCntr (a child of this Context).\n"
	"\n"
	"Raises:\n"
	"    TypeError: an argument is not an int.\n"
	"    ValueError: a value is out of range.\n"
	"    VerbsError: EBADF once the Context is closed; EOPNOTSUPP when\n"
	"        the loaded libibverbs predates rdma-core 65 or the\n"
	"        provider has none; else the verb failed (``errno``).");

/* Context.create_comp_cntr(type=WRS, flags=0) */
#define CREATE_COMP_CNTR_ARGS(X, S)                                         \
	X(S, ENUM, int, type, CompCntrType, 0, INT32_MAX, .flags = ARG_OPT, \
	  .def = IBV_COMP_CNTR_TYPE_WRS)                                    \
	X(S, UINT, uint32_t, flags, .flags = ARG_OPT)
ARGS_METHOD(extern, comp_cntr_create, "Context.create_comp_cntr",
	    CREATE_COMP_CNTR_ARGS, ctx, a)
{
	struct ibv_comp_cntr_init_attr attr;
	struct ibv_comp_cntr *cc;
	PyObject *self;

	COMP_CNTR_NEEDS(create_comp_cntr, ibv_create_comp_cntr);
	memset(&attr, 0, sizeof(attr));
	attr.type = (enum ibv_comp_cntr_type)a->type;
	attr.flags = a->flags;
	errno = 0;
	cc = IBV.create_comp_cntr((struct ibv_context *)HANDLE(ctx)->obj,
				  &attr);
	if (cc == NULL)
		return verbs_error_fmt(errno_or(EINVAL), "ibv_create_comp_cntr",
				       "type=%d flags=0x%x", a->type,
				       (unsigned)a->flags);
	self = handle_adopt(ST.CompCntr_type, &comp_cntr_kind, HANDLE(ctx), cc);
	if (self != NULL)
		((CompCntrObject *)self)->type = a->type;
	return self;
}

PyObject *comp_cntr_adopt(PyObject *ctx, struct ibv_comp_cntr *cc, int type)
{
	PyObject *self = handle_adopt(ST.CompCntr_type, &comp_cntr_kind,
				      HANDLE(ctx), cc);

	if (self != NULL)
		((CompCntrObject *)self)->type = type;
	return self;
}

/* COMP_CNTR_SETTER(fn, verb, arg): the method fn(arg) calling IBV.verb
 * with the counter and a u64.  Each use names the function it
 * defines. */
#define COMP_CNTR_SETTER(fn, verb, arg)                                       \
	static PyObject *fn(PyObject *self, PyObject *o)                      \
	{                                                                     \
		uint64_t v;                                                   \
		int rc;                                                       \
                                                                              \
		HANDLE_CHECK(self);                                           \
		if (arg_u64(o, arg, &v) < 0)                                  \
			return NULL;                                          \
		COMP_CNTR_NEEDS(verb, ibv_##verb);                            \
		HANDLE_CHECK(self);                                           \
		rc = IBV.verb(CCP(self), v);                                  \
		if (rc != 0)                                                  \
			return verbs_error_fmt(rc, "ibv_" #verb, arg "=%llu", \
					       (unsigned long long)v);        \
		Py_RETURN_NONE;                                               \
	}

/* COMP_CNTR_READER(fn, verb): the method fn() returning IBV.verb's
 * value. */
#define COMP_CNTR_READER(fn, verb)                            \
	static PyObject *fn(PyObject *self, PyObject *unused) \
	{                                                     \
		uint64_t v = 0;                               \
		int rc;                                       \
                                                              \
		HANDLE_CHECK(self);                           \
		COMP_CNTR_NEEDS(verb, ibv_##verb);            \
		rc = IBV.verb(CCP(self), &v);                 \
		if (rc != 0)                                  \
			return verbs_error(rc, "ibv_" #verb); \
		return PyLong_FromUnsignedLongLong(v);        \
	}

/* What the methods' docstrings share. */
#define CC_ONLY_DOUBLE \
	"never run on hardware here, checked against the recording double.\n"
#define CC_RAISES_ARG                                            \
	"Raises:\n"                                              \
	"    TypeError: the argument is not an int.\n"           \
	"    ValueError: it is negative or above 2**64-1.\n"     \
	"    VerbsError: EBADF once closed; EOPNOTSUPP when\n"   \
	"        the loaded libibverbs predates rdma-core 65;\n" \
	"        else the verb failed (``errno``)."
#define CC_RAISES                                                \
	"Raises:\n"                                              \
	"    VerbsError: EBADF once closed; EOPNOTSUPP when\n"   \
	"        the loaded libibverbs predates rdma-core 65;\n" \
	"        else the verb failed (``errno``)."

PyDoc_STRVAR(comp_cntr_set__doc__,
	     "Set the completion count to ``value``.\n"
	     "\n"
	     "Wraps ``ibv_set_comp_cntr`` (man page ibv_create_comp_cntr(3));\n"
	     "" CC_ONLY_DOUBLE "\n"
	     "Args:\n"
	     "    value: the new count.\n"
	     "\n" CC_RAISES_ARG);

COMP_CNTR_SETTER(comp_cntr_set, set_comp_cntr, "value")

PyDoc_STRVAR(comp_cntr_set_err__doc__,
	     "Set the error count to ``value``.\n"
	     "\n"
	     "Wraps ``ibv_set_err_comp_cntr`` (man page\n"
	     "ibv_create_comp_cntr(3)); " CC_ONLY_DOUBLE "\n"
	     "Args:\n"
	     "    value: the new error count.\n"
	     "\n" CC_RAISES_ARG);

COMP_CNTR_SETTER(comp_cntr_set_err, set_err_comp_cntr, "value")

PyDoc_STRVAR(comp_cntr_inc__doc__,
	     "Add ``amount`` to the completion count.\n"
	     "\n"
	     "Wraps ``ibv_inc_comp_cntr`` (man page ibv_create_comp_cntr(3));\n"
	     "" CC_ONLY_DOUBLE "\n"
	     "Args:\n"
	     "    amount: what to add.\n"
	     "\n" CC_RAISES_ARG);

COMP_CNTR_SETTER(comp_cntr_inc, inc_comp_cntr, "amount")

PyDoc_STRVAR(comp_cntr_inc_err__doc__,
	     "Add ``amount`` to the error count.\n"
	     "\n"
	     "Wraps ``ibv_inc_err_comp_cntr`` (man page\n"
	     "ibv_create_comp_cntr(3)); " CC_ONLY_DOUBLE "\n"
	     "Args:\n"
	     "    amount: what to add.\n"
	     "\n" CC_RAISES_ARG);

COMP_CNTR_SETTER(comp_cntr_inc_err, inc_err_comp_cntr, "amount")

PyDoc_STRVAR(comp_cntr_read__doc__,
	     "Read the completion count.\n"
	     "\n"
	     "Wraps ``ibv_read_comp_cntr`` (man page ibv_create_comp_cntr(3));\n"
	     "" CC_ONLY_DOUBLE "\n"
	     "Returns:\n"
	     "    The count (an int).\n"
	     "\n" CC_RAISES);

COMP_CNTR_READER(comp_cntr_read, read_comp_cntr)

PyDoc_STRVAR(comp_cntr_read_err__doc__,
	     "Read the error count.\n"
	     "\n"
	     "Wraps ``ibv_read_err_comp_cntr`` (man page\n"
	     "ibv_create_comp_cntr(3)); " CC_ONLY_DOUBLE "\n"
	     "Returns:\n"
	     "    The error count (an int).\n"
	     "\n" CC_RAISES);

COMP_CNTR_READER(comp_cntr_read_err, read_err_comp_cntr)
#undef COMP_CNTR_SETTER
#undef COMP_CNTR_READER

const char qp_attach_comp_cntr__doc__[] = PyDoc_STR(
	"Count this QP's completions of the kinds in ``op_mask`` on\n"
	"``comp_cntr``.\n"
	"\n"
	"Wraps ``ibv_qp_attach_comp_cntr`` (man page\n"
	"ibv_qp_attach_comp_cntr(3), rdma-core 65); never run on hardware\n"
	"here, checked against the recording double.\n"
	"\n"
	"Args:\n"
	"    comp_cntr: a CompCntr of this QP's Context.\n"
	"    op_mask: ``QPAttachCompCntrOp`` bits (SEND, RECV, RDMA_READ,\n"
	"        REMOTE_RDMA_READ, RDMA_WRITE, REMOTE_RDMA_WRITE).\n"
	"\n"
	"Raises:\n"
	"    TypeError: comp_cntr is not a CompCntr, or op_mask not an int.\n"
	"    ValueError: op_mask is out of range, or comp_cntr belongs to\n"
	"        another Context.\n"
	"    VerbsError: EBADF once the QP or counter is closed; EOPNOTSUPP\n"
	"        when the loaded libibverbs predates rdma-core 65 or the\n"
	"        provider has none; else the verb failed (``errno``).");

/* QP.attach_comp_cntr(comp_cntr, op_mask) */
#define ATTACH_COMP_CNTR_ARGS(X, S)                                     \
	X(S, HANDLE, PyObject *, comp_cntr, CompCntr, ARG_SAME_CONTEXT) \
	X(S, FLAGS, uint32_t, op_mask, QPAttachCompCntrOp)
ARGS_METHOD(extern, qp_attach_comp_cntr, "QP.attach_comp_cntr",
	    ATTACH_COMP_CNTR_ARGS, qp, a)
{
	struct ibv_qp_attach_comp_cntr_attr attr;
	int rc;

	COMP_CNTR_NEEDS(qp_attach_comp_cntr, ibv_qp_attach_comp_cntr);
	memset(&attr, 0, sizeof(attr));
	attr.op_mask = a->op_mask;
	rc = IBV.qp_attach_comp_cntr((struct ibv_qp *)HANDLE(qp)->obj,
				     CCP(a->comp_cntr), &attr);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_qp_attach_comp_cntr",
				       "op_mask=0x%x", (unsigned)a->op_mask);
	Py_RETURN_NONE;
}

static PyObject *comp_cntr_get_type(PyObject *self, void *closure)
{
	return enum_from_int("CompCntrType", ((CompCntrObject *)self)->type);
}

static PyObject *comp_cntr_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.CompCntr closed>");
	return PyUnicode_FromFormat("<ibverbs.CompCntr type=%d>",
				    ((CompCntrObject *)self)->type);
}

PyDoc_STRVAR(comp_cntr__doc__,
	     "A completion counter (``struct ibv_comp_cntr``, rdma-core 65).\n"
	     "\n"
	     "Made by ``Context.create_comp_cntr()``; attached with\n"
	     "``QP.attach_comp_cntr()``. ``close()`` wraps\n"
	     "``ibv_destroy_comp_cntr`` (man page ibv_create_comp_cntr(3)).");

static PyMethodDef comp_cntr_methods[] = {
	METHOD_O("set", comp_cntr_set),
	METHOD_O("set_err", comp_cntr_set_err),
	METHOD_O("inc", comp_cntr_inc),
	METHOD_O("inc_err", comp_cntr_inc_err),
	METHOD_NOARGS("read", comp_cntr_read),
	METHOD_NOARGS("read_err", comp_cntr_read_err),
	HANDLE_METHODS_END
};

static PyGetSetDef comp_cntr_getset[] = {
	{ "type", comp_cntr_get_type, NULL,
	  "The ``CompCntrType`` it was created with.", NULL },
	{ "context", handle_get_parent, NULL,
	  "The Context the counter was created on.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(CompCntr_spec, "CompCntr", CompCntrObject, 0, comp_cntr__doc__,
		 handle_tp_dealloc, handle_tp_traverse, comp_cntr_repr,
		 comp_cntr_methods, comp_cntr_getset);
