/*
 * wrchain.c - SendWRChain and RecvWRChain: a list of WRs linked through
 * wr.next once, when the chain is built, and posted as is many times.
 *
 * QP.post_send(list) links and checks every WR on every call and unlinks
 * them afterwards; for a list reposted in a loop that per-WR work is most
 * of what the binding adds to ibv_post_send.  A chain does it once:
 *
 *   - building it links the members' own structs (no copies: setting a
 *     member's wr_id, flags or remote address is seen by the next post)
 *     and runs the per-WR checks;
 *   - it records the distinct MRs and AHs its members use, and each post
 *     only checks that those are still open (a closed MR has released its
 *     memory; a stale lkey could name a newer region);
 *   - a member whose AH is replaced marks the chain "dirty", and the next
 *     post checks every member again (sg_list cannot change after a WR is
 *     built).
 *
 * A member belongs to one chain: it cannot be posted on its own, in a
 * list, or join another chain until release() (or the chain's end).
 */
#include "ibverbs.h"
#include "wr/wr.h"

#define CH(o) ((WRChainObject *)(o))

int wr_member_error(const char *kind, Py_ssize_t i)
{
	PyErr_Format(PyExc_ValueError,
		     "work request %zd belongs to a %sChain: post the chain, "
		     "or release() it first",
		     i, kind);
	return -1;
}

static void checked_clear(WRChainObject *c)
{
	Py_ssize_t k;

	for (k = 0; k < c->n_checked; k++)
		Py_DECREF(c->checked[k]);
	c->n_checked = 0;
}

/* Remember handle h (an MR or AH) for the checks between posts.  Seen
 * already: nothing to do (a linear look, for the usual few handles). */
static int checked_add(WRChainObject *c, PyObject *h)
{
	Py_ssize_t k;

	for (k = 0; k < c->n_checked && k < 64; k++) {
		if (c->checked[k] == h)
			return 0;
	}
	if (c->n_checked == c->cap_checked) {
		Py_ssize_t cap = c->cap_checked ? 2 * c->cap_checked : 4;
		PyObject **p = PyMem_Realloc(c->checked, cap * sizeof(*p));

		if (p == NULL) {
			PyErr_NoMemory();
			return -1;
		}
		c->checked = p;
		c->cap_checked = cap;
	}
	Py_INCREF(h);
	c->checked[c->n_checked++] = h;
	return 0;
}

static int checked_add_sges(WRChainObject *c, PyObject *sg_list)
{
	Py_ssize_t i, n = PyTuple_Size(sg_list);

	for (i = 0; i < n; i++) {
		PyObject *mr = ((SGEObject *)PyTuple_GetItem(sg_list, i))->mr;

		if (mr != NULL && checked_add(c, mr) < 0)
			return -1;
	}
	return 0;
}

static int chain_traverse(PyObject *self, visitproc visit, void *arg)
{
	WRChainObject *c = CH(self);
	Py_ssize_t k;

	Py_VISIT((PyObject *)Py_TYPE(self));
	Py_VISIT(c->items);
	for (k = 0; k < c->n_checked; k++)
		Py_VISIT(c->checked[k]);
	return 0;
}

static Py_ssize_t chain_length(PyObject *self)
{
	PyObject *items = CH(self)->items;

	return items ? PyTuple_Size(items) : 0;
}

static PyObject *chain_item(PyObject *self, Py_ssize_t i)
{
	PyObject *items = CH(self)->items, *o;

	if (items == NULL || i < 0 || i >= PyTuple_Size(items)) {
		PyErr_SetString(PyExc_IndexError, "chain index out of range");
		return NULL;
	}
	o = PyTuple_GetItem(items, i);
	Py_INCREF(o);
	return o;
}

static PyObject *chain_iter(PyObject *self)
{
	PyObject *items = CH(self)->items, *it, *empty;

	if (items != NULL)
		return PyObject_GetIter(items);
	empty = PyTuple_New(0);
	if (empty == NULL)
		return NULL;
	it = PyObject_GetIter(empty);
	Py_DECREF(empty);
	return it;
}

static PyObject *chain_get_released(PyObject *self, void *closure)
{
	return PyBool_FromLong(CH(self)->items == NULL);
}

static PyObject *chain_enter(PyObject *self, PyObject *unused)
{
	Py_INCREF(self);
	return self;
}

/* ------------------------------------------------------------------ */
/* The two kinds (the template is wrchain_kind.h)                      */
/* ------------------------------------------------------------------ */

#include "wr/templates/wr_kind_send.h"
#include "wr/templates/wrchain_kind.h"
#include "wr/templates/wr_kind_undef.h"

#include "wr/templates/wr_kind_recv.h"
#include "wr/templates/wrchain_kind.h"
#include "wr/templates/wr_kind_undef.h"

static PyType_Slot sendwrchain_slots[] = {
	{ Py_tp_doc,
	  "SendWRs linked through ``wr.next`` once, to be posted as one\n"
	  "``ibv_post_send`` call many times: ``qp.post_send(chain)`` (man\n"
	  "page ibv_post_send(3)).  Building it calls no verb.\n"
	  "\n"
	  "Unlike a list, a chain is not linked and checked again on every\n"
	  "post; each post only checks that the MRs and AHs its members use\n"
	  "are still open.  The members are the WR objects given, not\n"
	  "copies: setting one's ``wr_id``, ``send_flags``, ``remote_addr``,\n"
	  "... is seen by the next post.  A member cannot be posted on its\n"
	  "own, in a list or in another chain until ``release()`` (also\n"
	  "called by ``with`` and when the chain is freed).  ``len(chain)``\n"
	  "and ``chain[i]`` give the members.\n"
	  "\n"
	  "Args:\n"
	  "    wrs: a non-empty sequence of SendWRs, each once.\n"
	  "\n"
	  "Raises:\n"
	  "    TypeError: wrs is one SendWR, or holds something else.\n"
	  "    ValueError: wrs is empty, holds a WR twice, or a WR that\n"
	  "        belongs to another chain." },
	{ Py_tp_new, sendwrchain_new },
	{ Py_tp_dealloc, sendwrchain_dealloc },
	{ Py_tp_traverse, chain_traverse },
	{ Py_tp_clear, sendwrchain_clear },
	{ Py_tp_repr, sendwrchain_repr },
	{ Py_tp_methods, sendwrchain_methods },
	{ Py_tp_getset, sendwrchain_getset },
	{ Py_sq_length, chain_length },
	{ Py_sq_item, chain_item },
	{ Py_tp_iter, chain_iter },
	{ 0, NULL }
};

PyType_Spec SendWRChain_spec = { "ibverbs._ibverbs.SendWRChain",
				 sizeof(WRChainObject), 0,
				 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
				 sendwrchain_slots };

static PyType_Slot recvwrchain_slots[] = {
	{ Py_tp_doc,
	  "RecvWRs linked through ``wr.next`` once, to be posted as one\n"
	  "``ibv_post_recv`` or ``ibv_post_srq_recv`` call many times:\n"
	  "``qp.post_recv(chain)`` or ``srq.post_recv(chain)`` (man pages\n"
	  "ibv_post_recv(3), ibv_post_srq_recv(3)).  As SendWRChain: the\n"
	  "members are the WR objects given, each post only checks that\n"
	  "their MRs are still open, and a member belongs to the chain\n"
	  "until ``release()``.\n"
	  "\n"
	  "Args:\n"
	  "    wrs: a non-empty sequence of RecvWRs, each once.\n"
	  "\n"
	  "Raises:\n"
	  "    TypeError: wrs is one RecvWR, or holds something else.\n"
	  "    ValueError: wrs is empty, holds a WR twice, or a WR that\n"
	  "        belongs to another chain." },
	{ Py_tp_new, recvwrchain_new },
	{ Py_tp_dealloc, recvwrchain_dealloc },
	{ Py_tp_traverse, chain_traverse },
	{ Py_tp_clear, recvwrchain_clear },
	{ Py_tp_repr, recvwrchain_repr },
	{ Py_tp_methods, recvwrchain_methods },
	{ Py_tp_getset, recvwrchain_getset },
	{ Py_sq_length, chain_length },
	{ Py_sq_item, chain_item },
	{ Py_tp_iter, chain_iter },
	{ 0, NULL }
};

PyType_Spec RecvWRChain_spec = { "ibverbs._ibverbs.RecvWRChain",
				 sizeof(WRChainObject), 0,
				 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
				 recvwrchain_slots };
