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
#include "mem/mem.h"
#include "wr/wr.h"
#include <stdio.h>
#include <string.h>

HANDLE_KIND(odp_mr_kind, "MR", "ibv_dereg_mr", IBV.dereg_mr, NULL);

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

#define REG_IMPLICIT_ODP_MR_ARGS(X, S) \
	X(S, FLAGS, int, access, AccessFlags, .flags = ARG_OPT)
ARGS_METHOD(extern, pd_reg_implicit_odp_mr, "PD.reg_implicit_odp_mr",
	    REG_IMPLICIT_ODP_MR_ARGS, self, a)
{
	PDObject *pd = (PDObject *)self;
	struct ibv_mr *mr;
	int access, err;

	access = a->access | IBV_ACCESS_ON_DEMAND;
	errno = 0;
	mr = IBV.reg_mr((struct ibv_pd *)HANDLE(pd)->obj, NULL, SIZE_MAX,
			access);
	err = errno_or(EINVAL);
	if (mr == NULL)
		return verbs_error_fmt(err, "ibv_reg_mr",
				       "implicit ODP (addr=0 length=SIZE_MAX "
				       "access=0x%x)",
				       (unsigned int)access);
	return mr_wrap(&odp_mr_kind, pd, mr, NULL, 0, SIZE_MAX, access);
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

#define ADVISE_MR_ARGS(X, S)                                  \
	X(S, ENUM, int, advice, AdviseMRAdvice, 0, INT32_MAX) \
	X(S, FLAGS, uint32_t, flags, AdviseMRFlags)           \
	X(S, LIST, PyObject *, sg_list, SGE)
ARGS_METHOD(extern, pd_advise_mr, "PD.advise_mr", ADVISE_MR_ARGS, self, a)
{
	PDObject *pd = (PDObject *)self;
	PyObject *list, *seq = NULL, *res = NULL;
	struct ibv_sge *sges = NULL;
	Py_ssize_t n, i;
	int rc;

	list = a->sg_list;
	if (!PyList_Check(list) && !PyTuple_Check(list)) {
		arg_type_error("sg_list", "list of SGEs", 0, list);
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
		char name[48];
		PyObject *mr;

		snprintf(name, sizeof(name), "sg_list[%zd]", i);
		if (!PyObject_TypeCheck(s, ST.SGE_type)) {
			arg_type_error(name, "SGE", 0, s);
			goto out;
		}
		mr = ((SGEObject *)s)->mr;
		if (mr != NULL) {
			if (handle_check(HANDLE(mr)) < 0)
				goto out;
			if (HANDLE(mr)->parent != HANDLE(pd)) {
				snprintf(name, sizeof(name), "sg_list[%zd].mr",
					 i);
				arg_other_parent_error(name, "PD");
				goto out;
			}
		}
		sges[i] = *SGEP(s);
	}
	if (handle_check(HANDLE(pd)) < 0)
		goto out;
	rc = ibv_advise_mr((struct ibv_pd *)HANDLE(pd)->obj,
			   (enum ibv_advise_mr_advice)a->advice, a->flags, sges,
			   (uint32_t)n);
	if (rc != 0) {
		verbs_error_fmt(rc < 0 ? -rc : rc, "ibv_advise_mr",
				"advice=%d flags=0x%x num_sge=%zd", a->advice,
				a->flags, n);
		goto out;
	}
	res = Py_None;
	Py_INCREF(res);
out:
	PyMem_Free(sges);
	Py_XDECREF(seq);
	return res;
}
