/*
 * odp.c - on-demand paging: PD.reg_implicit_odp_mr() and PD.advise_mr().
 *
 * An ODP registration is PD.reg_mr(..., access | AccessFlags.ON_DEMAND);
 * an implicit one covers the whole address space: ibv_reg_mr(pd, NULL,
 * SIZE_MAX, access | IBV_ACCESS_ON_DEMAND), as the verbs man page says.
 * ibv_advise_mr is static inline in verbs.h (a provider op behind
 * verbs_get_ctx_op; EOPNOTSUPP without one).
 */
#include "ibverbs.h"
#include "wr/wr.h"
#include <limits.h>
#include <string.h>

static int odp_mr_destroy(Handle *h)
{
	return IBV.dereg_mr((struct ibv_mr *)h->obj);
}

static const HandleKind odp_mr_kind = { "MR", "ibv_dereg_mr", odp_mr_destroy,
					NULL };

METHOD_DOC(pd_reg_implicit_odp_mr,
	   "Register the whole address space as an implicit ODP MR.\n"
	   "\n"
	   "Calls ``ibv_reg_mr(pd, NULL, SIZE_MAX, access | ON_DEMAND)``:\n"
	   "pages are mapped on demand as work requests touch them.\n"
	   "The MR's ``addr`` is 0 and its ``length`` SIZE_MAX.\n"
	   "\n"
	   "Wraps ``ibv_reg_mr`` (man page ibv_reg_mr(3)).\n"
	   "\n"
	   "Args:\n"
	   "    access: ``AccessFlags``; ON_DEMAND is added.\n"
	   "\n"
	   "Returns:\n"
	   "    The new MR.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: access is not an int.\n"
	   "    ValueError: access is out of range.\n"
	   "    VerbsError: EBADF once the PD is closed; else the verb\n"
	   "        failed (``errno``, e.g. EINVAL or EOPNOTSUPP where the\n"
	   "        device has no implicit ODP).");

PyObject *pd_reg_implicit_odp_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	PDObject *pd = (PDObject *)self;
	static char *kwlist[] = { "access", NULL };
	PyObject *acc_o = NULL;
	struct ibv_mr *mr;
	long access = 0;
	MRObject *o;
	int err;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:reg_implicit_odp_mr",
					 kwlist, &acc_o))
		return NULL;
	if (acc_o != NULL && arg_int(acc_o, "access", 0, INT_MAX, &access) < 0)
		return NULL;
	access |= IBV_ACCESS_ON_DEMAND;
	o = HANDLE_ALLOC(MRObject, ST.MR_type);
	if (o == NULL || handle_check(HANDLE(pd)) < 0) {
		Py_XDECREF(o);
		return NULL;
	}
	errno = 0;
	mr = IBV.reg_mr((struct ibv_pd *)HANDLE(pd)->obj, NULL, SIZE_MAX,
			(int)access);
	err = errno ? errno : EINVAL;
	if (mr == NULL) {
		Py_DECREF(o);
		return verbs_error_fmt(err, "ibv_reg_mr",
				       "implicit ODP (addr=0 length=SIZE_MAX "
				       "access=0x%x)",
				       (unsigned int)access);
	}
	handle_init(HANDLE(o), &odp_mr_kind, HANDLE(pd));
	HANDLE_SET_OBJ(o, mr);
	o->addr = 0;
	o->length = SIZE_MAX;
	o->access = (int)access;
	return (PyObject *)o;
}

/* PD.advise_mr(advice, flags, sg_list) */
METHOD_DOC(pd_advise_mr,
	   "Give the provider advice about ODP memory (prefetch it).\n"
	   "\n"
	   "Wraps ``ibv_advise_mr`` (man page ibv_advise_mr(3)).\n"
	   "\n"
	   "Args:\n"
	   "    advice: ``AdviseMRAdvice`` (PREFETCH, PREFETCH_WRITE,\n"
	   "        PREFETCH_NO_FAULT).\n"
	   "    flags: ``AdviseMRFlags`` (FLUSH waits for the prefetch).\n"
	   "    sg_list: a list or tuple of SGEs over MRs of this PD.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: sg_list is not a list or tuple of SGEs.\n"
	   "    ValueError: sg_list is empty or an SGE's MR belongs to\n"
	   "        another PD.\n"
	   "    VerbsError: EBADF if the PD or an SGE's MR is closed;\n"
	   "        EOPNOTSUPP when the provider has no such op; else the\n"
	   "        verb failed (``errno``).");

PyObject *pd_advise_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	PDObject *pd = (PDObject *)self;
	static char *kwlist[] = { "advice", "flags", "sg_list", NULL };
	PyObject *adv_o, *flags_o, *list, *seq = NULL, *res = NULL;
	struct ibv_sge *sges = NULL;
	Py_ssize_t n, i;
	long advice;
	uint32_t flags;
	int rc;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:advise_mr", kwlist,
					 &adv_o, &flags_o, &list))
		return NULL;
	if (arg_int(adv_o, "advice", 0, INT32_MAX, &advice) < 0 ||
	    arg_u32(flags_o, "flags", &flags) < 0)
		return NULL;
	if (!PyList_Check(list) && !PyTuple_Check(list)) {
		PyErr_Format(PyExc_TypeError,
			     "sg_list must be a list of SGEs, not %R",
			     (PyObject *)Py_TYPE(list));
		return NULL;
	}
	/* A tuple copy: the list cannot change under us. */
	seq = PySequence_Tuple(list);
	if (seq == NULL)
		return NULL;
	n = PyTuple_Size(seq);
	if (n < 1 || n > UINT32_MAX) {
		PyErr_SetString(PyExc_ValueError,
				"sg_list must hold at least one SGE");
		goto out;
	}
	sges = PyMem_Calloc((size_t)n, sizeof(*sges));
	if (sges == NULL) {
		PyErr_NoMemory();
		goto out;
	}
	for (i = 0; i < n; i++) {
		PyObject *s = PyTuple_GetItem(seq, i);
		PyObject *mr;

		if (!PyObject_TypeCheck(s, ST.SGE_type)) {
			PyErr_Format(PyExc_TypeError,
				     "sg_list[%zd] must be an SGE, not %R", i,
				     (PyObject *)Py_TYPE(s));
			goto out;
		}
		mr = ((SGEObject *)s)->mr;
		if (mr != NULL) {
			if (handle_check(HANDLE(mr)) < 0)
				goto out;
			if (HANDLE(mr)->parent != HANDLE(pd)) {
				PyErr_Format(PyExc_ValueError,
					     "sg_list[%zd]: its MR belongs to "
					     "another PD",
					     i);
				goto out;
			}
		}
		sges[i] = *SGEP(s);
	}
	if (handle_check(HANDLE(pd)) < 0)
		goto out;
	rc = ibv_advise_mr((struct ibv_pd *)HANDLE(pd)->obj,
			   (enum ibv_advise_mr_advice)advice, flags, sges,
			   (uint32_t)n);
	if (rc != 0) {
		verbs_error_fmt(rc < 0 ? -rc : rc, "ibv_advise_mr",
				"advice=%ld flags=0x%x num_sge=%zd", advice,
				flags, n);
		goto out;
	}
	res = Py_None;
	Py_INCREF(res);
out:
	PyMem_Free(sges);
	Py_XDECREF(seq);
	return res;
}
