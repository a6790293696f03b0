/*
 * wc_ex.c - WCEx: the WC that CQEx.poll() builds (cq_ex.c), with the
 * extended fields its CQEx asked for in wc_flags; each reads None when
 * not asked for.  Layout-compatible with wc.c's WCObject, so every WC
 * getter works on it.
 */
#include "ibverbs.h"
#include "cq/cq.h"

#define WX(self) (&((WCExObject *)(self))->x)

/* The WCEx attribute of each of CQEX_EXT_FIELDS (cq.h): its value, or
 * None unless its CQEx asked for it (need).  Defines wcex_get_<field>,
 * and below its PyGetSetDef entry; the fields of struct ibv_wc are WC's
 * getters. */
static PyObject *wcex_opt(PyObject *self, int need, uint64_t v)
{
	if (!(WX(self)->have & need))
		Py_RETURN_NONE;
	return PyLong_FromUnsignedLongLong(v);
}

#define WCEX_GETTER(field, reader, need, needs, when, slot, conv, doc)   \
	static PyObject *wcex_get_##field(PyObject *self, void *closure) \
	{                                                                \
		return wcex_opt(self, need, WX(self)->field);            \
	}
CQEX_EXT_FIELDS(WCEX_GETTER)
#undef WCEX_GETTER

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

#define NEEDS(flag) "None unless ``CreateCQWCFlags." flag "`` was asked for."
#define WCEX_GETSET(field, reader, need, needs, when, slot, conv, doc) \
	{ #field, wcex_get_##field, NULL, doc "\n" needs, NULL },
/* clang-format off */
static PyGetSetDef wcex_getset[] = {
	CQEX_EXT_FIELDS(WCEX_GETSET)
	{ NULL, NULL, NULL, NULL, NULL }
};
/* clang-format on */
#undef WCEX_GETSET
#undef NEEDS

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
