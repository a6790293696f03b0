/*
 * faildestroy.c - test-only: ibv_dereg_mr / ibv_destroy_qp that fail on
 * demand, in a libibverbs stand-in that ibverbs loads through
 * IBVERBS_LIBIBVERBS.  The stand-in is linked against the real
 * libibverbs, so dlsym() on it finds these two and every other verb in
 * the real library.
 *
 * While $FAILDESTROY is set (read at each call), the two verbs return
 * EBUSY without doing anything: the object stays alive, as after a real
 * refused destroy.  test_rel_faults.py uses it to see what a failed
 * destroy in a deallocator does.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

struct ibv_mr;
struct ibv_qp;

static void *real(const char *name)
{
	void *lib = dlopen(SHIM_REAL_LIB, RTLD_NOW | RTLD_NOLOAD);

	return lib ? dlsym(lib, name) : NULL;
}

__attribute__((visibility("default"))) int ibv_dereg_mr(struct ibv_mr *mr)
{
	static int (*fn)(struct ibv_mr *);

	if (getenv("FAILDESTROY"))
		return EBUSY;
	if (fn == NULL)
		fn = (int (*)(struct ibv_mr *))real("ibv_dereg_mr");
	return fn ? fn(mr) : ENOSYS;
}

__attribute__((visibility("default"))) int ibv_destroy_qp(struct ibv_qp *qp)
{
	static int (*fn)(struct ibv_qp *);

	if (getenv("FAILDESTROY"))
		return EBUSY;
	if (fn == NULL)
		fn = (int (*)(struct ibv_qp *))real("ibv_destroy_qp");
	return fn ? fn(qp) : ENOSYS;
}
