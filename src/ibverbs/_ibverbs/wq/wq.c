/*
 * wq.c - WQ: a work queue (struct ibv_wq), the receive queue that RSS
 * spreads packets over (with an RWQIndTable, rwq_ind_table.c), made by
 * Context.create_wq(); WQ.modify(), WQ.post_recv(), close().
 *
 * ibv_create_wq, ibv_modify_wq, ibv_destroy_wq and ibv_post_wq_recv are
 * static inlines of verbs.h over verbs_context ops (called by name).  No
 * provider of this project's rigs has WQs (rxe answers EOPNOTSUPP); the
 * recording double (tests/fakes/recording) checks what is passed.
 *
 * The WQ's parent is its PD; its CQ is used (handle_use) until it is
 * destroyed.  post_recv is in wr/post.c, beside SRQ.post_recv.
 */
#include "ibverbs.h"
#include "wq/wq.h"
#include "wr/wr.h"
#include <string.h>

#define WQP(self) ((struct ibv_wq *)HANDLE(self)->obj)
#define WQO(self) ((WQObject *)(self))

static void wq_release(Handle *h)
{
	handle_unuse_clear(&((WQObject *)h)->cq);
}

HANDLE_KIND(wq_kind, "WQ", "ibv_destroy_wq", ibv_destroy_wq, wq_release);

const char context_create_wq__doc__[] = PyDoc_STR(
	"Create a work queue (a receive queue for RSS).\n"
	"\n"
	"comp_mask is IBV_WQ_INIT_ATTR_FLAGS when ``create_flags`` is\n"
	"given, else 0. The WQ uses its CQ (which refuses ``close()``\n"
	"until the WQ is closed); ``wq.max_wr``/``wq.max_sge`` say what\n"
	"the provider gave.\n"
	"\n"
	"Wraps ``ibv_create_wq`` (man page ibv_create_wq(3)). Never run\n"
	"on hardware here; checked against the recording double.\n"
	"\n"
	"Args:\n"
	"    pd: the PD of the WQ (of this Context).\n"
	"    cq: the CQ of its completions (of this Context).\n"
	"    wq_type: a WQType (RQ, the default).\n"
	"    max_wr: receive WRs outstanding at most.\n"
	"    max_sge: SGEs per receive WR at most.\n"
	"    create_flags: WQFlags, or None for no comp_mask.\n"
	"\n"
	"Returns:\n"
	"    A WQ.\n"
	"\n"
	"Raises:\n"
	"    TypeError: pd not a PD, cq not a CQ, a number not an int.\n"
	"    ValueError: a handle of another Context, a value out of\n"
	"        range.\n"
	"    VerbsError: EBADF once the Context or a handle is closed;\n"
	"        EOPNOTSUPP when the provider has no WQs (rxe); else the\n"
	"        verb failed (``errno``).");

/* create_flags given (not None) sets IBV_WQ_INIT_ATTR_FLAGS. */
#define CREATE_WQ_ARGS(X, S)                                               \
	X(S, HANDLE, PyObject *, pd, PD, ARG_SAME_CONTEXT)                 \
	X(S, HANDLE, PyObject *, cq, CQ, ARG_SAME_CONTEXT)                 \
	X(S, ENUM, int, wq_type, WQType, 0, INT32_MAX, .flags = ARG_KWOPT, \
	  .def = IBV_WQT_RQ)                                               \
	X(S, UINT, uint32_t, max_wr, .flags = ARG_KWOPT, .def = 128)       \
	X(S, UINT, uint32_t, max_sge, .flags = ARG_KWOPT, .def = 1)        \
	X(S, FLAGS, uint32_t, create_flags, WQFlags,                       \
	  .flags = ARG_KWOPT | ARG_NONE, .mask = IBV_WQ_INIT_ATTR_FLAGS)
ARGS_METHOD_MASK(extern, context_create_wq, "Context.create_wq", CREATE_WQ_ARGS,
		 self, a)
{
	struct ibv_wq_init_attr ia;
	struct ibv_wq *wq;
	WQObject *w;

	w = HANDLE_ALLOC(WQObject, ST.WQ_type);
	if (w == NULL)
		return NULL;
	/* The allocation may have run finalizers: check again. */
	if (handle_check(HANDLE(self)) < 0 || handle_check(HANDLE(a->pd)) < 0 ||
	    handle_check(HANDLE(a->cq)) < 0) {
		Py_DECREF(w);
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.max_wr = a->max_wr;
	ia.max_sge = a->max_sge;
	ia.wq_context = w;
	ia.wq_type = (enum ibv_wq_type)a->wq_type;
	ia.pd = HANDLE(a->pd)->obj;
	ia.cq = HANDLE(a->cq)->obj;
	ia.comp_mask = (uint32_t)a->mask;
	ia.create_flags = a->create_flags;
	errno = 0;
	wq = ibv_create_wq(HANDLE(self)->obj, &ia);
	if (wq == NULL) {
		int err = errno_or(EINVAL);

		Py_DECREF(w);
		return verbs_error_fmt(err, "ibv_create_wq",
				       "wq_type=%d max_wr=%u max_sge=%u "
				       "create_flags=0x%x",
				       a->wq_type, ia.max_wr, ia.max_sge,
				       a->create_flags);
	}
	handle_init(HANDLE(w), &wq_kind, HANDLE(a->pd));
	HANDLE_SET_OBJ(w, wq);
	w->wq_type = a->wq_type;
	w->max_wr = ia.max_wr;
	w->max_sge = ia.max_sge;
	Py_INCREF(a->cq);
	w->cq = a->cq;
	handle_use(HANDLE(a->cq));
	return (PyObject *)w;
}

/* ------------------------------------------------------------------ */
/* modify                                                              */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(wq_modify__doc__,
	     "Change the WQ's state and flags.\n"
	     "\n"
	     "Only the arguments given are applied: ``attr_mask`` is\n"
	     "WQAttrMask.STATE for ``wq_state``, CURR_STATE for\n"
	     "``curr_wq_state``, FLAGS for ``flags`` with ``flags_mask``.\n"
	     "\n"
	     "Wraps ``ibv_modify_wq`` (man page ibv_modify_wq(3)). Never run\n"
	     "on hardware here; checked against the recording double.\n"
	     "\n"
	     "Args:\n"
	     "    wq_state: the new WQState (RDY to receive).\n"
	     "    curr_wq_state: the state the caller believes it is in.\n"
	     "    flags: WQFlags to set or clear.\n"
	     "    flags_mask: which WQFlags ``flags`` applies to (default:\n"
	     "        those in ``flags``).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: nothing is given, or a value is not an int.\n"
	     "    ValueError: a value is out of range.\n" DOC_RAISES_VERB("WQ"));

/* mask: the attr_mask bits of the arguments given (not None), and
 * WQ_MODIFY_FLAGS_MASK for flags_mask. */
#define WQ_MODIFY_FLAGS_MASK ((uint64_t)1 << 32)
#define WQ_MODIFY_OPT(bit) .flags = ARG_OPT | ARG_NONE, .mask = (bit)
#define WQ_MODIFY_ARGS(X, S)                                  \
	X(S, ENUM, int, wq_state, WQState, 0, INT32_MAX,      \
	  WQ_MODIFY_OPT(IBV_WQ_ATTR_STATE))                   \
	X(S, ENUM, int, curr_wq_state, WQState, 0, INT32_MAX, \
	  WQ_MODIFY_OPT(IBV_WQ_ATTR_CURR_STATE))              \
	X(S, FLAGS, uint32_t, flags, WQFlags,                 \
	  WQ_MODIFY_OPT(IBV_WQ_ATTR_FLAGS))                   \
	X(S, FLAGS, uint32_t, flags_mask, WQFlags,            \
	  WQ_MODIFY_OPT(WQ_MODIFY_FLAGS_MASK))
ARGS_METHOD_MASK(static, wq_modify, "WQ.modify", WQ_MODIFY_ARGS, self, a)
{
	struct ibv_wq_attr attr;
	int rc;

	if ((a->mask & WQ_MODIFY_FLAGS_MASK) &&
	    !(a->mask & IBV_WQ_ATTR_FLAGS)) {
		PyErr_SetString(PyExc_TypeError, "flags_mask needs flags");
		return NULL;
	}
	memset(&attr, 0, sizeof(attr));
	attr.attr_mask = (uint32_t)(a->mask & ~WQ_MODIFY_FLAGS_MASK);
	attr.wq_state = (enum ibv_wq_state)a->wq_state;
	attr.curr_wq_state = (enum ibv_wq_state)a->curr_wq_state;
	attr.flags = a->flags;
	attr.flags_mask = (a->mask & WQ_MODIFY_FLAGS_MASK) ? a->flags_mask :
							     a->flags;
	if (attr.attr_mask == 0) {
		PyErr_SetString(PyExc_TypeError,
				"modify() needs wq_state, curr_wq_state "
				"and/or flags");
		return NULL;
	}
	rc = ibv_modify_wq(WQP(self), &attr);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_modify_wq",
				       "WQ %u (attr_mask 0x%x)",
				       WQP(self)->wq_num, attr.attr_mask);
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* The type                                                            */
/* ------------------------------------------------------------------ */

static PyObject *wq_get_wq_num(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(WQP(self)->wq_num);
}

static PyObject *wq_get_state(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return enum_from_int("WQState", WQP(self)->state);
}

static PyObject *wq_get_wq_type(PyObject *self, void *closure)
{
	return enum_from_int("WQType", WQO(self)->wq_type);
}

static PyObject *wq_get_cq(PyObject *self, void *closure)
{
	return obj_or_none(WQO(self)->cq);
}

static PyObject *wq_get_max_wr(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLong(WQO(self)->max_wr);
}

static PyObject *wq_get_max_sge(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLong(WQO(self)->max_sge);
}

static int wq_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(WQO(self)->cq);
	return handle_traverse(HANDLE(self), visit, arg);
}

static void wq_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	Py_CLEAR(WQO(self)->cq); /* still used only if the destroy failed */
	handle_dealloc(HANDLE(self));
}

static PyObject *wq_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.WQ closed>");
	return PyUnicode_FromFormat("<ibverbs.WQ wq_num=%u>",
				    WQP(self)->wq_num);
}

PyDoc_STRVAR(wq__doc__,
	     "A work queue (``struct ibv_wq``): a receive queue that an\n"
	     "RSS QP spreads packets over through an RWQIndTable.\n"
	     "\n"
	     "Made by ``Context.create_wq()``; ``modify(wq_state=RDY)``\n"
	     "makes it receive. It uses its CQ; an RWQIndTable holding it\n"
	     "makes it refuse ``close()``. ``close()`` wraps\n"
	     "``ibv_destroy_wq`` (man page ibv_create_wq(3)). Never run on\n"
	     "hardware here; checked against the recording double.");

static PyMethodDef wq_methods[] = { METHOD_KW("modify", wq_modify),
				    METHOD_O("post_recv", wq_post_recv),
				    HANDLE_METHODS_END };

static PyGetSetDef wq_getset[] = {
	{ "pd", handle_get_parent, NULL, "The PD the WQ was created in.",
	  NULL },
	{ "cq", wq_get_cq, NULL, "The CQ of its completions (used).", NULL },
	{ "wq_num", wq_get_wq_num, NULL, "The WQ's number; EBADF once closed.",
	  NULL },
	{ "wq_type", wq_get_wq_type, NULL, "The WQType it was created with.",
	  NULL },
	{ "state", wq_get_state, NULL,
	  "The WQState libibverbs last saw (``ibv_wq.state``).", NULL },
	{ "max_wr", wq_get_max_wr, NULL, "The WRs the provider granted.",
	  NULL },
	{ "max_sge", wq_get_max_sge, NULL, "The SGEs the provider granted.",
	  NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(WQ_spec, "WQ", WQObject, 0, wq__doc__, wq_dealloc, wq_traverse,
		 wq_repr, wq_methods, wq_getset);
