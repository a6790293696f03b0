"""SendWR and RecvWR paths no other host test takes: deleting attributes,
the repr of each union member, opcode changes that keep or refuse
imm_data, sg_list arguments of every kind; and, on the recording double,
windows, MRs and AHs closed under a WR (at build, at post, on a UD QP),
and the holds a failed list of binds moves."""

from __future__ import annotations

import pytest

from ibverbs import SGE, RecvWR, SendWR
from ibverbs.enums import WROpcode as W


@pytest.mark.parametrize(
    "name", ["wr_id", "opcode", "send_flags", "remote_addr", "rkey", "compare_add", "remote_qkey"]
)
def test_attributes_cannot_be_deleted(name):
    w = SendWR(opcode=W.RDMA_WRITE, remote_addr=0x10, rkey=3)
    with pytest.raises(AttributeError, match=f"cannot delete {name}"):
        delattr(w, name)
    assert (w.opcode, w.remote_addr, w.rkey) == (W.RDMA_WRITE, 0x10, 3)
    r = RecvWR(wr_id=4)
    with pytest.raises(AttributeError, match="cannot delete wr_id"):
        del r.wr_id
    assert r.wr_id == 4


def test_deleting_imm_data_or_the_ah_sets_none():
    w = SendWR(opcode=W.SEND)
    del w.imm_data
    assert w.imm_data is None
    del w.ah
    assert w.ah is None
    w = SendWR(opcode=W.SEND_WITH_IMM, imm_data=5)
    with pytest.raises(ValueError, match=r"\*_WITH_IMM opcodes need imm_data"):
        del w.imm_data
    assert w.imm_data == 5


def test_the_repr_names_the_union_member_in_use():
    sge = SGE(0x1000, 8, lkey=1)
    atomic = SendWR(wr_id=2, sg_list=[sge], opcode=W.ATOMIC_FETCH_AND_ADD, remote_addr=0x40, rkey=9)
    assert repr(atomic) == (
        "SendWR(wr_id=2, opcode=<WROpcode.ATOMIC_FETCH_AND_ADD: 6>, num_sge=1, "
        "send_flags=0, remote_addr=0x40, rkey=0x9)"
    )
    assert repr(SendWR(wr_id=3, opcode=W.SEND)) == (
        "SendWR(wr_id=3, opcode=<WROpcode.SEND: 2>, num_sge=0, send_flags=0)"
    )


def test_an_opcode_change_keeps_imm_data_where_it_goes():
    w = SendWR(opcode=W.SEND_WITH_IMM, imm_data=0x1234)
    w.opcode = W.RDMA_WRITE_WITH_IMM
    assert w.imm_data == 0x1234 and w.opcode == W.RDMA_WRITE_WITH_IMM
    # SEND_WITH_INV carries the rkey in imm_data's place: imm_data goes.
    w = SendWR(opcode=W.SEND_WITH_IMM, imm_data=7)
    w.opcode = W.SEND_WITH_INV
    assert w.imm_data is None
    with pytest.raises(ValueError, match="carry the rkey to invalidate instead of imm_data"):
        w.imm_data = 1
    w = SendWR(opcode=W.SEND)
    with pytest.raises(ValueError, match=r"\*_WITH_IMM opcodes need imm_data"):
        w.opcode = W.SEND_WITH_IMM
    assert w.opcode == W.SEND


def test_a_field_of_another_opcode_is_named():
    with pytest.raises(ValueError, match=r"swap is not used by opcode <WROpcode.SEND: 2>"):
        SendWR(opcode=W.SEND, swap=1)
    with pytest.raises(ValueError, match="remote_qkey is only used by UD sends: give an ah too"):
        SendWR(opcode=W.SEND, remote_qkey=1)


@pytest.mark.parametrize(
    "sg_list, exc, words",
    [
        ("abc", TypeError, "sg_list must be an SGE or an iterable of SGEs, not <class 'str'>"),
        (5, TypeError, "sg_list must be an SGE or an iterable of SGEs, not <class 'int'>"),
        (
            (s for s in [SGE(0x1000, 8, lkey=1), 7]),
            TypeError,
            "sg_list[1] must be an SGE, not <class 'int'>",
        ),
    ],
)
def test_bad_sg_lists(sg_list, exc, words):
    for make in (SendWR, RecvWR):
        with pytest.raises(exc) as info:
            make(sg_list=sg_list)
        assert str(info.value) == words
        if not isinstance(sg_list, (str, int)):
            break  # a generator is spent after one try


def test_sg_lists_of_any_length():
    sges = [SGE(0x1000 + 8 * k, 8, lkey=k) for k in range(9)]
    for make in (SendWR, RecvWR):
        assert make(sg_list=None).sg_list == () and make(sg_list=None).num_sge == 0
        assert make(sg_list=sges[0]).sg_list == (sges[0],)
        w = make(sg_list=iter(sges))
        assert w.sg_list == tuple(sges) and w.num_sge == 9


def _closed_body(fake):
    import errno

    from support.outcomes import raised, rts

    import ibverbs as ib
    from ibverbs import SGE, SendWR, enums

    A, W = enums.AccessFlags, enums.WROpcode
    ctx = ib.Context("fake0")
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(64)

    qp = rts(pd.create_qp(ib.QPInitAttr(cq)))
    ud = rts(pd.create_qp(ib.QPInitAttr(cq, qp_type=enums.QPType.UD)))

    def reg(k):
        return pd.reg_mr(0x100000 * (k + 1), 4096, A.LOCAL_WRITE | A.REMOTE_WRITE | A.MW_BIND)

    def bind(mw, mr, wr_id=1):
        info = ib.MWBindInfo(mr, mr.addr, 64, A.REMOTE_WRITE)
        return SendWR(wr_id, opcode=W.BIND_MW, mw=mw, rkey=ib.inc_rkey(mw.rkey), bind_info=info)

    out = {}
    mw1, mw2 = pd.alloc_mw(enums.MWType.TYPE_2), pd.alloc_mw(enums.MWType.TYPE_2)
    mr1, mr2 = reg(1), reg(2)
    w1 = bind(mw1, mr1)
    out["mw"] = w1.mw is mw1 and w1.bind_info.mr is mr1
    out["half"] = raised(lambda: SendWR(opcode=W.BIND_MW, mw=mw1))
    out["no window"] = raised(lambda: SendWR(opcode=W.BIND_MW, rkey=1))
    out["with sges"] = raised(
        lambda: SendWR(
            opcode=W.BIND_MW,
            sg_list=[SGE(mr1, 8)],
            mw=mw1,
            rkey=1,
            bind_info=ib.MWBindInfo(mr1, mr1.addr, 64, A.REMOTE_WRITE),
        )
    )
    # A list of two binds whose second the provider rejects: the first
    # moved its window's hold, the second did not.
    wide = SendWR(3, opcode=W.SEND, sg_list=[SGE(mr1, 8)] * 2)  # over max_send_sge
    out["second rejected"] = raised(lambda: qp.post_send([w1, wide]))
    cq.poll(8)
    # Closed under the WR: the window, then the bound MR.
    mw3 = pd.alloc_mw(enums.MWType.TYPE_2)
    w3 = bind(mw3, reg(3))
    mw3.close()
    out["mw closed"] = raised(lambda: qp.post_send(w3))
    out["mw closed at build"] = raised(lambda: bind(mw3, mr1))
    mr4 = reg(4)
    w4 = bind(pd.alloc_mw(enums.MWType.TYPE_2), mr4)
    mr4.close()  # a WR holds no handle: the MR closes
    out["bound mr closed"] = raised(lambda: qp.post_send(w4))
    # An AH closed under its WR; a UD list whose second WR is no SEND.
    ah = pd.create_ah(ib.AHAttr(dlid=1, port_num=1))
    uw = SendWR(1, opcode=W.SEND, ah=ah, remote_qpn=0x22, remote_qkey=3)
    out["ah getter"] = uw.ah is ah
    out["ud repr"] = repr(uw)
    out["ud not send"] = raised(lambda: ud.post_send([uw, SendWR(2, opcode=W.RDMA_WRITE)]))
    out["ud no ah"] = raised(lambda: ud.post_send([uw, SendWR(2, opcode=W.SEND)]))
    out["ah of rdma"] = raised(lambda: setattr(SendWR(opcode=W.RDMA_WRITE), "ah", ah))
    out["ah not an ah"] = raised(lambda: setattr(uw, "ah", 5))
    ah.close()
    out["ah closed"] = raised(lambda: ud.post_send(uw))
    out["ah closed, set"] = raised(lambda: setattr(SendWR(opcode=W.SEND), "ah", ah))
    fake.fail("post_send", errno.EINVAL)
    out["bind rejected"] = raised(lambda: qp.post_send([bind(mw2, mr2, wr_id=2)]))
    out["bind to send"] = raised(lambda: setattr(w1, "opcode", W.SEND))
    return out


EBADF = "[Errno 9] Bad file descriptor: "
HINT = " (too many SGEs, an unsupported opcode or flag, or a QP state that does not allow posting?)"
CLOSED = {
    "mw": True,
    "ah getter": True,
    "ud repr": "SendWR(wr_id=1, opcode=<WROpcode.SEND: 2>, num_sge=0, send_flags=0, "
    "remote_qpn=0x22)",
    "half": ["ValueError", "a BIND_MW needs both mw= and bind_info="],
    "no window": ["ValueError", "BIND_MW needs mw=, bind_info= and rkey= (the new rkey)"],
    "with sges": ["ValueError", "BIND_MW carries no sg_list"],
    "bind to send": ["ValueError", "mw and bind_info only go with opcode BIND_MW"],
    "second rejected": [
        "VerbsError",
        "[Errno 22] ibv_post_send: Invalid argument: send WR at index 1 (wr_id=3) was "
        "rejected by QP 259 (RTS)" + HINT,
    ],
    "bind rejected": [
        "VerbsError",
        "[Errno 22] ibv_post_send: Invalid argument: send WR at index 0 (wr_id=2) was "
        "rejected by QP 259 (RTS)" + HINT,
    ],
    "mw closed": ["VerbsError", EBADF + "work request 0: its MW is closed"],
    "mw closed at build": ["VerbsError", EBADF + "MW is closed"],
    "bound mr closed": ["VerbsError", EBADF + "work request 0: its bind_info's MR is closed"],
    "ud not send": ["ValueError", "work request 1: a UD QP only posts SEND and SEND_WITH_IMM"],
    "ud no ah": [
        "ValueError",
        "work request 1: a send on a UD QP needs an AH "
        "(SendWR(ah=..., remote_qpn=..., remote_qkey=...))",
    ],
    "ah of rdma": [
        "ValueError",
        "an AH (UD) only goes with SEND or SEND_WITH_IMM, not <WROpcode.RDMA_WRITE: 0>",
    ],
    "ah not an ah": ["TypeError", "ah must be an AH or None, not <class 'int'>"],
    "ah closed": ["VerbsError", EBADF + "work request 0: its AH is closed"],
    "ah closed, set": ["VerbsError", EBADF + "AH is closed"],
}


def test_closed_windows_mrs_and_ahs_under_a_wr(recording):
    assert recording.run(_closed_body).ok() == CLOSED
