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

static int wq_destroy(Handle *h)
{
	return ibv_destroy_wq((struct ibv_wq *)h->obj);
}

static void wq_release(Handle *h)
{
	handle_unuse_clear(&((WQObject *)h)->cq);
}

static const HandleKind wq_kind = { "WQ", "ibv_destroy_wq", wq_destroy,
				    wq_release };

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

/* pd and cq: open handles of this Context (cq also a CQ subclass). */
static int wq_handles(PyObject *self, PyObject *pd, PyObject *cq)
{
	if (!PyObject_TypeCheck(pd, ST.PD_type) ||
	    !PyObject_TypeCheck(cq, ST.CQ_type)) {
		PyErr_Format(PyExc_TypeError,
			     "create_wq takes a PD and a CQ, not %R and %R",
			     (PyObject *)Py_TYPE(pd), (PyObject *)Py_TYPE(cq));
		return -1;
	}
	if (handle_check(HANDLE(pd)) < 0 || handle_check(HANDLE(cq)) < 0)
		return -1;
	if (HANDLE(pd)->parent != HANDLE(self) ||
	    HANDLE(cq)->parent != HANDLE(self)) {
		PyErr_SetString(PyExc_ValueError,
				"pd and cq must belong to this Context");
		return -1;
	}
	return 0;
}

PyObject *context_create_wq(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "pd",	    "cq",      "wq_type",
				  "max_wr", "max_sge", "create_flags",
				  NULL };
	PyObject *pd, *cq, *t_o = NULL, *wr_o = NULL, *sge_o = NULL;
	PyObject *fl_o = Py_None;
	struct ibv_wq_init_attr ia;
	long type = IBV_WQT_RQ;
	uint32_t flags = 0;
	struct ibv_wq *wq;
	WQObject *w;

	HANDLE_CHECK(self);
	memset(&ia, 0, sizeof(ia));
	ia.max_wr = 128;
	ia.max_sge = 1;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$OOOO:create_wq", kwlist,
					 &pd, &cq, &t_o, &wr_o, &sge_o, &fl_o))
		return NULL;
	if ((t_o && arg_int(t_o, "wq_type", 0, INT32_MAX, &type) < 0) ||
	    (wr_o && arg_u32(wr_o, "max_wr", &ia.max_wr) < 0) ||
	    (sge_o && arg_u32(sge_o, "max_sge", &ia.max_sge) < 0) ||
	    (fl_o != Py_None && arg_u32(fl_o, "create_flags", &flags) < 0) ||
	    wq_handles(self, pd, cq) < 0)
		return NULL;
	w = HANDLE_ALLOC(WQObject, ST.WQ_type);
	if (w == NULL)
		return NULL;
	if (handle_check(HANDLE(self)) < 0 || wq_handles(self, pd, cq) < 0) {
		Py_DECREF(w);
		return NULL;
	}
	ia.wq_context = w;
	ia.wq_type = (enum ibv_wq_type)type;
	ia.pd = HANDLE(pd)->obj;
	ia.cq = HANDLE(cq)->obj;
	if (fl_o != Py_None) {
		ia.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
		ia.create_flags = flags;
	}
	errno = 0;
	wq = ibv_create_wq(HANDLE(self)->obj, &ia);
	if (wq == NULL) {
		int err = errno ? errno : EINVAL;

		Py_DECREF(w);
		return verbs_error_fmt(err, "ibv_create_wq",
				       "wq_type=%ld max_wr=%u max_sge=%u "
				       "create_flags=0x%x",
				       type, ia.max_wr, ia.max_sge, flags);
	}
	handle_init(HANDLE(w), &wq_kind, HANDLE(pd));
	HANDLE_SET_OBJ(w, wq);
	w->wq_type = (int)type;
	w->max_wr = ia.max_wr;
	w->max_sge = ia.max_sge;
	Py_INCREF(cq);
	w->cq = cq;
	handle_use(HANDLE(cq));
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
	     "    ValueError: a value is out of range.\n"
	     "    VerbsError: EBADF once the WQ is closed; else the verb\n"
	     "        failed (``errno``).");

static PyObject *wq_modify(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "wq_state", "curr_wq_state", "flags",
				  "flags_mask", NULL };
	PyObject *st_o = Py_None, *cur_o = Py_None, *fl_o = Py_None;
	PyObject *fm_o = Py_None;
	struct ibv_wq_attr attr;
	long st, cur;
	int rc;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOO:modify", kwlist,
					 &st_o, &cur_o, &fl_o, &fm_o))
		return NULL;
	memset(&attr, 0, sizeof(attr));
	if (st_o != Py_None) {
		if (arg_int(st_o, "wq_state", 0, INT32_MAX, &st) < 0)
			return NULL;
		attr.wq_state = (enum ibv_wq_state)st;
		attr.attr_mask |= IBV_WQ_ATTR_STATE;
	}
	if (cur_o != Py_None) {
		if (arg_int(cur_o, "curr_wq_state", 0, INT32_MAX, &cur) < 0)
			return NULL;
		attr.curr_wq_state = (enum ibv_wq_state)cur;
		attr.attr_mask |= IBV_WQ_ATTR_CURR_STATE;
	}
	if (fl_o != Py_None) {
		if (arg_u32(fl_o, "flags", &attr.flags) < 0)
			return NULL;
		attr.flags_mask = attr.flags;
		attr.attr_mask |= IBV_WQ_ATTR_FLAGS;
	}
	if (fm_o != Py_None) {
		if (fl_o == Py_None) {
			PyErr_SetString(PyExc_TypeError,
					"flags_mask needs flags");
			return NULL;
		}
		if (arg_u32(fm_o, "flags_mask", &attr.flags_mask) < 0)
			return NULL;
	}
	if (attr.attr_mask == 0) {
		PyErr_SetString(PyExc_TypeError,
				"modify() needs wq_state, curr_wq_state "
				"and/or flags");
		return NULL;
	}
	if (handle_check(HANDLE(self)) < 0)
		return NULL;
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
				    { "post_recv", wq_post_recv, METH_O,
				      wq_post_recv__doc__ },
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
