"""CMID against the recording double of librdmacm (tests/fakes/recording/cm.c,
loaded through IBVERBS_LIBRDMACM): what resolve, create_qp, connect,
accept, reject, disconnect and close pass to librdmacm, each of their
failures (a VerbsError naming the verb, with its errno) and the error
events, with nothing leaked (the double's live counts back to zero)."""

from __future__ import annotations

import pytest

from fakes.cm_helpers import verbs_errors_are


@pytest.fixture(scope="module")
def cm(recording):
    return recording.with_rdmacm()


def test_resolve_passes_the_addresses_and_owns_what_it_made(cm):
    def body(fake):
        import ibverbs as ib

        c = ib.CMID.resolve("192.0.2.9", 4791, "192.0.2.1", timeout_ms=500)
        out = {
            "repr": repr(c),
            "host": c.host,
            "port": c.port,
            "source": c.source,
            "context": c.context.name,
            "private_data": c.private_data,
            "qp": c.qp,
            "connected": c.connected,
            "fd": c.fd >= 0,
        }
        c.close()
        c.close()  # idempotent
        out["closed"] = repr(c)
        return out

    res = cm.run(body)
    v = res.ok()
    assert v == {
        "repr": "<ibverbs.CMID host='192.0.2.9' port=4791 resolved>",
        "host": "192.0.2.9",
        "port": 4791,
        "source": "192.0.2.1",
        "context": "fake0",
        "private_data": None,
        "qp": None,
        "connected": False,
        "fd": True,
        "closed": "<ibverbs.CMID host='192.0.2.9' port=4791 closed>",
    }
    dst, src = res.calls("getaddrinfo")
    assert (dst["node"], dst["service"], dst["hints.ai_flags"]) == ("192.0.2.9", "4791", 0)
    assert (src["node"], src["hints.ai_flags"]) == ("192.0.2.1", 1)  # RAI_PASSIVE
    assert dst["hints.ai_port_space"] == 0x106 and dst["hints.ai_qp_type"] == 2  # TCP, RC
    ra = res.one("resolve_addr")
    assert (ra["src_addr"], ra["dst_addr"], ra["dst_addr.port"], ra["timeout_ms"]) == (
        "192.0.2.1",
        "192.0.2.9",
        4791,
        500,
    )
    assert res.one("resolve_route")["timeout_ms"] == 500
    assert res.one("create_id")["ps"] == 0x106
    assert len(res.calls("ack_cm_event")) == 2 == len(res.calls("get_cm_event"))
    assert len(res.calls("freeaddrinfo")) == 2
    assert res.verbs()[-2:] == ["destroy_id", "destroy_event_channel"]
    # librdmacm's own libibverbs calls (opening fake0) are none of the binding's
    assert "open_device" not in res.verbs() and "close_device" not in res.verbs()
    assert res.live == 0, res.live_report


def test_each_failure_of_resolve_is_a_verbs_error_and_leaks_nothing(cm):
    def body(fake):
        import errno as E

        import ibverbs as ib

        from cm_helpers import each_failure

        def resolve():
            return ib.CMID.resolve("192.0.2.9", 7, source="192.0.2.1")

        return each_failure(
            fake,
            [
                (f"{verb}/{skip}", verb, err, skip, resolve)
                for verb, skip, err in (
                    ("getaddrinfo", 0, E.ENOMEM),
                    ("getaddrinfo", 1, E.EINVAL),  # the source's
                    ("create_event_channel", 0, E.EMFILE),
                    ("create_id", 0, E.ENOMEM),
                    ("resolve_addr", 0, E.EADDRNOTAVAIL),
                    ("resolve_route", 0, E.ETIMEDOUT),
                    ("get_cm_event", 0, E.EIO),
                    ("get_cm_event", 1, E.EIO),
                )
            ],
        )

    verbs_errors_are(
        cm.run(body).ok(),
        {
            "getaddrinfo/0": (12, "rdma_getaddrinfo", "cannot resolve host 192.0.2.9 port 7"),
            "getaddrinfo/1": (22, "rdma_getaddrinfo", "cannot resolve source 192.0.2.1"),
            "create_event_channel/0": (24, "rdma_create_event_channel", ""),
            "create_id/0": (12, "rdma_create_id", ""),
            "resolve_addr/0": (99, "rdma_resolve_addr", "192.0.2.9 port 7"),
            "resolve_route/0": (110, "rdma_resolve_route", ""),
            "get_cm_event/0": (5, "rdma_get_cm_event", ""),
            "get_cm_event/1": (5, "rdma_get_cm_event", ""),
        },
    )


def test_getaddrinfo_codes_become_errnos(cm):
    """rdma_getaddrinfo's EAI_* answers (negative) are no errno: each
    becomes the errno the binding documents; -1 and EAI_SYSTEM read
    errno (none set here: EINVAL)."""

    def body(fake):
        import socket

        import ibverbs as ib

        from cm_helpers import catch, with_live

        out = {}
        for name in (
            "EAI_AGAIN",
            "EAI_MEMORY",
            "EAI_SERVICE",
            "EAI_FAMILY",
            "EAI_SOCKTYPE",
            "EAI_NONAME",
            "EAI_FAIL",
            "EAI_SYSTEM",
            "EAI_BADFLAGS",
        ):
            fake.fail("getaddrinfo", int(getattr(socket, name)))
            out[name] = catch(ib.CMID.resolve, "192.0.2.9", 7)
        out["name"] = catch(ib.CMID.resolve, "no.such.host.invalid")
        out["listener"] = catch(ib.CMListener, 7, "not-an-address")
        return with_live(fake, out)

    v = cm.run(body).ok()
    assert v.pop("live") == ""
    errs = {k: (e[1], e[2]) for k, e in v.items()}
    want = {
        "EAI_AGAIN": 11,
        "EAI_MEMORY": 12,
        "EAI_SERVICE": 22,
        "EAI_FAMILY": 22,
        "EAI_SOCKTYPE": 22,
        "EAI_NONAME": 113,
        "EAI_FAIL": 113,
        "EAI_SYSTEM": 22,
        "EAI_BADFLAGS": 22,
        "name": 113,
        "listener": 113,
    }
    assert errs == {k: (e, "rdma_getaddrinfo") for k, e in want.items()}
    assert "getaddrinfo error" in v["EAI_NONAME"][3] and "no.such.host.invalid" in v["name"][3]
    assert "getaddrinfo error" not in v["EAI_BADFLAGS"][3]


def test_error_events_of_resolve(cm):
    """Each error event ends resolve with a VerbsError of the step, its
    errno from the status (negative errno) or the event, and the event's
    type, status and private data attached; ADDR_CHANGE and TIMEWAIT_EXIT
    are skipped."""

    def body(fake):
        import ibverbs as ib
        from cm_helpers import with_live

        T = ib.CMEventType
        out = {}
        for key, verb, answers in (
            ("addr_error", "resolve_addr", [(T.ADDR_ERROR, -110, b"")]),
            ("route_error", "resolve_route", [(T.ROUTE_ERROR, -113, b"x")]),
            ("unreachable", "resolve_route", [(T.UNREACHABLE, 0, b"")]),
            ("removal", "resolve_addr", [(T.DEVICE_REMOVAL, 0, b"")]),
            ("other", "resolve_addr", [(T.CONNECT_ERROR, 0, b"")]),
            ("rejected", "resolve_route", [(T.REJECTED, 28, b"\x01\x02")]),
            # no negative errno: INT_MIN (whose negation overflows), -4096
            ("int_min", "resolve_addr", [(T.ADDR_ERROR, -(2**31), b"")]),
            ("not_errno", "resolve_route", [(T.UNREACHABLE, -4096, b"")]),
            (
                "skipped",
                "resolve_addr",
                [(T.ADDR_CHANGE, 0, b""), (T.TIMEWAIT_EXIT, 0, b""), (T.ADDR_RESOLVED, 0, b"")],
            ),
        ):
            for ev, status, pdata in answers:
                fake.cm_answer(verb, ev, status, pdata)
            try:
                ib.CMID.resolve("192.0.2.9").close()
                out[key] = None
            except ib.VerbsError as e:
                out[key] = [
                    e.errno,
                    e.operation,
                    int(e.event),
                    e.status,
                    e.private_data.hex(),
                    str(e),
                ]
        return with_live(fake, out)

    v = cm.run(body).ok()
    assert v.pop("live") == ""
    assert v.pop("skipped") is None
    assert {k: x[:5] for k, x in v.items()} == {
        "addr_error": [110, "rdma_resolve_addr", 1, -110, ""],
        "route_error": [113, "rdma_resolve_route", 3, -113, "78"],
        "unreachable": [113, "rdma_resolve_route", 7, 0, ""],
        "removal": [19, "rdma_resolve_addr", 11, 0, ""],
        "other": [103, "rdma_resolve_addr", 6, 0, ""],
        "rejected": [111, "rdma_resolve_route", 8, 28, "0102"],
        "int_min": [103, "rdma_resolve_addr", 1, -(2**31), ""],
        "not_errno": [113, "rdma_resolve_route", 7, -4096, ""],
    }
    assert "while resolving the route (FAKE_CM_EVENT_8, status 28)" in v["rejected"][5]
    assert "rejected by the peer" in v["rejected"][5]


def test_resolve_times_out_without_an_event(cm):
    def body(fake):
        import time

        import ibverbs as ib

        fake.cm_answer("resolve_addr", -1)
        t = time.monotonic()
        try:
            ib.CMID.resolve("192.0.2.9", timeout_ms=1)
        except TimeoutError as e:
            return [str(e), time.monotonic() - t, fake.live()]

    msg, took, live = cm.run(body).ok()
    assert msg == "no connection manager event within 1001 ms while resolving the address"
    assert 0.9 < took < 5 and live == 0


def test_text_arguments(cm):
    def body(fake):
        import ibverbs as ib

        from cm_helpers import catch

        return {
            "source_int": catch(ib.CMID.resolve, "192.0.2.9", 7, 5),
            "source_empty": catch(ib.CMID.resolve, "192.0.2.9", 7, ""),
            "host_nul": catch(ib.CMID.resolve, "a\0b"),
            "host_surrogate": catch(ib.CMID.resolve, "\udc80"),
            "host_int": catch(ib.CMID.resolve, 5),
            "calls": [r.verb for r in fake.records()],
        }

    v = cm.run(body).ok()
    assert v.pop("calls") == []  # every argument is checked before a call
    assert v["source_int"][:2] == ["ValueError", None]
    assert "source must be a non-empty str, not <class 'int'>" in v["source_int"][3]
    assert "without NUL" in v["source_empty"][3] and "without NUL" in v["host_nul"][3]
    assert v["host_surrogate"][0] == "UnicodeEncodeError"
    assert v["host_int"][0] == "TypeError"


def test_create_qp(cm):
    def body(fake):
        import ibverbs as ib
        from cm_helpers import catch, qp_of, with_live, world

        c, pd, cq = world()
        out = {"ud": catch(qp_of, c, pd, cq, qp_type=ib.QPType.UD)}
        fake.fail("rdma_create_qp", 12)
        out["fail"] = catch(qp_of, c, pd, cq)
        srq = pd.create_srq(4)
        fake.clear()
        qp = qp_of(c, pd, cq, srq=srq, max_recv_wr=16)
        out["srq_recv_wr"] = fake.one("rdma_create_qp")["qp_init_attr.cap.max_recv_wr"]
        out["same"] = c.qp is qp
        out["again"] = catch(qp_of, c, pd, cq)
        out["close_busy"] = catch(c.close)
        out["still_open"] = repr(c)
        qp.close()
        out["qp_after"] = c.qp
        return with_live(fake, out, srq, cq, pd, c)

    v = cm.run(body).ok()
    assert v["ud"][0] == "ValueError" and "connects RC QPs only" in v["ud"][3]
    assert v["fail"][:3] == ["VerbsError", 12, "rdma_create_qp"]
    assert v["srq_recv_wr"] == 0 and v["same"] is True
    assert v["again"][:3] == ["VerbsError", 16, "rdma_create_qp"]
    assert "a CMID has one QP" in v["again"][3]
    assert v["close_busy"][:3] == ["VerbsError", 16, "rdma_destroy_id"]
    assert "still has its QP open" in v["close_busy"][3]
    assert v["still_open"].endswith("resolved>") and v["qp_after"] is None
    assert v["live"] == ""


def test_connect_passes_its_parameters_and_returns_the_peers_data(cm):
    def body(fake):
        import ibverbs as ib
        from cm_helpers import close_all, qp_of, world

        c, pd, cq = world()
        qp = qp_of(c, pd, cq)
        fake.cm_answer("connect", ib.CMEventType.ESTABLISHED, 0, b"\xaa" * 196)
        fake.clear()
        got = c.connect(
            b"\x01" * 56,
            responder_resources=2,
            initiator_depth=3,
            retry_count=4,
            rnr_retry_count=5,
            timeout=2,
        )
        rec = fake.one("connect")
        out = {"got": got.hex(), "repr": repr(c), "connected": c.connected, "rec": rec.fields}
        fake.clear()
        c.disconnect()
        out["disconnect"] = [r.verb for r in fake.records()]
        out["after"] = [c.connected, repr(c)]
        fake.clear()
        c.disconnect()  # not connected: nothing to do
        out["again"] = [r.verb for r in fake.records()]
        close_all(qp, cq, pd, c)
        return out

    v = cm.run(body).ok()
    assert v["got"] == "aa" * 196 and v["connected"] is True
    assert v["repr"] == "<ibverbs.CMID host='192.0.2.9' port=4791 connected>"
    rec = v["rec"]
    assert rec["conn_param.private_data"] == "01" * 56
    assert [rec[f"conn_param.{k}"] for k in ("private_data_len", "responder_resources")] == [
        56,
        2,
    ]
    assert [
        rec[f"conn_param.{k}"] for k in ("initiator_depth", "retry_count", "rnr_retry_count")
    ] == [3, 4, 5]
    assert v["disconnect"] == ["disconnect"] and v["again"] == []
    assert v["after"] == [False, "<ibverbs.CMID host='192.0.2.9' port=4791 resolved>"]


def test_connect_refusals_and_failures(cm):
    def body(fake):
        import ibverbs as ib
        from cm_helpers import catch, qp_of, with_live, world

        T = ib.CMEventType
        c, pd, cq = world()
        out = {
            "no_qp": catch(c.connect),
            "too_long": catch(c.connect, b"x" * 57),
            "not_bytes": catch(c.connect, bytearray(3)),
            "bad_timeout": catch(c.connect, timeout=-1),
        }
        qp = qp_of(c, pd, cq)
        fake.fail("connect", 110)
        out["fail"] = catch(c.connect)
        fake.cm_answer("connect", T.REJECTED, 28, b"busy")
        try:
            c.connect(b"hi")
        except ib.VerbsError as e:
            out["rejected"] = [e.errno, e.operation, int(e.event), e.status, e.private_data, str(e)]
        fake.cm_answer("connect", T.CONNECT_ERROR, -110)
        out["error_event"] = catch(c.connect)
        out["repr_after_error"] = repr(c)
        # A timeout leaves the attempt under way.
        fake.cm_answer("connect", -1)
        out["timeout"] = catch(c.connect, timeout=0)
        out["repr_pending"] = repr(c)
        out["pending_connect"] = catch(c.connect)
        out["pending_start"] = catch(c.start_connect)
        out["poll_none"] = c.poll_established()
        fake.cm_queue(c.fd, T.ADDR_CHANGE)
        fake.cm_queue(c.fd, T.ESTABLISHED, 0, b"ok")
        out["poll_done"] = c.poll_established()
        out["connected"] = catch(c.connect)
        out["poll_idle"] = catch(c.poll_established)
        c.disconnect()
        out["reject_active"] = catch(c.reject)
        out["accept_active"] = catch(c.accept)
        # start_connect and a failed end
        fake.cm_answer("connect", -1)
        c.start_connect(b"s")
        fake.cm_queue(c.fd, T.UNREACHABLE, 0)
        out["poll_error"] = catch(c.poll_established)
        out["repr_end"] = repr(c)
        # disconnect failure
        fake.cm_answer("connect", T.ESTABLISHED)
        c.connect()
        fake.fail("disconnect", 5)
        out["disconnect_fail"] = catch(c.disconnect)
        out["connected_after"] = c.connected
        return with_live(fake, out, qp, cq, pd, c)

    v = cm.run(body).ok()
    assert v["no_qp"][0] == "ValueError" and "create_qp" in v["no_qp"][3]
    assert (
        v["too_long"][0] == "ValueError" and "57" in v["too_long"][3] and "56" in v["too_long"][3]
    )
    assert v["not_bytes"][0] == "TypeError"
    assert v["bad_timeout"][0] == "ValueError"
    assert v["fail"][:3] == ["VerbsError", 110, "rdma_connect"]
    assert v["rejected"][:5] == [111, "rdma_connect", 8, 28, "62757379"]
    assert "connecting to 192.0.2.9 port 4791" in v["rejected"][5]
    assert v["error_event"][:3] == ["VerbsError", 110, "rdma_connect"]
    assert v["repr_after_error"].endswith("resolved>")
    assert v["timeout"][0] == "TimeoutError" and "connecting to 192.0.2.9" in v["timeout"][3]
    assert v["repr_pending"].endswith("connecting>")
    assert v["pending_connect"][:3] == ["VerbsError", 114, "rdma_connect"]  # EALREADY
    assert v["pending_start"][:3] == ["VerbsError", 114, "rdma_connect"]
    assert v["poll_none"] is None and v["poll_done"] == "6f6b"
    assert v["connected"][:3] == ["VerbsError", 106, "rdma_connect"]  # EISCONN
    assert v["poll_idle"][0] == "ValueError"
    assert v["reject_active"][0] == "ValueError" and v["accept_active"][0] == "ValueError"
    assert v["poll_error"][:3] == ["VerbsError", 113, "rdma_connect"]
    assert v["repr_end"].endswith("resolved>")
    assert v["disconnect_fail"][:3] == ["VerbsError", 5, "rdma_disconnect"]
    assert v["connected_after"] is False
    assert v["live"] == ""


def test_a_peers_disconnect_is_answered(cm):
    def body(fake):
        import ibverbs as ib
        from cm_helpers import close_all, qp_of, world

        T = ib.CMEventType
        c, pd, cq = world()
        qp = qp_of(c, pd, cq)
        c.connect()
        fake.clear()
        fake.cm_queue(c.fd, T.DISCONNECTED)
        ev = c.get_event(timeout=1)
        out = [int(ev.event), c.connected, [r.verb for r in fake.take()]]
        fake.cm_queue(c.fd, T.DISCONNECTED)  # not connected: not answered
        c.poll_event()
        out.append([r.verb for r in fake.take()])
        fake.cm_queue(c.fd, T.ESTABLISHED)
        c.poll_event()
        out.append(c.connected)
        fake.cm_queue(c.fd, T.TIMEWAIT_EXIT)
        c.poll_event()
        out.append(c.connected)
        close_all(qp, cq, pd, c)
        return out

    v = cm.run(body).ok()
    assert v == [
        10,
        False,
        ["get_cm_event", "ack_cm_event", "disconnect"],
        ["get_cm_event", "ack_cm_event"],
        True,
        True,
    ]


def test_close_failures_and_garbage(cm):
    """A failed rdma_destroy_id leaves the CMID open (a retry closes it);
    dropped without close(), the failure is unraisable; a CMID and its
    Context dropped together are collected and closed."""

    def body(fake):
        import gc
        import sys

        import ibverbs as ib

        from cm_helpers import catch

        out = {}
        c = ib.CMID.resolve("192.0.2.9")
        fake.fail("destroy_id", 5)
        out["fail"] = catch(c.close)
        out["open"] = repr(c).endswith("resolved>")
        fake.fail("destroy_id", 5)
        out["exit"] = catch(c.__exit__, None, None, None)
        out["exit_ok"] = c.__exit__(None, None, None)
        seen = []
        sys.unraisablehook = lambda u: seen.append(str(u.exc_value))
        c = ib.CMID.resolve("192.0.2.9")
        fake.fail("destroy_id", 5)
        del c
        gc.collect()
        out["unraisable"] = seen[:]
        out["live_after_failed_drop"] = fake.live_report()
        del seen[:]
        c = ib.CMID.resolve("192.0.2.9")
        ctx = c.context
        del c, ctx
        gc.collect()
        c = ib.CMID.resolve("192.0.2.9")
        fake.fail("destroy_id", 5)
        ctx = c.context
        del c, ctx
        gc.collect()
        out["unraisable_gc"] = seen[:]
        sys.unraisablehook = sys.__unraisablehook__
        return out

    res = cm.run(body)
    v = res.ok()
    assert v["fail"][:3] == ["VerbsError", 5, "rdma_destroy_id"] and v["open"] is True
    assert v["exit"][:3] == ["VerbsError", 5, "rdma_destroy_id"] and v["exit_ok"] is False
    assert len(v["unraisable"]) == 1 and "rdma_destroy_id" in v["unraisable"][0]
    # the failed destroy keeps the id (the double's answer); nothing else
    assert sorted(v["live_after_failed_drop"].split()) == [
        "cm_id=1",
        "context=1",
        "event_channel=1",
    ]
    assert len(v["unraisable_gc"]) == 1 and "rdma_destroy_id" in v["unraisable_gc"][0]


def test_close_while_another_thread_waits_is_refused(cm):
    def body(fake):
        import threading
        import time

        import ibverbs as ib

        from cm_helpers import catch

        c = ib.CMID.resolve("192.0.2.9")
        got = []
        t = threading.Thread(target=lambda: got.append(c.get_event(timeout=10)))
        t.start()
        time.sleep(0.3)
        busy = catch(c.close)
        fake.cm_queue(c.fd, ib.CMEventType.ADDR_CHANGE)
        t.join()
        c.close()
        return [busy, int(got[0].event)]

    busy, ev = cm.run(body).ok()
    assert busy[:3] == ["VerbsError", 16, "rdma_destroy_id"] and ev == 14


def test_a_closed_cmid_refuses_every_method(cm):
    def body(fake):
        from cm_helpers import catch, world

        c, pd, cq = world()
        pd.close()
        cq.close()
        c.close()
        out = {
            name: catch(getattr(c, name))
            for name in (
                "connect",
                "start_connect",
                "accept",
                "start_accept",
                "poll_established",
                "reject",
                "disconnect",
                "get_event",
                "poll_event",
            )
        }
        out["create_qp"] = catch(c.create_qp, None, None)
        out["context"] = catch(lambda: c.context)
        out["fd"] = catch(lambda: c.fd)
        out["values"] = [c.connected, c.host, c.port, c.qp]
        return out

    v = cm.run(body).ok()
    assert v.pop("values") == [False, "192.0.2.9", 4791, None]
    for name, err in v.items():
        assert err[:2] == ["VerbsError", 9], (name, err)  # EBADF


def test_bad_arguments_call_nothing(cm):
    def body(fake):
        from cm_helpers import catch, qp_of, request, with_live, world

        import ibverbs as ib

        c, pd, cq = world()
        L = ib.CMListener(4420)
        r = request(fake, L)
        fake.clear()
        out = {
            "create_qp": catch(c.create_qp, "pd", None),
            "start_connect": catch(c.start_connect, bogus=1),
            "connect_pdata": catch(c.connect, "text"),
            "start_accept": catch(r.start_accept, bogus=1),
            "reject": catch(r.reject, 5),
            "reject_kw": catch(r.reject, bogus=1),
            "get_request": catch(L.get_request, "1"),
            "get_request_neg": catch(L.get_request, -1),
            "get_event_huge_int": catch(c.get_event, 10**400),
        }
        out["calls"] = [x.verb for x in fake.records()]
        qp = qp_of(c, pd, cq)
        out["qp"] = repr(c.qp) == repr(qp)
        return with_live(fake, out, qp, cq, pd, c, r, L)

    v = cm.run(body).ok()
    assert v.pop("calls") == [] and v.pop("live") == "" and v.pop("qp") is True
    assert {k: e[0] for k, e in v.items()} == {
        "create_qp": "TypeError",
        "start_connect": "TypeError",
        "connect_pdata": "TypeError",
        "start_accept": "TypeError",
        "reject": "TypeError",
        "reject_kw": "TypeError",
        "get_request": "TypeError",
        "get_request_neg": "ValueError",
        "get_event_huge_int": "ValueError",
    }
    assert "timeout must be in range 0..2147483 seconds" in v["get_event_huge_int"][3]


def test_an_int_max_timeout_waits_in_int_steps(cm):
    """resolve adds a second to timeout_ms: past INT_MAX ms, poll gets
    INT_MAX (the event is ready, so no wait)."""

    def body(fake):
        import ibverbs as ib

        c = ib.CMID.resolve("192.0.2.9", timeout_ms=2**31 - 1)
        out = [c.port, fake.one("resolve_route")["timeout_ms"]]
        c.close()
        return out

    assert cm.run(body).ok() == [4420, 2**31 - 1]


def test_garbage_collection(cm):
    """A CMID, its Context, PD, CQ and QP dropped together are collected:
    everything is destroyed.  gc sees what a CMID and a CMEvent hold."""

    def body(fake):
        import gc

        import ibverbs as ib
        from cm_helpers import qp_of, request, world

        out = {}
        c, pd, cq = world()
        ctx = c.context
        out["refs"] = sorted(
            type(o).__name__ for o in gc.get_referents(c) if not isinstance(o, type)
        )
        fake.cm_queue(c.fd, ib.CMEventType.ADDR_CHANGE, 0, b"e")
        ev = c.poll_event()
        out["event_refs"] = sorted(type(o).__name__ for o in gc.get_referents(ev))
        qp = qp_of(c, pd, cq)
        del c, pd, cq, qp, ctx, ev
        gc.collect()
        out["live_all"] = fake.live_report()
        L = ib.CMListener(4420)
        r = request(fake, L, b"p")
        out["request_refs"] = sorted(
            type(o).__name__ for o in gc.get_referents(r) if not isinstance(o, type)
        )
        del r, L
        gc.collect()
        out["live_request"] = fake.live_report()
        return out

    v = cm.run(body).ok()
    assert v["refs"] == ["Context", "NoneType", "str"]
    assert v["event_refs"] == ["NoneType", "bytes", "type"]
    assert v["request_refs"] == ["Context", "bytes", "str", "str"]
    assert v["live_all"] == "" and v["live_request"] == ""


def test_allocation_failures(cm):
    """Each allocation of resolve, connect (a REJECTED answer: the event
    becomes the error's attributes), get_event and a request's CMID fails
    in turn (CPython's _testcapi.set_nomemory): MemoryError or the call's
    own outcome, never a crash or another exception, nothing leaked."""
    from support.process import can_fail_allocations

    if not can_fail_allocations():
        pytest.skip("this CPython has no _testcapi.set_nomemory")

    def body(fake):
        import gc
        import sys

        import _testcapi

        import ibverbs as ib
        from cm_helpers import close_all, qp_of, with_live, world

        T = ib.CMEventType
        sys._getframe()
        L = ib.CMListener(4420)
        c, pd, cq = world()
        qp = qp_of(c, pd, cq)

        def nothing():
            pass

        # The calls under set_nomemory are the C methods themselves: a
        # Python function's frame would be coverage.py's tracer's to
        # allocate (which crashes on the failure, with no C of ours).
        out = {}
        for name, prep, fn, args, want in (
            ("resolve", nothing, ib.CMID.resolve, ("192.0.2.9",), None),
            ("listen", nothing, ib.CMListener, (7,), None),
            (
                "rejected",
                lambda: fake.cm_answer("connect", T.REJECTED, 28, b"why"),
                c.connect,
                (),
                ib.VerbsError,
            ),
            (
                "event",
                lambda: fake.cm_queue(c.fd, T.ADDR_CHANGE, 0, b"ev"),
                c.get_event,
                (1,),
                None,
            ),
            (
                "request",
                lambda: fake.cm_queue(L.fd, T.CONNECT_REQUEST, 0, b"rq"),
                L.get_request,
                (1,),
                None,
            ),
            (
                "request_event",
                lambda: fake.cm_queue(L.fd, T.CONNECT_REQUEST, 0, b"rq"),
                L.get_event,
                (1,),
                None,
            ),
        ):
            fails, other = 0, []
            for k in range(120):
                prep()
                value, exc = None, None
                _testcapi.set_nomemory(k, k + 1)
                try:
                    value = fn(*args)
                except BaseException as e:  # noqa: BLE001 - judged below
                    exc = e
                finally:
                    _testcapi.remove_mem_hooks()
                if isinstance(exc, MemoryError):
                    fails += 1
                elif want is not None and isinstance(exc, want) and exc.status == 28:
                    pass
                elif exc is not None:
                    other.append(f"{k}: {exc!r}")
                exc = None
                if isinstance(value, ib.CMEvent):
                    value = value.cmid
                if value is not None:
                    value.close()
                # what a failed call left queued is taken now
                fake.cm_answer_clear()
                while c.poll_event() is not None:
                    pass
                while (ev := L.poll_event()) is not None:
                    if ev.cmid is not None:
                        ev.cmid.close()
                gc.collect()
            out[name] = [fails > 0, other]
        fake.cm_answer_clear()
        close_all(qp, cq, pd, c, L)
        gc.collect()
        return with_live(fake, out)

    v = cm.run(body).ok()
    assert v.pop("live") == ""
    for name, (failed, other) in v.items():
        assert failed and other == [], (name, other)
