"""Threads against the recording double of libibverbs (tests/fakes/recording):
several threads, each with its own QP and CQ, posting and polling at once;
threads sharing a Context and a PD, making and closing children at once;
close() racing calls in flight on other threads.

Under a free-threaded CPython (make test-freethreaded) these run in
parallel on the host's cores, and exercise what the GIL used to serialize
(core/handle.c: the pinned handles, the tree lock; cq/cq.c: per-call poll
storage).  Under a GIL build they run interleaved and check the same
outcomes.  The double completes every send at once, in the CQ of its QP,
so each thread's count is exact.  The double's own CQ ring has no lock:
a CQ is shared between threads only in the guest (tests/device/
test_threads_device.py), where the provider locks it."""

from __future__ import annotations

import ipaddress

THREADS = 4


def test_threads_each_with_its_own_qp_and_cq_post_and_poll(recording):
    def body(fake, threads, rounds):
        import ctypes
        import sys

        import ibverbs
        from support.threads import run_together
        from ibverbs import enums

        fake.set_recording(False)
        S = enums.QPState
        buf = ctypes.create_string_buffer(4096 * threads)
        counts = [0] * threads
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            mr = pd.reg_mr(ctypes.addressof(buf), len(buf), enums.AccessFlags.LOCAL_WRITE)
            pairs = []
            for _ in range(threads):
                cq = ctx.create_cq(64)
                qp = pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=64))
                for st in (S.INIT, S.RTR, S.RTS):
                    qp.modify(enums.QPAttrMask.STATE, qp_state=st)
                pairs.append((qp, cq))

            def worker(i):
                qp, cq = pairs[i]
                wr = ibverbs.SendWR(
                    i, [mr.sge(64, 4096 * i)], enums.WROpcode.SEND, enums.SendFlags.SIGNALED
                )
                for _ in range(rounds):
                    qp.post_send(wr)
                    got = cq.poll(4)
                    assert [w.wr_id for w in got] == [i], got
                    counts[i] += cq.poll_count(4) + len(got)

            errors = run_together(worker, threads)
            for qp, cq in pairs:
                qp.close()
                cq.close()
            mr.close()
        gil = getattr(sys, "_is_gil_enabled", lambda: True)()
        return counts, errors, gil

    res = recording.run(body, THREADS, 2000)
    counts, errors, gil = res.ok()
    assert errors == []
    assert counts == [2000] * THREADS
    assert res.live == 0, res.live_report


def test_threads_sharing_a_pd_register_and_close_their_own_mrs(recording):
    """The PD's list of children and its Context's are changed by every
    thread at once; none may be lost or left behind."""

    def body(fake, threads, rounds):
        import ctypes

        import ibverbs
        from support.threads import run_together
        from ibverbs import enums

        fake.set_recording(False)
        buf = ctypes.create_string_buffer(4096)
        made = [0] * threads
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:

            def worker(i):
                for _ in range(rounds):
                    mr = pd.reg_mr(ctypes.addressof(buf), 4096, enums.AccessFlags.LOCAL_WRITE)
                    cq = ctx.create_cq(4)
                    mr.close()
                    cq.close()
                    made[i] += 1

            errors = run_together(worker, threads)
            left = fake.live()
        return made, errors, left

    res = recording.run(body, THREADS, 500)
    made, errors, left = res.ok()
    assert errors == []
    assert made == [500] * THREADS
    assert left == 2  # the Context and the PD, closed by the with block after
    assert res.live == 0, res.live_report


def test_close_racing_calls_in_flight_never_frees_under_them(recording):
    """Two threads post (unsignaled: the double's CQ ring stays out of it)
    and query on one QP while the main thread closes it: every call either
    completes or raises VerbsError(EBADF), close() succeeds (or says EBUSY
    and is retried), and nothing is left behind, 50 times over."""

    def body(fake, rounds):  # noqa: C901 (one self-contained child body)
        import ctypes
        import errno
        import threading

        import ibverbs
        from ibverbs import enums

        fake.set_recording(False)
        S = enums.QPState
        buf = ctypes.create_string_buffer(4096)
        outcomes = {"ok": 0, "ebadf": 0, "other": []}
        lock = threading.Lock()
        destroys = 0
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            mr = pd.reg_mr(ctypes.addressof(buf), 4096, enums.AccessFlags.LOCAL_WRITE)
            for _ in range(rounds):
                cq = ctx.create_cq(64)
                qp = pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=64))
                for st in (S.INIT, S.RTR, S.RTS):
                    qp.modify(enums.QPAttrMask.STATE, qp_state=st)
                wr = ibverbs.SendWR(1, [mr.sge(8)], enums.WROpcode.SEND, 0)
                go = threading.Event()

                def poster(qp=qp, wr=wr, go=go):
                    n = ok = 0
                    go.wait()
                    while True:
                        try:
                            qp.post_send(wr)
                            qp.query()
                            ok += 1
                        except ibverbs.VerbsError as e:
                            with lock:
                                if e.errno == errno.EBADF:
                                    outcomes["ebadf"] += 1
                                else:
                                    outcomes["other"].append(repr(e))
                            break
                        n += 1
                        if n > 100000:
                            with lock:
                                outcomes["other"].append("close never took effect")
                            break
                    with lock:
                        outcomes["ok"] += ok

                ts = [threading.Thread(target=poster) for _ in range(2)]
                for t in ts:
                    t.start()
                go.set()
                while True:
                    try:
                        qp.close()
                        break
                    except ibverbs.VerbsError as e:
                        assert e.errno == errno.EBUSY, e  # in flight too long
                for t in ts:
                    t.join()
                destroys += 1
                assert qp.closed
                cq.close()
            mr.close()
        return outcomes, destroys

    res = recording.run(body, 50)
    outcomes, destroys = res.ok()
    assert outcomes["other"] == []
    assert outcomes["ebadf"] == 2 * 50
    assert destroys == 50
    assert res.live == 0, res.live_report


def test_close_racing_the_thread_that_made_the_objects(recording):
    """The thread that made a QP, its CQ and an MR posts and polls while
    the main thread closes all three (the other close-race test has the
    making thread close while others call):
    each of its calls completes or raises VerbsError(EBADF), every close()
    succeeds (after EBUSY retries), nothing is left, 20 times over."""

    def body(fake, rounds):  # noqa: C901 (one self-contained child body)
        import ctypes
        import errno
        import queue
        import threading
        import time

        import ibverbs
        from ibverbs import enums

        fake.set_recording(False)
        S = enums.QPState
        buf = ctypes.create_string_buffer(4096)
        results = []

        def owner(pd, ctx, handed: queue.Queue) -> None:
            deadline = time.monotonic() + 30
            try:
                mr = pd.reg_mr(ctypes.addressof(buf), 4096, enums.AccessFlags.LOCAL_WRITE)
                cq = ctx.create_cq(64)
                qp = pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=64))
                for st in (S.INIT, S.RTR, S.RTS):
                    qp.modify(enums.QPAttrMask.STATE, qp_state=st)
                wr = ibverbs.SendWR(7, [mr.sge(8)], enums.WROpcode.SEND, enums.SendFlags.SIGNALED)
                handed.put((mr, cq, qp))
                while time.monotonic() < deadline:
                    qp.post_send(wr)
                    cq.poll_count(4)
                results.append("close never took effect")
            except ibverbs.VerbsError as e:
                results.append("ebadf" if e.errno == errno.EBADF else repr(e))

        def close(h) -> None:
            while True:
                try:
                    return h.close()
                except ibverbs.VerbsError as e:
                    assert e.errno == errno.EBUSY, e  # a call in flight

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            for _ in range(rounds):
                handed: queue.Queue = queue.Queue()
                t = threading.Thread(target=owner, args=(pd, ctx, handed))
                t.start()
                mr, cq, qp = handed.get(timeout=60)
                for h in (qp, cq, mr):
                    close(h)
                t.join()
                assert qp.closed and cq.closed and mr.closed
        return results

    res = recording.run(body, 20)
    assert res.ok() == ["ebadf"] * 20
    assert res.live == 0, res.live_report


def test_threads_attach_and_detach_groups_on_one_qp(recording):
    """Threads join and leave multicast groups on one UD QP at once: the
    QP's list of groups (which close() detaches) must lose no entry and
    keep no stale one, so close() detaches exactly the groups still
    joined."""

    def body(fake, threads, rounds):

        import ibverbs
        from support.threads import run_together

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = ctx.create_cq(16)
            qp = pd.create_qp(ibverbs.QPInitAttr(cq, cq, qp_type=ibverbs.QPType.UD))

            def worker(i):
                for r in range(rounds):
                    gid = f"ff12::{i + 1:x}:{r + 1:x}"
                    qp.attach_mcast(gid, lid=0xC000 + i)
                    if r % 2:
                        qp.detach_mcast(gid, lid=0xC000 + i)

            errors = run_together(worker, threads)
            fake.clear()
            qp.close()  # detaches what is still joined
            cq.close()
        return errors

    res = recording.run(body, THREADS, 200)
    assert res.ok() == []
    left = sorted((d["gid"], d["lid"]) for d in res.calls("detach_mcast"))
    want = sorted(
        (ipaddress.IPv6Address(f"ff12::{i + 1:x}:{r + 1:x}").packed, 0xC000 + i)
        for i in range(THREADS)
        for r in range(0, 200, 2)
    )
    assert left == want
    assert res.live == 0, res.live_report


def test_rereg_moving_an_mr_between_pds_while_threads_read_it(recording):
    """One thread moves an MR from PD to PD (MR.rereg with CHANGE_PD and a
    new translation and owner) while others read its pd and owner and
    register and close MRs of their own on both PDs: the PDs' lists of
    children stay whole and no read sees a freed object."""

    def body(fake, threads, rounds):
        import ctypes
        import threading

        import ibverbs
        from ibverbs import enums

        fake.set_recording(False)
        F = enums.ReregMRFlags
        bufs = [ctypes.create_string_buffer(4096) for _ in range(2)]
        errors, stop = [], threading.Event()
        with ibverbs.Context("fake0") as ctx:
            pds = [ctx.alloc_pd(), ctx.alloc_pd()]
            mr = pds[0].reg_mr(ctypes.addressof(bufs[0]), 4096, 1)

            def mover():
                try:
                    for r in range(1, rounds + 1):
                        b = bufs[r % 2]
                        mr.rereg(
                            F.CHANGE_PD | F.CHANGE_TRANSLATION,
                            pd=pds[r % 2],
                            addr=ctypes.addressof(b),
                            length=4096,
                            owner=bytearray(8),  # dropped by the next move
                        )
                except BaseException as e:
                    errors.append(repr(e))
                finally:
                    stop.set()

            def reader(i):
                try:
                    while not stop.is_set():
                        assert mr.pd in pds and isinstance(mr.owner, (bytearray, type(None)))
                        own = pds[i % 2].reg_mr(ctypes.addressof(bufs[0]), 64, 1)
                        own.close()
                except BaseException as e:
                    errors.append(repr(e))

            ts = [threading.Thread(target=reader, args=(i,)) for i in range(threads - 1)]
            ts.append(threading.Thread(target=mover))
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            last, busy = mr.pd is pds[rounds % 2], None
            try:
                pds[rounds % 2].close()
            except ibverbs.VerbsError as e:
                busy = e.errno
            mr.close()
            for pd in pds:
                pd.close()
        return errors, last, busy

    res = recording.run(body, THREADS, 300)
    errors, last, busy = res.ok()
    assert errors == []
    assert last and busy == 16  # the MR is the child of the PD it moved to
    assert res.live == 0, res.live_report


def test_threads_post_and_poll_each_completion_exactly_once(recording):
    def body(fake, record, per_thread):
        import threading

        import ibverbs
        from ibverbs import enums

        fake.set_recording(record)
        nthreads = 4
        got = [None] * nthreads
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            shared_cq = ctx.create_cq(4096)
            shared = pd.create_qp(ibverbs.QPInitAttr(shared_cq, max_send_wr=4096))
            for qp in (shared,):
                for st in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
                    qp.modify(enums.QPAttrMask.STATE, qp_state=st)

            def own(k):
                cq = ctx.create_cq(64)
                qp = pd.create_qp(ibverbs.QPInitAttr(cq))
                for st in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
                    qp.modify(enums.QPAttrMask.STATE, qp_state=st)
                seen = []
                sge = ibverbs.SGE(0x1000, 8, 1)
                for i in range(per_thread):
                    wr_id = k * per_thread + i
                    qp.post_send(ibverbs.SendWR(wr_id, sge, send_flags=enums.SendFlags.SIGNALED))
                    seen += [w.wr_id for w in cq.poll(2)]
                    # and one on the shared QP, polled by whoever comes
                    shared.post_send(
                        ibverbs.SendWR(wr_id, sge, send_flags=enums.SendFlags.SIGNALED)
                    )
                    seen += [-1 - w.wr_id for w in shared_cq.poll(2)]
                qp.close()
                cq.close()
                got[k] = seen

            threads = [threading.Thread(target=own, args=(k,)) for k in range(nthreads)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rest = [-1 - w.wr_id for w in shared_cq.poll(4096)]
            shared.close()
            shared_cq.close()
        fake.set_recording(True)
        own_ids = sorted(x for g in got for x in g if x >= 0)
        shared_ids = sorted(-1 - x for g in got + [rest] for x in g if x < 0)
        total = nthreads * per_thread
        return [
            own_ids == list(range(total)),
            shared_ids == list(range(total)),
            fake.cq_overflows(),
        ]

    for record, n in ((False, 2000), (True, 300)):
        res = recording.run(body, record, n)
        assert res.ok() == [True, True, 0], record
        posts = len(res.calls("post_send"))
        assert posts == (8 * n if record else 0)
        assert res.live == 0, res.live_report
