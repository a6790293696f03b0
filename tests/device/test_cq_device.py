"""Completion queues, completion channels and work completions against a
real device (rxe0 in the Soft-RoCE guest)."""

import errno
import os
import select
import threading
import time

import numpy as np
import pytest

import ibverbs as ib

from support import GID_INDEX, PORT
from support.rdma import ALL_ACCESS, make_rc_pair, poll_until, refused, write_wr
from support.timeouts import scaled

pytestmark = pytest.mark.integration


def rc_pair_on(ctx, pd, cq_a, cq_b):
    """Two connected RC QPs using the given CQs."""
    qa = pd.create_qp(ib.QPInitAttr(send_cq=cq_a, recv_cq=cq_a))
    qb = pd.create_qp(ib.QPInitAttr(send_cq=cq_b, recv_cq=cq_b))
    port_attr = ctx.query_port(PORT)
    gid = ctx.query_gid(PORT, GID_INDEX)
    ia = ib.local_qp_info(qa, port_attr, gid, port=PORT, psn=1)
    ibb = ib.local_qp_info(qb, port_attr, gid, port=PORT, psn=2)
    ib.connect_rc(qa, ibb, port=PORT, sgid_index=GID_INDEX, access=ALL_ACCESS, local_psn=1)
    ib.connect_rc(qb, ia, port=PORT, sgid_index=GID_INDEX, access=ALL_ACCESS, local_psn=2)
    return qa, qb


# ---- creation and arguments ---------------------------------------------


def test_create_cq_attributes(ctx):
    cq = ctx.create_cq(16)
    assert cq.cqe >= 16
    assert cq.channel is None
    assert cq.context is ctx
    assert isinstance(cq.handle, int)
    assert not cq.closed
    assert cq.poll() == []
    assert cq.poll(8) == []
    assert cq.poll(num_entries=3) == []
    assert repr(cq).startswith("<ibverbs.CQ cqe=")
    cq.close()
    assert cq.closed
    cq.close()


@pytest.mark.parametrize(
    "args, kwargs, exc",
    [
        ((0,), {}, ValueError),
        ((-1,), {}, ValueError),
        (("16",), {}, TypeError),
        ((16,), {"comp_vector": -1}, ValueError),
        ((16,), {"channel": 3}, TypeError),
        ((), {}, TypeError),
    ],
)
def test_create_cq_bad_arguments(ctx, args, kwargs, exc):
    with pytest.raises(exc):
        ctx.create_cq(*args, **kwargs)


def test_create_cq_too_large_is_verbs_error(ctx):
    max_cqe = ctx.query_device().max_cqe
    with pytest.raises(ib.VerbsError) as ei:
        ctx.create_cq(max_cqe + 1)
    assert ei.value.errno == errno.EINVAL
    assert ei.value.operation == "ibv_create_cq"


def test_poll_bad_num_entries(cq):
    for bad in (0, -1, -(2**70)):
        with pytest.raises(ValueError, match="num_entries"):
            cq.poll(bad)
    with pytest.raises(ValueError):
        cq.poll(num_entries=0)
    with pytest.raises(TypeError):
        cq.poll("1")
    with pytest.raises(TypeError):
        cq.poll(1, 2)
    # Larger than the CQ: fine, just "up to".
    assert cq.poll(2**62) == []


def test_use_after_close(ctx):
    cq = ctx.create_cq(4)
    cq.close()
    for call in (cq.poll, cq.req_notify, cq.ack_events):
        with pytest.raises(ib.VerbsError) as ei:
            call()
        assert ei.value.errno == errno.EBADF
    with pytest.raises(ib.VerbsError):
        cq.cqe
    ch = ctx.create_comp_channel()
    ch.close()
    with pytest.raises(ib.VerbsError):
        ch.fd
    with pytest.raises(ib.VerbsError):
        ch.get_cq_event()
    with pytest.raises(ib.VerbsError):
        ctx.create_cq(4, channel=ch)


def test_close_context_with_cq_is_ebusy(ctx):
    cq = ctx.create_cq(4)
    ch = ctx.create_comp_channel()
    with pytest.raises(ib.VerbsError) as ei:
        ctx.close()
    assert ei.value.errno == errno.EBUSY
    assert "CQ x1" in str(ei.value) and "CompChannel x1" in str(ei.value)
    assert cq.poll() == [] and ch.fd >= 0
    with cq, ch:
        pass
    ctx.close()


# ---- channels ------------------------------------------------------------


def test_channel_attributes_and_cq_link(ctx):
    ch = ctx.create_comp_channel()
    assert isinstance(ch.fd, int) and ch.fd >= 0
    assert ch.context is ctx
    cq = ctx.create_cq(8, channel=ch, comp_vector=0)
    assert cq.channel is ch
    # The CQ uses the channel: the channel cannot go first.
    with pytest.raises(ib.VerbsError) as ei:
        ch.close()
    assert ei.value.errno == errno.EBUSY
    assert not ch.closed
    cq.close()
    assert cq.channel is None
    ch.close()
    assert ch.closed


def test_channel_of_another_context_refused(ctx, device_name):
    other = ib.Context(device_name)
    ch = other.create_comp_channel()
    with pytest.raises(ValueError, match="another Context"):
        ctx.create_cq(8, channel=ch)
    ch.close()
    other.close()


def test_nonblocking_channel_without_event_is_eagain(ctx):
    ch = ctx.create_comp_channel()
    os.set_blocking(ch.fd, False)
    with pytest.raises(ib.VerbsError) as ei:
        ch.get_cq_event()
    assert ei.value.errno == errno.EAGAIN
    assert ei.value.operation == "ibv_get_cq_event"
    ch.close()


def test_ack_events_counts(cq):
    with pytest.raises(ValueError, match="more CQ events than the 0 delivered"):
        cq.ack_events()
    with pytest.raises(ValueError):
        cq.ack_events(0)
    cq.req_notify()
    cq.req_notify(solicited_only=True)


# ---- completions ----------------------------------------------------------


def test_poll_reaps_many_in_order(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd)
    buf = np.zeros(1 << 16, dtype=np.uint8)
    buf[:4096] = np.arange(4096) % 251
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)
    n = 20
    qa.post_send([write_wr(mr, 64 + i, mr, at=8192 + 128 * i, wr_id=100 + i) for i in range(n)])
    wcs = poll_until(ca, n)
    assert [w.wr_id for w in wcs] == list(range(100, 100 + n))
    for i, w in enumerate(wcs):
        w.raise_for_status()
        assert w.status == ib.WCStatus.SUCCESS
        assert w.opcode == ib.WCOpcode.RDMA_WRITE
        assert w.qp_num == qa.qp_num
        assert np.array_equal(buf[8192 + 128 * i : 8192 + 128 * i + 64 + i], buf[: 64 + i])
    assert ca.poll(16) == [] and cb.poll(16) == []


def test_poll_batches_are_bounded_by_num_entries(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd)
    buf = np.zeros(8192, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)
    qa.post_send([write_wr(mr, 8, mr, at=4096, wr_id=i) for i in range(6)])
    deadline = time.monotonic() + 10
    got = []
    while len(got) < 6 and time.monotonic() < deadline:
        batch = ca.poll(4)
        assert len(batch) <= 4
        got.extend(batch)
    assert [w.wr_id for w in got] == list(range(6))


def test_write_with_imm_completion_fields(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd)
    buf = np.zeros(8192, dtype=np.uint8)
    buf[:32] = 7
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)
    qb.post_recv(ib.RecvWR(wr_id=55))
    qa.post_send(
        ib.SendWR(
            wr_id=9,
            sg_list=[mr.sge(32)],
            opcode=ib.WROpcode.RDMA_WRITE_WITH_IMM,
            send_flags=ib.SendFlags.SIGNALED,
            imm_data=0xDEADBEEF,
            remote_addr=mr.addr + 4096,
            rkey=mr.rkey,
        )
    )
    (sw,) = poll_until(ca, 1)
    (rw,) = poll_until(cb, 1)
    sw.raise_for_status()
    rw.raise_for_status()
    assert rw.wr_id == 55
    assert rw.opcode == ib.WCOpcode.RECV_RDMA_WITH_IMM
    assert rw.wc_flags & ib.WCFlags.WITH_IMM
    assert rw.imm_data == 0xDEADBEEF
    assert rw.byte_len == 32
    assert rw.qp_num == qb.qp_num
    assert (buf[4096 : 4096 + 32] == 7).all()


def test_error_completion_raises_completion_error(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd, rnr_retry=0)
    buf = np.zeros(4096, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)
    qa.post_send(
        ib.SendWR(
            wr_id=3,
            sg_list=[mr.sge(16)],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=mr.addr,
            rkey=(mr.rkey + 0x100) & 0xFFFFFFFF,
        )
    )
    (wc,) = poll_until(ca, 1)
    assert wc.wr_id == 3
    assert wc.status == ib.WCStatus.REM_ACCESS_ERR
    with pytest.raises(ib.CompletionError) as ei:
        wc.raise_for_status()
    assert ei.value.wc is wc and "REM_ACCESS_ERR" in str(ei.value)


# ---- completion events ---------------------------------------------------


def test_completion_event_returns_the_same_cq(ctx, pd):
    ch = ctx.create_comp_channel()
    ca = ctx.create_cq(16, channel=ch)
    cb = ctx.create_cq(16)
    qa, qb = rc_pair_on(ctx, pd, ca, cb)
    buf = np.zeros(8192, dtype=np.uint8)
    buf[:64] = 3
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)

    for round_ in range(2):
        ca.req_notify()
        qa.post_send(write_wr(mr, 64, mr, at=4096, wr_id=round_))
        r, _, _ = select.select([ch.fd], [], [], 10)
        assert r == [ch.fd], "no completion event within 10 s"
        got = ch.get_cq_event()
        assert got is ca
        assert ca.events_unacked == 1
        (wc,) = poll_until(ca, 1)
        wc.raise_for_status()
        assert wc.wr_id == round_
        ca.ack_events()
        assert ca.events_unacked == 0
        with pytest.raises(ValueError):
            ca.ack_events()
    assert (buf[4096 : 4096 + 64] == 3).all()

    # An event left unacked is acked by close(), which would hang otherwise.
    ca.req_notify()
    qa.post_send(write_wr(mr, 8, mr, at=4096, wr_id=7))
    assert ch.get_cq_event() is ca
    poll_until(ca, 1)
    qa.close()
    qb.close()
    ca.close()
    assert ca.closed
    ch.close()


def test_get_cq_event_blocks_without_the_gil(ctx, pd):
    ch = ctx.create_comp_channel()
    ca = ctx.create_cq(16, channel=ch)
    cb = ctx.create_cq(16)
    qa, qb = rc_pair_on(ctx, pd, ca, cb)
    buf = np.zeros(8192, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)
    ca.req_notify()
    result = []
    t = threading.Thread(target=lambda: result.append(ch.get_cq_event()))
    t.start()
    # The main thread keeps running while the other one waits...
    time.sleep(0.5)
    assert t.is_alive()
    # ... and the channel refuses to close under it.
    with pytest.raises(ib.VerbsError, match="another thread") as ei:
        ch.close()
    assert ei.value.errno == errno.EBUSY
    qa.post_send(write_wr(mr, 8, mr, at=4096, wr_id=1))
    t.join(scaled(10))
    assert not t.is_alive()
    assert result == [ca]
    poll_until(ca, 1)[0].raise_for_status()
    ca.ack_events(1)


# rxe has no CQ moderation (the counted_objects fixture: nothing left).
def test_modify_cq(counted_objects):
    ctx, _, cq, _ = counted_objects
    refused("ibv_modify_cq", cq.modify, 4, 10)
    cqx = ctx.create_cq_ex(ib.CQInitAttrEx(8))
    refused("ibv_modify_cq", cqx.modify, cq_count=1, cq_period=0)
    cqx.close()
