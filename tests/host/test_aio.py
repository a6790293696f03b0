"""ibverbs.aio's waiting logic against stand-in CQs whose completion
channel is a pipe (no device): the notify/poll race, event routing and
batched acks, cancellation, fd registration, idle CPU, uvloop.
tests/device/test_aio_device.py runs the same against rxe0."""

import asyncio
import errno
import os
import resource
import time

import pytest

from ibverbs import VerbsError, aio


class FakeChannel:
    """A completion channel: one byte per event, the byte names the CQ."""

    def __init__(self):
        self.rfd, self.wfd = os.pipe()
        self.cqs = {}
        self.reads = 0

    @property
    def fd(self):
        return self.rfd

    def get_cq_event(self):
        try:
            b = os.read(self.rfd, 1)
        except BlockingIOError:
            raise VerbsError(errno.EAGAIN, "no event", "ibv_get_cq_event") from None
        if not b:
            raise AssertionError("blocking read on a non-blocking channel expected")
        self.reads += 1
        cq = self.cqs[b[0]]
        cq.events_unacked += 1
        return cq

    def close(self):
        os.close(self.rfd)
        os.close(self.wfd)


class FakeCQ:
    """A CQ: completions are ints; an armed CQ sends one event on the next."""

    def __init__(self, channel, n):
        self.channel = channel
        self.id = n
        channel.cqs[n] = self
        self.pending = []
        self.armed = False
        self.events_unacked = 0
        self.acks = []
        self.polls = 0
        self.notifies = 0

    def complete(self, *wcs):
        self.pending.extend(wcs)
        if self.armed:
            self.armed = False
            os.write(self.channel.wfd, bytes([self.id]))

    def poll(self, n=1):
        self.polls += 1
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def req_notify(self, solicited_only=False):
        self.notifies += 1
        self.armed = True

    def ack_events(self, n=1):
        assert 0 < n <= self.events_unacked
        self.events_unacked -= n
        self.acks.append(n)


@pytest.fixture
def chan():
    c = FakeChannel()
    yield c
    c.close()


def registered(loop, fd):
    """Whether fd is registered with loop (default selector loop)."""
    try:
        loop._selector.get_key(fd)
    except KeyError:
        return False
    return True


def test_ready_completions_return_without_arming(chan):
    cq = FakeCQ(chan, 1)
    cq.complete(1, 2, 3)
    assert asyncio.run(aio.poll(cq, 2)) == [1, 2]
    assert asyncio.run(aio.poll(cq)) == [3]
    assert cq.notifies == 0 and os.get_blocking(chan.fd)


def test_completion_before_arming_is_seen_by_the_second_poll(chan):
    """The race: a completion lands between the first poll and the arming
    (no event is sent for it); the poll after req_notify finds it."""
    cq = FakeCQ(chan, 1)
    orig = cq.req_notify

    def notify_late(solicited_only=False):
        cq.pending.append("raced")  # arrived just before the arming
        orig()

    cq.req_notify = notify_late
    assert asyncio.run(asyncio.wait_for(aio.poll(cq), 5)) == ["raced"]
    assert cq.polls == 2 and chan.reads == 0


def test_waits_for_the_event_then_acks_it(chan):
    cq = FakeCQ(chan, 1)

    async def main():
        loop = asyncio.get_running_loop()
        t = asyncio.ensure_future(aio.poll(cq))
        await asyncio.sleep(0.05)
        assert not t.done() and cq.armed
        assert registered(loop, chan.fd) and not os.get_blocking(chan.fd)
        loop.call_later(0.05, cq.complete, "a", "b")
        wcs = await asyncio.wait_for(t, 5)
        assert not registered(loop, chan.fd)
        return wcs

    assert asyncio.run(main()) == ["a", "b"]
    assert cq.acks == [1] and cq.events_unacked == 0
    assert aio._debug_watches() == []


def test_events_of_many_cqs_on_one_channel_are_routed_and_batch_acked(chan):
    cqs = [FakeCQ(chan, i) for i in range(8)]

    async def main():
        tasks = [asyncio.ensure_future(aio.poll(cq)) for cq in cqs]
        await asyncio.sleep(0.05)
        for cq in cqs[:4]:
            cq.complete(cq.id)
        # a second event for cq 0 before the reader runs: acked in one call
        cqs[0].req_notify()
        cqs[0].complete("again")
        await asyncio.sleep(0.05)
        assert [t.done() for t in tasks] == [True] * 4 + [False] * 4
        for cq in cqs[4:]:
            cq.complete(cq.id)
        return await asyncio.wait_for(asyncio.gather(*tasks), 5)

    res = asyncio.run(main())
    assert res[0] == [0, "again"] and res[1:] == [[i] for i in range(1, 8)]
    assert cqs[0].acks == [2] and all(cq.events_unacked == 0 for cq in cqs)


def test_many_waiters_exactly_once(chan):
    """16 CQs, 4 tasks per CQ, 200 completions each, delivered in bursts:
    every completion reaches exactly one task."""
    cqs = [FakeCQ(chan, i) for i in range(16)]
    seen = []

    async def consumer(cq, quota):
        while quota[0] > 0:
            wcs = await aio.poll(cq, 7)
            quota[0] -= len(wcs)
            seen.extend(wcs)

    async def producer():
        for burst in range(20):
            for cq in cqs:
                cq.complete(*[(cq.id, burst * 10 + k) for k in range(10)])
            await asyncio.sleep(0.001)

    async def main():
        tasks = []
        for cq in cqs:
            quota = [200]
            tasks += [asyncio.ensure_future(consumer(cq, quota)) for _ in range(4)]
        await producer()
        # The quota is shared: tasks that waited when it ran out wait on.
        deadline = time.monotonic() + 5
        while len(seen) < 16 * 200 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())
    assert sorted(seen) == sorted((i, k) for i in range(16) for k in range(200))
    assert aio._debug_watches() == []


def test_cancelled_poll_then_new_poll_loses_nothing(chan):
    cq = FakeCQ(chan, 1)

    async def main():
        loop = asyncio.get_running_loop()
        t = asyncio.ensure_future(aio.poll(cq))
        await asyncio.sleep(0.02)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        assert not registered(loop, chan.fd)
        cq.complete("x", "y")  # the event fires with nobody listening
        await asyncio.sleep(0.02)
        assert await asyncio.wait_for(aio.poll(cq), 5) == ["x", "y"]
        # the stale event is drained, acked and dropped by a later wait
        t = asyncio.ensure_future(aio.poll(cq))
        await asyncio.sleep(0.02)
        assert not t.done()
        cq.complete("z")
        return await asyncio.wait_for(t, 5)

    assert asyncio.run(main()) == ["z"]
    assert cq.events_unacked == 0


def test_cancel_after_the_event_was_read_loses_nothing(chan):
    """The reader has read and acked the event; the task is cancelled
    before it polls: the completion waits in the CQ for the next poll."""
    cq = FakeCQ(chan, 1)
    orig_ack = cq.ack_events

    async def main():
        t = asyncio.ensure_future(aio.poll(cq))

        def ack_then_cancel(n=1):
            orig_ack(n)
            t.cancel()

        cq.ack_events = ack_then_cancel
        await asyncio.sleep(0.02)
        cq.complete("w")
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(t, 5)
        cq.ack_events = orig_ack
        return await asyncio.wait_for(aio.poll(cq), 5)

    assert asyncio.run(main()) == ["w"]
    assert cq.acks == [1]


def test_completions_leftovers_go_to_the_next_poll(chan):
    cq = FakeCQ(chan, 1)
    cq.complete(*range(10))

    async def main():
        got = []
        async for wc in aio.completions(cq, 8):
            got.append(wc)
            if len(got) == 3:
                break
        rest = await aio.poll(cq, 4)
        rest += await aio.poll(cq, 16)
        return got, rest

    got, rest = asyncio.run(main())
    assert got == [0, 1, 2] and rest == list(range(3, 10))
    assert aio._leftover == {}


def test_loop_closed_with_waiters_pending_leaves_nothing_registered(chan):
    cq = FakeCQ(chan, 1)
    seen = {}

    async def main():
        loop = asyncio.get_running_loop()
        for _ in range(3):
            asyncio.ensure_future(aio.poll(cq))
        asyncio.ensure_future(aio.completions(cq).__anext__())
        await asyncio.sleep(0.02)
        seen["loop"] = loop
        seen["before"] = registered(loop, chan.fd)
        # main returns with four waiters pending: asyncio.run cancels them

    asyncio.run(main())
    assert seen["before"]
    assert aio._debug_watches() == [] and aio._watches == {}
    # A loop closed without cancelling its tasks: its entry is dropped by
    # the next use, and a new loop registers the fd afresh.
    loop = asyncio.new_event_loop()
    loop.create_task(aio.poll(cq))
    loop.run_until_complete(asyncio.sleep(0.02))
    assert registered(loop, chan.fd)
    loop.close()
    assert [k[0] for k in aio._watches] == [loop]

    async def later():
        asyncio.get_running_loop().call_later(0.02, cq.complete, "after")
        return await asyncio.wait_for(aio.poll(cq), 5)

    assert asyncio.run(later()) == ["after"]
    assert aio._watches == {}


def test_idle_wait_costs_no_cpu(chan):
    cq = FakeCQ(chan, 1)

    async def main():
        t = asyncio.ensure_future(aio.poll(cq))
        await asyncio.sleep(0.05)
        r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
        await asyncio.sleep(1.0)
        r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
        cq.complete(1)
        await t
        return (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / (w1 - w0)

    assert asyncio.run(main()) < 0.05


def test_errors():
    class NoChannel:
        channel = None

        def poll(self, n=1):
            return []

    with pytest.raises(ValueError, match="CompChannel"):
        asyncio.run(aio.poll(NoChannel()))
    with pytest.raises(ValueError, match="num_entries"):
        asyncio.run(aio.poll(NoChannel(), 0))
    with pytest.raises(TypeError, match="num_entries"):
        asyncio.run(aio.poll(NoChannel(), 1.5))
    chan = FakeChannel()
    try:
        with pytest.raises(RuntimeError, match="no running event loop"):
            aio.poll(FakeCQ(chan, 1)).send(None)
    finally:
        chan.close()


def test_channel_error_reaches_the_waiters(chan):
    cq = FakeCQ(chan, 1)

    def broken():
        raise VerbsError(errno.EIO, "boom", "ibv_get_cq_event")

    async def main():
        t = asyncio.ensure_future(aio.poll(cq))
        await asyncio.sleep(0.02)
        chan.get_cq_event = broken
        cq.complete(1)
        with pytest.raises(VerbsError, match="boom"):
            await asyncio.wait_for(t, 5)
        assert aio._debug_watches() == []

    asyncio.run(main())


def test_uvloop(chan):
    uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed")
    cqs = [FakeCQ(chan, i) for i in range(4)]

    async def main():
        tasks = [asyncio.ensure_future(aio.poll(cq)) for cq in cqs]
        await asyncio.sleep(0.02)
        loop = asyncio.get_running_loop()
        for cq in cqs:
            loop.call_later(0.01, cq.complete, cq.id)
        res = await asyncio.wait_for(asyncio.gather(*tasks), 5)
        t = asyncio.ensure_future(aio.poll(cqs[0]))
        await asyncio.sleep(0.02)
        t.cancel()
        await asyncio.gather(t, return_exceptions=True)
        assert aio._debug_watches() == []
        return res

    loop = uvloop.new_event_loop()
    try:
        assert loop.run_until_complete(main()) == [[0], [1], [2], [3]]
    finally:
        loop.close()


class FakeContext:
    def __init__(self):
        self.rfd, self.wfd = os.pipe()
        self.acked = 0

    @property
    def async_fd(self):
        return self.rfd

    def get_async_event(self):
        try:
            b = os.read(self.rfd, 1)
        except BlockingIOError:
            raise VerbsError(errno.EAGAIN, "none", "ibv_get_async_event") from None
        ctx = self

        class Ev:
            event_type = b[0]

            def ack(self):
                ctx.acked += 1

        return Ev()


def test_async_events():
    ctx = FakeContext()

    async def main():
        loop = asyncio.get_running_loop()
        got = []
        loop.call_later(0.02, os.write, ctx.wfd, b"\x01\x02")
        loop.call_later(0.1, os.write, ctx.wfd, b"\x03")
        async for ev in aio.async_events(ctx):
            got.append(ev.event_type)
            if len(got) == 3:
                break
        return got

    try:
        assert asyncio.run(asyncio.wait_for(main(), 5)) == [1, 2, 3]
        assert ctx.acked == 3 and not os.get_blocking(ctx.rfd)
        assert aio._debug_watches() == []
    finally:
        os.close(ctx.rfd)
        os.close(ctx.wfd)
