/*
 * cm_connect.c - connecting a CMID (cm.c): connect() and accept(), which
 * wait for the connection to be established, their halves that only
 * start it (start_connect(), start_accept()) and poll_established(),
 * which finishes it without waiting (ibverbs.aio awaits the event
 * channel's fd between calls); reject() and disconnect().  The blocking
 * and the started forms share the argument checks and the verb
 * (connect_begin, accept_begin) and the wait for ESTABLISHED (cmid_finish).
 */
#include "cm/cm.h"
#include <string.h>

/* The arguments that the docstrings of connect, start_connect, accept and
 * start_accept share (Args: lines, after private_data). */
#define CM_ARGS_DEPTH                                                      \
	"    responder_resources: RDMA reads and atomics in flight the\n"  \
	"        peer may send to us, 0..255.\n"                           \
	"    initiator_depth: RDMA reads and atomics in flight we send,\n" \
	"        0..255.\n"
#define CM_ARG_RETRY                                                        \
	"    retry_count: transport retries after a timeout, 0..255 (the\n" \
	"        IB CM keeps 3 bits: 0..7).\n"
#define CM_ARG_RNR \
	"    rnr_retry_count: receiver-not-ready retries (7: forever).\n"
#define CM_ARGS_CONNECT CM_ARGS_DEPTH CM_ARG_RETRY CM_ARG_RNR
#define CM_ARGS_ACCEPT CM_ARGS_DEPTH CM_ARG_RNR

/* What the transport carries as private data in a REQ/REP/REJ. */
enum { PD_CONNECT, PD_ACCEPT, PD_REJECT };

static int pdata_limit(struct rdma_cm_id *id, int which)
{
	if (id->verbs != NULL &&
	    id->verbs->device->transport_type == IBV_TRANSPORT_IWARP)
		return 255;
	/* InfiniBand and RoCE: the IB CM's message sizes less the 36-byte
	 * rdma_cm header where one is carried (REQ). */
	switch (which) {
	case PD_CONNECT:
		return 56;
	case PD_ACCEPT:
		return 196;
	default:
		return 148;
	}
}

static int pdata_check(struct rdma_cm_id *id, int which, Py_ssize_t len,
		       const char *meth)
{
	int max = pdata_limit(id, which);

	if (len > max) {
		PyErr_Format(PyExc_ValueError,
			     "%s: private_data is %zd bytes; "
			     "this transport carries at most %d",
			     meth, len, max);
		return -1;
	}
	return 0;
}

/* The arguments of connect, start_connect, accept, start_accept and
 * reject (each declares those it takes). */
struct conn_args {
	PyObject *private_data, *timeout;
	int responder_resources, initiator_depth, retry_count, rnr_retry_count;
};

#define CONN_PDATA \
	ARG_BUFFER(struct conn_args, private_data, 0, .flags = ARG_OPT)
#define CONN_U8(f, d) \
	ARG_INT(struct conn_args, f, 0, 255, .flags = ARG_KWOPT, .def = (d))
#define CONN_TIMEOUT \
	ARG_NUMBER(struct conn_args, timeout, .flags = ARG_KWOPT | ARG_NONE)

/* private_data (bytes; left out: none) as *p and *len, checked against
 * what the transport carries in message "which".  0 / -1. */
static int pdata_arg(PyObject *o, struct rdma_cm_id *id, int which,
		     const char *meth, const char **p, Py_ssize_t *len)
{
	*p = "";
	*len = 0;
	if (o != NULL) {
		if (!PyBytes_Check(o))
			return arg_type_error("private_data", "bytes object", 0,
					      o);
		*p = PyBytes_AsString(o);
		*len = PyBytes_Size(o);
	}
	return pdata_check(id, which, *len, meth);
}

/* The wait for ESTABLISHED of the connect/accept under way (c->pending),
 * the step the blocking connect()/accept() and poll_established() share.
 * The peer's private data; with CM_NOWAIT, None while no event says how
 * it ended.  An error event ends the attempt (VerbsError named after the
 * verb, as cm_expect makes it); a timeout leaves it under way. */
static PyObject *cmid_finish(CMIDObject *c, long ms)
{
	cm_event_copy ev;
	PyObject *host_b = NULL;
	const char *op = "rdma_accept";
	char what[300] = "accepting";
	int rc;

	if (c->pending == CM_PENDING_CONNECT) {
		op = "rdma_connect";
		if (PyUnicode_Check(c->host))
			host_b = PyUnicode_AsUTF8String(c->host);
		PyErr_Clear();
		PyOS_snprintf(what, sizeof(what), "connecting to %s port %d",
			      host_b ? PyBytes_AsString(host_b) : "?", c->port);
		Py_XDECREF(host_b);
	}
	ev.event = -1;
	rc = cm_expect(HANDLE(c), c->ch, ms, RDMA_CM_EVENT_ESTABLISHED, op,
		       what, &ev);
	if (rc > 0)
		Py_RETURN_NONE;
	if (rc < 0) {
		if (ev.event >= 0) /* an error event: the attempt is over */
			c->pending = CM_PENDING_NONE;
		return NULL;
	}
	c->pending = CM_PENDING_NONE;
	c->connected = 1;
	return PyBytes_FromStringAndSize((const char *)ev.pdata, ev.pdata_len);
}

static int cmid_need_qp(CMIDObject *c, const char *meth)
{
	if (c->qp != NULL)
		return 0;
	PyErr_Format(PyExc_ValueError,
		     "CMID.%s: the CMID has no QP; call "
		     "create_qp(pd, init_attr) first",
		     meth);
	return -1;
}

/* connect_begin's: an active CMID (a passive one is refused before), so
 * what is under way is a connect. */
static int cmid_need_idle(CMIDObject *c, const char *verb)
{
	if (c->pending == CM_PENDING_NONE)
		return 0;
	verbs_error_fmt(EALREADY, verb,
			"a connect is already under way on this CMID; await "
			"it (poll_established()) or close the CMID");
	return -1;
}

/* The rdma_conn_param of connect and accept, from arguments already
 * checked (retry: connect's alone; 0 for accept). */
static void conn_param_set(struct rdma_conn_param *p, const char *pdata,
			   Py_ssize_t plen, int rr, int idepth, int retry,
			   int rnr)
{
	memset(p, 0, sizeof(*p));
	p->private_data = plen ? pdata : NULL;
	p->private_data_len = (uint8_t)plen;
	p->responder_resources = (uint8_t)rr;
	p->initiator_depth = (uint8_t)idepth;
	p->retry_count = (uint8_t)retry;
	p->rnr_retry_count = (uint8_t)rnr;
}

/* The arguments of m (which: PD_CONNECT, or PD_ACCEPT, which has no
 * retry_count; meth names the method in messages) as *p, the timeout in
 * *ms (ms NULL: the start_ form, without one).  0 / -1. */
static int conn_read(PyObject *self, const MethodArgs *m, PyObject *args,
		     PyObject *kw, long *ms, int which, const char *meth,
		     struct rdma_conn_param *p)
{
	struct conn_args a;
	const char *pdata;
	Py_ssize_t plen;

	if (args_parse(m, self, args, kw, &a) < 0 ||
	    (ms != NULL && cm_timeout_arg(a.timeout, ms) < 0) ||
	    pdata_arg(a.private_data, CMID_ID(self), which, meth, &pdata,
		      &plen) < 0)
		return -1;
	conn_param_set(p, pdata, plen, a.responder_resources, a.initiator_depth,
		       which == PD_CONNECT ? a.retry_count : 0,
		       a.rnr_retry_count);
	return 0;
}

/* rdma_connect with the arguments of m (connect, or start_connect
 * without timeout), after HANDLE_CHECK(self); *ms gets the timeout
 * (ms NULL: start_connect). */
static int connect_begin(PyObject *self, const MethodArgs *m, PyObject *args,
			 PyObject *kw, long *ms)
{
	CMIDObject *c = CMO(self);
	const char *meth = ms ? "connect" : "start_connect";
	struct rdma_conn_param p;

	if (conn_read(self, m, args, kw, ms, PD_CONNECT, meth, &p) < 0)
		return -1;
	if (c->passive) {
		PyErr_Format(PyExc_ValueError,
			     "%s: this CMID came from "
			     "CMListener.get_request(); use accept() or "
			     "reject()",
			     meth);
		return -1;
	}
	if (c->connected) {
		verbs_error_fmt(EISCONN, "rdma_connect", "%R is connected",
				self);
		return -1;
	}
	if (cmid_need_idle(c, "rdma_connect") < 0 || cmid_need_qp(c, meth) < 0)
		return -1;
	if (CM.connect(CMID_ID(self), &p) != 0) {
		verbs_error_errno("rdma_connect");
		return -1;
	}
	c->pending = CM_PENDING_CONNECT;
	return 0;
}

const char cmid_connect__doc__[] = PyDoc_STR(
	"Connect to the resolved peer and wait until the connection is\n"
	"established.  The CMID needs its QP (``create_qp``) first.\n"
	"\n"
	"Wraps ``rdma_connect`` (man page rdma_connect(3)).\n"
	"\n"
	"Args:\n"
	"    private_data: sent with the request (56 bytes at most over\n"
	"        InfiniBand and RoCE, 255 over iWARP).\n" CM_ARGS_CONNECT
		CM_ARG_TIMEOUT "\n"
	"Returns:\n"
	"    The peer's private data from its accept.\n"
	"\n"
	"Raises:\n"
	"    VerbsError: the verb failed or the attempt ended in an\n"
	"        error event (ECONNREFUSED: rejected, with ``event``,\n"
	"        ``status`` and ``private_data`` attributes); EISCONN when\n"
	"        connected, EALREADY while another attempt is under way.\n"
	"    TimeoutError: not established within the timeout (the\n"
	"        attempt stays under way: ``poll_established()``).\n"
	"    ValueError: no QP, a CMID from a listener, private_data too\n"
	"        long, or an argument out of range.");

static const ArgSpec connect_params[] = { CONN_PDATA,
					  CONN_U8(responder_resources, 1),
					  CONN_U8(initiator_depth, 1),
					  CONN_U8(retry_count, 7),
					  CONN_U8(rnr_retry_count, 7),
					  CONN_TIMEOUT,
					  ARG_END };
METHOD_ARGS(cmid_connect, "CMID.connect", connect_params);

PyObject *cmid_connect(PyObject *self, PyObject *args, PyObject *kw)
{
	long ms;

	HANDLE_CHECK(self);
	if (connect_begin(self, &cmid_connect_args, args, kw, &ms) < 0)
		return NULL;
	return cmid_finish(CMO(self), ms);
}

const char cmid_start_connect__doc__[] = PyDoc_STR(
	"Start connecting without waiting; ``poll_established()``\n"
	"finishes it once ``fd`` is readable (``ibverbs.aio`` does this).\n"
	"The arguments are connect()'s, less the timeout.\n"
	"\n"
	"Wraps ``rdma_connect`` (man page rdma_connect(3)).\n"
	"\n"
	"Args:\n"
	"    private_data: sent with the request (56 bytes at most over\n"
	"        InfiniBand and RoCE, 255 over iWARP).\n" CM_ARGS_CONNECT "\n"
	"Raises:\n"
	"    VerbsError: the verb failed; EISCONN when connected, EALREADY\n"
	"        while another attempt is under way.\n"
	"    ValueError: as connect().");

static const ArgSpec start_connect_params[] = { CONN_PDATA,
						CONN_U8(responder_resources, 1),
						CONN_U8(initiator_depth, 1),
						CONN_U8(retry_count, 7),
						CONN_U8(rnr_retry_count, 7),
						ARG_END };
METHOD_ARGS(cmid_start_connect, "CMID.start_connect", start_connect_params);

PyObject *cmid_start_connect(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	if (connect_begin(self, &cmid_start_connect_args, args, kw, NULL) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static int cmid_need_request(CMIDObject *c, const char *meth)
{
	if (!c->passive) {
		PyErr_Format(PyExc_ValueError,
			     "%s: only a CMID from "
			     "CMListener.get_request() can be answered",
			     meth);
		return -1;
	}
	if (c->answered) {
		PyErr_Format(PyExc_ValueError,
			     "%s: the request was already "
			     "accepted or rejected",
			     meth);
		return -1;
	}
	return 0;
}

/* rdma_accept with the arguments of m; ms as connect_begin. */
static int accept_begin(PyObject *self, const MethodArgs *m, PyObject *args,
			PyObject *kw, long *ms)
{
	CMIDObject *c = CMO(self);
	const char *meth = ms ? "accept" : "start_accept";
	struct rdma_conn_param p;

	if (conn_read(self, m, args, kw, ms, PD_ACCEPT, meth, &p) < 0 ||
	    cmid_need_request(c, meth) < 0 || cmid_need_qp(c, meth) < 0)
		return -1;
	if (CM.accept(CMID_ID(self), &p) != 0) {
		verbs_error_errno("rdma_accept");
		return -1;
	}
	c->answered = 1;
	c->pending = CM_PENDING_ACCEPT;
	return 0;
}

const char cmid_accept__doc__[] = PyDoc_STR(
	"Accept a connection request and wait until the connection is\n"
	"established.  Only for a CMID from ``CMListener.get_request()``,\n"
	"with its QP (``create_qp``) made.\n"
	"\n"
	"Wraps ``rdma_accept`` (man page rdma_accept(3)).\n"
	"\n"
	"Args:\n"
	"    private_data: sent with the reply (196 bytes at most over\n"
	"        InfiniBand and RoCE, 255 over iWARP).\n" CM_ARGS_ACCEPT
		CM_ARG_TIMEOUT "\n"
	"Raises:\n"
	"    VerbsError: the verb failed or the attempt ended in an\n"
	"        error event; EALREADY while another attempt is under way.\n"
	"    TimeoutError: not established within the timeout.\n"
	"    ValueError: not a request, already answered, no QP,\n"
	"        private_data too long, or an argument out of range.");

static const ArgSpec accept_params[] = { CONN_PDATA,
					 CONN_U8(responder_resources, 1),
					 CONN_U8(initiator_depth, 1),
					 CONN_U8(rnr_retry_count, 7),
					 CONN_TIMEOUT,
					 ARG_END };
METHOD_ARGS(cmid_accept, "CMID.accept", accept_params);

PyObject *cmid_accept(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *r;
	long ms;

	HANDLE_CHECK(self);
	if (accept_begin(self, &cmid_accept_args, args, kw, &ms) < 0)
		return NULL;
	r = cmid_finish(CMO(self), ms);
	if (r == NULL)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_NONE;
}

const char cmid_start_accept__doc__[] = PyDoc_STR(
	"Start accepting a request without waiting;\n"
	"``poll_established()`` finishes it.  The arguments are\n"
	"accept()'s, less the timeout.\n"
	"\n"
	"Wraps ``rdma_accept`` (man page rdma_accept(3)).\n"
	"\n"
	"Args:\n"
	"    private_data: sent with the reply (196 bytes at most over\n"
	"        InfiniBand and RoCE, 255 over iWARP).\n" CM_ARGS_ACCEPT "\n"
	"Raises:\n"
	"    VerbsError: the verb failed; EALREADY while another attempt\n"
	"        is under way.\n"
	"    ValueError: as accept().");

static const ArgSpec start_accept_params[] = {
	CONN_PDATA, CONN_U8(responder_resources, 1),
	CONN_U8(initiator_depth, 1), CONN_U8(rnr_retry_count, 7), ARG_END
};
METHOD_ARGS(cmid_start_accept, "CMID.start_accept", start_accept_params);

PyObject *cmid_start_accept(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	if (accept_begin(self, &cmid_start_accept_args, args, kw, NULL) < 0)
		return NULL;
	Py_RETURN_NONE;
}

const char cmid_poll_established__doc__[] = PyDoc_STR(
	"Take the events ready on ``fd`` without waiting, to finish what\n"
	"start_connect() or start_accept() began.\n"
	"\n"
	"Reads events with ``rdma_get_cm_event`` (man page\n"
	"rdma_get_cm_event(3)), acknowledging each.\n"
	"\n"
	"Returns:\n"
	"    The peer's private data once the connection is established\n"
	"    (b'' after an accept), None while it is not yet.\n"
	"\n"
	"Raises:\n"
	"    VerbsError: the attempt ended in an error event, as\n"
	"        connect() and accept() raise it.\n"
	"    ValueError: no connect or accept is under way.");

PyObject *cmid_poll_established(PyObject *self, PyObject *unused)
{
	HANDLE_CHECK(self);
	if (CMO(self)->pending == CM_PENDING_NONE) {
		PyErr_SetString(PyExc_ValueError,
				"poll_established: no connect or accept is "
				"under way (start_connect()/start_accept() "
				"first)");
		return NULL;
	}
	return cmid_finish(CMO(self), CM_NOWAIT);
}

const char cmid_reject__doc__[] = PyDoc_STR(
	"Refuse a connection request; the peer's connect() raises\n"
	"VerbsError(ECONNREFUSED) with this private data.\n"
	"\n"
	"Wraps ``rdma_reject`` (man page rdma_reject(3)).\n"
	"\n"
	"Args:\n"
	"    private_data: sent with the rejection (148 bytes at most over\n"
	"        InfiniBand and RoCE).\n"
	"\n"
	"Raises:\n"
	"    VerbsError: the verb failed (EBADF when closed).\n"
	"    ValueError: not a request, already answered, or private_data\n"
	"        longer than the transport carries (148 bytes over\n"
	"        InfiniBand and RoCE).");

static const ArgSpec reject_params[] = { CONN_PDATA, ARG_END };
METHOD_ARGS(cmid_reject, "CMID.reject", reject_params);

PyObject *cmid_reject(PyObject *self, PyObject *args, PyObject *kw)
{
	CMIDObject *c = CMO(self);
	const char *pdata;
	Py_ssize_t plen;
	struct conn_args a;

	HANDLE_CHECK(self);
	if (args_parse(&cmid_reject_args, self, args, kw, &a) < 0 ||
	    pdata_arg(a.private_data, CMID_ID(self), PD_REJECT, "reject",
		      &pdata, &plen) < 0 ||
	    cmid_need_request(c, "reject") < 0)
		return NULL;
	if (CM.reject(CMID_ID(self), plen ? pdata : NULL, (uint8_t)plen) != 0)
		return verbs_error_errno("rdma_reject");
	c->answered = 1;
	Py_RETURN_NONE;
}

const char cmid_disconnect__doc__[] = PyDoc_STR(
	"Tear the connection down: the QP moves to the error state, its\n"
	"outstanding work requests flush, and the peer gets a\n"
	"DISCONNECTED event.  A no-op when not connected.\n"
	"\n"
	"Wraps ``rdma_disconnect`` (man page rdma_disconnect(3)).\n"
	"\n"
	"Raises:\n"
	"    VerbsError: the verb failed (EBADF when closed).");

PyObject *cmid_disconnect(PyObject *self, PyObject *unused)
{
	CMIDObject *c = CMO(self);

	HANDLE_CHECK(self);
	if (!c->connected)
		Py_RETURN_NONE;
	c->connected = 0;
	if (CM.disconnect(CMID_ID(self)) != 0)
		return verbs_error_errno("rdma_disconnect");
	Py_RETURN_NONE;
}
