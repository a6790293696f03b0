/*
 * fake_efa.c - a test-only libefa.so.1: the 13 exported efadv functions
 * with the real symbol version nodes (EFA_1.0 ... EFA_1.7; build.py
 * writes the version script, and FAKE_EFA_MAX leaves out the newer
 * nodes), loaded by ibverbs through IBVERBS_LIBEFA.
 *
 * Each call appends one line to a log ("verb key=value ...", the format
 * of the recording double's log) with every argument and the bytes of
 * every struct it was given, checks what libefa checks (qp_type DRIVER,
 * comp_mask 0, reserved bytes 0, inlen covering the first field, the
 * bytes past its own struct zero), and answers as an EFA device would.
 * QPs and CQs are made through the loaded libibverbs (the recording
 * double on the host; the real one in the guest), as a UD QP and a
 * plain extended CQ: a double, not EFA.  Tests read the log with
 * efa_fake_log() and arm failures with efa_fake_fail(); efa_fake_shape()
 * makes the next answers those of queues without rings (no buffer, no
 * doorbell) and of entries without a sender GID.
 */
#define _GNU_SOURCE
#include "efa/efa_abi.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#ifndef FAKE_EFA_MAX
#define FAKE_EFA_MAX 7
#endif

/* ------------------------------------------------------------------ */
/* The log                                                             */
/* ------------------------------------------------------------------ */

static char efa_log[1 << 16];
static size_t efa_log_len;
static char efa_fail_name[64];
static int efa_fail_errno;
static int efa_no_rings; /* query_cq, query_qp_wqs: NULL buffer, doorbell */
static int efa_no_sgid; /* wc_read_sgid: the entry carries no GID */

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (efa_log_len >= sizeof(efa_log) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(efa_log + efa_log_len, sizeof(efa_log) - efa_log_len, fmt,
		      ap);
	va_end(ap);
	if (n > 0)
		efa_log_len += (size_t)n;
	if (efa_log_len > sizeof(efa_log) - 1)
		efa_log_len = sizeof(efa_log) - 1;
}

static void log_bytes(const char *key, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i;

	logf_(" %s=b:", key);
	for (i = 0; i < len; i++)
		logf_("%02x", b[i]);
}

/* What efa_fake_fail(verb, -1) arms: a failure without errno, the verb
 * answering NULL with errno 0, as some providers do. */
#define EFA_NO_ERRNO (-1)

static void efa_set_errno(int err)
{
	errno = err == EFA_NO_ERRNO ? 0 : err;
}

/* Start a line; the armed errno for verb (or EFA_NO_ERRNO), or 0. */
static int begin(const char *verb)
{
	logf_("%s", verb);
	if (efa_fail_errno && strcmp(efa_fail_name, verb) == 0) {
		int e = efa_fail_errno;

		efa_fail_errno = 0;
		return e;
	}
	return 0;
}

static void end(void)
{
	logf_("\n");
}

EXPORT const char *efa_fake_log(void)
{
	return efa_log;
}

EXPORT void efa_fake_clear(void)
{
	efa_log_len = 0;
	efa_log[0] = 0;
}

/* The next call of verb fails with err (EFA_NO_ERRNO: without errno). */
EXPORT void efa_fake_fail(const char *verb, int err)
{
	snprintf(efa_fail_name, sizeof(efa_fail_name), "%s", verb);
	efa_fail_errno = err;
}

/* From now on: rings (whether the queues have a buffer and a doorbell),
 * sgid (whether an entry carries the sender's GID). */
EXPORT void efa_fake_shape(int rings, int sgid)
{
	efa_no_rings = !rings;
	efa_no_sgid = !sgid;
}

/* libefa's input check: inlen covers the first field (comp_mask) and
 * what lies past our struct is zero. */
static int check_inlen(const void *p, uint32_t inlen, size_t size)
{
	const unsigned char *b = p;
	size_t i;

	if (inlen < sizeof(uint64_t))
		return EINVAL;
	for (i = size; i < inlen; i++)
		if (b[i])
			return EINVAL;
	return 0;
}

/* The libibverbs in use (the recording double, or the real one). */
static void *ibv_sym(const char *name)
{
	const char *path = getenv("IBVERBS_LIBIBVERBS");
	void *lib = dlopen(path && *path ? path : "libibverbs.so.1",
			   RTLD_NOW | RTLD_NOLOAD);

	return lib ? dlsym(lib, name) : NULL;
}

/* ------------------------------------------------------------------ */
/* QPs and CQs the fake made, with their efadv structs                 */
/* ------------------------------------------------------------------ */

struct fake_dv_qp {
	struct efa_m_qp dv;
	struct ibv_qp_ex *qpx;
	struct fake_dv_qp *next;
};
struct fake_dv_cq {
	struct efa_m_cq dv;
	struct ibv_cq_ex *cqx;
	struct fake_dv_cq *next;
};
static struct fake_dv_qp *dv_qps;
static struct fake_dv_cq *dv_cqs;
__attribute__((unused)) static unsigned char wq_ring[2][16 * 64];
__attribute__((unused)) static uint32_t wq_db[2];
__attribute__((unused)) static unsigned char cq_ring[32 * 32];
__attribute__((unused)) static uint32_t cq_db;

static void fake_hints(struct efa_m_qp *dv, uint32_t hints)
{
	logf_("wr_set_processing_hints efadv_qp=0x%lx hints=0x%x\n",
	      (unsigned long)(uintptr_t)dv, hints);
}

static int fake_read_sgid(struct efa_m_cq *dv, union ibv_gid *sgid)
{
	int i;

	logf_("wc_read_sgid efadv_cq=0x%lx\n", (unsigned long)(uintptr_t)dv);
	if (efa_no_sgid)
		return -ENOENT;
	for (i = 0; i < 16; i++)
		sgid->raw[i] = (uint8_t)(0xf0 + i);
	return 0;
}

static bool fake_unsolicited(struct efa_m_cq *dv)
{
	logf_("wc_is_unsolicited efadv_cq=0x%lx\n",
	      (unsigned long)(uintptr_t)dv);
	return true;
}

/* ------------------------------------------------------------------ */
/* EFA_1.0                                                             */
/* ------------------------------------------------------------------ */

EXPORT struct ibv_qp *efadv_create_driver_qp(struct ibv_pd *pd,
					     struct ibv_qp_init_attr *attr,
					     uint32_t driver_qp_type)
{
	struct ibv_qp *(*create)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int err = begin("create_driver_qp");

	logf_(" pd=0x%lx attr.qp_type=%d driver_qp_type=%u attr.cap.max_send_wr=%u attr.cap.max_recv_wr=%u",
	      (unsigned long)(uintptr_t)pd, attr->qp_type, driver_qp_type,
	      attr->cap.max_send_wr, attr->cap.max_recv_wr);
	end();
	if (!err && (attr->qp_type != IBV_QPT_DRIVER ||
		     driver_qp_type != EFA_M_QP_DRIVER_TYPE_SRD))
		err = EOPNOTSUPP;
	create = (struct ibv_qp *
		  (*)(struct ibv_pd *, struct ibv_qp_init_attr *))
		ibv_sym("ibv_create_qp");
	if (!err && create == NULL)
		err = ENOSYS;
	if (err) {
		efa_set_errno(err);
		return NULL;
	}
	attr->qp_type = IBV_QPT_UD; /* the double: a UD QP */
	return create(pd, attr);
}

/* ------------------------------------------------------------------ */
/* EFA_1.1                                                             */
/* ------------------------------------------------------------------ */

EXPORT struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ctx,
					 struct ibv_qp_init_attr_ex *ex,
					 struct efa_m_qp_init_attr *ea,
					 uint32_t inlen)
{
	int err = begin("create_qp_ex");
	struct verbs_context *vctx;
	struct fake_dv_qp *d;
	struct ibv_qp *qp;

	logf_(" context=0x%lx attr_ex.qp_type=%d attr_ex.comp_mask=0x%x attr_ex.send_ops_flags=0x%llx attr_ex.pd=0x%lx attr_ex.cap.max_send_wr=%u inlen=%u",
	      (unsigned long)(uintptr_t)ctx, ex->qp_type, ex->comp_mask,
	      (unsigned long long)ex->send_ops_flags,
	      (unsigned long)(uintptr_t)ex->pd, ex->cap.max_send_wr, inlen);
	log_bytes("efa_attr", ea, inlen < 64 ? inlen : 64);
	end();
	if (!err)
		err = check_inlen(ea, inlen, sizeof(*ea));
	if (!err && (ex->qp_type != IBV_QPT_DRIVER || ea->comp_mask ||
		     ea->reserved || ea->driver_qp_type != 0 ||
		     (ea->flags & ~3u) || (ea->wr_flags & ~1ull)))
		err = EOPNOTSUPP;
	vctx = verbs_get_ctx_op(ctx, create_qp_ex);
	if (!err && vctx == NULL)
		err = EOPNOTSUPP;
	if (err) {
		efa_set_errno(err);
		return NULL;
	}
	ex->qp_type = IBV_QPT_UD; /* the double: a UD QP */
	qp = vctx->create_qp_ex(ctx, ex);
	if (qp == NULL)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (d != NULL) {
		d->qpx = (struct ibv_qp_ex *)qp; /* ibv_qp_ex begins with it */
		if (ea->wr_flags & EFA_M_WR_EX_WITH_PROCESSING_HINTS)
			d->dv.wr_set_processing_hints = fake_hints;
		d->next = dv_qps;
		dv_qps = d;
	}
	return qp;
}

EXPORT int efadv_query_device(struct ibv_context *ctx,
			      struct efa_m_device_attr *attr, uint32_t inlen)
{
	int err = begin("query_device");

	logf_(" context=0x%lx inlen=%u", (unsigned long)(uintptr_t)ctx, inlen);
	log_bytes("attr_in", attr, inlen < 64 ? inlen : 64);
	end();
	if (err)
		return err;
	if (inlen < sizeof(uint64_t))
		return EINVAL;
	memset(attr, 0, inlen);
	attr->max_sq_wr = 4096;
	attr->max_rq_wr = 32768;
	attr->max_sq_sge = 2;
	attr->max_rq_sge = 3;
	attr->inline_buf_size = 32;
	attr->inline_buf_size_ex = 256;
	attr->device_caps = 0x7f;
	attr->max_rdma_size = 1u << 30;
	return 0;
}

EXPORT int efadv_query_ah(struct ibv_ah *ah, struct efa_m_ah_attr *attr,
			  uint32_t inlen)
{
	int err = begin("query_ah");

	logf_(" ah=0x%lx inlen=%u", (unsigned long)(uintptr_t)ah, inlen);
	log_bytes("attr_in", attr, inlen < 64 ? inlen : 64);
	end();
	if (err)
		return err;
	memset(attr, 0, inlen);
	attr->ahn = (uint16_t)(ah->handle & 0xffff);
	return 0;
}

/* ------------------------------------------------------------------ */
/* EFA_1.2                                                             */
/* ------------------------------------------------------------------ */

#if FAKE_EFA_MAX >= 2
EXPORT struct ibv_cq_ex *efadv_create_cq(struct ibv_context *ctx,
					 struct ibv_cq_init_attr_ex *a,
					 struct efa_m_cq_init_attr *ea,
					 uint32_t inlen)
{
	int err = begin("create_cq");
	struct fake_dv_cq *d;
	struct ibv_cq_ex *cq;

	logf_(" context=0x%lx attr_ex.cqe=%u attr_ex.wc_flags=0x%llx attr_ex.comp_mask=0x%x inlen=%u",
	      (unsigned long)(uintptr_t)ctx, a->cqe,
	      (unsigned long long)a->wc_flags, a->comp_mask, inlen);
	log_bytes("efa_attr", ea, inlen < 64 ? inlen : 64);
	end();
	if (!err)
		err = check_inlen(ea, inlen, sizeof(*ea));
	if (!err && (ea->comp_mask || (ea->wc_flags & ~3ull) || ea->flags))
		err = EOPNOTSUPP;
	if (err) {
		efa_set_errno(err);
		return NULL;
	}
	cq = ibv_create_cq_ex(ctx, a);
	if (cq == NULL)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (d != NULL) {
		d->cqx = cq;
		if (ea->wc_flags & EFA_M_WC_EX_WITH_SGID)
			d->dv.wc_read_sgid = fake_read_sgid;
		if (ea->wc_flags & EFA_M_WC_EX_WITH_IS_UNSOLICITED)
			d->dv.wc_is_unsolicited = fake_unsolicited;
		d->next = dv_cqs;
		dv_cqs = d;
	}
	return cq;
}

EXPORT struct efa_m_cq *efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex *cqx)
{
	struct fake_dv_cq *d;

	logf_("cq_from_ibv_cq_ex cq_ex=0x%lx\n", (unsigned long)(uintptr_t)cqx);
	for (d = dv_cqs; d; d = d->next)
		if (d->cqx == cqx)
			return &d->dv;
	abort(); /* libefa's container_of: garbage for a foreign CQ */
}
#endif

/* ------------------------------------------------------------------ */
/* EFA_1.3 to EFA_1.7                                                  */
/* ------------------------------------------------------------------ */

#if FAKE_EFA_MAX >= 3
EXPORT int efadv_query_mr(struct ibv_mr *mr, struct efa_m_mr_attr *attr,
			  uint32_t inlen)
{
	int err = begin("query_mr");

	logf_(" mr=0x%lx inlen=%u", (unsigned long)(uintptr_t)mr, inlen);
	log_bytes("attr_in", attr, inlen < 64 ? inlen : 64);
	end();
	if (err)
		return err;
	memset(attr, 0, inlen);
	attr->ic_id_validity = EFA_M_MR_ATTR_VALIDITY_RECV_IC_ID |
			       EFA_M_MR_ATTR_VALIDITY_RDMA_RECV_IC_ID;
	attr->recv_ic_id = 1;
	attr->rdma_read_ic_id = 2; /* not valid: reported as None */
	attr->rdma_recv_ic_id = 3;
	return 0;
}
#endif

#if FAKE_EFA_MAX >= 4
EXPORT int efadv_query_qp_wqs(struct ibv_qp *qp, struct efa_m_wq_attr *sq,
			      struct efa_m_wq_attr *rq, uint32_t inlen)
{
	int err = begin("query_qp_wqs");

	logf_(" qp=0x%lx inlen=%u", (unsigned long)(uintptr_t)qp, inlen);
	log_bytes("sq_in", sq, inlen < 64 ? inlen : 64);
	log_bytes("rq_in", rq, inlen < 64 ? inlen : 64);
	end();
	if (err)
		return err;
	memset(sq, 0, inlen);
	memset(rq, 0, inlen);
	wq_ring[0][0] = 0xaa;
	wq_db[0] = 0x01020304;
	sq->buffer = wq_ring[0];
	sq->entry_size = 64;
	sq->num_entries = 16;
	sq->doorbell = &wq_db[0];
	sq->max_batch = 8;
	sq->caps = 1;
	rq->buffer = wq_ring[1];
	rq->entry_size = 16;
	rq->num_entries = 64;
	rq->doorbell = &wq_db[1];
	if (efa_no_rings) {
		sq->buffer = rq->buffer = NULL;
		sq->doorbell = rq->doorbell = NULL;
	}
	return 0;
}

EXPORT int efadv_query_cq(struct ibv_cq *cq, struct efa_m_cq_attr *attr,
			  uint32_t inlen)
{
	int err = begin("query_cq");

	logf_(" cq=0x%lx inlen=%u", (unsigned long)(uintptr_t)cq, inlen);
	log_bytes("attr_in", attr, inlen < 64 ? inlen : 64);
	end();
	if (err)
		return err;
	memset(attr, 0, inlen);
	cq_ring[0] = 0x5a;
	attr->buffer = cq_ring;
	attr->entry_size = 32;
	attr->num_entries = 32;
	attr->doorbell = &cq_db;
	if (efa_no_rings) {
		attr->buffer = NULL;
		attr->doorbell = NULL;
	}
	return 0;
}
#endif

#if FAKE_EFA_MAX >= 5
EXPORT int efadv_get_max_sq_depth(struct ibv_context *ctx,
				  struct efa_m_sq_depth_attr *attr,
				  uint32_t inlen)
{
	int err = begin("get_max_sq_depth");

	logf_(" context=0x%lx inlen=%u", (unsigned long)(uintptr_t)ctx, inlen);
	log_bytes("attr", attr, inlen < 64 ? inlen : 64);
	end();
	if (!err)
		err = check_inlen(attr, inlen, sizeof(*attr));
	if (err)
		return -err;
	return 4096 / (1 + attr->max_send_sge);
}

EXPORT int efadv_get_max_rq_depth(struct ibv_context *ctx,
				  struct efa_m_rq_depth_attr *attr,
				  uint32_t inlen)
{
	int err = begin("get_max_rq_depth");

	logf_(" context=0x%lx inlen=%u", (unsigned long)(uintptr_t)ctx, inlen);
	log_bytes("attr", attr, inlen < 64 ? inlen : 64);
	end();
	if (!err)
		err = check_inlen(attr, inlen, sizeof(*attr));
	if (err)
		return -err;
	return 32768 / (1 + attr->max_recv_sge);
}
#endif

#if FAKE_EFA_MAX >= 6
EXPORT struct efa_m_qp *efadv_qp_from_ibv_qp_ex(struct ibv_qp_ex *qpx)
{
	struct fake_dv_qp *d;

	logf_("qp_from_ibv_qp_ex qp_ex=0x%lx\n", (unsigned long)(uintptr_t)qpx);
	for (d = dv_qps; d; d = d->next)
		if (d->qpx == qpx)
			return &d->dv;
	abort(); /* libefa's container_of: garbage for a foreign QP */
}
#endif

#if FAKE_EFA_MAX >= 7
EXPORT struct ibv_comp_cntr *
efadv_create_comp_cntr(struct ibv_context *ctx,
		       struct ibv_comp_cntr_init_attr *attr,
		       struct efa_m_comp_cntr_init_attr *ea, uint32_t inlen)
{
	struct ibv_comp_cntr *(*create)(struct ibv_context *,
					struct ibv_comp_cntr_init_attr *);
	int err = begin("create_comp_cntr");

	logf_(" context=0x%lx inlen=%u", (unsigned long)(uintptr_t)ctx, inlen);
	log_bytes("attr", attr, 16);
	log_bytes("efa_attr", ea, inlen < 96 ? inlen : 96);
	end();
	if (!err)
		err = check_inlen(ea, inlen, sizeof(*ea));
	if (!err && (ea->comp_mask || ea->reserved || (ea->flags & ~3u)))
		err = EOPNOTSUPP;
	create = (struct ibv_comp_cntr *
		  (*)(struct ibv_context *, struct ibv_comp_cntr_init_attr *))
		ibv_sym("ibv_create_comp_cntr");
	if (!err && create == NULL)
		err = EOPNOTSUPP;
	if (err) {
		efa_set_errno(err);
		return NULL;
	}
	return create(ctx, attr);
}
#endif
