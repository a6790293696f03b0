"""The RDMA connection manager (CMID, CMListener, CMEvent) on a real device,
against rdma-core's own C programs (rdma_server, rdma_client) and itself.

The addresses come from the environment so that the same tests run across
two nodes: IBVERBS_TEST_CM_SERVER is the address the passive side binds
and the active side resolves (default 198.18.0.1, rxe0's in the guest),
IBVERBS_TEST_CM_SOURCE the active side's source address (default none:
on a single device the route is the loopback through rxe0).
"""

import errno
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import ibverbs as ib
from ibverbs.enums import CMEventType
from support import cm_port
from support.process import cm_counts
from support.timeouts import scaled

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("need_cm")]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SERVER = os.environ.get("IBVERBS_TEST_CM_SERVER", "198.18.0.1")
SOURCE = os.environ.get("IBVERBS_TEST_CM_SOURCE") or None
TIMEOUT = scaled(60.0)  # the guest is emulated: be generous
MSG = 16


class Buf:
    """A registered ctypes buffer."""

    def __init__(self, pd, data=b""):
        import ctypes

        self.raw = (
            ctypes.create_string_buffer(data, MSG) if data else ctypes.create_string_buffer(MSG)
        )
        self.mr = pd.reg_mr(
            ctypes.addressof(self.raw), MSG, ib.AccessFlags.LOCAL_WRITE, owner=self.raw
        )

    def bytes(self):
        return self.raw.raw


class Conn:
    """A CMID with its PD, CQ, QP and buffers; close() in the right order."""

    def __init__(self, cmid, recv=True):
        self.cmid = cmid
        ctx = cmid.context
        self.pd = ctx.alloc_pd()
        self.cq = ctx.create_cq(8)
        self.rbuf = Buf(self.pd)
        self.sbuf = Buf(self.pd, b"python cm hello!")
        self.qp = cmid.create_qp(
            self.pd,
            ib.QPInitAttr(
                send_cq=self.cq,
                recv_cq=self.cq,
                max_send_wr=2,
                max_recv_wr=2,
                max_inline_data=MSG,
                sq_sig_all=True,
            ),
        )
        if recv:
            self.qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[self.rbuf.mr.sge()]))

    def send(self):
        self.qp.post_send(ib.SendWR(wr_id=2, sg_list=[self.sbuf.mr.sge()]))

    def wait(self, timeout=TIMEOUT):
        deadline = time.monotonic() + scaled(timeout)
        while time.monotonic() < deadline:
            wcs = self.cq.poll()
            if wcs:
                return wcs[0]
        raise TimeoutError("no completion")

    def close(self):
        self.qp.close()
        self.rbuf.mr.close()
        self.sbuf.mr.close()
        self.cq.close()
        self.pd.close()
        self.cmid.close()


def connect_retrying(port, private_data=b"", timeout=TIMEOUT):
    """A connected Conn to SERVER:port, retrying while nobody listens yet
    (a C server that is still starting rejects)."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        conn = Conn(ib.CMID.resolve(SERVER, port, SOURCE))
        try:
            conn.cmid.connect(private_data, timeout=timeout)
            return conn
        except ib.VerbsError as e:
            conn.close()
            if e.errno != errno.ECONNREFUSED or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def tool(name):
    """The path of rdma-core's C program NAME, or a skip. Call it from a
    fixture only, never from a test's body: a skip raised there after the
    test opened a listener (or started a thread waiting on one) would leave
    it open and busy for the tests that follow (tests/host/test_cm_skips.py
    checks)."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} (rdma-core's rdmacm-utils) is not installed")
    return path


@pytest.fixture
def rdma_server():
    return tool("rdma_server")


@pytest.fixture
def rdma_client():
    return tool("rdma_client")


def run_serving(listener, handler, timeout=TIMEOUT):
    """Run handler(cmid) on the next request in a thread; returns a join()
    that re-raises what the thread raised."""
    box = {}

    def body():
        try:
            box["result"] = handler(listener.get_request(timeout=timeout))
        except BaseException as e:  # noqa: BLE001 - reported by join()
            box["error"] = e

    t = threading.Thread(target=body)
    t.start()

    def join():
        t.join(scaled(timeout + 30))
        assert not t.is_alive(), "server thread hung"
        if "error" in box:
            raise box["error"]
        return box.get("result")

    return join


# --------------------------------------------------------------------------
# Interoperability with rdma-core's C programs
# --------------------------------------------------------------------------


def test_python_client_against_c_rdma_server(rdma_server):
    port = cm_port()
    srv = subprocess.Popen(
        [rdma_server, "-s", SERVER, "-p", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        conn = connect_retrying(port)
        assert conn.cmid.connected
        assert conn.qp.state == ib.QPState.RTS
        conn.send()
        wcs = [conn.wait(), conn.wait()]
        for wc in wcs:
            wc.raise_for_status()
        assert sorted(wc.wr_id for wc in wcs) == [1, 2]
        assert [wc.byte_len for wc in wcs if wc.wr_id == 1] == [MSG]
        conn.cmid.disconnect()
        assert not conn.cmid.connected
        conn.close()
        out, _ = srv.communicate(timeout=TIMEOUT)
    finally:
        stop(srv)
    assert srv.returncode == 0, out


def test_c_rdma_client_against_python_listener(rdma_client):
    port = cm_port()
    got = {}
    with ib.CMListener(port, SERVER) as listener:
        assert listener.port == port

        def serve(cmid):
            conn = Conn(cmid)
            assert cmid.private_data is not None
            cmid.accept(timeout=TIMEOUT)
            assert cmid.connected
            wc = conn.wait()
            wc.raise_for_status()
            got["len"] = wc.byte_len
            conn.send()
            conn.wait().raise_for_status()
            # the client disconnects once it has our message
            ev = cmid.get_event(timeout=TIMEOUT)
            got["event"] = ev.event
            conn.close()

        join = run_serving(listener, serve)
        cli = subprocess.run(
            [rdma_client, "-s", SERVER, "-p", str(port)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        join()
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert got == {"len": MSG, "event": CMEventType.DISCONNECTED}


def stop(proc):
    """Kill proc if it still runs, and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def wait_line(proc, needle, timeout=TIMEOUT):
    deadline = time.monotonic() + scaled(timeout)
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            return
    raise AssertionError(f"no {needle!r} from the server: {''.join(lines)}")


def test_examples_python_to_python():
    port = cm_port()
    srv = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "cm_server.py"), "-s", SERVER, "-p", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_line(srv, "listening")
        args = [sys.executable, str(EXAMPLES / "cm_client.py"), "-s", SERVER, "-p", str(port)] + (
            ["-b", SOURCE] if SOURCE else []
        )
        cli = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
        out, _ = srv.communicate(timeout=TIMEOUT)
    finally:
        stop(srv)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert srv.returncode == 0, out
    assert "b'ibverbs cm ping!'" in out
    assert "client: done" in cli.stdout


# --------------------------------------------------------------------------
# Python to Python, in one process
# --------------------------------------------------------------------------


def test_private_data_both_ways_and_events():
    port = cm_port()
    with ib.CMListener(port, SERVER) as listener:
        seen = {}

        def serve(cmid):
            seen["request"] = cmid.private_data
            seen["repr"] = repr(cmid)
            conn = Conn(cmid)
            cmid.accept(b"welcome", timeout=TIMEOUT)
            ev = cmid.get_event(timeout=TIMEOUT)
            seen["event"] = ev.event
            assert not cmid.connected
            conn.close()
            assert cmid.closed

        join = run_serving(listener, serve)
        conn = Conn(ib.CMID.resolve(SERVER, port, SOURCE))
        reply = conn.cmid.connect(b"hello")
        assert reply.startswith(b"welcome")
        assert "connected" in repr(conn.cmid)
        conn.cmid.disconnect()
        conn.cmid.disconnect()  # a no-op now
        join()
        conn.close()
    assert seen["request"].startswith(b"hello")
    assert "request" in seen["repr"]
    assert seen["event"] == CMEventType.DISCONNECTED


def test_listener_on_any_address_and_event_fd():
    import selectors

    def serve(cmid):
        conn = Conn(cmid)
        cmid.accept(timeout=TIMEOUT)
        return conn

    with ib.CMListener(0) as listener:
        assert listener.host is None and listener.port > 0
        join = run_serving(listener, serve)
        conn = Conn(ib.CMID.resolve(SERVER, listener.port, SOURCE))
        conn.cmid.connect(timeout=TIMEOUT)
        server = join()
    # the accepted CMID outlives its listener; when it disconnects, the
    # client's event fd turns readable
    server.cmid.disconnect()
    with selectors.DefaultSelector() as sel:
        sel.register(conn.cmid.fd, selectors.EVENT_READ)
        assert sel.select(TIMEOUT), "fd never readable"
    ev = conn.cmid.get_event(timeout=0)
    assert ev.event == CMEventType.DISCONNECTED
    assert ev.cmid is None and isinstance(ev.private_data, bytes)
    assert not conn.cmid.connected
    conn.close()
    server.close()


def test_get_request_timeout():
    with ib.CMListener(cm_port(), SERVER) as listener:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            listener.get_request(timeout=0.3)
        assert time.monotonic() - t0 < 10
        with pytest.raises(ValueError):
            listener.get_request(timeout=-1)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_connect_to_nobody_fails_within_the_timeout():
    conn = Conn(ib.CMID.resolve(SERVER, cm_port(), SOURCE))
    t0 = time.monotonic()
    with pytest.raises((ib.VerbsError, TimeoutError)) as ei:
        conn.cmid.connect(timeout=scaled(30))
    elapsed = time.monotonic() - t0
    conn.close()
    assert elapsed < 35
    e = ei.value
    if isinstance(e, ib.VerbsError):
        assert e.operation == "rdma_connect"
        assert e.event in (CMEventType.REJECTED, CMEventType.UNREACHABLE)


def test_reject_carries_private_data():
    port = cm_port()
    with ib.CMListener(port, SERVER) as listener:

        def serve(cmid):
            assert cmid.private_data.startswith(b"let me in")
            cmid.reject(b"go away")
            with pytest.raises(ValueError):
                cmid.accept()
            cmid.close()

        join = run_serving(listener, serve)
        conn = Conn(ib.CMID.resolve(SERVER, port, SOURCE))
        with pytest.raises(ib.VerbsError) as ei:
            conn.cmid.connect(b"let me in", timeout=TIMEOUT)
        join()
        conn.close()
    e = ei.value
    assert e.errno == errno.ECONNREFUSED
    assert e.event == CMEventType.REJECTED
    assert e.private_data.startswith(b"go away")


PEER = textwrap.dedent("""
    import sys, time, ibverbs as ib
    limit = float(sys.argv[3])
    with ib.CMListener(int(sys.argv[2]), sys.argv[1]) as l:
        print("listening", flush=True)
        c = l.get_request(timeout=limit)
        pd = c.context.alloc_pd(); cq = c.context.create_cq(4)
        qp = c.create_qp(pd, ib.QPInitAttr(send_cq=cq, recv_cq=cq))
        c.accept(timeout=limit)
        print("accepted", flush=True)
        time.sleep(600)
""")


def test_peer_killed_is_disconnected_and_wrs_flush():
    port = cm_port()
    peer = subprocess.Popen(
        [sys.executable, "-c", PEER, SERVER, str(port), str(TIMEOUT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_line(peer, "listening")
        conn = Conn(ib.CMID.resolve(SERVER, port, SOURCE))
        conn.cmid.connect(timeout=TIMEOUT)
        wait_line(peer, "accepted")
        peer.send_signal(signal.SIGKILL)
        peer.wait()
        ev = conn.cmid.get_event(timeout=TIMEOUT)
        assert ev.event == CMEventType.DISCONNECTED
        wc = conn.wait()
        assert wc.wr_id == 1 and wc.status == ib.WCStatus.WR_FLUSH_ERR
        conn.close()
    finally:
        stop(peer)


# --------------------------------------------------------------------------
# Ownership
# --------------------------------------------------------------------------


def test_ownership_and_state_errors(device_name):
    cmid = ib.CMID.resolve(SERVER, cm_port(), SOURCE, timeout_ms=5000)
    ctx = cmid.context
    assert cmid.source == SOURCE and cmid.host == SERVER
    assert isinstance(ctx, ib.Context)
    with pytest.raises(ib.VerbsError) as ei:
        ctx.close()
    assert ei.value.errno == errno.EBUSY and "CMID" in str(ei.value)
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(4)
    with pytest.raises(ValueError):
        cmid.connect()  # no QP yet
    other = ib.Context(device_name)
    opd = other.alloc_pd()
    with pytest.raises(ValueError):
        cmid.create_qp(opd, ib.QPInitAttr(send_cq=cq))
    with pytest.raises(ValueError):
        cmid.create_qp(pd, ib.QPInitAttr(send_cq=cq, qp_type=ib.QPType.UD))
    qp = cmid.create_qp(pd, ib.QPInitAttr(send_cq=cq))
    assert cmid.qp is qp and qp.qp_type == ib.QPType.RC
    with pytest.raises(ib.VerbsError) as ei:
        cmid.create_qp(pd, ib.QPInitAttr(send_cq=cq))
    assert ei.value.errno == errno.EBUSY
    for closer in (cmid.close, pd.close):
        with pytest.raises(ib.VerbsError) as ei:
            closer()
        assert ei.value.errno == errno.EBUSY
    with pytest.raises(ValueError):
        cmid.connect(b"x" * 57)
    with pytest.raises(ValueError):
        cmid.connect(retry_count=256)
    qp.close()
    with pytest.raises(ib.VerbsError) as ei:
        cmid.close()  # the PD and CQ are still open
    assert ei.value.errno == errno.EBUSY and "PD" in str(ei.value)
    cq.close()
    pd.close()
    cmid.close()
    cmid.close()
    assert cmid.closed and ctx.closed and "closed" in repr(cmid)
    with pytest.raises(ib.VerbsError) as ei:
        cmid.context
    assert ei.value.errno == errno.EBADF
    opd.close()
    other.close()


def test_resolve_errors():
    with pytest.raises(ib.VerbsError) as ei:
        ib.CMID.resolve("no-such-host.invalid", 7471)
    assert ei.value.operation == "rdma_getaddrinfo"


# --------------------------------------------------------------------------
# The guide's example
# --------------------------------------------------------------------------


def test_readme_example(device_name):
    """The server and client of docs/guides/connection-manager.md (once the
    README's), each a program of its own, on this node's device and address
    (support.guides runs them; the guides' device test leaves them to this
    one: support.guides.ELSEWHERE)."""
    from support import guides

    server, client = sorted(
        guides.find("connection-manager.md:cm"), key=lambda b: b.options["role"] != "server"
    )
    assert "CMListener(7471" in server.code and "CMID.resolve" in client.code
    (srv_rc, srv_out), (cli_rc, cli_out) = guides.run_pair(server, client, device_name, SERVER)
    guides.check_output(server, srv_rc, srv_out, " (server)")
    guides.check_output(client, cli_rc, cli_out, " (client)")
    assert "b'hello over rdma!'" in cli_out


# --------------------------------------------------------------------------
# The garbage collector's path
# --------------------------------------------------------------------------


def test_dropped_connections_are_destroyed_by_the_gc(device_name):
    import gc

    gc.collect()
    before = cm_counts(device_name)
    port = cm_port()
    with ib.CMListener(port, SERVER) as listener:

        def serve(cmid):
            conn = Conn(cmid)
            cmid.accept(timeout=TIMEOUT)
            del conn  # connected, dropped: the GC closes it

        join = run_serving(listener, serve)
        conn = Conn(ib.CMID.resolve(SERVER, port, SOURCE))
        conn.cmid.connect(timeout=TIMEOUT)
        join()
        del conn  # a connected CMID, its QP, CQ, PD, MRs
        gc.collect()
    gc.collect()
    deadline = time.monotonic() + TIMEOUT
    while cm_counts(device_name) != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cm_counts(device_name) == before
