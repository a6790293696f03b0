"""SGE, SendWR and RecvWR on the host: construction, validation, attribute
round trips and reference keeping (no device: raw-address SGEs only), and
a post_send chain with every opcode's fields, as the recording double
(tests/fakes/recording/) sees it."""

import gc
import sys

import pytest

import ibverbs as ib
from ibverbs import SGE, RecvWR, SendFlags, SendWR, WROpcode, enums


def sge(addr=0x1000, length=64, lkey=7):
    return SGE(addr, length, lkey=lkey)


# ---------------------------------------------------------------------------
# SGE
# ---------------------------------------------------------------------------


def test_sge_raw_address():
    s = SGE(0x1000, 64, lkey=0x1234, offset=16)
    assert (s.addr, s.length, s.lkey, s.mr) == (0x1010, 64, 0x1234, None)
    assert repr(s) == "SGE(addr=0x1010, length=64, lkey=0x1234)"


def test_sge_limits():
    assert SGE(2**64 - 1, 2**32 - 1, lkey=2**32 - 1).length == 2**32 - 1
    assert SGE(0, 0, lkey=0).length == 0
    with pytest.raises(ValueError):
        SGE(0, 2**32, lkey=1)
    with pytest.raises(ValueError):
        SGE(0, -1, lkey=1)
    with pytest.raises(ValueError):
        SGE(0, 1, lkey=1, offset=-1)
    with pytest.raises(ValueError):
        SGE(0, 1, lkey=2**32)
    with pytest.raises(ValueError):
        SGE(-1, 1, lkey=1)
    with pytest.raises(ValueError):
        SGE(2**64 - 1, 1, lkey=1, offset=1)


def test_sge_needs_lkey_and_length_for_raw_address():
    with pytest.raises(TypeError, match="lkey"):
        SGE(0x1000, 8)
    with pytest.raises(TypeError, match="length"):
        SGE(0x1000, lkey=1)


def test_sge_type_errors():
    with pytest.raises(TypeError):
        SGE("0x1000", 8, lkey=1)
    with pytest.raises(TypeError):
        SGE(1.5, 8, lkey=1)
    with pytest.raises(TypeError):
        SGE(0, 8.0, lkey=1)
    assert SGE(0, 8, 1).lkey == 1  # lkey positional, as in the published package


def test_sge_is_immutable():
    s = sge()
    with pytest.raises(AttributeError):
        s.addr = 5
    with pytest.raises(AttributeError):
        s.lkey = 5


def test_sge_equality_and_hash():
    assert sge() == sge()
    assert sge() != sge(length=65)
    assert hash(sge()) == hash(sge())
    assert sge() != (0x1000, 64, 7)
    assert len({sge(), sge(), sge(lkey=8)}) == 2


def test_sge_accepts_intenum_like_ints():
    s = SGE(True + 0x10, 8, lkey=SendFlags.SIGNALED)
    assert s.lkey == 2 and s.addr == 0x11


# ---------------------------------------------------------------------------
# SendWR
# ---------------------------------------------------------------------------


def test_sendwr_defaults():
    w = SendWR()
    assert w.wr_id == 0 and w.opcode == WROpcode.SEND
    assert isinstance(w.opcode, WROpcode)
    assert w.send_flags == 0 and w.imm_data is None
    assert w.sg_list == () and w.num_sge == 0
    assert (w.remote_addr, w.rkey, w.compare_add, w.swap) == (0, 0, 0, 0)
    assert (w.ah, w.remote_qpn, w.remote_qkey) == (None, 0, 0)


def test_sendwr_rdma_write():
    s = sge()
    w = SendWR(
        wr_id=2**64 - 1,
        sg_list=[s],
        opcode=WROpcode.RDMA_WRITE,
        send_flags=SendFlags.SIGNALED | SendFlags.FENCE,
        remote_addr=0xDEAD0000,
        rkey=0x42,
    )
    assert w.wr_id == 2**64 - 1
    assert w.sg_list == (s,) and w.sg_list[0] is s
    assert w.opcode is WROpcode.RDMA_WRITE
    assert w.send_flags == SendFlags.SIGNALED | SendFlags.FENCE
    assert (w.remote_addr, w.rkey) == (0xDEAD0000, 0x42)
    assert "RDMA_WRITE" in repr(w) and "0xdead0000" in repr(w)


def test_sendwr_single_sge_and_tuple():
    s = sge()
    assert SendWR(sg_list=s).sg_list == (s,)
    assert SendWR(sg_list=(s, s)).sg_list == (s, s)
    assert SendWR(sg_list=iter([s])).sg_list == (s,)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 16, 300])
def test_sendwr_many_sges(n):
    sges = [sge(addr=i * 4096, length=i) for i in range(n)]
    w = SendWR(sg_list=sges)
    r = RecvWR(sg_list=sges)
    assert w.num_sge == n and r.num_sge == n
    assert list(w.sg_list) == sges and list(r.sg_list) == sges


def test_sendwr_sg_list_errors():
    with pytest.raises(TypeError, match=r"sg_list\[1\]"):
        SendWR(sg_list=[sge(), 5])
    with pytest.raises(TypeError):
        SendWR(sg_list=5)
    with pytest.raises(TypeError):
        SendWR(sg_list=b"abc")
    with pytest.raises(AttributeError):
        SendWR().sg_list = (sge(),)


def test_sendwr_imm_data():
    w = SendWR(opcode=WROpcode.SEND_WITH_IMM, imm_data=0x01020304)
    assert w.imm_data == 0x01020304
    w = SendWR(opcode=WROpcode.RDMA_WRITE_WITH_IMM, imm_data=2**32 - 1, remote_addr=8, rkey=1)
    assert w.imm_data == 2**32 - 1
    with pytest.raises(ValueError, match="imm_data"):
        SendWR(opcode=WROpcode.SEND_WITH_IMM)
    with pytest.raises(ValueError, match="imm_data"):
        SendWR(opcode=WROpcode.RDMA_WRITE_WITH_IMM, remote_addr=8, rkey=1)
    with pytest.raises(ValueError, match="imm_data"):
        SendWR(opcode=WROpcode.SEND, imm_data=1)
    with pytest.raises(ValueError):
        SendWR(opcode=WROpcode.SEND_WITH_IMM, imm_data=2**32)
    with pytest.raises(ValueError):
        SendWR(opcode=WROpcode.SEND_WITH_IMM, imm_data=-1)
    with pytest.raises(TypeError):
        SendWR(opcode=WROpcode.SEND_WITH_IMM, imm_data="1")


def test_sendwr_opcode_validation():
    assert SendWR(opcode=int(WROpcode.RDMA_READ)).opcode is WROpcode.RDMA_READ
    for bad in (-1, 99, 2**40):
        with pytest.raises(ValueError):
            SendWR(opcode=bad)
    with pytest.raises(TypeError):
        SendWR(opcode="SEND")
    with pytest.raises(ValueError, match="not supported"):
        SendWR(opcode=WROpcode.TSO)
    # BIND_MW needs its window (tests/host/test_mw.py)
    with pytest.raises(ValueError, match="BIND_MW needs mw="):
        SendWR(opcode=WROpcode.BIND_MW)


def test_sendwr_fields_unused_by_opcode_are_refused():
    with pytest.raises(ValueError, match="remote_addr"):
        SendWR(remote_addr=1)
    with pytest.raises(ValueError, match="rkey"):
        SendWR(rkey=1)
    with pytest.raises(ValueError, match="compare_add"):
        SendWR(opcode=WROpcode.RDMA_WRITE, compare_add=1)
    with pytest.raises(ValueError, match="swap"):
        SendWR(opcode=WROpcode.RDMA_READ, swap=1)
    with pytest.raises(ValueError, match="remote_qpn"):
        SendWR(remote_qpn=1)
    with pytest.raises(ValueError, match="remote_qkey"):
        SendWR(remote_qkey=1)
    # zeros are fine
    SendWR(remote_addr=0, rkey=0, compare_add=0, swap=0, remote_qpn=0, remote_qkey=0)


def test_sendwr_atomics():
    s8 = SGE(0x2000, 8, lkey=3)
    w = SendWR(
        opcode=WROpcode.ATOMIC_CMP_AND_SWP,
        sg_list=[s8],
        remote_addr=0x3000,
        rkey=9,
        compare_add=2**64 - 1,
        swap=5,
    )
    assert (w.remote_addr, w.rkey, w.compare_add, w.swap) == (0x3000, 9, 2**64 - 1, 5)
    w = SendWR(
        opcode=WROpcode.ATOMIC_FETCH_AND_ADD, sg_list=s8, remote_addr=0x3000, rkey=9, compare_add=1
    )
    assert (w.compare_add, w.swap) == (1, 0)
    for bad_sg in ([], [SGE(0, 4, lkey=1)], [s8, s8]):
        with pytest.raises(ValueError, match="8-byte"):
            SendWR(opcode=WROpcode.ATOMIC_FETCH_AND_ADD, sg_list=bad_sg, remote_addr=8, rkey=1)


def test_sendwr_invalidate_rkey():
    w = SendWR(opcode=WROpcode.SEND_WITH_INV, rkey=0x77)
    assert w.rkey == 0x77 and w.imm_data is None
    with pytest.raises(ValueError):
        w.imm_data = 1
    w = SendWR(opcode=WROpcode.LOCAL_INV, rkey=0x78)
    assert w.rkey == 0x78


def test_sendwr_ah_type_checked():
    with pytest.raises(TypeError, match="AH"):
        SendWR(ah=object())


def test_sendwr_ranges():
    with pytest.raises(ValueError):
        SendWR(wr_id=-1)
    with pytest.raises(ValueError):
        SendWR(wr_id=2**64)
    with pytest.raises(ValueError):
        SendWR(send_flags=2**32)
    with pytest.raises(ValueError):
        SendWR(opcode=WROpcode.RDMA_WRITE, rkey=2**32)
    with pytest.raises(ValueError):
        SendWR(opcode=WROpcode.RDMA_WRITE, remote_addr=2**64)


def test_sendwr_setters_round_trip():
    w = SendWR(opcode=WROpcode.RDMA_WRITE, sg_list=[sge()], remote_addr=1, rkey=2)
    w.wr_id = 99
    w.send_flags = SendFlags.SIGNALED
    w.remote_addr = 2**64 - 1
    w.rkey = 2**32 - 1
    assert (w.wr_id, w.send_flags, w.remote_addr, w.rkey) == (
        99,
        SendFlags.SIGNALED,
        2**64 - 1,
        2**32 - 1,
    )
    with pytest.raises(ValueError):
        w.wr_id = -1
    with pytest.raises(TypeError):
        w.send_flags = "x"
    with pytest.raises(ValueError):
        w.rkey = 2**32
    with pytest.raises(AttributeError):
        del w.wr_id
    assert w.wr_id == 99 and w.rkey == 2**32 - 1


def test_sendwr_opcode_setter_keeps_shared_fields():
    w = SendWR(opcode=WROpcode.RDMA_WRITE, remote_addr=0x10, rkey=0x20)
    w.opcode = WROpcode.RDMA_READ
    assert (w.remote_addr, w.rkey) == (0x10, 0x20)
    # rdma -> send: the remote fields are dropped (read as 0)
    w.opcode = WROpcode.SEND
    assert (w.remote_addr, w.rkey) == (0, 0)
    with pytest.raises(ValueError, match="remote_addr"):
        w.remote_addr = 5
    w.remote_addr = 0  # setting an unused field to 0 is harmless
    w.opcode = WROpcode.RDMA_WRITE
    w.remote_addr, w.rkey = 0x30, 0x40
    # rdma -> atomic carries remote_addr and rkey
    w2 = SendWR(opcode=WROpcode.RDMA_WRITE, sg_list=SGE(0, 8, lkey=1), remote_addr=0x30, rkey=0x40)
    w2.opcode = WROpcode.ATOMIC_CMP_AND_SWP
    w2.compare_add, w2.swap = 3, 4
    assert (w2.remote_addr, w2.rkey, w2.compare_add, w2.swap) == (0x30, 0x40, 3, 4)
    w2.opcode = WROpcode.RDMA_READ
    assert (w2.remote_addr, w2.rkey, w2.compare_add, w2.swap) == (0x30, 0x40, 0, 0)


def test_sendwr_opcode_setter_validates():
    w = SendWR(opcode=WROpcode.RDMA_WRITE, remote_addr=1, rkey=2)
    with pytest.raises(ValueError, match="imm_data"):
        w.opcode = WROpcode.RDMA_WRITE_WITH_IMM
    assert w.opcode is WROpcode.RDMA_WRITE
    with pytest.raises(ValueError, match="8-byte"):
        w.opcode = WROpcode.ATOMIC_FETCH_AND_ADD
    with pytest.raises(ValueError):
        w.opcode = 99
    assert w.opcode is WROpcode.RDMA_WRITE and (w.remote_addr, w.rkey) == (1, 2)
    w.imm_data = 0xABCD
    w.opcode = WROpcode.RDMA_WRITE_WITH_IMM
    assert w.imm_data == 0xABCD and (w.remote_addr, w.rkey) == (1, 2)
    with pytest.raises(ValueError):
        w.imm_data = None
    w.opcode = WROpcode.SEND_WITH_IMM
    assert w.imm_data == 0xABCD
    w.opcode = WROpcode.SEND_WITH_INV
    assert w.imm_data is None


def test_sendwr_imm_setter():
    w = SendWR(opcode=WROpcode.SEND_WITH_IMM, imm_data=1)
    w.imm_data = 0xFFFFFFFF
    assert w.imm_data == 0xFFFFFFFF
    with pytest.raises(ValueError):
        w.imm_data = 2**32
    assert w.imm_data == 0xFFFFFFFF


def test_sendwr_ud_fields_need_an_ah():
    w = SendWR()
    with pytest.raises(ValueError, match="ah"):
        w.remote_qpn = 5
    with pytest.raises(ValueError, match="ah"):
        w.remote_qkey = 5
    w.ah = None
    assert w.ah is None


def test_sendwr_positional_args():
    s = sge()
    # The published order: ..., send_flags, remote_addr, rkey, imm_data
    w = SendWR(5, [s], WROpcode.RDMA_WRITE, SendFlags.SIGNALED, 0x100, 3, None)
    assert (w.wr_id, w.sg_list, w.opcode, w.send_flags, w.remote_addr, w.rkey) == (
        5,
        (s,),
        WROpcode.RDMA_WRITE,
        SendFlags.SIGNALED,
        0x100,
        3,
    )


def test_sendwr_unknown_keyword():
    with pytest.raises(TypeError):
        SendWR(wrid=1)


# ---------------------------------------------------------------------------
# RecvWR
# ---------------------------------------------------------------------------


def test_recvwr():
    s = sge()
    r = RecvWR(7, [s, s])
    assert (r.wr_id, r.sg_list, r.num_sge) == (7, (s, s), 2)
    r.wr_id = 2**64 - 1
    assert r.wr_id == 2**64 - 1
    assert RecvWR().sg_list == () and RecvWR().wr_id == 0
    assert RecvWR(sg_list=s).sg_list == (s,)
    assert "RecvWR" in repr(r)
    with pytest.raises(ValueError):
        r.wr_id = -1
    with pytest.raises(TypeError):
        RecvWR(sg_list=[1])
    with pytest.raises(TypeError):
        RecvWR(opcode=WROpcode.SEND)


# ---------------------------------------------------------------------------
# References and GC
# ---------------------------------------------------------------------------


def test_wr_holds_its_sges():
    s = sge()
    before = sys.getrefcount(s)
    w = SendWR(sg_list=[s, s, s])
    r = RecvWR(sg_list=[s])
    assert sys.getrefcount(s) == before + 4
    del w, r
    assert sys.getrefcount(s) == before


def test_imm_is_released():
    # not a cached small int, nor a constant (immortal in a free-threaded build)
    imm = int(str(2**31 + 12345))
    before = sys.getrefcount(imm)
    w = SendWR(opcode=WROpcode.SEND_WITH_IMM, imm_data=imm)
    assert sys.getrefcount(imm) == before + 1
    w.opcode = WROpcode.SEND
    del w
    assert sys.getrefcount(imm) == before


def test_types_are_gc_tracked():
    for obj in (sge(), SendWR(), RecvWR()):
        assert gc.is_tracked(obj)


def test_no_leak_in_construction_loop():
    s = [sge(addr=i) for i in range(5)]
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(2000):
        SendWR(1, s, WROpcode.RDMA_WRITE, 0, 1, 2, None)
        RecvWR(1, s)
        try:
            SendWR(1, s, WROpcode.SEND, 0, 5)
        except ValueError:
            pass
    gc.collect()
    assert len(gc.get_objects()) - before < 50


def test_cannot_subclass():
    with pytest.raises(TypeError):
        type("X", (SendWR,), {})


def test_exports():
    assert ib.SGE is SGE and ib.SendWR is SendWR and ib.RecvWR is RecvWR


def test_post_send_chain_passes_every_work_request_field(recording):
    def body(fake):
        import ctypes

        import ibverbs
        from ibverbs import enums

        Op, S = enums.WROpcode, enums.SendFlags
        buf = ctypes.create_string_buffer(b"inline!!" + bytes(4088))
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(32) as cq:
            mr = pd.reg_mr(ctypes.addressof(buf), 4096, enums.AccessFlags.LOCAL_WRITE)
            attr = ibverbs.QPInitAttr(cq, max_send_sge=2, max_inline_data=64)
            qp = pd.create_qp(attr)
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.RTR)
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.RTS)
            sig = S.SIGNALED
            chain = [
                ibverbs.SendWR(
                    1, [mr.sge(100), mr.sge(200, 512)], Op.RDMA_WRITE, sig, 0xAB000, 0x77
                ),
                ibverbs.SendWR(
                    2, [mr.sge(8)], Op.RDMA_WRITE_WITH_IMM, sig | S.FENCE, 0xAC000, 0x78, 0xDEADBEEF
                ),
                ibverbs.SendWR(3, [mr.sge(16)], Op.SEND_WITH_IMM, sig | S.SOLICITED, imm_data=5),
                ibverbs.SendWR(4, [mr.sge(64)], Op.RDMA_READ, sig, remote_addr=0xAD000, rkey=0x79),
                ibverbs.SendWR(
                    5, [mr.sge(8)], Op.ATOMIC_CMP_AND_SWP, sig, 0xAE000, 0x7A, compare_add=3, swap=9
                ),
                ibverbs.SendWR(
                    6, [mr.sge(8)], Op.ATOMIC_FETCH_AND_ADD, sig, 0xAF000, 0x7B, compare_add=11
                ),
                ibverbs.SendWR(7, [mr.sge(8)], Op.SEND, sig | S.INLINE),
                ibverbs.SendWR(8, [mr.sge(4)], Op.SEND, 0),  # unsignaled
            ]
            qp.post_send(chain)
            wcs = [[w.wr_id, int(w.opcode), w.byte_len, int(w.status)] for w in cq.poll(16)]
            out = [mr.lkey, ctypes.addressof(buf), wcs]
            qp.close()
            mr.close()
        return out

    res = recording.run(body)
    lkey, base, wcs = res.ok()
    rec = res.one("post_send")
    Op, S = enums.WROpcode, enums.SendFlags
    assert rec["count"] == 8 and rec["qp_num"] == res.one("destroy_qp")["qp_num"]
    w = [rec.prefixed(f"wr[{i}].") for i in range(8)]

    def sge(i, j):
        return {k: w[i][f"sg_list[{j}].{k}"] for k in ("addr", "length", "lkey")}

    assert [x["wr_id"] for x in w] == list(range(1, 9))
    assert [x["opcode"] for x in w] == [
        int(o)
        for o in (
            Op.RDMA_WRITE,
            Op.RDMA_WRITE_WITH_IMM,
            Op.SEND_WITH_IMM,
            Op.RDMA_READ,
            Op.ATOMIC_CMP_AND_SWP,
            Op.ATOMIC_FETCH_AND_ADD,
            Op.SEND,
            Op.SEND,
        )
    ]
    sig = int(S.SIGNALED)
    assert [x["send_flags"] for x in w] == [
        sig,
        sig | int(S.FENCE),
        sig | int(S.SOLICITED),
        sig,
        sig,
        sig,
        sig | int(S.INLINE),
        0,
    ]
    assert w[0]["num_sge"] == 2
    assert sge(0, 0) == {"addr": base, "length": 100, "lkey": lkey}
    assert sge(0, 1) == {"addr": base + 512, "length": 200, "lkey": lkey}
    assert (w[0]["wr.rdma.remote_addr"], w[0]["wr.rdma.rkey"]) == (0xAB000, 0x77)
    assert (w[1]["wr.rdma.remote_addr"], w[1]["wr.rdma.rkey"]) == (0xAC000, 0x78)
    assert w[1]["imm_data"] == 0xDEADBEEF  # host order in, network order on the wire
    assert w[2]["imm_data"] == 5
    assert (w[3]["wr.rdma.remote_addr"], w[3]["wr.rdma.rkey"]) == (0xAD000, 0x79)
    assert {k: v for k, v in w[4].items() if k.startswith("wr.atomic.")} == {
        "wr.atomic.remote_addr": 0xAE000,
        "wr.atomic.compare_add": 3,
        "wr.atomic.swap": 9,
        "wr.atomic.rkey": 0x7A,
    }
    assert (w[5]["wr.atomic.compare_add"], w[5]["wr.atomic.rkey"]) == (11, 0x7B)
    assert w[6]["sg_list[0].data"] == b"inline!!"
    W = enums.WCOpcode
    assert wcs == [
        [1, int(W.RDMA_WRITE), 300, 0],
        [2, int(W.RDMA_WRITE), 8, 0],
        [3, int(W.SEND), 16, 0],
        [4, int(W.RDMA_READ), 64, 0],
        [5, int(W.COMP_SWAP), 8, 0],
        [6, int(W.FETCH_ADD), 8, 0],
        [7, int(W.SEND), 8, 0],
    ]
    assert res.live == 0, res.live_report
