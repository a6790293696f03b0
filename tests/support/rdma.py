"""RDMA helpers for the device and two-node tests: an RC pair on one
device, buffers, polling, async events, the link of the device's netdev.
Imports ibverbs (support/__init__.py does not)."""

from __future__ import annotations

import errno
import os
import select
import socket
import subprocess
import time

import ibverbs as ib
from support import GID_INDEX, NETDEV, PORT
from support.timeouts import Deadline, scaled


def verbs_error_of(fn, *args, **kw):
    """The VerbsError that fn(*args, **kw) raises (AssertionError when it
    returns): one line for a call a test expects to fail."""
    try:
        fn(*args, **kw)
    except ib.VerbsError as e:
        return e
    raise AssertionError(f"{fn!r} raised no VerbsError")


def raises_each(fn, *cases):
    """Each case, (exception type, args) or (exception type, args, kwargs),
    is a call fn(*args, **kwargs) that raises that type: a method's
    argument checks, one case a line."""
    for exc, args, *kw in cases:
        try:
            fn(*args, **(kw[0] if kw else {}))
        except exc:
            continue
        raise AssertionError(f"{fn!r}{args!r} raised no {exc.__name__}")


def second_recv_wr_refused(post, mr, sges, operation):
    """post([RecvWR of one SGE, RecvWR of `sges` one-byte SGEs]), one SGE
    over the queue's limit in the second, raises a VerbsError of
    operation naming that WR (index 1, wr_id=2)."""
    wrs = [
        ib.RecvWR(wr_id=1, sg_list=[mr.sge(8)]),
        ib.RecvWR(wr_id=2, sg_list=[mr.sge(1, i) for i in range(sges)]),
    ]
    e = verbs_error_of(post, wrs)
    assert e.operation == operation
    assert "index 1" in str(e) and "wr_id=2" in str(e)


def refused(verb, fn, *args, err=errno.EOPNOTSUPP, **kw):
    """fn(*args, **kw) raises VerbsError(err) naming verb (its operation
    and its text); the exception."""
    try:
        fn(*args, **kw)
    except ib.VerbsError as e:
        assert e.errno == err, e
        assert e.operation == verb, e
        assert verb in str(e), e
        return e
    raise AssertionError(f"{verb}: not refused")


# What a provider answers for a verb it does not have.
UNSUPPORTED = (errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS)


def errno_name(e):
    """EOPNOTSUPP, EINVAL, ... for an errno (ENOTSUP is EOPNOTSUPP on Linux)."""
    return "EOPNOTSUPP" if e == errno.EOPNOTSUPP else errno.errorcode.get(e, str(e))


ALL_ACCESS = (
    ib.AccessFlags.LOCAL_WRITE
    | ib.AccessFlags.REMOTE_WRITE
    | ib.AccessFlags.REMOTE_READ
    | ib.AccessFlags.REMOTE_ATOMIC
)


# make_rc_pair's QP capacities unless told others.
RC_PAIR_CAPS = {
    "max_send_wr": 128,
    "max_recv_wr": 128,
    "max_send_sge": 2,
    "max_recv_sge": 2,
    "max_inline_data": 0,
}


def create_qp(pd, cq, *, qp_type=None, srq=None, send_ops_flags=None, **fields):
    """A QP of PD (RC unless qp_type) whose send and receive CQ is CQ, on
    SRQ if given; fields: more QPInitAttr fields (its capacities).  With
    send_ops_flags an extended QP (PD.create_qp_ex of a QPInitAttrEx)."""
    qp_type = ib.QPType.RC if qp_type is None else qp_type
    fields.update(send_cq=cq, recv_cq=cq, srq=srq, qp_type=qp_type)
    if send_ops_flags is None:
        return pd.create_qp(ib.QPInitAttr(**fields))
    return pd.create_qp_ex(ib.QPInitAttrEx(send_ops_flags=send_ops_flags, **fields))


def make_rc_pair(
    ctx,
    pd,
    *,
    qp_type=None,
    access=ALL_ACCESS,
    srq=None,
    rnr_retry=7,
    cq_size=256,
    channel=None,
    min_rnr_timer=None,
    send_ops_flags=None,
    wc_flags=None,
    **caps,
):
    """Two QPs on one device connected to each other (loopback), each with
    its own CQ (on `channel` if given).  Returns (qp_a, cq_a, qp_b, cq_b).
    caps: the QPs' capacities (max_send_wr, max_recv_wr, max_send_sge,
    max_recv_sge, max_inline_data), RC_PAIR_CAPS's where not given.
    With send_ops_flags both are extended QPs (PD.create_qp_ex); with
    wc_flags both CQs are extended CQs reading those fields (CQEx)."""
    caps = {**RC_PAIR_CAPS, **caps}
    port_attr = ctx.query_port(PORT)
    gid = ctx.query_gid(PORT, GID_INDEX)
    out = []
    for _ in range(2):
        if wc_flags is None:
            cq = ctx.create_cq(cq_size, channel)
        else:
            cq = ctx.create_cq_ex(ib.CQInitAttrEx(cq_size, wc_flags=wc_flags, channel=channel))
        qp = create_qp(pd, cq, qp_type=qp_type, srq=srq, send_ops_flags=send_ops_flags, **caps)
        out.append((qp, cq))
    (qa, ca), (qb, cb) = out
    ia = ib.local_qp_info(qa, port_attr, gid, port=PORT, psn=0x1234)
    ibb = ib.local_qp_info(qb, port_attr, gid, port=PORT, psn=0x4321)
    extra = {} if min_rnr_timer is None else {"min_rnr_timer": min_rnr_timer}
    for qp, mine, theirs in ((qa, ia, ibb), (qb, ibb, ia)):
        ib.connect_rc(
            qp,
            theirs,
            port=PORT,
            sgid_index=GID_INDEX,
            access=access,
            local_psn=mine.psn,
            rnr_retry=rnr_retry,
            **extra,
        )
    return qa, ca, qb, cb


def send_wr(sge=None, *, dest=None, at=0, rkey=None, signaled=True, **fields):
    """A SendWR from SGE (an SGE, a list of them, or none), signaled unless
    told (a send_flags field replaces that); with DEST (an MR), to DEST's
    addr + AT with its rkey unless RKEY.  FIELDS: the other SendWR fields
    (wr_id, opcode, imm_data, ah, remote_qpn, ...)."""
    fields.setdefault("send_flags", ib.SendFlags.SIGNALED if signaled else 0)
    if dest is not None:
        fields["remote_addr"] = dest.addr + at
        rkey = dest.rkey if rkey is None else rkey
    if rkey is not None:
        fields["rkey"] = rkey
    if sge is not None:
        fields["sg_list"] = sge
    return ib.SendWR(**fields)


def write_wr(src, length, dest, *, at=0, wr_id=0, rkey=None, signaled=True):
    """A SendWR that RDMA-writes the first LENGTH bytes of MR SRC to MR DEST
    at offset AT (with DEST's rkey unless RKEY), signaled unless told."""
    return send_wr(
        [src.sge(length)],
        wr_id=wr_id,
        opcode=ib.WROpcode.RDMA_WRITE,
        dest=dest,
        at=at,
        rkey=rkey,
        signaled=signaled,
    )


def atomic_write_8(ctx, pd):
    """An IBV_WR_ATOMIC_WRITE (wr_id 21) of bytes 1..8 from a buffer of
    0x11 into bytes 8..15 of one of 0x22, on a fresh RC pair; returns
    (its completion, the source, the target)."""
    import numpy as np

    qa, ca, qb, cb = make_rc_pair(ctx, pd)
    src, mr_a = mkbuf(pd, 64, fill=0x11)
    dst, mr_b = mkbuf(pd, 64, fill=0x22)
    src[:8] = np.arange(1, 9, dtype=np.uint8)
    wr = send_wr([mr_a.sge(8)], dest=mr_b, at=8, wr_id=21, opcode=ib.WROpcode.ATOMIC_WRITE)
    assert wr.opcode is ib.WROpcode.ATOMIC_WRITE
    qa.post_send(wr)
    (wc,) = poll_until(ca)
    return wc, src, dst


def overrun_cq(qp, cq, mr, offset=0):
    """Post more signaled RDMA writes on QP than CQ (its send CQ) holds,
    never to be polled: 8 bytes each, MR to itself at OFFSET.  rxe then
    reports CQ_ERR for CQ."""
    qp.post_send([write_wr(mr, 8, mr, at=offset, wr_id=i) for i in range(cq.cqe + 3)])


def mkbuf(pd, n, access=ALL_ACCESS, dtype=None, fill=0):
    """A numpy buffer of n items (uint8 unless dtype says otherwise),
    filled with fill, and its MR."""
    import numpy as np

    buf = np.full(n, fill, dtype=np.uint8 if dtype is None else dtype)
    # The address from the array interface, not buf.ctypes: CPython 3.13's
    # ctypes races with itself when threads make their first instances
    # (ThreadSanitizer, make sanitize-threads' guest stage).
    return buf, pd.reg_mr(buf.__array_interface__["data"][0], buf.nbytes, access)


def ok(wcs, opcode=None):
    """Raise for a failed completion; check the opcode when given."""
    for wc in wcs:
        wc.raise_for_status()
        if opcode is not None:
            assert wc.opcode == opcode
    return wcs


def poll_until(cq, n=1, timeout=10.0, *, check=False):
    """Poll CQ until N completions arrived and return them; AssertionError
    after TIMEOUT seconds.  With CHECK, a failed completion raises
    (``WC.raise_for_status``); without, the caller reads the statuses."""
    got = []
    deadline = Deadline(timeout)
    while len(got) < n:
        got.extend(cq.poll(n - len(got)))
        if len(got) < n:
            if deadline.expired():
                raise AssertionError(f"timed out: {len(got)} of {n} completions")
            time.sleep(0.0005)
    if check:
        for wc in got:
            wc.raise_for_status()
    return got


def wait_async_event(ctx, event_type, timeout=10.0, *, ack=False, or_none=False):
    """The next async event of EVENT_TYPE; the others are acked on the way.
    It is returned unacked (the caller acks it, or holds it) unless ACK.
    After TIMEOUT seconds: AssertionError naming the events seen, or None
    with OR_NONE.  Works with a blocking or non-blocking async_fd."""
    deadline = Deadline(timeout)
    seen = []
    while True:
        left = deadline.left()
        if left <= 0:
            if or_none:
                return None
            raise AssertionError(f"no {event_type!r} within {deadline.limit:.0f} s; saw {seen}")
        r, _, _ = select.select([ctx.async_fd], [], [], left)
        if not r:
            continue
        was = os.get_blocking(ctx.async_fd)
        os.set_blocking(ctx.async_fd, False)
        try:
            ev = ctx.get_async_event()
        except ib.VerbsError:
            continue
        finally:
            os.set_blocking(ctx.async_fd, was)
        if ev.event_type == event_type:
            if ack:
                ev.ack()
            return ev
        seen.append(ib.EventType(ev.event_type).name)
        ev.ack()


def drain_async_events(ctx):
    """Read and ack every async event pending now; their types."""
    was = os.get_blocking(ctx.async_fd)
    os.set_blocking(ctx.async_fd, False)
    types = []
    try:
        while True:
            try:
                ev = ctx.get_async_event()
            except ib.VerbsError as e:
                if e.errno != errno.EAGAIN:
                    raise
                return types
            types.append(int(ev.event_type))
            ev.ack()
    finally:
        os.set_blocking(ctx.async_fd, was)


def set_link(state, netdev=NETDEV):
    """Take the device's netdev "down" or "up" (ip(8); root)."""
    subprocess.run(["ip", "link", "set", netdev, state], check=True, timeout=scaled(60))


def wait_port_active(ctx, timeout=30.0):
    """Wait until PORT is ACTIVE again with its GID (after a link flap)."""
    deadline = Deadline(timeout)
    while not deadline.expired():
        if (
            ctx.query_port(PORT).state == ib.PortState.ACTIVE
            and not ctx.query_gid(PORT, GID_INDEX).is_zero()
        ):
            return
        time.sleep(0.1)
    raise AssertionError("port did not come back ACTIVE with its GID")


# ---- UD datagrams and multicast groups (test_mcast, test_ud_reply, ------
# ---- tests/twonode/test_mcast_twonode) ---------------------------------

UD_QKEY = 0x11111111  # QP.to_init's default Q_Key for UD QPs
GRH_LEN = 40  # a UD receive buffer starts with room for the GRH
MCAST_QPN = 0xFFFFFF  # the destination QPN of a send to a multicast group


def ud_qp(ctx, pd, port, *, depth=16, cq=None, psn=0, **init):
    """A UD QP in RTS with the default Q_Key (send PSN psn; init: more
    QPInitAttr fields), and its CQ (send and recv)."""
    cq = cq if cq is not None else ctx.create_cq(2 * depth)
    qp = create_qp(pd, cq, qp_type=ib.QPType.UD, max_send_wr=depth, max_recv_wr=depth, **init)
    assert qp.state == ib.QPState.RESET
    qp.to_init(port, 0)  # the default Q_Key
    qp.to_rtr(None)  # UD: no remote at RTR
    qp.to_rts(psn)
    assert qp.state == ib.QPState.RTS
    return qp, cq


def mcast_gid(group):
    """The RoCE v2 multicast GID of an IP multicast group: an IPv4 group
    is IPv4-mapped (``::ffff:239.1.2.3``, what rdma_cm uses on RoCE v2), an
    IPv6 group is itself."""
    import ipaddress

    ip = ipaddress.ip_address(group)
    assert ip.is_multicast, group
    if ip.version == 4:
        return ib.Gid(f"::ffff:{ip}")
    return ib.Gid(str(ip))


def join_ip_group(group, local_ip):
    """Make the host's IP stack a member of an IPv4 multicast group on the
    interface that holds local_ip, for as long as the returned socket is
    open.  Soft-RoCE's packets are UDP: attach_mcast (up to at least
    Linux 6.1) only adds the group's link-layer address to the netdev,
    and the IP layer drops a multicast datagram for a group no socket on
    that interface joined, before it reaches rxe."""
    import struct

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        mreq = struct.pack("4s4s", socket.inet_aton(str(group)), socket.inet_aton(str(local_ip)))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    except BaseException:
        s.close()
        raise
    return s


def wait_one(cq, timeout):
    """The next completion of cq, or None when none came in timeout s."""
    deadline = time.monotonic() + timeout
    while True:
        got = cq.poll()
        if got or time.monotonic() > deadline:
            return got[0] if got else None
        time.sleep(0.005)
