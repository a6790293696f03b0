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
#include "mlx5/mlx5.h"
#include <string.h>

struct mlx5_api MLX5;

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

static LazyLib mlx5_lazy = LAZY_LIB(
	MLX5, .env = "IBVERBS_LIBMLX5", .file = "libmlx5.so.1",
	.user = "ibverbs.mlx5 (the mlx5 direct verbs)", .pkg = "libmlx5",
	.deb = "ibverbs-providers", .rpm = "libibverbs", .syms = mlx5_syms);

int mlx5_load(void)
{
	return lazy_load(&mlx5_lazy);
}

const char mlx5_mod_status__doc__[] = PyDoc_STR(
	"(True, the library's path) or (False, why libmlx5.so.1 cannot be\n"
	"loaded).  Loads it (``dlopen``, once); calls no verb.");

/* _mlx5_status() -> (True, path) or (False, why) */
PyObject *mlx5_mod_status(PyObject *mod, PyObject *unused)
{
	return lazy_status(&mlx5_lazy);
}
