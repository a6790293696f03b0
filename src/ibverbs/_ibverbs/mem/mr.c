/*
 * mr.c - MR: a registered memory region (ibv_mr), host or GPU memory,
 * by virtual address or by dma-buf fd.
 *
 * The Limited API (3.9) has no buffer protocol, so memory is given as an
 * integer address and a length; "owner" is any object that keeps that
 * memory alive (helpers.reg_tensor passes the array or tensor) and is
 * retained until the MR is deregistered.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define MRP(self) ((struct ibv_mr *)HANDLE(self)->obj)

/* The memory is no longer registered: its owner may go, and the Buf or
 * DMAH it used is free to close. */
static void mr_release(Handle *h)
{
	Py_CLEAR(((MRObject *)h)->owner);
	handle_unuse_clear(&((MRObject *)h)->uses[0]);
	handle_unuse_clear(&((MRObject *)h)->uses[1]);
}

HANDLE_KIND(mr_kind, "MR", "ibv_dereg_mr", IBV.dereg_mr, mr_release);

/* The arguments of PD.reg_mr, reg_mr_iova and reg_dmabuf_mr. */
struct reg_mr_args {
	uint64_t addr, length, iova, offset;
	int fd, access;
	PyObject *owner;
};

#define REG_MR_ADDR                                      \
	ARG_UINT(struct reg_mr_args, addr,               \
		 .hint = "use ibverbs.reg_tensor() for " \
			 "arrays and tensors")
#define REG_MR_LENGTH ARG_INT(struct reg_mr_args, length, 1, SIZE_MAX)
#define REG_MR_IOVA ARG_UINT(struct reg_mr_args, iova)
#define REG_MR_ACCESS \
	ARG_FLAGS(struct reg_mr_args, access, AccessFlags, .flags = ARG_OPT)
#define REG_MR_OWNER \
	ARG_OBJECT(struct reg_mr_args, owner, .flags = ARG_KWOPT | ARG_NONE)

/* Declared in mem/mem.h: odp.c and dm.c wrap theirs here too. */
PyObject *mr_wrap(const HandleKind *kind, PDObject *pd, struct ibv_mr *mr,
		  PyObject *owner, uint64_t addr, uint64_t length, int access)
{
	MRObject *o = HANDLE_ALLOC(MRObject, ST.MR_type);

	if (o == NULL) {
		IBV.dereg_mr(mr);
		return NULL;
	}
	handle_init(HANDLE(o), kind ? kind : &mr_kind, HANDLE(pd));
	HANDLE_SET_OBJ(o, mr);
	if (owner != NULL && owner != Py_None) {
		Py_INCREF(owner);
		o->owner = owner;
	}
	o->addr = addr;
	o->length = length;
	o->access = access;
	return (PyObject *)o;
}

/* "addr=0x... length=... access=0x..." for error messages. */
static PyObject *mr_error(int err, const char *verb, uint64_t addr,
			  uint64_t length, int access)
{
	char buf[96];

	snprintf(buf, sizeof(buf), "addr=0x%llx length=%llu access=0x%x",
		 (unsigned long long)addr, (unsigned long long)length, access);
	return verbs_error_fmt(err, verb, "%s", buf);
}

/*
 * PD.reg_mr(addr, length, access=0, *, owner=None) and
 * PD.reg_mr_iova(addr, length, iova, access=0, *, owner=None) (iova_o
 * non-NULL).  Pinning a large region takes a while, so the verb runs
 * with the GIL released and the PD marked busy (its close() refuses
 * meanwhile).  MR.addr is the address work requests use: the iova.
 */
static PyObject *mr_register(PDObject *pd, const struct reg_mr_args *a,
			     int with_iova)
{
	const char *verb = with_iova ? "ibv_reg_mr_iova" : "ibv_reg_mr";
	struct ibv_pd *p = HANDLE(pd)->obj;
	uint64_t addr = a->addr, length = a->length;
	uint64_t iova = with_iova ? a->iova : addr;
	int access = a->access, err;
	struct ibv_mr *mr;

	if (length > UINT64_MAX - addr || length - 1 > UINT64_MAX - iova) {
		PyErr_SetString(PyExc_ValueError,
				with_iova && length <= UINT64_MAX - addr ?
					"iova + length overflows the address "
					"space" :
					"addr + length overflows the address "
					"space");
		return NULL;
	}
	/* Optional-range bits need ibv_reg_mr_iova2, like verbs.h's macro. */
	if (access & IBV_ACCESS_OPTIONAL_RANGE)
		IBV_REQUIRE_OPTIONAL(reg_mr_iova2, ibv_reg_mr_iova2,
				     "rdma-core 29");
	else if (with_iova)
		IBV_REQUIRE_OPTIONAL(reg_mr_iova, ibv_reg_mr_iova,
				     "rdma-core 25");
	HANDLE_BUSY_ENTER(pd);
	Py_BEGIN_ALLOW_THREADS
	errno = 0;
	if (access & IBV_ACCESS_OPTIONAL_RANGE)
		mr = IBV.reg_mr_iova2(p, (void *)(uintptr_t)addr, length, iova,
				      (unsigned int)access);
	else if (with_iova)
		mr = IBV.reg_mr_iova(p, (void *)(uintptr_t)addr, length, iova,
				     access);
	else
		mr = IBV.reg_mr(p, (void *)(uintptr_t)addr, length, access);
	err = errno_or(EINVAL);
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(pd);
	if (mr == NULL)
		return mr_error(err, verb, iova, length, access);
	return mr_wrap(NULL, pd, mr, a->owner, iova, length, access);
}

/* reg_mr and reg_mr_iova: m's parsing, then mr_register. */
static PyObject *mr_parse_register(PyObject *self, const MethodArgs *m,
				   PyObject *args, PyObject *kw, int has_iova)
{
	struct reg_mr_args a;

	if (args_parse(m, self, args, kw, &a) < 0)
		return NULL;
	return mr_register((PDObject *)self, &a, has_iova);
}

/* The docstrings' shared lines: addr and length; the new MR and the
 * Raises header. */
#define DOC_ADDR_LENGTH                                     \
	"    addr: start address of the region (an int).\n" \
	"    length: bytes, 1 or more.\n"
#define DOC_NEW_MR_RAISES                        \
	"Returns:\n"                             \
	"    The new MR (a child of this PD).\n" \
	"\n"                                     \
	"Raises:\n"

METHOD_DOC(pd_reg_mr,
	   "Register ``length`` bytes of memory at ``addr`` for RDMA.\n"
	   "\n"
	   "The memory is given as an integer address (host or GPU\n"
	   "virtual address); ``owner`` is any object that keeps it alive\n"
	   "(an array, a tensor, an mmap), held until the MR is closed.\n"
	   "Pinning runs with the GIL released; the PD's ``close()``\n"
	   "refuses with EBUSY meanwhile. Access bits of the optional\n"
	   "range (``AccessFlags.RELAXED_ORDERING``, ...) register through\n"
	   "``ibv_reg_mr_iova2``, as verbs.h does.\n"
	   "\n"
	   "Wraps ``ibv_reg_mr`` (man page ibv_reg_mr(3)).\n"
	   "\n"
	   "Args:\n" DOC_ADDR_LENGTH
	   "    access: ``AccessFlags`` (LOCAL_WRITE, REMOTE_READ, ...).\n"
	   "    owner: the object whose memory this is, or None.\n"
	   "\n" DOC_NEW_MR_RAISES
	   "    TypeError: addr, length or access is not an int (use\n"
	   "        ``ibverbs.reg_tensor()`` for arrays and tensors).\n"
	   "    ValueError: length is 0, addr + length overflows, or a\n"
	   "        value is out of range.\n"
	   "    VerbsError: EBADF once the PD is closed; EOPNOTSUPP for\n"
	   "        optional-range bits without ``ibv_reg_mr_iova2``\n"
	   "        (rdma-core < 29); else the verb failed (``errno``, e.g.\n"
	   "        EFAULT for unmapped memory, ENOMEM past the pin limit).");

static const ArgSpec reg_mr_params[] = { REG_MR_ADDR, REG_MR_LENGTH,
					 REG_MR_ACCESS, REG_MR_OWNER, ARG_END };
METHOD_ARGS(pd_reg_mr, "PD.reg_mr", reg_mr_params);

PyObject *pd_reg_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return mr_parse_register(self, &pd_reg_mr_args, args, kw, 0);
}

METHOD_DOC(pd_reg_mr_iova,
	   "Register ``length`` bytes at ``addr``, addressed as ``iova``.\n"
	   "\n"
	   "As ``reg_mr()``, but work requests, local (SGEs) and remote\n"
	   "(``remote_addr``), name the first byte ``iova``, not ``addr``:\n"
	   "``MR.addr`` and ``MR.iova`` hold it, so ``mr.sge()`` and a\n"
	   "peer's ``remote_addr = mr.iova + offset`` work unchanged.\n"
	   "Linux wants ``iova`` at the same offset within a page as\n"
	   "``addr`` (EINVAL otherwise).\n"
	   "\n"
	   "Wraps ``ibv_reg_mr_iova`` (man page ibv_reg_mr(3)).\n"
	   "\n"
	   "Args:\n" DOC_ADDR_LENGTH
	   "    iova: the address work requests use for its first byte.\n"
	   "    access: ``AccessFlags``.\n"
	   "    owner: the object whose memory this is, or None.\n"
	   "\n" DOC_NEW_MR_RAISES "    TypeError: an argument is not an int.\n"
	   "    ValueError: length is 0, addr + length or iova + length\n"
	   "        overflows, or a value is out of range.\n"
	   "    VerbsError: EBADF once the PD is closed; EOPNOTSUPP when\n"
	   "        libibverbs lacks the verb (rdma-core < 25); else the\n"
	   "        verb failed (``errno``: EINVAL for an iova at another\n"
	   "        page offset than addr).");

static const ArgSpec reg_mr_iova_params[] = { REG_MR_ADDR,  REG_MR_LENGTH,
					      REG_MR_IOVA,  REG_MR_ACCESS,
					      REG_MR_OWNER, ARG_END };
METHOD_ARGS(pd_reg_mr_iova, "PD.reg_mr_iova", reg_mr_iova_params);

PyObject *pd_reg_mr_iova(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return mr_parse_register(self, &pd_reg_mr_iova_args, args, kw, 1);
}

/*
 * PD.reg_dmabuf_mr(offset, length, iova, fd, access=0, *, owner=None).
 * ibv_mr.addr of such an MR holds the offset; MR.addr is the iova.
 */
METHOD_DOC(pd_reg_dmabuf_mr,
	   "Register ``length`` bytes of a dma-buf (GPU memory) for RDMA.\n"
	   "\n"
	   "The region starts ``offset`` bytes into the dma-buf ``fd`` and\n"
	   "is addressed as ``iova`` in work requests (``MR.addr``).\n"
	   "``owner`` (e.g. the tensor) is held until the MR is closed.\n"
	   "The verb runs with the GIL released.\n"
	   "\n"
	   "Wraps ``ibv_reg_dmabuf_mr`` (man page ibv_reg_mr(3)).\n"
	   "\n"
	   "Args:\n"
	   "    offset: start of the region within the dma-buf.\n"
	   "    length: bytes, 1 or more.\n"
	   "    iova: the address work requests use for its first byte.\n"
	   "    fd: the dma-buf file descriptor.\n"
	   "    access: ``AccessFlags``.\n"
	   "    owner: the object that owns the memory, or None.\n"
	   "\n"
	   "Returns:\n"
	   "    The new MR (``is_dmabuf`` is True).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument is not an int.\n"
	   "    ValueError: length is 0 or a value is out of range.\n"
	   "    VerbsError: EBADF for a negative fd or once the PD is\n"
	   "        closed; EOPNOTSUPP when libibverbs lacks the verb\n"
	   "        (rdma-core < 34); else the verb failed (``errno``).");

static const ArgSpec reg_dmabuf_mr_params[] = {
	ARG_UINT(struct reg_mr_args, offset),
	REG_MR_LENGTH,
	REG_MR_IOVA,
	ARG_INT(struct reg_mr_args, fd, INT_MIN, INT_MAX),
	REG_MR_ACCESS,
	REG_MR_OWNER,
	ARG_END
};
METHOD_ARGS(pd_reg_dmabuf_mr, "PD.reg_dmabuf_mr", reg_dmabuf_mr_params);

PyObject *pd_reg_dmabuf_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	PDObject *pd = (PDObject *)self;
	struct ibv_pd *p = HANDLE(pd)->obj;
	struct reg_mr_args a;
	struct ibv_mr *mr;
	PyObject *o;
	int err;

	HANDLE_CHECK(self);
	if (args_parse(&pd_reg_dmabuf_mr_args, self, args, kw, &a) < 0)
		return NULL;
	/* Checked before the verb, but with the verb's error class: code
	 * written for the published package catches VerbsError(EBADF). */
	if (a.fd < 0)
		return verbs_error_fmt(EBADF, "ibv_reg_dmabuf_mr",
				       "fd %d is not a file descriptor", a.fd);
	IBV_REQUIRE_OPTIONAL(reg_dmabuf_mr, ibv_reg_dmabuf_mr, "rdma-core 34");
	HANDLE_BUSY_ENTER(pd);
	Py_BEGIN_ALLOW_THREADS
	errno = 0;
	mr = IBV.reg_dmabuf_mr(p, a.offset, a.length, a.iova, a.fd, a.access);
	err = errno_or(EINVAL);
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(pd);
	if (mr == NULL)
		return mr_error(err, "ibv_reg_dmabuf_mr", a.iova, a.length,
				a.access);
	o = mr_wrap(NULL, pd, mr, a.owner, a.iova, a.length, a.access);
	if (o != NULL)
		((MRObject *)o)->is_dmabuf = 1;
	return o;
}

/* ------------------------------------------------------------------ */
/* PD.reg_mr_ex(), PD.reg_buf_mr(), PD.alloc_null_mr()                 */
/* ------------------------------------------------------------------ */

/* A new MR using the Buf and DMAH in uses (each NULL or a handle). */
static PyObject *mr_wrap_using(PDObject *pd, struct ibv_mr *mr, PyObject *owner,
			       uint64_t addr, uint64_t length, int access,
			       int is_dmabuf, PyObject *uses[2])
{
	MRObject *o =
		(MRObject *)mr_wrap(NULL, pd, mr, owner, addr, length, access);
	int i;

	if (o != NULL)
		o->is_dmabuf = is_dmabuf;
	for (i = 0; o != NULL && i < 2; i++) {
		if (uses[i] == NULL)
			continue;
		Py_INCREF(uses[i]);
		o->uses[i] = uses[i];
		handle_use(HANDLE(uses[i]));
	}
	return (PyObject *)o;
}

/* Mark the handles of h[0..n) that are not NULL busy (delta 1) or no
 * longer (-1): the others a GIL-free region uses besides its own. */
static void busy_also(PyObject *const h[], int n, int delta)
{
	int i;

	for (i = 0; i < n; i++) {
		if (h[i] == NULL)
			continue;
		if (delta > 0)
			HANDLE_BUSY_ENTER(h[i]);
		else
			HANDLE_BUSY_EXIT(h[i]);
	}
}

/* The registration verbs of this block: GIL released, the PD and what
 * the MR uses marked busy (none of them can close meanwhile). */
static struct ibv_mr *mr_reg_ex_call(PDObject *pd, PyObject *uses[2],
				     struct ibverbs_mr_init_attr *a,
				     int buf_verb, int *err)
{
	struct ibv_pd *p = HANDLE(pd)->obj;
	struct ibv_mr *mr;

	busy_also(uses, 2, 1);
	HANDLE_BUSY_ENTER(pd);
	Py_BEGIN_ALLOW_THREADS
	errno = 0;
	if (buf_verb)
		mr = IBV.reg_buf_mr(p, a->buf, a->addr, a->length, a->access);
	else
		mr = IBV.reg_mr_ex(p, (struct ibv_mr_init_attr *)a);
	*err = errno_or(EINVAL);
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(pd);
	busy_also(uses, 2, -1);
	return mr;
}

/*
 * PD.reg_mr_ex(length, access=0, *, addr=None, iova=None, fd=None,
 * fd_offset=None, dmah=None, buf=None, owner=None): each keyword given
 * sets its bit of comp_mask.  MR.addr is the address work requests use:
 * iova when given, else addr, else fd_offset (as libibverbs sets
 * ibv_mr.addr).
 */
METHOD_DOC(pd_reg_mr_ex,
	   "Register memory described by ``struct ibv_mr_init_attr``.\n"
	   "\n"
	   "Each keyword given sets its bit of ``comp_mask``\n"
	   "(``MRInitAttrMask``): ``addr`` (ADDR) and ``iova`` (IOVA)\n"
	   "for host memory at a chosen iova, ``fd`` and ``fd_offset``\n"
	   "(FD, FD_OFFSET; with IOVA) for a dma-buf, ``dmah`` (DMAH) for\n"
	   "DMA hints, ``buf`` (BUF; with ADDR inside it) for a Buf.\n"
	   "``MR.addr`` is the address work requests use: ``iova`` when\n"
	   "given, else ``addr``, else ``fd_offset``. The MR uses its Buf\n"
	   "and DMAH (their ``close()`` refuses with EBUSY until it is\n"
	   "closed). Pinning runs with the GIL released. Soft-RoCE\n"
	   "registers ADDR/IOVA through libibverbs' translation to\n"
	   "``reg_mr``; DMAH is checked against the recording double only.\n"
	   "\n"
	   "Wraps ``ibv_reg_mr_ex`` (man page ibv_reg_mr(3), rdma-core 59).\n"
	   "\n"
	   "Args:\n"
	   "    length: bytes, 1 or more.\n"
	   "    access: ``AccessFlags``.\n"
	   "    addr: start address of host memory (an int), or None.\n"
	   "    iova: the address work requests use, or None.\n"
	   "    fd: a dma-buf file descriptor, or None.\n"
	   "    fd_offset: the start within the dma-buf, or None.\n"
	   "    dmah: a DMAH of this PD's Context, or None.\n"
	   "    buf: a Buf of this PD, or None.\n"
	   "    owner: the object whose memory this is, or None.\n"
	   "\n"
	   "Returns:\n"
	   "    The new MR.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: a value is not an int, dmah is not a DMAH or buf\n"
	   "        not a Buf.\n"
	   "    ValueError: length is 0, addr + length overflows, a value\n"
	   "        is out of range, or dmah/buf belongs elsewhere.\n"
	   "    VerbsError: EBADF once the PD, dmah or buf is closed;\n"
	   "        EOPNOTSUPP when libibverbs lacks the verb (rdma-core\n"
	   "        < 59) or the provider cannot (a DMAH on Soft-RoCE);\n"
	   "        else the verb failed (``errno``, EINVAL for a mask\n"
	   "        combination libibverbs refuses).");

/* Each keyword given (not None) sets its bit of comp_mask. */
#define REG_MR_EX_OPT(bit) \
	.flags = ARG_KWOPT | ARG_NONE, .mask = IBV_REG_MR_MASK_##bit
#define REG_MR_EX_ARGS(X, S)                                                \
	X(S, INT, uint64_t, length, 1, SIZE_MAX)                            \
	X(S, FLAGS, int, access, AccessFlags, .flags = ARG_OPT)             \
	X(S, UINT, uint64_t, addr, REG_MR_EX_OPT(ADDR))                     \
	X(S, UINT, uint64_t, iova, REG_MR_EX_OPT(IOVA))                     \
	X(S, INT, int, fd, INT_MIN, INT_MAX, REG_MR_EX_OPT(FD))             \
	X(S, UINT, uint64_t, fd_offset, REG_MR_EX_OPT(FD_OFFSET))           \
	X(S, HANDLE, PyObject *, dmah, DMAH, ARG_SAME_CONTEXT,              \
	  REG_MR_EX_OPT(DMAH))                                              \
	X(S, HANDLE, PyObject *, buf, Buf, ARG_SAME_PD, REG_MR_EX_OPT(BUF)) \
	X(S, OBJECT, PyObject *, owner, .flags = ARG_KWOPT | ARG_NONE)
ARGS_METHOD_MASK(extern, pd_reg_mr_ex, "PD.reg_mr_ex", REG_MR_EX_ARGS, self, r)
{
	PDObject *pd = (PDObject *)self;
	struct ibverbs_mr_init_attr a;
	PyObject *uses[2];
	struct ibv_mr *mr;
	uint64_t start;
	int err;

	if ((r->mask & IBV_REG_MR_MASK_ADDR) &&
	    r->length - 1 > UINT64_MAX - r->addr) {
		PyErr_SetString(PyExc_ValueError,
				"addr + length overflows the address space");
		return NULL;
	}
	uses[0] = r->buf;
	uses[1] = r->dmah;
	IBV_REQUIRE_OPTIONAL(reg_mr_ex, ibv_reg_mr_ex, "rdma-core 59");
	memset(&a, 0, sizeof(a));
	a.length = (size_t)r->length;
	a.access = r->access;
	a.comp_mask = r->mask;
	a.addr = (void *)(uintptr_t)r->addr;
	a.iova = r->iova;
	a.fd = r->fd;
	a.fd_offset = r->fd_offset;
	a.dmah = r->dmah ? HANDLE(r->dmah)->obj : NULL;
	a.buf = r->buf ? HANDLE(r->buf)->obj : NULL;
	mr = mr_reg_ex_call(pd, uses, &a, 0, &err);
	start = (r->mask & IBV_REG_MR_MASK_IOVA) ? r->iova :
		(r->mask & IBV_REG_MR_MASK_ADDR) ? r->addr :
						   r->fd_offset;
	if (mr == NULL)
		return verbs_error_fmt(err, "ibv_reg_mr_ex",
				       "comp_mask=%s addr=%s "
				       "length=%llu access=0x%x",
				       HEX64(r->mask), HEX64(start),
				       (unsigned long long)r->length,
				       r->access);
	return mr_wrap_using(pd, mr, r->owner, start, r->length, r->access,
			     (r->mask & IBV_REG_MR_MASK_FD) != 0, uses);
}

/* PD.reg_buf_mr(buf, addr, length, access=0) */
METHOD_DOC(pd_reg_buf_mr,
	   "Register ``length`` bytes at ``addr`` within a Buf.\n"
	   "\n"
	   "``addr`` is ``buf.addr`` or an address inside the buffer; the\n"
	   "range must stay inside it (libibverbs answers EINVAL). The MR\n"
	   "uses the Buf: ``buf.close()`` refuses with EBUSY until the MR\n"
	   "is closed. Runs with the GIL released.\n"
	   "\n"
	   "Wraps ``ibv_reg_buf_mr`` (man page ibv_alloc_buf(3), rdma-core\n"
	   "64).\n"
	   "\n"
	   "Args:\n"
	   "    buf: a Buf of this PD.\n"
	   "    addr: the start address, inside the buffer.\n"
	   "    length: bytes, 1 or more.\n"
	   "    access: ``AccessFlags``.\n"
	   "\n"
	   "Returns:\n"
	   "    The new MR (``MR.buf`` is the Buf).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: buf is not a Buf, or a value is not an int.\n"
	   "    ValueError: buf was allocated for another PD, length is\n"
	   "        0, or a value is out of range.\n"
	   "    VerbsError: EBADF once the PD or buf is closed; else the\n"
	   "        verb failed (``errno``: EINVAL outside the buffer).");

#define REG_BUF_MR_ARGS(X, S)                           \
	X(S, HANDLE, PyObject *, buf, Buf, ARG_SAME_PD) \
	X(S, UINT, uint64_t, addr)                      \
	X(S, INT, uint64_t, length, 1, SIZE_MAX)        \
	X(S, FLAGS, int, access, AccessFlags, .flags = ARG_OPT)
ARGS_METHOD(extern, pd_reg_buf_mr, "PD.reg_buf_mr", REG_BUF_MR_ARGS, self, r)
{
	PDObject *pd = (PDObject *)self;
	PyObject *uses[2] = { NULL, NULL };
	struct ibverbs_mr_init_attr a;
	struct ibv_mr *mr;
	int err;

	IBV_REQUIRE_OPTIONAL(reg_buf_mr, ibv_reg_buf_mr, "rdma-core 64");
	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_REG_MR_MASK_BUF | IBV_REG_MR_MASK_ADDR;
	a.addr = (void *)(uintptr_t)r->addr;
	a.length = (size_t)r->length;
	a.access = r->access;
	a.buf = HANDLE(r->buf)->obj;
	uses[0] = r->buf;
	mr = mr_reg_ex_call(pd, uses, &a, 1, &err);
	if (mr == NULL)
		return mr_error(err, "ibv_reg_buf_mr", r->addr, r->length,
				r->access);
	return mr_wrap_using(pd, mr, NULL, r->addr, r->length, r->access, 0,
			     uses);
}

/* PD.alloc_null_mr(): ibv_alloc_null_mr is static inline over a
 * verbs_context op (EOPNOTSUPP without one), so it is called by name. */
METHOD_DOC(pd_alloc_null_mr,
	   "Allocate a null MR: reads through it give zeros, writes are\n"
	   "dropped.\n"
	   "\n"
	   "Wraps ``ibv_alloc_null_mr`` (man page ibv_alloc_null_mr(3)).\n"
	   "Soft-RoCE has no such op (EOPNOTSUPP); never run on hardware\n"
	   "here, checked against the recording double.\n"
	   "\n"
	   "Returns:\n"
	   "    The new MR (its lkey goes into SGEs).\n"
	   "\n"
	   "Raises:\n" DOC_RAISES_VERB_AS("PD", ": EOPNOTSUPP without the op"));

PyObject *pd_alloc_null_mr(PyObject *self, PyObject *unused)
{
	PDObject *pd = (PDObject *)self;
	struct ibv_mr *mr;
	int err;

	HANDLE_CHECK(self);
	errno = 0;
	mr = ibv_alloc_null_mr((struct ibv_pd *)HANDLE(pd)->obj);
	err = errno_or(EINVAL);
	if (mr == NULL)
		return verbs_error(err, "ibv_alloc_null_mr");
	return mr_wrap(NULL, pd, mr, NULL, (uint64_t)(uintptr_t)mr->addr,
		       (uint64_t)mr->length, 0);
}

/* ------------------------------------------------------------------ */
/* MR.rereg()                                                          */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(mr_rereg__doc__,
	     "Change this MR in place: its memory, its PD or its access.\n"
	     "\n"
	     "``flags`` (``ReregMRFlags``) says what changes:\n"
	     "CHANGE_TRANSLATION takes ``addr`` and\n"
	     "``length`` (and a new ``owner``, which replaces the old one),\n"
	     "CHANGE_PD takes ``pd`` (of this MR's Context; the MR becomes\n"
	     "its child), CHANGE_ACCESS takes ``access``. The keys may\n"
	     "change: read ``lkey``/``rkey`` again. The verb runs with the\n"
	     "GIL released. On an error the MR keeps its old state, except\n"
	     "IBV_REREG_MR_ERR_DO_FORK_OLD (the new state holds) and the\n"
	     "command errors (IBV_REREG_MR_ERR_CMD*: close the MR); the\n"
	     "exception's ``rereg_err`` holds the code. Soft-RoCE has no\n"
	     "such op (EOPNOTSUPP); its success path was checked against\n"
	     "the recording double only, never run on hardware here.\n"
	     "\n"
	     "Wraps ``ibv_rereg_mr`` (man page ibv_rereg_mr(3)).\n"
	     "\n"
	     "Args:\n"
	     "    flags: ``ReregMRFlags`` (CHANGE_TRANSLATION, CHANGE_PD,\n"
	     "        CHANGE_ACCESS).\n"
	     "    pd: the new PD, with CHANGE_PD only.\n"
	     "    addr: the new start address, with CHANGE_TRANSLATION only.\n"
	     "    length: the new length, with CHANGE_TRANSLATION only.\n"
	     "    access: the new ``AccessFlags``, with CHANGE_ACCESS only.\n"
	     "    owner: the object that keeps the new memory alive, with\n"
	     "        CHANGE_TRANSLATION only.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: pd is not a PD, or a value is not an int.\n"
	     "    ValueError: an argument without its flag, a flag without\n"
	     "        its argument, a PD of another Context, or a new\n"
	     "        translation of an MR over a DM or a Buf.\n"
	     "    VerbsError: EBADF once the MR or pd is closed; EOPNOTSUPP\n"
	     "        when the provider cannot (Soft-RoCE) or libibverbs\n"
	     "        lacks the verb; else the verb failed (``errno``).");

/* The arguments of MR.rereg; mask: the REREG_* bits of those given
 * (not None), checked against flags. */
enum {
	REREG_PD = 1,
	REREG_ADDR = 2,
	REREG_LENGTH = 4,
	REREG_ACCESS = 8,
	REREG_OWNER = 16
};
#define REREG_OPT(bit) .flags = ARG_KWOPT | ARG_NONE, .mask = (bit)
#define REREG_ARGS(X, S)                                                  \
	X(S, FLAGS, int, flags, ReregMRFlags)                             \
	X(S, HANDLE, PyObject *, pd, PD, ARG_SAME_CONTEXT,                \
	  REREG_OPT(REREG_PD))                                            \
	X(S, UINT, uint64_t, addr, REREG_OPT(REREG_ADDR))                 \
	X(S, INT, uint64_t, length, 1, SIZE_MAX, REREG_OPT(REREG_LENGTH)) \
	X(S, FLAGS, int, access, AccessFlags, REREG_OPT(REREG_ACCESS))    \
	X(S, OBJECT, PyObject *, owner, REREG_OPT(REREG_OWNER))
ARGS_DECLARE_MASK(rereg, REREG_ARGS);
METHOD_ARGS_MASK(mr_rereg, "MR.rereg", rereg_params,
		 offsetof(struct rereg_args, mask));

/* Each argument goes with its flag, and each flag needs its arguments. */
static int rereg_check(PyObject *self, const struct rereg_args *r)
{
	int trans = (r->flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0;

	if (!trans != !(r->mask & REREG_ADDR) ||
	    !trans != !(r->mask & REREG_LENGTH) ||
	    (!trans && (r->mask & REREG_OWNER))) {
		PyErr_SetString(PyExc_ValueError,
				"addr and length (and owner) go with "
				"ReregMRFlags.CHANGE_TRANSLATION, and it "
				"needs addr and length");
		return -1;
	}
	if (!(r->flags & IBV_REREG_MR_CHANGE_PD) != !(r->mask & REREG_PD)) {
		PyErr_SetString(PyExc_ValueError,
				"pd goes with ReregMRFlags.CHANGE_PD, and it "
				"needs pd");
		return -1;
	}
	if (!(r->flags & IBV_REREG_MR_CHANGE_ACCESS) !=
	    !(r->mask & REREG_ACCESS)) {
		PyErr_SetString(PyExc_ValueError,
				"access goes with ReregMRFlags.CHANGE_ACCESS, "
				"and it needs access");
		return -1;
	}
	if (trans && (HANDLE(self)->kind != &mr_kind ||
		      ((MRObject *)self)->uses[0] != NULL)) {
		PyErr_SetString(PyExc_ValueError,
				"a new translation needs an MR of reg_mr, "
				"reg_mr_iova, reg_mr_ex or reg_dmabuf_mr "
				"without a Buf");
		return -1;
	}
	return 0;
}

/* What a negative answer of ibv_rereg_mr means (verbs.h). */
static const char *rereg_err_name(int rc)
{
	switch (rc) {
	case IBV_REREG_MR_ERR_INPUT:
		return "IBV_REREG_MR_ERR_INPUT (the MR is unchanged)";
	case IBV_REREG_MR_ERR_DONT_FORK_NEW:
		return "IBV_REREG_MR_ERR_DONT_FORK_NEW (the MR is unchanged)";
	case IBV_REREG_MR_ERR_DO_FORK_OLD:
		return "IBV_REREG_MR_ERR_DO_FORK_OLD (the new state holds)";
	case IBV_REREG_MR_ERR_CMD:
		return "IBV_REREG_MR_ERR_CMD (close the MR)";
	case IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW:
		return "IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW (close the MR)";
	}
	return "an unknown code";
}

/* The new state, after a success or IBV_REREG_MR_ERR_DO_FORK_OLD. */
static void rereg_apply(MRObject *m, const struct rereg_args *r)
{
	PyObject *old = NULL;

	/* Under the MR's lock, for the readers of owner and of the parent
	 * on other threads; the old owner goes once it is released (its
	 * deallocator may run any code). */
	OBJ_LOCKED_BEGIN(m);
	if (r->flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		m->addr = r->addr;
		m->length = r->length;
		old = m->owner;
		m->owner = NULL;
		if (r->owner != NULL) {
			Py_INCREF(r->owner);
			m->owner = r->owner;
		}
	}
	if (r->flags & IBV_REREG_MR_CHANGE_ACCESS)
		m->access = r->access;
	if (r->pd != NULL)
		handle_reparent(HANDLE(m), HANDLE(r->pd));
	OBJ_LOCKED_END();
	Py_XDECREF(old);
}

static PyObject *mr_rereg(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *attrs, *newpd;
	struct rereg_args r;
	int rc, err;

	HANDLE_CHECK(self);
	if (args_parse(&mr_rereg_args, self, args, kw, &r) < 0 ||
	    rereg_check(self, &r) < 0)
		return NULL;
	IBV_REQUIRE_OPTIONAL(rereg_mr, ibv_rereg_mr, "rdma-core 12");
	newpd = (PyObject *)r.pd;
	busy_also(&newpd, 1, 1);
	HANDLE_BUSY_ENTER(self);
	Py_BEGIN_ALLOW_THREADS
	errno = 0;
	rc = IBV.rereg_mr(MRP(self), r.flags,
			  r.pd ? (struct ibv_pd *)HANDLE(r.pd)->obj : NULL,
			  (void *)(uintptr_t)r.addr, (size_t)r.length,
			  r.access);
	err = errno_or(EINVAL);
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(self);
	busy_also(&newpd, 1, -1);
	if (rc == 0 || rc == IBV_REREG_MR_ERR_DO_FORK_OLD)
		rereg_apply((MRObject *)self, &r);
	if (rc == 0)
		Py_RETURN_NONE;
	if (rc > 0)
		err = rc;
	attrs = Py_BuildValue("{si}", "rereg_err", rc);
	if (attrs == NULL)
		return NULL;
	verbs_error_with(err, "ibv_rereg_mr", attrs, "flags=0x%x: %s", r.flags,
			 rereg_err_name(rc));
	Py_DECREF(attrs);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* MR.sge()                                                            */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(mr_sge__doc__,
	     "Build an SGE for ``[offset, offset + length)`` of this MR.\n"
	     "\n"
	     "The same as ``SGE(mr, length, offset=offset)``: the SGE holds\n"
	     "the MR, its ``lkey`` and the address ``mr.addr + offset``.\n"
	     "No verb is called.\n"
	     "\n"
	     "Args:\n"
	     "    length: bytes; None covers the rest of the MR.\n"
	     "    offset: start within the MR.\n"
	     "\n"
	     "Returns:\n"
	     "    The new SGE.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: length or offset is not an int.\n"
	     "    ValueError: the range passes the end of the MR, or the\n"
	     "        length does not fit the SGE's 32 bits.\n"
	     "    VerbsError: EBADF once the MR is closed.");

/* sge(length=None, offset=0) -> SGE covering [offset, offset+length):
 * SGE(self, length, offset=offset), whose constructor checks the range. */
/* offset is signed here: a negative one reaches SGE(), whose message
 * ("offset must be non-negative") the compatibility contract keeps. */
#define SGE_ARGS(X, S)                                                       \
	X(S, UINT, uint32_t, length, .flags = ARG_OPT | ARG_NONE, .mask = 1) \
	X(S, INT, int64_t, offset, INT64_MIN, INT64_MAX, .flags = ARG_OPT)
ARGS_METHOD_MASK(static, mr_sge, "MR.sge", SGE_ARGS, self, r)
{
	PyObject *a = NULL, *k, *res = NULL;

	k = Py_BuildValue("{sL}", "offset", (long long)r->offset);
	if (k != NULL)
		a = r->mask ? Py_BuildValue("(Ok)", self,
					    (unsigned long)r->length) :
			      Py_BuildValue("(OO)", self, Py_None);
	if (a != NULL)
		res = PyObject_Call((PyObject *)ST.SGE_type, a, k);
	Py_XDECREF(a);
	Py_XDECREF(k);
	return res;
}

/* ------------------------------------------------------------------ */
/* Attributes, lifetime                                                */
/* ------------------------------------------------------------------ */

static PyObject *mr_get_addr(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLongLong(((MRObject *)self)->addr);
}

static PyObject *mr_get_iova(PyObject *self, void *closure)
{
	return mr_get_addr(self, closure);
}

static PyObject *mr_get_length(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLongLong(((MRObject *)self)->length);
}

static PyObject *mr_get_lkey(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(MRP(self)->lkey);
}

static PyObject *mr_get_rkey(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(MRP(self)->rkey);
}

static PyObject *mr_get_handle(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(MRP(self)->handle);
}

static PyObject *mr_get_owner(PyObject *self, void *closure)
{
	PyObject *o;

	/* rereg() on another thread may replace it (rereg_apply). */
	OBJ_LOCKED_BEGIN(self);
	o = ((MRObject *)self)->owner;
	if (o == NULL)
		o = Py_None;
	Py_INCREF(o);
	OBJ_LOCKED_END();
	return o;
}

static PyObject *mr_get_access(PyObject *self, void *closure)
{
	return PyLong_FromLong(((MRObject *)self)->access);
}

static PyObject *mr_get_is_dmabuf(PyObject *self, void *closure)
{
	return PyBool_FromLong(((MRObject *)self)->is_dmabuf);
}

static PyObject *mr_get_imported(PyObject *self, void *closure)
{
	return PyBool_FromLong(handle_is_imported(HANDLE(self)));
}

static PyObject *mr_get_uses(PyObject *self, void *closure)
{
	return obj_or_none(((MRObject *)self)->uses[closure != NULL]);
}

static int mr_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((MRObject *)self)->owner);
	Py_VISIT(((MRObject *)self)->uses[0]);
	Py_VISIT(((MRObject *)self)->uses[1]);
	return handle_traverse(HANDLE(self), visit, arg);
}

/* Breaks a cycle through the owner (an owner that refers to its MR):
 * deregister first, so the memory is never released while registered. */
static int mr_clear(PyObject *self)
{
	handle_close_quiet(HANDLE(self));
	if (HANDLE(self)->obj == NULL) {
		Py_CLEAR(((MRObject *)self)->owner);
		Py_CLEAR(((MRObject *)self)->uses[0]);
		Py_CLEAR(((MRObject *)self)->uses[1]);
	}
	return 0;
}

static void mr_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	if (HANDLE(self)->obj != NULL) {
		/* Dereg failed: the memory is still registered (the NIC may
		 * still write into it), so its owner must never be freed.
		 * Leak the reference on purpose. */
		((MRObject *)self)->owner = NULL;
		((MRObject *)self)->uses[0] = NULL;
		((MRObject *)self)->uses[1] = NULL;
	}
	Py_CLEAR(((MRObject *)self)->owner);
	Py_CLEAR(((MRObject *)self)->uses[0]);
	Py_CLEAR(((MRObject *)self)->uses[1]);
	handle_dealloc(HANDLE(self));
}

static PyObject *mr_repr(PyObject *self)
{
	MRObject *m = (MRObject *)self;
	char buf[128];

	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.MR closed>");
	snprintf(buf, sizeof(buf),
		 "addr=0x%llx length=%llu lkey=0x%x rkey=0x%x",
		 (unsigned long long)m->addr, (unsigned long long)m->length,
		 MRP(self)->lkey, MRP(self)->rkey);
	return PyUnicode_FromFormat("<ibverbs.MR%s %s>",
				    m->is_dmabuf ? " dma-buf" : "", buf);
}

PyDoc_STRVAR(mr__doc__,
	     "A registered memory region (``struct ibv_mr``).\n"
	     "\n"
	     "Made by ``PD.reg_mr()``, ``PD.reg_dmabuf_mr()``,\n"
	     "``PD.reg_dm_mr()`` or ``PD.reg_implicit_odp_mr()``. Its\n"
	     "``lkey`` goes into local SGEs, its ``rkey`` to the peer.\n"
	     "``close()`` wraps ``ibv_dereg_mr`` (man page ibv_reg_mr(3))\n"
	     "and then releases ``owner``.");

static PyMethodDef mr_methods[] = { METHOD_KW("sge", mr_sge),
				    METHOD_KW("rereg", mr_rereg),
				    HANDLE_METHODS_END };

static PyGetSetDef mr_getset[] = {
	{ "addr", mr_get_addr, NULL,
	  "Start address of the region (the iova of a dma-buf MR or of\n"
	  "``reg_mr_iova()``, the offset in the DM of a device memory\n"
	  "MR); EBADF once closed.",
	  NULL },
	{ "iova", mr_get_iova, NULL,
	  "The address work requests use for the first byte (the same\n"
	  "as ``addr``); EBADF once closed.",
	  NULL },
	{ "length", mr_get_length, NULL,
	  "Length of the region in bytes; EBADF once closed.", NULL },
	{ "lkey", mr_get_lkey, NULL,
	  "The local key (``ibv_mr.lkey``) that SGEs carry; EBADF once\n"
	  "closed.",
	  NULL },
	{ "rkey", mr_get_rkey, NULL,
	  "The remote key (``ibv_mr.rkey``) a peer uses for RDMA and\n"
	  "atomics on this region; EBADF once closed.",
	  NULL },
	{ "handle", mr_get_handle, NULL,
	  "The MR's kernel handle (``ibv_mr.handle``); EBADF once closed.",
	  NULL },
	{ "pd", handle_get_parent, NULL, "The PD the MR was registered in.",
	  NULL },
	{ "owner", mr_get_owner, NULL,
	  "The object that keeps the memory alive (a DM for a device\n"
	  "memory MR; None for a bare address); released on close.",
	  NULL },
	{ "access", mr_get_access, NULL,
	  "The ``AccessFlags`` the MR was registered with.", NULL },
	{ "is_dmabuf", mr_get_is_dmabuf, NULL,
	  "True when the MR was registered from a dma-buf fd.", NULL },
	{ "imported", mr_get_imported, NULL,
	  "True for an MR of ``PD.import_mr()``: ``close()`` then wraps\n"
	  "``ibv_unimport_mr`` (the exporting process still owns it).",
	  NULL },
	{ "buf", mr_get_uses, NULL,
	  "The Buf the MR registers (``PD.reg_buf_mr()``,\n"
	  "``reg_mr_ex(buf=...)``), or None; released on close.",
	  NULL },
	{ "dmah", mr_get_uses, NULL,
	  "The DMAH it was registered with (``reg_mr_ex(dmah=...)``), or\n"
	  "None; released on close.",
	  (void *)1 },
	HANDLE_GETSETS_END
};

/* clang-format off */
static PyType_Slot mr_slots[] = {
	{ Py_tp_doc, (void *)mr__doc__ },
	{ Py_tp_new, handle_no_new },
	{ Py_tp_dealloc, mr_dealloc },
	{ Py_tp_traverse, mr_traverse },
	{ Py_tp_clear, mr_clear },
	{ Py_tp_repr, mr_repr },
	{ Py_tp_methods, mr_methods },
	{ Py_tp_getset, mr_getset },
	{ 0, NULL }
};
/* clang-format on */

PyType_Spec MR_spec = { "ibverbs._ibverbs.MR", sizeof(MRObject), 0,
			Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, mr_slots };
