"""The GID helper on two nodes: each node's Context.find_gid picks its own
RoCE v2 GID with an IPv4 address (not the peer's), and an RC connection made
with that index carries data both ways."""

import pytest

import ibverbs as ib
from support.peers import GID_INDEX, PORT, SIGNALED, mkbuf, poll_until, rc_qp

pytestmark = pytest.mark.twonode


def test_find_gid_picks_own_ipv4_gid_and_connects(chan, me, ctx, pd):
    e = ctx.find_gid(PORT)
    assert e.gid_type == ib.GIDType.ROCE_V2 and e.ip.version == 4
    assert e.index == GID_INDEX  # the index the rig found in sysfs
    assert e.gid.raw[12:] == e.ip.packed
    peer_ip = chan.exchange("gid-ip", str(e.ip))
    assert peer_ip != str(e.ip)
    with pytest.raises(ValueError):  # the peer's address is not on this port
        ctx.find_gid(PORT, ip=peer_ip)

    qp, cq = rc_qp(ctx, pd)
    mine = ib.local_qp_info(qp, ctx.query_port(PORT), e.gid, port=PORT, psn=0x300 + me)
    theirs = ib.QPInfo.from_bytes(chan.exchange("gid-qp", mine.to_bytes()))
    assert ib.Gid(theirs.gid).raw[12:] == ib.Gid(f"::ffff:{peer_ip}").raw[12:]
    ib.connect_rc(
        qp,
        theirs,
        port=PORT,
        sgid_index=e.index,
        access=ib.AccessFlags.LOCAL_WRITE,
        local_psn=mine.psn,
    )
    buf, mr = mkbuf(pd, 64, fill=0xC0 + me)
    qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr.sge(32, 32)]))
    chan.barrier("gid-posted")
    qp.post_send(ib.SendWR(wr_id=2, sg_list=[mr.sge(32)], send_flags=SIGNALED))
    poll_until(cq, 2, timeout=20, check=True)
    assert (buf[32:] == 0xC0 + (1 - me)).all()
    chan.barrier("gid-done")
    qp.close()
    cq.close()
