/*
 * efa_loader.c - the lazy loader of libefa.so.1 (the AWS EFA provider's
 * direct-verbs library) and _libefa_status().
 *
 * libefa is dlopened on the first efa call, never at import: the file
 * the provider plugin itself uses (libefa-rdmav*.so links to it), whose
 * provider checks compare ops-table pointers, so a private copy would
 * recognise no device.  $IBVERBS_LIBEFA (test-only) names another file.
 * Every symbol is optional: a missing one is VerbsError(EOPNOTSUPP)
 * naming it and the rdma-core release that added it.
 */
#define _GNU_SOURCE /* dladdr */
#include "efa/efa.h"
#include <dlfcn.h>
#include <stdio.h>

struct efa_api EFA;

static int efa_load_locked(void);

#ifdef Py_GIL_DISABLED
/* Free-threaded build: one thread loads, the others wait for it and then
 * see the whole table (EFA.lib is stored last, with release order). */
static PyMutex efa_load_lock;

int efa_load(void)
{
	int rc;

	if (__atomic_load_n(&EFA.lib, __ATOMIC_ACQUIRE) != NULL)
		return 0;
	PyMutex_Lock(&efa_load_lock);
	rc = efa_load_locked();
	PyMutex_Unlock(&efa_load_lock);
	return rc;
}
#else
int efa_load(void)
{
	return efa_load_locked();
}
#endif

/* clang-format off */
#define EFA_SYM(name, node, since, ret, params) \
	{ "efadv_" #name, offsetof(struct efa_api, name), 0 },
static const LibSym efa_syms[] = {
	EFA_SYMBOLS(EFA_SYM)
	{ NULL, 0, 0 }
};
#undef EFA_SYM
/* clang-format on */

static const LibSpec efa_lib = {
	.env = "IBVERBS_LIBEFA",
	.file = "libefa.so.1",
	.user = "the EFA direct verbs (ibverbs.efa)",
	.pkg = "libefa",
	.deb = "ibverbs-providers",
	.rpm = "libibverbs",
	.syms = efa_syms,
	.size = sizeof(EFA),
};

static int efa_load_locked(void)
{
	const char *libname;
	Dl_info info;
	void *lib, *any = NULL;

	if (EFA.lib != NULL)
		return 0;
	lib = lib_load(&efa_lib, &EFA, &libname);
	if (lib == NULL)
		return -1;
	snprintf(EFA.path, sizeof(EFA.path), "%s", libname);
#define EFA_ANY(name, node, since, ret, params) \
	if (any == NULL)                        \
		any = (void *)EFA.name;
	EFA_SYMBOLS(EFA_ANY)
#undef EFA_ANY
	if (any != NULL && dladdr(any, &info) && info.dli_fname)
		snprintf(EFA.path, sizeof(EFA.path), "%s", info.dli_fname);
#ifdef Py_GIL_DISABLED
	__atomic_store_n(&EFA.lib, lib, __ATOMIC_RELEASE);
#else
	EFA.lib = lib;
#endif
	return 0;
}

int efa_need(void *fn, const char *name, const char *since)
{
	if (fn != NULL)
		return 0;
	verbs_error_fmt(EOPNOTSUPP, name,
			"%s is not exported by the loaded libefa.so.1 (%s): "
			"needs %s or newer",
			name, EFA.path, since);
	return -1;
}

METHOD_DOC(efa_mod_libefa_status,
	   "(True, the library's path) or (False, why libefa.so.1 cannot be\n"
	   "loaded).  Loads it (``dlopen``, once); calls no verb.");

/* _efa_libefa_status() -> (True, path) or (False, why) */
PyObject *efa_mod_libefa_status(PyObject *mod, PyObject *unused)
{
	PyObject *t, *v, *tb, *msg;

	if (efa_load() == 0)
		return Py_BuildValue("(Os)", Py_True, EFA.path);
	PyErr_Fetch(&t, &v, &tb);
	msg = v ? PyObject_Str(v) : NULL;
	Py_XDECREF(t);
	Py_XDECREF(v);
	Py_XDECREF(tb);
	if (msg == NULL)
		return NULL;
	return Py_BuildValue("(ON)", Py_False, msg);
}
