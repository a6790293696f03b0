/*
 * cq_ex.c - CQEx: an extended completion queue (ibv_cq_ex), and the
 * building of the WCEx records its poll() returns (the WCEx type is in
 * wc_ex.c).
 *
 * CQEx is a subclass of CQ (PyType_FromSpecWithBases), so a QP takes it
 * as its send or receive CQ, and close(), req_notify(), ack_events() and
 * the channel work as for a CQ; the handle's obj is ibv_cq_ex_to_cq().
 *
 * It never calls ibv_poll_cq: a provider's classic poll and its
 * start_poll session may share a lock (rxe takes the CQ's spinlock in
 * start_poll and drops it in end_poll), so CQEx overrides poll() and
 * poll_count() with loops over start_poll/next_poll/end_poll.
 *
 * The raw iteration keeps one session open across Python calls:
 * start_poll() opens it, next_poll() moves on, end_poll() closes it; the
 * read_*() accessors and the wr_id/status properties read the current
 * entry.  An accessor outside a session, after the last entry, or for a
 * field not asked for in wc_flags raises ValueError before reaching the
 * provider (providers read whatever the CQE holds, or crash).  close()
 * refuses with EBUSY while a session is open; the deallocator ends it.
 */
#define _GNU_SOURCE /* dladdr */
#include "ibverbs.h"
#include "cq/cq.h"
#include <dlfcn.h>
#include <structmember.h>
#include <stddef.h>
#include <string.h>
#include <limits.h>
#include <stdio.h>

typedef struct {
	CQObject cq;
	struct ibv_cq_ex *cq_ex;
	uint64_t wc_flags; /* as asked for at creation */
	int polling; /* a start_poll session is open */
	int has_entry; /* ... and it stands on an entry */
	int per_entry; /* rxe: one entry per provider session (cqex_step) */
	struct wc_ex *store; /* poll()'s storage */
	int store_len;
	PyObject *pdom; /* the ParentDomain of CQInitAttrEx, or NULL (used) */
} CQExObject;

#define CQX(self) ((CQExObject *)(self))

/* The wc_flags bits a CQEx accepts (verbs.h's IBV_CREATE_CQ_SUP_WC_FLAGS;
 * TM_INFO is read by read_tm_info() only, poll()'s WCEx leaves it out). */
#define CQEX_WC_FLAGS IBV_CREATE_CQ_SUP_WC_FLAGS

/* ------------------------------------------------------------------ */
/* Creation, destruction                                               */
/* ------------------------------------------------------------------ */

static void cqex_release(Handle *h)
{
	CQObject *self = (CQObject *)h;

	CQX(h)->cq_ex = NULL;
	handle_unuse_clear(&self->channel);
	handle_unuse_clear(&CQX(h)->pdom);
}

static const HandleKind cqex_kind = { "CQEx", "ibv_destroy_cq", cq_destroy,
				      cqex_release };

/* Attribute `name` of the init attr, or NULL with AttributeError. */
static PyObject *attr_get(PyObject *o, const char *name)
{
	return attr_required(o, name, "init_attr", "CQInitAttrEx");
}

/* CQInitAttrEx.parent_domain (None when the object has no such field):
 * *pdom a new reference to an open ParentDomain of ctx, or NULL.  0 / -1. */
static int init_attr_pdom(ContextObject *ctx, PyObject *o, PyObject **pdom)
{
	PyObject *v;

	*pdom = NULL;
	if (attr_optional(o, "parent_domain", &v) < 0)
		return -1;
	if (v == NULL || v == Py_None) {
		Py_XDECREF(v);
		return 0;
	}
	if (!PyObject_TypeCheck(v, ST.ParentDomain_type)) {
		arg_type_error("parent_domain", "ParentDomain", 1, v);
		Py_DECREF(v);
		return -1;
	}
	if (handle_check(HANDLE(v)) < 0) {
		Py_DECREF(v);
		return -1;
	}
	if (HANDLE(v)->parent != HANDLE(ctx)) {
		arg_other_parent_error("parent_domain", "Context");
		Py_DECREF(v);
		return -1;
	}
	*pdom = v;
	return 0;
}

/* The fields of a CQInitAttrEx; *channel is a new reference or NULL. */
static int init_attr_parse(ContextObject *ctx, PyObject *o,
			   struct ibv_cq_init_attr_ex *a, PyObject **channel)
{
	PyObject *cqe = NULL, *flags = NULL, *vec = NULL, *cflags = NULL;
	PyObject *ch = NULL;
	long v, vv;
	uint64_t wf;
	int rc = -1;

	*channel = NULL;
	memset(a, 0, sizeof(*a));
	if ((cqe = attr_get(o, "cqe")) == NULL ||
	    (flags = attr_get(o, "wc_flags")) == NULL ||
	    (vec = attr_get(o, "comp_vector")) == NULL ||
	    (cflags = attr_get(o, "flags")) == NULL ||
	    (ch = attr_get(o, "channel")) == NULL)
		goto out;
	if (arg_int(cqe, "cqe", 1, INT32_MAX, &v) < 0)
		goto out;
	a->cqe = (uint32_t)v;
	if (arg_u64(flags, "wc_flags", &wf) < 0)
		goto out;
	if (wf & ~(uint64_t)CQEX_WC_FLAGS) {
		PyErr_Format(PyExc_ValueError,
			     "wc_flags has bits no CQEx takes: %s "
			     "(CreateCQWCFlags)",
			     HEX64(wf & ~(uint64_t)CQEX_WC_FLAGS));
		goto out;
	}
	a->wc_flags = wf;
	if (arg_int(vec, "comp_vector", 0, INT32_MAX, &v) < 0)
		goto out;
	a->comp_vector = (uint32_t)v;
	if (arg_int(cflags, "flags", 0,
		    IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
			    IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
		    &vv) < 0)
		goto out;
	a->flags = (uint32_t)vv;
	if (vv)
		a->comp_mask |= IBV_CQ_INIT_ATTR_MASK_FLAGS;
	if (ch != Py_None) {
		if (!PyObject_TypeCheck(ch, ST.CompChannel_type)) {
			arg_type_error("channel", "CompChannel", 1, ch);
			goto out;
		}
		if (handle_check(HANDLE(ch)) < 0)
			goto out;
		if (HANDLE(ch)->parent != HANDLE(ctx)) {
			arg_other_parent_error("channel", "Context");
			goto out;
		}
		*channel = ch;
		ch = NULL;
	}
	rc = 0;
out:
	Py_XDECREF(cqe);
	Py_XDECREF(flags);
	Py_XDECREF(vec);
	Py_XDECREF(cflags);
	Py_XDECREF(ch);
	return rc;
}

/* Whether the CQ's poll ops are the rxe provider's: their code lies in
 * librxe-rdmav<N>.so (or its librxe.so link), the file libibverbs loads
 * for rxe in every release.  Used for per_entry (cqex_step). */
static int cqex_ops_are_rxe(struct ibv_cq_ex *cq)
{
	Dl_info info;
	const char *base;

	if (!dladdr((void *)cq->start_poll, &info) || info.dli_fname == NULL)
		return 0;
	base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	return strncmp(base, "librxe", 6) == 0 &&
	       (base[6] == '-' || base[6] == '.');
}

/* Context.create_cq_ex(init_attr) */
METHOD_DOC(context_create_cq_ex,
	   "Create an extended completion queue.\n"
	   "\n"
	   "``init_attr`` is a ``CQInitAttrEx``: cqe, wc_flags\n"
	   "(``CreateCQWCFlags``: the fields ``poll()`` and the\n"
	   "``read_*()`` accessors may read; TM_INFO only\n"
	   "``read_tm_info()``), parent_domain (a ParentDomain or None),\n"
	   "channel, comp_vector and flags (``CreateCQAttrFlags``).\n"
	   "\n"
	   "Wraps ``ibv_create_cq_ex`` (man page ibv_create_cq_ex(3)).\n"
	   "\n"
	   "Args:\n"
	   "    init_attr: a CQInitAttrEx (or any object with its fields).\n"
	   "\n"
	   "Returns:\n"
	   "    The new CQEx.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: init_attr lacks a field, or a field has the\n"
	   "        wrong type.\n"
	   "    ValueError: wc_flags has bits a CQEx does not take, a value\n"
	   "        is out of range, or the channel or parent domain is of\n"
	   "        another Context.\n"
	   "    VerbsError: EBADF if the Context, channel or parent domain\n"
	   "        is closed; EOPNOTSUPP when the provider has no extended\n"
	   "        CQ (or no parent domains); else the verb failed\n"
	   "        (``errno``).");

#define CREATE_CQ_EX_ARGS(X, S) \
	X(S, RECORD, PyObject *, init_attr, CQInitAttrEx)
ARGS_DECLARE(create_cq_ex, CREATE_CQ_EX_ARGS);
METHOD_ARGS(context_create_cq_ex, "Context.create_cq_ex", create_cq_ex_params);

PyObject *context_create_cq_ex(PyObject *parent, PyObject *args, PyObject *kw)
{
	struct create_cq_ex_args r;

	HANDLE_CHECK(parent);
	if (args_parse(&context_create_cq_ex_args, parent, args, kw, &r) < 0)
		return NULL;
	return cqex_create(parent, r.init_attr, ST.CQEx_type,
			   "ibv_create_cq_ex", NULL, NULL);
}

/* ibv_create_cq_ex, the make function of Context.create_cq_ex. */
static struct ibv_cq_ex *cqex_make_default(struct ibv_context *ctx,
					   struct ibv_cq_init_attr_ex *a,
					   void *arg)
{
	return ibv_create_cq_ex(ctx, a);
}

PyObject *cqex_create(PyObject *parent, PyObject *init_attr, PyTypeObject *type,
		      const char *verb, cqex_make_fn make, void *arg)
{
	ContextObject *ctx = (ContextObject *)parent;
	struct ibv_cq_init_attr_ex a;
	struct ibv_cq_ex *cq;
	PyObject *channel, *pdom;
	CQExObject *self;
	int err;

	if (init_attr_parse(ctx, init_attr, &a, &channel) < 0)
		return NULL;
	if (init_attr_pdom(ctx, init_attr, &pdom) < 0) {
		Py_XDECREF(channel);
		return NULL;
	}
	/* Allocated first: its address is the cq_context. */
	self = HANDLE_ALLOC(CQExObject, type);
	if (self == NULL) {
		Py_XDECREF(channel);
		Py_XDECREF(pdom);
		return NULL;
	}
	/* Reading the attributes or a GC pass may have run Python code
	 * that closed the Context, the channel or the parent domain: check
	 * again. */
	if (handle_check(HANDLE(ctx)) < 0 ||
	    (channel != NULL && handle_check(HANDLE(channel)) < 0) ||
	    (pdom != NULL && handle_check(HANDLE(pdom)) < 0)) {
		Py_XDECREF(channel);
		Py_XDECREF(pdom);
		Py_DECREF(self);
		return NULL;
	}
	a.cq_context = self;
	a.channel = channel ? HANDLE(channel)->obj : NULL;
	if (pdom != NULL) {
		a.parent_domain = HANDLE(pdom)->obj;
		a.comp_mask |= IBV_CQ_INIT_ATTR_MASK_PD;
	}
	errno = 0;
	cq = (make ? make : cqex_make_default)(
		(struct ibv_context *)HANDLE(ctx)->obj, &a, arg);
	err = errno_or(EINVAL);
	if (cq == NULL) {
		Py_XDECREF(channel);
		Py_XDECREF(pdom);
		Py_DECREF(self);
		if (PyErr_Occurred())
			return NULL;
		return verbs_error_fmt(err, verb,
				       "cqe=%u wc_flags=0x%x flags=0x%x%s",
				       a.cqe, (unsigned int)a.wc_flags, a.flags,
				       pdom ? " with a parent domain" : "");
	}
	handle_init(HANDLE(self), &cqex_kind, HANDLE(ctx));
	HANDLE_SET_OBJ(self, ibv_cq_ex_to_cq(cq));
	self->cq_ex = cq;
	self->wc_flags = a.wc_flags;
	self->per_entry = cqex_ops_are_rxe(cq);
	if (channel != NULL) {
		self->cq.channel = channel; /* the reference taken above */
		handle_use(HANDLE(channel));
	}
	if (pdom != NULL) {
		self->pdom = pdom; /* the reference taken above */
		handle_use(HANDLE(pdom));
	}
	return (PyObject *)self;
}

/* ------------------------------------------------------------------ */
/* One entry into a struct wc_ex                                       */
/* ------------------------------------------------------------------ */

/* read_entry's two passes over CQEX_FIELDS (cq.h): the fields a failed
 * entry has too (when ALL), then, on success, the rest (when OK).  Each
 * field asked for (need) whose op the provider has is stored in its
 * slot. */
#define READ_FIELD(field, reader, need, slot)                \
	if ((!(need) || (f & (need))) && cq->read_##field) { \
		STORE_##slot(field, reader, need);           \
	}
#define STORE_WC(field, reader, need) wc->field = reader(cq)
#define STORE_EXT(field, reader, need) \
	do {                           \
		x->field = reader(cq); \
		x->have |= (need);     \
	} while (0)
#define STORE_IMM(field, reader, need)                            \
	do {                                                      \
		if (wc->wc_flags & IBV_WC_WITH_INV)               \
			wc->invalidated_rkey =                    \
				ibv_wc_read_invalidated_rkey(cq); \
		else if (wc->wc_flags & IBV_WC_WITH_IMM)          \
			wc->imm_data = reader(cq);                \
	} while (0)
#define READ_IF_ALL_ALL READ_FIELD
#define READ_IF_ALL_OK(field, reader, need, slot)
#define READ_IF_OK_ALL(field, reader, need, slot)
#define READ_IF_OK_OK READ_FIELD
#define READ_ALL(field, reader, need, needs, when, slot, conv, doc) \
	READ_IF_ALL_##when(field, reader, need, slot)
#define READ_OK(field, reader, need, needs, when, slot, conv, doc) \
	READ_IF_OK_##when(field, reader, need, slot)

static void read_entry(struct ibv_cq_ex *cq, uint64_t f, struct wc_ex *x)
{
	struct ibv_wc *wc = &x->wc;

	memset(x, 0, sizeof(*x));
	wc->wr_id = cq->wr_id;
	wc->status = cq->status;
	CQEX_FIELDS(READ_ALL)
	/* As with ibv_poll_cq, a failed entry has nothing else valid. */
	if (wc->status != IBV_WC_SUCCESS)
		return;
	CQEX_FIELDS(READ_OK)
}
#undef READ_OK
#undef READ_ALL
#undef READ_IF_OK_OK
#undef READ_IF_OK_ALL
#undef READ_IF_ALL_OK
#undef READ_IF_ALL_ALL
#undef STORE_IMM
#undef STORE_EXT
#undef STORE_WC
#undef READ_FIELD

static PyObject *wcex_from(const struct wc_ex *x)
{
	WCExObject *o = PyObject_Malloc(sizeof(WCExObject));

	if (o == NULL)
		return PyErr_NoMemory();
	PyObject_Init((PyObject *)o, ST.WCEx_type);
	o->x = *x;
	return (PyObject *)o;
}

/* ------------------------------------------------------------------ */
/* The raw iteration                                                   */
/* ------------------------------------------------------------------ */

static int cqex_check_open(PyObject *self)
{
	if (handle_check(HANDLE(self)) < 0 || cq_check_polled_here(self) < 0)
		return -1;
	if (CQX(self)->polling) {
		PyErr_SetString(PyExc_ValueError,
				"a start_poll() session is open on this CQEx: "
				"call end_poll() first");
		return -1;
	}
	return 0;
}

PyDoc_STRVAR(cqex_resize__doc__,
	     "Change the CQ's capacity to at least ``cqe`` entries.\n"
	     "\n"
	     "As ``CQ.resize()``; refused while a ``start_poll()`` session\n"
	     "is open (rxe holds the CQ's lock for the session).\n"
	     "\n" CQ_RESIZE_DOC_ARGS
	     "    ValueError: cqe is out of range, or a session is open.\n"
	     "    VerbsError: EBADF once the CQ is closed; else the verb\n"
	     "        failed (``errno``).");

METHOD_ARGS(cqex_resize, "CQEx.resize", cq_resize_params);

static PyObject *cqex_resize(PyObject *self, PyObject *args, PyObject *kw)
{
	struct cq_resize_args a;

	HANDLE_CHECK(self);
	if (cqex_check_open(self) < 0 ||
	    args_parse(&cqex_resize_args, self, args, kw, &a) < 0)
		return NULL;
	return cq_resize_to(self, a.cqe);
}

PyDoc_STRVAR(cqex_start_poll__doc__,
	     "Open a polling session on the oldest completion.\n"
	     "\n"
	     "On True, read the entry with ``read_*()``, ``wr_id`` and\n"
	     "``status``, move on with ``next_poll()``, end with\n"
	     "``end_poll()``; ``poll()`` and ``close()`` refuse meanwhile.\n"
	     "\n"
	     "Wraps ``ibv_start_poll`` (man page ibv_create_cq_ex(3)).\n"
	     "\n"
	     "Returns:\n"
	     "    True with a session open; False when the CQ is empty (no\n"
	     "    session: do not call ``end_poll()``).\n"
	     "\n"
	     "Raises:\n"
	     "    ValueError: a session is open already.\n"
	     "    VerbsError: EBADF once the CQ is closed; else the verb\n"
	     "        failed (``errno``).");

static PyObject *cqex_start_poll(PyObject *self, PyObject *unused)
{
	struct ibv_poll_cq_attr attr = { 0 };
	CQExObject *c = CQX(self);
	int rc;

	if (cqex_check_open(self) < 0)
		return NULL;
	rc = ibv_start_poll(c->cq_ex, &attr);
	if (rc == ENOENT)
		Py_RETURN_FALSE; /* no session: end_poll() must not follow */
	if (rc != 0)
		return verbs_error(rc, "ibv_start_poll");
	c->polling = 1;
	c->has_entry = 1;
	Py_RETURN_TRUE;
}

static int cqex_check_session(PyObject *self, const char *what)
{
	if (handle_check(HANDLE(self)) < 0)
		return -1;
	if (!CQX(self)->polling) {
		PyErr_Format(PyExc_ValueError,
			     "%s outside a start_poll() session", what);
		return -1;
	}
	return 0;
}

/*
 * Sessions of one entry on rxe (per_entry).
 *
 * The contract (ibv_create_cq_ex(3)): after a successful start_poll,
 * end_poll follows whatever next_poll answered, ENOENT included.  mlx5
 * and the other providers keep it; rdma-core's rxe (providers/rxe/rxe.c)
 * did not until release 59 (and the stable 58.1):
 * - 34.0 (its first cq_ex, commit e3af50b60) to 54.x: on an empty queue
 *   cq_next_poll has already advanced its index and stores it as the
 *   consumer index, and unlocks the CQ (no longer in the stable
 *   backports of 5e7aa4102: 36.16, ..., 44.11, ..., 54.4).  The end_poll
 *   that follows advances again: the consumer index is one past the
 *   producer, so later polls read old or zeroed slots and the kernel
 *   finds the CQ full.
 * - 55.0 (b78b414e0) looks ahead before advancing; until 59.0 / 58.1
 *   (5e7aa4102) its next_poll still unlocks and end_poll unlocks again.
 * Leaving out end_poll after ENOENT would be right only before those
 * backports (on them the lock stays taken; from 55.0 the last entry
 * comes again), and which release is loaded cannot be told.  rxe's
 * start_poll and end_poll are right in every release, so on rxe a
 * session holds one entry: moving on is end_poll + start_poll,
 * next_poll is never called, and after a failed start_poll no provider
 * session is left to end.
 * That costs rxe a lock round trip per entry (next to a system call per
 * post, in software); every other provider keeps one session per batch.
 * On any provider poll(n) stops at the n-th entry without next_poll.
 */

/* Move the open session on: 0 on a new entry, ENOENT past the last,
 * else an errno; sets has_entry.  per_entry: the entry read is
 * consumed (end_poll) and a new provider session opened, if any is
 * ready; with none open (has_entry 0) only the new one is tried. */
static int cqex_step(CQExObject *c)
{
	struct ibv_poll_cq_attr attr = { 0 };
	int rc;

	if (!c->per_entry) {
		rc = ibv_next_poll(c->cq_ex);
	} else {
		if (c->has_entry)
			ibv_end_poll(c->cq_ex);
		rc = ibv_start_poll(c->cq_ex, &attr);
	}
	c->has_entry = rc == 0;
	return rc;
}

PyDoc_STRVAR(cqex_next_poll__doc__,
	     "Move the open session to the next completion.\n"
	     "\n"
	     "After False the session stays open with no current entry:\n"
	     "call ``end_poll()``.\n"
	     "\n"
	     "On Soft-RoCE (rxe), whose ``ibv_next_poll`` mishandles an empty\n"
	     "queue in rdma-core 34 to 58, each entry is a provider session\n"
	     "of its own: moving on consumes the entry read (``end_poll`` +\n"
	     "``start_poll``), and a failure names ``ibv_start_poll``.\n"
	     "\n"
	     "Wraps ``ibv_next_poll`` (man page ibv_create_cq_ex(3)).\n"
	     "\n"
	     "Returns:\n"
	     "    True on a new entry; False when no more is ready.\n"
	     "\n"
	     "Raises:\n"
	     "    ValueError: no session is open.\n"
	     "    VerbsError: EBADF once the CQ is closed; else the verb\n"
	     "        failed (``errno``; the session has no entry then).");

static PyObject *cqex_next_poll(PyObject *self, PyObject *unused)
{
	CQExObject *c = CQX(self);
	int rc;

	if (cqex_check_session(self, "next_poll()") < 0)
		return NULL;
	rc = cqex_step(c);
	if (rc == ENOENT)
		Py_RETURN_FALSE;
	if (rc != 0)
		return verbs_error(rc, c->per_entry ? "ibv_start_poll" :
						      "ibv_next_poll");
	Py_RETURN_TRUE;
}

static void cqex_end(CQExObject *c)
{
	/* per_entry without an entry: no provider session is open. */
	if (c->has_entry || !c->per_entry)
		ibv_end_poll(c->cq_ex);
	c->polling = 0;
	c->has_entry = 0;
}

PyDoc_STRVAR(cqex_end_poll__doc__,
	     "Close the session that ``start_poll()`` opened.\n"
	     "\n"
	     "The entries read are consumed (on rxe each one already was,\n"
	     "as ``next_poll()`` moved past it).\n"
	     "\n"
	     "Wraps ``ibv_end_poll`` (man page ibv_create_cq_ex(3)).\n"
	     "\n"
	     "Raises:\n"
	     "    ValueError: no session is open.\n"
	     "    VerbsError: EBADF once the CQ is closed.");

static PyObject *cqex_end_poll(PyObject *self, PyObject *unused)
{
	if (cqex_check_session(self, "end_poll()") < 0)
		return NULL;
	cqex_end(CQX(self));
	Py_RETURN_NONE;
}

/* The open session's current entry, with `need` (a wc_flags bit, or 0)
 * asked for at creation; NULL with ValueError set. */
struct ibv_cq_ex *cqex_entry(PyObject *self, const char *what, uint64_t need)
{
	CQExObject *c = CQX(self);

	if (cqex_check_session(self, what) < 0)
		return NULL;
	if (!c->has_entry) {
		PyErr_Format(PyExc_ValueError,
			     "%s: no current entry (next_poll() returned "
			     "False or failed)",
			     what);
		return NULL;
	}
	if (need && !(c->wc_flags & need)) {
		PyErr_Format(PyExc_ValueError,
			     "%s: the CQEx was created without that field in "
			     "wc_flags (CreateCQWCFlags 0x%x)",
			     what, (unsigned int)need);
		return NULL;
	}
	return c->cq_ex;
}

/* What the readers' docstrings share: the paragraph that says what they
 * read, the man page, and the Raises section of a reader whose field
 * needs CreateCQWCFlags.<flag> (RDX_RAISES) or none (RDX_RAISES_ANY). */
#define RDX_READS "Reads the current entry of the open start_poll() session.\n"
#define RDX_MAN "(man page ibv_create_cq_ex(3)).\n"
#define RDX_VERBS_ERROR                                                  \
	"    VerbsError: EBADF once the CQ is closed; EOPNOTSUPP when\n" \
	"        the provider has no such op."
#define RDX_RAISES(flag)                                          \
	"Raises:\n"                                               \
	"    ValueError: no session is open, no current entry,\n" \
	"        or ``CreateCQWCFlags." flag "``\n"               \
	"        was not asked for.\n" RDX_VERBS_ERROR
#define RDX_RAISES_ANY \
	"Raises:\n"    \
	"    ValueError: no session is open, no current entry.\n" RDX_VERBS_ERROR

/* The method read_<field>() of each of CQEX_FIELDS (cq.h), with its
 * docstring: the open session's current entry (cqex_entry, which checks
 * the CreateCQWCFlags bit need), the provider's op read_<field> (through
 * reader), its value through PY_<conv>.  Defines cqex_read_<field>. */
#define NEEDS(flag) RDX_RAISES(flag)
#define NEEDS_NONE RDX_RAISES_ANY
#define PY_U32(v) PyLong_FromUnsignedLong((unsigned long)(v))
#define PY_U64(v) PyLong_FromUnsignedLongLong((unsigned long long)(v))
#define PY_IMM(v) PyLong_FromUnsignedLong(be32toh(v))
#define PY_OPCODE(v) enum_from_int("WCOpcode", (long)(v))
#define CQEX_READER(field, reader, need, needs, when, slot, conv, doc)        \
	PyDoc_STRVAR(cqex_read_##field##__doc__,                              \
		     doc "\n\n" RDX_READS "\nWraps ``" #reader "``\n" RDX_MAN \
			 "\n" needs);                                         \
	static PyObject *cqex_read_##field(PyObject *self, PyObject *unused)  \
	{                                                                     \
		struct ibv_cq_ex *cq =                                        \
			cqex_entry(self, "read_" #field "()", need);          \
		if (cq == NULL)                                               \
			return NULL;                                          \
		if (cq->read_##field == NULL)                                 \
			return provider_lacks(#reader);                       \
		return PY_##conv(reader(cq));                                 \
	}
CQEX_FIELDS(CQEX_READER)
#undef CQEX_READER
#undef PY_OPCODE
#undef PY_IMM
#undef PY_U64
#undef PY_U32
#undef NEEDS_NONE
#undef NEEDS

PyDoc_STRVAR(cqex_read_invalidated_rkey__doc__,
	     "The rkey a SEND_WITH_INV invalidated.\n"
	     "\n" RDX_READS "\n"
	     "Wraps ``ibv_wc_read_invalidated_rkey``\n" RDX_MAN
	     "\n" RDX_RAISES("IMM"));

static PyObject *cqex_read_invalidated_rkey(PyObject *self, PyObject *unused)
{
	struct ibv_cq_ex *cq =
		cqex_entry(self, "read_invalidated_rkey()", IBV_WC_EX_WITH_IMM);

	if (cq == NULL)
		return NULL;
	if (cq->read_imm_data == NULL)
		return provider_lacks("ibv_wc_read_invalidated_rkey");
	return PyLong_FromUnsignedLong(ibv_wc_read_invalidated_rkey(cq));
}

PyDoc_STRVAR(cqex_read_tm_info__doc__,
	     "The tag matching info of the current entry: a ``WCTMInfo``\n"
	     "with ``tag`` (from the TMH) and ``priv`` (its opaque user\n"
	     "data).\n"
	     "\n" RDX_READS "\n"
	     "Wraps ``ibv_wc_read_tm_info``\n" RDX_MAN
	     "Never run on hardware here, checked against the recording\n"
	     "double (rxe has no tag matching).\n"
	     "\n" RDX_RAISES("TM_INFO"));

static PyObject *cqex_read_tm_info(PyObject *self, PyObject *unused)
{
	struct ibv_cq_ex *cq =
		cqex_entry(self, "read_tm_info()", IBV_WC_EX_WITH_TM_INFO);
	struct ibv_wc_tm_info tm;
	PyObject *d;

	if (cq == NULL)
		return NULL;
	if (cq->read_tm_info == NULL)
		return provider_lacks("ibv_wc_read_tm_info");
	memset(&tm, 0, sizeof(tm));
	ibv_wc_read_tm_info(cq, &tm);
	d = PyDict_New();
	if (d == NULL || dict_set_u64(d, "tag", tm.tag) < 0 ||
	    dict_set_u64(d, "priv", tm.priv) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return objects_record("WCTMInfo", d);
}

static PyObject *cqex_get_wr_id(PyObject *self, void *closure)
{
	struct ibv_cq_ex *cq = cqex_entry(self, "wr_id", 0);

	return cq ? PyLong_FromUnsignedLongLong(cq->wr_id) : NULL;
}

static PyObject *cqex_get_status(PyObject *self, void *closure)
{
	struct ibv_cq_ex *cq = cqex_entry(self, "status", 0);

	return cq ? enum_from_int("WCStatus", (long)cq->status) : NULL;
}

/* ------------------------------------------------------------------ */
/* poll(n) and poll_count(n) over one session                          */
/* ------------------------------------------------------------------ */

/* num_entries: poll() clamps a huge one to the CQ's size (as CQ.poll
 * does); poll_count() takes 1..2**63-1 (as CQ.poll_count does). */
static int parse_n(PyObject *o, struct ibv_cq_ex *cq, int *n, int clamp)
{
	long v;
	int overflow;

	if (!PyLong_Check(o)) {
		arg_type_error("num_entries", "int", 0, o);
		return -1;
	}
	v = PyLong_AsLongAndOverflow(o, &overflow);
	if (v == -1 && PyErr_Occurred())
		return -1;
	if (overflow > 0 && clamp) {
		v = LONG_MAX;
		overflow = 0;
	}
	if (v < 1 || overflow != 0) {
		PyErr_Format(
			PyExc_ValueError,
			clamp ? "num_entries must be >= 1, got %S" :
				"num_entries must be in 1..2**63-1, got %S",
			o);
		return -1;
	}
	/* A CQ never holds more than cqe entries. */
	*n = v > cq->cqe ? (cq->cqe > 0 ? cq->cqe : 1) : (int)v;
	return 0;
}

/* cqex_reap once start_poll has given the first entry: the count.  Out
 * of line, so that poll() and poll_count() inline cqex_reap's
 * start_poll (as GCC did before per_entry) and an empty CQ costs no
 * call. */
__attribute__((noinline)) static int cqex_reap_open(CQExObject *c, int n,
						    int *err)
{
	struct ibv_poll_cq_attr attr = { 0 };
	int rc, i = 0;

	for (;;) {
		read_entry(c->cq_ex, c->wc_flags, &c->store[i++]);
		if (i == n)
			break;
		if (c->per_entry) {
			ibv_end_poll(c->cq_ex);
			rc = ibv_start_poll(c->cq_ex, &attr);
			if (rc == 0)
				continue;
			if (rc != ENOENT)
				*err = rc;
			return i; /* no session is open */
		}
		rc = ibv_next_poll(c->cq_ex);
		if (rc != 0) {
			if (rc != ENOENT)
				*err = rc;
			break;
		}
	}
	ibv_end_poll(c->cq_ex);
	return i;
}

/* Reap up to n entries into c->store in one session (per_entry: one
 * session each); the count, with *err set when a verb failed (entries
 * reaped before a failed next_poll are in the count: the caller
 * returns them). */
static int cqex_reap(CQExObject *c, int n, int *err)
{
	struct ibv_poll_cq_attr attr = { 0 };
	int rc;

	*err = 0;
	rc = ibv_start_poll(c->cq_ex, &attr);
	if (rc == ENOENT)
		return 0;
	if (rc != 0) {
		*err = rc;
		return 0;
	}
	return cqex_reap_open(c, n, err);
}

static int cqex_reserve(CQExObject *c, int n)
{
	struct wc_ex *p;

	if (n <= c->store_len)
		return 0;
	p = PyMem_Realloc(c->store, (size_t)n * sizeof(*p));
	if (p == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	c->store = p;
	c->store_len = n;
	return 0;
}

static PyObject *wcex_build(const void *elem)
{
	return wcex_from(elem);
}

PyDoc_STRVAR(cqex_poll__doc__,
	     "Reap up to ``num_entries`` completions, without waiting.\n"
	     "\n"
	     "One start/next/end_poll session in C (never ``ibv_poll_cq``);\n"
	     "each WCEx holds the fields asked for in ``wc_flags``. A failed\n"
	     "completion is returned like any other: check ``wc.status``.\n"
	     "\n"
	     "Wraps ``ibv_start_poll``, ``ibv_next_poll``, ``ibv_end_poll``\n"
	     "(man page ibv_create_cq_ex(3)).\n"
	     "\n"
	     "Args:\n"
	     "    num_entries: the most completions to return, 1 or more.\n"
	     "\n"
	     "Returns:\n"
	     "    A list of WCEx, oldest first; [] when none is ready.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: num_entries is not an int.\n"
	     "    ValueError: num_entries is less than 1, or a\n"
	     "        ``start_poll()`` session is open.\n"
	     "    VerbsError: EBADF once the CQ is closed; else\n"
	     "        ``ibv_start_poll`` failed (``errno``).");

static PyObject *cqex_poll(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "num_entries", NULL };
	CQExObject *c = CQX(self);
	PyObject *o = NULL;
	int n = 1, got, err;

	if (cqex_check_open(self) < 0)
		return NULL;
	/* Parsed by hand: the data path, where args_parse costs instructions. */
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:poll", kwlist, &o))
		return NULL;
	if (o != NULL && parse_n(o, c->cq_ex, &n, 1) < 0)
		return NULL;
	if (cqex_check_open(self) < 0 || cqex_reserve(c, n) < 0)
		return NULL;
	got = cqex_reap(c, n, &err);
	if (got == 0 && err)
		return verbs_error(err, "ibv_start_poll");
	/* A failed next_poll after some entries: those are returned, and
	 * the next call reports the error if it persists. */
	return list_from_store((void **)&c->store, &c->store_len,
			       sizeof(*c->store), got, wcex_build);
}

/* poll_into's fields (cq_into_begin's bits) and the wc_flags each needs
 * asked for at creation (0: always read). */
static const struct {
	const char *name, *flag;
	uint64_t need;
} into_needs[] = { { "wr_id", NULL, 0 },
		   { "status", NULL, 0 },
		   { "opcode", NULL, 0 },
		   { "byte_len", "BYTE_LEN", IBV_WC_EX_WITH_BYTE_LEN },
		   { "imm_data", "IMM", IBV_WC_EX_WITH_IMM } };

PyDoc_STRVAR(
	cqex_poll_into__doc__,
	"Reap completions into integer arrays: no object per completion.\n"
	"\n"
	"As ``CQ.poll_into()`` (the same arrays, rows and holding), over\n"
	"one start/next/end_poll session as ``poll()``. ``byte_len`` needs\n"
	"``CreateCQWCFlags.BYTE_LEN`` and ``imm_data`` needs ``IMM`` in the\n"
	"CQ's ``wc_flags``. A failed completion is written like any other\n"
	"(check ``status``): nothing is raised.\n"
	"\n"
	"Wraps ``ibv_start_poll``, ``ibv_next_poll``, ``ibv_end_poll``\n"
	"(man page ibv_create_cq_ex(3)).\n"
	"\n" CQ_POLL_INTO_DOC_ARGS
	"        items too small; a field the CQ's ``wc_flags`` leave out;\n"
	"        num_entries < 1; a ``start_poll()`` session open.\n"
	"    VerbsError: EBADF once the CQ is closed; else\n"
	"        ``ibv_start_poll`` failed (``errno``).");

static PyObject *cqex_poll_into(PyObject *self, PyObject *args, PyObject *kw)
{
	CQExObject *c = CQX(self);
	unsigned int given;
	long n;
	int k, got, err;

	if (cqex_check_open(self) < 0 ||
	    cq_into_begin(&c->cq, args, kw, &n, &given) < 0)
		return NULL;
	for (k = 0; k < (int)(sizeof(into_needs) / sizeof(into_needs[0]));
	     k++) {
		if ((given & (1u << k)) &&
		    (c->wc_flags & into_needs[k].need) != into_needs[k].need) {
			PyErr_Format(PyExc_ValueError,
				     "%s needs CreateCQWCFlags.%s in the "
				     "CQEx's wc_flags",
				     into_needs[k].name, into_needs[k].flag);
			return NULL;
		}
	}
	if (n > c->cq_ex->cqe)
		n = c->cq_ex->cqe;
	if (n < 1)
		return PyLong_FromLong(0);
	if (cqex_reserve(c, (int)n) < 0)
		return NULL;
	got = cqex_reap(c, (int)n, &err);
	if (got == 0 && err)
		return verbs_error(err, "ibv_start_poll");
	/* A failed next_poll after some entries: as poll(). */
	cq_into_store(&c->cq, &c->store[0].wc, sizeof(*c->store), got);
	return PyLong_FromLong(got);
}

PyDoc_STRVAR(cqex_poll_count__doc__,
	     "Reap up to ``num_entries`` completions and count them.\n"
	     "\n"
	     "As ``poll()``, without building WCEx objects: a failed one\n"
	     "raises CompletionError (for the first, after reaping all).\n"
	     "\n"
	     "Wraps ``ibv_start_poll``, ``ibv_next_poll`` and\n"
	     "``ibv_end_poll`` (man page ibv_create_cq_ex(3)).\n"
	     "\n"
	     "Args:\n"
	     "    num_entries: the most to reap, ``1..2**63-1`` (positional).\n"
	     "\n"
	     "Returns:\n"
	     "    How many completions were reaped (0 when none is ready).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: num_entries is not an int.\n"
	     "    ValueError: num_entries is out of range, or a\n"
	     "        ``start_poll()`` session is open.\n"
	     "    CompletionError: a reaped completion failed (``.wc`` is a\n"
	     "        WCEx).\n"
	     "    VerbsError: EBADF once the CQ is closed; else\n"
	     "        ``ibv_start_poll`` failed (``errno``).");

static PyObject *cqex_poll_count(PyObject *self, PyObject *arg)
{
	CQExObject *c = CQX(self);
	int n, got, err, i;

	/* Parsed by hand: the data path, where args_parse costs instructions. */
	if (cqex_check_open(self) < 0 || parse_n(arg, c->cq_ex, &n, 0) < 0 ||
	    cqex_reserve(c, n) < 0)
		return NULL;
	got = cqex_reap(c, n, &err);
	if (got == 0 && err)
		return verbs_error(err, "ibv_start_poll");
	for (i = 0; i < got; i++) {
		if (c->store[i].wc.status != IBV_WC_SUCCESS) {
			struct wc_ex bad = c->store[i];
			PyObject *wc = wcex_from(&bad);

			if (wc == NULL)
				return NULL;
			completion_error(wc);
			Py_DECREF(wc);
			return NULL;
		}
	}
	return PyLong_FromLong(got);
}

/* ------------------------------------------------------------------ */
/* Lifetime, attributes                                                */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(cqex_close__doc__,
	     "Destroy the extended CQ.\n"
	     "\n"
	     "Idempotent; the CQ stays usable after a refusal.\n"
	     "\n"
	     "Wraps ``ibv_destroy_cq`` (man page ibv_create_cq(3)).\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EBUSY while a ``start_poll()`` session is open,\n"
	     "        a QP uses the CQ or a thread waits on it; else the verb\n"
	     "        failed (``errno``).");

static PyObject *cqex_close(PyObject *self, PyObject *unused)
{
	if (HANDLE(self)->obj != NULL && CQX(self)->polling)
		return verbs_error_fmt(EBUSY, "ibv_destroy_cq",
				       "a start_poll() session is open: call "
				       "end_poll() first");
	return handle_meth_close(self, unused);
}

PyDoc_STRVAR(cqex_exit__doc__,
	     "Leave a ``with`` block: end an open session, then ``close()``.\n"
	     "\n"
	     "A session left open (an exception in the loop) is ended with\n"
	     "``ibv_end_poll`` first.\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: as ``close()``.");

static PyObject *cqex_exit(PyObject *self, PyObject *args)
{
	CQExObject *c = CQX(self);

	/* Leaving a with-block ends a session left open (an exception in
	 * the loop), then closes. */
	if (HANDLE(self)->obj != NULL && c->polling)
		cqex_end(c);
	return handle_meth_exit(self, args);
}

static int cqex_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(CQX(self)->cq.channel);
	Py_VISIT(CQX(self)->pdom);
	return handle_traverse(HANDLE(self), visit, arg);
}

static void cqex_dealloc(PyObject *self)
{
	CQExObject *c = CQX(self);
	destructor base;

	if (HANDLE(self)->obj != NULL && c->polling)
		cqex_end(c);
	/* The base closes it; a failed destroy leaves the parent domain
	 * used, and the reference is dropped here. */
	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	Py_CLEAR(c->pdom);
	PyMem_Free(c->store);
	c->store = NULL;
	base = (destructor)PyType_GetSlot(ST.CQ_type, Py_tp_dealloc);
	base(self);
}

static PyObject *cqex_get_wc_flags(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLongLong(CQX(self)->wc_flags);
}

static PyObject *cqex_get_polling(PyObject *self, void *closure)
{
	return PyBool_FromLong(CQX(self)->polling);
}

static PyObject *cqex_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.CQEx closed>");
	return PyUnicode_FromFormat(
		"<ibverbs.CQEx cqe=%d wc_flags=0x%x%s%s>",
		CQX(self)->cq_ex->cqe, (unsigned)CQX(self)->wc_flags,
		CQX(self)->cq.channel ? " with channel" : "",
		CQX(self)->polling ? " polling" : "");
}

PyDoc_STRVAR(cqex__doc__,
	     "An extended completion queue (``struct ibv_cq_ex``).\n"
	     "\n"
	     "Made by ``Context.create_cq_ex(CQInitAttrEx(...))``; a CQ\n"
	     "for QPs, notification and channels. It polls with start/next/\n"
	     "end_poll sessions (man page ibv_create_cq_ex(3)): one in C in\n"
	     "``poll()``, or one across calls from ``start_poll()``.");

static PyMethodDef cqex_methods[] = {
	METHOD_KW("poll", cqex_poll),
	METHOD_O("poll_count", cqex_poll_count),
	METHOD_KW("poll_into", cqex_poll_into),
	METHOD_KW("resize", cqex_resize),
	METHOD_NOARGS("start_poll", cqex_start_poll),
	METHOD_NOARGS("next_poll", cqex_next_poll),
	METHOD_NOARGS("end_poll", cqex_end_poll),
/* clang-format off */
#define CQEX_READER_METHOD(field, reader, need, needs, when, slot, conv, doc) \
	METHOD_NOARGS("read_" #field, cqex_read_##field),
	CQEX_FIELDS(CQEX_READER_METHOD)
#undef CQEX_READER_METHOD
	/* clang-format on */
	METHOD_NOARGS("read_invalidated_rkey", cqex_read_invalidated_rkey),
	METHOD_NOARGS("read_tm_info", cqex_read_tm_info),
	METHOD_NOARGS("close", cqex_close),
	{ "__exit__", cqex_exit, METH_VARARGS, cqex_exit__doc__ },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef cqex_getset[] = {
	{ "wr_id", cqex_get_wr_id, NULL,
	  "The ``wr_id`` of the open session's current entry; ValueError\n"
	  "outside a session or without an entry, EBADF once closed.",
	  NULL },
	{ "status", cqex_get_status, NULL,
	  "The ``WCStatus`` of the open session's current entry;\n"
	  "ValueError outside a session or without an entry.",
	  NULL },
	{ "wc_flags", cqex_get_wc_flags, NULL,
	  "The ``CreateCQWCFlags`` asked for at creation: the fields the\n"
	  "entries carry.",
	  NULL },
	{ "polling", cqex_get_polling, NULL,
	  "True while a ``start_poll()`` session is open.", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

/* BASETYPE: efa.CQ (efa/efa_cq.c) derives from it. */
HANDLE_TYPE_SPEC(CQEx_spec, "CQEx", CQExObject, Py_TPFLAGS_BASETYPE,
		 cqex__doc__, cqex_dealloc, cqex_traverse, cqex_repr,
		 cqex_methods, cqex_getset);
