/*
 * cm_event.c - the connection manager's events: waiting for one, copying
 * and acknowledging it, turning the error events into VerbsError, and
 * the CMEvent type.
 *
 * Every CMID and CMListener owns an event channel (its .fd) and runs
 * librdmacm in asynchronous mode: each blocking step (address and route
 * resolution, connect, accept, get_request, get_event) waits on that fd
 * with poll(), the GIL released and the handle marked busy, so that a
 * timeout works and close() from another thread refuses; the poll_*
 * methods (ibverbs.aio's steps) pass CM_NOWAIT: take what is ready, never
 * wait.  An event is copied and acknowledged at once: rdma_destroy_id()
 * waits for every event it handed out to be acked, so none may stay
 * unacked.
 */
#include "cm/cm.h"
#include <poll.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* Waiting for events                                                  */
/* ------------------------------------------------------------------ */

/* timeout in seconds (None: no limit) -> milliseconds (-1: no limit) */
int cm_timeout_arg(PyObject *o, long *ms)
{
	double t;

	if (o == NULL || o == Py_None) {
		*ms = -1;
		return 0;
	}
	/* o is an int or a float (the parsers' ARG_NUMBER): an int too large
	 * for a double is out of range; MemoryError (int.__float__) stays. */
	t = PyFloat_AsDouble(o);
	if (t == -1.0 && PyErr_Occurred()) {
		if (!PyErr_ExceptionMatches(PyExc_OverflowError))
			return -1;
		PyErr_Clear();
		t = -1.0;
	}
	if (!(t >= 0.0) || t > (double)INT_MAX / 1000.0) {
		PyErr_Format(PyExc_ValueError,
			     "timeout must be in range 0..%d "
			     "seconds or None",
			     INT_MAX / 1000);
		return -1;
	}
	*ms = (long)(t * 1000.0 + 0.999);
	return 0;
}

const ArgSpec cm_timeout_params[] = { ARG_NUMBER(struct cm_timeout_args,
						 timeout,
						 .flags = ARG_OPT | ARG_NONE),
				      ARG_END };

int cm_timeout_only(const MethodArgs *m, PyObject *self, PyObject *args,
		    PyObject *kw, long *ms)
{
	struct cm_timeout_args a;

	if (args_parse(m, self, args, kw, &a) < 0)
		return -1;
	return cm_timeout_arg(a.timeout, ms);
}

long cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Stands in for the handle while resolve() has none yet. */
static Handle unowned;

/*
 * Wait up to timeout_ms (-1: no limit) for the next event of channel ch,
 * copy it and acknowledge it.  h (the owner of ch; NULL while there is
 * none yet) is marked busy while the GIL is released.  "what" names the
 * wait in a TimeoutError.  0, or -1 with an exception set; with CM_NOWAIT
 * (poll once, never wait), 1 when no event is ready.
 */
int cm_next_event(Handle *h, struct rdma_event_channel *ch, long timeout_ms,
		  const char *what, cm_event_copy *ev)
{
	int nowait = timeout_ms == CM_NOWAIT;
	long deadline;
	struct rdma_cm_event *e = NULL;
	struct pollfd p;
	int rc, err;

	if (nowait)
		timeout_ms = 0;
	deadline = timeout_ms < 0 ? 0 : cm_now_ms() + timeout_ms;
	if (h == NULL)
		h = &unowned;
	for (;;) {
		long left = -1;

		if (timeout_ms >= 0) {
			left = deadline - cm_now_ms();
			if (left < 0)
				left = 0;
		}
		p.fd = ch->fd;
		p.events = POLLIN;
		p.revents = 0;
		HANDLE_BUSY_ENTER(h);
		Py_BEGIN_ALLOW_THREADS
		rc = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		err = errno;
		if (rc > 0) {
			/* Readable: the read does not block (unless another
			 * thread took the event; then EAGAIN or a wait). */
			rc = CM.get_cm_event(ch, &e);
			err = errno_or(EIO);
			if (rc == 0)
				rc = 1;
			else if (err == EAGAIN)
				rc = 0;
			else
				rc = -1;
		}
		Py_END_ALLOW_THREADS
		HANDLE_BUSY_EXIT(h);
		if (rc > 0)
			break;
		if (rc < 0 && err == EINTR) {
			if (PyErr_CheckSignals() < 0)
				return -1;
			continue;
		}
		if (rc < 0) {
			verbs_error(err,
				    p.revents ? "rdma_get_cm_event" : "poll");
			return -1;
		}
		if (nowait)
			return 1;
		if (timeout_ms >= 0 && cm_now_ms() >= deadline) {
			PyErr_Format(PyExc_TimeoutError, CM_TIMEOUT_FMT,
				     timeout_ms, what);
			return -1;
		}
	}
	memset(ev, 0, sizeof(*ev));
	ev->event = e->event;
	ev->status = e->status;
	if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		ev->new_id = e->id;
	if (e->param.conn.private_data != NULL &&
	    e->param.conn.private_data_len > 0 &&
	    e->event != RDMA_CM_EVENT_MULTICAST_JOIN &&
	    e->event != RDMA_CM_EVENT_MULTICAST_ERROR) {
		ev->pdata_len = e->param.conn.private_data_len;
		memcpy(ev->pdata, e->param.conn.private_data,
		       (size_t)ev->pdata_len);
	}
	CM.ack_cm_event(e);
	return 0;
}

static const char *event_name(int event)
{
	const char *s = CM.event_str((enum rdma_cm_event_type)event);

	return s ? s : "?";
}

/* Raise VerbsError(err, text, op) with the event's .event, .status and
 * .private_data attached.  Returns NULL. */
PyObject *cm_event_error(int err, const char *op, const cm_event_copy *ev,
			 const char *fmt, ...)
{
	PyObject *detail, *attrs, *v;
	va_list ap;

	va_start(ap, fmt);
	detail = PyUnicode_FromFormatV(fmt, ap);
	va_end(ap);
	if (detail == NULL)
		return NULL;
	attrs = PyDict_New();
	if (attrs == NULL)
		goto out;
	v = enum_from_int("CMEventType", ev->event);
	if (v == NULL || PyDict_SetItemString(attrs, "event", v) < 0)
		goto fail;
	Py_DECREF(v);
	v = PyLong_FromLong(ev->status);
	if (v == NULL || PyDict_SetItemString(attrs, "status", v) < 0)
		goto fail;
	Py_DECREF(v);
	v = PyBytes_FromStringAndSize((const char *)ev->pdata, ev->pdata_len);
	if (v == NULL || PyDict_SetItemString(attrs, "private_data", v) < 0)
		goto fail;
	Py_DECREF(v);
	verbs_error_with(err, op, attrs, "%U (%s, status %d)", detail,
			 event_name(ev->event), ev->status);
	Py_DECREF(attrs);
out:
	Py_DECREF(detail);
	return NULL;
fail:
	Py_XDECREF(v);
	Py_DECREF(attrs);
	Py_DECREF(detail);
	return NULL;
}

/* Wait for "want" after an asynchronous call named op; the error events
 * become VerbsError(op).  With CM_NOWAIT: 1 once no event is ready. */
int cm_expect(Handle *h, struct rdma_event_channel *ch, long ms, int want,
	      const char *op, const char *what, cm_event_copy *ev)
{
	for (;;) {
		int rc = cm_next_event(h, ch, ms, what, ev);

		if (rc != 0)
			return rc;
		if (ev->event == want)
			return 0;
		if (ev->event == RDMA_CM_EVENT_ADDR_CHANGE ||
		    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			continue;
		if (ev->event == RDMA_CM_EVENT_REJECTED) {
			cm_event_error(ECONNREFUSED, op, ev,
				       "rejected by the "
				       "peer while %s",
				       what);
		} else {
			/* A status of -4095..-1 is a negative errno (the
			 * kernel's range); any other, INT_MIN included, is
			 * none: the event says what went wrong. */
			int err = ev->status < 0 && ev->status > -4096 ?
					  -ev->status :
				  ev->event == RDMA_CM_EVENT_UNREACHABLE ?
					  EHOSTUNREACH :
				  ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ?
					  ENODEV :
					  ECONNABORTED;

			cm_event_error(err, op, ev, "while %s", what);
		}
		return -1;
	}
}

/* ------------------------------------------------------------------ */
/* CMEvent                                                             */
/* ------------------------------------------------------------------ */

PyObject *cm_event_new(const cm_event_copy *ev, PyObject *cmid)
{
	CMEventObject *e;
	PyTypeObject *tp = ST.CMEvent_type;

	e = (CMEventObject *)PyType_GenericAlloc(tp, 0);
	if (e == NULL) {
		Py_XDECREF(cmid);
		return NULL;
	}
	e->event = ev->event;
	e->status = ev->status;
	e->private_data = PyBytes_FromStringAndSize((const char *)ev->pdata,
						    ev->pdata_len);
	if (cmid == NULL) {
		Py_INCREF(Py_None);
		cmid = Py_None;
	}
	e->cmid = cmid;
	if (e->private_data == NULL) {
		Py_DECREF(e);
		return NULL;
	}
	return (PyObject *)e;
}

static int cmevent_traverse(PyObject *self, visitproc visit, void *arg)
{
	CMEventObject *e = (CMEventObject *)self;

	Py_VISIT((PyObject *)Py_TYPE(self));
	Py_VISIT(e->private_data);
	Py_VISIT(e->cmid);
	return 0;
}

static int cmevent_clear(PyObject *self)
{
	CMEventObject *e = (CMEventObject *)self;

	Py_CLEAR(e->private_data);
	Py_CLEAR(e->cmid);
	return 0;
}

static PyObject *cmevent_get_event(PyObject *self, void *closure)
{
	return enum_from_int("CMEventType", ((CMEventObject *)self)->event);
}

static PyObject *cmevent_get_status(PyObject *self, void *closure)
{
	return PyLong_FromLong(((CMEventObject *)self)->status);
}

static PyObject *cmevent_get_private_data(PyObject *self, void *closure)
{
	return obj_or_none(((CMEventObject *)self)->private_data);
}

static PyObject *cmevent_get_cmid(PyObject *self, void *closure)
{
	return obj_or_none(((CMEventObject *)self)->cmid);
}

static PyObject *cmevent_repr(PyObject *self)
{
	CMEventObject *e = (CMEventObject *)self;

	return PyUnicode_FromFormat("<ibverbs.CMEvent %s status=%d>",
				    event_name(e->event), e->status);
}

static PyGetSetDef cmevent_getset[] = {
	{ "event", cmevent_get_event, NULL,
	  "The event's type, a CMEventType (the value of enum "
	  "rdma_cm_event_type).",
	  NULL },
	{ "status", cmevent_get_status, NULL,
	  "The event's status: 0, a negative errno, or for REJECTED the "
	  "reject reason the transport gave.",
	  NULL },
	{ "private_data", cmevent_get_private_data, NULL,
	  "The private data the event carried (bytes; b'' when none).", NULL },
	{ "cmid", cmevent_get_cmid, NULL,
	  "For CONNECT_REQUEST, the new CMID of the request (on its own "
	  "event channel); None otherwise.",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot cmevent_slots[] = {
	{ Py_tp_doc,
	  "A connection manager event (struct rdma_cm_event), copied and\n"
	  "already acknowledged.\n"
	  "\n"
	  "Returned by ``get_event()`` and ``poll_event()`` of CMID and\n"
	  "CMListener, which read it with ``rdma_get_cm_event`` and\n"
	  "acknowledge it with ``rdma_ack_cm_event`` at once (man page\n"
	  "rdma_get_cm_event(3)).  Not built directly (TypeError)." },
	{ Py_tp_new, handle_no_new },
	{ Py_tp_dealloc, gc_tp_dealloc },
	{ Py_tp_traverse, cmevent_traverse },
	{ Py_tp_clear, cmevent_clear },
	{ Py_tp_repr, cmevent_repr },
	{ Py_tp_getset, cmevent_getset },
	{ 0, NULL }
};

PyType_Spec CMEvent_spec = { "ibverbs._ibverbs.CMEvent", sizeof(CMEventObject),
			     0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			     cmevent_slots };
