/*
 * post.c - what QP.post_send(), QP.post_recv() and SRQ.post_recv() do
 * around the inline verb: link the WR objects given (one WR, a list or
 * tuple of them, or a SendWRChain/RecvWRChain, linked already) into one
 * native list through wr.next, and after the post unlink them again; on
 * a failed post, name the WR the provider rejected.
 *
 * The data path is this file and wrchain.c; calls go one way: post.c
 * uses wrchain.c (a chain's head) and wr.c (the per-WR checks), neither
 * of which calls back here.
 */
#include "ibverbs.h"


/*
 * The list/tuple case, for both kinds.  The fast path links in one pass:
 * a WR outside a chain always has next == NULL (every chain is undone
 * right after its post, under the GIL; a member of a SendWRChain or
 * RecvWRChain is refused and its links are never touched here), so an
 * item met twice is one with a non-NULL next, or the tail.  When that happens the slow path decides,
 * from scratch: pass 1 checks every item and clears its next; pass 2
 * links them, refusing an item seen twice (a WR can only sit once in a
 * chain).  Unchaining walks the native chain: no item lookups.
 */
#define DEFINE_CHAIN(prefix, Obj, wrtype, Name)                          \
static PyObject *prefix##_item(PyObject *arg, int is_list, Py_ssize_t i) \
{                                                                        \
	return is_list ? PyList_GetItem(arg, i) : PyTuple_GetItem(arg, i); \
}                                                                        \
                                                                         \
static void prefix##_unlink(PyObject *arg, int is_list)                  \
{                                                                        \
	Py_ssize_t i, n = is_list ? PyList_Size(arg) : PyTuple_Size(arg); \
                                                                         \
	for (i = 0; i < n; i++) {                                        \
		PyObject *o = prefix##_item(arg, is_list, i);            \
                                                                         \
		/* A chain's member keeps its links. */                 \
		if (Py_TYPE(o) == ST.Name##_type &&                      \
		    ((Obj *)o)->chain == NULL)                           \
			((Obj *)o)->wr.next = NULL;                      \
	}                                                                \
}                                                                        \
                                                                         \
static struct wrtype *prefix##_chain_slow(PyObject *arg, int is_list,   \
					  Py_ssize_t n);                 \
                                                                         \
static int prefix##_check_item(PyObject *o, Py_ssize_t i)                \
{                                                                        \
	if (Py_TYPE(o) != ST.Name##_type) {                              \
		PyErr_Format(PyExc_TypeError,                            \
			     "work request %zd must be a " #Name ", not %R", \
			     i, (PyObject *)Py_TYPE(o));                 \
		return -1;                                               \
	}                                                                \
	if (((Obj *)o)->chain != NULL)                                   \
		return wr_member_error(#Name, i);                        \
	return prefix##_ready((Obj *)o, i);                              \
}                                                                        \
                                                                         \
/* Links items 0..n-1.  An item already linked (a non-NULL next, or the \
 * tail) is met twice: in the fast pass that sends us to the slow one,  \
 * which first clears every next (so a stale one cannot fool it) and    \
 * then refuses it. */                                                  \
static struct wrtype *prefix##_link(PyObject *arg, int is_list,         \
				    Py_ssize_t n, int slow)              \
{                                                                        \
	Py_ssize_t i;                                                    \
	Obj *prev = NULL, *head = NULL;                                  \
                                                                         \
	for (i = 0; i < n; i++) {                                        \
		PyObject *o = prefix##_item(arg, is_list, i);            \
		Obj *w = (Obj *)o;                                       \
                                                                         \
		if (Py_TYPE(o) == ST.Name##_type &&                      \
		    (w->wr.next != NULL || w == prev)) {                 \
			if (!slow)                                       \
				return prefix##_chain_slow(arg, is_list, n); \
			PyErr_Format(PyExc_ValueError,                   \
				     "work request %zd appears more "    \
				     "than once in the list", i);        \
			goto fail;                                       \
		}                                                        \
		/* The slow pass checked every item already. */          \
		if (!slow && prefix##_check_item(o, i) < 0)              \
			goto fail;                                       \
		if (prev != NULL)                                        \
			prev->wr.next = &w->wr;                          \
		else                                                     \
			head = w;                                        \
		prev = w;                                                \
	}                                                                \
	return &head->wr;                                                \
fail:                                                                    \
	prefix##_unlink(arg, is_list);                                   \
	return NULL;                                                     \
}                                                                        \
                                                                         \
static struct wrtype *prefix##_chain_slow(PyObject *arg, int is_list,   \
					  Py_ssize_t n)                  \
{                                                                        \
	Py_ssize_t i;                                                    \
                                                                         \
	prefix##_unlink(arg, is_list);                                   \
	for (i = 0; i < n; i++) {                                        \
		if (prefix##_check_item(prefix##_item(arg, is_list, i), i) < 0) \
			return NULL;                                     \
	}                                                                \
	return prefix##_link(arg, is_list, n, 1);                        \
}                                                                        \
                                                                         \
struct wrtype *prefix##_chain(PyObject *arg)                             \
{                                                                        \
	Py_ssize_t n;                                                    \
	int is_list;                                                     \
                                                                         \
	if (Py_TYPE(arg) == ST.Name##_type) {                            \
		Obj *w = (Obj *)arg;                                     \
                                                                         \
		if (w->chain != NULL) {                                  \
			wr_member_error(#Name, 0);                       \
			return NULL;                                     \
		}                                                        \
		if (prefix##_ready(w, 0) < 0)                            \
			return NULL;                                     \
		w->wr.next = NULL;                                       \
		return &w->wr;                                           \
	}                                                                \
	if (Py_TYPE(arg) == ST.Name##Chain_type)                         \
		return prefix##chain_head(arg);                          \
	is_list = PyList_Check(arg);                                     \
	if (!is_list && !PyTuple_Check(arg)) {                           \
		PyErr_Format(PyExc_TypeError,                            \
			     "expected a " #Name " or a list of " #Name  \
			     ", not %R", (PyObject *)Py_TYPE(arg));      \
		return NULL;                                             \
	}                                                                \
	n = is_list ? PyList_Size(arg) : PyTuple_Size(arg);              \
	if (n == 0) {                                                    \
		PyErr_SetString(PyExc_ValueError,                        \
				"empty list of work requests");          \
		return NULL;                                             \
	}                                                                \
	return prefix##_link(arg, is_list, n, 0);                        \
}                                                                        \
                                                                         \
void prefix##_unchain(PyObject *arg)                                     \
{                                                                        \
	PyObject *first = NULL;                                          \
	struct wrtype *w, *next;                                         \
                                                                         \
	if (Py_TYPE(arg) == ST.Name##_type)                              \
		first = arg;                                             \
	else if (PyList_Check(arg) && PyList_Size(arg) > 0)              \
		first = PyList_GetItem(arg, 0);                          \
	else if (PyTuple_Check(arg) && PyTuple_Size(arg) > 0)            \
		first = PyTuple_GetItem(arg, 0);                         \
	if (first == NULL || Py_TYPE(first) != ST.Name##_type)           \
		return;                                                  \
	for (w = &((Obj *)first)->wr; w != NULL; w = next) {             \
		next = w->next;                                          \
		w->next = NULL;                                          \
	}                                                                \
}                                                                        \
                                                                         \
static Py_ssize_t prefix##_index(PyObject *arg,                          \
				 const struct wrtype *bad)               \
{                                                                        \
	Py_ssize_t i, n;                                                 \
	int is_list;                                                     \
                                                                         \
	if (bad == NULL)                                                 \
		return -1;                                               \
	if (Py_TYPE(arg) == ST.Name##_type)                              \
		return &((Obj *)arg)->wr == bad ? 0 : -1;                \
	if (Py_TYPE(arg) == ST.Name##Chain_type) {                       \
		arg = ((WRChainObject *)arg)->items;                     \
		if (arg == NULL)                                         \
			return -1;                                       \
	}                                                                \
	is_list = PyList_Check(arg);                                     \
	if (!is_list && !PyTuple_Check(arg))                             \
		return -1;                                               \
	n = is_list ? PyList_Size(arg) : PyTuple_Size(arg);              \
	for (i = 0; i < n; i++) {                                        \
		PyObject *o = prefix##_item(arg, is_list, i);            \
                                                                         \
		if (o != NULL && Py_TYPE(o) == ST.Name##_type &&         \
		    &((Obj *)o)->wr == bad)                              \
			return i;                                        \
	}                                                                \
	return -1;                                                       \
}                                                                        \
                                                                         \
Py_ssize_t prefix##_failed(PyObject *arg, struct wrtype *head,          \
			   struct wrtype **bad)                          \
{                                                                        \
	Py_ssize_t idx;                                                  \
                                                                         \
	/* A single WR is the rejected one even when the provider left  \
	 * *bad unset. */                                               \
	if (*bad == NULL && Py_TYPE(arg) == ST.Name##_type)              \
		*bad = head;                                             \
	idx = prefix##_index(arg, *bad);                                 \
	prefix##_unchain(arg);                                           \
	return idx;                                                      \
}

DEFINE_CHAIN(sendwr, SendWRObject, ibv_send_wr, SendWR)
DEFINE_CHAIN(recvwr, RecvWRObject, ibv_recv_wr, RecvWR)

int sendwr_check_ud(const struct ibv_send_wr *head)
{
	const struct ibv_send_wr *w;
	Py_ssize_t i = 0;

	for (w = head; w != NULL; w = w->next, i++) {
		if (w->opcode != IBV_WR_SEND &&
		    w->opcode != IBV_WR_SEND_WITH_IMM) {
			PyErr_Format(PyExc_ValueError,
				     "work request %zd: a UD QP only posts SEND "
				     "and SEND_WITH_IMM", i);
			return -1;
		}
		if (w->wr.ud.ah == NULL) {
			PyErr_Format(PyExc_ValueError,
				     "work request %zd: a send on a UD QP needs "
				     "an AH (SendWR(ah=..., remote_qpn=..., "
				     "remote_qkey=...))", i);
			return -1;
		}
	}
	return 0;
}
