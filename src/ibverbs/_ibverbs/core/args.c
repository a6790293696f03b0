/*
 * args.c - the one parser of declared arguments (core/args.h): positional
 * and keyword matching, the conversions by kind, the checks of handles,
 * the messages of each kind of bad argument, and the declarations as data
 * (ibverbs._ibverbs._specs).
 */
#include "ibverbs.h"
#include <stdio.h>
#include <string.h>

/* Most arguments a declared method takes. */
#define ARGS_MAX 16

/* The declarations, as the module's constructors register them. */
#define ARGS_REGISTRY_MAX 512
static const MethodArgs *registry[ARGS_REGISTRY_MAX];
static int registered, dropped;

void args_register(const MethodArgs *m)
{
	if (registered < ARGS_REGISTRY_MAX)
		registry[registered++] = m;
	else
		dropped++;
}

/* The name messages give m: the method's ("reg_mr"), or the class's for
 * a constructor ("CMListener.__new__" is "CMListener"), in buf. */
static const char *method_name(const MethodArgs *m, char *buf, size_t n)
{
	const char *dot = strrchr(m->qualname, '.');

	if (dot == NULL)
		return m->qualname;
	if (strcmp(dot + 1, "__new__") != 0)
		return dot + 1;
	snprintf(buf, n, "%.*s", (int)(dot - m->qualname), m->qualname);
	return buf;
}

/* "an" before a type name whose first letter is read as a letter (MR,
 * SRQ, AHAttr, MWBindInfo: two capitals first) and sounds as a vowel, or
 * before a word starting with a vowel (int, Event); else "a". */
static const char *article(const char *what)
{
	int spelled = what[0] >= 'A' && what[0] <= 'Z' && what[1] >= 'A' &&
		      what[1] <= 'Z';

	if (spelled)
		return strchr("AEFHILMNORSX", what[0]) ? "an" : "a";
	return strchr("AEIOUaeiou", what[0]) ? "an" : "a";
}

int arg_type_error_hint(const char *name, const char *what, int none_ok,
			PyObject *got, const char *hint)
{
	PyErr_Format(PyExc_TypeError, "%s must be %s %s%s, not %R%s%s%s", name,
		     article(what), what, none_ok ? " or None" : "",
		     (PyObject *)Py_TYPE(got), hint ? " (" : "",
		     hint ? hint : "", hint ? ")" : "");
	return -1;
}

int arg_type_error(const char *name, const char *what, int none_ok,
		   PyObject *got)
{
	return arg_type_error_hint(name, what, none_ok, got, NULL);
}

PyObject *attr_required(PyObject *o, const char *name, const char *arg,
			const char *record)
{
	PyObject *v;
	char hint[64];

	if (attr_optional(o, name, &v) < 0 || v != NULL)
		return v;
	snprintf(hint, sizeof(hint), "it has no attribute '%s'", name);
	arg_type_error_hint(arg, record, 0, o, hint);
	return NULL;
}

int arg_other_parent_error(const char *name, const char *parent)
{
	PyErr_Format(PyExc_ValueError, "%s belongs to another %s", name,
		     parent);
	return -1;
}

static int range_error(const ArgSpec *a)
{
	return arg_range_error(a->name, a->lo, a->hi);
}

static void store_int(const ArgSpec *a, char *out, unsigned long long v)
{
	char *f = out + a->offset;

	switch (a->size) {
	case 1:
		*(uint8_t *)f = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)f = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)f = (uint32_t)v;
		break;
	default:
		*(uint64_t *)f = (uint64_t)v;
	}
}

static int parse_int(const ArgSpec *a, PyObject *o, char *out)
{
	unsigned long long v;

	if (!PyLong_Check(o))
		return arg_type_error_hint(a->name, "int", a->flags & ARG_NONE,
					   o, a->hint);
	if (a->lo < 0) {
		int overflow;
		long long s = PyLong_AsLongLongAndOverflow(o, &overflow);

		if (s == -1 && PyErr_Occurred())
			return -1;
		if (overflow || s < a->lo ||
		    (s >= 0 && (unsigned long long)s > a->hi))
			return range_error(a);
		v = (unsigned long long)s;
	} else {
		v = PyLong_AsUnsignedLongLong(o);
		if (v == (unsigned long long)-1 && PyErr_Occurred()) {
			if (!PyErr_ExceptionMatches(PyExc_OverflowError))
				return -1;
			PyErr_Clear();
			return range_error(a);
		}
		if (v < (unsigned long long)a->lo || v > a->hi)
			return range_error(a);
	}
	store_int(a, out, v);
	return 0;
}

/* The Context of o, or its PD (NULL when it has none), read under o's
 * lock: MR.rereg on another thread may be moving an MR to another PD. */
static Handle *ancestor_of(PyObject *o, int pd)
{
	Handle *h;

	OBJ_LOCKED_BEGIN(o);
	h = HANDLE(o);
	if (pd)
		while (h != NULL &&
		       !PyObject_TypeCheck((PyObject *)h, ST.PD_type))
			h = h->parent;
	else
		while (h->parent != NULL)
			h = h->parent;
	OBJ_LOCKED_END();
	return h;
}

static int parse_handle(const ArgSpec *a, PyObject *o, PyObject *self,
			char *out)
{
	PyTypeObject *tp = *(PyTypeObject **)((char *)&ST + a->type_slot);
	Handle *mine;

	if (!PyObject_TypeCheck(o, tp))
		return arg_type_error_hint(a->name, a->cls, a->flags & ARG_NONE,
					   o, a->hint);
	if (handle_check(HANDLE(o)) < 0)
		return -1;
	if (self != NULL && a->parent == ARG_SAME_PD &&
	    (mine = ancestor_of(self, 1)) != NULL) {
		if (ancestor_of(o, 1) != mine)
			return arg_other_parent_error(a->name, "PD");
	} else if (self != NULL && a->parent != ARG_ANY_PARENT) {
		if (ancestor_of(o, 0) != ancestor_of(self, 0))
			return arg_other_parent_error(a->name, "Context");
	}
	*(PyObject **)(out + a->offset) = o;
	return 0;
}

/* One argument given as o. */
static int parse_one(const MethodArgs *m, const ArgSpec *a, PyObject *o,
		     PyObject *self, char *out)
{
	if (o == Py_None && (a->flags & ARG_NONE))
		return 0; /* its default stays */
	switch (a->kind) {
	case ARG_KIND_INT:
	case ARG_KIND_FLAGS:
	case ARG_KIND_ENUM:
		if (parse_int(a, o, out) < 0)
			return -1;
		break;
	case ARG_KIND_HANDLE:
		if (parse_handle(a, o, self, out) < 0)
			return -1;
		break;
	case ARG_KIND_TEXT:
		if (!PyUnicode_Check(o))
			return arg_type_error_hint(a->name, "str",
						   a->flags & ARG_NONE, o,
						   a->hint);
		*(PyObject **)(out + a->offset) = o;
		break;
	case ARG_KIND_NUMBER:
		if (!PyLong_Check(o) && !PyFloat_Check(o))
			return arg_type_error_hint(a->name, "int or float",
						   a->flags & ARG_NONE, o,
						   a->hint);
		*(PyObject **)(out + a->offset) = o;
		break;
	default: /* a record, buffer or list (the method reads it), any */
		*(PyObject **)(out + a->offset) = o;
	}
	if (a->mask != 0 && m->mask_offset >= 0)
		*(uint64_t *)(out + m->mask_offset) |= a->mask;
	return 0;
}

static void set_default(const ArgSpec *a, char *out)
{
	if (a->kind <= ARG_KIND_ENUM)
		store_int(a, out, (unsigned long long)a->def);
	else
		*(PyObject **)(out + a->offset) = NULL;
}

/* Match kw's names to m's parameters into vals.  0 / -1. */
static int match_keywords(const MethodArgs *m, int n, PyObject *kw,
			  Py_ssize_t npos, PyObject **vals)
{
	PyObject *key, *value;
	Py_ssize_t pos = 0;
	char name[64];
	int i;

	while (PyDict_Next(kw, &pos, &key, &value)) {
		if (!PyUnicode_Check(key)) {
			PyErr_SetString(PyExc_TypeError,
					"keywords must be strings");
			return -1;
		}
		for (i = 0; i < n; i++)
			if (PyUnicode_CompareWithASCIIString(
				    key, m->params[i].name) == 0)
				break;
		if (i == n || (m->params[i].flags & ARG_POSONLY)) {
			PyErr_Format(PyExc_TypeError,
				     "'%U' is an invalid keyword argument for "
				     "%s()",
				     key, method_name(m, name, sizeof(name)));
			return -1;
		}
		if (i < npos) {
			PyErr_Format(PyExc_TypeError,
				     "argument for %s() given by name ('%s') "
				     "and position (%d)",
				     method_name(m, name, sizeof(name)),
				     m->params[i].name, i + 1);
			return -1;
		}
		vals[i] = value;
	}
	return 0;
}

int args_parse(const MethodArgs *m, PyObject *self, PyObject *args,
	       PyObject *kw, void *out_)
{
	PyObject *vals[ARGS_MAX] = { NULL };
	char *out = out_;
	Py_ssize_t npos = args != NULL ? PyTuple_Size(args) : 0;
	int n, npositional = 0, i;
	char name[64];

	for (n = 0; m->params[n].name != NULL; n++)
		if (!(m->params[n].flags & ARG_KWONLY))
			npositional = n + 1;
	if (n > ARGS_MAX) {
		PyErr_Format(PyExc_SystemError, "%s declares %d arguments",
			     m->qualname, n);
		return -1;
	}
	if (npos > npositional) {
		PyErr_Format(PyExc_TypeError,
			     "%s() takes at most %d positional argument%s "
			     "(%zd given)",
			     method_name(m, name, sizeof(name)), npositional,
			     npositional == 1 ? "" : "s", npos);
		return -1;
	}
	for (i = 0; i < npos; i++)
		vals[i] = PyTuple_GetItem(args, i);
	if (kw != NULL && PyDict_Size(kw) > 0 &&
	    match_keywords(m, n, kw, npos, vals) < 0)
		return -1;
	if (m->mask_offset >= 0)
		*(uint64_t *)(out + m->mask_offset) = 0;
	for (i = 0; i < n; i++) {
		const ArgSpec *a = &m->params[i];

		set_default(a, out);
		if (vals[i] != NULL) {
			if (parse_one(m, a, vals[i], self, out) < 0)
				return -1;
		} else if (!(a->flags & ARG_OPT)) {
			PyErr_Format(PyExc_TypeError,
				     "%s() missing required argument '%s' "
				     "(pos %d)",
				     method_name(m, name, sizeof(name)),
				     a->name, i + 1);
			return -1;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- */
/* The declarations as data                                          */
/* ---------------------------------------------------------------- */

static const char *const kind_names[] = {
	[ARG_KIND_INT] = "int",	      [ARG_KIND_FLAGS] = "flags",
	[ARG_KIND_ENUM] = "enum",     [ARG_KIND_HANDLE] = "handle",
	[ARG_KIND_RECORD] = "record", [ARG_KIND_BUFFER] = "buffer",
	[ARG_KIND_LIST] = "list",     [ARG_KIND_TEXT] = "text",
	[ARG_KIND_NUMBER] = "number", [ARG_KIND_OBJECT] = "object",
};

/* One parameter's declaration as a dict (lo: the least length of a
 * buffer, the range of an integer). */
static PyObject *spec_param(const ArgSpec *a)
{
	static const char *const parents[] = { NULL, "Context", "PD" };
	int is_int = a->kind <= ARG_KIND_ENUM;
	PyObject *d = PyDict_New();

	if (d == NULL)
		return NULL;
	if (dict_set_str(d, "name", a->name) < 0 ||
	    dict_set_str(d, "kind", kind_names[a->kind]) < 0 ||
	    dict_set_steal(d, "optional", PyBool_FromLong(a->flags & ARG_OPT)) <
		    0 ||
	    dict_set_steal(d, "kw_only",
			   PyBool_FromLong(a->flags & ARG_KWONLY)) < 0 ||
	    dict_set_steal(d, "pos_only",
			   PyBool_FromLong(a->flags & ARG_POSONLY)) < 0 ||
	    dict_set_steal(d, "none_ok", PyBool_FromLong(a->flags & ARG_NONE)) <
		    0 ||
	    dict_set_steal(d, "cls", obj_or_none(NULL)) < 0 ||
	    (a->cls != NULL && dict_set_str(d, "cls", a->cls) < 0) ||
	    dict_set_steal(d, "lo",
			   is_int || a->kind == ARG_KIND_BUFFER ?
				   PyLong_FromLongLong(a->lo) :
				   obj_or_none(NULL)) < 0 ||
	    dict_set_steal(d, "hi",
			   is_int ? PyLong_FromUnsignedLongLong(a->hi) :
				    obj_or_none(NULL)) < 0 ||
	    dict_set_steal(d, "default",
			   is_int && (a->flags & ARG_OPT) ?
				   PyLong_FromLongLong(a->def) :
				   obj_or_none(NULL)) < 0 ||
	    dict_set_steal(d, "parent",
			   a->kind == ARG_KIND_HANDLE &&
					   parents[a->parent] != NULL ?
				   PyUnicode_FromString(parents[a->parent]) :
				   obj_or_none(NULL)) < 0) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *spec_params(const MethodArgs *m)
{
	PyObject *list = PyList_New(0), *tuple;
	const ArgSpec *a;

	if (list == NULL)
		return NULL;
	for (a = m->params; a->name != NULL; a++) {
		PyObject *p = spec_param(a);

		if (p == NULL || PyList_Append(list, p) < 0) {
			Py_XDECREF(p);
			Py_DECREF(list);
			return NULL;
		}
		Py_DECREF(p);
	}
	tuple = PyList_AsTuple(list);
	Py_DECREF(list);
	return tuple;
}

PyObject *args_specs(void)
{
	PyObject *d;
	int i;

	if (dropped) {
		PyErr_Format(PyExc_SystemError,
			     "%d argument declarations past ARGS_REGISTRY_MAX",
			     dropped);
		return NULL;
	}
	d = PyDict_New();
	if (d == NULL)
		return NULL;
	for (i = 0; i < registered; i++)
		if (dict_set_steal(d, registry[i]->qualname,
				   spec_params(registry[i])) < 0) {
			Py_DECREF(d);
			return NULL;
		}
	return d;
}
