/*
 * cm_loader.c - the lazy loader of librdmacm.so.1, has_rdmacm() and
 * _rdmacm_status().
 *
 * librdmacm is dlopened on the first CM call, never at import, so that
 * `import ibverbs` works where it is absent; the module still NEEDs only
 * libc.  $IBVERBS_LIBRDMACM (test-only) names another file.  The
 * loading is core/loader.c's lazy_load(), over lib_load().
 */
#include "cm/cm.h"

/* ------------------------------------------------------------------ */
/* The lazy loader                                                     */
/* ------------------------------------------------------------------ */

struct rdmacm_api CM;

/* clang-format off */
#define CM_SYM(field, sym) { #sym, offsetof(struct rdmacm_api, field), 1 },
static const LibSym cm_syms[] = {
	RDMACM_SYMBOLS(CM_SYM)
	{ NULL, 0, 0 }
};
#undef CM_SYM
/* clang-format on */

static LazyLib cm_lazy =
	LAZY_LIB(CM, .env = "IBVERBS_LIBRDMACM", .file = "librdmacm.so.1",
		 .user = "the RDMA connection manager", .pkg = "librdmacm",
		 .deb = "librdmacm1", .rpm = "librdmacm", .syms = cm_syms);

int cm_load(void)
{
	return lazy_load(&cm_lazy);
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
	return lazy_status(&cm_lazy);
}
