/*
 * cm_loader.c - the lazy loader of librdmacm.so.1, has_rdmacm() and
 * _rdmacm_status().
 *
 * librdmacm is dlopened on the first CM call, never at import, so that
 * `import ibverbs` works where it is absent; the module still NEEDs only
 * libc.  $IBVERBS_LIBRDMACM (test-only) names another file.  The
 * dlopen and dlsym are core/loader.c's lib_load(), libibverbs' loader.
 */
#include "cm/cm.h"
#include <dlfcn.h>

/* ------------------------------------------------------------------ */
/* The lazy loader                                                     */
/* ------------------------------------------------------------------ */

struct rdmacm_api CM;

static int cm_load_locked(void);

#ifdef Py_GIL_DISABLED
/* Free-threaded build: one thread loads, the others wait for it and then
 * see the whole table (CM.lib is stored last, with release order). */
static PyMutex cm_load_lock;

int cm_load(void)
{
	int rc;

	if (__atomic_load_n(&CM.lib, __ATOMIC_ACQUIRE) != NULL)
		return 0;
	PyMutex_Lock(&cm_load_lock);
	rc = cm_load_locked();
	PyMutex_Unlock(&cm_load_lock);
	return rc;
}
#else
int cm_load(void)
{
	return cm_load_locked();
}
#endif

/* clang-format off */
#define CM_SYM(field, sym) { #sym, offsetof(struct rdmacm_api, field), 1 },
static const LibSym cm_syms[] = {
	RDMACM_SYMBOLS(CM_SYM)
	{ NULL, 0, 0 }
};
#undef CM_SYM
/* clang-format on */

static const LibSpec cm_lib = {
	.env = "IBVERBS_LIBRDMACM",
	.file = "librdmacm.so.1",
	.user = "the RDMA connection manager",
	.pkg = "librdmacm",
	.deb = "librdmacm1",
	.rpm = "librdmacm",
	.syms = cm_syms,
	.size = sizeof(CM),
};

static int cm_load_locked(void)
{
	const char *libname;
	Dl_info info;
	void *lib;

	if (CM.lib != NULL)
		return 0;
	lib = lib_load(&cm_lib, &CM, &libname);
	if (lib == NULL)
		return -1;
	snprintf(CM.path, sizeof(CM.path), "%s", libname);
	if (dladdr((void *)CM.create_id, &info) && info.dli_fname)
		snprintf(CM.path, sizeof(CM.path), "%s", info.dli_fname);
#ifdef Py_GIL_DISABLED
	__atomic_store_n(&CM.lib, lib, __ATOMIC_RELEASE);
#else
	CM.lib = lib;
#endif
	return 0;
}

const char cm_mod_has_rdmacm__doc__[] = PyDoc_STR(
	"Whether the connection manager can be used: loads librdmacm.so.1\n"
	"(``dlopen``, once) and checks it has every symbol CMID and\n"
	"CMListener need.  Calls no verb; raises nothing.");

/* has_rdmacm() -> bool */
PyObject *cm_mod_has_rdmacm(PyObject *mod, PyObject *unused)
{
	if (cm_load() == 0)
		Py_RETURN_TRUE;
	PyErr_Clear();
	Py_RETURN_FALSE;
}

const char cm_mod_rdmacm_status__doc__[] = PyDoc_STR(
	"(True, the library's path) or (False, why librdmacm cannot be\n"
	"loaded).  Calls no verb.");

/* _rdmacm_status() -> (True, path) or (False, why) */
PyObject *cm_mod_rdmacm_status(PyObject *mod, PyObject *unused)
{
	PyObject *t, *v, *tb, *msg;

	if (cm_load() == 0)
		return Py_BuildValue("(Os)", Py_True, CM.path);
	PyErr_Fetch(&t, &v, &tb);
	msg = v ? PyObject_Str(v) : NULL;
	Py_XDECREF(t);
	Py_XDECREF(v);
	Py_XDECREF(tb);
	if (msg == NULL)
		return NULL;
	return Py_BuildValue("(ON)", Py_False, msg);
}
