"""UC (connected, unreliable) and UD (datagrams through an AH) transfers,
checking the bytes that arrived."""

import errno
import time

import numpy as np
import pytest

import ibverbs as ib
from support.rdma import make_rc_pair, mkbuf, ok, poll_until, ud_qp, send_wr

pytestmark = pytest.mark.integration

GRH = 40  # a UD receive buffer starts with room for the GRH
UD_QKEY = 0x11111111  # QP.to_init's default Q_Key for UD QPs


# ---- UC ---------------------------------------------------------------


@pytest.fixture
def uc_pair(ctx, pd):
    return make_rc_pair(ctx, pd, qp_type=ib.QPType.UC)


def test_uc_query(uc_pair):
    qa, ca, qb, cb = uc_pair
    attrs, _ = qa.query()
    assert qa.qp_type == ib.QPType.UC
    assert attrs["qp_state"] == ib.QPState.RTS
    assert attrs["dest_qp_num"] == qb.qp_num


def test_uc_rdma_write(pd, uc_pair):
    qa, ca, qb, cb = uc_pair
    src, mr_a = mkbuf(pd, 3000)
    dst, mr_b = mkbuf(pd, 3000)
    src[:] = np.random.default_rng(3).integers(0, 256, 3000, dtype=np.uint8)
    qa.post_send(send_wr([mr_a.sge()], wr_id=1, opcode=ib.WROpcode.RDMA_WRITE, dest=mr_b))
    ok(poll_until(ca), ib.WCOpcode.RDMA_WRITE)
    # UC completes at the sender when the data left; wait for it to land.
    deadline = time.monotonic() + 10
    while bytes(dst) != bytes(src) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert bytes(dst) == bytes(src)


def test_uc_send_recv(pd, uc_pair):
    qa, ca, qb, cb = uc_pair
    src, mr_a = mkbuf(pd, 100)
    src[:] = np.arange(100, dtype=np.uint8)
    dst, mr_b = mkbuf(pd, 128)
    qb.post_recv(ib.RecvWR(wr_id=4, sg_list=[mr_b.sge()]))
    qa.post_send(send_wr([mr_a.sge()], wr_id=5, opcode=ib.WROpcode.SEND_WITH_IMM, imm_data=77))
    ok(poll_until(ca), ib.WCOpcode.SEND)
    (wb,) = ok(poll_until(cb), ib.WCOpcode.RECV)
    assert wb.wr_id == 4 and wb.byte_len == 100 and wb.imm_data == 77
    assert bytes(dst[:100]) == bytes(src)


# ---- UD ---------------------------------------------------------------


@pytest.fixture
def ud(ctx, pd, port, gid_index):
    qa, ca = ud_qp(ctx, pd, port, psn=0x10, cq=ctx.create_cq(64))
    qb, cb = ud_qp(ctx, pd, port, psn=0x20, cq=ctx.create_cq(64))
    gid = ctx.query_gid(port, gid_index)
    ah = pd.create_ah(ib.AHAttr(dgid=gid, sgid_index=gid_index, port_num=port))
    return qa, ca, qb, cb, ah


def test_ud_to_init_default_qkey(ud):
    qa, ca, qb, cb, ah = ud
    attrs, _ = qa.query()
    assert attrs["qkey"] == UD_QKEY
    assert attrs["qp_state"] == ib.QPState.RTS


def test_ud_send_recv_through_ah(pd, ud):
    qa, ca, qb, cb, ah = ud
    n = 200
    src, mr_a = mkbuf(pd, n)
    src[:] = np.random.default_rng(5).integers(0, 256, n, dtype=np.uint8)
    dst, mr_b = mkbuf(pd, GRH + n, fill=0xEE)
    qb.post_recv(ib.RecvWR(wr_id=8, sg_list=[mr_b.sge()]))
    qa.post_send(send_wr([mr_a.sge()], wr_id=9, ah=ah, remote_qpn=qb.qp_num, remote_qkey=UD_QKEY))
    (wa,) = ok(poll_until(ca), ib.WCOpcode.SEND)
    assert wa.wr_id == 9
    (wb,) = ok(poll_until(cb), ib.WCOpcode.RECV)
    assert wb.wr_id == 8
    assert wb.byte_len == GRH + n  # the GRH counts in byte_len
    assert wb.wc_flags & ib.WCFlags.GRH
    assert wb.src_qp == qa.qp_num
    assert bytes(dst[GRH:]) == bytes(src)  # the payload follows the GRH


def test_ud_send_with_imm_and_list(pd, ud):
    qa, ca, qb, cb, ah = ud
    src, mr_a = mkbuf(pd, 3 * 16)
    for i in range(3):
        src[16 * i : 16 * (i + 1)] = 0xA0 + i
    dst, mr_b = mkbuf(pd, 3 * (GRH + 16))
    qb.post_recv(
        [ib.RecvWR(wr_id=i, sg_list=[mr_b.sge(GRH + 16, i * (GRH + 16))]) for i in range(3)]
    )
    qa.post_send(
        [
            send_wr(
                [mr_a.sge(16, 16 * i)],
                wr_id=10 + i,
                opcode=ib.WROpcode.SEND_WITH_IMM,
                imm_data=1000 + i,
                ah=ah,
                remote_qpn=qb.qp_num,
                remote_qkey=UD_QKEY,
            )
            for i in range(3)
        ]
    )
    ok(poll_until(ca, 3))
    got = sorted(ok(poll_until(cb, 3)), key=lambda w: w.wr_id)
    for i, wc in enumerate(got):
        assert wc.imm_data == 1000 + i and wc.wc_flags & ib.WCFlags.WITH_IMM
        off = i * (GRH + 16) + GRH
        assert (dst[off : off + 16] == 0xA0 + i).all()


def test_ud_wrong_qkey_is_dropped(pd, ud):
    qa, ca, qb, cb, ah = ud
    src, mr_a = mkbuf(pd, 16, fill=1)
    dst, mr_b = mkbuf(pd, GRH + 16)
    qb.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr_b.sge()]))
    qa.post_send(send_wr([mr_a.sge()], ah=ah, remote_qpn=qb.qp_num, remote_qkey=0x1234))
    ok(poll_until(ca))  # UD: the sender does not know
    time.sleep(0.5)
    assert cb.poll(4) == []
    assert not dst.any()


def test_ud_ah_attributes(ctx, pd, ud, port, gid_index):
    qa, ca, qb, cb, ah = ud
    assert ah.pd is pd and not ah.closed
    gid = ctx.query_gid(port, gid_index)
    ah2 = pd.create_ah(ib.AHAttr(dgid=gid.raw, sgid_index=gid_index, port_num=port))
    ah2.close()
    ah2.close()  # idempotent
    assert ah2.closed
    with pytest.raises(ValueError):
        pd.create_ah(ib.AHAttr(sl=16))
    with pytest.raises(ValueError):
        pd.create_ah(ib.AHAttr(flow_label=1 << 20))


def test_ud_send_chain_follows_a_new_ah(ctx, pd, ud, port, gid_index):
    """A SendWRChain through an AH: replacing a member's AH makes the next
    post check every member again, so an AH closed after it was set is
    refused (EBADF) instead of reaching the provider."""
    qa, ca, qb, cb, ah = ud
    src, mr_a = mkbuf(pd, 32, fill=0x3C)
    dst, mr_b = mkbuf(pd, 2 * (GRH + 16))
    chain = ib.SendWRChain(
        [
            send_wr(
                [mr_a.sge(16, 16 * i)], wr_id=i, ah=ah, remote_qpn=qb.qp_num, remote_qkey=UD_QKEY
            )
            for i in range(2)
        ]
    )
    rwrs = [ib.RecvWR(wr_id=i, sg_list=[mr_b.sge(GRH + 16, i * (GRH + 16))]) for i in range(2)]
    qb.post_recv(rwrs)
    qa.post_send(chain)
    ok(poll_until(ca, 2))
    ok(poll_until(cb, 2))
    ah2 = pd.create_ah(
        ib.AHAttr(dgid=ctx.query_gid(port, gid_index), sgid_index=gid_index, port_num=port)
    )
    chain[0].ah = ah2
    dst[:] = 0
    qb.post_recv(rwrs)
    qa.post_send(chain)
    ok(poll_until(ca, 2))
    ok(poll_until(cb, 2))
    assert (dst[GRH : GRH + 16] == 0x3C).all()
    ah2.close()
    with pytest.raises(ib.VerbsError, match="work request 0: its AH is closed") as ei:
        qa.post_send(chain)
    assert ei.value.errno == errno.EBADF
    # An AH set and closed between two posts: the set asks for the full
    # check, which finds it closed (the MRs and AHs seen before are open).
    chain[0].ah = ah
    qa.post_send(chain)  # no receive posted: UD drops them
    ok(poll_until(ca, 2))
    ah3 = pd.create_ah(
        ib.AHAttr(dgid=ctx.query_gid(port, gid_index), sgid_index=gid_index, port_num=port)
    )
    chain[1].ah = ah3
    ah3.close()
    with pytest.raises(ib.VerbsError, match="work request 1: its AH is closed"):
        qa.post_send(chain)
    assert ca.poll(4) == []
