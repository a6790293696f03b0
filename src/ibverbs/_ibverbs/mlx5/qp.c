/*
 * qp.c - mlx5.QP: a QP made by mlx5dv_create_qp (DC initiators and
 * targets, DCI streams, out-of-order placement, mlx5 send ops), a
 * subclass of QPEx (the wr_* builders work on it), with the DC
 * destination setters (mlx5dv_wr_set_dc_addr, mlx5dv_wr_set_dc_addr_
 * stream: static inlines of mlx5dv.h over the struct mlx5dv_qp_ex that
 * mlx5dv_qp_ex_from_ibv_qp_ex returns), and the QP-level verbs: UDP
 * source port, LAG port, DCI stream reset.
 *
 * mlx5dv_qp_ex_from_ibv_qp_ex is a bare container_of in libmlx5: it is
 * only ever called on an mlx5.QP, whose QP libmlx5 made.  The QP-level
 * verbs check their provider (rdma-core 33 on: is_mlx5_dev or the DV
 * ops lookup) and refuse other QPs: the module functions take any QP.
 */
#include "mlx5/mlx5.h"
#include "qp/qp.h"
#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The mirrors, checked against the header                             */
/* ------------------------------------------------------------------ */

#define M5_QP_SAME(f)                                                         \
	_Static_assert(                                                       \
		offsetof(struct m5_qp_init_attr, f) ==                        \
				offsetof(struct mlx5dv_qp_init_attr, f) &&    \
			sizeof(((struct m5_qp_init_attr *)0)->f) ==           \
				sizeof(((struct mlx5dv_qp_init_attr *)0)->f), \
		"struct m5_qp_init_attr." #f " differs from mlx5dv.h")
M5_QP_SAME(comp_mask);
M5_QP_SAME(create_flags);
M5_QP_SAME(dc_init_attr);
M5_QP_SAME(dc_init_attr.dct_access_key);
M5_QP_SAME(send_ops_flags);
_Static_assert(sizeof(struct m5_qp_init_attr) ==
		       sizeof(struct mlx5dv_qp_init_attr),
	       "struct m5_qp_init_attr's size differs from mlx5dv.h");
_Static_assert(offsetof(struct m5_qp_ex, wr_set_dc_addr) ==
		       offsetof(struct mlx5dv_qp_ex, wr_set_dc_addr),
	       "struct m5_qp_ex.wr_set_dc_addr differs from mlx5dv.h");
#ifdef IBVERBS_HAVE_MLX5DV_DCI_STREAMS
M5_QP_SAME(dc_init_attr.dci_streams);
_Static_assert(offsetof(struct m5_qp_ex, wr_set_dc_addr_stream) ==
		       offsetof(struct mlx5dv_qp_ex, wr_set_dc_addr_stream),
	       "struct m5_qp_ex.wr_set_dc_addr_stream differs from mlx5dv.h");
#endif
#undef M5_QP_SAME

#define M5_RAISES_LIB                                                      \
	"    ImportError: libmlx5.so.1 cannot be loaded.\n"                \
	"    VerbsError: EBADF once closed; EOPNOTSUPP on another\n"       \
	"        provider's object or when the loaded libmlx5 lacks the\n" \
	"        function; else the function failed (its error number)."

/* ------------------------------------------------------------------ */
/* mlx5.create_qp                                                      */
/* ------------------------------------------------------------------ */

struct m5_qp_args {
	PyObject *pd;
	PyObject *init_attr;
	uint32_t create_flags;
	uint32_t dc_type;
	uint64_t dct_access_key;
	uint8_t log_num_concurent, log_num_errored;
	uint64_t send_ops_flags;
};

static struct ibv_qp *m5_qp_make(struct ibv_context *ctx,
				 struct ibv_qp_init_attr_ex *ex, void *arg)
{
	const struct m5_qp_args *a = arg;
	struct m5_qp_init_attr ma;

	memset(&ma, 0, sizeof(ma));
	if (a->create_flags) {
		ma.comp_mask |= M5_QP_MASK_CREATE_FLAGS;
		ma.create_flags = a->create_flags;
	}
	if (a->dc_type) {
		ma.comp_mask |= M5_QP_MASK_DC;
		ma.dc_init_attr.dc_type = a->dc_type;
		ex->qp_type = IBV_QPT_DRIVER; /* libmlx5 requires it */
		if (a->dc_type == M5_DCTYPE_DCT)
			ma.dc_init_attr.dct_access_key = a->dct_access_key;
	}
	if (a->log_num_concurent || a->log_num_errored) {
		ma.comp_mask |= M5_QP_MASK_DCI_STREAMS;
		ma.dc_init_attr.dci_streams.log_num_concurent =
			a->log_num_concurent;
		ma.dc_init_attr.dci_streams.log_num_errored =
			a->log_num_errored;
	}
	if (a->send_ops_flags) {
		ma.comp_mask |= M5_QP_MASK_SEND_OPS_FLAGS;
		ma.send_ops_flags = a->send_ops_flags;
	}
	return MLX5.create_qp(ctx, ex, (struct mlx5dv_qp_init_attr *)&ma);
}

METHOD_DOC(mlx5_mod_create_qp,
	   "Create an mlx5 QP: a DC initiator (DCI) or target (DCT), DCI\n"
	   "streams, out-of-order placement, mlx5 send ops.\n"
	   "\n"
	   "Wraps ``mlx5dv_create_qp`` (man page mlx5dv_create_qp(3),\n"
	   "rdma-core 16; DCI streams 37, OOO_DP 55) and\n"
	   "``ibv_qp_to_qp_ex``.  Each option given (not 0) sets its\n"
	   "``mlx5dv_qp_init_attr.comp_mask`` bit.  With ``dc_type`` the\n"
	   "QP's type becomes DRIVER, as libmlx5 requires; a DCI's work\n"
	   "requests are addressed with ``wr_set_dc_addr()``.\n"
	   "\n"
	   "Args:\n"
	   "    pd: an open PD of an mlx5 device (its Context makes it).\n"
	   "    init_attr: a QPInitAttrEx (``send_ops_flags``: the\n"
	   "        ``wr_*`` builders the QP takes).\n"
	   "    create_flags: ``QPCreateFlags`` bits (OOO_DP, ...).\n"
	   "    dc_type: ``DCType.DCI`` or ``DCType.DCT``; 0: not DC.\n"
	   "    dct_access_key: a DCT's key, which initiators name.\n"
	   "    log_num_concurent: a DCI's streams: log2 of the\n"
	   "        concurrent streams.\n"
	   "    log_num_errored: log2 of the streams that may be in error.\n"
	   "    send_ops_flags: ``SendOpsFlags`` bits (mlx5's own\n"
	   "        builders).\n"
	   "\n"
	   "Returns:\n"
	   "    The new mlx5.QP, in the RESET state.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: a value is out of range, a CQ or SRQ is of\n"
	   "        another Context, ``dct_access_key`` without a DCT or\n"
	   "        streams without a DCI.\n" M5_RAISES_LIB);

static const ArgSpec m5_qp_params[] = {
	ARG_HANDLE(struct m5_qp_args, pd, PD, ARG_ANY_PARENT),
	ARG_RECORD(struct m5_qp_args, init_attr, QPInitAttrEx),
	ARG_UINT(struct m5_qp_args, create_flags, .flags = ARG_KWOPT),
	ARG_INT(struct m5_qp_args, dc_type, 0, M5_DCTYPE_DCI,
		.flags = ARG_KWOPT),
	ARG_UINT(struct m5_qp_args, dct_access_key, .flags = ARG_KWOPT),
	ARG_UINT(struct m5_qp_args, log_num_concurent, .flags = ARG_KWOPT),
	ARG_UINT(struct m5_qp_args, log_num_errored, .flags = ARG_KWOPT),
	ARG_UINT(struct m5_qp_args, send_ops_flags, .flags = ARG_KWOPT),
	ARG_END
};
METHOD_ARGS(mlx5_mod_create_qp, "_mlx5_create_qp", m5_qp_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_create_qp, mod, struct m5_qp_args, a)
{
	PyObject *res;

	if (a->dct_access_key && a->dc_type != M5_DCTYPE_DCT) {
		PyErr_SetString(PyExc_ValueError, "dct_access_key is for a DCT "
						  "(dc_type=DCType.DCT) only");
		return NULL;
	}
	if ((a->log_num_concurent || a->log_num_errored) &&
	    a->dc_type != M5_DCTYPE_DCI) {
		PyErr_SetString(PyExc_ValueError,
				"DCI streams (log_num_concurent, "
				"log_num_errored) are for a DCI "
				"(dc_type=DCType.DCI) only");
		return NULL;
	}
	MLX5_NEED(create_qp);
	res = qpex_create((PDObject *)a->pd, a->init_attr, ST.Mlx5QP_type,
			  "mlx5dv_create_qp", m5_qp_make, a);
	if (res != NULL && a->dc_type)
		QPO(res)->qp_type = IBV_QPT_DRIVER;
	return res;
}

/* ------------------------------------------------------------------ */
/* mlx5.QP.wr_set_dc_addr, wr_set_dc_addr_stream                       */
/* ------------------------------------------------------------------ */

/* The struct mlx5dv_qp_ex of the mlx5.QP self while a WR is open, or
 * NULL with an error set. */
static struct m5_qp_ex *m5_current_wr(PyObject *self, const char *verb)
{
	struct ibv_qp_ex *qpx;

	if (mlx5_load() < 0)
		return NULL;
	if (MLX5.qp_ex_from_ibv_qp_ex == NULL) {
		verbs_error_fmt(EOPNOTSUPP, "mlx5dv_qp_ex_from_ibv_qp_ex",
				"not exported by the loaded libmlx5 (needs "
				"rdma-core 24 or newer)");
		return NULL;
	}
	qpx = qpex_current_wr(self, verb);
	if (qpx == NULL)
		return NULL;
	return (struct m5_qp_ex *)MLX5.qp_ex_from_ibv_qp_ex(qpx);
}

/* The DC setters' shared docstring lines: the Args of the destination,
 * then the Raises up to the EOPNOTSUPP each words its own way. */
#define M5_DC_ARGS                                                     \
	"Args:\n"                                                      \
	"    ah: an AH of the QP's Context: the path to the target.\n" \
	"    remote_dctn: the target DCT's number.\n"                  \
	"    remote_dc_key: its ``dct_access_key``.\n"
#define M5_DC_RAISES                                                       \
	"Raises:\n"                                                        \
	"    TypeError: ah is not an AH, or a number is not an int.\n"     \
	"    ValueError: a number is out of range, or the AH is of\n"      \
	"        another Context.\n"                                       \
	"    ImportError: libmlx5.so.1 cannot be loaded.\n"                \
	"    VerbsError: EINVAL outside a batch, before a builder, on a\n" \
	"        QP that is not DC or when the WR has its destination;\n"

struct m5_dc_args {
	PyObject *ah;
	uint32_t remote_dctn;
	uint64_t remote_dc_key;
	uint16_t stream_id;
};
#define M5_DC_PARAMS                                                 \
	ARG_HANDLE(struct m5_dc_args, ah, AH, ARG_SAME_CONTEXT),     \
		ARG_INT(struct m5_dc_args, remote_dctn, 0, QPN_MAX), \
		ARG_UINT(struct m5_dc_args, remote_dc_key)

/* wr_set_dc_addr and, with stream, wr_set_dc_addr_stream: m's
 * arguments, the WR's checks, then the provider's setter. */
static PyObject *m5_set_dc_addr(PyObject *self, const MethodArgs *m,
				PyObject *args, PyObject *kw, int stream)
{
	const char *verb = stream ? "mlx5dv_wr_set_dc_addr_stream" :
				    "mlx5dv_wr_set_dc_addr";
	struct m5_dc_args a;
	struct m5_qp_ex *dv;
	struct ibv_ah *ah;

	if (args_parse(m, self, args, kw, &a) < 0)
		return NULL;
	dv = m5_current_wr(self, verb);
	if (dv == NULL)
		return NULL;
	if (!stream && dv->wr_set_dc_addr == NULL)
		return verbs_error_fmt(EOPNOTSUPP, verb,
				       "the QP offers no DC setter (not a "
				       "DCI)");
	if (stream && dv->wr_set_dc_addr_stream == NULL)
		return verbs_error_fmt(EOPNOTSUPP, verb,
				       "the QP offers no stream setter (not "
				       "a DCI with streams, or a libmlx5 "
				       "before rdma-core 37)");
	if (qpex_driver_addr(self, a.ah, verb) < 0)
		return NULL;
	ah = HANDLE(a.ah)->obj;
	if (stream)
		dv->wr_set_dc_addr_stream(dv, ah, a.remote_dctn,
					  a.remote_dc_key, a.stream_id);
	else
		dv->wr_set_dc_addr(dv, ah, a.remote_dctn, a.remote_dc_key);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(mlx5_qp_wr_set_dc_addr__doc__,
	     "Give the last builder's WR its DC destination (required on a\n"
	     "DCI).  The AH is held, and marked used, until the batch ends.\n"
	     "\n"
	     "Wraps ``mlx5dv_wr_set_dc_addr`` (a static inline of mlx5dv.h,\n"
	     "over ``mlx5dv_qp_ex_from_ibv_qp_ex``; rdma-core 24).\n"
	     "\n" M5_DC_ARGS "\n" M5_DC_RAISES
	     "        EOPNOTSUPP when the QP offers no DC setter; EBADF once\n"
	     "        closed.");

static const ArgSpec m5_dc_params[] = { M5_DC_PARAMS, ARG_END };
METHOD_ARGS(mlx5_qp_wr_set_dc_addr, "Mlx5QP.wr_set_dc_addr", m5_dc_params);

static PyObject *mlx5_qp_wr_set_dc_addr(PyObject *self, PyObject *args,
					PyObject *kw)
{
	HANDLE_CHECK(self);
	return m5_set_dc_addr(self, &mlx5_qp_wr_set_dc_addr_args, args, kw, 0);
}

PyDoc_STRVAR(mlx5_qp_wr_set_dc_addr_stream__doc__,
	     "As ``wr_set_dc_addr()``, on one of a DCI's streams.\n"
	     "\n"
	     "Wraps ``mlx5dv_wr_set_dc_addr_stream`` (a static inline of\n"
	     "mlx5dv.h, over ``mlx5dv_qp_ex_from_ibv_qp_ex``; rdma-core 37).\n"
	     "The QP must have been created with DCI streams.\n"
	     "\n" M5_DC_ARGS
	     "    stream_id: the stream, below 2**log_num_concurent.\n"
	     "\n" M5_DC_RAISES
	     "        EOPNOTSUPP when the QP offers no stream setter; EBADF\n"
	     "        once closed.");

static const ArgSpec m5_dc_stream_params[] = {
	M5_DC_PARAMS, ARG_UINT(struct m5_dc_args, stream_id), ARG_END
};
METHOD_ARGS(mlx5_qp_wr_set_dc_addr_stream, "Mlx5QP.wr_set_dc_addr_stream",
	    m5_dc_stream_params);

static PyObject *mlx5_qp_wr_set_dc_addr_stream(PyObject *self, PyObject *args,
					       PyObject *kw)
{
	HANDLE_CHECK(self);
	return m5_set_dc_addr(self, &mlx5_qp_wr_set_dc_addr_stream_args, args,
			      kw, 1);
}

/* ------------------------------------------------------------------ */
/* The QP-level verbs: module functions (any QP) and mlx5.QP methods   */
/* ------------------------------------------------------------------ */

static PyObject *m5_rc(int rc, const char *verb)
{
	if (rc != 0)
		return verbs_error(rc < 0 ? -rc : rc, verb);
	Py_RETURN_NONE;
}

static PyObject *m5_udp_sport(PyObject *qp, uint16_t sport)
{
	MLX5_NEED(modify_qp_udp_sport);
	return m5_rc(MLX5.modify_qp_udp_sport(QPP(qp), sport),
		     "mlx5dv_modify_qp_udp_sport");
}

static PyObject *m5_lag_port(PyObject *qp, uint8_t port)
{
	MLX5_NEED(modify_qp_lag_port);
	return m5_rc(MLX5.modify_qp_lag_port(QPP(qp), port),
		     "mlx5dv_modify_qp_lag_port");
}

static PyObject *m5_query_lag(PyObject *qp)
{
	uint8_t port = 0, active = 0;
	int rc;

	MLX5_NEED(query_qp_lag_port);
	rc = MLX5.query_qp_lag_port(QPP(qp), &port, &active);
	if (rc != 0)
		return verbs_error(rc < 0 ? -rc : rc,
				   "mlx5dv_query_qp_lag_port");
	return Py_BuildValue("(ii)", (int)port, (int)active);
}

static PyObject *m5_stream_reset(PyObject *qp, uint16_t stream_id)
{
	MLX5_NEED(dci_stream_id_reset);
	return m5_rc(MLX5.dci_stream_id_reset(QPP(qp), stream_id),
		     "mlx5dv_dci_stream_id_reset");
}

#define DOC_UDP_SPORT                                                   \
	"Set the UDP source port of a RoCE RC or UC QP's packets (in\n" \
	"RTS), which picks its path through an ECMP fabric.\n"          \
	"\n"                                                            \
	"Wraps ``mlx5dv_modify_qp_udp_sport`` (man page\n"              \
	"mlx5dv_modify_qp_udp_sport(3), rdma-core 33).\n"
#define DOC_LAG_PORT                                                  \
	"Send the QP's packets through this port of a LAG (bonded)\n" \
	"device: 1 or 2.\n"                                           \
	"\n"                                                          \
	"Wraps ``mlx5dv_modify_qp_lag_port`` (man page\n"             \
	"mlx5dv_modify_qp_lag_port(3), rdma-core 30).\n"
#define DOC_QUERY_LAG                                                    \
	"The LAG port the QP was set to and the port it sends through\n" \
	"now.\n"                                                         \
	"\n"                                                             \
	"Wraps ``mlx5dv_query_qp_lag_port`` (man page\n"                 \
	"mlx5dv_query_qp_lag_port(3), rdma-core 30).\n"
#define DOC_STREAM_RESET                                             \
	"Bring one stream of a DCI in RTS out of its error state.\n" \
	"\n"                                                         \
	"Wraps ``mlx5dv_dci_stream_id_reset`` (man page\n"           \
	"mlx5dv_dci_stream_id_reset(3), rdma-core 37).\n"
#define DOC_RETURNS_PAIR "Returns:\n    (port_num, active_port_num).\n"
#define DOC_ERRS                                           \
	"\n"                                               \
	"\n"                                               \
	"Raises:\n"                                        \
	"    TypeError: an argument has the wrong type.\n" \
	"    ValueError: a value is out of range.\n" M5_RAISES_LIB

/* A verb on a QP and one unsigned value (field, of C type T): the
 * module function mlx5_mod_<fn> ("_mlx5_<fn>(qp, field)") and the method
 * mlx5_qp_<meth> ("Mlx5QP.<meth>(field)"), both impl(qp, value); the
 * method is declared by the function's list less qp.  doc: both
 * docstrings' head; vdoc: the value's line of Args. */
#define M5_QP_VALUE_VERB(fn, meth, T, field, impl, doc, vdoc)             \
	METHOD_DOC(mlx5_mod_##fn, doc "\nArgs:\n" M5_DOC_QP "    " #field \
				      ": " vdoc DOC_ERRS);                \
	struct fn##_args {                                                \
		PyObject *qp;                                             \
		T field;                                                  \
	};                                                                \
	static const ArgSpec fn##_params[] = {                            \
		ARG_HANDLE(struct fn##_args, qp, QP, ARG_ANY_PARENT),     \
		ARG_UINT(struct fn##_args, field), ARG_END                \
	};                                                                \
	METHOD_ARGS(mlx5_mod_##fn, "_mlx5_" #fn, fn##_params);            \
	ARGS_FUNCTION_OF(extern, mlx5_mod_##fn, mod, struct fn##_args, a) \
	{                                                                 \
		return impl(a->qp, a->field);                             \
	}                                                                 \
	PyDoc_STRVAR(mlx5_qp_##meth##__doc__,                             \
		     doc "\nArgs:\n    " #field ": " vdoc DOC_ERRS);      \
	METHOD_ARGS(mlx5_qp_##meth, "Mlx5QP." #meth, fn##_params + 1);    \
	ARGS_METHOD_OF(static, mlx5_qp_##meth, self, struct fn##_args, a) \
	{                                                                 \
		return impl(self, a->field);                              \
	}
#define M5_DOC_QP "    qp: an open QP (of any provider: others refuse).\n"

M5_QP_VALUE_VERB(modify_qp_udp_sport, modify_udp_sport, uint16_t, udp_sport,
		 m5_udp_sport, DOC_UDP_SPORT, "the port.")
M5_QP_VALUE_VERB(modify_qp_lag_port, modify_lag_port, uint8_t, port_num,
		 m5_lag_port, DOC_LAG_PORT, "the LAG port.")
M5_QP_VALUE_VERB(dci_stream_id_reset, dci_stream_id_reset, uint16_t, stream_id,
		 m5_stream_reset, DOC_STREAM_RESET, "the stream.")

METHOD_DOC(mlx5_mod_query_qp_lag_port,
	   DOC_QUERY_LAG "\n"
			 "Args:\n" M5_DOC_QP "\n" DOC_RETURNS_PAIR "\n"
			 "Raises:\n"
			 "    TypeError: qp is not a QP.\n" M5_RAISES_LIB);
#define M5_QP_ONLY_ARGS(X, S) X(S, HANDLE, PyObject *, qp, QP, ARG_ANY_PARENT)
ARGS_FUNCTION(extern, mlx5_mod_query_qp_lag_port, "_mlx5_query_qp_lag_port",
	      M5_QP_ONLY_ARGS, mod, a)
{
	return m5_query_lag(a->qp);
}

PyDoc_STRVAR(mlx5_qp_query_lag_port__doc__,
	     DOC_QUERY_LAG DOC_RETURNS_PAIR "\n"
					    "Raises:\n" M5_RAISES_LIB);

static PyObject *mlx5_qp_query_lag_port(PyObject *self, PyObject *unused)
{
	HANDLE_CHECK(self);
	return m5_query_lag(self);
}

PyDoc_STRVAR(mlx5_qp__doc__,
	     "An mlx5 QP made by ``mlx5.create_qp()``: a QPEx, plus the DC\n"
	     "setters ``wr_set_dc_addr()``, ``wr_set_dc_addr_stream()``\n"
	     "and the mlx5 QP verbs.");

static PyMethodDef mlx5_qp_methods[] = {
	METHOD_KW("wr_set_dc_addr", mlx5_qp_wr_set_dc_addr),
	METHOD_KW("wr_set_dc_addr_stream", mlx5_qp_wr_set_dc_addr_stream),
	METHOD_KW("modify_udp_sport", mlx5_qp_modify_udp_sport),
	METHOD_KW("modify_lag_port", mlx5_qp_modify_lag_port),
	METHOD_NOARGS("query_lag_port", mlx5_qp_query_lag_port),
	METHOD_KW("dci_stream_id_reset", mlx5_qp_dci_stream_id_reset),
	{ NULL, NULL, 0, NULL }
};

/* The base's traverse (a GC type's spec must name one). */
static int mlx5_qp_traverse(PyObject *self, visitproc visit, void *arg)
{
	traverseproc base =
		(traverseproc)PyType_GetSlot(ST.QPEx_type, Py_tp_traverse);

	return base(self, visit, arg);
}

static PyType_Slot Mlx5QP_slots[] = { { Py_tp_traverse, mlx5_qp_traverse },
				      { Py_tp_doc, (void *)mlx5_qp__doc__ },
				      { Py_tp_methods, mlx5_qp_methods },
				      { 0, NULL } };

PyType_Spec Mlx5QP_spec = { "ibverbs.mlx5.QP", 0, 0,
			    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			    Mlx5QP_slots };
