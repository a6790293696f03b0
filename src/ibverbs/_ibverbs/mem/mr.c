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
#include <limits.h>
#include <stdio.h>

#define MRP(self) ((struct ibv_mr *)HANDLE(self)->obj)

static int mr_destroy(Handle *h)
{
	return IBV.dereg_mr((struct ibv_mr *)h->obj);
}

/* The memory is no longer registered: its owner may go. */
static void mr_release(Handle *h)
{
	Py_CLEAR(((MRObject *)h)->owner);
}

static const HandleKind mr_kind = { "MR", "ibv_dereg_mr", mr_destroy,
				    mr_release };

static int parse_access(PyObject *o, int *access)
{
	long v;

	if (arg_int(o, "access", 0, INT_MAX, &v) < 0)
		return -1;
	*access = (int)v;
	return 0;
}

static int parse_length(PyObject *o, uint64_t *length)
{
	if (arg_u64(o, "length", length) < 0)
		return -1;
	if (*length == 0 || *length > SIZE_MAX) {
		PyErr_Format(PyExc_ValueError,
			     "length must be in range 1..%zu, got %S",
			     (size_t)SIZE_MAX, o);
		return -1;
	}
	return 0;
}

/* Wrap a freshly registered ibv_mr; deregisters it on failure. */
static PyObject *mr_wrap(PDObject *pd, struct ibv_mr *mr, PyObject *owner,
			 uint64_t addr, uint64_t length, int access,
			 int is_dmabuf)
{
	MRObject *o = HANDLE_ALLOC(MRObject, ST.MR_type);

	if (o == NULL) {
		IBV.dereg_mr(mr);
		return NULL;
	}
	handle_init(HANDLE(o), &mr_kind, HANDLE(pd));
	HANDLE(o)->obj = mr;
	if (owner != Py_None) {
		Py_INCREF(owner);
		o->owner = owner;
	}
	o->addr = addr;
	o->length = length;
	o->access = access;
	o->is_dmabuf = is_dmabuf;
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
static PyObject *mr_register(PDObject *pd, PyObject *addr_o, PyObject *len_o,
			     PyObject *iova_o, PyObject *acc_o, PyObject *owner)
{
	const char *verb = iova_o ? "ibv_reg_mr_iova" : "ibv_reg_mr";
	struct ibv_pd *p = HANDLE(pd)->obj;
	uint64_t addr, length, iova;
	struct ibv_mr *mr;
	int access = 0, err;

	if (!PyLong_Check(addr_o)) {
		PyErr_Format(PyExc_TypeError,
			     "addr must be an int address, not %R (use "
			     "ibverbs.reg_tensor() for arrays and tensors)",
			     (PyObject *)Py_TYPE(addr_o));
		return NULL;
	}
	if (arg_u64(addr_o, "addr", &addr) < 0 ||
	    parse_length(len_o, &length) < 0 ||
	    (iova_o != NULL && arg_u64(iova_o, "iova", &iova) < 0) ||
	    (acc_o != NULL && parse_access(acc_o, &access) < 0))
		return NULL;
	if (iova_o == NULL)
		iova = addr;
	if (length > UINT64_MAX - addr || length - 1 > UINT64_MAX - iova) {
		PyErr_SetString(PyExc_ValueError,
				iova_o && length <= UINT64_MAX - addr ?
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
	else if (iova_o != NULL)
		IBV_REQUIRE_OPTIONAL(reg_mr_iova, ibv_reg_mr_iova,
				     "rdma-core 25");
	/* arg_* may run __index__, which may close the PD. */
	HANDLE_CHECK(pd);
	HANDLE_BUSY_ENTER(pd);
	Py_BEGIN_ALLOW_THREADS
	errno = 0;
	if (access & IBV_ACCESS_OPTIONAL_RANGE)
		mr = IBV.reg_mr_iova2(p, (void *)(uintptr_t)addr, length, iova,
				      (unsigned int)access);
	else if (iova_o != NULL)
		mr = IBV.reg_mr_iova(p, (void *)(uintptr_t)addr, length, iova,
				     access);
	else
		mr = IBV.reg_mr(p, (void *)(uintptr_t)addr, length, access);
	err = errno ? errno : EINVAL;
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(pd);
	if (mr == NULL)
		return mr_error(err, verb, iova, length, access);
	return mr_wrap(pd, mr, owner, iova, length, access, 0);
}

PyObject *mr_create(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "addr", "length", "access", "owner", NULL };
	PyObject *addr_o, *len_o, *acc_o = NULL, *owner = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$O:reg_mr", kwlist,
					 &addr_o, &len_o, &acc_o, &owner))
		return NULL;
	return mr_register(pd, addr_o, len_o, NULL, acc_o, owner);
}

PyObject *mr_create_iova(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "addr",   "length", "iova",
				  "access", "owner",  NULL };
	PyObject *addr_o, *len_o, *iova_o, *acc_o = NULL, *owner = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O$O:reg_mr_iova",
					 kwlist, &addr_o, &len_o, &iova_o,
					 &acc_o, &owner))
		return NULL;
	return mr_register(pd, addr_o, len_o, iova_o, acc_o, owner);
}

/*
 * PD.reg_dmabuf_mr(offset, length, iova, fd, access=0, *, owner=None).
 * ibv_mr.addr of such an MR holds the offset; MR.addr is the iova.
 */
PyObject *mr_create_dmabuf(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "offset", "length", "iova", "fd",
				  "access", "owner",  NULL };
	PyObject *off_o, *len_o, *iova_o, *fd_o, *acc_o = NULL;
	PyObject *owner = Py_None;
	struct ibv_pd *p = HANDLE(pd)->obj;
	uint64_t offset, length, iova;
	struct ibv_mr *mr;
	int access = 0, err;
	long fd;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|O$O:reg_dmabuf_mr",
					 kwlist, &off_o, &len_o, &iova_o, &fd_o,
					 &acc_o, &owner))
		return NULL;
	if (arg_u64(off_o, "offset", &offset) < 0 ||
	    parse_length(len_o, &length) < 0 ||
	    arg_u64(iova_o, "iova", &iova) < 0 ||
	    arg_int(fd_o, "fd", INT_MIN, INT_MAX, &fd) < 0 ||
	    (acc_o != NULL && parse_access(acc_o, &access) < 0))
		return NULL;
	/* Checked before the verb, but with the verb's error class: code
	 * written for the published package catches VerbsError(EBADF). */
	if (fd < 0)
		return verbs_error_fmt(EBADF, "ibv_reg_dmabuf_mr",
				       "fd %ld is not a file descriptor", fd);
	IBV_REQUIRE_OPTIONAL(reg_dmabuf_mr, ibv_reg_dmabuf_mr, "rdma-core 34");
	HANDLE_BUSY_ENTER(pd);
	Py_BEGIN_ALLOW_THREADS
	errno = 0;
	mr = IBV.reg_dmabuf_mr(p, offset, length, iova, (int)fd, access);
	err = errno ? errno : EINVAL;
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(pd);
	if (mr == NULL)
		return mr_error(err, "ibv_reg_dmabuf_mr", iova, length, access);
	return mr_wrap(pd, mr, owner, iova, length, access, 1);
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
static PyObject *mr_sge(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "length", "offset", NULL };
	PyObject *len_o = Py_None, *off_o = NULL, *a, *k = NULL, *res = NULL;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:sge", kwlist, &len_o,
					 &off_o))
		return NULL;
	a = PyTuple_Pack(2, self, len_o);
	if (a != NULL && off_o != NULL)
		k = Py_BuildValue("{sO}", "offset", off_o);
	if (a != NULL && (off_o == NULL || k != NULL))
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
	PyObject *o = ((MRObject *)self)->owner;

	if (o == NULL)
		Py_RETURN_NONE;
	Py_INCREF(o);
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

static int mr_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((MRObject *)self)->owner);
	return handle_traverse(HANDLE(self), visit, arg);
}

/* Breaks a cycle through the owner (an owner that refers to its MR):
 * deregister first, so the memory is never released while registered. */
static int mr_clear(PyObject *self)
{
	handle_close_quiet(HANDLE(self));
	if (HANDLE(self)->obj == NULL)
		Py_CLEAR(((MRObject *)self)->owner);
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
	}
	Py_CLEAR(((MRObject *)self)->owner);
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

static PyMethodDef mr_methods[] = {
	{ "sge", KW mr_sge, METH_VARARGS | METH_KEYWORDS, mr_sge__doc__ },
	HANDLE_METHODS_END
};

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
