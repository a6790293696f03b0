/*
 * handle.c - the lifetime protocol shared by every kernel-object wrapper.
 *
 * - A child holds a strong reference to its parent (PD -> Context, ...),
 *   so the parent's struct outlives it; the parent keeps a borrowed,
 *   intrusive list of its open children.
 * - close() is idempotent.  It refuses with EBUSY, naming what is still
 *   open, while children or users exist or a thread is inside a GIL-free
 *   call on the object; every object stays usable after a refusal.
 * - Like mmap's close(), the verbs pointer is cleared only once the
 *   destroy verb succeeded; a failed destroy leaves the object usable.
 * - fork(): the child shares the parent's device file, so a destroy verb
 *   run in the child (an explicit close(), or the garbage collector at
 *   its exit) would destroy the PARENT's objects.  An after-fork hook
 *   (os.register_at_fork) marks every inherited handle closed in the
 *   child, without calling any verb: there they raise EBADF, and
 *   close()/deallocation do nothing.
 * - Waiting on a handle's fd (a CompChannel's, a Context's async fd)
 *   releases the GIL with the handle busy: fd_wait_readable, at the end;
 *   handle_find looks an object up in a handle's subtree (event.c).
 */
#include "ibverbs.h"
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#ifdef Py_GIL_DISABLED
#include <time.h>
#endif

/* Open handles without a parent (Contexts), linked like children. */
static Handle *roots;
/* Set in a child process whose parent had handles. */
static int forked_child;

/* VerbsError(EBADF, "<kind> is closed"); -1. */
static inline __attribute__((always_inline)) int closed_error(Handle *h);

/*
 * The free-threaded build (Py_GIL_DISABLED; none of this is compiled into
 * the GIL build).  Without the GIL, nothing serializes the methods of one
 * object any more, so:
 *
 * - The tree (roots, every children list) and the users counts are
 *   guarded by tree_lock, a PyMutex.
 * - Every method pins its handle (HANDLE_CHECK: h->pins + 1 until the
 *   method returns), and every handle_check() of an argument handle made
 *   meanwhile pins that one too, on a per-thread stack that the method's
 *   scope unwinds.  close() first sets HANDLE_CLOSING (a new pin fails
 *   with EBADF), then waits, detached, until only the calling thread's
 *   own pins are left, and only then destroys: a verb in flight on
 *   another thread completes; one that comes later raises EBADF.  A
 *   blocking call (busy) or a wait past HANDLE_DRAIN_NS makes close()
 *   refuse with EBUSY instead, the handle left open.
 * - Critical sections cannot do this: they are suspended whenever their
 *   thread detaches, as every GIL-free call does.
 */
#ifdef Py_GIL_DISABLED
#define HANDLE_CLOSING ((Py_ssize_t)1 << (sizeof(Py_ssize_t) * 8 - 2))
#define HANDLE_PIN_MAX 64
#define HANDLE_DRAIN_NS 2000000000LL

static PyMutex tree_lock;

/* This thread's pins, innermost last (argument pins above their
 * method's own). */
static _Thread_local struct pin_stack {
	int depth;
	Handle *pins[HANDLE_PIN_MAX];
} tls_pins;

#define TREE_LOCK() PyMutex_Lock(&tree_lock)
#define TREE_UNLOCK() PyMutex_Unlock(&tree_lock)

static void *obj_load(Handle *h)
{
	return __atomic_load_n(&h->obj, __ATOMIC_ACQUIRE);
}

static void obj_store(Handle *h, void *obj)
{
	__atomic_store_n(&h->obj, obj, __ATOMIC_RELEASE);
}

/* Take a pin on h: 0, or -1 when h is closed or closing (no pin).  One
 * fetch_add, not a compare-and-swap loop: a pin taken on a closing handle
 * is given back at once, and drain_pins only waits for the count to come
 * down, so the passing increment is harmless; the add and close()'s
 * fetch_or are both read-modify-writes of pins, so one of the two sees
 * the other. */
static int pin(Handle *h)
{
	Py_ssize_t n = __atomic_fetch_add(&h->pins, 1, __ATOMIC_ACQ_REL);

	if ((n & HANDLE_CLOSING) || obj_load(h) == NULL) {
		__atomic_fetch_sub(&h->pins, 1, __ATOMIC_RELEASE);
		return -1;
	}
	return 0;
}

static void unpin(Handle *h)
{
	__atomic_fetch_sub(&h->pins, 1, __ATOMIC_RELEASE);
}

/* How many pins this thread holds on h. */
static Py_ssize_t my_pins(Handle *h)
{
	Py_ssize_t n = 0;
	int i;

	for (i = 0; i < tls_pins.depth; i++)
		n += tls_pins.pins[i] == h;
	return n;
}

/* This thread's pin stack.  In a shared object each access of a
 * _Thread_local calls __tls_get_addr, and the compiler repeats that call
 * after every atomic (4 calls per method, ~70 instructions): take the
 * address once, opaque to the compiler, and keep it in the scope for
 * handle_scope_exit. */
static inline struct pin_stack *pin_stack(void)
{
	struct pin_stack *tls = &tls_pins;

	__asm__("" : "+r"(tls));
	return tls;
}

int handle_scope_enter(Handle *h, HandleScope *scope)
{
	struct pin_stack *tls = pin_stack();

	scope->mark = -1;
	if (tls->depth >= HANDLE_PIN_MAX) {
		/* Nested past any real call chain: refuse rather than run
		 * unpinned. */
		PyErr_SetString(PyExc_RecursionError,
				"too many nested calls on verbs objects");
		return -1;
	}
	if (pin(h) < 0)
		return closed_error(h);
	scope->mark = tls->depth;
	scope->stack = tls;
	tls->pins[tls->depth++] = h;
	return 0;
}

void handle_scope_exit(HandleScope *scope)
{
	struct pin_stack *tls = scope->stack;

	if (scope->mark < 0)
		return;
	while (tls->depth > scope->mark)
		unpin(tls->pins[--tls->depth]);
}

/* Sleep ns nanoseconds, detached (a stop-the-world pause may wait on us). */
static void nap(long ns)
{
	struct timespec t = { 0, ns };

	Py_BEGIN_ALLOW_THREADS
	nanosleep(&t, NULL);
	Py_END_ALLOW_THREADS
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* close()'s first half: set HANDLE_CLOSING and wait for the other
 * threads' pins to go.  0, or -1 with EBUSY set (HANDLE_CLOSING cleared
 * again). */
static int drain_pins(Handle *h)
{
	Py_ssize_t mine = my_pins(h);
	long long deadline = now_ns() + HANDLE_DRAIN_NS;
	long ns = 1000;

	__atomic_fetch_or(&h->pins, HANDLE_CLOSING, __ATOMIC_ACQ_REL);
	while ((__atomic_load_n(&h->pins, __ATOMIC_ACQUIRE) &
		~HANDLE_CLOSING) != mine) {
		if (__atomic_load_n(&h->busy, __ATOMIC_ACQUIRE) > 0 ||
		    now_ns() > deadline) {
			__atomic_fetch_and(&h->pins, ~HANDLE_CLOSING,
					   __ATOMIC_ACQ_REL);
			verbs_error_fmt(EBUSY, h->kind->destroy_verb,
					"%s is in use by another thread",
					h->kind->name);
			return -1;
		}
		nap(ns);
		if (ns < 1000000)
			ns *= 2;
	}
	return 0;
}
#else
#define TREE_LOCK() ((void)0)
#define TREE_UNLOCK() ((void)0)
#define obj_load(h) ((h)->obj)
#define obj_store(h, o) ((h)->obj = (o))
#endif

/* No object, no links, no users; closed: no pin may be taken any more
 * (free-threaded builds), else none is held. */
static void handle_reset(Handle *h, int closed)
{
	h->obj = NULL;
	h->children = NULL;
	h->sib_prev = h->sib_next = NULL;
	h->users = 0;
	h->busy = 0;
#ifdef Py_GIL_DISABLED
	h->pins = closed ? HANDLE_CLOSING : 0;
#else
	(void)closed;
#endif
}

void handle_init(Handle *h, const HandleKind *kind, Handle *parent)
{
	Handle **head;

	handle_reset(h, 0);
	h->kind = kind;
	h->parent = parent;
	if (parent != NULL)
		Py_INCREF((PyObject *)parent);
#if defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030E0000
	PyUnstable_EnableTryIncRef((PyObject *)h); /* for handle_find */
#endif
	TREE_LOCK();
	head = parent ? &parent->children : &roots;
	h->sib_next = *head;
	if (*head)
		(*head)->sib_prev = h;
	*head = h;
	TREE_UNLOCK();
}

PyObject *handle_adopt(PyTypeObject *tp, const HandleKind *kind, Handle *parent,
		       void *obj)
{
	Handle *h = (Handle *)PyType_GenericAlloc(tp, 0);

	if (h == NULL) {
		Handle tmp;

		memset(&tmp, 0, sizeof(tmp));
		tmp.obj = obj;
		kind->destroy(&tmp);
		return NULL;
	}
	handle_init(h, kind, parent);
	obj_store(h, obj); /* handle_find may look at it already */
	return (PyObject *)h;
}

static void handle_unlink_locked(Handle *h)
{
	Handle **head = h->parent ? &h->parent->children : &roots;

	if (h->sib_prev)
		h->sib_prev->sib_next = h->sib_next;
	else if (*head == h)
		*head = h->sib_next;
	if (h->sib_next)
		h->sib_next->sib_prev = h->sib_prev;
	h->sib_prev = h->sib_next = NULL;
}

static void handle_unlink(Handle *h)
{
	TREE_LOCK();
	handle_unlink_locked(h);
	TREE_UNLOCK();
}

void handle_reparent(Handle *h, Handle *new_parent)
{
	Handle *old = h->parent;

	Py_INCREF((PyObject *)new_parent);
	TREE_LOCK();
	handle_unlink_locked(h);
	h->parent = new_parent;
	h->sib_next = new_parent->children;
	if (new_parent->children)
		new_parent->children->sib_prev = h;
	new_parent->children = h;
	TREE_UNLOCK();
	Py_DECREF((PyObject *)old);
}

/* In the child: no verbs.  Every inherited handle becomes a closed,
 * unlinked handle; references (parents, CQs, owners) are dropped by the
 * deallocators as usual. */
static void forget_tree(Handle *h)
{
	Handle *c, *next;

	for (c = h->children; c != NULL; c = next) {
		next = c->sib_next;
		forget_tree(c);
	}
	/* The threads that held pins are gone: closed for good. */
	handle_reset(h, 1);
}

/*
 * Run by os.fork() (and multiprocessing) in the child, through
 * os.register_at_fork(after_in_child=...): Python can only go on running
 * in a child that went through PyOS_AfterFork_Child, which is what calls
 * it.  Not a pthread_atfork handler: that would run inside fork(), where
 * with ibv_fork_init() the heap pages that share memory with registered
 * buffers are already missing (MADV_DONTFORK).
 */
static PyObject *handle_after_fork_child(PyObject *mod, PyObject *unused)
{
	Handle *r, *next;

#ifdef Py_GIL_DISABLED
	/* Only this thread survived fork(): a lock another one held stays
	 * held.  Start over with an unlocked one and no pins of ours. */
	memset(&tree_lock, 0, sizeof(tree_lock));
	tls_pins.depth = 0;
#endif
	for (r = roots; r != NULL; r = next) {
		next = r->sib_next;
		forget_tree(r);
		forked_child = 1;
	}
	roots = NULL;
	Py_RETURN_NONE;
}

static PyMethodDef after_fork_def = {
	"_after_fork_child", handle_after_fork_child, METH_NOARGS,
	"Closes the handles inherited across fork() (no verb is called)."
};

int handle_module_init(PyObject *module)
{
	PyObject *os, *reg, *fn = NULL, *args = NULL, *kw = NULL, *res = NULL;

	os = PyImport_ImportModule("os");
	if (os == NULL)
		return -1;
	reg = PyObject_GetAttrString(os, "register_at_fork");
	Py_DECREF(os);
	if (reg == NULL)
		return -1;
	fn = PyCFunction_NewEx(&after_fork_def, module, NULL);
	args = PyTuple_New(0);
	kw = fn ? Py_BuildValue("{sO}", "after_in_child", fn) : NULL;
	if (args != NULL && kw != NULL)
		res = PyObject_Call(reg, args, kw);
	Py_XDECREF(res);
	Py_XDECREF(kw);
	Py_XDECREF(args);
	Py_XDECREF(fn);
	Py_DECREF(reg);
	return res == NULL ? -1 : 0;
}

void handle_use(Handle *used)
{
	TREE_LOCK();
	used->users++;
	TREE_UNLOCK();
}

void handle_unuse(Handle *used)
{
	TREE_LOCK();
	if (used->users > 0)
		used->users--;
	TREE_UNLOCK();
}

void handle_unuse_clear(PyObject **used)
{
	if (*used != NULL) {
		handle_unuse(HANDLE(*used));
		Py_CLEAR(*used);
	}
}

#ifdef Py_GIL_DISABLED
/* Inside a method's scope (HANDLE_CHECK), an argument handle is pinned
 * until that method returns; outside any, it is only checked. */
int handle_check(Handle *h)
{
	struct pin_stack *tls = pin_stack();

	if (tls->depth == 0 || tls->depth >= HANDLE_PIN_MAX)
		return obj_load(h) != NULL ? 0 : closed_error(h);
	if (pin(h) < 0)
		return closed_error(h);
	tls->pins[tls->depth++] = h;
	return 0;
}
#else
int handle_check(Handle *h)
{
	if (h->obj != NULL)
		return 0;
	return closed_error(h);
}
#endif

static inline __attribute__((always_inline)) int closed_error(Handle *h)
{
	if (forked_child)
		verbs_error_fmt(
			EBADF, NULL,
			"%s is closed (in a child process, "
			"the handles inherited across fork() are closed)",
			h->kind->name);
	else
		verbs_error_fmt(EBADF, NULL, "%s is closed", h->kind->name);
	return -1;
}

/* "MR x2, QP x1" for the open children of h. */
static PyObject *children_summary(Handle *h)
{
	PyObject *counts = PyDict_New(), *parts = NULL, *sep = NULL;
	PyObject *res = NULL, *key, *val;
	Py_ssize_t pos = 0;
	Handle *c;

	if (counts == NULL)
		return NULL;
	for (c = h->children; c != NULL; c = c->sib_next) {
		PyObject *n, *old = PyDict_GetItemString(counts, c->kind->name);
		long v = old ? PyLong_AsLong(old) + 1 : 1;

		n = PyLong_FromLong(v);
		if (n == NULL ||
		    PyDict_SetItemString(counts, c->kind->name, n) < 0) {
			Py_XDECREF(n);
			goto done;
		}
		Py_DECREF(n);
	}
	parts = PyList_New(0);
	if (parts == NULL)
		goto done;
	while (PyDict_Next(counts, &pos, &key, &val)) {
		PyObject *s = PyUnicode_FromFormat("%U x%S", key, val);

		if (s == NULL || PyList_Append(parts, s) < 0) {
			Py_XDECREF(s);
			goto done;
		}
		Py_DECREF(s);
	}
	sep = PyUnicode_FromString(", ");
	if (sep == NULL)
		goto done;
	res = PyUnicode_Join(sep, parts);
done:
	Py_XDECREF(sep);
	Py_XDECREF(parts);
	Py_DECREF(counts);
	return res;
}

/* h's busy count.  The free-threaded build counts it with atomics in the
 * threads of a GIL-free call (HANDLE_BUSY_ENTER) and reads it as one too
 * (TSan reported a plain read racing qp.query() on another thread). */
static Py_ssize_t busy_count(Handle *h)
{
#ifdef Py_GIL_DISABLED
	return __atomic_load_n(&h->busy, __ATOMIC_ACQUIRE);
#else
	return h->busy;
#endif
}

/* EBUSY while h is busy, has open children or users: -1 with the error
 * set, else 0.  The free-threaded build holds tree_lock around it. */
static int close_refused(Handle *h)
{
	if (busy_count(h)) {
		verbs_error_fmt(EBUSY, h->kind->destroy_verb,
				"%s is in use by another thread (a blocking "
				"call is in progress)",
				h->kind->name);
		return -1;
	}
	if (h->children != NULL) {
		PyObject *s = children_summary(h);

		if (s == NULL)
			return -1;
		verbs_error_fmt(
			EBUSY, h->kind->destroy_verb,
			"%s still has open children: %U; close them first",
			h->kind->name, s);
		Py_DECREF(s);
		return -1;
	}
	if (h->users) {
		verbs_error_fmt(EBUSY, h->kind->destroy_verb,
				"%s is still used by %d open object(s) "
				"(QPs using a CQ or SRQ, CQs using a channel, "
				"unacked AsyncEvents); "
				"close them first",
				h->kind->name, h->users);
		return -1;
	}
	return 0;
}

#ifdef Py_GIL_DISABLED
/* Free-threaded: refuse early, then stop new calls and wait for those in
 * flight, then look again (one of them may have made a child or a user),
 * all before the destroy verb.  0: go on and destroy (HANDLE_CLOSING set);
 * 1: already closed; -1: refused, HANDLE_CLOSING clear. */
static int close_begin(Handle *h)
{
	int refused;

	if (obj_load(h) == NULL)
		return 1;
	TREE_LOCK();
	refused = close_refused(h);
	TREE_UNLOCK();
	if (refused < 0)
		return -1;
	if (__atomic_load_n(&h->pins, __ATOMIC_ACQUIRE) & HANDLE_CLOSING) {
		/* Another thread is closing it: wait for its outcome. */
		while (__atomic_load_n(&h->pins, __ATOMIC_ACQUIRE) &
		       HANDLE_CLOSING) {
			if (obj_load(h) == NULL)
				return 1;
			nap(100000);
		}
		return close_begin(h);
	}
	if (drain_pins(h) < 0)
		return -1;
	if (obj_load(h) == NULL)
		return 1;
	TREE_LOCK();
	refused = close_refused(h);
	TREE_UNLOCK();
	if (refused < 0) {
		__atomic_fetch_and(&h->pins, ~HANDLE_CLOSING, __ATOMIC_ACQ_REL);
		return -1;
	}
	return 0;
}
#endif

int handle_close(Handle *h)
{
	int rc;

#ifdef Py_GIL_DISABLED
	rc = close_begin(h);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
#else
	if (h->obj == NULL)
		return 0;
	if (close_refused(h) < 0)
		return -1;
#endif
	rc = h->kind->destroy(h);
	if (rc != 0) {
#ifdef Py_GIL_DISABLED
		__atomic_fetch_and(&h->pins, ~HANDLE_CLOSING, __ATOMIC_ACQ_REL);
#endif
		verbs_error(rc, h->kind->destroy_verb);
		return -1;
	}
	obj_store(h, NULL);
	handle_unlink(h);
	if (h->kind->release)
		h->kind->release(h);
	return 0;
}

void handle_close_quiet(Handle *h)
{
	PyObject *t, *v, *tb;

	if (h->obj == NULL)
		return;
	PyErr_Fetch(&t, &v, &tb);
	/* Report against the type, not h: called from tp_dealloc, where h's
	 * refcount is 0 and the hook's reference to it would deallocate it
	 * a second time (recursively, until the stack overflows). */
	if (handle_close(h) < 0)
		PyErr_WriteUnraisable((PyObject *)Py_TYPE(h));
	PyErr_Restore(t, v, tb);
}

int handle_traverse(Handle *h, visitproc visit, void *arg)
{
	Py_VISIT((PyObject *)Py_TYPE(h));
	Py_VISIT((PyObject *)h->parent);
	return 0;
}

void handle_dealloc(Handle *h)
{
	PyTypeObject *tp = Py_TYPE(h);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	PyObject_GC_UnTrack(h);
	handle_close_quiet(h);
	if (h->obj != NULL) {
		/* Destroy failed (reported as unraisable): the kernel object
		 * is leaked with the process, but nothing points at freed
		 * memory from the children list any more. */
		handle_unlink(h);
	}
	Py_CLEAR(h->parent);
	tp_free(h);
	Py_DECREF(tp);
}

void gc_tp_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);

	PyObject_GC_UnTrack(self);
	((inquiry)PyType_GetSlot(tp, Py_tp_clear))(self);
	((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
	Py_DECREF(tp);
}

int handle_tp_traverse(PyObject *self, visitproc visit, void *arg)
{
	return handle_traverse(HANDLE(self), visit, arg);
}

void handle_tp_dealloc(PyObject *self)
{
	handle_dealloc(HANDLE(self));
}

/* The docstrings of HANDLE_METHODS and HANDLE_GETSETS (ibverbs.h): what
 * every handle type shares. */

const char handle_close__doc__[] =
	"Destroy the object and release what it holds.\n"
	"\n"
	"Idempotent: closing a closed object does nothing. After a\n"
	"refusal the object stays open and usable. Every method of a\n"
	"closed object raises VerbsError(EBADF).\n"
	"\n"
	"Wraps the type's destroy verb (ibv_dealloc_pd(3),\n"
	"ibv_dereg_mr(3), ibv_destroy_qp(3), ...: the class docstring\n"
	"names it).\n"
	"\n"
	"Raises:\n"
	"    VerbsError: EBUSY while children are open, other objects\n"
	"        use it (QPs of a CQ or SRQ, CQs of a channel, unacked\n"
	"        AsyncEvents) or a thread waits in a blocking call on\n"
	"        it; else the destroy verb failed (``errno``).";

const char handle_enter__doc__[] =
	"Enter a ``with`` block: return the object itself.\n"
	"\n"
	"Raises:\n"
	"    VerbsError: EBADF once the object is closed.";

const char handle_exit__doc__[] =
	"Leave a ``with`` block: ``close()`` the object.\n"
	"\n"
	"Does not swallow the block's exception.\n"
	"\n"
	"Raises:\n"
	"    VerbsError: as ``close()`` (EBUSY while children are open).";

const char handle_closed__doc__[] =
	"True once ``close()`` succeeded (or, in a child process, for\n"
	"every handle inherited across ``fork()``).";

PyObject *handle_meth_close(PyObject *self, PyObject *unused)
{
	if (handle_close(HANDLE(self)) < 0)
		return NULL;
	Py_RETURN_NONE;
}

PyObject *handle_meth_enter(PyObject *self, PyObject *unused)
{
	if (handle_check(HANDLE(self)) < 0)
		return NULL;
	Py_INCREF(self);
	return self;
}

PyObject *handle_meth_exit(PyObject *self, PyObject *args)
{
	if (handle_close(HANDLE(self)) < 0)
		return NULL;
	Py_RETURN_FALSE;
}

PyObject *handle_get_closed(PyObject *self, void *closure)
{
	return PyBool_FromLong(obj_load(HANDLE(self)) == NULL);
}

PyObject *handle_get_parent(PyObject *self, void *closure)
{
	PyObject *p;

	/* Under the tree lock: MR.rereg on another thread may move the MR
	 * to another PD and drop its reference to the old one
	 * (handle_reparent). */
	TREE_LOCK();
	p = (PyObject *)HANDLE(self)->parent;
	if (p == NULL)
		p = Py_None;
	Py_INCREF(p);
	TREE_UNLOCK();
	return p;
}

PyObject *handle_no_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyErr_Format(PyExc_TypeError,
		     "cannot create %R instances directly; use the factory "
		     "method of its parent",
		     (PyObject *)type);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Waiting on a handle's fd (CompChannel, Context's async events)     */
/* ------------------------------------------------------------------ */

int fd_is_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

/* Non-blocking readability check, with the GIL held: > 0 readable, 0 not,
 * -1 with an exception set. */
static int fd_readable_now(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	int rc;

	do
		rc = poll(&p, 1, 0);
	while (rc < 0 && errno == EINTR);
	if (rc < 0) {
		verbs_error(errno, "poll");
		return -1;
	}
	return rc;
}

int fd_wait_readable(Handle *h, int fd)
{
	struct pollfd p;
	int rc, err;

	for (;;) {
		p.fd = fd;
		p.events = POLLIN;
		p.revents = 0;
		/* busy: close() of h refuses while we sleep on its fd */
		HANDLE_BUSY_ENTER(h);
		Py_BEGIN_ALLOW_THREADS
		rc = poll(&p, 1, -1);
		err = errno;
		Py_END_ALLOW_THREADS
		HANDLE_BUSY_EXIT(h);
		if (rc < 0 && err != EINTR) {
			verbs_error(err, "poll");
			return -1;
		}
		if (rc < 0) {
			/* Let Ctrl-C through; a handler may close h. */
			if (PyErr_CheckSignals() < 0 || handle_check(h) < 0)
				return -1;
			continue;
		}
		/* Another thread may have taken the event since poll()
		 * returned: look again now that the GIL is ours. */
		rc = fd_readable_now(fd);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
	}
}

static Handle *find_locked(Handle *root, const void *obj)
{
	Handle *c, *found;

	for (c = root->children; c != NULL; c = c->sib_next) {
		if (obj_load(c) == obj)
			return c;
		found = find_locked(c, obj);
		if (found != NULL)
			return found;
	}
	return NULL;
}

Handle *handle_find(Handle *root, const void *obj)
{
	Handle *found;

	if (obj == NULL)
		return NULL;
	TREE_LOCK();
	found = find_locked(root, obj);
	/* A new reference, taken under the lock: once it is released the
	 * handle may be closed and unlinked by another thread, but not freed
	 * under the caller. */
#if defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030E0000
	/* One already in its deallocator (no reference left) is as good
	 * as closed. */
	if (found != NULL && !PyUnstable_TryIncRef((PyObject *)found))
		found = NULL;
#else
	/* 3.13t has no PyUnstable_TryIncRef: a handle whose last reference
	 * went on another thread, still linked until its deallocator takes
	 * the lock, would be revived here.  The GIL build cannot get here
	 * then (the deallocator runs with the GIL held). */
	Py_XINCREF((PyObject *)found);
#endif
	TREE_UNLOCK();
	return found;
}
