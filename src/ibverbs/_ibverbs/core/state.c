/*
 * state.c - the process-wide state every file shares: ST (the types, the
 * Python classes and the imported modules that module.c's exec fills in)
 * and the lazy import of the Python modules it caches.
 */
#include "ibverbs.h"

module_state ST;

PyObject *module_cached(PyObject **slot, const char *name)
{
#ifdef Py_GIL_DISABLED
	/* Two threads may import at once: the first to store wins, the
	 * other drops its reference (the same module object) and returns
	 * the winner's, which the state keeps until the module goes. */
	PyObject *mod = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *none = NULL;

	if (mod != NULL)
		return mod;
	mod = PyImport_ImportModule(name);
	if (mod == NULL)
		return NULL;
	if (!__atomic_compare_exchange_n(slot, &none, mod, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		Py_DECREF(mod);
		return none;
	}
	return mod;
#else
	if (*slot == NULL)
		*slot = PyImport_ImportModule(name);
	return *slot;
#endif
}
