/*
 * fake_mlx5.h - what the files of the fake libmlx5.so.1 share (test-only).
 *
 * The fake is one shared library built from every *.c file of this folder
 * (tests/fakes/mlx5.py compiles them as one unit, core.c first), with the
 * soname libmlx5.so.1 and libmlx5.map's version nodes, the real ones of
 * rdma-core's providers/mlx5/libmlx5.map.  ibverbs loads it through
 * IBVERBS_LIBMLX5, beside the recording double of libibverbs
 * (IBVERBS_LIBIBVERBS): the objects it answers with (contexts, CQs, QPs,
 * MRs) are the double's, made through the double's own exported verbs and
 * context ops, so the binding closes them with the usual verbs.
 *
 * Each call appends one line to the file $IBVERBS_FAKE_MLX5_LOG, in the
 * double's log format ("verb key=value ..."; b:<hex> for bytes, s:<text>
 * for text), with every argument and every byte of every struct passed.
 * $IBVERBS_FAKE_MLX5_FAIL="verb=errno,..." makes those verbs fail (every
 * call; "verb=errno@n": only the n-th, from 1); $IBVERBS_FAKE_MLX5_UNSUPPORTED="name,..." lists the devices
 * mlx5dv_is_supported answers false for (and open_device refuses).
 */
#ifndef FAKE_MLX5_H
#define FAKE_MLX5_H

#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

struct m5rec {
	size_t len;
	char buf[8192];
};

/* Start a record of verb; returns the errno armed for it, M5_NO_ERRNO,
 * or 0. */
int m5_begin(struct m5rec *r, const char *verb);
/* What "verb=-1" arms (mlx5.NO_ERRNO): a failure without errno, the verb
 * answering NULL or -1 with errno 0, as some providers do. */
#define M5_NO_ERRNO (-1)
/* errno for a failed call: err (armed), 0 for M5_NO_ERRNO, dflt when the
 * failure was not armed (err 0). */
static inline void m5_set_errno(int err, int dflt)
{
	errno = err == M5_NO_ERRNO ? 0 : err ? err : dflt;
}
void m5_add(struct m5rec *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void m5_bytes(struct m5rec *r, const char *key, const void *p, size_t n);
void m5_str(struct m5rec *r, const char *key, const char *s);
/* Append the record as one line to $IBVERBS_FAKE_MLX5_LOG. */
void m5_end(struct m5rec *r);
/* Record verb with the object's id ("key=value" by idfmt), then free obj
 * unless a failure is armed for verb; returns that errno, or 0. */
int m5_free_rec(const char *verb, const char *idfmt, unsigned long long id,
		void *obj);

#define M5_U(r, k, v) m5_add((r), "%s=%llu", (k), (unsigned long long)(v))
#define M5_X(r, k, v) m5_add((r), "%s=0x%llx", (k), (unsigned long long)(v))
#define M5_P(r, k, p) \
	m5_add((r), "%s=0x%lx", (k), (unsigned long)(uintptr_t)(p))

/* Whether the device name is listed in $IBVERBS_FAKE_MLX5_UNSUPPORTED. */
int m5_unsupported(const char *name);
/* A symbol of the recording double (the loaded $IBVERBS_LIBIBVERBS). */
void *m5_ibv(const char *sym);

/* mkey.c: the wr_mr_list op that qp.c's mlx5dv_qp_ex_from_ibv_qp_ex sets,
 * NULL while a failure of "mlx5dv_wr_mr_list" is armed. */
typedef void (*mr_list_fn)(struct mlx5dv_qp_ex *, struct mlx5dv_mkey *,
			   uint32_t, uint16_t, struct ibv_sge *);
mr_list_fn fake_mr_list_op(void);

#endif
