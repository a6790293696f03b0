/*
 * pd.c - PD: a protection domain, and the factories of its children
 * (MR, QP, SRQ, AH), which live in their own files.
 */
#include "ibverbs.h"

static int pd_destroy(Handle *h)
{
	return IBV.dealloc_pd((struct ibv_pd *)h->obj);
}

const HandleKind pd_kind = { "PD", "ibv_dealloc_pd", pd_destroy, NULL };

#define PDP(self) ((struct ibv_pd *)HANDLE(self)->obj)

static int pd_traverse(PyObject *self, visitproc visit, void *arg)
{
	return handle_traverse(HANDLE(self), visit, arg);
}

static void pd_dealloc(PyObject *self)
{
	handle_dealloc(HANDLE(self));
}

#define PD_FACTORY(meth, fn)                                                \
	static PyObject *meth(PyObject *self, PyObject *args, PyObject *kw) \
	{                                                                   \
		HANDLE_CHECK(self);                                         \
		return fn((PDObject *)self, args, kw);                      \
	}
PD_FACTORY(pd_reg_mr, mr_create)
PD_FACTORY(pd_reg_dmabuf_mr, mr_create_dmabuf)
PD_FACTORY(pd_create_qp, qp_create)
PD_FACTORY(pd_create_srq, srq_create)
PD_FACTORY(pd_create_ah, ah_create)
PD_FACTORY(pd_reg_dm_mr, dm_reg_mr)
PD_FACTORY(pd_reg_implicit_odp_mr, odp_reg_implicit)
PD_FACTORY(pd_advise_mr, odp_advise_mr)
PD_FACTORY(pd_alloc_mw, mw_create)
PD_FACTORY(pd_create_qp_ex, qpex_create)
#undef PD_FACTORY

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

static PyMethodDef pd_methods[] = {
	{ "reg_mr", KW pd_reg_mr, METH_VARARGS | METH_KEYWORDS,
	  "reg_mr(addr, length, access=0, *, owner=None) -> MR (ibv_reg_mr)" },
	{ "reg_dmabuf_mr", KW pd_reg_dmabuf_mr, METH_VARARGS | METH_KEYWORDS,
	  "reg_dmabuf_mr(offset, length, iova, fd, access=0, *, owner=None) -> MR" },
	{ "create_qp", KW pd_create_qp, METH_VARARGS | METH_KEYWORDS,
	  "create_qp(init_attr) -> QP (ibv_create_qp)" },
	{ "create_srq", KW pd_create_srq, METH_VARARGS | METH_KEYWORDS,
	  "create_srq(max_wr=.., max_sge=1, srq_limit=0) -> SRQ" },
	{ "create_ah", KW pd_create_ah, METH_VARARGS | METH_KEYWORDS,
	  "create_ah(attr) -> AH (ibv_create_ah)" },
	{ "reg_dm_mr", KW pd_reg_dm_mr, METH_VARARGS | METH_KEYWORDS,
	  "reg_dm_mr(dm, offset, length, access) -> MR (ibv_reg_dm_mr)" },
	{ "reg_implicit_odp_mr", KW pd_reg_implicit_odp_mr,
	  METH_VARARGS | METH_KEYWORDS,
	  "reg_implicit_odp_mr(access=0) -> MR over the whole address space "
	  "(ibv_reg_mr(NULL, SIZE_MAX, access | ON_DEMAND))" },
	{ "advise_mr", KW pd_advise_mr, METH_VARARGS | METH_KEYWORDS,
	  "advise_mr(advice, flags, sg_list) (ibv_advise_mr)" },
	{ "alloc_mw", KW pd_alloc_mw, METH_VARARGS | METH_KEYWORDS,
	  "alloc_mw(type=MWType.TYPE_2) -> MW (ibv_alloc_mw)" },
	{ "create_qp_ex", KW pd_create_qp_ex, METH_VARARGS | METH_KEYWORDS,
	  "create_qp_ex(init_attr) -> QPEx (ibv_create_qp_ex with "
	  "init_attr.send_ops_flags)" },
	HANDLE_METHODS,
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef pd_getset[] = {
	{ "handle", pd_get_handle, NULL, "kernel handle of the PD", NULL },
	{ "context", handle_get_parent, NULL, "the Context", NULL },
	HANDLE_GETSETS,
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot pd_slots[] = {
	{ Py_tp_doc, "A protection domain (ibv_pd); from Context.alloc_pd()." },
	{ Py_tp_new, handle_no_new },
	{ Py_tp_dealloc, pd_dealloc },
	{ Py_tp_traverse, pd_traverse },
	{ Py_tp_repr, pd_repr },
	{ Py_tp_methods, pd_methods },
	{ Py_tp_getset, pd_getset },
	{ 0, NULL }
};

PyType_Spec PD_spec = { "ibverbs._ibverbs.PD", sizeof(PDObject), 0,
			Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, pd_slots };
