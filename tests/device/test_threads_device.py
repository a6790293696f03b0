"""Threads on a real device (rxe0 in the Soft-RoCE guest): the thread model
of docs/guides/safety.md against a provider that locks its own queues.

- threads, each with its own RC pair and CQs, send and RDMA-write at once,
  every byte checked;
- threads sharing one RC pair post sends and receives and poll both CQs at
  once: every completion is returned exactly once, every payload arrives;
- close() of a QP and then of its CQ while other threads post and poll:
  each call completes or raises VerbsError(EBADF);
- ibverbs.aio with one event loop per thread; ibverbs.bootstrap with one
  rank per thread over an in-process Store.

Under the GIL (the normal device suite) the threads interleave; under a
free-threaded CPython (make test-freethreaded-guest, 3.13t/3.14t) they run
in parallel on the guest's two vCPUs, and tests/conftest.py checks that the
GIL stays off.

IBVERBS_STRESS_SCALE (default 1) scales the rounds, messages and attempts
of each test: make sanitize-threads runs them at a fraction under
ThreadSanitizer, whose interpreter in the emulated guest is many times
slower.  The watchdogs are quiet-guest seconds scaled by the time factor
(support/timeouts.py), which that run sets to match."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
import time

import numpy as np
import pytest

import ibverbs as ib
from ibverbs import aio
from support.rankrun import check_mesh, mesh_write_rank
from support.rdma import make_rc_pair, mkbuf, write_wr
from support.timeouts import scaled

pytestmark = pytest.mark.integration

THREADS = 4
SIGNALED = ib.SendFlags.SIGNALED
SCALE = float(os.environ.get("IBVERBS_STRESS_SCALE", "1"))


def scaled_count(n, least=1):
    """N (a count at scale 1) at IBVERBS_STRESS_SCALE, at least LEAST."""
    return max(least, round(n * SCALE))


def run_threads(n, target, timeout=120.0):
    """target(i) in n threads started together; the exceptions they raised
    (as text) once all have ended.  A thread still running after timeout
    (scaled) fails the test (it is a daemon: the process can still exit)."""
    timeout = scaled(timeout)
    errors, start = [], threading.Barrier(n)

    def body(i):
        try:
            start.wait()
            target(i)
        except BaseException as e:  # collected for the assertion below
            errors.append(f"thread {i}: {e!r}")

    ts = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in ts:
        t.start()
    deadline = time.monotonic() + timeout
    for t in ts:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in ts), f"threads still running after {timeout} s"
    return errors


def reap(cq, want, timeout=30.0):
    """Poll cq (checking each status) until want completions came."""
    got = []
    deadline = time.monotonic() + scaled(timeout)
    while len(got) < want:
        for wc in cq.poll(want - len(got)):
            wc.raise_for_status()
            got.append(wc)
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out: {len(got)} of {want} completions")
    return got


def test_threads_each_with_their_own_rc_pair_move_verified_data(ctx, pd):
    rounds, size = scaled_count(40), 4096
    sent = [0] * THREADS

    def worker(i):
        qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=16)
        src, mr_src = mkbuf(pd, size)
        dst, mr_dst = mkbuf(pd, 2 * size)
        rng = np.random.default_rng(i)
        try:
            for r in range(rounds):
                src[:] = rng.integers(0, 256, size, dtype=np.uint8)
                qb.post_recv(ib.RecvWR(wr_id=r, sg_list=[mr_dst.sge(size)]))
                qa.post_send(ib.SendWR(wr_id=r, sg_list=[mr_src.sge()], send_flags=SIGNALED))
                qa.post_send(write_wr(mr_src, size, mr_dst, at=size, wr_id=1000 + r))
                assert [w.wr_id for w in reap(ca, 2)] == [r, 1000 + r]
                (w,) = reap(cb, 1)
                assert w.wr_id == r and w.byte_len == size and w.qp_num == qb.qp_num
                assert bytes(dst[:size]) == bytes(src), (i, r, "send")
                assert bytes(dst[size:]) == bytes(src), (i, r, "write")
                sent[i] += 1
        finally:
            for h in (qa, qb, ca, cb, mr_src, mr_dst):
                h.close()

    assert run_threads(THREADS, worker) == []
    assert sent == [rounds] * THREADS


def test_threads_sharing_one_qp_get_every_completion_exactly_once(ctx, pd):
    """Each thread posts batches of receives on qb and sends on qa (its
    payload: its wr_id), then polls both CQs, whoever's completions they
    are, until its own sends are done.  The sends and receives of all
    threads together must come back exactly once each, and the receive
    buffers must hold every payload exactly once."""
    batch = 8
    per_thread = batch * scaled_count(12)
    qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=256)
    total = THREADS * per_thread
    src = np.arange(total, dtype=np.uint64) + 1
    dst = np.zeros(total, dtype=np.uint64)
    mr_src = ib.reg_tensor(pd, src, ib.AccessFlags.LOCAL_WRITE)
    mr_dst = ib.reg_tensor(pd, dst, ib.AccessFlags.LOCAL_WRITE)
    lock = threading.Lock()
    sends, recvs, done = [], [], [0] * THREADS

    def take(cq, into):
        wcs = cq.poll(16)
        for wc in wcs:
            wc.raise_for_status()
        with lock:
            into.extend(wc.wr_id for wc in wcs)
            if into is sends:
                for wc in wcs:
                    done[wc.wr_id // per_thread] += 1

    def worker(i):
        deadline = time.monotonic() + scaled(60)
        for k in range(0, per_thread, batch):
            ids = range(i * per_thread + k, i * per_thread + k + batch)
            qb.post_recv([ib.RecvWR(wr_id=n, sg_list=[mr_dst.sge(8, 8 * n)]) for n in ids])
            qa.post_send(
                [
                    ib.SendWR(wr_id=n, sg_list=[mr_src.sge(8, 8 * n)], send_flags=SIGNALED)
                    for n in ids
                ]
            )
            while done[i] < k + batch:
                take(ca, sends)
                take(cb, recvs)
                assert time.monotonic() < deadline, f"{done[i]} of {k + batch} sends done"

    try:
        assert run_threads(THREADS, worker) == []
        deadline = time.monotonic() + scaled(30)
        while len(recvs) < total and time.monotonic() < deadline:
            take(cb, recvs)
        assert sorted(sends) == list(range(total))
        assert sorted(recvs) == list(range(total))
        # A receive takes whichever send comes next: its slot may hold any
        # thread's payload, but each payload lands exactly once.
        assert sorted(dst.tolist()) == src.tolist()
        assert ca.poll(16) == [] and cb.poll(16) == []
    finally:
        for h in (qa, qb, ca, cb, mr_src, mr_dst):
            h.close()


def test_close_while_other_threads_post_and_poll(ctx, pd):
    """Two threads post signaled RDMA writes on qa and poll ca; a third
    polls cb.  The main thread closes qa (retrying while close() says
    EBUSY), then qb, then cb and ca while they still call: every call
    completes or raises VerbsError(EBADF), and every thread stops on
    EBADF."""
    for attempt in range(scaled_count(5, least=2)):
        qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=256)
        src, mr_src = mkbuf(pd, 64)
        dst, mr_dst = mkbuf(pd, 64)
        lock = threading.Lock()
        calls = {"ok": 0, "ebadf": 0}
        inflight = [0]
        go = threading.Event()

        def count(outcome):
            with lock:
                calls[outcome] += 1

        def poster():
            go.wait()
            try:
                while True:
                    with lock:
                        room = inflight[0] < 64
                        inflight[0] += room
                    if room:
                        qa.post_send(write_wr(mr_src, 8, mr_dst))
                        count("ok")
                    n = len(ca.poll(8))
                    with lock:
                        inflight[0] -= n
                    count("ok")
            except ib.VerbsError as e:
                if e.errno != errno.EBADF:
                    raise
                count("ebadf")

        def poller():
            go.wait()
            try:
                while True:
                    cb.poll(8)
                    count("ok")
            except ib.VerbsError as e:
                if e.errno != errno.EBADF:
                    raise
                count("ebadf")

        targets = [poster, poster, poller]
        errors = []

        def body(i):
            try:
                targets[i]()
            except BaseException as e:  # collected below
                errors.append(repr(e))

        ts = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(3)]
        for t in ts:
            t.start()
        go.set()
        time.sleep(0.05 * (attempt + 1))
        for h in (qa, qb, cb):
            while True:
                try:
                    h.close()
                    break
                except ib.VerbsError as e:
                    assert e.errno == errno.EBUSY, e  # a call in flight too long
        while True:  # the posters' poll of ca is the last call on it
            try:
                ca.close()
                break
            except ib.VerbsError as e:
                assert e.errno == errno.EBUSY, e
        for t in ts:
            t.join(scaled(30))
        assert not any(t.is_alive() for t in ts)
        assert errors == [], errors
        assert calls["ebadf"] == 3 and calls["ok"] > 0, calls
        mr_src.close()
        mr_dst.close()


def test_aio_with_an_event_loop_per_thread(ctx, pd):
    """Each thread runs its own asyncio loop over its own RC pair, whose
    CQs share the thread's own completion channel: a sender awaits
    aio.poll on the send CQ, a receiver iterates aio.completions."""
    msgs, window = scaled_count(60, least=2 * 8), 8
    got = {}

    def worker(i):
        chan = ctx.create_comp_channel()
        qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=64, channel=chan)
        try:
            for k in range(msgs):
                qb.post_recv(ib.RecvWR(wr_id=k))

            async def sender():
                posted, acked = 0, []
                while len(acked) < msgs:
                    while posted < msgs and posted - len(acked) < window:
                        qa.post_send(
                            ib.SendWR(
                                wr_id=posted,
                                opcode=ib.WROpcode.SEND_WITH_IMM,
                                send_flags=SIGNALED,
                                imm_data=(i << 16) | posted,
                            )
                        )
                        posted += 1
                    for wc in await aio.poll(ca, 16):
                        wc.raise_for_status()
                        acked.append(wc.wr_id)
                return acked

            async def receiver():
                imms = []
                async for wc in aio.completions(cb):
                    wc.raise_for_status()
                    imms.append(wc.imm_data)
                    if len(imms) == msgs:
                        break
                return imms

            async def both():
                return await asyncio.wait_for(asyncio.gather(sender(), receiver()), scaled(60))

            got[i] = asyncio.run(both())
        finally:
            for h in (qa, qb, ca, cb, chan):
                h.close()

    assert run_threads(THREADS, worker) == []
    for i in range(THREADS):
        acked, imms = got[i]
        assert acked == list(range(msgs)), i
        assert imms == [(i << 16) | k for k in range(msgs)], i


class ThreadStore:
    """ibverbs.bootstrap.Store for ranks that are threads of this process."""

    def __init__(self):
        self._values, self._counts = {}, {}
        self._changed = threading.Condition()

    def set(self, key, value):
        with self._changed:
            self._values[key] = bytes(value)
            self._changed.notify_all()

    def get(self, key):
        with self._changed:
            if not self._changed.wait_for(lambda: key in self._values, scaled(60)):
                raise TimeoutError(f"no rank set {key!r}")
            return self._values[key]

    def add(self, key, amount):
        with self._changed:
            self._counts[key] = self._counts.get(key, 0) + amount
            return self._counts[key]


def test_bootstrap_with_a_rank_per_thread(device_name, port):
    """bootstrap.connect_mesh, exchange_mr and barrier with four ranks as
    threads of one process, each with its own Context: the mesh of RC QPs
    is connected and every rank's write lands in every peer."""
    store, results = ThreadStore(), {}

    def rank_main(rank):
        results[rank] = mesh_write_rank(
            store, rank, THREADS, device_name, port=port, timeout=scaled(60)
        )

    assert run_threads(THREADS, rank_main) == []
    check_mesh(results, THREADS)
