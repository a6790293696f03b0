"""close() racing calls in another thread; run in a subprocess by
test_rel_races.py (a crash or a hang is then a failed test).

    python race_cases.py DEVICE [--scale F] [--seed S]

Each race: a worker thread (one long-lived thread: starting a thread costs
tens of milliseconds in the emulated guest) enters a call; after a random
delay (none, a GIL yield, or up to 5 ms) the main thread closes a handle
the call uses.  The contract (README, "Safety"):

- close() either succeeds (the call was not in flight: it then raises
  VerbsError(EBADF) when it runs) or raises VerbsError(EBUSY) (the call is
  in flight, or the handle still has children/users); nothing else;
- the worker's call then returns or raises cleanly, once the main thread
  generates what it waits for (a completion event, an async event);
- nothing crashes.

Prints one JSON line per kind of race and "DONE".
"""

from __future__ import annotations

import array
import errno
import json
import os
import random
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

# Run as a script: tests/ on sys.path, for the support package.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import ibverbs as ib  # noqa: E402

from support import GID_INDEX, PORT  # noqa: E402
from support.rdma import ALL_ACCESS, make_rc_pair, poll_until  # noqa: E402
from support.timeouts import scaled  # noqa: E402

DELAYS = (None, 0, 1e-5, 1e-4, 1e-3, 5e-3)
WAKE_TIMEOUT = scaled(30.0)


def delay(rng):
    d = rng.choice(DELAYS)
    if d is not None:
        time.sleep(d)


def try_close(h):
    """'closed' or 'EBUSY'; anything else raises."""
    try:
        h.close()
        return "closed"
    except ib.VerbsError as e:
        if e.errno != errno.EBUSY:
            raise
        return "EBUSY"


def outcome(fut):
    """The worker's result: ('ok', value) or ('EBADF', None); anything
    else raises."""
    try:
        exc = fut.exception(timeout=WAKE_TIMEOUT)
    except TimeoutError:
        # The worker is stuck in a call that nothing will wake: every
        # later race would time out too.  Stop here, loudly.
        print(
            json.dumps(
                {
                    "kind": "STUCK",
                    "n": 0,
                    "counts": {},
                    "errors": [
                        "the worker thread did not return within "
                        f"{WAKE_TIMEOUT} s:\n" + "".join(traceback.format_stack())
                    ],
                }
            ),
            flush=True,
        )
        os._exit(3)
    if exc is None:
        return "ok", fut.result()
    if isinstance(exc, ib.VerbsError) and exc.errno == errno.EBADF:
        return "EBADF", None
    raise exc


class Tally:
    def __init__(self, kind):
        self.kind = kind
        self.n = 0
        self.counts = {}
        self.errors = []
        self.t0 = time.monotonic()

    def add(self, key):
        self.counts[key] = self.counts.get(key, 0) + 1

    def run(self, n, fn):
        for i in range(n):
            try:
                fn(i)
            except BaseException as e:  # noqa: BLE001
                self.errors.append(
                    f"race {i}: {type(e).__name__}: {e}\n" + traceback.format_exc()[-1500:]
                )
                if len(self.errors) >= 5:
                    break
            self.n += 1

    def report(self):
        print(
            json.dumps(
                {
                    "kind": self.kind,
                    "n": self.n,
                    "counts": self.counts,
                    "errors": self.errors,
                    "seconds": round(time.monotonic() - self.t0, 2),
                }
            ),
            flush=True,
        )


def ud_sender(ctx, pd, cq, ah_attr):
    """A UD QP in RTS whose sends complete on cq (to itself: a UD send
    completes at the sender whether or not anyone receives it)."""
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.UD, max_send_wr=64))
    qp.to_init(PORT, 0)
    qp.to_rtr(None)
    qp.to_rts(0)
    ah = pd.create_ah(ah_attr)
    return qp, ah


def main(argv):
    device = argv[1]
    scale = float(argv[argv.index("--scale") + 1]) if "--scale" in argv else 1.0
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 1234
    rng = random.Random(seed)
    sys.setswitchinterval(1e-4)  # more interleavings of GIL-holding calls
    pool = ThreadPoolExecutor(max_workers=1)
    N = lambda k: max(1, int(k * scale))  # noqa: E731

    ctx = ib.Context(device)
    pd = ctx.alloc_pd()
    buf = bytearray(4096)
    mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
    gid = ctx.query_gid(PORT, GID_INDEX)
    ah_attr = ib.AHAttr(dgid=gid, sgid_index=GID_INDEX, port_num=PORT)
    sig = ib.SendFlags.SIGNALED

    # --- A: get_cq_event in flight; close the channel, the PD or the
    # Context: always EBUSY (busy, users or children).  (The CQs and QPs
    # are not used by the wait itself: closing them is allowed.)
    ch = ctx.create_comp_channel()
    # Both CQs on the channel; only qa's (ca) is ever armed.
    qa, ca, qb, cb = make_rc_pair(ctx, pd, channel=ch, cq_size=64)
    swr = ib.SendWR(wr_id=7, sg_list=[mr.sge(8)], send_flags=sig)
    rwr = ib.RecvWR(wr_id=8, sg_list=[mr.sge(8, offset=64)])

    def wait_cq_event():
        cq = ch.get_cq_event()
        cq.ack_events(1)
        return cq

    t = Tally("A get_cq_event vs close of channel/PD/Context")

    def race_a(i):
        ca.req_notify()
        fut = pool.submit(wait_cq_event)
        delay(rng)
        target = (ch, pd, ctx)[i % 3]
        got = try_close(target)
        if got != "EBUSY":
            raise AssertionError(f"{target!r} closed while in use")
        t.add(got)
        qb.post_recv(rwr)
        qa.post_send(swr)
        kind, cq = outcome(fut)
        assert kind == "ok" and cq is ca, (kind, cq)
        poll_until(ca, 1)[0].raise_for_status()
        poll_until(cb, 1)[0].raise_for_status()

    t.run(N(250), race_a)
    t.report()

    # --- B: get_cq_event on a channel nobody uses yet; close the channel:
    # succeeds before the call starts (the call: EBADF), EBUSY once it
    # waits (then a CQ on it gets a completion to wake it).
    t = Tally("B get_cq_event vs close of an unused channel")

    def race_b(i):
        ch2 = ctx.create_comp_channel()
        fut = pool.submit(lambda: ch2.get_cq_event())
        delay(rng)
        got = try_close(ch2)
        if got == "closed":
            kind, _ = outcome(fut)
            assert kind == "EBADF", kind
            t.add("closed, call EBADF")
            return
        # In flight: wake it with a completion event on a CQ of ch2.
        cq2 = ctx.create_cq(4, ch2)
        qp, ah = ud_sender(ctx, pd, cq2, ah_attr)
        cq2.req_notify()
        qp.post_send(
            ib.SendWR(
                wr_id=1,
                sg_list=[mr.sge(8)],
                send_flags=sig,
                ah=ah,
                remote_qpn=qp.qp_num,
                remote_qkey=0x11111111,
            )
        )
        kind, cq = outcome(fut)
        assert kind == "ok" and cq is cq2, (kind, cq)
        assert try_close(cq2) == "EBUSY"  # the QP uses it
        cq2.ack_events(1)
        poll_until(cq2, 1)
        for o in (ah, qp, cq2, ch2):
            o.close()
        t.add("EBUSY, call woken")

    t.run(N(200), race_b)
    t.report()

    # --- C: get_async_event on a fresh Context; close it: succeeds before
    # the call starts (EBADF), EBUSY while it waits (then a CQ overrun on
    # that Context delivers CQ_ERR to wake it).
    t = Tally("C get_async_event vs Context.close")

    def race_c(i):
        c3 = ib.Context(device)
        fut = pool.submit(lambda: c3.get_async_event())
        delay(rng)
        got = try_close(c3)
        if got == "closed":
            kind, _ = outcome(fut)
            assert kind == "EBADF", kind
            t.add("closed, call EBADF")
            return
        pd3 = c3.alloc_pd()
        cq3 = c3.create_cq(1)
        qp, ah = ud_sender(c3, pd3, cq3, ah_attr)
        m3 = pd3.reg_mr(mr.addr, 64, 0)
        qp.post_send(
            [
                ib.SendWR(
                    wr_id=k,
                    sg_list=[m3.sge(8)],
                    send_flags=sig,
                    ah=ah,
                    remote_qpn=qp.qp_num,
                    remote_qkey=0x11111111,
                )
                for k in range(cq3.cqe + 4)
            ]
        )
        kind, ev = outcome(fut)
        assert kind == "ok" and ev.event_type == ib.EventType.CQ_ERR, (kind, ev)
        assert try_close(cq3) == "EBUSY"  # the unacked event holds it
        ev.ack()
        for o in (ah, qp, m3, cq3, pd3, c3):
            o.close()
        t.add("EBUSY, call woken")

    t.run(N(100), race_c)
    t.report()

    # --- D: post_send / poll (they keep the GIL) in a loop; close the QP,
    # then the CQ: the loop sees EBADF at its next call, never a crash.
    t = Tally("D post_send/poll loop vs close of QP and CQ")

    def race_d(i):
        cq4 = ctx.create_cq(256)
        qp, ah = ud_sender(ctx, pd, cq4, ah_attr)
        wr = ib.SendWR(
            wr_id=1, sg_list=[mr.sge(8)], ah=ah, remote_qpn=qp.qp_num, remote_qkey=0x11111111
        )
        stop = threading.Event()

        def loop():
            k = 0
            while not stop.is_set():
                if i % 2 == 0:
                    try:
                        qp.post_send(wr)
                    except ib.VerbsError as e:
                        if e.errno != errno.ENOMEM:  # send queue full
                            raise
                cq4.poll(16)
                k += 1
            return k

        fut = pool.submit(loop)
        delay(rng)
        got_qp = try_close(ah), try_close(qp)
        got_cq = try_close(cq4)  # its only user, the QP, is closed
        assert got_qp == ("closed", "closed") and got_cq == "closed", (got_qp, got_cq)
        kind, _ = outcome(fut)
        stop.set()
        assert kind == "EBADF", kind
        t.add("closed, loop EBADF")

    t.run(N(250), race_d)
    t.report()

    # --- E: QP.query / state (GIL released, QP busy) in a loop; close the
    # QP: EBUSY while inside, else closed and the loop sees EBADF.
    t = Tally("E QP.query loop vs QP.close")

    def race_e(i):
        cq5 = ctx.create_cq(4)
        qp = pd.create_qp(ib.QPInitAttr(send_cq=cq5))
        stop = threading.Event()

        def loop():
            while not stop.is_set():
                qp.query(ib.QPAttrMask.STATE) if i % 2 else qp.state

        fut = pool.submit(loop)
        delay(rng)
        got = try_close(qp)
        while got == "EBUSY":
            t.add("EBUSY")
            time.sleep(rng.choice((0, 1e-4)))
            got = try_close(qp)
        kind, _ = outcome(fut)
        assert kind == "EBADF", kind
        t.add("closed, loop EBADF")
        cq5.close()

    t.run(N(100), race_e)
    t.report()

    # --- F: reg_mr (GIL released, PD busy) and MR.close in a loop; close
    # the PD: EBUSY while busy or an MR is open, else closed and the loop
    # sees EBADF.
    t = Tally("F reg_mr loop vs PD.close")

    def race_f(i):
        pd6 = ctx.alloc_pd()

        def loop():
            while True:
                pd6.reg_mr(mr.addr, 4096, ib.AccessFlags.LOCAL_WRITE).close()

        fut = pool.submit(loop)
        delay(rng)
        got = try_close(pd6)
        while got == "EBUSY":
            t.add("EBUSY")
            time.sleep(rng.choice((0, 1e-4)))
            got = try_close(pd6)
        kind, _ = outcome(fut)
        assert kind == "EBADF", kind
        t.add("closed, loop EBADF")

    t.run(N(100), race_f)
    t.report()

    # --- G: two threads poll one CQ while completions arrive: each
    # completion is reaped exactly once, by one of them.
    t = Tally("G two threads polling one CQ")
    cq7 = ctx.create_cq(512)
    qp7, ah7 = ud_sender(ctx, pd, cq7, ah_attr)
    qp7_wrs = [
        ib.SendWR(
            wr_id=k,
            sg_list=[mr.sge(8)],
            send_flags=sig,
            ah=ah7,
            remote_qpn=qp7.qp_num,
            remote_qkey=0x11111111,
        )
        for k in range(32)
    ]

    def race_g(i):
        seen, theirs = [], []
        stop = threading.Event()

        def reaper():
            while not stop.is_set():
                theirs.extend(w.wr_id for w in cq7.poll((1, 4, 32)[i % 3]))

        fut = pool.submit(reaper)
        qp7.post_send(qp7_wrs)
        deadline = time.monotonic() + WAKE_TIMEOUT
        while len(seen) + len(theirs) < 32 and time.monotonic() < deadline:
            seen.extend(w.wr_id for w in cq7.poll(rng.choice((1, 8))))
        stop.set()
        outcome(fut)
        got = sorted(seen + theirs + [w.wr_id for w in cq7.poll(64)])
        assert got == list(range(32)), got
        t.add("each completion once")

    t.run(N(40), race_g)
    t.report()
    for o in (ah7, qp7, cq7):
        o.close()

    # --- H: a SendBatch run by progress() (it keeps the GIL) in a loop
    # over a fresh RC pair; close the batch's MR, or (every 3rd) its QP:
    # the close succeeds between calls and the loop's next call is EBADF,
    # never a post of a stale lkey or a freed QP.
    t = Tally("H SendBatch.progress loop vs close of its MR or QP")
    rows = array.array("Q", range(0, 4096, 64))

    def race_h(i):
        qh, ch_, qh2, ch2 = make_rc_pair(ctx, pd, cq_size=256)
        mrh = ib.reg_tensor(pd, bytearray(4096), ALL_ACCESS)
        batch = ib.SendBatch(mrh, rows, 64, rows, mr.rkey, remote_base=mr.addr, signal_every=8)
        stop = threading.Event()

        def loop():
            while not stop.is_set():
                batch.progress(qh, 32, 8)

        fut = pool.submit(loop)
        delay(rng)
        victim = qh if i % 3 == 2 else mrh
        got = try_close(victim)
        kind, _ = outcome(fut)
        stop.set()
        assert got == "closed" and kind == "EBADF", (got, kind)
        t.add(f"{'QP' if victim is qh else 'MR'} closed, loop EBADF")
        batch.reset()
        for o in (qh, qh2, ch_, ch2, mrh):
            o.close()

    t.run(N(30), race_h)
    t.report()

    pool.shutdown(wait=True)
    for o in (qa, qb, ca, cb, ch, mr, pd, ctx):
        o.close()
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv)
