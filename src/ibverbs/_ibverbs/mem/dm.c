/*
 * dm.c - DM: device memory (ibv_dm), a child of Context, and
 * PD.reg_dm_mr(), an MR over it.
 *
 * ibv_alloc_dm, ibv_free_dm, ibv_reg_dm_mr, ibv_memcpy_to_dm and
 * ibv_memcpy_from_dm are static inline in verbs.h (provider ops behind
 * verbs_get_ctx_op, which answers EOPNOTSUPP when the provider has none),
 * so they are called by name: no symbol is involved.
 *
 * The Limited API of 3.9 has no buffer protocol: copy_to() takes bytes
 * or a bytearray.  Offsets and lengths are checked against the DM's
 * length before the provider sees them.  An MR over a DM keeps it alive
 * (MR.owner) and uses it, so DM.close() refuses with EBUSY while one is
 * registered.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include <string.h>

#define DMP(self) ((struct ibv_dm *)HANDLE(self)->obj)
#define DMO(self) ((DMObject *)(self))

HANDLE_KIND(dm_kind, "DM", "ibv_free_dm", ibv_free_dm, NULL);

/* Context.alloc_dm(length, log_align_req=0) */
METHOD_DOC(context_alloc_dm,
	   "Allocate ``length`` bytes of device memory.\n"
	   "\n"
	   "Wraps ``ibv_alloc_dm`` (man page ibv_alloc_dm(3)).\n"
	   "\n"
	   "Args:\n"
	   "    length: bytes, 1 or more (see ``max_dm_size`` of\n"
	   "        ``query_device_ex()``).\n"
	   "    log_align_req: log2 of the alignment wanted, 0..63.\n"
	   "\n"
	   "Returns:\n"
	   "    The new DM.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument is not an int.\n"
	   "    ValueError: length is 0 or a value is out of range.\n"
	   "    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	   "        when the provider has no device memory; else the verb\n"
	   "        failed (``errno``, e.g. ENOMEM).");

#define ALLOC_DM_ARGS(X, S)                      \
	X(S, INT, uint64_t, length, 1, SIZE_MAX) \
	X(S, INT, uint32_t, log_align_req, 0, 63, .flags = ARG_OPT)
ARGS_METHOD(extern, context_alloc_dm, "Context.alloc_dm", ALLOC_DM_ARGS, parent,
	    a)
{
	ContextObject *ctx = (ContextObject *)parent;
	struct ibv_alloc_dm_attr attr;
	struct ibv_dm *dm;
	DMObject *self;
	int err;

	memset(&attr, 0, sizeof(attr));
	attr.length = (size_t)a->length;
	attr.log_align_req = a->log_align_req;
	errno = 0;
	dm = ibv_alloc_dm((struct ibv_context *)HANDLE(ctx)->obj, &attr);
	err = errno_or(EINVAL);
	if (dm == NULL)
		return verbs_error_fmt(err, "ibv_alloc_dm",
				       "length=%llu log_align_req=%u",
				       (unsigned long long)a->length,
				       (unsigned int)a->log_align_req);
	self = (DMObject *)handle_adopt(ST.DM_type, &dm_kind, HANDLE(ctx), dm);
	if (self == NULL)
		return NULL;
	self->length = a->length;
	self->log_align_req = a->log_align_req;
	return (PyObject *)self;
}

/* offset and length within the DM: 0, or -1 with ValueError. */
static int dm_range(PyObject *self, uint64_t off, uint64_t len)
{
	uint64_t size = DMO(self)->length;

	if (off > size || len > size - off) {
		PyErr_Format(PyExc_ValueError,
			     "offset %llu + length %llu is beyond the DM's "
			     "%llu bytes",
			     (unsigned long long)off, (unsigned long long)len,
			     (unsigned long long)size);
		return -1;
	}
	return 0;
}

PyDoc_STRVAR(dm_copy_to__doc__,
	     "Write ``data`` into the device memory at ``offset``.\n"
	     "\n"
	     "A bytearray is copied first (it could be resized meanwhile).\n"
	     "Empty data writes nothing.\n"
	     "\n"
	     "Wraps ``ibv_memcpy_to_dm`` (man page ibv_alloc_dm(3)).\n"
	     "\n"
	     "Args:\n"
	     "    offset: start within the DM.\n"
	     "    data: bytes or bytearray.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: data is not bytes or bytearray, or offset is\n"
	     "        not an int.\n"
	     "    ValueError: offset is negative, or offset + len(data)\n"
	     "        passes the DM's end.\n" DOC_RAISES_VERB_AS(
		     "DM", ", EOPNOTSUPP when the provider has no copy op"));

#define COPY_TO_ARGS(X, S)           \
	X(S, UINT, uint64_t, offset) \
	X(S, BUFFER, PyObject *, data, 0)
ARGS_METHOD(static, dm_copy_to, "DM.copy_to", COPY_TO_ARGS, self, a)
{
	PyObject *data, *hold;
	Py_ssize_t n;
	char *p;
	int rc;

	data = a->data;
	if (PyBytes_Check(data)) {
		if (PyBytes_AsStringAndSize(data, &p, &n) < 0)
			return NULL;
		hold = data;
		Py_INCREF(hold);
	} else if (PyByteArray_Check(data)) {
		/* A copy: the bytearray could be resized meanwhile. */
		hold = PyBytes_FromStringAndSize(PyByteArray_AsString(data),
						 PyByteArray_Size(data));
		if (hold == NULL)
			return NULL;
		p = PyBytes_AsString(hold);
		n = PyBytes_Size(hold);
	} else {
		PyErr_Format(PyExc_TypeError,
			     "data must be bytes or bytearray, not %R",
			     (PyObject *)Py_TYPE(data));
		return NULL;
	}
	/* Copying a bytearray may have run a GC pass: check again. */
	if (dm_range(self, a->offset, (uint64_t)n) < 0 ||
	    handle_check(HANDLE(self)) < 0) {
		Py_DECREF(hold);
		return NULL;
	}
	/* The copies are ops of the DM itself, which a provider may leave
	 * NULL (the recording double's imported DMs do). */
	if (n && DMP(self)->memcpy_to_dm == NULL) {
		Py_DECREF(hold);
		return provider_lacks("ibv_memcpy_to_dm");
	}
	rc = n ? ibv_memcpy_to_dm(DMP(self), a->offset, p, (size_t)n) : 0;
	Py_DECREF(hold);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_memcpy_to_dm",
				       "offset=%llu length=%zd",
				       (unsigned long long)a->offset, n);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(dm_copy_from__doc__,
	     "Read ``length`` bytes of the device memory at ``offset``.\n"
	     "\n"
	     "Wraps ``ibv_memcpy_from_dm`` (man page ibv_alloc_dm(3)).\n"
	     "\n"
	     "Args:\n"
	     "    offset: start within the DM.\n"
	     "    length: bytes to read (0 gives b\"\").\n"
	     "\n"
	     "Returns:\n"
	     "    The bytes read.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: offset or length is not an int.\n"
	     "    ValueError: offset or length is negative, or offset +\n"
	     "        length passes the DM's end.\n" DOC_RAISES_VERB_AS(
		     "DM", ", EOPNOTSUPP when the provider has no copy op"));

#define COPY_FROM_ARGS(X, S)         \
	X(S, UINT, uint64_t, offset) \
	X(S, UINT, uint64_t, length)
ARGS_DECLARE(copy_from, COPY_FROM_ARGS);
METHOD_ARGS(dm_copy_from, "DM.copy_from", copy_from_params);

static PyObject *dm_copy_from(PyObject *self, PyObject *args, PyObject *kw)
{
	struct copy_from_args a;
	uint64_t off, len;
	PyObject *res;
	int rc;

	HANDLE_CHECK(self);
	if (args_parse(&dm_copy_from_args, self, args, kw, &a) < 0 ||
	    dm_range(self, a.offset, a.length) < 0)
		return NULL;
	off = a.offset;
	len = a.length;
	res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
	if (res == NULL)
		return NULL;
	if (handle_check(HANDLE(self)) < 0) {
		Py_DECREF(res);
		return NULL;
	}
	if (len && DMP(self)->memcpy_from_dm == NULL) {
		Py_DECREF(res);
		return provider_lacks("ibv_memcpy_from_dm");
	}
	rc = len ? ibv_memcpy_from_dm(PyBytes_AsString(res), DMP(self), off,
				      (size_t)len) :
		   0;
	if (rc != 0) {
		Py_DECREF(res);
		return verbs_error_fmt(rc, "ibv_memcpy_from_dm",
				       "offset=%llu length=%llu",
				       (unsigned long long)off,
				       (unsigned long long)len);
	}
	return res;
}

/* ------------------------------------------------------------------ */
/* PD.reg_dm_mr(dm, offset, length, access)                            */
/* ------------------------------------------------------------------ */

/* Deregistered: the DM is no longer used and may go. */
static void dm_mr_release(Handle *h)
{
	MRObject *m = (MRObject *)h;

	handle_unuse_clear(&m->owner);
}

HANDLE_KIND(dm_mr_kind, "MR", "ibv_dereg_mr", IBV.dereg_mr, dm_mr_release);

METHOD_DOC(pd_reg_dm_mr,
	   "Register part of a device memory allocation as an MR.\n"
	   "\n"
	   "The MR is zero-based: SGEs address it by the offset from its\n"
	   "start, and ``access`` must include ``AccessFlags.ZERO_BASED``.\n"
	   "It holds the DM (``MR.owner``) and uses it, so ``dm.close()``\n"
	   "refuses with EBUSY until the MR is closed.\n"
	   "\n"
	   "Wraps ``ibv_reg_dm_mr`` (man page ibv_alloc_dm(3)).\n"
	   "\n"
	   "Args:\n"
	   "    dm: a DM of this PD's Context.\n"
	   "    offset: start within the DM.\n"
	   "    length: bytes, 1 or more, within the DM.\n"
	   "    access: ``AccessFlags``.\n"
	   "\n"
	   "Returns:\n"
	   "    The new MR.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: dm is not a DM, or a value is not an int.\n"
	   "    ValueError: dm is of another Context, length is 0, or the\n"
	   "        range passes the DM's end.\n"
	   "    VerbsError: EBADF if the PD or the DM is closed;\n"
	   "        EOPNOTSUPP when the provider has no device memory;\n"
	   "        else the verb failed (``errno``).");

#define REG_DM_MR_ARGS(X, S)                               \
	X(S, HANDLE, PyObject *, dm, DM, ARG_SAME_CONTEXT) \
	X(S, UINT, uint64_t, offset)                       \
	X(S, INT, uint64_t, length, 1, SIZE_MAX)           \
	X(S, FLAGS, int, access, AccessFlags)
ARGS_DECLARE(reg_dm_mr, REG_DM_MR_ARGS);
METHOD_ARGS(pd_reg_dm_mr, "PD.reg_dm_mr", reg_dm_mr_params);

PyObject *pd_reg_dm_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	PDObject *pd = (PDObject *)self;
	struct reg_dm_mr_args a;
	struct ibv_mr *mr;
	PyObject *o;
	int err;

	HANDLE_CHECK(self);
	if (args_parse(&pd_reg_dm_mr_args, self, args, kw, &a) < 0 ||
	    dm_range(a.dm, a.offset, a.length) < 0)
		return NULL;
	errno = 0;
	mr = ibv_reg_dm_mr((struct ibv_pd *)HANDLE(pd)->obj, DMP(a.dm),
			   a.offset, (size_t)a.length, (unsigned int)a.access);
	err = errno_or(EINVAL);
	if (mr == NULL)
		return verbs_error_fmt(err, "ibv_reg_dm_mr",
				       "offset=%llu length=%llu access=0x%x",
				       (unsigned long long)a.offset,
				       (unsigned long long)a.length,
				       (unsigned int)a.access);
	/* Registered zero-based: addresses start at the offset. */
	o = mr_wrap(&dm_mr_kind, pd, mr, a.dm, (uint64_t)(uintptr_t)mr->addr,
		    a.length, a.access);
	if (o != NULL)
		handle_use(HANDLE(a.dm));
	return o;
}

/* ------------------------------------------------------------------ */
/* Attributes, lifetime                                                */
/* ------------------------------------------------------------------ */

static PyObject *dm_get_length(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLongLong(DMO(self)->length);
}

static PyObject *dm_get_log_align_req(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLong(DMO(self)->log_align_req);
}

static PyObject *dm_get_handle(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
#ifdef IBVERBS_HAVE_DM_HANDLE
	return PyLong_FromUnsignedLong(DMP(self)->handle);
#else
	return verbs_error_fmt(EOPNOTSUPP, "ibv_dm.handle",
			       "the rdma-core headers this module was built "
			       "against lack struct ibv_dm's handle (rdma-core "
			       "35 or newer has it)");
#endif
}

PyDoc_STRVAR(dm_export_dmabuf_fd__doc__,
	     "Export this device memory as a dma-buf fd.\n"
	     "\n"
	     "The fd is the caller's: close it with ``os.close()``. Never\n"
	     "run on hardware here; checked against the recording double.\n"
	     "\n"
	     "Wraps ``ibv_dm_export_dmabuf_fd`` (man page\n"
	     "ibv_dm_export_dmabuf_fd(3), rdma-core 62).\n"
	     "\n"
	     "Returns:\n"
	     "    A new file descriptor (an int).\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EBADF once the DM is closed; EOPNOTSUPP when\n"
	     "        libibverbs lacks the verb (rdma-core < 62) or the\n"
	     "        provider cannot; else the verb failed (``errno``).");

static PyObject *dm_export_dmabuf_fd(PyObject *self, PyObject *unused)
{
	int fd;

	HANDLE_CHECK(self);
	IBV_REQUIRE_OPTIONAL(dm_export_dmabuf_fd, ibv_dm_export_dmabuf_fd,
			     "rdma-core 62");
	errno = 0;
	fd = IBV.dm_export_dmabuf_fd(DMP(self));
	if (fd < 0)
		return verbs_error_errno("ibv_dm_export_dmabuf_fd");
	return PyLong_FromLong(fd);
}

static PyObject *dm_get_imported(PyObject *self, void *closure)
{
	return PyBool_FromLong(handle_is_imported(HANDLE(self)));
}

static PyObject *dm_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.DM closed>");
	return PyUnicode_FromFormat("<ibverbs.DM length=%llu>",
				    (unsigned long long)DMO(self)->length);
}

PyDoc_STRVAR(dm__doc__,
	     "Device memory (``struct ibv_dm``): memory on the adapter.\n"
	     "\n"
	     "Made by ``Context.alloc_dm()``; read and written with\n"
	     "``copy_from()`` and ``copy_to()``, registered for RDMA with\n"
	     "``PD.reg_dm_mr()``. ``close()`` wraps ``ibv_free_dm`` (man\n"
	     "page ibv_alloc_dm(3)) and refuses with EBUSY while an MR over\n"
	     "it is open.");

static PyMethodDef dm_methods[] = {
	METHOD_KW("copy_to", dm_copy_to), METHOD_KW("copy_from", dm_copy_from),
	METHOD_NOARGS("export_dmabuf_fd", dm_export_dmabuf_fd),
	HANDLE_METHODS_END
};

static PyGetSetDef dm_getset[] = {
	{ "length", dm_get_length, NULL, "Bytes allocated.", NULL },
	{ "log_align_req", dm_get_log_align_req, NULL,
	  "log2 of the alignment asked for at allocation.", NULL },
	{ "handle", dm_get_handle, NULL,
	  "The DM's kernel handle (``ibv_dm.handle``); EBADF once closed,\n"
	  "EOPNOTSUPP when built against rdma-core < 35 headers.",
	  NULL },
	{ "context", handle_get_parent, NULL,
	  "The Context the DM was allocated on.", NULL },
	{ "imported", dm_get_imported, NULL,
	  "True for a DM of ``Context.import_dm()``: ``close()`` then\n"
	  "wraps ``ibv_unimport_dm`` (the exporting process owns it).",
	  NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(DM_spec, "DM", DMObject, 0, dm__doc__, handle_tp_dealloc,
		 handle_tp_traverse, dm_repr, dm_methods, dm_getset);
