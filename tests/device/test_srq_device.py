"""Shared receive queues: several QPs receiving from one SRQ, modify/query,
the SRQ_LIMIT_REACHED async event, and the ownership rules."""

import errno
import select

import pytest

import ibverbs as ib
from support.rdma import make_rc_pair, mkbuf, ok, poll_until, second_recv_wr_refused
from support.timeouts import scaled

pytestmark = pytest.mark.integration

SIGNALED = ib.SendFlags.SIGNALED


def test_create_query_modify(pd):
    srq = pd.create_srq(max_wr=32, max_sge=2)
    assert srq.pd is pd and not srq.closed
    attr = srq.query()
    assert set(attr) == {"max_wr", "max_sge", "srq_limit"}
    assert attr["max_wr"] >= 32 and attr["max_sge"] >= 2
    assert attr["srq_limit"] == 0
    with pytest.raises(TypeError):
        srq.modify()
    with pytest.raises(ValueError):
        srq.modify(srq_limit=-1)
    srq.close()
    srq.close()
    assert srq.closed
    with pytest.raises(ib.VerbsError) as ei:
        srq.query()
    assert ei.value.errno == errno.EBADF


def test_srq_shared_by_two_qps(pd, ctx):
    srq = pd.create_srq(max_wr=64)
    # Both QPs of the pair receive through the same SRQ.
    qa, ca, qb, cb = make_rc_pair(ctx, pd, srq=srq)
    assert qa.srq is srq and qb.srq is srq
    n, size = 6, 64
    dst, mr_d = mkbuf(pd, n * size)
    srq.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr_d.sge(size, i * size)]) for i in range(n)])
    src_a, mr_a = mkbuf(pd, size, fill=0xAA)
    src_b, mr_b = mkbuf(pd, size, fill=0xBB)
    qa.post_send(
        [ib.SendWR(wr_id=100 + i, sg_list=[mr_a.sge()], send_flags=SIGNALED) for i in range(3)]
    )
    qb.post_send(
        [ib.SendWR(wr_id=200 + i, sg_list=[mr_b.sge()], send_flags=SIGNALED) for i in range(3)]
    )
    # Each CQ gets its 3 send completions and the 3 receives of its QP.
    got = ok(poll_until(ca, 6)) + ok(poll_until(cb, 6))
    recvs = [w for w in got if w.opcode == ib.WCOpcode.RECV]
    assert len(recvs) == 6
    assert sorted(w.wr_id for w in recvs) == list(range(n))
    by_qp = {}
    for w in recvs:
        by_qp.setdefault(w.qp_num, []).append(w.wr_id)
        chunk = dst[w.wr_id * size : (w.wr_id + 1) * size]
        # What qb received came from qa, and the other way round.
        expect = 0xAA if w.qp_num == qb.qp_num else 0xBB
        assert (chunk == expect).all()
    assert sorted(by_qp) == sorted([qa.qp_num, qb.qp_num])
    assert all(len(v) == 3 for v in by_qp.values())


def test_qp_with_srq_refuses_post_recv(pd, ctx, cq):
    srq = pd.create_srq(max_wr=4)
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, srq=srq))
    with pytest.raises(ValueError, match="SRQ"):
        qp.post_recv(ib.RecvWR(wr_id=1))
    qp.close()


def test_srq_in_use_cannot_close(pd, cq):
    srq = pd.create_srq(max_wr=4)
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, srq=srq))
    with pytest.raises(ib.VerbsError) as ei:
        srq.close()
    assert ei.value.errno == errno.EBUSY
    assert not srq.closed
    srq.query()  # still usable
    qp.close()
    srq.close()
    assert srq.closed


def test_srq_of_another_pd(ctx, pd, cq):
    other = ctx.alloc_pd()
    srq = other.create_srq(max_wr=4)
    with pytest.raises(ValueError, match="another PD"):
        pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, srq=srq))
    with pytest.raises(TypeError):
        pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, srq=cq))
    srq.close()
    other.close()


def test_srq_post_recv_error_names_index(pd):
    srq = pd.create_srq(max_wr=8, max_sge=1)
    buf, mr = mkbuf(pd, 64)
    second_recv_wr_refused(srq.post_recv, mr, srq.query()["max_sge"] + 1, "ibv_post_srq_recv")


def _get_event(ctx, timeout=20.0):
    r, _, _ = select.select([ctx.async_fd], [], [], scaled(timeout))
    assert r, "no async event within %s s" % timeout
    return ctx.get_async_event()


def test_srq_limit_event(ctx, pd):
    srq = pd.create_srq(max_wr=16)
    qa, ca, qb, cb = make_rc_pair(ctx, pd, srq=srq)
    dst, mr_d = mkbuf(pd, 4 * 32)
    srq.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr_d.sge(32, 32 * i)]) for i in range(4)])
    # Arm: the event fires once fewer than 3 receives remain posted.
    srq.modify(srq_limit=3)
    assert srq.query()["srq_limit"] == 3
    src, mr_s = mkbuf(pd, 32, fill=0x42)
    for i in range(2):
        qa.post_send(ib.SendWR(wr_id=i, sg_list=[mr_s.sge()], send_flags=SIGNALED))
    ok(poll_until(ca, 2))
    ok(poll_until(cb, 2), ib.WCOpcode.RECV)
    assert (dst[:64] == 0x42).all() and not dst[64:].any()
    ev = _get_event(ctx)
    try:
        assert ev.event_type == ib.EventType.SRQ_LIMIT_REACHED
        assert ev.element is srq
    finally:
        ev.ack()
    # One-shot: disarmed after firing.
    assert srq.query()["srq_limit"] == 0
