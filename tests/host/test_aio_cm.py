"""ibverbs.aio's connection manager awaitables against stand-ins whose
event channel is a pipe (no device): waiting on the fd, timeouts,
cancellation and fd registration, idle CPU, the default loop and uvloop.
tests/device/test_aio_cm_device.py runs the real thing on rxe0."""

import asyncio
import errno
import os
import time

import pytest

from ibverbs import VerbsError, aio


class FakeCMID:
    """A CMID whose events are bytes written into a pipe: b"E" establishes
    (with the peer's private data), b"R" is a reject, b"Q" a request (for
    a listener), b"D" a disconnect."""

    def __init__(self):
        self.rfd, self.wfd = os.pipe()
        self.host, self.port = "198.18.0.9", 4791
        self.started = []
        self.polls = 0

    @property
    def fd(self):
        return self.rfd

    def event(self, b):
        os.write(self.wfd, b)

    def _next(self):
        self.polls += 1
        try:
            b = os.read(self.rfd, 1)
        except BlockingIOError:
            return None
        assert b, "a blocking read on a non-blocking fd expected"
        return b

    def start_connect(self, private_data=b"", **kw):
        self.started.append(("connect", private_data, kw))

    def start_accept(self, private_data=b"", **kw):
        self.started.append(("accept", private_data, kw))

    def poll_established(self):
        b = self._next()
        if b == b"R":
            raise VerbsError(errno.ECONNREFUSED, "rejected", "rdma_connect")
        return None if b is None else b"peer data"

    def poll_request(self):
        b = self._next()
        return None if b is None else ("request", b)

    def poll_event(self):
        return self._next()

    def close(self):
        os.close(self.rfd)
        os.close(self.wfd)


@pytest.fixture
def cmid():
    c = FakeCMID()
    yield c
    c.close()


def later(delay, fn, *args):
    asyncio.get_running_loop().call_later(delay, fn, *args)


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_connect_waits_for_the_fd(cmid, loop_kind):
    if loop_kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()

    async def main():
        later(0.3, cmid.event, b"E")
        return await aio.connect(cmid, b"hi", retry_count=3, timeout=10)

    try:
        t0 = time.monotonic()
        assert loop.run_until_complete(main()) == b"peer data"
        assert time.monotonic() - t0 >= 0.25
    finally:
        loop.close()
    assert cmid.started == [
        (
            "connect",
            b"hi",
            dict(responder_resources=1, initiator_depth=1, retry_count=3, rnr_retry_count=7),
        )
    ]
    # one try before the wait, one after the fd turned readable: no spinning
    assert cmid.polls == 2
    assert not os.get_blocking(cmid.fd)
    assert aio._debug_watches() == []


def test_accept_get_request_get_event(cmid):
    async def main():
        later(0.05, cmid.event, b"E")
        await aio.accept(cmid, b"ok", rnr_retry_count=5)
        later(0.05, cmid.event, b"Q")
        req = await aio.get_request(cmid)
        later(0.05, cmid.event, b"D")
        ev = await aio.get_event(cmid, timeout=5)
        return req, ev

    req, ev = asyncio.run(main())
    assert cmid.started[0][:2] == ("accept", b"ok")
    assert req == ("request", b"Q") and ev == b"D"


def test_errors_propagate_as_raised(cmid):
    async def main():
        later(0.05, cmid.event, b"R")
        await aio.connect(cmid)

    with pytest.raises(VerbsError) as ei:
        asyncio.run(main())
    assert ei.value.errno == errno.ECONNREFUSED
    assert aio._debug_watches() == []


def test_timeout(cmid):
    async def main():
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match="within 300 ms while connecting to 198.18.0.9"):
            await aio.connect(cmid, timeout=0.3)
        took = time.monotonic() - t0
        with pytest.raises(TimeoutError, match="waiting for a connection request"):
            await aio.get_request(cmid, timeout=0)
        return took

    took = asyncio.run(main())
    assert 0.3 <= took < 3
    assert aio._debug_watches() == []


def test_an_event_at_the_deadline_still_counts(cmid):
    async def main():
        cmid.event(b"E")  # ready before the first try
        return await aio.connect(cmid, timeout=0)

    assert asyncio.run(main()) == b"peer data"


def test_bad_timeouts_start_nothing(cmid):
    async def main():
        with pytest.raises(ValueError):
            await aio.connect(cmid, timeout=-1)
        with pytest.raises(ValueError):
            await aio.accept(cmid, timeout=float("nan"))
        with pytest.raises(TypeError):
            await aio.get_request(cmid, timeout="1")

    asyncio.run(main())
    assert cmid.started == [] and cmid.polls == 0


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_cancelled_waits_leave_no_reader(cmid, loop_kind):
    if loop_kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    seen = {}

    async def main():
        for make in (
            lambda: aio.connect(cmid, timeout=30),
            lambda: aio.get_request(cmid),
            lambda: aio.get_event(cmid),
        ):
            t = asyncio.ensure_future(make())
            await asyncio.sleep(0.05)
            seen.setdefault("watched", []).append(list(aio._debug_watches()))
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            assert aio._debug_watches() == []
            if loop_kind == "asyncio":
                assert cmid.fd not in asyncio.get_running_loop()._selector.get_map()
        # nothing was taken by the cancelled waits
        cmid.event(b"Q")
        return await aio.get_request(cmid, timeout=5)

    try:
        assert loop.run_until_complete(main()) == ("request", b"Q")
    finally:
        loop.close()
    assert [len(w) for w in seen["watched"]] == [1, 1, 1]


def test_loop_closed_with_a_waiter_pending(cmid):
    async def main():
        asyncio.ensure_future(aio.get_request(cmid))
        await asyncio.sleep(0.05)
        assert len(aio._debug_watches()) == 1
        # returns with the waiter pending: asyncio.run cancels it

    asyncio.run(main())
    assert aio._debug_watches() == []


def test_idle_wait_uses_no_cpu(cmid):
    async def main():
        t = asyncio.ensure_future(aio.connect(cmid))
        await asyncio.sleep(0.1)
        cpu0, wall0 = time.process_time(), time.monotonic()
        await asyncio.sleep(1.0)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        cmid.event(b"E")
        assert await asyncio.wait_for(t, 5) == b"peer data"
        return cpu, wall

    cpu, wall = asyncio.run(main())
    assert cpu / wall < 0.05
    assert cmid.polls == 2
