"""ibverbs.aio's connection manager awaitables on a real device (rxe0 in
the Soft-RoCE guest): one event loop serving N clients at once, each
exchanging data over its connected QP; the errors of the blocking calls;
cancellation that leaves no fd registered and nothing to leak; an idle
wait that costs no CPU.  Addresses as in test_cm_device.py (IBVERBS_TEST_CM_*)."""

import asyncio
import ctypes
import errno
import os
import time

import pytest

import ibverbs as ib
from ibverbs import aio
from ibverbs.enums import CMEventType
from support import cm_port
from support.process import cm_counts
from support.timeouts import scaled

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("need_cm")]

SERVER = os.environ.get("IBVERBS_TEST_CM_SERVER", "198.18.0.1")
SOURCE = os.environ.get("IBVERBS_TEST_CM_SOURCE") or None
TIMEOUT = scaled(60.0)  # the guest is emulated: be generous
MSG = 32
N = 4


def new_loop(kind):
    if kind == "uvloop":
        uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed")
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def run(kind, coro):
    loop = new_loop(kind)
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def assert_counts_back(device, before):
    deadline = time.monotonic() + TIMEOUT
    while cm_counts(device) != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cm_counts(device) == before


class Conn:
    """A CMID's PD, CQ (on a completion channel, for aio.poll), QP and a
    2*MSG buffer: [0, MSG) is sent, [MSG, 2*MSG) receives (posted now)."""

    def __init__(self, cmid):
        self.cmid = cmid
        ctx = cmid.context
        self.pd = ctx.alloc_pd()
        self.chan = ctx.create_comp_channel()
        self.cq = ctx.create_cq(8, channel=self.chan)
        self.buf = ctypes.create_string_buffer(2 * MSG)
        self.mr = self.pd.reg_mr(
            ctypes.addressof(self.buf), 2 * MSG, ib.AccessFlags.LOCAL_WRITE, owner=self.buf
        )
        self.qp = cmid.create_qp(
            self.pd,
            ib.QPInitAttr(send_cq=self.cq, recv_cq=self.cq, max_send_wr=2, max_recv_wr=2),
        )
        self.qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[self.mr.sge(MSG, MSG)]))
        self.seen = set()

    async def completion(self, wr_id):
        """Await the completion wr_id (1: the receive, 2: the send)."""
        while wr_id not in self.seen:
            for wc in await asyncio.wait_for(aio.poll(self.cq), TIMEOUT):
                wc.raise_for_status()
                self.seen.add(wc.wr_id)

    async def send(self, data):
        assert len(data) == MSG
        ctypes.memmove(self.buf, data, MSG)
        self.qp.post_send(
            ib.SendWR(wr_id=2, sg_list=[self.mr.sge(MSG)], send_flags=ib.SendFlags.SIGNALED)
        )
        await self.completion(2)

    async def received(self):
        await self.completion(1)
        return self.buf.raw[MSG:]

    def close(self):
        for h in (self.qp, self.mr, self.cq, self.chan, self.pd, self.cmid):
            h.close()


def payload(i):
    return f"client {i} says hello over rdma".encode().ljust(MSG, b".")


# --------------------------------------------------------------------------
# N clients, one loop
# --------------------------------------------------------------------------


async def serve_and_connect(port):
    """A server task accepting N connections and N client tasks, at once
    in this loop; returns what each side saw."""
    served, clients = {}, {}

    async def handle(cmid):
        conn = Conn(cmid)
        i = cmid.private_data[len(b"client ")] - ord("0")
        await aio.accept(cmid, f"welcome {i}".encode(), timeout=TIMEOUT)
        assert cmid.connected and conn.qp.state == ib.QPState.RTS
        got = await conn.received()
        await conn.send(got.upper())
        ev = await aio.get_event(cmid, timeout=TIMEOUT)
        served[i] = (got, ev.event)
        assert not cmid.connected
        conn.close()

    async def server(listener):
        handlers = []
        for _ in range(N):
            cmid = await aio.get_request(listener, timeout=TIMEOUT)
            handlers.append(asyncio.ensure_future(handle(cmid)))
        await asyncio.gather(*handlers)

    async def client(i):
        cmid = await aio.resolve(SERVER, port, SOURCE, timeout_ms=10000)
        conn = Conn(cmid)
        reply = await aio.connect(cmid, f"client {i}".encode(), timeout=TIMEOUT)
        assert cmid.connected and conn.qp.state == ib.QPState.RTS
        await conn.send(payload(i))
        clients[i] = (reply, await conn.received())
        cmid.disconnect()
        conn.close()

    with ib.CMListener(port, SERVER) as listener:
        srv = asyncio.ensure_future(server(listener))
        await asyncio.sleep(0)  # the server waits on the listener first
        await asyncio.wait_for(asyncio.gather(srv, *(client(i) for i in range(N))), 4 * TIMEOUT)
    return served, clients


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_server_accepts_n_clients_concurrently(loop_kind, device_name):
    before = cm_counts(device_name)
    t0 = time.monotonic()
    served, clients = run(loop_kind, serve_and_connect(cm_port()))
    print(f"\n{loop_kind}: {N} connections accepted and served in {time.monotonic() - t0:.2f} s")
    assert sorted(served) == sorted(clients) == list(range(N))
    for i in range(N):
        got, event = served[i]
        reply, back = clients[i]
        assert got == payload(i)  # the server's memory
        assert back == payload(i).upper()  # the client's memory
        assert reply.startswith(f"welcome {i}".encode())
        assert event == CMEventType.DISCONNECTED
    assert aio._debug_watches() == []
    assert_counts_back(device_name, before)


# --------------------------------------------------------------------------
# Errors: the blocking calls' own
# --------------------------------------------------------------------------


def connect_error(cmid_connect):
    try:
        cmid_connect()
    except (ib.VerbsError, TimeoutError) as e:
        return e
    raise AssertionError("connect to a port nobody listens on succeeded")


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_connect_to_nobody_raises_what_blocking_connect_raises(loop_kind):
    port = cm_port()
    blocking = Conn(ib.CMID.resolve(SERVER, port, SOURCE))
    eb = connect_error(lambda: blocking.cmid.connect(timeout=scaled(30)))
    blocking.close()
    awaited = Conn(ib.CMID.resolve(SERVER, port, SOURCE))
    t0 = time.monotonic()
    ea = connect_error(lambda: run(loop_kind, aio.connect(awaited.cmid, timeout=scaled(30))))
    assert time.monotonic() - t0 < 35
    print(f"\nblocking: {eb!r}\n{loop_kind}: {ea!r}")
    assert type(ea) is type(eb), (ea, eb)
    if isinstance(eb, ib.VerbsError):
        assert (ea.errno, ea.operation, ea.event) == (eb.errno, eb.operation, eb.event)
        assert ea.event in (CMEventType.REJECTED, CMEventType.UNREACHABLE)
        # the attempt is over: nothing left to finish, a new one may start
        assert "connecting" not in repr(awaited.cmid)
        with pytest.raises(ValueError):
            awaited.cmid.poll_established()
    assert aio._debug_watches() == []
    awaited.close()


def test_reject_reaches_the_awaiting_client():
    port = cm_port()

    async def main():
        with ib.CMListener(port, SERVER) as listener:

            async def server():
                cmid = await aio.get_request(listener, timeout=TIMEOUT)
                assert cmid.private_data.startswith(b"let me in")
                cmid.reject(b"go away")
                cmid.close()

            srv = asyncio.ensure_future(server())
            conn = Conn(await aio.resolve(SERVER, port, SOURCE))
            try:
                with pytest.raises(ib.VerbsError) as ei:
                    await aio.connect(conn.cmid, b"let me in", timeout=TIMEOUT)
                await srv
            finally:
                conn.close()
        return ei.value

    e = asyncio.run(main())
    assert e.errno == errno.ECONNREFUSED and e.operation == "rdma_connect"
    assert e.event == CMEventType.REJECTED and e.private_data.startswith(b"go away")


def test_get_request_timeout_is_timeout_error():
    async def main(listener):
        t0 = time.monotonic()
        with pytest.raises(TimeoutError) as ei:
            await aio.get_request(listener, timeout=0.3)
        return time.monotonic() - t0, str(ei.value)

    with ib.CMListener(cm_port(), SERVER) as listener:
        took, text = asyncio.run(main(listener))
        with pytest.raises(TimeoutError) as ei:
            listener.get_request(timeout=0.3)
    assert 0.3 <= took < 10
    assert text == str(ei.value)
    assert aio._debug_watches() == []


# --------------------------------------------------------------------------
# Cancellation and idle CPU
# --------------------------------------------------------------------------


def test_cancelled_get_request_and_connect_leave_nothing(device_name):
    before = cm_counts(device_name)
    port = cm_port()

    async def cancel(task):
        await asyncio.sleep(0.5)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    async def main():
        registered = asyncio.get_running_loop()._selector.get_map()
        with ib.CMListener(port, SERVER) as listener:
            t = asyncio.ensure_future(aio.get_request(listener))
            await asyncio.sleep(0.2)
            assert listener.fd in registered
            await cancel(t)
            assert listener.fd not in registered and aio._debug_watches() == []
            # A connect the server never answers, cancelled while it waits.
            conn = Conn(await aio.resolve(SERVER, port, SOURCE))
            t = asyncio.ensure_future(aio.connect(conn.cmid, b"hello", timeout=TIMEOUT))
            await asyncio.sleep(0.2)
            await cancel(t)
            assert conn.cmid.fd not in registered and aio._debug_watches() == []
            assert "connecting" in repr(conn.cmid)
            with pytest.raises(ib.VerbsError) as ei:
                conn.cmid.start_connect()
            assert ei.value.errno == errno.EALREADY
            # The cancelled get_request lost nothing: the request is there.
            req = await aio.get_request(listener, timeout=TIMEOUT)
            assert req.private_data.startswith(b"hello")
            req.close()
            conn.close()
            assert conn.cmid.closed

    asyncio.run(main())
    assert aio._debug_watches() == []
    assert_counts_back(device_name, before)


def test_idle_wait_uses_no_cpu():
    async def main(listener):
        t = asyncio.ensure_future(aio.get_request(listener))
        await asyncio.sleep(0.2)
        cpu0, wall0 = time.process_time(), time.monotonic()
        await asyncio.sleep(2.0)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        assert not t.done()
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        return cpu, wall

    with ib.CMListener(cm_port(), SERVER) as listener:
        cpu, wall = asyncio.run(main(listener))
    print(
        f"\nidle get_request: {cpu * 1000:.1f} ms CPU in {wall:.2f} s "
        f"({100 * cpu / wall:.2f}% of one core)"
    )
    assert cpu / wall < 0.05


# --------------------------------------------------------------------------
# The guide's program
# --------------------------------------------------------------------------


def test_readme_asyncio_cm_program(capsys):
    """docs/guides/asyncio.md's "The connection manager, awaited" program
    (once the README's), its main() in this process (a new interpreter
    costs seconds in the guest); the guides' device test leaves it to this
    one (support.guides.ELSEWHERE)."""
    from support import guides

    (block,) = guides.find("asyncio.md:aio-cm")
    ns = {"__name__": "guide_aio_cm"}
    exec(compile(block.code, block.where, "exec"), ns)
    ns["HOST"], ns["PORT"] = SERVER, cm_port()
    asyncio.run(asyncio.wait_for(ns["main"](), 4 * TIMEOUT))
    out = capsys.readouterr().out
    guides.check_output(block, 0, out)
    assert "4 clients connected, served and disconnected" in out
    assert aio._debug_watches() == []
