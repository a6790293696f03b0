"""The measurement loops of perf, and the resources they run on.

:class:`Endpoint` is one side's context, PD, buffer, MR, CQs and QPs; the
loops take one and time one size: the bandwidth tests' posting scheme
(perftest's, see the ``ibverbs.perf`` docstring), the receive side of
``send_bw``, and the ping-pongs of ``write_lat`` and ``send_lat``.  They
know nothing of the control connection: where the two sides must meet
in the middle of a loop, the caller passes what to do (``ready`` or
``sync``).
"""

from __future__ import annotations

import itertools
import mmap
import time
from collections.abc import Callable

import ibverbs as ib

from .options import PerfError, unit_of


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
                timeout=self.args.qp_timeout,
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


def bw_client(ep: Endpoint, opcode, size: int, iters: int) -> dict:
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


def send_bw_server(ep: Endpoint, size: int, iters: int, ready: Callable[[], None]) -> None:
    """Keep rx_depth receives posted on every QP until every send arrived;
    ``ready()`` once the first receives are posted."""
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
    ready()
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


def write_lat(ep: Endpoint, size: int, iters: int, client: bool) -> dict:
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


def send_lat(ep: Endpoint, size: int, iters: int, client: bool, sync: Callable[[], None]) -> dict:
    """Ping-pong by SEND/RECV.  One receive is kept posted; a side reposts
    it as soon as a message arrived, before it answers, so the peer never
    finds it missing (the last one is not reposted: the next size posts
    its own).  Send completions are reaped on the way, without waiting.
    ``sync()`` after the receive is posted: the client waits there for the
    server's "ready", the server sends it."""
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
    sync()
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
