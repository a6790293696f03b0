/*
 * cg_batch.c - the C floor for benchmarks/cg_batch.py: one batch of
 * scattered RDMA WRITEs built from arrays (source and destination block
 * numbers), as a transfer engine written in C would: fill an ibv_send_wr
 * and an ibv_sge per block, post them in chains of CHAIN (the last of each
 * signaled), never more than DEPTH in flight, and poll until every WR has
 * completed (an empty poll sleeps 1 ms, as the Python programs do).
 * MODE recv: receive buffers at the source offsets instead, posted in
 * chains of CHAIN (at most DEPTH posted), each completion reaped; MODE
 * poll: the WRITEs all signaled, CHAIN posted and their CHAIN completions
 * reaped before the next.
 *
 *   cg_batch DEVICE GID_INDEX BLOCKS BLOCK_SIZE [send|recv|poll]
 *
 * Two rounds on the same pools; under valgrind --instr-atstart=no only
 * the second (prepare + post + poll) is counted.  Two RC QPs on one
 * device connected to each other (loopback).
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <infiniband/verbs.h>
#include <valgrind/callgrind.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cg_rc.h"

#define CHAIN 16
#define DEPTH 64

struct pools {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *src, *dst;
	size_t block;
};

/* One batch: build, post, reap.  The number of empty polls. */
static long one_batch(const struct pools *p, const uint64_t *src_idx,
		      const uint64_t *dst_idx, long n)
{
	struct ibv_send_wr *wrs = calloc(n, sizeof(*wrs)), *bad;
	struct ibv_sge *sges = calloc(n, sizeof(*sges));
	struct ibv_wc wc[16];
	long i, next = 0, done = 0, empty = 0;
	int k, got;

	if (!wrs || !sges)
		die("calloc");
	for (i = 0; i < n; i++) {
		sges[i].addr = (uintptr_t)p->src->addr + src_idx[i] * p->block;
		sges[i].length = p->block;
		sges[i].lkey = p->src->lkey;
		wrs[i].wr_id = i;
		wrs[i].sg_list = &sges[i];
		wrs[i].num_sge = 1;
		wrs[i].opcode = IBV_WR_RDMA_WRITE;
		wrs[i].wr.rdma.remote_addr =
			(uintptr_t)p->dst->addr + dst_idx[i] * p->block;
		wrs[i].wr.rdma.rkey = p->dst->rkey;
		if ((i + 1) % CHAIN == 0 || i == n - 1)
			wrs[i].send_flags = IBV_SEND_SIGNALED;
		else
			wrs[i].next = &wrs[i + 1];
	}
	while (done < n) {
		while (next < n && next - done + CHAIN <= DEPTH) {
			if (ibv_post_send(p->qp, &wrs[next], &bad))
				die("ibv_post_send");
			next = next + CHAIN < n ? next + CHAIN : n;
		}
		got = ibv_poll_cq(p->cq, 16, wc);
		if (got < 0)
			die("ibv_poll_cq");
		if (got == 0) {
			empty++;
			usleep(1000);
		}
		for (k = 0; k < got; k++) {
			if (wc[k].status != IBV_WC_SUCCESS)
				die("completion");
			done = wc[k].wr_id + 1;
		}
	}
	free(wrs);
	free(sges);
	return empty;
}

/* MODE recv: n receive buffers, CHAIN per post.  The empty polls. */
static long one_recv(const struct pools *p, const uint64_t *src_idx, long n)
{
	struct ibv_recv_wr *wrs = calloc(n, sizeof(*wrs)), *bad;
	struct ibv_sge *sges = calloc(n, sizeof(*sges));
	struct ibv_wc wc[16];
	long i, next = 0, done = 0, empty = 0;
	int k, got;

	if (!wrs || !sges)
		die("calloc");
	for (i = 0; i < n; i++) {
		sges[i].addr = (uintptr_t)p->src->addr + src_idx[i] * p->block;
		sges[i].length = p->block;
		sges[i].lkey = p->src->lkey;
		wrs[i].wr_id = i;
		wrs[i].sg_list = &sges[i];
		wrs[i].num_sge = 1;
		if ((i + 1) % CHAIN != 0 && i != n - 1)
			wrs[i].next = &wrs[i + 1];
	}
	while (done < n) {
		while (next < n && next - done + CHAIN <= DEPTH) {
			if (ibv_post_recv(p->qp, &wrs[next], &bad))
				die("ibv_post_recv");
			next = next + CHAIN < n ? next + CHAIN : n;
		}
		got = ibv_poll_cq(p->cq, 16, wc);
		if (got < 0)
			die("ibv_poll_cq");
		if (got == 0) {
			empty++;
			usleep(1000);
		}
		for (k = 0; k < got; k++) {
			if (wc[k].status != IBV_WC_SUCCESS)
				die("completion");
		}
		done += got;
	}
	free(wrs);
	free(sges);
	return empty;
}

/* MODE poll: every WRITE signaled, CHAIN posted, their CHAIN completions
 * reaped before the next CHAIN.  The empty polls. */
static long one_poll(const struct pools *p, const uint64_t *src_idx,
		     const uint64_t *dst_idx, long n)
{
	struct ibv_send_wr *wrs = calloc(n, sizeof(*wrs)), *bad;
	struct ibv_sge *sges = calloc(n, sizeof(*sges));
	struct ibv_wc wc[16];
	long i, next = 0, want, empty = 0;
	int k, got;

	if (!wrs || !sges)
		die("calloc");
	for (i = 0; i < n; i++) {
		sges[i].addr = (uintptr_t)p->src->addr + src_idx[i] * p->block;
		sges[i].length = p->block;
		sges[i].lkey = p->src->lkey;
		wrs[i].wr_id = i;
		wrs[i].sg_list = &sges[i];
		wrs[i].num_sge = 1;
		wrs[i].opcode = IBV_WR_RDMA_WRITE;
		wrs[i].wr.rdma.remote_addr =
			(uintptr_t)p->dst->addr + dst_idx[i] * p->block;
		wrs[i].wr.rdma.rkey = p->dst->rkey;
		wrs[i].send_flags = IBV_SEND_SIGNALED;
		if ((i + 1) % CHAIN != 0 && i != n - 1)
			wrs[i].next = &wrs[i + 1];
	}
	while (next < n) {
		if (ibv_post_send(p->qp, &wrs[next], &bad))
			die("ibv_post_send");
		want = next + CHAIN < n ? CHAIN : n - next;
		next += want;
		while (want > 0) {
			got = ibv_poll_cq(p->cq, 16, wc);
			if (got < 0)
				die("ibv_poll_cq");
			if (got == 0) {
				empty++;
				usleep(1000);
			}
			for (k = 0; k < got; k++) {
				if (wc[k].status != IBV_WC_SUCCESS)
					die("completion");
			}
			want -= got;
		}
	}
	free(wrs);
	free(sges);
	return empty;
}

/* A random permutation's first n of 0..pool-1. */
static void pick(uint64_t *out, long n, long pool, unsigned int seed)
{
	uint64_t *all = malloc(pool * sizeof(*all)), t;
	long i, j;

	if (!all)
		die("malloc");
	srand(seed);
	for (i = 0; i < pool; i++)
		all[i] = i;
	for (i = pool - 1; i > 0; i--) {
		j = rand() % (i + 1);
		t = all[i];
		all[i] = all[j];
		all[j] = t;
	}
	memcpy(out, all, n * sizeof(*out));
	free(all);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp_init_attr init;
	struct ibv_qp *qb;
	struct pools p;
	struct ibv_pd *pd;
	union ibv_gid gid;
	uint64_t *src_idx, *dst_idx;
	long n, empty = 0;
	int gid_index, k, round;
	const char *mode;
	void (*set_recording)(int);
	char *a, *b;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: cg_batch DEVICE GID_INDEX BLOCKS BLOCK "
				"[send|recv|poll]\n");
		return 2;
	}
	mode = argc == 6 ? argv[5] : "send";
	gid_index = atoi(argv[2]);
	n = atol(argv[3]);
	p.block = atol(argv[4]);
	/* Preloaded over the recording double (tests/fakes): its log off. */
	set_recording =
		(void (*)(int))dlsym(RTLD_DEFAULT, "fake_set_recording");
	if (set_recording)
		set_recording(0);
	list = ibv_get_device_list(NULL);
	for (k = 0; list && list[k]; k++)
		if (!strcmp(ibv_get_device_name(list[k]), argv[1]))
			ctx = ibv_open_device(list[k]);
	if (!ctx)
		die("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	a = calloc(n, p.block);
	b = calloc(n, p.block);
	if (!pd || !a || !b)
		die("setup");
	p.src = ibv_reg_mr(pd, a, n * p.block, IBV_ACCESS_LOCAL_WRITE);
	p.dst = ibv_reg_mr(pd, b, n * p.block,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	p.cq = ibv_create_cq(ctx, DEPTH + 16, NULL, NULL, 0);
	if (!p.src || !p.dst || !p.cq)
		die("setup");
	memset(&init, 0, sizeof(init));
	init.send_cq = init.recv_cq = p.cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = DEPTH;
	init.cap.max_recv_wr = DEPTH;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	p.qp = ibv_create_qp(pd, &init);
	qb = ibv_create_qp(pd, &init);
	if (!p.qp || !qb || ibv_query_gid(ctx, 1, gid_index, &gid))
		die("create_qp");
	connect_qp(p.qp, qb, gid_index, &gid);
	connect_qp(qb, p.qp, gid_index, &gid);
	src_idx = malloc(n * sizeof(*src_idx));
	dst_idx = malloc(n * sizeof(*dst_idx));
	if (!src_idx || !dst_idx)
		die("malloc");
	pick(src_idx, n, n, 1);
	pick(dst_idx, n, n, 2);
	for (round = 0; round < 2; round++) {
		/* Under valgrind --instr-atstart=no only round 1 counts. */
		if (round == 1) {
			CALLGRIND_START_INSTRUMENTATION;
			CALLGRIND_ZERO_STATS;
		}
		if (!strcmp(mode, "recv"))
			empty = one_recv(&p, src_idx, n);
		else if (!strcmp(mode, "poll"))
			empty = one_poll(&p, src_idx, dst_idx, n);
		else
			empty = one_batch(&p, src_idx, dst_idx, n);
	}
	CALLGRIND_DUMP_STATS_AT("loop");
	CALLGRIND_STOP_INSTRUMENTATION;
	printf("c %s: %ld blocks, %ld empty polls\n", mode, n, empty);
	return 0;
}
