/*
 * rwq_ind_table.c - RWQIndTable: a receive WQ indirection table (struct
 * ibv_rwq_ind_table), the list of WQs an RSS QP hashes packets over
 * (QPInitAttrEx(rwq_ind_tbl=..., rx_hash_conf=...)), made by
 * Context.create_rwq_ind_table().
 *
 * ibv_create_rwq_ind_table and ibv_destroy_rwq_ind_table are static
 * inlines of verbs.h over verbs_context ops (called by name); no provider
 * of this project's rigs has them (rxe answers EOPNOTSUPP).  The table's
 * parent is its Context; it holds its WQs and uses each (handle_use), so
 * they refuse close() until the table is closed.
 */
#include "ibverbs.h"
#include "wq/wq.h"
#include <stdio.h>
#include <string.h>

#define RWQP(self) ((struct ibv_rwq_ind_table *)HANDLE(self)->obj)
#define RWQO(self) ((RWQIndTableObject *)(self))

/* At most 2**RWQ_LOG_MAX WQs in a table. */
#define RWQ_LOG_MAX 16

static void rwq_release(Handle *h)
{
	RWQIndTableObject *t = (RWQIndTableObject *)h;
	Py_ssize_t i, n;

	if (t->wqs == NULL)
		return;
	n = PyTuple_Size(t->wqs);
	for (i = 0; i < n; i++)
		handle_unuse(HANDLE(PyTuple_GetItem(t->wqs, i)));
	Py_CLEAR(t->wqs);
}

HANDLE_KIND(rwq_kind, "RWQIndTable", "ibv_destroy_rwq_ind_table",
	    ibv_destroy_rwq_ind_table, rwq_release);

/* Each item an open WQ of this Context; the table's log2 size. */
static int rwq_check(PyObject *self, PyObject *wqs, uint32_t *log)
{
	Py_ssize_t i, n = PyTuple_Size(wqs);

	for (*log = 0; ((Py_ssize_t)1 << *log) < n; (*log)++)
		;
	if (n < 1 || ((Py_ssize_t)1 << *log) != n || *log > RWQ_LOG_MAX) {
		PyErr_Format(PyExc_ValueError,
			     "wqs must hold a power of two of WQs (1..%d), "
			     "not %zd",
			     1 << RWQ_LOG_MAX, n);
		return -1;
	}
	for (i = 0; i < n; i++) {
		PyObject *w = PyTuple_GetItem(wqs, i);
		char name[32];

		snprintf(name, sizeof(name), "wqs[%zd]", i);
		if (!PyObject_TypeCheck(w, ST.WQ_type))
			return arg_type_error(name, "WQ", 0, w);
		if (handle_check(HANDLE(w)) < 0)
			return -1;
		if (HANDLE(w)->parent->parent != HANDLE(self))
			return arg_other_parent_error(name, "Context");
	}
	return 0;
}

const char context_create_rwq_ind_table__doc__[] = PyDoc_STR(
	"Create an RSS indirection table over WQs.\n"
	"\n"
	"``log_ind_tbl_size`` is log2 of ``len(wqs)``, which must be a\n"
	"power of two; comp_mask is 0. The table holds and uses its WQs\n"
	"(they refuse ``close()`` until it is closed).\n"
	"\n"
	"Wraps ``ibv_create_rwq_ind_table`` (man page\n"
	"ibv_create_rwq_ind_table(3)). Never run on hardware here;\n"
	"checked against the recording double.\n"
	"\n"
	"Args:\n"
	"    wqs: a sequence of WQs of this Context, in table order.\n"
	"\n"
	"Returns:\n"
	"    An RWQIndTable.\n"
	"\n"
	"Raises:\n"
	"    TypeError: wqs is not a sequence of WQs.\n"
	"    ValueError: not a power of two of them (1..65536), or a WQ\n"
	"        of another Context.\n"
	"    VerbsError: EBADF once the Context or a WQ is closed;\n"
	"        EOPNOTSUPP when the provider has no RSS (rxe); else the\n"
	"        verb failed (``errno``).");

#define CREATE_RWQ_IND_TABLE_ARGS(X, S) X(S, LIST, PyObject *, wqs, WQ)
ARGS_METHOD(extern, context_create_rwq_ind_table,
	    "Context.create_rwq_ind_table", CREATE_RWQ_IND_TABLE_ARGS, self, a)
{
	struct ibv_rwq_ind_table_init_attr ia;
	struct ibv_rwq_ind_table *tbl;
	RWQIndTableObject *t = NULL;
	struct ibv_wq **arr = NULL;
	Py_ssize_t i, n;
	PyObject *wqs;
	uint32_t log;

	wqs = PySequence_Tuple(a->wqs);
	if (wqs == NULL)
		return NULL;
	if (rwq_check(self, wqs, &log) < 0)
		goto fail;
	n = PyTuple_Size(wqs);
	arr = PyMem_Calloc((size_t)n, sizeof(*arr));
	t = HANDLE_ALLOC(RWQIndTableObject, ST.RWQIndTable_type);
	if (arr == NULL || t == NULL) {
		if (arr == NULL)
			PyErr_NoMemory();
		goto fail;
	}
	if (handle_check(HANDLE(self)) < 0 || rwq_check(self, wqs, &log) < 0)
		goto fail;
	for (i = 0; i < n; i++)
		arr[i] = HANDLE(PyTuple_GetItem(wqs, i))->obj;
	memset(&ia, 0, sizeof(ia));
	ia.log_ind_tbl_size = log;
	ia.ind_tbl = arr;
	errno = 0;
	tbl = ibv_create_rwq_ind_table(HANDLE(self)->obj, &ia);
	if (tbl == NULL) {
		int err = errno_or(EINVAL);

		verbs_error_fmt(err, "ibv_create_rwq_ind_table",
				"%zd WQs (log_ind_tbl_size=%u)", n, log);
		goto fail;
	}
	PyMem_Free(arr);
	handle_init(HANDLE(t), &rwq_kind, HANDLE(self));
	HANDLE_SET_OBJ(t, tbl);
	t->wqs = wqs;
	for (i = 0; i < n; i++)
		handle_use(HANDLE(PyTuple_GetItem(wqs, i)));
	return (PyObject *)t;
fail:
	PyMem_Free(arr);
	Py_XDECREF(t);
	Py_DECREF(wqs);
	return NULL;
}

static PyObject *rwq_get_wqs(PyObject *self, void *closure)
{
	if (RWQO(self)->wqs == NULL)
		return PyTuple_New(0);
	Py_INCREF(RWQO(self)->wqs);
	return RWQO(self)->wqs;
}

static PyObject *rwq_get_ind_tbl_num(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(RWQP(self)->ind_tbl_num);
}

static int rwq_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(RWQO(self)->wqs);
	return handle_traverse(HANDLE(self), visit, arg);
}

static void rwq_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	handle_close_quiet(HANDLE(self));
	Py_CLEAR(RWQO(self)->wqs); /* still used only if the destroy failed */
	handle_dealloc(HANDLE(self));
}

static PyObject *rwq_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.RWQIndTable closed>");
	return PyUnicode_FromFormat("<ibverbs.RWQIndTable ind_tbl_num=%u "
				    "wqs=%zd>",
				    RWQP(self)->ind_tbl_num,
				    PyTuple_Size(RWQO(self)->wqs));
}

PyDoc_STRVAR(rwq__doc__,
	     "A receive WQ indirection table (``struct\n"
	     "ibv_rwq_ind_table``): the WQs an RSS QP spreads packets over.\n"
	     "\n"
	     "Made by ``Context.create_rwq_ind_table()``; give it to\n"
	     "``QPInitAttrEx(rwq_ind_tbl=..., rx_hash_conf=...)``. It uses\n"
	     "its WQs; an RSS QP created with it makes it refuse\n"
	     "``close()``. ``close()`` wraps ``ibv_destroy_rwq_ind_table``\n"
	     "(man page ibv_create_rwq_ind_table(3)). Never run on hardware\n"
	     "here; checked against the recording double.");

static PyMethodDef rwq_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef rwq_getset[] = {
	{ "context", handle_get_parent, NULL,
	  "The Context the table was created in.", NULL },
	{ "wqs", rwq_get_wqs, NULL,
	  "The WQs, in table order (empty once closed).", NULL },
	{ "ind_tbl_num", rwq_get_ind_tbl_num, NULL,
	  "The table's number; EBADF once closed.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(RWQIndTable_spec, "RWQIndTable", RWQIndTableObject, 0,
		 rwq__doc__, rwq_dealloc, rwq_traverse, rwq_repr, rwq_methods,
		 rwq_getset);
