/*
 * devx.c - DEVX, the mlx5 raw firmware command interface, as raw bytes:
 * mlx5.devx_general_cmd, devx_query_eqn, devx_qp_modify/query, and the
 * objects Mlx5DevxUmem (devx_umem_reg, devx_umem_reg_ex), Mlx5DevxUAR
 * (devx_alloc_uar), Mlx5DevxObj (devx_obj_create, modify, query) and
 * Mlx5DevxEventChannel (devx_create_event_channel, subscribe, get_event).
 *
 * The PRM layouts of the command mailboxes stay the caller's: "cmd" is a
 * bytes or bytearray object passed as is, "outlen" the size of the out
 * mailbox, returned as bytes (zeroed before the call).  What the package
 * owns is the lifetimes (each object a child of its Context, closed before
 * it, EBADF after close) and the errors (a VerbsError naming the function;
 * every DEVX call checks the provider, so on a Soft-RoCE or EFA device it
 * is EOPNOTSUPP or what the library answers).  All calls keep the GIL: a
 * firmware command is one ioctl; get_event waits for its fd with the GIL
 * released (fd_wait_readable) and reads with it held.
 *
 * Memory for a umem is given as an address and a length and retained by
 * an owner (mlx5.devx_umem_reg in mlx5.py takes a buffer and passes its
 * address and a memoryview that pins it).
 */
#include "mlx5/mlx5.h"
#include "qp/qp.h"
#include <stddef.h>
#include <string.h>

/* The largest out mailbox accepted (the PRM's are a few KiB). */
#define DEVX_OUTLEN_MAX (1u << 20)

#define CTXP(o) ((struct ibv_context *)HANDLE(o)->obj)

/* in as a new bytes reference (a bytearray copied: it could be resized),
 * or NULL with TypeError naming name. */
static PyObject *in_bytes(PyObject *in, const char *name)
{
	if (PyBytes_Check(in)) {
		Py_INCREF(in);
		return in;
	}
	if (PyByteArray_Check(in))
		return PyBytes_FromStringAndSize(PyByteArray_AsString(in),
						 PyByteArray_Size(in));
	PyErr_Format(PyExc_TypeError, "%s must be bytes or bytearray, not %R",
		     name, (PyObject *)Py_TYPE(in));
	return NULL;
}

/* A return code of a DEVX call as an errno (they answer a positive errno,
 * some paths -1 with errno, a few a negative errno). */
static int devx_err(int rc)
{
	if (rc < 0)
		return rc == -1 && errno ? errno : -rc;
	return rc;
}

/* The common core of the "cmd, outlen -> out" calls: the zeroed out
 * mailbox as bytes, filled by call(target, in, inlen, out, outlen), or
 * NULL with VerbsError(verb) set. */
typedef int (*devx_cmd_fn)(void *target, const void *in, size_t inlen,
			   void *out, size_t outlen);
/* call_<sym>: the devx_cmd_fn that runs libmlx5's sym on its target. */
#define DEVX_CALL(sym)                                               \
	static int call_##sym(void *t, const void *in, size_t inlen, \
			      void *out, size_t outlen)              \
	{                                                            \
		return MLX5.sym(t, in, inlen, out, outlen);          \
	}

static PyObject *devx_run(devx_cmd_fn fn, void *target, PyObject *in,
			  uint32_t outlen, const char *verb)
{
	PyObject *inb, *out;
	int rc;

	inb = in_bytes(in, "cmd");
	if (inb == NULL)
		return NULL;
	out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)outlen);
	if (out == NULL) {
		Py_DECREF(inb);
		return NULL;
	}
	memset(PyBytes_AsString(out), 0, outlen);
	errno = 0;
	rc = fn(target, PyBytes_AsString(inb), (size_t)PyBytes_Size(inb),
		PyBytes_AsString(out), outlen);
	if (rc != 0) {
		PyObject *e = verbs_error_fmt(devx_err(rc), verb,
					      "inlen=%zd outlen=%u",
					      PyBytes_Size(inb),
					      (unsigned)outlen);
		Py_DECREF(inb);
		Py_DECREF(out);
		return e;
	}
	Py_DECREF(inb);
	return out;
}

#define DEVX_RAISES_CMD                                                     \
	"Raises:\n"                                                         \
	"    TypeError: an argument has the wrong type (cmd: bytes or\n"    \
	"        bytearray).\n"                                             \
	"    ValueError: outlen is out of range (0 to 1 MiB).\n"            \
	"    ImportError: libmlx5.so.1 cannot be loaded.\n"                 \
	"    VerbsError: EBADF once closed; EOPNOTSUPP on a device of\n"    \
	"        another provider (Soft-RoCE, EFA) or when libmlx5 lacks\n" \
	"        the function; else the command failed (``errno``; the\n"   \
	"        firmware's syndrome is in the out mailbox, not\n"          \
	"        returned)."

/* The arguments after the target of every command: the input mailbox
 * and the size of the output one. */
#define DEVX_MAILBOX_ARGS(X, S)          \
	X(S, BUFFER, PyObject *, cmd, 0) \
	X(S, INT, uint32_t, outlen, 0, DEVX_OUTLEN_MAX)

/* The docstrings' lines for cmd and outlen, and for the out mailbox. */
#define DEVX_ARGS_CMD                                        \
	"    cmd: the input mailbox (bytes or bytearray).\n" \
	"    outlen: the size of the output mailbox.\n"
#define DEVX_RETURNS_CMD                                     \
	"\n"                                                 \
	"Returns:\n"                                         \
	"    The output mailbox (bytes of length outlen).\n" \
	"\n" DEVX_RAISES_CMD

/* devx_alloc_uar and devx_create_event_channel: a Context and flags. */
#define CTX_FLAGS_ARGS(X, S)                                   \
	X(S, HANDLE, PyObject *, ctx, Context, ARG_ANY_PARENT) \
	X(S, UINT, uint32_t, flags, .flags = ARG_OPT)
ARGS_DECLARE(ctx_flags, CTX_FLAGS_ARGS);
#define DEVX_RAISES_CTX_FLAGS                                         \
	"Raises:\n"                                                   \
	"    TypeError: an argument has the wrong type.\n"            \
	"    ValueError: flags is out of range.\n"                    \
	"    ImportError: libmlx5.so.1 cannot be loaded.\n"           \
	"    VerbsError: EBADF once ctx is closed; EOPNOTSUPP on a\n" \
	"        device of another provider; else the verb failed."

/* ------------------------------------------------------------------ */
/* mlx5.devx_general_cmd(ctx, cmd, outlen)                             */
/* ------------------------------------------------------------------ */

DEVX_CALL(devx_general_cmd)

METHOD_DOC(mlx5_mod_devx_general_cmd,
	   "Run a DEVX firmware command that makes no object.\n"
	   "\n"
	   "Wraps ``mlx5dv_devx_general_cmd`` (man page\n"
	   "mlx5dv_devx_general_cmd(3), rdma-core 21): ``cmd`` is the PRM\n"
	   "command's input mailbox (big-endian fields, the caller's layout),\n"
	   "passed as is.\n"
	   "\n"
	   "Args:\n"
	   "    ctx: a Context opened with ``open_device(name,\n"
	   "        CONTEXT_FLAGS_DEVX)``.\n" DEVX_ARGS_CMD DEVX_RETURNS_CMD);

#define CMD_ARGS(X, S)                                         \
	X(S, HANDLE, PyObject *, ctx, Context, ARG_ANY_PARENT) \
	DEVX_MAILBOX_ARGS(X, S)
ARGS_DECLARE(cmd, CMD_ARGS);
METHOD_ARGS(mlx5_mod_devx_general_cmd, "_mlx5_devx_general_cmd", cmd_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_devx_general_cmd, mod, struct cmd_args, a)
{
	MLX5_NEED(devx_general_cmd);
	return devx_run(call_devx_general_cmd, CTXP(a->ctx), a->cmd, a->outlen,
			"mlx5dv_devx_general_cmd");
}

/* ------------------------------------------------------------------ */
/* mlx5.devx_qp_modify(qp, cmd, outlen), devx_qp_query(qp, cmd, outlen) */
/* ------------------------------------------------------------------ */

DEVX_CALL(devx_qp_modify)

DEVX_CALL(devx_qp_query)

METHOD_DOC(mlx5_mod_devx_qp_modify,
	   "Modify a verbs QP with a raw DEVX command (e.g.\n"
	   "RST2INIT_QP with fields the verbs do not reach).\n"
	   "\n"
	   "Wraps ``mlx5dv_devx_qp_modify`` (man page\n"
	   "mlx5dv_devx_qp_modify(3), rdma-core 22).  The library fills in\n"
	   "the QP number; the rest of ``cmd`` is the caller's.  The\n"
	   "binding's view of the QP's state is not updated.\n"
	   "\n"
	   "Args:\n"
	   "    qp: a QP of an mlx5 device.\n" DEVX_ARGS_CMD DEVX_RETURNS_CMD);

#define QP_CMD_ARGS(X, S)                                \
	X(S, HANDLE, PyObject *, qp, QP, ARG_ANY_PARENT) \
	DEVX_MAILBOX_ARGS(X, S)
ARGS_DECLARE(qp_cmd, QP_CMD_ARGS);
METHOD_ARGS(mlx5_mod_devx_qp_modify, "_mlx5_devx_qp_modify", qp_cmd_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_devx_qp_modify, mod, struct qp_cmd_args, a)
{
	MLX5_NEED(devx_qp_modify);
	if (qp_check_idle(a->qp, "mlx5dv_devx_qp_modify") < 0)
		return NULL;
	return devx_run(call_devx_qp_modify, QPP(a->qp), a->cmd, a->outlen,
			"mlx5dv_devx_qp_modify");
}

METHOD_DOC(mlx5_mod_devx_qp_query,
	   "Query a verbs QP with a raw DEVX command (QUERY_QP).\n"
	   "\n"
	   "Wraps ``mlx5dv_devx_qp_query`` (man page\n"
	   "mlx5dv_devx_qp_modify(3), rdma-core 22).  The library fills in\n"
	   "the QP number.\n"
	   "\n"
	   "Args:\n"
	   "    qp: a QP of an mlx5 device.\n" DEVX_ARGS_CMD DEVX_RETURNS_CMD);

METHOD_ARGS(mlx5_mod_devx_qp_query, "_mlx5_devx_qp_query", qp_cmd_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_devx_qp_query, mod, struct qp_cmd_args, a)
{
	MLX5_NEED(devx_qp_query);
	return devx_run(call_devx_qp_query, QPP(a->qp), a->cmd, a->outlen,
			"mlx5dv_devx_qp_query");
}

/* ------------------------------------------------------------------ */
/* mlx5.devx_query_eqn(ctx, vector)                                    */
/* ------------------------------------------------------------------ */

METHOD_DOC(mlx5_mod_devx_query_eqn,
	   "The event queue number (EQN) behind a completion vector, for\n"
	   "a DEVX CQ's CREATE_CQ command.\n"
	   "\n"
	   "Wraps ``mlx5dv_devx_query_eqn`` (man page\n"
	   "mlx5dv_devx_query_eqn(3), rdma-core 21).\n"
	   "\n"
	   "Args:\n"
	   "    ctx: an open Context.\n"
	   "    vector: the completion vector (0 to\n"
	   "        ``ctx.num_comp_vectors - 1``).\n"
	   "\n"
	   "Returns:\n"
	   "    The EQN (an int).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: vector is out of range.\n"
	   "    ImportError: libmlx5.so.1 cannot be loaded.\n"
	   "    VerbsError: EBADF once ctx is closed; EOPNOTSUPP on a\n"
	   "        device of another provider; else the verb failed.");

#define QUERY_EQN_ARGS(X, S)                                   \
	X(S, HANDLE, PyObject *, ctx, Context, ARG_ANY_PARENT) \
	X(S, UINT, uint32_t, vector)
ARGS_FUNCTION(extern, mlx5_mod_devx_query_eqn, "_mlx5_devx_query_eqn",
	      QUERY_EQN_ARGS, mod, a)
{
	uint32_t eqn = 0;
	int rc;

	MLX5_NEED(devx_query_eqn);
	errno = 0;
	rc = MLX5.devx_query_eqn(CTXP(a->ctx), a->vector, &eqn);
	if (rc != 0)
		return verbs_error_fmt(devx_err(rc), "mlx5dv_devx_query_eqn",
				       "vector=%u", (unsigned)a->vector);
	return PyLong_FromUnsignedLong(eqn);
}

/* ------------------------------------------------------------------ */
/* Mlx5DevxUmem                                                        */
/* ------------------------------------------------------------------ */

typedef struct {
	Handle h; /* obj: struct mlx5dv_devx_umem *; parent: Context */
	PyObject *owner; /* what retains the memory, or NULL */
	uint64_t addr, size;
	uint32_t access;
	int dmabuf_fd; /* -1: by address */
} UmemObject;

static int umem_destroy(Handle *h)
{
	return devx_err(MLX5.devx_umem_dereg(h->obj));
}

/* Deregistered: the memory may go. */
static void umem_release(Handle *h)
{
	Py_CLEAR(((UmemObject *)h)->owner);
}

static const HandleKind umem_kind = { "Mlx5DevxUmem", "mlx5dv_devx_umem_dereg",
				      umem_destroy, umem_release };

/* A new Mlx5DevxUmem over u, child of ctx, holding owner. */
static PyObject *umem_wrap(PyObject *ctx, struct mlx5dv_devx_umem *u,
			   PyObject *owner, uint64_t addr, uint64_t size,
			   uint32_t access, int dmabuf_fd)
{
	UmemObject *self = HANDLE_ALLOC(UmemObject, ST.Mlx5DevxUmem_type);

	if (self == NULL) {
		MLX5.devx_umem_dereg(u);
		return NULL;
	}
	handle_init(HANDLE(self), &umem_kind, HANDLE(ctx));
	if (owner != NULL && owner != Py_None) {
		Py_INCREF(owner);
		self->owner = owner;
	}
	self->addr = addr;
	self->size = size;
	self->access = access;
	self->dmabuf_fd = dmabuf_fd;
	HANDLE_SET_OBJ(self, u);
	return (PyObject *)self;
}

/* The umem registrations' docstrings from the owner argument to the
 * start of VerbsError's line. */
#define DEVX_UMEM_OWNER_RAISES                                            \
	"    owner: what keeps the memory alive (held until close), or\n" \
	"        None.\n"                                                 \
	"\n"                                                              \
	"Returns:\n"                                                      \
	"    A new Mlx5DevxUmem (``umem_id``), a child of ctx.\n"         \
	"\n"                                                              \
	"Raises:\n"                                                       \
	"    TypeError: an argument has the wrong type.\n"                \
	"    ValueError: a value is out of range.\n"                      \
	"    ImportError: libmlx5.so.1 cannot be loaded.\n"               \
	"    VerbsError: EBADF once ctx is closed; EOPNOTSUPP on a\n"

METHOD_DOC(mlx5_mod_devx_umem_reg,
	   "Register user memory for DEVX objects (a umem: the queues,\n"
	   "doorbells and buffers a DEVX QP or CQ names by umem id).\n"
	   "\n"
	   "Wraps ``mlx5dv_devx_umem_reg`` (man page\n"
	   "mlx5dv_devx_umem_reg(3), rdma-core 21).  ``mlx5.devx_umem_reg``\n"
	   "takes a buffer instead of an address and passes a memoryview\n"
	   "that pins it as the owner.\n"
	   "\n"
	   "Args:\n"
	   "    ctx: an open Context (DEVX).\n"
	   "    addr: the memory's address.\n"
	   "    size: its length in bytes.\n"
	   "    access: ``AccessFlags`` bits.\n" DEVX_UMEM_OWNER_RAISES
	   "        device of another provider; else the verb failed.");

#define UMEM_REG_ARGS(X, S)                                    \
	X(S, HANDLE, PyObject *, ctx, Context, ARG_ANY_PARENT) \
	X(S, UINT, uint64_t, addr)                             \
	X(S, INT, uint64_t, size, 1, SIZE_MAX)                 \
	X(S, FLAGS, uint32_t, access, AccessFlags)             \
	X(S, OBJECT, PyObject *, owner, .flags = ARG_KWOPT | ARG_NONE)
ARGS_FUNCTION(extern, mlx5_mod_devx_umem_reg, "_mlx5_devx_umem_reg",
	      UMEM_REG_ARGS, mod, a)
{
	struct mlx5dv_devx_umem *u;

	MLX5_NEED(devx_umem_reg);
	errno = 0;
	u = MLX5.devx_umem_reg(CTXP(a->ctx), (void *)(uintptr_t)a->addr,
			       (size_t)a->size, a->access);
	if (u == NULL)
		return verbs_error_fmt(
			errno_or(EOPNOTSUPP), "mlx5dv_devx_umem_reg",
			"addr=%s size=%llu access=0x%x", HEX64(a->addr),
			(unsigned long long)a->size, (unsigned)a->access);
	return umem_wrap(a->ctx, u, a->owner, a->addr, a->size, a->access, -1);
}

/* struct mlx5dv_devx_umem_in (rdma-core 35; dmabuf_fd: 37), mirrored:
 * the bullseye (33) header lacks it. */
struct m5_umem_in {
	void *addr;
	size_t size;
	uint32_t access;
	uint64_t pgsz_bitmap;
	uint64_t comp_mask;
	int dmabuf_fd;
};
#define M5_UMEM_MASK_DMABUF 1u

#ifdef IBVERBS_HAVE_MLX5DV_UMEM_DMABUF
#define UMEM_SAME(f)                                                          \
	_Static_assert(                                                       \
		offsetof(struct m5_umem_in, f) ==                             \
				offsetof(struct mlx5dv_devx_umem_in, f) &&    \
			sizeof(((struct m5_umem_in *)0)->f) ==                \
				sizeof(((struct mlx5dv_devx_umem_in *)0)->f), \
		"struct m5_umem_in." #f " differs from mlx5dv.h")
UMEM_SAME(addr);
UMEM_SAME(size);
UMEM_SAME(access);
UMEM_SAME(pgsz_bitmap);
UMEM_SAME(comp_mask);
UMEM_SAME(dmabuf_fd);
_Static_assert(sizeof(struct m5_umem_in) == sizeof(struct mlx5dv_devx_umem_in),
	       "struct m5_umem_in's size differs from mlx5dv.h");
_Static_assert(MLX5DV_UMEM_MASK_DMABUF == M5_UMEM_MASK_DMABUF,
	       "MLX5DV_UMEM_MASK_DMABUF differs");
#undef UMEM_SAME
#endif

METHOD_DOC(
	mlx5_mod_devx_umem_reg_ex,
	"Register user memory, or a dma-buf (GPU memory), for DEVX\n"
	"objects, with the page sizes the device may map it with.\n"
	"\n"
	"Wraps ``mlx5dv_devx_umem_reg_ex`` (man page\n"
	"mlx5dv_devx_umem_reg(3), rdma-core 35; a dma-buf: 37).  With\n"
	"``dmabuf_fd`` the memory is that dma-buf's and ``addr`` is the\n"
	"offset in it (``comp_mask`` MLX5DV_UMEM_MASK_DMABUF).\n"
	"\n"
	"Args:\n"
	"    ctx: an open Context (DEVX).\n"
	"    addr: the memory's address (or the offset in the dma-buf).\n"
	"    size: its length in bytes.\n"
	"    access: ``AccessFlags`` bits.\n"
	"    pgsz_bitmap: the page sizes allowed (bit n: 2**n bytes).\n"
	"    dmabuf_fd: a dma-buf file descriptor, or None.\n" DEVX_UMEM_OWNER_RAISES
	"        device of another provider or when libmlx5 predates\n"
	"        rdma-core 35; else the verb failed.");

#define UMEM_REG_EX_ARGS(X, S)                                                 \
	X(S, HANDLE, PyObject *, ctx, Context, ARG_ANY_PARENT)                 \
	X(S, UINT, uint64_t, addr)                                             \
	X(S, INT, uint64_t, size, 1, SIZE_MAX)                                 \
	X(S, FLAGS, uint32_t, access, AccessFlags)                             \
	X(S, UINT, uint64_t, pgsz_bitmap)                                      \
	X(S, INT, int, dmabuf_fd, 0, INT32_MAX, .flags = ARG_KWOPT | ARG_NONE, \
	  .mask = 1)                                                           \
	X(S, OBJECT, PyObject *, owner, .flags = ARG_KWOPT | ARG_NONE)
ARGS_FUNCTION_MASK(extern, mlx5_mod_devx_umem_reg_ex, "_mlx5_devx_umem_reg_ex",
		   UMEM_REG_EX_ARGS, mod, a)
{
	struct m5_umem_in in;
	struct mlx5dv_devx_umem *u;

	MLX5_NEED(devx_umem_reg_ex);
	memset(&in, 0, sizeof(in));
	in.addr = (void *)(uintptr_t)a->addr;
	in.size = (size_t)a->size;
	in.access = a->access;
	in.pgsz_bitmap = a->pgsz_bitmap;
	in.dmabuf_fd = -1;
	if (a->mask & 1) {
		in.comp_mask = M5_UMEM_MASK_DMABUF;
		in.dmabuf_fd = a->dmabuf_fd;
	}
	errno = 0;
	u = MLX5.devx_umem_reg_ex(CTXP(a->ctx),
				  (struct mlx5dv_devx_umem_in *)&in);
	if (u == NULL)
		return verbs_error_fmt(
			errno_or(EOPNOTSUPP), "mlx5dv_devx_umem_reg_ex",
			"addr=%s size=%llu access=0x%x pgsz_bitmap=%s "
			"dmabuf_fd=%d",
			HEX64(a->addr), (unsigned long long)a->size,
			(unsigned)a->access, HEX64(a->pgsz_bitmap),
			in.dmabuf_fd);
	return umem_wrap(a->ctx, u, a->owner, a->addr, a->size, a->access,
			 in.dmabuf_fd);
}

#define UMEMO(self) ((UmemObject *)(self))

static PyObject *umem_get_umem_id(PyObject *self, void *c)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(
		((struct mlx5dv_devx_umem *)HANDLE(self)->obj)->umem_id);
}

static PyObject *umem_get_addr(PyObject *self, void *c)
{
	return PyLong_FromUnsignedLongLong(UMEMO(self)->addr);
}

static PyObject *umem_get_size(PyObject *self, void *c)
{
	return PyLong_FromUnsignedLongLong(UMEMO(self)->size);
}

static PyObject *umem_get_access(PyObject *self, void *c)
{
	return PyLong_FromUnsignedLong(UMEMO(self)->access);
}

static PyObject *umem_get_owner(PyObject *self, void *c)
{
	return obj_or_none(UMEMO(self)->owner);
}

static int umem_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(UMEMO(self)->owner);
	return handle_traverse(HANDLE(self), visit, arg);
}

/* The memory stays pinned by its owner while still registered (a failed
 * dereg): the owner's reference is leaked on purpose, as MR does. */
static void umem_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	if (HANDLE(self)->obj != NULL)
		UMEMO(self)->owner = NULL;
	Py_CLEAR(UMEMO(self)->owner);
	handle_dealloc(HANDLE(self));
}

static PyObject *umem_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.mlx5.DevxUmem closed>");
	return PyUnicode_FromFormat(
		"<ibverbs.mlx5.DevxUmem umem_id=%u size=%llu>",
		(unsigned)((struct mlx5dv_devx_umem *)HANDLE(self)->obj)
			->umem_id,
		(unsigned long long)UMEMO(self)->size);
}

PyDoc_STRVAR(umem__doc__,
	     "Memory registered for DEVX objects (``struct\n"
	     "mlx5dv_devx_umem``): made by ``devx_umem_reg`` or\n"
	     "``devx_umem_reg_ex``; its ``umem_id`` goes into the PRM\n"
	     "commands.  ``close()`` wraps ``mlx5dv_devx_umem_dereg`` (EBUSY\n"
	     "from the kernel while a DEVX object still uses it) and then\n"
	     "releases ``owner``.");

static PyMethodDef umem_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef umem_getset[] = {
	{ "umem_id", umem_get_umem_id, NULL,
	  "The umem id the PRM commands name.", NULL },
	{ "addr", umem_get_addr, NULL,
	  "The address registered (or the dma-buf offset).", NULL },
	{ "size", umem_get_size, NULL, "The length registered.", NULL },
	{ "access", umem_get_access, NULL, "The access flags given.", NULL },
	{ "owner", umem_get_owner, NULL,
	  "What retains the memory, or None; released on close.", NULL },
	{ "context", handle_get_parent, NULL, "The Context.", NULL },
	HANDLE_GETSETS_END
};

static PyType_Slot umem_slots[] = {
	{ Py_tp_doc, (void *)umem__doc__ }, { Py_tp_new, handle_no_new },
	{ Py_tp_dealloc, umem_dealloc },    { Py_tp_traverse, umem_traverse },
	{ Py_tp_repr, umem_repr },	    { Py_tp_methods, umem_methods },
	{ Py_tp_getset, umem_getset },	    { 0, NULL }
};
PyType_Spec Mlx5DevxUmem_spec = { "ibverbs.mlx5.DevxUmem", sizeof(UmemObject),
				  0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
				  umem_slots };

/* ------------------------------------------------------------------ */
/* Mlx5DevxUAR                                                         */
/* ------------------------------------------------------------------ */

typedef struct {
	Handle h; /* obj: struct mlx5dv_devx_uar *; parent: Context */
	uint32_t flags;
} UarObject;

static int uar_destroy(Handle *h)
{
	MLX5.devx_free_uar(h->obj);
	return 0;
}

static const HandleKind uar_kind = { "Mlx5DevxUAR", "mlx5dv_devx_free_uar",
				     uar_destroy, NULL };

METHOD_DOC(mlx5_mod_devx_alloc_uar,
	   "Allocate a UAR page (the doorbell page a DEVX QP or CQ rings,\n"
	   "mapped into this process).\n"
	   "\n"
	   "Wraps ``mlx5dv_devx_alloc_uar`` (man page\n"
	   "mlx5dv_devx_alloc_uar(3), rdma-core 21).\n"
	   "\n"
	   "Args:\n"
	   "    ctx: an open Context (DEVX).\n"
	   "    flags: ``MLX5DV_UAR_ALLOC_TYPE_*`` (0 BF, 1 NC; 0x80000000\n"
	   "        NC_DEDICATED in newer releases).\n"
	   "\n"
	   "Returns:\n"
	   "    A new Mlx5DevxUAR (``reg_addr``, ``base_addr``, ``page_id``,\n"
	   "    ``mmap_off``, ``comp_mask``), a child of ctx.\n"
	   "\n" DEVX_RAISES_CTX_FLAGS);

METHOD_ARGS(mlx5_mod_devx_alloc_uar, "_mlx5_devx_alloc_uar", ctx_flags_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_devx_alloc_uar, mod, struct ctx_flags_args, a)
{
	struct mlx5dv_devx_uar *u;
	PyObject *self;

	MLX5_NEED(devx_alloc_uar);
	errno = 0;
	u = MLX5.devx_alloc_uar(CTXP(a->ctx), a->flags);
	if (u == NULL)
		return verbs_error_fmt(errno_or(EOPNOTSUPP),
				       "mlx5dv_devx_alloc_uar", "flags=0x%x",
				       (unsigned)a->flags);
	self = handle_adopt(ST.Mlx5DevxUAR_type, &uar_kind, HANDLE(a->ctx), u);
	if (self != NULL)
		((UarObject *)self)->flags = a->flags;
	return self;
}

#define UARP(self) ((struct mlx5dv_devx_uar *)HANDLE(self)->obj)

static PyObject *uar_get_reg_addr(PyObject *self, void *c)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLongLong(
		(unsigned long long)(uintptr_t)UARP(self)->reg_addr);
}

static PyObject *uar_get_base_addr(PyObject *self, void *c)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLongLong(
		(unsigned long long)(uintptr_t)UARP(self)->base_addr);
}

static PyObject *uar_get_page_id(PyObject *self, void *c)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(UARP(self)->page_id);
}

static PyObject *uar_get_mmap_off(PyObject *self, void *c)
{
	HANDLE_CHECK(self);
	return PyLong_FromLongLong((long long)UARP(self)->mmap_off);
}

static PyObject *uar_get_comp_mask(PyObject *self, void *c)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLongLong(UARP(self)->comp_mask);
}

static PyObject *uar_get_flags(PyObject *self, void *c)
{
	return PyLong_FromUnsignedLong(((UarObject *)self)->flags);
}

static PyObject *uar_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.mlx5.DevxUAR closed>");
	return PyUnicode_FromFormat("<ibverbs.mlx5.DevxUAR page_id=%u>",
				    (unsigned)UARP(self)->page_id);
}

PyDoc_STRVAR(uar__doc__,
	     "A UAR page allocated for DEVX (``struct mlx5dv_devx_uar``):\n"
	     "made by ``devx_alloc_uar``.  The addresses are integers into\n"
	     "this process's mapping, valid until ``close()``, which wraps\n"
	     "``mlx5dv_devx_free_uar``; reading them after close raises\n"
	     "EBADF.");

static PyMethodDef uar_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef uar_getset[] = {
	{ "reg_addr", uar_get_reg_addr, NULL,
	  "The doorbell register's address (an int).", NULL },
	{ "base_addr", uar_get_base_addr, NULL,
	  "The UAR page's address (an int).", NULL },
	{ "page_id", uar_get_page_id, NULL,
	  "The UAR page index the PRM commands name.", NULL },
	{ "mmap_off", uar_get_mmap_off, NULL,
	  "The mmap offset of the page on the device file.", NULL },
	{ "comp_mask", uar_get_comp_mask, NULL,
	  "The struct's comp_mask as the library left it.", NULL },
	{ "flags", uar_get_flags, NULL, "The flags it was allocated with.",
	  NULL },
	{ "context", handle_get_parent, NULL, "The Context.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC_IN(Mlx5DevxUAR_spec, "ibverbs.mlx5", "DevxUAR", UarObject, 0,
		    uar__doc__, handle_tp_dealloc, handle_tp_traverse, uar_repr,
		    uar_methods, uar_getset);

/* ------------------------------------------------------------------ */
/* Mlx5DevxObj                                                         */
/* ------------------------------------------------------------------ */

typedef struct {
	Handle h; /* obj: struct mlx5dv_devx_obj *; parent: Context */
} DevxObjObject;

#define DOBJP(self) ((struct mlx5dv_devx_obj *)HANDLE(self)->obj)

static int devx_obj_destroy(Handle *h)
{
	return devx_err(MLX5.devx_obj_destroy(h->obj));
}

static const HandleKind devx_obj_kind = { "Mlx5DevxObj",
					  "mlx5dv_devx_obj_destroy",
					  devx_obj_destroy, NULL };

/* mlx5dv_devx_obj_create as a devx_cmd_fn: target is a devx_create,
 * which receives the object. */
struct devx_create {
	struct ibv_context *ctx;
	struct mlx5dv_devx_obj *obj;
};

static int obj_create(void *t, const void *in, size_t inlen, void *out,
		      size_t outlen)
{
	struct devx_create *c = t;

	c->obj = MLX5.devx_obj_create(c->ctx, in, inlen, out, outlen);
	if (c->obj == NULL)
		return errno_or(EOPNOTSUPP);
	return 0;
}

METHOD_DOC(mlx5_mod_devx_obj_create,
	   "Create a firmware object with a raw DEVX command (CREATE_QP,\n"
	   "CREATE_CQ, CREATE_MKEY, ...).\n"
	   "\n"
	   "Wraps ``mlx5dv_devx_obj_create`` (man page\n"
	   "mlx5dv_devx_obj_create(3), rdma-core 21): ``cmd`` is the PRM\n"
	   "command's input mailbox, the caller's layout; the library\n"
	   "remembers the matching destroy command.\n"
	   "\n"
	   "Args:\n"
	   "    ctx: an open Context (DEVX).\n" DEVX_ARGS_CMD "\n"
	   "Returns:\n"
	   "    ``(obj, out)``: the new Mlx5DevxObj (a child of ctx; close\n"
	   "    destroys it) and the output mailbox (bytes of length\n"
	   "    outlen: the object's number is in it).\n"
	   "\n" DEVX_RAISES_CMD);

METHOD_ARGS(mlx5_mod_devx_obj_create, "_mlx5_devx_obj_create", cmd_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_devx_obj_create, mod, struct cmd_args, a)
{
	struct devx_create c = { NULL, NULL };
	PyObject *out, *self;

	MLX5_NEED(devx_obj_create);
	c.ctx = CTXP(a->ctx);
	out = devx_run(obj_create, &c, a->cmd, a->outlen,
		       "mlx5dv_devx_obj_create");
	if (out == NULL)
		return NULL;
	self = handle_adopt(ST.Mlx5DevxObj_type, &devx_obj_kind, HANDLE(a->ctx),
			    c.obj);
	if (self == NULL) {
		Py_DECREF(out);
		return NULL;
	}
	return Py_BuildValue("(NN)", self, out);
}

DEVX_CALL(devx_obj_modify)

DEVX_CALL(devx_obj_query)

/* modify and query: the command (cmd_params less its ctx) run by
 * fn on the object. */
static PyObject *devx_obj_cmd(PyObject *self, const MethodArgs *m,
			      PyObject *args, PyObject *kw, devx_cmd_fn fn,
			      const char *verb)
{
	struct cmd_args a;

	if (args_parse(m, self, args, kw, &a) < 0)
		return NULL;
	return devx_run(fn, DOBJP(self), a.cmd, a.outlen, verb);
}

PyDoc_STRVAR(devx_obj_modify__doc__,
	     "Modify the object with a raw DEVX command.\n"
	     "\n"
	     "Wraps ``mlx5dv_devx_obj_modify`` (man page\n"
	     "mlx5dv_devx_obj_create(3), rdma-core 21).\n"
	     "\n"
	     "Args:\n" DEVX_ARGS_CMD DEVX_RETURNS_CMD);

METHOD_ARGS(devx_obj_modify, "Mlx5DevxObj.modify", cmd_params + 1);

static PyObject *devx_obj_modify(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return devx_obj_cmd(self, &devx_obj_modify_args, args, kw,
			    call_devx_obj_modify, "mlx5dv_devx_obj_modify");
}

PyDoc_STRVAR(devx_obj_query__doc__,
	     "Query the object with a raw DEVX command.\n"
	     "\n"
	     "Wraps ``mlx5dv_devx_obj_query`` (man page\n"
	     "mlx5dv_devx_obj_create(3), rdma-core 21).\n"
	     "\n"
	     "Args:\n" DEVX_ARGS_CMD DEVX_RETURNS_CMD);

METHOD_ARGS(devx_obj_query, "Mlx5DevxObj.query", cmd_params + 1);

static PyObject *devx_obj_query(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return devx_obj_cmd(self, &devx_obj_query_args, args, kw,
			    call_devx_obj_query, "mlx5dv_devx_obj_query");
}

static PyObject *devx_obj_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.mlx5.DevxObj closed>");
	return PyUnicode_FromString("<ibverbs.mlx5.DevxObj>");
}

PyDoc_STRVAR(devx_obj__doc__,
	     "A firmware object made by a raw DEVX command (``struct\n"
	     "mlx5dv_devx_obj``): made by ``devx_obj_create``.  ``close()``\n"
	     "wraps ``mlx5dv_devx_obj_destroy`` (the destroy command the\n"
	     "library derived from the create).");

static PyMethodDef devx_obj_methods[] = { METHOD_KW("modify", devx_obj_modify),
					  METHOD_KW("query", devx_obj_query),
					  HANDLE_METHODS_END };

static PyGetSetDef devx_obj_getset[] = { { "context", handle_get_parent, NULL,
					   "The Context.", NULL },
					 HANDLE_GETSETS_END };

HANDLE_TYPE_SPEC_IN(Mlx5DevxObj_spec, "ibverbs.mlx5", "DevxObj", DevxObjObject,
		    0, devx_obj__doc__, handle_tp_dealloc, handle_tp_traverse,
		    devx_obj_repr, devx_obj_methods, devx_obj_getset);

/* ------------------------------------------------------------------ */
/* Mlx5DevxEventChannel                                                */
/* ------------------------------------------------------------------ */

typedef struct {
	Handle h; /* obj: struct mlx5dv_devx_event_channel *; parent: Context */
	uint32_t flags;
} EventChannelObject;

#define ECHP(self) ((struct mlx5dv_devx_event_channel *)HANDLE(self)->obj)

static int ech_destroy(Handle *h)
{
	MLX5.devx_destroy_event_channel(h->obj);
	return 0;
}

static const HandleKind ech_kind = { "Mlx5DevxEventChannel",
				     "mlx5dv_devx_destroy_event_channel",
				     ech_destroy, NULL };

METHOD_DOC(mlx5_mod_devx_create_event_channel,
	   "Create a DEVX event channel: a file descriptor that delivers\n"
	   "the firmware events (EQEs) subscribed on it.\n"
	   "\n"
	   "Wraps ``mlx5dv_devx_create_event_channel`` (man page\n"
	   "mlx5dv_devx_create_event_channel(3), rdma-core 25).\n"
	   "\n"
	   "Args:\n"
	   "    ctx: an open Context (DEVX).\n"
	   "    flags: ``MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_*`` (1:\n"
	   "        OMIT_EV_DATA, events carry only their cookie).\n"
	   "\n"
	   "Returns:\n"
	   "    A new Mlx5DevxEventChannel (``fd``), a child of ctx.\n"
	   "\n" DEVX_RAISES_CTX_FLAGS);

METHOD_ARGS(mlx5_mod_devx_create_event_channel,
	    "_mlx5_devx_create_event_channel", ctx_flags_params);

ARGS_FUNCTION_OF(extern, mlx5_mod_devx_create_event_channel, mod,
		 struct ctx_flags_args, a)
{
	struct mlx5dv_devx_event_channel *ch;
	PyObject *self;

	MLX5_NEED(devx_create_event_channel);
	errno = 0;
	ch = MLX5.devx_create_event_channel(
		CTXP(a->ctx),
		(enum mlx5dv_devx_create_event_channel_flags)a->flags);
	if (ch == NULL)
		return verbs_error_fmt(errno_or(EOPNOTSUPP),
				       "mlx5dv_devx_create_event_channel",
				       "flags=0x%x", (unsigned)a->flags);
	self = handle_adopt(ST.Mlx5DevxEventChannel_type, &ech_kind,
			    HANDLE(a->ctx), ch);
	if (self != NULL)
		((EventChannelObject *)self)->flags = a->flags;
	return self;
}

PyDoc_STRVAR(ech_subscribe__doc__,
	     "Subscribe the channel to events of an object (or to the\n"
	     "device's unaffiliated events).\n"
	     "\n"
	     "Wraps ``mlx5dv_devx_subscribe_devx_event`` (man page\n"
	     "mlx5dv_devx_subscribe_devx_event(3), rdma-core 25).\n"
	     "\n"
	     "Args:\n"
	     "    obj: a Mlx5DevxObj of this channel's Context, or None for\n"
	     "        unaffiliated events.\n"
	     "    events: the PRM event types (a list of ints, 0 to 65535).\n"
	     "    cookie: a 64-bit value delivered with each event.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an argument has the wrong type.\n"
	     "    ValueError: an event type or the cookie is out of range,\n"
	     "        events is empty, or obj belongs to another Context.\n"
	     "    VerbsError: EBADF once the channel or obj is closed;\n"
	     "        EOPNOTSUPP on a device of another provider; else the\n"
	     "        verb failed.");

#define SUBSCRIBE_ARGS(X, S)                                         \
	X(S, HANDLE, PyObject *, obj, Mlx5DevxObj, ARG_SAME_CONTEXT, \
	  .flags = ARG_NONE)                                         \
	X(S, LIST, PyObject *, events, int)                          \
	X(S, UINT, uint64_t, cookie, .flags = ARG_OPT)
ARGS_DECLARE(subscribe, SUBSCRIBE_ARGS);
METHOD_ARGS(ech_subscribe, "Mlx5DevxEventChannel.subscribe", subscribe_params);

/* The most event types one subscription takes. */
#define EVENTS_MAX 256

static PyObject *ech_subscribe(PyObject *self, PyObject *args, PyObject *kw)
{
	struct subscribe_args a;
	uint16_t ev[EVENTS_MAX];
	Py_ssize_t i, n;
	int rc;

	HANDLE_CHECK(self);
	if (args_parse(&ech_subscribe_args, self, args, kw, &a) < 0)
		return NULL;
	n = PyList_Size(a.events);
	if (n < 1 || n > EVENTS_MAX) {
		PyErr_Format(PyExc_ValueError,
			     "events must list 1 to %d event types, not %zd",
			     EVENTS_MAX, n);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		unsigned long v;

		v = PyLong_AsUnsignedLong(PyList_GetItem(a.events, i));
		if (PyErr_Occurred() || v > UINT16_MAX) {
			if (PyErr_Occurred() &&
			    !PyErr_ExceptionMatches(PyExc_OverflowError) &&
			    !PyErr_ExceptionMatches(PyExc_TypeError))
				return NULL;
			if (PyErr_Occurred() &&
			    PyErr_ExceptionMatches(PyExc_TypeError)) {
				PyErr_Clear();
				PyErr_Format(PyExc_TypeError,
					     "events[%zd] must be an int", i);
				return NULL;
			}
			PyErr_Clear();
			PyErr_Format(PyExc_ValueError,
				     "events[%zd] must be 0 to 65535", i);
			return NULL;
		}
		ev[i] = (uint16_t)v;
	}
	MLX5_NEED(devx_subscribe_devx_event);
	/* Converting the list ran Python code: check again. */
	if (handle_check(HANDLE(self)) < 0 ||
	    (a.obj != NULL && handle_check(HANDLE(a.obj)) < 0))
		return NULL;
	errno = 0;
	rc = MLX5.devx_subscribe_devx_event(ECHP(self),
					    a.obj != NULL ? DOBJP(a.obj) : NULL,
					    (uint16_t)(n * sizeof(ev[0])), ev,
					    a.cookie);
	if (rc != 0)
		return verbs_error_fmt(devx_err(rc),
				       "mlx5dv_devx_subscribe_devx_event",
				       "%zd event types cookie=%s", n,
				       HEX64(a.cookie));
	Py_RETURN_NONE;
}

PyDoc_STRVAR(ech_get_event__doc__,
	     "Read one event from the channel, waiting for it (GIL\n"
	     "released) unless the fd is non-blocking.\n"
	     "\n"
	     "Wraps ``mlx5dv_devx_get_event`` (man page\n"
	     "mlx5dv_devx_subscribe_devx_event(3), rdma-core 25).\n"
	     "\n"
	     "Args:\n"
	     "    length: the most bytes to read (the 8-byte cookie and the\n"
	     "        event data; an EQE's data is 56 bytes).\n"
	     "\n"
	     "Returns:\n"
	     "    The bytes read: ``struct mlx5dv_devx_async_event_hdr``, the\n"
	     "    cookie (8 bytes, native byte order) then the event data\n"
	     "    (none with OMIT_EV_DATA).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: length is not an int.\n"
	     "    ValueError: length is below 8 or above 65536.\n"
	     "    VerbsError: EBADF once closed; EAGAIN when the fd is\n"
	     "        non-blocking and no event is pending; else the verb\n"
	     "        failed.");

#define GET_EVENT_ARGS(X, S) \
	X(S, INT, uint32_t, length, 8, 65536, .flags = ARG_OPT, .def = 64)
ARGS_METHOD(static, ech_get_event, "Mlx5DevxEventChannel.get_event",
	    GET_EVENT_ARGS, self, a)
{
	PyObject *buf, *res;
	ssize_t n;
	int fd;

	MLX5_NEED(devx_get_event);
	fd = ECHP(self)->fd;
	if (!fd_is_nonblocking(fd) && fd_wait_readable(HANDLE(self), fd) < 0)
		return NULL;
	buf = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)a->length);
	if (buf == NULL)
		return NULL;
	memset(PyBytes_AsString(buf), 0, a->length);
	/* Readable (or non-blocking): this read does not block. */
	errno = 0;
	n = MLX5.devx_get_event(ECHP(self), (void *)PyBytes_AsString(buf),
				a->length);
	if (n < 0) {
		Py_DECREF(buf);
		return verbs_error_fmt(errno_or(EIO), "mlx5dv_devx_get_event",
				       "length=%u", (unsigned)a->length);
	}
	res = PyBytes_FromStringAndSize(PyBytes_AsString(buf),
					n < (ssize_t)a->length ? n : a->length);
	Py_DECREF(buf);
	return res;
}

static PyObject *ech_get_fd(PyObject *self, void *c)
{
	HANDLE_CHECK(self);
	return PyLong_FromLong(ECHP(self)->fd);
}

static PyObject *ech_get_flags(PyObject *self, void *c)
{
	return PyLong_FromUnsignedLong(((EventChannelObject *)self)->flags);
}

static PyObject *ech_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString(
			"<ibverbs.mlx5.DevxEventChannel closed>");
	return PyUnicode_FromFormat("<ibverbs.mlx5.DevxEventChannel fd=%d>",
				    ECHP(self)->fd);
}

PyDoc_STRVAR(ech__doc__,
	     "A DEVX event channel (``struct mlx5dv_devx_event_channel``):\n"
	     "made by ``devx_create_event_channel``; ``fd`` can be polled.\n"
	     "``close()`` wraps ``mlx5dv_devx_destroy_event_channel``.");

static PyMethodDef ech_methods[] = { METHOD_KW("subscribe", ech_subscribe),
				     METHOD_KW("get_event", ech_get_event),
				     HANDLE_METHODS_END };

static PyGetSetDef ech_getset[] = {
	{ "fd", ech_get_fd, NULL, "The channel's file descriptor.", NULL },
	{ "flags", ech_get_flags, NULL, "The flags it was created with.",
	  NULL },
	{ "context", handle_get_parent, NULL, "The Context.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC_IN(Mlx5DevxEventChannel_spec, "ibverbs.mlx5",
		    "DevxEventChannel", EventChannelObject, 0, ech__doc__,
		    handle_tp_dealloc, handle_tp_traverse, ech_repr,
		    ech_methods, ech_getset);
