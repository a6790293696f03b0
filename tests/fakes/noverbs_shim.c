/*
 * noverbs_shim.c - a stand-in libibverbs that lacks some verbs (test-only).
 *
 * Emulates an older rdma-core: every function of the real libibverbs is
 * exported by name, each a GNU indirect function whose resolver returns the
 * real library's function, so dlsym(shim, "ibv_x") yields the real ibv_x
 * itself: no trampolines, no prototypes, the shim never runs on the call
 * path.  The verbs named in $NOVERBS_HIDE (separated by spaces or commas)
 * resolve to NULL, which dlsym reports as absent: one build serves every
 * set of missing verbs.
 *
 * Built by tests/fakes/noverbs.py:
 *
 *   cc -shared -fPIC -DSHIM_REAL_LIB='"/path/libibverbs.so.1"' \
 *      -DSHIM_SYMBOLS='"syms.h"' -o libibverbs-noverbs.so noverbs_shim.c
 *
 * where syms.h holds one SHIM_FORWARD(name) line per exported function.
 * ibverbs loads the result through IBVERBS_LIBIBVERBS.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SHIM_REAL_LIB
#define SHIM_REAL_LIB "libibverbs.so.1"
#endif

static void *real_lib;

/* Opened once, when the shim is loaded: before anyone looks a symbol up. */
__attribute__((constructor)) static void shim_open_real(void)
{
	real_lib = dlopen(SHIM_REAL_LIB, RTLD_NOW | RTLD_LOCAL);
	if (real_lib == NULL)
		fprintf(stderr, "noverbs_shim: %s\n", dlerror());
}

__attribute__((destructor)) static void shim_close_real(void)
{
	if (real_lib != NULL)
		dlclose(real_lib);
}

typedef void (*shim_fn)(void);

/* Whether name is one of the words of $NOVERBS_HIDE. */
static int shim_hidden(const char *name)
{
	const char *p = getenv("NOVERBS_HIDE");
	size_t n = strlen(name);

	while (p != NULL && *p != '\0') {
		size_t len = strcspn(p, " ,");

		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		p += len;
		p += strspn(p, " ,");
	}
	return 0;
}

static shim_fn shim_resolve(const char *name)
{
	if (real_lib == NULL || shim_hidden(name))
		return NULL;
	return (shim_fn)dlsym(real_lib, name);
}

/* A function declared as an ifunc: its address is whatever the resolver
 * returns, the real function of the same name. */
#define SHIM_FORWARD(sym)                                 \
	static shim_fn shim_resolve_##sym(void)           \
	{                                                 \
		return shim_resolve(#sym);                \
	}                                                 \
	__attribute__((visibility("default"),             \
		       ifunc("shim_resolve_" #sym))) void \
	sym(void);

#include SHIM_SYMBOLS
