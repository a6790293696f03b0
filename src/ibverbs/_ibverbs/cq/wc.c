/*
 * wc.c - WC: one work completion, a copy of struct ibv_wc.
 *
 * CQ.poll() builds one WC per reaped completion, so this type is on the
 * data path: it holds no references (no GC), is allocated with
 * PyObject_Malloc and reads its fields through member descriptors.
 * status and opcode are plain ints (an IntEnum conversion per access
 * would cost more than the poll itself); CompletionError and repr()
 * turn them into names.
 */
#include "ibverbs.h"
#include "cq/cq.h"
#include <structmember.h>
#include <stddef.h>
#include <string.h>

typedef struct {
	PyObject_HEAD
	struct ibv_wc wc;
} WCObject;

static WCObject *wc_alloc(PyTypeObject *type)
{
	WCObject *o = PyObject_Malloc(sizeof(WCObject));

	if (o == NULL) {
		PyErr_NoMemory();
		return NULL;
	}
	/* PyObject_Init takes the reference a heap type's instance holds. */
	PyObject_Init((PyObject *)o, type);
	return o;
}

PyObject *wc_new(const struct ibv_wc *wc)
{
	WCObject *o = wc_alloc(ST.WC_type);

	if (o != NULL)
		o->wc = *wc;
	return (PyObject *)o;
}

/* The inverse of wc_new, for the verbs that take a struct ibv_wc
 * (ibv_init_ah_from_wc, ibv_create_ah_from_wc): a WC holds the struct
 * itself, and a WCEx (its subclass) holds one at the same place, with
 * the fields its CQ was not asked to report zeroed. */
int wc_to_c(PyObject *o, const char *what, struct ibv_wc *out)
{
	if (!PyObject_TypeCheck(o, ST.WC_type))
		return arg_type_error_hint(what, "WC", 0, o, "from CQ.poll");
	*out = ((WCObject *)o)->wc;
	return 0;
}

static void wc_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);

	PyObject_Free(self);
	Py_DECREF(tp);
}

/* The integer fields WC(...) accepts: where, how wide, largest value. */
static const struct {
	const char *name;
	size_t off, size;
	uint64_t max;
} wc_fields[] = {
/* clang-format cannot lay out a macro that is an initializer. */
/* clang-format off */
#define F(f, max) \
	{ #f, offsetof(struct ibv_wc, f), sizeof(((struct ibv_wc *)0)->f), max }
	/* clang-format on */
	F(wr_id, UINT64_MAX),
	F(status, INT32_MAX),
	F(opcode, INT32_MAX),
	F(vendor_err, UINT32_MAX),
	F(byte_len, UINT32_MAX),
	F(invalidated_rkey, UINT32_MAX),
	F(qp_num, UINT32_MAX),
	F(src_qp, UINT32_MAX),
	F(wc_flags, UINT32_MAX),
	F(pkey_index, UINT16_MAX),
	F(slid, UINT16_MAX),
	F(sl, UINT8_MAX),
	F(dlid_path_bits, UINT8_MAX),
#undef F
	{ NULL, 0, 0, 0 }
};

static void store_uint(void *dst, size_t size, uint64_t u)
{
	uint32_t u32 = (uint32_t)u;
	uint16_t u16 = (uint16_t)u;
	uint8_t u8 = (uint8_t)u;

	switch (size) {
	case 8:
		memcpy(dst, &u, 8);
		break;
	case 4:
		memcpy(dst, &u32, 4);
		break;
	case 2:
		memcpy(dst, &u16, 2);
		break;
	default:
		memcpy(dst, &u8, 1);
		break;
	}
}

/* One keyword of WC(...). */
static int wc_set_field(struct ibv_wc *wc, PyObject *key, PyObject *v)
{
	uint64_t u;
	int i;

	if (!PyUnicode_Check(key))
		goto unknown;
	if (PyUnicode_CompareWithASCIIString(key, "imm_data") == 0) {
		uint32_t imm;

		if (arg_u32(v, "imm_data", &imm) < 0)
			return -1;
		wc->imm_data = htobe32(imm);
		return 0;
	}
	for (i = 0; wc_fields[i].name; i++) {
		if (PyUnicode_CompareWithASCIIString(key, wc_fields[i].name))
			continue;
		if (arg_u64(v, wc_fields[i].name, &u) < 0)
			return -1;
		if (u > wc_fields[i].max) {
			PyErr_Format(PyExc_ValueError, "%s out of range: %S",
				     wc_fields[i].name, v);
			return -1;
		}
		store_uint((char *)wc + wc_fields[i].off, wc_fields[i].size, u);
		return 0;
	}
unknown:
	PyErr_Format(PyExc_TypeError,
		     "WC() got an unexpected keyword argument %R", key);
	return -1;
}

/*
 * WC(**fields): a completion built by hand (tests, fakes of a CQ).  Every
 * field defaults to 0; imm_data is given in host order, like it reads.
 */
static PyObject *wc_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyObject *key, *val;
	Py_ssize_t pos = 0;
	WCObject *o;

	/* Parsed by hand: **fields, the names of struct ibv_wc's fields. */
	if (PyTuple_Size(args) != 0) {
		PyErr_SetString(PyExc_TypeError,
				"WC() takes keyword arguments only");
		return NULL;
	}
	/* Allocated at WC's size, without GC: no subclass of it. */
	if (type != ST.WC_type) {
		PyErr_Format(PyExc_TypeError, "cannot create %R instances",
			     (PyObject *)type);
		return NULL;
	}
	o = wc_alloc(type);
	if (o == NULL)
		return NULL;
	memset(&o->wc, 0, sizeof(o->wc));
	while (kw != NULL && PyDict_Next(kw, &pos, &key, &val)) {
		if (wc_set_field(&o->wc, key, val) < 0) {
			Py_DECREF(o);
			return NULL;
		}
	}
	return (PyObject *)o;
}

#define WC(self) (&((WCObject *)(self))->wc)

static PyObject *wc_get_imm_data(PyObject *self, void *closure)
{
	/* On the wire (and in ibv_wc) immediate data is big-endian. */
	return PyLong_FromUnsignedLong(be32toh(WC(self)->imm_data));
}

static PyObject *wc_get_is_success(PyObject *self, void *closure)
{
	return PyBool_FromLong(WC(self)->status == IBV_WC_SUCCESS);
}

static PyObject *wc_get_status_str(PyObject *self, void *closure)
{
	return PyUnicode_FromString(IBV.wc_status_str(WC(self)->status));
}

static PyObject *wc_raise_for_status(PyObject *self, PyObject *unused)
{
	if (WC(self)->status == IBV_WC_SUCCESS)
		Py_RETURN_NONE;
	return completion_error(self);
}

static PyObject *wc_repr(PyObject *self)
{
	const struct ibv_wc *wc = WC(self);

	return PyUnicode_FromFormat(
		"<ibverbs.WC wr_id=%llu status=%d (%s) opcode=%d byte_len=%u "
		"qp_num=%u vendor_err=%u>",
		(unsigned long long)wc->wr_id, (int)wc->status,
		IBV.wc_status_str(wc->status), (int)wc->opcode, wc->byte_len,
		wc->qp_num, wc->vendor_err);
}

#define M(name, type, field, doc)                               \
	{                                                       \
		name, type,                                     \
			offsetof(WCObject, wc) +                \
				offsetof(struct ibv_wc, field), \
			READONLY, doc                           \
	}
static PyMemberDef wc_members[] = {
	M("wr_id", T_ULONGLONG, wr_id,
	  "The wr_id of the work request this completion is for."),
	M("status", T_INT, status,
	  "The completion status, an int value of WCStatus (0: SUCCESS)."),
	M("opcode", T_INT, opcode,
	  "What completed, an int value of WCOpcode (valid only when status "
	  "is SUCCESS)."),
	M("vendor_err", T_UINT, vendor_err,
	  "The provider's own error code for a failed completion."),
	M("byte_len", T_UINT, byte_len,
	  "Bytes transferred: the received length for a receive, the read "
	  "length for an RDMA read."),
	M("invalidated_rkey", T_UINT, invalidated_rkey,
	  "The rkey the peer invalidated (when wc_flags has WITH_INV)."),
	M("qp_num", T_UINT, qp_num, "The local QP number the WR was on."),
	M("src_qp", T_UINT, src_qp, "The sender's QP number (UD receives)."),
	M("wc_flags", T_UINT, wc_flags,
	  "WCFlags bits as an int: GRH, WITH_IMM, WITH_INV, ..."),
	M("pkey_index", T_USHORT, pkey_index,
	  "The P_Key index of a UD receive (GSI QPs)."),
	M("slid", T_USHORT, slid,
	  "The sender's LID (UD receives on InfiniBand)."),
	M("sl", T_UBYTE, sl,
	  "The service level of the received packet (UD receives)."),
	M("dlid_path_bits", T_UBYTE, dlid_path_bits,
	  "The destination LID path bits of a UD receive (InfiniBand)."),
	{ NULL, 0, 0, 0, NULL }
};
#undef M

static PyGetSetDef wc_getset[] = {
	{ "imm_data", wc_get_imm_data, NULL,
	  "The immediate data in host byte order (meaningful when wc_flags "
	  "has WITH_IMM).",
	  NULL },
	{ "is_success", wc_get_is_success, NULL, "True when status is SUCCESS.",
	  NULL },
	{ "status_str", wc_get_status_str, NULL,
	  "The status as text, from ibv_wc_status_str(3).", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyMethodDef wc_methods[] = {
	{ "raise_for_status", wc_raise_for_status, METH_NOARGS,
	  "Check the completion's status; calls no verb.\n"
	  "\n"
	  "Raises:\n"
	  "    CompletionError: status is not SUCCESS (the error holds\n"
	  "        this WC, its status and vendor_err)." },
	{ NULL, NULL, 0, NULL }
};

static PyType_Slot wc_slots[] = {
	{ Py_tp_doc,
	  "A work completion: a copy of one struct ibv_wc.\n"
	  "\n"
	  "``CQ.poll()`` returns them, read with ``ibv_poll_cq`` (man page\n"
	  "ibv_poll_cq(3)).  ``status`` and ``opcode`` are plain ints for\n"
	  "speed; ``WCStatus(wc.status)`` names one.  ``WC(**fields)``\n"
	  "builds one by hand (tests, fakes): every field is a keyword,\n"
	  "the others are 0.\n"
	  "\n"
	  "Args:\n"
	  "    fields: the WC's fields by name (wr_id, status, opcode,\n"
	  "        byte_len, ...).\n"
	  "\n"
	  "Raises:\n"
	  "    TypeError: a positional argument or an unknown keyword.\n"
	  "    ValueError: a field out of its C type's range." },
	{ Py_tp_new, wc_tp_new },
	{ Py_tp_dealloc, wc_dealloc },
	{ Py_tp_repr, wc_repr },
	{ Py_tp_members, wc_members },
	{ Py_tp_getset, wc_getset },
	{ Py_tp_methods, wc_methods },
	{ 0, NULL }
};

/* BASETYPE for WCEx (cq_ex.c); wc_tp_new builds WCs only. */
PyType_Spec WC_spec = { "ibverbs._ibverbs.WC", sizeof(WCObject), 0,
			Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, wc_slots };
