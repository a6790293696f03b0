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

static int mr_destroy(Handle *h)
{
	return IBV.dereg_mr((struct ibv_mr *)h->obj);
}

/* The memory is no longer registered: its owner may go, and the Buf or
 * DMAH it used is free to close. */
static void mr_release(Handle *h)
{
	Py_CLEAR(((MRObject *)h)->owner);
	handle_unuse_clear(&((MRObject *)h)->uses[0]);
	handle_unuse_clear(&((MRObject *)h)->uses[1]);
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
	HANDLE_SET_OBJ(o, mr);
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
/* PD.reg_mr_ex(), PD.reg_buf_mr(), PD.alloc_null_mr()                 */
/* ------------------------------------------------------------------ */

/* A new MR using the Buf and DMAH in uses (each NULL or a handle). */
static PyObject *mr_wrap_using(PDObject *pd, struct ibv_mr *mr, PyObject *owner,
			       uint64_t addr, uint64_t length, int access,
			       int is_dmabuf, PyObject *uses[2])
{
	MRObject *o = (MRObject *)mr_wrap(pd, mr, owner, addr, length, access,
					  is_dmabuf);
	int i;

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
	*err = errno ? errno : EINVAL;
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(pd);
	busy_also(uses, 2, -1);
	return mr;
}

/* One optional u64 keyword of reg_mr_ex: *mask |= bit when given. */
static int ex_u64(PyObject *o, const char *name, uint64_t bit, uint64_t *out,
		  uint64_t *mask)
{
	if (o == Py_None)
		return 0;
	if (arg_u64(o, name, out) < 0)
		return -1;
	*mask |= bit;
	return 0;
}

/*
 * PD.reg_mr_ex(length, access=0, *, addr=None, iova=None, fd=None,
 * fd_offset=None, dmah=None, buf=None, owner=None): each keyword given
 * sets its bit of comp_mask.  MR.addr is the address work requests use:
 * iova when given, else addr, else fd_offset (as libibverbs sets
 * ibv_mr.addr).
 */
PyObject *mr_create_ex(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "length",    "access", "addr", "iova",  "fd",
				  "fd_offset", "dmah",	 "buf",	 "owner", NULL };
	PyObject *len_o, *acc_o = NULL, *addr_o = Py_None, *iova_o = Py_None;
	PyObject *fd_o = Py_None, *off_o = Py_None, *dmah = Py_None;
	PyObject *buf = Py_None, *owner = Py_None, *uses[2] = { NULL, NULL };
	struct ibverbs_mr_init_attr a;
	uint64_t length, addr = 0, mask = 0, start;
	struct ibv_mr *mr;
	int access = 0, err;
	long fd;

	if (!PyArg_ParseTupleAndKeywords(
		    args, kw, "O|O$OOOOOOO:reg_mr_ex", kwlist, &len_o, &acc_o,
		    &addr_o, &iova_o, &fd_o, &off_o, &dmah, &buf, &owner))
		return NULL;
	memset(&a, 0, sizeof(a));
	if (parse_length(len_o, &length) < 0 ||
	    (acc_o != NULL && parse_access(acc_o, &access) < 0) ||
	    ex_u64(addr_o, "addr", IBV_REG_MR_MASK_ADDR, &addr, &mask) < 0 ||
	    ex_u64(iova_o, "iova", IBV_REG_MR_MASK_IOVA, &a.iova, &mask) < 0 ||
	    ex_u64(off_o, "fd_offset", IBV_REG_MR_MASK_FD_OFFSET, &a.fd_offset,
		   &mask) < 0)
		return NULL;
	if (fd_o != Py_None) {
		if (arg_int(fd_o, "fd", INT_MIN, INT_MAX, &fd) < 0)
			return NULL;
		a.fd = (int)fd;
		mask |= IBV_REG_MR_MASK_FD;
	}
	if ((mask & IBV_REG_MR_MASK_ADDR) && length - 1 > UINT64_MAX - addr) {
		PyErr_SetString(PyExc_ValueError,
				"addr + length overflows the address space");
		return NULL;
	}
	if (dmah != Py_None) {
		if (dmah_check(dmah, pd) < 0)
			return NULL;
		uses[1] = dmah;
		mask |= IBV_REG_MR_MASK_DMAH;
	}
	if (buf != Py_None) {
		if (buf_check(buf, pd) < 0)
			return NULL;
		uses[0] = buf;
		mask |= IBV_REG_MR_MASK_BUF;
	}
	IBV_REQUIRE_OPTIONAL(reg_mr_ex, ibv_reg_mr_ex, "rdma-core 59");
	/* The converters may run __index__, which may close a handle. */
	HANDLE_CHECK(pd);
	if ((uses[0] && handle_check(HANDLE(uses[0])) < 0) ||
	    (uses[1] && handle_check(HANDLE(uses[1])) < 0))
		return NULL;
	a.length = (size_t)length;
	a.access = access;
	a.comp_mask = mask;
	a.addr = (void *)(uintptr_t)addr;
	a.dmah = uses[1] ? HANDLE(uses[1])->obj : NULL;
	a.buf = uses[0] ? HANDLE(uses[0])->obj : NULL;
	mr = mr_reg_ex_call(pd, uses, &a, 0, &err);
	start = (mask & IBV_REG_MR_MASK_IOVA) ? a.iova :
		(mask & IBV_REG_MR_MASK_ADDR) ? addr :
						a.fd_offset;
	if (mr == NULL)
		return verbs_error_fmt(err, "ibv_reg_mr_ex",
				       "comp_mask=0x%llx addr=0x%llx "
				       "length=%llu access=0x%x",
				       (unsigned long long)mask,
				       (unsigned long long)start,
				       (unsigned long long)length, access);
	return mr_wrap_using(pd, mr, owner, start, length, access,
			     (mask & IBV_REG_MR_MASK_FD) != 0, uses);
}

/* PD.reg_buf_mr(buf, addr, length, access=0) */
PyObject *mr_create_buf(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "buf", "addr", "length", "access", NULL };
	PyObject *buf, *addr_o, *len_o, *acc_o = NULL, *uses[2] = { NULL };
	struct ibverbs_mr_init_attr a;
	uint64_t addr, length;
	struct ibv_mr *mr;
	int access = 0, err;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:reg_buf_mr", kwlist,
					 &buf, &addr_o, &len_o, &acc_o))
		return NULL;
	if (buf_check(buf, pd) < 0 || arg_u64(addr_o, "addr", &addr) < 0 ||
	    parse_length(len_o, &length) < 0 ||
	    (acc_o != NULL && parse_access(acc_o, &access) < 0))
		return NULL;
	HANDLE_CHECK(pd);
	if (handle_check(HANDLE(buf)) < 0)
		return NULL;
	/* Only what the Buf exists for: ibv_alloc_buf is rdma-core 64's too. */
	IBV_REQUIRE_OPTIONAL(reg_buf_mr, ibv_reg_buf_mr, "rdma-core 64");
	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_REG_MR_MASK_BUF | IBV_REG_MR_MASK_ADDR;
	a.addr = (void *)(uintptr_t)addr;
	a.length = (size_t)length;
	a.access = access;
	a.buf = HANDLE(buf)->obj;
	uses[0] = buf;
	mr = mr_reg_ex_call(pd, uses, &a, 1, &err);
	if (mr == NULL)
		return mr_error(err, "ibv_reg_buf_mr", addr, length, access);
	return mr_wrap_using(pd, mr, Py_None, addr, length, access, 0, uses);
}

/* PD.alloc_null_mr(): ibv_alloc_null_mr is static inline over a
 * verbs_context op (EOPNOTSUPP without one), so it is called by name. */
PyObject *mr_alloc_null(PDObject *pd)
{
	struct ibv_mr *mr;
	int err;

	errno = 0;
	mr = ibv_alloc_null_mr((struct ibv_pd *)HANDLE(pd)->obj);
	err = errno ? errno : EINVAL;
	if (mr == NULL)
		return verbs_error(err, "ibv_alloc_null_mr");
	return mr_wrap(pd, mr, Py_None, (uint64_t)(uintptr_t)mr->addr,
		       (uint64_t)mr->length, 0, 0);
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

/* The arguments of MR.rereg, checked against flags. */
struct rereg_args {
	int flags, access;
	PDObject *pd;
	uint64_t addr, length;
};

static int rereg_parse(PyObject *self, PyObject *flags_o, PyObject *pd_o,
		       PyObject *addr_o, PyObject *len_o, PyObject *acc_o,
		       PyObject *owner, struct rereg_args *r)
{
	long flags;
	int trans, other;

	if (arg_int(flags_o, "flags", 0, INT_MAX, &flags) < 0)
		return -1;
	r->flags = (int)flags;
	trans = (r->flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0;
	if (!trans != (addr_o == Py_None) || !trans != (len_o == Py_None) ||
	    (!trans && owner != Py_None)) {
		PyErr_SetString(PyExc_ValueError,
				"addr and length (and owner) go with "
				"ReregMRFlags.CHANGE_TRANSLATION, and it "
				"needs addr and length");
		return -1;
	}
	if (!(r->flags & IBV_REREG_MR_CHANGE_PD) != (pd_o == Py_None)) {
		PyErr_SetString(PyExc_ValueError,
				"pd goes with ReregMRFlags.CHANGE_PD, and it "
				"needs pd");
		return -1;
	}
	if (!(r->flags & IBV_REREG_MR_CHANGE_ACCESS) != (acc_o == Py_None)) {
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
	if (trans && (arg_u64(addr_o, "addr", &r->addr) < 0 ||
		      parse_length(len_o, &r->length) < 0))
		return -1;
	if (acc_o != Py_None && parse_access(acc_o, &r->access) < 0)
		return -1;
	r->pd = NULL;
	if (pd_o != Py_None) {
		if (!PyObject_TypeCheck(pd_o, ST.PD_type)) {
			PyErr_Format(PyExc_TypeError, "pd must be a PD, not %R",
				     (PyObject *)Py_TYPE(pd_o));
			return -1;
		}
		if (handle_check(HANDLE(pd_o)) < 0)
			return -1;
		/* Under the MR's lock: a rereg on another thread may be
		 * moving the MR to another PD (rereg_apply). */
		OBJ_LOCKED_BEGIN(self);
		other = HANDLE(pd_o)->parent != HANDLE(self)->parent->parent;
		OBJ_LOCKED_END();
		if (other) {
			PyErr_SetString(PyExc_ValueError,
					"pd belongs to another Context than "
					"the MR");
			return -1;
		}
		r->pd = (PDObject *)pd_o;
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
static void rereg_apply(MRObject *m, const struct rereg_args *r,
			PyObject *owner)
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
		if (owner != Py_None) {
			Py_INCREF(owner);
			m->owner = owner;
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
	static char *kwlist[] = { "flags",  "pd",    "addr", "length",
				  "access", "owner", NULL };
	PyObject *flags_o, *pd_o = Py_None, *addr_o = Py_None;
	PyObject *len_o = Py_None, *acc_o = Py_None, *owner = Py_None;
	PyObject *attrs, *newpd;
	struct rereg_args r;
	int rc, err;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OOOOO:rereg", kwlist,
					 &flags_o, &pd_o, &addr_o, &len_o,
					 &acc_o, &owner))
		return NULL;
	memset(&r, 0, sizeof(r));
	if (rereg_parse(self, flags_o, pd_o, addr_o, len_o, acc_o, owner, &r) <
	    0)
		return NULL;
	IBV_REQUIRE_OPTIONAL(rereg_mr, ibv_rereg_mr, "rdma-core 12");
	HANDLE_CHECK(self);
	if (r.pd != NULL && handle_check(HANDLE(r.pd)) < 0)
		return NULL;
	newpd = (PyObject *)r.pd;
	busy_also(&newpd, 1, 1);
	HANDLE_BUSY_ENTER(self);
	Py_BEGIN_ALLOW_THREADS
	errno = 0;
	rc = IBV.rereg_mr(MRP(self), r.flags,
			  r.pd ? (struct ibv_pd *)HANDLE(r.pd)->obj : NULL,
			  (void *)(uintptr_t)r.addr, (size_t)r.length,
			  r.access);
	err = errno ? errno : EINVAL;
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(self);
	busy_also(&newpd, 1, -1);
	if (rc == 0 || rc == IBV_REREG_MR_ERR_DO_FORK_OLD)
		rereg_apply((MRObject *)self, &r, owner);
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

static PyMethodDef mr_methods[] = {
	{ "sge", KW mr_sge, METH_VARARGS | METH_KEYWORDS, mr_sge__doc__ },
	{ "rereg", KW mr_rereg, METH_VARARGS | METH_KEYWORDS, mr_rereg__doc__ },
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
