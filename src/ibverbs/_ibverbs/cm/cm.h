/*
 * cm.h - declarations shared by the connection manager's files: cm.c
 * (CMID and the helpers the CM types share), cm_listener.c (CMListener),
 * cm_event.c (waiting for events, CMEvent) and cm_loader.c (the lazy
 * loader of librdmacm.so.1); and the type specs and module functions
 * core/module.c names.
 */
#ifndef IBVERBS_CM_H
#define IBVERBS_CM_H

#include "ibverbs.h"
#include <rdma/rdma_cma.h>
#include <limits.h>

/* ------------------------------------------------------------------ */
/* The dlsym table of librdmacm (cm_loader.c)                          */
/* ------------------------------------------------------------------ */

#define RDMACM_SYMBOLS(X)                                    \
	X(create_event_channel, rdma_create_event_channel)   \
	X(destroy_event_channel, rdma_destroy_event_channel) \
	X(create_id, rdma_create_id)                         \
	X(destroy_id, rdma_destroy_id)                       \
	X(bind_addr, rdma_bind_addr)                         \
	X(resolve_addr, rdma_resolve_addr)                   \
	X(resolve_route, rdma_resolve_route)                 \
	X(create_qp, rdma_create_qp)                         \
	X(destroy_qp, rdma_destroy_qp)                       \
	X(connect, rdma_connect)                             \
	X(listen, rdma_listen)                               \
	X(accept, rdma_accept)                               \
	X(reject, rdma_reject)                               \
	X(disconnect, rdma_disconnect)                       \
	X(get_cm_event, rdma_get_cm_event)                   \
	X(ack_cm_event, rdma_ack_cm_event)                   \
	X(event_str, rdma_event_str)                         \
	X(migrate_id, rdma_migrate_id)                       \
	X(getaddrinfo, rdma_getaddrinfo)                     \
	X(freeaddrinfo, rdma_freeaddrinfo)

struct rdmacm_api {
#define CM_DECL(field, sym) __typeof__(sym) *field;
	RDMACM_SYMBOLS(CM_DECL)
#undef CM_DECL
	void *lib;
	char path[PATH_MAX];
};

extern struct rdmacm_api CM;

/* Load librdmacm once.  0, or -1 with ImportError naming the library (or
 * the missing symbol) and the package that provides it. */
int cm_load(void);

/* cm_loader.c: has_rdmacm() and _rdmacm_status() (librdmacm is loaded
 * lazily), for core/module.c's table. */
PyObject *cm_mod_has_rdmacm(PyObject *mod, PyObject *unused);
extern const char cm_mod_has_rdmacm__doc__[];
PyObject *cm_mod_rdmacm_status(PyObject *mod, PyObject *unused);
extern const char cm_mod_rdmacm_status__doc__[];

extern PyType_Spec CMID_spec; /* cm.c */
extern PyType_Spec CMListener_spec; /* cm_listener.c */
extern PyType_Spec CMEvent_spec; /* cm_event.c */

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

typedef struct {
	Handle h; /* obj: struct rdma_cm_id *; a root */
	struct rdma_event_channel *ch;
	PyObject *context; /* ContextObject (child) or NULL */
	PyObject *host; /* str (peer address), or None */
	PyObject *source; /* str or None */
	PyObject *private_data; /* passive: what the request carried */
	QPObject *qp; /* borrowed: the open QP, or NULL */
	int port;
	int passive; /* from get_request() */
	int connected;
	int answered; /* passive: accepted or rejected */
	int pending; /* CM_PENDING_*: a connect/accept awaits its ESTABLISHED */
} CMIDObject;

/* CMIDObject.pending */
enum { CM_PENDING_NONE, CM_PENDING_CONNECT, CM_PENDING_ACCEPT };

typedef struct {
	PyObject_HEAD
	int event;
	int status;
	PyObject *private_data; /* bytes */
	PyObject *cmid; /* CONNECT_REQUEST: the new CMID; else None */
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

/* The kinds of a CMID and of a CMListener (cm.c). */
extern const HandleKind cmid_kind;
extern const HandleKind cm_listener_kind;

/* ------------------------------------------------------------------ */
/* cm.c: helpers and the handle plumbing CMListener shares             */
/* ------------------------------------------------------------------ */

/* A str argument as UTF-8: non-empty, without NUL.  New bytes, or NULL
 * with ValueError naming it (a value that is not a str too). */
PyObject *cm_text_arg(PyObject *o, const char *name);
/* rdma_getaddrinfo of node (UTF-8 bytes, the argument named what) and
 * service (NULL: none) for an RC connection (RDMA_PS_TCP), passive (a
 * local address: RAI_PASSIVE) or not.  0 with *res (CM.freeaddrinfo
 * it), or -1 with VerbsError naming node, what and service. */
int cm_getaddrinfo(PyObject *node, const char *what, const char *service,
		   int passive, struct rdma_addrinfo **res);
/* "198.18.0.1" for an IPv4/IPv6 sockaddr, None otherwise; *port too. */
PyObject *cm_addr_str(const struct sockaddr *sa, int *port);
/* *slot = v (a new reference), dropping the old value. */
void cm_set_ref(PyObject **slot, PyObject *v);
/* A new event channel *ch and an RC id *id on it (TCP port space); -1
 * with an exception set, *ch and *id left for cm_discard. */
int cm_create_id(struct rdma_event_channel **ch, struct rdma_cm_id **id);
/* Destroy an id and its channel that no CMID owns (either may be NULL). */
void cm_discard(struct rdma_cm_id *id, struct rdma_event_channel *ch);
/* A new CMID/CMListener owning id and ch (the caller destroys them on
 * failure only when *owned stays 0, with cm_discard). */
PyObject *cmid_wrap(PyTypeObject *tp, const HandleKind *kind,
		    struct rdma_cm_id *id, struct rdma_event_channel *ch,
		    int *owned);
/* The CMID of a CONNECT_REQUEST, moved to its own channel. */
PyObject *cm_request_cmid(const cm_event_copy *ev);
/* Slots, methods and getters of CMID that CMListener uses too. */
int cmid_traverse(PyObject *self, visitproc visit, void *arg);
int cmid_clear(PyObject *self);
void cmid_dealloc(PyObject *self);
PyObject *cmid_get_event(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cmid_meth_close(PyObject *self, PyObject *unused);
PyObject *cmid_meth_exit(PyObject *self, PyObject *args);
PyObject *cmid_get_fd(PyObject *self, void *closure);
PyObject *cmid_get_host(PyObject *self, void *closure);
PyObject *cmid_get_port(PyObject *self, void *closure);
PyObject *cmid_poll_event(PyObject *self, PyObject *unused);
/* What the method tables of CMID and CMListener share: the end of the
 * table (the context manager; __exit__ closes), and docstring parts. */
/* clang-format off */
#define CMID_CONTEXT_METHODS_END \
	{ "__enter__", handle_meth_enter, METH_NOARGS, NULL }, \
	{ "__exit__", cmid_meth_exit, METH_VARARGS, NULL }, \
	{ NULL, NULL, 0, NULL }
/* clang-format on */
#define CM_WRAPS_GET_EVENT                                                  \
	"Wraps ``rdma_get_cm_event`` and ``rdma_ack_cm_event`` (man page\n" \
	"rdma_get_cm_event(3)).\n"
#define CM_ARG_TIMEOUT "    timeout: seconds to wait, None for no limit.\n"

/* ------------------------------------------------------------------ */
/* cm_connect.c: CMID's methods that connect                           */
/* ------------------------------------------------------------------ */

PyObject *cmid_connect(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cmid_start_connect(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cmid_accept(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cmid_start_accept(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cmid_poll_established(PyObject *self, PyObject *unused);
PyObject *cmid_reject(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cmid_disconnect(PyObject *self, PyObject *unused);
/* Their docstrings, beside them in cm_connect.c (cm.c's method table
 * names them). */
extern const char cmid_connect__doc__[], cmid_accept__doc__[],
	cmid_reject__doc__[], cmid_start_connect__doc__[],
	cmid_start_accept__doc__[], cmid_poll_established__doc__[],
	cmid_disconnect__doc__[];

/* ------------------------------------------------------------------ */
/* cm_event.c: waiting for events                                      */
/* ------------------------------------------------------------------ */

/* timeout in seconds (None: no limit) -> milliseconds (-1: no limit) */
int cm_timeout_arg(PyObject *o, long *ms);
/* The arguments of a method whose only one is timeout (get_event,
 * get_request): cm_timeout_params, declared by each method with
 * METHOD_ARGS. */
struct cm_timeout_args {
	PyObject *timeout;
};
extern const ArgSpec cm_timeout_params[];
/* Parse them by m (after HANDLE_CHECK(self)): *ms as cm_timeout_arg.  0,
 * or -1 with an exception. */
int cm_timeout_only(const MethodArgs *m, PyObject *self, PyObject *args,
		    PyObject *kw, long *ms);
/* The TimeoutError of a wait: the caller's timeout (ms), what it waited for */
#define CM_TIMEOUT_FMT "no connection manager event within %ld ms while %s"
/* A timeout_ms meaning "do not wait": take what is ready, and return 1
 * (no exception) where a wait would have begun. */
#define CM_NOWAIT (-2L)
/* CLOCK_MONOTONIC in milliseconds. */
long cm_now_ms(void);
/* Wait up to timeout_ms (-1: no limit) for the next event of ch, copy it
 * and acknowledge it; h (NULL while ch has no owner yet) is marked busy
 * while the GIL is released.  0, or -1 with an exception set; with
 * CM_NOWAIT, 1 when no event is ready. */
int cm_next_event(Handle *h, struct rdma_event_channel *ch, long timeout_ms,
		  const char *what, cm_event_copy *ev);
/* Raise VerbsError(err, text, op) with the event's .event, .status and
 * .private_data attached.  Returns NULL. */
PyObject *cm_event_error(int err, const char *op, const cm_event_copy *ev,
			 const char *fmt, ...);
/* Wait for "want" after an asynchronous call named op; the error events
 * become VerbsError(op).  0 or -1; with CM_NOWAIT, 1 when the events
 * ready are used up before "want" came. */
int cm_expect(Handle *h, struct rdma_event_channel *ch, long ms, int want,
	      const char *op, const char *what, cm_event_copy *ev);
/* A new CMEvent of ev; steals cmid (NULL: None). */
PyObject *cm_event_new(const cm_event_copy *ev, PyObject *cmid);

#endif /* IBVERBS_CM_H */
