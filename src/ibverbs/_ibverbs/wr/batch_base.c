/*
 * batch_base.c - what SendBatch (batch.c) and RecvBatch (recv_batch.c)
 * share: the rows and the MR at the start of both objects (BATCH_HEAD in
 * wr/wr.h), their allocation, the MR's checks before a post, the row
 * errors, the post methods' (queue, a, b) arguments, and the type slots
 * and getters that read only the head.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include "cq/cq.h"
#include "wr/wr.h"

#include <string.h>

int batch_init(BatchBase *b, Py_ssize_t n, size_t wr_size, PyObject *mr)
{
	b->wrs = PyMem_Calloc((size_t)n, wr_size);
	b->sges = PyMem_Calloc((size_t)n, sizeof(*b->sges));
	if (b->wrs == NULL || b->sges == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	b->n = n;
	if (mr != NULL) {
		MRObject *m = (MRObject *)mr;

		Py_INCREF(mr);
		b->mr = mr;
		b->mr_addr = m->addr;
		b->mr_length = m->length;
		b->mr_lkey = ((struct ibv_mr *)HANDLE(m)->obj)->lkey;
	}
	return 0;
}

int batch_mr_or_lkey(PyObject *mr, PyObject *lkey)
{
	if ((mr == NULL) == (lkey == NULL || lkey == Py_None)) {
		PyErr_SetString(PyExc_ValueError,
				"give an MR (local holds offsets into it) or "
				"lkey (local holds addresses), not both");
		return -1;
	}
	return 0;
}

int batch_mr_ready(BatchBase *b)
{
	MRObject *mr = (MRObject *)b->mr;

	if (mr == NULL)
		return 0;
	if (handle_check(HANDLE(mr)) < 0)
		return -1;
	if (mr->addr != b->mr_addr ||
	    ((struct ibv_mr *)HANDLE(mr)->obj)->lkey != b->mr_lkey) {
		PyErr_SetString(PyExc_ValueError,
				"the batch's MR was re-registered since the "
				"batch was built: build it again");
		return -1;
	}
	return 0;
}

int batch_row_error(const char *type, Py_ssize_t i, const char *what,
		    unsigned long long v)
{
	PyErr_Format(PyExc_ValueError, "%s row %zd: %s (%llu)", type, i, what,
		     v);
	return -1;
}

/* See wr.h. */
int batch_progress_check(PyObject *qp, PyObject *cq, const char *which,
			 PyObject *run_qp, unsigned int cap, Py_ssize_t *depth,
			 Py_ssize_t *piece)
{
	if (cq == NULL || Py_TYPE(cq) != ST.CQ_type) {
		PyErr_Format(PyExc_ValueError,
			     "progress() polls a plain CQ: this QP's %s CQ is "
			     "a CQEx",
			     which);
		return -1;
	}
	if (cq_check_polled_here(cq) < 0)
		return -1;
	if (run_qp != NULL && run_qp != qp) {
		PyErr_SetString(PyExc_ValueError,
				"a progress() run of this batch is under way "
				"on another QP: finish it or reset() it first");
		return -1;
	}
	if (*depth > (Py_ssize_t)cap)
		*depth = cap;
	if (*depth < 1 || *piece < 1) {
		PyErr_Format(PyExc_ValueError,
			     "depth and piece must be >= 1, got %zd and %zd",
			     *depth, *piece);
		return -1;
	}
	if (*piece > *depth)
		*piece = *depth;
	return 0;
}

/* See wr.h: the message names the batch's type and the row. */
PyObject *batch_run_failed(const char *batch, const struct ibv_wc *wcs, int k,
			   int got, Py_ssize_t row, Py_ssize_t posted)
{
	const struct ibv_wc *wc = &wcs[k];
	PyObject *w = wc_new(wc), *type, *value, *tb, *msg, *r, *p, *after;
	int j;

	if (w == NULL)
		return NULL;
	completion_error(w);
	Py_DECREF(w);
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	r = PyLong_FromSsize_t(row);
	p = PyLong_FromSsize_t(posted);
	after = PyList_New(got - k - 1);
	for (j = k + 1; after != NULL && j < got; j++) {
		PyObject *o = wc_new(&wcs[j]);

		if (o == NULL) {
			Py_CLEAR(after);
			break;
		}
		PyList_SetItem(after, j - k - 1, o);
	}
	msg = PyUnicode_FromFormat("%s row %zd: work completion failed", batch,
				   row);
	if (value != NULL && r != NULL && p != NULL && after != NULL &&
	    msg != NULL) {
		PyObject *old = PyObject_GetAttrString(value, "strerror");

		if (old != NULL && PyUnicode_Check(old)) {
			Py_DECREF(msg);
			msg = PyUnicode_FromFormat("%s row %zd: %U", batch, row,
						   old);
		}
		Py_XDECREF(old);
		PyErr_Clear();
		if (msg == NULL ||
		    PyObject_SetAttrString(value, "row", r) < 0 ||
		    PyObject_SetAttrString(value, "posted", p) < 0 ||
		    PyObject_SetAttrString(value, "after", after) < 0 ||
		    PyObject_SetAttrString(value, "strerror", msg) < 0)
			PyErr_Clear();
	}
	Py_XDECREF(r);
	Py_XDECREF(p);
	Py_XDECREF(after);
	Py_XDECREF(msg);
	PyErr_Restore(type, value, tb);
	return NULL;
}

int batch_check_rows(BatchBase *b, unsigned int room, const char *what,
		     const char *type)
{
	if (b->n <= (Py_ssize_t)room)
		return 0;
	PyErr_Format(PyExc_ValueError,
		     "%zd rows do not fit the %s queue (%u WRs): post a %s "
		     "in pieces",
		     b->n, what, room, type);
	return -1;
}

/* An optional Py_ssize_t argument (None or left out: dflt). */
static int ssize_arg(PyObject *o, const char *name, Py_ssize_t dflt,
		     Py_ssize_t *out)
{
	if (o == NULL || o == Py_None) {
		*out = dflt;
		return 0;
	}
	if (!PyLong_Check(o))
		return arg_type_error(name, "int", 1, o);
	*out = PyLong_AsSsize_t(o);
	if (*out == -1 && PyErr_Occurred())
		return -1;
	if (*out < 0) {
		PyErr_Format(PyExc_ValueError, "%s must be >= 0, got %zd", name,
			     *out);
		return -1;
	}
	return 0;
}

int batch_queue_args(PyObject *args, PyObject *kw, char **kwlist,
		     const char *fmt, PyTypeObject *qtype, PyTypeObject *qtype2,
		     const char *qname, PyObject **queue, Py_ssize_t da,
		     Py_ssize_t *a, Py_ssize_t db, Py_ssize_t *b)
{
	PyObject *s = NULL, *c = NULL;
	Py_ssize_t nargs = PyTuple_Size(args);

	*queue = NULL;
	/* Parsed by hand: the data path, where args_parse costs
	 * instructions. */
	if (kw == NULL && nargs >= 1 && nargs <= 3) {
		*queue = PyTuple_GetItem(args, 0);
		s = nargs > 1 ? PyTuple_GetItem(args, 1) : NULL;
		c = nargs > 2 ? PyTuple_GetItem(args, 2) : NULL;
	} else if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, queue,
						&s, &c))
		return -1;
	if (!PyObject_TypeCheck(*queue, qtype) &&
	    (qtype2 == NULL || !PyObject_TypeCheck(*queue, qtype2)))
		return arg_type_error(kwlist[0], qname, 0, *queue);
	if (ssize_arg(s, kwlist[1], da, a) < 0 ||
	    ssize_arg(c, kwlist[2], db, b) < 0)
		return -1;
	return 0;
}

int batch_idle(const BatchBase *b)
{
	if (b->run_qp == NULL)
		return 0;
	PyErr_Format(PyExc_ValueError,
		     "a progress() run of this batch is under way (%zd of %zd "
		     "rows complete): finish it or reset() it first",
		     b->run_done, b->n);
	return -1;
}

int batch_progress_args(PyObject *args, PyObject *kw, PyObject **qp,
			Py_ssize_t *depth, Py_ssize_t *piece)
{
	static char *kwlist[] = { "queue", "depth", "piece", NULL };

	return batch_queue_args(args, kw, kwlist, "O|OO:progress", ST.QP_type,
				NULL, "QP", qp, PY_SSIZE_T_MAX, depth, 16,
				piece);
}

PyObject *batch_none_or_error(PyObject *batch, PyObject *res)
{
	Py_DECREF(batch);
	if (res == NULL)
		return NULL;
	Py_DECREF(res);
	Py_RETURN_NONE;
}

int batch_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT((PyObject *)Py_TYPE(self));
	Py_VISIT(((BatchBase *)self)->mr);
	Py_VISIT(((BatchBase *)self)->run_qp);
	return 0;
}

void batch_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);
	BatchBase *b = (BatchBase *)self;

	PyObject_GC_UnTrack(self);
	((inquiry)PyType_GetSlot(tp, Py_tp_clear))(self);
	PyMem_Free(b->wrs);
	PyMem_Free(b->sges);
	((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
	Py_DECREF(tp);
}

Py_ssize_t batch_length(PyObject *self)
{
	return ((BatchBase *)self)->n;
}

PyObject *batch_get_mr(PyObject *self, void *closure)
{
	return obj_or_none(((BatchBase *)self)->mr);
}
