/*
 * mkey.c - mlx5 mkeys: Mlx5Mkey (mlx5.create_mkey, an indirect memory key
 * of a PD, closed by mlx5dv_destroy_mkey) and mlx5.wr_mr_list, the
 * inline mlx5dv_wr_mr_list of mlx5dv.h re-implemented through the
 * function pointers of struct mlx5dv_qp_ex.
 *
 * mlx5dv_qp_ex_from_ibv_qp_ex is a bare container_of in libmlx5: on a QP
 * of another provider it returns garbage.  wr_mr_list therefore asks the
 * checking mlx5dv_is_supported about the QP's device first and calls the
 * converter only for an mlx5 device; then it calls the library's
 * wr_mr_list pointer only where the library set it (a QP created with
 * MLX5DV_QP_EX_WITH_MR_LIST in its send_ops_flags), inside a wr_start()
 * batch of a QPEx.  The provider builds the UMR work request during the
 * call (the mkey's index and the SGE list are copied into the WQE), so
 * nothing of the arguments is held past it.
 */
#include "mlx5/mlx5.h"
#include "wr/wr.h"
#include <string.h>

/* ------------------------------------------------------------------ */
/* Mlx5Mkey                                                            */
/* ------------------------------------------------------------------ */

typedef struct {
	Handle h; /* obj: struct mlx5dv_mkey *; parent: PD */
	uint32_t create_flags;
	uint16_t max_entries;
} MkeyObject;

#define MKEYP(self) ((struct mlx5dv_mkey *)HANDLE(self)->obj)

static int mkey_destroy(Handle *h)
{
	int rc = MLX5.destroy_mkey(h->obj);

	return rc < 0 ? -rc : rc;
}

static const HandleKind mkey_kind = { "Mlx5Mkey", "mlx5dv_destroy_mkey",
				      mkey_destroy, NULL };

/* struct mlx5dv_mkey_init_attr as rdma-core 24 to 65 define it. */
_Static_assert(sizeof(struct mlx5dv_mkey_init_attr) == 16 ||
		       sizeof(void *) != 8,
	       "struct mlx5dv_mkey_init_attr changed size");

METHOD_DOC(mlx5_mod_create_mkey,
	   "Create an indirect mkey on a PD: a memory key whose layout a\n"
	   "UMR work request sets later (``wr_mr_list``).\n"
	   "\n"
	   "Wraps ``mlx5dv_create_mkey`` (man page mlx5dv_create_mkey(3),\n"
	   "rdma-core 24).\n"
	   "\n"
	   "Args:\n"
	   "    pd: the PD (of an mlx5 device).\n"
	   "    create_flags: ``MLX5DV_MKEY_INIT_ATTR_FLAGS_*`` (1 INDIRECT,\n"
	   "        which the library requires; 2 BLOCK_SIGNATURE, 4\n"
	   "        CRYPTO, 8 UPDATE_TAG, 16 REMOTE_INVALIDATE).\n"
	   "    max_entries: the most entries its layout will point to.\n"
	   "\n"
	   "Returns:\n"
	   "    A new Mlx5Mkey (``lkey``, ``rkey``), a child of pd.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: a value is out of range.\n"
	   "    ImportError: libmlx5.so.1 cannot be loaded.\n"
	   "    VerbsError: EBADF once pd is closed; EOPNOTSUPP on a device\n"
	   "        of another provider or when libmlx5 predates rdma-core\n"
	   "        24; else the verb failed.");

#define CREATE_MKEY_ARGS(X, S)                                         \
	X(S, HANDLE, PyObject *, pd, PD, ARG_ANY_PARENT)               \
	X(S, UINT, uint32_t, create_flags, .flags = ARG_OPT, .def = 1) \
	X(S, UINT, uint16_t, max_entries, .flags = ARG_OPT, .def = 1)
ARGS_FUNCTION(extern, mlx5_mod_create_mkey, "_mlx5_create_mkey",
	      CREATE_MKEY_ARGS, mod, a)
{
	struct mlx5dv_mkey_init_attr attr;
	struct mlx5dv_mkey *mk;
	PyObject *self;

	MLX5_NEED(create_mkey);
	MLX5_NEED(destroy_mkey);
	memset(&attr, 0, sizeof(attr));
	attr.pd = (struct ibv_pd *)HANDLE(a->pd)->obj;
	attr.create_flags = a->create_flags;
	attr.max_entries = a->max_entries;
	errno = 0;
	mk = MLX5.create_mkey(&attr);
	if (mk == NULL)
		return verbs_error_fmt(errno_or(EOPNOTSUPP),
				       "mlx5dv_create_mkey",
				       "create_flags=0x%x max_entries=%u",
				       (unsigned)a->create_flags,
				       (unsigned)a->max_entries);
	self = handle_adopt(ST.Mlx5Mkey_type, &mkey_kind, HANDLE(a->pd), mk);
	if (self != NULL) {
		((MkeyObject *)self)->create_flags = a->create_flags;
		((MkeyObject *)self)->max_entries = a->max_entries;
	}
	return self;
}

static PyObject *mkey_get_lkey(PyObject *self, void *c)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(MKEYP(self)->lkey);
}

static PyObject *mkey_get_rkey(PyObject *self, void *c)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(MKEYP(self)->rkey);
}

static PyObject *mkey_get_create_flags(PyObject *self, void *c)
{
	return PyLong_FromUnsignedLong(((MkeyObject *)self)->create_flags);
}

static PyObject *mkey_get_max_entries(PyObject *self, void *c)
{
	return PyLong_FromUnsignedLong(((MkeyObject *)self)->max_entries);
}

static PyObject *mkey_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.mlx5.Mkey closed>");
	return PyUnicode_FromFormat("<ibverbs.mlx5.Mkey lkey=0x%x rkey=0x%x>",
				    (unsigned)MKEYP(self)->lkey,
				    (unsigned)MKEYP(self)->rkey);
}

PyDoc_STRVAR(mkey__doc__,
	     "An mlx5 indirect mkey (``struct mlx5dv_mkey``): made by\n"
	     "``create_mkey``; its layout is set by a UMR work request\n"
	     "(``wr_mr_list``).  ``close()`` wraps ``mlx5dv_destroy_mkey``.");

static PyMethodDef mkey_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef mkey_getset[] = {
	{ "lkey", mkey_get_lkey, NULL, "The local key.", NULL },
	{ "rkey", mkey_get_rkey, NULL, "The remote key.", NULL },
	{ "create_flags", mkey_get_create_flags, NULL,
	  "The create_flags it was made with.", NULL },
	{ "max_entries", mkey_get_max_entries, NULL,
	  "The max_entries it was made with.", NULL },
	{ "pd", handle_get_parent, NULL, "The PD.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC_IN(Mlx5Mkey_spec, "ibverbs.mlx5", "Mkey", MkeyObject, 0,
		    mkey__doc__, handle_tp_dealloc, handle_tp_traverse,
		    mkey_repr, mkey_methods, mkey_getset);

/* ------------------------------------------------------------------ */
/* mlx5.wr_mr_list(qp, mkey, access_flags, sge_list)                   */
/* ------------------------------------------------------------------ */

/* The most SGEs one UMR takes here (the device's limit is max_entries;
 * the library checks it). */
#define MR_LIST_MAX 256

/* The struct mlx5dv_qp_ex of an ibv QP, or NULL with VerbsError set:
 * only for a QP whose device libmlx5 says is its own (the converter
 * checks nothing). */
static struct mlx5dv_qp_ex *mlx5_qpx(PyObject *qp, const char *verb)
{
	struct ibv_qp *q = QPP(qp);
	struct ibv_qp_ex *qpx;

	if (MLX5.is_supported == NULL || MLX5.qp_ex_from_ibv_qp_ex == NULL ||
	    IBV.qp_to_qp_ex == NULL) {
		verbs_error_fmt(EOPNOTSUPP, verb,
				"the loaded libmlx5 lacks mlx5dv_is_supported "
				"or mlx5dv_qp_ex_from_ibv_qp_ex");
		return NULL;
	}
	if (!MLX5.is_supported(q->context->device)) {
		verbs_error_fmt(EOPNOTSUPP, verb,
				"the QP's device is not an mlx5 device");
		return NULL;
	}
	qpx = IBV.qp_to_qp_ex(q);
	if (qpx == NULL) {
		verbs_error_fmt(EOPNOTSUPP, verb,
				"the QP has no extended send path");
		return NULL;
	}
	return MLX5.qp_ex_from_ibv_qp_ex(qpx);
}

METHOD_DOC(mlx5_mod_wr_mr_list,
	   "Post, in the open ``wr_start()`` batch, a UMR work request\n"
	   "that lays out ``mkey`` over a list of SGEs.\n"
	   "\n"
	   "Re-implements the inline ``mlx5dv_wr_mr_list`` of mlx5dv.h (man\n"
	   "page mlx5dv_wr_post(3), rdma-core 24) through the\n"
	   "``struct mlx5dv_qp_ex`` function pointers.  The QP must be an\n"
	   "mlx5 QPEx created with ``MLX5DV_QP_EX_WITH_MR_LIST`` in its mlx5\n"
	   "send_ops_flags; libmlx5's converter is only called once\n"
	   "``mlx5dv_is_supported`` said the QP's device is an mlx5 device.\n"
	   "The provider copies the SGEs into the work request: nothing is\n"
	   "held past the call.\n"
	   "\n"
	   "Args:\n"
	   "    qp: a QPEx inside ``wr_start()``.\n"
	   "    mkey: an Mlx5Mkey.\n"
	   "    access_flags: ``AccessFlags`` of the laid-out mkey.\n"
	   "    sge_list: a list of SGE (1 to 256).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: a value is out of range or sge_list is empty.\n"
	   "    ImportError: libmlx5.so.1 cannot be loaded.\n"
	   "    VerbsError: EBADF once qp or mkey is closed; EINVAL outside\n"
	   "        a batch; EOPNOTSUPP on a device of another provider or\n"
	   "        a QP created without MLX5DV_QP_EX_WITH_MR_LIST.");

#define MR_LIST_ARGS(X, S)                                       \
	X(S, HANDLE, PyObject *, qp, QPEx, ARG_ANY_PARENT)       \
	X(S, HANDLE, PyObject *, mkey, Mlx5Mkey, ARG_ANY_PARENT) \
	X(S, FLAGS, uint32_t, access_flags, AccessFlags)         \
	X(S, LIST, PyObject *, sge_list, SGE)
ARGS_FUNCTION(extern, mlx5_mod_wr_mr_list, "_mlx5_wr_mr_list", MR_LIST_ARGS,
	      mod, a)
{
	static const char verb[] = "mlx5dv_wr_mr_list";
	struct ibv_sge sge[MR_LIST_MAX];
	struct mlx5dv_qp_ex *mqp;
	Py_ssize_t i, n;

	n = PyList_Size(a->sge_list);
	if (n < 1 || n > MR_LIST_MAX) {
		PyErr_Format(PyExc_ValueError,
			     "sge_list must hold 1 to %d SGEs, not %zd",
			     MR_LIST_MAX, n);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		PyObject *s = PyList_GetItem(a->sge_list, i);

		if (!PyObject_TypeCheck(s, ST.SGE_type)) {
			PyErr_Format(PyExc_TypeError,
				     "sge_list[%zd] must be an SGE, not %R", i,
				     (PyObject *)Py_TYPE(s));
			return NULL;
		}
		sge[i] = *SGEP(s);
	}
	if (mlx5_load() < 0)
		return NULL;
	if (!QPO(a->qp)->in_batch)
		return verbs_error_fmt(EINVAL, verb,
				       "outside a batch: call qp.wr_start() "
				       "first");
	mqp = mlx5_qpx(a->qp, verb);
	if (mqp == NULL)
		return NULL;
	if (mqp->wr_mr_list == NULL)
		return verbs_error_fmt(EOPNOTSUPP, verb,
				       "the QP was not created with "
				       "MLX5DV_QP_EX_WITH_MR_LIST");
	mqp->wr_mr_list(mqp, MKEYP(a->mkey), a->access_flags, (uint16_t)n, sge);
	Py_RETURN_NONE;
}
