"""WC (work completion) on the host: built by hand, no device needed, and
what poll makes of the recording double's completions (tests/fakes/recording/)."""

import errno
import sys

import pytest

import ibverbs as ib
from ibverbs import WC, CompletionError, WCFlags, WCOpcode, WCStatus, enums

FIELDS = {
    "wr_id": 2**64 - 1,
    "status": int(WCStatus.REM_ACCESS_ERR),
    "opcode": int(WCOpcode.RDMA_WRITE),
    "vendor_err": 0x8A,
    "byte_len": 2**32 - 1,
    "qp_num": 0xFFFFFF,
    "src_qp": 17,
    "wc_flags": int(WCFlags.WITH_IMM),
    "pkey_index": 0xFFFF,
    "slid": 0x1234,
    "sl": 15,
    "dlid_path_bits": 0x7F,
}


def test_defaults_are_zero():
    wc = WC()
    for name in list(FIELDS) + ["imm_data", "invalidated_rkey"]:
        assert getattr(wc, name) == 0, name
    assert wc.raise_for_status() is None


def test_every_field_reads_back():
    wc = WC(**FIELDS)
    for name, value in FIELDS.items():
        got = getattr(wc, name)
        assert type(got) is int and got == value, name


def test_imm_data_is_host_order_and_shares_invalidated_rkey():
    # ibv_wc keeps imm_data big-endian in a union with invalidated_rkey
    # (host order): the two read the same bytes differently.
    wc = WC(imm_data=0x11223344)
    assert wc.imm_data == 0x11223344
    inv = WC(invalidated_rkey=0x11223344)
    assert inv.invalidated_rkey == 0x11223344
    in_memory = (0x11223344).to_bytes(4, sys.byteorder)
    assert inv.imm_data == int.from_bytes(in_memory, "big")


def test_fields_are_read_only():
    wc = WC(wr_id=1)
    for name in ("wr_id", "status", "imm_data", "byte_len"):
        with pytest.raises(AttributeError):
            setattr(wc, name, 3)
    assert wc.wr_id == 1


def test_raise_for_status_failure_carries_the_wc():
    wc = WC(
        wr_id=42,
        status=int(WCStatus.REM_ACCESS_ERR),
        vendor_err=0x8A,
        opcode=int(WCOpcode.RDMA_WRITE),
        qp_num=77,
    )
    with pytest.raises(CompletionError) as ei:
        wc.raise_for_status()
    err = ei.value
    assert err.wc is wc
    assert err.status == WCStatus.REM_ACCESS_ERR
    msg = str(err)
    assert "REM_ACCESS_ERR" in msg and "0x8a" in msg and "wr_id=42" in msg


def test_raise_for_status_unknown_status():
    with pytest.raises(CompletionError, match="status 999"):
        WC(status=999).raise_for_status()


def test_repr_names_the_status():
    r = repr(WC(wr_id=3, status=int(WCStatus.WR_FLUSH_ERR), byte_len=8))
    assert r.startswith("<ibverbs.WC wr_id=3 status=5 (")
    assert ib._ibverbs.wc_status_str(5) in r
    assert "byte_len=8" in r


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"wr_id": -1}, ValueError),
        ({"wr_id": 2**64}, ValueError),
        ({"sl": 256}, ValueError),
        ({"pkey_index": 2**16}, ValueError),
        ({"status": 2**31}, ValueError),
        ({"imm_data": 2**32}, ValueError),
        ({"byte_len": 1.0}, TypeError),
        ({"nope": 1}, TypeError),
    ],
)
def test_bad_fields(kwargs, exc):
    with pytest.raises(exc):
        WC(**kwargs)


def test_positional_arguments_refused():
    with pytest.raises(TypeError, match="keyword"):
        WC(1)


def test_intenum_values_accepted():
    wc = WC(status=WCStatus.SUCCESS, opcode=WCOpcode.RECV)
    assert wc.opcode == WCOpcode.RECV


@pytest.mark.parametrize("cls", [ib.MR, ib.CQ, ib.CompChannel, ib.AsyncEvent])
def test_handle_types_not_instantiable(cls):
    with pytest.raises(TypeError, match="factory"):
        cls()


def test_post_recv_ud_send_and_what_poll_returns(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(32) as cq:
            attr = ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.UD, max_recv_sge=2)
            qp = pd.create_qp(attr)
            qp.to_init(1, qkey=0x1234)
            qp.post_recv(
                [
                    ibverbs.RecvWR(10, [ibverbs.SGE(0x5000, 40, 0x99), ibverbs.SGE(0x6000, 60, 9)]),
                    ibverbs.RecvWR(11, [ibverbs.SGE(0x7000, 1000, 0x99)]),
                ]
            )
            wcs = cq.poll(4)
            out["wc"] = [
                [w.wr_id, int(w.status), int(w.opcode), w.byte_len, w.qp_num, w.src_qp] for w in wcs
            ]
            out["qp_num"] = qp.qp_num
            qp.to_rtr(None)
            qp.to_rts()
            ah_attr = ibverbs.AHAttr(
                dgid=bytes.fromhex("fe800000000000000000000000000001"),
                sgid_index=1,
                port_num=1,
                is_global=True,
                hop_limit=3,
            )
            with pd.create_ah(ah_attr) as ah:
                wr = ibverbs.SendWR(
                    12,
                    [ibverbs.SGE(0x8000, 20, 0x99)],
                    enums.WROpcode.SEND,
                    enums.SendFlags.SIGNALED,
                    ah=ah,
                    remote_qpn=0xABCDE,
                    remote_qkey=0x1234,
                )
                qp.post_send(wr)
            fake.fail("completion", int(enums.WCStatus.REM_ACCESS_ERR))
            qp.post_recv(ibverbs.RecvWR(13, [ibverbs.SGE(0x5000, 8, 0x99)]))
            wcs = cq.poll(4)
            out["sent"] = [[w.wr_id, int(w.status)] for w in wcs]
            try:
                wcs[-1].raise_for_status()
            except ibverbs.CompletionError as e:
                out["error"] = [e.errno, int(e.status), e.wc.wr_id]
            qp.close()
        return out

    res = recording.run(body)
    v = res.ok()
    recv = int(enums.WCOpcode.RECV)
    qpn = v["qp_num"]
    assert v["wc"] == [[10, 0, recv, 100, qpn, qpn], [11, 0, recv, 1000, qpn, qpn]]
    post_recv = res.calls("post_recv")[0]
    assert post_recv["count"] == 2 and post_recv["qp_num"] == qpn
    assert post_recv.prefixed("wr[0].") == {
        "wr_id": 10,
        "num_sge": 2,
        "sg_list[0].addr": 0x5000,
        "sg_list[0].length": 40,
        "sg_list[0].lkey": 0x99,
        "sg_list[1].addr": 0x6000,
        "sg_list[1].length": 60,
        "sg_list[1].lkey": 9,
    }
    ah = res.one("create_ah")
    assert ah["attr.is_global"] == 1 and ah["attr.port_num"] == 1
    assert ah["attr.grh.dgid"] == bytes.fromhex("fe800000000000000000000000000001")
    assert (ah["attr.grh.sgid_index"], ah["attr.grh.hop_limit"]) == (1, 3)
    send = res.one("post_send")
    assert send["wr[0].wr.ud.ah"] == res.one("destroy_ah")["ah"]
    assert (send["wr[0].wr.ud.remote_qpn"], send["wr[0].wr.ud.remote_qkey"]) == (0xABCDE, 0x1234)
    bad = int(enums.WCStatus.REM_ACCESS_ERR)
    assert v["sent"] == [[12, 0], [13, bad]]
    assert v["error"] == [errno.EIO, bad, 13]
    assert res.live == 0, res.live_report
