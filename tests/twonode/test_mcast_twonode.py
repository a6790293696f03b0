"""UD multicast and UD replies between nodes (``tools/rxe-vm --nodes 3``).

Node 0 sends to an IPv4 multicast group; nodes 1 and 2 join it
(``QP.attach_mcast``) and each receive every send, from node 0's address
to the group's; after node 2 leaves (``detach_mcast``) node 1 still
receives and node 2 gets nothing more.  Then node 0 is a UD echo server
that answers each of the others through ``PD.create_ah_from_wc``: the
clients know its QPN and GID, it learns nothing of them but the requests.

Soft-RoCE's packets are UDP datagrams: a receiving node's IP layer must be
a member of the group on its interface (support.rdma.join_ip_group), or it
drops the datagrams before rxe sees them.
"""

import socket

import numpy as np
import pytest

import ibverbs as ib
from support.peers import PORT, mkbuf, poll_until
from support.rdma import (
    GRH_LEN,
    MCAST_QPN,
    UD_QKEY,
    join_ip_group,
    mcast_gid,
    ok,
    ud_qp,
    wait_one,
)

pytestmark = [pytest.mark.twonode, pytest.mark.nodes3, pytest.mark.multicast]

GROUP = "239.7.7.7"
N = 256
SLOT = GRH_LEN + N


def payload(seq):
    return np.random.default_rng(seq).integers(0, 256, N, dtype=np.uint8)


def send_one(qp, cq, mr, ah, qpn, wr_id=1):
    qp.post_send(
        ib.SendWR(
            wr_id=wr_id,
            sg_list=[mr.sge(N)],
            send_flags=ib.SendFlags.SIGNALED,
            ah=ah,
            remote_qpn=qpn,
            remote_qkey=UD_QKEY,
        )
    )
    ok(poll_until(cq, timeout=20), ib.WCOpcode.SEND)


def test_group_members_on_two_nodes_until_one_leaves(mesh_node, chans, me, ctx, pd):
    entry = ctx.find_gid(PORT)
    assert str(entry.ip) == mesh_node.addr
    gid = mcast_gid(GROUP)
    qp, cq = ud_qp(ctx, pd, PORT)
    if me == 0:
        src, mr = mkbuf(pd, N)
        ah = pd.create_ah(ib.AHAttr(dgid=gid, sgid_index=entry.index, port_num=PORT))
        members = {p: chans[p].recv("joined", timeout=60) for p in (1, 2)}
        assert set(members) == {1, 2}
        src[:] = payload(1)
        send_one(qp, cq, mr, ah, MCAST_QPN)
        for p in (1, 2):
            chans[p].send("sent", qp.qp_num)
        assert chans[2].recv("left", timeout=60) == "detached"
        src[:] = payload(2)
        send_one(qp, cq, mr, ah, MCAST_QPN)
        for p in (1, 2):
            chans[p].send("sent again")
        assert chans[1].recv("result", timeout=60) == "second received"
        assert chans[2].recv("result", timeout=60) == "nothing after leaving"
    elif me in (1, 2):
        buf, mr = mkbuf(pd, 2 * SLOT, fill=0xEE)
        qp.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr.sge(SLOT, i * SLOT)]) for i in range(2)])
        with join_ip_group(GROUP, entry.ip):
            qp.attach_mcast(gid)
            chans[0].send("joined", qp.qp_num)
            sender = chans[0].recv("sent", timeout=60)
            (wc,) = ok(poll_until(cq, timeout=20), ib.WCOpcode.RECV)
            assert wc.wr_id == 0 and wc.byte_len == SLOT and wc.src_qp == sender
            assert wc.wc_flags & ib.WCFlags.GRH
            assert bytes(buf[GRH_LEN:SLOT]) == payload(1).tobytes()
            # The GRH area's IPv4 header: from node 0 to the group.
            assert bytes(buf[GRH_LEN - 8 : GRH_LEN - 4]) == socket.inet_aton(mesh_node.addrs[0])
            assert bytes(buf[GRH_LEN - 4 : GRH_LEN]) == socket.inet_aton(GROUP)
            if me == 2:
                qp.detach_mcast(gid)
                chans[0].send("left", "detached")
            chans[0].recv("sent again", timeout=60)
            if me == 1:
                (wc,) = ok(poll_until(cq, timeout=20), ib.WCOpcode.RECV)
                assert wc.wr_id == 1 and bytes(buf[SLOT + GRH_LEN :]) == payload(2).tobytes()
                chans[0].send("result", "second received")
            else:
                assert wait_one(cq, 3.0) is None
                assert (buf[SLOT:] == 0xEE).all()
                chans[0].send("result", "nothing after leaving")
        if me == 1:
            qp.detach_mcast(gid)
    qp.close()


def test_ud_echo_server_replies_across_nodes(mesh_node, chans, me, ctx, pd):
    entry = ctx.find_gid(PORT)
    qp, cq = ud_qp(ctx, pd, PORT)
    clients = sorted(chans)
    if me == 0:
        rbuf, rmr = mkbuf(pd, len(clients) * SLOT)
        sbuf, smr = mkbuf(pd, N)
        qp.post_recv(
            [ib.RecvWR(wr_id=p, sg_list=[rmr.sge(SLOT, i * SLOT)]) for i, p in enumerate(clients)]
        )
        for p in clients:  # the clients' only knowledge: this QPN (and node 0's GID)
            chans[p].send("server", qp.qp_num)
        seen = set()
        # Every request first: the CQ then holds only the replies' sends.
        for wc in ok(poll_until(cq, len(clients), timeout=30), ib.WCOpcode.RECV):
            i = clients.index(wc.wr_id)
            grh = memoryview(rbuf)[i * SLOT : i * SLOT + GRH_LEN]
            attr = ctx.init_ah_from_wc(PORT, wc, grh)
            sender = socket.inet_ntoa(attr.dgid.raw[12:])
            seen.add(sender)
            assert attr.sgid_index == entry.index and attr.port_num == PORT
            sbuf[:] = rbuf[i * SLOT + GRH_LEN : (i + 1) * SLOT][::-1]
            with pd.create_ah_from_wc(wc, grh, PORT) as ah:
                send_one(qp, cq, smr, ah, wc.src_qp, wr_id=100)
        assert seen == {mesh_node.addrs[p] for p in clients}
        for p in clients:
            assert chans[p].recv("echoed", timeout=60) is True
    else:
        server_qpn = chans[0].recv("server", timeout=60)
        server_gid = ib.Gid(f"::ffff:{mesh_node.addrs[0]}")
        buf, mr = mkbuf(pd, N + SLOT)
        qp.post_recv(ib.RecvWR(wr_id=9, sg_list=[mr.sge(SLOT, N)]))
        ah = pd.create_ah(ib.AHAttr(dgid=server_gid, sgid_index=entry.index, port_num=PORT))
        buf[:N] = payload(10 + me)
        send_one(qp, cq, mr, ah, server_qpn)
        (wc,) = ok(poll_until(cq, timeout=30), ib.WCOpcode.RECV)
        assert wc.src_qp == server_qpn
        assert bytes(buf[N + GRH_LEN :]) == payload(10 + me)[::-1].tobytes()
        chans[0].send("echoed", True)
    qp.close()
