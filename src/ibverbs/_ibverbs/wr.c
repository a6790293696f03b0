/*
 * wr.c - SGE, SendWR and RecvWR: work requests that already hold the
 * native structs, ready to post.
 *
 * A WR is converted from Python once, when it is built (or when one of its
 * attributes is set), never per post: QP.post_send() links the objects'
 * own struct ibv_send_wr through wr.next (sendwr_chain), calls the inline
 * ibv_post_send() and unlinks them again.
 *
 * Lifetime: a WR holds its sg_list tuple, each SGE holds its MR, each MR
 * holds the object whose memory it registers, so the memory a WR points
 * into lives as long as the WR.  The chain functions refuse to post a WR
 * whose MR or AH was closed in the meantime (VerbsError EBADF): a closed MR
 * has released its memory, and a stale lkey could name a newer region.
 */
#include "ibverbs.h"
#include <arpa/inet.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* The opcode as a WROpcode member (a plain int if it names none). */
static PyObject *opcode_obj(int opcode)
{
	return enum_from_int("WROpcode", opcode);
}

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
	v = PyLong_AsLongLongAndOverflow(off_o, &overflow);
	if (v == -1 && PyErr_Occurred())
		return -1;
	if (v < 0 || overflow < 0) {
		PyErr_Format(PyExc_ValueError,
			     "offset must be non-negative, got %R", off_o);
		return -1;
	}
	return 0;
}

static PyObject *sge_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"mr_or_addr", "length", "lkey", "offset",
				 "owner", NULL};
	PyObject *src, *len_o = Py_None, *lkey_o = Py_None, *off_o = NULL;
	PyObject *mr = NULL, *owner = Py_None;
	SGEObject *self;
	uint64_t addr, off = 0;
	uint32_t length, lkey;

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
					     "takes its lkey)", given, lkey);
				goto fail;
			}
		}
		if (off > m->length) {
			PyErr_Format(PyExc_ValueError,
				     "offset %llu is past the end of the MR "
				     "(length %llu)", (unsigned long long)off,
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
					     "offset %llu + length %llu runs "
					     "past the end of the MR (length "
					     "%llu)", (unsigned long long)off,
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
				     ".sge())", (PyObject *)Py_TYPE(src));
			return NULL;
		}
		if (arg_u64(src, "address", &addr) < 0)
			return NULL;
		if (len_o == Py_None) {
			PyErr_SetString(PyExc_TypeError, "SGE() from a raw "
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

static void sge_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	PyObject_GC_UnTrack(self);
	sge_clear(self);
	tp_free(self);
	Py_DECREF(tp);
}

#define SGEP(self) (&((SGEObject *)(self))->sge)

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

	if (!PyObject_TypeCheck(b, ST.SGE_type) ||
	    (op != Py_EQ && op != Py_NE))
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
	{"addr", sge_get_addr, NULL, "start address (ibv_sge.addr)", NULL},
	{"length", sge_get_length, NULL, "length in bytes (ibv_sge.length)",
	 NULL},
	{"lkey", sge_get_lkey, NULL, "local key (ibv_sge.lkey)", NULL},
	{"mr", sge_get_mr, NULL, "the MR it points into, or None", NULL},
	{"owner", sge_get_owner, NULL, "what it keeps alive: owner= as given "
	 "(a GpuMR's SGEs: the GpuMR), else the MR, else None", NULL},
	{NULL, NULL, NULL, NULL, NULL}
};

static PyType_Slot sge_slots[] = {
	{Py_tp_doc,
	 "SGE(mr_or_addr, length=None, lkey=None, offset=0, *, owner=None)\n\n"
	 "A scatter/gather element (struct ibv_sge).  From an MR: addr is\n"
	 "the MR's address + offset, lkey the MR's, and the range must\n"
	 "lie inside the MR (ValueError otherwise; length=None takes the rest\n"
	 "of the MR).  From an int address: length and lkey= are required.\n"
	 "length < 2**32, offset >= 0.  Immutable; keeps its MR (and so its\n"
	 "memory) alive, and owner= (SGE.owner: that, else the MR)."},
	{Py_tp_new, sge_new},
	{Py_tp_dealloc, sge_dealloc},
	{Py_tp_traverse, sge_traverse},
	{Py_tp_clear, sge_clear},
	{Py_tp_repr, sge_repr},
	{Py_tp_richcompare, sge_richcompare},
	{Py_tp_hash, sge_hash},
	{Py_tp_getset, sge_getset},
	{0, NULL}
};

PyType_Spec SGE_spec = {
	"ibverbs._ibverbs.SGE", sizeof(SGEObject), 0,
	Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, sge_slots
};

/* ------------------------------------------------------------------ */
/* Scatter/gather lists, shared by SendWR and RecvWR                   */
/* ------------------------------------------------------------------ */

/*
 * Build the sg_list tuple from a single SGE or a sequence of SGEs and
 * copy the entries into *sges (inline storage or a PyMem_Malloc'd array).
 * Returns the tuple (new reference) or NULL.
 */
static PyObject *sg_list_build(PyObject *arg, struct ibv_sge *inline_sges,
			       struct ibv_sge **sges, int *num_sge)
{
	PyObject *tup, *seq;
	struct ibv_sge *arr = inline_sges;
	Py_ssize_t i, n;

	if (PyObject_TypeCheck(arg, ST.SGE_type)) {
		tup = PyTuple_Pack(1, arg);
	} else if (arg == Py_None) {  /* the published default: no SGEs */
		tup = PyTuple_New(0);
	} else {
		if (PyUnicode_Check(arg) || PyBytes_Check(arg) ||
		    PyByteArray_Check(arg))
			goto bad_type;
		seq = PyObject_GetIter(arg);
		if (seq == NULL)
			goto bad_type;
		Py_DECREF(seq);
		tup = PySequence_Tuple(arg);
	}
	if (tup == NULL)
		return NULL;
	n = PyTuple_Size(tup);
	if (n > INT32_MAX / (Py_ssize_t)sizeof(struct ibv_sge)) {
		PyErr_SetString(PyExc_ValueError, "sg_list is too long");
		goto fail;
	}
	for (i = 0; i < n; i++) {
		PyObject *s = PyTuple_GetItem(tup, i);

		if (!PyObject_TypeCheck(s, ST.SGE_type)) {
			PyErr_Format(PyExc_TypeError,
				     "sg_list[%zd] must be an SGE, not %R", i,
				     (PyObject *)Py_TYPE(s));
			goto fail;
		}
	}
	if (n > WR_INLINE_SGES) {
		arr = PyMem_Malloc(n * sizeof(*arr));
		if (arr == NULL) {
			PyErr_NoMemory();
			goto fail;
		}
	}
	for (i = 0; i < n; i++)
		arr[i] = *SGEP(PyTuple_GetItem(tup, i));
	*sges = arr;
	*num_sge = (int)n;
	return tup;
fail:
	Py_DECREF(tup);
	return NULL;
bad_type:
	PyErr_Format(PyExc_TypeError,
		     "sg_list must be an SGE or an iterable of SGEs, not %R",
		     (PyObject *)Py_TYPE(arg));
	return NULL;
}

static void sg_list_free(struct ibv_sge *sges, struct ibv_sge *inline_sges)
{
	if (sges != NULL && sges != inline_sges)
		PyMem_Free(sges);
}

/* 0, or -1 with VerbsError(EBADF) when an SGE points into a closed MR. */
static int sg_list_check(PyObject *sg_list, Py_ssize_t wr_index)
{
	Py_ssize_t i, n = PyTuple_Size(sg_list);

	for (i = 0; i < n; i++) {
		PyObject *mr = ((SGEObject *)PyTuple_GetItem(sg_list, i))->mr;

		if (mr != NULL && HANDLE(mr)->obj == NULL) {
			verbs_error_fmt(EBADF, NULL,
					"work request %zd: sg_list[%zd] points "
					"into a closed MR", wr_index, i);
			return -1;
		}
	}
	return 0;
}

static int wr_id_set(PyObject *v, uint64_t *out)
{
	if (v == NULL) {
		PyErr_SetString(PyExc_AttributeError, "cannot delete wr_id");
		return -1;
	}
	return arg_u64(v, "wr_id", out);
}

/* ------------------------------------------------------------------ */
/* SendWR                                                              */
/* ------------------------------------------------------------------ */

/*
 * The union wr.wr of struct ibv_send_wr holds different members for
 * different opcodes; the Python attributes map onto the one in use:
 *   UD (an AH is set):          ud.{ah, remote_qpn, remote_qkey}
 *   RDMA WRITE(_WITH_IMM)/READ:  rdma.{remote_addr, rkey}
 *   ATOMIC CMP_AND_SWP/FETCH_AND_ADD: atomic.{remote_addr, compare_add,
 *                                swap, rkey}
 *   SEND_WITH_INV, LOCAL_INV:    rkey is invalidate_rkey (a union with
 *                                imm_data)
 * An attribute the current opcode does not use reads as 0 and refuses a
 * non-zero value.
 */
enum wr_mode { MODE_NONE, MODE_UD, MODE_RDMA, MODE_ATOMIC, MODE_INV };

/* Remote fields, independent of the union layout. */
struct wr_remote {
	uint64_t remote_addr, compare_add, swap;
	uint32_t rkey, remote_qpn, remote_qkey;
};

static int is_imm_opcode(int op)
{
	return op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static enum wr_mode wr_mode_of(int op, int has_ah)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		return MODE_RDMA;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return MODE_ATOMIC;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		return MODE_INV;
	default:
		return has_ah ? MODE_UD : MODE_NONE;
	}
}

#define SWR(self) ((SendWRObject *)(self))

static enum wr_mode sendwr_mode(SendWRObject *w)
{
	return wr_mode_of(w->wr.opcode, w->ah != NULL);
}

static void remote_get(SendWRObject *w, struct wr_remote *r)
{
	memset(r, 0, sizeof(*r));
	switch (sendwr_mode(w)) {
	case MODE_UD:
		r->remote_qpn = w->wr.wr.ud.remote_qpn;
		r->remote_qkey = w->wr.wr.ud.remote_qkey;
		break;
	case MODE_RDMA:
		r->remote_addr = w->wr.wr.rdma.remote_addr;
		r->rkey = w->wr.wr.rdma.rkey;
		break;
	case MODE_ATOMIC:
		r->remote_addr = w->wr.wr.atomic.remote_addr;
		r->rkey = w->wr.wr.atomic.rkey;
		r->compare_add = w->wr.wr.atomic.compare_add;
		r->swap = w->wr.wr.atomic.swap;
		break;
	case MODE_INV:
		r->rkey = w->wr.invalidate_rkey;
		break;
	case MODE_NONE:
		break;
	}
}

/* Write r into the union for the current opcode/AH.  With strict, a
 * non-zero field that the opcode does not use is a ValueError; otherwise
 * it is dropped. */
static int remote_put(SendWRObject *w, const struct wr_remote *r, int strict)
{
	enum wr_mode mode = sendwr_mode(w);
	const char *bad = NULL;

	if (strict) {
		if (r->remote_addr && mode != MODE_RDMA && mode != MODE_ATOMIC)
			bad = "remote_addr";
		else if (r->rkey && mode != MODE_RDMA && mode != MODE_ATOMIC &&
			 mode != MODE_INV)
			bad = "rkey";
		else if (r->compare_add && mode != MODE_ATOMIC)
			bad = "compare_add";
		else if (r->swap && mode != MODE_ATOMIC)
			bad = "swap";
		else if (r->remote_qpn && mode != MODE_UD)
			bad = "remote_qpn";
		else if (r->remote_qkey && mode != MODE_UD)
			bad = "remote_qkey";
		if (bad != NULL) {
			PyObject *op;

			if (r->remote_qpn && mode != MODE_UD) {
				PyErr_SetString(PyExc_ValueError,
						"remote_qpn is only used by UD "
						"sends: give an ah too");
				return -1;
			}
			if (r->remote_qkey && mode != MODE_UD) {
				PyErr_SetString(PyExc_ValueError,
						"remote_qkey is only used by UD "
						"sends: give an ah too");
				return -1;
			}
			op = opcode_obj(w->wr.opcode);
			if (op == NULL)
				return -1;
			PyErr_Format(PyExc_ValueError,
				     "%s is not used by opcode %R (set the "
				     "opcode first)", bad, op);
			Py_DECREF(op);
			return -1;
		}
	}
	memset(&w->wr.wr, 0, sizeof(w->wr.wr));
	switch (mode) {
	case MODE_UD:
		w->wr.wr.ud.ah = (struct ibv_ah *)HANDLE(w->ah)->obj;
		w->wr.wr.ud.remote_qpn = r->remote_qpn;
		w->wr.wr.ud.remote_qkey = r->remote_qkey;
		break;
	case MODE_RDMA:
		w->wr.wr.rdma.remote_addr = r->remote_addr;
		w->wr.wr.rdma.rkey = r->rkey;
		break;
	case MODE_ATOMIC:
		w->wr.wr.atomic.remote_addr = r->remote_addr;
		w->wr.wr.atomic.rkey = r->rkey;
		w->wr.wr.atomic.compare_add = r->compare_add;
		w->wr.wr.atomic.swap = r->swap;
		break;
	case MODE_INV:
		w->wr.invalidate_rkey = r->rkey;
		break;
	case MODE_NONE:
		break;
	}
	return 0;
}

/* Parse and validate an opcode: the ones a SendWR can describe. */
static int opcode_parse(PyObject *o, int *out)
{
	long v;

	if (arg_int(o, "opcode", 0, INT32_MAX, &v) < 0)
		return -1;
	switch (v) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		*out = (int)v;
		return 0;
	case IBV_WR_BIND_MW:
	case IBV_WR_TSO:
		PyErr_Format(PyExc_ValueError,
			     "opcode %ld (%s) needs fields SendWR does not "
			     "carry (memory windows and TSO are not supported)",
			     v, v == IBV_WR_BIND_MW ? "BIND_MW" : "TSO");
		return -1;
	default:
		PyErr_Format(PyExc_ValueError, "unknown send opcode %ld", v);
		return -1;
	}
}

/* Opcode-specific checks of the whole WR. */
static int sendwr_validate(SendWRObject *w)
{
	int op = w->wr.opcode;

	if (w->ah != NULL && op != IBV_WR_SEND && op != IBV_WR_SEND_WITH_IMM) {
		PyObject *o = opcode_obj(op);

		if (o != NULL)
			PyErr_Format(PyExc_ValueError,
				     "an AH (UD) only goes with SEND or "
				     "SEND_WITH_IMM, not %R", o);
		Py_XDECREF(o);
		return -1;
	}
	if (is_imm_opcode(op) && w->imm == NULL) {
		PyErr_SetString(PyExc_ValueError,
				"*_WITH_IMM opcodes need imm_data");
		return -1;
	}
	if ((op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	     op == IBV_WR_ATOMIC_FETCH_AND_ADD) &&
	    (w->wr.num_sge != 1 || w->sges[0].length != 8)) {
		PyErr_SetString(PyExc_ValueError,
				"atomic opcodes need exactly one 8-byte SGE "
				"(where the original remote value lands)");
		return -1;
	}
	return 0;
}

static int ah_parse(PyObject *o, PyObject **out)
{
	if (o == Py_None) {
		*out = NULL;
		return 0;
	}
	if (!PyObject_TypeCheck(o, ST.AH_type)) {
		PyErr_Format(PyExc_TypeError,
			     "ah must be an AH or None, not %R",
			     (PyObject *)Py_TYPE(o));
		return -1;
	}
	if (handle_check(HANDLE(o)) < 0)
		return -1;
	*out = o;
	return 0;
}

static int imm_parse(PyObject *o, uint32_t *out)
{
	return arg_u32(o, "imm_data", out);
}

static PyObject *sendwr_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	/* Positional order as in the published package. */
	static char *kwlist[] = {"wr_id", "sg_list", "opcode", "send_flags",
				 "remote_addr", "rkey", "imm_data",
				 "compare_add", "swap", "ah", "remote_qpn",
				 "remote_qkey", NULL};
	PyObject *wr_id_o = NULL, *sg_o = NULL, *op_o = NULL, *flags_o = NULL;
	PyObject *imm_o = Py_None, *raddr_o = NULL, *rkey_o = NULL;
	PyObject *cmp_o = NULL, *swap_o = NULL, *ah_o = Py_None;
	PyObject *qpn_o = NULL, *qkey_o = NULL, *ah = NULL;
	struct wr_remote r = {0};
	SendWRObject *self;
	uint64_t wr_id = 0;
	uint32_t flags = 0, imm = 0;
	int opcode = IBV_WR_SEND;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOOOOOOOO:SendWR",
					 kwlist, &wr_id_o, &sg_o, &op_o,
					 &flags_o, &raddr_o, &rkey_o, &imm_o,
					 &cmp_o, &swap_o, &ah_o, &qpn_o,
					 &qkey_o))
		return NULL;
	if ((wr_id_o && arg_u64(wr_id_o, "wr_id", &wr_id) < 0) ||
	    (op_o && opcode_parse(op_o, &opcode) < 0) ||
	    (flags_o && arg_u32(flags_o, "send_flags", &flags) < 0) ||
	    (imm_o != Py_None && imm_parse(imm_o, &imm) < 0) ||
	    (raddr_o && arg_u64(raddr_o, "remote_addr", &r.remote_addr) < 0) ||
	    (rkey_o && arg_u32(rkey_o, "rkey", &r.rkey) < 0) ||
	    (cmp_o && arg_u64(cmp_o, "compare_add", &r.compare_add) < 0) ||
	    (swap_o && arg_u64(swap_o, "swap", &r.swap) < 0) ||
	    (qpn_o && arg_u32(qpn_o, "remote_qpn", &r.remote_qpn) < 0) ||
	    (qkey_o && arg_u32(qkey_o, "remote_qkey", &r.remote_qkey) < 0) ||
	    ah_parse(ah_o, &ah) < 0)
		return NULL;
	if (r.remote_qpn > 0xffffff) {
		PyErr_SetString(PyExc_ValueError,
				"remote_qpn must be in range 0..2**24-1");
		return NULL;
	}
	/* imm_data=0 is the published package's default: accepted (and
	 * ignored) with any opcode; another value needs a *_WITH_IMM one. */
	if (imm_o != Py_None && !is_imm_opcode(opcode) &&
	    PyLong_Check(imm_o) && PyObject_Not(imm_o) == 1)
		imm_o = Py_None;
	if (imm_o != Py_None && !is_imm_opcode(opcode)) {
		PyObject *o = opcode_obj(opcode);

		if (o != NULL)
			PyErr_Format(PyExc_ValueError,
				     "imm_data is only sent with *_WITH_IMM "
				     "opcodes, not %R", o);
		Py_XDECREF(o);
		return NULL;
	}

	self = (SendWRObject *)PyType_GenericAlloc(type, 0);
	if (self == NULL)
		return NULL;
	self->sges = self->sge_inline;
	self->wr.sg_list = self->sges;
	self->wr.wr_id = wr_id;
	self->wr.opcode = opcode;
	self->wr.send_flags = flags;
	if (imm_o != Py_None) {
		Py_INCREF(imm_o);
		self->imm = imm_o;
		self->wr.imm_data = htonl(imm);
	}
	Py_XINCREF(ah);
	self->ah = ah;
	if (sg_o != NULL) {
		self->sg_list = sg_list_build(sg_o, self->sge_inline,
					      &self->sges, &self->wr.num_sge);
		if (self->sg_list == NULL)
			goto fail;
		self->wr.sg_list = self->sges;
	} else {
		self->sg_list = PyTuple_New(0);
		if (self->sg_list == NULL)
			goto fail;
	}
	if (sendwr_validate(self) < 0 || remote_put(self, &r, 1) < 0)
		goto fail;
	return (PyObject *)self;
fail:
	Py_DECREF(self);
	return NULL;
}

static int sendwr_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT((PyObject *)Py_TYPE(self));
	Py_VISIT(SWR(self)->sg_list);
	Py_VISIT(SWR(self)->ah);
	Py_VISIT(SWR(self)->imm);
	return 0;
}

static int sendwr_clear(PyObject *self)
{
	SendWRObject *w = SWR(self);

	/* Nothing the SGEs point into, nor the AH, is held any more. */
	w->wr.num_sge = 0;
	memset(&w->wr.wr, 0, sizeof(w->wr.wr));
	Py_CLEAR(w->sg_list);
	Py_CLEAR(w->ah);
	Py_CLEAR(w->imm);
	return 0;
}

static void sendwr_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
	SendWRObject *w = SWR(self);

	PyObject_GC_UnTrack(self);
	Py_CLEAR(w->sg_list);
	Py_CLEAR(w->ah);
	Py_CLEAR(w->imm);
	sg_list_free(w->sges, w->sge_inline);
	w->sges = NULL;
	tp_free(self);
	Py_DECREF(tp);
}

static PyObject *sendwr_get_wr_id(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLongLong(SWR(self)->wr.wr_id);
}

static int sendwr_set_wr_id(PyObject *self, PyObject *v, void *closure)
{
	return wr_id_set(v, &SWR(self)->wr.wr_id);
}

static PyObject *sendwr_get_opcode(PyObject *self, void *closure)
{
	return opcode_obj(SWR(self)->wr.opcode);
}

static int sendwr_set_opcode(PyObject *self, PyObject *v, void *closure)
{
	SendWRObject *w = SWR(self);
	struct wr_remote r;
	int old = w->wr.opcode, op;

	if (v == NULL) {
		PyErr_SetString(PyExc_AttributeError, "cannot delete opcode");
		return -1;
	}
	if (opcode_parse(v, &op) < 0)
		return -1;
	remote_get(w, &r);
	w->wr.opcode = op;
	if (sendwr_validate(w) < 0) {
		w->wr.opcode = old;
		return -1;
	}
	if (wr_mode_of(op, w->ah != NULL) == MODE_INV) {
		/* invalidate_rkey shares its slot with imm_data */
		Py_CLEAR(w->imm);
	} else if (w->imm != NULL) {
		uint32_t imm = 0;

		if (imm_parse(w->imm, &imm) < 0)
			return -1;
		w->wr.imm_data = htonl(imm);
	} else {
		w->wr.imm_data = 0;
	}
	/* Fields the new opcode does not use are dropped. */
	return remote_put(w, &r, 0);
}

static PyObject *sendwr_get_send_flags(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLong(SWR(self)->wr.send_flags);
}

static int sendwr_set_send_flags(PyObject *self, PyObject *v, void *closure)
{
	uint32_t f;

	if (v == NULL) {
		PyErr_SetString(PyExc_AttributeError,
				"cannot delete send_flags");
		return -1;
	}
	if (arg_u32(v, "send_flags", &f) < 0)
		return -1;
	SWR(self)->wr.send_flags = f;
	return 0;
}

static PyObject *sendwr_get_imm_data(PyObject *self, void *closure)
{
	SendWRObject *w = SWR(self);

	if (w->imm == NULL)
		Py_RETURN_NONE;
	return PyLong_FromUnsignedLong(ntohl(w->wr.imm_data));
}

static int sendwr_set_imm_data(PyObject *self, PyObject *v, void *closure)
{
	SendWRObject *w = SWR(self);
	uint32_t imm;

	if (v == NULL || v == Py_None) {
		if (is_imm_opcode(w->wr.opcode)) {
			PyErr_SetString(PyExc_ValueError,
					"*_WITH_IMM opcodes need imm_data");
			return -1;
		}
		Py_CLEAR(w->imm);
		if (sendwr_mode(w) != MODE_INV)
			w->wr.imm_data = 0;
		return 0;
	}
	if (imm_parse(v, &imm) < 0)
		return -1;
	if (sendwr_mode(w) == MODE_INV) {
		PyErr_SetString(PyExc_ValueError,
				"SEND_WITH_INV and LOCAL_INV carry the rkey to "
				"invalidate instead of imm_data");
		return -1;
	}
	Py_INCREF(v);
	Py_XDECREF(w->imm);
	w->imm = v;
	w->wr.imm_data = htonl(imm);
	return 0;
}

/* Getters/setters of the union fields go through struct wr_remote. */
enum remote_field {
	F_REMOTE_ADDR, F_RKEY, F_COMPARE_ADD, F_SWAP, F_REMOTE_QPN,
	F_REMOTE_QKEY
};

static const char *const remote_names[] = {
	"remote_addr", "rkey", "compare_add", "swap", "remote_qpn",
	"remote_qkey"
};

static PyObject *sendwr_get_remote(PyObject *self, void *closure)
{
	struct wr_remote r;

	remote_get(SWR(self), &r);
	switch ((enum remote_field)(intptr_t)closure) {
	case F_REMOTE_ADDR:
		return PyLong_FromUnsignedLongLong(r.remote_addr);
	case F_RKEY:
		return PyLong_FromUnsignedLong(r.rkey);
	case F_COMPARE_ADD:
		return PyLong_FromUnsignedLongLong(r.compare_add);
	case F_SWAP:
		return PyLong_FromUnsignedLongLong(r.swap);
	case F_REMOTE_QPN:
		return PyLong_FromUnsignedLong(r.remote_qpn);
	case F_REMOTE_QKEY:
		return PyLong_FromUnsignedLong(r.remote_qkey);
	}
	Py_RETURN_NONE;
}

static int sendwr_set_remote(PyObject *self, PyObject *v, void *closure)
{
	enum remote_field f = (enum remote_field)(intptr_t)closure;
	const char *name = remote_names[f];
	SendWRObject *w = SWR(self);
	struct wr_remote r;
	int rc = 0;

	if (v == NULL) {
		PyErr_Format(PyExc_AttributeError, "cannot delete %s", name);
		return -1;
	}
	/* The hot case: the field is in the union member in use. */
	if (f == F_REMOTE_ADDR && sendwr_mode(w) == MODE_RDMA)
		return arg_u64(v, name, &w->wr.wr.rdma.remote_addr);
	if (f == F_RKEY && sendwr_mode(w) == MODE_RDMA)
		return arg_u32(v, name, &w->wr.wr.rdma.rkey);
	remote_get(w, &r);
	switch (f) {
	case F_REMOTE_ADDR:
		rc = arg_u64(v, name, &r.remote_addr);
		break;
	case F_RKEY:
		rc = arg_u32(v, name, &r.rkey);
		break;
	case F_COMPARE_ADD:
		rc = arg_u64(v, name, &r.compare_add);
		break;
	case F_SWAP:
		rc = arg_u64(v, name, &r.swap);
		break;
	case F_REMOTE_QPN:
		rc = arg_u32(v, name, &r.remote_qpn);
		if (rc == 0 && r.remote_qpn > 0xffffff) {
			PyErr_SetString(PyExc_ValueError,
					"remote_qpn must be in range 0..2**24-1");
			rc = -1;
		}
		break;
	case F_REMOTE_QKEY:
		rc = arg_u32(v, name, &r.remote_qkey);
		break;
	}
	if (rc < 0)
		return -1;
	return remote_put(w, &r, 1);
}

static PyObject *sendwr_get_ah(PyObject *self, void *closure)
{
	PyObject *ah = SWR(self)->ah;

	if (ah == NULL)
		Py_RETURN_NONE;
	Py_INCREF(ah);
	return ah;
}

static int sendwr_set_ah(PyObject *self, PyObject *v, void *closure)
{
	SendWRObject *w = SWR(self);
	PyObject *ah, *old = w->ah;
	struct wr_remote r;

	if (v == NULL)
		v = Py_None;
	if (ah_parse(v, &ah) < 0)
		return -1;
	remote_get(w, &r);
	w->ah = ah;
	if (sendwr_validate(w) < 0) {
		w->ah = old;
		return -1;
	}
	Py_XINCREF(ah);
	Py_XDECREF(old);
	/* A chain holding this WR checks its AHs again before its next post. */
	if (w->chain != NULL)
		((WRChainObject *)w->chain)->dirty = 1;
	/* remote_qpn/remote_qkey only exist with an AH */
	return remote_put(w, &r, 0);
}

static PyObject *sendwr_get_sg_list(PyObject *self, void *closure)
{
	PyObject *t = SWR(self)->sg_list;

	if (t == NULL)
		return PyTuple_New(0);
	Py_INCREF(t);
	return t;
}

static PyObject *sendwr_get_num_sge(PyObject *self, void *closure)
{
	return PyLong_FromLong(SWR(self)->wr.num_sge);
}

static PyObject *sendwr_repr(PyObject *self)
{
	SendWRObject *w = SWR(self);
	PyObject *op, *res;
	char head[48], tail[96];
	struct wr_remote r;

	op = opcode_obj(w->wr.opcode);
	if (op == NULL)
		return NULL;
	remote_get(w, &r);
	snprintf(head, sizeof(head), "SendWR(wr_id=%llu",
		 (unsigned long long)w->wr.wr_id);
	switch (sendwr_mode(w)) {
	case MODE_RDMA:
	case MODE_ATOMIC:
		snprintf(tail, sizeof(tail), ", remote_addr=0x%llx, rkey=0x%x",
			 (unsigned long long)r.remote_addr, r.rkey);
		break;
	case MODE_UD:
		snprintf(tail, sizeof(tail), ", remote_qpn=0x%x", r.remote_qpn);
		break;
	default:
		tail[0] = 0;
	}
	res = PyUnicode_FromFormat("%s, opcode=%R, num_sge=%d, "
				   "send_flags=%u%s)", head, op,
				   w->wr.num_sge, w->wr.send_flags, tail);
	Py_DECREF(op);
	return res;
}

static PyGetSetDef sendwr_getset[] = {
	{"wr_id", sendwr_get_wr_id, sendwr_set_wr_id,
	 "user cookie returned in the WC (u64)", NULL},
	{"opcode", sendwr_get_opcode, sendwr_set_opcode,
	 "WROpcode; fields the new opcode does not use are reset to 0", NULL},
	{"send_flags", sendwr_get_send_flags, sendwr_set_send_flags,
	 "SendFlags (FENCE, SIGNALED, SOLICITED, INLINE)", NULL},
	{"imm_data", sendwr_get_imm_data, sendwr_set_imm_data,
	 "immediate data in host order (sent big-endian), or None", NULL},
	{"remote_addr", sendwr_get_remote, sendwr_set_remote,
	 "remote address (RDMA and atomic opcodes)", (void *)F_REMOTE_ADDR},
	{"rkey", sendwr_get_remote, sendwr_set_remote,
	 "remote key (RDMA, atomic); the rkey to invalidate for "
	 "SEND_WITH_INV/LOCAL_INV", (void *)F_RKEY},
	{"compare_add", sendwr_get_remote, sendwr_set_remote,
	 "compare (CMP_AND_SWP) or add (FETCH_AND_ADD) operand",
	 (void *)F_COMPARE_ADD},
	{"swap", sendwr_get_remote, sendwr_set_remote,
	 "swap operand (CMP_AND_SWP)", (void *)F_SWAP},
	{"remote_qpn", sendwr_get_remote, sendwr_set_remote,
	 "destination QP number (UD, needs an AH)", (void *)F_REMOTE_QPN},
	{"remote_qkey", sendwr_get_remote, sendwr_set_remote,
	 "destination Q_Key (UD, needs an AH)", (void *)F_REMOTE_QKEY},
	{"ah", sendwr_get_ah, sendwr_set_ah,
	 "the AH of a UD send, or None", NULL},
	{"sg_list", sendwr_get_sg_list, NULL,
	 "the SGEs (a tuple; build a new WR to change it)", NULL},
	{"num_sge", sendwr_get_num_sge, NULL, "len(sg_list)", NULL},
	{NULL, NULL, NULL, NULL, NULL}
};

static PyType_Slot sendwr_slots[] = {
	{Py_tp_doc,
	 "SendWR(wr_id=0, sg_list=(), opcode=WROpcode.SEND, send_flags=0,\n"
	 "       imm_data=None, remote_addr=0, rkey=0, compare_add=0, swap=0,\n"
	 "       ah=None, remote_qpn=0, remote_qkey=0)\n\n"
	 "A send work request (struct ibv_send_wr), converted once and\n"
	 "posted as is by QP.post_send().  sg_list is an SGE or a sequence of\n"
	 "SGEs.  imm_data (host order) is required for *_WITH_IMM opcodes and\n"
	 "refused for others; remote_addr/rkey go with RDMA opcodes,\n"
	 "compare_add/swap with atomics (which need exactly one 8-byte SGE),\n"
	 "ah/remote_qpn/remote_qkey with UD SENDs.  A field the opcode does\n"
	 "not use is a ValueError.  Attributes are settable for reuse; setting\n"
	 "opcode keeps the fields both opcodes use and resets the others.\n"
	 "The WR keeps its SGEs' MRs (and their memory) and its AH alive."},
	{Py_tp_new, sendwr_new},
	{Py_tp_dealloc, sendwr_dealloc},
	{Py_tp_traverse, sendwr_traverse},
	{Py_tp_clear, sendwr_clear},
	{Py_tp_repr, sendwr_repr},
	{Py_tp_getset, sendwr_getset},
	{0, NULL}
};

PyType_Spec SendWR_spec = {
	"ibverbs._ibverbs.SendWR", sizeof(SendWRObject), 0,
	Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, sendwr_slots
};

/* ------------------------------------------------------------------ */
/* RecvWR                                                              */
/* ------------------------------------------------------------------ */

#define RWR(self) ((RecvWRObject *)(self))

static PyObject *recvwr_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"wr_id", "sg_list", NULL};
	PyObject *wr_id_o = NULL, *sg_o = NULL;
	RecvWRObject *self;
	uint64_t wr_id = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:RecvWR", kwlist,
					 &wr_id_o, &sg_o))
		return NULL;
	if (wr_id_o && arg_u64(wr_id_o, "wr_id", &wr_id) < 0)
		return NULL;
	self = (RecvWRObject *)PyType_GenericAlloc(type, 0);
	if (self == NULL)
		return NULL;
	self->sges = self->sge_inline;
	self->wr.wr_id = wr_id;
	if (sg_o != NULL)
		self->sg_list = sg_list_build(sg_o, self->sge_inline,
					      &self->sges, &self->wr.num_sge);
	else
		self->sg_list = PyTuple_New(0);
	if (self->sg_list == NULL) {
		Py_DECREF(self);
		return NULL;
	}
	self->wr.sg_list = self->sges;
	return (PyObject *)self;
}

static int recvwr_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT((PyObject *)Py_TYPE(self));
	Py_VISIT(RWR(self)->sg_list);
	return 0;
}

static int recvwr_clear(PyObject *self)
{
	Py_CLEAR(RWR(self)->sg_list);
	RWR(self)->wr.num_sge = 0;
	return 0;
}

static void recvwr_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
	RecvWRObject *w = RWR(self);

	PyObject_GC_UnTrack(self);
	Py_CLEAR(w->sg_list);
	sg_list_free(w->sges, w->sge_inline);
	w->sges = NULL;
	tp_free(self);
	Py_DECREF(tp);
}

static PyObject *recvwr_get_wr_id(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLongLong(RWR(self)->wr.wr_id);
}

static int recvwr_set_wr_id(PyObject *self, PyObject *v, void *closure)
{
	return wr_id_set(v, &RWR(self)->wr.wr_id);
}

static PyObject *recvwr_get_sg_list(PyObject *self, void *closure)
{
	PyObject *t = RWR(self)->sg_list;

	if (t == NULL)
		return PyTuple_New(0);
	Py_INCREF(t);
	return t;
}

static PyObject *recvwr_get_num_sge(PyObject *self, void *closure)
{
	return PyLong_FromLong(RWR(self)->wr.num_sge);
}

static PyObject *recvwr_repr(PyObject *self)
{
	char buf[96];

	snprintf(buf, sizeof(buf), "RecvWR(wr_id=%llu, num_sge=%d)",
		 (unsigned long long)RWR(self)->wr.wr_id,
		 RWR(self)->wr.num_sge);
	return PyUnicode_FromString(buf);
}

static PyGetSetDef recvwr_getset[] = {
	{"wr_id", recvwr_get_wr_id, recvwr_set_wr_id,
	 "user cookie returned in the WC (u64)", NULL},
	{"sg_list", recvwr_get_sg_list, NULL,
	 "the SGEs (a tuple; build a new WR to change it)", NULL},
	{"num_sge", recvwr_get_num_sge, NULL, "len(sg_list)", NULL},
	{NULL, NULL, NULL, NULL, NULL}
};

static PyType_Slot recvwr_slots[] = {
	{Py_tp_doc,
	 "RecvWR(wr_id=0, sg_list=())\n\n"
	 "A receive work request (struct ibv_recv_wr), posted as is by\n"
	 "QP.post_recv() / SRQ.post_recv().  sg_list is an SGE or a sequence\n"
	 "of SGEs; the WR keeps their MRs (and their memory) alive."},
	{Py_tp_new, recvwr_new},
	{Py_tp_dealloc, recvwr_dealloc},
	{Py_tp_traverse, recvwr_traverse},
	{Py_tp_clear, recvwr_clear},
	{Py_tp_repr, recvwr_repr},
	{Py_tp_getset, recvwr_getset},
	{0, NULL}
};

PyType_Spec RecvWR_spec = {
	"ibverbs._ibverbs.RecvWR", sizeof(RecvWRObject), 0,
	Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, recvwr_slots
};

/* ------------------------------------------------------------------ */
/* Chaining for post_send / post_recv                                  */
/* ------------------------------------------------------------------ */

/* Per-WR checks before posting: MRs still open, AH still open (and its
 * current struct ibv_ah * in the WR). */
int sendwr_ready(SendWRObject *w, Py_ssize_t i)
{
	if (w->ah != NULL) {
		void *ah = HANDLE(w->ah)->obj;

		if (ah == NULL) {
			verbs_error_fmt(EBADF, NULL, "work request %zd: its "
					"AH is closed", i);
			return -1;
		}
		w->wr.wr.ud.ah = ah;
	}
	if (w->wr.num_sge && sg_list_check(w->sg_list, i) < 0)
		return -1;
	return 0;
}

int recvwr_ready(RecvWRObject *w, Py_ssize_t i)
{
	if (w->wr.num_sge && sg_list_check(w->sg_list, i) < 0)
		return -1;
	return 0;
}

/*
 * The list/tuple case, for both kinds.  The fast path links in one pass:
 * a WR outside a chain always has next == NULL (every chain is undone
 * right after its post, under the GIL; a member of a SendWRChain or
 * RecvWRChain is refused and its links are never touched here), so an
 * item met twice is one with a non-NULL next, or the tail.  When that happens the slow path decides,
 * from scratch: pass 1 checks every item and clears its next; pass 2
 * links them, refusing an item seen twice (a WR can only sit once in a
 * chain).  Unchaining walks the native chain: no item lookups.
 */
#define DEFINE_CHAIN(prefix, Obj, wrtype, Name)                          \
static PyObject *prefix##_item(PyObject *arg, int is_list, Py_ssize_t i) \
{                                                                        \
	return is_list ? PyList_GetItem(arg, i) : PyTuple_GetItem(arg, i); \
}                                                                        \
                                                                         \
static void prefix##_unlink(PyObject *arg, int is_list)                  \
{                                                                        \
	Py_ssize_t i, n = is_list ? PyList_Size(arg) : PyTuple_Size(arg); \
                                                                         \
	for (i = 0; i < n; i++) {                                        \
		PyObject *o = prefix##_item(arg, is_list, i);            \
                                                                         \
		/* A chain's member keeps its links. */                 \
		if (Py_TYPE(o) == ST.Name##_type &&                      \
		    ((Obj *)o)->chain == NULL)                           \
			((Obj *)o)->wr.next = NULL;                      \
	}                                                                \
}                                                                        \
                                                                         \
static struct wrtype *prefix##_chain_slow(PyObject *arg, int is_list,   \
					  Py_ssize_t n);                 \
                                                                         \
static int prefix##_check_item(PyObject *o, Py_ssize_t i)                \
{                                                                        \
	if (Py_TYPE(o) != ST.Name##_type) {                              \
		PyErr_Format(PyExc_TypeError,                            \
			     "work request %zd must be a " #Name ", not %R", \
			     i, (PyObject *)Py_TYPE(o));                 \
		return -1;                                               \
	}                                                                \
	if (((Obj *)o)->chain != NULL)                                   \
		return wr_member_error(#Name, i);                        \
	return prefix##_ready((Obj *)o, i);                              \
}                                                                        \
                                                                         \
/* Links items 0..n-1.  An item already linked (a non-NULL next, or the \
 * tail) is met twice: in the fast pass that sends us to the slow one,  \
 * which first clears every next (so a stale one cannot fool it) and    \
 * then refuses it. */                                                  \
static struct wrtype *prefix##_link(PyObject *arg, int is_list,         \
				    Py_ssize_t n, int slow)              \
{                                                                        \
	Py_ssize_t i;                                                    \
	Obj *prev = NULL, *head = NULL;                                  \
                                                                         \
	for (i = 0; i < n; i++) {                                        \
		PyObject *o = prefix##_item(arg, is_list, i);            \
		Obj *w = (Obj *)o;                                       \
                                                                         \
		if (Py_TYPE(o) == ST.Name##_type &&                      \
		    (w->wr.next != NULL || w == prev)) {                 \
			if (!slow)                                       \
				return prefix##_chain_slow(arg, is_list, n); \
			PyErr_Format(PyExc_ValueError,                   \
				     "work request %zd appears more "    \
				     "than once in the list", i);        \
			goto fail;                                       \
		}                                                        \
		/* The slow pass checked every item already. */          \
		if (!slow && prefix##_check_item(o, i) < 0)              \
			goto fail;                                       \
		if (prev != NULL)                                        \
			prev->wr.next = &w->wr;                          \
		else                                                     \
			head = w;                                        \
		prev = w;                                                \
	}                                                                \
	return &head->wr;                                                \
fail:                                                                    \
	prefix##_unlink(arg, is_list);                                   \
	return NULL;                                                     \
}                                                                        \
                                                                         \
static struct wrtype *prefix##_chain_slow(PyObject *arg, int is_list,   \
					  Py_ssize_t n)                  \
{                                                                        \
	Py_ssize_t i;                                                    \
                                                                         \
	prefix##_unlink(arg, is_list);                                   \
	for (i = 0; i < n; i++) {                                        \
		if (prefix##_check_item(prefix##_item(arg, is_list, i), i) < 0) \
			return NULL;                                     \
	}                                                                \
	return prefix##_link(arg, is_list, n, 1);                        \
}                                                                        \
                                                                         \
struct wrtype *prefix##_chain(PyObject *arg)                             \
{                                                                        \
	Py_ssize_t n;                                                    \
	int is_list;                                                     \
                                                                         \
	if (Py_TYPE(arg) == ST.Name##_type) {                            \
		Obj *w = (Obj *)arg;                                     \
                                                                         \
		if (w->chain != NULL) {                                  \
			wr_member_error(#Name, 0);                       \
			return NULL;                                     \
		}                                                        \
		if (prefix##_ready(w, 0) < 0)                            \
			return NULL;                                     \
		w->wr.next = NULL;                                       \
		return &w->wr;                                           \
	}                                                                \
	if (Py_TYPE(arg) == ST.Name##Chain_type)                         \
		return prefix##chain_head(arg);                          \
	is_list = PyList_Check(arg);                                     \
	if (!is_list && !PyTuple_Check(arg)) {                           \
		PyErr_Format(PyExc_TypeError,                            \
			     "expected a " #Name " or a list of " #Name  \
			     ", not %R", (PyObject *)Py_TYPE(arg));      \
		return NULL;                                             \
	}                                                                \
	n = is_list ? PyList_Size(arg) : PyTuple_Size(arg);              \
	if (n == 0) {                                                    \
		PyErr_SetString(PyExc_ValueError,                        \
				"empty list of work requests");          \
		return NULL;                                             \
	}                                                                \
	return prefix##_link(arg, is_list, n, 0);                        \
}                                                                        \
                                                                         \
void prefix##_unchain(PyObject *arg)                                     \
{                                                                        \
	PyObject *first = NULL;                                          \
	struct wrtype *w, *next;                                         \
                                                                         \
	if (Py_TYPE(arg) == ST.Name##_type)                              \
		first = arg;                                             \
	else if (PyList_Check(arg) && PyList_Size(arg) > 0)              \
		first = PyList_GetItem(arg, 0);                          \
	else if (PyTuple_Check(arg) && PyTuple_Size(arg) > 0)            \
		first = PyTuple_GetItem(arg, 0);                         \
	if (first == NULL || Py_TYPE(first) != ST.Name##_type)           \
		return;                                                  \
	for (w = &((Obj *)first)->wr; w != NULL; w = next) {             \
		next = w->next;                                          \
		w->next = NULL;                                          \
	}                                                                \
}                                                                        \
                                                                         \
static Py_ssize_t prefix##_index(PyObject *arg,                          \
				 const struct wrtype *bad)               \
{                                                                        \
	Py_ssize_t i, n;                                                 \
	int is_list;                                                     \
                                                                         \
	if (bad == NULL)                                                 \
		return -1;                                               \
	if (Py_TYPE(arg) == ST.Name##_type)                              \
		return &((Obj *)arg)->wr == bad ? 0 : -1;                \
	if (Py_TYPE(arg) == ST.Name##Chain_type) {                       \
		arg = ((WRChainObject *)arg)->items;                     \
		if (arg == NULL)                                         \
			return -1;                                       \
	}                                                                \
	is_list = PyList_Check(arg);                                     \
	if (!is_list && !PyTuple_Check(arg))                             \
		return -1;                                               \
	n = is_list ? PyList_Size(arg) : PyTuple_Size(arg);              \
	for (i = 0; i < n; i++) {                                        \
		PyObject *o = prefix##_item(arg, is_list, i);            \
                                                                         \
		if (o != NULL && Py_TYPE(o) == ST.Name##_type &&         \
		    &((Obj *)o)->wr == bad)                              \
			return i;                                        \
	}                                                                \
	return -1;                                                       \
}                                                                        \
                                                                         \
Py_ssize_t prefix##_failed(PyObject *arg, struct wrtype *head,          \
			   struct wrtype **bad)                          \
{                                                                        \
	Py_ssize_t idx;                                                  \
                                                                         \
	/* A single WR is the rejected one even when the provider left  \
	 * *bad unset. */                                               \
	if (*bad == NULL && Py_TYPE(arg) == ST.Name##_type)              \
		*bad = head;                                             \
	idx = prefix##_index(arg, *bad);                                 \
	prefix##_unchain(arg);                                           \
	return idx;                                                      \
}

DEFINE_CHAIN(sendwr, SendWRObject, ibv_send_wr, SendWR)
DEFINE_CHAIN(recvwr, RecvWRObject, ibv_recv_wr, RecvWR)

int sendwr_check_ud(const struct ibv_send_wr *head)
{
	const struct ibv_send_wr *w;
	Py_ssize_t i = 0;

	for (w = head; w != NULL; w = w->next, i++) {
		if (w->opcode != IBV_WR_SEND &&
		    w->opcode != IBV_WR_SEND_WITH_IMM) {
			PyErr_Format(PyExc_ValueError,
				     "work request %zd: a UD QP only posts SEND "
				     "and SEND_WITH_IMM", i);
			return -1;
		}
		if (w->wr.ud.ah == NULL) {
			PyErr_Format(PyExc_ValueError,
				     "work request %zd: a send on a UD QP needs "
				     "an AH (SendWR(ah=..., remote_qpn=..., "
				     "remote_qkey=...))", i);
			return -1;
		}
	}
	return 0;
}
