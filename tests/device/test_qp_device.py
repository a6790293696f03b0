"""QP creation, attributes, state transitions, modify and query."""

import errno
import gc
import sys
import types

import numpy as np
import pytest

import ibverbs as ib
from support.rdma import ALL_ACCESS, make_rc_pair, poll_until

pytestmark = pytest.mark.integration

M = ib.QPAttrMask


def new_qp(pd, cq, **kw):
    return pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, **kw))


def test_create_attributes(ctx, pd, cq):
    qp = new_qp(pd, cq, max_send_wr=16, max_recv_wr=8, max_send_sge=2)
    assert 0 < qp.qp_num < 1 << 24
    assert qp.qp_type == ib.QPType.RC and isinstance(qp.qp_type, ib.QPType)
    assert qp.state == ib.QPState.RESET and isinstance(qp.state, ib.QPState)
    assert qp.pd is pd and qp.context is ctx
    assert qp.send_cq is cq and qp.recv_cq is cq and qp.srq is None
    cap = qp.cap
    assert isinstance(cap, ib.QPCap)
    assert cap.max_send_wr >= 16 and cap.max_recv_wr >= 8
    assert cap.max_send_sge >= 2 and cap.max_recv_sge >= 1
    assert not qp.closed and not qp.sq_sig_all
    assert "RC" in repr(qp) and str(qp.qp_num) in repr(qp)
    qp.close()
    qp.close()  # idempotent
    assert qp.closed and "closed" in repr(qp)
    assert qp.send_cq is None  # released with the QP
    for use in (
        lambda: qp.qp_num,
        lambda: qp.state,
        qp.query,
        lambda: qp.post_send(ib.SendWR()),
        lambda: qp.post_recv(ib.RecvWR()),
        lambda: qp.to_init(1, 0),
        lambda: qp.modify(M.STATE, qp_state=ib.QPState.INIT),
    ):
        with pytest.raises(ib.VerbsError) as ei:
            use()
        assert ei.value.errno == errno.EBADF


def test_separate_cqs_and_context_manager(ctx, pd):
    scq, rcq = ctx.create_cq(8), ctx.create_cq(8)
    with pd.create_qp(ib.QPInitAttr(send_cq=scq, recv_cq=rcq, sq_sig_all=True)) as qp:
        assert qp.send_cq is scq and qp.recv_cq is rcq and qp.sq_sig_all
    assert qp.closed
    scq.close()
    rcq.close()


def test_duck_typed_init_attr(pd, cq):
    # Any object with the attributes works; missing ones take defaults.
    qp = pd.create_qp(types.SimpleNamespace(send_cq=cq))
    assert qp.qp_type == ib.QPType.RC and qp.recv_cq is cq
    qp.close()


def test_create_qp_argument_checks(ctx, pd, cq, device_name):
    with pytest.raises(TypeError, match="CQ"):
        pd.create_qp(ib.QPInitAttr(send_cq=pd))
    with pytest.raises(TypeError):
        pd.create_qp(ib.QPInitAttr(send_cq=cq, max_send_wr="many"))
    with pytest.raises(ValueError):
        pd.create_qp(ib.QPInitAttr(send_cq=cq, max_send_wr=-1))
    other = ib.Context(device_name)
    ocq = other.create_cq(4)
    with pytest.raises(ValueError, match="Context"):
        pd.create_qp(ib.QPInitAttr(send_cq=ocq))
    with pytest.raises(ValueError, match="Context"):
        pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=ocq))
    ocq.close()
    other.close()
    dead = ctx.create_cq(4)
    dead.close()
    with pytest.raises(ib.VerbsError) as ei:
        pd.create_qp(ib.QPInitAttr(send_cq=dead))
    assert ei.value.errno == errno.EBADF
    # A verb failure says what was asked for.
    with pytest.raises(ib.VerbsError) as ei:
        pd.create_qp(ib.QPInitAttr(send_cq=cq, max_send_wr=1 << 30))
    assert ei.value.operation == "ibv_create_qp"
    assert "max_send_wr=1073741824" in str(ei.value)


def test_parents_refuse_to_close_under_a_qp(ctx, pd, cq):
    qp = new_qp(pd, cq)
    with pytest.raises(ib.VerbsError) as ei:
        pd.close()
    assert ei.value.errno == errno.EBUSY and "QP" in str(ei.value)
    with pytest.raises(ib.VerbsError) as ei:
        cq.close()
    assert ei.value.errno == errno.EBUSY
    assert not cq.closed and cq.poll() == []  # still usable
    assert qp.state == ib.QPState.RESET
    qp.close()
    cq.close()
    assert cq.closed


def test_manual_transitions_and_query(ctx, pd, port, gid_index):
    """RESET -> INIT -> RTR -> RTS by hand (no helpers), then query()
    reports what was set, and data flows."""
    cq = ctx.create_cq(16)
    qa, qb = new_qp(pd, cq), new_qp(pd, cq)
    pa = ctx.query_port(port)
    gid = ctx.query_gid(port, gid_index)
    for q in (qa, qb):
        q.to_init(port, ALL_ACCESS)
        assert q.state == ib.QPState.INIT
    ia = ib.local_qp_info(qa, pa, gid, port=port, psn=0x111)
    ibb = ib.local_qp_info(qb, pa, gid, port=port, psn=0x222)
    qa.to_rtr(ibb, sgid_index=gid_index, min_rnr_timer=5, max_dest_rd_atomic=2)
    qb.to_rtr(ia, sgid_index=gid_index)
    assert qa.state == ib.QPState.RTR
    qa.to_rts(ia.psn, timeout=10, retry_cnt=5, rnr_retry=3)
    qb.to_rts(ibb.psn)
    assert qa.state == ib.QPState.RTS

    attrs, cap = qa.query()
    assert attrs["qp_state"] == ib.QPState.RTS
    assert isinstance(attrs["qp_state"], ib.QPState)
    assert attrs["dest_qp_num"] == qb.qp_num
    assert attrs["rq_psn"] == 0x222 and attrs["sq_psn"] == 0x111
    assert attrs["timeout"] == 10 and attrs["retry_cnt"] == 5
    assert attrs["rnr_retry"] == 3 and attrs["min_rnr_timer"] == 5
    assert attrs["max_dest_rd_atomic"] >= 1
    assert attrs["path_mtu"] == min(pa.active_mtu, ibb.mtu)
    assert attrs["port_num"] == port
    assert attrs["qp_access_flags"] == ALL_ACCESS
    ah = attrs["ah_attr"]
    assert isinstance(ah, ib.AHAttr)
    assert ah.is_global and ah.dgid == gid  # RoCE: GRH required
    assert ah.sgid_index == gid_index and ah.port_num == port
    assert ah.hop_limit == 64
    assert "cap" not in attrs and isinstance(cap, ib.QPCap)
    # The device's view; some providers (rxe) grant more than
    # ibv_create_qp wrote back.
    assert cap.max_send_wr >= qa.cap.max_send_wr

    buf = np.zeros(16, np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS)
    buf[:8] = 9
    qb.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr.sge(8, 8)]))
    qa.post_send(ib.SendWR(wr_id=2, sg_list=[mr.sge(8)], send_flags=ib.SendFlags.SIGNALED))
    for wc in poll_until(cq, 2):
        wc.raise_for_status()
    assert (buf[8:] == 9).all()


def test_query_after_connect(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd)
    for me, peer in ((qa, qb), (qb, qa)):
        attrs, cap = me.query()
        assert attrs["qp_state"] == ib.QPState.RTS
        assert attrs["dest_qp_num"] == peer.qp_num
        assert me.state == ib.QPState.RTS
    # A mask limits the answer to the fields it covers.
    attrs, _ = qa.query(M.STATE | M.DEST_QPN)
    assert set(attrs) == {"qp_state", "sq_draining", "dest_qp_num"}
    attrs, _ = qa.query(mask=M.SQ_PSN)
    assert set(attrs) == {"sq_psn"} and attrs["sq_psn"] == 0x1234


def test_generic_modify(pd, cq, port):
    qp = new_qp(pd, cq)
    qp.modify(
        M.STATE | M.PKEY_INDEX | M.PORT | M.ACCESS_FLAGS,
        qp_state=ib.QPState.INIT,
        pkey_index=0,
        port_num=port,
        qp_access_flags=ib.AccessFlags.REMOTE_WRITE,
    )
    assert qp.state == ib.QPState.INIT
    attrs, _ = qp.query()
    assert attrs["qp_access_flags"] == ib.AccessFlags.REMOTE_WRITE
    # mask by keyword; an INIT -> INIT modify changes the access flags
    qp.modify(mask=M.ACCESS_FLAGS, qp_access_flags=ALL_ACCESS)
    assert qp.query(M.ACCESS_FLAGS)[0]["qp_access_flags"] == ALL_ACCESS
    qp.modify(M.STATE, qp_state=ib.QPState.ERR)
    assert qp.state == ib.QPState.ERR
    qp.modify(M.STATE, qp_state=ib.QPState.RESET)
    assert qp.state == ib.QPState.RESET
    # and back up again through the helpers
    qp.to_init(port, ALL_ACCESS)
    assert qp.state == ib.QPState.INIT


def test_modify_argument_errors(pd, cq):
    qp = new_qp(pd, cq)
    with pytest.raises(TypeError, match="unknown QP attribute 'bogus'"):
        qp.modify(M.STATE, qp_state=ib.QPState.INIT, bogus=1)
    with pytest.raises(ValueError, match="timeout"):
        qp.modify(M.TIMEOUT, timeout=32)
    with pytest.raises(ValueError, match="path_mtu"):
        qp.modify(M.PATH_MTU, path_mtu=0)
    with pytest.raises(ValueError, match="dest_qp_num"):
        qp.modify(M.DEST_QPN, dest_qp_num=1 << 24)
    with pytest.raises(TypeError):
        qp.modify(M.STATE, qp_state="RTS")
    with pytest.raises(TypeError):
        qp.modify(qp_state=ib.QPState.INIT)  # no mask
    with pytest.raises(TypeError):
        qp.modify(M.STATE, M.PORT)  # attributes by keyword
    with pytest.raises(ValueError):
        qp.modify(M.AV, ah_attr=ib.AHAttr(sl=99))
    with pytest.raises(ValueError):
        qp.to_rts(1 << 24)  # PSNs are 24 bits
    with pytest.raises(ValueError):
        qp.to_init(0, 0)  # ports start at 1
    assert qp.state == ib.QPState.RESET  # nothing was sent


def test_bad_transition_names_it(pd, cq):
    qp = new_qp(pd, cq)
    with pytest.raises(ib.VerbsError) as ei:
        qp.to_rts(0)  # RESET -> RTS: illegal
    assert ei.value.operation == "ibv_modify_qp"
    assert "RESET -> RTS" in str(ei.value) and "to_rts" in str(ei.value)
    assert qp.state == ib.QPState.RESET  # and the QP still works
    with pytest.raises(ib.VerbsError) as ei:
        qp.modify(M.STATE, qp_state=ib.QPState.RTR)
    assert "RESET -> RTR" in str(ei.value)


def test_to_rtr_needs_sgid_index(ctx, pd, cq, port, gid_index):
    qp = new_qp(pd, cq)
    qp.to_init(port, ALL_ACCESS)
    info = ib.local_qp_info(qp, ctx.query_port(port), ctx.query_gid(port, gid_index), port=port)
    with pytest.raises(TypeError, match="sgid_index"):
        qp.to_rtr(info)
    with pytest.raises(ValueError, match="mtu"):
        qp.to_rtr(info, sgid_index=gid_index, mtu=9)
    assert qp.state == ib.QPState.INIT
    qp.to_rtr(info, sgid_index=gid_index, mtu=ib.MTU.MTU_256)  # to itself
    assert qp.query(M.PATH_MTU)[0]["path_mtu"] == ib.MTU.MTU_256


def test_ud_qp_type(pd, cq, port):
    qp = new_qp(pd, cq, qp_type=ib.QPType.UD)
    assert qp.qp_type == ib.QPType.UD
    qp.to_init(port, 0, qkey=0x1234)
    qp.to_rtr(None)
    qp.to_rts()
    attrs, _ = qp.query()
    assert attrs["qkey"] == 0x1234 and attrs["qp_state"] == ib.QPState.RTS


def test_no_reference_leaks(ctx, pd, cq, port, gid_index):
    """Create/query/close and the failure paths leave every refcount as it
    was (a QP holds its PD and CQs only while it exists)."""
    srq = pd.create_srq(max_wr=4)

    def counts():
        gc.collect()
        return [sys.getrefcount(o) for o in (ctx, pd, cq, srq)]

    def cycle():
        qp = new_qp(pd, cq, srq=srq)
        qp.to_init(port, ALL_ACCESS)
        qp.query()
        assert qp.state == ib.QPState.INIT and qp.send_cq is cq
        with pytest.raises(TypeError):
            qp.modify(0, nope=1)
        with pytest.raises(ib.VerbsError):
            qp.to_rts(0)
        qp.close()
        with pytest.raises(ib.VerbsError):
            pd.create_qp(ib.QPInitAttr(send_cq=cq, max_send_wr=1 << 30))
        ah = pd.create_ah(
            ib.AHAttr(dgid=ctx.query_gid(port, gid_index), sgid_index=gid_index, port_num=port)
        )
        ah.close()

    cycle()
    before = counts()
    for _ in range(20):
        cycle()
    assert counts() == before
    srq.close()
