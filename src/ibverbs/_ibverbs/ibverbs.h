/*
 * ibverbs.h - shared declarations of the _ibverbs extension.
 *
 * The extension is written against the CPython Limited API (3.9 floor) and
 * never links libibverbs.  It includes the rdma-core headers for struct
 * layouts and the static inline data-path verbs (ibv_post_send,
 * ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq, ibv_post_srq_recv), which
 * jump straight through the provider's op table.  Every *exported* verb is
 * reached through the IBV table filled by loader.c with dlopen/dlsym.
 *
 * Rule: never call an exported ibv_* function by name.  Some header macros
 * (ibv_reg_mr, ibv_query_port, ibv_query_gid_ex, ...) expand to calls of
 * exported functions; call IBV.xxx instead.  tests/host/test_symbols.py
 * checks that the built module has no undefined ibv_* symbol.
 *
 * This header holds what every family of files shares: the symbol table
 * and its loader, the module state, errors, converters and declared
 * arguments, the method-table macros, the handle protocol, and the few
 * objects several families use.  Each family's own objects, type specs
 * and factories are in its header (qp/qp.h, mem/mem.h, ...), which
 * core/module.c includes to name every type.
 */
#ifndef IBVERBS_EXT_H
#define IBVERBS_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <infiniband/verbs.h>
#include "core/compat.h"
#include <stdint.h>
#include <errno.h>
#include <endian.h>

/* ------------------------------------------------------------------ */
/* The symbol table of libibverbs and the loader (core/loader.c)      */
/* ------------------------------------------------------------------ */

/* The ones libibverbs answers itself, without a provider op
 * (device/gid.c, core/lookups.c). */
#define IBV_REQUIRED_LOOKUPS(X)                   \
	X(node_type_str, ibv_node_type_str)       \
	X(port_state_str, ibv_port_state_str)     \
	X(rate_to_mult, ibv_rate_to_mult)         \
	X(mult_to_ibv_rate, mult_to_ibv_rate)     \
	X(rate_to_mbps, ibv_rate_to_mbps)         \
	X(mbps_to_ibv_rate, mbps_to_ibv_rate)     \
	X(get_pkey_index, ibv_get_pkey_index)     \
	X(get_device_index, ibv_get_device_index) \
	X(resolve_eth_l2_from_gid, ibv_resolve_eth_l2_from_gid)

/* X(field, symbol) - required verbs: a missing one is an ImportError. */
#define IBV_REQUIRED_SYMBOLS(X)                           \
	X(get_device_list, ibv_get_device_list)           \
	X(free_device_list, ibv_free_device_list)         \
	X(get_device_name, ibv_get_device_name)           \
	X(get_device_guid, ibv_get_device_guid)           \
	X(open_device, ibv_open_device)                   \
	X(close_device, ibv_close_device)                 \
	X(query_device, ibv_query_device)                 \
	X(query_port, ibv_query_port)                     \
	X(query_gid, ibv_query_gid)                       \
	X(query_pkey, ibv_query_pkey)                     \
	X(alloc_pd, ibv_alloc_pd)                         \
	X(dealloc_pd, ibv_dealloc_pd)                     \
	X(reg_mr, ibv_reg_mr)                             \
	X(dereg_mr, ibv_dereg_mr)                         \
	X(create_comp_channel, ibv_create_comp_channel)   \
	X(destroy_comp_channel, ibv_destroy_comp_channel) \
	X(create_cq, ibv_create_cq)                       \
	X(destroy_cq, ibv_destroy_cq)                     \
	X(resize_cq, ibv_resize_cq)                       \
	X(get_cq_event, ibv_get_cq_event)                 \
	X(ack_cq_events, ibv_ack_cq_events)               \
	X(create_qp, ibv_create_qp)                       \
	X(modify_qp, ibv_modify_qp)                       \
	X(query_qp, ibv_query_qp)                         \
	X(destroy_qp, ibv_destroy_qp)                     \
	X(create_srq, ibv_create_srq)                     \
	X(modify_srq, ibv_modify_srq)                     \
	X(query_srq, ibv_query_srq)                       \
	X(destroy_srq, ibv_destroy_srq)                   \
	X(create_ah, ibv_create_ah)                       \
	X(destroy_ah, ibv_destroy_ah)                     \
	X(get_async_event, ibv_get_async_event)           \
	X(ack_async_event, ibv_ack_async_event)           \
	X(fork_init, ibv_fork_init)                       \
	X(wc_status_str, ibv_wc_status_str)               \
	X(event_type_str, ibv_event_type_str)             \
	IBV_REQUIRED_LOOKUPS(X)

/* X(field, symbol, since) - optional verbs: NULL when absent; only the
 * call that needs one raises. */
#define IBV_OPTIONAL_SYMBOLS(X)                                               \
	X(reg_dmabuf_mr, ibv_reg_dmabuf_mr, "rdma-core 34")                   \
	X(reg_mr_iova2, ibv_reg_mr_iova2, "rdma-core 29")                     \
	X(reg_mr_iova, ibv_reg_mr_iova, "rdma-core 25")                       \
	X(query_gid_ex, _ibv_query_gid_ex, "rdma-core 32")                    \
	X(query_gid_table, _ibv_query_gid_table, "rdma-core 32")              \
	X(is_fork_initialized, ibv_is_fork_initialized, "rdma-core 35")       \
	X(qp_to_qp_ex, ibv_qp_to_qp_ex, "rdma-core 24")                       \
	X(attach_mcast, ibv_attach_mcast, "libibverbs 1.1")                   \
	X(detach_mcast, ibv_detach_mcast, "libibverbs 1.1")                   \
	X(init_ah_from_wc, ibv_init_ah_from_wc, "libibverbs 1.1")             \
	X(create_ah_from_wc, ibv_create_ah_from_wc, "libibverbs 1.1")         \
	X(query_qp_data_in_order, ibv_query_qp_data_in_order, "rdma-core 41") \
	IBV_ECE_SYMBOLS(X)                                                    \
	IBV_MEM_OPTIONAL_SYMBOLS(X)                                           \
	IBV_COMP_CNTR_SYMBOLS(X)

/* ECE (qp/rate_limit_ece.c): exported, not provider-op inlines. */
#define IBV_ECE_SYMBOLS(X)                      \
	X(set_ece, ibv_set_ece, "rdma-core 31") \
	X(query_ece, ibv_query_ece, "rdma-core 31")

/* Memory, import and device verbs (mem/, device/context.c's
 * import_device, device/clock_and_speed.c's query_port_speed). */
#define IBV_MEM_OPTIONAL_SYMBOLS(X)                                     \
	X(rereg_mr, ibv_rereg_mr, "rdma-core 12")                       \
	X(import_device, ibv_import_device, "rdma-core 31")             \
	X(import_pd, ibv_import_pd, "rdma-core 31")                     \
	X(unimport_pd, ibv_unimport_pd, "rdma-core 31")                 \
	X(import_mr, ibv_import_mr, "rdma-core 31")                     \
	X(unimport_mr, ibv_unimport_mr, "rdma-core 31")                 \
	X(import_dm, ibv_import_dm, "rdma-core 35")                     \
	X(unimport_dm, ibv_unimport_dm, "rdma-core 35")                 \
	X(reg_mr_ex, ibv_reg_mr_ex, "rdma-core 59")                     \
	X(alloc_dmah, ibv_alloc_dmah, "rdma-core 59")                   \
	X(dealloc_dmah, ibv_dealloc_dmah, "rdma-core 59")               \
	X(dm_export_dmabuf_fd, ibv_dm_export_dmabuf_fd, "rdma-core 62") \
	X(query_port_speed, ibv_query_port_speed, "rdma-core 62")       \
	X(alloc_buf, ibv_alloc_buf, "rdma-core 64")                     \
	X(free_buf, ibv_free_buf, "rdma-core 64")                       \
	X(reg_buf_mr, ibv_reg_buf_mr, "rdma-core 64")                   \
	X(export_buf_dmabuf_fd, ibv_export_buf_dmabuf_fd, "rdma-core 65")

/* Completion counters (counters/comp_cntr.c), exported since rdma-core
 * 65 (IBVERBS_1.18); compat.h declares them for older headers. */
#define IBV_COMP_CNTR_SYMBOLS(X)                                           \
	X(query_comp_cntr_caps, _ibv_query_comp_cntr_caps, "rdma-core 65") \
	X(create_comp_cntr, ibv_create_comp_cntr, "rdma-core 65")          \
	X(destroy_comp_cntr, ibv_destroy_comp_cntr, "rdma-core 65")        \
	X(set_comp_cntr, ibv_set_comp_cntr, "rdma-core 65")                \
	X(set_err_comp_cntr, ibv_set_err_comp_cntr, "rdma-core 65")        \
	X(inc_comp_cntr, ibv_inc_comp_cntr, "rdma-core 65")                \
	X(inc_err_comp_cntr, ibv_inc_err_comp_cntr, "rdma-core 65")        \
	X(read_comp_cntr, ibv_read_comp_cntr, "rdma-core 65")              \
	X(read_err_comp_cntr, ibv_read_err_comp_cntr, "rdma-core 65")      \
	X(qp_attach_comp_cntr, ibv_qp_attach_comp_cntr, "rdma-core 65")

struct ibv_api {
#define IBV_DECL_REQ(field, sym) __typeof__(sym) *field;
#define IBV_DECL_OPT(field, sym, since) __typeof__(sym) *field;
	IBV_REQUIRED_SYMBOLS(IBV_DECL_REQ)
	IBV_OPTIONAL_SYMBOLS(IBV_DECL_OPT)
#undef IBV_DECL_REQ
#undef IBV_DECL_OPT
	void *lib;
};

extern struct ibv_api IBV;

/* For a call that needs an optional verb: raise VerbsError(EOPNOTSUPP)
 * naming the symbol and the rdma-core release that added it. */
#define IBV_REQUIRE_OPTIONAL(field, sym, since)                              \
	do {                                                                 \
		if (lib_need((void *)IBV.field, "libibverbs", #sym, since) < \
		    0)                                                       \
			return NULL;                                         \
	} while (0)

/* Loads libibverbs.so.1 (or $IBVERBS_LIBIBVERBS, a test-only override).
 * Returns 0, or -1 with ImportError set. */
int ibv_loader_init(PyObject *module);

/* One library loader (loader.c) for libibverbs, librdmacm (cm/) and the
 * provider libraries (efa/, mlx5/): a library's symbols, each with its
 * slot in the table, and the library. */
typedef struct LibSym {
	const char *name; /* NULL ends the list */
	size_t offset; /* of the function pointer in the table */
	int required; /* a missing one is an ImportError; else NULL */
} LibSym;

typedef struct LibSpec {
	const char *env; /* names another file (test-only), if set */
	const char *file; /* "librdmacm.so.1" */
	const char *user; /* who needs it, for ImportError */
	const char *pkg; /* "librdmacm": rdma-core's name for it */
	const char *deb; /* the Debian/Ubuntu package: "librdmacm1" */
	const char *rpm; /* the RHEL/Fedora package: "librdmacm" */
	const LibSym *syms;
	size_t size; /* of the table, cleared on failure */
} LibSpec;

/* A LibSpec's initializer: the fields named (.env, .file, .user, .pkg,
 * .deb, .rpm, .syms) and the size of the table it fills. */
#define LIB_SPEC(table, ...)                       \
	{                                          \
		__VA_ARGS__, .size = sizeof(table) \
	}

/* dlopen spec's library ($env, else file) and fill the table at api by
 * its symbols.  The library's handle (*name: the file opened), or NULL
 * with ImportError naming the library, or the missing symbol, and the
 * package that provides it. */
void *lib_load(const LibSpec *spec, void *api, const char **name);

/* A library loaded on the first call that needs it (librdmacm, libefa,
 * libmlx5), never at import.  Its table's handle field (*lib) is set
 * last, so a non-NULL handle means a complete table; path gets the file
 * loaded (the real file, through dladdr of its first symbol found).  In
 * the free-threaded build one thread loads and the others wait. */
typedef struct LazyLib {
	const LibSpec *spec;
	void *api; /* the table lib_load fills */
	void **lib; /* the table's handle field */
	char *path; /* the table's path buffer */
	size_t path_size;
#ifdef Py_GIL_DISABLED
	PyMutex lock;
#endif
} LazyLib;

/* A LazyLib's initializer for table (a struct with the function
 * pointers, `void *lib` and `char path[]`), loaded by the LibSpec of the
 * fields named (LIB_SPEC's). */
#define LAZY_LIB(table, ...)                                                \
	{                                                                   \
		.spec = &(const LibSpec)LIB_SPEC(table, __VA_ARGS__),       \
		.api = &(table), .lib = &(table).lib, .path = (table).path, \
		.path_size = sizeof((table).path),                          \
	}

/* 0 when fn (a symbol looked up in a loaded library) is there; else -1
 * with VerbsError(EOPNOTSUPP) naming sym, the library (lib: its name or
 * path) and the release that added it (since).  For every optional
 * symbol: libibverbs's (IBV_REQUIRE_OPTIONAL), libefa's (EFA_NEED),
 * libmlx5's (MLX5_NEED). */
int lib_need(void *fn, const char *lib, const char *sym, const char *since);

/* 0 once the library is loaded, or -1 with ImportError (lib_load's). */
int lazy_load(LazyLib *l);
/* (True, the library's path) or (False, why it cannot be loaded): a
 * module's _status() function.  Loads it; raises nothing else. */
PyObject *lazy_status(LazyLib *l);

/* ------------------------------------------------------------------ */
/* Errors (core/errors.c): the one place codes become exceptions      */
/* ------------------------------------------------------------------ */

/* Raise VerbsError(err, strerror(err), operation=op).  Returns NULL. */
PyObject *verbs_error(int err, const char *op);
/* Same with a detail appended to the strerror text. */
PyObject *verbs_error_fmt(int err, const char *op, const char *fmt, ...);
/* The formats of verbs_error_fmt/_with are PyUnicode_FromFormat's, which
 * has no %llx before 3.12: a 64-bit value in hex goes in as the %s of
 * HEX64(v) ("0x..." in a buffer that lives to the end of the call). */
static inline const char *hex64(char *buf, size_t size, unsigned long long v)
{
	snprintf(buf, size, "0x%llx", v);
	return buf;
}
#define HEX64(v) hex64((char[19]){ 0 }, 19, (unsigned long long)(v))
/* errno, or fallback when it is 0: some providers fail a verb (NULL or
 * -1) without setting errno, and an error must never read "Success".
 * Read it before any cleanup call that may change errno. */
int errno_or(int fallback);
/* For verbs returning NULL / -1 and setting errno: verbs_error of
 * errno_or(EINVAL). */
PyObject *verbs_error_errno(const char *op);
/* As verbs_error_fmt, with each item of attrs (a dict) set on the
 * exception (CMEvent errors: event, status, private_data). */
PyObject *verbs_error_with(int err, const char *op, PyObject *attrs,
			   const char *fmt, ...);
/* VerbsError(EOPNOTSUPP) for verb: the provider left its op NULL. */
PyObject *provider_lacks(const char *verb);
/* Raise CompletionError for the WC record wc (borrowed): CQ.poll_count,
 * CQEx.poll_count and WC.raise_for_status.  Returns NULL. */
PyObject *completion_error(PyObject *wc);

/* ------------------------------------------------------------------ */
/* Converters (core/convert.c, core/attrs.c), declared arguments      */
/* ------------------------------------------------------------------ */

/* Declared arguments: one contract per method, one parser. */
#include "core/args.h"

/* "name must be in range lo..hi" (bounds from 2**16 on as 2**k-1 or
 * -2**k), ValueError; -1. */
int arg_range_error(const char *name, long long lo, unsigned long long hi);
/* Convert a Python int (or IntEnum) to a C integer with range checking:
 * raise ValueError/TypeError with the argument's name.  0 / -1. */
int arg_u64(PyObject *o, const char *name, uint64_t *out);
int arg_u32(PyObject *o, const char *name, uint32_t *out);
int arg_int(PyObject *o, const char *name, long min, long max, long *out);
/* The first n bytes of a bytes-like object (bytes, bytearray, or any
 * C-contiguous buffer: memoryview, array, numpy) into dst; TypeError for
 * another type, ValueError naming "name" when it holds fewer.  0 / -1. */
int arg_bytes_prefix(PyObject *o, const char *name, void *dst, size_t n);
/* A memoryview of o (*mv, a new reference): 1; 0 (*mv NULL, no error)
 * when o is no buffer, str and int included; -1 on another error. */
int buffer_view(PyObject *o, PyObject **mv);
/* Small helpers for building attribute objects. */
/* d[key] = o, stealing o (NULL: making it failed, -1).  0 / -1. */
int dict_set_steal(PyObject *d, const char *key, PyObject *o);
int dict_set_u64(PyObject *d, const char *key, uint64_t v);
int dict_set_int(PyObject *d, const char *key, long v);
int dict_set_str(PyObject *d, const char *key, const char *v);
/* Call cls(**kwargs) and steal kwargs. */
PyObject *make_record(PyObject *cls, PyObject *kwargs);
/* ibverbs._objects.<name>(**kwargs), stealing kwargs (NULL: making it
 * failed, NULL returned). */
PyObject *objects_record(const char *name, PyObject *kwargs);
/* o, or None for NULL, as a new reference: a getter's body for an
 * optional reference (QP.srq, CMID.qp, ...). */
PyObject *obj_or_none(PyObject *o);
/* getattr that tells "missing" (0, *out NULL) from an error (-1). */
int attr_optional(PyObject *o, const char *name, PyObject **out);
/* The same where None also means "not given": 1 with *out a new
 * reference, 0 (*out NULL) when missing or None, -1 on error. */
int attr_given(PyObject *o, const char *name, PyObject **out);
/* o.<name> as an unsigned integer of at most max, named
 * "<owner>.<name>" in the errors (the range as arguments word it): 1;
 * missing or None: *out = dflt, 0; -1 with TypeError or ValueError. */
int attr_uint(PyObject *o, const char *owner, const char *name, uint64_t max,
	      uint64_t dflt, uint64_t *out);

/* attrs.c: 16 raw bytes from a Gid, bytes-like or IPv6 text (what Gid()
 * accepts); None is the zero GID.  0 or -1. */
int gid_from_py(PyObject *o, union ibv_gid *gid);
/* attrs.c: ibv_ah_attr <-> AHAttr-like Python objects */
int ah_attr_from_py(PyObject *o, struct ibv_ah_attr *out);
PyObject *ah_attr_to_py(const struct ibv_ah_attr *a);
/* attrs.c: ibv_qp_cap -> QPCap */
PyObject *qp_cap_to_py(const struct ibv_qp_cap *cap);
/* attrs.c: ibv_qp_attr from QP.modify()'s keywords (struct field names;
 * "mask" is skipped; TypeError for an unknown name, ValueError out of
 * range), and to a dict of the fields that "mask" covers (not cap). */
int qp_attr_from_kw(PyObject *kw, struct ibv_qp_attr *attr);
PyObject *qp_attr_to_dict(const struct ibv_qp_attr *attr, int mask);
/* attrs.c: what the ibv_query_port macro does, through the dlsym table
 * (context.c's query_port, QP.to_rtr's default path MTU).  0 or errno. */
int port_query(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a);
/* attrs.c: ibverbs.enums.<cls>(v), or a plain int when v is not a member
 * (or the enums module is not importable yet).  New reference. */
PyObject *enum_from_int(const char *cls, long v);

/* ------------------------------------------------------------------ */
/* Method tables                                                      */
/* ------------------------------------------------------------------ */

/* A METH_VARARGS | METH_KEYWORDS function in a PyMethodDef table. */
#define KW (PyCFunction)(void (*)(void))

/* A method whose function and docstring live in another file than its
 * type's method table (a factory lives in its child's file): METHOD_DECL
 * in the family header, METHOD_DOC directly above the function, METHOD_KW
 * (keyword methods) or METHOD_NOARGS in the parent's table. */
#define METHOD_DECL(fn)                                             \
	PyObject *fn(PyObject *self, PyObject *args, PyObject *kw); \
	extern const char fn##__doc__[]
#define METHOD_DECL_NOARGS(fn)                          \
	PyObject *fn(PyObject *self, PyObject *unused); \
	extern const char fn##__doc__[]
/* A METH_O function: one positional argument. */
#define METHOD_DECL_O(fn)                            \
	PyObject *fn(PyObject *self, PyObject *arg); \
	extern const char fn##__doc__[]
#define METHOD_DOC(fn, text) const char fn##__doc__[] = PyDoc_STR(text)
/* A docstring's last Raises line where the method calls one verb on its
 * T (a type name): EBADF once the T is closed, else the verb's errno;
 * _AS adds how (", e.g. EINVAL for ...") inside the parenthesis. */
#define DOC_RAISES_VERB_AS(T, how)                                        \
	"    VerbsError: EBADF once the " T " is closed; else the verb\n" \
	"        failed (``errno``" how ")."
#define DOC_RAISES_VERB(T) DOC_RAISES_VERB_AS(T, "")
#define METHOD_KW(name, fn)                                            \
	{                                                              \
		name, KW fn, METH_VARARGS | METH_KEYWORDS, fn##__doc__ \
	}
#define METHOD_NOARGS(name, fn)                    \
	{                                          \
		name, fn, METH_NOARGS, fn##__doc__ \
	}

/* A METH_O entry: one positional argument. */
#define METHOD_O(name, fn)                    \
	{                                     \
		name, fn, METH_O, fn##__doc__ \
	}
/* ------------------------------------------------------------------ */
/* Module state and the module functions of core/                     */
/* ------------------------------------------------------------------ */

/*
 * One process-wide state.  The 3.9 stable ABI has no
 * PyType_GetModuleByDef, so methods of our types could not find a
 * per-module state; module.c refuses a second exec instead.
 */
typedef struct {
	/* Python-level classes from ibverbs/_objects.py */
	PyObject *VerbsError;
	PyObject *CompletionError;
	PyObject *DeviceAttr;
	PyObject *PortAttr;
	PyObject *Gid;
	PyObject *GidEntry;
	PyObject *QPCap;
	PyObject *AHAttr; /* QP.query()'s ah_attr (attrs.c) */
	/* Our heap types */
	PyTypeObject *Context_type;
	PyTypeObject *PD_type;
	PyTypeObject *MR_type;
	PyTypeObject *CompChannel_type;
	PyTypeObject *CQ_type;
	PyTypeObject *QP_type;
	PyTypeObject *SRQ_type;
	PyTypeObject *AH_type;
	PyTypeObject *SGE_type;
	PyTypeObject *SendWR_type;
	PyTypeObject *RecvWR_type;
	PyTypeObject *SendWRChain_type;
	PyTypeObject *RecvWRChain_type;
	PyTypeObject *WC_type;
	PyTypeObject *AsyncEvent_type;
	PyTypeObject *CMID_type;
	PyTypeObject *CMListener_type;
	PyTypeObject *CMEvent_type;
	/* Extended CQ, device memory, flow steering (cq_ex.c, dm.c, flow.c) */
	PyTypeObject *CQEx_type;
	PyTypeObject *WCEx_type;
	PyTypeObject *DM_type;
	PyTypeObject *Flow_type;
	PyTypeObject *MW_type;
	PyObject *MWBindInfo; /* _objects.MWBindInfo (mw.c) */
	PyTypeObject *QPEx_type; /* a subclass of QP (qp_ex.c) */
	/* XRC domains, work queues, RSS tables (xrc/, wq/) */
	PyTypeObject *XRCD_type;
	PyTypeObject *WQ_type;
	PyTypeObject *RWQIndTable_type;
	PyTypeObject *Buf_type; /* buf.c */
	PyTypeObject *DMAH_type; /* dmah.c */
	/* Domains, counters, flow actions (mem/domain.c, counters/,
	 * qp/flow_action.c) */
	PyTypeObject *TD_type;
	PyTypeObject *ParentDomain_type; /* a subclass of PD */
	PyTypeObject *Counters_type;
	PyTypeObject *CompCntr_type;
	/* efa/: ibverbs.efa's QP and CQ (subclasses of QPEx, CQEx) */
	PyTypeObject *EfaQP_type;
	PyTypeObject *EfaCQ_type;
	/* mlx5/: ibverbs.mlx5's QP and CQ (subclasses of QPEx, CQEx) */
	PyTypeObject *Mlx5QP_type;
	PyTypeObject *Mlx5CQ_type;
	PyTypeObject *FlowAction_type;
	/* mlx5 DEVX and mkeys (mlx5/devx.c, mlx5/mkey.c) */
	PyTypeObject *Mlx5DevxUmem_type;
	PyTypeObject *Mlx5DevxUAR_type;
	PyTypeObject *Mlx5DevxObj_type;
	PyTypeObject *Mlx5DevxEventChannel_type;
	PyTypeObject *Mlx5Mkey_type;
	/* Python modules the C code reads classes from, imported on first
	 * use (module_cached): ibverbs.enums and ibverbs.flow import this
	 * module, so they cannot be imported while it is made. */
	PyObject *mod_objects; /* ibverbs._objects */
	PyObject *mod_enums; /* ibverbs.enums */
	PyObject *mod_flow; /* ibverbs.flow */
	/* The batches from columns of integers (wr/batch.c,
	 * wr/recv_batch.c, wr/columns.c) */
	PyTypeObject *SendBatch_type;
	PyTypeObject *RecvBatch_type;
	PyObject *mod_tensor; /* ibverbs._tensor: int_column */
} module_state;

/* module.c: *slot, importing the module name into it on first use; a
 * borrowed reference, or NULL with ImportError set. */
PyObject *module_cached(PyObject **slot, const char *name);

extern module_state ST;

/* enums.c: a dict {class name: {member name: value}} from the headers */
PyObject *ibv_constants_dict(void);
PyObject *ibv_abi_constants(void);

/* lookups.c: the module functions libibverbs answers without a device
 * (core/module.c's table names them), each beside its docstring. */
METHOD_DECL_O(mod_node_type_str);
METHOD_DECL_O(mod_port_state_str);
METHOD_DECL_O(mod_rate_to_mult);
METHOD_DECL_O(mod_rate_to_mbps);
METHOD_DECL_O(mod_mult_to_ibv_rate);
METHOD_DECL_O(mod_mbps_to_ibv_rate);
METHOD_DECL_O(mod_flow_label_to_udp_sport);
METHOD_DECL(mod_is_qpt_supported);

/* ------------------------------------------------------------------ */
/* Handles (core/handle.c)                                            */
/* ------------------------------------------------------------------ */

/* The lifetime protocol of every wrapper of a kernel object: each type
 * whose file calls handle_init or handle_adopt. */

typedef struct Handle Handle;

typedef struct HandleKind {
	const char *name; /* "QP": used in messages */
	const char *destroy_verb; /* "ibv_destroy_qp" */
	/* Destroy h->obj.  Called with the GIL held, obj != NULL, no open
	 * children, no users, not busy.  Returns 0 or an errno; on error the
	 * object must stay fully usable. */
	int (*destroy)(Handle *h);
	/* Optional: after a successful destroy, drop type-specific
	 * references (owner, CQs, ...) and release "uses" of other handles. */
	void (*release)(Handle *h);
} HandleKind;

/* A kind whose destroy is one call, fn(h->obj), of the verb named verb
 * (fn: an IBV.* pointer or a static inline of verbs.h): defines the
 * static HandleKind kind and its destroy function, kind_destroy. */
#define HANDLE_KIND(kind, name, verb, fn, release) \
	static int kind##_destroy(Handle *h)       \
	{                                          \
		return fn(h->obj);                 \
	}                                          \
	static const HandleKind kind = { name, verb, kind##_destroy, release }

struct Handle {
	PyObject_HEAD
	void *obj; /* the verbs object; NULL once closed */
	const HandleKind *kind;
	Handle *parent; /* strong reference; NULL for Context */
	Handle *children; /* borrowed: first open child */
	Handle *sib_prev, *sib_next;
	int users; /* open handles that use this one
				      (QP -> CQ/SRQ, CQ -> CompChannel) */
	int busy; /* threads inside a GIL-free call */
#ifdef Py_GIL_DISABLED
	/* Free-threaded build: threads inside a method of this handle (or
	 * holding it as an argument), plus HANDLE_CLOSING while close()
	 * waits for them to leave (handle.c). */
	Py_ssize_t pins;
#endif
};

#define HANDLE(o) ((Handle *)(o))

/* Once, at module exec: the after-fork hook (handle.c).  0 or -1. */
int handle_module_init(PyObject *module);
/* Initialise a freshly allocated handle: set kind, take a strong
 * reference to parent and link into its list of children (into the
 * list of roots for a Context). Does not set obj (set it once the verb
 * succeeded). */
void handle_init(Handle *h, const HandleKind *kind, Handle *parent);
/* Move h from its parent's children to new_parent's (MR.rereg with
 * CHANGE_PD): takes a reference to new_parent, drops the old one. */
void handle_reparent(Handle *h, Handle *new_parent);
/* A new handle of tp (kind, child of parent) over obj, which the verb
 * just made; when allocating it fails, obj is destroyed with
 * kind->destroy on a handle that holds only obj (for kinds whose destroy
 * reads nothing else) and NULL returned. */
PyObject *handle_adopt(PyTypeObject *tp, const HandleKind *kind, Handle *parent,
		       void *obj);
/* Mark "user" as using "used" (used->users++); undone by handle_unuse. */
void handle_use(Handle *used);
void handle_unuse(Handle *used);
/* handle_unuse on the handle *used, if any, then Py_CLEAR(*used). */
void handle_unuse_clear(PyObject **used);
/* 0 when open; -1 with VerbsError(EBADF, "<kind> is closed") set. */
int handle_check(Handle *h);
#ifndef Py_GIL_DISABLED
#define HANDLE_CHECK(h)                          \
	do {                                     \
		if (handle_check(HANDLE(h)) < 0) \
			return NULL;             \
	} while (0)
#else
/* Free-threaded build: HANDLE_CHECK also pins h until the enclosing
 * function returns (a cleanup variable), and so does every handle_check
 * of an argument handle made in that time: close() on another thread
 * waits for the pins to go before it destroys (handle.c).  So it is a
 * declaration: write it as a statement of its own, at block level. */
typedef struct {
	int mark; /* depth of the thread's pin stack at entry; -1: none */
	void *stack; /* that stack (handle.c), when mark >= 0 */
} HandleScope;
int handle_scope_enter(Handle *h, HandleScope *scope);
void handle_scope_exit(HandleScope *scope);
#define HANDLE_CHECK(h) HANDLE_CHECK_(h, __COUNTER__)
#define HANDLE_CHECK_(h, n) HANDLE_CHECK__(h, n)
#define HANDLE_CHECK__(h, n)                                      \
	HandleScope handle_scope_##n                              \
		__attribute__((cleanup(handle_scope_exit)));      \
	if (handle_scope_enter(HANDLE(h), &handle_scope_##n) < 0) \
	return NULL
#endif
/* close(): idempotent. EBUSY (object left usable) while children, users
 * or busy threads exist. Returns 0 or -1 with an exception set. */
int handle_close(Handle *h);
/* For tp_dealloc/tp_clear: close ignoring errors (an error becomes an
 * unraisable warning), then unlink; does not drop the parent ref. */
void handle_close_quiet(Handle *h);
/* tp_traverse helper: visits type and parent. */
int handle_traverse(Handle *h, visitproc visit, void *arg);
/* tp_dealloc helper: untrack, close quietly, drop parent, free, decref
 * type.  Type-specific references must be cleared before calling. */
void handle_dealloc(Handle *h);
/* The two above as the slots of a type that holds nothing more. */
int handle_tp_traverse(PyObject *self, visitproc visit, void *arg);
void handle_tp_dealloc(PyObject *self);
/* The tp_dealloc of a GC type that is no handle and owns nothing beyond
 * what its tp_clear drops (SGE, CMEvent, AsyncEvent): untrack, the
 * type's tp_clear, free, decref type. */
void gc_tp_dealloc(PyObject *self);
/* Mark busy around a GIL-free call; HANDLE_IS_BUSY reads the mark and
 * HANDLE_IS_CLOSED the verbs pointer (atomic loads in the free-threaded
 * build, where other threads change them).  HANDLE_SET_OBJ: a factory's
 * store of the new verbs object into a handle that handle_init already
 * linked into the tree, where handle_find may read it (a release store
 * in the free-threaded build). */
#ifndef Py_GIL_DISABLED
#define HANDLE_BUSY_ENTER(h) (HANDLE(h)->busy++)
#define HANDLE_BUSY_EXIT(h) (HANDLE(h)->busy--)
#define HANDLE_IS_BUSY(h) (HANDLE(h)->busy != 0)
#define HANDLE_IS_CLOSED(h) (HANDLE(h)->obj == NULL)
#define HANDLE_SET_OBJ(h, o) (HANDLE(h)->obj = (o))
#else
#define HANDLE_BUSY_ENTER(h) \
	(__atomic_fetch_add(&HANDLE(h)->busy, 1, __ATOMIC_SEQ_CST))
#define HANDLE_BUSY_EXIT(h) \
	(__atomic_fetch_sub(&HANDLE(h)->busy, 1, __ATOMIC_SEQ_CST))
#define HANDLE_IS_BUSY(h) \
	(__atomic_load_n(&HANDLE(h)->busy, __ATOMIC_ACQUIRE) != 0)
#define HANDLE_IS_CLOSED(h) \
	(__atomic_load_n(&HANDLE(h)->obj, __ATOMIC_ACQUIRE) == NULL)
#define HANDLE_SET_OBJ(h, o) \
	__atomic_store_n(&HANDLE(h)->obj, (void *)(o), __ATOMIC_RELEASE)
#endif

/* A block that changes (or reads a pointer of) an object's own state which
 * methods on other threads also use (QP's multicast list, MR.rereg's new
 * translation): a critical section on o in the free-threaded build, a
 * plain block in the GIL build, whose GIL already serializes it.  Nothing
 * inside may release the GIL (a critical section is suspended then). */
#ifdef Py_GIL_DISABLED
#define OBJ_LOCKED_BEGIN(o) Py_BEGIN_CRITICAL_SECTION(o)
#define OBJ_LOCKED_END() Py_END_CRITICAL_SECTION()
#else
#define OBJ_LOCKED_BEGIN(o) {
#define OBJ_LOCKED_END() }
#endif

/* handle.c, for channel.c and event.c: wait with the GIL released (h marked
 * busy, EINTR runs signal handlers) until fd is readable, then re-check
 * with the GIL held so that the caller's read cannot block.  0 or -1
 * with an exception set. */
int fd_wait_readable(Handle *h, int fd);
int fd_is_nonblocking(int fd);
/* The open handle in root's subtree whose obj is obj, as a new
 * reference, or NULL. */
Handle *handle_find(Handle *root, const void *obj);

/* Common methods and getters, to put into every handle type. */
PyObject *handle_meth_close(PyObject *self, PyObject *unused);
PyObject *handle_meth_enter(PyObject *self, PyObject *unused);
PyObject *handle_meth_exit(PyObject *self, PyObject *args);
PyObject *handle_get_closed(PyObject *self, void *closure);
PyObject *handle_get_parent(PyObject *self, void *closure);
/* tp_new for types that Python code must not instantiate directly. */
PyObject *handle_no_new(PyTypeObject *type, PyObject *args, PyObject *kw);

/* Their docstrings (handle.c). */
extern const char handle_close__doc__[], handle_enter__doc__[],
	handle_exit__doc__[], handle_closed__doc__[];

/* clang-format cannot lay out macros that are initializers. */
/* clang-format off */
#define HANDLE_METHODS \
	{ "close", handle_meth_close, METH_NOARGS, handle_close__doc__ }, \
	{ "__enter__", handle_meth_enter, METH_NOARGS, handle_enter__doc__ }, \
	{ "__exit__", handle_meth_exit, METH_VARARGS, handle_exit__doc__ }

#define HANDLE_GETSETS \
	{ "closed", handle_get_closed, NULL, handle_closed__doc__, NULL }

/* The same, then the end of the table. */
#define HANDLE_METHODS_END HANDLE_METHODS, { NULL, NULL, 0, NULL }
#define HANDLE_GETSETS_END HANDLE_GETSETS, { NULL, NULL, NULL, NULL, NULL }

/* A handle type's PyType_Spec `spec` ("ibverbs._ibverbs." name, object
 * struct T, a GC type with `flags` added) and its slot table spec_slots:
 * no tp_new (Python code cannot instantiate it), then its doc, dealloc,
 * traverse, repr, methods and getsets.  HANDLE_TYPE_SPEC_IN names the
 * type in a public module instead ("ibverbs.mlx5", "DevxObj"): a provider
 * module's own types. */
#define HANDLE_TYPE_SPEC(spec, name, T, flags, doc, dealloc, traverse, \
			 repr, methods, getset) \
	HANDLE_TYPE_SPEC_IN(spec, "ibverbs._ibverbs", name, T, flags, doc, \
			    dealloc, traverse, repr, methods, getset)
#define HANDLE_TYPE_SPEC_IN(spec, module, name, T, flags, doc, dealloc, \
			    traverse, repr, methods, getset) \
	static PyType_Slot spec##_slots[] = { \
		{ Py_tp_doc, (void *)(doc) }, \
		{ Py_tp_new, handle_no_new }, \
		{ Py_tp_dealloc, (dealloc) }, \
		{ Py_tp_traverse, (traverse) }, \
		{ Py_tp_repr, (repr) }, \
		{ Py_tp_methods, (methods) }, \
		{ Py_tp_getset, (getset) }, \
		{ 0, NULL } \
	}; \
	PyType_Spec spec = { module "." name, sizeof(T), 0, \
			     Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | (flags), \
			     spec##_slots }
/* clang-format on */

/* Allocate a new, zeroed instance of a type; PyType_GenericAlloc already
 * tracks GC types.  Call handle_init() next. */
#define HANDLE_ALLOC(T, type) ((T *)PyType_GenericAlloc((type), 0))

/* ------------------------------------------------------------------ */
/* Objects several families use                                       */
/* ------------------------------------------------------------------ */

typedef struct {
	Handle h; /* obj: struct ibv_context * */
	PyObject *name; /* device name (str) */
	int async_fd_nonblock;
} ContextObject;

typedef struct {
	Handle h; /* obj: struct ibv_pd *; parent: Context */
} PDObject;

typedef struct {
	Handle h; /* obj: struct ibv_qp *; parent: PD */
	PyObject *send_cq; /* CQObject (used) */
	PyObject *recv_cq; /* CQObject (used) */
	PyObject *srq; /* SRQObject or NULL (used) */
	int qp_type;
	struct ibv_qp_cap cap; /* as returned by ibv_create_qp */
	int sq_sig_all;
	PyObject *cmid; /* the CMID whose QP this is, or NULL */
	int in_batch; /* QPEx (qp_ex.c): between wr_start and
		       * wr_complete/wr_abort; 0 on a plain QP */
	/* qp.c: the multicast groups attach_mcast joined and detach_mcast
	 * did not leave (PyMem array); each destroy leaves them first. */
	struct qp_mcast_group *mcast;
	int n_mcast;
	/* create_qp_ex (qp_ex.c): the XRCD of an XRC_RECV QP and the
	 * RWQIndTable of an RSS QP, used until destroy, or NULL. */
	PyObject *xrcd;
	PyObject *ind_tbl;
} QPObject;

#define QPP(self) ((struct ibv_qp *)HANDLE(self)->obj)
#define QPO(self) ((QPObject *)(self))

/* QP numbers and packet sequence numbers are 24-bit. */
#define QPN_MAX 0xffffffu
#define PSN_MAX 0xffffffu

#endif /* IBVERBS_EXT_H */
