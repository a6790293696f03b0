#!/usr/bin/python3
"""The same work as ``python -m ibverbs perf``, written with rdma-core's
own Python bindings (pyverbs), for the side-by-side comparison in
benchmarks/compare.py.  Run it with the system interpreter, the one
Debian's python3-pyverbs is built for:

    /usr/bin/python3 benchmarks/pyverbs_bench.py write_bw -d rxe0 -x 1 -s 8 -n 20000 -t 256
    /usr/bin/python3 benchmarks/pyverbs_bench.py write_bw -d rxe0 -x 1 -s 8 -l 16
    /usr/bin/python3 benchmarks/pyverbs_bench.py pingpong -d rxe0 -x 1 -s 4096 -n 1000

write_bw: two RC QPs on one device connected to each other; this process
posts RDMA WRITEs on one and the other is the passive target, as with
perftest's server.  The loop is perftest's (and ``ibverbs.perf``'s):
post while (posted - completed + post_list) <= tx_depth, then poll; a
completion stands for max(post_list, cq_mod) WRs.  A list is posted as
one chain through ``SendWR.next_wr``.

pingpong: SEND/RECV ping-pong between two processes (fork), each with its
own QP and CQs, one receive kept posted and reposted as soon as a message
arrived (like ``ibverbs.perf send_lat``).  Reports usec per round trip.

Written against pyverbs' API for this comparison; it prints one JSON
object with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import GID, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ


class Side:
    """Context objects of one QP: PD, a registered buffer, send and
    receive CQs, the QP."""

    def __init__(self, args, ctx=None):
        self.ctx = ctx or Context(name=args.device)
        self.pd = PD(self.ctx)
        self.size = args.size
        self.mr = MR(self.pd, 2 * max(args.size, 64), ACCESS)
        self.scq = CQ(self.ctx, args.tx_depth + 16, None, None, 0)
        self.rcq = CQ(self.ctx, args.rx_depth + 16, None, None, 0)
        cap = QPCap(
            max_send_wr=args.tx_depth, max_recv_wr=args.rx_depth, max_send_sge=1, max_recv_sge=1
        )
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.scq, rcq=self.rcq, cap=cap))
        self.gid = self.ctx.query_gid(args.ib_port, args.gid_index)
        self.args = args

    def info(self) -> tuple:
        return (self.qp.qp_num, self.gid.gid, self.mr.buf, self.mr.rkey)

    def connect(self, remote: tuple, psn: int, rpsn: int) -> None:
        qpn, gid, _, _ = remote
        a = self.args
        attr = QPAttr(qp_state=e.IBV_QPS_INIT)
        attr.qp_access_flags = ACCESS
        attr.port_num = a.ib_port
        attr.pkey_index = 0
        self.qp.to_init(attr)
        gr = GlobalRoute(dgid=self._gid(gid), sgid_index=a.gid_index, hop_limit=1)
        attr = QPAttr(qp_state=e.IBV_QPS_RTR)
        attr.path_mtu = e.IBV_MTU_1024
        attr.dest_qp_num = qpn
        attr.rq_psn = rpsn
        attr.max_dest_rd_atomic = 1
        attr.min_rnr_timer = 1
        attr.ah_attr = AHAttr(port_num=a.ib_port, is_global=1, gr=gr)
        self.qp.to_rtr(attr)
        attr = QPAttr(qp_state=e.IBV_QPS_RTS)
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        attr.sq_psn = psn
        attr.max_rd_atomic = 1
        self.qp.to_rts(attr)

    @staticmethod
    def _gid(text):
        return GID(val=text)


def write_bw(args) -> dict:
    a = Side(args)
    b = Side(args, a.ctx)
    a.connect(b.info(), 0x1000, 0x2000)
    b.connect(a.info(), 0x2000, 0x1000)
    size, plist, depth = args.size, args.post_list, args.tx_depth
    unit = max(plist, args.cq_mod)
    n_units = (args.iters + unit - 1) // unit
    total = n_units * unit
    raddr, rkey = b.mr.buf + size, b.mr.rkey
    # One signaled unit: unit WRs, the last signaled, chained in lists of
    # post_list through next_wr; seq holds the head of each list.
    wrs = []
    for j in range(unit):
        sge = SGE(a.mr.buf, size, a.mr.lkey)
        flags = e.IBV_SEND_SIGNALED if j == unit - 1 else 0
        wr = SendWR(wr_id=j, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[sge], send_flags=flags)
        wr.set_wr_rdma(rkey, raddr)
        wrs.append(wr)
    seq = []
    for k in range(0, unit, plist):
        for j in range(k, k + plist - 1):
            wrs[j].next_wr = wrs[j + 1]
        seq.append(wrs[k])
    per = len(seq)
    post, poll = a.qp.post_send, a.scq.poll
    room = depth - plist
    maxc = depth // unit + 1
    posted = done = 0
    i = 0
    t0 = time.perf_counter()
    while done < total:
        while posted < total and posted - done <= room:
            post(seq[i])
            i += 1
            if i == per:
                i = 0
            posted += plist
        n, _ = poll(maxc)
        done += n * unit
    elapsed = time.perf_counter() - t0
    return {
        "test": "write_bw",
        "size": size,
        "msgs": total,
        "iters": total,
        "seconds": elapsed,
        "msg_rate": total / elapsed,
        "MBps": total * size / elapsed / 1e6,
        "tx_depth": depth,
        "post_list": plist,
        "cq_mod": unit,
        "impl": "pyverbs",
    }


def _pingpong_side(args, client: bool, rfd: int, wfd: int) -> dict | None:
    s = Side(args)
    info = json.dumps(s.info()).encode()
    os.write(wfd, struct.pack(">I", len(info)) + info)
    (n,) = struct.unpack(">I", os.read(rfd, 4))
    remote = json.loads(os.read(rfd, n))
    s.connect(remote, 0x1000 if client else 0x2000, 0x2000 if client else 0x1000)
    size = args.size
    swr = SendWR(
        wr_id=1,
        opcode=e.IBV_WR_SEND,
        num_sge=1,
        sg=[SGE(s.mr.buf, size, s.mr.lkey)],
        send_flags=e.IBV_SEND_SIGNALED,
    )
    rwr = RecvWR(wr_id=2, num_sge=1, sg=[SGE(s.mr.buf + size, size, s.mr.lkey)])
    post_send, post_recv = s.qp.post_send, s.qp.post_recv
    rpoll, spoll = s.rcq.poll, s.scq.poll
    post_recv(rwr)
    # Both receives are posted before the first send: a byte each way.
    os.write(wfd, b"r")
    os.read(rfd, 1)
    last = args.iters - 1
    sent = 0
    t0 = time.perf_counter()
    for i in range(args.iters):
        if client:
            post_send(swr)
        while True:
            n, wcs = rpoll(1)
            if n:
                break
        if wcs[0].status != e.IBV_WC_SUCCESS:
            raise RuntimeError(f"receive failed: status {wcs[0].status}")
        if i != last:
            post_recv(rwr)
        if not client:
            post_send(swr)
        sent += spoll(16)[0]
    elapsed = time.perf_counter() - t0
    while sent < args.iters:
        sent += spoll(16)[0]
    os.write(wfd, b"d")
    os.read(rfd, 1)
    if not client:
        return None
    return {
        "test": "pingpong",
        "size": size,
        "iters": args.iters,
        "seconds": elapsed,
        "rtt_us": elapsed / args.iters * 1e6,
        "lat_us": elapsed / args.iters / 2 * 1e6,
        "impl": "pyverbs",
    }


def pingpong(args) -> dict:
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    cpus = args.cpus.split(",") if args.cpus else None
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if cpus:
                os.sched_setaffinity(0, {int(cpus[0])})
            os.close(r1)
            os.close(w2)
            _pingpong_side(args, False, r2, w1)
            code = 0
        finally:
            os._exit(code)
    if cpus:
        os.sched_setaffinity(0, {int(cpus[1])})
    os.close(w1)
    os.close(r2)
    try:
        res = _pingpong_side(args, True, r1, w2)
    finally:
        _, status = os.waitpid(pid, 0)
    if status != 0:
        raise RuntimeError(f"the pingpong server failed ({status:#x})")
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("test", choices=("write_bw", "pingpong"))
    p.add_argument("-d", "--device", default="rxe0")
    p.add_argument("-i", "--ib-port", type=int, default=1)
    p.add_argument("-x", "--gid-index", type=int, default=1)
    p.add_argument("-s", "--size", type=int, default=8)
    p.add_argument("-n", "--iters", type=int, default=5000)
    p.add_argument("-t", "--tx-depth", type=int, default=128)
    p.add_argument("-r", "--rx-depth", type=int, default=16)
    p.add_argument("-l", "--post-list", type=int, default=1)
    p.add_argument("--cq-mod", type=int, default=1)
    p.add_argument(
        "--cpus",
        help="pingpong: SERVER,CLIENT CPUs to pin the two "
        "processes to (as compare.py pins the C tools)",
    )
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    res = write_bw(args) if args.test == "write_bw" else pingpong(args)
    if args.json:
        print(json.dumps(res))
    elif "rtt_us" in res:
        print(f"pingpong {res['size']} B: {res['rtt_us']:.2f} usec/iter")
    else:
        print(
            f"write_bw {res['size']} B: {res['msg_rate'] / 1e3:.2f} K msg/s, {res['MBps']:.2f} MB/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
