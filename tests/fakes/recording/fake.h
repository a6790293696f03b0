/*
 * fake.h - what the recording double's files share (test-only).
 *
 * The double is one shared library built from every *.c file of this
 * folder (tests/fakes/recording.py compiles them as one unit, core.c
 * first, the rest in name order), loaded by ibverbs through
 * IBVERBS_LIBIBVERBS.  core.c holds the call log, failure injection, the
 * live-object counts and the control functions (fake_*); each other file
 * is one verb family's recorders.  README.md says how to add one.
 *
 * Because the files form one translation unit, a file's static names
 * must be unique: prefix them with the family (qp_..., mem_...).
 */
#ifndef FAKE_RECORDING_H
#define FAKE_RECORDING_H

#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A symbol the loader (dlsym) or the tests (ctypes) look up; everything
 * else is hidden (-fvisibility=hidden). */
#define FAKE_EXPORT __attribute__((visibility("default")))

/* Define an exported verb whose name rdma-core's header also defines as
 * a function-like macro (ibv_reg_mr, ibv_query_port, ...):
 *   struct ibv_mr *FAKE_VERB(ibv_reg_mr)(struct ibv_pd *pd, ...)
 * The parentheses stop the macro from expanding. */
#define FAKE_VERB(name) (name)

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

/* One log record, built on the caller's stack: fake_begin, then any
 * number of fake_add, then fake_end (which appends it to the log as one
 * line: "verb key=value key=value ...").  When recording is off
 * (fake_set_recording(0)) fake_add/fake_end do nothing. */
struct fake_rec {
	int on;
	int no_errno; /* a failure without errno was injected: fake_end
		       * leaves errno 0 */
	size_t len;
	char buf[16384];
	int truncated;
};

/* What fake_fail() arms for a failure without errno (recording.NO_ERRNO):
 * the verb fails the way its man page says, with errno 0, as some
 * providers do.  fake_begin returns it as the verb's err: a verb that
 * returns its errno then returns -1 (errno 0), one that sets errno sets
 * it through fake_set_errno (0), one that returns a negative errno
 * returns fake_neg_errno(err) (-1).  rdma_getaddrinfo answers -1 (errno
 * 0), its "see errno" code.  Not for "completion". */
#define FAKE_NO_ERRNO (-1)

/* errno = err, an armed errno; FAKE_NO_ERRNO: errno = 0. */
static inline void fake_set_errno(int err)
{
	errno = err == FAKE_NO_ERRNO ? 0 : err;
}

/* What a verb returning a negative errno answers for err. */
static inline int fake_neg_errno(int err)
{
	return err == FAKE_NO_ERRNO ? -1 : -err;
}

/* Start a record of the call `verb` (its name without the ibv_ prefix:
 * "alloc_pd", "post_send").  Returns the errno armed for this verb by
 * fake_fail() (the call must then fail with it, as the real verb would:
 * return it, or NULL/-1 with errno set), FAKE_NO_ERRNO, or 0. */
int fake_begin(struct fake_rec *r, const char *verb);
/* Append " " and printf(fmt, ...): one or more key=value fields.
 * Keys are the C names of the argument or struct field, with struct
 * paths ("attr.cap.max_send_wr", "wr[1].sg_list[0].lkey").  Values:
 * integers in decimal, pointers and masks as 0x... hex (use FAKE_PTR),
 * byte strings through fake_bytes, text through fake_str. */
void fake_add(struct fake_rec *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* key=b:<hex of the len bytes at p> */
void fake_bytes(struct fake_rec *r, const char *key, const void *p, size_t len);
/* key=s:<text, with spaces and '%' escaped as %20/%25> */
void fake_str(struct fake_rec *r, const char *key, const char *s);
/* Append the record to the log. */
void fake_end(struct fake_rec *r);

#define FAKE_PTR(p) ((unsigned long)(uintptr_t)(p))
/* The common fields, typed: FAKE_U(r, "attr.cqe", attr->cqe) */
#define FAKE_U(r, key, v) \
	fake_add((r), "%s=%llu", (key), (unsigned long long)(v))
#define FAKE_I(r, key, v) fake_add((r), "%s=%lld", (key), (long long)(v))
#define FAKE_X(r, key, v) \
	fake_add((r), "%s=0x%llx", (key), (unsigned long long)(v))
#define FAKE_P(r, key, p) fake_add((r), "%s=0x%lx", (key), FAKE_PTR(p))

/* A verb that only records and answers an injected errno or success:
 * most destroy/dealloc calls. */
int fake_record_simple(const char *verb, const char *key, const void *obj);

/* The errno (or other value) armed by fake_fail() for the name, consuming
 * one of its count; 0 when none.  fake_begin calls it for the verb. */
int fake_take_failure(const char *name);

/* Whether recording is on (a relaxed read: the data path checks it). */
int fake_recording(void);

/* While on (this thread), fake_begin neither logs nor fails: for the
 * libibverbs calls another double makes inside its own (cm.c). */
void fake_quiet(int on);

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

/* calloc(size) counted as a live object of `kind` ("pd", "qp"...), or
 * NULL with errno ENOMEM.  fake_free_obj(kind, p) frees and uncounts. */
void *fake_new_obj(const char *kind, size_t size);
/* The newest live object of kind (its struct ibv_*), or NULL. */
void *fake_last_obj(const char *kind);
void fake_free_obj(const char *kind, void *p);
/* What a create verb answers: when err (an armed or computed errno) is
 * set, NULL with errno = err, else fake_new_obj(kind, size).
 * fake_end_new is fake_end(r) and then this. */
void *fake_new_unless(int err, const char *kind, size_t size);
void *fake_end_new(struct fake_rec *r, int err, const char *kind, size_t size);
/* A destroy verb that only records "verb key=obj" and frees: the armed
 * errno (obj kept), or 0 with obj freed as a `kind` object. */
int fake_destroy_simple(const char *verb, const char *key, const char *kind,
			void *obj);
/* mem.c: what alloc_pd and alloc_parent_domain answer: NULL with errno =
 * err when err is set, else a new "pd" of context with a fresh handle. */
struct ibv_pd *fake_new_pd(struct ibv_context *context, int err);
/* A fresh number for handles, keys, QP numbers (never 0; 24 bits). */
uint32_t fake_next_id(void);

/* The fake's context: a real verbs_context (verbs_get_ctx works), and
 * what the fake keeps per open device. */
struct fake_context {
	struct verbs_context vctx; /* ends with the ibv_context */
	int dev_index;
};

static inline struct fake_context *fake_ctx(struct ibv_context *c)
{
	return (struct fake_context *)((char *)c - offsetof(struct fake_context,
							    vctx.context));
}

/* A family fills the ops it implements into each new context with
 *   FAKE_CONTEXT_OPS(qp_ops) { fc->vctx.context.ops.post_send = ...; }
 * (registered at load time: no central list to edit). */
typedef void (*fake_ops_fn)(struct fake_context *fc);
void fake_register_ops(fake_ops_fn fn);
#define FAKE_CONTEXT_OPS(fn)                                         \
	static void fn(struct fake_context *fc);                     \
	__attribute__((constructor)) static void fn##_register(void) \
	{                                                            \
		fake_register_ops(fn);                               \
	}                                                            \
	static void fn(struct fake_context *fc)

/* ------------------------------------------------------------------ */
/* Queue pairs (qp.c): what post.c and qp_ex.c share                   */
/* ------------------------------------------------------------------ */

struct fake_qp {
	struct ibv_qp_ex qpx; /* begins with the struct ibv_qp */
	int has_ex; /* created with send_ops_flags: ibv_qp_to_qp_ex works */
	int sq_sig_all;
	struct ibv_qp_cap cap;
	struct ibv_qp_attr attr; /* what modify_qp set, for query_qp */
	/* the extended QP's batch (qp_ex.c), under the QP's own lock */
	pthread_mutex_t batch_lock;
	void *batch;
};

static inline struct fake_qp *fake_qp_of(struct ibv_qp *qp)
{
	return (struct fake_qp *)qp;
}

/* Record the fields of an address vector as prefix.dlid, prefix.grh.dgid,
 * ... (ah.c; modify_qp's ah_attr and create_ah use it). */
void fake_add_ah_attr(struct fake_rec *r, const char *prefix,
		      const struct ibv_ah_attr *a);
/* ah.c: what create_ah and create_ah_from_wc answer: NULL with errno =
 * err when err is set, else a new "ah" on pd with a fresh handle. */
struct ibv_ah *fake_new_ah(struct ibv_pd *pd, int err);

/* qp_ex.c: point an extended QP's wr_* functions at their recorders. */
void fake_qp_ex_init(struct fake_qp *q, uint64_t send_ops_flags);
/* qp_ex.c: free what a batch left (destroy_qp). */
void fake_qp_ex_fini(struct fake_qp *q);

/* ------------------------------------------------------------------ */
/* Completions (cq.c)                                                  */
/* ------------------------------------------------------------------ */

/* Queue one completion on cq (thread-safe, O(1)); the status is
 * replaced by an injected "completion" failure (fake_fail("completion",
 * IBV_WC_xxx, n)).  Returns 0, or -1 when the CQ is full (the entry is
 * dropped and counted by fake_cq_overflows()). */
int fake_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc);

/* Queue the completion of one send-queue work request of qp (qp.c): on
 * its send CQ when signaled or the QP signals all. */
void fake_qp_complete_send(struct ibv_qp *qp, uint64_t wr_id,
			   enum ibv_wc_opcode opcode, uint32_t byte_len,
			   int signaled);

#endif
