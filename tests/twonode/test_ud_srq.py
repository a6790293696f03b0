"""UD datagrams addressed by an AH built from the remote GID (the GRH
checked on the receiving node), an SRQ fed by QPs connected to the peer,
and a completion channel woken by the peer's traffic."""

import os
import select
import socket

import numpy as np
import pytest

import ibverbs as ib
from support.peers import GID_INDEX, PORT, SIGNALED, connect, mkbuf, poll_until, rc_qp
from support.rdma import send_wr

pytestmark = pytest.mark.twonode

GRH = 40
QKEY = 0x11111111  # QP.to_init's default Q_Key for UD


def test_ud_through_ah_from_remote_gid(chan, me, node, ctx, pd):
    cq = ctx.create_cq(16)
    qp = pd.create_qp(
        ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.UD, max_send_wr=8, max_recv_wr=8)
    )
    qp.to_init(PORT, 0)
    qp.to_rtr(None)
    qp.to_rts(0x77)
    n = 300
    dst, mr_d = mkbuf(pd, GRH + n, fill=0xEE)
    qp.post_recv(ib.RecvWR(wr_id=50, sg_list=[mr_d.sge()]))
    gid = ctx.query_gid(PORT, GID_INDEX)
    peer = chan.exchange("ud", {"qpn": qp.qp_num, "gid": gid.raw})
    assert peer["gid"] != gid.raw
    ah = pd.create_ah(ib.AHAttr(dgid=peer["gid"], sgid_index=GID_INDEX, port_num=PORT))
    src, mr_s = mkbuf(pd, n)
    src[:] = np.random.default_rng(20 + me).integers(0, 256, n, dtype=np.uint8)
    qp.post_send(
        send_wr(
            [mr_s.sge()],
            wr_id=60,
            opcode=ib.WROpcode.SEND_WITH_IMM,
            imm_data=1000 + me,
            ah=ah,
            remote_qpn=peer["qpn"],
            remote_qkey=QKEY,
        )
    )
    wcs = poll_until(cq, 2, timeout=20, check=True)
    (got,) = [w for w in wcs if w.opcode == ib.WCOpcode.RECV]
    assert got.wr_id == 50 and got.byte_len == GRH + n
    assert got.wc_flags & ib.WCFlags.GRH and got.wc_flags & ib.WCFlags.WITH_IMM
    assert got.imm_data == 1000 + (1 - me) and got.src_qp == peer["qpn"]
    # RoCE v2 over IPv4: the GRH area's last 20 bytes are the IPv4 header,
    # from the peer's address to ours.
    ip = bytes(dst[20:GRH])
    assert ip[0] >> 4 == 4 and ip[9] == socket.IPPROTO_UDP
    assert ip[12:16] == socket.inet_aton(node.addrs[1 - me])
    assert ip[16:20] == socket.inet_aton(node.addr)
    sent = chan.exchange("payload", bytes(src))
    assert bytes(dst[GRH:]) == sent


def test_srq_shared_by_qps_from_the_peer(chan, me, ctx, pd):
    cq = ctx.create_cq(64)
    srq = pd.create_srq(max_wr=16) if me == 1 else None
    qps = [rc_qp(ctx, pd, cq, srq=srq)[0] for _ in range(2)]
    for i, qp in enumerate(qps):
        connect(chan, ctx, qp, tag=f"qp{i}")
    if me == 1:
        dst, mr = mkbuf(pd, 4 * 256)
        srq.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr.sge(256, 256 * i)]) for i in range(4)])
        chan.send("posted")
        wcs = poll_until(cq, 4, timeout=20, check=True)
        by_qp = {}
        for wc in wcs:
            assert wc.opcode == ib.WCOpcode.RECV and wc.byte_len == 100
            by_qp.setdefault(wc.qp_num, []).append(wc)
        assert set(by_qp) == {q.qp_num for q in qps}
        for wc in wcs:
            k = qps.index(next(q for q in qps if q.qp_num == wc.qp_num))
            assert wc.imm_data >> 8 == k
            off = 256 * wc.wr_id
            assert (dst[off : off + 100] == wc.imm_data & 0xFF).all()
        chan.send("checked")
    else:
        src, mr = mkbuf(pd, 4 * 100)
        chan.recv("posted")
        for j in range(4):
            k = j % 2
            src[100 * j : 100 * (j + 1)] = 0x10 + j
            qps[k].post_send(
                send_wr(
                    [mr.sge(100, 100 * j)],
                    wr_id=j,
                    opcode=ib.WROpcode.SEND_WITH_IMM,
                    imm_data=(k << 8) | (0x10 + j),
                )
            )
        poll_until(cq, 4, timeout=20, check=True)
        chan.recv("checked")


def test_comp_channel_woken_by_remote_traffic(chan, me, ctx, pd):
    ch = ctx.create_comp_channel() if me == 1 else None
    cq = ctx.create_cq(16, channel=ch)
    qp, _ = rc_qp(ctx, pd, cq)
    connect(chan, ctx, qp)
    buf, mr = mkbuf(pd, 64, fill=0x3C)
    if me == 1:
        qp.post_recv(ib.RecvWR(wr_id=7, sg_list=[mr.sge()]))
        cq.req_notify()
        os.set_blocking(ch.fd, False)
        # Nothing wakes the channel before the peer sends.
        assert select.select([ch.fd], [], [], 0.3)[0] == []
        chan.send("armed")
        r, _, _ = select.select([ch.fd], [], [], 30)
        assert r, "the completion channel was not woken by the peer's SEND"
        assert ch.get_cq_event() is cq
        cq.ack_events(1)
        (wc,) = cq.poll(4)
        wc.raise_for_status()
        assert wc.wr_id == 7 and wc.byte_len == 64 and (buf == 0xC3).all()
    else:
        buf[:] = 0xC3
        chan.recv("armed")
        qp.post_send(ib.SendWR(wr_id=8, sg_list=[mr.sge()], send_flags=SIGNALED))
        poll_until(cq, timeout=20, check=True)
