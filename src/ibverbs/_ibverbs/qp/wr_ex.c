/*
 * wr_ex.c - QPEx's ibv_wr_* calls: the builders (wr_send, wr_rdma_write,
 * ...), one per operation, and the setters that attach data or a UD
 * destination to the work request the last builder started; and QPEx's
 * method table.
 *
 * Each call converts and checks its arguments first (TypeError,
 * ValueError; a closed MR or AH: VerbsError EBADF), then the batch's
 * state (qp_ex.c: VerbsError EINVAL outside wr_start/wr_complete, for an
 * operation not in send_ops_flags, a setter without a builder or one the
 * operation does not take), and only then calls the verbs.h inline, which
 * jumps to the provider.  GIL kept: nothing here blocks.
 *
 * A new builder (wr_bind_mw, ...) is one function here calling
 * qpex_begin_wr() with its WREX_OP_* (and whether the provider set the
 * op) before the inline, and one line in qpex_methods below.
 */
#include "ibverbs.h"
#include <string.h>

#define QPX(self) (QPEXO(self)->qpx)

/* The provider left the op NULL: it does not implement it. */
static PyObject *provider_lacks(const char *verb)
{
	return verbs_error_fmt(EOPNOTSUPP, verb,
			       "the provider does not implement it");
}

#define NEED_OP(self, field, verb)                   \
	do {                                         \
		if (QPX(self)->field == NULL)        \
			return provider_lacks(verb); \
	} while (0)

/* Parse up to 5 integer arguments named in kwlist (u32 when bits is 32,
 * else u64).  0 or -1. */
static int parse_ints(PyObject *args, PyObject *kw, const char *fmt,
		      char **kwlist, const int *bits, uint64_t *out)
{
	PyObject *o[5] = { NULL };
	int i;

	if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &o[0], &o[1],
					 &o[2], &o[3], &o[4]))
		return -1;
	for (i = 0; kwlist[i] != NULL; i++) {
		if (bits[i] == 32) {
			uint32_t v;

			if (arg_u32(o[i], kwlist[i], &v) < 0)
				return -1;
			out[i] = v;
		} else if (bits[i] == 8) {
			long v;

			if (arg_int(o[i], kwlist[i], 0, UINT8_MAX, &v) < 0)
				return -1;
			out[i] = (uint64_t)v;
		} else if (arg_u64(o[i], kwlist[i], &out[i]) < 0) {
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Builders                                                            */
/* ------------------------------------------------------------------ */

static PyObject *wr_send(PyObject *self, PyObject *unused)
{
	HANDLE_CHECK(self);
	if (qpex_begin_wr(self, WREX_OP_SEND, "ibv_wr_send",
			  QPX(self)->wr_send != NULL) < 0)
		return NULL;
	ibv_wr_send(QPX(self));
	Py_RETURN_NONE;
}

static PyObject *wr_send_imm(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "imm_data", NULL };
	static const int bits[] = { 32 };
	uint64_t v[1];

	HANDLE_CHECK(self);
	if (parse_ints(args, kw, "O:wr_send_imm", kwlist, bits, v) < 0)
		return NULL;
	if (qpex_begin_wr(self, WREX_OP_SEND_IMM, "ibv_wr_send_imm",
			  QPX(self)->wr_send_imm != NULL) < 0)
		return NULL;
	ibv_wr_send_imm(QPX(self), htobe32((uint32_t)v[0]));
	Py_RETURN_NONE;
}

static PyObject *wr_send_inv(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "invalidate_rkey", NULL };
	static const int bits[] = { 32 };
	uint64_t v[1];

	HANDLE_CHECK(self);
	if (parse_ints(args, kw, "O:wr_send_inv", kwlist, bits, v) < 0)
		return NULL;
	if (qpex_begin_wr(self, WREX_OP_SEND_INV, "ibv_wr_send_inv",
			  QPX(self)->wr_send_inv != NULL) < 0)
		return NULL;
	ibv_wr_send_inv(QPX(self), (uint32_t)v[0]);
	Py_RETURN_NONE;
}

static char *kw_rdma[] = { "rkey", "remote_addr", NULL };
static const int bits_rdma[] = { 32, 64 };

static PyObject *wr_rdma_write(PyObject *self, PyObject *args, PyObject *kw)
{
	uint64_t v[2];

	HANDLE_CHECK(self);
	if (parse_ints(args, kw, "OO:wr_rdma_write", kw_rdma, bits_rdma, v) < 0)
		return NULL;
	if (qpex_begin_wr(self, WREX_OP_RDMA_WRITE, "ibv_wr_rdma_write",
			  QPX(self)->wr_rdma_write != NULL) < 0)
		return NULL;
	ibv_wr_rdma_write(QPX(self), (uint32_t)v[0], v[1]);
	Py_RETURN_NONE;
}

static PyObject *wr_rdma_write_imm(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "rkey", "remote_addr", "imm_data", NULL };
	static const int bits[] = { 32, 64, 32 };
	uint64_t v[3];

	HANDLE_CHECK(self);
	if (parse_ints(args, kw, "OOO:wr_rdma_write_imm", kwlist, bits, v) < 0)
		return NULL;
	if (qpex_begin_wr(self, WREX_OP_RDMA_WRITE_IMM, "ibv_wr_rdma_write_imm",
			  QPX(self)->wr_rdma_write_imm != NULL) < 0)
		return NULL;
	ibv_wr_rdma_write_imm(QPX(self), (uint32_t)v[0], v[1],
			      htobe32((uint32_t)v[2]));
	Py_RETURN_NONE;
}

static PyObject *wr_rdma_read(PyObject *self, PyObject *args, PyObject *kw)
{
	uint64_t v[2];

	HANDLE_CHECK(self);
	if (parse_ints(args, kw, "OO:wr_rdma_read", kw_rdma, bits_rdma, v) < 0)
		return NULL;
	if (qpex_begin_wr(self, WREX_OP_RDMA_READ, "ibv_wr_rdma_read",
			  QPX(self)->wr_rdma_read != NULL) < 0)
		return NULL;
	ibv_wr_rdma_read(QPX(self), (uint32_t)v[0], v[1]);
	Py_RETURN_NONE;
}

static PyObject *wr_atomic_cmp_swp(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "rkey", "remote_addr", "compare", "swap",
				  NULL };
	static const int bits[] = { 32, 64, 64, 64 };
	uint64_t v[4];

	HANDLE_CHECK(self);
	if (parse_ints(args, kw, "OOOO:wr_atomic_cmp_swp", kwlist, bits, v) < 0)
		return NULL;
	if (qpex_begin_wr(self, WREX_OP_ATOMIC_CMP_SWP, "ibv_wr_atomic_cmp_swp",
			  QPX(self)->wr_atomic_cmp_swp != NULL) < 0)
		return NULL;
	ibv_wr_atomic_cmp_swp(QPX(self), (uint32_t)v[0], v[1], v[2], v[3]);
	Py_RETURN_NONE;
}

static PyObject *wr_atomic_fetch_add(PyObject *self, PyObject *args,
				     PyObject *kw)
{
	static char *kwlist[] = { "rkey", "remote_addr", "add", NULL };
	static const int bits[] = { 32, 64, 64 };
	uint64_t v[3];

	HANDLE_CHECK(self);
	if (parse_ints(args, kw, "OOO:wr_atomic_fetch_add", kwlist, bits, v) <
	    0)
		return NULL;
	if (qpex_begin_wr(self, WREX_OP_ATOMIC_FETCH_ADD,
			  "ibv_wr_atomic_fetch_add",
			  QPX(self)->wr_atomic_fetch_add != NULL) < 0)
		return NULL;
	ibv_wr_atomic_fetch_add(QPX(self), (uint32_t)v[0], v[1], v[2]);
	Py_RETURN_NONE;
}

static PyObject *wr_local_inv(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "invalidate_rkey", NULL };
	static const int bits[] = { 32 };
	uint64_t v[1];

	HANDLE_CHECK(self);
	if (parse_ints(args, kw, "O:wr_local_inv", kwlist, bits, v) < 0)
		return NULL;
	if (qpex_begin_wr(self, WREX_OP_LOCAL_INV, "ibv_wr_local_inv",
			  QPX(self)->wr_local_inv != NULL) < 0)
		return NULL;
	ibv_wr_local_inv(QPX(self), (uint32_t)v[0]);
	Py_RETURN_NONE;
}

/* wr_atomic_write(rkey, remote_addr, data): data is the 8 bytes to write
 * (bytes or bytearray); the provider copies them during the call. */
static PyObject *wr_atomic_write(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "rkey", "remote_addr", "data", NULL };
	PyObject *rkey_o, *addr_o, *data;
	const char *p;
	uint64_t addr;
	uint32_t rkey;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:wr_atomic_write",
					 kwlist, &rkey_o, &addr_o, &data) ||
	    arg_u32(rkey_o, "rkey", &rkey) < 0 ||
	    arg_u64(addr_o, "remote_addr", &addr) < 0)
		return NULL;
	if (PyBytes_Check(data) && PyBytes_Size(data) == 8) {
		p = PyBytes_AsString(data);
	} else if (PyByteArray_Check(data) && PyByteArray_Size(data) == 8) {
		p = PyByteArray_AsString(data);
	} else {
		PyErr_Format(PyExc_TypeError,
			     "data must be 8 bytes (bytes or bytearray), not "
			     "%R",
			     data);
		return NULL;
	}
#ifdef IBVERBS_HAVE_WR_ATOMIC_WRITE
	if (qpex_begin_wr(self, WREX_OP_ATOMIC_WRITE, "ibv_wr_atomic_write",
			  QPX(self)->wr_atomic_write != NULL) < 0)
		return NULL;
	ibv_wr_atomic_write(QPX(self), rkey, addr, p);
	Py_RETURN_NONE;
#else
	(void)p;
	return verbs_error_fmt(EOPNOTSUPP, "ibv_wr_atomic_write",
			       "the rdma-core headers this module was built "
			       "against lack ibv_wr_atomic_write (rdma-core 42 "
			       "or newer declares it)");
#endif
}

/* wr_flush(rkey, remote_addr, len, type, level).  Built against headers
 * without ibv_wr_flush (rdma-core < 45): EOPNOTSUPP, after the checks. */
static PyObject *wr_flush(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "rkey", "remote_addr", "len",
				  "type", "level",	 NULL };
	static const int bits[] = { 32, 64, 64, 8, 8 };
	uint64_t v[5];

	HANDLE_CHECK(self);
	if (parse_ints(args, kw, "OOOOO:wr_flush", kwlist, bits, v) < 0)
		return NULL;
#ifdef IBVERBS_HAVE_WR_FLUSH
	if (qpex_begin_wr(self, WREX_OP_FLUSH, "ibv_wr_flush",
			  QPX(self)->wr_flush != NULL) < 0)
		return NULL;
	ibv_wr_flush(QPX(self), (uint32_t)v[0], v[1], (size_t)v[2],
		     (uint8_t)v[3], (uint8_t)v[4]);
	Py_RETURN_NONE;
#else
	return verbs_error_fmt(EOPNOTSUPP, "ibv_wr_flush",
			       "the rdma-core headers this module was built "
			       "against lack ibv_wr_flush (rdma-core 45 or "
			       "newer declares it)");
#endif
}

/* ------------------------------------------------------------------ */
/* Setters                                                             */
/* ------------------------------------------------------------------ */

/* An SGE object: its struct, its MR checked open.  0 or -1. */
static int sge_of(PyObject *o, const char *what, struct ibv_sge *out)
{
	SGEObject *s = (SGEObject *)o;

	if (!PyObject_TypeCheck(o, ST.SGE_type)) {
		PyErr_Format(PyExc_TypeError, "%s must be an SGE, not %R", what,
			     (PyObject *)Py_TYPE(o));
		return -1;
	}
	if (s->mr != NULL && handle_check(HANDLE(s->mr)) < 0)
		return -1;
	*out = s->sge;
	return 0;
}

/* Hold an SGE (and mark its MR used) until the batch ends. */
static int keep_sge(PyObject *self, PyObject *o)
{
	PyObject *mr = ((SGEObject *)o)->mr;

	if (qpex_keep(self, o) < 0)
		return -1;
	return mr != NULL ? qpex_keep(self, mr) : 0;
}

static int check_num_sge(PyObject *self, Py_ssize_t n, const char *verb)
{
	uint32_t max = QPO(self)->cap.max_send_sge;

	if ((uint64_t)n > max) {
		PyErr_Format(PyExc_ValueError,
			     "%s: %zd SGEs, more than the QP's max_send_sge "
			     "(%u)",
			     verb, n, max);
		return -1;
	}
	return 0;
}

/* wr_set_sge(sge) or wr_set_sge(lkey, addr, length) */
static PyObject *wr_set_sge(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "lkey", "addr", "length", NULL };
	PyObject *a = NULL, *b = NULL, *c = NULL;
	struct ibv_sge sge;
	int is_obj;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:wr_set_sge", kwlist,
					 &a, &b, &c))
		return NULL;
	is_obj = PyObject_TypeCheck(a, ST.SGE_type);
	if (is_obj) {
		if (b != NULL || c != NULL) {
			PyErr_SetString(PyExc_TypeError,
					"wr_set_sge() takes an SGE, or lkey, "
					"addr and length");
			return NULL;
		}
		if (sge_of(a, "sge", &sge) < 0)
			return NULL;
	} else {
		if (b == NULL || c == NULL) {
			PyErr_Format(PyExc_TypeError,
				     "wr_set_sge() takes an SGE, or lkey, "
				     "addr and length (got %R alone)",
				     (PyObject *)Py_TYPE(a));
			return NULL;
		}
		if (arg_u32(a, "lkey", &sge.lkey) < 0 ||
		    arg_u64(b, "addr", &sge.addr) < 0 ||
		    arg_u32(c, "length", &sge.length) < 0)
			return NULL;
	}
	NEED_OP(self, wr_set_sge, "ibv_wr_set_sge");
	if (check_num_sge(self, 1, "ibv_wr_set_sge") < 0 ||
	    qpex_begin_setter(self, WREX_SET_SGE, "ibv_wr_set_sge") < 0)
		return NULL;
	if (is_obj && keep_sge(self, a) < 0) {
		QPEXO(self)->cur_data = 0;
		return NULL;
	}
	ibv_wr_set_sge(QPX(self), sge.lkey, sge.addr, sge.length);
	Py_RETURN_NONE;
}

#define SMALL_LIST 16

/* wr_set_sge_list(sges): a list or tuple of SGE objects. */
static PyObject *wr_set_sge_list(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "sg_list", NULL };
	struct ibv_sge small[SMALL_LIST], *arr = small;
	PyObject *lst, *seq = NULL, *res = NULL;
	Py_ssize_t i, n;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:wr_set_sge_list", kwlist,
					 &lst))
		return NULL;
	if (!PyList_Check(lst) && !PyTuple_Check(lst)) {
		PyErr_Format(PyExc_TypeError,
			     "sg_list must be a list or tuple of SGEs, not %R",
			     (PyObject *)Py_TYPE(lst));
		return NULL;
	}
	/* A tuple copy: the SGEs cannot change under us (an SGE's
	 * __eq__ runs no code, but a list's owner might). */
	seq = PySequence_Tuple(lst);
	if (seq == NULL)
		return NULL;
	n = PyTuple_Size(seq);
	if (check_num_sge(self, n, "ibv_wr_set_sge_list") < 0)
		goto out;
	if (n > SMALL_LIST) {
		arr = PyMem_Malloc(n * sizeof(*arr));
		if (arr == NULL) {
			PyErr_NoMemory();
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		char what[32];

		snprintf(what, sizeof(what), "sg_list[%zd]", i);
		if (sge_of(PyTuple_GetItem(seq, i), what, &arr[i]) < 0)
			goto out;
	}
	if (QPX(self)->wr_set_sge_list == NULL) {
		provider_lacks("ibv_wr_set_sge_list");
		goto out;
	}
	if (qpex_begin_setter(self, WREX_SET_SGE, "ibv_wr_set_sge_list") < 0)
		goto out;
	for (i = 0; i < n; i++) {
		if (keep_sge(self, PyTuple_GetItem(seq, i)) < 0) {
			QPEXO(self)->cur_data = 0;
			goto out;
		}
	}
	ibv_wr_set_sge_list(QPX(self), (size_t)n, arr);
	Py_INCREF(Py_None);
	res = Py_None;
out:
	if (arr != small)
		PyMem_Free(arr);
	Py_XDECREF(seq);
	return res;
}

/*
 * The bytes of a buffer for an inline setter: bytes and bytearray
 * directly, any other buffer (memoryview, array, numpy) through a copy
 * (the 3.9 Limited API has no buffer protocol).  *hold gets the object
 * that owns the bytes (new reference), released after the setter: the
 * provider copies inline data during the call.
 */
static int inline_buf(PyObject *o, const char *what, PyObject **hold,
		      struct ibv_data_buf *out)
{
	PyObject *mv;

	if (PyBytes_Check(o) || PyByteArray_Check(o)) {
		Py_INCREF(o);
		*hold = o;
	} else if (PyUnicode_Check(o) || PyLong_Check(o)) {
		goto bad;
	} else {
		mv = PyMemoryView_FromObject(o);
		if (mv == NULL) {
			if (!PyErr_ExceptionMatches(PyExc_TypeError))
				return -1;
			PyErr_Clear();
			goto bad;
		}
		*hold = PyObject_Bytes(mv);
		Py_DECREF(mv);
		if (*hold == NULL)
			return -1;
	}
	if (PyBytes_Check(*hold)) {
		out->addr = PyBytes_AsString(*hold);
		out->length = (size_t)PyBytes_Size(*hold);
	} else {
		out->addr = PyByteArray_AsString(*hold);
		out->length = (size_t)PyByteArray_Size(*hold);
	}
	return 0;
bad:
	PyErr_Format(PyExc_TypeError,
		     "%s must be a bytes-like object (bytes, bytearray, "
		     "memoryview, ...), not %R",
		     what, (PyObject *)Py_TYPE(o));
	return -1;
}

static int check_inline_len(PyObject *self, size_t total, const char *verb)
{
	uint32_t max = QPO(self)->cap.max_inline_data;

	if (total > max) {
		PyErr_Format(PyExc_ValueError,
			     "%s: %zu bytes of inline data, more than the "
			     "QP's max_inline_data (%u; ask for more in "
			     "QPInitAttrEx(max_inline_data=...))",
			     verb, total, max);
		return -1;
	}
	return 0;
}

static PyObject *wr_set_inline_data(PyObject *self, PyObject *args,
				    PyObject *kw)
{
	static char *kwlist[] = { "data", NULL };
	struct ibv_data_buf buf;
	PyObject *o, *hold = NULL;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:wr_set_inline_data",
					 kwlist, &o) ||
	    inline_buf(o, "data", &hold, &buf) < 0)
		return NULL;
	if (QPX(self)->wr_set_inline_data == NULL) {
		Py_DECREF(hold);
		return provider_lacks("ibv_wr_set_inline_data");
	}
	if (check_inline_len(self, buf.length, "ibv_wr_set_inline_data") < 0 ||
	    qpex_begin_setter(self, WREX_SET_INLINE, "ibv_wr_set_inline_data") <
		    0) {
		Py_DECREF(hold);
		return NULL;
	}
	ibv_wr_set_inline_data(QPX(self), buf.addr, buf.length);
	Py_DECREF(hold);
	Py_RETURN_NONE;
}

static PyObject *wr_set_inline_data_list(PyObject *self, PyObject *args,
					 PyObject *kw)
{
	static char *kwlist[] = { "buf_list", NULL };
	struct ibv_data_buf small[SMALL_LIST], *arr = small;
	PyObject *lst, *seq = NULL, *holds = NULL, *res = NULL;
	Py_ssize_t i, n;
	size_t total = 0;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:wr_set_inline_data_list",
					 kwlist, &lst))
		return NULL;
	if (!PyList_Check(lst) && !PyTuple_Check(lst)) {
		PyErr_Format(PyExc_TypeError,
			     "buf_list must be a list or tuple of bytes-like "
			     "objects, not %R",
			     (PyObject *)Py_TYPE(lst));
		return NULL;
	}
	seq = PySequence_Tuple(lst);
	if (seq == NULL)
		return NULL;
	n = PyTuple_Size(seq);
	holds = PyTuple_New(n);
	if (holds == NULL)
		goto out;
	if (n > SMALL_LIST) {
		arr = PyMem_Malloc(n * sizeof(*arr));
		if (arr == NULL) {
			PyErr_NoMemory();
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		PyObject *h = NULL;
		char what[32];

		snprintf(what, sizeof(what), "buf_list[%zd]", i);
		if (inline_buf(PyTuple_GetItem(seq, i), what, &h, &arr[i]) < 0)
			goto out;
		PyTuple_SetItem(holds, i, h); /* steals h */
		total += arr[i].length;
	}
	if (QPX(self)->wr_set_inline_data_list == NULL) {
		provider_lacks("ibv_wr_set_inline_data_list");
		goto out;
	}
	if (check_inline_len(self, total, "ibv_wr_set_inline_data_list") < 0 ||
	    qpex_begin_setter(self, WREX_SET_INLINE,
			      "ibv_wr_set_inline_data_list") < 0)
		goto out;
	ibv_wr_set_inline_data_list(QPX(self), (size_t)n, arr);
	Py_INCREF(Py_None);
	res = Py_None;
out:
	if (arr != small)
		PyMem_Free(arr);
	Py_XDECREF(holds);
	Py_XDECREF(seq);
	return res;
}

static PyObject *wr_set_ud_addr(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "ah", "remote_qpn", "remote_qkey", NULL };
	PyObject *ah, *qpn_o, *qkey_o;
	uint32_t qpn, qkey;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:wr_set_ud_addr", kwlist,
					 &ah, &qpn_o, &qkey_o))
		return NULL;
	if (!PyObject_TypeCheck(ah, ST.AH_type)) {
		PyErr_Format(PyExc_TypeError, "ah must be an AH, not %R",
			     (PyObject *)Py_TYPE(ah));
		return NULL;
	}
	if (handle_check(HANDLE(ah)) < 0 ||
	    arg_u32(qpn_o, "remote_qpn", &qpn) < 0 ||
	    arg_u32(qkey_o, "remote_qkey", &qkey) < 0)
		return NULL;
	if (qpn > QPN_MAX) {
		PyErr_SetString(PyExc_ValueError,
				"remote_qpn must be in range 0..2**24-1");
		return NULL;
	}
	if (HANDLE(ah)->parent->parent != HANDLE(self)->parent->parent) {
		PyErr_SetString(PyExc_ValueError,
				"ah belongs to another Context than the QP");
		return NULL;
	}
	NEED_OP(self, wr_set_ud_addr, "ibv_wr_set_ud_addr");
	if (qpex_begin_setter(self, 0, "ibv_wr_set_ud_addr") < 0)
		return NULL;
	if (qpex_keep(self, ah) < 0) {
		QPEXO(self)->cur_ud = 0;
		return NULL;
	}
	ibv_wr_set_ud_addr(QPX(self), (struct ibv_ah *)HANDLE(ah)->obj, qpn,
			   qkey);
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* wr_bind_mw (its MW and MWBindInfo parsed by mw.c)                  */
/* ------------------------------------------------------------------ */

/*
 * wr_bind_mw(mw, rkey, bind_info): a BIND_MW in the open batch; rkey is
 * the window's new rkey.  The batch holds the MW and the MR (both marked
 * used, so neither closes) until wr_complete or wr_abort.
 */
PyObject *qpex_wr_bind_mw(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "mw", "rkey", "bind_info", NULL };
	PyObject *mw, *rkey_o, *info, *mr = NULL, *res = NULL;
	struct ibv_mw_bind_info bi;
	uint32_t rkey;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:wr_bind_mw", kwlist,
					 &mw, &rkey_o, &info))
		return NULL;
	if (mw_parse(mw, "mw") < 0 || arg_u32(rkey_o, "rkey", &rkey) < 0 ||
	    bind_info_from_py(info, &bi, &mr) < 0)
		return NULL;
	/* Reading bind_info ran Python code: check the handles again. */
	if (handle_check(HANDLE(self)) < 0 || handle_check(HANDLE(mw)) < 0 ||
	    handle_check(HANDLE(mr)) < 0)
		goto out;
	bi.mr = HANDLE(mr)->obj;
	if (qpex_begin_wr(self, WREX_OP_BIND_MW, "ibv_wr_bind_mw",
			  QPEXO(self)->qpx->wr_bind_mw != NULL) < 0 ||
	    qpex_keep(self, mw) < 0 || qpex_keep(self, mr) < 0)
		goto out;
	ibv_wr_bind_mw(QPEXO(self)->qpx, MWP(mw), rkey, &bi);
	res = Py_None;
	Py_INCREF(res);
out:
	Py_XDECREF(mr);
	return res;
}

PyDoc_STRVAR(wrex_start__doc__,
	     "wr_start() -> None\n"
	     "\n"
	     "Open a batch of work requests on the send queue.\n"
	     "\n"
	     "Then call builders (``wr_send()``, ...), each followed by its\n"
	     "setters, and end with ``wr_complete()`` or ``wr_abort()``.\n"
	     "``post_send()`` and ``modify()`` refuse (EBUSY) meanwhile.\n"
	     "\n"
	     "Wraps ``ibv_wr_start`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EINVAL when a batch is open already; EBADF\n"
	     "        once the QP is closed.");

PyDoc_STRVAR(wrex_complete__doc__,
	     "wr_complete() -> None\n"
	     "\n"
	     "Post the open batch and close it.\n"
	     "\n"
	     "On failure nothing of the batch was posted. Either way the\n"
	     "batch ends and what it held is released.\n"
	     "\n"
	     "Wraps ``ibv_wr_complete`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Raises:\n"
	     "    ValueError: on a UD QP, the last WR has no\n"
	     "        ``wr_set_ud_addr()`` (the batch is aborted).\n"
	     "    VerbsError: EINVAL when no batch is open; EBADF once the\n"
	     "        QP is closed; else the provider refused (``errno``).");

PyDoc_STRVAR(wrex_abort__doc__,
	     "wr_abort() -> None\n"
	     "\n"
	     "Discard the open batch: none of its WRs is posted.\n"
	     "\n"
	     "Does nothing when no batch is open.\n"
	     "\n"
	     "Wraps ``ibv_wr_abort`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EBADF once the QP is closed.");

PyDoc_STRVAR(wrex_atomic_write__doc__,
	     "wr_atomic_write(rkey, remote_addr, data) -> None\n"
	     "\n"
	     "Start an ATOMIC_WRITE of 8 bytes to the peer (no setters).\n"
	     "\n"
	     "The provider copies ``data`` during the call.\n"
	     "\n"
	     "Wraps ``ibv_wr_atomic_write`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    rkey: the remote rkey, 32 bits.\n"
	     "    remote_addr: the remote address (8-byte aligned).\n"
	     "    data: exactly 8 bytes (bytes or bytearray).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: data is not 8 bytes, or rkey/remote_addr not\n"
	     "        an int.\n"
	     "    ValueError: rkey or remote_addr is out of range.\n"
	     "    VerbsError: EOPNOTSUPP when built against rdma-core < 42\n"
	     "        headers or the provider lacks it; EINVAL outside a\n"
	     "        batch or when ATOMIC_WRITE is not in\n"
	     "        ``send_ops_flags``; EBADF once the QP is closed.");

PyDoc_STRVAR(wrex_flush__doc__,
	     "wr_flush(rkey, remote_addr, len, type, level) -> None\n"
	     "\n"
	     "Start a FLUSH: make a range of the peer's memory persistent or\n"
	     "globally visible (no setters).\n"
	     "\n"
	     "Wraps ``ibv_wr_flush`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    rkey: the remote rkey, 32 bits.\n"
	     "    remote_addr: start of the range, 64 bits.\n"
	     "    len: bytes, 64 bits.\n"
	     "    type: ``IBV_FLUSH_GLOBAL`` or ``IBV_FLUSH_PERSISTENT``.\n"
	     "    level: ``IBV_FLUSH_RANGE`` or ``IBV_FLUSH_MR``.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an argument is not an int.\n"
	     "    ValueError: an argument is out of range (type and level:\n"
	     "        0..255).\n"
	     "    VerbsError: EOPNOTSUPP when built against rdma-core < 45\n"
	     "        headers or the provider lacks it; EINVAL outside a\n"
	     "        batch or when FLUSH is not in ``send_ops_flags``;\n"
	     "        EBADF once the QP is closed.");

PyDoc_STRVAR(wrex_set_sge__doc__,
	     "wr_set_sge(lkey, addr, length) -> None\n"
	     "\n"
	     "Give the last builder's WR its data: one SGE.\n"
	     "\n"
	     "Also ``wr_set_sge(sge)`` with an SGE object, which (with its\n"
	     "MR, marked used) is held until the batch ends.\n"
	     "\n"
	     "Wraps ``ibv_wr_set_sge`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    lkey: the lkey, or an SGE object (given alone).\n"
	     "    addr: the address (with an lkey).\n"
	     "    length: bytes, 32 bits (with an lkey).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: neither an SGE nor three ints.\n"
	     "    ValueError: a value is out of range, or max_send_sge is 0.\n"
	     "    VerbsError: EBADF if the SGE's MR or the QP is closed;\n"
	     "        EINVAL outside a batch, with no builder before it, when\n"
	     "        the WR takes no SGE or has its data already;\n"
	     "        EOPNOTSUPP when the provider lacks it.");

PyDoc_STRVAR(wrex_set_sge_list__doc__,
	     "wr_set_sge_list(sg_list) -> None\n"
	     "\n"
	     "Give the last builder's WR its data: a list of SGEs.\n"
	     "\n"
	     "The SGEs (and their MRs) are held until the batch ends.\n"
	     "\n"
	     "Wraps ``ibv_wr_set_sge_list`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    sg_list: a list or tuple of SGEs.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: sg_list is not a list/tuple of SGEs.\n"
	     "    ValueError: more SGEs than the QP's max_send_sge.\n"
	     "    VerbsError: EBADF if an SGE's MR or the QP is closed;\n"
	     "        EINVAL outside a batch, with no builder before it, when\n"
	     "        the WR takes no SGE or has its data already;\n"
	     "        EOPNOTSUPP when the provider lacks it.");

PyDoc_STRVAR(wrex_set_inline_data__doc__,
	     "wr_set_inline_data(data) -> None\n"
	     "\n"
	     "Give the last builder's WR its data inline.\n"
	     "\n"
	     "The provider copies the bytes now (no MR needed).\n"
	     "\n"
	     "Wraps ``ibv_wr_set_inline_data`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    data: a bytes-like object (bytes, bytearray, memoryview).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: data is not bytes-like.\n"
	     "    ValueError: more bytes than the QP's max_inline_data.\n"
	     "    VerbsError: EINVAL outside a batch, with no builder before\n"
	     "        it, when the WR takes no inline data or has its data\n"
	     "        already; EOPNOTSUPP when the provider lacks it; EBADF\n"
	     "        once the QP is closed.");

PyDoc_STRVAR(wrex_set_inline_data_list__doc__,
	     "wr_set_inline_data_list(buf_list) -> None\n"
	     "\n"
	     "Give the last builder's WR its data inline, from several "
	     "buffers.\n"
	     "\n"
	     "The provider copies the bytes now.\n"
	     "\n"
	     "Wraps ``ibv_wr_set_inline_data_list`` (man page\n"
	     "ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    buf_list: a list or tuple of bytes-like objects.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: not a list/tuple of bytes-like objects.\n"
	     "    ValueError: more bytes in all than max_inline_data.\n"
	     "    VerbsError: as ``wr_set_inline_data()``.");

PyDoc_STRVAR(wrex_set_ud_addr__doc__,
	     "wr_set_ud_addr(ah, remote_qpn, remote_qkey) -> None\n"
	     "\n"
	     "Give the last builder's WR its UD destination (required on UD).\n"
	     "\n"
	     "The AH is held, and marked used, until the batch ends.\n"
	     "\n"
	     "Wraps ``ibv_wr_set_ud_addr`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    ah: an AH of the QP's Context.\n"
	     "    remote_qpn: the destination QP number, 24 bits.\n"
	     "    remote_qkey: its Q_Key, 32 bits.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: ah is not an AH, or a number is not an int.\n"
	     "    ValueError: a number is out of range, or the AH belongs to\n"
	     "        another Context.\n"
	     "    VerbsError: EBADF if the AH or the QP is closed; EINVAL\n"
	     "        outside a batch, with no builder before it, on a non-UD\n"
	     "        QP or when the WR has its destination already;\n"
	     "        EOPNOTSUPP when the provider lacks it.");

PyDoc_STRVAR(wrex_bind_mw__doc__,
	     "wr_bind_mw(mw, rkey, bind_info) -> None\n"
	     "\n"
	     "Start a BIND_MW: bind a type 2 window under a new rkey.\n"
	     "\n"
	     "The MW and the MR are held, and marked used, until the batch\n"
	     "ends. Choose the rkey with ``ibverbs.inc_rkey(mw.rkey)``; set\n"
	     "``mw.rkey`` to it once the bind completes.\n"
	     "\n"
	     "Wraps ``ibv_wr_bind_mw`` (man page ibv_wr_post(3)).\n"
	     "\n"
	     "Args:\n"
	     "    mw: the MW.\n"
	     "    rkey: the window's new rkey, 32 bits.\n"
	     "    bind_info: an MWBindInfo (mr, addr, length,\n"
	     "        mw_access_flags).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: mw is not an MW, or bind_info lacks a field.\n"
	     "    ValueError: a value is out of range.\n"
	     "    VerbsError: EBADF if the QP, MW or MR is closed; EINVAL\n"
	     "        outside a batch or when BIND_MW is not in\n"
	     "        ``send_ops_flags``; EOPNOTSUPP when the provider lacks\n"
	     "        it.");

/* A builder's docstring: its signature, what it starts, its verb, its
 * Args ("" for none) and the QPCreateSendOpsFlags member it needs; then
 * the errors every builder shares. */
#define WR_DOC(sig, what, verb, args, op)                                  \
	sig " -> None\n\n" what "\n\nWraps ``" verb                        \
	    "`` (man page ibv_wr_post(3)).\n\n" args                       \
	    "Raises:\n    TypeError: an argument is not an int.\n"         \
	    "    ValueError: an argument is out of range, or on a UD QP\n" \
	    "        the previous WR has no ``wr_set_ud_addr()``.\n"       \
	    "    VerbsError: EINVAL outside a batch or when\n        " op  \
	    " is not in ``send_ops_flags``; EOPNOTSUPP when\n"             \
	    "        the provider lacks it; EBADF once the QP is closed."
#define RKEY_ADDR                                      \
	"Args:\n    rkey: the remote rkey, 32 bits.\n" \
	"    remote_addr: the remote address, 64 bits.\n"
#define IMM "    imm_data: 32-bit immediate data, in host order.\n"
#define SETTERS                                       \
	"Its data comes next: ``wr_set_sge*()`` or\n" \
	"``wr_set_inline_data*()``."

/* ------------------------------------------------------------------ */
/* QPEx's methods (the QP's are inherited)                             */
/* ------------------------------------------------------------------ */

PyMethodDef qpex_methods[] = {
	{ "wr_start", qpex_wr_start, METH_NOARGS, wrex_start__doc__ },
	{ "wr_complete", qpex_wr_complete, METH_NOARGS, wrex_complete__doc__ },
	{ "wr_abort", qpex_wr_abort, METH_NOARGS, wrex_abort__doc__ },
	{ "wr_send", wr_send, METH_NOARGS,
	  WR_DOC("wr_send()", "Start a SEND in the open batch.\n\n" SETTERS,
		 "ibv_wr_send", "", "SEND") },
	{ "wr_send_imm", KW wr_send_imm, METH_VARARGS | METH_KEYWORDS,
	  WR_DOC("wr_send_imm(imm_data)",
		 "Start a SEND_WITH_IMM in the open batch.\n\n" SETTERS,
		 "ibv_wr_send_imm", "Args:\n" IMM "\n", "SEND_WITH_IMM") },
	{ "wr_send_inv", KW wr_send_inv, METH_VARARGS | METH_KEYWORDS,
	  WR_DOC("wr_send_inv(invalidate_rkey)",
		 "Start a SEND_WITH_INV: a send that invalidates the peer's\n"
		 "``invalidate_rkey`` (an MW's).\n\n" SETTERS,
		 "ibv_wr_send_inv", "", "SEND_WITH_INV") },
	{ "wr_rdma_write", KW wr_rdma_write, METH_VARARGS | METH_KEYWORDS,
	  WR_DOC("wr_rdma_write(rkey, remote_addr)",
		 "Start an RDMA_WRITE to the peer's memory.\n\n" SETTERS,
		 "ibv_wr_rdma_write", RKEY_ADDR "\n", "RDMA_WRITE") },
	{ "wr_rdma_write_imm", KW wr_rdma_write_imm,
	  METH_VARARGS | METH_KEYWORDS,
	  WR_DOC("wr_rdma_write_imm(rkey, remote_addr, imm_data)",
		 "Start an RDMA_WRITE_WITH_IMM: the peer also gets a receive\n"
		 "completion with ``imm_data``.\n\n" SETTERS,
		 "ibv_wr_rdma_write_imm", RKEY_ADDR IMM "\n",
		 "RDMA_WRITE_WITH_IMM") },
	{ "wr_rdma_read", KW wr_rdma_read, METH_VARARGS | METH_KEYWORDS,
	  WR_DOC("wr_rdma_read(rkey, remote_addr)",
		 "Start an RDMA_READ; the SGEs set next receive the data.",
		 "ibv_wr_rdma_read", RKEY_ADDR "\n", "RDMA_READ") },
	{ "wr_atomic_cmp_swp", KW wr_atomic_cmp_swp,
	  METH_VARARGS | METH_KEYWORDS,
	  WR_DOC("wr_atomic_cmp_swp(rkey, remote_addr, compare, swap)",
		 "Start an 8-byte compare-and-swap on the peer's memory:\n"
		 "``swap`` is written where ``compare`` matches. The 8-byte\n"
		 "SGE set next receives the old value.",
		 "ibv_wr_atomic_cmp_swp", RKEY_ADDR "\n",
		 "ATOMIC_CMP_AND_SWP") },
	{ "wr_atomic_fetch_add", KW wr_atomic_fetch_add,
	  METH_VARARGS | METH_KEYWORDS,
	  WR_DOC("wr_atomic_fetch_add(rkey, remote_addr, add)",
		 "Start an 8-byte fetch-and-add of ``add`` on the peer's\n"
		 "memory. The 8-byte SGE set next receives the old value.",
		 "ibv_wr_atomic_fetch_add", RKEY_ADDR "\n",
		 "ATOMIC_FETCH_AND_ADD") },
	{ "wr_local_inv", KW wr_local_inv, METH_VARARGS | METH_KEYWORDS,
	  WR_DOC("wr_local_inv(invalidate_rkey)",
		 "Start a LOCAL_INV: invalidate the rkey of a local MW (no\n"
		 "data).",
		 "ibv_wr_local_inv", "", "LOCAL_INV") },
	{ "wr_atomic_write", KW wr_atomic_write, METH_VARARGS | METH_KEYWORDS,
	  wrex_atomic_write__doc__ },
	{ "wr_flush", KW wr_flush, METH_VARARGS | METH_KEYWORDS,
	  wrex_flush__doc__ },
	{ "wr_set_sge", KW wr_set_sge, METH_VARARGS | METH_KEYWORDS,
	  wrex_set_sge__doc__ },
	{ "wr_set_sge_list", KW wr_set_sge_list, METH_VARARGS | METH_KEYWORDS,
	  wrex_set_sge_list__doc__ },
	{ "wr_set_inline_data", KW wr_set_inline_data,
	  METH_VARARGS | METH_KEYWORDS, wrex_set_inline_data__doc__ },
	{ "wr_set_inline_data_list", KW wr_set_inline_data_list,
	  METH_VARARGS | METH_KEYWORDS, wrex_set_inline_data_list__doc__ },
	{ "wr_set_ud_addr", KW wr_set_ud_addr, METH_VARARGS | METH_KEYWORDS,
	  wrex_set_ud_addr__doc__ },
	{ "wr_bind_mw", KW qpex_wr_bind_mw, METH_VARARGS | METH_KEYWORDS,
	  wrex_bind_mw__doc__ },
	{ NULL, NULL, 0, NULL }
};
#undef WR_DOC
#undef RKEY_ADDR
#undef IMM
#undef SETTERS
