/*
 * wr.c - SendWR and RecvWR: work requests that already hold the native
 * structs, ready to post (the SGE type is in sge.c).
 *
 * A WR is converted from Python once, when it is built (or when one of its
 * attributes is set), never per post: QP.post_send() links the objects'
 * own struct ibv_send_wr through wr.next (post.c), calls the inline
 * ibv_post_send() and unlinks them again.
 *
 * Lifetime: a WR holds its sg_list tuple, each SGE holds its MR, each MR
 * holds the object whose memory it registers, so the memory a WR points
 * into lives as long as the WR (a BIND_MW also holds its MW and MR).
 * The checks before a post (wr_check.c) refuse to post a WR whose MR or
 * AH was closed in the meantime (VerbsError EBADF).
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include "wr/wr.h"
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
	} else if (arg == Py_None) { /* the published default: no SGEs */
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

/* The fields of a BIND_MW (type 2 windows): mw and bind_info, both or
 * neither given, then checked against the opcode. */

static int sendwr_bind_init(SendWRObject *w, PyObject *mw, PyObject *bind_info)
{
	PyObject *mr;

	if (mw == Py_None)
		mw = NULL;
	if (bind_info == Py_None)
		bind_info = NULL;
	if (mw == NULL && bind_info == NULL)
		return 0;
	if (mw == NULL || bind_info == NULL) {
		PyErr_SetString(PyExc_ValueError,
				"a BIND_MW needs both mw= and bind_info=");
		return -1;
	}
	if (mw_parse(mw, "mw") < 0 ||
	    bind_info_from_py(bind_info, &w->wr.bind_mw.bind_info, &mr) < 0)
		return -1;
	if (handle_check(HANDLE(mw)) < 0) {
		Py_DECREF(mr);
		return -1;
	}
	Py_INCREF(mw);
	w->mw = mw;
	w->bind_mr = mr;
	w->wr.bind_mw.mw = MWP(mw);
	return 0;
}

static int sendwr_bind_validate(SendWRObject *w)
{
	if (w->wr.opcode == IBV_WR_BIND_MW) {
		if (w->mw == NULL) {
			PyErr_SetString(PyExc_ValueError,
					"BIND_MW needs mw=, bind_info= and "
					"rkey= (the new rkey)");
			return -1;
		}
		if (w->wr.num_sge != 0) {
			PyErr_SetString(PyExc_ValueError,
					"BIND_MW carries no sg_list");
			return -1;
		}
	} else if (w->mw != NULL) {
		PyErr_SetString(PyExc_ValueError,
				"mw and bind_info only go with opcode BIND_MW");
		return -1;
	}
	return 0;
}

static PyObject *sendwr_get_mw(PyObject *self, void *closure)
{
	PyObject *mw = ((SendWRObject *)self)->mw;

	if (mw == NULL)
		Py_RETURN_NONE;
	Py_INCREF(mw);
	return mw;
}

static PyObject *sendwr_get_bind_info(PyObject *self, void *closure)
{
	SendWRObject *w = (SendWRObject *)self;

	if (w->mw == NULL)
		Py_RETURN_NONE;
	return bind_info_to_py(&w->wr.bind_mw.bind_info, w->bind_mr);
}

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
enum wr_mode {
	MODE_NONE,
	MODE_UD,
	MODE_RDMA,
	MODE_ATOMIC,
	MODE_INV,
	MODE_BIND
};

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
#ifdef IBVERBS_HAVE_WR_ATOMIC_WRITE
	case IBV_WR_ATOMIC_WRITE:
#endif
		return MODE_RDMA;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return MODE_ATOMIC;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		return MODE_INV;
	case IBV_WR_BIND_MW:
		return MODE_BIND;
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
	case MODE_BIND:
		r->rkey = w->wr.bind_mw.rkey;
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
			 mode != MODE_INV && mode != MODE_BIND)
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
				PyErr_SetString(
					PyExc_ValueError,
					"remote_qkey is only used by UD "
					"sends: give an ah too");
				return -1;
			}
			op = opcode_obj(w->wr.opcode);
			if (op == NULL)
				return -1;
			PyErr_Format(PyExc_ValueError,
				     "%s is not used by opcode %R (set the "
				     "opcode first)",
				     bad, op);
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
	case MODE_BIND:
		w->wr.bind_mw.rkey = r->rkey;
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
	case IBV_WR_BIND_MW:
#ifdef IBVERBS_HAVE_WR_ATOMIC_WRITE
	case IBV_WR_ATOMIC_WRITE:
#endif
		*out = (int)v;
		return 0;
	case IBV_WR_TSO:
		PyErr_Format(PyExc_ValueError,
			     "opcode %ld (TSO) needs fields SendWR does not "
			     "carry (TSO is not supported)",
			     v);
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
				     "SEND_WITH_IMM, not %R",
				     o);
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
	return sendwr_bind_validate(w);
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
	static char *kwlist[] = { "wr_id",	"sg_list",     "opcode",
				  "send_flags", "remote_addr", "rkey",
				  "imm_data",	"compare_add", "swap",
				  "ah",		"remote_qpn",  "remote_qkey",
				  "mw",		"bind_info",   NULL };
	PyObject *wr_id_o = NULL, *sg_o = NULL, *op_o = NULL, *flags_o = NULL;
	PyObject *imm_o = Py_None, *raddr_o = NULL, *rkey_o = NULL;
	PyObject *cmp_o = NULL, *swap_o = NULL, *ah_o = Py_None;
	PyObject *qpn_o = NULL, *qkey_o = NULL, *ah = NULL;
	PyObject *mw_o = NULL, *bind_o = NULL;
	struct wr_remote r = { 0 };
	SendWRObject *self;
	uint64_t wr_id = 0;
	uint32_t flags = 0, imm = 0;
	int opcode = IBV_WR_SEND;

	/* Parsed by hand: built per work request (the data path). */
	if (!PyArg_ParseTupleAndKeywords(
		    args, kw, "|OOOOOOOOOOOOOO:SendWR", kwlist, &wr_id_o, &sg_o,
		    &op_o, &flags_o, &raddr_o, &rkey_o, &imm_o, &cmp_o, &swap_o,
		    &ah_o, &qpn_o, &qkey_o, &mw_o, &bind_o))
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
	if (r.remote_qpn > QPN_MAX) {
		PyErr_SetString(PyExc_ValueError,
				"remote_qpn must be in range 0..2**24-1");
		return NULL;
	}
	/* imm_data=0 is the published package's default: accepted (and
	 * ignored) with any opcode; another value needs a *_WITH_IMM one. */
	if (imm_o != Py_None && !is_imm_opcode(opcode) && PyLong_Check(imm_o) &&
	    PyObject_Not(imm_o) == 1)
		imm_o = Py_None;
	if (imm_o != Py_None && !is_imm_opcode(opcode)) {
		PyObject *o = opcode_obj(opcode);

		if (o != NULL)
			PyErr_Format(PyExc_ValueError,
				     "imm_data is only sent with *_WITH_IMM "
				     "opcodes, not %R",
				     o);
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
	if (sendwr_bind_init(self, mw_o, bind_o) < 0 ||
	    sendwr_validate(self) < 0 || remote_put(self, &r, 1) < 0)
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
	Py_VISIT(SWR(self)->mw);
	Py_VISIT(SWR(self)->bind_mr);
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
	memset(&w->wr.bind_mw, 0, sizeof(w->wr.bind_mw));
	Py_CLEAR(w->mw);
	Py_CLEAR(w->bind_mr);
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
	Py_CLEAR(w->mw);
	Py_CLEAR(w->bind_mr);
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
	F_REMOTE_ADDR,
	F_RKEY,
	F_COMPARE_ADD,
	F_SWAP,
	F_REMOTE_QPN,
	F_REMOTE_QKEY
};

static const char *const remote_names[] = { "remote_addr", "rkey",
					    "compare_add", "swap",
					    "remote_qpn",  "remote_qkey" };

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
		if (rc == 0 && r.remote_qpn > QPN_MAX) {
			PyErr_SetString(
				PyExc_ValueError,
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
				   "send_flags=%u%s)",
				   head, op, w->wr.num_sge, w->wr.send_flags,
				   tail);
	Py_DECREF(op);
	return res;
}

static PyGetSetDef sendwr_getset[] = {
	{ "wr_id", sendwr_get_wr_id, sendwr_set_wr_id,
	  "The caller's 64-bit cookie, returned as WC.wr_id.", NULL },
	{ "opcode", sendwr_get_opcode, sendwr_set_opcode,
	  "The WROpcode.  Setting it keeps the fields both opcodes use and "
	  "resets the others to 0 (ValueError for an unknown opcode).",
	  NULL },
	{ "send_flags", sendwr_get_send_flags, sendwr_set_send_flags,
	  "SendFlags: FENCE, SIGNALED, SOLICITED, INLINE.", NULL },
	{ "imm_data", sendwr_get_imm_data, sendwr_set_imm_data,
	  "The immediate data in host byte order (sent big-endian), or None; "
	  "only for the WITH_IMM opcodes (ValueError otherwise).",
	  NULL },
	{ "remote_addr", sendwr_get_remote, sendwr_set_remote,
	  "The remote virtual address of an RDMA or atomic opcode "
	  "(ValueError for another opcode).",
	  (void *)F_REMOTE_ADDR },
	{ "rkey", sendwr_get_remote, sendwr_set_remote,
	  "The remote key of an RDMA or atomic opcode; the rkey to "
	  "invalidate for SEND_WITH_INV and LOCAL_INV; the new rkey for "
	  "BIND_MW.",
	  (void *)F_RKEY },
	{ "compare_add", sendwr_get_remote, sendwr_set_remote,
	  "The value to compare (ATOMIC_CMP_AND_SWP) or to add "
	  "(ATOMIC_FETCH_AND_ADD).",
	  (void *)F_COMPARE_ADD },
	{ "swap", sendwr_get_remote, sendwr_set_remote,
	  "The value to swap in (ATOMIC_CMP_AND_SWP).", (void *)F_SWAP },
	{ "remote_qpn", sendwr_get_remote, sendwr_set_remote,
	  "The destination QP number of a UD send (24 bits; needs an ah).",
	  (void *)F_REMOTE_QPN },
	{ "remote_qkey", sendwr_get_remote, sendwr_set_remote,
	  "The destination Q_Key of a UD send (needs an ah).",
	  (void *)F_REMOTE_QKEY },
	{ "ah", sendwr_get_ah, sendwr_set_ah,
	  "The AH of a UD send (SEND or SEND_WITH_IMM), or None.", NULL },
	{ "sg_list", sendwr_get_sg_list, NULL,
	  "The SGEs, a tuple; read-only (build a new WR to change it).", NULL },
	{ "num_sge", sendwr_get_num_sge, NULL, "The number of SGEs in sg_list.",
	  NULL },
	{ "mw", sendwr_get_mw, NULL, "the MW a BIND_MW binds, or None", NULL },
	{ "bind_info", sendwr_get_bind_info, NULL,
	  "MWBindInfo of a BIND_MW, or None", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot sendwr_slots[] = {
	{ Py_tp_doc,
	  "A send work request (struct ibv_send_wr), converted once when\n"
	  "built and posted as is by ``QP.post_send()`` (``ibv_post_send``,\n"
	  "man page ibv_post_send(3)).  Building it calls no verb.\n"
	  "\n"
	  "Each opcode takes its own fields: ``imm_data`` the WITH_IMM\n"
	  "opcodes, ``remote_addr`` and ``rkey`` RDMA and atomics,\n"
	  "``compare_add`` and ``swap`` atomics (with exactly one 8-byte\n"
	  "SGE), ``ah``, ``remote_qpn`` and ``remote_qkey`` UD sends,\n"
	  "``mw``, ``bind_info`` and ``rkey`` (the new rkey) BIND_MW.\n"
	  "Attributes are settable for reuse.  The WR keeps its SGEs' MRs\n"
	  "(and their memory) and its AH alive.\n"
	  "\n"
	  "Args:\n"
	  "    wr_id: the 64-bit cookie the completion returns.\n"
	  "    sg_list: an SGE or an iterable of SGEs.\n"
	  "    opcode: a WROpcode (or int).\n"
	  "    send_flags: SendFlags.\n"
	  "    remote_addr: the remote virtual address (RDMA, atomics).\n"
	  "    rkey: the remote key (RDMA, atomics); the rkey to\n"
	  "        invalidate (SEND_WITH_INV, LOCAL_INV); the new rkey\n"
	  "        (BIND_MW).\n"
	  "    imm_data: immediate data in host byte order, or None.\n"
	  "    compare_add: the value to compare (ATOMIC_CMP_AND_SWP) or\n"
	  "        to add (ATOMIC_FETCH_AND_ADD).\n"
	  "    swap: the value to swap in (ATOMIC_CMP_AND_SWP).\n"
	  "    ah: the AH of a UD send, or None.\n"
	  "    remote_qpn: the destination QP number of a UD send.\n"
	  "    remote_qkey: the destination Q_Key of a UD send.\n"
	  "    mw: the MW a BIND_MW binds, or None.\n"
	  "    bind_info: the MWBindInfo of a BIND_MW, or None.\n"
	  "\n"
	  "Raises:\n"
	  "    ValueError: a field the opcode does not use, a WITH_IMM\n"
	  "        opcode without imm_data, an atomic without one 8-byte\n"
	  "        SGE, an unknown or TSO opcode, a value out of range.\n"
	  "    TypeError: sg_list holds something other than SGEs, ah is\n"
	  "        not an AH, or a field is not an int." },
	{ Py_tp_new, sendwr_new },
	{ Py_tp_dealloc, sendwr_dealloc },
	{ Py_tp_traverse, sendwr_traverse },
	{ Py_tp_clear, sendwr_clear },
	{ Py_tp_repr, sendwr_repr },
	{ Py_tp_getset, sendwr_getset },
	{ 0, NULL }
};

PyType_Spec SendWR_spec = { "ibverbs._ibverbs.SendWR", sizeof(SendWRObject), 0,
			    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			    sendwr_slots };

/* ------------------------------------------------------------------ */
/* RecvWR                                                              */
/* ------------------------------------------------------------------ */

#define RWR(self) ((RecvWRObject *)(self))

static PyObject *recvwr_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "wr_id", "sg_list", NULL };
	PyObject *wr_id_o = NULL, *sg_o = NULL;
	RecvWRObject *self;
	uint64_t wr_id = 0;

	/* Parsed by hand: built per work request (the data path). */
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
	{ "wr_id", recvwr_get_wr_id, recvwr_set_wr_id,
	  "The caller's 64-bit cookie, returned as WC.wr_id.", NULL },
	{ "sg_list", recvwr_get_sg_list, NULL,
	  "The SGEs, a tuple; read-only (build a new WR to change it).", NULL },
	{ "num_sge", recvwr_get_num_sge, NULL, "The number of SGEs in sg_list.",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot recvwr_slots[] = {
	{ Py_tp_doc,
	  "A receive work request (struct ibv_recv_wr), posted as is by\n"
	  "``QP.post_recv()`` and ``SRQ.post_recv()`` (``ibv_post_recv``,\n"
	  "man page ibv_post_recv(3)).  Building it calls no verb; the WR\n"
	  "keeps its SGEs' MRs (and their memory) alive.\n"
	  "\n"
	  "Args:\n"
	  "    wr_id: the 64-bit cookie the completion returns.\n"
	  "    sg_list: an SGE or an iterable of SGEs, where the message\n"
	  "        lands.\n"
	  "\n"
	  "Raises:\n"
	  "    TypeError: sg_list holds something other than SGEs.\n"
	  "    ValueError: wr_id out of range, or sg_list too long." },
	{ Py_tp_new, recvwr_new },
	{ Py_tp_dealloc, recvwr_dealloc },
	{ Py_tp_traverse, recvwr_traverse },
	{ Py_tp_clear, recvwr_clear },
	{ Py_tp_repr, recvwr_repr },
	{ Py_tp_getset, recvwr_getset },
	{ 0, NULL }
};

PyType_Spec RecvWR_spec = { "ibverbs._ibverbs.RecvWR", sizeof(RecvWRObject), 0,
			    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			    recvwr_slots };
