/*
 * cq.c - mlx5.CQ: an extended CQ made by mlx5dv_create_cq (CQE
 * compression, CQE padding, 128-byte CQEs), a subclass of CQEx: it polls
 * as any CQEx, until init_obj (obj.c) hands its ring to its user.
 */
#include "mlx5/mlx5.h"
#include "cq/cq.h"
#include <string.h>

/* The header's struct, unchanged since rdma-core 21 (cqe_size): passed
 * as is, zeroed. */
_Static_assert(sizeof(struct mlx5dv_cq_init_attr) == 24,
	       "struct mlx5dv_cq_init_attr changed size");

/* MLX5DV_CQ_INIT_ATTR_MASK_* */
#define M5_CQ_MASK_COMPRESSED_CQE (1ull << 0)
#define M5_CQ_MASK_FLAGS (1ull << 1)
#define M5_CQ_MASK_CQE_SIZE (1ull << 2)

struct m5_cq_args {
	PyObject *context;
	PyObject *init_attr;
	uint8_t cqe_comp_res_format;
	uint32_t flags;
	uint16_t cqe_size;
};

static struct ibv_cq_ex *m5_cq_make(struct ibv_context *ctx,
				    struct ibv_cq_init_attr_ex *attr, void *arg)
{
	const struct m5_cq_args *x = arg;
	struct mlx5dv_cq_init_attr ma;

	memset(&ma, 0, sizeof(ma));
	if (x->cqe_comp_res_format) {
		ma.comp_mask |= M5_CQ_MASK_COMPRESSED_CQE;
		ma.cqe_comp_res_format = x->cqe_comp_res_format;
	}
	if (x->flags) {
		ma.comp_mask |= M5_CQ_MASK_FLAGS;
		ma.flags = x->flags;
	}
	if (x->cqe_size) {
		ma.comp_mask |= M5_CQ_MASK_CQE_SIZE;
		ma.cqe_size = x->cqe_size;
	}
	return MLX5.create_cq(ctx, attr, &ma);
}

METHOD_DOC(mlx5_mod_create_cq,
	   "Create an mlx5 extended CQ: CQE compression, padding, size.\n"
	   "\n"
	   "Wraps ``mlx5dv_create_cq`` (man page mlx5dv_create_cq(3),\n"
	   "rdma-core 14).  Each option given (not 0) sets its\n"
	   "``mlx5dv_cq_init_attr.comp_mask`` bit.\n"
	   "\n"
	   "Args:\n"
	   "    context: an open Context of an mlx5 device.\n"
	   "    init_attr: a CQInitAttrEx, as ``Context.create_cq_ex()``\n"
	   "        takes.\n"
	   "    cqe_comp_res_format: ``CQEResFormat`` bits (HASH, CSUM,\n"
	   "        CSUM_STRIDX): compress CQEs of that format.\n"
	   "    flags: ``CQInitAttrFlags`` bits (CQE_PAD).\n"
	   "    cqe_size: 64 or 128 (bytes per CQE).\n"
	   "\n"
	   "Returns:\n"
	   "    The new mlx5.CQ.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: a value is out of range, or the channel is of\n"
	   "        another Context.\n"
	   "    ImportError: libmlx5.so.1 cannot be loaded.\n"
	   "    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	   "        on another provider's device; else the verb failed.");

static const ArgSpec m5_cq_params[] = {
	ARG_HANDLE(struct m5_cq_args, context, Context, ARG_ANY_PARENT),
	ARG_RECORD(struct m5_cq_args, init_attr, CQInitAttrEx),
	ARG_UINT(struct m5_cq_args, cqe_comp_res_format, .flags = ARG_KWOPT),
	ARG_UINT(struct m5_cq_args, flags, .flags = ARG_KWOPT),
	ARG_UINT(struct m5_cq_args, cqe_size, .flags = ARG_KWOPT),
	ARG_END
};
METHOD_ARGS(mlx5_mod_create_cq, "_mlx5_create_cq", m5_cq_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_create_cq, mod, struct m5_cq_args, a)
{
	MLX5_NEED(create_cq);
	return cqex_create(a->context, a->init_attr, ST.Mlx5CQ_type,
			   "mlx5dv_create_cq", m5_cq_make, a);
}

PyDoc_STRVAR(mlx5_cq__doc__,
	     "An mlx5 extended CQ made by ``mlx5.create_cq()``: a CQEx.\n"
	     "Once handed to ``mlx5.init_obj()`` its user polls its ring\n"
	     "and ``poll()`` refuses.");

/* The base's traverse (a GC type's spec must name one). */
static int mlx5_cq_traverse(PyObject *self, visitproc visit, void *arg)
{
	traverseproc base =
		(traverseproc)PyType_GetSlot(ST.CQEx_type, Py_tp_traverse);

	return base(self, visit, arg);
}

static PyType_Slot Mlx5CQ_slots[] = { { Py_tp_traverse, mlx5_cq_traverse },
				      { Py_tp_doc, (void *)mlx5_cq__doc__ },
				      { 0, NULL } };

PyType_Spec Mlx5CQ_spec = { "ibverbs.mlx5.CQ", 0, 0,
			    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			    Mlx5CQ_slots };
