"""The RDMA connection manager between the nodes: a CMListener on node 0,
a CMID on node 1 that resolves node 0's address from its own source
address, private data both ways, a SEND each way checked in the
receiver's memory; and a Python client on node 1 against rdma-core's C
``rdma_server`` on node 0.  Each side checks that the connection really
crossed: its CMID's device is its own node's, and the peer address the
CM reports is the other node's."""

import contextlib
import ctypes
import shutil
import subprocess
import time

import pytest

import ibverbs as ib
from support.peers import poll_until
from support.timeouts import scaled

pytestmark = [pytest.mark.twonode, pytest.mark.separate_vms]

MSG = 16
TIMEOUT = scaled(60)


def _buffer(pd, n):
    buf = ctypes.create_string_buffer(n)
    mr = pd.reg_mr(ctypes.addressof(buf), n, ib.AccessFlags.LOCAL_WRITE, owner=buf)
    return buf, mr


def _qp(cmid, pd, cq):
    return cmid.create_qp(pd, ib.QPInitAttr(send_cq=cq, recv_cq=cq, max_send_wr=2, max_recv_wr=2))


def _agree_port(chan, me, base):
    """Node 0 picks an rdma_cm port (BASE + 0..99) and tells node 1."""
    if me == 0:
        port = base + int(time.time()) % 100
        chan.send("port", port)
        return port
    return chan.recv("port")


def _resolve(node, port):
    """CMID.resolve of node 0's address from this node's own address (the
    source must be bound: without it the route lookup on a shared kernel
    takes the local route, i.e. node 0's device talking to itself)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            return ib.CMID.resolve(node.addrs[0], port, source=node.addr)
        except ib.VerbsError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


@contextlib.contextmanager
def _endpoint(cmid, node):
    """On cmid's context (this node's device): a PD, a CQ, a buffer of two
    messages and cmid's QP, one receive posted into the buffer's second
    half; yields (qp, cq, mr, buf)."""
    ctx = cmid.context
    assert ctx.name == node.device
    with ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
        buf, mr = _buffer(pd, 2 * MSG)
        with mr, _qp(cmid, pd, cq) as qp:
            qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr.sge(MSG, MSG)]))
            yield qp, cq, mr, buf


def _exchange(cmid, qp, cq, mr, buf, payload):
    """One SEND each way; returns what arrived in this side's memory."""
    ctypes.memmove(buf, payload, MSG)
    qp.post_send(ib.SendWR(wr_id=2, sg_list=[mr.sge(MSG)], send_flags=ib.SendFlags.SIGNALED))
    wcs = poll_until(cq, 2, timeout=TIMEOUT, check=True)
    assert sorted(w.wr_id for w in wcs) == [1, 2]
    return buf.raw[MSG:]


def test_cm_listener_and_cmid_across_nodes(chan, me, node):
    assert ib.has_rdmacm(), "librdmacm.so.1 did not load (tools/install-deps installs it)"
    port = _agree_port(chan, me, 7600)
    if me == 0:
        with ib.CMListener(port, node.addr) as listener:
            chan.send("listening")
            with listener.get_request(timeout=TIMEOUT) as cmid:
                assert cmid.private_data[:6] == b"node 1"
                assert cmid.host == node.addrs[1]  # the peer, not ourselves
                with _endpoint(cmid, node) as (qp, cq, mr, buf):
                    cmid.accept(b"node 0 accepts")
                    chan.barrier("posted")
                    got = _exchange(cmid, qp, cq, mr, buf, b"from node 0....!")
                    assert got == b"from node 1....!"
                    chan.barrier("done")
                    ev = cmid.get_event(timeout=TIMEOUT)
                    assert ev.event == ib.CMEventType.DISCONNECTED
    else:
        chan.recv("listening")
        with _resolve(node, port) as cmid:
            assert cmid.source == node.addr and cmid.host == node.addrs[0]
            with _endpoint(cmid, node) as (qp, cq, mr, buf):
                reply = cmid.connect(b"node 1 connects", timeout=TIMEOUT)
                assert reply[:14] == b"node 0 accepts"
                assert cmid.connected and qp.state == ib.QPState.RTS
                chan.barrier("posted")
                got = _exchange(cmid, qp, cq, mr, buf, b"from node 1....!")
                assert got == b"from node 0....!"
                chan.barrier("done")
                cmid.disconnect()


def test_cmid_against_c_rdma_server_on_the_peer(chan, me, node):
    port = _agree_port(chan, me, 7700)
    if me == 0:
        exe = shutil.which("rdma_server")
        assert exe, "rdma_server not found (package rdmacm-utils, tools/install-deps)"
        srv = subprocess.Popen(
            [exe, "-s", node.addr, "-p", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            chan.send("started")
            out, _ = srv.communicate(timeout=TIMEOUT)
        finally:
            if srv.poll() is None:
                srv.kill()
                srv.wait()
        assert srv.returncode == 0, out
        chan.send("server exit", srv.returncode)
    else:
        chan.recv("started")
        deadline = time.monotonic() + TIMEOUT
        while True:  # rdma_server may not be listening yet: REJECTED until it is
            cmid = _resolve(node, port)
            ctx = cmid.context
            pd, cq = ctx.alloc_pd(), ctx.create_cq(8)
            buf, mr = _buffer(pd, 2 * MSG)
            qp = _qp(cmid, pd, cq)
            qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr.sge(MSG, MSG)]))
            try:
                cmid.connect(timeout=TIMEOUT)
                break
            except ib.VerbsError:
                for h in (qp, mr, cq, pd, cmid):
                    h.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        try:
            assert cmid.host == node.addrs[0] and ctx.name == node.device
            # rdma_server's protocol: it receives 16 bytes, then sends 16 back.
            _exchange(cmid, qp, cq, mr, buf, b"python, node 1.!")
            cmid.disconnect()
        finally:
            for h in (qp, mr, cq, pd, cmid):
                h.close()
        assert chan.recv("server exit", timeout=TIMEOUT) == 0


async def _aio_exchange(qp, cq, mr, buf, payload):
    """One SEND each way, completions awaited with aio.poll."""
    import asyncio

    from ibverbs import aio

    ctypes.memmove(buf, payload, MSG)
    qp.post_send(ib.SendWR(wr_id=2, sg_list=[mr.sge(MSG)], send_flags=ib.SendFlags.SIGNALED))
    seen = set()
    while len(seen) < 2:
        for wc in await asyncio.wait_for(aio.poll(cq), TIMEOUT):
            wc.raise_for_status()
            seen.add(wc.wr_id)
    return buf.raw[MSG:]


def test_asyncio_client_on_node_1_server_on_node_0(chan, me, node):
    """Both sides in an asyncio loop (ibverbs.aio): get_request and accept
    on node 0, connect on node 1, completions and the hang-up awaited."""
    import asyncio

    from ibverbs import aio

    if me == 0:
        port = 7800 + int(time.time()) % 100
        chan.send("aio port", port)
    else:
        port = chan.recv("aio port")

    def endpoint(cmid):
        ctx = cmid.context
        assert ctx.name == node.device
        cc = ctx.create_comp_channel()
        pd = ctx.alloc_pd()
        cq = ctx.create_cq(8, channel=cc)
        buf, mr = _buffer(pd, 2 * MSG)
        qp = _qp(cmid, pd, cq)
        qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr.sge(MSG, MSG)]))
        return (qp, cq, mr, buf), (qp, mr, cq, cc, pd, cmid)

    async def serve(listener):
        cmid = await aio.get_request(listener, timeout=TIMEOUT)
        assert cmid.private_data.startswith(b"aio node 1 connects")
        assert cmid.host == node.addrs[1]
        io, handles = endpoint(cmid)
        await aio.accept(cmid, b"aio node 0 accepts", timeout=TIMEOUT)
        got = await _aio_exchange(*io, b"aio from node 0!")
        chan.barrier("aio done")
        ev = await aio.get_event(cmid, timeout=TIMEOUT)
        for h in handles:
            h.close()
        return got, ev.event

    async def client():
        loop = asyncio.get_running_loop()
        cmid = await loop.run_in_executor(None, _resolve, node, port)
        assert cmid.host == node.addrs[0] and cmid.source == node.addr
        io, handles = endpoint(cmid)
        reply = await aio.connect(cmid, b"aio node 1 connects", timeout=TIMEOUT)
        assert reply.startswith(b"aio node 0 accepts")
        got = await _aio_exchange(*io, b"aio from node 1!")
        chan.barrier("aio done")
        cmid.disconnect()
        for h in handles:
            h.close()
        return got

    if me == 0:
        with ib.CMListener(port, node.addr) as listener:
            chan.send("aio listening")
            got, event = asyncio.run(serve(listener))
        assert got == b"aio from node 1!"
        assert event == ib.CMEventType.DISCONNECTED
    else:
        chan.recv("aio listening")
        assert asyncio.run(client()) == b"aio from node 0!"
    assert aio._debug_watches() == []
