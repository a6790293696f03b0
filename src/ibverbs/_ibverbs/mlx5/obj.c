/*
 * obj.c - mlx5.init_obj (mlx5dv_init_obj: a QP's, CQ's, SRQ's, PD's or
 * DM's rings, doorbell records and numbers, for code that drives the
 * hardware itself) and mlx5.get_cqe_opcode (an inline of mlx5dv.h over
 * a CQE's bytes).
 *
 * mlx5dv_init_obj checks its provider through the object's context
 * (rdma-core 33 on): it refuses any other provider's object.  After it,
 * libmlx5 leaves the CQ to its user (MLX5_CQ_FLAGS_DV_OWNED): the CQ is
 * marked so and its poll paths refuse.
 */
#include "mlx5/mlx5.h"
#include "cq/cq.h"
#include <string.h>

/* Python.h's, left out of the limited API before 3.11 */
#ifndef PyBUF_READ
#define PyBUF_READ 0x100
#endif

/* d[key] = a read-only memoryview of n bytes at p, or None. */
static int set_view(PyObject *d, const char *key, void *p, Py_ssize_t n)
{
	return dict_set_steal(d, key,
			      p && n > 0 ? PyMemoryView_FromMemory((char *)p, n,
								   PyBUF_READ) :
					   obj_or_none(NULL));
}

#define U64(k, v)                                          \
	do {                                               \
		if (dict_set_u64(d, k, (uint64_t)(v)) < 0) \
			goto fail;                         \
	} while (0)
#define VIEW(k, p, n)                         \
	do {                                  \
		if (set_view(d, k, p, n) < 0) \
			goto fail;            \
	} while (0)

static PyObject *qp_dict(PyObject *d, const struct mlx5dv_qp *q)
{
	U64("dbrec", (uintptr_t)q->dbrec);
	VIEW("dbrec_view", (void *)q->dbrec, 8);
	U64("sq_buf", (uintptr_t)q->sq.buf);
	U64("sq_wqe_cnt", q->sq.wqe_cnt);
	U64("sq_stride", q->sq.stride);
	VIEW("sq", q->sq.buf, (Py_ssize_t)q->sq.wqe_cnt * q->sq.stride);
	U64("rq_buf", (uintptr_t)q->rq.buf);
	U64("rq_wqe_cnt", q->rq.wqe_cnt);
	U64("rq_stride", q->rq.stride);
	VIEW("rq", q->rq.buf, (Py_ssize_t)q->rq.wqe_cnt * q->rq.stride);
	U64("bf_reg", (uintptr_t)q->bf.reg);
	U64("bf_size", q->bf.size);
	U64("comp_mask", q->comp_mask);
	U64("uar_mmap_offset", q->uar_mmap_offset);
	U64("tirn", q->tirn);
	U64("tisn", q->tisn);
	U64("rqn", q->rqn);
	U64("sqn", q->sqn);
	U64("tir_icm_addr", q->tir_icm_addr);
	return d;
fail:
	return NULL;
}

static PyObject *cq_dict(PyObject *d, const struct mlx5dv_cq *c)
{
	U64("buf", (uintptr_t)c->buf);
	U64("dbrec", (uintptr_t)c->dbrec);
	VIEW("dbrec_view", (void *)c->dbrec, 8);
	U64("cqe_cnt", c->cqe_cnt);
	U64("cqe_size", c->cqe_size);
	VIEW("ring", c->buf, (Py_ssize_t)c->cqe_cnt * c->cqe_size);
	U64("cq_uar", (uintptr_t)c->cq_uar);
	U64("cqn", c->cqn);
	U64("comp_mask", c->comp_mask);
	return d;
fail:
	return NULL;
}

static PyObject *srq_dict(PyObject *d, const struct mlx5dv_srq *s)
{
	U64("buf", (uintptr_t)s->buf);
	U64("dbrec", (uintptr_t)s->dbrec);
	VIEW("dbrec_view", (void *)s->dbrec, 4);
	U64("stride", s->stride);
	U64("head", s->head);
	U64("tail", s->tail);
	VIEW("ring", s->buf, (Py_ssize_t)(s->tail + 1) * s->stride);
	U64("comp_mask", s->comp_mask);
	U64("srqn", s->srqn);
	return d;
fail:
	return NULL;
}
#undef U64
#undef VIEW

METHOD_DOC(mlx5_mod_init_obj,
	   "The mlx5 layout of a QP, CQ, SRQ, PD or DM: its rings,\n"
	   "doorbell records, UAR and numbers, for code that posts and\n"
	   "polls without libmlx5 (a GPU kernel, say).\n"
	   "\n"
	   "Wraps ``mlx5dv_init_obj`` (man page mlx5dv_init_obj(3),\n"
	   "rdma-core 13; the default version, MLX5_1.2).  Addresses are\n"
	   "ints; the memoryviews (``sq``, ``rq``, ``ring``,\n"
	   "``dbrec_view``) are read-only and valid until the object's\n"
	   "``close()``; the record keeps the object alive (``obj``).\n"
	   "A CQ handed here is its user's from then on (libmlx5 stops\n"
	   "cleaning it): its ``poll()``, ``poll_count()`` and\n"
	   "``start_poll()`` refuse.\n"
	   "\n"
	   "Args:\n"
	   "    obj: an open QP, CQ, SRQ, PD or DM of an mlx5 device.\n"
	   "\n"
	   "Returns:\n"
	   "    An ``Mlx5Obj`` record: ``kind`` (\"qp\", \"cq\", \"srq\",\n"
	   "    \"pd\", \"dm\"), ``obj`` and the fields of\n"
	   "    ``struct mlx5dv_qp`` / ``_cq`` / ``_srq`` / ``_pd`` /\n"
	   "    ``_dm`` (``sq_buf``, ``sq_wqe_cnt``, ... for a QP).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: obj is none of those types.\n"
	   "    ImportError: libmlx5.so.1 cannot be loaded.\n"
	   "    VerbsError: EBADF once obj is closed; EOPNOTSUPP on another\n"
	   "        provider's object; else the function failed.");

#define INIT_OBJ_ARGS(X, S) X(S, OBJECT, PyObject *, obj)
ARGS_FUNCTION(extern, mlx5_mod_init_obj, "_mlx5_init_obj", INIT_OBJ_ARGS, mod,
	      a)
{
	struct mlx5dv_obj o;
	struct mlx5dv_qp qp;
	struct mlx5dv_cq cq;
	struct mlx5dv_srq srq;
	struct mlx5dv_pd pd;
	struct mlx5dv_dm dm;
	const char *kind;
	uint64_t type;
	PyObject *d, *ok = NULL;
	int rc;

	memset(&o, 0, sizeof(o));
	memset(&qp, 0, sizeof(qp));
	memset(&cq, 0, sizeof(cq));
	memset(&srq, 0, sizeof(srq));
	memset(&pd, 0, sizeof(pd));
	memset(&dm, 0, sizeof(dm));
	if (PyObject_TypeCheck(a->obj, ST.QP_type)) {
		kind = "qp";
		type = MLX5DV_OBJ_QP;
	} else if (PyObject_TypeCheck(a->obj, ST.CQ_type)) {
		kind = "cq";
		type = MLX5DV_OBJ_CQ;
	} else if (PyObject_TypeCheck(a->obj, ST.SRQ_type)) {
		kind = "srq";
		type = MLX5DV_OBJ_SRQ;
	} else if (PyObject_TypeCheck(a->obj, ST.PD_type)) {
		kind = "pd";
		type = MLX5DV_OBJ_PD;
	} else if (PyObject_TypeCheck(a->obj, ST.DM_type)) {
		kind = "dm";
		type = MLX5DV_OBJ_DM;
	} else {
		arg_type_error("obj", "QP, CQ, SRQ, PD or DM", 0, a->obj);
		return NULL;
	}
	HANDLE_CHECK(a->obj);
	MLX5_NEED(init_obj);
	switch (type) {
	case MLX5DV_OBJ_QP:
		o.qp.in = HANDLE(a->obj)->obj;
		o.qp.out = &qp;
		qp.comp_mask = MLX5DV_QP_MASK_UAR_MMAP_OFFSET |
			       MLX5DV_QP_MASK_RAW_QP_HANDLES |
			       MLX5DV_QP_MASK_RAW_QP_TIR_ADDR;
		break;
	case MLX5DV_OBJ_CQ:
		o.cq.in = HANDLE(a->obj)->obj;
		o.cq.out = &cq;
		break;
	case MLX5DV_OBJ_SRQ:
		o.srq.in = HANDLE(a->obj)->obj;
		o.srq.out = &srq;
		srq.comp_mask = MLX5DV_SRQ_MASK_SRQN;
		break;
	case MLX5DV_OBJ_PD:
		o.pd.in = HANDLE(a->obj)->obj;
		o.pd.out = &pd;
		break;
	default:
		o.dm.in = HANDLE(a->obj)->obj;
		o.dm.out = &dm;
		dm.comp_mask = MLX5DV_DM_MASK_REMOTE_VA;
		break;
	}
	rc = MLX5.init_obj(&o, type);
	if (rc != 0)
		return verbs_error_fmt(rc < 0 ? -rc : rc, "mlx5dv_init_obj",
				       "a %s", kind);
	if (type == MLX5DV_OBJ_CQ)
		((CQObject *)a->obj)->user_owned = 1;
	d = PyDict_New();
	if (d == NULL)
		return NULL;
	if (dict_set_steal(d, "kind", PyUnicode_FromString(kind)) < 0 ||
	    dict_set_steal(d, "obj", (Py_INCREF(a->obj), a->obj)) < 0)
		goto out;
	switch (type) {
	case MLX5DV_OBJ_QP:
		ok = qp_dict(d, &qp);
		break;
	case MLX5DV_OBJ_CQ:
		ok = cq_dict(d, &cq);
		break;
	case MLX5DV_OBJ_SRQ:
		ok = srq_dict(d, &srq);
		break;
	case MLX5DV_OBJ_PD:
		ok = (dict_set_u64(d, "pdn", pd.pdn) < 0 ||
		      dict_set_u64(d, "comp_mask", pd.comp_mask) < 0) ?
			     NULL :
			     d;
		break;
	default:
		ok = (dict_set_u64(d, "buf", (uintptr_t)dm.buf) < 0 ||
		      dict_set_u64(d, "length", dm.length) < 0 ||
		      dict_set_u64(d, "comp_mask", dm.comp_mask) < 0 ||
		      dict_set_u64(d, "remote_va", dm.remote_va) < 0 ||
		      set_view(d, "view", dm.buf, (Py_ssize_t)dm.length) < 0) ?
			     NULL :
			     d;
		break;
	}
	if (ok != NULL)
		return objects_record("Mlx5Obj", d);
out:
	Py_DECREF(d);
	return NULL;
}

METHOD_DOC(mlx5_mod_get_cqe_opcode,
	   "The opcode of a 64-byte CQE (``struct mlx5_cqe64``): the high\n"
	   "4 bits of its last byte, ``op_own``.\n"
	   "\n"
	   "Re-implements ``mlx5dv_get_cqe_opcode`` (a static inline of\n"
	   "mlx5dv.h, rdma-core 13): reads bytes only, loads nothing.\n"
	   "\n"
	   "Args:\n"
	   "    cqe: the CQE's 64 bytes (bytes, bytearray or memoryview,\n"
	   "        a slice of ``init_obj(cq).ring``).\n"
	   "\n"
	   "Returns:\n"
	   "    The opcode, 0..15 (``MLX5_CQE_REQ`` 0, ``MLX5_CQE_RESP_\n"
	   "    SEND`` 2, ``MLX5_CQE_REQ_ERR`` 13, ``MLX5_CQE_INVALID``\n"
	   "    15, ...).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: cqe is not bytes-like.\n"
	   "    ValueError: cqe is not 64 bytes long.");

struct cqe_args {
	PyObject *cqe;
};
static const ArgSpec cqe_params[] = { ARG_BUFFER(struct cqe_args, cqe, 64),
				      ARG_END };
METHOD_ARGS(mlx5_mod_get_cqe_opcode, "_mlx5_get_cqe_opcode", cqe_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_get_cqe_opcode, mod, struct cqe_args, a)
{
	PyObject *b;
	unsigned char op_own;

	if (PyUnicode_Check(a->cqe) || PyLong_Check(a->cqe)) {
		arg_type_error("cqe", "bytes-like", 0, a->cqe);
		return NULL;
	}
	b = PyBytes_FromObject(a->cqe);
	if (b == NULL)
		return NULL;
	if (PyBytes_Size(b) != 64) {
		PyErr_Format(PyExc_ValueError, "cqe must be 64 bytes, got %zd",
			     PyBytes_Size(b));
		Py_DECREF(b);
		return NULL;
	}
	/* struct mlx5_cqe64: op_own is the last byte */
	op_own = (unsigned char)PyBytes_AsString(b)[63];
	Py_DECREF(b);
	return PyLong_FromLong(op_own >> 4);
}
