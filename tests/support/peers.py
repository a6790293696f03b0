"""Verbs helpers for the two-node tests: one RC (or UD) QP on this node
connected to its partner on the peer node, through a rendezvous Channel."""

from __future__ import annotations

import subprocess
import time

import ibverbs as ib
from support import GID_INDEX, PORT

# tests/twonode import these here: one definition, in support/rdma.py.
from support.rdma import ALL_ACCESS, create_qp, mkbuf, poll_until, wait_async_event  # noqa: F401
from support.timeouts import Deadline, communicate

SIGNALED = ib.SendFlags.SIGNALED


# rc_qp's QP capacities unless told others.
PEER_CAPS = {
    "max_send_wr": 64,
    "max_recv_wr": 64,
    "max_send_sge": 4,
    "max_recv_sge": 4,
    "max_inline_data": 0,
}


def rc_qp(ctx, pd, cq=None, *, srq=None, qp_type=None, **caps):
    """An RC QP (or qp_type) of PD and its CQ (CQ, else a new one of 256
    entries), on SRQ if given (then with no receive queue); caps: its
    capacities, PEER_CAPS's where not given.  Returns (qp, cq)."""
    cq = cq or ctx.create_cq(256)
    caps = {**PEER_CAPS, **caps}
    if srq:
        caps["max_recv_wr"] = 0
    return create_qp(pd, cq, qp_type=qp_type, srq=srq, **caps), cq


def local_info(ctx, qp, psn):
    return ib.local_qp_info(
        qp, ctx.query_port(PORT), ctx.query_gid(PORT, GID_INDEX), port=PORT, psn=psn
    )


def connect(chan, ctx, qp, *, tag="qp", psn=None, **kw):
    """Exchange QPInfo records with the peer over CHAN (message TAG) and
    connect QP to the peer's; returns (mine, theirs)."""
    mine = local_info(ctx, qp, psn if psn is not None else 0x1000 + qp.qp_num)
    theirs = ib.QPInfo.from_bytes(chan.exchange(tag, mine.to_bytes()))
    kw.setdefault("access", ALL_ACCESS)
    ib.connect_rc(qp, theirs, port=PORT, sgid_index=GID_INDEX, local_psn=mine.psn, **kw)
    return mine, theirs


def mr_desc(mr):
    """What the peer needs to reach MR: address, rkey, length."""
    return {"addr": mr.addr, "rkey": mr.rkey, "len": mr.length}


def wait_listening(port, proc=None, timeout=60.0):
    """Wait until a TCP socket listens on PORT (without connecting to it,
    which would use up a one-shot server's accept)."""
    needle = f":{port:04X} "
    deadline = Deadline(timeout)
    while not deadline.expired():
        for f in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(f) as fh:
                    for line in fh:
                        parts = line.split()
                        if (
                            len(parts) > 3
                            and parts[1].endswith(needle.strip())
                            and parts[3] == "0A"
                        ):
                            return
            except OSError:
                pass
        if proc is not None and proc.poll() is not None:
            raise AssertionError(
                f"the server exited ({proc.returncode}) "
                f"before listening: {proc.stdout.read() if proc.stdout else ''}"
            )
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on TCP port {port}")


def port_state(ctx):
    return ctx.query_port(PORT).state


def run(cmd, timeout=120.0, **kw):
    """Run CMD, returning (status, output); TIMEOUT: a quiet guest's
    seconds (support/timeouts.py)."""
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw
    ) as p:
        try:
            out, _ = communicate(p, timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            raise
    return p.returncode, out


def qp_count(device):
    """How many QPs the kernel holds for DEVICE (rdma resource show)."""
    import json

    status, out = run(["rdma", "-j", "resource", "show", "qp"], timeout=30)
    assert status == 0, out
    return sum(1 for q in json.loads(out or "[]") if q.get("ifname") == device)
