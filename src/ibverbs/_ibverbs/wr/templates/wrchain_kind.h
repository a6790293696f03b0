/*
 * wrchain_kind.h - template: the SendWRChain or RecvWRChain type's
 * functions.  wrchain.c includes it twice, once per kind (as CPython's
 * Objects/stringlib/ does), between a kind header (wr_kind_send.h,
 * wr_kind_recv.h) and wr_kind_undef.h.  It uses:
 *
 *   WR_PREFIX     the kind's prefix (sendwr); names come from it:
 *   CHFN(name)    this kind's chain function (sendwrchain_##name;
 *                 wr/wr.h)
 *   WRFN(name)    the member's function (sendwr_##name)
 *   WR_OBJ        the member WR object type (SendWRObject)
 *   WR_NATIVE     the native struct (struct ibv_send_wr)
 *   WR_TYPE       the member's heap type (ST.SendWR_type)
 *   WR_NAME       the member's Python name, a string literal ("SendWR")
 *   WR_IS_SEND    1 when members carry an AH (send), else 0
 *
 * and calls WRFN(ready) (sendwr_ready, wr_check.c) and the kind-free
 * helpers of wrchain.c (checked_*, chain_length, ...).  The comment
 * above each function names what it expands to, so grep finds the
 * definition.
 */

/* sendwrchain_unbind, recvwrchain_unbind */
/* Unlink the first n members and let them go, then the items: n is
 * every member on release (idempotent), those claimed so far when a
 * build fails (the others may belong to another chain). */
static void CHFN(unbind)(WRChainObject *c, Py_ssize_t n)
{
	PyObject *items = c->items;
	Py_ssize_t i;

	checked_clear(c);
	c->dirty = 1;
	if (items == NULL)
		return;
	for (i = 0; i < n; i++) {
		WR_OBJ *w = (WR_OBJ *)PyTuple_GetItem(items, i);

		w->wr.next = NULL;
		w->chain = NULL;
	}
	c->items = NULL;
	c->head = NULL;
	Py_DECREF(items);
}

/* sendwrchain_do_release, recvwrchain_do_release */
static void CHFN(do_release)(WRChainObject *c)
{
	CHFN(unbind)(c, chain_length((PyObject *)c));
}

/* sendwrchain_check_all, recvwrchain_check_all */
/* Check every member; record the MRs/AHs to look at between posts. */
static int CHFN(check_all)(WRChainObject *c)
{
	Py_ssize_t i, n = PyTuple_Size(c->items);

	checked_clear(c);
	c->dirty = 1;
	for (i = 0; i < n; i++) {
		WR_OBJ *w = (WR_OBJ *)PyTuple_GetItem(c->items, i);

		if (WRFN(ready)(w, i) < 0)
			return -1;
		if (checked_add_sges(c, w->sg_list) < 0)
			return -1;
#if WR_IS_SEND
		if (w->ah != NULL && checked_add(c, w->ah) < 0)
			return -1;
		if (w->mw != NULL && (checked_add(c, w->mw) < 0 ||
				      checked_add(c, w->bind_mr) < 0))
			return -1;
#endif
	}
	c->dirty = 0;
	return 0;
}

/* sendwrchain_head, recvwrchain_head */
WR_NATIVE *CHFN(head)(PyObject *self)
{
	WRChainObject *c = CH(self);
	Py_ssize_t k;

	if (c->items == NULL) {
		PyErr_SetString(PyExc_ValueError,
				"this " WR_NAME "Chain was released");
		return NULL;
	}
	if (!c->dirty) {
		for (k = 0; k < c->n_checked; k++) {
			if (HANDLE(c->checked[k])->obj == NULL)
				break;
		}
		if (k == c->n_checked)
			return (WR_NATIVE *)c->head;
	}
	/* Something changed or closed: the full check names the WR. */
	if (CHFN(check_all)(c) < 0)
		return NULL;
	return (WR_NATIVE *)c->head;
}

/* sendwrchain_new, recvwrchain_new */
static PyObject *CHFN(new)(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "wrs", NULL };
	PyObject *arg, *items;
	WRChainObject *c;
	Py_ssize_t i, n;
	WR_OBJ *prev = NULL;

	/* Parsed by hand: one template for two types (WR_NAME). */
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:" WR_NAME "Chain", kwlist,
					 &arg))
		return NULL;
	if (Py_TYPE(arg) == WR_TYPE) {
		PyErr_SetString(PyExc_TypeError,
				WR_NAME "Chain() takes a sequence of " WR_NAME
					", not one " WR_NAME);
		return NULL;
	}
	items = PySequence_Tuple(arg);
	if (items == NULL)
		return NULL;
	n = PyTuple_Size(items);
	if (n == 0) {
		PyErr_SetString(PyExc_ValueError,
				"empty list of work requests");
		Py_DECREF(items);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		PyObject *o = PyTuple_GetItem(items, i);

		if (Py_TYPE(o) != WR_TYPE) {
			PyErr_Format(PyExc_TypeError,
				     "work request %zd must be a " WR_NAME
				     ", not %R",
				     i, (PyObject *)Py_TYPE(o));
			Py_DECREF(items);
			return NULL;
		}
	}
	c = (WRChainObject *)PyType_GenericAlloc(type, 0);
	if (c == NULL) {
		Py_DECREF(items);
		return NULL;
	}
	/* Claim the members one by one; a member met twice (or one of
	 * another chain) already has its chain set. */
	c->items = items;
	for (i = 0; i < n; i++) {
		WR_OBJ *w = (WR_OBJ *)PyTuple_GetItem(items, i);

		if (w->chain != NULL) {
			if (w->chain == (PyObject *)c)
				PyErr_Format(PyExc_ValueError,
					     "work request %zd appears "
					     "more than once in the "
					     "list",
					     i);
			else
				wr_member_error(WR_NAME, i);
			goto fail;
		}
		w->chain = (PyObject *)c;
		w->wr.next = NULL;
		if (prev != NULL)
			prev->wr.next = &w->wr;
		else
			c->head = &w->wr;
		prev = w;
	}
	if (CHFN(check_all)(c) < 0)
		goto fail;
	return (PyObject *)c;
fail:
	CHFN(unbind)(c, i); /* and drops items */
	Py_DECREF(c);
	return NULL;
}

/* sendwrchain_clear, recvwrchain_clear */
static int CHFN(clear)(PyObject *self)
{
	CHFN(do_release)(CH(self));
	return 0;
}

/* sendwrchain_dealloc, recvwrchain_dealloc */
static void CHFN(dealloc)(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	PyObject_GC_UnTrack(self);
	CHFN(do_release)(CH(self));
	PyMem_Free(CH(self)->checked);
	tp_free(self);
	Py_DECREF(tp);
}

/* sendwrchain_meth_release, recvwrchain_meth_release */
static PyObject *CHFN(meth_release)(PyObject *self, PyObject *unused)
{
	CHFN(do_release)(CH(self));
	Py_RETURN_NONE;
}

/* sendwrchain_exit, recvwrchain_exit */
static PyObject *CHFN(exit)(PyObject *self, PyObject *args)
{
	CHFN(do_release)(CH(self));
	Py_RETURN_FALSE;
}

/* sendwrchain_repr, recvwrchain_repr */
static PyObject *CHFN(repr)(PyObject *self)
{
	if (CH(self)->items == NULL)
		return PyUnicode_FromString("<" WR_NAME "Chain, released>");
	return PyUnicode_FromFormat("<" WR_NAME "Chain of %zd " WR_NAME ">",
				    chain_length(self));
}

/* sendwrchain_methods, recvwrchain_methods */
static PyMethodDef CHFN(methods)[] = {
	{ "release", CHFN(meth_release), METH_NOARGS,
	  "Unlink the members: each can be posted on its own again, and\n"
	  "the chain cannot (posting it raises ValueError).  Idempotent;\n"
	  "calls no verb." },
	{ "__enter__", chain_enter, METH_NOARGS, NULL },
	{ "__exit__", CHFN(exit), METH_VARARGS, "release() the chain." },
	{ NULL, NULL, 0, NULL }
};

/* sendwrchain_getset, recvwrchain_getset */
static PyGetSetDef CHFN(getset)[] = { { "released", chain_get_released, NULL,
					"True once release() was called.",
					NULL },
				      { NULL, NULL, NULL, NULL, NULL } };
