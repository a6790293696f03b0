"""The SRD user path of ibverbs.efa between the two nodes of the rig, over
a DOUBLE: the fake libefa.so.1 (tests/fakes/efa/), whose efadv_create_qp_ex
makes a real rxe UD QP through the real libibverbs and whose efadv_create_cq
a real rxe extended CQ.  So the binding's path runs end to end (create,
EndpointInfo exchange, the AH from it, post, poll in a session reading the
sender's GID through the efadv CQ) with real datagrams between two kernels;
what an EFA device does with an SRD QP is not shown here.  The fake's
efadv_wc_read_sgid answers a fixed GID (it cannot see the packet): the real
sender's GID is checked in the GRH rxe writes."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import numpy as np
import pytest

import ibverbs as ib
from ibverbs import efa
from support import GID_INDEX, PORT, load_path
from support.rdma import mkbuf

pytestmark = pytest.mark.twonode

GRH = 40
FAKE_SGID = bytes(0xF0 + i for i in range(16))  # the fake's answer


@pytest.fixture(scope="module")
def fake_libefa(tmp_path_factory):
    build = Path(__file__).resolve().parents[1] / "fakes" / "efa" / "build.py"
    path = load_path("fake_efa_build", build).build(tmp_path_factory.mktemp("efa"))
    os.environ["IBVERBS_LIBEFA"] = path
    ok, loaded = efa.libefa_status()
    # libefa loads once per process: this one must be the fake
    assert ok and os.path.realpath(loaded) == os.path.realpath(path), loaded
    yield path
    del os.environ["IBVERBS_LIBEFA"]  # for later subprocesses; the fake stays loaded


def _poll(cq, n, timeout=20.0):
    """n entries of cq through a start_poll() session: (wr_id, status,
    opcode, byte_len, src_qp, sgid or None) each."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        assert time.monotonic() < deadline, f"only {len(got)} of {n} completions"
        if not cq.start_poll():
            time.sleep(0.001)
            continue
        try:
            while True:
                recv = cq.read_opcode() == ib.WCOpcode.RECV
                sgid = cq.read_sgid() if recv else None
                got.append(
                    (
                        cq.wr_id,
                        cq.status,
                        cq.read_opcode(),
                        cq.read_byte_len(),
                        cq.read_src_qp(),
                        sgid,
                    )
                )
                if not cq.next_poll():
                    break
        finally:
            cq.end_poll()
    return got


def test_srd_user_path_over_the_fake_libefa(fake_libefa, chan, me, node, ctx, pd):
    attr = efa.query_device(ctx)  # the fake's answer
    assert attr.max_rdma_size > 0
    F = ib.CreateCQWCFlags
    cq = efa.create_cq(
        ctx,
        ib.CQInitAttrEx(16, wc_flags=F.BYTE_LEN | F.SRC_QP),
        efa.WCFlags.WITH_SGID,
    )
    qp = efa.create_qp(
        pd,
        ib.QPInitAttrEx(
            cq, cq, max_send_wr=8, max_recv_wr=8, send_ops_flags=ib.QPCreateSendOpsFlags.SEND
        ),
    )
    assert isinstance(qp, efa.QP) and isinstance(cq, efa.CQ)
    qp.to_init(PORT, qkey=efa.DEFAULT_QKEY)
    qp.to_rtr(None)
    qp.to_rts()

    n = 512
    dst, mr_d = mkbuf(pd, GRH + n, fill=0xEE)
    qp.post_recv(ib.RecvWR(wr_id=50, sg_list=[mr_d.sge()]))
    mine = efa.EndpointInfo(ctx.query_gid(PORT, GID_INDEX), qp.qp_num)
    peer = efa.EndpointInfo.from_bytes(chan.exchange("endpoint", mine.to_bytes()))
    assert peer.gid != mine.gid and peer.qkey == efa.DEFAULT_QKEY
    ah = efa.create_ah(pd, peer, PORT, sgid_index=GID_INDEX)
    assert efa.query_ah(ah).ahn >= 0  # the fake's answer

    src, mr_s = mkbuf(pd, n)
    src[:] = np.random.default_rng(40 + me).integers(0, 256, n, dtype=np.uint8)
    qp.post_send(
        ib.SendWR(
            wr_id=60,
            sg_list=[mr_s.sge()],
            opcode=ib.WROpcode.SEND,
            send_flags=ib.SendFlags.SIGNALED,
            ah=ah,
            remote_qpn=peer.qpn,
            remote_qkey=peer.qkey,
        )
    )
    got = {w[0]: w for w in _poll(cq, 2)}
    assert got[60][1] == 0 and got[60][2] == ib.WCOpcode.SEND
    _, status, _, byte_len, src_qp, sgid = got[50]
    assert status == 0 and byte_len == GRH + n and src_qp == peer.qpn
    assert bytes(sgid) == FAKE_SGID  # through efadv_cq_from_ibv_cq_ex
    # the real sender: RoCE v2 over IPv4, the GRH area's last 20 bytes are
    # the IPv4 header from the peer's address
    ip = bytes(dst[20:GRH])
    assert ip[12:16] == socket.inet_aton(node.addrs[1 - me])
    sent = chan.exchange("payload", bytes(src))
    assert bytes(dst[GRH:]) == sent
    for o in (ah, qp, cq):
        o.close()
