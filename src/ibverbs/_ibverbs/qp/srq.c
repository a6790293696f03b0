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
#include "qp/qp.h"
#include "wr/wr.h"
#include <string.h>

HANDLE_KIND(srq_kind, "SRQ", "ibv_destroy_srq", IBV.destroy_srq, NULL);

/* PD.create_srq(max_wr=128, max_sge=1, srq_limit=0) */
METHOD_DOC(
	pd_create_srq,
	"Create a shared receive queue in this PD.\n"
	"\n"
	"Wraps ``ibv_create_srq`` (man page ibv_create_srq(3)).\n"
	"\n"
	"Args:\n"
	"    max_wr: receive work requests it holds.\n"
	"    max_sge: scatter entries per work request.\n"
	"    srq_limit: the SRQ_LIMIT_REACHED threshold (0: none).\n"
	"\n"
	"Returns:\n"
	"    The new SRQ.\n"
	"\n"
	"Raises:\n"
	"    TypeError: an argument is not an int.\n"
	"    ValueError: a value is outside ``0..2**32-1``.\n" DOC_RAISES_VERB_AS(
		"PD", ", e.g. EINVAL past the device limits"));

/* Parsed straight into ibv_srq_init_attr.attr, whose fields the
 * arguments are. */
static const ArgSpec create_srq_params[] = {
	ARG_UINT(struct ibv_srq_attr, max_wr, .flags = ARG_OPT, .def = 128),
	ARG_UINT(struct ibv_srq_attr, max_sge, .flags = ARG_OPT, .def = 1),
	ARG_UINT(struct ibv_srq_attr, srq_limit, .flags = ARG_OPT),
	ARG_END,
};
METHOD_ARGS(pd_create_srq, "PD.create_srq", create_srq_params);

PyObject *pd_create_srq(PyObject *parent, PyObject *args, PyObject *kw)
{
	PDObject *pd = (PDObject *)parent;
	struct ibv_srq_init_attr init = { 0 };
	struct ibv_srq *srq;
	SRQObject *self;

	HANDLE_CHECK(parent);
	if (args_parse(&pd_create_srq_args, parent, args, kw, &init.attr) < 0)
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
		int err = errno_or(EINVAL);

		Py_DECREF(self);
		return verbs_error_fmt(err, "ibv_create_srq",
				       "max_wr=%u max_sge=%u srq_limit=%u",
				       init.attr.max_wr, init.attr.max_sge,
				       init.attr.srq_limit);
	}
	handle_init(HANDLE(self), &srq_kind, HANDLE(pd));
	HANDLE_SET_OBJ(self, srq);
	return (PyObject *)self;
}

/* ------------------------------------------------------------------ */
/* XRC and tag matching (the SRQs of Context.create_srq_ex)            */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(srq_get_srq_num__doc__,
	     "The SRQ number an XRC sender addresses\n"
	     "(``QPEx.wr_set_xrc_srqn()``, ``SendWR`` on an XRC_SEND QP).\n"
	     "\n"
	     "Wraps ``ibv_get_srq_num`` (man page ibv_get_srq_num(3)). Never\n"
	     "run on hardware here; checked against the recording double.\n"
	     "\n"
	     "Returns:\n"
	     "    The 24-bit SRQ number.\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EBADF once the SRQ is closed; EOPNOTSUPP when\n"
	     "        the provider has no XRC (rxe); else the verb failed\n"
	     "        (``errno``).");

static PyObject *srq_get_srq_num(PyObject *self, PyObject *unused)
{
	uint32_t num = 0;
	int rc;

	HANDLE_CHECK(self);
	rc = ibv_get_srq_num(SRQP(self), &num);
	if (rc != 0)
		return verbs_error(rc, "ibv_get_srq_num");
	return PyLong_FromUnsignedLong(num);
}

/* op.sg_list (a sequence of SGEs of open MRs) into sges[*n_sges..]. */
static int op_sges(PyObject *op, Py_ssize_t i, struct ibv_sge *sges,
		   Py_ssize_t cap, Py_ssize_t *n_sges, struct ibv_ops_wr *w)
{
	PyObject *l, *seq;
	Py_ssize_t k, n;
	int rc = attr_given(op, "sg_list", &l);

	if (rc <= 0)
		return rc;
	seq = PySequence_Tuple(l);
	Py_DECREF(l);
	if (seq == NULL)
		return -1;
	n = PyTuple_Size(seq);
	if (*n_sges + n > cap) {
		PyErr_Format(PyExc_ValueError,
			     "ops[%zd].sg_list: more than %zd SGEs in all", i,
			     cap);
		goto fail;
	}
	w->tm.add.sg_list = sges + *n_sges;
	w->tm.add.num_sge = (uint32_t)n;
	for (k = 0; k < n; k++) {
		PyObject *g = PyTuple_GetItem(seq, k);
		PyObject *mr;

		if (!PyObject_TypeCheck(g, ST.SGE_type)) {
			char what[64];

			snprintf(what, sizeof(what), "ops[%zd].sg_list[%zd]", i,
				 k);
			arg_type_error(what, "SGE", 0, g);
			goto fail;
		}
		mr = ((SGEObject *)g)->mr;
		if (mr != NULL && HANDLE(mr)->obj == NULL) {
			verbs_error_fmt(EBADF, "ibv_post_srq_ops",
					"ops[%zd].sg_list[%zd] points into a "
					"closed MR",
					i, k);
			goto fail;
		}
		sges[(*n_sges)++] = *SGEP(g);
	}
	Py_DECREF(seq);
	return 0;
fail:
	Py_DECREF(seq);
	return -1;
}

/* One OpsWR-like object into *w. */
static int op_from_py(PyObject *op, Py_ssize_t i, struct ibv_ops_wr *w,
		      struct ibv_sge *sges, Py_ssize_t cap, Py_ssize_t *n_sges)
{
	uint64_t v[8];
	char owner[32];
	PyObject *opcode;

	/* An op must say what it is: anything else is no OpsWR. */
	if (attr_optional(op, "opcode", &opcode) < 0)
		return -1;
	snprintf(owner, sizeof(owner), "ops[%zd]", i);
	if (opcode == NULL || opcode == Py_None) {
		arg_type_error_hint(owner, "OpsWR", 0, op, "it has no opcode");
		Py_XDECREF(opcode);
		return -1;
	}
	Py_DECREF(opcode);
	if (attr_uint(op, owner, "wr_id", UINT64_MAX, 0, &v[0]) < 0 ||
	    attr_uint(op, owner, "opcode", INT32_MAX, 0, &v[1]) < 0 ||
	    attr_uint(op, owner, "flags", INT32_MAX, 0, &v[2]) < 0 ||
	    attr_uint(op, owner, "unexpected_cnt", UINT32_MAX, 0, &v[3]) < 0 ||
	    attr_uint(op, owner, "handle", UINT32_MAX, 0, &v[4]) < 0 ||
	    attr_uint(op, owner, "recv_wr_id", UINT64_MAX, 0, &v[5]) < 0 ||
	    attr_uint(op, owner, "tag", UINT64_MAX, 0, &v[6]) < 0 ||
	    attr_uint(op, owner, "mask", UINT64_MAX, 0, &v[7]) < 0)
		return -1;
	memset(w, 0, sizeof(*w));
	w->wr_id = v[0];
	w->opcode = (enum ibv_ops_wr_opcode)v[1];
	w->flags = (int)v[2];
	w->tm.unexpected_cnt = (uint32_t)v[3];
	w->tm.handle = (uint32_t)v[4];
	w->tm.add.recv_wr_id = v[5];
	w->tm.add.tag = v[6];
	w->tm.add.mask = v[7];
	return op_sges(op, i, sges, cap, n_sges, w);
}

/* At most this many operations, and SGEs in all, per call. */
#define SRQ_OPS_MAX 64

PyDoc_STRVAR(srq_post_srq_ops__doc__,
	     "Post tag-matching list operations on a TM SRQ.\n"
	     "\n"
	     "Each op is an OpsWR (``wr_id``, ``opcode`` an OpsWROpcode:\n"
	     "TAG_ADD, TAG_DEL or TAG_SYNC, ``flags`` OpsFlags,\n"
	     "``unexpected_cnt``, ``handle`` of the tag to delete, and for\n"
	     "TAG_ADD ``recv_wr_id``, ``sg_list``, ``tag``, ``mask``),\n"
	     "linked in order into one call. The buffers of an added tag\n"
	     "must stay registered until its completion. Never run on\n"
	     "hardware here; checked against the recording double.\n"
	     "\n"
	     "Wraps ``ibv_post_srq_ops`` (man page ibv_post_srq_ops(3)).\n"
	     "\n"
	     "Args:\n"
	     "    ops: an OpsWR or a list of them (at most 64, and 64 SGEs\n"
	     "        in all).\n"
	     "\n"
	     "Returns:\n"
	     "    The ``tm.handle`` of each op after the call, in order (the\n"
	     "    handle the provider gave each added tag).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an op field is not an int, an SGE not an SGE.\n"
	     "    ValueError: no op, too many, or a value out of range.\n"
	     "    VerbsError: EBADF once the SRQ or an SGE's MR is closed;\n"
	     "        EOPNOTSUPP when the provider lacks tag matching (rxe);\n"
	     "        else the provider refused (``errno``), naming the op.");

static PyObject *srq_post_srq_ops(PyObject *self, PyObject *arg)
{
	struct ibv_ops_wr w[SRQ_OPS_MAX], *bad = NULL;
	struct ibv_sge sges[SRQ_OPS_MAX];
	Py_ssize_t i, n, n_sges = 0;
	PyObject *seq, *res = NULL;
	int rc;

	HANDLE_CHECK(self);
	if (PyList_Check(arg) || PyTuple_Check(arg))
		seq = PySequence_Tuple(arg);
	else
		seq = PyTuple_Pack(1, arg);
	if (seq == NULL)
		return NULL;
	n = PyTuple_Size(seq);
	if (n < 1 || n > SRQ_OPS_MAX) {
		PyErr_Format(PyExc_ValueError,
			     "post_srq_ops takes 1..%d ops, not %zd",
			     SRQ_OPS_MAX, n);
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (op_from_py(PyTuple_GetItem(seq, i), i, &w[i], sges,
			       SRQ_OPS_MAX, &n_sges) < 0)
			goto out;
		w[i].next = i + 1 < n ? &w[i + 1] : NULL;
	}
	if (handle_check(HANDLE(self)) < 0) /* reading ran Python code */
		goto out;
	rc = ibv_post_srq_ops(SRQP(self), w, &bad);
	if (rc != 0) {
		verbs_error_fmt(rc, "ibv_post_srq_ops",
				"op at index %zd was rejected",
				bad ? (Py_ssize_t)(bad - w) : (Py_ssize_t)0);
		goto out;
	}
	res = PyList_New(n);
	for (i = 0; res != NULL && i < n; i++) {
		PyObject *h = PyLong_FromUnsignedLong(w[i].tm.handle);

		if (h == NULL) {
			Py_CLEAR(res);
			break;
		}
		PyList_SetItem(res, i, h);
	}
out:
	Py_DECREF(seq);
	return res;
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
#define SRQ_MODIFY_ARGS(X, S)                                        \
	X(S, UINT, uint32_t, max_wr, .flags = ARG_OPT | ARG_NONE,    \
	  .mask = IBV_SRQ_MAX_WR)                                    \
	X(S, UINT, uint32_t, srq_limit, .flags = ARG_OPT | ARG_NONE, \
	  .mask = IBV_SRQ_LIMIT)
ARGS_METHOD_MASK(static, srq_modify, "SRQ.modify", SRQ_MODIFY_ARGS, self, a)
{
	struct ibv_srq_attr attr = { 0 };
	int mask, rc;

	mask = (int)a->mask;
	attr.max_wr = a->max_wr;
	attr.srq_limit = a->srq_limit;
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
	     "Raises:\n" DOC_RAISES_VERB("SRQ"));

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

static PyObject *srq_get_srq_type(PyObject *self, void *closure)
{
	return enum_from_int("SRQType", ((SRQObject *)self)->srq_type);
}

static PyObject *srq_get_xrcd(PyObject *self, void *closure)
{
	return obj_or_none(((SRQObject *)self)->xrcd);
}

static PyObject *srq_get_cq(PyObject *self, void *closure)
{
	return obj_or_none(((SRQObject *)self)->cq);
}

static int srq_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((SRQObject *)self)->xrcd);
	Py_VISIT(((SRQObject *)self)->cq);
	return handle_traverse(HANDLE(self), visit, arg);
}

static void srq_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	/* Non-NULL only if the destroy failed: they stay marked used. */
	Py_CLEAR(((SRQObject *)self)->xrcd);
	Py_CLEAR(((SRQObject *)self)->cq);
	handle_dealloc(HANDLE(self));
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

static PyMethodDef srq_methods[] = { METHOD_O("post_recv", srq_post_recv),
				     METHOD_KW("modify", srq_modify),
				     METHOD_NOARGS("query", srq_query),
				     METHOD_NOARGS("get_srq_num",
						   srq_get_srq_num),
				     METHOD_O("post_srq_ops", srq_post_srq_ops),
				     HANDLE_METHODS_END };

static PyGetSetDef srq_getset[] = {
	{ "pd", handle_get_parent, NULL, "The PD the SRQ was created in.",
	  NULL },
	{ "handle", srq_get_handle, NULL,
	  "The SRQ's kernel handle (``ibv_srq.handle``); EBADF once\n"
	  "closed.",
	  NULL },
	{ "srq_type", srq_get_srq_type, NULL,
	  "The SRQType it was created with (BASIC but from\n"
	  "``Context.create_srq_ex``).",
	  NULL },
	{ "xrcd", srq_get_xrcd, NULL,
	  "The XRCD of an XRC SRQ (used until closed), or None.", NULL },
	{ "cq", srq_get_cq, NULL,
	  "The CQ of an XRC or TM SRQ (used until closed), or None.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(SRQ_spec, "SRQ", SRQObject, 0, srq__doc__, srq_dealloc,
		 srq_traverse, srq_repr, srq_methods, srq_getset);
