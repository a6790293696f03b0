"""Connection data really crosses between the nodes: the QPInfo records
travel over TCP, the RTR attributes name the PEER (a QP connected with its
own GID would pass on one device, not here), and two netdevs of different
MTUs settle on the smaller path MTU."""

import hashlib

import numpy as np
import pytest

import ibverbs as ib
from support.peers import GID_INDEX, PORT, SIGNALED, connect, mkbuf, mr_desc, poll_until, rc_qp

pytestmark = [pytest.mark.twonode, pytest.mark.separate_vms]

MTU_BYTES = {
    ib.MTU.MTU_256: 256,
    ib.MTU.MTU_512: 512,
    ib.MTU.MTU_1024: 1024,
    ib.MTU.MTU_2048: 2048,
    ib.MTU.MTU_4096: 4096,
}


def test_rtr_attributes_name_the_peer(chan, me, ctx, pd):
    qp, cq = rc_qp(ctx, pd)
    mine, theirs = connect(chan, ctx, qp, psn=0x100 + me)
    # The peer is another device with another address: another GID.
    assert theirs.gid != mine.gid
    assert theirs.gid == ib.Gid(chan.exchange("gid", ctx.query_gid(PORT, GID_INDEX).raw))
    attrs, _ = qp.query()
    assert attrs["qp_state"] == ib.QPState.RTS
    assert attrs["dest_qp_num"] == theirs.qp_num
    assert attrs["rq_psn"] == 0x100 + (1 - me) and attrs["sq_psn"] == 0x100 + me
    ah = attrs["ah_attr"]
    assert ah.is_global and ah.dgid == theirs.gid and ah.dgid != mine.gid
    assert ah.sgid_index == GID_INDEX
    # ... and the connection carries data both ways.
    buf, mr = mkbuf(pd, 64, fill=0xA0 + me)
    qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr.sge(32, 32)]))
    chan.barrier("posted")
    qp.post_send(ib.SendWR(wr_id=2, sg_list=[mr.sge(32)], send_flags=SIGNALED))
    wcs = poll_until(cq, 2, timeout=20, check=True)
    assert sorted(w.opcode for w in wcs) == sorted([ib.WCOpcode.SEND, ib.WCOpcode.RECV])
    assert (buf[32:] == 0xA0 + (1 - me)).all()


def test_mtu_negotiation_and_1mib_write(chan, me, ctx, pd):
    active = ctx.query_port(PORT).active_mtu
    peer_active = chan.exchange("mtu", int(active))
    if active == peer_active:
        pytest.skip(
            "both nodes have the same active MTU (run the rig with "
            "--mtu 1500,9000, as make test-twonode does)"
        )
    qp, cq = rc_qp(ctx, pd)
    mine, theirs = connect(chan, ctx, qp)
    assert mine.mtu == active and theirs.mtu == peer_active
    attrs, _ = qp.query()
    assert attrs["path_mtu"] == min(active, peer_active)
    size = 1 << 20
    buf, mr = mkbuf(pd, size)
    if me == 1:
        qp.post_recv(ib.RecvWR(wr_id=5))  # for the WRITE_WITH_IMM
    theirs_mr = chan.exchange("mr", mr_desc(mr))
    if me == 0:
        buf[:] = np.random.default_rng(13).integers(0, 256, size, dtype=np.uint8)
        qp.post_send(
            ib.SendWR(
                wr_id=1,
                sg_list=[mr.sge()],
                opcode=ib.WROpcode.RDMA_WRITE_WITH_IMM,
                imm_data=size,
                remote_addr=theirs_mr["addr"],
                rkey=theirs_mr["rkey"],
                send_flags=SIGNALED,
            )
        )
        poll_until(cq, timeout=60, check=True)
        chan.send("sha256", hashlib.sha256(buf).hexdigest())
    else:
        (wc,) = poll_until(cq, timeout=60, check=True)
        assert wc.imm_data == size and wc.byte_len == size and wc.wr_id == 5
        assert hashlib.sha256(buf).hexdigest() == chan.recv("sha256")
    print(
        f"node {me}: active MTU {MTU_BYTES[active]}, peer {MTU_BYTES[peer_active]}, "
        f"path MTU {MTU_BYTES[attrs['path_mtu']]}"
    )
