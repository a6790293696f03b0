/*
 * odp-write-loss: does an RDMA WRITE into an on-demand-paging (ODP) memory
 * region land whole?
 *
 * One process, libibverbs only, loopback between two RC QPs on one port of
 * one device.  For a plain MR, an ODP MR whose pages were never touched, and
 * an ODP MR whose pages were written before the registration (resident), it
 * posts signaled RDMA WRITEs of 1 to N packets (the port's active MTU each),
 * each into a fresh region, and checks that each completion is a success;
 * then it compares each region with what was sent, byte by byte, packet by
 * packet, a second after the last write if any fell short at first (a late
 * packet is told apart from a lost one).  For each write it prints how many
 * packets landed where they were sent and, where some did not, a map of
 * the region: one character per packet-sized slot, the number of the
 * packet (0-9, a-v) whose bytes fill it, "." where it is still zero, "?"
 * where it holds anything else.
 *
 *   odp-write-loss [-d DEVICE] [-i PORT] [-g GID_INDEX] [-n PACKETS]
 *
 * Defaults: the first device, port 1, GID index 1 (rxe's IPv4-mapped RoCE v2
 * GID), 16 packets.  Build: cc -O2 -Wall -o odp-write-loss odp-write-loss.c
 * -libverbs.
 *
 * Exit status: 0 when every write that completed with success landed whole
 * (or the kernel refused ODP registration: then ODP has nothing to lose);
 * 3 when a write completed with success but some of its bytes never
 * landed; 1 when the program itself failed (a device, QP or plain MR could
 * not be set up, a write completed with an error).  The last line sums it
 * up: "summary: plain=ok odp-untouched=lost:2-16:page-start odp-resident=..."
 * where a mode is "ok", "refused:<errno name>" or "lost:<write sizes in
 * packets>", followed by ":page-start" when every such write left each
 * packet at the start of the page it was aimed at.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_PACKETS 32
/* How the map names the packet a slot holds: packet 0 is "0", 10 "a". */
static const char packet_digit[MAX_PACKETS + 1] =
	"0123456789abcdefghijklmnopqrstuv";

struct loop {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	struct ibv_mr *src_mr;
	uint8_t *src;
	size_t mtu;
};

enum mode { PLAIN, ODP_UNTOUCHED, ODP_RESIDENT, NMODES };
static const char *const mode_name[NMODES] = { "plain", "odp-untouched",
					       "odp-resident" };

static void die(const char *what, int err)
{
	fprintf(stderr, "odp-write-loss: %s: %s\n", what, strerror(err));
	exit(1);
}

static const char *errno_name(int err)
{
	switch (err) {
	case EINVAL:
		return "EINVAL";
	case EOPNOTSUPP:
		return "EOPNOTSUPP";
	case EPERM:
		return "EPERM";
	case ENOMEM:
		return "ENOMEM";
	case EFAULT:
		return "EFAULT";
	default:
		return strerror(err);
	}
}

static size_t mtu_bytes(enum ibv_mtu mtu)
{
	return (size_t)128 << mtu; /* IBV_MTU_256 is 1 */
}

/* RESET -> INIT -> RTR -> RTS, aimed at the QP numbered REMOTE on this port. */
static void connect_qp(struct ibv_qp *qp, uint32_t remote, uint8_t port,
		       int gid_index, const union ibv_gid *gid,
		       enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = port,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_LOCAL_WRITE,
	};
	int err = ibv_modify_qp(qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS);
	if (err)
		die("modify QP to INIT", err);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = remote;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = port;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 1;
	err = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER);
	if (err)
		die("modify QP to RTR", err);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	err = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				    IBV_QP_MAX_QP_RD_ATOMIC);
	if (err)
		die("modify QP to RTS", err);
}

static void open_loop(struct loop *l, const char *devname, uint8_t port,
		      int gid_index)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int i, err;

	if (!list || !list[0]) {
		fprintf(stderr, "odp-write-loss: no RDMA device\n");
		exit(1);
	}
	for (i = 0; list[i]; i++)
		if (!devname ||
		    !strcmp(ibv_get_device_name(list[i]), devname)) {
			dev = list[i];
			break;
		}
	if (!dev) {
		fprintf(stderr, "odp-write-loss: no device %s\n", devname);
		exit(1);
	}
	l->ctx = ibv_open_device(dev);
	if (!l->ctx)
		die("ibv_open_device", errno);
	ibv_free_device_list(list);
	if ((err = ibv_query_port(l->ctx, port, &pa)))
		die("ibv_query_port", err);
	if ((err = ibv_query_gid(l->ctx, port, gid_index, &gid)))
		die("ibv_query_gid", err);
	l->mtu = mtu_bytes(pa.active_mtu);
	l->pd = ibv_alloc_pd(l->ctx);
	if (!l->pd)
		die("ibv_alloc_pd", errno);
	l->cq = ibv_create_cq(l->ctx, 16, NULL, NULL, 0);
	if (!l->cq)
		die("ibv_create_cq", errno);
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr init = {
			.send_cq = l->cq,
			.recv_cq = l->cq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4,
				 .max_recv_wr = 4,
				 .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		l->qp[i] = ibv_create_qp(l->pd, &init);
		if (!l->qp[i])
			die("ibv_create_qp", errno);
	}
	connect_qp(l->qp[0], l->qp[1]->qp_num, port, gid_index, &gid,
		   pa.active_mtu);
	connect_qp(l->qp[1], l->qp[0]->qp_num, port, gid_index, &gid,
		   pa.active_mtu);
	printf("device %s port %u, GID index %d, active MTU %zu bytes\n",
	       ibv_get_device_name(dev), port, gid_index, l->mtu);
}

/* The byte that packet P of a write of N packets carries: never 0, so that
 * an untouched (zero) page never passes for a landed one, and different
 * from one write to the next. */
static uint8_t pattern(int n, int p)
{
	return (uint8_t)(1 + (n * 37 + p * 11) % 255);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Post one signaled RDMA WRITE of LEN bytes from the source to ADDR/RKEY
 * and wait for its completion (10 s at most); return its status. */
static enum ibv_wc_status write_and_wait(struct loop *l, uint64_t addr,
					 uint32_t rkey, size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)l->src,
			       .length = (uint32_t)len,
			       .lkey = l->src_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = len,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = addr, .rkey = rkey},
	}, *bad;
	struct ibv_wc wc;
	double deadline = now() + 10;
	int err = ibv_post_send(l->qp[0], &wr, &bad), got;

	if (err)
		die("ibv_post_send", err);
	while ((got = ibv_poll_cq(l->cq, 1, &wc)) == 0)
		if (now() > deadline) {
			fprintf(stderr,
				"odp-write-loss: no completion in 10 s\n");
			exit(1);
		}
	if (got < 0)
		die("ibv_poll_cq", EIO);
	return wc.status;
}

/* What slot P (the packet-sized piece at P * MTU) of DST holds after a
 * write of N packets: the packet number whose bytes fill it whole, -1 if it
 * is still zero, -2 if it holds anything else. */
static int slot_holds(const struct loop *l, const uint8_t *dst, int n, int p)
{
	const uint8_t *s = dst + p * l->mtu;
	int q;
	size_t i;

	for (i = 1; i < l->mtu && s[i] == s[0]; i++)
		;
	if (i < l->mtu)
		return -2;
	if (s[0] == 0)
		return -1;
	for (q = 0; q < n; q++)
		if (s[0] == pattern(n, q))
			return q;
	return -2;
}

/* Map the slots of DST after a write of N packets into MAP (a string of N
 * characters: the packet each slot holds, "." zero, "?" other bytes) and
 * count those that hold their own packet. */
static int map_slots(const struct loop *l, const uint8_t *dst, int n, char *map)
{
	int p, k = 0;

	for (p = 0; p < n; p++) {
		int q = slot_holds(l, dst, n, p);
		map[p] = q >= 0 ? packet_digit[q] : q == -1 ? '.' : '?';
		k += q == p;
	}
	map[n] = 0;
	return k;
}

/* The map a write of N packets leaves if each packet's bytes go to the
 * start of the page it is aimed at (its offset in the page dropped): the
 * first slot of each page holds the last packet aimed into that page, the
 * other slots stay zero.  Pages and packets start at page-aligned DST. */
static void page_start_map(const struct loop *l, int n, size_t page, char *map)
{
	int p;

	for (p = 0; p < n; p++)
		map[p] = '.';
	for (p = 0; p < n; p++)
		map[(p * l->mtu) / page * page / l->mtu] = packet_digit[p];
	map[n] = 0;
}

/* Write the sorted write sizes SIZES[0..COUNT) to OUT as ranges: "2-5,7". */
static void format_ranges(const int *sizes, int count, char *out,
			  size_t outsize)
{
	size_t used = 0;
	int i = 0, j;

	out[0] = 0;
	while (i < count && used < outsize) {
		for (j = i; j + 1 < count && sizes[j + 1] == sizes[j] + 1; j++)
			;
		used += snprintf(out + used, outsize - used,
				 j == i ? "%s%d" : "%s%d-%d", i ? "," : "",
				 sizes[i], sizes[j]);
		i = j + 1;
	}
}

/* Run the writes of 1..MAXN packets in MODE; write its summary to OUT. */
static int run_mode(struct loop *l, enum mode mode, int maxn, char *out,
		    size_t outsize)
{
	int n, nlost = 0, lost[MAX_PACKETS + 1], page_start = 1, short_any = 0;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), maplen[MAX_PACKETS + 1];
	uint8_t *dst[MAX_PACKETS + 1];
	struct ibv_mr *mr[MAX_PACKETS + 1];
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	char map[MAX_PACKETS + 1], predicted[MAX_PACKETS + 1];

	if (mode != PLAIN)
		access |= IBV_ACCESS_ON_DEMAND;
	/* Every write first, each into a region of its own... */
	for (n = 1; n <= maxn; n++) {
		size_t len = n * l->mtu;
		enum ibv_wc_status st;
		int p;

		maplen[n] = (len + page - 1) / page * page;
		dst[n] = mmap(NULL, maplen[n], PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (dst[n] == MAP_FAILED)
			die("mmap", errno);
		if (mode !=
		    ODP_UNTOUCHED) /* resident before the registration */
			memset(dst[n], 0, maplen[n]);
		mr[n] = ibv_reg_mr(l->pd, dst[n], maplen[n], access);
		if (!mr[n]) {
			int err = errno;
			if (mode == PLAIN)
				die("ibv_reg_mr (plain)", err);
			printf("%-13s registration refused: %s (%s)\n",
			       mode_name[mode], errno_name(err), strerror(err));
			snprintf(out, outsize, "refused:%s", errno_name(err));
			munmap(dst[n], maplen[n]);
			return 0;
		}
		for (p = 0; p < n; p++)
			memset(l->src + p * l->mtu, pattern(n, p), l->mtu);
		st = write_and_wait(l, (uintptr_t)dst[n], mr[n]->rkey, len);
		if (st != IBV_WC_SUCCESS) {
			fprintf(stderr,
				"odp-write-loss: %s write of %d packets completed with %s\n",
				mode_name[mode], n, ibv_wc_status_str(st));
			exit(1);
		}
		short_any |= map_slots(l, dst[n], n, map) < n;
	}
	/* ...then, a second later if any fell short (late, or lost?), what
	 * each region holds. */
	if (short_any)
		sleep(1);
	for (n = 1; n <= maxn; n++) {
		int k = map_slots(l, dst[n], n, map);

		printf("%-13s write of %2d packets (%6zu bytes): success, %2d of %2d packets landed",
		       mode_name[mode], n, n * l->mtu, k, n);
		if (k < n) {
			printf(" [%s]  %zu bytes not where they were sent", map,
			       (size_t)(n - k) * l->mtu);
			lost[nlost++] = n;
			page_start_map(l, n, page, predicted);
			page_start &= !strcmp(map, predicted);
		}
		putchar('\n');
		ibv_dereg_mr(mr[n]);
		munmap(dst[n], maplen[n]);
	}
	if (nlost) {
		memcpy(out, "lost:", 6);
		format_ranges(lost, nlost, out + 5, outsize - 5);
		if (page_start) {
			printf("%-13s each write that lost data left each packet at the start of the page it was aimed "
			       "at (its offset in the %zu-byte page dropped)\n",
			       mode_name[mode], page);
			strncat(out, ":page-start", outsize - strlen(out) - 1);
		}
	} else {
		snprintf(out, outsize, "ok");
	}
	return nlost > 0;
}

int main(int argc, char **argv)
{
	const char *devname = NULL;
	int port = 1, gid_index = 1, maxn = 16, opt, m, lost = 0;
	char summary[NMODES][600];
	struct loop l = { 0 };

	while ((opt = getopt(argc, argv, "d:i:g:n:h")) != -1) {
		switch (opt) {
		case 'd':
			devname = optarg;
			break;
		case 'i':
			port = atoi(optarg);
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'n':
			maxn = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-d DEVICE] [-i PORT] [-g GID_INDEX] [-n PACKETS (1-%d)]\n",
				argv[0], MAX_PACKETS);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (maxn < 1 || maxn > MAX_PACKETS || port < 1 || port > 255 ||
	    gid_index < 0) {
		fprintf(stderr, "odp-write-loss: bad -n, -i or -g\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	open_loop(&l, devname, (uint8_t)port, gid_index);
	l.src = malloc(maxn * l.mtu);
	if (!l.src)
		die("malloc", ENOMEM);
	l.src_mr =
		ibv_reg_mr(l.pd, l.src, maxn * l.mtu, IBV_ACCESS_LOCAL_WRITE);
	if (!l.src_mr)
		die("ibv_reg_mr (source)", errno);
	for (m = 0; m < NMODES; m++) {
		int lost_here = run_mode(&l, (enum mode)m, maxn, summary[m],
					 sizeof(summary[m]));
		if (m == PLAIN && lost_here) {
			fprintf(stderr,
				"odp-write-loss: a plain MR lost data: the loopback itself is broken\n");
			return 1;
		}
		lost |= lost_here;
	}
	printf("summary:");
	for (m = 0; m < NMODES; m++)
		printf(" %s=%s", mode_name[m], summary[m]);
	putchar('\n');
	ibv_destroy_qp(l.qp[0]);
	ibv_destroy_qp(l.qp[1]);
	ibv_dereg_mr(l.src_mr);
	ibv_destroy_cq(l.cq);
	ibv_dealloc_pd(l.pd);
	ibv_close_device(l.ctx);
	free(l.src);
	return lost ? 3 : 0;
}
