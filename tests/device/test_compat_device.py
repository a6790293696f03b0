"""Drop-in compatibility with the published ``ibverbs`` package, on rxe0.

The device-side counterpart of tests/host/test_compat.py: code written for
the published package (positional calls, bytes GIDs, ``except VerbsError``
around completions, duck-typed tensors, ...) runs unchanged against a real
device, one test per point of the compatibility contract at least.
"""

import ctypes
import errno
import gc
import os
import select
import time

import numpy as np
import pytest

import ibverbs as ib
import ibverbs._cuda_driver as _cuda_driver
import ibverbs.cuda as cuda
import support.rdma as rig
from support import GID_INDEX, PORT

pytestmark = pytest.mark.integration

PAGE = os.sysconf("SC_PAGE_SIZE")


ACCESS = rig.ALL_ACCESS


def write(qp, cq, sge, remote_addr, rkey, wr_id=1):
    """One signaled RDMA WRITE; returns its completion (not checked)."""
    qp.post_send(
        ib.SendWR(
            wr_id=wr_id,
            sg_list=[sge],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=remote_addr,
            rkey=rkey,
        )
    )
    (wc,) = rig.poll_until(cq)
    return wc


def new_rc_qp(pd, cq):
    return pd.create_qp(ib.QPInitAttr(cq, cq, ib.QPType.RC))


# ---------------------------------------------------------------------------
# The published call forms, on real handles
# ---------------------------------------------------------------------------


def test_published_positional_calls(ctx, pd):
    """to_init(port), to_rtr(remote, sgid_index, mtu), to_rts(psn, timeout,
    retry_cnt, rnr_retry, max_rd_atomic), query_gid(port_num, index),
    ack_events(nevents=...) as the published signatures allow."""
    pa = ctx.query_port(PORT)
    gid = ctx.query_gid(PORT, GID_INDEX)
    cq = ctx.create_cq(16)
    qa, qb = new_rc_qp(pd, cq), new_rc_qp(pd, cq)
    ia = ib.local_qp_info(qa, pa, gid, port=PORT, psn=5)
    ibb = ib.local_qp_info(qb, pa, gid, port=PORT, psn=6)
    for qp, local, remote in ((qa, ia, ibb), (qb, ibb, ia)):
        qp.to_init(PORT)  # access defaults to 0, as published
        assert qp.query()[0]["qp_access_flags"] == 0
        qp.to_rtr(remote, GID_INDEX, ib.MTU.MTU_1024, 64, 12, 1, 0, 0)
        qp.to_rts(local.psn, 14, 7, 7, 1)
        assert qp.state == ib.QPState.RTS
    buf, mr = rig.mkbuf(pd, 64, access=ib.AccessFlags.LOCAL_WRITE)
    qa.post_send(ib.SendWR(3, [mr.sge(8)], ib.WROpcode.SEND, ib.SendFlags.SIGNALED))
    qb.post_recv(ib.RecvWR(4, [mr.sge(8, offset=32)]))
    assert sorted(wc.wr_id for wc in rig.ok(rig.poll_until(cq, 2))) == [3, 4]
    with pytest.raises(ValueError, match="more CQ events"):
        cq.ack_events(nevents=1)
    qa.close(), qb.close(), mr.close(), cq.close()


# ---------------------------------------------------------------------------
# 1. QPInfo.gid is the raw bytes
# ---------------------------------------------------------------------------


def test_published_keyword_names(ctx, pd):
    """query_port(port_num=), query_gid(port_num=, index=) and
    QP.modify(attr_mask=, ...) as the published signatures name them."""
    pa = ctx.query_port(port_num=PORT)
    assert pa.port_num == PORT and pa.state == ctx.query_port(PORT).state
    assert ctx.query_gid(port_num=PORT, index=GID_INDEX) == ctx.query_gid(PORT, GID_INDEX)
    cq = ctx.create_cq(4)
    qp = new_rc_qp(pd, cq)
    qp.modify(
        attr_mask=ib.QPAttrMask.STATE
        | ib.QPAttrMask.PKEY_INDEX
        | ib.QPAttrMask.PORT
        | ib.QPAttrMask.ACCESS_FLAGS,
        qp_state=ib.QPState.INIT,
        pkey_index=0,
        port_num=PORT,
        qp_access_flags=0,
    )
    assert qp.state == ib.QPState.INIT
    with pytest.raises(TypeError, match="one mask"):
        qp.modify(ib.QPAttrMask.STATE, attr_mask=ib.QPAttrMask.STATE, qp_state=ib.QPState.INIT)
    qp.close()
    cq.close()


def test_1_qpinfo_gid_bytes_on_rxe(ctx, pd):
    pa = ctx.query_port(PORT)
    gid = ctx.query_gid(PORT, GID_INDEX)
    cq = ctx.create_cq(16)
    qa, qb = new_rc_qp(pd, cq), new_rc_qp(pd, cq)
    ia = ib.local_qp_info(qa, pa, gid, port=PORT)
    assert type(ia.gid) is bytes and ia.gid == gid.raw and gid == ia.gid
    wire = ib.local_qp_info(qb, pa, gid.raw, port=PORT).to_bytes()
    ibb = ib.QPInfo.from_bytes(wire)
    assert ibb.gid == gid.raw
    ib.connect_rc(qa, ibb, port=PORT, sgid_index=GID_INDEX, access=ACCESS)
    ib.connect_rc(qb, ia, port=PORT, sgid_index=GID_INDEX, access=ACCESS)
    src, smr = rig.mkbuf(pd, 64, fill=7)
    dst, dmr = rig.mkbuf(pd, 64)
    wc = write(qa, cq, smr.sge(), dmr.addr, dmr.rkey)
    assert wc.is_success and wc.status_str == "success"
    assert (dst == 7).all()
    qa.close(), qb.close(), smr.close(), dmr.close(), cq.close()


# ---------------------------------------------------------------------------
# 2. A failed completion is caught as VerbsError
# ---------------------------------------------------------------------------


def test_2_failed_completion_is_a_verbs_error(ctx, pd):
    qa, ca, qb, cb = rig.make_rc_pair(ctx, pd, rnr_retry=0)
    buf, mr = rig.mkbuf(pd, 64)
    wc = write(qa, ca, mr.sge(8), mr.addr, mr.rkey ^ 0xFF)  # a wrong rkey
    assert not wc.is_success
    assert wc.status_str not in ("success", "unknown")  # ibv_wc_status_str
    with pytest.raises(ib.VerbsError) as info:
        wc.raise_for_status()
    e = info.value
    assert isinstance(e, ib.CompletionError) and e.errno == errno.EIO
    assert e.wc is wc and e.status == wc.status == ib.WCStatus(wc.status)
    assert e.vendor_err == wc.vendor_err and e.status.name in str(e)
    # the QP is in error now: the next WR is flushed, and poll_count says so
    qa.post_send(
        ib.SendWR(
            wr_id=2,
            sg_list=[mr.sge(8)],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=mr.addr,
            rkey=mr.rkey,
        )
    )
    deadline = time.monotonic() + 10
    with pytest.raises(ib.VerbsError) as info:
        while time.monotonic() < deadline:
            ca.poll_count(1)
    assert info.value.errno == errno.EIO
    assert info.value.status == ib.WCStatus.WR_FLUSH_ERR
    for h in (qa, qb, mr, ca, cb):
        h.close()


# ---------------------------------------------------------------------------
# 3. MR.owner and SGE.owner
# ---------------------------------------------------------------------------


def test_3_mr_and_sge_owner(pd):
    arr = np.zeros(256, dtype=np.uint8)
    mr = ib.reg_tensor(pd, arr, ACCESS)
    assert mr.owner is arr
    s = mr.sge()
    assert s.owner is mr and s.mr is mr
    assert ib.SGE(mr, 8).owner is mr
    wr = ib.SendWR(sg_list=[s])
    del mr, s
    gc.collect()
    mr = wr.sg_list[0].owner  # the WR's SGE keeps its MR (and its array)
    assert isinstance(mr, ib.MR) and not mr.closed and mr.owner is arr
    del wr
    mr.close()
    assert mr.owner is None and mr.closed
    raw = pd.reg_mr(arr.ctypes.data, arr.nbytes, ACCESS)
    assert raw.owner is None and raw.sge().owner is raw
    raw.close()


# ---------------------------------------------------------------------------
# 4 and 5. ibverbs.cuda with a real PD (the fake libcuda as the driver)
# ---------------------------------------------------------------------------


class DuckTensor:
    """The parts of a torch tensor that the published package reads."""

    def __init__(self, ptr, nbytes, is_cuda=True, contiguous=True):
        self._ptr, self._n, self.is_cuda = ptr, nbytes, is_cuda
        self._contiguous = contiguous

    def data_ptr(self):
        return self._ptr

    def numel(self):
        return self._n

    def element_size(self):
        return 1

    def is_contiguous(self):
        return self._contiguous


def test_4_cuda_helpers_with_a_real_pd(fake_cuda, ctx, pd):
    qa, ca, qb, cb = rig.make_rc_pair(ctx, pd)
    n = 2 * PAGE
    ptr = fake_cuda.alloc_tracked(n + PAGE, misalign=128)
    t = DuckTensor(ptr, n)
    assert cuda.tensor_ptr_len(t) == (ptr, n)
    start = ptr - ptr % PAGE
    fd = cuda.dmabuf_fd(start, PAGE)
    try:  # rxe imports no dma-buf
        with pytest.raises(ib.VerbsError) as info:
            pd.reg_dmabuf_mr(ptr - start, 64, ptr, fd, ACCESS)
        assert info.value.errno == errno.EOPNOTSUPP
    finally:
        os.close(fd)
    gmr = cuda.register_tensor(pd, t, ACCESS)  # falls back to reg_mr
    assert gmr.path == "peermem" and gmr.tensor is t and not gmr.closed
    assert isinstance(gmr.mr, ib.MR) and gmr.mr.owner is t
    sge = gmr.sge(64, offset=PAGE)
    assert sge.owner is gmr and sge.addr == ptr + PAGE
    # RDMA through the GpuMR's SGE: "device memory" (host memory here) in,
    # a numpy buffer out.
    ctypes.memset(ptr + PAGE, 0x5A, 64)
    dst, dmr = rig.mkbuf(pd, 64)
    assert write(qa, ca, sge, dmr.addr, dmr.rkey).is_success
    assert (dst == 0x5A).all()
    with pytest.raises(ValueError, match="exceeds"):
        gmr.sge(n + 1)
    with pytest.raises(ValueError, match="outside"):
        gmr.sge(offset=-1)
    # GpuMR built by hand from a registration of one's own
    mr = pd.reg_mr(ptr, n, ACCESS)
    own = cuda.GpuMR(mr, ptr, n, t)
    assert own.sge().owner is own and own.sge().mr is mr and own.tensor is t
    own.close()
    assert own.closed and own.tensor is None and mr.closed
    gmr.close()
    assert gmr.closed and gmr.tensor is None
    for h in (qa, qb, dmr, ca, cb):
        h.close()
    assert fake_cuda.open_exports() == 0


def test_5_duck_typed_tensors_with_a_real_pd(fake_cuda, pd, monkeypatch):
    ptr = fake_cuda.alloc_tracked(PAGE)
    with pytest.raises(ValueError, match=r"ibverbs\.cuda\.register_tensor"):
        ib.reg_tensor(pd, DuckTensor(ptr, 64, is_cuda=True), ACCESS)
    with pytest.raises(ValueError, match=r"ibverbs\.reg_tensor"):
        cuda.register_tensor(pd, DuckTensor(ptr, 64, is_cuda=False), ACCESS)
    with pytest.raises(ValueError, match="contiguous"):
        cuda.register_tensor(pd, DuckTensor(ptr, 64, contiguous=False), ACCESS)
    with pytest.raises(ValueError, match="empty"):
        cuda.register_tensor(pd, DuckTensor(ptr, 0), ACCESS)

    def refuse(p, n):
        raise RuntimeError("no dma-buf export here")

    monkeypatch.setattr(cuda, "dmabuf_fd", refuse)
    t = DuckTensor(ptr, 100)
    gmr = cuda.register_tensor(pd, t, ACCESS)
    assert gmr.path == "peermem" and gmr.mr.addr == ptr and gmr.mr.length == 100
    gmr.close()
    # a host duck tensor goes to reg_tensor
    host = np.zeros(64, dtype=np.uint8)
    mr = ib.reg_tensor(pd, DuckTensor(host.ctypes.data, 64, is_cuda=False), ACCESS)
    assert mr.addr == host.ctypes.data and mr.length == 64
    mr.close()


# ---------------------------------------------------------------------------
# 6. ack_async_event, event_type_str, WC.is_success / status_str
# ---------------------------------------------------------------------------


def test_6_async_event_and_wc_text(ctx, pd):
    qa, ca, qb, cb = rig.make_rc_pair(ctx, pd, cq_size=1)
    small = ca
    buf, mr = rig.mkbuf(pd, 64)
    rig.overrun_cq(qa, small, mr, offset=32)
    deadline = time.monotonic() + 15
    while True:  # the overrun CQ raises IBV_EVENT_CQ_ERR
        r, _, _ = select.select([ctx.async_fd], [], [], max(0.0, deadline - time.monotonic()))
        assert r, "no CQ_ERR event"
        ev = ctx.get_async_event()
        if ev.event_type == ib.EventType.CQ_ERR:
            break
        ctx.ack_async_event(ev)
    assert ev.event_type_str == "CQ error"  # ibv_event_type_str
    assert ev.element is small and not ev.acked
    qa.close()
    with pytest.raises(ib.VerbsError):  # held by the unacked event
        small.close()
    ctx.ack_async_event(ev)
    assert ev.acked
    ctx.ack_async_event(ev)  # idempotent, as ev.ack()
    with pytest.raises(TypeError):
        ctx.ack_async_event("event")
    time.sleep(0.2)
    os.set_blocking(ctx.async_fd, False)
    while True:  # ack the other CQ_ERRs
        try:
            ctx.ack_async_event(ctx.get_async_event())
        except ib.VerbsError as e:
            assert e.errno == errno.EAGAIN
            break
    small.close()
    for h in (qb, mr, cb):
        h.close()


# ---------------------------------------------------------------------------
# 7. reg_dmabuf_mr with a bad fd: VerbsError(EBADF)
# ---------------------------------------------------------------------------


def test_7_reg_dmabuf_mr_bad_fd_is_a_verbs_error(pd):
    with pytest.raises(ib.VerbsError) as info:
        pd.reg_dmabuf_mr(0, PAGE, 0x10000, -1, ACCESS)
    assert info.value.errno == errno.EBADF
    assert info.value.operation == "ibv_reg_dmabuf_mr"
    with pytest.raises(ib.VerbsError):
        pd.reg_dmabuf_mr(0, PAGE, 0x10000, -5, ACCESS)


# ---------------------------------------------------------------------------
# 8. Messages
# ---------------------------------------------------------------------------


def test_8_messages_on_rxe(ctx, pd):
    ch = ctx.create_comp_channel()
    cq = ctx.create_cq(4, ch)
    with pytest.raises(ValueError, match="more CQ events"):
        cq.ack_events()
    with pytest.raises(ValueError, match="more CQ events"):
        cq.ack_events(3)
    buf, mr = rig.mkbuf(pd, 64)
    with pytest.raises(ValueError, match="non-negative"):
        mr.sge(8, offset=-1)
    with pytest.raises(ValueError, match="non-negative"):
        ib.SGE(mr, 8, offset=-8)
    with pytest.raises(ValueError, match=r"2\*\*32"):
        ib.SGE(mr, 2**32)
    cq.close(), ch.close(), mr.close()


# ---------------------------------------------------------------------------
# 9. Enums: what the device reports maps onto members
# ---------------------------------------------------------------------------


def test_9_enums_on_rxe(ctx, pd):
    qp = new_rc_qp(pd, ctx.create_cq(4))
    assert ib.QPType(qp.qp_type) is ib.QPType.RC and ib.QPType.DRIVER == 0xFF
    for name in ("TM_ERR", "TM_RNDV_INCOMPLETE"):
        assert ib.WC(status=ib.WCStatus[name]).status_str != "unknown"
    assert {"TM_SYNC_REQ", "TM_MATCH", "TM_DATA_VALID"} <= set(ib.WCFlags.__members__)
    assert {"FLUSH_GLOBAL", "FLUSH_PERSISTENT"} <= set(ib.AccessFlags.__members__)
    qp.close()


# ---------------------------------------------------------------------------
# 10. connect_rc passes the negotiated MTU, seen by a wrapper
# ---------------------------------------------------------------------------


class Wrapped:
    """Library code wrapping a QP: forwards everything, records to_rtr."""

    def __init__(self, qp):
        self._qp = qp
        self.rtr = None

    def __getattr__(self, name):
        return getattr(self._qp, name)

    def to_rtr(self, *a, **k):
        self.rtr = (a, k)
        return self._qp.to_rtr(*a, **k)


def test_10_connect_rc_mtu_on_rxe(ctx, pd):
    pa = ctx.query_port(PORT)
    gid = ctx.query_gid(PORT, GID_INDEX)
    cq = ctx.create_cq(16)
    qa, qb = Wrapped(new_rc_qp(pd, cq)), Wrapped(new_rc_qp(pd, cq))
    ia = ib.local_qp_info(qa, pa, gid, port=PORT)
    ibb = ib.local_qp_info(qb, pa, gid, port=PORT)
    assert pa.active_mtu > ib.MTU.MTU_256
    # Peers that advertise a smaller MTU than the port's: both ends must
    # use it (rxe refuses packets of another path MTU).
    ia.mtu = ibb.mtu = ib.MTU.MTU_256
    ib.connect_rc(qa, ibb, port=PORT, sgid_index=GID_INDEX, access=ACCESS)
    ib.connect_rc(qb, ia, port=PORT, sgid_index=GID_INDEX, access=ACCESS)
    assert qa.rtr[1]["mtu"] == qb.rtr[1]["mtu"] == ib.MTU.MTU_256
    assert qa.query()[0]["path_mtu"] == ib.MTU.MTU_256
    qc = Wrapped(new_rc_qp(pd, cq))  # the port's own MTU when it is smaller
    big = ib.QPInfo(ia.qp_num, 0, 0, gid, PORT, ib.MTU.MTU_4096)
    ib.connect_rc(qc, big, port=PORT, sgid_index=GID_INDEX, access=ACCESS)
    assert qc.rtr[1]["mtu"] == min(pa.active_mtu, ib.MTU.MTU_4096)
    qc._qp.close()
    src, smr = rig.mkbuf(pd, 600, fill=3)
    dst, dmr = rig.mkbuf(pd, 600)
    assert write(qa, cq, smr.sge(), dmr.addr, dmr.rkey).is_success
    assert (dst == 3).all()
    qa._qp.close(), qb._qp.close(), smr.close(), dmr.close(), cq.close()


# ---------------------------------------------------------------------------
# The last four differences, on rxe0
# ---------------------------------------------------------------------------


class Recording:
    """A QP wrapper that records every transition and forwards it."""

    def __init__(self, qp):
        self._qp = qp
        self.calls = []

    def __getattr__(self, name):
        return getattr(self._qp, name)

    def _record(self, name, a, k):
        self.calls.append((name, a, k))
        return getattr(self._qp, name)(*a, **k)

    def to_init(self, *a, **k):
        return self._record("to_init", a, k)

    def to_rtr(self, *a, **k):
        return self._record("to_rtr", a, k)

    def to_rts(self, *a, **k):
        return self._record("to_rts", a, k)


def test_24_1_reg_tensor_refuses_is_cuda_alone(pd):
    class OnlyIsCuda:
        is_cuda = True

    with pytest.raises(ValueError, match=r"ibverbs\.cuda\.register_tensor"):
        ib.reg_tensor(pd, OnlyIsCuda(), ACCESS)
    # A torch-like CUDA tensor over real host memory: refused as well, so
    # no MR was registered on the device.
    host = np.zeros(64, dtype=np.uint8)
    with pytest.raises(ValueError, match=r"ibverbs\.cuda\.register_tensor"):
        ib.reg_tensor(pd, DuckTensor(host.ctypes.data, 64, is_cuda=True), ACCESS)


def test_24_2_connect_rc_calls_on_real_qps(ctx, pd):
    pa = ctx.query_port(PORT)
    gid = ctx.query_gid(PORT, GID_INDEX)
    cq = ctx.create_cq(16)
    qa, qb = Recording(new_rc_qp(pd, cq)), Recording(new_rc_qp(pd, cq))
    ia = ib.local_qp_info(qa, pa, gid, port=PORT, psn=11)
    ibb = ib.local_qp_info(qb, pa, gid, port=PORT, psn=22)
    ib.connect_rc(qa, ibb, port=PORT, sgid_index=GID_INDEX, access=ACCESS, local_psn=11)
    ib.connect_rc(qb, ia, port=PORT, sgid_index=GID_INDEX, access=ACCESS, local_psn=22)
    mtu = min(pa.active_mtu, ibb.mtu)
    assert qa.calls == [
        ("to_init", (PORT, ACCESS), {}),
        ("to_rtr", (ibb,), {"sgid_index": GID_INDEX, "mtu": mtu}),
        ("to_rts", (11,), {}),
    ]
    # to_rtr found the port by itself: the one given at to_init
    attr, _ = qa.query()
    assert attr["port_num"] == PORT and attr["qp_state"] == ib.QPState.RTS
    src, smr = rig.mkbuf(pd, 256, fill=7)
    dst, dmr = rig.mkbuf(pd, 256)
    assert write(qa, cq, smr.sge(), dmr.addr, dmr.rkey).is_success
    assert (dst == 7).all()
    qa._qp.close(), qb._qp.close(), smr.close(), dmr.close(), cq.close()


def test_24_3_mr_sge_past_the_end_says_exceeds(pd):
    buf, mr = rig.mkbuf(pd, 4096)
    with pytest.raises(ValueError, match="exceeds"):
        mr.sge(4097)
    with pytest.raises(ValueError, match="exceeds"):
        mr.sge(100, offset=4000)
    with pytest.raises(ValueError, match="exceeds"):
        mr.sge(8, offset=4097)
    assert mr.sge(96, offset=4000).length == 96  # up to the end is fine
    mr.close()


def test_24_4_register_tensor_without_libcuda_uses_reg_mr(pd, monkeypatch, tmp_path):
    # No driver library at all: the published package's fallback,
    # pd.reg_mr on the pointer, registers it (host memory on rxe).
    monkeypatch.setenv("IBVERBS_LIBCUDA", str(tmp_path / "libcuda.so.1"))
    _cuda_driver.forget_driver()
    try:
        host = np.zeros(2 * PAGE, dtype=np.uint8)
        t = DuckTensor(host.ctypes.data, host.nbytes)
        gmr = cuda.register_tensor(pd, t, ACCESS)
        assert gmr.path == "peermem" and gmr.tensor is t
        assert gmr.mr.addr == host.ctypes.data and gmr.mr.length == host.nbytes
        gmr.close()
        assert gmr.closed
    finally:
        _cuda_driver.forget_driver()
