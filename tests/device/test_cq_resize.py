"""CQ.resize() (ibv_resize_cq) on rxe: sizes, refusals, and resizing
both CQs of an RC pair under load without losing or repeating a
completion."""

import errno
import itertools
import time

import numpy as np
import pytest

import ibverbs as ib

from support.rdma import make_rc_pair, poll_until

pytestmark = pytest.mark.integration


def test_resize_up_and_down(ctx):
    with ctx.create_cq(16) as cq:
        assert cq.cqe >= 16
        cq.resize(256)
        assert cq.cqe >= 256
        cq.resize(cqe=8)
        assert 8 <= cq.cqe < 256
        assert cq.poll(4) == []


def test_resize_bad_input(ctx):
    max_cqe = ctx.query_device().max_cqe
    with ctx.create_cq(16) as cq:
        before = cq.cqe
        for bad in (0, -1, 2**31):
            with pytest.raises(ValueError, match="cqe"):
                cq.resize(bad)
        with pytest.raises(TypeError):
            cq.resize("64")
        with pytest.raises(ib.VerbsError) as ei:
            cq.resize(max_cqe + 1)
        assert ei.value.errno == errno.EINVAL
        assert ei.value.operation == "ibv_resize_cq"
        assert f"cqe={max_cqe + 1}" in str(ei.value)
        assert cq.cqe == before
    with pytest.raises(ib.VerbsError) as ei:
        cq.resize(64)
    assert ei.value.errno == errno.EBADF


def test_resize_cq_ex_refused_in_session(ctx, pd):
    qa, cqa, qb, cqb = make_rc_pair(ctx, pd, cq_size=16, wc_flags=ib.CreateCQWCFlags.BYTE_LEN)
    buf = np.zeros(64, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ib.AccessFlags.LOCAL_WRITE, owner=buf)
    qb.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr.sge(32)]))
    qa.post_send(
        ib.SendWR(wr_id=2, sg_list=[mr.sge(8, offset=32)], send_flags=ib.SendFlags.SIGNALED)
    )
    poll_until(cqa, 1, check=True)
    cqb.resize(64)
    assert cqb.cqe >= 64
    deadline = time.monotonic() + 10
    while not cqb.start_poll():
        assert time.monotonic() < deadline, "no receive completion"
        time.sleep(0.001)
    with pytest.raises(ValueError, match="start_poll"):
        cqb.resize(128)
    assert cqb.wr_id == 1
    cqb.end_poll()
    cqb.resize(128)
    assert cqb.cqe >= 128
    for o in (qa, qb, mr, cqa, cqb):
        o.close()


def test_resize_below_queued_completions(ctx, pd):
    """rxe refuses a size below the completions waiting (EINVAL) and
    keeps them all; a size equal to their number is granted."""
    n = 32
    qa, cqa, qb, cqb = make_rc_pair(ctx, pd, cq_size=64)
    buf = np.zeros(n * 8, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ib.AccessFlags.LOCAL_WRITE, owner=buf)
    qb.post_recv([ib.RecvWR(wr_id=100 + i, sg_list=[mr.sge(8, offset=8 * i)]) for i in range(n)])
    qa.post_send(
        [
            ib.SendWR(wr_id=i, sg_list=[mr.sge(4, offset=8 * i)], send_flags=ib.SendFlags.SIGNALED)
            for i in range(n)
        ]
    )
    # rxe's responder completes a receive before it acknowledges the
    # send: all n sends completed means cqb holds n completions.
    assert sorted(wc.wr_id for wc in poll_until(cqa, n, check=True)) == list(range(n))
    size = cqb.cqe
    with pytest.raises(ib.VerbsError) as ei:
        cqb.resize(n // 2)
    assert ei.value.errno == errno.EINVAL
    assert cqb.cqe == size
    cqb.resize(n)
    assert cqb.cqe >= n
    got = poll_until(cqb, n, check=True)
    assert [wc.wr_id for wc in got] == [100 + i for i in range(n)]
    assert cqb.poll(4) == []
    for o in (qa, qb, mr, cqa, cqb):
        o.close()


def test_resize_cq_under_load(ctx, pd):
    """Both CQs resized up and down between polls while sends stream:
    every send and every receive completes exactly once, in order."""
    total, window = 600, 16
    sizes = itertools.cycle([window, 4 * window, window + 3, 256, 2 * window, 1024])
    qa, cqa, qb, cqb = make_rc_pair(ctx, pd, cq_size=2 * window)
    buf = np.zeros(2 * window * 8, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ib.AccessFlags.LOCAL_WRITE, owner=buf)

    def recv(i):
        return ib.RecvWR(wr_id=i, sg_list=[mr.sge(8, offset=8 * (i % window))])

    qb.post_recv([recv(i) for i in range(window)])
    sent = 0
    send_ids, recv_ids, imms = [], [], []
    recv_posted = window
    resizes = 0
    deadline = time.monotonic() + 120
    while len(send_ids) < total or len(recv_ids) < total:
        assert time.monotonic() < deadline, (len(send_ids), len(recv_ids))
        # At most `window` completions wait on either CQ, so any size
        # from the cycle (>= window) holds them.
        room = min(window - (sent - len(send_ids)), window - (sent - len(recv_ids)))
        burst = min(room, total - sent)
        if burst > 0:
            qa.post_send(
                [
                    ib.SendWR(
                        wr_id=sent + k,
                        sg_list=[mr.sge(4, offset=8 * window)],
                        opcode=ib.WROpcode.SEND_WITH_IMM,
                        send_flags=ib.SendFlags.SIGNALED,
                        imm_data=sent + k,
                    )
                    for k in range(burst)
                ]
            )
            sent += burst
        for wc in cqa.poll(3):
            wc.raise_for_status()
            send_ids.append(wc.wr_id)
        got = cqb.poll(5)
        for wc in got:
            wc.raise_for_status()
            recv_ids.append(wc.wr_id)
            imms.append(wc.imm_data)
        if got and recv_posted < total:
            more = min(len(got), total - recv_posted)
            qb.post_recv([recv(recv_posted + k) for k in range(more)])
            recv_posted += more
        (cqa if resizes % 2 else cqb).resize(next(sizes))
        resizes += 1
    assert send_ids == list(range(total))
    assert recv_ids == list(range(total))
    assert imms == list(range(total))
    assert resizes > 20
    assert cqa.poll(4) == [] and cqb.poll(4) == []
    for o in (qa, qb, mr, cqa, cqb):
        o.close()
