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

PyObject *odp_reg_implicit(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "access", NULL };
	PyObject *acc_o = NULL;
	struct ibv_mr *mr;
	long access = 0;
	MRObject *o;
	int err;

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
PyObject *odp_advise_mr(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "advice", "flags", "sg_list", NULL };
	PyObject *adv_o, *flags_o, *list, *seq = NULL, *res = NULL;
	struct ibv_sge *sges = NULL;
	Py_ssize_t n, i;
	long advice;
	uint32_t flags;
	int rc;

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
