/*
 * cq.c - CQ: a completion queue (ibv_cq), polled on the data path.
 *
 * poll(n) reaps up to n completions with ONE ibv_poll_cq call (the
 * static inline from verbs.h, straight into the provider) into storage
 * kept in the object, then wraps each in a WC.  It never blocks, so it
 * keeps the GIL.  cq_context is the CQObject itself, so that
 * CompChannel.get_cq_event() can return this very object.
 */
#include "ibverbs.h"
#include "cq/cq.h"
#include "wr/wr.h"
#include <arpa/inet.h>
#include <limits.h>
#include <string.h>

#define CQP(self) ((struct ibv_cq *)HANDLE(self)->obj)

/* CQ.poll_into: the arrays of the last call, held (a buffer export
 * each) until other arrays are given or the CQ is closed. */
#define CQ_INTO_FIELDS 5 /* wr_id, status, opcode, byte_len, imm_data */
struct cq_into {
	PyObject *src[CQ_INTO_FIELDS]; /* the arrays given, or NULL */
	Column col[CQ_INTO_FIELDS];
};

static void cq_into_clear(CQObject *c);

int cq_destroy(Handle *h)
{
	CQObject *self = (CQObject *)h;
	struct ibv_cq *cq = h->obj;

	/* ibv_destroy_cq waits until every event got is acked: ack ours. */
	if (self->events_unacked) {
		IBV.ack_cq_events(cq, self->events_unacked);
		self->events_unacked = 0;
	}
	return IBV.destroy_cq(cq);
}

static void cq_release(Handle *h)
{
	CQObject *self = (CQObject *)h;

	handle_unuse_clear(&self->channel);
	cq_into_clear(self);
}

static const HandleKind cq_kind = { "CQ", "ibv_destroy_cq", cq_destroy,
				    cq_release };

METHOD_DOC(context_create_cq,
	   "Create a completion queue for at least ``cqe`` entries.\n"
	   "\n"
	   "With a ``channel``, ``CQ.req_notify()`` arms the CQ to signal\n"
	   "its next completion there; the CQ uses the channel, which\n"
	   "refuses ``close()`` (EBUSY) until the CQ is closed.\n"
	   "\n"
	   "Wraps ``ibv_create_cq`` (man page ibv_create_cq(3)).\n"
	   "\n"
	   "Args:\n"
	   "    cqe: minimum number of entries, 1 or more.\n"
	   "    channel: a CompChannel of this Context, or None.\n"
	   "    comp_vector: the completion vector (interrupt), from 0\n"
	   "        to ``num_comp_vectors - 1``.\n"
	   "\n"
	   "Returns:\n"
	   "    The new CQ; ``cqe`` holds the size the provider chose.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: channel is not a CompChannel or None, or a\n"
	   "        number is not an int.\n"
	   "    ValueError: channel belongs to another Context, or cqe or\n"
	   "        comp_vector is out of range.\n"
	   "    VerbsError: EBADF if the Context or channel is closed;\n"
	   "        else the verb failed (``errno``, e.g. EINVAL for a cqe\n"
	   "        past the device's max_cqe).");

#define CREATE_CQ_ARGS(X, S)                                             \
	X(S, INT, int, cqe, 1, INT32_MAX)                                \
	X(S, HANDLE, PyObject *, channel, CompChannel, ARG_SAME_CONTEXT, \
	  .flags = ARG_OPT | ARG_NONE)                                   \
	X(S, INT, int, comp_vector, 0, INT32_MAX, .flags = ARG_OPT)
ARGS_METHOD(extern, context_create_cq, "Context.create_cq", CREATE_CQ_ARGS,
	    parent, a)
{
	ContextObject *ctx = (ContextObject *)parent;
	struct ibv_comp_channel *ch = NULL;
	PyObject *channel;
	struct ibv_cq *cq;
	CQObject *self;

	channel = a->channel;
	if (channel != NULL)
		ch = HANDLE(channel)->obj;
	/* Allocated first: its address is the cq_context.  Not linked into
	 * the Context until the verb succeeded, so a failure only frees it. */
	self = HANDLE_ALLOC(CQObject, ST.CQ_type);
	if (self == NULL)
		return NULL;
	/* A GC pass in the allocation may have run finalizers (Python code)
	 * that closed the Context or the channel: check again. */
	if (handle_check(HANDLE(ctx)) < 0 ||
	    (ch != NULL && handle_check(HANDLE(channel)) < 0)) {
		Py_DECREF(self);
		return NULL;
	}
	errno = 0;
	cq = IBV.create_cq((struct ibv_context *)HANDLE(ctx)->obj, a->cqe, self,
			   ch, a->comp_vector);
	if (cq == NULL) {
		int err = errno_or(EINVAL);

		Py_DECREF(self);
		return verbs_error_fmt(err, "ibv_create_cq", "cqe=%d", a->cqe);
	}
	handle_init(HANDLE(self), &cq_kind, HANDLE(ctx));
	HANDLE_SET_OBJ(self, cq);
	if (channel != NULL) {
		Py_INCREF(channel);
		self->channel = channel;
		handle_use(HANDLE(channel));
	}
	return (PyObject *)self;
}

/* ------------------------------------------------------------------ */
/* Poll                                                                */
/* ------------------------------------------------------------------ */

/* Make room for n completions in self->wcs. */
static int cq_reserve(CQObject *self, int n)
{
	struct ibv_wc *p;

	if (n <= self->wcs_len)
		return 0;
	p = PyMem_Realloc(self->wcs, (size_t)n * sizeof(*p));
	if (p == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	self->wcs = p;
	self->wcs_len = n;
	return 0;
}

static int parse_num_entries_value(PyObject *o, long *n);

static int parse_num_entries(PyObject *args, PyObject *kw, long *n)
{
	static char *kwlist[] = { "num_entries", NULL };
	PyObject *o = NULL;

	/* Fast path: poll() and poll(n) build nothing but a C long. */
	if (kw == NULL) {
		Py_ssize_t nargs = PyTuple_Size(args);

		if (nargs == 0) {
			*n = 1;
			return 0;
		}
		if (nargs == 1)
			o = PyTuple_GetItem(args, 0);
	}
	/* Parsed by hand: the data path, where args_parse costs instructions. */
	if (o == NULL &&
	    !PyArg_ParseTupleAndKeywords(args, kw, "|O:poll", kwlist, &o))
		return -1;
	if (o == NULL) {
		*n = 1;
		return 0;
	}
	return parse_num_entries_value(o, n);
}

/* num_entries's value: an int >= 1 (a huge one clamped). */
static int parse_num_entries_value(PyObject *o, long *n)
{
	if (PyLong_Check(o)) {
		int overflow;

		*n = PyLong_AsLongAndOverflow(o, &overflow);
		if (*n == -1 && PyErr_Occurred())
			return -1;
		if (overflow > 0)
			*n = LONG_MAX; /* huge: clamped to the CQ's size */
		if (*n >= 1 && overflow >= 0)
			return 0;
	} else {
		arg_type_error("num_entries", "int", 0, o);
		return -1;
	}
	PyErr_Format(PyExc_ValueError, "num_entries must be >= 1, got %S", o);
	return -1;
}

/*
 * ibv_poll_cq's result as a count, or -1 with VerbsError set.  A provider
 * without the op returns EOPNOTSUPP as a *positive* count; when that is
 * also a possible count, ask again for 0 entries: a real poll returns 0.
 */
static int poll_result(struct ibv_cq *cq, int rc, int n, struct ibv_wc *wcs)
{
	if (rc < 0) {
		/* Providers disagree on what a negative value means. */
		verbs_error_fmt(EIO, "ibv_poll_cq", "the provider returned %d",
				rc);
		return -1;
	}
	if (rc > n || (rc == EOPNOTSUPP && ibv_poll_cq(cq, 0, wcs) != 0)) {
		verbs_error(rc == EOPNOTSUPP ? EOPNOTSUPP : EIO, "ibv_poll_cq");
		return -1;
	}
	return rc;
}

static PyObject *wc_build(const void *elem)
{
	return wc_new(elem);
}

PyObject *list_from_store(void **store, int *store_len, size_t size, int n,
			  PyObject *(*build)(const void *elem))
{
	char *mine = *store;
	int mine_len = *store_len, i;
	PyObject *list;

	/* Building the records allocates, and a GC pass can run Python
	 * code that lets another thread poll the same CQ, which would
	 * overwrite or reallocate the storage under us: take it for the
	 * loop. */
	*store = NULL;
	*store_len = 0;
	list = PyList_New(n);
	/* On a failure the completions already reaped are lost: only a
	 * MemoryError can get here, after which little else works either. */
	for (i = 0; list != NULL && i < n; i++) {
		PyObject *o = build(mine + (size_t)i * size);

		if (o == NULL) {
			Py_CLEAR(list);
			break;
		}
		PyList_SetItem(list, i, o);
	}
	/* Give it back, unless a concurrent poll made new storage. */
	if (*store == NULL) {
		*store = mine;
		*store_len = mine_len;
	} else {
		PyMem_Free(mine);
	}
	return list;
}

PyDoc_STRVAR(cq_poll__doc__,
	     "Reap up to ``num_entries`` completions, without waiting.\n"
	     "\n"
	     "One ``ibv_poll_cq`` call; more than the CQ's ``cqe`` is asked\n"
	     "as ``cqe``. A failed completion is returned like any other:\n"
	     "check ``wc.status`` (or ``wc.raise_for_status()``).\n"
	     "\n"
	     "Wraps ``ibv_poll_cq`` (man page ibv_poll_cq(3)).\n"
	     "\n"
	     "Args:\n"
	     "    num_entries: the most completions to return, 1 or more.\n"
	     "\n"
	     "Returns:\n"
	     "    A list of WC, oldest first; [] when none is ready.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: num_entries is not an int.\n"
	     "    ValueError: num_entries is less than 1.\n"
	     "    VerbsError: EBADF once the CQ is closed; EOPNOTSUPP when "
	     "the\n"
	     "        provider cannot poll; EIO when it returns a bad count.");

#ifdef Py_GIL_DISABLED
/*
 * The free-threaded build polls into storage of its own call, not the
 * CQ's: two threads polling one CQ at once would otherwise write the same
 * entries (the provider hands each completion to one poller, under its
 * own lock; the storage after it is ours).  Up to WC_ON_STACK entries on
 * the stack, more in a buffer of the call's.
 */
#define WC_ON_STACK 32

/* n entries of storage: stack when it fits, else allocated (*heap). */
static struct ibv_wc *wc_room(struct ibv_wc *stack, int n, struct ibv_wc **heap)
{
	*heap = NULL;
	if (n <= WC_ON_STACK)
		return stack;
	*heap = PyMem_Malloc((size_t)n * sizeof(**heap));
	if (*heap == NULL)
		PyErr_NoMemory();
	return *heap;
}
#endif

int cq_check_polled_here(PyObject *self)
{
	if (((CQObject *)self)->user_owned) {
		PyErr_SetString(PyExc_ValueError,
				"this CQ was handed to mlx5.init_obj(): its "
				"user polls its ring, libibverbs does not");
		return -1;
	}
	return 0;
}

static PyObject *cq_poll(PyObject *self, PyObject *args, PyObject *kw)
{
	CQObject *c = (CQObject *)self;
	struct ibv_cq *cq;
	long want;
	int n, rc;

	HANDLE_CHECK(self);
	if (cq_check_polled_here(self) < 0 ||
	    parse_num_entries(args, kw, &want) < 0)
		return NULL;
	cq = CQP(self);
	/* A CQ never holds more than cqe entries: no need for more room. */
	n = want > cq->cqe ? cq->cqe : (int)want;
	if (n < 1)
		n = 1;
#ifdef Py_GIL_DISABLED
	{
		struct ibv_wc stack[WC_ON_STACK], *heap, *wcs;
		void *store;
		int store_len = n;
		PyObject *res;

		(void)c;
		wcs = wc_room(stack, n, &heap);
		if (wcs == NULL)
			return NULL;
		store = wcs;
		rc = poll_result(cq, ibv_poll_cq(cq, n, wcs), n, wcs);
		if (rc <= 0)
			res = rc < 0 ? NULL : PyList_New(0);
		else
			res = list_from_store(&store, &store_len, sizeof(*wcs),
					      rc, wc_build);
		PyMem_Free(heap);
		return res;
	}
#else
	if (cq_reserve(c, n) < 0)
		return NULL;
	rc = poll_result(cq, ibv_poll_cq(cq, n, c->wcs), n, c->wcs);
	if (rc <= 0)
		return rc < 0 ? NULL : PyList_New(0);
	return list_from_store((void **)&c->wcs, &c->wcs_len, sizeof(*c->wcs),
			       rc, wc_build);
#endif
}

PyDoc_STRVAR(cq_poll_count__doc__,
	     "Reap up to ``num_entries`` completions and count them.\n"
	     "\n"
	     "The zero-allocation polling path: one ``ibv_poll_cq`` call\n"
	     "into storage the CQ keeps, no WC objects built. Every reaped\n"
	     "completion is consumed; if one failed, CompletionError is\n"
	     "raised for the first failed one (the count is lost then).\n"
	     "\n"
	     "Wraps ``ibv_poll_cq`` (man page ibv_poll_cq(3)).\n"
	     "\n"
	     "Args:\n"
	     "    num_entries: the most to reap, ``1..2**63-1`` (positional).\n"
	     "\n"
	     "Returns:\n"
	     "    How many completions were reaped (0 when none is ready).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: num_entries is not an int.\n"
	     "    ValueError: num_entries is out of range.\n"
	     "    CompletionError: a reaped completion failed (``.wc`` is "
	     "it).\n"
	     "    VerbsError: EBADF once the CQ is closed; EOPNOTSUPP or EIO\n"
	     "        as ``poll()``.");

/*
 * poll_count(n): the zero-allocation polling path.  Reaps up to n
 * completions in one ibv_poll_cq call into the CQ's storage and returns
 * how many; builds no WC objects (the count is a small int, usually
 * cached).  If any reaped completion failed, raises CompletionError for
 * the first failed one (its .wc is a WC copy) after reaping all n.
 */
#ifdef Py_GIL_DISABLED
/* The free-threaded poll_count's end: the same, into storage of the
 * call's own. */
static PyObject *poll_count_into(struct ibv_cq *cq, int n, struct ibv_wc *wcs)
{
	int rc, i;

	rc = ibv_poll_cq(cq, n, wcs);
	if (rc == 0)
		return PyLong_FromLong(0);
	rc = poll_result(cq, rc, n, wcs);
	if (rc < 0)
		return NULL;
	for (i = 0; i < rc; i++) {
		if (wcs[i].status != IBV_WC_SUCCESS) {
			/* A copy: wc_new allocates, and a GC pass may let
			 * another thread poll into the same storage. */
			struct ibv_wc bad = wcs[i];
			PyObject *wc = wc_new(&bad);

			if (wc == NULL)
				return NULL;
			completion_error(wc);
			Py_DECREF(wc);
			return NULL;
		}
	}
	return PyLong_FromLong(rc);
}

#endif

static PyObject *cq_poll_count(PyObject *self, PyObject *arg)
{
	CQObject *c = (CQObject *)self;
	struct ibv_cq *cq;
	long want;
	int n, rc, i;

	HANDLE_CHECK(self);
	if (cq_check_polled_here(self) < 0)
		return NULL;
	/* Parsed by hand: the data path, where args_parse costs instructions. */
	want = PyLong_Check(arg) ? PyLong_AsLong(arg) : -1;
	if (want < 1) {
		if (!PyLong_Check(arg))
			arg_type_error("num_entries", "int", 0, arg);
		else if (!PyErr_Occurred() ||
			 PyErr_ExceptionMatches(PyExc_OverflowError)) {
			PyErr_Clear();
			PyErr_Format(
				PyExc_ValueError,
				"num_entries must be in 1..2**63-1, got %S",
				arg);
		}
		return NULL;
	}
	cq = CQP(self);
	n = want > cq->cqe ? cq->cqe : (int)want;
	if (n < 1)
		n = 1;
#ifdef Py_GIL_DISABLED
	{
		struct ibv_wc stack[WC_ON_STACK], *heap, *wcs;
		PyObject *res;

		(void)rc;
		(void)i;
		wcs = wc_room(stack, n, &heap);
		if (wcs == NULL)
			return NULL;
		res = poll_count_into(cq, n, wcs);
		PyMem_Free(heap);
		return res;
	}
#endif
	if (n > c->wcs_len && cq_reserve(c, n) < 0)
		return NULL;
#ifdef IBVERBS_BENCH_RELEASE_GIL
	HANDLE_BUSY_ENTER(self);
	Py_BEGIN_ALLOW_THREADS
#endif
	rc = ibv_poll_cq(cq, n, c->wcs);
#ifdef IBVERBS_BENCH_RELEASE_GIL
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(self);
#endif
	if (rc == 0)
		return PyLong_FromLong(0);
	rc = poll_result(cq, rc, n, c->wcs);
	if (rc < 0)
		return NULL;
	for (i = 0; i < rc; i++) {
		if (c->wcs[i].status != IBV_WC_SUCCESS) {
			/* A copy: wc_new allocates, and a GC pass may let
			 * another thread poll into c->wcs. */
			struct ibv_wc bad = c->wcs[i];
			PyObject *wc = wc_new(&bad);

			if (wc == NULL)
				return NULL;
			completion_error(wc);
			Py_DECREF(wc);
			return NULL;
		}
	}
	return PyLong_FromLong(rc);
}

/* ------------------------------------------------------------------ */
/* poll_into: completions into caller's arrays                         */
/* ------------------------------------------------------------------ */

/* The fields poll_into writes, in its keywords' order. */
static const char *const into_names[CQ_INTO_FIELDS] = { "wr_id", "status",
							"opcode", "byte_len",
							"imm_data" };
/* The least item size of each: wr_id is 64 bits, byte_len and imm_data
 * 32, status and opcode fit a byte. */
static const int into_min_size[CQ_INTO_FIELDS] = { 8, 1, 1, 4, 4 };

/* Drop the arrays the CQ holds for poll_into (their exports). */
static void cq_into_clear(CQObject *c)
{
	int k;

	if (c->into == NULL)
		return;
	for (k = 0; k < CQ_INTO_FIELDS; k++) {
		column_release(&c->into->col[k]);
		Py_CLEAR(c->into->src[k]);
	}
	PyMem_Free(c->into);
	c->into = NULL;
}

/* Field k's array o as a column of c->into: the one the last call gave
 * when o is that object (no look at it again), else read now.  o NULL:
 * the field is not asked for (a held array is released). */
static int into_column(CQObject *c, int k, PyObject *o)
{
	struct cq_into *in = c->into;
	Column *col = &in->col[k];

	if (o == in->src[k])
		return 0;
	column_release(col);
	Py_CLEAR(in->src[k]);
	if (o == NULL)
		return 0;
	if (column_get(o, into_names[k], COLUMN_WRITE, col) < 0)
		return -1;
	if (col->itemsize < into_min_size[k]) {
		PyErr_Format(PyExc_ValueError,
			     "%s's items must hold at least %d bytes, not %d",
			     into_names[k], into_min_size[k], col->itemsize);
		column_release(col);
		return -1;
	}
	Py_INCREF(o);
	in->src[k] = o;
	return 0;
}

/* poll_into's keywords into o[] (NULL: not given) and *want.  Parsed by
 * hand: the data path, where args_parse costs instructions. */
static int into_args(PyObject *args, PyObject *kw, PyObject *o[CQ_INTO_FIELDS],
		     long *want)
{
	PyObject *key, *value;
	Py_ssize_t pos = 0;
	int k, given = 0;

	memset(o, 0, CQ_INTO_FIELDS * sizeof(*o));
	*want = LONG_MAX;
	if (PyTuple_Size(args) != 0) {
		PyErr_SetString(PyExc_TypeError,
				"poll_into() takes keyword arguments only");
		return -1;
	}
	while (kw != NULL && PyDict_Next(kw, &pos, &key, &value)) {
		for (k = 0; k < CQ_INTO_FIELDS; k++) {
			if (PyUnicode_CompareWithASCIIString(
				    key, into_names[k]) == 0)
				break;
		}
		if (k < CQ_INTO_FIELDS) {
			if (value != Py_None) {
				o[k] = value;
				given++;
			}
		} else if (PyUnicode_CompareWithASCIIString(
				   key, "num_entries") == 0) {
			if (parse_num_entries_value(value, want) < 0)
				return -1;
		} else {
			PyErr_Format(PyExc_TypeError,
				     "poll_into() got an unexpected keyword "
				     "argument '%S'",
				     key);
			return -1;
		}
	}
	if (given == 0) {
		PyErr_SetString(PyExc_TypeError,
				"poll_into() needs at least one array (wr_id, "
				"status, opcode, byte_len or imm_data)");
		return -1;
	}
	return 0;
}

/* See cq.h: completion i is the ibv_wc at first + i * stride. */
void cq_into_store(const CQObject *c, const struct ibv_wc *first, size_t stride,
		   int n)
{
	const Column *col = c->into->col;
	int i;

	for (i = 0; i < n; i++) {
		const struct ibv_wc *wc =
			(const struct ibv_wc *)((const char *)first +
						(size_t)i * stride);

		if (col[0].data)
			column_put(&col[0], i, wc->wr_id);
		if (col[1].data)
			column_put(&col[1], i, wc->status);
		if (col[2].data)
			column_put(&col[2], i, wc->opcode);
		if (col[3].data)
			column_put(&col[3], i, wc->byte_len);
		if (col[4].data)
			column_put(&col[4], i,
				   (wc->wc_flags & IBV_WC_WITH_IMM) ?
					   ntohl(wc->imm_data) :
					   0);
	}
}

/* See cq.h. */
int cq_into_begin(CQObject *c, PyObject *args, PyObject *kw, long *n,
		  unsigned int *given)
{
	PyObject *o[CQ_INTO_FIELDS];
	long want;
	int k;

	if (into_args(args, kw, o, &want) < 0)
		return -1;
	if (c->into == NULL) {
		c->into = PyMem_Calloc(1, sizeof(*c->into));
		if (c->into == NULL) {
			PyErr_NoMemory();
			return -1;
		}
	}
	*n = want;
	if (given != NULL)
		*given = 0;
	for (k = 0; k < CQ_INTO_FIELDS; k++) {
		if (into_column(c, k, o[k]) < 0)
			return -1;
		if (o[k] != NULL && c->into->col[k].n < *n)
			*n = c->into->col[k].n;
		if (o[k] != NULL && given != NULL)
			*given |= 1u << k;
	}
	return 0;
}

PyDoc_STRVAR(
	cq_poll_into__doc__,
	"Reap completions into integer arrays: no object per completion.\n"
	"\n"
	"One ``ibv_poll_cq`` call of at most as many completions as the\n"
	"shortest array given (and ``num_entries``, and the CQ's size);\n"
	"completion ``i`` goes to row ``i`` of each array asked for. A\n"
	"failed completion is written like any other (check ``status``):\n"
	"nothing is raised. An array is any writable 1-D array of integers\n"
	"(numpy, array.array, bytearray's memoryview, a torch CPU tensor):\n"
	"wr_id's items of 8 bytes, byte_len's and imm_data's of 4 or more.\n"
	"The CQ keeps the arrays of the last call (a buffer export each,\n"
	"until other arrays are given or the CQ is closed), so that a loop\n"
	"passing the same arrays looks at them once.\n"
	"\n"
	"Wraps ``ibv_poll_cq`` (man page ibv_poll_cq(3)).\n"
	"\n" CQ_POLL_INTO_DOC_ARGS
	"        items too small; num_entries < 1; a CQEx (use its\n"
	"        ``poll_into()``).\n"
	"    VerbsError: EBADF once the CQ is closed; EOPNOTSUPP or EIO\n"
	"        as ``poll()``.");

static PyObject *cq_poll_into(PyObject *self, PyObject *args, PyObject *kw)
{
	CQObject *c = (CQObject *)self;
	struct ibv_cq *cq;
	long n;
	int rc;

	HANDLE_CHECK(self);
	if (cq_check_polled_here(self) < 0)
		return NULL;
	if (Py_TYPE(self) != ST.CQ_type) {
		PyErr_SetString(PyExc_ValueError,
				"CQ.poll_into() reads plain CQs: use "
				"CQEx.poll_into()");
		return NULL;
	}
	if (cq_into_begin(c, args, kw, &n, NULL) < 0)
		return NULL;
	cq = CQP(self);
	if (n > cq->cqe)
		n = cq->cqe;
	if (n < 1)
		return PyLong_FromLong(0);
	if (n > c->wcs_len && cq_reserve(c, (int)n) < 0)
		return NULL;
	rc = ibv_poll_cq(cq, (int)n, c->wcs);
	if (rc == 0)
		return PyLong_FromLong(0);
	rc = poll_result(cq, rc, (int)n, c->wcs);
	if (rc < 0)
		return NULL;
	cq_into_store(c, c->wcs, sizeof(*c->wcs), rc);
	return PyLong_FromLong(rc);
}

/* ------------------------------------------------------------------ */
/* Notification                                                        */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(cq_req_notify__doc__,
	     "Arm the CQ: its next completion sends an event to its channel.\n"
	     "\n"
	     "Arms once: call it again after each ``get_cq_event()``, and\n"
	     "poll after arming so that no completion is missed.\n"
	     "\n"
	     "Wraps ``ibv_req_notify_cq`` (man page ibv_req_notify_cq(3)).\n"
	     "\n"
	     "Args:\n"
	     "    solicited_only: only a solicited completion (or an error)\n"
	     "        triggers the event.\n"
	     "\n"
	     "Raises:\n" DOC_RAISES_VERB("CQ"));

/* solicited_only: any object, read for its truth. */
#define REQ_NOTIFY_ARGS(X, S) \
	X(S, OBJECT, PyObject *, solicited_only, .flags = ARG_OPT)
ARGS_METHOD(static, cq_req_notify, "CQ.req_notify", REQ_NOTIFY_ARGS, self, a)
{
	int solicited = 0, rc;

	if (a->solicited_only != NULL &&
	    (solicited = PyObject_IsTrue(a->solicited_only)) < 0)
		return NULL;
	/* __bool__ may have closed the CQ. */
	HANDLE_CHECK(self);
	rc = ibv_req_notify_cq(CQP(self), solicited);
	if (rc != 0)
		return verbs_error(rc, "ibv_req_notify_cq");
	Py_RETURN_NONE;
}

/* ack_events' ValueError: n is more than the have events unacked. */
static PyObject *ack_too_many(long n, unsigned int have)
{
	PyErr_Format(PyExc_ValueError,
		     "cannot ack %ld event(s): that is more CQ events "
		     "than the %u delivered by get_cq_event() and not "
		     "yet acked",
		     n, have);
	return NULL;
}

PyDoc_STRVAR(cq_ack_events__doc__,
	     "Acknowledge completion events got by ``get_cq_event()``.\n"
	     "\n"
	     "Closing the CQ acks what is left, so acking is needed only to\n"
	     "keep ``events_unacked`` small; ack in batches for speed.\n"
	     "\n"
	     "Wraps ``ibv_ack_cq_events`` (man page ibv_get_cq_event(3)).\n"
	     "\n"
	     "Args:\n"
	     "    nevents: how many, 1 or more.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: nevents is not an int.\n"
	     "    ValueError: nevents is out of range or more than\n"
	     "        ``events_unacked``.\n"
	     "    VerbsError: EBADF once the CQ is closed.");

#define ACK_EVENTS_ARGS(X, S) \
	X(S, INT, int, nevents, 1, INT32_MAX, .flags = ARG_OPT, .def = 1)
ARGS_METHOD(static, cq_ack_events, "CQ.ack_events", ACK_EVENTS_ARGS, self, a)
{
	CQObject *c = (CQObject *)self;
	long n;

	n = a->nevents;
#ifdef Py_GIL_DISABLED
	{
		/* Threads may get events and ack them at once: take n off
		 * the count only while it holds n (compare-exchange). */
		unsigned int have =
			__atomic_load_n(&c->events_unacked, __ATOMIC_ACQUIRE);

		do {
			if ((unsigned long)n > have)
				return ack_too_many(n, have);
		} while (!__atomic_compare_exchange_n(
			&c->events_unacked, &have, have - (unsigned int)n, 1,
			__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	}
#else
	if ((unsigned long)n > c->events_unacked)
		return ack_too_many(n, c->events_unacked);
	c->events_unacked -= (unsigned int)n;
#endif
	IBV.ack_cq_events(CQP(self), (unsigned int)n);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(cq_resize__doc__,
	     "Change the CQ's capacity to at least ``cqe`` entries.\n"
	     "\n"
	     "The provider may round up; ``cqe`` then reads the size it\n"
	     "granted. Completions already queued are kept, in order. A\n"
	     "size below the number of completions waiting is refused by\n"
	     "the provider (rxe: EINVAL). The verb runs with the GIL held,\n"
	     "so no ``poll()`` of this CQ runs meanwhile.\n"
	     "\n" CQ_RESIZE_DOC_ARGS
	     "    ValueError: cqe is less than 1 or above ``2**31-1``.\n"
	     "    VerbsError: EBADF once the CQ is closed; else the verb\n"
	     "        failed (``errno``: EINVAL above the device's\n"
	     "        ``max_cqe`` or below the completions waiting,\n"
	     "        EOPNOTSUPP when the provider cannot resize).");

const ArgSpec cq_resize_params[] = {
	ARG_INT(struct cq_resize_args, cqe, 1, INT32_MAX), ARG_END
};
METHOD_ARGS(cq_resize, "CQ.resize", cq_resize_params);

PyObject *cq_resize_to(PyObject *self, int cqe)
{
	int rc;

	rc = IBV.resize_cq(CQP(self), cqe);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_resize_cq", "cqe=%d (now %d)",
				       cqe, CQP(self)->cqe);
	Py_RETURN_NONE;
}

static PyObject *cq_resize(PyObject *self, PyObject *args, PyObject *kw)
{
	struct cq_resize_args a;

	HANDLE_CHECK(self);
	if (args_parse(&cq_resize_args, self, args, kw, &a) < 0)
		return NULL;
	return cq_resize_to(self, a.cqe);
}

PyDoc_STRVAR(cq_modify__doc__,
	     "Set the CQ's moderation: an event once ``cq_count``\n"
	     "completions arrived or ``cq_period`` microseconds passed.\n"
	     "\n"
	     "Sets ``CQAttrMask.MODERATE`` in ``attr_mask`` (the one\n"
	     "attribute of ``struct ibv_modify_cq_attr``); the device's\n"
	     "limits are ``query_device_ex().cq_mod_caps``.\n"
	     "\n"
	     "Wraps ``ibv_modify_cq`` (man page ibv_modify_cq(3)); never run\n"
	     "on hardware here, checked against the recording double (rxe\n"
	     "has no CQ moderation).\n"
	     "\n"
	     "Args:\n"
	     "    cq_count: completions per event, 0..65535.\n"
	     "    cq_period: microseconds per event, 0..65535.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an argument is not an int.\n"
	     "    ValueError: an argument is out of range.\n"
	     "    VerbsError: EBADF once the CQ is closed; EOPNOTSUPP when\n"
	     "        the provider has no CQ moderation; else the verb failed\n"
	     "        (``errno``).");

#define CQ_MODIFY_ARGS(X, S)           \
	X(S, UINT, uint16_t, cq_count) \
	X(S, UINT, uint16_t, cq_period)
ARGS_METHOD(static, cq_modify, "CQ.modify", CQ_MODIFY_ARGS, self, a)
{
	struct ibv_modify_cq_attr attr;
	int rc;

	memset(&attr, 0, sizeof(attr));
	attr.attr_mask = IBV_CQ_ATTR_MODERATE;
	attr.moderate.cq_count = a->cq_count;
	attr.moderate.cq_period = a->cq_period;
	rc = ibv_modify_cq(CQP(self), &attr);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_modify_cq",
				       "cq_count=%u cq_period=%u",
				       (unsigned int)a->cq_count,
				       (unsigned int)a->cq_period);
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* Attributes, lifetime                                                */
/* ------------------------------------------------------------------ */

static PyObject *cq_get_cqe(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromLong(CQP(self)->cqe);
}

static PyObject *cq_get_handle(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(CQP(self)->handle);
}

static PyObject *cq_get_channel(PyObject *self, void *closure)
{
	PyObject *ch = ((CQObject *)self)->channel;

	if (ch == NULL)
		Py_RETURN_NONE;
	Py_INCREF(ch);
	return ch;
}

static PyObject *cq_get_events_unacked(PyObject *self, void *closure)
{
	return PyLong_FromUnsignedLong(((CQObject *)self)->events_unacked);
}

static int cq_traverse(PyObject *self, visitproc visit, void *arg)
{
	struct cq_into *in = ((CQObject *)self)->into;
	int k;

	for (k = 0; in != NULL && k < CQ_INTO_FIELDS; k++)
		Py_VISIT(in->src[k]);
	Py_VISIT(((CQObject *)self)->channel);
	return handle_traverse(HANDLE(self), visit, arg);
}

static void cq_dealloc(PyObject *self)
{
	CQObject *c = (CQObject *)self;

	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	/* Still set if the destroy failed (the ibv_cq is leaked and keeps
	 * using the channel) or the CQ never got created. */
	Py_CLEAR(c->channel);
	cq_into_clear(c);
	PyMem_Free(c->wcs);
	c->wcs = NULL;
	handle_dealloc(HANDLE(self));
}

static PyObject *cq_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.CQ closed>");
	return PyUnicode_FromFormat(
		"<ibverbs.CQ cqe=%d%s>", CQP(self)->cqe,
		((CQObject *)self)->channel ? " with channel" : "");
}

PyDoc_STRVAR(cq__doc__,
	     "A completion queue (``struct ibv_cq``).\n"
	     "\n"
	     "Made by ``Context.create_cq()``. ``poll()`` and\n"
	     "``poll_count()`` reap completions; with a channel,\n"
	     "``req_notify()`` and ``CompChannel.get_cq_event()`` wait for\n"
	     "them. QPs use their CQs: ``close()`` (``ibv_destroy_cq``, man\n"
	     "page ibv_create_cq(3)) refuses with EBUSY until they are\n"
	     "closed. The base class of CQEx.");

static PyMethodDef cq_methods[] = { METHOD_KW("poll", cq_poll),
				    METHOD_O("poll_count", cq_poll_count),
				    METHOD_KW("poll_into", cq_poll_into),
				    METHOD_KW("resize", cq_resize),
				    METHOD_KW("modify", cq_modify),
				    METHOD_KW("req_notify", cq_req_notify),
				    METHOD_KW("ack_events", cq_ack_events),
				    HANDLE_METHODS_END };

static PyGetSetDef cq_getset[] = {
	{ "cqe", cq_get_cqe, NULL,
	  "The number of entries the provider allocated (at least the\n"
	  "``cqe`` asked for); EBADF once closed.",
	  NULL },
	{ "handle", cq_get_handle, NULL,
	  "The CQ's kernel handle (``ibv_cq.handle``); EBADF once closed.",
	  NULL },
	{ "channel", cq_get_channel, NULL,
	  "The CompChannel given at creation, or None.", NULL },
	{ "context", handle_get_parent, NULL,
	  "The Context the CQ was created on.", NULL },
	{ "events_unacked", cq_get_events_unacked, NULL,
	  "Completion events ``get_cq_event()`` delivered for this CQ and\n"
	  "not yet acked with ``ack_events()``.",
	  NULL },
	HANDLE_GETSETS_END
};

/* BASETYPE for CQEx (cq_ex.c); tp_new refuses every class. */
HANDLE_TYPE_SPEC(CQ_spec, "CQ", CQObject, Py_TPFLAGS_BASETYPE, cq__doc__,
		 cq_dealloc, cq_traverse, cq_repr, cq_methods, cq_getset);
