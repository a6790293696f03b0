/*
 * wc_ex.c - WCEx: the WC that CQEx.poll() builds (cq_ex.c), with the
 * extended fields its CQEx asked for in wc_flags; each reads None when
 * not asked for.  Layout-compatible with wc.c's WCObject, so every WC
 * getter works on it.
 */
#include "ibverbs.h"
#include "cq/cq.h"

#define WX(self) (&((WCExObject *)(self))->x)

static PyObject *wcex_opt(PyObject *self, int bit, uint64_t v)
{
	if (!(WX(self)->have & bit))
		Py_RETURN_NONE;
	return PyLong_FromUnsignedLongLong(v);
}

static PyObject *wcex_get_ts(PyObject *self, void *closure)
{
	return wcex_opt(self, HAVE_TS, WX(self)->completion_ts);
}

static PyObject *wcex_get_wallclock(PyObject *self, void *closure)
{
	return wcex_opt(self, HAVE_WALLCLOCK,
			WX(self)->completion_wallclock_ns);
}

static PyObject *wcex_get_cvlan(PyObject *self, void *closure)
{
	return wcex_opt(self, HAVE_CVLAN, WX(self)->cvlan);
}

static PyObject *wcex_get_flow_tag(PyObject *self, void *closure)
{
	return wcex_opt(self, HAVE_FLOW_TAG, WX(self)->flow_tag);
}

static PyObject *wcex_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyErr_SetString(
		PyExc_TypeError,
		"WCEx objects come from CQEx.poll(); build a WC instead");
	return NULL;
}

static void wcex_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);

	PyObject_Free(self);
	Py_DECREF(tp);
}

static PyGetSetDef wcex_getset[] = {
	{ "completion_ts", wcex_get_ts, NULL,
	  "Completion time stamp in device clock ticks; None unless\n"
	  "``CreateCQWCFlags.COMPLETION_TIMESTAMP`` was asked for.",
	  NULL },
	{ "completion_wallclock_ns", wcex_get_wallclock, NULL,
	  "Completion time stamp in wall clock ns; None unless\n"
	  "``COMPLETION_TIMESTAMP_WALLCLOCK`` was asked for.",
	  NULL },
	{ "cvlan", wcex_get_cvlan, NULL,
	  "The customer VLAN tag; None unless ``CVLAN`` was asked for.", NULL },
	{ "flow_tag", wcex_get_flow_tag, NULL,
	  "The flow tag of the steering rule that matched; None unless\n"
	  "``FLOW_TAG`` was asked for.",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

PyDoc_STRVAR(wcex__doc__,
	     "A work completion from ``CQEx.poll()``, with extended fields.\n"
	     "\n"
	     "A WC plus the fields an extended CQ reports; each reads None\n"
	     "unless its CQEx asked for it in ``wc_flags``. ``WCEx()``\n"
	     "raises TypeError: only a CQEx makes them.");

/* clang-format off */
static PyType_Slot wcex_slots[] = {
	{ Py_tp_doc, (void *)wcex__doc__ },
	{ Py_tp_new, wcex_tp_new },
	{ Py_tp_dealloc, wcex_dealloc },
	{ Py_tp_getset, wcex_getset },
	{ 0, NULL }
};
/* clang-format on */

PyType_Spec WCEx_spec = { "ibverbs._ibverbs.WCEx", sizeof(WCExObject), 0,
			  Py_TPFLAGS_DEFAULT, wcex_slots };
