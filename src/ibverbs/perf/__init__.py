"""perftest-style benchmarks from Python: ``python -m ibverbs perf``.

    python -m ibverbs perf write_bw -d rxe0 -x 1 --loopback -s 8 -n 100000
    python -m ibverbs perf write_bw -d rxe0 -x 1 --loopback -a --json
    python -m ibverbs perf send_lat -d mlx5_0 -x 3            # server
    python -m ibverbs perf send_lat -d mlx5_0 -x 3 SERVER     # client

Like perftest, a server and a client exchange their QP information (and
the buffer's address and rkey) over TCP, then the client drives the test:
``write_bw``, ``read_bw`` and ``send_bw`` measure bandwidth and message
rate, ``write_lat`` and ``send_lat`` latency (one-way, half the round
trip, as perftest reports it; ``rtt_us`` is the whole round trip).
``--loopback`` forks the server as a child process on 127.0.0.1 (both
ends on one device).  ``-s`` takes one size or a list (``8,64,4K,1M``),
``-a`` sweeps 8 B to 1 MiB; one connection serves every size.

Posting for the bandwidth tests (perftest's scheme): WRs are posted while
fewer than ``--tx-depth`` are outstanding; by default every WR is posted
alone and signaled.  ``--post-list N`` posts chained lists of N WRs with
one ``post_send`` call, only the last one signaled; ``--cq-mod M`` signals
every M-th WR (both: M must be a multiple of N, like perftest, which sets
M = N).  Completions are reaped with ``CQ.poll_count`` (the
zero-allocation path); with several QPs, ``CQ.poll`` attributes each
completion to its QP by ``wc.qp_num``.

The hot loops bind methods to locals, reuse the same WR objects (they hold
their native ``ibv_send_wr``, so posting converts nothing) and count
posts in WRs, like perftest.
"""

from __future__ import annotations

import argparse
import itertools
import json
import mmap
import os
import socket
import struct
import sys
import time

import ibverbs as ib

TESTS = ("write_bw", "read_bw", "send_bw", "write_lat", "send_lat")
BW_TESTS = ("write_bw", "read_bw", "send_bw")
SWEEP = tuple(1 << i for i in range(3, 21))  # 8 B .. 1 MiB
_HDR = struct.Struct(">I")
_CFG_KEYS = (
    "test",
    "sizes",
    "iters",
    "max_bytes",
    "tx_depth",
    "rx_depth",
    "qps",
    "post_list",
    "cq_mod",
    "inline",
    "timeout",
)


class PerfError(Exception):
    """A benchmark cannot run as asked (bad options, the two sides disagree); the
    CLI prints it and exits 1.
    """


# ---------------------------------------------------------------- TCP side


def _send_msg(sock: socket.socket, obj) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(_HDR.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise PerfError("the peer closed the control connection")
        buf += chunk
    return bytes(buf)


def _recv_msg(sock: socket.socket):
    (n,) = _HDR.unpack(_recv_exact(sock, _HDR.size))
    if n > 1 << 20:
        raise PerfError("control message too large")
    msg = json.loads(_recv_exact(sock, n))
    if isinstance(msg, dict) and "error" in msg:
        raise PerfError(f"peer: {msg['error']}")
    return msg


# --------------------------------------------------------------- options


def parse_size(text: str) -> int:
    """Bytes from ``"64"``, ``"4K"``, ``"1M"``, ``"1G"`` (a trailing ``B``
    allowed), for argparse.

    Raises:
        argparse.ArgumentTypeError: not a size, or outside 1 B .. 1 GiB.
    """
    t = text.strip().upper().rstrip("B")
    mult = 1
    if t and t[-1] in "KMG":
        mult = 1 << {"K": 10, "M": 20, "G": 30}[t[-1]]
        t = t[:-1]
    try:
        n = int(t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {text!r}") from None
    if not 1 <= n <= 1 << 30:
        raise argparse.ArgumentTypeError(f"size {text!r} out of 1 B .. 1 GiB")
    return n


def parse_sizes(text: str) -> list[int]:
    """The sizes of a comma-separated list (``"64,4K,1M"``), for argparse.

    Raises:
        argparse.ArgumentTypeError: as ``parse_size``.
    """
    return [parse_size(s) for s in text.split(",") if s.strip()]


def iters_for(args, size: int) -> int:
    """Iterations at this size: --iters, capped by --max-bytes (at least 16)."""
    n = args.iters
    if args.max_bytes:
        n = min(n, max(16, args.max_bytes // size))
    return max(1, n)


def unit_of(args) -> int:
    """WRs per signaled completion."""
    return max(args.post_list, args.cq_mod)


def check_args(args) -> None:
    """Check the options that depend on each other; calls no verb.

    Raises:
        PerfError: --post-list/--cq-mod/--qps/--tx-depth/--rx-depth below
            1, --cq-mod not a multiple of --post-list or above --tx-depth,
            several QPs for a latency test, or a bad --cpus list.
    """
    if args.post_list < 1 or args.cq_mod < 1:
        raise PerfError("--post-list and --cq-mod must be >= 1")
    if unit_of(args) % args.post_list:
        raise PerfError("--cq-mod must be a multiple of --post-list")
    if args.test in BW_TESTS and unit_of(args) > args.tx_depth:
        raise PerfError("--post-list and --cq-mod must not exceed --tx-depth")
    if args.qps < 1 or args.tx_depth < 1 or args.rx_depth < 1:
        raise PerfError("--qps, --tx-depth and --rx-depth must be >= 1")
    if args.test not in BW_TESTS and args.qps != 1:
        raise PerfError("the latency tests use one QP")
    _parse_cpus(args.cpus)


# --------------------------------------------------------------- resources


class Endpoint:
    """One side: context, PD, one page-aligned buffer and its MR, a send CQ
    and a receive CQ shared by every QP, and the QPs.

    Buffer layout, per QP i, S = the largest size: a source slot at
    2*i*S and a landing slot at (2*i + 1)*S.  Writes and sends go from
    the local source slot to the peer's landing slot; reads fetch the
    peer's source slot into the local landing slot."""

    def __init__(self, args):
        self.args = args
        self.ctx = ib.Context(args.device)
        self.pd = self.ctx.alloc_pd()
        self.slot = max(max(args.sizes), 64)
        nbuf = 2 * self.slot * args.qps
        self.buflen = (nbuf + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
        self.buf = mmap.mmap(-1, self.buflen)
        self.access = (
            ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE | ib.AccessFlags.REMOTE_READ
        )
        self.mr = ib.reg_tensor(self.pd, self.buf, self.access)
        depth = max(args.tx_depth, 16) * args.qps
        self.scq = self.ctx.create_cq(depth + 16)
        self.rcq = self.ctx.create_cq(max(args.rx_depth, 16) * args.qps + 16)
        self.qps = [
            self.pd.create_qp(
                ib.QPInitAttr(
                    send_cq=self.scq,
                    recv_cq=self.rcq,
                    qp_type=ib.QPType.RC,
                    max_send_wr=max(args.tx_depth, 16),
                    max_recv_wr=args.rx_depth,
                    max_send_sge=1,
                    max_recv_sge=1,
                    max_inline_data=args.inline,
                )
            )
            for _ in range(args.qps)
        ]
        self.port_attr = self.ctx.query_port(args.ib_port)
        self.gid = self.ctx.query_gid(args.ib_port, args.gid_index)
        self.remote: dict = {}

    def src(self, i: int) -> int:
        """The offset of QP ``i``'s source slot in the buffer."""
        return 2 * i * self.slot

    def landing(self, i: int) -> int:
        """The offset of QP ``i``'s landing slot in the buffer."""
        return (2 * i + 1) * self.slot

    def info(self) -> dict:
        """What the peer needs, as JSON-ready values: each QP's QPInfo (hex), the
        MR's address, rkey and length, the slot size.  Calls no verb.
        """
        qps = [
            ib.local_qp_info(
                qp, self.port_attr, self.gid, port=self.args.ib_port, psn=(0x1000 + i) & 0xFFFFFF
            )
            for i, qp in enumerate(self.qps)
        ]
        return {
            "qps": [q.to_bytes().hex() for q in qps],
            "addr": self.mr.addr,
            "rkey": self.mr.rkey,
            "len": self.buflen,
            "slot": self.slot,
        }

    def connect(self, remote: dict) -> None:
        """Connect each QP to the peer's QP of the same index with
        ``ibverbs.connect_rc`` (``ibv_modify_qp``, man page ibv_modify_qp(3)),
        read/atomic depth the device's ``max_qp_rd_atom`` up to 16.

        Raises:
            PerfError: the two sides disagree on the QPs or the buffer.
            VerbsError: a transition failed.
        """
        if len(remote["qps"]) != len(self.qps) or remote["slot"] != self.slot:
            raise PerfError("the two sides disagree on the QPs or the buffer")
        rd = max(1, min(16, self.ctx.query_device().max_qp_rd_atom))
        for i, (qp, r) in enumerate(zip(self.qps, remote["qps"])):
            ib.connect_rc(
                qp,
                ib.QPInfo.from_bytes(bytes.fromhex(r)),
                port=self.args.ib_port,
                sgid_index=self.args.gid_index,
                access=self.access,
                local_psn=(0x1000 + i) & 0xFFFFFF,
                max_rd_atomic=rd,
                max_dest_rd_atomic=rd,
                min_rnr_timer=1,
            )
        self.remote = remote

    def remote_addr(self, off: int) -> int:
        """The peer's address at offset ``off`` of its buffer."""
        return self.remote["addr"] + off

    def close(self) -> None:
        """Close the QPs, CQs, MR, PD and Context, in that order (``ibv_destroy_qp``,
        ``ibv_dereg_mr``, ...; man page ibv_create_qp(3) and the others).

        Raises:
            VerbsError: a close was refused (EBUSY).
        """
        for qp in self.qps:
            qp.close()
        self.scq.close()
        self.rcq.close()
        self.mr.close()
        self.pd.close()
        self.ctx.close()


def _flags(args, size: int):
    return ib.SendFlags.INLINE if (args.inline and size <= args.inline) else 0


class _Deadline:
    """Checked only when a poll found nothing: idle time, not the hot path."""

    def __init__(self, seconds: float, what: str):
        self.t = time.monotonic() + seconds if seconds else None
        self.what = what

    def check(self, detail: str = "") -> None:
        if self.t is not None and time.monotonic() > self.t:
            raise PerfError(f"{self.what}: no progress before the timeout {detail}")


# ------------------------------------------------------- bandwidth tests


def _bw_items(ep: Endpoint, qi: int, opcode, size: int):
    """The post_send arguments for one signaled unit of QP qi: a list of
    one argument per post call (a SendWR, or a SendWRChain of post_list
    WRs: linked once, posted as is every time)."""
    a = ep.args
    unit, plist = unit_of(a), a.post_list
    flags = _flags(a, size) if opcode != ib.WROpcode.RDMA_READ else 0
    if opcode == ib.WROpcode.RDMA_READ:
        sge, raddr = ib.SGE(ep.mr, size, offset=ep.landing(qi)), ep.remote_addr(ep.src(qi))
    else:
        sge, raddr = ib.SGE(ep.mr, size, offset=ep.src(qi)), ep.remote_addr(ep.landing(qi))
    wrs = [
        ib.SendWR(
            wr_id=qi,
            sg_list=[sge],
            opcode=opcode,
            send_flags=flags | (ib.SendFlags.SIGNALED if j == unit - 1 else 0),
            remote_addr=raddr if opcode != ib.WROpcode.SEND else 0,
            rkey=ep.remote["rkey"] if opcode != ib.WROpcode.SEND else 0,
        )
        for j in range(unit)
    ]
    if plist == 1:
        return wrs
    return [ib.SendWRChain(wrs[k : k + plist]) for k in range(0, unit, plist)]


def _bw_client(ep: Endpoint, opcode, size: int, iters: int) -> dict:
    """perftest's loop: post while (posted - completed + post_list) <=
    tx_depth, then poll; a completion stands for `unit` WRs."""
    a = ep.args
    unit, plist, depth = unit_of(a), a.post_list, a.tx_depth
    n_units = (iters + unit - 1) // unit
    total = n_units * unit  # WRs per QP
    nq = len(ep.qps)
    items = [_bw_items(ep, qi, opcode, size) for qi in range(nq)]
    poll_count = ep.scq.poll_count
    room = depth - plist  # post while posted - done <= room
    dl = _Deadline(a.timeout, f"{a.test} size {size}")
    spins = 0
    t0 = time.perf_counter()
    if nq == 1 and len(items[0]) == 1:
        # The common case: one post_send argument per completion.
        post, item, repeat = ep.qps[0].post_send, items[0][0], itertools.repeat
        maxo = depth // unit  # completions outstanding at most
        maxc = maxo + 1
        posted = done = 0  # in units
        while done < n_units:
            k = done + maxo
            if k > n_units:
                k = n_units
            k -= posted
            if k > 0:
                for _ in repeat(None, k):
                    post(item)
                posted += k
            got = poll_count(maxc)
            if got:
                done += got
            else:
                spins += 1
                if not spins & 0x3FFF:
                    dl.check(f"({done} of {n_units} completions)")
    elif nq == 1:
        # Several posts per completion (--cq-mod > --post-list).
        post, seq = ep.qps[0].post_send, items[0]
        per = len(seq)
        maxc = depth // unit + 1
        posted = done = 0  # in WRs
        i = 0
        while done < total:
            while posted < total and posted - done <= room:
                post(seq[i])
                i += 1
                if i == per:
                    i = 0
                posted += plist
            got = poll_count(maxc)
            if got:
                done += got * unit
            else:
                spins += 1
                if not spins & 0x3FFF:
                    dl.check(f"({done} of {total} WRs)")
    else:
        posts = [qp.post_send for qp in ep.qps]
        index = {qp.qp_num: qi for qi, qp in enumerate(ep.qps)}
        sent_q = [0] * nq  # WRs posted, per QP
        done_q = [0] * nq  # WRs completed, per QP
        nxt = [0] * nq
        per = len(items[0])
        poll = ep.scq.poll
        maxc = nq * (depth // unit + 1)
        finished = 0
        while finished < total * nq:
            for qi in range(nq):
                post, seq = posts[qi], items[qi]
                while sent_q[qi] < total and sent_q[qi] - done_q[qi] <= room:
                    post(seq[nxt[qi]])
                    nxt[qi] = (nxt[qi] + 1) % per
                    sent_q[qi] += plist
            wcs = poll(maxc)
            if not wcs:
                spins += 1
                if not spins & 0x3FFF:
                    dl.check(f"({finished} of {total * nq} WRs)")
            for wc in wcs:
                wc.raise_for_status()
                done_q[index[wc.qp_num]] += unit
                finished += unit
    elapsed = time.perf_counter() - t0
    msgs = total * nq
    return {
        "msgs": msgs,
        "iters": total,
        "seconds": elapsed,
        "msg_rate": msgs / elapsed,
        "MBps": msgs * size / elapsed / 1e6,
        "empty_polls": spins,
    }


def _send_bw_server(ep: Endpoint, size: int, iters: int, conn) -> None:
    """Keep rx_depth receives posted on every QP until every send arrived."""
    a = ep.args
    unit = unit_of(a)
    total = (iters + unit - 1) // unit * unit
    nq = len(ep.qps)
    depth = a.rx_depth
    rwrs = [
        [
            ib.RecvWR(wr_id=qi, sg_list=[ib.SGE(ep.mr, size, offset=ep.landing(qi))])
            for _ in range(depth)
        ]
        for qi in range(nq)
    ]
    posted = [min(depth, total)] * nq
    for qi, qp in enumerate(ep.qps):
        qp.post_recv(rwrs[qi][: posted[qi]])
    _send_msg(conn, {"ready": True})
    dl = _Deadline(a.timeout, f"send_bw server size {size}")
    got_all = 0
    spins = 0
    if nq == 1:
        post_recv, lst, poll_count = ep.qps[0].post_recv, rwrs[0], ep.rcq.poll_count
        p = posted[0]
        while got_all < total:
            n = poll_count(depth)
            if not n:
                spins += 1
                if not spins & 0x3FFF:
                    dl.check(f"({got_all} of {total} receives)")
                continue
            got_all += n
            k = min(n, total - p)
            if k > 0:
                post_recv(lst[:k])
                p += k
        return
    index = {qp.qp_num: qi for qi, qp in enumerate(ep.qps)}
    poll = ep.rcq.poll
    while got_all < total * nq:
        wcs = poll(depth)
        if not wcs:
            spins += 1
            if not spins & 0x3FFF:
                dl.check(f"({got_all} of {total * nq} receives)")
            continue
        freed = [0] * nq
        for wc in wcs:
            wc.raise_for_status()
            freed[index[wc.qp_num]] += 1
        got_all += len(wcs)
        for qi, n in enumerate(freed):
            k = min(n, total - posted[qi])
            if k > 0:
                ep.qps[qi].post_recv(rwrs[qi][:k])
                posted[qi] += k


# --------------------------------------------------------- latency tests


def _write_lat(ep: Endpoint, size: int, iters: int, client: bool) -> dict:
    """Ping-pong by RDMA writes (perftest's write_lat): each side writes
    its source slot into the peer's landing slot and spins on the last
    byte of its own landing slot for the peer's write."""
    a = ep.args
    qp = ep.qps[0]
    flags = ib.SendFlags.SIGNALED | _flags(a, size)
    wr = ib.SendWR(
        wr_id=1,
        sg_list=[ib.SGE(ep.mr, size, offset=ep.src(0))],
        opcode=ib.WROpcode.RDMA_WRITE,
        send_flags=flags,
        remote_addr=ep.remote_addr(ep.landing(0)),
        rkey=ep.remote["rkey"],
    )
    buf = ep.buf
    src, dst = ep.src(0) + size - 1, ep.landing(0) + size - 1
    post, poll_count = qp.post_send, ep.scq.poll_count
    dl = _Deadline(a.timeout, f"write_lat size {size}")
    spins = 0
    t0 = time.perf_counter()
    for i in range(iters):
        mark = i % 255 + 1
        if not client:
            while buf[dst] != mark:
                spins += 1
                if not spins & 0xFFFF:
                    dl.check(f"(iteration {i})")
        buf[src] = mark
        post(wr)
        while not poll_count(1):
            pass
        if client:
            while buf[dst] != mark:
                spins += 1
                if not spins & 0xFFFF:
                    dl.check(f"(iteration {i})")
    elapsed = time.perf_counter() - t0
    return {
        "iters": iters,
        "seconds": elapsed,
        "rtt_us": elapsed / iters * 1e6,
        "lat_us": elapsed / iters / 2 * 1e6,
    }


def _send_lat(ep: Endpoint, size: int, iters: int, client: bool, conn) -> dict:
    """Ping-pong by SEND/RECV.  One receive is kept posted; a side reposts
    it as soon as a message arrived, before it answers, so the peer never
    finds it missing (the last one is not reposted: the next size posts
    its own).  Send completions are reaped on the way, without waiting."""
    a = ep.args
    qp = ep.qps[0]
    swr = ib.SendWR(
        wr_id=1,
        sg_list=[ib.SGE(ep.mr, size, offset=ep.src(0))],
        opcode=ib.WROpcode.SEND,
        send_flags=ib.SendFlags.SIGNALED | _flags(a, size),
    )
    rwr = ib.RecvWR(wr_id=2, sg_list=[ib.SGE(ep.mr, size, offset=ep.landing(0))])
    post_send, post_recv = qp.post_send, qp.post_recv
    rpoll, spoll = ep.rcq.poll_count, ep.scq.poll_count
    post_recv(rwr)
    # Both sides have their receive posted before the first send.
    if client:
        _recv_msg(conn)
    else:
        _send_msg(conn, {"ready": True})
    dl = _Deadline(a.timeout, f"send_lat size {size}")
    sent = spins = 0
    t0 = time.perf_counter()
    if client:
        for _ in range(iters - 1):
            post_send(swr)
            while not rpoll(1):
                spins += 1
                if not spins & 0xFFFF:
                    dl.check("(waiting for a reply)")
            post_recv(rwr)
            sent += spoll(16)
        post_send(swr)
        while not rpoll(1):
            spins += 1
            if not spins & 0xFFFF:
                dl.check("(waiting for the last reply)")
    else:
        for _ in range(iters - 1):
            while not rpoll(1):
                spins += 1
                if not spins & 0xFFFF:
                    dl.check("(waiting for a message)")
            post_recv(rwr)
            post_send(swr)
            sent += spoll(16)
        while not rpoll(1):
            spins += 1
            if not spins & 0xFFFF:
                dl.check("(waiting for the last message)")
        post_send(swr)
    elapsed = time.perf_counter() - t0
    while sent < iters:
        got = spoll(16)
        sent += got
        if not got:
            spins += 1
            if not spins & 0xFFFF:
                dl.check("(send completions)")
    return {
        "iters": iters,
        "seconds": elapsed,
        "rtt_us": elapsed / iters * 1e6,
        "lat_us": elapsed / iters / 2 * 1e6,
    }


# ------------------------------------------------------------- driver


def _clear(ep: Endpoint) -> None:
    ep.buf[:] = bytes(ep.buflen)


def _server_size(ep: Endpoint, conn, size: int, iters: int) -> None:
    a = ep.args
    _clear(ep)
    if a.test == "send_bw":
        _send_bw_server(ep, size, iters, conn)
    elif a.test == "send_lat":
        _send_lat(ep, size, iters, False, conn)
    else:
        _send_msg(conn, {"ready": True})
        if a.test == "write_lat":
            _write_lat(ep, size, iters, client=False)


def run_server(args) -> int:
    """Serve one client: take its options over TCP, build the Endpoint,
    exchange QPInfo, run the test's passive side.  Returns the exit code.

    Raises:
        PerfError: the client's options are inconsistent.
        VerbsError: a verb failed.
        OSError: the TCP side failed (e.g. the port is taken).
    """
    host = "127.0.0.1" if args.loopback else ""
    with socket.create_server((host, args.port)) as srv:
        if args.ready_fd is not None:
            os.write(args.ready_fd, b"ok")
            os.close(args.ready_fd)
        srv.settimeout(args.timeout or None)
        conn, _ = srv.accept()
    with conn:
        conn.settimeout(None)
        cfg = _recv_msg(conn)
        for k in _CFG_KEYS:
            setattr(args, k, cfg[k])
        try:
            check_args(args)
            ep = Endpoint(args)
        except (PerfError, ib.VerbsError) as e:
            _send_msg(conn, {"error": str(e)})
            raise
        try:
            _send_msg(conn, ep.info())
            ep.connect(_recv_msg(conn))
            _send_msg(conn, {"connected": True})
            while True:
                msg = _recv_msg(conn)
                if "bye" in msg:
                    break
                _server_size(ep, conn, msg["size"], msg["iters"])
                _recv_msg(conn)  # the client's "finished"
                _send_msg(conn, {"finished": True})
        finally:
            ep.close()
    return 0


def run_client(args, emit=None) -> list[dict]:
    """Run every size; returns the results (and calls emit(result) as each
    one is ready)."""
    check_args(args)
    results = []
    with socket.create_connection((args.server, args.port), timeout=60) as conn:
        conn.settimeout(None)
        _send_msg(conn, {k: getattr(args, k) for k in _CFG_KEYS})
        ep = Endpoint(args)
        try:
            remote = _recv_msg(conn)
            _send_msg(conn, ep.info())
            ep.connect(remote)
            _recv_msg(conn)
            op = {
                "write_bw": ib.WROpcode.RDMA_WRITE,
                "read_bw": ib.WROpcode.RDMA_READ,
                "send_bw": ib.WROpcode.SEND,
            }.get(args.test)
            for size in args.sizes:
                iters = iters_for(args, size)
                _clear(ep)
                _send_msg(conn, {"size": size, "iters": iters})
                if args.test == "send_lat":
                    res = _send_lat(ep, size, iters, True, conn)
                else:
                    _recv_msg(conn)  # the server is ready
                    if args.test == "write_lat":
                        res = _write_lat(ep, size, iters, client=True)
                    else:
                        res = _bw_client(ep, op, size, iters)
                _send_msg(conn, {"finished": True})
                _recv_msg(conn)
                res.update(
                    {
                        "test": args.test,
                        "size": size,
                        "qps": args.qps,
                        "tx_depth": args.tx_depth,
                        "post_list": args.post_list,
                        "cq_mod": unit_of(args) if args.test in BW_TESTS else 1,
                        "inline": args.inline,
                        "device": args.device,
                        "impl": "ibverbs",
                    }
                )
                results.append(res)
                if emit is not None:
                    emit(res)
            _send_msg(conn, {"bye": True})
        finally:
            ep.close()
    return results


def _parse_cpus(text):
    if not text:
        return None
    try:
        server, client = (int(c) for c in text.split(","))
    except ValueError:
        raise PerfError(f"--cpus wants SERVER,CLIENT CPU numbers, got {text!r}") from None
    return server, client


def run_loopback(args, emit=None) -> list[dict]:
    """The server in a forked child (it shares the imports: no second
    interpreter start-up), the client here; both on 127.0.0.1.  Nothing of
    verbs is open yet when it forks."""
    cpus = _parse_cpus(args.cpus)
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if cpus:
                os.sched_setaffinity(0, {cpus[0]})
            os.close(r)
            args.ready_fd, args.server_only = w, True
            code = run_server(args)
        except BaseException as e:  # the child must never return
            print(f"perf server: {type(e).__name__}: {e}", file=sys.stderr)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(w)
    if cpus:
        os.sched_setaffinity(0, {cpus[1]})
    try:
        ok = os.read(r, 2)
        os.close(r)
        if ok != b"ok":
            raise PerfError("the perf server failed to start")
        args.server = "127.0.0.1"
        results = run_client(args, emit)
    except BaseException:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        raise
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise PerfError(f"the perf server failed (wait status {status:#x})")
    return results


def format_header(test: str) -> str:
    """The header line of the text output for ``test``."""
    if test in BW_TESTS:
        return f"{'test':<10} {'bytes':>8} {'msgs':>9} {'K msg/s':>10} {'MB/s':>10}"
    return f"{'test':<10} {'bytes':>8} {'iters':>9} {'t_avg[us]':>10} {'rtt[us]':>10}"


def format_result(res: dict) -> str:
    """One result (a dict of ``run_client``) as a text line."""
    if "lat_us" in res:
        return (
            f"{res['test']:<10} {res['size']:>8} {res['iters']:>9} "
            f"{res['lat_us']:10.2f} {res['rtt_us']:10.2f}"
        )
    return (
        f"{res['test']:<10} {res['size']:>8} {res['msgs']:>9} "
        f"{res['msg_rate'] / 1e3:10.2f} {res['MBps']:10.2f}"
    )


def _complete(args) -> None:
    """Defaults that depend on other arguments."""
    if args.device is None:
        devs = ib.get_device_list()
        if not devs:
            raise PerfError("no RDMA device")
        args.device = devs[0].name
    if args.all:
        args.sizes = list(SWEEP)
    elif args.sizes is None:
        args.sizes = [65536 if args.test in BW_TESTS else 8]


def run(argv: list[str]) -> list[dict]:
    """Run the client side (or, with --loopback, both sides) of a perf test
    from Python and return the results, one dict per size: what --json
    prints.  ``run(["write_bw", "-d", "rxe0", "-x", "1", "--loopback"])``."""
    parser = argparse.ArgumentParser(prog="python -m ibverbs")
    add_parser(parser.add_subparsers(dest="cmd", required=True))
    args = parser.parse_args(["perf", *argv])
    _complete(args)
    if args.server is None and not args.loopback:
        raise PerfError("run() drives a client: give a server or --loopback")
    check_args(args)
    return run_loopback(args) if args.loopback else run_client(args)


def cmd_perf(args) -> int:
    """``python -m ibverbs perf``: the server, the client, or both over
    loopback; prints text or JSON lines.  Returns the exit code: 1 with a
    message for a PerfError, a failed completion, a lost connection or a
    timeout; other errors (VerbsError) propagate.
    """
    try:
        _complete(args)
        if getattr(args, "server_only", False) or (args.server is None and not args.loopback):
            return run_server(args)
        check_args(args)
        if args.json:

            def emit(res):
                print(json.dumps(res), flush=True)
        else:
            print(format_header(args.test), flush=True)

            def emit(res):
                print(format_result(res), flush=True)

        if args.loopback:
            run_loopback(args, emit)
        else:
            run_client(args, emit)
    except (PerfError, ib.CompletionError, ConnectionError, socket.timeout) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


class _IntermixedParser(argparse.ArgumentParser):
    """Like perftest, the server name comes last, after the options: a
    plain parser takes both positionals from the first run of them
    (``write_bw``) and rejects the host at the end."""

    _nested = False

    def parse_known_args(self, args=None, namespace=None):
        """argparse's, taking positionals intermixed with options."""
        if self._nested:
            return super().parse_known_args(args, namespace)
        self._nested = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._nested = False


def add_parser(sub) -> None:
    """Add the ``perf`` subcommand and its options to ``sub``."""
    p = sub.add_parser(
        "perf",
        help="perftest-style benchmarks (bandwidth, message rate, latency)",
        description="perftest-style benchmarks; see the ibverbs.perf docstring",
    )
    p.__class__ = _IntermixedParser
    p.add_argument("test", choices=TESTS)
    p.add_argument("server", nargs="?", help="server host (client mode)")
    p.add_argument("-d", "--device", help="device (default: the first one)")
    p.add_argument("-i", "--ib-port", type=int, default=1)
    p.add_argument("-x", "--gid-index", type=int, default=0)
    p.add_argument(
        "-s",
        "--size",
        dest="sizes",
        type=parse_sizes,
        help="message size or comma-separated sizes, e.g. 8,4K,1M "
        "(default 65536 for bandwidth, 8 for latency)",
    )
    p.add_argument(
        "-a", "--all", action="store_true", help="sweep the sizes 8 B .. 1 MiB (powers of two)"
    )
    p.add_argument(
        "-n",
        "--iters",
        type=int,
        default=5000,
        help="messages per QP (bandwidth) or round trips (latency)",
    )
    p.add_argument(
        "--max-bytes",
        type=parse_size,
        default=0,
        help="cap iterations at this many bytes per size (sweeps)",
    )
    p.add_argument(
        "-t", "--tx-depth", type=int, default=128, help="WRs outstanding per QP (default 128)"
    )
    p.add_argument(
        "-r",
        "--rx-depth",
        type=int,
        default=512,
        help="receives kept posted per QP (send_bw; default 512)",
    )
    p.add_argument("-q", "--qps", type=int, default=1)
    p.add_argument(
        "-l",
        "--post-list",
        type=int,
        default=1,
        help="WRs per post_send call, chained; the last is signaled",
    )
    p.add_argument(
        "--cq-mod", type=int, default=1, help="signal every N-th WR (default 1: every one)"
    )
    p.add_argument(
        "-I",
        "--inline",
        type=int,
        default=0,
        help="max inline data; sizes up to it are sent INLINE",
    )
    p.add_argument("-p", "--port", type=int, default=18515, help="TCP port")
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="give up after this many seconds without progress",
    )
    p.add_argument(
        "--loopback", action="store_true", help="fork the server as a child process on 127.0.0.1"
    )
    p.add_argument(
        "--cpus",
        metavar="SERVER,CLIENT",
        help="with --loopback: pin the server and the client to "
        "these CPUs (taskset for the two ends)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per size, one per line")
    p.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_perf)
