/*
 * import.c - objects imported from another process that shares the
 * device file (Context.import_device): Context.import_pd(),
 * PD.import_mr() and Context.import_dm().
 *
 * An imported object is the exporter's kernel object seen through this
 * process's own struct: its close() calls ibv_unimport_* (no kernel call,
 * the object stays the exporter's), never dealloc/dereg/free.  Its
 * handle protocol is the usual one otherwise (a child of this process's
 * Context or PD, EBUSY while children are open, EBADF after close).  The
 * exporter must keep the object until every importer has closed it: the
 * kernel does not know of the import.  The providers of this machine
 * (Soft-RoCE) have no import ops (EOPNOTSUPP); the success path is
 * checked against the recording double only.
 */
#include "ibverbs.h"
#include "mem/mem.h"

static int pd_unimport(Handle *h)
{
	IBV.unimport_pd((struct ibv_pd *)h->obj);
	return 0;
}

static int mr_unimport(Handle *h)
{
	IBV.unimport_mr((struct ibv_mr *)h->obj);
	return 0;
}

static int dm_unimport(Handle *h)
{
	IBV.unimport_dm((struct ibv_dm *)h->obj);
	return 0;
}

const HandleKind pd_imported_kind = { "PD", "ibv_unimport_pd", pd_unimport,
				      NULL };
const HandleKind mr_imported_kind = { "MR", "ibv_unimport_mr", mr_unimport,
				      NULL };
const HandleKind dm_imported_kind = { "DM", "ibv_unimport_dm", dm_unimport,
				      NULL };

int handle_is_imported(Handle *h)
{
	return h->kind == &pd_imported_kind || h->kind == &mr_imported_kind ||
	       h->kind == &dm_imported_kind;
}

/* The kernel handle argument of an import verb. */
static int import_handle(PyObject *args, PyObject *kw, const char *fmt,
			 char **kwlist, uint32_t *out)
{
	PyObject *o;

	if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &o))
		return -1;
	return arg_u32(o, kwlist[0], out);
}

/* Context.import_pd(pd_handle) */
PyObject *pd_import(ContextObject *ctx, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "pd_handle", NULL };
	struct ibv_pd *pd;
	uint32_t handle;
	PDObject *o;

	if (import_handle(args, kw, "O:import_pd", kwlist, &handle) < 0)
		return NULL;
	IBV_REQUIRE_OPTIONAL(import_pd, ibv_import_pd, "rdma-core 31");
	HANDLE_CHECK(ctx);
	errno = 0;
	pd = IBV.import_pd((struct ibv_context *)HANDLE(ctx)->obj, handle);
	if (pd == NULL)
		return verbs_error_fmt(errno ? errno : EINVAL, "ibv_import_pd",
				       "pd_handle=%u", (unsigned int)handle);
	o = HANDLE_ALLOC(PDObject, ST.PD_type);
	if (o == NULL) {
		IBV.unimport_pd(pd);
		return NULL;
	}
	handle_init(HANDLE(o), &pd_imported_kind, HANDLE(ctx));
	HANDLE_SET_OBJ(o, pd);
	return (PyObject *)o;
}

/* PD.import_mr(mr_handle): addr and length are the exporter's. */
PyObject *mr_import(PDObject *pd, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "mr_handle", NULL };
	struct ibv_mr *mr;
	uint32_t handle;
	MRObject *o;

	if (import_handle(args, kw, "O:import_mr", kwlist, &handle) < 0)
		return NULL;
	IBV_REQUIRE_OPTIONAL(import_mr, ibv_import_mr, "rdma-core 31");
	HANDLE_CHECK(pd);
	errno = 0;
	mr = IBV.import_mr((struct ibv_pd *)HANDLE(pd)->obj, handle);
	if (mr == NULL)
		return verbs_error_fmt(errno ? errno : EINVAL, "ibv_import_mr",
				       "mr_handle=%u", (unsigned int)handle);
	o = HANDLE_ALLOC(MRObject, ST.MR_type);
	if (o == NULL) {
		IBV.unimport_mr(mr);
		return NULL;
	}
	handle_init(HANDLE(o), &mr_imported_kind, HANDLE(pd));
	HANDLE_SET_OBJ(o, mr);
	o->addr = (uint64_t)(uintptr_t)mr->addr;
	o->length = (uint64_t)mr->length;
	return (PyObject *)o;
}

/* Context.import_dm(dm_handle, length=0): the import carries no length,
 * so the caller says how much copy_to/copy_from may reach. */
PyObject *dm_import(ContextObject *ctx, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "dm_handle", "length", NULL };
	PyObject *h_o, *len_o = NULL;
	uint64_t length = 0;
	struct ibv_dm *dm;
	uint32_t handle;
	DMObject *o;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:import_dm", kwlist,
					 &h_o, &len_o))
		return NULL;
	if (arg_u32(h_o, "dm_handle", &handle) < 0 ||
	    (len_o != NULL && arg_u64(len_o, "length", &length) < 0))
		return NULL;
	IBV_REQUIRE_OPTIONAL(import_dm, ibv_import_dm, "rdma-core 35");
	HANDLE_CHECK(ctx);
	errno = 0;
	dm = IBV.import_dm((struct ibv_context *)HANDLE(ctx)->obj, handle);
	if (dm == NULL)
		return verbs_error_fmt(errno ? errno : EINVAL, "ibv_import_dm",
				       "dm_handle=%u", (unsigned int)handle);
	o = HANDLE_ALLOC(DMObject, ST.DM_type);
	if (o == NULL) {
		IBV.unimport_dm(dm);
		return NULL;
	}
	handle_init(HANDLE(o), &dm_imported_kind, HANDLE(ctx));
	HANDLE_SET_OBJ(o, dm);
	o->length = length;
	return (PyObject *)o;
}
