/*
 * attrs.c - conversions between verbs attribute structs and Python: the
 * records of ibverbs/_objects.py (AHAttr, QPCap), ibv_qp_attr by field
 * name (QP.modify/query), the port query that context.c and QP.to_rtr
 * share, and enum wrapping of returned values.
 *
 * Nothing here is on the data path: attribute lookups by name are fine.
 */
#include "ibverbs.h"
#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Ports                                                               */
/* ------------------------------------------------------------------ */

/* ibv_query_port is a header macro that calls the exported symbol; do
 * what it does, through the dlsym table. */
int port_query(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a)
{
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);

	memset(a, 0, sizeof(*a));
	if (vctx == NULL)
		return IBV.query_port(ctx, port,
				      (struct _compat_ibv_port_attr *)a);
	return vctx->query_port(ctx, port, a, sizeof(*a));
}

/* ------------------------------------------------------------------ */
/* Enums                                                               */
/* ------------------------------------------------------------------ */

PyObject *enum_from_int(const char *cls, long v)
{
	PyObject *mod, *type = NULL, *res = NULL;

	/* ibverbs.enums imports _ibverbs: imported on the first call. */
	mod = module_cached(&ST.mod_enums, "ibverbs.enums");
	if (mod != NULL)
		type = PyObject_GetAttrString(mod, cls);
	if (type != NULL)
		res = PyObject_CallFunction(type, "l", v);
	Py_XDECREF(type);
	if (res == NULL) {
		/* A value the headers this was built with do not name (a newer
		 * provider): report the number rather than fail the query. */
		PyErr_Clear();
		res = PyLong_FromLong(v);
	}
	return res;
}

/* ------------------------------------------------------------------ */
/* QPCap                                                               */
/* ------------------------------------------------------------------ */

PyObject *qp_cap_to_py(const struct ibv_qp_cap *cap)
{
	PyObject *d = PyDict_New();

	if (d == NULL)
		return NULL;
	if (dict_set_u64(d, "max_send_wr", cap->max_send_wr) < 0 ||
	    dict_set_u64(d, "max_recv_wr", cap->max_recv_wr) < 0 ||
	    dict_set_u64(d, "max_send_sge", cap->max_send_sge) < 0 ||
	    dict_set_u64(d, "max_recv_sge", cap->max_recv_sge) < 0 ||
	    dict_set_u64(d, "max_inline_data", cap->max_inline_data) < 0) {
		Py_DECREF(d);
		return NULL;
	}
	return make_record(ST.QPCap, d);
}

/* ------------------------------------------------------------------ */
/* AHAttr                                                              */
/* ------------------------------------------------------------------ */

/* 16 raw bytes from a Gid, bytes-like or IPv6 text (whatever Gid()
 * accepts); None is the zero GID. */
int gid_from_py(PyObject *o, union ibv_gid *gid)
{
	PyObject *g = NULL, *raw = NULL;
	int rc = -1;

	memset(gid, 0, sizeof(*gid));
	if (o == Py_None)
		return 0;
	if (PyBytes_Check(o) && PyBytes_Size(o) == 16) {
		memcpy(gid->raw, PyBytes_AsString(o), 16);
		return 0;
	}
	g = PyObject_CallFunctionObjArgs(ST.Gid, o, NULL);
	if (g == NULL)
		goto out;
	raw = PyObject_GetAttrString(g, "raw");
	if (raw == NULL)
		goto out;
	if (!PyBytes_Check(raw) || PyBytes_Size(raw) != 16) {
		PyErr_SetString(PyExc_ValueError, "a GID is 16 bytes");
		goto out;
	}
	memcpy(gid->raw, PyBytes_AsString(raw), 16);
	rc = 0;
out:
	Py_XDECREF(raw);
	Py_XDECREF(g);
	return rc;
}

/* One integer attribute of an AHAttr-like object, range-checked; "dflt"
 * when the object does not have it (duck-typed records may omit
 * fields). */
static int ah_int(PyObject *o, const char *name, long max, long dflt, long *out,
		  int *found)
{
	PyObject *v;
	char what[40];
	int rc;

	if (attr_optional(o, name, &v) < 0)
		return -1;
	if (v == NULL) {
		*out = dflt;
		return 0;
	}
	(*found)++;
	snprintf(what, sizeof(what), "ah_attr.%s", name);
	rc = arg_int(v, what, 0, max, out);
	Py_DECREF(v);
	return rc;
}

static const struct {
	const char *name;
	long max;
	long dflt;
} ah_fields[] = {
	{ "sgid_index", 255, 0 },
	{ "port_num", 255, 1 },
	{ "hop_limit", 255, 64 },
	{ "dlid", 0xffff, 0 },
	{ "sl", 15, 0 },
	{ "traffic_class", 255, 0 },
	{ "flow_label", 0xfffff, 0 },
	{ "src_path_bits", 127, 0 },
	{ "static_rate", 255, 0 },
};
#define N_AH_FIELDS (sizeof(ah_fields) / sizeof(ah_fields[0]))

int ah_attr_from_py(PyObject *o, struct ibv_ah_attr *out)
{
	PyObject *dgid = NULL, *is_global = NULL;
	long v[N_AH_FIELDS];
	size_t i;
	int global, found = 0, rc = -1;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < N_AH_FIELDS; i++)
		if (ah_int(o, ah_fields[i].name, ah_fields[i].max,
			   ah_fields[i].dflt, &v[i], &found) < 0)
			goto out;
	if (attr_optional(o, "dgid", &dgid) < 0)
		goto out;
	if (dgid == NULL) {
		dgid = Py_None;
		Py_INCREF(dgid);
	} else {
		found++;
	}
	/* Duck-typed records may omit fields, but None or an int is not an
	 * address: refuse what has none of them. */
	if (found == 0) {
		PyErr_Format(PyExc_TypeError,
			     "ah_attr must be an AHAttr (or have its fields), "
			     "not %R",
			     (PyObject *)Py_TYPE(o));
		goto out;
	}
	if (gid_from_py(dgid, &out->grh.dgid) < 0)
		goto out;
	/* is_global defaults to "a dgid was given", as in AHAttr(). */
	if (attr_optional(o, "is_global", &is_global) < 0)
		goto out;
	if (is_global == NULL) {
		global = dgid != Py_None;
	} else {
		global = PyObject_IsTrue(is_global);
		if (global < 0)
			goto out;
	}
	out->grh.sgid_index = (uint8_t)v[0];
	out->port_num = (uint8_t)v[1];
	out->grh.hop_limit = (uint8_t)v[2];
	out->dlid = (uint16_t)v[3];
	out->sl = (uint8_t)v[4];
	out->grh.traffic_class = (uint8_t)v[5];
	out->grh.flow_label = (uint32_t)v[6];
	out->src_path_bits = (uint8_t)v[7];
	out->static_rate = (uint8_t)v[8];
	out->is_global = (uint8_t)global;
	rc = 0;
out:
	Py_XDECREF(is_global);
	Py_XDECREF(dgid);
	return rc;
}

PyObject *ah_attr_to_py(const struct ibv_ah_attr *a)
{
	PyObject *d = PyDict_New(), *dgid;
	int rc;

	if (d == NULL)
		return NULL;
	/* A non-global AH has no meaningful GID: report None, as AHAttr()
	 * would hold for one built without a dgid. */
	if (a->is_global)
		dgid = PyBytes_FromStringAndSize((const char *)a->grh.dgid.raw,
						 16);
	else {
		dgid = Py_None;
		Py_INCREF(dgid);
	}
	if (dgid == NULL)
		goto fail;
	rc = PyDict_SetItemString(d, "dgid", dgid);
	Py_DECREF(dgid);
	if (rc < 0 || dict_set_int(d, "sgid_index", a->grh.sgid_index) < 0 ||
	    dict_set_int(d, "port_num", a->port_num) < 0 ||
	    PyDict_SetItemString(d, "is_global",
				 a->is_global ? Py_True : Py_False) < 0 ||
	    dict_set_int(d, "hop_limit", a->grh.hop_limit) < 0 ||
	    dict_set_int(d, "dlid", a->dlid) < 0 ||
	    dict_set_int(d, "sl", a->sl) < 0 ||
	    dict_set_int(d, "traffic_class", a->grh.traffic_class) < 0 ||
	    dict_set_u64(d, "flow_label", a->grh.flow_label) < 0 ||
	    dict_set_int(d, "src_path_bits", a->src_path_bits) < 0 ||
	    dict_set_int(d, "static_rate", a->static_rate) < 0)
		goto fail;
	return make_record(ST.AHAttr, d);
fail:
	Py_DECREF(d);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* ibv_qp_attr: QP.modify() keywords and QP.query() dicts, by name     */
/* ------------------------------------------------------------------ */

enum field_kind { F_U8, F_U16, F_U32, F_ENUM, F_AH, F_CAP };

static const struct qp_field {
	const char *name;
	enum field_kind kind;
	size_t off;
	uint32_t min, max;
	int mask; /* the IBV_QP_* bit that carries the field */
	const char *enum_cls; /* query(): ibverbs.enums class, or NULL */
} qp_fields[] = {
#define F(n, k, lo, hi, m, cls)                                        \
	{                                                              \
#n, k, offsetof(struct ibv_qp_attr, n), lo, hi, m, cls \
	}
	F(qp_state, F_ENUM, 0, IBV_QPS_UNKNOWN, IBV_QP_STATE, "QPState"),
	F(cur_qp_state, F_ENUM, 0, IBV_QPS_UNKNOWN, IBV_QP_CUR_STATE,
	  "QPState"),
	F(path_mtu, F_ENUM, IBV_MTU_256, IBV_MTU_4096, IBV_QP_PATH_MTU, "MTU"),
	F(path_mig_state, F_ENUM, 0, IBV_MIG_ARMED, IBV_QP_PATH_MIG_STATE,
	  "MigState"),
	F(qkey, F_U32, 0, UINT32_MAX, IBV_QP_QKEY, NULL),
	F(rq_psn, F_U32, 0, PSN_MAX, IBV_QP_RQ_PSN, NULL),
	F(sq_psn, F_U32, 0, PSN_MAX, IBV_QP_SQ_PSN, NULL),
	F(dest_qp_num, F_U32, 0, QPN_MAX, IBV_QP_DEST_QPN, NULL),
	F(qp_access_flags, F_U32, 0, UINT32_MAX, IBV_QP_ACCESS_FLAGS,
	  "AccessFlags"),
	F(cap, F_CAP, 0, 0, IBV_QP_CAP, NULL),
	F(ah_attr, F_AH, 0, 0, IBV_QP_AV, NULL),
	F(alt_ah_attr, F_AH, 0, 0, IBV_QP_ALT_PATH, NULL),
	F(pkey_index, F_U16, 0, UINT16_MAX, IBV_QP_PKEY_INDEX, NULL),
	F(alt_pkey_index, F_U16, 0, UINT16_MAX, IBV_QP_ALT_PATH, NULL),
	F(en_sqd_async_notify, F_U8, 0, 1, IBV_QP_EN_SQD_ASYNC_NOTIFY, NULL),
	F(sq_draining, F_U8, 0, 1, IBV_QP_STATE, NULL),
	F(max_rd_atomic, F_U8, 0, UINT8_MAX, IBV_QP_MAX_QP_RD_ATOMIC, NULL),
	F(max_dest_rd_atomic, F_U8, 0, UINT8_MAX, IBV_QP_MAX_DEST_RD_ATOMIC,
	  NULL),
	F(min_rnr_timer, F_U8, 0, 31, IBV_QP_MIN_RNR_TIMER, NULL),
	F(port_num, F_U8, 1, UINT8_MAX, IBV_QP_PORT, NULL),
	F(timeout, F_U8, 0, 31, IBV_QP_TIMEOUT, NULL),
	F(retry_cnt, F_U8, 0, 7, IBV_QP_RETRY_CNT, NULL),
	F(rnr_retry, F_U8, 0, 7, IBV_QP_RNR_RETRY, NULL),
	F(alt_port_num, F_U8, 0, UINT8_MAX, IBV_QP_ALT_PATH, NULL),
	F(alt_timeout, F_U8, 0, 31, IBV_QP_ALT_PATH, NULL),
	F(rate_limit, F_U32, 0, UINT32_MAX, IBV_QP_RATE_LIMIT, NULL),
#undef F
};
#define N_QP_FIELDS (sizeof(qp_fields) / sizeof(qp_fields[0]))

static int cap_from_py(PyObject *o, struct ibv_qp_cap *cap)
{
	static const struct {
		const char *name;
		size_t off;
	} f[] = {
		{ "max_send_wr", offsetof(struct ibv_qp_cap, max_send_wr) },
		{ "max_recv_wr", offsetof(struct ibv_qp_cap, max_recv_wr) },
		{ "max_send_sge", offsetof(struct ibv_qp_cap, max_send_sge) },
		{ "max_recv_sge", offsetof(struct ibv_qp_cap, max_recv_sge) },
		{ "max_inline_data",
		  offsetof(struct ibv_qp_cap, max_inline_data) },
	};
	size_t i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		PyObject *v = attr_required(o, f[i].name, "cap", "QPCap");
		int rc;

		if (v == NULL)
			return -1;
		rc = arg_u32(v, f[i].name,
			     (uint32_t *)((char *)cap + f[i].off));
		Py_DECREF(v);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Store one keyword into *attr; ValueError/TypeError on a bad value. */
static int field_set(const struct qp_field *f, PyObject *v,
		     struct ibv_qp_attr *attr)
{
	char *p = (char *)attr + f->off;
	long x;

	switch (f->kind) {
	case F_AH:
		return ah_attr_from_py(v, (struct ibv_ah_attr *)p);
	case F_CAP:
		return cap_from_py(v, (struct ibv_qp_cap *)p);
	default:
		break;
	}
	/* long is 64-bit on every Linux target with RDMA; UINT32_MAX fits. */
	if (arg_int(v, f->name, f->min, f->max, &x) < 0)
		return -1;
	switch (f->kind) {
	case F_U8:
		*(uint8_t *)p = (uint8_t)x;
		break;
	case F_U16:
		*(uint16_t *)p = (uint16_t)x;
		break;
	case F_U32:
		*(uint32_t *)p = (uint32_t)x;
		break;
	default: /* F_ENUM: the C enums are unsigned int sized */
		*(unsigned int *)p = (unsigned int)x;
		break;
	}
	return 0;
}

static const struct qp_field *field_find(PyObject *name)
{
	size_t i;

	for (i = 0; i < N_QP_FIELDS; i++)
		if (PyUnicode_CompareWithASCIIString(name, qp_fields[i].name) ==
		    0)
			return &qp_fields[i];
	return NULL;
}

int qp_attr_from_kw(PyObject *kw, struct ibv_qp_attr *attr)
{
	PyObject *key, *val;
	Py_ssize_t pos = 0;

	while (kw && PyDict_Next(kw, &pos, &key, &val)) {
		const struct qp_field *f;

		if (PyUnicode_CompareWithASCIIString(key, "mask") == 0 ||
		    PyUnicode_CompareWithASCIIString(key, "attr_mask") == 0)
			continue;
		f = field_find(key);
		if (f == NULL) {
			PyErr_Format(PyExc_TypeError,
				     "unknown QP attribute %R (the keywords "
				     "are struct ibv_qp_attr field names)",
				     key);
			return -1;
		}
		if (field_set(f, val, attr) < 0)
			return -1;
	}
	return 0;
}

static PyObject *field_get(const struct qp_field *f,
			   const struct ibv_qp_attr *attr)
{
	const char *p = (const char *)attr + f->off;
	unsigned long v;

	/* No F_CAP: qp_attr_to_dict, the only caller, skips the caps
	 * (QP.query returns them as a QPCap of their own). */
	switch (f->kind) {
	case F_AH:
		return ah_attr_to_py((const struct ibv_ah_attr *)p);
	case F_U8:
		v = *(const uint8_t *)p;
		break;
	case F_U16:
		v = *(const uint16_t *)p;
		break;
	case F_U32:
		v = *(const uint32_t *)p;
		break;
	default:
		v = *(const unsigned int *)p;
		break;
	}
	if (f->enum_cls)
		return enum_from_int(f->enum_cls, (long)v);
	return PyLong_FromUnsignedLong(v);
}

PyObject *qp_attr_to_dict(const struct ibv_qp_attr *attr, int mask)
{
	PyObject *d = PyDict_New();
	size_t i;

	if (d == NULL)
		return NULL;
	for (i = 0; i < N_QP_FIELDS; i++) {
		const struct qp_field *f = &qp_fields[i];
		PyObject *v;
		int rc;

		/* QP.query() returns the caps as a separate QPCap. */
		if (!(f->mask & mask) || f->kind == F_CAP)
			continue;
		v = field_get(f, attr);
		if (v == NULL)
			goto fail;
		rc = PyDict_SetItemString(d, f->name, v);
		Py_DECREF(v);
		if (rc < 0)
			goto fail;
	}
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}
