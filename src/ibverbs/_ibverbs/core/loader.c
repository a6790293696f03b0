/*
 * loader.c - resolve every exported verb with dlopen/dlsym at import;
 * lib_load() and the lazy loader of the libraries loaded on first use
 * (librdmacm, libefa, libmlx5: lazy_load, lazy_status).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ibv_api IBV;

/* The real file of the loaded library and its rdma-core version, read
 * from the soname's full file name (libibverbs.so.1.14.44.0 -> "44.0"). */
static int add_library_info(PyObject *module, const char *libname)
{
	Dl_info info;
	char real[PATH_MAX];
	const char *path = libname, *ver = NULL, *base;
	PyObject *found;
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
	Py_DECREF(found);
	return -1;
}

void *lib_load(const LibSpec *spec, void *api, const char **name)
{
	const char *libname = getenv(spec->env);
	const LibSym *s;
	void *lib;

	if (libname == NULL || libname[0] == '\0')
		libname = spec->file;
	*name = libname;
	lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *why = dlerror();

		PyErr_Format(PyExc_ImportError,
			     "%s needs %s (rdma-core's %s; install %s on "
			     "Debian/Ubuntu or %s on RHEL/Fedora): %s",
			     spec->user, libname, spec->pkg, spec->deb,
			     spec->rpm, why ? why : "dlopen failed");
		return NULL;
	}
	dlerror();
	for (s = spec->syms; s->name != NULL; s++) {
		void *f = dlsym(lib, s->name);

		if (f == NULL && s->required) {
			PyErr_Format(PyExc_ImportError,
				     "%s lacks the required symbol %s "
				     "(rdma-core too old or not %s; install "
				     "%s on Debian/Ubuntu or %s on "
				     "RHEL/Fedora)",
				     libname, s->name, spec->pkg, spec->deb,
				     spec->rpm);
			memset(api, 0, spec->size);
			dlclose(lib);
			return NULL;
		}
		memcpy((char *)api + s->offset, &f, sizeof(f));
	}
	return lib;
}

static int lazy_load_locked(LazyLib *l)
{
	const char *libname;
	const LibSym *s;
	Dl_info info;
	void *lib, *any = NULL;

	if (*l->lib != NULL)
		return 0;
	lib = lib_load(l->spec, l->api, &libname);
	if (lib == NULL)
		return -1;
	snprintf(l->path, l->path_size, "%s", libname);
	for (s = l->spec->syms; s->name != NULL && any == NULL; s++)
		memcpy(&any, (char *)l->api + s->offset, sizeof(any));
	if (any != NULL && dladdr(any, &info) && info.dli_fname)
		snprintf(l->path, l->path_size, "%s", info.dli_fname);
	__atomic_store_n(l->lib, lib, __ATOMIC_RELEASE);
	return 0;
}

int lazy_load(LazyLib *l)
{
	int rc;

	if (__atomic_load_n(l->lib, __ATOMIC_ACQUIRE) != NULL)
		return 0;
#ifdef Py_GIL_DISABLED
	PyMutex_Lock(&l->lock);
#endif
	rc = lazy_load_locked(l);
#ifdef Py_GIL_DISABLED
	PyMutex_Unlock(&l->lock);
#endif
	return rc;
}

int lib_need(void *fn, const char *lib, const char *sym, const char *since)
{
	if (fn != NULL)
		return 0;
	verbs_error_fmt(EOPNOTSUPP, sym,
			"%s is not exported by the loaded %s (needs %s or "
			"newer)",
			sym, lib, since);
	return -1;
}

PyObject *lazy_status(LazyLib *l)
{
	PyObject *t, *v, *tb, *msg;

	if (lazy_load(l) == 0)
		return Py_BuildValue("(Os)", Py_True, l->path);
	PyErr_Fetch(&t, &v, &tb);
	msg = v ? PyObject_Str(v) : NULL;
	Py_XDECREF(t);
	Py_XDECREF(v);
	Py_XDECREF(tb);
	if (msg == NULL)
		return NULL;
	return Py_BuildValue("(ON)", Py_False, msg);
}

/* clang-format off */
#define IBV_SYM_REQ(field, sym) { #sym, offsetof(struct ibv_api, field), 1 },
#define IBV_SYM_OPT(field, sym, since) \
	{ #sym, offsetof(struct ibv_api, field), 0 },
static const LibSym ibv_syms[] = {
	IBV_REQUIRED_SYMBOLS(IBV_SYM_REQ)
	IBV_OPTIONAL_SYMBOLS(IBV_SYM_OPT)
	{ NULL, 0, 0 }
};
#undef IBV_SYM_REQ
#undef IBV_SYM_OPT
/* clang-format on */

static const LibSpec ibv_lib =
	LIB_SPEC(IBV, .env = "IBVERBS_LIBIBVERBS", .file = "libibverbs.so.1",
		 .user = "ibverbs", .pkg = "libibverbs", .deb = "libibverbs1",
		 .rpm = "libibverbs", .syms = ibv_syms);

int ibv_loader_init(PyObject *module)
{
	const char *libname = getenv("IBVERBS_LIBIBVERBS");

	if (libname == NULL || libname[0] == '\0')
		libname = ibv_lib.file;
	if (IBV.lib == NULL) {
		IBV.lib = lib_load(&ibv_lib, &IBV, &libname);
		if (IBV.lib == NULL)
			return -1;
	}
	return add_library_info(module, libname);
}
