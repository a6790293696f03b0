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

/* What an ibv_import_* verb returned (NULL: failed, errno set) as a tp
 * of kind under parent; NULL with the error set, the message naming the
 * handle given ("pd_handle=5"). */
static PyObject *imported(void *obj, const char *verb, const char *field,
			  uint32_t handle, PyTypeObject *tp,
			  const HandleKind *kind, Handle *parent)
{
	if (obj == NULL)
		return verbs_error_fmt(errno_or(EINVAL), verb, "%s=%u", field,
				       (unsigned int)handle);
	return handle_adopt(tp, kind, parent, obj);
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

/* Context.import_pd(pd_handle) */
METHOD_DOC(context_import_pd,
	   "Import a PD of another process that shares this device file.\n"
	   "\n"
	   "``pd_handle`` is the exporter's ``PD.handle``; this Context is\n"
	   "usually ``Context.import_device()`` of its ``cmd_fd``. The PD\n"
	   "is a child of this Context with ``imported`` True: its\n"
	   "``close()`` wraps ``ibv_unimport_pd`` and leaves the kernel\n"
	   "object to the exporter, which must keep it until every\n"
	   "importer has closed. Never run on hardware here; checked\n"
	   "against the recording double (Soft-RoCE: EOPNOTSUPP).\n"
	   "\n"
	   "Wraps ``ibv_import_pd`` (man page ibv_import_pd(3)).\n"
	   "\n"
	   "Args:\n"
	   "    pd_handle: the PD's kernel handle (an int).\n"
	   "\n"
	   "Returns:\n"
	   "    The imported PD.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: pd_handle is not an int.\n"
	   "    ValueError: pd_handle is outside 0..2**32-1.\n"
	   "    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	   "        when libibverbs lacks the verb (rdma-core < 31) or the\n"
	   "        provider cannot; else the verb failed (``errno``).");

#define IMPORT_PD_ARGS(X, S) X(S, UINT, uint32_t, pd_handle)
ARGS_METHOD(extern, context_import_pd, "Context.import_pd", IMPORT_PD_ARGS,
	    self, a)
{
	struct ibv_pd *pd;

	IBV_REQUIRE_OPTIONAL(import_pd, ibv_import_pd, "rdma-core 31");
	errno = 0;
	pd = IBV.import_pd((struct ibv_context *)HANDLE(self)->obj,
			   a->pd_handle);
	return imported(pd, "ibv_import_pd", "pd_handle", a->pd_handle,
			ST.PD_type, &pd_imported_kind, HANDLE(self));
}

/* PD.import_mr(mr_handle): addr and length are the exporter's. */
METHOD_DOC(pd_import_mr,
	   "Import an MR of another process into this PD.\n"
	   "\n"
	   "``mr_handle`` is the exporter's ``MR.handle``; this PD is the\n"
	   "import of its PD (``Context.import_pd()``). The MR's addr,\n"
	   "length and keys are the exporter's; ``MR.imported`` is True\n"
	   "and its ``close()`` wraps ``ibv_unimport_mr`` (the exporter\n"
	   "still owns the registration and must keep it until every\n"
	   "importer has closed). Never run on hardware here; checked\n"
	   "against the recording double (Soft-RoCE: EOPNOTSUPP).\n"
	   "\n"
	   "Wraps ``ibv_import_mr`` (man page ibv_import_mr(3)).\n"
	   "\n"
	   "Args:\n"
	   "    mr_handle: the MR's kernel handle (an int).\n"
	   "\n"
	   "Returns:\n"
	   "    The imported MR.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: mr_handle is not an int.\n"
	   "    ValueError: mr_handle is outside 0..2**32-1.\n"
	   "    VerbsError: EBADF once the PD is closed; EOPNOTSUPP when\n"
	   "        libibverbs lacks the verb (rdma-core < 31) or the\n"
	   "        provider cannot; else the verb failed (``errno``).");

#define IMPORT_MR_ARGS(X, S) X(S, UINT, uint32_t, mr_handle)
ARGS_METHOD(extern, pd_import_mr, "PD.import_mr", IMPORT_MR_ARGS, self, a)
{
	struct ibv_mr *mr;
	MRObject *o;

	IBV_REQUIRE_OPTIONAL(import_mr, ibv_import_mr, "rdma-core 31");
	errno = 0;
	mr = IBV.import_mr((struct ibv_pd *)HANDLE(self)->obj, a->mr_handle);
	o = (MRObject *)imported(mr, "ibv_import_mr", "mr_handle", a->mr_handle,
				 ST.MR_type, &mr_imported_kind, HANDLE(self));
	if (o == NULL)
		return NULL;
	o->addr = (uint64_t)(uintptr_t)mr->addr;
	o->length = (uint64_t)mr->length;
	return (PyObject *)o;
}

/* Context.import_dm(dm_handle, length=0): the import carries no length,
 * so the caller says how much copy_to/copy_from may reach. */
METHOD_DOC(context_import_dm,
	   "Import device memory of another process.\n"
	   "\n"
	   "``dm_handle`` is the exporter's ``DM.handle``. The import\n"
	   "carries no size: ``length`` (the exporter's ``DM.length``)\n"
	   "bounds ``copy_to()``/``copy_from()`` and ``reg_dm_mr()``. The\n"
	   "DM's ``imported`` is True and its ``close()`` wraps\n"
	   "``ibv_unimport_dm``. Never run on hardware here; checked\n"
	   "against the recording double (Soft-RoCE: EOPNOTSUPP).\n"
	   "\n"
	   "Wraps ``ibv_import_dm`` (man page ibv_import_dm(3)).\n"
	   "\n"
	   "Args:\n"
	   "    dm_handle: the DM's kernel handle (an int).\n"
	   "    length: bytes of it this process may reach (0: none).\n"
	   "\n"
	   "Returns:\n"
	   "    The imported DM.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument is not an int.\n"
	   "    ValueError: a value is out of range.\n"
	   "    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	   "        when libibverbs lacks the verb (rdma-core < 35) or the\n"
	   "        provider cannot; else the verb failed (``errno``).");

#define IMPORT_DM_ARGS(X, S)            \
	X(S, UINT, uint32_t, dm_handle) \
	X(S, UINT, uint64_t, length, .flags = ARG_OPT)
ARGS_METHOD(extern, context_import_dm, "Context.import_dm", IMPORT_DM_ARGS,
	    self, a)
{
	struct ibv_dm *dm;
	DMObject *o;

	IBV_REQUIRE_OPTIONAL(import_dm, ibv_import_dm, "rdma-core 35");
	errno = 0;
	dm = IBV.import_dm((struct ibv_context *)HANDLE(self)->obj,
			   a->dm_handle);
	o = (DMObject *)imported(dm, "ibv_import_dm", "dm_handle", a->dm_handle,
				 ST.DM_type, &dm_imported_kind, HANDLE(self));
	if (o == NULL)
		return NULL;
	o->length = a->length;
	return (PyObject *)o;
}
