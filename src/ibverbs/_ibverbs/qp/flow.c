/*
 * flow.c - Flow: a flow steering rule (ibv_flow) attached to a QP, a
 * child of that QP; and _flow_layouts(), the struct sizes and offsets
 * that ibverbs.flow serializes a FlowAttr with.
 *
 * verbs.h describes one buffer: struct ibv_flow_attr, then num_of_specs
 * specs, each starting with {enum ibv_flow_spec_type type; uint16_t
 * size}; attr.size is the whole buffer's.  ibverbs.flow.FlowAttr builds
 * it (to_bytes()); QP.create_flow() walks it once more before handing it
 * to the provider, so a malformed buffer is a ValueError, never a read
 * past its end.  The two specs that carry a pointer (ACTION_HANDLE: a
 * FlowAction; ACTION_COUNT: a Counters object) come null in the buffer;
 * flow_fill_objects writes the pointers of the objects the FlowAttr
 * names (FlowAttr._objects()), after checking each is open and of the
 * QP's Context, so raw bytes can never hand the provider an address.  ibv_create_flow and ibv_destroy_flow are static inline
 * (verbs_get_ctx_op; EOPNOTSUPP when the provider has no op).
 */
#include "ibverbs.h"
#include "qp/qp.h"
#include <stddef.h>
#include <string.h>

typedef struct {
	Handle h; /* obj: struct ibv_flow *; parent: QP */
} FlowObject;

HANDLE_KIND(flow_kind, "Flow", "ibv_destroy_flow", ibv_destroy_flow, NULL);

/* The spec header every spec starts with. */
struct spec_hdr {
	enum ibv_flow_spec_type type;
	uint16_t size;
};

/* A serialized FlowAttr: 0, or -1 with ValueError. */
static int flow_buf_check(const char *p, Py_ssize_t n)
{
	const struct ibv_flow_attr *a = (const void *)p;
	Py_ssize_t off = sizeof(*a);
	int i;

	if (n < (Py_ssize_t)sizeof(*a) || n > UINT16_MAX) {
		PyErr_Format(PyExc_ValueError,
			     "a flow attr is %zu..65535 bytes, got %zd",
			     sizeof(*a), n);
		return -1;
	}
	if (a->size != n) {
		PyErr_Format(PyExc_ValueError,
			     "flow attr size field %u != buffer length %zd",
			     (unsigned)a->size, n);
		return -1;
	}
	for (i = 0; i < a->num_of_specs; i++) {
		struct spec_hdr h;

		if (n - off < (Py_ssize_t)sizeof(h)) {
			PyErr_Format(PyExc_ValueError,
				     "spec %d starts past the buffer's end", i);
			return -1;
		}
		memcpy(&h, p + off, sizeof(h));
		if (h.size < sizeof(h) || h.size > n - off) {
			PyErr_Format(PyExc_ValueError,
				     "spec %d has size %u: outside the buffer",
				     i, (unsigned)h.size);
			return -1;
		}
		off += h.size;
	}
	if (off != n) {
		PyErr_Format(PyExc_ValueError, "%zd bytes after the %u spec(s)",
			     n - off, (unsigned)a->num_of_specs);
		return -1;
	}
	return 0;
}

/* The ibv_flow_spec_action_handle / ibv_flow_spec_counter_action spec at
 * p (index i, its header h, copied out: a spec of raw bytes may sit at
 * any offset) pointing to objs[i], an open object of tp on the Context
 * ctx: its pointer written.  0, or -1 with an exception. */
static int flow_fill_one(char *p, int i, const struct spec_hdr *h,
			 PyObject *objs, Handle *ctx)
{
	int is_count = h->type == IBV_FLOW_SPEC_ACTION_COUNT;
	PyTypeObject *tp = is_count ? ST.Counters_type : ST.FlowAction_type;
	size_t want = is_count ? sizeof(struct ibv_flow_spec_counter_action) :
				 sizeof(struct ibv_flow_spec_action_handle);
	PyObject *o = objs ? PyTuple_GetItem(objs, i) : NULL;
	void *ptr;

	if (h->size != want) {
		PyErr_Format(PyExc_ValueError, "spec %d has size %u, not %zu",
			     i, (unsigned)h->size, want);
		return -1;
	}
	if (o == NULL || !PyObject_TypeCheck(o, tp)) {
		PyErr_Clear();
		PyErr_Format(PyExc_TypeError,
			     "spec %d points to a %s: give a FlowAttr whose "
			     "spec holds one (FlowSpecAction%s)",
			     i, is_count ? "Counters" : "FlowAction",
			     is_count ? "Count" : "Handle");
		return -1;
	}
	if (handle_check(HANDLE(o)) < 0)
		return -1;
	if (HANDLE(o)->parent != ctx) {
		char what[40];

		snprintf(what, sizeof(what), "spec %d: the %s", i,
			 is_count ? "Counters" : "FlowAction");
		return arg_other_parent_error(what, "Context");
	}
	ptr = HANDLE(o)->obj;
	if (is_count)
		memcpy(p + offsetof(struct ibv_flow_spec_counter_action,
				    counters),
		       &ptr, sizeof(ptr));
	else
		memcpy(p + offsetof(struct ibv_flow_spec_action_handle, action),
		       &ptr, sizeof(ptr));
	return 0;
}

/* The pointers of a checked buffer's object specs, from objs (a tuple,
 * one item per spec, or NULL for raw bytes).  0, or -1 with an
 * exception. */
static int flow_fill_objects(struct ibv_flow_attr *attr, PyObject *objs,
			     Handle *ctx)
{
	char *p = (char *)attr + sizeof(*attr);
	int i;

	if (objs != NULL && PyTuple_Size(objs) != attr->num_of_specs) {
		PyErr_Format(PyExc_ValueError,
			     "FlowAttr._objects() has %zd items for %u specs",
			     PyTuple_Size(objs), (unsigned)attr->num_of_specs);
		return -1;
	}
	for (i = 0; i < attr->num_of_specs; i++) {
		struct spec_hdr h;

		memcpy(&h, p, sizeof(h));
		if ((h.type == IBV_FLOW_SPEC_ACTION_COUNT ||
		     h.type == IBV_FLOW_SPEC_ACTION_HANDLE) &&
		    flow_fill_one(p, i, &h, objs, ctx) < 0)
			return -1;
		p += h.size;
	}
	return 0;
}

/* isinstance(o, ibverbs.flow.FlowAttr): 1, 0, or -1 with an error. */
static int flow_is_attr(PyObject *o)
{
	PyObject *mod = module_cached(&ST.mod_flow, "ibverbs.flow"), *cls;
	int rc;

	if (mod == NULL)
		return -1;
	cls = PyObject_GetAttrString(mod, "FlowAttr");
	if (cls == NULL)
		return -1;
	rc = PyObject_IsInstance(o, cls);
	Py_DECREF(cls);
	return rc;
}

const char qp_create_flow__doc__[] = PyDoc_STR(
	"Attach a flow steering rule: matching packets go to this QP.\n"
	"\n"
	"``flow_attr`` is an ``ibverbs.flow.FlowAttr`` or its\n"
	"``to_bytes()``; the buffer's sizes are checked before the\n"
	"provider reads it. The Flow is a child of the QP. Specs that\n"
	"point to a FlowAction or Counters object\n"
	"(``FlowSpecActionHandle``, ``FlowSpecActionCount``) need the\n"
	"FlowAttr: their pointers are filled in from its objects.\n"
	"\n"
	"Wraps ``ibv_create_flow`` (man page ibv_create_flow(3)).\n"
	"\n"
	"Args:\n"
	"    flow_attr: FlowAttr or bytes.\n"
	"\n"
	"Returns:\n"
	"    The new Flow.\n"
	"\n"
	"Raises:\n"
	"    TypeError: flow_attr is neither a FlowAttr nor bytes, or a\n"
	"        pointer spec comes without its object.\n"
	"    ValueError: the buffer is malformed (sizes, spec count), or\n"
	"        a spec's object belongs to another Context.\n"
	"    VerbsError: EBADF once the QP or a spec's object is closed;\n"
	"        EOPNOTSUPP when\n"
	"        the provider has no flow steering; else the verb failed\n"
	"        (``errno``, e.g. EINVAL for an unsupported spec).");

/* QP.create_flow(flow_attr): a FlowAttr (anything with to_bytes()) or
 * its bytes. */
#define CREATE_FLOW_ARGS(X, S) X(S, RECORD, PyObject *, flow_attr, FlowAttr)
ARGS_METHOD(extern, flow_create, "QP.create_flow", CREATE_FLOW_ARGS, qp, a)
{
	PyObject *o, *b, *objs = NULL;
	struct ibv_flow_attr *attr;
	struct ibv_flow *flow;
	FlowObject *self;
	Py_ssize_t n;
	char *p;
	int err;

	o = a->flow_attr;
	if (PyBytes_Check(o)) {
		b = o;
		Py_INCREF(b);
	} else {
		int is_attr = flow_is_attr(o);

		if (is_attr <= 0) {
			if (is_attr == 0)
				arg_type_error("flow_attr", "FlowAttr or bytes",
					       0, o);
			return NULL;
		}
		b = PyObject_CallMethod(o, "to_bytes", NULL);
		if (b == NULL)
			return NULL;
		if (!PyBytes_Check(b)) {
			Py_DECREF(b);
			PyErr_SetString(
				PyExc_TypeError,
				"flow_attr.to_bytes() must return bytes");
			return NULL;
		}
		objs = PyObject_CallMethod(o, "_objects", NULL);
		if (objs == NULL || !PyTuple_Check(objs)) {
			if (objs != NULL)
				PyErr_SetString(PyExc_TypeError,
						"FlowAttr._objects() must "
						"return a tuple");
			Py_XDECREF(objs);
			Py_DECREF(b);
			return NULL;
		}
	}
	if (PyBytes_AsStringAndSize(b, &p, &n) < 0 ||
	    flow_buf_check(p, n) < 0) {
		Py_DECREF(b);
		Py_XDECREF(objs);
		return NULL;
	}
	/* An aligned copy: providers read the structs in place. */
	attr = PyMem_Malloc((size_t)n);
	if (attr == NULL) {
		Py_DECREF(b);
		Py_XDECREF(objs);
		return PyErr_NoMemory();
	}
	memcpy(attr, p, (size_t)n);
	Py_DECREF(b);
	self = HANDLE_ALLOC(FlowObject, ST.Flow_type);
	/* to_bytes() ran Python code: the QP may be closed now.  No Python
	 * code runs from the pointers' checks to the verb. */
	if (self == NULL || handle_check(HANDLE(qp)) < 0 ||
	    flow_fill_objects(attr, objs, HANDLE(qp)->parent->parent) < 0) {
		Py_XDECREF(self);
		Py_XDECREF(objs);
		PyMem_Free(attr);
		return NULL;
	}
	Py_XDECREF(objs);
	errno = 0;
	flow = ibv_create_flow((struct ibv_qp *)HANDLE(qp)->obj, attr);
	err = errno_or(EINVAL);
	if (flow == NULL) {
		Py_DECREF(self);
		verbs_error_fmt(err, "ibv_create_flow",
				"type=%d port=%u priority=%u specs=%u",
				(int)attr->type, (unsigned)attr->port,
				(unsigned)attr->priority,
				(unsigned)attr->num_of_specs);
		PyMem_Free(attr);
		return NULL;
	}
	PyMem_Free(attr);
	handle_init(HANDLE(self), &flow_kind, HANDLE(qp));
	HANDLE_SET_OBJ(self, flow);
	return (PyObject *)self;
}

const char flow_mod_layouts__doc__[] = PyDoc_STR(
	"{spec: (sizeof, offsetof val, offsetof mask, sizeof filter)} of\n"
	"the compiled flow spec structs, for ``ibverbs.flow``.");

/* _flow_layouts() -> {name: (sizeof, offsetof val, offsetof mask,
 * sizeof filter)}, "attr": (sizeof ibv_flow_attr, 0, 0, 0). */
PyObject *flow_mod_layouts(PyObject *mod, PyObject *unused)
{
	PyObject *d = PyDict_New();
	PyObject *t;

	if (d == NULL)
		return NULL;
		/* clang-format off */
#define L(name, st, a, b, f) \
	t = Py_BuildValue("(nnnn)", (Py_ssize_t)sizeof(st), (Py_ssize_t)(a), \
			  (Py_ssize_t)(b), (Py_ssize_t)(f)); \
	if (t == NULL || PyDict_SetItemString(d, name, t) < 0) goto fail; \
	Py_DECREF(t);
#define S(name, kind) \
	L(name, struct ibv_flow_spec_##kind, \
	  offsetof(struct ibv_flow_spec_##kind, val), \
	  offsetof(struct ibv_flow_spec_##kind, mask), \
	  sizeof(((struct ibv_flow_spec_##kind *)0)->val))
	L("attr", struct ibv_flow_attr, 0, 0, 0)
	S("eth", eth) S("ipv4", ipv4) S("ipv4_ext", ipv4_ext)
	S("ipv6", ipv6) S("esp", esp) S("tcp_udp", tcp_udp) S("gre", gre)
	S("mpls", mpls) S("tunnel", tunnel)
	L("action_tag", struct ibv_flow_spec_action_tag,
	  offsetof(struct ibv_flow_spec_action_tag, tag_id), 0, 4)
	L("action_drop", struct ibv_flow_spec_action_drop, 0, 0, 0)
	L("action_handle", struct ibv_flow_spec_action_handle,
	  offsetof(struct ibv_flow_spec_action_handle, action), 0,
	  sizeof(void *))
	L("action_count", struct ibv_flow_spec_counter_action,
	  offsetof(struct ibv_flow_spec_counter_action, counters), 0,
	  sizeof(void *))
#undef S
#undef L
		/* clang-format on */
		return d;
fail:
	Py_XDECREF(t);
	Py_DECREF(d);
	return NULL;
}

static PyObject *flow_repr(PyObject *self)
{
	return PyUnicode_FromString(
		HANDLE(self)->obj ? "<ibverbs.Flow>" : "<ibverbs.Flow closed>");
}

static PyMethodDef flow_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef flow_getset[] = {
	{ "qp", handle_get_parent, NULL,
	  "The QP the matching packets are steered to.", NULL },
	HANDLE_GETSETS_END
};

PyDoc_STRVAR(flow__doc__,
	     "A flow steering rule (``struct ibv_flow``) attached to a QP.\n"
	     "\n"
	     "Made by ``QP.create_flow(FlowAttr(...))``; a child of the QP.\n"
	     "``close()`` wraps ``ibv_destroy_flow`` (man page\n"
	     "ibv_create_flow(3)).");

HANDLE_TYPE_SPEC(Flow_spec, "Flow", FlowObject, 0, flow__doc__,
		 handle_tp_dealloc, handle_tp_traverse, flow_repr, flow_methods,
		 flow_getset);
