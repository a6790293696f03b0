/*
 * cq/cq.h - what the CQ files share beyond ibverbs.h: the objects, the
 * poll storage (cq.c), the WCEx record that cq_ex.c builds and wc_ex.c
 * reads; and what other files use of them: the type specs (core/module.c),
 * the factories of Context (device/context.c), the WC conversions
 * (qp/ah.c).
 */
#ifndef IBVERBS_CQ_CQ_H
#define IBVERBS_CQ_CQ_H

#include "ibverbs.h"

typedef struct {
	Handle h; /* obj: struct ibv_comp_channel *; parent: Context */
} CompChannelObject;

/* CQ.poll_into's arrays (cq.c). */
struct cq_into;

typedef struct {
	Handle h; /* obj: struct ibv_cq *; parent: Context */
	PyObject *channel; /* CompChannelObject or NULL (uses it) */
	unsigned int events_unacked; /* CQ events got, not yet acked */
	struct ibv_wc *wcs; /* preallocated poll storage */
	int wcs_len;
	int user_owned; /* handed to mlx5.init_obj: the poll paths refuse */
	struct cq_into *into; /* poll_into's arrays (PyMem), or NULL */
} CQObject;

/* cq.c, poll_into for CQ and CQEx: read the keywords (the arrays, each
 * held by c until others are given, and num_entries) into c's columns;
 * *n the most completions to reap (num_entries, the shortest array),
 * *given (or NULL) a bit 1 << k per field k given (wr_id, status,
 * opcode, byte_len, imm_data).  0, or -1 with TypeError/ValueError. */
int cq_into_begin(CQObject *c, PyObject *args, PyObject *kw, long *n,
		  unsigned int *given);
/* Write n completions into the columns cq_into_begin read: completion i
 * is the struct ibv_wc at first + i * stride bytes. */
void cq_into_store(const CQObject *c, const struct ibv_wc *first, size_t stride,
		   int n);

/* The docstring of poll_into from Args to the start of its ValueError,
 * for both types. */
#define CQ_POLL_INTO_DOC_ARGS                                               \
	"Args:\n"                                                           \
	"    wr_id: the wr_ids, or None.\n"                                 \
	"    status: the WCStatus values, or None.\n"                       \
	"    opcode: the WCOpcode values, or None.\n"                       \
	"    byte_len: the byte counts, or None.\n"                         \
	"    imm_data: the immediate data in host order (0 where the\n"     \
	"        completion carries none), or None.\n"                      \
	"    num_entries: the most completions to reap.\n"                  \
	"\n"                                                                \
	"Returns:\n"                                                        \
	"    How many completions were reaped (0 when none is ready).\n"    \
	"\n"                                                                \
	"Raises:\n"                                                         \
	"    TypeError: positional arguments, no array, an array that is\n" \
	"        not one of integers.\n"                                    \
	"    ValueError: an array read-only, not 1-D or strided, or of\n"

/* cq.c: 0, or -1 with ValueError when the CQ self is its user's
 * (mlx5.init_obj): CQ.poll/poll_count and CQEx's poll paths ask. */
int cq_check_polled_here(PyObject *self);

extern PyType_Spec CompChannel_spec; /* channel.c */
extern PyType_Spec CQ_spec; /* cq.c */
extern PyType_Spec CQEx_spec; /* cq_ex.c; base: CQ */
extern PyType_Spec WC_spec; /* wc.c */
extern PyType_Spec WCEx_spec; /* wc_ex.c; base: WC */

/* The factories of Context, each beside its type. */
METHOD_DECL_NOARGS(context_create_comp_channel); /* channel.c */
METHOD_DECL(context_create_cq); /* cq.c */
METHOD_DECL(context_create_cq_ex); /* cq_ex.c */

/* cq_ex.c: Context.create_cq_ex's body, for it and for efa/ (a CQEx
 * subclass made by a provider library's call): init_attr (a
 * CQInitAttrEx) parsed into a, then make(ctx, a, arg) (NULL:
 * ibv_create_cq_ex), which returns NULL with errno, or with a Python
 * exception set; verb names it in errors; an object of type (CQEx or a
 * subclass) over the result. */
typedef struct ibv_cq_ex *(*cqex_make_fn)(struct ibv_context *ctx,
					  struct ibv_cq_init_attr_ex *a,
					  void *arg);
PyObject *cqex_create(PyObject *ctx, PyObject *init_attr, PyTypeObject *type,
		      const char *verb, cqex_make_fn make, void *arg);
/* cq_ex.c: the open start_poll() session's current entry of the CQEx
 * self, with `need` (a wc_flags bit, or 0) asked for at creation; NULL
 * with ValueError (or VerbsError EBADF) set. */
struct ibv_cq_ex *cqex_entry(PyObject *self, const char *what, uint64_t need);

/* wc.c: a new WC object holding a copy of *wc. */
PyObject *wc_new(const struct ibv_wc *wc);
/* wc.c: *out = the struct ibv_wc a WC (or WCEx) holds, field for field;
 * TypeError naming "what" for anything else.  0 or -1. */
int wc_to_c(PyObject *o, const char *what, struct ibv_wc *out);

/* CQ.poll()/CQEx.poll(): a list of build(elem) for the first n elements
 * (size bytes each) of a CQ's poll storage *store, which is taken from
 * the CQ for the loop and given back after it.  NULL on an error. */
PyObject *list_from_store(void **store, int *store_len, size_t size, int n,
			  PyObject *(*build)(const void *elem));

/* CQ.resize(cqe)'s arguments, declared for CQEx.resize too, and the
 * resize itself (CQEx.resize refuses in a session first). */
struct cq_resize_args {
	int cqe;
};
extern const ArgSpec cq_resize_params[];
/* The docstring of resize up to the rest of its Raises, for both types. */
#define CQ_RESIZE_DOC_ARGS                                       \
	"Wraps ``ibv_resize_cq`` (man page ibv_resize_cq(3)).\n" \
	"\n"                                                     \
	"Args:\n"                                                \
	"    cqe: the entries it must hold, 1 or more.\n"        \
	"\n"                                                     \
	"Raises:\n"                                              \
	"    TypeError: cqe is not an int.\n"
/* A CQ's destroy (CQ and CQEx): acks the events got, then destroys. */
int cq_destroy(Handle *h);
PyObject *cq_resize_to(PyObject *self, int cqe);

/*
 * The fields of an extended completion, once: CQEX_FIELDS(FIELD) calls
 * FIELD(field, reader, need, needs, when, slot, conv, doc) for each, in the
 * order CQEx.poll() reads them (wc_flags before imm_data, which it
 * selects): those of struct ibv_wc (CQEX_WC_FIELDS), then those a WCEx
 * adds (CQEX_EXT_FIELDS).  From it come cq_ex.c's read_entry (poll()),
 * its read_<field>() methods and wc_ex.c's WCEx attributes.
 *   field  the provider's op read_<field> and CQEx's method
 *          read_<field>();
 *   reader its ibv_wc_read_<field> (verbs.h);
 *   need   the CreateCQWCFlags bit (IBV_WC_EX_WITH_*) the CQEx must
 *          have been created with, 0 for none; needs: the same for the
 *          docstrings, NEEDS("<its CreateCQWCFlags name>") or NEEDS_NONE
 *          (each file that expands it defines both);
 *   when   ALL: read from a failed entry too; OK: from a successful one
 *          only (as with ibv_poll_cq, a failed entry has nothing else
 *          valid);
 *   slot   where poll()'s WCEx keeps it: WC, the struct ibv_wc field of
 *          that name; IMM, imm_data or invalidated_rkey as the entry's
 *          wc_flags say; EXT, the struct wc_ex field of that name, a WCEx
 *          attribute that reads None unless asked for;
 *   conv   how read_<field>() returns it: U32, U64, IMM (host order) or
 *          OPCODE (a WCOpcode);
 *   doc    read_<field>()'s first line (and the WCEx attribute's).
 * read_invalidated_rkey() (the op of imm_data) and read_tm_info() (a
 * struct, never in a WCEx) are written out in cq_ex.c.
 */
/* clang-format off */
#define CQEX_WC_FIELDS(FIELD)                                                  \
	FIELD(vendor_err, ibv_wc_read_vendor_err,                              \
	  0, NEEDS_NONE,                                                       \
	  ALL, WC, U32, "The current entry's vendor error syndrome.")          \
	FIELD(qp_num, ibv_wc_read_qp_num,                                      \
	  IBV_WC_EX_WITH_QP_NUM, NEEDS("QP_NUM"),                              \
	  ALL, WC, U32, "The number of the entry's local QP.")                 \
	FIELD(opcode, ibv_wc_read_opcode,                                      \
	  0, NEEDS_NONE,                                                       \
	  OK, WC, OPCODE, "The current entry's opcode (a ``WCOpcode``).")      \
	FIELD(wc_flags, ibv_wc_read_wc_flags,                                  \
	  0, NEEDS_NONE,                                                       \
	  OK, WC, U32, "The entry's ``WCFlags`` (GRH, WITH_IMM, ...).")        \
	FIELD(byte_len, ibv_wc_read_byte_len,                                  \
	  IBV_WC_EX_WITH_BYTE_LEN, NEEDS("BYTE_LEN"),                          \
	  OK, WC, U32, "Bytes the current entry received.")                    \
	FIELD(imm_data, ibv_wc_read_imm_data,                                  \
	  IBV_WC_EX_WITH_IMM, NEEDS("IMM"),                                    \
	  OK, IMM, IMM, "The entry's immediate data, in host order.")          \
	FIELD(src_qp, ibv_wc_read_src_qp,                                      \
	  IBV_WC_EX_WITH_SRC_QP, NEEDS("SRC_QP"),                              \
	  OK, WC, U32, "The remote QP number (UD receives).")                  \
	FIELD(slid, ibv_wc_read_slid,                                          \
	  IBV_WC_EX_WITH_SLID, NEEDS("SLID"),                                  \
	  OK, WC, U32, "The source LID (UD receives).")                        \
	FIELD(sl, ibv_wc_read_sl,                                              \
	  IBV_WC_EX_WITH_SL, NEEDS("SL"),                                      \
	  OK, WC, U32, "The service level (UD receives).")                     \
	FIELD(dlid_path_bits, ibv_wc_read_dlid_path_bits,                      \
	  IBV_WC_EX_WITH_DLID_PATH_BITS, NEEDS("DLID_PATH_BITS"),              \
	  OK, WC, U32, "The destination LID path bits.")
#define CQEX_EXT_FIELDS(FIELD)                                                 \
	FIELD(completion_ts, ibv_wc_read_completion_ts,                        \
	  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, NEEDS("COMPLETION_TIMESTAMP"),  \
	  OK, EXT, U64, "The time stamp, in device clock ticks.")              \
	FIELD(completion_wallclock_ns, ibv_wc_read_completion_wallclock_ns,    \
	  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,                       \
	  NEEDS("COMPLETION_TIMESTAMP_WALLCLOCK"),                             \
	  OK, EXT, U64, "The time stamp, in wall clock ns.")                   \
	FIELD(cvlan, ibv_wc_read_cvlan,                                        \
	  IBV_WC_EX_WITH_CVLAN, NEEDS("CVLAN"),                                \
	  OK, EXT, U32, "The customer VLAN of the entry.")                     \
	FIELD(flow_tag, ibv_wc_read_flow_tag,                                  \
	  IBV_WC_EX_WITH_FLOW_TAG, NEEDS("FLOW_TAG"),                          \
	  OK, EXT, U32, "The flow tag of the entry (flow steering).")
#define CQEX_FIELDS(FIELD) CQEX_WC_FIELDS(FIELD) CQEX_EXT_FIELDS(FIELD)
/* clang-format on */

/* A WCEx's fields: struct ibv_wc's, then the EXT ones of CQEX_FIELDS;
 * have: the need bits of the EXT fields read (the others read None). */
struct wc_ex {
	struct ibv_wc wc;
	uint64_t completion_ts;
	uint64_t completion_wallclock_ns;
	uint32_t flow_tag;
	uint16_t cvlan;
	uint16_t have; /* IBV_WC_EX_WITH_* bits, all below 1 << 16 */
};

/* Layout-compatible with wc.c's WCObject: the same head, then the ext. */
typedef struct {
	PyObject_HEAD
	struct wc_ex x;
} WCExObject;

#endif /* IBVERBS_CQ_CQ_H */
