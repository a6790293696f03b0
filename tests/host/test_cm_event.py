"""CMEvent and the wait for events (cm_event.c) against the recording double
of librdmacm (tests/fakes/recording/cm.c): every event type with its
status and private data of each length, values no header names, the
timeout argument, signals during a wait, and a failing read."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def cm(recording):
    return recording.with_rdmacm()


def test_every_event_type_with_its_fields(cm):
    def body(fake):
        import ibverbs as ib

        c = ib.CMID.resolve("192.0.2.9")
        out = []
        for t in ib.CMEventType:
            if t == ib.CMEventType.CONNECT_REQUEST:
                continue
            for n, status in ((0, 0), (1, -110), (255, 28)):
                pdata = bytes((t + i) & 0xFF for i in range(n))
                fake.cm_queue(c.fd, t, status, pdata)
                ev = c.poll_event()
                out.append(
                    [
                        int(t),
                        n,
                        type(ev.event).__name__,
                        int(ev.event),
                        ev.status,
                        ev.private_data == pdata,
                        len(ev.private_data),
                        ev.cmid,
                        repr(ev),
                    ]
                )
        c.close()
        return [out, fake.live_report()]

    rows, live = cm.run(body).ok()
    assert live == ""
    assert len(rows) == 15 * 3
    for t, n, typ, ev, status, same, got_len, cmid, rep in rows:
        assert (typ, ev, cmid) == ("CMEventType", t, None)
        assert status == {0: 0, 1: -110, 255: 28}[n]
        assert rep == f"<ibverbs.CMEvent FAKE_CM_EVENT_{t} status={status}>"
        if t in (12, 13):  # MULTICAST_JOIN/ERROR: param.ud, no private data
            assert got_len == 0
        else:
            assert same and got_len == n


def test_an_event_no_header_names(cm):
    def body(fake):
        import ibverbs as ib
        from cm_helpers import close_all, qp_of, world

        c = ib.CMID.resolve("192.0.2.9")
        fake.cm_queue(c.fd, 99, -5, b"\xff")
        ev = c.get_event(timeout=None)
        out = [type(ev.event).__name__, ev.event, ev.status, ev.private_data, repr(ev)]
        c.close()
        # an unnamed event ends a connect: ECONNABORTED, the event a number
        c, pd, cq = world()
        qp = qp_of(c, pd, cq)
        fake.cm_answer("connect", 98)
        try:
            c.connect()
        except ib.VerbsError as e:
            out.append([e.errno, e.event, str(e)])
        close_all(qp, cq, pd, c)
        return out + [fake.live_report()]

    *ev, err, live = cm.run(body).ok()
    assert ev == ["int", 99, -5, "ff", "<ibverbs.CMEvent ? status=-5>"] and live == ""
    assert err[:2] == [103, 98] and err[2].endswith("port 4791 (?, status 0)")


def test_the_timeout_argument(cm):
    def body(fake):
        import ibverbs as ib
        from cm_helpers import catch

        c = ib.CMID.resolve("192.0.2.9")
        out = {
            "negative": catch(c.get_event, -1),
            "nan": catch(c.get_event, float("nan")),
            "huge": catch(c.get_event, 1e12),
            "text": catch(c.get_event, "1"),
            "keyword": catch(c.get_event, timeout=0.01),
            "zero": catch(c.get_event, 0),
        }
        fake.cm_queue(c.fd, ib.CMEventType.ADDR_CHANGE)
        out["ready"] = int(c.get_event(0).event)
        c.close()
        out["closed"] = [catch(c.get_event), catch(c.poll_event), catch(lambda: c.fd)]
        out["repr"] = repr(c)
        return out

    v = cm.run(body).ok()
    for k in ("negative", "nan", "huge"):
        assert v[k][0] == "ValueError" and "timeout must be in range" in v[k][3], v[k]
    assert v["text"][0] == "TypeError"
    assert (
        v["keyword"][0] == "TimeoutError"
        and "within 10 ms while waiting for an event" in v["keyword"][3]
    )
    assert v["zero"][0] == "TimeoutError" and "within 0 ms" in v["zero"][3]
    assert v["ready"] == 14
    for err in v["closed"]:
        assert err[:2] == ["VerbsError", 9], err
    assert v["repr"].endswith("closed>")


def test_a_failing_read_of_the_channel(cm):
    def body(fake):
        import errno as E

        import ibverbs as ib
        from cm_helpers import catch

        c = ib.CMID.resolve("192.0.2.9")
        fake.cm_queue(c.fd, ib.CMEventType.ADDR_CHANGE)
        fake.fail("get_cm_event", E.EIO)
        out = [catch(c.poll_event)]
        # EAGAIN from a readable channel (another reader took the event):
        # the wait goes on, and reads the event the next time round
        fake.fail("get_cm_event", E.EAGAIN)
        fake.clear()
        out.append(int(c.get_event(None).event))
        out.append([r.verb for r in fake.records()])
        out.append(c.poll_event())
        c.close()
        return out + [fake.live_report()]

    io, ev, calls, after, live = cm.run(body).ok()
    assert io[:3] == ["VerbsError", 5, "rdma_get_cm_event"]
    assert ev == 14 and calls == ["get_cm_event", "get_cm_event", "ack_cm_event"]
    assert after is None and live == ""


def test_a_signal_during_a_wait(cm):
    """EINTR: the wait runs the signal handlers; one that raises ends it
    with its exception, one that returns lets it go on."""

    def body(fake):
        import signal

        import ibverbs as ib

        c = ib.CMID.resolve("192.0.2.9")
        out = []

        def stop(*_):
            raise KeyboardInterrupt

        signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        try:
            c.get_event(5)
        except KeyboardInterrupt:
            out.append("interrupted")
        seen = []
        signal.signal(signal.SIGALRM, lambda *_: seen.append(1))
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        try:
            c.get_event(0.3)
        except TimeoutError:
            out.append(["timeout", len(seen)])
        c.close()
        return out

    assert cm.run(body).ok() == ["interrupted", ["timeout", 1]]


def test_cm_event_is_not_built_directly(cm):
    def body(fake):
        import ibverbs as ib
        from cm_helpers import catch

        return catch(ib.CMEvent)

    assert cm.run(body).ok()[0] == "TypeError"
