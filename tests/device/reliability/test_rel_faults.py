"""Faults against a live device: a QP forced to ERR with work outstanding,
a CQ overrun, a link flap in the middle of traffic, and a destroy verb
that fails inside a deallocator.  (Device removal is test_rel_device_removal.py,
which runs last: it takes rxe0 away.)
"""

import collections
import os
import subprocess
import sys
import time

from pathlib import Path

import pytest

import ibverbs as ib

from support import NETDEV, PORT, TESTS, device_name, load_path
from support.rdma import (
    send_wr,
    ALL_ACCESS,
    drain_async_events,
    make_rc_pair,
    poll_until,
    set_link,
    wait_async_event,
    wait_port_active,
)
from support.timeouts import scaled

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.integration

S = ib.WCStatus
SIG = ib.SendFlags.SIGNALED


def test_err_with_outstanding_work_completes_each_wr_once(ctx, pd):
    """Sends stuck in RNR retry (the peer posted no receive) and receives
    nobody will fill: moving the QP to ERR flushes every one of them,
    each wr_id exactly once, and writes nothing anywhere."""
    qa, ca, qb, cb = make_rc_pair(ctx, pd, rnr_retry=7, min_rnr_timer=1)
    src = bytearray(b"\xab" * 4096)
    dst = bytearray(4096)
    mr_src = ib.reg_tensor(pd, src, ALL_ACCESS)
    mr_dst = ib.reg_tensor(pd, dst, ALL_ACCESS)
    qa.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr_dst.sge(64, offset=64 * i)]) for i in range(8)])
    qa.post_send(
        [ib.SendWR(wr_id=100 + i, sg_list=[mr_src.sge(64)], send_flags=SIG) for i in range(8)]
        + [
            send_wr([mr_src.sge(64)], wr_id=200 + i, opcode=ib.WROpcode.RDMA_WRITE, dest=mr_dst)
            for i in range(4)
        ]
    )
    time.sleep(0.3)
    assert ca.poll(64) == [], "the sends should be stuck in RNR retry"
    qa.modify(ib.QPAttrMask.STATE, qp_state=ib.QPState.ERR)
    got = poll_until(ca, 20)
    ids = collections.Counter(w.wr_id for w in got)
    assert sorted(ids) == list(range(8)) + list(range(100, 108)) + list(range(200, 204))
    assert set(ids.values()) == {1}
    assert {w.status for w in got} == {S.WR_FLUSH_ERR}
    # Posted in ERR: a send is flushed once.  A receive posted in ERR is
    # flushed at most once: rxe on Linux 6.1 leaves it in the queue (no
    # completion) until the QP is reset; later kernels flush it.
    qa.post_recv(ib.RecvWR(wr_id=301, sg_list=[mr_dst.sge(8)]))
    qa.post_send(ib.SendWR(wr_id=300, sg_list=[mr_src.sge(8)], send_flags=SIG))
    got = poll_until(ca, 1)
    time.sleep(0.3)
    got += ca.poll(64)
    ids = collections.Counter(w.wr_id for w in got)
    assert ids[300] == 1 and ids[301] <= 1 and set(ids) <= {300, 301}, ids
    assert {w.status for w in got} == {S.WR_FLUSH_ERR}
    assert ca.poll(64) == [] and cb.poll(64) == []
    assert dst == bytearray(4096), "a flushed WR wrote memory"
    for o in (qa, qb, ca, cb, mr_src, mr_dst):
        o.close()


def test_cq_overrun_delivers_cq_err(ctx, pd):
    """More completions than a CQ holds, never polled: rxe reports
    IBV_EVENT_CQ_ERR for that CQ (once per completion it had to drop), and
    the unacked event keeps the CQ from closing."""
    qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=1)
    buf = bytearray(4096)
    mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
    n = max(ca.cqe, cb.cqe) + 8
    qb.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr.sge(8)]) for i in range(n)])
    qa.post_send([ib.SendWR(wr_id=i, sg_list=[mr.sge(8)], send_flags=SIG) for i in range(n)])
    ev = wait_async_event(ctx, ib.EventType.CQ_ERR, timeout=15, or_none=True)
    assert ev is not None, "rxe delivered no CQ_ERR after a CQ overrun"
    assert ev.element in (ca, cb) and ev.element_type == "cq"
    qa.close()
    qb.close()
    with pytest.raises(ib.VerbsError) as e:
        ev.element.close()
    assert e.value.errno == 16  # EBUSY: the unacked event holds it
    ev.ack()
    drain_async_events(ctx)
    for o in (ca, cb, mr):
        o.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to take the netdev down")
def test_link_flap_mid_traffic(ctx, pd):
    """veth0 down and up while RDMA writes are in flight: PORT_ERR then
    PORT_ACTIVE arrive, every posted WR completes exactly once (success,
    or an error status), nothing crashes, and the port works afterwards."""
    if not os.path.exists(f"/sys/class/net/{NETDEV}"):
        pytest.skip(f"no netdev {NETDEV}")
    drain_async_events(ctx)
    qa, ca, qb, cb = make_rc_pair(ctx, pd)
    src = bytearray(b"\x5a" * 65536)
    dst = bytearray(65536)
    mr_src = ib.reg_tensor(pd, src, ALL_ACCESS)
    mr_dst = ib.reg_tensor(pd, dst, ALL_ACCESS)
    posted = 0
    got = []
    try:
        for i in range(32):
            qa.post_send(
                send_wr(
                    [mr_src.sge(2048, offset=2048 * i)],
                    wr_id=i,
                    opcode=ib.WROpcode.RDMA_WRITE,
                    dest=mr_dst,
                    at=2048 * i,
                )
            )
            posted += 1
            if i == 8:
                set_link("down")
            got.extend(ca.poll(16))
    finally:
        set_link("up")
    ev = wait_async_event(ctx, ib.EventType.PORT_ERR, timeout=20, or_none=True)
    assert ev is not None and ev.element == PORT
    ev.ack()
    ev = wait_async_event(ctx, ib.EventType.PORT_ACTIVE, timeout=30, or_none=True)
    assert ev is not None and ev.element == PORT
    ev.ack()
    wait_port_active(ctx)
    got.extend(poll_until(ca, posted - len(got), timeout=60))
    ids = collections.Counter(w.wr_id for w in got)
    assert sorted(ids) == list(range(posted)) and set(ids.values()) == {1}
    ok = [w.wr_id for w in got if w.status == S.SUCCESS]
    for i in ok:
        assert dst[2048 * i : 2048 * (i + 1)] == src[:2048]
    time.sleep(0.2)
    assert ca.poll(16) == []
    for o in (qa, qb, ca, cb):
        o.close()
    # A fresh pair works once the port is back.
    qa, ca, qb, cb = make_rc_pair(ctx, pd)
    dst[:] = bytes(65536)
    qa.post_send(send_wr([mr_src.sge(64)], wr_id=1, opcode=ib.WROpcode.RDMA_WRITE, dest=mr_dst))
    poll_until(ca, 1, timeout=30)[0].raise_for_status()
    assert dst[:64] == src[:64]
    for o in (qa, qb, ca, cb, mr_src, mr_dst):
        o.close()
    drain_async_events(ctx)


# ---------------------------------------------------------------------------
# A destroy verb that fails inside a deallocator
# ---------------------------------------------------------------------------

FAKES = TESTS / "fakes"

CHILD = r"""
import errno, gc, os, sys, weakref
import ibverbs as ib
class Buf(bytearray):
    pass
ctx = ib.Context(sys.argv[1])
pd = ctx.alloc_pd()
buf = Buf(4096)
owner = weakref.ref(buf)
mr = ib.reg_tensor(pd, buf, ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE)
del buf
cq = ctx.create_cq(4)
qp = pd.create_qp(ib.QPInitAttr(send_cq=cq))
os.environ["FAILDESTROY"] = "1"
# close() refuses and leaves the object usable.
for o in (mr, qp):
    try:
        o.close()
    except ib.VerbsError as e:
        assert e.errno == errno.EBUSY, e
    else:
        raise AssertionError("close() succeeded")
    assert not o.closed
mr.sge(8)
qp.query()
# Dropped while the destroy fails: reported, then leaked, no crash; the
# memory is still registered, so its owner is leaked with it (never freed
# under the NIC).
del mr, qp, o
gc.collect()
assert owner() is not None, "the owner of a still-registered MR was freed"
os.environ.pop("FAILDESTROY")
cq2 = ctx.create_cq(4)
cq2.close()
print("ALIVE", flush=True)
"""


def _build_faildestroy(tmp_path):
    noverbs = load_path("_rel_noverbs", FAKES / "noverbs.py")
    why = noverbs.missing_tools()
    if why:
        pytest.skip(why)
    real = ib.library_path
    # Linked against the real library (NEEDED): dlsym() on the shim finds
    # its two verbs first and every other one in libibverbs itself.
    return noverbs.compile_shared(
        HERE / "faildestroy.c",
        tmp_path / "libibverbs-faildestroy.so",
        defines={"SHIM_REAL_LIB": f'"{real}"'},
        libs=["-Wl,--no-as-needed", real, "-ldl"],
    )


def test_failed_destroy_in_dealloc_is_reported_once(tmp_path):
    """A destroy that fails in tp_dealloc is reported as an unraisable
    error against the type (one line per attempt, not recursively: the
    dying object must not be handed to sys.unraisablehook, whose reference
    would deallocate it again, until the stack overflows), and an MR whose
    dereg failed keeps its owner alive (the memory is still registered)."""
    shim = _build_faildestroy(tmp_path)
    env = dict(os.environ, IBVERBS_LIBIBVERBS=str(shim))
    env.pop("FAILDESTROY", None)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, device_name()],
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(300),
    )
    assert proc.returncode == 0 and "ALIVE" in proc.stdout, (
        f"exit status {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    )
    reports = proc.stderr.count("Exception ignored")
    assert 2 <= reports <= 8, proc.stderr
    assert "ibv_dereg_mr" in proc.stderr and "ibv_destroy_qp" in proc.stderr
