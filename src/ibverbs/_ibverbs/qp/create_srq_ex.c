/*
 * create_srq_ex.c - Context.create_srq_ex(): an SRQ from a struct
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
#include "qp/qp.h"
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

/* The arguments of create_srq_ex; tm: the TM bit when max_num_tags or
 * max_ops is given (not None). */
struct srqx_args {
	PyObject *pd, *xrcd, *cq; /* borrowed; xrcd, cq: NULL for None */
	int srq_type;
	uint32_t max_wr, max_sge, srq_limit, max_num_tags, max_ops;
	uint64_t tm;
};
#define SRQX_KW(f, ...) \
	ARG_UINT(struct srqx_args, f, .flags = ARG_KWOPT, __VA_ARGS__)
#define SRQX_TM(f)                                                   \
	ARG_UINT(struct srqx_args, f, .flags = ARG_KWOPT | ARG_NONE, \
		 .mask = IBV_SRQ_INIT_ATTR_TM)
#define SRQX_HANDLE(f, T)                                    \
	ARG_HANDLE(struct srqx_args, f, T, ARG_SAME_CONTEXT, \
		   .flags = ARG_KWOPT | ARG_NONE)
static const ArgSpec srqx_params[] = {
	ARG_HANDLE(struct srqx_args, pd, PD, ARG_SAME_CONTEXT),
	ARG_ENUM(struct srqx_args, srq_type, SRQType, 0, INT32_MAX,
		 .flags = ARG_KWOPT, .def = IBV_SRQT_BASIC),
	SRQX_KW(max_wr, .def = 128),
	SRQX_KW(max_sge, .def = 1),
	SRQX_KW(srq_limit),
	SRQX_HANDLE(xrcd, XRCD),
	SRQX_HANDLE(cq, CQ),
	SRQX_TM(max_num_tags),
	SRQX_TM(max_ops),
	ARG_END
};
METHOD_ARGS_MASK(context_create_srq_ex, "Context.create_srq_ex", srqx_params,
		 offsetof(struct srqx_args, tm));

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
	if (args_parse(&context_create_srq_ex_args, self, args, kw, &a) < 0)
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
	ia.attr.srq_limit = a.srq_limit;
	ia.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
	ia.srq_type = (enum ibv_srq_type)a.srq_type;
	ia.pd = HANDLE(a.pd)->obj;
	if (a.xrcd) {
		ia.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD;
		ia.xrcd = HANDLE(a.xrcd)->obj;
	}
	if (a.cq) {
		ia.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
		ia.cq = HANDLE(a.cq)->obj;
	}
	if (a.tm || a.srq_type == IBV_SRQT_TM) {
		ia.comp_mask |= IBV_SRQ_INIT_ATTR_TM;
		ia.tm_cap.max_num_tags = a.max_num_tags;
		ia.tm_cap.max_ops = a.max_ops;
	}
	errno = 0;
	srq = srqx_call(HANDLE(self)->obj, &ia);
	if (srq == NULL) {
		int err = errno_or(EINVAL);

		Py_DECREF(s);
		return verbs_error_fmt(err, "ibv_create_srq_ex",
				       "srq_type=%d max_wr=%u max_sge=%u "
				       "(comp_mask 0x%x)",
				       a.srq_type, a.max_wr, a.max_sge,
				       ia.comp_mask);
	}
	handle_init(HANDLE(s), &srqx_kind, HANDLE(a.pd));
	HANDLE_SET_OBJ(s, srq);
	s->srq_type = a.srq_type;
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
