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
#include "efa/efa.h"

struct efa_api EFA;

/* clang-format off */
#define EFA_SYM(name, node, since, ret, params) \
	{ "efadv_" #name, offsetof(struct efa_api, name), 0 },
static const LibSym efa_syms[] = {
	EFA_SYMBOLS(EFA_SYM)
	{ NULL, 0, 0 }
};
#undef EFA_SYM
/* clang-format on */

static LazyLib efa_lazy = LAZY_LIB(EFA, .env = "IBVERBS_LIBEFA",
				   .file = "libefa.so.1",
				   .user = "the EFA direct verbs (ibverbs.efa)",
				   .pkg = "libefa", .deb = "ibverbs-providers",
				   .rpm = "libibverbs", .syms = efa_syms);

int efa_load(void)
{
	return lazy_load(&efa_lazy);
}

METHOD_DOC(efa_mod_libefa_status,
	   "(True, the library's path) or (False, why libefa.so.1 cannot be\n"
	   "loaded).  Loads it (``dlopen``, once); calls no verb.");

/* _efa_libefa_status() -> (True, path) or (False, why) */
PyObject *efa_mod_libefa_status(PyObject *mod, PyObject *unused)
{
	return lazy_status(&efa_lazy);
}
