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

/* Whether any of the n items of type T at p is negative: an OR of them
 * all, which the compiler vectorizes (the common case has none). */
#define ANY_NEGATIVE(T, p, n)                 \
	({                                    \
		const T *q_ = (const T *)(p); \
		T acc_ = 0;                   \
		Py_ssize_t j_;                \
		for (j_ = 0; j_ < (n); j_++)  \
			acc_ |= q_[j_];       \
		acc_ < 0;                     \
	})

/* A signed column's first negative row, or -1 (a column read, not
 * written, holds offsets, lengths, keys and ids: none may be negative). */
static Py_ssize_t column_first_negative(const Column *c)
{
	Py_ssize_t i;
	int any;

	if (((uintptr_t)c->data & (c->itemsize - 1)) != 0)
		any = 1; /* unaligned: look at each */
	else if (c->itemsize == 8)
		any = ANY_NEGATIVE(int64_t, c->data, c->n);
	else if (c->itemsize == 4)
		any = ANY_NEGATIVE(int32_t, c->data, c->n);
	else if (c->itemsize == 2)
		any = ANY_NEGATIVE(int16_t, c->data, c->n);
	else
		any = ANY_NEGATIVE(int8_t, c->data, c->n);
	if (!any)
		return -1;
	for (i = 0; i < c->n; i++) {
		if (column_signed_at(c, i) < 0)
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

/* WIDEN(T): the n items of type T at c->data into c->wide. */
#define WIDEN(T)                                  \
	do {                                      \
		const T *q_ = (const T *)c->data; \
		Py_ssize_t j_;                    \
		for (j_ = 0; j_ < c->n; j_++)     \
			c->wide[j_] = q_[j_];     \
	} while (0)

/* c->u64 of a read column: its data, or a widened copy.  0 or -1. */
static int column_widen(Column *c)
{
	if (c->itemsize == 8 && ((uintptr_t)c->data & 7) == 0) {
		c->u64 = c->data;
		return 0;
	}
	c->wide = PyMem_Malloc(c->n > 0 ? (size_t)c->n * 8 : 1);
	if (c->wide == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	if (c->itemsize == 8)
		memcpy(c->wide, c->data, (size_t)c->n * 8);
	else if (((uintptr_t)c->data & (c->itemsize - 1)) != 0) {
		Py_ssize_t j;

		for (j = 0; j < c->n; j++)
			c->wide[j] = (uint64_t)column_signed_at(c, j) &
				     (~0ULL >> (64 - 8 * c->itemsize));
	} else if (c->itemsize == 4)
		WIDEN(uint32_t);
	else if (c->itemsize == 2)
		WIDEN(uint16_t);
	else
		WIDEN(uint8_t);
	c->u64 = c->wide;
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
	if (!(flags & COLUMN_WRITE) && column_widen(c) < 0) {
		column_release(c);
		return -1;
	}
	return 0;
}

void column_release(Column *c)
{
	PyObject *r;

	PyMem_Free(c->wide);
	c->wide = NULL;
	c->u64 = NULL;
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
