/*
 * pd.c - PD: a protection domain, and the factories of its children
 * (MR, QP, SRQ, AH), which live in their own files.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include "qp/qp.h"

static int pd_destroy(Handle *h)
{
	return IBV.dealloc_pd((struct ibv_pd *)h->obj);
}

const HandleKind pd_kind = { "PD", "ibv_dealloc_pd", pd_destroy, NULL };

#define PDP(self) ((struct ibv_pd *)HANDLE(self)->obj)

/* The PD's factory methods live in the files of the types they make
 * (METHOD_DECL in their family headers); its table names them. */

static PyObject *pd_get_imported(PyObject *self, void *closure)
{
	return PyBool_FromLong(handle_is_imported(HANDLE(self)));
}

static PyObject *pd_get_handle(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(PDP(self)->handle);
}

static PyObject *pd_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.PD closed>");
	return PyUnicode_FromFormat("<ibverbs.PD handle=%u>",
				    PDP(self)->handle);
}

PyDoc_STRVAR(pd__doc__,
	     "A protection domain (``struct ibv_pd``).\n"
	     "\n"
	     "Made by ``Context.alloc_pd()``; the parent of the MRs, QPs,\n"
	     "SRQs, AHs and MWs made by its factory methods. ``close()``\n"
	     "wraps ``ibv_dealloc_pd`` (man page ibv_alloc_pd(3)).");

static PyMethodDef pd_methods[] = {
	METHOD_KW("reg_mr", pd_reg_mr),
	METHOD_KW("reg_mr_iova", pd_reg_mr_iova),
	METHOD_KW("reg_dmabuf_mr", pd_reg_dmabuf_mr),
	METHOD_KW("create_qp", pd_create_qp),
	METHOD_KW("create_srq", pd_create_srq),
	METHOD_KW("create_ah", pd_create_ah),
	METHOD_KW("create_ah_from_wc", pd_create_ah_from_wc),
	METHOD_KW("reg_dm_mr", pd_reg_dm_mr),
	METHOD_KW("reg_implicit_odp_mr", pd_reg_implicit_odp_mr),
	METHOD_KW("advise_mr", pd_advise_mr),
	METHOD_KW("alloc_mw", pd_alloc_mw),
	METHOD_KW("create_qp_ex", pd_create_qp_ex),
	METHOD_KW("reg_mr_ex", pd_reg_mr_ex),
	METHOD_KW("alloc_buf", pd_alloc_buf),
	METHOD_KW("reg_buf_mr", pd_reg_buf_mr),
	METHOD_NOARGS("alloc_null_mr", pd_alloc_null_mr),
	METHOD_KW("import_mr", pd_import_mr),
	HANDLE_METHODS_END
};

static PyGetSetDef pd_getset[] = {
	{ "handle", pd_get_handle, NULL,
	  "The PD's kernel handle (``ibv_pd.handle``).", NULL },
	{ "context", handle_get_parent, NULL, "The Context this PD belongs to.",
	  NULL },
	{ "imported", pd_get_imported, NULL,
	  "True for a PD of ``Context.import_pd()``: ``close()`` then\n"
	  "wraps ``ibv_unimport_pd`` (the exporting process owns it).",
	  NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(PD_spec, "PD", PDObject, Py_TPFLAGS_BASETYPE, pd__doc__,
		 handle_tp_dealloc, handle_tp_traverse, pd_repr, pd_methods,
		 pd_getset);
