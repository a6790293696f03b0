"""The connection helpers and tensor registration on a real device, and the
work-request objects they are used with (SGE/SendWR/RecvWR: chaining,
keep-alive, refusal of closed MRs and AHs)."""

import errno
import gc
import struct
import subprocess
import sys
import textwrap
import time
import weakref

import pytest

import ibverbs as ib
from ibverbs import AccessFlags, SendFlags, WROpcode

from support import GID_INDEX, PORT
from support.rdma import ALL_ACCESS as ALL
from support.rdma import ok, poll_until
from support.timeouts import scaled

pytestmark = pytest.mark.integration


def poll(cq, n=1, timeout=20.0):
    return ok(poll_until(cq, n, timeout))


class Pair:
    """Two QPs of one type on one device, connected to each other with
    local_qp_info / QPInfo bytes / connect_rc, as two hosts would."""

    def __init__(self, ctx, pd, qp_type=ib.QPType.RC, access=ALL):
        self.cq_a = ctx.create_cq(64)
        self.cq_b = ctx.create_cq(64)

        def mk(cq):
            return pd.create_qp(
                ib.QPInitAttr(
                    send_cq=cq,
                    recv_cq=cq,
                    qp_type=qp_type,
                    max_send_wr=32,
                    max_recv_wr=32,
                    max_send_sge=4,
                    max_recv_sge=4,
                )
            )

        self.a, self.b = mk(self.cq_a), mk(self.cq_b)
        port_attr = ctx.query_port(PORT)
        gid = ctx.query_gid(PORT, GID_INDEX)
        self.info_a = ib.local_qp_info(self.a, port_attr, gid, port=PORT, psn=0x100)
        self.info_b = ib.local_qp_info(self.b, port_attr, gid, port=PORT, psn=0x200)
        wire_a, wire_b = self.info_a.to_bytes(), self.info_b.to_bytes()
        ib.connect_rc(
            self.a,
            ib.QPInfo.from_bytes(wire_b),
            port=PORT,
            sgid_index=GID_INDEX,
            access=access,
            local_psn=0x100,
        )
        ib.connect_rc(
            self.b,
            ib.QPInfo.from_bytes(wire_a),
            port=PORT,
            sgid_index=GID_INDEX,
            access=access,
            local_psn=0x200,
        )

    def close(self):
        for o in (self.a, self.b, self.cq_a, self.cq_b):
            o.close()


@pytest.fixture
def rc(ctx, pd):
    p = Pair(ctx, pd)
    yield p
    p.close()


# ---------------------------------------------------------------------------
# local_qp_info / connect_rc
# ---------------------------------------------------------------------------


def test_local_qp_info_describes_the_qp(ctx, pd):
    cq = ctx.create_cq(4)
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    port_attr = ctx.query_port(PORT)
    gid = ctx.query_gid(PORT, GID_INDEX)
    info = ib.local_qp_info(qp, port_attr, gid, port=PORT, psn=0xABCDE)
    assert info.qp_num == qp.qp_num and info.psn == 0xABCDE
    assert info.lid == port_attr.lid and info.gid == gid and info.port == PORT
    assert info.mtu == port_attr.active_mtu
    assert ib.QPInfo.from_bytes(info.to_bytes()) == info
    qp.close()
    cq.close()


def test_connect_rc_reaches_rts(rc):
    assert rc.a.state == ib.QPState.RTS and rc.b.state == ib.QPState.RTS
    attrs, _ = rc.a.query()
    assert attrs["dest_qp_num"] == rc.b.qp_num
    assert attrs["sq_psn"] == 0x100 and attrs["rq_psn"] == 0x200
    assert attrs["path_mtu"] == min(rc.info_a.mtu, rc.info_b.mtu)


def test_connect_rc_explicit_mtu(ctx, pd):
    cq = ctx.create_cq(4)
    a = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    b = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    gid = ctx.query_gid(PORT, GID_INDEX)
    pa = ctx.query_port(PORT)
    ib.connect_rc(
        a,
        ib.local_qp_info(b, pa, gid, port=PORT),
        port=PORT,
        sgid_index=GID_INDEX,
        access=ALL,
        mtu=ib.MTU.MTU_256,
        min_rnr_timer=3,
        timeout=10,
    )
    attrs, _ = a.query()
    assert attrs["path_mtu"] == ib.MTU.MTU_256
    assert attrs["min_rnr_timer"] == 3 and attrs["timeout"] == 10
    for o in (a, b, cq):
        o.close()


def test_rdma_write_between_registered_numpy_arrays(pd, rc):
    np = pytest.importorskip("numpy")
    src = np.arange(1024, dtype=np.uint32)
    dst = np.zeros(1024, dtype=np.uint32)
    smr = ib.reg_tensor(pd, src, AccessFlags.LOCAL_WRITE)
    dmr = ib.reg_tensor(pd, dst, ALL)
    assert smr.owner is src and dmr.owner is dst
    assert (dmr.addr, dmr.length) == ib.tensor_addr_len(dst)
    rc.a.post_send(
        ib.SendWR(
            1,
            [ib.SGE(smr, src.nbytes)],
            WROpcode.RDMA_WRITE,
            SendFlags.SIGNALED,
            remote_addr=dmr.addr,
            rkey=dmr.rkey,
        )
    )
    assert poll(rc.cq_a)[0].wr_id == 1
    assert (dst == src).all()
    smr.close()
    dmr.close()


def test_connect_rc_works_for_uc(ctx, pd):
    p = Pair(ctx, pd, qp_type=ib.QPType.UC)
    src = bytearray(b"unreliable but connected" * 10)
    dst = bytearray(len(src))
    smr = ib.reg_tensor(pd, src, AccessFlags.LOCAL_WRITE)
    dmr = ib.reg_tensor(pd, dst, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE)
    p.a.post_send(
        ib.SendWR(
            7,
            smr.sge(),
            WROpcode.RDMA_WRITE,
            SendFlags.SIGNALED,
            remote_addr=dmr.addr,
            rkey=dmr.rkey,
        )
    )
    poll(p.cq_a)
    deadline = time.monotonic() + 10
    while dst != src and time.monotonic() < deadline:
        time.sleep(0.01)
    assert dst == src
    smr.close()
    dmr.close()
    p.close()


# ---------------------------------------------------------------------------
# reg_tensor
# ---------------------------------------------------------------------------


def test_reg_tensor_retains_the_array_until_closed(pd):
    np = pytest.importorskip("numpy")
    arr = np.ones(4096, dtype=np.uint8)
    ref = weakref.ref(arr)
    mr = ib.reg_tensor(pd, arr, ALL)
    del arr
    gc.collect()
    assert ref() is not None and mr.owner is ref()
    mr.close()
    gc.collect()
    assert ref() is None


def test_read_only_bytes_are_an_rdma_read_source(pd, rc):
    data = bytes(range(256)) * 4
    src = ib.reg_tensor(pd, data, AccessFlags.REMOTE_READ)
    dst = bytearray(len(data))
    dmr = ib.reg_tensor(pd, dst, AccessFlags.LOCAL_WRITE)
    assert dmr.owner.obj is dst
    with pytest.raises(BufferError):
        dst.extend(b"x")  # pinned: its memory cannot move while registered
    rc.b.post_send(
        ib.SendWR(
            3,
            dmr.sge(),
            WROpcode.RDMA_READ,
            SendFlags.SIGNALED,
            remote_addr=src.addr,
            rkey=src.rkey,
        )
    )
    poll(rc.cq_b)
    assert bytes(dst) == data
    src.close()
    dmr.close()
    dst.extend(b"x")  # released with the MR


def test_reg_tensor_refuses_writable_bytes(pd):
    with pytest.raises(ValueError, match="read-only"):
        ib.reg_tensor(pd, b"abc", AccessFlags.LOCAL_WRITE)
    with pytest.raises(ValueError, match="empty"):
        ib.reg_tensor(pd, bytearray(), AccessFlags.LOCAL_WRITE)


# ---------------------------------------------------------------------------
# SGE / SendWR / RecvWR on a device
# ---------------------------------------------------------------------------


def test_sge_from_mr(pd):
    buf = bytearray(4096)
    mr = ib.reg_tensor(pd, buf, AccessFlags.LOCAL_WRITE)
    s = ib.SGE(mr, 100, offset=10)
    assert (s.addr, s.length, s.lkey, s.mr) == (mr.addr + 10, 100, mr.lkey, mr)
    assert ib.SGE(mr, 4096).length == 4096
    assert ib.SGE(mr, 0, offset=4096).length == 0
    assert ib.SGE(mr, lkey=mr.lkey, length=1).lkey == mr.lkey
    with pytest.raises(ValueError, match="past the end"):
        ib.SGE(mr, 4097)
    with pytest.raises(ValueError, match="past the end"):
        ib.SGE(mr, 100, offset=4000)
    with pytest.raises(ValueError):
        ib.SGE(mr, 8, offset=4097)
    with pytest.raises(ValueError, match="lkey"):
        ib.SGE(mr, 8, lkey=mr.lkey + 1)
    assert mr.sge(16, offset=8) == ib.SGE(mr, 16, offset=8)
    mr.close()
    with pytest.raises(ib.VerbsError) as e:
        ib.SGE(mr, 8)
    assert e.value.errno == errno.EBADF


def test_wr_keeps_the_memory_alive(pd):
    np = pytest.importorskip("numpy")
    arr = np.zeros(64, dtype=np.uint8)
    ref = weakref.ref(arr)
    mr = ib.reg_tensor(pd, arr, AccessFlags.LOCAL_WRITE)
    mref = weakref.ref(mr) if hasattr(mr, "__weakref__") else None
    wr = ib.RecvWR(1, [ib.SGE(mr, 64)])
    del arr, mr
    gc.collect()
    assert ref() is not None
    assert wr.sg_list[0].mr.owner is ref()
    wr.sg_list[0].mr.close()
    del wr
    gc.collect()
    assert ref() is None
    assert mref is None or mref() is None


def test_post_a_chain_of_sends_and_receives(pd, rc):
    buf = bytearray(4 * 64)
    mr = ib.reg_tensor(pd, buf, AccessFlags.LOCAL_WRITE)
    out = bytearray(b"".join(bytes([i]) * 64 for i in range(4)))
    omr = ib.reg_tensor(pd, out, AccessFlags.LOCAL_WRITE)
    recvs = [ib.RecvWR(100 + i, ib.SGE(mr, 64, offset=64 * i)) for i in range(4)]
    rc.b.post_recv(recvs)
    sends = [
        ib.SendWR(i, ib.SGE(omr, 64, offset=64 * i), WROpcode.SEND, SendFlags.SIGNALED)
        for i in range(4)
    ]
    rc.a.post_send(tuple(sends))
    assert [wc.wr_id for wc in poll(rc.cq_a, 4)] == [0, 1, 2, 3]
    assert [wc.wr_id for wc in poll(rc.cq_b, 4)] == [100, 101, 102, 103]
    assert buf == out
    # the same objects post again (nothing stays linked)
    rc.b.post_recv(recvs[0])
    rc.a.post_send(sends[3])
    assert poll(rc.cq_a)[0].wr_id == 3 and poll(rc.cq_b)[0].wr_id == 100
    mr.close()
    omr.close()


def test_post_refuses_bad_lists(pd, rc):
    w = ib.SendWR(1, (), WROpcode.SEND)
    with pytest.raises(ValueError, match="empty"):
        rc.a.post_send([])
    with pytest.raises(TypeError, match="1"):
        rc.a.post_send([w, ib.RecvWR()])
    with pytest.raises(TypeError):
        rc.a.post_send(ib.RecvWR())
    with pytest.raises(TypeError):
        rc.b.post_recv([ib.RecvWR(), w])
    with pytest.raises(ValueError, match="more than once"):
        rc.a.post_send([w, w])
    w2 = ib.SendWR(2)
    with pytest.raises(ValueError, match="more than once"):
        rc.a.post_send([w, w2, w])
    with pytest.raises(ValueError, match="more than once"):
        rc.a.post_send([w, w2, w2])
    r = ib.RecvWR(5)
    with pytest.raises(ValueError, match="more than once"):
        rc.b.post_recv([r, r])
    # nothing was posted, and the WRs still post fine
    assert rc.cq_a.poll(4) == []
    rc.b.post_recv([r, ib.RecvWR(6)])
    rc.a.post_send([w, ib.SendWR(9, (), WROpcode.SEND, SendFlags.SIGNALED)])
    assert [wc.wr_id for wc in poll(rc.cq_b, 2)] == [5, 6]
    assert poll(rc.cq_a)[0].wr_id == 9


def test_post_refuses_a_closed_mr(pd, rc):
    buf = bytearray(64)
    mr = ib.reg_tensor(pd, buf, AccessFlags.LOCAL_WRITE)
    wr = ib.SendWR(1, mr.sge(), WROpcode.SEND, SendFlags.SIGNALED)
    rwr = ib.RecvWR(2, mr.sge())
    mr.close()
    for post, arg in (
        (rc.a.post_send, wr),
        (rc.a.post_send, [ib.SendWR(0), wr]),
        (rc.b.post_recv, rwr),
        (rc.b.post_recv, [rwr]),
    ):
        with pytest.raises(ib.VerbsError) as e:
            post(arg)
        assert e.value.errno == errno.EBADF and "closed MR" in str(e.value)
    assert rc.cq_a.poll(4) == []


def test_send_with_imm(pd, rc):
    buf = bytearray(32)
    mr = ib.reg_tensor(pd, buf, AccessFlags.LOCAL_WRITE)
    rc.b.post_recv(ib.RecvWR(1, mr.sge()))
    w = ib.SendWR(2, (), WROpcode.SEND_WITH_IMM, SendFlags.SIGNALED, imm_data=0x12345678)
    rc.a.post_send(w)
    poll(rc.cq_a)
    wc = poll(rc.cq_b)[0]
    assert wc.imm_data == 0x12345678 and wc.wc_flags & ib.WCFlags.WITH_IMM
    # reuse on the hot path: change imm_data and post again
    rc.b.post_recv(ib.RecvWR(1, mr.sge()))
    w.imm_data = 0xCAFE
    rc.a.post_send(w)
    poll(rc.cq_a)
    assert poll(rc.cq_b)[0].imm_data == 0xCAFE
    mr.close()


def test_rdma_write_with_imm_and_reuse(pd, rc):
    src = bytearray(b"A" * 128)
    dst = bytearray(256)
    smr = ib.reg_tensor(pd, src, AccessFlags.LOCAL_WRITE)
    dmr = ib.reg_tensor(pd, dst, ALL)
    rc.b.post_recv([ib.RecvWR(1), ib.RecvWR(2)])
    w = ib.SendWR(
        5,
        smr.sge(),
        WROpcode.RDMA_WRITE_WITH_IMM,
        SendFlags.SIGNALED,
        imm_data=1,
        remote_addr=dmr.addr,
        rkey=dmr.rkey,
    )
    rc.a.post_send(w)
    w.remote_addr = dmr.addr + 128
    w.imm_data = 2
    rc.a.post_send(w)
    poll(rc.cq_a, 2)
    assert [wc.imm_data for wc in poll(rc.cq_b, 2)] == [1, 2]
    assert dst == src + src
    smr.close()
    dmr.close()


def test_atomics(pd, rc):
    target = bytearray(struct.pack("<Q", 40))
    tmr = ib.reg_tensor(pd, target, ALL)
    result = bytearray(8)
    rmr = ib.reg_tensor(pd, result, AccessFlags.LOCAL_WRITE)
    faa = ib.SendWR(
        1,
        rmr.sge(),
        WROpcode.ATOMIC_FETCH_AND_ADD,
        SendFlags.SIGNALED,
        remote_addr=tmr.addr,
        rkey=tmr.rkey,
        compare_add=2,
    )
    rc.a.post_send(faa)
    poll(rc.cq_a)
    assert struct.unpack("<Q", result)[0] == 40
    assert struct.unpack("<Q", target)[0] == 42
    cas = ib.SendWR(
        2,
        rmr.sge(),
        WROpcode.ATOMIC_CMP_AND_SWP,
        SendFlags.SIGNALED,
        remote_addr=tmr.addr,
        rkey=tmr.rkey,
        compare_add=42,
        swap=7,
    )
    rc.a.post_send(cas)
    poll(rc.cq_a)
    assert struct.unpack("<Q", result)[0] == 42
    assert struct.unpack("<Q", target)[0] == 7
    tmr.close()
    rmr.close()


def test_ud_send_through_an_ah(ctx, pd):
    cq = ctx.create_cq(16)

    def mk():
        return pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.UD))

    a, b = mk(), mk()
    for qp in (a, b):
        qp.to_init(PORT, 0, qkey=0x1234)
        qp.to_rtr(None)
        qp.to_rts(0)
    gid = ctx.query_gid(PORT, GID_INDEX)
    ah = pd.create_ah(ib.AHAttr(dgid=gid, sgid_index=GID_INDEX, port_num=PORT))
    buf = bytearray(40 + 64)  # GRH + payload
    rmr = ib.reg_tensor(pd, buf, AccessFlags.LOCAL_WRITE)
    payload = bytearray(b"datagram" * 8)
    smr = ib.reg_tensor(pd, payload, AccessFlags.LOCAL_WRITE)
    b.post_recv(ib.RecvWR(1, rmr.sge()))
    w = ib.SendWR(
        2,
        smr.sge(),
        WROpcode.SEND,
        SendFlags.SIGNALED,
        ah=ah,
        remote_qpn=b.qp_num,
        remote_qkey=0x1234,
    )
    assert (w.ah, w.remote_qpn, w.remote_qkey) == (ah, b.qp_num, 0x1234)
    a.post_send(w)
    wcs = poll(cq, 2)
    assert sorted(wc.wr_id for wc in wcs) == [1, 2]
    assert buf[40:] == payload
    with pytest.raises(ValueError):
        ib.SendWR(3, (), WROpcode.RDMA_WRITE, ah=ah)
    # a closed AH is refused at post time, not dereferenced
    ah.close()
    with pytest.raises(ib.VerbsError) as e:
        a.post_send(w)
    assert e.value.errno == errno.EBADF and "AH" in str(e.value)
    with pytest.raises(ib.VerbsError):
        ib.SendWR(ah=ah)
    # a new AH on the same WR
    ah2 = pd.create_ah(ib.AHAttr(dgid=gid, sgid_index=GID_INDEX, port_num=PORT))
    w.ah = ah2
    assert (w.remote_qpn, w.remote_qkey) == (b.qp_num, 0x1234)
    b.post_recv(ib.RecvWR(1, rmr.sge()))
    a.post_send(w)
    poll(cq, 2)
    w.ah = None
    assert (w.ah, w.remote_qpn) == (None, 0)
    del w
    for o in (a, b, ah2, rmr, smr, cq):
        o.close()


def test_ud_send_without_an_ah_is_refused_not_a_crash(device_name):
    # Providers dereference wr.ud.ah of every send on a UD QP unchecked
    # (rxe segfaults on NULL), so post_send must refuse a SendWR without an
    # AH, or with an opcode whose union member overlaps ud.ah.  In a
    # subprocess, so a crash fails this test instead of the run.
    code = textwrap.dedent(f"""
        import ibverbs as ib
        ctx = ib.Context({device_name!r})
        pd = ctx.alloc_pd()
        cq = ctx.create_cq(4)
        qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq,
                                        qp_type=ib.QPType.UD))
        qp.to_init({PORT}, 0)
        qp.to_rtr(None)
        qp.to_rts(0)
        for wr in (ib.SendWR(1), [ib.SendWR(1)],
                   ib.SendWR(1, (), ib.WROpcode.RDMA_WRITE, remote_addr=1,
                             rkey=1)):
            try:
                qp.post_send(wr)
            except ValueError as e:
                print("refused:", e)
            else:
                print("posted")
        qp.close()
    """)
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=scaled(120)
    )
    assert res.returncode == 0, f"rc={res.returncode}\n{res.stdout}{res.stderr}"
    assert res.stdout.count("refused:") == 3, res.stdout
