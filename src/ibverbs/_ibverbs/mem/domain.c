/*
 * domain.c - TD (a thread domain, ibv_td) and ParentDomain (a parent
 * domain: a PD, ibv_pd, made from a PD and optionally a TD), both
 * children of their Context.
 *
 * ibv_alloc_td, ibv_dealloc_td and ibv_alloc_parent_domain are static
 * inline in verbs.h over verbs_context ops (verbs_get_ctx_op: EOPNOTSUPP
 * when the provider has none), so they are called by name.  A parent
 * domain is freed with ibv_dealloc_pd, as rdma-core says.
 *
 * ParentDomain is a subclass of PD: every PD factory (reg_mr, create_qp,
 * create_srq, ...) takes it, and CQInitAttrEx(parent_domain=...) hands it
 * to ibv_create_cq_ex.  Its handle parent is the Context, like a PD's,
 * and it *uses* its PD and TD (handle_use): their close() refuses with
 * EBUSY while it is open.  The custom allocator callbacks of
 * ibv_parent_domain_init_attr (alloc, free, pd_context) are left out:
 * they would call into Python from the provider's allocation paths,
 * with or without the GIL, so comp_mask is always 0.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include <string.h>

typedef struct {
	Handle h; /* obj: struct ibv_td *; parent: Context */
} TDObject;

typedef struct {
	PDObject pd; /* obj: struct ibv_pd * (the parent domain) */
	PyObject *base_pd; /* the PD it was made from (used) */
	PyObject *td; /* the TD, or NULL (used) */
} ParentDomainObject;

#define PDOM(self) ((ParentDomainObject *)(self))

HANDLE_KIND(td_kind, "TD", "ibv_dealloc_td", ibv_dealloc_td, NULL);

const char td_create__doc__[] = PyDoc_STR(
	"Allocate a thread domain: a promise that the objects of a\n"
	"parent domain made with it are used by one thread at a time, so\n"
	"the provider may skip their locks.\n"
	"\n"
	"Wraps ``ibv_alloc_td`` (man page ibv_alloc_td(3)); never run on\n"
	"hardware here, checked against the recording double (rxe has no\n"
	"thread domains).\n"
	"\n"
	"Returns:\n"
	"    The new TD (a child of this Context).\n"
	"\n"
	"Raises:\n"
	"    VerbsError: EBADF once the Context is closed; EOPNOTSUPP when\n"
	"        the provider has no thread domains; else the verb failed\n"
	"        (``errno``).");

/* Context.alloc_td() */
PyObject *td_create(PyObject *ctx, PyObject *unused)
{
	struct ibv_td_init_attr attr;
	struct ibv_td *td;

	HANDLE_CHECK(ctx);
	memset(&attr, 0, sizeof(attr));
	errno = 0;
	td = ibv_alloc_td((struct ibv_context *)HANDLE(ctx)->obj, &attr);
	if (td == NULL)
		return verbs_error(errno_or(EINVAL), "ibv_alloc_td");
	return handle_adopt(ST.TD_type, &td_kind, HANDLE(ctx), td);
}

static PyObject *td_repr(PyObject *self)
{
	return PyUnicode_FromString(HANDLE(self)->obj ? "<ibverbs.TD>" :
							"<ibverbs.TD closed>");
}

PyDoc_STRVAR(td__doc__,
	     "A thread domain (``struct ibv_td``).\n"
	     "\n"
	     "Made by ``Context.alloc_td()``; given to\n"
	     "``Context.alloc_parent_domain(pd, td)``. ``close()`` wraps\n"
	     "``ibv_dealloc_td`` (man page ibv_alloc_td(3)) and refuses with\n"
	     "EBUSY while a parent domain uses it.");

static PyMethodDef td_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef td_getset[] = { { "context", handle_get_parent, NULL,
				     "The Context the TD was allocated on.",
				     NULL },
				   HANDLE_GETSETS_END };

HANDLE_TYPE_SPEC(TD_spec, "TD", TDObject, 0, td__doc__, handle_tp_dealloc,
		 handle_tp_traverse, td_repr, td_methods, td_getset);

/* ------------------------------------------------------------------ */
/* ParentDomain                                                        */
/* ------------------------------------------------------------------ */

/* Freed: its PD and TD may go. */
static void pdom_release(Handle *h)
{
	handle_unuse_clear(&PDOM(h)->base_pd);
	handle_unuse_clear(&PDOM(h)->td);
}

HANDLE_KIND(pdom_kind, "ParentDomain", "ibv_dealloc_pd", IBV.dealloc_pd,
	    pdom_release);

const char parent_domain_create__doc__[] = PyDoc_STR(
	"Allocate a parent domain over ``pd`` and, optionally, ``td``.\n"
	"\n"
	"A parent domain is a PD: give it to ``reg_mr``, ``create_qp``,\n"
	"``create_srq``, ``CQInitAttrEx(parent_domain=...)``... Objects\n"
	"made with it share the PD's protection and, with a TD, its\n"
	"single-threaded promise. It uses ``pd`` and ``td``: their\n"
	"``close()`` refuses with EBUSY while it is open. The custom\n"
	"allocator callbacks are not offered (``comp_mask`` is 0).\n"
	"\n"
	"Wraps ``ibv_alloc_parent_domain`` (man page\n"
	"ibv_alloc_parent_domain(3)); never run on hardware here, checked\n"
	"against the recording double (rxe has no parent domains).\n"
	"\n"
	"Args:\n"
	"    pd: the PD (not itself a parent domain) of this Context.\n"
	"    td: a TD of this Context, or None.\n"
	"\n"
	"Returns:\n"
	"    The new ParentDomain (a PD, child of this Context).\n"
	"\n"
	"Raises:\n"
	"    TypeError: pd is not a PD, or is a ParentDomain; td is not a\n"
	"        TD or None.\n"
	"    ValueError: pd or td belongs to another Context.\n"
	"    VerbsError: EBADF once the Context, pd or td is closed;\n"
	"        EOPNOTSUPP when the provider has no parent domains; else\n"
	"        the verb failed (``errno``).");

/* Context.alloc_parent_domain(pd, td=None) */
#define ALLOC_PARENT_DOMAIN_ARGS(X, S)                     \
	X(S, HANDLE, PyObject *, pd, PD, ARG_SAME_CONTEXT) \
	X(S, HANDLE, PyObject *, td, TD, ARG_SAME_CONTEXT, \
	  .flags = ARG_OPT | ARG_NONE)
ARGS_METHOD(extern, parent_domain_create, "Context.alloc_parent_domain",
	    ALLOC_PARENT_DOMAIN_ARGS, ctx, a)
{
	struct ibv_parent_domain_init_attr attr;
	ParentDomainObject *self;
	PyObject *pd, *td;
	struct ibv_pd *p;
	int err;

	pd = a->pd;
	td = a->td ? a->td : Py_None;
	if (PyObject_TypeCheck(pd, ST.ParentDomain_type)) {
		PyErr_SetString(PyExc_TypeError,
				"pd must be a plain PD, not a ParentDomain");
		return NULL;
	}
	self = HANDLE_ALLOC(ParentDomainObject, ST.ParentDomain_type);
	if (self == NULL)
		return NULL;
	/* A GC pass may have run Python code: check again. */
	if (handle_check(HANDLE(ctx)) < 0 || handle_check(HANDLE(pd)) < 0 ||
	    (td != Py_None && handle_check(HANDLE(td)) < 0)) {
		Py_DECREF(self);
		return NULL;
	}
	memset(&attr, 0, sizeof(attr));
	attr.pd = (struct ibv_pd *)HANDLE(pd)->obj;
	attr.td = td != Py_None ? (struct ibv_td *)HANDLE(td)->obj : NULL;
	errno = 0;
	p = ibv_alloc_parent_domain((struct ibv_context *)HANDLE(ctx)->obj,
				    &attr);
	err = errno_or(EINVAL);
	if (p == NULL) {
		Py_DECREF(self);
		return verbs_error_fmt(err, "ibv_alloc_parent_domain", "%s",
				       td != Py_None ? "with a TD" :
						       "without a TD");
	}
	handle_init(HANDLE(self), &pdom_kind, HANDLE(ctx));
	HANDLE_SET_OBJ(self, p);
	Py_INCREF(pd);
	self->base_pd = pd;
	handle_use(HANDLE(pd));
	if (td != Py_None) {
		Py_INCREF(td);
		self->td = td;
		handle_use(HANDLE(td));
	}
	return (PyObject *)self;
}

static int pdom_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(PDOM(self)->base_pd);
	Py_VISIT(PDOM(self)->td);
	return handle_traverse(HANDLE(self), visit, arg);
}

static void pdom_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	/* Still set if the free failed: the parent domain is leaked and
	 * keeps using them. */
	Py_CLEAR(PDOM(self)->base_pd);
	Py_CLEAR(PDOM(self)->td);
	handle_dealloc(HANDLE(self));
}

static PyObject *pdom_get_pd(PyObject *self, void *closure)
{
	return obj_or_none(PDOM(self)->base_pd);
}

static PyObject *pdom_get_td(PyObject *self, void *closure)
{
	return obj_or_none(PDOM(self)->td);
}

static PyObject *pdom_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.ParentDomain closed>");
	return PyUnicode_FromFormat("<ibverbs.ParentDomain%s>",
				    PDOM(self)->td ? " with TD" : "");
}

PyDoc_STRVAR(pdom__doc__,
	     "A parent domain (``struct ibv_pd``): a PD made from a PD and,\n"
	     "optionally, a thread domain.\n"
	     "\n"
	     "Made by ``Context.alloc_parent_domain(pd, td=None)``; a PD for\n"
	     "every PD factory and ``CQInitAttrEx.parent_domain``.\n"
	     "``close()`` wraps ``ibv_dealloc_pd`` (man page\n"
	     "ibv_alloc_parent_domain(3)), refuses with EBUSY while its\n"
	     "children are open, and lets its PD and TD go.");

static PyMethodDef pdom_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef pdom_getset[] = {
	{ "pd", pdom_get_pd, NULL,
	  "The PD the parent domain was made from (None once closed).", NULL },
	{ "td", pdom_get_td, NULL,
	  "The TD it was made with, or None (None once closed).", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(ParentDomain_spec, "ParentDomain", ParentDomainObject, 0,
		 pdom__doc__, pdom_dealloc, pdom_traverse, pdom_repr,
		 pdom_methods, pdom_getset);
