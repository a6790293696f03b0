"""Error paths: failed completions (with the memory they must not touch),
flushes, rejected posts that name the WR, and misuse that must raise."""

import errno
import time

import pytest

import ibverbs as ib
from support.rdma import make_rc_pair, mkbuf, poll_until, second_recv_wr_refused, send_wr

pytestmark = pytest.mark.integration

SIGNALED = ib.SendFlags.SIGNALED
S = ib.WCStatus


def test_bad_rkey_rem_access_err(pd, pair):
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 64, fill=1)
    dst, mr_b = mkbuf(pd, 64)
    qa.post_send(
        send_wr(
            [mr_a.sge()],
            wr_id=5,
            opcode=ib.WROpcode.RDMA_WRITE,
            dest=mr_b,
            rkey=mr_b.rkey ^ 0x5A5A00,
        )
    )
    (wc,) = poll_until(ca)
    assert wc.status == S.REM_ACCESS_ERR and wc.wr_id == 5
    with pytest.raises(ib.CompletionError, match="REM_ACCESS_ERR"):
        wc.raise_for_status()
    assert not dst.any()
    # The requester moved to ERR on its own; state reports the device's view.
    assert qa.state == ib.QPState.ERR


def test_write_without_remote_write_access(pd, pair):
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 128, fill=0xFF)
    dst, mr_b = mkbuf(
        pd, 128, access=ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_READ, fill=0x11
    )
    qa.post_send(send_wr([mr_a.sge()], wr_id=6, opcode=ib.WROpcode.RDMA_WRITE, dest=mr_b))
    (wc,) = poll_until(ca)
    assert wc.status == S.REM_ACCESS_ERR
    assert (dst == 0x11).all()  # memory unchanged


def test_rdma_read_out_of_bounds(pd, pair):
    qa, ca, qb, cb = pair
    local, mr_a = mkbuf(pd, 64)
    remote, mr_b = mkbuf(pd, 32, fill=3)
    qa.post_send(send_wr([mr_a.sge()], wr_id=7, opcode=ib.WROpcode.RDMA_READ, dest=mr_b))
    (wc,) = poll_until(ca)
    assert wc.status == S.REM_ACCESS_ERR
    assert not local.any()


def test_rnr_retry_exceeded(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd, rnr_retry=0)
    src, mr_a = mkbuf(pd, 32, fill=1)
    qa.post_send(ib.SendWR(wr_id=8, sg_list=[mr_a.sge()], send_flags=SIGNALED))
    (wc,) = poll_until(ca, timeout=30)  # no receive was posted
    assert wc.status == S.RNR_RETRY_EXC_ERR and wc.wr_id == 8
    assert cb.poll(4) == []


def test_err_state_flushes_each_wr_once(pd, pair):
    qa, ca, qb, cb = pair
    dst, mr_b = mkbuf(pd, 8 * 16)
    qb.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr_b.sge(16, 16 * i)]) for i in range(8)])
    qb.modify(ib.QPAttrMask.STATE, qp_state=ib.QPState.ERR)
    assert qb.state == ib.QPState.ERR
    got = poll_until(cb, 8)
    assert sorted(w.wr_id for w in got) == list(range(8))
    assert all(w.status == S.WR_FLUSH_ERR for w in got)
    # Send WRs posted in ERR are flushed too, signaled or not.
    src, mr_a = mkbuf(pd, 16)
    qb.post_send(
        [
            ib.SendWR(wr_id=100 + i, sg_list=[mr_a.sge()], send_flags=SIGNALED if i % 2 else 0)
            for i in range(4)
        ]
    )
    got = poll_until(cb, 4)
    assert sorted(w.wr_id for w in got) == [100, 101, 102, 103]
    assert all(w.status == S.WR_FLUSH_ERR for w in got)
    time.sleep(0.3)
    assert cb.poll(16) == []  # exactly once each
    assert not dst.any()


def test_post_send_too_many_sges_names_the_wr(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd, max_send_sge=1)
    src, mr_a = mkbuf(pd, 64)
    dst, mr_b = mkbuf(pd, 64)
    n = qa.cap.max_send_sge + 1
    good = [
        send_wr([mr_a.sge(8)], wr_id=i, opcode=ib.WROpcode.RDMA_WRITE, dest=mr_b) for i in range(2)
    ]
    bad = ib.SendWR(wr_id=42, sg_list=[mr_a.sge(1, i) for i in range(n)])
    with pytest.raises(ib.VerbsError) as ei:
        qa.post_send(good + [bad])
    e = ei.value
    assert e.operation == "ibv_post_send" and e.errno == errno.EINVAL
    assert "index 2" in str(e) and "wr_id=42" in str(e)
    # The WRs before the bad one were posted.
    assert sorted(w.wr_id for w in poll_until(ca, 2)) == [0, 1]
    with pytest.raises(ib.VerbsError, match="index 0"):
        qa.post_send(bad)
    # The failed chain was undone: the good WRs post again on their own.
    qa.post_send(good[0])
    poll_until(ca)[0].raise_for_status()


def test_post_list_longer_than_sq(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd, max_send_wr=8)
    depth = qa.query()[1].max_send_wr  # what the device really made
    src, mr_a = mkbuf(pd, 8)
    dst, mr_b = mkbuf(pd, 8)
    wrs = [
        send_wr([mr_a.sge()], wr_id=i, opcode=ib.WROpcode.RDMA_WRITE, dest=mr_b)
        for i in range(depth + 3)
    ]
    with pytest.raises(ib.VerbsError) as ei:
        qa.post_send(wrs)
    assert ei.value.errno == errno.ENOMEM
    assert f"index {depth}" in str(ei.value)
    got = poll_until(ca, depth)
    assert sorted(w.wr_id for w in got) == list(range(depth))


def test_post_recv_error_names_the_wr(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd, max_recv_sge=1)
    buf, mr = mkbuf(pd, 64)
    second_recv_wr_refused(qb.post_recv, mr, qb.cap.max_recv_sge + 1, "ibv_post_recv")


def test_post_wrong_argument_types(pd, pair):
    qa, ca, qb, cb = pair
    with pytest.raises(TypeError):
        qa.post_send(ib.RecvWR())
    with pytest.raises(TypeError):
        qa.post_recv(ib.SendWR())
    with pytest.raises(TypeError):
        qa.post_send([ib.SendWR(), 3])
    with pytest.raises((TypeError, ValueError)):
        qa.post_send([])


def test_modify_unknown_attribute(pd, cq):
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq))
    with pytest.raises(TypeError, match="unknown QP attribute 'qp_sate'"):
        qp.modify(ib.QPAttrMask.STATE, qp_sate=ib.QPState.INIT)
    assert qp.state == ib.QPState.RESET


def test_close_cq_used_by_qp(ctx, pd):
    cq = ctx.create_cq(8)
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq))
    with pytest.raises(ib.VerbsError) as ei:
        cq.close()
    assert ei.value.errno == errno.EBUSY
    assert not cq.closed
    qp.close()
    cq.close()
    assert cq.closed
