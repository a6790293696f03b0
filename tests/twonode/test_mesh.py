"""Three or more nodes (``tools/rxe-vm --nodes 3``): every node connects to
every other one.  Each node owns one device and one address; a full mesh
of RC QPs, and one UD QP reaching all peers through AHs, show that the rig's
routing takes every ordered pair of nodes out through the sender's own NIC
to the receiver's own device (a packet delivered anywhere else would land
in the wrong memory or not at all).  Each node checks what arrived in its
own memory."""

import socket

import numpy as np
import pytest

import ibverbs as ib
from support.peers import GID_INDEX, PORT, SIGNALED, local_info, mkbuf, mr_desc, poll_until, rc_qp

pytestmark = [pytest.mark.twonode, pytest.mark.nodes3]

SLOT = 4096
GRH = 40
QKEY = 0x11111111  # QP.to_init's default Q_Key for UD


def pattern(writer, reader):
    return np.random.default_rng(1000 * writer + reader).integers(0, 256, SLOT, dtype=np.uint8)


def mapped_gid(addr):
    return b"\0" * 10 + b"\xff\xff" + socket.inet_aton(addr)


def test_rc_full_mesh_every_node_writes_into_every_other(mesh_node, chans, me, ctx, pd):
    """One RC QP per peer; each node RDMA-writes a pattern of its own into
    slot <its number> of every peer's buffer, then SEND_WITH_IMM says so;
    each node finds every peer's pattern in its slot and nothing else
    written, and each QP's destination is that peer's GID and QP."""
    n = len(mesh_node.addrs)
    peers = sorted(chans)
    buf, mr = mkbuf(pd, n * SLOT)
    cq = ctx.create_cq(4 * n)
    qps = {p: rc_qp(ctx, pd, cq)[0] for p in peers}
    mine = {p: local_info(ctx, qps[p], 0x2000 + 16 * me + p) for p in peers}
    for p in peers:  # everyone sends first, then reads: no ordering to get wrong
        chans[p].send("qp", {"info": mine[p].to_bytes(), "mr": mr_desc(mr)})
    theirs = {p: chans[p].recv("qp") for p in peers}
    for p in peers:
        info = ib.QPInfo.from_bytes(theirs[p]["info"])
        assert info.gid == mapped_gid(mesh_node.addrs[p]), (p, info)
        ib.connect_rc(
            qps[p],
            info,
            port=PORT,
            sgid_index=GID_INDEX,
            local_psn=mine[p].psn,
            access=ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE,
        )
        attr, _ = qps[p].query()
        assert attr["ah_attr"].dgid == mapped_gid(mesh_node.addrs[p]), p
        assert attr["dest_qp_num"] == info.qp_num, p
        qps[p].post_recv(ib.RecvWR(wr_id=500 + p))
    for c in chans.values():
        c.barrier("recvs posted")
    src, src_mr = mkbuf(pd, n * SLOT)
    for p in peers:
        src[p * SLOT : (p + 1) * SLOT] = pattern(me, p)
        qps[p].post_send(
            [
                ib.SendWR(
                    wr_id=100 + p,
                    opcode=ib.WROpcode.RDMA_WRITE,
                    sg_list=[src_mr.sge(SLOT, p * SLOT)],
                    remote_addr=theirs[p]["mr"]["addr"] + me * SLOT,
                    rkey=theirs[p]["mr"]["rkey"],
                ),
                # Ordered after the write on the same QP: when the peer
                # sees this, the write is in its memory.
                ib.SendWR(
                    wr_id=200 + p,
                    opcode=ib.WROpcode.SEND_WITH_IMM,
                    imm_data=me,
                    send_flags=SIGNALED,
                ),
            ]
        )
    wcs = poll_until(cq, 2 * len(peers), timeout=60, check=True)
    assert sorted(w.wr_id for w in wcs) == sorted(
        [200 + p for p in peers] + [500 + p for p in peers]
    )
    for w in wcs:
        if w.opcode == ib.WCOpcode.RECV:
            assert w.imm_data == w.wr_id - 500, w  # the QP of peer p hears from p
            assert w.qp_num == qps[w.wr_id - 500].qp_num
    for p in peers:
        assert np.array_equal(buf[p * SLOT : (p + 1) * SLOT], pattern(p, me)), f"slot of node {p}"
    assert not buf[me * SLOT : (me + 1) * SLOT].any()
    for c in chans.values():
        c.barrier("checked")  # no QP goes away while a peer still writes
    print(f"\nnode {me}: {len(peers)} RC peers wrote their slots; {n} nodes in all")


def test_ud_one_qp_reaches_every_peer(mesh_node, chans, me, ctx, pd):
    """One UD QP per node, one AH per peer from the peer's GID: each node
    sends one datagram to every other; each receives one from each peer,
    and the IPv4 header in its GRH area names that peer's address as the
    source and this node's as the destination."""
    n = len(mesh_node.addrs)
    peers = sorted(chans)
    cq = ctx.create_cq(4 * n)
    qp = pd.create_qp(
        ib.QPInitAttr(
            send_cq=cq, recv_cq=cq, qp_type=ib.QPType.UD, max_send_wr=2 * n, max_recv_wr=2 * n
        )
    )
    qp.to_init(PORT, 0)
    qp.to_rtr(None)
    qp.to_rts(0x99)
    size = 256
    dst, mr_d = mkbuf(pd, len(peers) * (GRH + size), fill=0xEE)
    qp.post_recv(
        [
            ib.RecvWR(wr_id=i, sg_list=[mr_d.sge(GRH + size, i * (GRH + size))])
            for i in range(len(peers))
        ]
    )
    for c in chans.values():
        c.send("ud", qp.qp_num)
    qpn = {p: chans[p].recv("ud") for p in peers}
    for c in chans.values():
        c.barrier("recvs posted")
    src, mr_s = mkbuf(pd, size)
    src[:] = me
    ahs = []
    for p in peers:
        ah = pd.create_ah(
            ib.AHAttr(dgid=mapped_gid(mesh_node.addrs[p]), sgid_index=GID_INDEX, port_num=PORT)
        )
        ahs.append(ah)
        qp.post_send(
            ib.SendWR(
                wr_id=300 + p,
                sg_list=[mr_s.sge()],
                send_flags=SIGNALED,
                opcode=ib.WROpcode.SEND_WITH_IMM,
                imm_data=p,  # the receiver checks it was meant for it
                ah=ah,
                remote_qpn=qpn[p],
                remote_qkey=QKEY,
            )
        )
    wcs = poll_until(cq, 2 * len(peers), timeout=60, check=True)
    recvs = [w for w in wcs if w.opcode == ib.WCOpcode.RECV]
    assert sorted(w.wr_id for w in wcs if w.opcode != ib.WCOpcode.RECV) == [300 + p for p in peers]
    assert sorted(w.src_qp for w in recvs) == sorted(qpn.values())
    senders = set()
    for w in recvs:
        assert w.byte_len == GRH + size and w.wc_flags & ib.WCFlags.GRH
        assert w.imm_data == me
        area = dst[w.wr_id * (GRH + size) : (w.wr_id + 1) * (GRH + size)]
        ip = bytes(area[20:GRH])
        assert ip[0] >> 4 == 4 and ip[9] == socket.IPPROTO_UDP
        assert ip[16:20] == socket.inet_aton(mesh_node.addr)
        sender = mesh_node.addrs.index(socket.inet_ntoa(ip[12:16]))
        assert qpn[sender] == w.src_qp, (sender, w)
        assert not np.any(area[GRH:] != sender), sender  # the sender's own bytes
        senders.add(sender)
    assert senders == set(peers)
    for c in chans.values():
        c.barrier("checked")
    print(f"\nnode {me}: one UD datagram from each of nodes {sorted(senders)}")
