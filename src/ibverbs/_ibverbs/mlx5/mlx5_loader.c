/*
 * mlx5_loader.c - the lazy loader of libmlx5.so.1 and _mlx5_status().
 *
 * libmlx5 is dlopened on the first mlx5 call, never at import: the file
 * the mlx5 provider plugin itself links to (Debian's ibverbs-providers
 * installs it on every machine), never a private copy, for its provider
 * checks compare the plugin's op tables.  $IBVERBS_LIBMLX5 (test-only)
 * names another file.  Every symbol is optional (MLX5_NEED raises
 * EOPNOTSUPP naming it and its release).  The dlopen and dlsym are
 * core/loader.c's lib_load().
 */
#define _GNU_SOURCE
#include "mlx5/mlx5.h"
#include <dlfcn.h>
#include <string.h>

struct mlx5_api MLX5;

static int mlx5_load_locked(void);

#ifdef Py_GIL_DISABLED
/* Free-threaded build: one thread loads, the others wait for it and then
 * see the whole table (MLX5.lib is stored last, with release order). */
static PyMutex mlx5_load_lock;

int mlx5_load(void)
{
	int rc;

	if (__atomic_load_n(&MLX5.lib, __ATOMIC_ACQUIRE) != NULL)
		return 0;
	PyMutex_Lock(&mlx5_load_lock);
	rc = mlx5_load_locked();
	PyMutex_Unlock(&mlx5_load_lock);
	return rc;
}
#else
int mlx5_load(void)
{
	return mlx5_load_locked();
}
#endif

/* clang-format off */
#define MLX5_SYM(field, sym, since) \
	{ #sym, offsetof(struct mlx5_api, field), 0 },
static const LibSym mlx5_syms[] = {
	MLX5_SYMBOLS(MLX5_SYM)
	{ NULL, 0, 0 }
};
#undef MLX5_SYM

#define MLX5_NAMES(field, sym, since) { #field, #sym, since },
static const struct {
	const char *field, *sym, *since;
} mlx5_names[] = {
	MLX5_SYMBOLS(MLX5_NAMES)
	{ NULL, NULL, NULL }
};
#undef MLX5_NAMES
/* clang-format on */

const char *mlx5_symbol(const char *field)
{
	int i;

	for (i = 0; mlx5_names[i].field != NULL; i++)
		if (strcmp(mlx5_names[i].field, field) == 0)
			return mlx5_names[i].sym;
	return "?";
}

const char *mlx5_since(const char *field)
{
	int i;

	for (i = 0; mlx5_names[i].field != NULL; i++)
		if (strcmp(mlx5_names[i].field, field) == 0)
			return mlx5_names[i].since;
	return "?";
}

static const LibSpec mlx5_lib = {
	.env = "IBVERBS_LIBMLX5",
	.file = "libmlx5.so.1",
	.user = "ibverbs.mlx5 (the mlx5 direct verbs)",
	.pkg = "libmlx5",
	.deb = "ibverbs-providers",
	.rpm = "libibverbs",
	.syms = mlx5_syms,
	.size = sizeof(MLX5),
};

static int mlx5_load_locked(void)
{
	const char *libname;
	Dl_info info;
	void *lib;
	void *any = NULL;

	if (MLX5.lib != NULL)
		return 0;
	lib = lib_load(&mlx5_lib, &MLX5, &libname);
	if (lib == NULL)
		return -1;
	snprintf(MLX5.path, sizeof(MLX5.path), "%s", libname);
#define MLX5_ANY(field, sym, since)    \
	if (any == NULL && MLX5.field) \
		any = (void *)MLX5.field;
	MLX5_SYMBOLS(MLX5_ANY)
#undef MLX5_ANY
	if (any != NULL && dladdr(any, &info) && info.dli_fname)
		snprintf(MLX5.path, sizeof(MLX5.path), "%s", info.dli_fname);
#ifdef Py_GIL_DISABLED
	__atomic_store_n(&MLX5.lib, lib, __ATOMIC_RELEASE);
#else
	MLX5.lib = lib;
#endif
	return 0;
}

const char mlx5_mod_status__doc__[] = PyDoc_STR(
	"(True, the library's path) or (False, why libmlx5.so.1 cannot be\n"
	"loaded).  Loads it (``dlopen``, once); calls no verb.");

/* _mlx5_status() -> (True, path) or (False, why) */
PyObject *mlx5_mod_status(PyObject *mod, PyObject *unused)
{
	PyObject *t, *v, *tb, *msg;

	if (mlx5_load() == 0)
		return Py_BuildValue("(Os)", Py_True, MLX5.path);
	PyErr_Fetch(&t, &v, &tb);
	msg = v ? PyObject_Str(v) : NULL;
	Py_XDECREF(t);
	Py_XDECREF(v);
	Py_XDECREF(tb);
	if (msg == NULL)
		return NULL;
	return Py_BuildValue("(ON)", Py_False, msg);
}
