/*
 * channel.c - CompChannel: a completion event channel
 * (ibv_comp_channel).  The blocking wait on its fd is fd_wait_readable
 * (handle.c), shared with async events (event.c).
 *
 * Why wait with poll() and read under the GIL: ibv_destroy_cq/qp/srq
 * block until every event already *read* for the object has been acked.
 * If a thread read an event with the GIL released and another thread
 * destroyed the object before the first one counted the event, the
 * destroy would wait forever with the GIL held.  So the GIL-free part
 * only waits for readability; the event is read, matched to its Python
 * object and counted in one GIL-held step, where the read cannot block.
 */
#include "ibverbs.h"
#include "cq/cq.h"

/* ------------------------------------------------------------------ */
/* CompChannel                                                         */
/* ------------------------------------------------------------------ */

#define CHAN(self) ((struct ibv_comp_channel *)HANDLE(self)->obj)

HANDLE_KIND(channel_kind, "CompChannel", "ibv_destroy_comp_channel",
	    IBV.destroy_comp_channel, NULL);

METHOD_DOC(context_create_comp_channel,
	   "Create a completion event channel.\n"
	   "\n"
	   "Wraps ``ibv_create_comp_channel`` (man page\n"
	   "ibv_create_comp_channel(3)).\n"
	   "\n"
	   "Returns:\n"
	   "    The new CompChannel; give it to ``create_cq(channel=...)``.\n"
	   "\n"
	   "Raises:\n" DOC_RAISES_VERB_AS("Context", ", e.g. EMFILE"));

PyObject *context_create_comp_channel(PyObject *self, PyObject *unused)
{
	ContextObject *ctx = (ContextObject *)self;
	struct ibv_comp_channel *ch;
	CompChannelObject *o;

	HANDLE_CHECK(self);
	errno = 0;
	ch = IBV.create_comp_channel((struct ibv_context *)HANDLE(ctx)->obj);
	if (ch == NULL)
		return verbs_error_errno("ibv_create_comp_channel");
	o = (CompChannelObject *)handle_adopt(ST.CompChannel_type,
					      &channel_kind, HANDLE(ctx), ch);
	if (o == NULL)
		return NULL;
	return (PyObject *)o;
}

/* An event for a CQ that has no Python object any more: only possible
 * when a CQ's destroy failed in its dealloc and the ibv_cq was leaked
 * (destroying a CQ drops its unread events).  Ack it and say so. */
static PyObject *orphan_cq_event(struct ibv_cq *cq)
{
	IBV.ack_cq_events(cq, 1);
	return verbs_error_fmt(ESTALE, "ibv_get_cq_event",
			       "completion event for a CQ that was not "
			       "destroyed cleanly; event acked and dropped");
}

PyDoc_STRVAR(channel_get_cq_event__doc__,
	     "Wait for the next completion event and return its CQ.\n"
	     "\n"
	     "Waits with the GIL released (the channel refuses ``close()``\n"
	     "meanwhile; Ctrl-C interrupts it); with a non-blocking ``fd``\n"
	     "it does not wait. The event counts in the CQ's\n"
	     "``events_unacked``: ack it with ``cq.ack_events()``, and call\n"
	     "``cq.req_notify()`` again for the next one.\n"
	     "\n"
	     "Wraps ``ibv_get_cq_event`` (man page ibv_get_cq_event(3)).\n"
	     "\n"
	     "Returns:\n"
	     "    The CQ (or CQEx) the event is for.\n"
	     "\n"
	     "Raises:\n"
	     "    KeyboardInterrupt: a signal handler raised during the wait.\n"
	     "    VerbsError: EAGAIN with a non-blocking fd and no event;\n"
	     "        ESTALE for an event of a CQ whose destroy failed (the\n"
	     "        event is acked and dropped); EBADF once the channel is\n"
	     "        closed; else the verb failed (``errno``).");

static PyObject *channel_get_cq_event(PyObject *self, PyObject *unused)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	void *cq_ctx;
	Handle *found;

	HANDLE_CHECK(self);
	ch = CHAN(self);
	if (!fd_is_nonblocking(ch->fd) &&
	    fd_wait_readable(HANDLE(self), ch->fd) < 0)
		return NULL;
	/* Readable (or non-blocking): this read does not block. */
	if (IBV.get_cq_event(ch, &cq, &cq_ctx) != 0) {
		int err = errno_or(EIO);

		if (err == EAGAIN)
			return verbs_error_fmt(
				EAGAIN, "ibv_get_cq_event",
				"no completion event pending "
				"(the channel fd is non-blocking)");
		return verbs_error(err, "ibv_get_cq_event");
	}
	/* cq_context is our CQObject; trust it only once found among the
	 * open CQs of this context. */
	found = handle_find(HANDLE(self)->parent, cq);
	if (found == NULL || (void *)found != cq_ctx) {
		Py_XDECREF((PyObject *)found);
		return orphan_cq_event(cq);
	}
#ifdef Py_GIL_DISABLED
	/* close() of that CQ may run on another thread.  Pinned now (until
	 * this method returns), it waits for us and its destroy acks the
	 * event counted here.  Already closing: its ibv_destroy_cq waits for
	 * this event's ack, which nobody else can give; ack it and say the
	 * CQ is closed (EBADF, set by handle_check). */
	if (handle_check(found) < 0) {
		IBV.ack_cq_events(cq, 1);
		Py_DECREF((PyObject *)found);
		return NULL;
	}
	__atomic_fetch_add(&((CQObject *)found)->events_unacked, 1,
			   __ATOMIC_ACQ_REL);
#else
	((CQObject *)found)->events_unacked++;
#endif
	return (PyObject *)found; /* handle_find's reference */
}

static PyObject *channel_get_fd(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromLong(CHAN(self)->fd);
}

static PyObject *channel_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.CompChannel closed>");
	return PyUnicode_FromFormat("<ibverbs.CompChannel fd=%d>",
				    CHAN(self)->fd);
}

PyDoc_STRVAR(channel__doc__,
	     "A completion event channel (``struct ibv_comp_channel``).\n"
	     "\n"
	     "Made by ``Context.create_comp_channel()``; CQs created with it\n"
	     "(``create_cq(channel=...)``) report armed completions there,\n"
	     "which ``get_cq_event()`` waits for, or select/poll on ``fd``.\n"
	     "``close()`` wraps ``ibv_destroy_comp_channel`` (man page\n"
	     "ibv_create_comp_channel(3)) and refuses with EBUSY while a CQ\n"
	     "uses the channel.");

static PyMethodDef channel_methods[] = {
	METHOD_NOARGS("get_cq_event", channel_get_cq_event), HANDLE_METHODS_END
};

static PyGetSetDef channel_getset[] = {
	{ "fd", channel_get_fd, NULL,
	  "The channel's file descriptor, to select/poll on for\n"
	  "completion events (set O_NONBLOCK to make get_cq_event()\n"
	  "return at once); EBADF once closed.",
	  NULL },
	{ "context", handle_get_parent, NULL,
	  "The Context the channel was created on.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(CompChannel_spec, "CompChannel", CompChannelObject, 0,
		 channel__doc__, handle_tp_dealloc, handle_tp_traverse,
		 channel_repr, channel_methods, channel_getset);
