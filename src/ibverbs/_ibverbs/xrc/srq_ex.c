/*
 * srq_ex.c - Context.create_srq_ex(): an SRQ from a struct
 * ibv_srq_init_attr_ex, of any type (basic, XRC, tag matching).
 *
 * ibv_create_srq_ex is a static inline of verbs.h that calls the exported
 * ibv_create_srq by name for a basic SRQ; this file does the same through
 * the IBV table (the extension names no exported verb), and otherwise
 * calls the provider's create_srq_ex op.  A basic SRQ runs on rxe; XRC
 * and tag-matching SRQs are checked against the recording double only.
 *
 * The SRQ's parent is its PD; its XRCD and CQ (XRC and TM SRQs) are used
 * (handle_use) until it is destroyed, so they refuse close() meanwhile.
 */
#include "ibverbs.h"
#include "xrc/xrc.h"
#include <string.h>

static int srqx_destroy(Handle *h)
{
	return IBV.destroy_srq((struct ibv_srq *)h->obj);
}

static void srqx_release(Handle *h)
{
	SRQObject *s = (SRQObject *)h;

	handle_unuse_clear(&s->xrcd);
	handle_unuse_clear(&s->cq);
}

static const HandleKind srqx_kind = { "SRQ", "ibv_destroy_srq", srqx_destroy,
				      srqx_release };

/* o (not None) must be an open handle of type t under parent; "what"
 * names it in errors.  0 / -1. */
static int check_handle(PyObject *o, PyTypeObject *t, const char *tname,
			const char *what, Handle *parent)
{
	if (!PyObject_TypeCheck(o, t)) {
		PyErr_Format(PyExc_TypeError, "%s must be %s or None, not %R",
			     what, tname, (PyObject *)Py_TYPE(o));
		return -1;
	}
	if (handle_check(HANDLE(o)) < 0)
		return -1;
	if (HANDLE(o)->parent != parent) {
		PyErr_Format(PyExc_ValueError, "%s belongs to another Context",
			     what);
		return -1;
	}
	return 0;
}

struct srqx_args {
	PyObject *pd, *xrcd, *cq; /* borrowed; xrcd, cq: NULL for None */
	long type;
	uint32_t max_wr, max_sge, limit, tags, ops;
	int have_tm;
};

static int srqx_parse(PyObject *self, PyObject *args, PyObject *kw,
		      struct srqx_args *a)
{
	static char *kwlist[] = { "pd",	     "srq_type",     "max_wr",
				  "max_sge", "srq_limit",    "xrcd",
				  "cq",	     "max_num_tags", "max_ops",
				  NULL };
	PyObject *type_o = NULL, *wr_o = NULL, *sge_o = NULL, *lim_o = NULL;
	PyObject *x_o = Py_None, *cq_o = Py_None, *tags_o = Py_None;
	PyObject *ops_o = Py_None;

	memset(a, 0, sizeof(*a));
	a->type = IBV_SRQT_BASIC;
	a->max_wr = 128;
	a->max_sge = 1;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OOOOOOOO:create_srq_ex",
					 kwlist, &a->pd, &type_o, &wr_o, &sge_o,
					 &lim_o, &x_o, &cq_o, &tags_o, &ops_o))
		return -1;
	if ((type_o &&
	     arg_int(type_o, "srq_type", 0, INT32_MAX, &a->type) < 0) ||
	    (wr_o && arg_u32(wr_o, "max_wr", &a->max_wr) < 0) ||
	    (sge_o && arg_u32(sge_o, "max_sge", &a->max_sge) < 0) ||
	    (lim_o && arg_u32(lim_o, "srq_limit", &a->limit) < 0) ||
	    (tags_o != Py_None &&
	     arg_u32(tags_o, "max_num_tags", &a->tags) < 0) ||
	    (ops_o != Py_None && arg_u32(ops_o, "max_ops", &a->ops) < 0))
		return -1;
	a->have_tm = tags_o != Py_None || ops_o != Py_None ||
		     a->type == IBV_SRQT_TM;
	if (!PyObject_TypeCheck(a->pd, ST.PD_type)) {
		PyErr_Format(PyExc_TypeError, "pd must be a PD, not %R",
			     (PyObject *)Py_TYPE(a->pd));
		return -1;
	}
	if (handle_check(HANDLE(a->pd)) < 0)
		return -1;
	if (HANDLE(a->pd)->parent != HANDLE(self)) {
		PyErr_SetString(PyExc_ValueError,
				"pd belongs to another Context");
		return -1;
	}
	if (x_o != Py_None) {
		if (check_handle(x_o, ST.XRCD_type, "an XRCD", "xrcd",
				 HANDLE(self)) < 0)
			return -1;
		a->xrcd = x_o;
	}
	if (cq_o != Py_None) {
		if (check_handle(cq_o, ST.CQ_type, "a CQ", "cq", HANDLE(self)) <
		    0)
			return -1;
		a->cq = cq_o;
	}
	return 0;
}

/* verbs.h's ibv_create_srq_ex, calling the exported ibv_create_srq
 * through IBV for a basic SRQ. */
static struct ibv_srq *srqx_call(struct ibv_context *ctx,
				 struct ibv_srq_init_attr_ex *ia)
{
	uint32_t mask = ia->comp_mask;
	struct verbs_context *vctx;

	if (!(mask &
	      ~(uint32_t)(IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE)) &&
	    (mask & IBV_SRQ_INIT_ATTR_PD) &&
	    (!(mask & IBV_SRQ_INIT_ATTR_TYPE) ||
	     ia->srq_type == IBV_SRQT_BASIC))
		return IBV.create_srq(ia->pd, (struct ibv_srq_init_attr *)ia);
	vctx = verbs_get_ctx_op(ctx, create_srq_ex);
	if (vctx == NULL) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return vctx->create_srq_ex(ctx, ia);
}

const char context_create_srq_ex__doc__[] = PyDoc_STR(
	"Create an SRQ of any type from ``struct ibv_srq_init_attr_ex``.\n"
	"\n"
	"comp_mask is IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE, with\n"
	"_XRCD when ``xrcd`` is given, _CQ when ``cq`` is, _TM for a\n"
	"tag-matching SRQ (``srq_type=SRQType.TM`` or ``max_num_tags``/\n"
	"``max_ops`` given). A basic SRQ runs on rxe; XRC and tag\n"
	"matching are never run on hardware here; checked against the\n"
	"recording double. The SRQ uses its XRCD and CQ (they refuse\n"
	"``close()`` until it is closed).\n"
	"\n"
	"Wraps ``ibv_create_srq_ex`` (man page ibv_create_srq_ex(3)).\n"
	"\n"
	"Args:\n"
	"    pd: the PD of the SRQ (of this Context).\n"
	"    srq_type: an SRQType: BASIC (default), XRC or TM.\n"
	"    max_wr: receive WRs outstanding at most.\n"
	"    max_sge: SGEs per receive WR at most.\n"
	"    srq_limit: the SRQ_LIMIT_REACHED threshold, 0 for none.\n"
	"    xrcd: the XRCD of an XRC SRQ, or None.\n"
	"    cq: the CQ of an XRC or TM SRQ's completions, or None.\n"
	"    max_num_tags: a TM SRQ's tag list size (``tm_cap``).\n"
	"    max_ops: a TM SRQ's outstanding list operations.\n"
	"\n"
	"Returns:\n"
	"    An SRQ (``srq.srq_type``, ``srq.xrcd``, ``srq.cq``).\n"
	"\n"
	"Raises:\n"
	"    TypeError: pd is not a PD, xrcd not an XRCD, cq not a CQ,\n"
	"        or a number not an int.\n"
	"    ValueError: a handle of another Context, a value out of\n"
	"        range.\n"
	"    VerbsError: EBADF once the Context or a handle is closed;\n"
	"        EOPNOTSUPP when the provider lacks the SRQ type; else\n"
	"        the verb failed (``errno``).");

PyObject *context_create_srq_ex(PyObject *self, PyObject *args, PyObject *kw)
{
	struct ibv_srq_init_attr_ex ia;
	struct srqx_args a;
	struct ibv_srq *srq;
	SRQObject *s;

	HANDLE_CHECK(self);
	if (srqx_parse(self, args, kw, &a) < 0)
		return NULL;
	s = HANDLE_ALLOC(SRQObject, ST.SRQ_type);
	if (s == NULL)
		return NULL;
	/* The allocation may have run finalizers: check again. */
	if (handle_check(HANDLE(self)) < 0 || handle_check(HANDLE(a.pd)) < 0 ||
	    (a.xrcd && handle_check(HANDLE(a.xrcd)) < 0) ||
	    (a.cq && handle_check(HANDLE(a.cq)) < 0)) {
		Py_DECREF(s);
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.srq_context = s;
	ia.attr.max_wr = a.max_wr;
	ia.attr.max_sge = a.max_sge;
	ia.attr.srq_limit = a.limit;
	ia.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
	ia.srq_type = (enum ibv_srq_type)a.type;
	ia.pd = HANDLE(a.pd)->obj;
	if (a.xrcd) {
		ia.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD;
		ia.xrcd = HANDLE(a.xrcd)->obj;
	}
	if (a.cq) {
		ia.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
		ia.cq = HANDLE(a.cq)->obj;
	}
	if (a.have_tm) {
		ia.comp_mask |= IBV_SRQ_INIT_ATTR_TM;
		ia.tm_cap.max_num_tags = a.tags;
		ia.tm_cap.max_ops = a.ops;
	}
	errno = 0;
	srq = srqx_call(HANDLE(self)->obj, &ia);
	if (srq == NULL) {
		int err = errno ? errno : EINVAL;

		Py_DECREF(s);
		return verbs_error_fmt(err, "ibv_create_srq_ex",
				       "srq_type=%ld max_wr=%u max_sge=%u "
				       "(comp_mask 0x%x)",
				       a.type, a.max_wr, a.max_sge,
				       ia.comp_mask);
	}
	handle_init(HANDLE(s), &srqx_kind, HANDLE(a.pd));
	HANDLE_SET_OBJ(s, srq);
	s->srq_type = (int)a.type;
	if (a.xrcd) {
		Py_INCREF(a.xrcd);
		s->xrcd = a.xrcd;
		handle_use(HANDLE(a.xrcd));
	}
	if (a.cq) {
		Py_INCREF(a.cq);
		s->cq = a.cq;
		handle_use(HANDLE(a.cq));
	}
	return (PyObject *)s;
}
