"""asyncio: await completions and device events without busy polling.

``await poll(cq)`` polls the CQ; only when it is empty does it arm the CQ
(``req_notify``), poll again (a completion that arrived before the arming
raises no event) and then wait for the CQ's completion channel to become
readable, with its fd registered with the running loop (``add_reader``).
One reader per channel and loop reads every pending event (the channel's
fd is made non-blocking, and stays so), acks them in one
``ack_events(n)`` per CQ and wakes the tasks waiting on those CQs, which
poll again.  A CompChannel may serve many CQs.

Cancellation loses nothing: completions stay in the CQ until a poll takes
them, an event read for a CQ nobody waits on any more is acked and
dropped (the next waiter polls before it waits), and the fd is removed
from the loop as soon as no task waits on it.  Completions that
``completions()`` took from the CQ but did not yield yet (its consumer
stopped iterating) are handed out first by the next ``poll()`` or
``completions()`` of that CQ.

Works with any asyncio loop that implements ``add_reader`` (the default
selector loop, uvloop).  A channel (and so its CQs) is awaited from one
event loop at a time: the reader of one loop would take events meant for
the tasks of another.

The connection manager: ``await connect(cmid)``, ``await accept(cmid)``,
``await get_request(listener)`` and ``await get_event(cmid_or_listener)``
start the step without waiting (``CMID.start_connect``,
``CMID.start_accept``) and then take the events of the object's own event
channel whenever its fd (made non-blocking) turns readable
(``poll_established``, ``poll_request``, ``poll_event``: the same checks
and errors as the blocking ``connect``, ``accept``, ``get_request`` and
``get_event``, which share them).  A timeout is ``TimeoutError``, as in
the blocking calls.  A cancelled ``connect``/``accept`` leaves its attempt
under way: close the CMID (its QP first); a cancelled ``get_request``
loses no request (the next call takes it).  One task at a time awaits a
given CMID or listener; do not close it while a task awaits it.
``await resolve(host, port)`` runs the synchronous ``CMID.resolve`` in
the loop's default executor.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import os
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, TypeVar

from ._objects import VerbsError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._ibverbs import CMID, CQ, WC, AsyncEvent, CMEvent, CMListener, CompChannel, Context

    _T = TypeVar("_T")

__all__ = [
    "poll",
    "completions",
    "async_events",
    "resolve",
    "connect",
    "accept",
    "get_request",
    "get_event",
]


def _loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


class _FdWatch:
    """The futures of one loop that wait for one fd to become readable.

    The fd is registered with the loop while at least one future waits;
    a future that completes or is cancelled takes itself out.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self.loop = loop
        self.fd = fd
        self.registered = False

    # subclasses: the set of waiting futures and what readability does
    def _empty(self) -> bool:
        raise NotImplementedError

    def _on_readable(self) -> None:
        raise NotImplementedError

    def _register(self) -> None:
        if not self.registered:
            if os.get_blocking(self.fd):
                os.set_blocking(self.fd, False)
            self.loop.add_reader(self.fd, self._readable)
            self.registered = True

    def _unregister_if_idle(self) -> None:
        if self.registered and self._empty():
            self.registered = False
            if not self.loop.is_closed():
                self.loop.remove_reader(self.fd)
            _forget(self)

    def _readable(self) -> None:
        try:
            self._on_readable()
        finally:
            self._unregister_if_idle()


_W = TypeVar("_W", bound=_FdWatch)

# (loop, fd) -> watch; an entry exists only while a future waits.  Loops
# in several threads share it: every access holds _watches_lock (a scan
# racing an insert would raise "dictionary changed size during iteration").
_watches: dict[tuple[asyncio.AbstractEventLoop, int], _FdWatch] = {}
_watches_lock = threading.Lock()


def _forget(w: _FdWatch) -> None:
    with _watches_lock:
        if _watches.get((w.loop, w.fd)) is w:
            del _watches[(w.loop, w.fd)]


def _watch(loop: asyncio.AbstractEventLoop, fd: int, kind: type[_W]) -> _W:
    with _watches_lock:
        # Entries of loops closed with futures pending (never cancelled): drop.
        for key in [k for k in _watches if k[0].is_closed()]:
            del _watches[key]
        w = _watches.get((loop, fd))
        if w is None:
            w = kind(loop, fd)
            _watches[(loop, fd)] = w
    if not isinstance(w, kind):
        raise RuntimeError(f"fd {fd} is already watched for another purpose")
    return w


class _ChannelWatch(_FdWatch):
    """Reads a completion channel's events and wakes the CQs' waiters."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        super().__init__(loop, fd)
        self.channel: CompChannel | None = None
        # id(cq) -> (cq, waiting futures)
        self.waiters: dict[int, tuple[CQ, set[asyncio.Future[None]]]] = {}

    def _empty(self) -> bool:
        return not self.waiters

    def wait(self, cq: CQ) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = self.loop.create_future()
        entry = self.waiters.get(id(cq))
        if entry is None:
            entry = self.waiters[id(cq)] = (cq, set())
        entry[1].add(fut)
        fut.add_done_callback(functools.partial(self._done, id(cq)))
        try:
            self._register()
        except BaseException:
            fut.cancel()
            raise
        return fut

    def _done(self, key: int, fut: asyncio.Future[None]) -> None:
        entry = self.waiters.get(key)
        if entry is not None:
            entry[1].discard(fut)
            if not entry[1]:
                del self.waiters[key]
        self._unregister_if_idle()

    def _on_readable(self) -> None:
        assert self.channel is not None
        got: dict[int, tuple[CQ, int]] = {}
        error: Exception | None = None
        while True:
            try:
                cq = self.channel.get_cq_event()
            except VerbsError as e:
                if e.errno != errno.EAGAIN:
                    error = e
                break
            except Exception as e:  # noqa: BLE001 - handed to the waiters
                error = e
                break
            n = got.get(id(cq), (cq, 0))[1]
            got[id(cq)] = (cq, n + 1)
        for cq, n in got.values():
            try:
                cq.ack_events(n)  # one ibv_ack_cq_events per CQ and wakeup
            except Exception as e:  # noqa: BLE001 - e.g. closed meanwhile
                error = error or e
        wake = (
            [e for e in self.waiters.values()]
            if error is not None
            else [self.waiters[k] for k in got if k in self.waiters]
        )
        for _, futs in wake:
            for fut in list(futs):
                if not fut.done():
                    if error is not None:
                        fut.set_exception(error)
                    else:
                        fut.set_result(None)


class _ReadyWatch(_FdWatch):
    """Wakes every waiter once the fd is readable (they read it themselves)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        super().__init__(loop, fd)
        self.futs: set[asyncio.Future[None]] = set()

    def _empty(self) -> bool:
        return not self.futs

    def wait(self) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = self.loop.create_future()
        self.futs.add(fut)
        fut.add_done_callback(self._done)
        try:
            self._register()
        except BaseException:
            fut.cancel()
            raise
        return fut

    def _done(self, fut: asyncio.Future[None]) -> None:
        self.futs.discard(fut)
        self._unregister_if_idle()

    def _on_readable(self) -> None:
        for fut in list(self.futs):
            if not fut.done():
                fut.set_result(None)


# Completions taken from a CQ by completions() and not yielded yet:
# id(cq) -> (cq, wcs).  An entry exists only while it holds some.
_leftover: dict[int, tuple[CQ, deque[WC]]] = {}


def _take_leftover(cq: CQ, n: int) -> list[WC]:
    entry = _leftover.get(id(cq))
    if entry is None or entry[0] is not cq:
        return []
    q = entry[1]
    out = [q.popleft() for _ in range(min(n, len(q)))]
    if not q:
        del _leftover[id(cq)]
    return out


def _check_num(num_entries: int) -> None:
    if isinstance(num_entries, bool) or not isinstance(num_entries, int):
        raise TypeError(f"num_entries must be an int, not {type(num_entries).__name__}")
    if num_entries < 1:
        raise ValueError(f"num_entries must be >= 1, got {num_entries}")


async def poll(cq: CQ, num_entries: int = 16) -> list[WC]:
    """Await up to ``num_entries`` completions of ``cq``, at least one.

    Polls; when the CQ is empty, arms it, polls once more (a completion
    that came before the arming raises no event), then waits for the
    CQ's completion channel to turn readable with its fd registered with
    the running loop, never polling in a loop.  The channel's fd is made
    non-blocking.  Completions that ``completions()`` polled but did not
    yield come first.

    Wraps ``ibv_poll_cq``, ``ibv_req_notify_cq``, ``ibv_get_cq_event`` and
    ``ibv_ack_cq_events`` (man pages ibv_poll_cq(3),
    ibv_req_notify_cq(3), ibv_get_cq_event(3)).

    Args:
        cq: a CQ created with a CompChannel.
        num_entries: the most completions to return, at least 1.

    Returns:
        A non-empty list of WC.

    Raises:
        ValueError: the CQ has no CompChannel, or num_entries < 1.
        TypeError: num_entries is not an int.
        VerbsError: a verb failed (EBADF once the CQ or channel is
            closed); every task waiting on the channel gets it.
    """
    _check_num(num_entries)
    out = _take_leftover(cq, num_entries)
    if out:
        if len(out) < num_entries:
            out.extend(cq.poll(num_entries - len(out)))
        return out
    wcs = cq.poll(num_entries)
    if wcs:
        return wcs
    channel = cq.channel
    if channel is None:
        raise ValueError(
            "aio.poll needs a CQ created with a CompChannel "
            "(ctx.create_cq(n, channel=ctx.create_comp_channel()))"
        )
    loop = _loop()
    while True:
        cq.req_notify()
        wcs = cq.poll(num_entries)  # what came before the arming
        if wcs:
            return wcs
        # Looked up anew each time: a watch without waiters is dropped.
        watch = _watch(loop, channel.fd, _ChannelWatch)
        watch.channel = channel
        await watch.wait(cq)
        wcs = cq.poll(num_entries)
        if wcs:
            return wcs


async def completions(cq: CQ, num_entries: int = 16) -> AsyncIterator[WC]:
    """Iterate over every completion of ``cq``, for ever:
    ``async for wc in completions(cq)``.

    Takes up to ``num_entries`` at a time with ``poll()``; what it took
    but did not yield when the loop over it stops goes to the next
    ``poll(cq)`` or ``completions(cq)``.

    Wraps ``ibv_poll_cq`` and the CQ event verbs as ``poll()`` does (man
    pages ibv_poll_cq(3), ibv_get_cq_event(3)).

    Raises:
        ValueError: the CQ has no CompChannel, or num_entries < 1.
        TypeError: num_entries is not an int.
        VerbsError: as ``poll()``.
    """
    _check_num(num_entries)
    while True:
        got = _take_leftover(cq, 1)
        if not got:
            wcs = await poll(cq, num_entries)
            if len(wcs) > 1:
                _leftover[id(cq)] = (cq, deque(wcs[1:]))
            got = wcs[:1]
        yield got[0]


async def async_events(ctx: Context) -> AsyncIterator[AsyncEvent]:
    """Iterate over the device's asynchronous events, for ever:
    ``async for ev in async_events(ctx)``.

    Port state changes, QP and CQ errors, ...: each event is acked before
    it is yielded (its attributes stay readable).  ``ctx.async_fd`` is
    made non-blocking; between events the task waits for it to turn
    readable.

    Wraps ``ibv_get_async_event`` and ``ibv_ack_async_event`` (man page
    ibv_get_async_event(3)).

    Raises:
        VerbsError: the read failed other than with EAGAIN (EBADF once
            the Context is closed).
    """
    loop = _loop()
    fd = ctx.async_fd
    while True:
        if os.get_blocking(fd):  # never block the loop in the read
            os.set_blocking(fd, False)
        try:
            ev = ctx.get_async_event()
        except VerbsError as e:
            if e.errno != errno.EAGAIN:
                raise
        else:
            ev.ack()
            yield ev
            continue
        await _watch(loop, fd, _ReadyWatch).wait()


# ------------------------------------------------------ connection manager ---


def _timeout_ms(timeout: float | None) -> int | None:
    """timeout (seconds or None) checked as the blocking calls check it."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds or None, not {type(timeout)!r}")
    if not (0 <= timeout <= 2**31 // 1000):
        raise ValueError(f"timeout must be in range 0..{2**31 // 1000} seconds or None")
    return int(timeout * 1000 + 0.999)


async def _until(
    obj: CMID | CMListener, step: Callable[[], _T | None], ms: int | None, what: str
) -> _T:
    """step() (a non-blocking CM call) until it returns something, waiting
    for obj.fd to turn readable between tries; TimeoutError after ms."""
    loop = _loop()
    fd = obj.fd
    if os.get_blocking(fd):  # never block the loop in the read
        os.set_blocking(fd, False)
    deadline = None if ms is None else loop.time() + ms / 1000
    while True:
        r = step()
        if r is not None:
            return r
        if deadline is None:
            await _watch(loop, fd, _ReadyWatch).wait()
            continue
        left = deadline - loop.time()
        if left <= 0:
            raise TimeoutError(f"no connection manager event within {ms} ms while {what}")
        fut = _watch(loop, fd, _ReadyWatch).wait()
        timer = loop.call_later(left, _expire, fut)
        try:
            await fut  # readable, or the deadline: one more try, then TimeoutError
        finally:
            timer.cancel()


def _expire(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def resolve(
    host: str, port: int = 4420, source: str | None = None, *, timeout_ms: int = 2000
) -> CMID:
    """Await ``CMID.resolve(host, port, source, timeout_ms=...)``.

    Runs it in the running loop's default executor: address and route
    resolution wait in C (the GIL released) without blocking the loop.

    Wraps ``rdma_resolve_addr`` and ``rdma_resolve_route`` through
    ``CMID.resolve`` (man pages rdma_resolve_addr(3),
    rdma_resolve_route(3)).

    Returns:
        The resolved CMID.

    Raises:
        VerbsError, TimeoutError, TypeError, ValueError, ImportError: as
            ``CMID.resolve``.
    """
    from ._ibverbs import CMID

    return await _loop().run_in_executor(
        None, functools.partial(CMID.resolve, host, port, source, timeout_ms=timeout_ms)
    )


async def connect(
    cmid: CMID,
    private_data: bytes = b"",
    *,
    responder_resources: int = 1,
    initiator_depth: int = 1,
    retry_count: int = 7,
    rnr_retry_count: int = 7,
    timeout: float | None = None,
) -> bytes:
    """Await ``cmid.connect(...)``: start it, then take the CMID's events
    whenever its fd turns readable, until the connection is established.

    The arguments are ``CMID.connect``'s.  A cancelled connect leaves its
    attempt under way: close the CMID (its QP first).

    Wraps ``rdma_connect`` and ``rdma_get_cm_event`` through
    ``CMID.start_connect`` and ``CMID.poll_established`` (man pages
    rdma_connect(3), rdma_get_cm_event(3)).

    Returns:
        The peer's private data.

    Raises:
        VerbsError: as ``CMID.connect`` (a reject is ECONNREFUSED with
            ``event``, ``status`` and ``private_data``).
        TimeoutError: not established within ``timeout`` seconds.
        ValueError, TypeError: as ``CMID.connect``.
    """
    ms = _timeout_ms(timeout)
    cmid.start_connect(
        private_data,
        responder_resources=responder_resources,
        initiator_depth=initiator_depth,
        retry_count=retry_count,
        rnr_retry_count=rnr_retry_count,
    )
    what = f"connecting to {cmid.host} port {cmid.port}"
    return await _until(cmid, cmid.poll_established, ms, what)


async def accept(
    cmid: CMID,
    private_data: bytes = b"",
    *,
    responder_resources: int = 1,
    initiator_depth: int = 1,
    rnr_retry_count: int = 7,
    timeout: float | None = None,
) -> None:
    """Await ``cmid.accept(...)``: start it, then take the CMID's events
    whenever its fd turns readable, until the connection is established.

    The arguments are ``CMID.accept``'s; ``cmid`` comes from a listener.

    Wraps ``rdma_accept`` and ``rdma_get_cm_event`` through
    ``CMID.start_accept`` and ``CMID.poll_established`` (man pages
    rdma_accept(3), rdma_get_cm_event(3)).

    Raises:
        VerbsError: as ``CMID.accept``.
        TimeoutError: not established within ``timeout`` seconds.
        ValueError, TypeError: as ``CMID.accept``.
    """
    ms = _timeout_ms(timeout)
    cmid.start_accept(
        private_data,
        responder_resources=responder_resources,
        initiator_depth=initiator_depth,
        rnr_retry_count=rnr_retry_count,
    )
    await _until(cmid, cmid.poll_established, ms, "accepting")


async def get_request(listener: CMListener, *, timeout: float | None = None) -> CMID:
    """Await the next connection request of ``listener``.

    Takes the listener's events whenever its fd turns readable; a
    cancelled call loses no request (the next call takes it).

    Wraps ``rdma_get_cm_event`` and ``rdma_migrate_id`` through
    ``CMListener.poll_request`` (man pages rdma_get_cm_event(3),
    rdma_migrate_id(3)).

    Args:
        listener: the CMListener.
        timeout: seconds to wait, None for no limit.

    Returns:
        The request's CMID.

    Raises:
        TimeoutError: no request within the timeout.
        VerbsError: as ``CMListener.get_request``.
        TypeError, ValueError: timeout is not a number, or out of range.
    """
    ms = _timeout_ms(timeout)
    return await _until(listener, listener.poll_request, ms, "waiting for a connection request")


async def get_event(obj: CMID | CMListener, *, timeout: float | None = None) -> CMEvent:
    """Await the next event of a CMID or CMListener (already acknowledged),
    e.g. the peer's ``DISCONNECTED``.

    Wraps ``rdma_get_cm_event`` and ``rdma_ack_cm_event`` through
    ``poll_event`` (man page rdma_get_cm_event(3)).

    Args:
        obj: the CMID or CMListener.
        timeout: seconds to wait, None for no limit.

    Returns:
        The CMEvent.

    Raises:
        TimeoutError: no event within the timeout.
        VerbsError: reading the event channel failed (EBADF when closed).
        TypeError, ValueError: timeout is not a number, or out of range.
    """
    ms = _timeout_ms(timeout)
    return await _until(obj, obj.poll_event, ms, "waiting for an event")


def _debug_watches() -> list[tuple[Any, int]]:
    """The (loop, fd) pairs registered now (for tests)."""
    with _watches_lock:
        return [k for k, w in _watches.items() if w.registered]
