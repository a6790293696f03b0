/*
 * columns.c - columns of integers for the batches (batch.c,
 * recv_batch.c) and CQ.poll_into (cq/cq.c): one value per row, from any
 * 1-D buffer of integers (numpy, array.array, memoryview, a torch CPU
 * tensor) or, where a column allows it, one int for every row.
 *
 * The 3.9 Limited API has no buffer protocol: ibverbs._tensor.int_column
 * finds a column's address, item size and signedness once per column,
 * and returns what keeps its memory (a buffer export, the tensor, or a
 * copy of a read-only buffer), held here until column_release.
 */
#include "ibverbs.h"
#include "wr/wr.h"

#include <string.h>

/* A signed column's first negative row, or -1 (a column read, not
 * written, holds offsets, lengths, keys and ids: none may be negative). */
static Py_ssize_t column_first_negative(const Column *c)
{
	Py_ssize_t i;

	for (i = 0; i < c->n; i++) {
		const char *p = (const char *)c->data + i * c->itemsize;

		/* The sign bit of the item, in the machine's byte order. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		if (p[c->itemsize - 1] & 0x80)
#else
		if (p[0] & 0x80)
#endif
			return i;
	}
	return -1;
}

static int column_from_tuple(PyObject *t, Column *c)
{
	unsigned long long addr;
	Py_ssize_t n;
	long size;

	if (!PyTuple_Check(t) || PyTuple_Size(t) != 5) {
		PyErr_SetString(PyExc_SystemError,
				"_tensor.int_column returned a bad value");
		return -1;
	}
	addr = PyLong_AsUnsignedLongLong(PyTuple_GetItem(t, 0));
	n = PyLong_AsSsize_t(PyTuple_GetItem(t, 1));
	size = PyLong_AsLong(PyTuple_GetItem(t, 2));
	if (PyErr_Occurred())
		return -1;
	c->data = (const void *)(uintptr_t)addr;
	c->n = n;
	c->itemsize = (int)size;
	c->is_signed = PyObject_IsTrue(PyTuple_GetItem(t, 3));
	c->owner = PyTuple_GetItem(t, 4);
	Py_INCREF(c->owner);
	return 0;
}

int column_get(PyObject *o, const char *name, int flags, Column *c)
{
	PyObject *mod, *t;

	memset(c, 0, sizeof(*c));
	c->name = name;
	if (PyLong_Check(o) && (flags & COLUMN_SCALAR_OK)) {
		c->scalar = PyLong_AsUnsignedLongLong(o);
		if (c->scalar == (unsigned long long)-1 && PyErr_Occurred()) {
			PyErr_Clear();
			PyErr_Format(PyExc_ValueError,
				     "%s must be in 0..2**64-1, got %S", name,
				     o);
			return -1;
		}
		c->n = -1;
		return 0;
	}
	mod = module_cached(&ST.mod_tensor, "ibverbs._tensor");
	if (mod == NULL)
		return -1;
	t = PyObject_CallMethod(mod, "int_column", "OsO", o, name,
				(flags & COLUMN_WRITE) ? Py_True : Py_False);
	if (t == NULL)
		return -1;
	if (column_from_tuple(t, c) < 0) {
		Py_DECREF(t);
		return -1;
	}
	Py_DECREF(t);
	if (!(flags & COLUMN_WRITE) && c->is_signed) {
		Py_ssize_t bad = column_first_negative(c);

		if (bad >= 0) {
			PyErr_Format(PyExc_ValueError,
				     "%s: row %zd is negative (%lld)", name,
				     bad, (long long)column_signed_at(c, bad));
			column_release(c);
			return -1;
		}
	}
	return 0;
}

void column_release(Column *c)
{
	PyObject *r;

	if (c->owner == NULL)
		return;
	/* A memoryview's export is dropped now, not when the last reference
	 * goes: a bytearray may be resized again. */
	if (PyMemoryView_Check(c->owner)) {
		PyObject *type, *value, *tb;

		/* Called on error paths too: keep their exception. */
		PyErr_Fetch(&type, &value, &tb);
		r = PyObject_CallMethod(c->owner, "release", NULL);
		if (r == NULL)
			PyErr_WriteUnraisable(c->owner);
		Py_XDECREF(r);
		PyErr_Restore(type, value, tb);
	}
	Py_CLEAR(c->owner);
	c->data = NULL;
}

int64_t column_signed_at(const Column *c, Py_ssize_t i)
{
	const char *p = (const char *)c->data + i * c->itemsize;

	switch (c->itemsize) {
	case 1:
		return *(const int8_t *)p;
	case 2: {
		int16_t v;

		memcpy(&v, p, 2);
		return v;
	}
	case 4: {
		int32_t v;

		memcpy(&v, p, 4);
		return v;
	}
	default: {
		int64_t v;

		memcpy(&v, p, 8);
		return v;
	}
	}
}

int column_check_len(const Column *c, Py_ssize_t n)
{
	if (c->n < 0 || c->n == n)
		return 0;
	PyErr_Format(PyExc_ValueError,
		     "%s has %zd rows where the batch has %zd: every column "
		     "must have one value per request",
		     c->name, c->n, n);
	return -1;
}
