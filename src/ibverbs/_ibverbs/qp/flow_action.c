/*
 * flow_action.c - FlowAction: a flow action (ibv_flow_action), a child
 * of its Context; made by Context.create_flow_action_esp() (an IPsec
 * ESP offload), changed by modify_esp(), used by a flow rule through a
 * flow.FlowSpecActionHandle(action) spec (QP.create_flow fills the
 * ibv_flow_spec_action_handle's pointer).
 *
 * ibv_create_flow_action_esp, ibv_modify_flow_action_esp and
 * ibv_destroy_flow_action are static inline in verbs.h over
 * verbs_context ops (verbs_get_ctx_op: EOPNOTSUPP when the provider has
 * none), so they are called by name.
 *
 * A FlowActionESPAttr gives struct ibv_flow_action_esp_attr: the ESP
 * fields (spi, seq, tfc_pad, flags, hard_limit_pkts), the AES-GCM key
 * material (key, iv, iv_algo, salt, icv_len) when key is set, the replay
 * bitmap's size when replay_window is set, and esn (comp_mask ESN) when
 * set.  The tunnel encapsulation list (esp_encap) is left NULL.
 */
#include "ibverbs.h"
#include "qp/qp.h"
#include <string.h>

typedef struct {
	Handle h; /* obj: struct ibv_flow_action *; parent: Context */
} FlowActionObject;

#define FAP(self) ((struct ibv_flow_action *)HANDLE(self)->obj)

HANDLE_KIND(flow_action_kind, "FlowAction", "ibv_destroy_flow_action",
	    ibv_destroy_flow_action, NULL);

/* Everything one struct ibv_flow_action_esp_attr points to. */
struct esp_buf {
	struct ibv_flow_action_esp_attr attr;
	struct ibv_flow_action_esp esp;
	struct ibv_flow_action_esp_keymat_aes_gcm keymat;
	struct ibv_flow_action_esp_replay_bmp replay;
};

/* o.<name> as an integer of at most max into *out; None leaves *out and
 * answers 0 (absent), a value 1; -1 with TypeError/ValueError. */
static int esp_field(PyObject *o, const char *name, uint64_t max, uint64_t *out)
{
	PyObject *v = attr_required(o, name, "attr", "FlowActionESPAttr");
	int rc = 1;

	if (v == NULL)
		return -1;
	if (v == Py_None)
		rc = 0;
	else if (arg_u64(v, name, out) < 0)
		rc = -1;
	else if (*out > max) {
		PyErr_Format(PyExc_ValueError,
			     "%s must be at most %llu, got %S", name,
			     (unsigned long long)max, v);
		rc = -1;
	}
	Py_DECREF(v);
	return rc;
}

/* The AES-GCM key material, when attr.key is not None.  0 / -1. */
static int esp_keymat(PyObject *o, struct esp_buf *b)
{
	struct ibv_flow_action_esp_keymat_aes_gcm *k = &b->keymat;
	PyObject *key = attr_required(o, "key", "attr", "FlowActionESPAttr");
	uint64_t iv = 0, algo = 0, salt = 0, icv = 0;
	char *p;
	Py_ssize_t n;

	if (key == NULL)
		return -1;
	if (key == Py_None) {
		Py_DECREF(key);
		return 0;
	}
	if (!PyBytes_Check(key)) {
		PyErr_Format(PyExc_TypeError,
			     "key must be bytes or None, not %R",
			     (PyObject *)Py_TYPE(key));
		Py_DECREF(key);
		return -1;
	}
	if (PyBytes_AsStringAndSize(key, &p, &n) < 0 || n < 1 ||
	    (size_t)n > sizeof(k->aes_key)) {
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_ValueError,
				     "key must be 1..%zu bytes, got %zd",
				     sizeof(k->aes_key), n);
		Py_DECREF(key);
		return -1;
	}
	memcpy(k->aes_key, p, (size_t)n);
	k->key_len = (uint32_t)n;
	Py_DECREF(key);
	if (esp_field(o, "iv", UINT64_MAX, &iv) < 0 ||
	    esp_field(o, "iv_algo", UINT32_MAX, &algo) < 0 ||
	    esp_field(o, "salt", UINT32_MAX, &salt) < 0 ||
	    esp_field(o, "icv_len", UINT32_MAX, &icv) < 0)
		return -1;
	k->iv = iv;
	k->iv_algo = (uint32_t)algo;
	k->salt = (uint32_t)salt;
	k->icv_len = (uint32_t)icv;
	b->attr.keymat_proto = IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM;
	b->attr.keymat_len = sizeof(*k);
	b->attr.keymat_ptr = k;
	return 0;
}

/* A FlowActionESPAttr into *b, its pointers into b itself.  0 / -1. */
static int esp_attr_parse(PyObject *o, struct esp_buf *b)
{
	uint64_t spi = 0, seq = 0, pad = 0, flags = 0, limit = 0, win = 0;
	uint64_t esn = 0;
	int has_win, has_esn;

	memset(b, 0, sizeof(*b));
	if (esp_field(o, "spi", UINT32_MAX, &spi) < 0 ||
	    esp_field(o, "seq", UINT32_MAX, &seq) < 0 ||
	    esp_field(o, "tfc_pad", UINT32_MAX, &pad) < 0 ||
	    esp_field(o, "flags", UINT32_MAX, &flags) < 0 ||
	    esp_field(o, "hard_limit_pkts", UINT64_MAX, &limit) < 0 ||
	    (has_win = esp_field(o, "replay_window", UINT32_MAX, &win)) < 0 ||
	    (has_esn = esp_field(o, "esn", UINT32_MAX, &esn)) < 0 ||
	    esp_keymat(o, b) < 0)
		return -1;
	b->esp.spi = (uint32_t)spi;
	b->esp.seq = (uint32_t)seq;
	b->esp.tfc_pad = (uint32_t)pad;
	b->esp.flags = (uint32_t)flags;
	b->esp.hard_limit_pkts = limit;
	b->attr.esp_attr = &b->esp;
	if (has_win) {
		b->replay.size = (uint32_t)win;
		b->attr.replay_proto = IBV_FLOW_ACTION_ESP_REPLAY_BMP;
		b->attr.replay_len = sizeof(b->replay);
		b->attr.replay_ptr = &b->replay;
	} else {
		b->attr.replay_proto = IBV_FLOW_ACTION_ESP_REPLAY_NONE;
	}
	if (has_esn) {
		b->attr.esn = (uint32_t)esn;
		b->attr.comp_mask |= IBV_FLOW_ACTION_ESP_MASK_ESN;
	}
	return 0;
}

const char flow_action_esp_create__doc__[] = PyDoc_STR(
	"Create an IPsec ESP flow action, for flow rules to apply\n"
	"through a ``flow.FlowSpecActionHandle(action)`` spec.\n"
	"\n"
	"Wraps ``ibv_create_flow_action_esp`` (man page\n"
	"ibv_create_flow_action(3)); never run on hardware here, checked\n"
	"against the recording double (rxe has no flow actions).\n"
	"\n"
	"Args:\n"
	"    attr: a ``FlowActionESPAttr``.\n"
	"\n"
	"Returns:\n"
	"    The new FlowAction (a child of this Context).\n"
	"\n"
	"Raises:\n"
	"    TypeError: attr lacks a field or a field has the wrong type.\n"
	"    ValueError: a field is out of range (key longer than 32\n"
	"        bytes, ...).\n"
	"    VerbsError: EBADF once the Context is closed; EOPNOTSUPP when\n"
	"        the provider has no ESP flow actions; else the verb failed\n"
	"        (``errno``).");

/* The argument of Context.create_flow_action_esp and
 * FlowAction.modify_esp. */
#define ESP_ARGS(X, S) X(S, RECORD, PyObject *, attr, FlowActionESPAttr)
ARGS_DECLARE(esp, ESP_ARGS);
METHOD_ARGS(flow_action_esp_create, "Context.create_flow_action_esp",
	    esp_params);

/* Context.create_flow_action_esp(attr) */
ARGS_METHOD_OF(extern, flow_action_esp_create, ctx, struct esp_args, a)
{
	struct ibv_flow_action *fa;
	struct esp_buf *b;
	PyObject *o;

	o = a->attr;
	b = PyMem_Malloc(sizeof(*b));
	if (b == NULL)
		return PyErr_NoMemory();
	/* Reading the attributes ran Python code: check again. */
	if (esp_attr_parse(o, b) < 0 || handle_check(HANDLE(ctx)) < 0) {
		PyMem_Free(b);
		return NULL;
	}
	errno = 0;
	fa = ibv_create_flow_action_esp((struct ibv_context *)HANDLE(ctx)->obj,
					&b->attr);
	if (fa == NULL)
		verbs_error_fmt(errno_or(EINVAL), "ibv_create_flow_action_esp",
				"spi=%u flags=0x%x", b->esp.spi, b->esp.flags);
	PyMem_Free(b);
	if (fa == NULL)
		return NULL;
	return handle_adopt(ST.FlowAction_type, &flow_action_kind, HANDLE(ctx),
			    fa);
}

PyDoc_STRVAR(flow_action_modify_esp__doc__,
	     "Change the ESP parameters of this flow action (a new key, a\n"
	     "new ESN window...).\n"
	     "\n"
	     "Wraps ``ibv_modify_flow_action_esp`` (man page\n"
	     "ibv_create_flow_action(3)); never run on hardware here,\n"
	     "checked against the recording double.\n"
	     "\n"
	     "Args:\n"
	     "    attr: a ``FlowActionESPAttr``.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: attr lacks a field or a field has the wrong\n"
	     "        type.\n"
	     "    ValueError: a field is out of range.\n"
	     "    VerbsError: EBADF once closed; else the verb failed\n"
	     "        (``errno``, EOPNOTSUPP without the provider op).");

METHOD_ARGS(flow_action_modify_esp, "FlowAction.modify_esp", esp_params);

ARGS_METHOD_OF(static, flow_action_modify_esp, self, struct esp_args, a)
{
	struct esp_buf *b;
	PyObject *o;
	int rc;

	o = a->attr;
	b = PyMem_Malloc(sizeof(*b));
	if (b == NULL)
		return PyErr_NoMemory();
	if (esp_attr_parse(o, b) < 0 || handle_check(HANDLE(self)) < 0) {
		PyMem_Free(b);
		return NULL;
	}
	rc = ibv_modify_flow_action_esp(FAP(self), &b->attr);
	if (rc != 0)
		verbs_error_fmt(rc, "ibv_modify_flow_action_esp",
				"spi=%u flags=0x%x", b->esp.spi, b->esp.flags);
	PyMem_Free(b);
	if (rc != 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *flow_action_repr(PyObject *self)
{
	return PyUnicode_FromString(HANDLE(self)->obj ?
					    "<ibverbs.FlowAction>" :
					    "<ibverbs.FlowAction closed>");
}

PyDoc_STRVAR(flow_action__doc__,
	     "A flow action (``struct ibv_flow_action``): what a flow rule\n"
	     "does to the packets it matches (IPsec ESP offload).\n"
	     "\n"
	     "Made by ``Context.create_flow_action_esp()``; used in a rule\n"
	     "by ``flow.FlowSpecActionHandle(action)``. ``close()`` wraps\n"
	     "``ibv_destroy_flow_action`` (man page\n"
	     "ibv_create_flow_action(3)).");

static PyMethodDef flow_action_methods[] = {
	METHOD_KW("modify_esp", flow_action_modify_esp), HANDLE_METHODS_END
};

static PyGetSetDef flow_action_getset[] = {
	{ "context", handle_get_parent, NULL,
	  "The Context the flow action was created on.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(FlowAction_spec, "FlowAction", FlowActionObject, 0,
		 flow_action__doc__, handle_tp_dealloc, handle_tp_traverse,
		 flow_action_repr, flow_action_methods, flow_action_getset);
