/*
 * post_link.h - template: linking WRs for one post, and naming the WR a
 * failed post rejected.  post.c includes it twice, once per kind (as
 * CPython's Objects/stringlib/ does), between a kind header
 * (wr_kind_send.h, wr_kind_recv.h) and wr_kind_undef.h.  It uses:
 *
 *   WR_PREFIX       the kind's prefix (sendwr); names come from it:
 *   WRFN(name)      this kind's function (sendwr_##name; wr/wr.h)
 *   CHFN(name)      its chain's function (sendwrchain_##name)
 *   WR_OBJ          the WR object type (SendWRObject)
 *   WR_NATIVE       the native struct (struct ibv_send_wr)
 *   WR_TYPE         the WR's heap type (ST.SendWR_type)
 *   WR_CHAIN_TYPE   the chain's heap type (ST.SendWRChain_type)
 *   WR_NAME         the Python name, a string literal ("SendWR")
 *
 * and calls WRFN(ready) (sendwr_ready, wr_check.c), CHFN(head)
 * (sendwrchain_head, wrchain.c) and wr_member_error (wrchain.c).
 * Defines WRFN(link), WRFN(unlink) and WRFN(failed) (declared in
 * wr/wr.h) and static helpers; the comment above each function names
 * what it expands to, so grep finds the definition.
 *
 * The list/tuple case: the fast path links in one pass.  A WR outside a
 * chain always has next == NULL (every list is unlinked right after its
 * post, under the GIL; a member of a SendWRChain or RecvWRChain is
 * refused and its links are never touched here), so an item met twice
 * is one with a non-NULL next, or the tail.  When that happens the slow
 * path decides, from scratch: pass 1 checks every item and clears its
 * next; pass 2 links them, refusing an item seen twice (a WR can only sit
 * once in a list).  Unlinking walks the native list: no item lookups.
 */

/* sendwr_item, recvwr_item */
static PyObject *WRFN(item)(PyObject *arg, int is_list, Py_ssize_t i)
{
	return is_list ? PyList_GetItem(arg, i) : PyTuple_GetItem(arg, i);
}

/* sendwr_unlink_items, recvwr_unlink_items */
static void WRFN(unlink_items)(PyObject *arg, int is_list)
{
	Py_ssize_t i, n = is_list ? PyList_Size(arg) : PyTuple_Size(arg);

	for (i = 0; i < n; i++) {
		PyObject *o = WRFN(item)(arg, is_list, i);

		/* A chain's member keeps its links. */
		if (Py_TYPE(o) == WR_TYPE && ((WR_OBJ *)o)->chain == NULL)
			((WR_OBJ *)o)->wr.next = NULL;
	}
}

static WR_NATIVE *WRFN(link_slow)(PyObject *arg, int is_list, Py_ssize_t n);

/* sendwr_check_item, recvwr_check_item */
static int WRFN(check_item)(PyObject *o, Py_ssize_t i)
{
	if (Py_TYPE(o) != WR_TYPE) {
		PyErr_Format(PyExc_TypeError,
			     "work request %zd must be a " WR_NAME ", not %R",
			     i, (PyObject *)Py_TYPE(o));
		return -1;
	}
	if (((WR_OBJ *)o)->chain != NULL)
		return wr_member_error(WR_NAME, i);
	return WRFN(ready)((WR_OBJ *)o, i);
}

/* sendwr_link_items, recvwr_link_items */
/* Links items 0..n-1.  An item already linked (a non-NULL next, or the
 * tail) is met twice: in the fast pass that sends us to the slow one,
 * which first clears every next (so a stale one cannot fool it) and
 * then refuses it. */
static WR_NATIVE *WRFN(link_items)(PyObject *arg, int is_list, Py_ssize_t n,
				   int slow)
{
	Py_ssize_t i;
	WR_OBJ *prev = NULL, *head = NULL;

	for (i = 0; i < n; i++) {
		PyObject *o = WRFN(item)(arg, is_list, i);
		WR_OBJ *w = (WR_OBJ *)o;

		if (Py_TYPE(o) == WR_TYPE &&
		    (w->wr.next != NULL || w == prev)) {
			if (!slow)
				return WRFN(link_slow)(arg, is_list, n);
			PyErr_Format(PyExc_ValueError,
				     "work request %zd appears more "
				     "than once in the list",
				     i);
			goto fail;
		}
		/* The slow pass checked every item already. */
		if (!slow && WRFN(check_item)(o, i) < 0)
			goto fail;
		if (prev != NULL)
			prev->wr.next = &w->wr;
		else
			head = w;
		prev = w;
	}
	return &head->wr;
fail:
	WRFN(unlink_items)(arg, is_list);
	return NULL;
}

/* sendwr_link_slow, recvwr_link_slow */
static WR_NATIVE *WRFN(link_slow)(PyObject *arg, int is_list, Py_ssize_t n)
{
	Py_ssize_t i;

	WRFN(unlink_items)(arg, is_list);
	for (i = 0; i < n; i++) {
		if (WRFN(check_item)(WRFN(item)(arg, is_list, i), i) < 0)
			return NULL;
	}
	return WRFN(link_items)(arg, is_list, n, 1);
}

/* sendwr_link, recvwr_link */
WR_NATIVE *WRFN(link)(PyObject *arg)
{
	Py_ssize_t n;
	int is_list;

	if (Py_TYPE(arg) == WR_TYPE) {
		WR_OBJ *w = (WR_OBJ *)arg;

		if (w->chain != NULL) {
			wr_member_error(WR_NAME, 0);
			return NULL;
		}
		if (WRFN(ready)(w, 0) < 0)
			return NULL;
		w->wr.next = NULL;
		return &w->wr;
	}
	if (Py_TYPE(arg) == WR_CHAIN_TYPE)
		return CHFN(head)(arg);
	is_list = PyList_Check(arg);
	if (!is_list && !PyTuple_Check(arg)) {
		PyErr_Format(PyExc_TypeError,
			     "expected a " WR_NAME " or a list of " WR_NAME
			     ", not %R",
			     (PyObject *)Py_TYPE(arg));
		return NULL;
	}
	n = is_list ? PyList_Size(arg) : PyTuple_Size(arg);
	if (n == 0) {
		PyErr_SetString(PyExc_ValueError,
				"empty list of work requests");
		return NULL;
	}
	return WRFN(link_items)(arg, is_list, n, 0);
}

/* sendwr_unlink, recvwr_unlink */
void WRFN(unlink)(PyObject *arg)
{
	PyObject *first = NULL;
	WR_NATIVE *w, *next;

	if (Py_TYPE(arg) == WR_TYPE)
		first = arg;
	else if (PyList_Check(arg) && PyList_Size(arg) > 0)
		first = PyList_GetItem(arg, 0);
	else if (PyTuple_Check(arg) && PyTuple_Size(arg) > 0)
		first = PyTuple_GetItem(arg, 0);
	if (first == NULL || Py_TYPE(first) != WR_TYPE)
		return;
	for (w = &((WR_OBJ *)first)->wr; w != NULL; w = next) {
		next = w->next;
		w->next = NULL;
	}
}

/* sendwr_index, recvwr_index */
static Py_ssize_t WRFN(index)(PyObject *arg, const WR_NATIVE *bad)
{
	Py_ssize_t i, n;
	int is_list;

	if (bad == NULL)
		return -1;
	if (Py_TYPE(arg) == WR_TYPE)
		return &((WR_OBJ *)arg)->wr == bad ? 0 : -1;
	if (Py_TYPE(arg) == WR_CHAIN_TYPE) {
		arg = ((WRChainObject *)arg)->items;
		if (arg == NULL)
			return -1;
	}
	is_list = PyList_Check(arg);
	if (!is_list && !PyTuple_Check(arg))
		return -1;
	n = is_list ? PyList_Size(arg) : PyTuple_Size(arg);
	for (i = 0; i < n; i++) {
		PyObject *o = WRFN(item)(arg, is_list, i);

		if (o != NULL && Py_TYPE(o) == WR_TYPE &&
		    &((WR_OBJ *)o)->wr == bad)
			return i;
	}
	return -1;
}

/* sendwr_failed, recvwr_failed */
Py_ssize_t WRFN(failed)(PyObject *arg, WR_NATIVE *head, WR_NATIVE **bad)
{
	Py_ssize_t idx;

	/* A single WR is the rejected one even when the provider left
	 * *bad unset. */
	if (*bad == NULL && Py_TYPE(arg) == WR_TYPE)
		*bad = head;
	idx = WRFN(index)(arg, *bad);
	WRFN(unlink)(arg);
	return idx;
}
