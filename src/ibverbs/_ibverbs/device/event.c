/*
 * event.c - AsyncEvent: one asynchronous event of a device
 * (ibv_get_async_event / ibv_ack_async_event).
 *
 * ibv_destroy_qp/cq/srq wait until every async event delivered for the
 * object has been acked.  So an unacked event "uses" its element's
 * handle: element.close() then raises EBUSY instead of hanging the
 * process.  ack() (idempotent) or the event's deallocation releases it.
 * The wait happens with the GIL released (Context marked busy); the read
 * itself happens with the GIL held, see channel.c for why.
 */
#include "ibverbs.h"
#include "device/device.h"
#include <string.h>

typedef struct {
	PyObject_HEAD
	struct ibv_async_event ev;
	PyObject *context; /* ContextObject */
	PyObject *element; /* QP/CQ/SRQ, port number, or None */
	const char *element_type; /* "qp", "cq", "srq", "wq", "port", "device" */
	Handle *used; /* element's handle while unacked */
	int acked;
} AsyncEventObject;

#define EV(self) ((AsyncEventObject *)(self))

/* What ev.element points at, as rdma-core's ibv_get_async_event fills it. */
static const char *element_type_of(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
		return "cq";
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return "qp";
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return "srq";
	case IBV_EVENT_WQ_FATAL:
		return "wq";
	case IBV_EVENT_DEVICE_FATAL:
		return "device";
	default:
		return "port";
	}
}

/* The verbs object the event is about, for qp/cq/srq/wq events. */
static void *element_ptr(const struct ibv_async_event *ev, const char *type)
{
	switch (type[0]) {
	case 'q':
		return ev->element.qp;
	case 'c':
		return ev->element.cq;
	case 's':
		return ev->element.srq;
	case 'w':
		return ev->element.wq;
	default:
		return NULL;
	}
}

/*
 * Find the Python object of the element among the open handles of the
 * context (not via qp_context & co: a handle found in the tree is known
 * to be alive) and mark it used.  A WQ, or an object we did not create,
 * has none: element is None.
 */
static int event_bind_element(AsyncEventObject *e)
{
	const char *t = e->element_type;
	Handle *h;

	if (strcmp(t, "port") == 0) {
		e->element = PyLong_FromLong(e->ev.element.port_num);
		return e->element == NULL ? -1 : 0;
	}
	h = handle_find(HANDLE(e->context), element_ptr(&e->ev, t));
	if (h != NULL) {
		handle_use(h);
		e->used = h;
		e->element = (PyObject *)h; /* handle_find's reference */
	} else {
		Py_INCREF(Py_None);
		e->element = Py_None;
	}
	return 0;
}

static void event_ack(AsyncEventObject *e)
{
#ifdef Py_GIL_DISABLED
	/* Two threads may ack one event at once: one of them acks (a second
	 * ibv_ack_async_event, or handle_unuse, would count twice). */
	if (__atomic_exchange_n(&e->acked, 1, __ATOMIC_ACQ_REL))
		return;
#else
	if (e->acked)
		return;
	e->acked = 1;
#endif
	/* A closed context has freed everything the event points into; a
	 * context cannot close while a qp/cq/srq event holds its element. */
	if (e->context != NULL && HANDLE(e->context)->obj != NULL)
		IBV.ack_async_event(&e->ev);
	if (e->used != NULL) {
		handle_unuse(e->used);
		e->used = NULL;
	}
}

METHOD_DOC(context_get_async_event,
	   "Wait for the device's next asynchronous event and return it.\n"
	   "\n"
	   "Waits with the GIL released (the Context refuses ``close()``\n"
	   "meanwhile; Ctrl-C interrupts it). When ``async_fd`` was made\n"
	   "non-blocking, it does not wait. Ack the event (``ack()``,\n"
	   "``with event:`` or ``ack_async_event()``): until then the QP,\n"
	   "CQ or SRQ it names refuses ``close()`` (EBUSY).\n"
	   "\n"
	   "Wraps ``ibv_get_async_event`` (man page\n"
	   "ibv_get_async_event(3)).\n"
	   "\n"
	   "Returns:\n"
	   "    The AsyncEvent (event_type, element, ...).\n"
	   "\n"
	   "Raises:\n"
	   "    KeyboardInterrupt: a signal handler raised during the wait.\n"
	   "    VerbsError: EAGAIN with a non-blocking fd and no event\n"
	   "        pending; EBADF once the Context is closed; else the\n"
	   "        verb failed (``errno``).");

PyObject *context_get_async_event(PyObject *self, PyObject *unused)
{
	ContextObject *ctx = (ContextObject *)self;
	struct ibv_context *c = HANDLE(ctx)->obj;
	AsyncEventObject *e;
	struct ibv_async_event ev;

	HANDLE_CHECK(self);
	if (!fd_is_nonblocking(c->async_fd) &&
	    fd_wait_readable(HANDLE(ctx), c->async_fd) < 0)
		return NULL;
	/* A signal handler run during the wait may have closed ctx. */
	if (handle_check(HANDLE(ctx)) < 0)
		return NULL;
	/* Allocated before the read: from the read on, the event must end
	 * up acked, which the object takes care of. */
	e = (AsyncEventObject *)PyType_GenericAlloc(ST.AsyncEvent_type, 0);
	if (e == NULL)
		return NULL;
	e->acked = 1; /* nothing to ack yet */
	Py_INCREF((PyObject *)ctx);
	e->context = (PyObject *)ctx;
	/* A GC pass in the allocation may have run finalizers (Python code)
	 * that closed the Context. */
	if (handle_check(HANDLE(ctx)) < 0) {
		Py_DECREF(e);
		return NULL;
	}
	c = HANDLE(ctx)->obj;
	errno = 0;
	if (IBV.get_async_event(c, &ev) != 0) {
		int err = errno_or(EIO);

		Py_DECREF(e);
		if (err == EAGAIN)
			return verbs_error_fmt(
				EAGAIN, "ibv_get_async_event",
				"no async event pending (async_fd "
				"is non-blocking)");
		return verbs_error(err, "ibv_get_async_event");
	}
	e->ev = ev;
	e->acked = 0;
	e->element_type = element_type_of(ev.event_type);
	if (event_bind_element(e) < 0) {
		Py_DECREF(e); /* acks */
		return NULL;
	}
	return (PyObject *)e;
}

/* Context.ack_async_event(ev): ev.ack() for an event of this context. */
PyObject *async_event_ack_for(ContextObject *ctx, PyObject *ev)
{
	if (!PyObject_TypeCheck(ev, ST.AsyncEvent_type)) {
		arg_type_error("event", "AsyncEvent", 0, ev);
		return NULL;
	}
	if (EV(ev)->context != (PyObject *)ctx) {
		arg_other_parent_error("event", "Context");
		return NULL;
	}
	event_ack(EV(ev));
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* Methods, attributes                                                 */
/* ------------------------------------------------------------------ */

static PyObject *event_meth_ack(PyObject *self, PyObject *unused)
{
	event_ack(EV(self));
	Py_RETURN_NONE;
}

static PyObject *event_enter(PyObject *self, PyObject *unused)
{
	Py_INCREF(self);
	return self;
}

static PyObject *event_exit(PyObject *self, PyObject *args)
{
	event_ack(EV(self));
	Py_RETURN_FALSE;
}

static PyObject *event_get_event_type(PyObject *self, void *closure)
{
	return PyLong_FromLong(EV(self)->ev.event_type);
}

static PyObject *event_get_event_type_str(PyObject *self, void *closure)
{
	return PyUnicode_FromString(
		IBV.event_type_str(EV(self)->ev.event_type));
}

static PyObject *event_get_element_type(PyObject *self, void *closure)
{
	return PyUnicode_FromString(EV(self)->element_type);
}

static PyObject *event_get_element(PyObject *self, void *closure)
{
	PyObject *o = EV(self)->element ? EV(self)->element : Py_None;

	Py_INCREF(o);
	return o;
}

static PyObject *event_get_context(PyObject *self, void *closure)
{
	PyObject *o = EV(self)->context ? EV(self)->context : Py_None;

	Py_INCREF(o);
	return o;
}

static PyObject *event_get_acked(PyObject *self, void *closure)
{
	return PyBool_FromLong(EV(self)->acked);
}

static PyObject *event_repr(PyObject *self)
{
	AsyncEventObject *e = EV(self);

	return PyUnicode_FromFormat("<ibverbs.AsyncEvent %s (%d) %s=%R%s>",
				    IBV.event_type_str(e->ev.event_type),
				    (int)e->ev.event_type, e->element_type,
				    e->element ? e->element : Py_None,
				    e->acked ? " acked" : "");
}

static int event_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT((PyObject *)Py_TYPE(self));
	Py_VISIT(EV(self)->context);
	Py_VISIT(EV(self)->element);
	return 0;
}

static int event_clear(PyObject *self)
{
	event_ack(EV(self));
	Py_CLEAR(EV(self)->element);
	Py_CLEAR(EV(self)->context);
	return 0;
}

static PyMethodDef event_methods[] = {
	{ "ack", event_meth_ack, METH_NOARGS,
	  "Acknowledge the event.  Until then the QP, CQ or SRQ it names\n"
	  "cannot be closed (its close() raises VerbsError(EBUSY)).\n"
	  "Idempotent; leaving a ``with`` block or dropping the event acks\n"
	  "it too.  Raises nothing.\n"
	  "\n"
	  "Wraps ``ibv_ack_async_event`` (man page ibv_get_async_event(3))." },
	{ "__enter__", event_enter, METH_NOARGS, NULL },
	{ "__exit__", event_exit, METH_VARARGS, "ack()" },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef event_getset[] = {
	{ "event_type", event_get_event_type, NULL,
	  "The event's type, an int value of EventType.", NULL },
	{ "event_type_str", event_get_event_type_str, NULL,
	  "The event type as text, from ibv_event_type_str(3).", NULL },
	{ "element_type", event_get_element_type, NULL,
	  "What the event is about: 'qp', 'cq', 'srq', 'wq', 'port' or "
	  "'device'.",
	  NULL },
	{ "element", event_get_element, NULL,
	  "The QP, CQ or SRQ object the event is about, the port number for "
	  "a port event, or None (a device event, a WQ, or an object not "
	  "made through this package).",
	  NULL },
	{ "context", event_get_context, NULL,
	  "The Context the event came from.", NULL },
	{ "acked", event_get_acked, NULL, "True once ack() ran.", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot event_slots[] = {
	{ Py_tp_doc,
	  "An asynchronous event of a device (struct ibv_async_event).\n"
	  "\n"
	  "Returned by ``Context.get_async_event()``, which reads it with\n"
	  "``ibv_get_async_event`` (man page ibv_get_async_event(3)).  Ack\n"
	  "it (``ack()``, a ``with`` block, or dropping it): until then its\n"
	  "element cannot be closed.  Not built directly (TypeError)." },
	{ Py_tp_new, handle_no_new },
	{ Py_tp_dealloc, gc_tp_dealloc },
	{ Py_tp_traverse, event_traverse },
	{ Py_tp_clear, event_clear },
	{ Py_tp_repr, event_repr },
	{ Py_tp_methods, event_methods },
	{ Py_tp_getset, event_getset },
	{ 0, NULL }
};

PyType_Spec AsyncEvent_spec = { "ibverbs._ibverbs.AsyncEvent",
				sizeof(AsyncEventObject), 0,
				Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
				event_slots };
