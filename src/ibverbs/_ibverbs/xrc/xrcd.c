/*
 * xrcd.c - XRCD: an XRC domain (struct ibv_xrcd), made by
 * Context.open_xrcd(), and the QPs Context.open_qp() opens in one (the
 * receive side of an XRC QP that another process created).
 *
 * ibv_open_xrcd, ibv_close_xrcd and ibv_open_qp are static inlines of
 * verbs.h over verbs_context ops: called by name.  No provider of this
 * project's rigs has XRC (rxe answers EOPNOTSUPP); the recording double
 * (tests/fakes/recording) checks what is passed.
 *
 * An opened QP is a plain QP whose parent is the XRCD (kept alive; the
 * XRCD refuses close() while it is open); its qp.pd is that XRCD.
 */
#include "ibverbs.h"
#include "qp/qp.h"
#include "xrc/xrc.h"
#include <fcntl.h>
#include <string.h>

#define XRCDP(self) ((struct ibv_xrcd *)HANDLE(self)->obj)

HANDLE_KIND(xrcd_kind, "XRCD", "ibv_close_xrcd", ibv_close_xrcd, NULL);

/* The provider left the op out (verbs.h's inline checks the same, and
 * answers EOPNOTSUPP). */
static int no_op(struct ibv_context *ctx)
{
	return verbs_get_ctx_op(ctx, open_xrcd) == NULL;
}

const char context_open_xrcd__doc__[] = PyDoc_STR(
	"Open (or create) an XRC domain.\n"
	"\n"
	"With ``fd=-1`` the domain is private to this process; with the\n"
	"fd of an open file, processes opening the same file share it\n"
	"(``oflags``: ``os.O_CREAT`` creates it, ``os.O_EXCL`` with it\n"
	"fails when it exists). comp_mask is always\n"
	"IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS.\n"
	"\n"
	"Wraps ``ibv_open_xrcd`` (man page ibv_open_xrcd(3)). Never run\n"
	"on hardware here; checked against the recording double (rxe has\n"
	"no XRC and answers EOPNOTSUPP).\n"
	"\n"
	"Args:\n"
	"    fd: a file descriptor naming the domain, or -1.\n"
	"    oflags: ``os.O_CREAT`` and/or ``os.O_EXCL``.\n"
	"\n"
	"Returns:\n"
	"    An XRCD.\n"
	"\n"
	"Raises:\n"
	"    TypeError: an argument is not an int.\n"
	"    ValueError: fd below -1 or an argument out of range.\n"
	"    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	"        when the provider has no XRC; else the verb failed\n"
	"        (``errno``).");

#define OPEN_XRCD_ARGS(X, S)                                           \
	X(S, INT, int, fd, -1, INT32_MAX, .flags = ARG_OPT, .def = -1) \
	X(S, INT, int, oflags, 0, INT32_MAX, .flags = ARG_OPT, .def = O_CREAT)
ARGS_METHOD(extern, context_open_xrcd, "Context.open_xrcd", OPEN_XRCD_ARGS,
	    self, a)
{
	struct ibv_xrcd_init_attr attr;
	struct ibv_context *ctx;
	struct ibv_xrcd *xrcd;
	int fd, oflags;
	XRCDObject *x;

	fd = a->fd;
	oflags = a->oflags;
	x = HANDLE_ALLOC(XRCDObject, ST.XRCD_type);
	if (x == NULL)
		return NULL;
	if (handle_check(HANDLE(self)) < 0) { /* a GC pass ran code */
		Py_DECREF(x);
		return NULL;
	}
	ctx = HANDLE(self)->obj;
	memset(&attr, 0, sizeof(attr));
	attr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	attr.fd = fd;
	attr.oflags = oflags;
	if (no_op(ctx)) {
		Py_DECREF(x);
		return provider_lacks("ibv_open_xrcd");
	}
	errno = 0;
	xrcd = ibv_open_xrcd(ctx, &attr);
	if (xrcd == NULL) {
		int err = errno_or(EINVAL);

		Py_DECREF(x);
		return verbs_error_fmt(err, "ibv_open_xrcd",
				       "fd=%d oflags=0x%x", fd,
				       (unsigned int)oflags);
	}
	handle_init(HANDLE(x), &xrcd_kind, HANDLE(self));
	HANDLE_SET_OBJ(x, xrcd);
	x->fd = fd;
	x->oflags = oflags;
	return (PyObject *)x;
}

/* ------------------------------------------------------------------ */
/* Context.open_qp(xrcd, qp_num, qp_type=XRC_RECV)                     */
/* ------------------------------------------------------------------ */

HANDLE_KIND(opened_qp_kind, "QP", "ibv_destroy_qp", IBV.destroy_qp, qp_release);

const char context_open_qp__doc__[] = PyDoc_STR(
	"Open a shareable QP (an XRC receive QP) by its number.\n"
	"\n"
	"The QP was created in ``xrcd`` (by this or another process\n"
	"sharing the domain); the QP returned is its handle here:\n"
	"``modify()``, ``query()`` and ``close()`` work on it. Its parent\n"
	"(``qp.pd``) is the XRCD, which refuses ``close()`` while it is\n"
	"open. comp_mask is IBV_QP_OPEN_ATTR_XRCD | _CONTEXT | _NUM |\n"
	"_TYPE.\n"
	"\n"
	"Wraps ``ibv_open_qp`` (man page ibv_open_qp(3)). Never run on\n"
	"hardware here; checked against the recording double.\n"
	"\n"
	"Args:\n"
	"    xrcd: the XRCD of this Context the QP belongs to.\n"
	"    qp_num: the QP's number, 24 bits.\n"
	"    qp_type: a QPType, XRC_RECV by default.\n"
	"\n"
	"Returns:\n"
	"    A QP.\n"
	"\n"
	"Raises:\n"
	"    TypeError: xrcd is not an XRCD, or an argument not an int.\n"
	"    ValueError: the XRCD belongs to another Context, or qp_num\n"
	"        is out of range.\n"
	"    VerbsError: EBADF once the Context or the XRCD is closed;\n"
	"        EOPNOTSUPP when the provider has no XRC; else the verb\n"
	"        failed (``errno``).");

#define OPEN_QP_ARGS(X, S)                                               \
	X(S, HANDLE, PyObject *, xrcd, XRCD, ARG_SAME_CONTEXT)           \
	X(S, INT, uint32_t, qp_num, 0, QPN_MAX)                          \
	X(S, ENUM, int, qp_type, QPType, 0, INT32_MAX, .flags = ARG_OPT, \
	  .def = IBV_QPT_XRC_RECV)
ARGS_METHOD(extern, context_open_qp, "Context.open_qp", OPEN_QP_ARGS, self, a)
{
	struct ibv_qp_open_attr attr;
	struct ibv_context *ctx;
	struct ibv_qp *qp;
	PyObject *xo;
	QPObject *q;

	xo = a->xrcd;
	q = HANDLE_ALLOC(QPObject, ST.QP_type);
	if (q == NULL)
		return NULL;
	if (handle_check(HANDLE(self)) < 0 || handle_check(HANDLE(xo)) < 0) {
		Py_DECREF(q);
		return NULL;
	}
	ctx = HANDLE(self)->obj;
	memset(&attr, 0, sizeof(attr));
	attr.comp_mask = IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_CONTEXT |
			 IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_TYPE;
	attr.qp_num = a->qp_num;
	attr.xrcd = XRCDP(xo);
	attr.qp_context = q;
	attr.qp_type = (enum ibv_qp_type)a->qp_type;
	if (verbs_get_ctx_op(ctx, open_qp) == NULL) {
		Py_DECREF(q);
		return provider_lacks("ibv_open_qp");
	}
	errno = 0;
	qp = ibv_open_qp(ctx, &attr);
	if (qp == NULL) {
		int err = errno_or(EINVAL);

		Py_DECREF(q);
		return verbs_error_fmt(err, "ibv_open_qp",
				       "qp_num=%u qp_type=%d",
				       (unsigned int)a->qp_num, a->qp_type);
	}
	handle_init(HANDLE(q), &opened_qp_kind, HANDLE(xo));
	HANDLE_SET_OBJ(q, qp);
	q->qp_type = a->qp_type;
	return (PyObject *)q;
}

/* ------------------------------------------------------------------ */
/* The type                                                            */
/* ------------------------------------------------------------------ */

static PyObject *xrcd_get_fd(PyObject *self, void *closure)
{
	return PyLong_FromLong(((XRCDObject *)self)->fd);
}

static PyObject *xrcd_get_oflags(PyObject *self, void *closure)
{
	return PyLong_FromLong(((XRCDObject *)self)->oflags);
}

static PyObject *xrcd_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.XRCD closed>");
	return PyUnicode_FromFormat("<ibverbs.XRCD fd=%d>",
				    ((XRCDObject *)self)->fd);
}

PyDoc_STRVAR(xrcd__doc__,
	     "An XRC domain (``struct ibv_xrcd``).\n"
	     "\n"
	     "Made by ``Context.open_xrcd()``. XRC SRQs\n"
	     "(``Context.create_srq_ex(srq_type=SRQType.XRC, xrcd=...)``)\n"
	     "and XRC receive QPs (``QPInitAttrEx(xrcd=...)``,\n"
	     "``Context.open_qp()``) live in it; it refuses ``close()``\n"
	     "while they are open. ``close()`` wraps ``ibv_close_xrcd``\n"
	     "(man page ibv_open_xrcd(3)). Never run on hardware here;\n"
	     "checked against the recording double.");

static PyMethodDef xrcd_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef xrcd_getset[] = {
	{ "context", handle_get_parent, NULL,
	  "The Context the domain was opened in.", NULL },
	{ "fd", xrcd_get_fd, NULL, "The fd it was opened with (-1: none).",
	  NULL },
	{ "oflags", xrcd_get_oflags, NULL, "The oflags it was opened with.",
	  NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(XRCD_spec, "XRCD", XRCDObject, 0, xrcd__doc__,
		 handle_tp_dealloc, handle_tp_traverse, xrcd_repr, xrcd_methods,
		 xrcd_getset);
