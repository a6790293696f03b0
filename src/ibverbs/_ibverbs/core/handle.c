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

/* Open handles without a parent (Contexts), linked like children. */
static Handle *roots;
/* Set in a child process whose parent had handles. */
static int forked_child;

void handle_init(Handle *h, const HandleKind *kind, Handle *parent)
{
	Handle **head = parent ? &parent->children : &roots;

	h->obj = NULL;
	h->kind = kind;
	h->children = NULL;
	h->sib_prev = h->sib_next = NULL;
	h->users = 0;
	h->busy = 0;
	h->parent = parent;
	if (parent != NULL)
		Py_INCREF((PyObject *)parent);
	h->sib_next = *head;
	if (*head)
		(*head)->sib_prev = h;
	*head = h;
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
	h->obj = obj;
	return (PyObject *)h;
}

static void handle_unlink(Handle *h)
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

void handle_reparent(Handle *h, Handle *new_parent)
{
	Handle *old = h->parent;

	handle_unlink(h);
	h->parent = new_parent;
	Py_INCREF((PyObject *)new_parent);
	h->sib_next = new_parent->children;
	if (new_parent->children)
		new_parent->children->sib_prev = h;
	new_parent->children = h;
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
	h->obj = NULL;
	h->children = NULL;
	h->sib_prev = h->sib_next = NULL;
	h->users = 0;
	h->busy = 0;
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
	used->users++;
}

void handle_unuse(Handle *used)
{
	if (used->users > 0)
		used->users--;
}

void handle_unuse_clear(PyObject **used)
{
	if (*used != NULL) {
		handle_unuse(HANDLE(*used));
		Py_CLEAR(*used);
	}
}

int handle_check(Handle *h)
{
	if (h->obj != NULL)
		return 0;
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

int handle_close(Handle *h)
{
	int rc;

	if (h->obj == NULL)
		return 0;
	if (h->busy) {
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
	rc = h->kind->destroy(h);
	if (rc != 0) {
		verbs_error(rc, h->kind->destroy_verb);
		return -1;
	}
	h->obj = NULL;
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
	return PyBool_FromLong(HANDLE(self)->obj == NULL);
}

PyObject *handle_get_parent(PyObject *self, void *closure)
{
	PyObject *p = (PyObject *)HANDLE(self)->parent;

	if (p == NULL)
		Py_RETURN_NONE;
	Py_INCREF(p);
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

Handle *handle_find(Handle *root, const void *obj)
{
	Handle *c, *found;

	if (obj == NULL)
		return NULL;
	for (c = root->children; c != NULL; c = c->sib_next) {
		if (c->obj == obj)
			return c;
		found = handle_find(c, obj);
		if (found != NULL)
			return found;
	}
	return NULL;
}
