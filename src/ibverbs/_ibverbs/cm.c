/*
 * cm.c - the RDMA connection manager (librdmacm): CMID, CMListener and
 * CMEvent, and the lazy loader of librdmacm.so.1.
 *
 * Loading: librdmacm is dlopened on the first CM call, never at import,
 * so that `import ibverbs` works where it is absent; the module still
 * NEEDs only libc.  $IBVERBS_LIBRDMACM (test-only) names another file.
 *
 * Every CMID and CMListener owns an event channel (its .fd) and runs
 * librdmacm in asynchronous mode: each blocking step (address and route
 * resolution, connect, accept, get_request, get_event) waits on that fd
 * with poll(), the GIL released and the handle marked busy, so that a
 * timeout works and close() from another thread refuses.  An event is
 * copied and acknowledged at once: rdma_destroy_id() waits for every
 * event it handed out to be acked, so none may stay unacked.
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
#include "ibverbs.h"
#include <rdma/rdma_cma.h>
#include <arpa/inet.h>
#include <dlfcn.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* The lazy loader                                                     */
/* ------------------------------------------------------------------ */

#define RDMACM_SYMBOLS(X)                                                \
	X(create_event_channel, rdma_create_event_channel)               \
	X(destroy_event_channel, rdma_destroy_event_channel)             \
	X(create_id, rdma_create_id)                                     \
	X(destroy_id, rdma_destroy_id)                                   \
	X(bind_addr, rdma_bind_addr)                                     \
	X(resolve_addr, rdma_resolve_addr)                               \
	X(resolve_route, rdma_resolve_route)                             \
	X(create_qp, rdma_create_qp)                                     \
	X(destroy_qp, rdma_destroy_qp)                                   \
	X(connect, rdma_connect)                                         \
	X(listen, rdma_listen)                                           \
	X(accept, rdma_accept)                                           \
	X(reject, rdma_reject)                                           \
	X(disconnect, rdma_disconnect)                                   \
	X(get_cm_event, rdma_get_cm_event)                               \
	X(ack_cm_event, rdma_ack_cm_event)                               \
	X(event_str, rdma_event_str)                                     \
	X(migrate_id, rdma_migrate_id)                                   \
	X(getaddrinfo, rdma_getaddrinfo)                                 \
	X(freeaddrinfo, rdma_freeaddrinfo)

static struct {
#define CM_DECL(field, sym) __typeof__(sym) *field;
	RDMACM_SYMBOLS(CM_DECL)
#undef CM_DECL
	void *lib;
	char path[PATH_MAX];
} CM;

static const char CM_DEFAULT_LIB[] = "librdmacm.so.1";

/* Load librdmacm once.  0, or -1 with ImportError naming the library (or
 * the missing symbol) and the package that provides it. */
static int cm_load(void)
{
	const char *libname = getenv("IBVERBS_LIBRDMACM");
	Dl_info info;
	void *lib;

	if (CM.lib != NULL)
		return 0;
	if (libname == NULL || libname[0] == '\0')
		libname = CM_DEFAULT_LIB;
	lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *why = dlerror();

		PyErr_Format(PyExc_ImportError,
			     "the RDMA connection manager needs %s (rdma-core's "
			     "librdmacm; install librdmacm1 on Debian/Ubuntu or "
			     "librdmacm on RHEL/Fedora): %s", libname,
			     why ? why : "dlopen failed");
		return -1;
	}
#define CM_LOAD(field, sym)                                                 \
	*(void **)(&CM.field) = dlsym(lib, #sym);                           \
	if (CM.field == NULL) {                                             \
		PyErr_Format(PyExc_ImportError,                             \
			     "%s lacks the symbol %s (rdma-core too old or " \
			     "not librdmacm; install librdmacm1 on "        \
			     "Debian/Ubuntu or librdmacm on RHEL/Fedora)",  \
			     libname, #sym);                                \
		dlclose(lib);                                               \
		return -1;                                                  \
	}
	RDMACM_SYMBOLS(CM_LOAD)
#undef CM_LOAD
	snprintf(CM.path, sizeof(CM.path), "%s", libname);
	if (dladdr((void *)CM.create_id, &info) && info.dli_fname)
		snprintf(CM.path, sizeof(CM.path), "%s", info.dli_fname);
	CM.lib = lib;
	return 0;
}

/* has_rdmacm() -> bool */
PyObject *cm_mod_has_rdmacm(PyObject *mod, PyObject *unused)
{
	if (cm_load() == 0)
		Py_RETURN_TRUE;
	PyErr_Clear();
	Py_RETURN_FALSE;
}

/* _rdmacm_status() -> (True, path) or (False, why) */
PyObject *cm_mod_rdmacm_status(PyObject *mod, PyObject *unused)
{
	PyObject *t, *v, *tb, *msg;

	if (cm_load() == 0)
		return Py_BuildValue("(Os)", Py_True, CM.path);
	PyErr_Fetch(&t, &v, &tb);
	msg = v ? PyObject_Str(v) : NULL;
	Py_XDECREF(t);
	Py_XDECREF(v);
	Py_XDECREF(tb);
	if (msg == NULL)
		return NULL;
	return Py_BuildValue("(ON)", Py_False, msg);
}

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

typedef struct {
	Handle h;                  /* obj: struct rdma_cm_id *; a root */
	struct rdma_event_channel *ch;
	PyObject *context;         /* ContextObject (child) or NULL */
	PyObject *host;            /* str (peer address), or None */
	PyObject *source;          /* str or None */
	PyObject *private_data;    /* passive: what the request carried */
	QPObject *qp;              /* borrowed: the open QP, or NULL */
	int port;
	int passive;               /* from get_request() */
	int connected;
	int answered;              /* passive: accepted or rejected */
} CMIDObject;

typedef struct {
	PyObject_HEAD
	int event;
	int status;
	PyObject *private_data;    /* bytes */
	PyObject *cmid;            /* CONNECT_REQUEST: the new CMID; else None */
} CMEventObject;

#define CMO(self) ((CMIDObject *)(self))
#define CMID_ID(self) ((struct rdma_cm_id *)HANDLE(self)->obj)

/* A copied and acknowledged event. */
typedef struct {
	int event;
	int status;
	int pdata_len;
	unsigned char pdata[256];
	struct rdma_cm_id *new_id; /* CONNECT_REQUEST */
} cm_event_copy;

static int cm_context_destroy(Handle *h)
{
	/* librdmacm opened the device and closes it; nothing to do. */
	return 0;
}

static const HandleKind cm_context_kind = {
	"Context", "ibv_close_device", cm_context_destroy, NULL
};

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
		err = errno ? errno : EIO;
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(h);
	if (rc != 0)
		return err;
	if (c->ch != NULL)
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

static const HandleKind cmid_kind = {
	"CMID", "rdma_destroy_id", cmid_destroy, cmid_release
};

static const HandleKind listener_kind = {
	"CMListener", "rdma_destroy_id", cmid_destroy, cmid_release
};

/* QPs made by rdma_create_qp: librdmacm destroys them. */
static int cm_qp_destroy(Handle *h)
{
	QPObject *q = (QPObject *)h;

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

static const HandleKind cm_qp_kind = {
	"QP", "rdma_destroy_qp", cm_qp_destroy, cm_qp_release
};

/* close(): the QP first, then the Context (EBUSY while PDs, CQs, ... of
 * it are open), then the id and its channel. */
static int cmid_close(CMIDObject *c)
{
	if (HANDLE(c)->obj == NULL)
		return 0;
	if (HANDLE(c)->busy)
		return handle_close(HANDLE(c));  /* raises EBUSY */
	if (c->qp != NULL) {
		verbs_error_fmt(EBUSY, "rdma_destroy_id",
				"%s still has its QP open (qp_num %u); close "
				"the QP first", HANDLE(c)->kind->name,
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
 * with ValueError/TypeError naming it. */
static PyObject *text_arg(PyObject *o, const char *name, int type_is_value)
{
	PyObject *b;
	char *s;
	Py_ssize_t n;

	if (!PyUnicode_Check(o)) {
		PyErr_Format(type_is_value ? PyExc_ValueError : PyExc_TypeError,
			     "%s must be a non-empty str, not %R", name,
			     (PyObject *)Py_TYPE(o));
		return NULL;
	}
	b = PyUnicode_AsUTF8String(o);
	if (b == NULL)
		return NULL;
	if (PyBytes_AsStringAndSize(b, &s, &n) < 0) {
		Py_DECREF(b);
		return NULL;
	}
	if (n == 0 || memchr(s, '\0', (size_t)n) != NULL) {
		Py_DECREF(b);
		PyErr_Format(PyExc_ValueError, "%s must be a non-empty str "
			     "without NUL characters, not %R", name, o);
		return NULL;
	}
	return b;
}

/* timeout in seconds (None: no limit) -> milliseconds (-1: no limit) */
static int timeout_arg(PyObject *o, long *ms)
{
	double t;

	if (o == NULL || o == Py_None) {
		*ms = -1;
		return 0;
	}
	t = PyFloat_AsDouble(o);
	if (t == -1.0 && PyErr_Occurred()) {
		PyErr_Clear();
		PyErr_Format(PyExc_TypeError, "timeout must be a number of "
			     "seconds or None, not %R", (PyObject *)Py_TYPE(o));
		return -1;
	}
	if (!(t >= 0.0) || t > (double)INT_MAX / 1000.0) {
		PyErr_Format(PyExc_ValueError, "timeout must be in range 0..%d "
			     "seconds or None", INT_MAX / 1000);
		return -1;
	}
	*ms = (long)(t * 1000.0 + 0.999);
	return 0;
}

static long now_ms(void)
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
 * none yet) is marked busy while the GIL is released.  "what" names the wait in a TimeoutError.  0, or
 * -1 with an exception set.
 */
static int cm_next_event(Handle *h, struct rdma_event_channel *ch,
			 long timeout_ms, const char *what, cm_event_copy *ev)
{
	long deadline = timeout_ms < 0 ? 0 : now_ms() + timeout_ms;
	struct rdma_cm_event *e = NULL;
	struct pollfd p;
	int rc, err;

	if (h == NULL)
		h = &unowned;
	for (;;) {
		long left = -1;

		if (timeout_ms >= 0) {
			left = deadline - now_ms();
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
			err = errno;
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
			verbs_error(err, p.revents ? "rdma_get_cm_event" : "poll");
			return -1;
		}
		if (timeout_ms >= 0 && now_ms() >= deadline) {
			PyErr_Format(PyExc_TimeoutError, "no connection manager "
				     "event within %ld ms while %s", timeout_ms,
				     what);
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
	const char *s = CM.event_str ? CM.event_str((enum rdma_cm_event_type)event) : NULL;

	return s ? s : "?";
}

/* Raise VerbsError(err, text, op) with the event's .event, .status and
 * .private_data attached.  Returns NULL. */
static PyObject *cm_event_error(int err, const char *op,
				const cm_event_copy *ev, const char *fmt, ...)
{
	PyObject *detail, *text, *exc, *v;
	va_list ap;

	if (err < 0)
		err = -err;
	va_start(ap, fmt);
	detail = PyUnicode_FromFormatV(fmt, ap);
	va_end(ap);
	if (detail == NULL)
		return NULL;
	text = PyUnicode_FromFormat("%s: %U (%s, status %d)", strerror(err),
				    detail, event_name(ev->event), ev->status);
	Py_DECREF(detail);
	if (text == NULL)
		return NULL;
	exc = PyObject_CallFunction(ST.VerbsError, "iOs", err, text, op);
	Py_DECREF(text);
	if (exc == NULL)
		return NULL;
	v = enum_from_int("CMEventType", ev->event);
	if (v == NULL || PyObject_SetAttrString(exc, "event", v) < 0)
		goto fail;
	Py_DECREF(v);
	v = PyLong_FromLong(ev->status);
	if (v == NULL || PyObject_SetAttrString(exc, "status", v) < 0)
		goto fail;
	Py_DECREF(v);
	v = PyBytes_FromStringAndSize((const char *)ev->pdata, ev->pdata_len);
	if (v == NULL || PyObject_SetAttrString(exc, "private_data", v) < 0)
		goto fail;
	Py_DECREF(v);
	PyErr_SetObject(ST.VerbsError, exc);
	Py_DECREF(exc);
	return NULL;
fail:
	Py_XDECREF(v);
	Py_DECREF(exc);
	return NULL;
}

/* rdma_getaddrinfo returns -1 with errno, or a getaddrinfo (EAI_*) code
 * with errno untouched: never report the latter as an errno. */
static PyObject *addrinfo_error(int rc, const char *what, const char *node,
			   const char *service)
{
	int err;

	if (rc == -1 || rc == EAI_SYSTEM)
		return verbs_error_fmt(errno ? errno : EINVAL, "rdma_getaddrinfo",
				       "cannot resolve %s %s%s%s", what, node,
				       service ? " port " : "",
				       service ? service : "");
	switch (rc) {
	case EAI_AGAIN: err = EAGAIN; break;
	case EAI_MEMORY: err = ENOMEM; break;
	case EAI_SERVICE: case EAI_FAMILY: case EAI_SOCKTYPE: err = EINVAL; break;
	default: err = EHOSTUNREACH; break;   /* EAI_NONAME, EAI_FAIL, ... */
	}
	return verbs_error_fmt(err, "rdma_getaddrinfo",
			       "cannot resolve %s %s: %s (getaddrinfo error %d)",
			       what, node, gai_strerror(rc), rc);
}

/* "198.18.0.1" for an IPv4/IPv6 sockaddr, None otherwise; *port too. */
static PyObject *addr_str(const struct sockaddr *sa, int *port)
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
	if (inet_ntop(sa->sa_family, a, buf, sizeof(buf)) == NULL)
		Py_RETURN_NONE;
	return PyUnicode_FromString(buf);
}

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
	case PD_CONNECT: return 56;
	case PD_ACCEPT: return 196;
	default: return 148;
	}
}

static int pdata_check(struct rdma_cm_id *id, int which, Py_ssize_t len,
		       const char *meth)
{
	int max = pdata_limit(id, which);

	if (len > max) {
		PyErr_Format(PyExc_ValueError, "%s: private_data is %zd bytes; "
			     "this transport carries at most %d", meth, len, max);
		return -1;
	}
	return 0;
}

static int u8_arg(int v, const char *name)
{
	if (v < 0 || v > 255) {
		PyErr_Format(PyExc_ValueError, "%s must be in range 0..255, "
			     "not %d", name, v);
		return -1;
	}
	return 0;
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
	HANDLE(ctx)->obj = id->verbs;
	ctx->name = PyUnicode_FromString(IBV.get_device_name(id->verbs->device));
	c->context = (PyObject *)ctx;
	return ctx->name == NULL ? -1 : 0;
}

/* *slot = v (a new reference), dropping the old value. */
static void set_ref(PyObject **slot, PyObject *v)
{
	PyObject *old = *slot;

	*slot = v;
	Py_XDECREF(old);
}

/* A new CMID/CMListener owning id and ch (the caller destroys them on
 * failure only when *owned stays 0). */
static PyObject *cmid_wrap(PyTypeObject *tp, const HandleKind *kind,
			   struct rdma_cm_id *id,
			   struct rdma_event_channel *ch, int *owned)
{
	CMIDObject *c = HANDLE_ALLOC(CMIDObject, tp);

	*owned = 0;
	if (c == NULL)
		return NULL;
	handle_init(HANDLE(c), kind, NULL);
	HANDLE(c)->obj = id;
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

/* Wait for "want" after an asynchronous call named op; the error events
 * become VerbsError(op). */
static int cm_expect(Handle *h, struct rdma_event_channel *ch, long ms,
		     int want, const char *op, const char *what,
		     cm_event_copy *ev)
{
	for (;;) {
		if (cm_next_event(h, ch, ms, what, ev) < 0)
			return -1;
		if (ev->event == want)
			return 0;
		if (ev->event == RDMA_CM_EVENT_ADDR_CHANGE ||
		    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			continue;
		if (ev->event == RDMA_CM_EVENT_REJECTED) {
			cm_event_error(ECONNREFUSED, op, ev, "rejected by the "
				       "peer while %s", what);
		} else {
			int err = ev->status < 0 ? -ev->status :
				  ev->event == RDMA_CM_EVENT_UNREACHABLE ? EHOSTUNREACH :
				  ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ? ENODEV :
				  ECONNABORTED;

			cm_event_error(err, op, ev, "while %s", what);
		}
		return -1;
	}
}

static PyObject *cmid_resolve(PyObject *cls, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"host", "port", "source", "timeout_ms", NULL};
	PyObject *host_o, *port_o = NULL, *src_o = Py_None, *tmo_o = NULL;
	PyObject *host_b = NULL, *src_b = NULL, *res = NULL;
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	struct rdma_addrinfo hints, *dst = NULL, *src = NULL;
	cm_event_copy ev;
	char service[8];
	long port = 4420, tmo = 2000;
	int rc, owned = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO$O:resolve", kwlist,
					 &host_o, &port_o, &src_o, &tmo_o))
		return NULL;
	/* Every argument is checked before librdmacm is loaded. */
	host_b = text_arg(host_o, "host", 0);
	if (host_b == NULL)
		goto out;
	if (port_o != NULL && arg_int(port_o, "port", 1, 65535, &port) < 0)
		goto out;
	if (src_o != Py_None && (src_b = text_arg(src_o, "source", 1)) == NULL)
		goto out;
	if (tmo_o != NULL && arg_int(tmo_o, "timeout_ms", 1, INT_MAX, &tmo) < 0)
		goto out;
	if (cm_load() < 0)
		goto out;

	snprintf(service, sizeof(service), "%ld", port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	hints.ai_qp_type = IBV_QPT_RC;
	errno = 0;
	rc = CM.getaddrinfo(PyBytes_AsString(host_b), service, &hints, &dst);
	if (rc != 0) {
		addrinfo_error(rc, "host", PyBytes_AsString(host_b), service);
		goto out;
	}
	if (src_b != NULL) {
		hints.ai_flags = RAI_PASSIVE;
		errno = 0;
		rc = CM.getaddrinfo(PyBytes_AsString(src_b), NULL, &hints, &src);
		if (rc != 0) {
			addrinfo_error(rc, "source", PyBytes_AsString(src_b), NULL);
			goto out;
		}
	}
	ch = CM.create_event_channel();
	if (ch == NULL) {
		verbs_error_errno("rdma_create_event_channel");
		goto out;
	}
	if (CM.create_id(ch, &id, NULL, RDMA_PS_TCP) != 0) {
		id = NULL;
		verbs_error_errno("rdma_create_id");
		goto out;
	}
	if (CM.resolve_addr(id, src ? src->ai_src_addr : NULL,
			    dst->ai_dst_addr, (int)tmo) != 0) {
		verbs_error_fmt(errno ? errno : EINVAL, "rdma_resolve_addr",
				"%s port %s", PyBytes_AsString(host_b), service);
		goto out;
	}
	/* The CM reports ADDR_ERROR after tmo; wait a little longer. */
	if (cm_expect(NULL, ch, tmo + 1000, RDMA_CM_EVENT_ADDR_RESOLVED,
		      "rdma_resolve_addr", "resolving the address", &ev) < 0)
		goto out;
	if (CM.resolve_route(id, (int)tmo) != 0) {
		verbs_error_errno("rdma_resolve_route");
		goto out;
	}
	if (cm_expect(NULL, ch, tmo + 1000, RDMA_CM_EVENT_ROUTE_RESOLVED,
		      "rdma_resolve_route", "resolving the route", &ev) < 0)
		goto out;

	res = cmid_wrap((PyTypeObject *)cls, &cmid_kind, id, ch, &owned);
	if (res == NULL)
		goto out;
	Py_INCREF(host_o);
	set_ref(&CMO(res)->host, host_o);
	Py_INCREF(src_o);
	set_ref(&CMO(res)->source, src_o);
	CMO(res)->port = (int)port;
out:
	if (!owned) {
		if (id != NULL)
			CM.destroy_id(id);
		if (ch != NULL)
			CM.destroy_event_channel(ch);
	}
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
		PyErr_Format(PyExc_ValueError, "CMID.create_qp: the connection "
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

static PyObject *cmid_create_qp(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"pd", "init_attr", NULL};
	CMIDObject *c = CMO(self);
	PyObject *pd, *ia, *q;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:create_qp", kwlist, &pd, &ia))
		return NULL;
	HANDLE_CHECK(self);
	if (!PyObject_TypeCheck(pd, ST.PD_type)) {
		PyErr_Format(PyExc_TypeError, "pd must be a PD, not %R",
			     (PyObject *)Py_TYPE(pd));
		return NULL;
	}
	HANDLE_CHECK(pd);
	if (c->qp != NULL)
		return verbs_error_fmt(EBUSY, "rdma_create_qp", "this CMID "
				       "already has QP %u; a CMID has one QP",
				       ((struct ibv_qp *)HANDLE(c->qp)->obj)->qp_num);
	if (c->context == NULL ||
	    (PyObject *)HANDLE(pd)->parent != c->context) {
		PyErr_SetString(PyExc_ValueError, "CMID.create_qp: the PD "
				"belongs to another Context than the CMID's; "
				"allocate it with cmid.context.alloc_pd()");
		return NULL;
	}
	q = qp_create_with((PDObject *)pd, ia, &cm_qp_kind, "rdma_create_qp",
			   cm_create_qp_fn, CMID_ID(self));
	if (q == NULL)
		return NULL;
	Py_INCREF(self);
	((QPObject *)q)->cmid = self;
	c->qp = (QPObject *)q;
	return q;
}

/* ESTABLISHED after connect/accept; other events are errors. */
static PyObject *cmid_wait_established(CMIDObject *c, long ms,
				       const char *op, const char *what)
{
	cm_event_copy ev;

	if (cm_expect(HANDLE(c), c->ch, ms, RDMA_CM_EVENT_ESTABLISHED, op,
		      what, &ev) < 0)
		return NULL;
	c->connected = 1;
	return PyBytes_FromStringAndSize((const char *)ev.pdata, ev.pdata_len);
}

static int cmid_need_qp(CMIDObject *c, const char *meth)
{
	if (c->qp != NULL)
		return 0;
	PyErr_Format(PyExc_ValueError, "CMID.%s: the CMID has no QP; call "
		     "create_qp(pd, init_attr) first", meth);
	return -1;
}

static PyObject *cmid_connect(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"private_data", "responder_resources",
		"initiator_depth", "retry_count", "rnr_retry_count", "timeout",
		NULL};
	CMIDObject *c = CMO(self);
	const char *pdata = "";
	Py_ssize_t plen = 0;
	int rr = 1, idepth = 1, retry = 7, rnr = 7;
	PyObject *tmo_o = Py_None, *host_b;
	struct rdma_conn_param p;
	long ms;
	char what[300];

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|y#$iiiiO:connect", kwlist,
					 &pdata, &plen, &rr, &idepth, &retry,
					 &rnr, &tmo_o))
		return NULL;
	HANDLE_CHECK(self);
	if (u8_arg(rr, "responder_resources") < 0 ||
	    u8_arg(idepth, "initiator_depth") < 0 ||
	    u8_arg(retry, "retry_count") < 0 ||
	    u8_arg(rnr, "rnr_retry_count") < 0 || timeout_arg(tmo_o, &ms) < 0 ||
	    pdata_check(CMID_ID(self), PD_CONNECT, plen, "connect") < 0)
		return NULL;
	if (c->passive) {
		PyErr_SetString(PyExc_ValueError, "connect: this CMID came from "
				"CMListener.get_request(); use accept() or reject()");
		return NULL;
	}
	if (c->connected)
		return verbs_error_fmt(EISCONN, "rdma_connect", "%R is connected",
				       self);
	if (cmid_need_qp(c, "connect") < 0)
		return NULL;
	memset(&p, 0, sizeof(p));
	p.private_data = plen ? pdata : NULL;
	p.private_data_len = (uint8_t)plen;
	p.responder_resources = (uint8_t)rr;
	p.initiator_depth = (uint8_t)idepth;
	p.retry_count = (uint8_t)retry;
	p.rnr_retry_count = (uint8_t)rnr;
	if (CM.connect(CMID_ID(self), &p) != 0)
		return verbs_error_errno("rdma_connect");
	host_b = PyUnicode_Check(c->host) ? PyUnicode_AsUTF8String(c->host) : NULL;
	PyErr_Clear();
	PyOS_snprintf(what, sizeof(what), "connecting to %s port %d",
		      host_b ? PyBytes_AsString(host_b) : "?", c->port);
	Py_XDECREF(host_b);
	return cmid_wait_established(c, ms, "rdma_connect", what);
}

static int cmid_need_request(CMIDObject *c, const char *meth)
{
	if (!c->passive) {
		PyErr_Format(PyExc_ValueError, "%s: only a CMID from "
			     "CMListener.get_request() can be answered", meth);
		return -1;
	}
	if (c->answered) {
		PyErr_Format(PyExc_ValueError, "%s: the request was already "
			     "accepted or rejected", meth);
		return -1;
	}
	return 0;
}

static PyObject *cmid_accept(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"private_data", "responder_resources",
		"initiator_depth", "rnr_retry_count", "timeout", NULL};
	CMIDObject *c = CMO(self);
	const char *pdata = "";
	Py_ssize_t plen = 0;
	int rr = 1, idepth = 1, rnr = 7;
	PyObject *tmo_o = Py_None, *r;
	struct rdma_conn_param p;
	long ms;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|y#$iiiO:accept", kwlist,
					 &pdata, &plen, &rr, &idepth, &rnr,
					 &tmo_o))
		return NULL;
	HANDLE_CHECK(self);
	if (u8_arg(rr, "responder_resources") < 0 ||
	    u8_arg(idepth, "initiator_depth") < 0 ||
	    u8_arg(rnr, "rnr_retry_count") < 0 || timeout_arg(tmo_o, &ms) < 0 ||
	    pdata_check(CMID_ID(self), PD_ACCEPT, plen, "accept") < 0 ||
	    cmid_need_request(c, "accept") < 0 || cmid_need_qp(c, "accept") < 0)
		return NULL;
	memset(&p, 0, sizeof(p));
	p.private_data = plen ? pdata : NULL;
	p.private_data_len = (uint8_t)plen;
	p.responder_resources = (uint8_t)rr;
	p.initiator_depth = (uint8_t)idepth;
	p.rnr_retry_count = (uint8_t)rnr;
	if (CM.accept(CMID_ID(self), &p) != 0)
		return verbs_error_errno("rdma_accept");
	c->answered = 1;
	r = cmid_wait_established(c, ms, "rdma_accept", "accepting");
	if (r == NULL)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_NONE;
}

static PyObject *cmid_reject(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"private_data", NULL};
	CMIDObject *c = CMO(self);
	const char *pdata = "";
	Py_ssize_t plen = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|y#:reject", kwlist,
					 &pdata, &plen))
		return NULL;
	HANDLE_CHECK(self);
	if (pdata_check(CMID_ID(self), PD_REJECT, plen, "reject") < 0 ||
	    cmid_need_request(c, "reject") < 0)
		return NULL;
	if (CM.reject(CMID_ID(self), plen ? pdata : NULL, (uint8_t)plen) != 0)
		return verbs_error_errno("rdma_reject");
	c->answered = 1;
	Py_RETURN_NONE;
}

static PyObject *cmid_disconnect(PyObject *self, PyObject *unused)
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

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static PyObject *cm_event_new(const cm_event_copy *ev, PyObject *cmid)
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

/* The CMID of a CONNECT_REQUEST, moved to its own channel. */
static PyObject *cm_request_cmid(const cm_event_copy *ev)
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
	set_ref(&CMO(c)->host, addr_str(rdma_get_peer_addr(id), &port));
	CMO(c)->port = port;
	set_ref(&CMO(c)->source, addr_str(rdma_get_local_addr(id), &port));
	CMO(c)->private_data = PyBytes_FromStringAndSize((const char *)ev->pdata,
							 ev->pdata_len);
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
}

static PyObject *cmid_get_event(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"timeout", NULL};
	PyObject *tmo_o = Py_None, *cmid = NULL;
	cm_event_copy ev;
	long ms;
	int is_listener = HANDLE(self)->kind == &listener_kind;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:get_event", kwlist, &tmo_o))
		return NULL;
	HANDLE_CHECK(self);
	if (timeout_arg(tmo_o, &ms) < 0)
		return NULL;
	if (cm_next_event(HANDLE(self), CMO(self)->ch, ms, "waiting for an "
			  "event", &ev) < 0)
		return NULL;
	if (ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		cmid = cm_request_cmid(&ev);
		if (cmid == NULL)
			return NULL;
	} else if (!is_listener) {
		cmid_saw_event(CMO(self), &ev);
	}
	return cm_event_new(&ev, cmid);
}

/* ------------------------------------------------------------------ */
/* Common handle plumbing                                              */
/* ------------------------------------------------------------------ */

static int cmid_traverse(PyObject *self, visitproc visit, void *arg)
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
static int cmid_clear(PyObject *self)
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

static void cmid_dealloc(PyObject *self)
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

static PyObject *cmid_meth_close(PyObject *self, PyObject *unused)
{
	if (cmid_close(CMO(self)) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *cmid_meth_exit(PyObject *self, PyObject *args)
{
	if (cmid_close(CMO(self)) < 0)
		return NULL;
	Py_RETURN_FALSE;
}

static PyObject *cmid_get_fd(PyObject *self, void *closure)
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

static PyObject *get_obj(PyObject *o)
{
	if (o == NULL)
		o = Py_None;
	Py_INCREF(o);
	return o;
}

static PyObject *cmid_get_host(PyObject *self, void *closure)
{
	return get_obj(CMO(self)->host);
}

static PyObject *cmid_get_source(PyObject *self, void *closure)
{
	return get_obj(CMO(self)->source);
}

static PyObject *cmid_get_private_data(PyObject *self, void *closure)
{
	return get_obj(CMO(self)->private_data);
}

static PyObject *cmid_get_qp(PyObject *self, void *closure)
{
	return get_obj((PyObject *)CMO(self)->qp);
}

static PyObject *cmid_get_port(PyObject *self, void *closure)
{
	return PyLong_FromLong(CMO(self)->port);
}

static PyObject *cmid_get_connected(PyObject *self, void *closure)
{
	return PyBool_FromLong(HANDLE(self)->obj != NULL && CMO(self)->connected);
}

static PyObject *cmid_repr(PyObject *self)
{
	CMIDObject *c = CMO(self);
	const char *state;

	if (HANDLE(c)->obj == NULL)
		state = "closed";
	else if (c->connected)
		state = "connected";
	else if (c->passive)
		state = c->answered ? "answered" : "request";
	else
		state = "resolved";
	return PyUnicode_FromFormat("<ibverbs.%s host=%R port=%d %s>",
				    HANDLE(c)->kind->name, c->host, c->port,
				    state);
}

#define KW (PyCFunction)(void (*)(void))
static PyMethodDef cmid_methods[] = {
	{"resolve", KW cmid_resolve, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
	 "resolve(host, port=4420, source=None, *, timeout_ms=2000) -> CMID: "
	 "resolve the address and route of an RC connection (TCP port space)."},
	{"create_qp", KW cmid_create_qp, METH_VARARGS | METH_KEYWORDS,
	 "create_qp(pd, init_attr) -> QP (rdma_create_qp; RC; one per CMID)"},
	{"connect", KW cmid_connect, METH_VARARGS | METH_KEYWORDS,
	 "connect(private_data=b'', *, responder_resources=1, initiator_depth=1, "
	 "retry_count=7, rnr_retry_count=7, timeout=None) -> bytes: the "
	 "peer's private data."},
	{"accept", KW cmid_accept, METH_VARARGS | METH_KEYWORDS,
	 "accept(private_data=b'', *, responder_resources=1, initiator_depth=1, "
	 "rnr_retry_count=7, timeout=None): accept a request and wait until "
	 "the connection is established."},
	{"reject", KW cmid_reject, METH_VARARGS | METH_KEYWORDS,
	 "reject(private_data=b''): refuse a request."},
	{"disconnect", cmid_disconnect, METH_NOARGS,
	 "rdma_disconnect(); a no-op when not connected."},
	{"get_event", KW cmid_get_event, METH_VARARGS | METH_KEYWORDS,
	 "get_event(timeout=None) -> CMEvent; TimeoutError when none came."},
	{"close", cmid_meth_close, METH_NOARGS,
	 "Destroy the id. Idempotent; EBUSY while its QP, or PDs/CQs of its "
	 "Context, are open."},
	{"__enter__", handle_meth_enter, METH_NOARGS, NULL},
	{"__exit__", cmid_meth_exit, METH_VARARGS, NULL},
	{NULL, NULL, 0, NULL}
};

static PyGetSetDef cmid_getset[] = {
	{"fd", cmid_get_fd, NULL, "the event channel's file descriptor", NULL},
	{"context", cmid_get_context, NULL,
	 "the Context librdmacm opened (owned by the CMID)", NULL},
	{"host", cmid_get_host, NULL,
	 "the host resolved (the peer's address for an incoming request)", NULL},
	{"port", cmid_get_port, NULL, "the port resolved (the peer's)", NULL},
	{"source", cmid_get_source, NULL, "the source address, or None", NULL},
	{"private_data", cmid_get_private_data, NULL,
	 "an incoming request's private data (None otherwise)", NULL},
	{"qp", cmid_get_qp, NULL, "the QP of create_qp(), or None", NULL},
	{"connected", cmid_get_connected, NULL, "True while connected", NULL},
	HANDLE_GETSETS,
	{NULL, NULL, NULL, NULL, NULL}
};

static PyType_Slot cmid_slots[] = {
	{Py_tp_doc, "An RDMA connection manager id (rdma_cm_id): "
		    "CMID.resolve() for the active side, "
		    "CMListener.get_request() for the passive one."},
	{Py_tp_new, handle_no_new},
	{Py_tp_dealloc, cmid_dealloc},
	{Py_tp_traverse, cmid_traverse},
	{Py_tp_clear, cmid_clear},
	{Py_tp_repr, cmid_repr},
	{Py_tp_methods, cmid_methods},
	{Py_tp_getset, cmid_getset},
	{0, NULL}
};

PyType_Spec CMID_spec = {
	"ibverbs._ibverbs.CMID", sizeof(CMIDObject), 0,
	Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, cmid_slots
};

/* ------------------------------------------------------------------ */
/* CMListener                                                          */
/* ------------------------------------------------------------------ */

static PyObject *listener_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"port", "host", "backlog", NULL};
	PyObject *port_o, *host_o = Py_None, *backlog_o = NULL, *host_b = NULL;
	PyObject *res = NULL;
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	struct rdma_addrinfo hints, *ai = NULL;
	struct sockaddr_in any;
	struct sockaddr *addr;
	long port, backlog = 16;
	char service[8];
	int rc, owned = 0, bound_port;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$O:CMListener", kwlist,
					 &port_o, &host_o, &backlog_o))
		return NULL;
	if (arg_int(port_o, "port", 0, 65535, &port) < 0)
		return NULL;
	if (host_o != Py_None && (host_b = text_arg(host_o, "host", 0)) == NULL)
		return NULL;
	if (backlog_o != NULL &&
	    arg_int(backlog_o, "backlog", 1, INT_MAX, &backlog) < 0)
		goto out;
	if (cm_load() < 0)
		goto out;
	snprintf(service, sizeof(service), "%ld", port);
	if (host_b != NULL) {
		memset(&hints, 0, sizeof(hints));
		hints.ai_flags = RAI_PASSIVE;
		hints.ai_port_space = RDMA_PS_TCP;
		hints.ai_qp_type = IBV_QPT_RC;
		errno = 0;
		rc = CM.getaddrinfo(PyBytes_AsString(host_b), service, &hints, &ai);
		if (rc != 0) {
			addrinfo_error(rc, "host", PyBytes_AsString(host_b), service);
			goto out;
		}
		addr = ai->ai_src_addr;
	} else {
		memset(&any, 0, sizeof(any));
		any.sin_family = AF_INET;
		any.sin_port = htons((uint16_t)port);
		any.sin_addr.s_addr = htonl(INADDR_ANY);
		addr = (struct sockaddr *)&any;
	}
	ch = CM.create_event_channel();
	if (ch == NULL) {
		verbs_error_errno("rdma_create_event_channel");
		goto out;
	}
	if (CM.create_id(ch, &id, NULL, RDMA_PS_TCP) != 0) {
		id = NULL;
		verbs_error_errno("rdma_create_id");
		goto out;
	}
	if (CM.bind_addr(id, addr) != 0) {
		verbs_error_fmt(errno ? errno : EINVAL, "rdma_bind_addr",
				"%s port %ld",
				host_b ? PyBytes_AsString(host_b) : "any address",
				port);
		goto out;
	}
	if (CM.listen(id, (int)backlog) != 0) {
		verbs_error_fmt(errno ? errno : EINVAL, "rdma_listen",
				"port %ld", port);
		goto out;
	}
	res = cmid_wrap(type, &listener_kind, id, ch, &owned);
	if (res == NULL)
		goto out;
	Py_INCREF(host_o);
	set_ref(&CMO(res)->host, host_o);
	Py_XDECREF(addr_str(rdma_get_local_addr(id), &bound_port));
	PyErr_Clear();
	CMO(res)->port = bound_port ? bound_port : (int)port;
out:
	if (!owned) {
		if (id != NULL)
			CM.destroy_id(id);
		if (ch != NULL)
			CM.destroy_event_channel(ch);
	}
	if (ai != NULL)
		CM.freeaddrinfo(ai);
	Py_XDECREF(host_b);
	return res;
}

static PyObject *listener_get_request(PyObject *self, PyObject *args,
				      PyObject *kw)
{
	static char *kwlist[] = {"timeout", NULL};
	PyObject *tmo_o = Py_None;
	cm_event_copy ev;
	long ms, deadline;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:get_request", kwlist,
					 &tmo_o))
		return NULL;
	HANDLE_CHECK(self);
	if (timeout_arg(tmo_o, &ms) < 0)
		return NULL;
	deadline = ms < 0 ? 0 : now_ms() + ms;
	for (;;) {
		long left = ms < 0 ? -1 : deadline - now_ms();

		if (ms >= 0 && left < 0)
			left = 0;
		if (cm_next_event(HANDLE(self), CMO(self)->ch, left,
				  "waiting for a connection request", &ev) < 0)
			return NULL;
		if (ev.event == RDMA_CM_EVENT_CONNECT_REQUEST)
			return cm_request_cmid(&ev);
		if (ev.event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			return cm_event_error(ENODEV, "rdma_get_cm_event", &ev,
					      "the listener's device went away");
		/* ADDR_CHANGE and the like: keep listening */
	}
}

static PyObject *listener_repr(PyObject *self)
{
	CMIDObject *c = CMO(self);

	return PyUnicode_FromFormat("<ibverbs.CMListener host=%R port=%d%s>",
				    c->host, c->port,
				    HANDLE(c)->obj ? "" : " closed");
}

static PyMethodDef listener_methods[] = {
	{"get_request", KW listener_get_request, METH_VARARGS | METH_KEYWORDS,
	 "get_request(timeout=None) -> CMID: the next incoming connection; "
	 "TimeoutError when none came."},
	{"get_event", KW cmid_get_event, METH_VARARGS | METH_KEYWORDS,
	 "get_event(timeout=None) -> CMEvent (a CONNECT_REQUEST's .cmid is "
	 "the new CMID)."},
	{"close", cmid_meth_close, METH_NOARGS,
	 "Stop listening (rdma_destroy_id); CMIDs it produced stay open. "
	 "Idempotent."},
	{"__enter__", handle_meth_enter, METH_NOARGS, NULL},
	{"__exit__", cmid_meth_exit, METH_VARARGS, NULL},
	{NULL, NULL, 0, NULL}
};
#undef KW

static PyGetSetDef listener_getset[] = {
	{"fd", cmid_get_fd, NULL, "the event channel's file descriptor", NULL},
	{"host", cmid_get_host, NULL, "the address bound, or None (any)", NULL},
	{"port", cmid_get_port, NULL, "the port listened on", NULL},
	HANDLE_GETSETS,
	{NULL, NULL, NULL, NULL, NULL}
};

static PyType_Slot listener_slots[] = {
	{Py_tp_doc, "CMListener(port, host=None, *, backlog=16): listen for "
		    "RDMA connection manager requests (rdma_listen)."},
	{Py_tp_new, listener_new},
	{Py_tp_dealloc, cmid_dealloc},
	{Py_tp_traverse, cmid_traverse},
	{Py_tp_clear, cmid_clear},
	{Py_tp_repr, listener_repr},
	{Py_tp_methods, listener_methods},
	{Py_tp_getset, listener_getset},
	{0, NULL}
};

PyType_Spec CMListener_spec = {
	"ibverbs._ibverbs.CMListener", sizeof(CMIDObject), 0,
	Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, listener_slots
};

/* ------------------------------------------------------------------ */
/* CMEvent                                                             */
/* ------------------------------------------------------------------ */

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

static void cmevent_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	PyObject_GC_UnTrack(self);
	cmevent_clear(self);
	tp_free(self);
	Py_DECREF(tp);
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
	return get_obj(((CMEventObject *)self)->private_data);
}

static PyObject *cmevent_get_cmid(PyObject *self, void *closure)
{
	return get_obj(((CMEventObject *)self)->cmid);
}

static PyObject *cmevent_repr(PyObject *self)
{
	CMEventObject *e = (CMEventObject *)self;

	return PyUnicode_FromFormat("<ibverbs.CMEvent %s status=%d>",
				    event_name(e->event), e->status);
}

static PyGetSetDef cmevent_getset[] = {
	{"event", cmevent_get_event, NULL, "CMEventType", NULL},
	{"status", cmevent_get_status, NULL,
	 "the event's status (a negative errno, or a reject reason)", NULL},
	{"private_data", cmevent_get_private_data, NULL,
	 "the private data the event carried (bytes)", NULL},
	{"cmid", cmevent_get_cmid, NULL,
	 "CONNECT_REQUEST: the new CMID; None otherwise", NULL},
	{NULL, NULL, NULL, NULL, NULL}
};

static PyType_Slot cmevent_slots[] = {
	{Py_tp_doc, "A connection manager event (rdma_cm_event), already "
		    "acknowledged."},
	{Py_tp_new, handle_no_new},
	{Py_tp_dealloc, cmevent_dealloc},
	{Py_tp_traverse, cmevent_traverse},
	{Py_tp_clear, cmevent_clear},
	{Py_tp_repr, cmevent_repr},
	{Py_tp_getset, cmevent_getset},
	{0, NULL}
};

PyType_Spec CMEvent_spec = {
	"ibverbs._ibverbs.CMEvent", sizeof(CMEventObject), 0,
	Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, cmevent_slots
};
