/*
 * mw.c - MW: a memory window (ibv_mw), a remote key for a part of an MR
 * that can be bound, moved and invalidated without registering memory.
 *
 * Binding: a type 1 window is bound with QP.bind_mw(mw, MWBind(...))
 * (ibv_bind_mw, which picks the next rkey itself); a type 2 window with a
 * SendWR(opcode=BIND_MW, mw=..., rkey=new_rkey, bind_info=MWBindInfo(...))
 * posted on the QP that will receive the remote accesses, the caller
 * choosing the new rkey (ibverbs.inc_rkey(mw.rkey)), and invalidated with
 * LOCAL_INV or a peer's SEND_WITH_INV.  This file holds the MW type,
 * the MRs a window keeps alive while it may be bound to them (the hold,
 * the parked MRs and their sweep, below), QP.bind_mw, the conversions of
 * an MWBindInfo (used by SendWR's BIND_MW fields in wr/wr.c and
 * QPEx.wr_bind_mw in qp/qp_ex.c), and inc_rkey.
 *
 * ibv_alloc_mw, ibv_dealloc_mw, ibv_bind_mw and ibv_inc_rkey are static
 * inline in <infiniband/verbs.h>: they jump through the provider's op
 * table, so they are called by name (no exported symbol is involved).
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include <limits.h>

/*
 * The hold: a window holds the MR of its last bind posted (an unbind,
 * none), and every MR it was bound to before, until the binding is known
 * to be gone: rxe refuses to deregister an MR a window is bound to
 * (EINVAL, IBA 10.6.7.2.6), so an MR collected while still bound would
 * fail to deregister and leak.
 *
 * A bind posted (QP.bind_mw, a BIND_MW SendWR, QPEx.wr_bind_mw) makes
 * its MR the window's own at once, and only once the post succeeded (a
 * failed post_send or wr_complete, or a wr_abort, changes nothing).  The
 * MR it replaces, and the MR of a window invalidated by a LOCAL_INV this
 * process posts (SendWR or QPEx.wr_local_inv, the rkey of a type 2
 * window of the posting QP's PD), is parked on the window: the binding
 * goes only when the kernel runs that WR, which 7.2's rxe does after
 * ibv_post_send returned, on a kernel worker (measured: 17 of 20 MRs
 * released right after the LOCAL_INV's post failed to deregister,
 * EINVAL).  The package does not follow completions, so it asks the
 * kernel: mw_sweep, after each post and each bind, deregisters every
 * parked MR that nothing else references (an explicit close: EINVAL
 * means still bound, and it stays parked, usable) and lets go of one the
 * caller closed.  A parked MR the caller still references stays parked
 * until a sweep after its last reference went, or the window closes
 * (ibv_dealloc_mw undoes every binding).  A peer's SEND_WITH_INV is seen
 * only in a receive completion: the MR stays the window's own until it
 * is bound again or closed.
 *
 * The windows that hold or park an MR are linked on one list (held_prev,
 * held_next), which LOCAL_INV searches by (PD, rkey) and the sweep walks:
 * few windows are bound at once.  Free-threaded builds guard it, and each
 * window's mr and parked, with held_lock; no Python code runs under it.
 */
static MWObject *held_first;
static Py_ssize_t n_parked; /* MRs parked on all windows */
Py_ssize_t mw_alive; /* MW objects (mw_any) */

/* Changed under the lock, read without it (mw_sweep_wanted, a hint). */
static void parked_add(Py_ssize_t d)
{
	__atomic_add_fetch(&n_parked, d, __ATOMIC_RELAXED);
}
#ifdef Py_GIL_DISABLED
static PyMutex held_lock;
#define HELD_LOCK() PyMutex_Lock(&held_lock)
#define HELD_UNLOCK() PyMutex_Unlock(&held_lock)
#else
#define HELD_LOCK() ((void)0)
#define HELD_UNLOCK() ((void)0)
#endif

/* Under the lock: mw on the list iff it holds or parks an MR. */
static void relink_locked(MWObject *mw)
{
	int want = mw->mr != NULL ||
		   (mw->parked != NULL && PyList_Size(mw->parked) > 0);
	int linked = mw->held_prev != NULL || held_first == mw;

	if (want && !linked) {
		mw->held_prev = NULL;
		mw->held_next = held_first;
		if (held_first != NULL)
			held_first->held_prev = mw;
		held_first = mw;
	} else if (!want && linked) {
		MWObject *prev = mw->held_prev, *next = mw->held_next;

		if (prev != NULL)
			prev->held_next = next;
		else
			held_first = next;
		if (next != NULL)
			next->held_prev = prev;
		mw->held_prev = mw->held_next = NULL;
	}
}

/* Under the lock: park mr (a reference the caller gives) on mw; 0, or
 * -1 when mw is closed (its list gone) or the list cannot grow: the
 * caller still owns the reference then.  No Python code runs: the list
 * was made with the window, so nothing is allocated but its items. */
static int park_locked(MWObject *mw, PyObject *mr)
{
	if (mw->parked == NULL || PyList_Append(mw->parked, mr) < 0) {
		PyErr_Clear();
		return -1;
	}
	Py_DECREF(mr); /* the list holds it now */
	parked_add(1);
	relink_locked(mw);
	return 0;
}

/* Under the lock: mw's binding is replaced by mr (NULL: none) under rkey;
 * the MR it held is parked. */
static void set_hold_locked(MWObject *mw, PyObject *mr, uint32_t rkey)
{
	PyObject *old = mw->mr;

	if (old == mr) {
		mw->bound_rkey = rkey;
		return;
	}
	Py_XINCREF(mr);
	mw->mr = mr;
	mw->bound_rkey = rkey;
	/* Out of memory: the old MR is kept for good (leaked with its
	 * memory) rather than released while it may still be bound. */
	if (old != NULL)
		(void)park_locked(mw, old);
	relink_locked(mw);
}

void mw_hold_mr(PyObject *mw, PyObject *mr, uint32_t rkey)
{
	HELD_LOCK();
	set_hold_locked((MWObject *)mw, mr, rkey);
	HELD_UNLOCK();
}

/* Under the lock: the type 2 window of pd that holds an MR under rkey. */
static MWObject *find_locked(const struct ibv_pd *pd, uint32_t rkey)
{
	MWObject *mw;

	for (mw = held_first; mw != NULL; mw = mw->held_next) {
		struct ibv_mw *m = HANDLE(mw)->obj;

		if (mw->mr != NULL && m != NULL && m->pd == pd &&
		    m->type == IBV_MW_TYPE_2 && mw->bound_rkey == rkey)
			return mw;
	}
	return NULL;
}

void mw_invalidated(const struct ibv_pd *pd, uint32_t rkey)
{
	MWObject *mw;

	HELD_LOCK();
	mw = find_locked(pd, rkey);
	if (mw != NULL)
		set_hold_locked(mw, NULL, 0);
	HELD_UNLOCK();
}

PyObject *mw_find_bound(const struct ibv_pd *pd, uint32_t rkey)
{
	MWObject *mw;

	HELD_LOCK();
	mw = find_locked(pd, rkey);
	/* A window on the list is alive: its deallocation unlinks it
	 * first, under the lock. */
	Py_XINCREF((PyObject *)mw);
	HELD_UNLOCK();
	return (PyObject *)mw;
}

int mw_sweep_wanted(void)
{
	return __atomic_load_n(&n_parked, __ATOMIC_RELAXED) != 0;
}

#define SWEEP_BATCH 16

void mw_sweep(void)
{
	PyObject *mws[SWEEP_BATCH], *mrs[SWEEP_BATCH];
	PyObject *t, *v, *tb;
	MWObject *mw;
	int n = 0, i;

	/* Take the candidates off their windows: closed by the caller, or
	 * referenced by nothing but the window. */
	HELD_LOCK();
	for (mw = held_first; mw != NULL && n < SWEEP_BATCH;
	     mw = mw->held_next) {
		Py_ssize_t j;

		for (j = mw->parked ? PyList_Size(mw->parked) - 1 : -1;
		     j >= 0 && n < SWEEP_BATCH; j--) {
			PyObject *mr = PyList_GetItem(mw->parked, j);

			if (HANDLE(mr)->obj != NULL && Py_REFCNT(mr) != 1)
				continue;
			Py_INCREF(mr);
			PySequence_DelItem(mw->parked, j); /* ours stays */
			Py_INCREF((PyObject *)mw);
			mws[n] = (PyObject *)mw;
			mrs[n++] = mr;
			parked_add(-1);
		}
	}
	HELD_UNLOCK();
	if (n == 0)
		return;
	PyErr_Fetch(&t, &v, &tb);
	for (i = 0; i < n; i++) {
		if (HANDLE(mrs[i])->obj == NULL ||
		    handle_close(HANDLE(mrs[i])) == 0)
			continue;
		/* Still bound (EINVAL), or busy: park it again, unless the
		 * window was closed meanwhile (by code the releases above
		 * ran): its bindings are gone, and the MR's own deallocation
		 * deregisters it. */
		PyErr_Clear();
		HELD_LOCK();
		if (park_locked((MWObject *)mws[i], mrs[i]) == 0)
			mrs[i] = NULL;
		HELD_UNLOCK();
	}
	/* No lock held and nothing linked: a close above (its MR's owner
	 * released) and these releases may run Python code, even a sweep;
	 * every candidate is a reference of ours meanwhile. */
	for (i = 0; i < n; i++) {
		Py_XDECREF(mrs[i]);
		Py_DECREF(mws[i]);
	}
	PyErr_Restore(t, v, tb);
}

/* Under the lock: take mw off the list, with what it holds and parks
 * (references the caller now owns, in *mr and *parked). */
static void unhold_locked(MWObject *mw, PyObject **mr, PyObject **parked)
{
	*mr = mw->mr;
	*parked = mw->parked;
	if (*parked != NULL)
		parked_add(-PyList_Size(*parked));
	mw->mr = mw->parked = NULL;
	relink_locked(mw);
}

/* The window is gone (ibv_dealloc_mw succeeded), and with it every
 * binding it had: its MRs may deregister now. */
static void mw_release(Handle *h)
{
	PyObject *mr, *parked;

	HELD_LOCK();
	unhold_locked((MWObject *)h, &mr, &parked);
	HELD_UNLOCK();
	Py_XDECREF(mr);
	Py_XDECREF(parked);
}

HANDLE_KIND(mw_kind, "MW", "ibv_dealloc_mw", ibv_dealloc_mw, mw_release);

/* QPEx.wr_bind_mw and wr_local_inv: a record of a hold to move once the
 * batch is posted, kept with the batch (a tuple: mw, mr or None, rkey). */
PyObject *mw_hold_record(PyObject *mw, PyObject *mr, uint32_t rkey)
{
	return Py_BuildValue("(OOk)", mw, mr != NULL ? mr : Py_None,
			     (unsigned long)rkey);
}

/* After ibv_wr_complete succeeded: the records among a batch's kept
 * objects, in the order their WRs were built.  A record is told by
 * its shape and its first item, an MW: mw_hold_mr casts that item, and
 * the batch keeps other objects beside the records (its SGEs, MRs, AHs,
 * the windows themselves). */
void mw_hold_records_apply(PyObject *const *kept, Py_ssize_t n)
{
	Py_ssize_t i;

	for (i = 0; i < n; i++) {
		PyObject *r = kept[i], *mw, *mr;
		uint32_t rkey;

		if (!PyTuple_CheckExact(r) || PyTuple_Size(r) != 3)
			continue;
		mw = PyTuple_GetItem(r, 0);
		if (!PyObject_TypeCheck(mw, ST.MW_type))
			continue;
		mr = PyTuple_GetItem(r, 1);
		rkey = (uint32_t)PyLong_AsUnsignedLong(PyTuple_GetItem(r, 2));
		mw_hold_mr(mw, mr == Py_None ? NULL : mr, rkey);
	}
}

/* PD.alloc_mw(type) */
METHOD_DOC(pd_alloc_mw,
	   "Allocate a memory window in this PD.\n"
	   "\n"
	   "A type 1 window is bound with ``QP.bind_mw()``, a type 2 one\n"
	   "with a ``SendWR(opcode=BIND_MW, ...)`` or "
	   "``QPEx.wr_bind_mw()``.\n"
	   "\n"
	   "Wraps ``ibv_alloc_mw`` (man page ibv_alloc_mw(3)).\n"
	   "\n"
	   "Args:\n"
	   "    type: ``MWType.TYPE_1`` or ``MWType.TYPE_2``.\n"
	   "\n"
	   "Returns:\n"
	   "    The new MW.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: type is not an int.\n"
	   "    ValueError: type is neither 1 nor 2.\n" DOC_RAISES_VERB_AS(
		   "PD", ", e.g. EOPNOTSUPP without windows"));

#define ALLOC_MW_ARGS(X, S) \
	X(S, ENUM, int, type, MWType, IBV_MW_TYPE_1, IBV_MW_TYPE_2)
ARGS_METHOD(extern, pd_alloc_mw, "PD.alloc_mw", ALLOC_MW_ARGS, parent, a)
{
	PDObject *pd = (PDObject *)parent;
	struct ibv_mw *mw;
	PyObject *parked;
	MWObject *self;

	errno = 0;
	mw = ibv_alloc_mw((struct ibv_pd *)HANDLE(pd)->obj,
			  (enum ibv_mw_type)a->type);
	if (mw == NULL)
		return verbs_error_errno("ibv_alloc_mw");
	parked = PyList_New(0);
	self = parked ? HANDLE_ALLOC(MWObject, ST.MW_type) : NULL;
	if (self == NULL) {
		Py_XDECREF(parked);
		ibv_dealloc_mw(mw);
		return NULL;
	}
	self->parked = parked;
	handle_init(HANDLE(self), &mw_kind, HANDLE(pd));
	HANDLE_SET_OBJ(self, mw);
	__atomic_add_fetch(&mw_alive, 1, __ATOMIC_RELAXED);
	return (PyObject *)self;
}

const char mw_mod_inc_rkey__doc__[] = PyDoc_STR(
	"The next rkey for a type 2 memory window bind: ``rkey`` with its\n"
	"low 8 bits (the key part) incremented, wrapping at 0xff.\n"
	"\n"
	"Wraps ``ibv_inc_rkey`` (man page ibv_inc_rkey(3)).\n"
	"\n"
	"Args:\n"
	"    rkey: the window's current rkey, 32 bits.\n"
	"\n"
	"Raises:\n"
	"    TypeError: rkey is not an int.\n"
	"    ValueError: rkey does not fit 32 bits.");

/* ibverbs.inc_rkey(rkey) */
PyObject *mw_mod_inc_rkey(PyObject *mod, PyObject *arg)
{
	uint32_t rkey;

	if (arg_u32(arg, "rkey", &rkey) < 0)
		return NULL;
	return PyLong_FromUnsignedLong(ibv_inc_rkey(rkey));
}

/* ------------------------------------------------------------------ */
/* struct ibv_mw_bind_info from an MWBindInfo                          */
/* ------------------------------------------------------------------ */

/*
 * Convert bind_info (mr, addr, length, mw_access_flags) into *bi; *mr_out
 * gets a new reference to the MR.  0 or -1.
 *
 * The MR is required even where verbs.h allows NULL (ibv_bind_mw's unbind
 * of a type 1 window): rxe dereferences it (seen: SIGSEGV in
 * ibv_bind_mw).  length=0 unbinds instead.
 */
int bind_info_from_py(PyObject *o, struct ibv_mw_bind_info *bi,
		      PyObject **mr_out)
{
	PyObject *mr = NULL, *addr = NULL, *length = NULL, *flags = NULL;
	long access;
	int rc = -1;

	memset(bi, 0, sizeof(*bi));
	*mr_out = NULL;
	if ((mr = attr_required(o, "mr", "bind_info", "MWBindInfo")) == NULL ||
	    (addr = attr_required(o, "addr", "bind_info", "MWBindInfo")) ==
		    NULL ||
	    (length = attr_required(o, "length", "bind_info", "MWBindInfo")) ==
		    NULL ||
	    (flags = attr_required(o, "mw_access_flags", "bind_info",
				   "MWBindInfo")) == NULL)
		goto out;
	if (arg_u64(addr, "bind_info.addr", &bi->addr) < 0 ||
	    arg_u64(length, "bind_info.length", &bi->length) < 0 ||
	    arg_int(flags, "bind_info.mw_access_flags", 0, UINT_MAX, &access) <
		    0)
		goto out;
	bi->mw_access_flags = (unsigned int)access;
	if (!PyObject_TypeCheck(mr, ST.MR_type)) {
		arg_type_error_hint("bind_info.mr", "MR", 0, mr,
				    "length=0 unbinds");
		goto out;
	}
	if (handle_check(HANDLE(mr)) < 0)
		goto out;
	if (bi->length > UINT64_MAX - bi->addr) {
		PyErr_SetString(PyExc_ValueError,
				"bind_info.addr + length overflows");
		goto out;
	}
	bi->mr = HANDLE(mr)->obj;
	Py_INCREF(mr);
	*mr_out = mr;
	rc = 0;
out:
	Py_XDECREF(mr);
	Py_XDECREF(addr);
	Py_XDECREF(length);
	Py_XDECREF(flags);
	return rc;
}

/* An MWBindInfo of *bi and mr. */
PyObject *bind_info_to_py(const struct ibv_mw_bind_info *bi, PyObject *mr)
{
	PyObject *kw, *flags;

	flags = enum_from_int("AccessFlags", (long)bi->mw_access_flags);
	if (flags == NULL)
		return NULL;
	kw = Py_BuildValue("{sOsKsKsN}", "mr", mr, "addr",
			   (unsigned long long)bi->addr, "length",
			   (unsigned long long)bi->length, "mw_access_flags",
			   flags);
	if (kw == NULL)
		return NULL;
	return make_record(ST.MWBindInfo, kw);
}

int mw_parse(PyObject *o, const char *name)
{
	if (!PyObject_TypeCheck(o, ST.MW_type))
		return arg_type_error(name, "MW", 0, o);
	return handle_check(HANDLE(o));
}

/* ------------------------------------------------------------------ */
/* QP.bind_mw: type 1 windows                                          */
/* ------------------------------------------------------------------ */

const char qp_bind_mw__doc__[] = PyDoc_STR(
	"Bind a type 1 memory window to part of an MR.\n"
	"\n"
	"Posts the bind on the send queue; it completes on the send\n"
	"CQ like a WR (signaled with ``SendFlags.SIGNALED``). A\n"
	"bind_info length of 0 unbinds. The provider picks the new\n"
	"rkey. Type 2 windows bind with a SendWR(opcode=BIND_MW) or\n"
	"``QPEx.wr_bind_mw()``.\n"
	"\n"
	"Wraps ``ibv_bind_mw`` (man page ibv_bind_mw(3)).\n"
	"\n"
	"Args:\n"
	"    mw: a type 1 MW.\n"
	"    mw_bind: an MWBind (wr_id, send_flags, bind_info).\n"
	"\n"
	"Returns:\n"
	"    The window's new rkey.\n"
	"\n"
	"Raises:\n"
	"    TypeError: mw is not an MW, or mw_bind or its bind_info\n"
	"        lacks a field or has a wrong type.\n"
	"    ValueError: a value is out of range, or mw belongs to\n"
	"        another Context.\n"
	"    VerbsError: EINVAL for a type 2 window; EBADF if the QP,\n"
	"        the MW or the MR is closed; else the verb failed\n"
	"        (``errno``).");

/*
 * QP.bind_mw(mw, mw_bind): post the bind (ibv_bind_mw) and return the
 * window's new rkey, which the provider chose.  The bind completes on the
 * send CQ like a WR (signaled with SendFlags.SIGNALED).
 */
#define BIND_MW_ARGS(X, S)                                 \
	X(S, HANDLE, PyObject *, mw, MW, ARG_SAME_CONTEXT) \
	X(S, RECORD, PyObject *, mw_bind, MWBind)
ARGS_METHOD(extern, qp_bind_mw, "QP.bind_mw", BIND_MW_ARGS, self, a)
{
	PyObject *mw, *bind_o, *wr_id = NULL, *flags = NULL, *info = NULL;
	PyObject *mr = NULL, *res = NULL;
	struct ibv_mw_bind bind;
	int rc;

	mw = a->mw;
	bind_o = a->mw_bind;
	memset(&bind, 0, sizeof(bind));
	if ((wr_id = attr_required(bind_o, "wr_id", "mw_bind", "MWBind")) ==
		    NULL ||
	    (flags = attr_required(bind_o, "send_flags", "mw_bind",
				   "MWBind")) == NULL ||
	    (info = attr_required(bind_o, "bind_info", "mw_bind", "MWBind")) ==
		    NULL)
		goto out;
	if (arg_u64(wr_id, "mw_bind.wr_id", &bind.wr_id) < 0 ||
	    arg_u32(flags, "mw_bind.send_flags", &bind.send_flags) < 0 ||
	    bind_info_from_py(info, &bind.bind_info, &mr) < 0)
		goto out;
	/* Reading the records ran Python code, which may have closed a
	 * handle: check them again right before the verb. */
	if (handle_check(HANDLE(self)) < 0 || handle_check(HANDLE(mw)) < 0 ||
	    handle_check(HANDLE(mr)) < 0)
		goto out;
	bind.bind_info.mr = HANDLE(mr)->obj;
	if (MWP(mw)->type != IBV_MW_TYPE_1) {
		verbs_error_fmt(EINVAL, "ibv_bind_mw",
				"QP.bind_mw binds type 1 windows; bind a "
				"type 2 window with a SendWR(opcode=BIND_MW)");
		goto out;
	}
	rc = ibv_bind_mw(QPP(self), MWP(mw), &bind);
	if (rc != 0) {
		verbs_error(rc, "ibv_bind_mw");
		goto out;
	}
	mw_hold_mr(mw, bind.bind_info.length ? mr : NULL, MWP(mw)->rkey);
	res = PyLong_FromUnsignedLong(MWP(mw)->rkey);
out:
	Py_XDECREF(wr_id);
	Py_XDECREF(flags);
	Py_XDECREF(info);
	Py_XDECREF(mr);
	if (res != NULL)
		mw_sweep_if_wanted();
	return res;
}

/* ------------------------------------------------------------------ */
/* The MW type                                                         */
/* ------------------------------------------------------------------ */

static PyObject *mw_get_rkey(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(MWP(self)->rkey);
}

/* What a C program does with mw->rkey = rkey: rxe leaves ibv_mw.rkey as it
 * was after a type 2 bind posted as a SendWR, and takes it as the window's
 * current key in the next BIND_MW (MW_BIND_ERR when it is stale). */
static int mw_set_rkey(PyObject *self, PyObject *v, void *closure)
{
	uint32_t rkey;

	if (v == NULL) {
		PyErr_SetString(PyExc_AttributeError, "cannot delete rkey");
		return -1;
	}
	if (handle_check(HANDLE(self)) < 0 || arg_u32(v, "rkey", &rkey) < 0)
		return -1;
	MWP(self)->rkey = rkey;
	return 0;
}

static PyObject *mw_get_handle(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(MWP(self)->handle);
}

static PyObject *mw_get_type(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return enum_from_int("MWType", MWP(self)->type);
}

static PyObject *mw_repr(PyObject *self)
{
	struct ibv_mw *mw = HANDLE(self)->obj;

	if (mw == NULL)
		return PyUnicode_FromString("<ibverbs.MW closed>");
	return PyUnicode_FromFormat("<ibverbs.MW type=%d rkey=0x%x handle=%u>",
				    (int)mw->type, mw->rkey, mw->handle);
}

static PyMethodDef mw_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef mw_getset[] = {
	{ "rkey", mw_get_rkey, mw_set_rkey,
	  "The window's current rkey (``ibv_mw.rkey``), what a peer\n"
	  "uses. Settable: after a type 2 bind completes, set it to the\n"
	  "bind's rkey. EBADF once closed.",
	  NULL },
	{ "handle", mw_get_handle, NULL,
	  "The MW's kernel handle (``ibv_mw.handle``); EBADF once closed.",
	  NULL },
	{ "type", mw_get_type, NULL,
	  "``MWType.TYPE_1`` or ``MWType.TYPE_2``; EBADF once closed.", NULL },
	{ "pd", handle_get_parent, NULL, "The PD the MW was allocated in.",
	  NULL },
	HANDLE_GETSETS_END
};

PyDoc_STRVAR(mw__doc__,
	     "A memory window (``struct ibv_mw``): a remote key for part of "
	     "an MR.\n"
	     "\n"
	     "Made by ``PD.alloc_mw(type)``. A type 1 window is bound with\n"
	     "``QP.bind_mw()``; a type 2 one with a\n"
	     "``SendWR(opcode=BIND_MW, ...)`` or ``QPEx.wr_bind_mw()`` and\n"
	     "invalidated with LOCAL_INV or a peer's SEND_WITH_INV.\n"
	     "The window keeps the MRs it may still be bound to alive (the\n"
	     "kernel does not deregister an MR a window is bound to): the\n"
	     "MR of its last bind posted; and one it was bound to before a\n"
	     "rebind, an unbind (type 1, length 0) or a LOCAL_INV of its\n"
	     "rkey posted on a QP of its PD, until a later post or bind\n"
	     "deregisters it (once the kernel agrees it is unbound and\n"
	     "nothing else refers to it). A failed post changes nothing; a\n"
	     "peer's SEND_WITH_INV is not seen. Closing the window lets\n"
	     "them all go.\n"
	     "``close()`` wraps ``ibv_dealloc_mw`` (man page\n"
	     "ibv_alloc_mw(3)).");

static int mw_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((MWObject *)self)->mr);
	Py_VISIT(((MWObject *)self)->parked);
	return handle_traverse(HANDLE(self), visit, arg);
}

/* Breaks a cycle through a bound MR (its owner refers to the window):
 * dealloc the window first, so that the MR can then deregister. */
static int mw_clear(PyObject *self)
{
	handle_close_quiet(HANDLE(self)); /* mw_release lets the MRs go */
	return 0;
}

static void mw_dealloc(PyObject *self)
{
	PyObject *mr, *parked;

	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	/* Off the list in any case: it must not outlive the window. */
	HELD_LOCK();
	unhold_locked((MWObject *)self, &mr, &parked);
	HELD_UNLOCK();
	/* Dealloc failed: the window may still be bound to the MRs, which
	 * must then never deregister.  Leak them on purpose. */
	if (HANDLE(self)->obj == NULL) {
		Py_XDECREF(mr);
		Py_XDECREF(parked);
	}
	__atomic_sub_fetch(&mw_alive, 1, __ATOMIC_RELAXED);
	handle_dealloc(HANDLE(self));
}

/* clang-format off */
static PyType_Slot mw_slots[] = {
	{ Py_tp_doc, (void *)mw__doc__ },
	{ Py_tp_new, handle_no_new },
	{ Py_tp_dealloc, mw_dealloc },
	{ Py_tp_traverse, mw_traverse },
	{ Py_tp_clear, mw_clear },
	{ Py_tp_repr, mw_repr },
	{ Py_tp_methods, mw_methods },
	{ Py_tp_getset, mw_getset },
	{ 0, NULL }
};
/* clang-format on */

PyType_Spec MW_spec = { "ibverbs._ibverbs.MW", sizeof(MWObject), 0,
			Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, mw_slots };
