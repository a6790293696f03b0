"""Replies to a UD sender from its receive completion, on rxe0:
PD.create_ah_from_wc and Context.init_ah_from_wc.

A UD echo server answers each client through an AH made from the
request's WC and GRH: the clients know the server's QPN and GID, the
server learns nothing else about them (no out-of-band exchange).
"""

import errno

import numpy as np
import pytest

import ibverbs as ib
from support.rdma import GRH_LEN, UD_QKEY, mkbuf, ok, poll_until, ud_qp

pytestmark = pytest.mark.integration

N = 48  # request and reply payload bytes
SLOT = GRH_LEN + N


def post_slots(qp, mr, count):
    qp.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr.sge(SLOT, i * SLOT)]) for i in range(count)])


def send(qp, mr, offset, ah, qpn, wr_id):
    qp.post_send(
        ib.SendWR(
            wr_id=wr_id,
            sg_list=[mr.sge(N, offset)],
            send_flags=ib.SendFlags.SIGNALED,
            ah=ah,
            remote_qpn=qpn,
            remote_qkey=UD_QKEY,
        )
    )


def echo_server_step(pd, qp, cq, rbuf, rmr, sbuf, smr, port):
    """Serve one request: reverse its payload and send it back to the
    sender, addressed from the request alone.  Returns the request's WC."""
    (wc,) = ok(poll_until(cq), ib.WCOpcode.RECV)
    slot = wc.wr_id * SLOT
    grh = memoryview(rbuf)[slot : slot + GRH_LEN]
    sbuf[:N] = rbuf[slot + GRH_LEN : slot + SLOT][::-1]
    with pd.create_ah_from_wc(wc, grh, port) as ah:
        send(qp, smr, 0, ah, wc.src_qp, wr_id=1000 + wc.wr_id)
        ok(poll_until(cq), ib.WCOpcode.SEND)
    qp.post_recv(ib.RecvWR(wr_id=wc.wr_id, sg_list=[rmr.sge(SLOT, slot)]))
    return wc


def test_echo_server_replies_to_each_client(ctx, pd, port):
    entry = ctx.find_gid(port)
    server, scq = ud_qp(ctx, pd, port)
    rbuf, rmr = mkbuf(pd, 4 * SLOT)
    sbuf, smr = mkbuf(pd, N)
    post_slots(server, rmr, 4)
    # What the clients know of the server: its QPN and its GID.
    known = (server.qp_num, entry.gid)

    rng = np.random.default_rng(11)
    clients = []
    for _ in range(3):
        cpd = ctx.alloc_pd()  # each client its own PD, as another process
        qp, cq = ud_qp(ctx, cpd, port)
        buf, mr = mkbuf(cpd, N + SLOT)
        qp.post_recv(ib.RecvWR(wr_id=7, sg_list=[mr.sge(SLOT, N)]))
        ah = cpd.create_ah(ib.AHAttr(dgid=known[1], sgid_index=entry.index, port_num=port))
        clients.append((cpd, qp, cq, buf, mr, ah))

    for cpd, qp, cq, buf, mr, ah in clients:
        buf[:N] = rng.integers(0, 256, N, dtype=np.uint8)
        send(qp, mr, 0, ah, known[0], wr_id=1)
        ok(poll_until(cq), ib.WCOpcode.SEND)
        wc = echo_server_step(pd, server, scq, rbuf, rmr, sbuf, smr, port)
        assert wc.src_qp == qp.qp_num
        (got,) = ok(poll_until(cq), ib.WCOpcode.RECV)
        assert got.src_qp == server.qp_num and got.byte_len == SLOT
        assert got.wc_flags & ib.WCFlags.GRH
        assert bytes(buf[N + GRH_LEN :]) == bytes(buf[:N][::-1])
    for cpd, qp, cq, buf, mr, ah in clients:
        for o in (ah, qp, cq, mr, cpd):
            o.close()


@pytest.fixture
def request_wc(ctx, pd, port):
    """One UD send from a client QP to a server QP: (the server's WC, the
    server's receive buffer, the client QP, the rig's GID entry)."""
    entry = ctx.find_gid(port)
    server, scq = ud_qp(ctx, pd, port)
    client, ccq = ud_qp(ctx, pd, port)
    rbuf, rmr = mkbuf(pd, SLOT, fill=0xEE)
    server.post_recv(ib.RecvWR(wr_id=3, sg_list=[rmr.sge()]))
    cbuf, cmr = mkbuf(pd, N, fill=0x5A)
    ah = pd.create_ah(ib.AHAttr(dgid=entry.gid, sgid_index=entry.index, port_num=port, sl=0))
    send(client, cmr, 0, ah, server.qp_num, wr_id=4)
    ok(poll_until(ccq), ib.WCOpcode.SEND)
    (wc,) = ok(poll_until(scq), ib.WCOpcode.RECV)
    return wc, rbuf, client, entry


def test_init_ah_from_wc_names_the_sender(ctx, port, request_wc):
    wc, rbuf, client, entry = request_wc
    attr = ctx.init_ah_from_wc(port, wc, rbuf)
    assert isinstance(attr, ib.AHAttr)
    assert attr.is_global
    assert attr.dgid == entry.gid  # the client's GID (one node: ours too)
    assert attr.sgid_index == entry.index  # the GID the request came to
    assert attr.port_num == port
    assert attr.sl == wc.sl == 0
    assert attr.dlid == wc.slid and attr.src_path_bits == wc.dlid_path_bits
    # RoCE v2 over IPv4: hop limit and traffic class from the IPv4 TTL/TOS.
    assert attr.hop_limit == rbuf[20 + 8] and attr.traffic_class == rbuf[20 + 1]
    assert wc.src_qp == client.qp_num


def test_grh_forms(ctx, port, request_wc):
    wc, rbuf, _, _ = request_wc
    want = ctx.init_ah_from_wc(port, wc, rbuf)
    raw = rbuf.tobytes()
    for grh in (
        raw,
        bytearray(raw),
        memoryview(raw),
        raw[:GRH_LEN],
        rbuf[:GRH_LEN],
        memoryview(rbuf)[:GRH_LEN],
        np.frombuffer(raw[:GRH_LEN], dtype=np.uint32),
    ):
        assert ctx.init_ah_from_wc(port, wc, grh) == want
    assert ctx.init_ah_from_wc(port=port, wc=wc, grh=raw) == want


def test_argument_errors(ctx, pd, port, request_wc):
    wc, rbuf, _, _ = request_wc
    with pytest.raises(ValueError, match="at least 40"):
        ctx.init_ah_from_wc(port, wc, rbuf[:39])
    with pytest.raises(ValueError, match="at least 40"):
        pd.create_ah_from_wc(wc, b"", port)
    with pytest.raises(TypeError):
        ctx.init_ah_from_wc(port, wc, "not bytes")
    with pytest.raises(TypeError):
        ctx.init_ah_from_wc(port, wc, None)
    with pytest.raises(TypeError, match="WC"):
        pd.create_ah_from_wc(None, rbuf, port)
    with pytest.raises(TypeError, match="WC"):
        pd.create_ah_from_wc({"src_qp": 1}, rbuf, port)
    with pytest.raises(ValueError):
        ctx.init_ah_from_wc(0, wc, rbuf)
    with pytest.raises(TypeError):
        np_strided = np.zeros(100, dtype=np.uint8)[::2]
        ctx.init_ah_from_wc(port, wc, np_strided)


def test_bytes_that_are_no_grh(ctx, pd, port, request_wc):
    wc, rbuf, _, _ = request_wc
    # Neither an IPv6 header (version 6) nor an IPv4 one: libibverbs says
    # EPROTONOSUPPORT, and no AH is made.
    with pytest.raises(ib.VerbsError) as ei:
        ctx.init_ah_from_wc(port, wc, bytes(40))
    assert ei.value.errno == errno.EPROTONOSUPPORT
    assert ei.value.operation == "ibv_init_ah_from_wc"
    with pytest.raises(ib.VerbsError) as ei:
        pd.create_ah_from_wc(wc, bytes(40), port)
    assert ei.value.operation == "ibv_create_ah_from_wc"
    # Without the GRH flag only the WC is read: not global, no GID.
    local = ib.WC(src_qp=wc.src_qp, slid=0, sl=0, wc_flags=0)
    attr = ctx.init_ah_from_wc(port, local, bytes(40))
    assert not attr.is_global and attr.dgid is None and attr.port_num == port


def test_closed_objects(device_name, port, request_wc):
    wc, rbuf, _, _ = request_wc
    c = ib.Context(device_name)
    p = c.alloc_pd()
    p.close()
    with pytest.raises(ib.VerbsError) as ei:
        p.create_ah_from_wc(wc, rbuf, port)
    assert ei.value.errno == errno.EBADF
    c.close()
    with pytest.raises(ib.VerbsError) as ei:
        c.init_ah_from_wc(port, wc, rbuf)
    assert ei.value.errno == errno.EBADF


def test_ah_from_wc_is_a_child_of_the_pd(pd, port, request_wc):
    wc, rbuf, _, _ = request_wc
    ah = pd.create_ah_from_wc(wc, rbuf, port)
    assert ah.pd is pd and not ah.closed
    with pytest.raises(ib.VerbsError) as ei:
        pd.close()
    assert ei.value.errno == errno.EBUSY
    ah.close()
