/*
 * cm.c - the RDMA connection manager (librdmacm): CMID, and the helpers
 * and handle plumbing that CMListener (cm_listener.c) shares.  Events and
 * CMEvent are in cm_event.c, the lazy loader of librdmacm in cm_loader.c,
 * the declarations they share in cm.h.
 *
 * Ownership:
 *   CMID (root handle) <-> its Context (child handle, parent = CMID): the
 *     device context librdmacm opened (cm_id->verbs), wrapped once; only
 *     closing the CMID releases it (context.c refuses its close()).  The
 *     two reference each other; the CMID's tp_clear breaks the cycle.
 *   QP from create_qp(): an ordinary QPObject (qp.c) of kind cm_qp_kind,
 *     holding a reference to the CMID; destroyed with rdma_destroy_qp.
 *   A CMID from get_request() is independent of its listener: it moves
 *     to its own event channel (rdma_migrate_id).
 */
#include "cm/cm.h"
#include "qp/qp.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Kinds and close                                                     */
/* ------------------------------------------------------------------ */

static int cm_context_destroy(Handle *h)
{
	/* librdmacm opened the device and closes it; nothing to do. */
	return 0;
}

static const HandleKind cm_context_kind = { "Context", "ibv_close_device",
					    cm_context_destroy, NULL };

static int cmid_destroy(Handle *h)
{
	CMIDObject *c = (CMIDObject *)h;
	struct rdma_cm_id *id = h->obj;
	int rc, err = 0;

	/* The kernel may wait for the CM here (a DREQ, a pending request):
	 * drop the GIL; busy keeps other threads off the handle. */
	HANDLE_BUSY_ENTER(h);
	Py_BEGIN_ALLOW_THREADS
	rc = CM.destroy_id(id);
	if (rc != 0)
		err = errno_or(EIO);
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(h);
	if (rc != 0)
		return err;
	CM.destroy_event_channel(c->ch);
	c->ch = NULL;
	return 0;
}

static void cmid_release(Handle *h)
{
	CMIDObject *c = (CMIDObject *)h;

	c->connected = 0;
	Py_CLEAR(c->context);
}

const HandleKind cmid_kind = { "CMID", "rdma_destroy_id", cmid_destroy,
			       cmid_release };

const HandleKind cm_listener_kind = { "CMListener", "rdma_destroy_id",
				      cmid_destroy, cmid_release };

/* QPs made by rdma_create_qp: librdmacm destroys them. */
static int cm_qp_destroy(Handle *h)
{
	QPObject *q = (QPObject *)h;

	qp_leave_groups(h);
	CM.destroy_qp(CMID_ID(q->cmid));
	return 0;
}

static void cm_qp_release(Handle *h)
{
	QPObject *q = (QPObject *)h;

	qp_release(h);
	if (q->cmid != NULL && CMO(q->cmid)->qp == q)
		CMO(q->cmid)->qp = NULL;
	Py_CLEAR(q->cmid);
}

static const HandleKind cm_qp_kind = { "QP", "rdma_destroy_qp", cm_qp_destroy,
				       cm_qp_release };

/* close(): the QP first, then the Context (EBUSY while PDs, CQs, ... of
 * it are open), then the id and its channel. */
static int cmid_close(CMIDObject *c)
{
	if (HANDLE_IS_CLOSED(c))
		return 0;
	if (HANDLE_IS_BUSY(c))
		return handle_close(HANDLE(c)); /* raises EBUSY */
	if (c->qp != NULL) {
		verbs_error_fmt(EBUSY, "rdma_destroy_id",
				"%s still has its QP open (qp_num %u); close "
				"the QP first",
				HANDLE(c)->kind->name,
				((struct ibv_qp *)HANDLE(c->qp)->obj)->qp_num);
		return -1;
	}
	if (c->context != NULL && handle_close(HANDLE(c->context)) < 0)
		return -1;
	return handle_close(HANDLE(c));
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* A str argument as UTF-8: non-empty, without NUL.  New bytes, or NULL
 * with ValueError naming it (a value that is not a str too). */
PyObject *cm_text_arg(PyObject *o, const char *name)
{
	PyObject *b;
	const char *s;
	Py_ssize_t n;

	if (!PyUnicode_Check(o)) {
		PyErr_Format(PyExc_ValueError,
			     "%s must be a non-empty str, not %R", name,
			     (PyObject *)Py_TYPE(o));
		return NULL;
	}
	b = PyUnicode_AsUTF8String(o);
	if (b == NULL)
		return NULL;
	s = PyBytes_AsString(b);
	n = PyBytes_Size(b);
	if (n == 0 || memchr(s, '\0', (size_t)n) != NULL) {
		Py_DECREF(b);
		PyErr_Format(PyExc_ValueError,
			     "%s must be a non-empty str "
			     "without NUL characters, not %R",
			     name, o);
		return NULL;
	}
	return b;
}

/* rdma_getaddrinfo returns -1 with errno, or a getaddrinfo (EAI_*) code
 * with errno untouched: never report the latter as an errno. */
static PyObject *cm_addrinfo_error(int rc, const char *what, const char *node,
				   const char *service)
{
	int err;

	if (rc == -1 || rc == EAI_SYSTEM)
		return verbs_error_fmt(errno_or(EINVAL), "rdma_getaddrinfo",
				       "cannot resolve %s %s%s%s", what, node,
				       service ? " port " : "",
				       service ? service : "");
	switch (rc) {
	case EAI_AGAIN:
		err = EAGAIN;
		break;
	case EAI_MEMORY:
		err = ENOMEM;
		break;
	case EAI_SERVICE:
	case EAI_FAMILY:
	case EAI_SOCKTYPE:
		err = EINVAL;
		break;
	default:
		err = EHOSTUNREACH;
		break; /* EAI_NONAME, EAI_FAIL, ... */
	}
	return verbs_error_fmt(
		err, "rdma_getaddrinfo",
		"cannot resolve %s %s: %s (getaddrinfo error %d)", what, node,
		gai_strerror(rc), rc);
}

int cm_getaddrinfo(PyObject *node, const char *what, const char *service,
		   int passive, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo hints;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = passive ? RAI_PASSIVE : 0;
	hints.ai_port_space = RDMA_PS_TCP;
	hints.ai_qp_type = IBV_QPT_RC;
	errno = 0;
	rc = CM.getaddrinfo(PyBytes_AsString(node), service, &hints, res);
	if (rc != 0) {
		cm_addrinfo_error(rc, what, PyBytes_AsString(node), service);
		return -1;
	}
	return 0;
}

/* "198.18.0.1" for an IPv4/IPv6 sockaddr, None otherwise; *port too. */
PyObject *cm_addr_str(const struct sockaddr *sa, int *port)
{
	char buf[INET6_ADDRSTRLEN];
	const void *a;

	*port = 0;
	if (sa->sa_family == AF_INET) {
		a = &((const struct sockaddr_in *)sa)->sin_addr;
		*port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		*port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	} else {
		Py_RETURN_NONE;
	}
	/* Cannot fail: a known family, a buffer for the longest. */
	inet_ntop(sa->sa_family, a, buf, sizeof(buf));
	return PyUnicode_FromString(buf);
}

/* The Context of the device librdmacm bound id to, as a child of c. */
static int cm_wrap_context(CMIDObject *c)
{
	struct rdma_cm_id *id = CMID_ID(c);
	ContextObject *ctx;

	if (id->verbs == NULL)
		return 0;
	ctx = HANDLE_ALLOC(ContextObject, ST.Context_type);
	if (ctx == NULL)
		return -1;
	handle_init(HANDLE(ctx), &cm_context_kind, HANDLE(c));
	HANDLE_SET_OBJ(ctx, id->verbs);
	ctx->name =
		PyUnicode_FromString(IBV.get_device_name(id->verbs->device));
	c->context = (PyObject *)ctx;
	return ctx->name == NULL ? -1 : 0;
}

/* *slot = v (a new reference), dropping the old value. */
void cm_set_ref(PyObject **slot, PyObject *v)
{
	PyObject *old = *slot;

	*slot = v;
	Py_XDECREF(old);
}

int cm_create_id(struct rdma_event_channel **ch, struct rdma_cm_id **id)
{
	*ch = CM.create_event_channel();
	if (*ch == NULL) {
		verbs_error_errno("rdma_create_event_channel");
		return -1;
	}
	if (CM.create_id(*ch, id, NULL, RDMA_PS_TCP) != 0) {
		*id = NULL;
		verbs_error_errno("rdma_create_id");
		return -1;
	}
	return 0;
}

void cm_discard(struct rdma_cm_id *id, struct rdma_event_channel *ch)
{
	if (id != NULL)
		CM.destroy_id(id);
	if (ch != NULL)
		CM.destroy_event_channel(ch);
}

/* A new CMID/CMListener owning id and ch (the caller destroys them on
 * failure only when *owned stays 0). */
PyObject *cmid_wrap(PyTypeObject *tp, const HandleKind *kind,
		    struct rdma_cm_id *id, struct rdma_event_channel *ch,
		    int *owned)
{
	CMIDObject *c = HANDLE_ALLOC(CMIDObject, tp);

	*owned = 0;
	if (c == NULL)
		return NULL;
	handle_init(HANDLE(c), kind, NULL);
	HANDLE_SET_OBJ(c, id);
	c->ch = ch;
	*owned = 1;
	Py_INCREF(Py_None);
	c->host = Py_None;
	Py_INCREF(Py_None);
	c->source = Py_None;
	if (kind == &cmid_kind && cm_wrap_context(c) < 0) {
		Py_DECREF(c);
		return NULL;
	}
	return (PyObject *)c;
}

/* ------------------------------------------------------------------ */
/* CMID.resolve                                                        */
/* ------------------------------------------------------------------ */

struct resolve_args {
	PyObject *host, *source;
	int port, timeout_ms;
};
static const ArgSpec resolve_params[] = {
	ARG_TEXT(struct resolve_args, host),
	ARG_INT(struct resolve_args, port, 1, 65535, .flags = ARG_OPT,
		.def = 4420),
	/* Any object: a source that is not a str is a bad value (ValueError),
	 * as the published package has it (cm_text_arg). */
	ARG_OBJECT(struct resolve_args, source, .flags = ARG_OPT | ARG_NONE),
	ARG_INT(struct resolve_args, timeout_ms, 1, INT_MAX, .flags = ARG_KWOPT,
		.def = 2000),
	ARG_END
};
METHOD_ARGS(cmid_resolve, "CMID.resolve", resolve_params);

/* A class method: cls is CMID. */
static PyObject *cmid_resolve(PyObject *cls, PyObject *args, PyObject *kw)
{
	struct resolve_args a;
	PyObject *host_b = NULL, *src_b = NULL, *res = NULL;
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	struct rdma_addrinfo *dst = NULL, *src = NULL;
	cm_event_copy ev;
	char service[8];
	int owned = 0;

	/* Every argument is checked before librdmacm is loaded. */
	if (args_parse(&cmid_resolve_args, NULL, args, kw, &a) < 0)
		return NULL;
	host_b = cm_text_arg(a.host, "host");
	if (host_b == NULL)
		goto out;
	if (a.source != NULL &&
	    (src_b = cm_text_arg(a.source, "source")) == NULL)
		goto out;
	if (cm_load() < 0)
		goto out;

	snprintf(service, sizeof(service), "%d", a.port);
	if (cm_getaddrinfo(host_b, "host", service, 0, &dst) < 0 ||
	    (src_b != NULL &&
	     cm_getaddrinfo(src_b, "source", NULL, 1, &src) < 0))
		goto out;
	if (cm_create_id(&ch, &id) < 0)
		goto out;
	if (CM.resolve_addr(id, src ? src->ai_src_addr : NULL, dst->ai_dst_addr,
			    a.timeout_ms) != 0) {
		verbs_error_fmt(errno_or(EINVAL), "rdma_resolve_addr",
				"%s port %s", PyBytes_AsString(host_b),
				service);
		goto out;
	}
	/* The CM reports ADDR_ERROR after timeout_ms; wait a little longer. */
	if (cm_expect(NULL, ch, a.timeout_ms + 1000L,
		      RDMA_CM_EVENT_ADDR_RESOLVED, "rdma_resolve_addr",
		      "resolving the address", &ev) < 0)
		goto out;
	if (CM.resolve_route(id, a.timeout_ms) != 0) {
		verbs_error_errno("rdma_resolve_route");
		goto out;
	}
	if (cm_expect(NULL, ch, a.timeout_ms + 1000L,
		      RDMA_CM_EVENT_ROUTE_RESOLVED, "rdma_resolve_route",
		      "resolving the route", &ev) < 0)
		goto out;

	res = cmid_wrap((PyTypeObject *)cls, &cmid_kind, id, ch, &owned);
	if (res == NULL)
		goto out;
	Py_INCREF(a.host);
	cm_set_ref(&CMO(res)->host, a.host);
	if (a.source != NULL) {
		Py_INCREF(a.source);
		cm_set_ref(&CMO(res)->source, a.source);
	}
	CMO(res)->port = a.port;
out:
	if (!owned)
		cm_discard(id, ch);
	if (dst != NULL)
		CM.freeaddrinfo(dst);
	if (src != NULL)
		CM.freeaddrinfo(src);
	Py_XDECREF(host_b);
	Py_XDECREF(src_b);
	return res;
}

/* ------------------------------------------------------------------ */
/* CMID methods                                                        */
/* ------------------------------------------------------------------ */

static struct ibv_qp *cm_create_qp_fn(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *init, void *arg)
{
	struct rdma_cm_id *id = arg;

	if (init->qp_type != IBV_QPT_RC) {
		PyErr_Format(PyExc_ValueError,
			     "CMID.create_qp: the connection "
			     "manager connects RC QPs only, not qp_type %d",
			     (int)init->qp_type);
		return NULL;
	}
	if (init->srq != NULL)
		init->cap.max_recv_wr = 0;
	if (CM.create_qp(id, pd, init) != 0)
		return NULL;
	return id->qp;
}

#define CREATE_QP_ARGS(X, S)                               \
	X(S, HANDLE, PyObject *, pd, PD, ARG_SAME_CONTEXT) \
	X(S, RECORD, PyObject *, init_attr, QPInitAttr)
ARGS_DECLARE(create_qp, CREATE_QP_ARGS);
METHOD_ARGS(cmid_create_qp, "CMID.create_qp", create_qp_params);

/* The PD must be of the CMID's Context: the Context of a CMID is its
 * child, so the parser's same-Context check (the root of both) says so. */
static PyObject *cmid_create_qp(PyObject *self, PyObject *args, PyObject *kw)
{
	CMIDObject *c = CMO(self);
	struct create_qp_args a;
	PyObject *q;

	HANDLE_CHECK(self);
	if (args_parse(&cmid_create_qp_args, self, args, kw, &a) < 0)
		return NULL;
	if (c->qp != NULL)
		return verbs_error_fmt(
			EBUSY, "rdma_create_qp",
			"this CMID "
			"already has QP %u; a CMID has one QP",
			((struct ibv_qp *)HANDLE(c->qp)->obj)->qp_num);
	q = qp_create((PDObject *)a.pd, a.init_attr, &cm_qp_kind,
		      "rdma_create_qp", cm_create_qp_fn, CMID_ID(self),
		      ST.QP_type, 0);
	if (q == NULL)
		return NULL;
	Py_INCREF(self);
	((QPObject *)q)->cmid = self;
	c->qp = (QPObject *)q;
	return q;
}

/* ------------------------------------------------------------------ */
/* ------------------------------------------------------------------ */
/* Requests and events                                                 */
/* ------------------------------------------------------------------ */

/* The CMID of a CONNECT_REQUEST, moved to its own channel. */
PyObject *cm_request_cmid(const cm_event_copy *ev)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = ev->new_id;
	PyObject *c;
	int owned = 0, port;

	ch = CM.create_event_channel();
	if (ch == NULL) {
		verbs_error_errno("rdma_create_event_channel");
		CM.reject(id, NULL, 0);
		CM.destroy_id(id);
		return NULL;
	}
	if (CM.migrate_id(id, ch) != 0) {
		verbs_error_errno("rdma_migrate_id");
		CM.reject(id, NULL, 0);
		CM.destroy_id(id);
		CM.destroy_event_channel(ch);
		return NULL;
	}
	c = cmid_wrap(ST.CMID_type, &cmid_kind, id, ch, &owned);
	if (c == NULL) {
		if (!owned) {
			CM.reject(id, NULL, 0);
			CM.destroy_id(id);
			CM.destroy_event_channel(ch);
		}
		return NULL;
	}
	CMO(c)->passive = 1;
	cm_set_ref(&CMO(c)->host, cm_addr_str(rdma_get_peer_addr(id), &port));
	CMO(c)->port = port;
	cm_set_ref(&CMO(c)->source,
		   cm_addr_str(rdma_get_local_addr(id), &port));
	CMO(c)->private_data = PyBytes_FromStringAndSize(
		(const char *)ev->pdata, ev->pdata_len);
	if (CMO(c)->host == NULL || CMO(c)->source == NULL ||
	    CMO(c)->private_data == NULL) {
		Py_DECREF(c);
		return NULL;
	}
	return c;
}

/* Book-keeping of an event on a CMID: a peer's DISCONNECTED ends the
 * connection here too (rdma_disconnect moves the QP to ERR, so its
 * outstanding WRs flush, and answers the peer). */
static void cmid_saw_event(CMIDObject *c, const cm_event_copy *ev)
{
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
		c->connected = 1;
	} else if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
		if (c->connected)
			CM.disconnect(CMID_ID(c));
		c->connected = 0;
	}
	/* What ends a connect/accept under way, as cm_expect judges it. */
	if (ev->event != RDMA_CM_EVENT_ADDR_CHANGE &&
	    ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT)
		c->pending = CM_PENDING_NONE;
}

/* The next event of self (a CMID or a CMListener) as a CMEvent; with
 * CM_NOWAIT, None when none is ready. */
static PyObject *cm_take_event(PyObject *self, long ms)
{
	PyObject *cmid = NULL;
	cm_event_copy ev;
	int rc, is_listener = HANDLE(self)->kind == &cm_listener_kind;

	rc = cm_next_event(HANDLE(self), CMO(self)->ch, ms,
			   "waiting for an event", &ev);
	if (rc < 0)
		return NULL;
	if (rc > 0)
		Py_RETURN_NONE;
	if (ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		cmid = cm_request_cmid(&ev);
		if (cmid == NULL)
			return NULL;
	} else if (!is_listener) {
		cmid_saw_event(CMO(self), &ev);
	}
	return cm_event_new(&ev, cmid);
}

METHOD_ARGS(cmid_get_event, "CMID.get_event", cm_timeout_params);
METHOD_ARGS(listener_get_event, "CMListener.get_event", cm_timeout_params);

/* CMID.get_event and CMListener.get_event. */
PyObject *cmid_get_event(PyObject *self, PyObject *args, PyObject *kw)
{
	long ms;

	HANDLE_CHECK(self);
	if (cm_timeout_only(HANDLE(self)->kind == &cm_listener_kind ?
				    &listener_get_event_args :
				    &cmid_get_event_args,
			    self, args, kw, &ms) < 0)
		return NULL;
	return cm_take_event(self, ms);
}

PyObject *cmid_poll_event(PyObject *self, PyObject *unused)
{
	HANDLE_CHECK(self);
	return cm_take_event(self, CM_NOWAIT);
}

/* ------------------------------------------------------------------ */
/* Common handle plumbing                                              */
/* ------------------------------------------------------------------ */

int cmid_traverse(PyObject *self, visitproc visit, void *arg)
{
	CMIDObject *c = CMO(self);

	Py_VISIT(c->context);
	Py_VISIT(c->host);
	Py_VISIT(c->source);
	Py_VISIT(c->private_data);
	return handle_traverse(HANDLE(self), visit, arg);
}

/* The CMID and its Context reference each other: when both are garbage,
 * close (which drops the Context) and otherwise let the Context go. */
int cmid_clear(PyObject *self)
{
	CMIDObject *c = CMO(self);
	PyObject *t, *v, *tb;

	if (HANDLE(c)->obj != NULL && c->qp == NULL) {
		PyErr_Fetch(&t, &v, &tb);
		if (cmid_close(c) < 0)
			PyErr_WriteUnraisable((PyObject *)Py_TYPE(self));
		PyErr_Restore(t, v, tb);
	}
	if (HANDLE(c)->obj == NULL)
		Py_CLEAR(c->context);
	return 0;
}

void cmid_dealloc(PyObject *self)
{
	CMIDObject *c = CMO(self);
	PyObject *t, *v, *tb;

	PyObject_GC_UnTrack(self);
	if (HANDLE(c)->obj != NULL) {
		PyErr_Fetch(&t, &v, &tb);
		if (cmid_close(c) < 0)
			PyErr_WriteUnraisable((PyObject *)Py_TYPE(self));
		PyErr_Restore(t, v, tb);
	}
	Py_CLEAR(c->context);
	Py_CLEAR(c->host);
	Py_CLEAR(c->source);
	Py_CLEAR(c->private_data);
	handle_dealloc(HANDLE(self));
}

PyObject *cmid_meth_close(PyObject *self, PyObject *unused)
{
	if (cmid_close(CMO(self)) < 0)
		return NULL;
	Py_RETURN_NONE;
}

PyObject *cmid_meth_exit(PyObject *self, PyObject *args)
{
	if (cmid_close(CMO(self)) < 0)
		return NULL;
	Py_RETURN_FALSE;
}

PyObject *cmid_get_fd(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromLong(CMO(self)->ch->fd);
}

static PyObject *cmid_get_context(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	if (CMO(self)->context == NULL)
		Py_RETURN_NONE;
	Py_INCREF(CMO(self)->context);
	return CMO(self)->context;
}

PyObject *cmid_get_host(PyObject *self, void *closure)
{
	return obj_or_none(CMO(self)->host);
}

static PyObject *cmid_get_source(PyObject *self, void *closure)
{
	return obj_or_none(CMO(self)->source);
}

static PyObject *cmid_get_private_data(PyObject *self, void *closure)
{
	return obj_or_none(CMO(self)->private_data);
}

static PyObject *cmid_get_qp(PyObject *self, void *closure)
{
	return obj_or_none((PyObject *)CMO(self)->qp);
}

PyObject *cmid_get_port(PyObject *self, void *closure)
{
	return PyLong_FromLong(CMO(self)->port);
}

static PyObject *cmid_get_connected(PyObject *self, void *closure)
{
	return PyBool_FromLong(HANDLE(self)->obj != NULL &&
			       CMO(self)->connected);
}

static PyObject *cmid_repr(PyObject *self)
{
	CMIDObject *c = CMO(self);
	const char *state;

	if (HANDLE(c)->obj == NULL)
		state = "closed";
	else if (c->connected)
		state = "connected";
	else if (c->pending)
		state = c->passive ? "accepting" : "connecting";
	else if (c->passive)
		state = c->answered ? "answered" : "request";
	else
		state = "resolved";
	return PyUnicode_FromFormat("<ibverbs.%s host=%R port=%d %s>",
				    HANDLE(c)->kind->name, c->host, c->port,
				    state);
}

static PyMethodDef cmid_methods[] = {
	{ "resolve", KW cmid_resolve, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
	  "Resolve the address and route to a peer for an RC connection.\n"
	  "\n"
	  "Makes an event channel and an id in the TCP port space, resolves\n"
	  "the address, then the route, waiting for each event.  The new\n"
	  "CMID's ``context`` is the device librdmacm chose.  librdmacm is\n"
	  "loaded on the first call.\n"
	  "\n"
	  "Wraps ``rdma_getaddrinfo``, ``rdma_create_id``,\n"
	  "``rdma_resolve_addr`` and ``rdma_resolve_route`` (man pages\n"
	  "rdma_getaddrinfo(3), rdma_create_id(3), rdma_resolve_addr(3),\n"
	  "rdma_resolve_route(3)).\n"
	  "\n"
	  "Args:\n"
	  "    host: the peer's name or address (a non-empty str).\n"
	  "    port: the peer's port, 1..65535.\n"
	  "    source: the local address to bind, or None for any.\n"
	  "    timeout_ms: the limit of each of the two steps, in ms.\n"
	  "\n"
	  "Returns:\n"
	  "    The resolved CMID, ready for ``create_qp``.\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: a verb failed or an error event came\n"
	  "        (``errno``, e.g. EHOSTUNREACH for a name that does not\n"
	  "        resolve).\n"
	  "    TimeoutError: no event within the timeout.\n"
	  "    TypeError: host is not a str.\n"
	  "    ValueError: port or timeout_ms out of range, host empty, or\n"
	  "        source not a non-empty str.\n"
	  "    ImportError: librdmacm cannot be loaded." },
	{ "create_qp", KW cmid_create_qp, METH_VARARGS | METH_KEYWORDS,
	  "Create the CMID's RC QP; connect() and accept() move it through\n"
	  "its states.  One QP per CMID; close it before the CMID.\n"
	  "\n"
	  "Wraps ``rdma_create_qp`` (man page rdma_create_qp(3)).\n"
	  "\n"
	  "Args:\n"
	  "    pd: a PD of this CMID's ``context``.\n"
	  "    init_attr: a QPInitAttr with ``qp_type`` RC.\n"
	  "\n"
	  "Returns:\n"
	  "    The new QP (also ``self.qp``).\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: the verb failed; EBUSY when the CMID has a QP,\n"
	  "        EBADF when the CMID or the PD is closed.\n"
	  "    TypeError: pd is not a PD.\n"
	  "    ValueError: the PD belongs to another Context, or the QP\n"
	  "        type is not RC." },
	METHOD_KW("connect", cmid_connect),
	METHOD_KW("accept", cmid_accept),
	METHOD_KW("reject", cmid_reject),
	METHOD_KW("start_connect", cmid_start_connect),
	METHOD_KW("start_accept", cmid_start_accept),
	METHOD_NOARGS("poll_established", cmid_poll_established),
	{ "poll_event", cmid_poll_event, METH_NOARGS,
	  "Take the next event of this CMID if one is ready, never waiting.\n"
	  "An ESTABLISHED or DISCONNECTED event updates ``connected`` (a\n"
	  "peer's disconnect is answered with ``rdma_disconnect``).\n"
	  "\n" CM_WRAPS_GET_EVENT "\n"
	  "Returns:\n"
	  "    The event, already acknowledged, or None when none is ready.\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: reading the event channel failed (EBADF when\n"
	  "        closed)." },
	METHOD_NOARGS("disconnect", cmid_disconnect),
	{ "get_event", KW cmid_get_event, METH_VARARGS | METH_KEYWORDS,
	  "Wait for the next event of this CMID (the GIL released), as\n"
	  "poll_event() takes it.\n"
	  "\n" CM_WRAPS_GET_EVENT "\n"
	  "Args:\n" CM_ARG_TIMEOUT "\n"
	  "Returns:\n"
	  "    The event, already acknowledged.\n"
	  "\n"
	  "Raises:\n"
	  "    TimeoutError: no event within the timeout.\n"
	  "    VerbsError: reading the event channel failed (EBADF when\n"
	  "        closed).\n"
	  "    ValueError: timeout is negative." },
	{ "close", cmid_meth_close, METH_NOARGS,
	  "Destroy the id, its event channel and the Context librdmacm\n"
	  "opened for it.  Idempotent; the CMID stays usable after a\n"
	  "refusal.\n"
	  "\n"
	  "Wraps ``rdma_destroy_id`` (man page rdma_destroy_id(3)).\n"
	  "\n"
	  "Raises:\n"
	  "    VerbsError: EBUSY while its QP, or PDs, CQs, ... of its\n"
	  "        Context, are open, or another thread waits on it." },
	CMID_CONTEXT_METHODS_END
};

static PyGetSetDef cmid_getset[] = {
	{ "fd", cmid_get_fd, NULL,
	  "The event channel's file descriptor: readable when an event is "
	  "ready (VerbsError(EBADF) once closed).",
	  NULL },
	{ "context", cmid_get_context, NULL,
	  "The Context of the device librdmacm bound the id to; owned by "
	  "the CMID and closed with it.",
	  NULL },
	{ "host", cmid_get_host, NULL,
	  "The host given to resolve(), or the peer's address for a CMID "
	  "from a listener.",
	  NULL },
	{ "port", cmid_get_port, NULL,
	  "The port given to resolve(), or the peer's port for a CMID from "
	  "a listener.",
	  NULL },
	{ "source", cmid_get_source, NULL,
	  "The local address: resolve()'s source (None when not given), or "
	  "the address a request came in on.",
	  NULL },
	{ "private_data", cmid_get_private_data, NULL,
	  "The private data of the connection request (bytes) for a CMID "
	  "from a listener; None otherwise.",
	  NULL },
	{ "qp", cmid_get_qp, NULL, "The QP made by create_qp(), or None.",
	  NULL },
	{ "connected", cmid_get_connected, NULL,
	  "True from ESTABLISHED until a disconnect or close.", NULL },
	HANDLE_GETSETS_END
};

static PyType_Slot cmid_slots[] = {
	{ Py_tp_doc,
	  "An RDMA connection manager id (struct rdma_cm_id) for one RC\n"
	  "connection.\n"
	  "\n"
	  "Not built directly: ``CMID.resolve()`` makes the active side,\n"
	  "``CMListener.get_request()`` the passive one.  Each has its own\n"
	  "event channel (``fd``).  Close order: the QP, then the CMID\n"
	  "(which closes its Context); a context manager closes it.\n"
	  "\n"
	  "Raises:\n"
	  "    TypeError: on ``CMID()``." },
	{ Py_tp_new, handle_no_new },
	{ Py_tp_dealloc, cmid_dealloc },
	{ Py_tp_traverse, cmid_traverse },
	{ Py_tp_clear, cmid_clear },
	{ Py_tp_repr, cmid_repr },
	{ Py_tp_methods, cmid_methods },
	{ Py_tp_getset, cmid_getset },
	{ 0, NULL }
};

PyType_Spec CMID_spec = { "ibverbs._ibverbs.CMID", sizeof(CMIDObject), 0,
			  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, cmid_slots };
