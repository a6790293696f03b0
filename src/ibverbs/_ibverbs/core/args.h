/*
 * core/args.h - a method's argument contract, declared once (included by
 * ibverbs.h; core/args.c reads it).
 *
 * A method declares each argument beside its function: name, kind (an
 * integer in a range, a flag set or enum of a named class, a handle of a
 * type under the same Context or PD, a record of a named class, a buffer,
 * a list, a str, a number, or any object), whether it may be left out or
 * passed only by keyword, its default, and whether None stands for "not
 * given".  One list names each argument once, as the C struct the
 * method parses into has it (a field per argument, named as the
 * argument), and the function's head turns it into that struct, its
 * ArgSpec list and the MethodArgs:
 *
 *	#define REG_MR_ARGS(X, S)                                     \
 *		X(S, UINT, uint64_t, addr)                            \
 *		X(S, INT, uint64_t, length, 1, UINT64_MAX)            \
 *		X(S, FLAGS, int, access, AccessFlags, .flags = ARG_OPT) \
 *		X(S, OBJECT, PyObject *, owner, .flags = ARG_KWOPT | ARG_NONE)
 *	ARGS_METHOD(extern, pd_reg_mr, "PD.reg_mr", REG_MR_ARGS, self, a)
 *	{
 *		... a->addr, a->length ...
 *	}
 *
 * ARGS_METHOD (below) calls args_parse(&pd_reg_mr_args, self, args, kw,
 * &it) after HANDLE_CHECK(self), so a handle argument is checked open
 * (and, in the free-threaded build, pinned) inside the method's scope.
 *
 * From that one declaration come the parsing, with one wording per kind
 * of error (args.c), and ibverbs._ibverbs._specs, the declarations as
 * data: the host tests compare them with the stub's signatures and the
 * docstrings' Args, and the misuse suite derives its bad inputs from them
 * (wrong types, each bound + 1, a closed handle, another parent's handle).
 *
 * The data path (post_send, post_recv, poll, the WR and SGE constructors)
 * parses by hand, where this parser would cost instructions.
 */
#ifndef IBVERBS_CORE_ARGS_H
#define IBVERBS_CORE_ARGS_H

#include <stddef.h>
#include <stdint.h>

typedef enum ArgKind {
	ARG_KIND_INT, /* an int in lo..hi (signed when lo < 0) */
	ARG_KIND_FLAGS, /* an int or flag of class cls, in lo..hi */
	ARG_KIND_ENUM, /* an int or member of class cls, in lo..hi */
	ARG_KIND_HANDLE, /* an open object of type cls, under parent */
	ARG_KIND_RECORD, /* an object of class cls: the method reads it */
	ARG_KIND_BUFFER, /* bytes-like, of lo bytes or more: the method reads it */
	ARG_KIND_LIST, /* a list of cls items: the method reads it */
	ARG_KIND_TEXT, /* a str */
	ARG_KIND_NUMBER, /* an int or a float */
	ARG_KIND_OBJECT, /* any object (an owner, a truth value) */
} ArgKind;

/* ArgSpec.flags */
#define ARG_OPT 0x1u /* may be left out: the field keeps .def (or NULL) */
#define ARG_KWONLY 0x2u /* passed by keyword only */
#define ARG_KWOPT (ARG_OPT | ARG_KWONLY)
#define ARG_NONE 0x4u /* None is accepted, as "not given" */
#define ARG_POSONLY 0x8u /* passed by position only (the stub's "/") */

/* ArgSpec.parent: which handle of self's tree a handle argument must be
 * under. */
typedef enum ArgParent {
	ARG_ANY_PARENT,
	ARG_SAME_CONTEXT, /* the Context self belongs to (or is) */
	ARG_SAME_PD, /* the PD self belongs to (or is) */
} ArgParent;

typedef struct ArgSpec {
	const char *name; /* NULL ends the list */
	unsigned char kind; /* ArgKind */
	unsigned char flags; /* ARG_* */
	unsigned char size; /* of the C field: 1, 2, 4 or 8 (integers) */
	unsigned char parent; /* ArgParent (handles) */
	unsigned short offset; /* of the field in the method's struct */
	long long lo; /* integers: the range */
	unsigned long long hi;
	long long def; /* an integer left out */
	const char *cls; /* the class named in messages and in _specs */
	size_t type_slot; /* handles: offsetof(module_state, <T>_type) */
	uint64_t mask; /* given and not None: or'ed into the mask field */
	const char *hint; /* appended to its TypeError, in parentheses */
} ArgSpec;

typedef struct MethodArgs {
	const char *qualname; /* "PD.reg_mr": messages and _specs */
	const ArgSpec *params;
	int mask_offset; /* of a uint64_t mask field, or -1 */
} MethodArgs;

#define ARG_FIELD_(S, f) \
	.name = #f, .offset = offsetof(S, f), .size = sizeof(((S *)0)->f)
/* The largest value of field f's type (gcc's typeof tells its sign). */
#define ARG_SIGNED_(S, f) \
	(!((__typeof__(((S *)0)->f))-1 > (__typeof__(((S *)0)->f))0))
#define ARG_MAX_(S, f) \
	(UINT64_MAX >> (64 - 8 * sizeof(((S *)0)->f) + ARG_SIGNED_(S, f)))

#define ARG_INT(S, f, lo_, hi_, ...)                                 \
	{                                                            \
		ARG_FIELD_(S, f), .kind = ARG_KIND_INT, .lo = (lo_), \
				  .hi = (hi_), __VA_ARGS__           \
	}
/* 0 up to the largest value of the field's type. */
#define ARG_UINT(S, f, ...) ARG_INT(S, f, 0, ARG_MAX_(S, f), __VA_ARGS__)
/* A flag set of ibverbs.<Cls>: 0 up to the largest value of the field's
 * type (2**31-1 for an int). */
#define ARG_FLAGS(S, f, Cls, ...)                                            \
	{                                                                    \
		ARG_FIELD_(S, f), .kind = ARG_KIND_FLAGS, .cls = #Cls,       \
				  .lo = 0, .hi = ARG_MAX_(S, f), __VA_ARGS__ \
	}
#define ARG_ENUM(S, f, Cls, lo_, hi_, ...)                              \
	{                                                               \
		ARG_FIELD_(S, f), .kind = ARG_KIND_ENUM, .cls = #Cls,   \
				  .lo = (lo_), .hi = (hi_), __VA_ARGS__ \
	}
/* A PyObject * field (borrowed) holding an open T. */
#define ARG_HANDLE(S, f, T, parent_, ...)                              \
	{                                                              \
		ARG_FIELD_(S, f),                                      \
			.kind = ARG_KIND_HANDLE, .cls = #T,            \
			.type_slot = offsetof(module_state, T##_type), \
			.parent = (parent_), __VA_ARGS__               \
	}
#define ARG_RECORD(S, f, Cls, ...)                                      \
	{                                                               \
		ARG_FIELD_(S, f), .kind = ARG_KIND_RECORD, .cls = #Cls, \
				  __VA_ARGS__                           \
	}
/* A bytes-like object of at least minlen bytes (the method checks). */
#define ARG_BUFFER(S, f, minlen, ...)                                      \
	{                                                                  \
		ARG_FIELD_(S, f), .kind = ARG_KIND_BUFFER, .lo = (minlen), \
				  __VA_ARGS__                              \
	}
/* A list of Item objects (the method checks the items). */
#define ARG_LIST(S, f, Item, ...)                                      \
	{                                                              \
		ARG_FIELD_(S, f), .kind = ARG_KIND_LIST, .cls = #Item, \
				  __VA_ARGS__                          \
	}
#define ARG_TEXT(S, f, ...)                                          \
	{                                                            \
		ARG_FIELD_(S, f), .kind = ARG_KIND_TEXT, __VA_ARGS__ \
	}
#define ARG_NUMBER(S, f, ...)                                          \
	{                                                              \
		ARG_FIELD_(S, f), .kind = ARG_KIND_NUMBER, __VA_ARGS__ \
	}
#define ARG_OBJECT(S, f, ...)                                          \
	{                                                              \
		ARG_FIELD_(S, f), .kind = ARG_KIND_OBJECT, __VA_ARGS__ \
	}
#define ARG_END              \
	{                    \
		.name = NULL \
	}

/* The argument struct and its ArgSpec list from one list that names each
 * argument once.  LIST is a macro of (X, S) holding one
 *	X(S, KIND, C type, field, what ARG_KIND takes after the field)
 * per argument, in the signature's order.  ARGS_DECLARE(name, LIST)
 * declares struct name##_args, a field per argument, and name##_params,
 * their ArgSpecs and ARG_END:
 *
 *	#define ALLOC_BUF_ARGS(X, S) X(S, INT, uint64_t, size, 1, SIZE_MAX)
 *	ARGS_DECLARE(alloc_buf, ALLOC_BUF_ARGS);
 *
 * is struct alloc_buf_args { uint64_t size; } and alloc_buf_params[] =
 * { ARG_INT(struct alloc_buf_args, size, 1, SIZE_MAX), ARG_END }.
 * ARGS_DECLARE_MASK adds uint64_t mask, for METHOD_ARGS_MASK. */
#define ARGS_MEMBER_(S, kind, type, f, ...) type f;
#define ARGS_SPEC_(S, kind, type, f, ...) ARG_##kind(S, f, __VA_ARGS__),
#define ARGS_DECLARE_(name, LIST, more)                \
	struct name##_args {                           \
		LIST(ARGS_MEMBER_, ) more              \
	};                                             \
	static const ArgSpec name##_params[] = { LIST( \
		ARGS_SPEC_, struct name##_args) ARG_END }
#define ARGS_DECLARE(name, LIST) ARGS_DECLARE_(name, LIST, )
#define ARGS_DECLARE_MASK(name, LIST) ARGS_DECLARE_(name, LIST, uint64_t mask;)

/* Declare name##_args, the MethodArgs of qualname with the ArgSpec list
 * params, and register it for ibverbs._ibverbs._specs when the module is
 * loaded (a constructor calls args_register). */
#define METHOD_ARGS_MASK(name, qualname_, params_, mask_off)                 \
	static const MethodArgs name##_args = { .qualname = (qualname_),     \
						.params = (params_),         \
						.mask_offset = (mask_off) }; \
	__attribute__((constructor)) static void name##_args_register(void)  \
	{                                                                    \
		args_register(&name##_args);                                 \
	}
#define METHOD_ARGS(name, qualname_, params_) \
	METHOD_ARGS_MASK(name, qualname_, params_, -1)

/* Add m to the declarations _specs lists (at load, from METHOD_ARGS). */
void args_register(const MethodArgs *m);

/* Parse args and kw (either may be NULL) into the struct at out by m's
 * declaration: the fields of left-out arguments get their defaults (0 /
 * NULL unless .def says otherwise).  self (or NULL) is the handle whose
 * Context or PD a handle argument must share.  Call it after
 * HANDLE_CHECK(self).  0, or -1 with TypeError, ValueError or
 * VerbsError(EBADF) set. */
int args_parse(const MethodArgs *m, PyObject *self, PyObject *args,
	       PyObject *kw, void *out);

/* The head of a function that parses by its declaration: the macro
 * defines fn (link: static or extern), which parses args and kw into the
 * argument struct on its stack and returns fn##_impl(self, &it); the
 * block after the macro is fn##_impl's body, where var points to the
 * parsed arguments.  A method does HANDLE_CHECK(self) first, and a
 * handle argument must share self's parent; a module function has no
 * parent to share.
 *
 * ARGS_METHOD and ARGS_FUNCTION take the whole contract: the qualified
 * name and the argument LIST (ARGS_DECLARE above); they declare struct
 * fn##_args, fn##_params and the MethodArgs fn##_args:
 *
 *	#define ALLOC_BUF_ARGS(X, S) X(S, INT, uint64_t, size, 1, SIZE_MAX)
 *	ARGS_METHOD(extern, pd_alloc_buf, "PD.alloc_buf", ALLOC_BUF_ARGS,
 *		    parent, a)
 *	{
 *		... a->size ...
 *	}
 *
 * The _MASK forms add the mask field (METHOD_ARGS_MASK).  Where methods
 * share one struct (a helper reads it), ARGS_DECLARE and METHOD_ARGS
 * declare it and ARGS_METHOD_OF / ARGS_FUNCTION_OF take its type T.
 * Where they take different subsets of one struct's fields (PD.reg_mr
 * and reg_mr_iova, CMID.connect and accept), the struct is written out
 * and each method's ArgSpec list names its ARG_* entries.
 */
#define ARGS_FN_(link, fn, self, T, var, check, parent)                 \
	static PyObject *fn##_impl(PyObject *self, T *var);             \
	link PyObject *fn(PyObject *self, PyObject *args, PyObject *kw) \
	{                                                               \
		T var;                                                  \
		check;                                                  \
		if (args_parse(&fn##_args, parent, args, kw, &var) < 0) \
			return NULL;                                    \
		return fn##_impl(self, &var);                           \
	}                                                               \
	static PyObject *fn##_impl(PyObject *self, T *var)
#define ARGS_METHOD_OF(link, fn, self, T, var) \
	ARGS_FN_(link, fn, self, T, var, HANDLE_CHECK(self), self)
#define ARGS_FUNCTION_OF(link, fn, mod, T, var) \
	ARGS_FN_(link, fn, mod, T, var, (void)0, NULL)
#define ARGS_METHOD(link, fn, qualname_, LIST, self, var) \
	ARGS_DECLARE(fn, LIST);                           \
	METHOD_ARGS(fn, qualname_, fn##_params);          \
	ARGS_METHOD_OF(link, fn, self, struct fn##_args, var)
#define ARGS_FUNCTION(link, fn, qualname_, LIST, mod, var) \
	ARGS_DECLARE(fn, LIST);                            \
	METHOD_ARGS(fn, qualname_, fn##_params);           \
	ARGS_FUNCTION_OF(link, fn, mod, struct fn##_args, var)
#define ARGS_METHOD_MASK(link, fn, qualname_, LIST, self, var) \
	ARGS_DECLARE_MASK(fn, LIST);                           \
	METHOD_ARGS_MASK(fn, qualname_, fn##_params,           \
			 offsetof(struct fn##_args, mask));    \
	ARGS_METHOD_OF(link, fn, self, struct fn##_args, var)
#define ARGS_FUNCTION_MASK(link, fn, qualname_, LIST, mod, var) \
	ARGS_DECLARE_MASK(fn, LIST);                            \
	METHOD_ARGS_MASK(fn, qualname_, fn##_params,            \
			 offsetof(struct fn##_args, mask));     \
	ARGS_FUNCTION_OF(link, fn, mod, struct fn##_args, var)

/* The messages of the kinds of bad argument, for the few methods that
 * still parse by hand: "name must be an MR[ or None], not <type>";
 * "name belongs to another Context" (or PD).  NULL / -1 with the error
 * set, as the caller returns. */
int arg_type_error(const char *name, const char *what, int none_ok,
		   PyObject *got);
/* The same with a hint in parentheses (or NULL). */
int arg_type_error_hint(const char *name, const char *what, int none_ok,
			PyObject *got, const char *hint);
int arg_other_parent_error(const char *name, const char *parent);
/* o.<name> of a record argument: a new reference, or NULL with
 * "<arg> must be a <record>, not T (it has no attribute '<name>')"
 * where o lacks it (any other error as raised). */
PyObject *attr_required(PyObject *o, const char *name, const char *arg,
			const char *record);

/* {qualname: (param, ...)}: each param a dict of its declaration (name,
 * kind, optional, kw_only, pos_only, none_ok, lo, hi, default, cls,
 * parent). */
PyObject *args_specs(void);

#endif
