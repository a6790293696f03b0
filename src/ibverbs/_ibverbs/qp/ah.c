/*
 * ah.c - AH: an address handle (ibv_ah), the destination of a UD send.
 * A SendWR that names an AH holds a reference to it (wr.c).
 */
#include "ibverbs.h"

static int ah_destroy(Handle *h)
{
	return IBV.destroy_ah((struct ibv_ah *)h->obj);
}

static const HandleKind ah_kind = { "AH", "ibv_destroy_ah", ah_destroy, NULL };

/* PD.create_ah(attr): attr is an AHAttr or any object with its fields. */
PyObject *ah_create(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "attr", NULL };
	struct ibv_ah_attr attr;
	struct ibv_ah *ah;
	PyObject *attr_o;
	AHObject *self;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:create_ah", kwlist,
					 &attr_o))
		return NULL;
	if (ah_attr_from_py(attr_o, &attr) < 0)
		return NULL;
	/* That ran Python code (Gid(), attribute reads), which may have
	 * closed the PD: check again right before the verb. */
	if (handle_check(HANDLE(pd)) < 0)
		return NULL;
	errno = 0;
	ah = IBV.create_ah((struct ibv_pd *)HANDLE(pd)->obj, &attr);
	if (ah == NULL)
		return verbs_error_errno("ibv_create_ah");
	self = HANDLE_ALLOC(AHObject, ST.AH_type);
	if (self == NULL) {
		IBV.destroy_ah(ah);
		return NULL;
	}
	handle_init(HANDLE(self), &ah_kind, HANDLE(pd));
	HANDLE(self)->obj = ah;
	return (PyObject *)self;
}

static PyObject *ah_get_handle(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(
		((struct ibv_ah *)HANDLE(self)->obj)->handle);
}

static PyObject *ah_repr(PyObject *self)
{
	struct ibv_ah *ah = HANDLE(self)->obj;

	if (ah == NULL)
		return PyUnicode_FromString("<ibverbs.AH closed>");
	return PyUnicode_FromFormat("<ibverbs.AH handle=%u>", ah->handle);
}

static PyMethodDef ah_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef ah_getset[] = {
	{ "pd", handle_get_parent, NULL, "The PD the AH was created in.",
	  NULL },
	{ "handle", ah_get_handle, NULL,
	  "The AH's kernel handle (``ibv_ah.handle``); EBADF once closed.",
	  NULL },
	HANDLE_GETSETS_END
};

PyDoc_STRVAR(ah__doc__,
	     "An address handle (``struct ibv_ah``): a UD destination.\n"
	     "\n"
	     "Made by ``PD.create_ah(AHAttr(...))``; a ``SendWR(ah=...)``\n"
	     "or ``QPEx.wr_set_ud_addr()`` names it. ``close()`` wraps\n"
	     "``ibv_destroy_ah`` (man page ibv_create_ah(3)).");

HANDLE_TYPE_SPEC(AH_spec, "AH", AHObject, 0, ah__doc__, handle_tp_dealloc,
		 handle_tp_traverse, ah_repr, ah_methods, ah_getset);
