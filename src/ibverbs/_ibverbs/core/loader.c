/*
 * loader.c - resolve every exported verb with dlopen/dlsym at import.
 *
 * The module does not link libibverbs: its only NEEDED library is libc.
 * A missing library or required symbol is an ImportError that names it;
 * optional symbols (newer verbs) are NULL when absent and only the call
 * that needs one raises.  The environment variable IBVERBS_LIBIBVERBS
 * (test-only) names another library file to load instead.
 */
#define _GNU_SOURCE
#include "ibverbs.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct ibv_api IBV;

static const char DEFAULT_LIB[] = "libibverbs.so.1";

/* The real file of the loaded library and its rdma-core version, read
 * from the soname's full file name (libibverbs.so.1.14.44.0 -> "44.0"). */
static int add_library_info(PyObject *module, const char *libname)
{
	Dl_info info;
	char real[PATH_MAX];
	const char *path = libname, *ver = NULL, *base;
	PyObject *found, *missing;
	int rc;

	if (dladdr((void *)IBV.get_device_list, &info) && info.dli_fname) {
		path = info.dli_fname;
		if (realpath(info.dli_fname, real) != NULL)
			path = real;
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	/* libibverbs.so.1.<abi>.<rdma-core major>.<minor> */
	if (strncmp(base, "libibverbs.so.1.", 16) == 0) {
		const char *p = strchr(base + 16, '.');

		if (p != NULL)
			ver = p + 1;
	}
	if (PyModule_AddStringConstant(module, "library_path", path) < 0)
		return -1;
	if (ver != NULL)
		rc = PyModule_AddStringConstant(module, "library_version", ver);
	else {
		Py_INCREF(Py_None);
		rc = PyModule_AddObject(module, "library_version", Py_None);
		if (rc < 0)
			Py_DECREF(Py_None);
	}
	if (rc < 0)
		return -1;

	found = PyDict_New();
	missing = NULL;
	if (found == NULL)
		return -1;
#define IBV_REPORT_OPT(field, sym, since)                             \
	if (PyDict_SetItemString(found, #sym,                         \
				 IBV.field ? Py_True : Py_False) < 0) \
		goto fail;
	IBV_OPTIONAL_SYMBOLS(IBV_REPORT_OPT)
#undef IBV_REPORT_OPT
	if (PyModule_AddObject(module, "optional_verbs", found) < 0)
		goto fail;
	return 0;
fail:
	Py_XDECREF(missing);
	Py_DECREF(found);
	return -1;
}

int ibv_loader_init(PyObject *module)
{
	const char *libname = getenv("IBVERBS_LIBIBVERBS");
	void *lib;

	if (libname == NULL || libname[0] == '\0')
		libname = DEFAULT_LIB;
	if (IBV.lib == NULL) {
		lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
		if (lib == NULL) {
			const char *why = dlerror();

			PyErr_Format(
				PyExc_ImportError,
				"ibverbs needs %s (rdma-core's libibverbs; "
				"install libibverbs1 on Debian/Ubuntu or "
				"libibverbs on RHEL/Fedora): %s",
				libname, why ? why : "dlopen failed");
			return -1;
		}
		dlerror();
#define IBV_LOAD_REQ(field, sym)                                      \
	*(void **)(&IBV.field) = dlsym(lib, #sym);                    \
	if (IBV.field == NULL) {                                      \
		PyErr_Format(PyExc_ImportError,                       \
			     "%s lacks the required symbol %s "       \
			     "(rdma-core too old or not libibverbs)", \
			     libname, #sym);                          \
		memset(&IBV, 0, sizeof(IBV));                         \
		dlclose(lib);                                         \
		return -1;                                            \
	}
		IBV_REQUIRED_SYMBOLS(IBV_LOAD_REQ)
#undef IBV_LOAD_REQ
#define IBV_LOAD_OPT(field, sym, since) \
	*(void **)(&IBV.field) = dlsym(lib, #sym);
		IBV_OPTIONAL_SYMBOLS(IBV_LOAD_OPT)
#undef IBV_LOAD_OPT
		IBV.lib = lib;
	}
	return add_library_info(module, libname);
}
