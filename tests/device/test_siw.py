"""Soft-iWARP (siw), a second provider behind the same op tables: an iWARP
transport whose connections are made through the connection manager only.

make test-kernels runs this file in ``tools/rxe-vm --provider siw`` (siw0
on veth0, siw.ko built from Debian's kernel source), on 6.1's kernel and
on sid's (7.2); the rest of the
device suite runs it on rxe, where the same connections run and what
iWARP refuses works.  Each refusal of siw is asserted as a VerbsError with
its errno; every answer is recorded (support.kernels.record, with the
provider) for the capability table of the testing guide.  On siw, the
device holds no more PDs, CQs, QPs, MRs or cm_ids after the file than
before it (on rxe other files share the device, and the leak tests of
tests/device/reliability cover it).
"""

from __future__ import annotations

import ctypes
import os
import threading

import pytest

import ibverbs as ib
import support
from support import cm_port, kernels
from support.process import cm_counts, full_gc
from support.rdma import ALL_ACCESS, poll_until
from support.timeouts import scaled

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("need_cm")]

SERVER = os.environ.get("IBVERBS_TEST_CM_SERVER", "198.18.0.1")
TIMEOUT = scaled(60.0)
N = 8192  # bytes per buffer: several packets at siw's 1024-byte MTU
IWARP, RNIC = 1, 4  # IBV_TRANSPORT_IWARP, IBV_NODE_RNIC
IB, CA = 0, 1  # IBV_TRANSPORT_IB, IBV_NODE_CA (rxe)
PROVIDER = (support.device_name() or "none").rstrip("0123456789")
SIW = PROVIDER == "siw"


def info(name):
    return next(d for d in ib._ibverbs._device_list() if d["name"] == name)


@pytest.fixture(scope="module", autouse=True)
def siw_leak_check():
    """On siw: the device's object counts after the file equal those
    before it."""
    if not SIW:
        yield
        return
    device_name = support.device_name()
    before = cm_counts(device_name)
    yield
    full_gc()
    after = cm_counts(device_name)
    assert after == before, f"siw objects left behind: before {before}, after {after}"


def record(feature, answer):
    kernels.record(feature, answer, provider=PROVIDER)


class Buf:
    """N registered bytes (ctypes), readable and writable remotely."""

    def __init__(self, pd, fill=0):
        self.raw = ctypes.create_string_buffer(bytes([fill]) * N, N)
        self.mr = pd.reg_mr(ctypes.addressof(self.raw), N, ALL_ACCESS, owner=self.raw)

    @property
    def data(self) -> bytes:
        return self.raw.raw


class End:
    """One side of a CM connection: PD, CQ on a completion channel, an
    optional SRQ, the QP (CMID.create_qp) and two buffers."""

    def __init__(self, cmid, srq=False):
        self.cmid = cmid
        ctx = cmid.context
        self.pd = ctx.alloc_pd()
        self.channel = ctx.create_comp_channel()
        self.cq = ctx.create_cq(64, self.channel)
        self.srq = self.pd.create_srq(16) if srq else None
        self.qp = cmid.create_qp(
            self.pd,
            ib.QPInitAttr(
                send_cq=self.cq,
                recv_cq=self.cq,
                srq=self.srq,
                max_send_wr=16,
                max_recv_wr=16,
                max_send_sge=1,
                max_recv_sge=1,
            ),
        )
        self.src = Buf(self.pd, fill=0x5A)
        self.dst = Buf(self.pd)

    def post_recv(self, wr_id=1):
        wr = ib.RecvWR(wr_id=wr_id, sg_list=[self.dst.mr.sge(N)])
        (self.srq or self.qp).post_recv(wr)

    def close(self):
        for h in (self.qp, self.srq, self.src.mr, self.dst.mr, self.cq, self.channel, self.pd):
            if h is not None:
                h.close()
        self.cmid.close()


@pytest.fixture(params=[False, True], ids=["qp-recv", "srq"])
def conn(request):
    """(client, server): an RC connection over siw0 made by CMID and
    CMListener, each side with a receive posted (on the SRQ with srq)."""
    port = cm_port()
    box = {}
    with ib.CMListener(port, SERVER) as listener:

        def serve():
            try:
                end = End(listener.get_request(timeout=TIMEOUT), srq=request.param)
                end.post_recv()
                end.cmid.accept(timeout=TIMEOUT)
                box["server"] = end
            except BaseException as e:  # noqa: BLE001 - re-raised below
                box["error"] = e

        t = threading.Thread(target=serve)
        t.start()
        client = End(ib.CMID.resolve(SERVER, port), srq=request.param)
        client.post_recv()
        client.cmid.connect(timeout=TIMEOUT)
        t.join(TIMEOUT)
        assert not t.is_alive(), "the server thread hung"
        if "error" in box:
            client.close()
            raise box["error"]
        server = box["server"]
    yield client, server
    client.cmid.disconnect()
    for end in (client, server):
        end.close()


# ------------------------------------------------------------- the device


def test_device_transport(ctx, device_name):
    d = info(device_name)
    attr = ctx.query_device()
    assert attr.max_qp > 0 and attr.max_mr > 0 and attr.max_srq > 0
    port = ctx.query_port(1)
    assert port.state == ib.PortState.ACTIVE
    assert port.link_layer == ib.LinkLayer.ETHERNET
    if SIW:
        assert d["transport_type"] == IWARP and d["node_type"] == RNIC, d
        assert attr.atomic_cap == ib.AtomicCap.NONE  # no atomics on siw
        # One GID, from the netdev's MAC address.
        assert any(ctx.query_gid(1, 0).raw), "siw0's GID 0 is zero"
    else:
        assert d["transport_type"] == IB and d["node_type"] == CA, d
    record("transport", "iWARP" if d["transport_type"] == IWARP else "InfiniBand (RoCE)")


def test_pd_and_mr(ctx):
    pd = ctx.alloc_pd()
    buf = ctypes.create_string_buffer(4096)
    mr = pd.reg_mr(ctypes.addressof(buf), 4096, ALL_ACCESS, owner=buf)
    assert mr.length == 4096 and mr.lkey and mr.rkey
    with pytest.raises(ib.VerbsError):
        pd.close()  # in use by the MR
    mr.close()
    pd.close()
    assert mr.closed and pd.closed


def test_cq_with_channel(ctx):
    ch = ctx.create_comp_channel()
    cq = ctx.create_cq(16, ch)
    assert cq.cqe >= 16 and cq.poll() == []
    cq.req_notify()
    cq.close()
    ch.close()


# -------------------------------------------------- RC through the CM


def test_send_recv(conn):
    client, server = conn
    client.qp.post_send(
        ib.SendWR(wr_id=7, sg_list=[client.src.mr.sge(N)], send_flags=ib.SendFlags.SIGNALED)
    )
    (wc,) = poll_until(server.cq, 1, timeout=TIMEOUT, check=True)
    assert wc.opcode == ib.WCOpcode.RECV and wc.byte_len == N
    assert server.dst.data == bytes([0x5A]) * N
    (wc,) = poll_until(client.cq, 1, timeout=TIMEOUT, check=True)
    assert wc.wr_id == 7 and wc.opcode == ib.WCOpcode.SEND
    record("cm_send_recv_srq" if server.srq else "cm_send_recv", "runs")
    # ibv_query_qp of the connected QP (QP.state): siw on 6.1 says RESET
    # where rxe says RTS (the CM moved it; the traffic above ran); siw on
    # 7.2 says RTS.
    state = ib.QPState(client.qp.state).name
    assert state == "RTS" or (SIW and state == "RESET"), state
    record("qp_state_after_cm", f"query_qp says {state}")


def rdma(client, opcode, local, remote):
    """Post one signaled RDMA OPCODE of N bytes between the client's Buf
    LOCAL and the server's Buf REMOTE; return its successful completion."""
    client.qp.post_send(
        ib.SendWR(
            wr_id=int(opcode),
            sg_list=[local.mr.sge(N)],
            opcode=opcode,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=remote.mr.addr,
            rkey=remote.mr.rkey,
        )
    )
    (wc,) = poll_until(client.cq, 1, timeout=TIMEOUT, check=True)
    return wc


def test_rdma_write_and_read(conn):
    client, server = conn
    wc = rdma(client, ib.WROpcode.RDMA_WRITE, client.src, server.dst)
    assert wc.opcode == ib.WCOpcode.RDMA_WRITE
    assert server.dst.data == bytes([0x5A]) * N
    # RDMA READ of the server's source buffer into the client's.
    ctypes.memset(server.src.raw, 0xC3, N)
    wc = rdma(client, ib.WROpcode.RDMA_READ, client.dst, server.src)
    assert wc.opcode == ib.WCOpcode.RDMA_READ and wc.byte_len == N
    assert client.dst.data == bytes([0xC3]) * N
    record("cm_rdma_write_read", "runs")


ONE = pytest.mark.parametrize("conn", [False], ids=["qp-recv"], indirect=True)


@ONE
def test_completion_channel_event(conn):
    client, server = conn
    server.cq.req_notify()
    client.qp.post_send(
        ib.SendWR(wr_id=3, sg_list=[client.src.mr.sge(64)], send_flags=ib.SendFlags.SIGNALED)
    )
    assert server.channel.get_cq_event() is server.cq
    server.cq.ack_events(1)
    (wc,) = poll_until(server.cq, 1, timeout=TIMEOUT, check=True)
    assert wc.byte_len == 64
    poll_until(client.cq, 1, timeout=TIMEOUT, check=True)


# ------------------------------------------------------- what iWARP refuses


def test_ud_qp(ctx):
    pd, cq = ctx.alloc_pd(), ctx.create_cq(16)
    attr = ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.UD)
    if SIW:
        with pytest.raises(ib.VerbsError) as ei:
            pd.create_qp(attr)
        record("ud_qp", kernels.refusal(ei.value))
        del ei
    else:
        pd.create_qp(attr).close()
        record("ud_qp", "runs")
    cq.close()
    pd.close()


@ONE
def test_atomic_fetch_add(conn):
    client, server = conn
    wr = ib.SendWR(
        wr_id=9,
        sg_list=[client.dst.mr.sge(8)],
        opcode=ib.WROpcode.ATOMIC_FETCH_AND_ADD,
        send_flags=ib.SendFlags.SIGNALED,
        remote_addr=server.src.mr.addr,
        rkey=server.src.mr.rkey,
        compare_add=1,
    )
    if SIW:
        with pytest.raises(ib.VerbsError) as ei:
            client.qp.post_send(wr)
        assert server.src.data == bytes([0x5A]) * N, "a refused atomic changed the target"
        record("atomic_fetch_add", kernels.refusal(ei.value))
        del ei
        return
    client.qp.post_send(wr)
    poll_until(client.cq, 1, timeout=TIMEOUT, check=True)
    assert client.dst.data[:8] == bytes([0x5A]) * 8  # the old value
    assert server.src.data[:8] == (int.from_bytes(bytes([0x5A]) * 8, "little") + 1).to_bytes(
        8, "little"
    )
    record("atomic_fetch_add", "runs")


def test_connect_rc_manual_transitions(ctx):
    """connect_rc's INIT -> RTR -> RTS without the CM: an iWARP QP is
    connected by the CM only (the step that fails is named); rxe's runs."""
    pd, cq = ctx.alloc_pd(), ctx.create_cq(16)
    qa = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    qb = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    gid_index = 0 if SIW else support.GID_INDEX
    remote = ib.local_qp_info(qb, ctx.query_port(1), ctx.query_gid(1, gid_index), port=1, psn=1)
    if SIW:
        with pytest.raises(ib.VerbsError) as ei:
            ib.connect_rc(qa, remote, port=1, sgid_index=0, access=ALL_ACCESS)
        answer = f"{kernels.refusal(ei.value)} at {ib.QPState(qa.state).name}"
        del ei
    else:
        ib.connect_rc(qa, remote, port=1, sgid_index=gid_index, access=ALL_ACCESS)
        assert qa.state == ib.QPState.RTS
        answer = "runs"
    record("connect_rc_manual", answer)
    for h in (qa, qb, cq, pd):
        h.close()
