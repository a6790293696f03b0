/*
 * buf.c - Buf: a buffer that the provider allocates for a PD
 * (ibv_alloc_buf, rdma-core 64), registered with PD.reg_buf_mr() or
 * PD.reg_mr_ex(buf=...) (mr.c), exported with export_dmabuf_fd().
 *
 * libibverbs' own allocator (the one Soft-RoCE gets) is page-aligned host
 * memory without a dma-buf; a provider may back it with one.  The
 * memory is reached by address (Buf.addr, e.g. through ctypes) while the
 * Buf is open: close() frees it, and refuses with EBUSY while an MR over
 * it is registered.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include <stdio.h>

#define BUFP(self) ((struct ibv_buf *)HANDLE(self)->obj)
#define BUFO(self) ((BufObject *)(self))

/* ibv_free_buf answers nothing: it cannot fail. */
static int buf_destroy(Handle *h)
{
	IBV.free_buf((struct ibv_buf *)h->obj);
	return 0;
}

static const HandleKind buf_kind = { "Buf", "ibv_free_buf", buf_destroy, NULL };

/* PD.alloc_buf(size) */
METHOD_DOC(pd_alloc_buf,
	   "Allocate a buffer the way the provider prefers for this PD.\n"
	   "\n"
	   "libibverbs' own allocator (the one Soft-RoCE gets) returns\n"
	   "page-aligned host memory; a provider may back it with a\n"
	   "dma-buf. Register it with ``reg_buf_mr()``.\n"
	   "\n"
	   "Wraps ``ibv_alloc_buf`` (man page ibv_alloc_buf(3), rdma-core 64).\n"
	   "\n"
	   "Args:\n"
	   "    size: bytes, 1 or more.\n"
	   "\n"
	   "Returns:\n"
	   "    The new Buf (a child of this PD).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: size is not an int.\n"
	   "    ValueError: size is 0 or out of range.\n"
	   "    VerbsError: EBADF once the PD is closed; EOPNOTSUPP when\n"
	   "        libibverbs lacks the verb (rdma-core < 64); else the\n"
	   "        verb failed (``errno``, e.g. ENOMEM).");

#define ALLOC_BUF_ARGS(X, S) X(S, INT, uint64_t, size, 1, SIZE_MAX)
ARGS_METHOD(extern, pd_alloc_buf, "PD.alloc_buf", ALLOC_BUF_ARGS, parent, a)
{
	PDObject *pd = (PDObject *)parent;
	struct ibv_buf *b = NULL;
	BufObject *self;
	uint64_t size;
	void *addr;
	int err;

	size = a->size;
	IBV_REQUIRE_OPTIONAL(alloc_buf, ibv_alloc_buf, "rdma-core 64");
	errno = 0;
	addr = IBV.alloc_buf((struct ibv_pd *)HANDLE(pd)->obj, (size_t)size,
			     &b);
	err = errno_or(ENOMEM);
	if (addr == NULL)
		return verbs_error_fmt(err, "ibv_alloc_buf", "size=%llu",
				       (unsigned long long)size);
	self = (BufObject *)handle_adopt(ST.Buf_type, &buf_kind, HANDLE(pd), b);
	if (self == NULL)
		return NULL;
	self->addr = (uint64_t)(uintptr_t)addr;
	self->size = size;
	return (PyObject *)self;
}

PyDoc_STRVAR(buf_export_dmabuf_fd__doc__,
	     "Export the dma-buf behind this buffer as a new fd.\n"
	     "\n"
	     "The fd is the caller's: close it with ``os.close()``. A\n"
	     "buffer without a dma-buf (libibverbs' own allocator, the one\n"
	     "Soft-RoCE gets) answers ENODATA.\n"
	     "\n"
	     "Wraps ``ibv_export_buf_dmabuf_fd`` (man page ibv_alloc_buf(3),\n"
	     "rdma-core 65).\n"
	     "\n"
	     "Returns:\n"
	     "    A new file descriptor (an int).\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EBADF once the Buf is closed; EOPNOTSUPP when\n"
	     "        libibverbs lacks the verb (rdma-core < 65); else the\n"
	     "        verb failed (``errno``: ENODATA without a dma-buf).");

static PyObject *buf_export_dmabuf_fd(PyObject *self, PyObject *unused)
{
	int fd;

	HANDLE_CHECK(self);
	IBV_REQUIRE_OPTIONAL(export_buf_dmabuf_fd, ibv_export_buf_dmabuf_fd,
			     "rdma-core 65");
	errno = 0;
	fd = IBV.export_buf_dmabuf_fd(BUFP(self));
	if (fd < 0)
		return verbs_error_errno("ibv_export_buf_dmabuf_fd");
	return PyLong_FromLong(fd);
}

static PyObject *buf_get_addr(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLongLong(BUFO(self)->addr);
}

static PyObject *buf_get_size(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLongLong(BUFO(self)->size);
}

static PyObject *buf_repr(PyObject *self)
{
	char text[64];

	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.Buf closed>");
	snprintf(text, sizeof(text), "addr=0x%llx size=%llu",
		 (unsigned long long)BUFO(self)->addr,
		 (unsigned long long)BUFO(self)->size);
	return PyUnicode_FromFormat("<ibverbs.Buf %s>", text);
}

PyDoc_STRVAR(buf__doc__,
	     "A buffer the provider allocated for a PD (``struct ibv_buf``).\n"
	     "\n"
	     "Made by ``PD.alloc_buf()``; registered with\n"
	     "``PD.reg_buf_mr()`` or ``PD.reg_mr_ex(buf=...)``. ``addr`` is\n"
	     "page-aligned and valid until ``close()``, which wraps\n"
	     "``ibv_free_buf`` (man page ibv_alloc_buf(3), rdma-core 64) and\n"
	     "refuses with "
	     "EBUSY while an MR over it is open.");

static PyMethodDef buf_methods[] = { METHOD_NOARGS("export_dmabuf_fd",
						   buf_export_dmabuf_fd),
				     HANDLE_METHODS_END };

static PyGetSetDef buf_getset[] = {
	{ "addr", buf_get_addr, NULL,
	  "The buffer's address (what ``ibv_alloc_buf`` returned); EBADF\n"
	  "once closed.",
	  NULL },
	{ "size", buf_get_size, NULL, "The buffer's size in bytes.", NULL },
	{ "pd", handle_get_parent, NULL, "The PD it was allocated for.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(Buf_spec, "Buf", BufObject, 0, buf__doc__, handle_tp_dealloc,
		 handle_tp_traverse, buf_repr, buf_methods, buf_getset);
