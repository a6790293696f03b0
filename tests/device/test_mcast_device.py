"""UD multicast on rxe0: QP.attach_mcast / detach_mcast.

Two UD QPs in a group each receive one send to the group; a QP that left
gets nothing more; what rxe answers to a second attach and to leaving a
group the QP is not in; close() leaves the groups a QP is still in.

The group is an IPv4 group in its RoCE v2 form (``::ffff:239.x.y.z``).
rxe's packets are UDP datagrams, and the kernel's IP layer drops a
multicast datagram for a group the interface did not join before rxe
sees it, so the test also joins the group at the IP level
(support.rdma.join_ip_group) on the interface of the GID that
Context.find_gid picks.
"""

import errno

import numpy as np
import pytest

import ibverbs as ib
from support.rdma import (
    GRH_LEN,
    MCAST_QPN,
    UD_QKEY,
    join_ip_group,
    mcast_gid,
    mkbuf,
    ok,
    poll_until,
    ud_qp,
    wait_one,
)

pytestmark = pytest.mark.integration

GROUP = "239.1.2.3"
N = 64  # payload bytes
SLOT = GRH_LEN + N


@pytest.fixture
def group(ctx, port):
    """(the rig's GID entry, the group's GID), the host joined to it."""
    entry = ctx.find_gid(port)
    with join_ip_group(GROUP, entry.ip):
        yield entry, mcast_gid(GROUP)


@pytest.fixture
def trio(ctx, pd, port):
    """A sender and two receivers, each UD with its own CQ."""
    return [ud_qp(ctx, pd, port) for _ in range(3)]


def send_to_group(pd, qp, cq, ah, payload):
    src, mr = mkbuf(pd, N)
    src[:] = payload
    qp.post_send(
        ib.SendWR(
            wr_id=1,
            sg_list=[mr.sge()],
            send_flags=ib.SendFlags.SIGNALED,
            ah=ah,
            remote_qpn=MCAST_QPN,
            remote_qkey=UD_QKEY,
        )
    )
    ok(poll_until(cq), ib.WCOpcode.SEND)


def test_members_receive_until_they_leave(ctx, pd, port, group, trio):
    entry, gid = group
    (snd, scq), (r1, c1), (r2, c2) = trio
    bufs = {}
    for qp in (r1, r2):
        buf, mr = mkbuf(pd, 3 * SLOT, fill=0xEE)
        qp.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr.sge(SLOT, i * SLOT)]) for i in range(3)])
        bufs[qp.qp_num] = buf, mr  # the MR must outlive the posted WRs
        qp.attach_mcast(gid)
    ah = pd.create_ah(ib.AHAttr(dgid=gid, sgid_index=entry.index, port_num=port, is_global=True))
    rng = np.random.default_rng(7)

    # Both members get the one send, from the sender, with its GRH.
    first = rng.integers(0, 256, N, dtype=np.uint8)
    send_to_group(pd, snd, scq, ah, first)
    for qp, cq in ((r1, c1), (r2, c2)):
        (wc,) = ok(poll_until(cq), ib.WCOpcode.RECV)
        assert wc.wr_id == 0 and wc.byte_len == SLOT and wc.qp_num == qp.qp_num
        assert wc.src_qp == snd.qp_num and wc.wc_flags & ib.WCFlags.GRH
        buf = bufs[qp.qp_num][0]
        assert bytes(buf[GRH_LEN:SLOT]) == first.tobytes()
        # RoCE v2 over IPv4: the GRH's last 20 bytes are the IPv4 header,
        # from the sender's address to the group's.
        assert bytes(buf[GRH_LEN - 4 : GRH_LEN]) == gid.raw[12:]
        assert bytes(buf[GRH_LEN - 8 : GRH_LEN - 4]) == entry.ip.packed
        # A reply needs a unicast address: libibverbs refuses to make
        # one from a GRH that names a group.
        with pytest.raises(ib.VerbsError) as ei:
            ctx.init_ah_from_wc(port, wc, buf)
        assert ei.value.errno == errno.EINVAL
        assert ei.value.operation == "ibv_init_ah_from_wc"

    # r2 leaves: r1 still gets the next send, r2 nothing.
    r2.detach_mcast(gid)
    second = rng.integers(0, 256, N, dtype=np.uint8)
    send_to_group(pd, snd, scq, ah, second)
    (wc,) = ok(poll_until(c1), ib.WCOpcode.RECV)
    assert (
        wc.wr_id == 1 and bytes(bufs[r1.qp_num][0][SLOT + GRH_LEN : 2 * SLOT]) == second.tobytes()
    )
    assert wait_one(c2, 1.0) is None

    # r1 leaves too: the group has no member on this node any more.
    r1.detach_mcast(gid=gid, lid=0)
    send_to_group(pd, snd, scq, ah, rng.integers(0, 256, N, dtype=np.uint8))
    assert wait_one(c1, 1.0) is None and wait_one(c2, 0.2) is None
    assert (bufs[r2.qp_num][0][SLOT:] == 0xEE).all()


def test_gid_forms_and_rxe_answers(group, trio):
    _, gid = group
    (_, _), (r1, _), _ = trio
    # A Gid, its 16 bytes or its text name the same group.
    r1.attach_mcast(gid.raw)
    # rxe: a second attach of a member succeeds and changes nothing ...
    r1.attach_mcast(str(gid))
    # ... one detach leaves, and leaving again is EINVAL.
    r1.detach_mcast(gid)
    with pytest.raises(ib.VerbsError) as ei:
        r1.detach_mcast(gid)
    assert ei.value.errno == errno.EINVAL
    assert ei.value.operation == "ibv_detach_mcast"
    assert f"QP {r1.qp_num}" in str(ei.value)


def test_kernel_refusals(ctx, pd, port, group, trio, pair):
    entry, gid = group
    (_, _), (r1, _), _ = trio
    # A unicast GID is no group.
    with pytest.raises(ib.VerbsError) as ei:
        r1.attach_mcast(entry.gid)
    assert ei.value.errno == errno.EINVAL
    assert ei.value.operation == "ibv_attach_mcast"
    # Only UD QPs join groups.
    qa = pair[0]
    with pytest.raises(ib.VerbsError) as ei:
        qa.attach_mcast(gid)
    assert ei.value.errno == errno.EINVAL


def test_argument_errors(group, trio):
    _, gid = group
    (_, _), (r1, _), _ = trio
    with pytest.raises(TypeError):
        r1.attach_mcast(None)
    with pytest.raises(TypeError):
        r1.attach_mcast(1234)
    with pytest.raises(ValueError):
        r1.attach_mcast(b"\xff" * 15)
    with pytest.raises(ValueError):
        r1.attach_mcast("not a gid")
    with pytest.raises(ValueError):
        r1.attach_mcast(gid, lid=0x10000)
    with pytest.raises(TypeError):
        r1.detach_mcast(gid, lid="0")


def test_close_leaves_the_groups(ctx, pd, port, group):
    _, gid = group
    qp, cq = ud_qp(ctx, pd, port)
    qp.attach_mcast(gid)
    qp.attach_mcast(mcast_gid("239.1.2.4"))
    # The kernel refuses to destroy a QP in a group (EBUSY): close()
    # detaches it first, so it succeeds.
    qp.close()
    assert qp.closed
    with pytest.raises(ib.VerbsError) as ei:
        qp.attach_mcast(gid)
    assert ei.value.errno == errno.EBADF
    cq.close()


def test_a_member_that_is_garbage_collected(ctx, pd, port, group):
    import gc

    _, gid = group
    qp, cq = ud_qp(ctx, pd, port)
    qp.attach_mcast(gid)
    del qp
    gc.collect()
    cq.close()  # the QP's destroy succeeded: its CQ is free again


def test_query_data_in_order(trio, pair):
    (snd, _), _, _ = trio
    qa = pair[0]
    # rxe has no provider op: libibverbs answers 0 (not in order), for
    # every opcode, with or without RETURN_CAPS.
    caps = ib.QueryQPDataInOrderFlags.RETURN_CAPS
    for qp in (snd, qa):
        for op in (ib.WROpcode.RDMA_WRITE, ib.WROpcode.SEND, ib.WROpcode.RDMA_READ):
            assert qp.query_data_in_order(op) == 0
            assert qp.query_data_in_order(op, flags=caps) == 0
    with pytest.raises(ValueError):
        snd.query_data_in_order(-1)
    with pytest.raises(TypeError):
        snd.query_data_in_order(ib.WROpcode.SEND, flags=None)
