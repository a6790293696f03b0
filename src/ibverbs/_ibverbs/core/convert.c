/*
 * convert.c - argument converters and builders of result objects, shared
 * by every type: Python ints to C integers with range checks whose
 * messages name the argument, and dicts or Python-level records from C
 * values.
 */
#include "ibverbs.h"
#include <string.h>

/* A bound as the messages write it: 2**k-1 and -2**k for k >= 16. */
static void fmt_bound(char *buf, size_t n, int negative, unsigned long long v)
{
	int k;

	for (k = 16; k <= 64; k++) {
		unsigned long long p = k == 64 ? 0 : 1ULL << k;

		if (!negative && v == p - 1) {
			snprintf(buf, n, "2**%d-1", k);
			return;
		}
		if (negative && k < 64 && v == p) {
			snprintf(buf, n, "-2**%d", k);
			return;
		}
	}
	snprintf(buf, n, "%s%llu", negative ? "-" : "", v);
}

int arg_range_error(const char *name, long long lo, unsigned long long hi)
{
	char l[32], h[32];

	fmt_bound(l, sizeof(l), lo < 0,
		  lo < 0 ? 0ULL - (unsigned long long)lo :
			   (unsigned long long)lo);
	fmt_bound(h, sizeof(h), 0, hi);
	PyErr_Format(PyExc_ValueError, "%s must be in range %s..%s", name, l,
		     h);
	return -1;
}

int arg_u64(PyObject *o, const char *name, uint64_t *out)
{
	unsigned long long v;

	if (!PyLong_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s must be an int, not %R", name,
			     (PyObject *)Py_TYPE(o));
		return -1;
	}
	v = PyLong_AsUnsignedLongLong(o);
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Clear();
		arg_range_error(name, 0, UINT64_MAX);
		return -1;
	}
	*out = v;
	return 0;
}

int arg_u32(PyObject *o, const char *name, uint32_t *out)
{
	uint64_t v;

	if (arg_u64(o, name, &v) < 0)
		goto range;
	if (v > UINT32_MAX)
		goto range;
	*out = (uint32_t)v;
	return 0;
range:
	if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_ValueError))
		return -1;
	PyErr_Clear();
	return arg_range_error(name, 0, UINT32_MAX);
}

int arg_int(PyObject *o, const char *name, long min, long max, long *out)
{
	long v;

	if (!PyLong_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s must be an int, not %R", name,
			     (PyObject *)Py_TYPE(o));
		return -1;
	}
	v = PyLong_AsLong(o);
	if ((v == -1 && PyErr_Occurred()) || v < min || v > max) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "%s must be in range %ld..%ld",
			     name, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int dict_set_steal(PyObject *d, const char *key, PyObject *o)
{
	int rc;

	if (o == NULL)
		return -1;
	rc = PyDict_SetItemString(d, key, o);
	Py_DECREF(o);
	return rc;
}

int dict_set_u64(PyObject *d, const char *key, uint64_t v)
{
	return dict_set_steal(d, key, PyLong_FromUnsignedLongLong(v));
}

int dict_set_int(PyObject *d, const char *key, long v)
{
	return dict_set_steal(d, key, PyLong_FromLong(v));
}

int dict_set_str(PyObject *d, const char *key, const char *v)
{
	return dict_set_steal(d, key, PyUnicode_FromString(v ? v : ""));
}

PyObject *make_record(PyObject *cls, PyObject *kwargs)
{
	PyObject *args, *res;

	if (kwargs == NULL)
		return NULL;
	args = PyTuple_New(0);
	if (args == NULL) {
		Py_DECREF(kwargs);
		return NULL;
	}
	res = PyObject_Call(cls, args, kwargs);
	Py_DECREF(args);
	Py_DECREF(kwargs);
	return res;
}

PyObject *objects_record(const char *name, PyObject *kwargs)
{
	PyObject *mod, *cls, *res;

	if (kwargs == NULL)
		return NULL;
	mod = module_cached(&ST.mod_objects, "ibverbs._objects");
	cls = mod ? PyObject_GetAttrString(mod, name) : NULL;
	if (cls == NULL) {
		Py_DECREF(kwargs);
		return NULL;
	}
	res = make_record(cls, kwargs);
	Py_DECREF(cls);
	return res;
}

int attr_optional(PyObject *o, const char *name, PyObject **out)
{
	*out = PyObject_GetAttrString(o, name);
	if (*out != NULL)
		return 0;
	if (!PyErr_ExceptionMatches(PyExc_AttributeError))
		return -1;
	PyErr_Clear();
	return 0;
}

int attr_given(PyObject *o, const char *name, PyObject **out)
{
	if (attr_optional(o, name, out) < 0)
		return -1;
	if (*out == Py_None)
		Py_CLEAR(*out);
	return *out != NULL;
}

int attr_uint(PyObject *o, const char *owner, const char *name, uint64_t max,
	      uint64_t dflt, uint64_t *out)
{
	PyObject *v;
	char what[64];
	int rc;

	*out = dflt;
	rc = attr_given(o, name, &v);
	if (rc <= 0)
		return rc;
	snprintf(what, sizeof(what), "%s.%s", owner, name);
	rc = arg_u64(v, what, out);
	Py_DECREF(v);
	if (rc < 0 && !PyErr_ExceptionMatches(PyExc_ValueError))
		return -1;
	if (rc < 0 || *out > max) {
		PyErr_Clear();
		return arg_range_error(what, 0, max);
	}
	return 1;
}

PyObject *obj_or_none(PyObject *o)
{
	if (o == NULL)
		o = Py_None;
	Py_INCREF(o);
	return o;
}

/* The 3.9 Limited API has no buffer protocol: bytes and bytearray are
 * read directly, any other buffer through a byte view of its first n
 * bytes (memoryview.cast("B")[:n]), so a large receive buffer is not
 * copied whole. */
int buffer_view(PyObject *o, PyObject **mv)
{
	*mv = NULL;
	if (PyUnicode_Check(o) || PyLong_Check(o))
		return 0;
	*mv = PyMemoryView_FromObject(o);
	if (*mv != NULL)
		return 1;
	if (!PyErr_ExceptionMatches(PyExc_TypeError))
		return -1;
	PyErr_Clear();
	return 0;
}

int arg_bytes_prefix(PyObject *o, const char *name, void *dst, size_t n)
{
	PyObject *mv = NULL, *flat = NULL, *head = NULL, *bytes;
	Py_ssize_t have = 0;
	int rc = -1, view;

	if (PyBytes_Check(o) || PyByteArray_Check(o)) {
		have = PyBytes_Check(o) ? PyBytes_Size(o) : PyByteArray_Size(o);
		if ((size_t)have < n)
			goto short_buf;
		memcpy(dst,
		       PyBytes_Check(o) ? PyBytes_AsString(o) :
					  PyByteArray_AsString(o),
		       n);
		return 0;
	}
	view = buffer_view(o, &mv);
	if (view < 0)
		return -1;
	if (view == 0)
		goto bad;
	flat = PyObject_CallMethod(mv, "cast", "s", "B");
	if (flat == NULL)
		goto out; /* TypeError: not C-contiguous */
	have = PyObject_Size(flat);
	if (have < 0)
		goto out;
	if ((size_t)have < n)
		goto short_buf;
	head = PySequence_GetSlice(flat, 0, (Py_ssize_t)n);
	if (head == NULL)
		goto out;
	bytes = PyObject_Bytes(head);
	if (bytes == NULL)
		goto out;
	memcpy(dst, PyBytes_AsString(bytes), n);
	Py_DECREF(bytes);
	rc = 0;
	goto out;
short_buf:
	PyErr_Format(PyExc_ValueError,
		     "%s must hold at least %zu bytes, not %zd", name, n, have);
	goto out;
bad:
	PyErr_Format(PyExc_TypeError,
		     "%s must be a bytes-like object (bytes, bytearray, "
		     "memoryview, ...), not %R",
		     name, (PyObject *)Py_TYPE(o));
out:
	Py_XDECREF(head);
	Py_XDECREF(flat);
	Py_XDECREF(mv);
	return rc;
}
