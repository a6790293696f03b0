/*
 * errors.c - the one place where verb return codes become exceptions.
 *
 * VerbsError and CompletionError are plain Python classes defined in
 * ibverbs/_objects.py; module.c fetches them into ST at exec time.
 */
#include "ibverbs.h"
#include <stdarg.h>
#include <string.h>

/* Raise VerbsError(err, text[, op]), each item of attrs (a dict, or NULL)
 * set on it as an attribute; steals text (NULL: an error is set). */
static PyObject *raise_verbs_error_attrs(int err, const char *op,
					 PyObject *text, PyObject *attrs)
{
	PyObject *exc, *k, *v;
	Py_ssize_t pos = 0;

	if (text == NULL)
		return NULL;
	if (op != NULL)
		exc = PyObject_CallFunction(ST.VerbsError, "iOs", err, text,
					    op);
	else
		exc = PyObject_CallFunction(ST.VerbsError, "iO", err, text);
	Py_DECREF(text);
	if (exc == NULL)
		return NULL;
	while (attrs != NULL && PyDict_Next(attrs, &pos, &k, &v)) {
		if (PyObject_SetAttr(exc, k, v) < 0) {
			Py_DECREF(exc);
			return NULL;
		}
	}
	PyErr_SetObject(ST.VerbsError, exc);
	Py_DECREF(exc);
	return NULL;
}

static PyObject *raise_verbs_error(int err, const char *op, PyObject *text)
{
	return raise_verbs_error_attrs(err, op, text, NULL);
}

PyObject *verbs_error(int err, const char *op)
{
	if (err < 0)
		err = -err;
	return raise_verbs_error(err, op, PyUnicode_FromString(strerror(err)));
}

/* "strerror(err): fmt..." with attrs (or NULL) set on the exception. */
static PyObject *raise_fmt(int err, const char *op, PyObject *attrs,
			   const char *fmt, va_list ap)
{
	PyObject *detail, *text;

	if (err < 0)
		err = -err;
	detail = PyUnicode_FromFormatV(fmt, ap);
	if (detail == NULL)
		return NULL;
	text = PyUnicode_FromFormat("%s: %U", strerror(err), detail);
	Py_DECREF(detail);
	return raise_verbs_error_attrs(err, op, text, attrs);
}

PyObject *verbs_error_fmt(int err, const char *op, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	raise_fmt(err, op, NULL, fmt, ap);
	va_end(ap);
	return NULL;
}

PyObject *provider_lacks(const char *verb)
{
	return verbs_error_fmt(EOPNOTSUPP, verb,
			       "the provider does not implement it");
}

int errno_or(int fallback)
{
	return errno ? errno : fallback;
}

PyObject *verbs_error_errno(const char *op)
{
	return verbs_error(errno_or(EINVAL), op);
}

PyObject *verbs_error_with(int err, const char *op, PyObject *attrs,
			   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	raise_fmt(err, op, attrs, fmt, ap);
	va_end(ap);
	return NULL;
}

/* Raise CompletionError for the WC record ``wc`` (borrowed): CQ.poll_count,
 * CQEx.poll_count and WC.raise_for_status.  Returns NULL. */
PyObject *completion_error(PyObject *wc)
{
	PyObject *exc =
		PyObject_CallFunctionObjArgs(ST.CompletionError, wc, NULL);

	if (exc != NULL) {
		PyErr_SetObject(ST.CompletionError, exc);
		Py_DECREF(exc);
	}
	return NULL;
}
