/*
 * cg_loop.c - the C floor for benchmarks/cg_loop.py: the same loop (post
 * one signaled 8-byte RDMA WRITE, poll until its completion) straight on
 * libibverbs, so that callgrind's instructions per iteration of the
 * Python loops can be set against what the provider itself costs.
 *
 *   cc -O2 -o build/bench/cg_loop benchmarks/cg_loop.c -libverbs
 *   (valgrind's callgrind.h marks the loop; see benchmarks/cgtoggle.c)
 *   cg_loop DEVICE GID_INDEX ITERATIONS
 *
 * Two RC QPs on one device connected to each other (loopback).
 */
#include <infiniband/verbs.h>
#include <valgrind/callgrind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_rc.h"

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp_init_attr init;
	struct ibv_send_wr wrs[64], *bad;
	struct ibv_qp *qa, *qb;
	struct ibv_sge sge;
	struct ibv_wc wc;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	long i, n, empty = 0;
	int gid_index, k, nlist;
	static char buf[8192];

	if (argc != 4) {
		fprintf(stderr, "usage: cg_loop DEVICE GID_INDEX ITERATIONS\n");
		return 2;
	}
	gid_index = atoi(argv[2]);
	n = atol(argv[3]);
	list = ibv_get_device_list(NULL);
	for (k = 0; list && list[k]; k++)
		if (!strcmp(ibv_get_device_name(list[k]), argv[1]))
			ctx = ibv_open_device(list[k]);
	if (!ctx)
		die("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (!pd || !mr || !cq)
		die("setup");
	memset(&init, 0, sizeof(init));
	init.send_cq = init.recv_cq = cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = init.cap.max_recv_wr = 64;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	qa = ibv_create_qp(pd, &init);
	qb = ibv_create_qp(pd, &init);
	if (!qa || !qb || ibv_query_gid(ctx, 1, gid_index, &gid))
		die("create_qp");
	connect_qp(qa, qb, gid_index, &gid);
	connect_qp(qb, qa, gid_index, &gid);

	sge.addr = (uintptr_t)buf;
	sge.length = 8;
	sge.lkey = mr->lkey;
	/* CG_LIST=16: a chain of 16, the last one signaled. */
	nlist = getenv("CG_LIST") ? atoi(getenv("CG_LIST")) : 1;
	if (nlist < 1 || nlist > 64)
		nlist = 1;
	for (k = 0; k < nlist; k++) {
		memset(&wrs[k], 0, sizeof(wrs[k]));
		wrs[k].wr_id = 1;
		wrs[k].sg_list = &sge;
		wrs[k].num_sge = 1;
		wrs[k].opcode = IBV_WR_RDMA_WRITE;
		wrs[k].send_flags = k == nlist - 1 ? IBV_SEND_SIGNALED : 0;
		wrs[k].wr.rdma.remote_addr = (uintptr_t)buf + 4096;
		wrs[k].wr.rdma.rkey = mr->rkey;
		wrs[k].next = k == nlist - 1 ? NULL : &wrs[k + 1];
	}
	/* Under valgrind --instr-atstart=no only this loop is counted. */
	CALLGRIND_START_INSTRUMENTATION;
	CALLGRIND_ZERO_STATS;
	for (i = 0; i < n; i++) {
		if (ibv_post_send(qa, wrs, &bad))
			die("ibv_post_send");
		while ((k = ibv_poll_cq(cq, 1, &wc)) == 0)
			empty++;
		if (k < 0 || wc.status != IBV_WC_SUCCESS)
			die("completion");
	}
	CALLGRIND_DUMP_STATS_AT("loop");
	CALLGRIND_STOP_INSTRUMENTATION;
	printf("c: %ld iterations, %ld empty polls\n", n, empty);
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
