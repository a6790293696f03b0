/*
 * qp_connect.c - QP's connection half: to_init(), to_rtr() and to_rts(),
 * the state transitions with the attribute masks each QP type needs, and
 * the parsing of the remote end's QPInfo (any object with qp_num, psn,
 * lid, gid and mtu) into the address vector.  Each goes through
 * qp_modify() (qp.c), which names the transition in a failure.
 */
#include "ibverbs.h"
#include <string.h>

/* Default Q_Key of to_init() for UD QPs (both ends must agree). */
#define QP_DEFAULT_QKEY 0x11111111u

/* ------------------------------------------------------------------ */
/* State transitions with the masks each QP type needs                 */
/* ------------------------------------------------------------------ */

static int arg_opt_int(PyObject *o, const char *name, long min, long max,
		       long dflt, long *out)
{
	if (o == NULL || o == Py_None) {
		*out = dflt;
		return 0;
	}
	return arg_int(o, name, min, max, out);
}

/* to_init(port, access, pkey_index=0, qkey=None)
 * RC/UC: STATE|PKEY_INDEX|PORT|ACCESS_FLAGS; UD: STATE|PKEY_INDEX|PORT|QKEY
 * with qkey defaulting to 0x11111111; RAW_PACKET: STATE|PORT. */
PyObject *qp_to_init(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "port", "access", "pkey_index", "qkey",
				  NULL };
	PyObject *port_o, *access_o = NULL, *pkey_o = NULL, *qkey_o = NULL;
	struct ibv_qp_attr attr;
	long port, access = 0, pkey, qkey;
	int mask = IBV_QP_STATE | IBV_QP_PORT;

	HANDLE_CHECK(self);
	/* access defaults to 0 (no remote access), as in the published
	 * package. */
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO:to_init", kwlist,
					 &port_o, &access_o, &pkey_o, &qkey_o))
		return NULL;
	if (arg_int(port_o, "port", 1, UINT8_MAX, &port) < 0 ||
	    (access_o != NULL &&
	     arg_int(access_o, "access", 0, INT32_MAX, &access) < 0) ||
	    arg_opt_int(pkey_o, "pkey_index", 0, UINT16_MAX, 0, &pkey) < 0 ||
	    arg_opt_int(qkey_o, "qkey", 0, UINT32_MAX, QP_DEFAULT_QKEY, &qkey) <
		    0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = (uint8_t)port;
	attr.pkey_index = (uint16_t)pkey;
	attr.qkey = (uint32_t)qkey;
	attr.qp_access_flags = (unsigned int)access;
	switch (QPO(self)->qp_type) {
	case IBV_QPT_UD:
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
		break;
	case IBV_QPT_RAW_PACKET:
		break;
	default:
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS;
		break;
	}
	if (qp_modify(self, "to_init", &attr, mask) < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* remote.<name>; a remote without it (None, not a QPInfo) is a
 * TypeError, not an AttributeError. */
static PyObject *remote_attr(PyObject *remote, const char *name)
{
	PyObject *v = PyObject_GetAttrString(remote, name);

	if (v == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
		PyErr_Clear();
		PyErr_Format(PyExc_TypeError,
			     "remote must be a QPInfo, not %R (it has no "
			     "attribute '%s')",
			     (PyObject *)Py_TYPE(remote), name);
	}
	return v;
}

/* An integer attribute of the remote QPInfo, range-checked. */
static int remote_int(PyObject *remote, const char *name, long min, long max,
		      long *out)
{
	PyObject *v = remote_attr(remote, name);
	char what[32];
	int rc;

	if (v == NULL)
		return -1;
	snprintf(what, sizeof(what), "remote.%s", name);
	rc = arg_int(v, what, min, max, out);
	Py_DECREF(v);
	return rc;
}

/* The remote GID (a Gid, 16 bytes or None) into the AV; is_global when it
 * is non-zero, as RoCE needs. */
static int remote_gid(PyObject *remote, struct ibv_ah_attr *ah)
{
	PyObject *g = remote_attr(remote, "gid"), *raw = NULL;
	static const uint8_t zero[16];
	int rc = -1;

	if (g == NULL)
		return -1;
	if (g == Py_None) {
		rc = 0;
		goto out;
	}
	if (PyBytes_Check(g)) {
		raw = g;
		Py_INCREF(raw);
	} else {
		PyObject *gid = PyObject_CallFunctionObjArgs(ST.Gid, g, NULL);

		if (gid == NULL)
			goto out;
		raw = PyObject_GetAttrString(gid, "raw");
		Py_DECREF(gid);
		if (raw == NULL)
			goto out;
	}
	if (!PyBytes_Check(raw) || PyBytes_Size(raw) != 16) {
		PyErr_SetString(PyExc_ValueError,
				"remote.gid must be 16 bytes");
		goto out;
	}
	memcpy(ah->grh.dgid.raw, PyBytes_AsString(raw), 16);
	ah->is_global = memcmp(ah->grh.dgid.raw, zero, 16) != 0;
	rc = 0;
out:
	Py_XDECREF(raw);
	Py_DECREF(g);
	return rc;
}

/* The local port: as given, else the one the QP was moved to INIT on. */
static int local_port(PyObject *self, PyObject *port_o, uint8_t *port)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	long v;
	int rc;

	if (port_o != NULL && port_o != Py_None) {
		if (arg_int(port_o, "port", 1, UINT8_MAX, &v) < 0)
			return -1;
		*port = (uint8_t)v;
		return 0;
	}
	rc = qp_query_raw(self, &attr, IBV_QP_PORT, &init);
	if (rc != 0) {
		verbs_error_fmt(rc, "ibv_query_qp",
				"to_rtr: finding the "
				"QP's port (pass port=)");
		return -1;
	}
	*port = attr.port_num ? attr.port_num : 1;
	return 0;
}

/* Path MTU: as given, else min(remote.mtu, the local port's active_mtu). */
static int path_mtu(PyObject *self, PyObject *remote, PyObject *mtu_o,
		    uint8_t port, enum ibv_mtu *mtu)
{
	struct ibv_port_attr pa;
	long v;
	int rc;

	if (mtu_o != NULL && mtu_o != Py_None) {
		if (arg_int(mtu_o, "mtu", IBV_MTU_256, IBV_MTU_4096, &v) < 0)
			return -1;
		*mtu = (enum ibv_mtu)v;
		return 0;
	}
	if (remote_int(remote, "mtu", IBV_MTU_256, IBV_MTU_4096, &v) < 0 ||
	    handle_check(HANDLE(self)) < 0) /* that ran Python code */
		return -1;
	rc = port_query(QPP(self)->context, port, &pa);
	if (rc != 0) {
		verbs_error_fmt(rc, "ibv_query_port",
				"to_rtr: port %d "
				"(for the default path MTU)",
				port);
		return -1;
	}
	*mtu = (enum ibv_mtu)(v < (long)pa.active_mtu ? v :
							(long)pa.active_mtu);
	return 0;
}

struct rtr_args {
	PyObject *remote, *sgid_index, *mtu, *port, *max_dest_rd_atomic,
		*min_rnr_timer, *hop_limit, *sl, *traffic_class, *flow_label;
};

/* The RC/UC part of to_rtr: address vector, path MTU, remote QPN/PSN. */
static int rtr_connected(PyObject *self, struct rtr_args *a,
			 struct ibv_qp_attr *attr)
{
	struct ibv_ah_attr *ah = &attr->ah_attr;
	long qpn, psn, lid, sgid, hop, sl, tc, fl, rd, rnr;
	uint8_t port;

	if (a->sgid_index == NULL) {
		PyErr_SetString(PyExc_TypeError,
				"to_rtr() missing required "
				"keyword argument 'sgid_index' (RC/UC QPs)");
		return -1;
	}
	if (remote_int(a->remote, "qp_num", 0, QPN_MAX, &qpn) < 0 ||
	    remote_int(a->remote, "psn", 0, PSN_MAX, &psn) < 0 ||
	    remote_int(a->remote, "lid", 0, UINT16_MAX, &lid) < 0 ||
	    remote_gid(a->remote, ah) < 0 ||
	    arg_int(a->sgid_index, "sgid_index", 0, UINT8_MAX, &sgid) < 0 ||
	    arg_opt_int(a->hop_limit, "hop_limit", 0, UINT8_MAX, 64, &hop) <
		    0 ||
	    arg_opt_int(a->sl, "sl", 0, 15, 0, &sl) < 0 ||
	    arg_opt_int(a->traffic_class, "traffic_class", 0, UINT8_MAX, 0,
			&tc) < 0 ||
	    arg_opt_int(a->flow_label, "flow_label", 0, 0xfffff, 0, &fl) < 0 ||
	    arg_opt_int(a->max_dest_rd_atomic, "max_dest_rd_atomic", 0,
			UINT8_MAX, 1, &rd) < 0 ||
	    arg_opt_int(a->min_rnr_timer, "min_rnr_timer", 0, 31, 12, &rnr) <
		    0 ||
	    local_port(self, a->port, &port) < 0 ||
	    path_mtu(self, a->remote, a->mtu, port, &attr->path_mtu) < 0)
		return -1;
	attr->dest_qp_num = (uint32_t)qpn;
	attr->rq_psn = (uint32_t)psn;
	attr->max_dest_rd_atomic = (uint8_t)rd;
	attr->min_rnr_timer = (uint8_t)rnr;
	ah->dlid = (uint16_t)lid;
	ah->sl = (uint8_t)sl;
	ah->port_num = port;
	ah->grh.sgid_index = (uint8_t)sgid;
	ah->grh.hop_limit = (uint8_t)hop;
	ah->grh.traffic_class = (uint8_t)tc;
	ah->grh.flow_label = (uint32_t)fl;
	return 0;
}

/* to_rtr(remote, *, sgid_index, mtu=None, port=None, max_dest_rd_atomic=1,
 *        min_rnr_timer=12, hop_limit=64, sl=0, traffic_class=0,
 *        flow_label=0)
 * RC: STATE|AV|PATH_MTU|DEST_QPN|RQ_PSN|MAX_DEST_RD_ATOMIC|MIN_RNR_TIMER;
 * UC: STATE|AV|PATH_MTU|DEST_QPN|RQ_PSN; UD (remote may be None): STATE. */
PyObject *qp_to_rtr(PyObject *self, PyObject *args, PyObject *kw)
{
	/* Positional order as in the published package; port and
	 * flow_label keyword-only. */
	static char *kwlist[] = {
		"remote",	 "sgid_index",	       "mtu", "hop_limit",
		"min_rnr_timer", "max_dest_rd_atomic", "sl",  "traffic_class",
		"port",		 "flow_label",	       NULL
	};
	struct rtr_args a = { NULL };
	struct ibv_qp_attr attr;
	int type = QPO(self)->qp_type, mask = IBV_QP_STATE;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(
		    args, kw, "O|OOOOOOO$OO:to_rtr", kwlist, &a.remote,
		    &a.sgid_index, &a.mtu, &a.hop_limit, &a.min_rnr_timer,
		    &a.max_dest_rd_atomic, &a.sl, &a.traffic_class, &a.port,
		    &a.flow_label))
		return NULL;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	if (type != IBV_QPT_UD && type != IBV_QPT_RAW_PACKET) {
		if (rtr_connected(self, &a, &attr) < 0)
			return NULL;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (type != IBV_QPT_UC)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
	}
	if (qp_modify(self, "to_rtr", &attr, mask) < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* to_rts(psn=0, timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1)
 * RC: STATE|SQ_PSN|TIMEOUT|RETRY_CNT|RNR_RETRY|MAX_QP_RD_ATOMIC;
 * UC/UD: STATE|SQ_PSN. */
PyObject *qp_to_rts(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "psn",       "timeout",	"retry_cnt",
				  "rnr_retry", "max_rd_atomic", NULL };
	PyObject *psn_o = NULL, *to_o = NULL, *retry_o = NULL, *rnr_o = NULL,
		 *rd_o = NULL;
	struct ibv_qp_attr attr;
	long psn, to, retry, rnr, rd;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	HANDLE_CHECK(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOO:to_rts", kwlist,
					 &psn_o, &to_o, &retry_o, &rnr_o,
					 &rd_o))
		return NULL;
	if (arg_opt_int(psn_o, "psn", 0, PSN_MAX, 0, &psn) < 0 ||
	    arg_opt_int(to_o, "timeout", 0, 31, 14, &to) < 0 ||
	    arg_opt_int(retry_o, "retry_cnt", 0, 7, 7, &retry) < 0 ||
	    arg_opt_int(rnr_o, "rnr_retry", 0, 7, 7, &rnr) < 0 ||
	    arg_opt_int(rd_o, "max_rd_atomic", 0, UINT8_MAX, 1, &rd) < 0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = (uint32_t)psn;
	attr.timeout = (uint8_t)to;
	attr.retry_cnt = (uint8_t)retry;
	attr.rnr_retry = (uint8_t)rnr;
	attr.max_rd_atomic = (uint8_t)rd;
	if (QPO(self)->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	if (qp_modify(self, "to_rts", &attr, mask) < 0)
		return NULL;
	Py_RETURN_NONE;
}
