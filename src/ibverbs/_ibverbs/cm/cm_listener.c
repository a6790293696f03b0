/*
 * cm_listener.c - CMListener: listens for RDMA connection manager
 * requests (rdma_listen) on its own event channel.  A CMID it produces
 * (get_request(), or a CONNECT_REQUEST's CMEvent.cmid) is independent of
 * it: it moves to its own event channel (rdma_migrate_id).  The handle
 * plumbing, close() and the getters are CMID's (cm.c).
 */
#include "cm/cm.h"
#include <arpa/inet.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* CMListener                                                          */
/* ------------------------------------------------------------------ */

#define LISTENER_ARGS(X, S)                                       \
	X(S, INT, int, port, 0, 65535)                            \
	X(S, TEXT, PyObject *, host, .flags = ARG_OPT | ARG_NONE) \
	X(S, INT, int, backlog, 1, INT_MAX, .flags = ARG_KWOPT, .def = 16)
ARGS_DECLARE(listener, LISTENER_ARGS);
METHOD_ARGS(listener_new, "CMListener.__new__", listener_params);

static PyObject *listener_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	struct listener_args a;
	PyObject *host_b = NULL, *res = NULL;
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	struct rdma_addrinfo *ai = NULL;
	struct sockaddr_in any;
	struct sockaddr *addr;
	char service[8];
	int owned = 0, bound_port;

	if (args_parse(&listener_new_args, NULL, args, kw, &a) < 0)
		return NULL;
	if (a.host != NULL && (host_b = cm_text_arg(a.host, "host")) == NULL)
		return NULL;
	if (cm_load() < 0)
		goto out;
	snprintf(service, sizeof(service), "%d", a.port);
	if (host_b != NULL) {
		if (cm_getaddrinfo(host_b, "host", service, 1, &ai) < 0)
			goto out;
		addr = ai->ai_src_addr;
	} else {
		memset(&any, 0, sizeof(any));
		any.sin_family = AF_INET;
		any.sin_port = htons((uint16_t)a.port);
		any.sin_addr.s_addr = htonl(INADDR_ANY);
		addr = (struct sockaddr *)&any;
	}
	if (cm_create_id(&ch, &id) < 0)
		goto out;
	if (CM.bind_addr(id, addr) != 0) {
		verbs_error_fmt(
			errno_or(EINVAL), "rdma_bind_addr", "%s port %d",
			host_b ? PyBytes_AsString(host_b) : "any address",
			a.port);
		goto out;
	}
	if (CM.listen(id, a.backlog) != 0) {
		verbs_error_fmt(errno_or(EINVAL), "rdma_listen", "port %d",
				a.port);
		goto out;
	}
	res = cmid_wrap(type, &cm_listener_kind, id, ch, &owned);
	if (res == NULL)
		goto out;
	if (a.host != NULL) {
		Py_INCREF(a.host);
		cm_set_ref(&CMO(res)->host, a.host);
	}
	Py_XDECREF(cm_addr_str(rdma_get_local_addr(id), &bound_port));
	PyErr_Clear();
	CMO(res)->port = bound_port ? bound_port : a.port;
out:
	if (!owned)
		cm_discard(id, ch);
	if (ai != NULL)
		CM.freeaddrinfo(ai);
	Py_XDECREF(host_b);
	return res;
}

/* The next connection request within ms (-1: no limit); with CM_NOWAIT,
 * None once the events ready are used up. */
static PyObject *listener_request(PyObject *self, long ms)
{
	cm_event_copy ev;
	long deadline = ms < 0 ? 0 : cm_now_ms() + ms;
	int rc;

	for (;;) {
		long left = ms < 0 ? ms : deadline - cm_now_ms();

		if (ms >= 0 && left < 0)
			left = 0;
		rc = cm_next_event(HANDLE(self), CMO(self)->ch, left,
				   "waiting for a connection request", &ev);
		if (rc < 0 && ms >= 0 &&
		    PyErr_ExceptionMatches(PyExc_TimeoutError)) {
			/* Name the caller's timeout, not what was left of it
			 * after other events. */
			PyErr_Clear();
			PyErr_Format(PyExc_TimeoutError, CM_TIMEOUT_FMT, ms,
				     "waiting for a connection request");
		}
		if (rc < 0)
			return NULL;
		if (rc > 0)
			Py_RETURN_NONE;
		if (ev.event == RDMA_CM_EVENT_CONNECT_REQUEST)
			return cm_request_cmid(&ev);
		if (ev.event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			return cm_event_error(
				ENODEV, "rdma_get_cm_event", &ev,
				"the listener's device went away");
		/* ADDR_CHANGE and the like: keep listening */
	}
}

METHOD_ARGS(listener_get_request, "CMListener.get_request", cm_timeout_params);

static PyObject *listener_get_request(PyObject *self, PyObject *args,
				      PyObject *kw)
{
	long ms;

	HANDLE_CHECK(self);
	if (cm_timeout_only(&listener_get_request_args, self, args, kw, &ms) <
	    0)
		return NULL;
	return listener_request(self, ms);
}

static PyObject *listener_poll_request(PyObject *self, PyObject *unused)
{
	HANDLE_CHECK(self);
	return listener_request(self, CM_NOWAIT);
}

static PyObject *listener_repr(PyObject *self)
{
	CMIDObject *c = CMO(self);

	return PyUnicode_FromFormat("<ibverbs.CMListener host=%R port=%d%s>",
				    c->host, c->port,
				    HANDLE(c)->obj ? "" : " closed");
}

static PyMethodDef listener_methods[] = {
	{ "get_request", KW listener_get_request, METH_VARARGS | METH_KEYWORDS,
	  "Wait (the GIL released) for the next connection request; other\n"
	  "events (an address change) are skipped.  The new CMID has its\n"
	  "own event channel and outlives the listener; answer it with\n"
	  "``create_qp`` then ``accept``, or ``reject``.\n"
	  "\n"
	  "Wraps ``rdma_get_cm_event`` and ``rdma_migrate_id`` (man pages\n"
	  "rdma_get_cm_event(3), rdma_migrate_id(3)).\n"
	  "\n"
	  "Args:\n" CM_ARG_TIMEOUT "\n"
	  "Returns:\n"
	  "    The CMID of the request (``private_data``, ``host``,\n"
	  "    ``port`` say who asked).\n"
	  "\n"
	  "Raises:\n"
	  "    TimeoutError: no request within the timeout.\n"
	  "    VerbsError: reading the channel failed (EBADF when closed),\n"
	  "        or ENODEV when the device went away.\n"
	  "    ValueError: timeout is negative." },
	{ "get_event", KW cmid_get_event, METH_VARARGS | METH_KEYWORDS,
	  "Wait (the GIL released) for the next event of the listener, of\n"
	  "any type; a CONNECT_REQUEST's ``cmid`` is the new CMID.\n"
	  "\n" CM_WRAPS_GET_EVENT "\n"
	  "Args:\n" CM_ARG_TIMEOUT "\n"
	  "Raises:\n"
	  "    TimeoutError: no event within the timeout.\n"
	  "    VerbsError: reading the channel failed (EBADF when closed).\n"
	  "    ValueError: timeout is negative." },
	{ "poll_request", listener_poll_request, METH_NOARGS,
	  "Take the next connection request if one is ready, never\n"
	  "waiting; as get_request() otherwise.\n"
	  "\n"
	  "Wraps ``rdma_get_cm_event`` and ``rdma_migrate_id`` (man pages\n"
	  "rdma_get_cm_event(3), rdma_migrate_id(3)).\n"
	  "\n"
	  "Returns:\n"
	  "    The request's CMID, or None when no request is ready.\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: as get_request()." },
	{ "poll_event", cmid_poll_event, METH_NOARGS,
	  "Take the next event if one is ready, never waiting.\n"
	  "\n" CM_WRAPS_GET_EVENT "\n"
	  "Returns:\n"
	  "    The event, already acknowledged, or None.\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: reading the channel failed (EBADF when closed)." },
	{ "close", cmid_meth_close, METH_NOARGS,
	  "Stop listening and destroy the id and its event channel; the\n"
	  "CMIDs it produced stay open.  Idempotent.\n"
	  "\n"
	  "Wraps ``rdma_destroy_id`` (man page rdma_destroy_id(3)).\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: EBUSY while another thread waits on it." },
	CMID_CONTEXT_METHODS_END
};

static PyGetSetDef listener_getset[] = {
	{ "fd", cmid_get_fd, NULL,
	  "The event channel's file descriptor: readable when a request or "
	  "event is ready (VerbsError(EBADF) once closed).",
	  NULL },
	{ "host", cmid_get_host, NULL,
	  "The address bound as given, or None (every address).", NULL },
	{ "port", cmid_get_port, NULL,
	  "The port listened on (the one the kernel chose for port 0).", NULL },
	HANDLE_GETSETS_END
};

static PyType_Slot listener_slots[] = {
	{ Py_tp_doc,
	  "Listen for RDMA connection manager requests (RC, TCP port\n"
	  "space) on its own event channel.  librdmacm is loaded on first\n"
	  "use.\n"
	  "\n"
	  "Wraps ``rdma_create_id``, ``rdma_bind_addr`` and ``rdma_listen``\n"
	  "(man pages rdma_create_id(3), rdma_bind_addr(3),\n"
	  "rdma_listen(3)).\n"
	  "\n"
	  "Args:\n"
	  "    port: 0..65535; 0 lets the kernel choose (see ``port``).\n"
	  "    host: the local address to bind (a str), None for every\n"
	  "        IPv4 address.\n"
	  "    backlog: pending requests the kernel queues, at least 1.\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: a verb failed (``errno`` says why, e.g.\n"
	  "        EADDRINUSE when the port is taken).\n"
	  "    TypeError: host is not a str.\n"
	  "    ValueError: port or backlog out of range, host empty.\n"
	  "    ImportError: librdmacm cannot be loaded." },
	{ Py_tp_new, listener_new },
	{ Py_tp_dealloc, cmid_dealloc },
	{ Py_tp_traverse, cmid_traverse },
	{ Py_tp_clear, cmid_clear },
	{ Py_tp_repr, listener_repr },
	{ Py_tp_methods, listener_methods },
	{ Py_tp_getset, listener_getset },
	{ 0, NULL }
};

PyType_Spec CMListener_spec = { "ibverbs._ibverbs.CMListener",
				sizeof(CMIDObject), 0,
				Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
				listener_slots };
