/*
 * srq.c - SRQ: a shared receive queue (ibv_srq).  QPs created with it
 * handle_use() it, so it cannot be closed under them.
 *
 * srq_context is the Python object (borrowed), so that an ibv_srq seen
 * in an async event leads back to it (event.c finds elements in the
 * handle tree instead, which is also safe).  The verbs object never
 * outlives the Python object: close() and dealloc destroy it.
 * post_recv() is in post.c, beside QP.post_recv().
 */
#include "ibverbs.h"
#include "wr/wr.h"

static int srq_destroy(Handle *h)
{
	return IBV.destroy_srq((struct ibv_srq *)h->obj);
}

static const HandleKind srq_kind = { "SRQ", "ibv_destroy_srq", srq_destroy,
				     NULL };

/* PD.create_srq(max_wr=128, max_sge=1, srq_limit=0) */
PyObject *srq_create(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "max_wr", "max_sge", "srq_limit", NULL };
	PyObject *wr_o = NULL, *sge_o = NULL, *limit_o = NULL;
	struct ibv_srq_init_attr init = { 0 };
	struct ibv_srq *srq;
	SRQObject *self;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOO:create_srq", kwlist,
					 &wr_o, &sge_o, &limit_o))
		return NULL;
	init.attr.max_wr = 128;
	init.attr.max_sge = 1;
	if ((wr_o && arg_u32(wr_o, "max_wr", &init.attr.max_wr) < 0) ||
	    (sge_o && arg_u32(sge_o, "max_sge", &init.attr.max_sge) < 0) ||
	    (limit_o &&
	     arg_u32(limit_o, "srq_limit", &init.attr.srq_limit) < 0))
		return NULL;
	/* Allocate first: srq_context must be the Python object.  Until
	 * handle_init() the object is not linked anywhere, so a failed
	 * create just frees it. */
	self = HANDLE_ALLOC(SRQObject, ST.SRQ_type);
	if (self == NULL)
		return NULL;
	/* A GC pass in the allocation may have run finalizers (Python
	 * code) that closed the PD: check again. */
	if (handle_check(HANDLE(pd)) < 0) {
		Py_DECREF(self);
		return NULL;
	}
	init.srq_context = self;
	errno = 0;
	srq = IBV.create_srq((struct ibv_pd *)HANDLE(pd)->obj, &init);
	if (srq == NULL) {
		int err = errno ? errno : EINVAL;

		Py_DECREF(self);
		return verbs_error_fmt(err, "ibv_create_srq",
				       "max_wr=%u max_sge=%u srq_limit=%u",
				       init.attr.max_wr, init.attr.max_sge,
				       init.attr.srq_limit);
	}
	handle_init(HANDLE(self), &srq_kind, HANDLE(pd));
	HANDLE(self)->obj = srq;
	return (PyObject *)self;
}

/* ------------------------------------------------------------------ */
/* Control                                                             */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(srq_modify__doc__,
	     "Resize the SRQ or arm its limit event.\n"
	     "\n"
	     "Only the arguments given are applied (the mask is theirs).\n"
	     "A non-zero ``srq_limit`` arms the SRQ_LIMIT_REACHED async\n"
	     "event, sent once when fewer WRs than that are left.\n"
	     "\n"
	     "Wraps ``ibv_modify_srq`` (man page ibv_modify_srq(3)).\n"
	     "\n"
	     "Args:\n"
	     "    max_wr: the new number of WRs (providers may refuse).\n"
	     "    srq_limit: the limit, ``0..2**32-1``.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: neither is given, or a value is not an int.\n"
	     "    ValueError: a value is out of range.\n"
	     "    VerbsError: EBADF once the SRQ is closed; else the verb\n"
	     "        failed (``errno``, e.g. EINVAL or EOPNOTSUPP for a\n"
	     "        resize).");

/* modify(max_wr=None, srq_limit=None): the mask is what was given. */
static PyObject *srq_modify(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "max_wr", "srq_limit", NULL };
	PyObject *wr_o = Py_None, *limit_o = Py_None;
	struct ibv_srq_attr attr = { 0 };
	int mask = 0, rc;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:modify", kwlist, &wr_o,
					 &limit_o))
		return NULL;
	if (wr_o != Py_None) {
		if (arg_u32(wr_o, "max_wr", &attr.max_wr) < 0)
			return NULL;
		mask |= IBV_SRQ_MAX_WR;
	}
	if (limit_o != Py_None) {
		if (arg_u32(limit_o, "srq_limit", &attr.srq_limit) < 0)
			return NULL;
		mask |= IBV_SRQ_LIMIT;
	}
	if (mask == 0) {
		PyErr_SetString(PyExc_TypeError,
				"modify() needs max_wr and/or srq_limit");
		return NULL;
	}
	rc = IBV.modify_srq(SRQP(self), &attr, mask);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_modify_srq",
				       "max_wr=%u srq_limit=%u (mask 0x%x)",
				       attr.max_wr, attr.srq_limit, mask);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(srq_query__doc__,
	     "Query the SRQ's current attributes.\n"
	     "\n"
	     "Wraps ``ibv_query_srq`` (man page ibv_query_srq(3)).\n"
	     "\n"
	     "Returns:\n"
	     "    ``{\"max_wr\": ..., \"max_sge\": ..., \"srq_limit\": ...}``.\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EBADF once the SRQ is closed; else the verb\n"
	     "        failed (``errno``).");

static PyObject *srq_query(PyObject *self, PyObject *unused)
{
	struct ibv_srq_attr attr = { 0 };
	PyObject *d;
	int rc;

	HANDLE_CHECK(self);
	rc = IBV.query_srq(SRQP(self), &attr);
	if (rc != 0)
		return verbs_error(rc, "ibv_query_srq");
	d = PyDict_New();
	if (d == NULL)
		return NULL;
	if (dict_set_u64(d, "max_wr", attr.max_wr) < 0 ||
	    dict_set_u64(d, "max_sge", attr.max_sge) < 0 ||
	    dict_set_u64(d, "srq_limit", attr.srq_limit) < 0) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *srq_get_handle(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(SRQP(self)->handle);
}

static PyObject *srq_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.SRQ closed>");
	return PyUnicode_FromFormat("<ibverbs.SRQ handle=%u>",
				    SRQP(self)->handle);
}

PyDoc_STRVAR(srq__doc__,
	     "A shared receive queue (``struct ibv_srq``).\n"
	     "\n"
	     "Made by ``PD.create_srq()``; QPs created with it\n"
	     "(``QPInitAttr(srq=...)``) take their receives from it, and\n"
	     "it refuses ``close()`` until they are closed. ``close()``\n"
	     "wraps ``ibv_destroy_srq`` (man page ibv_create_srq(3)).");

static PyMethodDef srq_methods[] = {
	{ "post_recv", srq_post_recv, METH_O, srq_post_recv__doc__ },
	{ "modify", KW srq_modify, METH_VARARGS | METH_KEYWORDS,
	  srq_modify__doc__ },
	{ "query", srq_query, METH_NOARGS, srq_query__doc__ },
	HANDLE_METHODS_END
};

static PyGetSetDef srq_getset[] = {
	{ "pd", handle_get_parent, NULL, "The PD the SRQ was created in.",
	  NULL },
	{ "handle", srq_get_handle, NULL,
	  "The SRQ's kernel handle (``ibv_srq.handle``); EBADF once\n"
	  "closed.",
	  NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(SRQ_spec, "SRQ", SRQObject, 0, srq__doc__, handle_tp_dealloc,
		 handle_tp_traverse, srq_repr, srq_methods, srq_getset);
