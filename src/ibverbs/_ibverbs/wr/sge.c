/*
 * sge.c - SGE: one scatter/gather element (struct ibv_sge), immutable.
 *
 * Built from an MR (addr and lkey from the MR, the range checked against
 * it) or from a raw address and lkey.  An SGE made from an MR holds it,
 * and so the memory the MR registers, for as long as the SGE exists; the
 * WRs in wr.c copy the struct ibv_sge into their own storage and keep the
 * SGE objects in their sg_list.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include "wr/wr.h"

/* ------------------------------------------------------------------ */
/* SGE                                                                 */
/* ------------------------------------------------------------------ */

/* A negative int offset: ValueError saying so (arg_u64 only gives the
 * range).  0 otherwise. */
static int sge_check_offset_sign(PyObject *off_o)
{
	int overflow = 0;
	long long v;

	if (!PyLong_Check(off_o))
		return 0;
	/* An int (checked above) never makes this raise: it only reports
	 * an overflow, with v -1 (a huge positive one is arg_u64's). */
	v = PyLong_AsLongLongAndOverflow(off_o, &overflow);
	if (overflow < 0 || (overflow == 0 && v < 0)) {
		PyErr_Format(PyExc_ValueError,
			     "offset must be non-negative, got %R", off_o);
		return -1;
	}
	return 0;
}

static PyObject *sge_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "mr_or_addr", "length", "lkey",
				  "offset",	"owner",  NULL };
	PyObject *src, *len_o = Py_None, *lkey_o = Py_None, *off_o = NULL;
	PyObject *mr = NULL, *owner = Py_None;
	SGEObject *self;
	uint64_t addr, off = 0;
	uint32_t length, lkey;

	/* Parsed by hand: built per work request (the data path), and its
	 * first argument is an MR or an address. */
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO$O:SGE", kwlist, &src,
					 &len_o, &lkey_o, &off_o, &owner))
		return NULL;
	if (off_o != NULL && (sge_check_offset_sign(off_o) < 0 ||
			      arg_u64(off_o, "offset", &off) < 0))
		return NULL;
	if (PyObject_TypeCheck(src, ST.MR_type)) {
		MRObject *m = (MRObject *)src;
		uint64_t avail;

		Py_INCREF(src);
		mr = src;
		if (handle_check(HANDLE(m)) < 0)
			goto fail;
		lkey = ((struct ibv_mr *)HANDLE(m)->obj)->lkey;
		if (lkey_o != Py_None) {
			uint32_t given;

			if (arg_u32(lkey_o, "lkey", &given) < 0)
				goto fail;
			if (given != lkey) {
				PyErr_Format(PyExc_ValueError,
					     "lkey %u does not match the MR's "
					     "lkey %u (an SGE built from an MR "
					     "takes its lkey)",
					     given, lkey);
				goto fail;
			}
		}
		if (off > m->length) {
			PyErr_Format(PyExc_ValueError,
				     "offset %llu exceeds the MR's length "
				     "%llu (past the end of the MR)",
				     (unsigned long long)off,
				     (unsigned long long)m->length);
			goto fail;
		}
		avail = m->length - off;
		if (len_o == Py_None) {
			if (avail > UINT32_MAX) {
				PyErr_Format(PyExc_ValueError,
					     "the rest of the MR (%llu bytes) "
					     "does not fit one SGE (2**32-1 "
					     "bytes at most); give a length",
					     (unsigned long long)avail);
				goto fail;
			}
			length = (uint32_t)avail;
		} else {
			uint64_t want;

			if (arg_u64(len_o, "length", &want) < 0)
				goto fail;
			if (want > UINT32_MAX) {
				PyErr_Format(PyExc_ValueError,
					     "an SGE holds at most 2**32-1 "
					     "bytes, not %llu: split the range "
					     "into several SGEs",
					     (unsigned long long)want);
				goto fail;
			}
			if (want > avail) {
				PyErr_Format(PyExc_ValueError,
					     "offset %llu + length %llu "
					     "exceeds the MR's length %llu "
					     "(runs past the end of the MR)",
					     (unsigned long long)off,
					     (unsigned long long)want,
					     (unsigned long long)m->length);
				goto fail;
			}
			length = (uint32_t)want;
		}
		addr = m->addr + off;
	} else {
		if (!PyLong_Check(src)) {
			PyErr_Format(PyExc_TypeError,
				     "SGE() takes an MR or an int address, "
				     "not %R (a GpuMR makes its SGEs with "
				     ".sge())",
				     (PyObject *)Py_TYPE(src));
			return NULL;
		}
		if (arg_u64(src, "address", &addr) < 0)
			return NULL;
		if (len_o == Py_None) {
			PyErr_SetString(PyExc_TypeError,
					"SGE() from a raw "
					"address needs a length");
			return NULL;
		}
		if (arg_u32(len_o, "length", &length) < 0)
			return NULL;
		if (lkey_o == Py_None) {
			PyErr_SetString(PyExc_TypeError,
					"SGE() from a raw address needs lkey= "
					"(or pass the MR itself)");
			return NULL;
		}
		if (arg_u32(lkey_o, "lkey", &lkey) < 0)
			return NULL;
		if (addr + off < addr) {
			PyErr_SetString(PyExc_ValueError,
					"address + offset overflows 64 bits");
			return NULL;
		}
		addr += off;
	}

	self = (SGEObject *)PyType_GenericAlloc(type, 0);
	if (self == NULL)
		goto fail;
	self->sge.addr = addr;
	self->sge.length = length;
	self->sge.lkey = lkey;
	self->mr = mr;
	if (owner != Py_None) {
		Py_INCREF(owner);
		self->owner = owner;
	}
	return (PyObject *)self;
fail:
	Py_XDECREF(mr);
	return NULL;
}

static int sge_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT((PyObject *)Py_TYPE(self));
	Py_VISIT(((SGEObject *)self)->mr);
	Py_VISIT(((SGEObject *)self)->owner);
	return 0;
}

static int sge_clear(PyObject *self)
{
	Py_CLEAR(((SGEObject *)self)->mr);
	Py_CLEAR(((SGEObject *)self)->owner);
	return 0;
}

static PyObject *sge_get_addr(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLongLong(SGEP(self)->addr);
}

static PyObject *sge_get_length(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLong(SGEP(self)->length);
}

static PyObject *sge_get_lkey(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLong(SGEP(self)->lkey);
}

static PyObject *sge_get_mr(PyObject *self, void *closure)
{
	PyObject *mr = ((SGEObject *)self)->mr;

	if (mr == NULL)
		Py_RETURN_NONE;
	Py_INCREF(mr);
	return mr;
}

/* What keeps the memory alive: owner= if given, else the MR, else None. */
static PyObject *sge_get_owner(PyObject *self, void *closure)
{
	SGEObject *s = (SGEObject *)self;
	PyObject *o = s->owner != NULL ? s->owner : s->mr;

	if (o == NULL)
		Py_RETURN_NONE;
	Py_INCREF(o);
	return o;
}

static PyObject *sge_repr(PyObject *self)
{
	char buf[96];

	/* PyUnicode_FromFormat has no 64-bit hex conversion. */
	snprintf(buf, sizeof(buf), "SGE(addr=0x%llx, length=%u, lkey=0x%x)",
		 (unsigned long long)SGEP(self)->addr, SGEP(self)->length,
		 SGEP(self)->lkey);
	return PyUnicode_FromString(buf);
}

static PyObject *sge_richcompare(PyObject *a, PyObject *b, int op)
{
	const struct ibv_sge *x, *y;
	int eq;

	if (!PyObject_TypeCheck(b, ST.SGE_type) || (op != Py_EQ && op != Py_NE))
		Py_RETURN_NOTIMPLEMENTED;
	x = SGEP(a);
	y = SGEP(b);
	eq = x->addr == y->addr && x->length == y->length && x->lkey == y->lkey;
	return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t sge_hash(PyObject *self)
{
	const struct ibv_sge *s = SGEP(self);
	Py_hash_t h = (Py_hash_t)(s->addr ^ ((uint64_t)s->length << 32) ^
				  ((uint64_t)s->lkey * 1000003u));

	return h == -1 ? -2 : h;
}

static PyGetSetDef sge_getset[] = {
	{ "addr", sge_get_addr, NULL, "The start address (ibv_sge.addr).",
	  NULL },
	{ "length", sge_get_length, NULL,
	  "The length in bytes (ibv_sge.length).", NULL },
	{ "lkey", sge_get_lkey, NULL,
	  "The local key of the memory (ibv_sge.lkey).", NULL },
	{ "mr", sge_get_mr, NULL,
	  "The MR the SGE was built from, or None (a raw address).", NULL },
	{ "owner", sge_get_owner, NULL,
	  "What the SGE keeps alive: owner= as given (a GpuMR for its "
	  "SGEs), else the MR, else None.",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot sge_slots[] = {
	{ Py_tp_doc,
	  "A scatter/gather element (struct ibv_sge): a range of registered\n"
	  "memory that a work request reads or writes.  Immutable, hashable,\n"
	  "compared by value; calls no verb.\n"
	  "\n"
	  "From an MR, ``addr`` is the MR's address + offset and ``lkey``\n"
	  "the MR's, and the range must lie inside the MR; the SGE keeps\n"
	  "the MR (and so its memory) alive.  From an int address, length\n"
	  "and lkey are required and nothing is checked.\n"
	  "\n"
	  "Args:\n"
	  "    mr_or_addr: an MR, or an int virtual address.\n"
	  "    length: bytes, below 2**32; None with an MR takes the rest\n"
	  "        of the MR after offset.\n"
	  "    lkey: the local key; with an MR it must equal the MR's.\n"
	  "    offset: bytes from the start, >= 0.\n"
	  "    owner: an object to keep alive with the SGE (``owner``).\n"
	  "\n"
	  "Raises:\n"
	  "    ValueError: the range runs past the MR, length does not fit\n"
	  "        32 bits, offset is negative, lkey differs from the MR's,\n"
	  "        or a raw address lacks length or lkey.\n"
	  "    TypeError: mr_or_addr is neither an MR nor an int.\n"
	  "    VerbsError: the MR is closed (EBADF)." },
	{ Py_tp_new, sge_new },
	{ Py_tp_dealloc, gc_tp_dealloc },
	{ Py_tp_traverse, sge_traverse },
	{ Py_tp_clear, sge_clear },
	{ Py_tp_repr, sge_repr },
	{ Py_tp_richcompare, sge_richcompare },
	{ Py_tp_hash, sge_hash },
	{ Py_tp_getset, sge_getset },
	{ 0, NULL }
};

PyType_Spec SGE_spec = { "ibverbs._ibverbs.SGE", sizeof(SGEObject), 0,
			 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, sge_slots };
