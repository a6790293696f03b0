"""CMListener and the passive CMID (get_request, accept, reject) against the
recording double of librdmacm (tests/fakes/recording/cm.c): the calls
they make, each failure as a VerbsError naming the verb, the events a
listener skips or reports, and nothing leaked."""

from __future__ import annotations

import pytest

from fakes.cm_helpers import verbs_errors_are


@pytest.fixture(scope="module")
def cm(recording):
    return recording.with_rdmacm()


def test_listener_binds_and_listens(cm):
    def body(fake):
        import ibverbs as ib
        from cm_helpers import with_live

        out = {}
        with ib.CMListener(0) as L:
            out["any"] = [L.host, L.port, repr(L), L.fd >= 0]
            out["any_calls"] = [
                (r.verb, dict(r.fields)) for r in fake.take() if r.verb in ("bind_addr", "listen")
            ]
        out["closed"] = repr(L)
        with ib.CMListener(7000, "192.0.2.1", backlog=3) as L:
            out["host"] = [L.host, L.port]
        with ib.CMListener(7001, "fe80::1") as L:
            out["v6"] = [L.host, L.port]
        with ib.CMListener(0, "::1") as L:  # the double binds IPv6 port 0 as given
            out["v6_any"] = L.port
        return with_live(fake, out)

    res = cm.run(body)
    v = res.ok()
    assert v["any"][:2] == [None, 20001] and v["any"][3] is True
    assert v["any"][2] == "<ibverbs.CMListener host=None port=20001>"
    bind, listen = v["any_calls"]
    assert bind[1]["addr"] == "0.0.0.0" and bind[1]["addr.port"] == 0
    assert listen[1]["backlog"] == 16
    assert v["closed"] == "<ibverbs.CMListener host=None port=20001 closed>"
    assert v["host"] == ["192.0.2.1", 7000] and v["v6"] == ["fe80::1", 7001] and v["v6_any"] == 0
    assert [r["backlog"] for r in res.calls("listen")] == [3, 16, 16]  # after take()
    assert v["live"] == "" and res.live == 0


def test_each_failure_of_the_listener_is_a_verbs_error(cm):
    def body(fake):
        import errno as E

        import ibverbs as ib
        from cm_helpers import each_failure

        return each_failure(
            fake,
            [
                (f"{verb}/{host}", verb, err, 0, lambda host=host: ib.CMListener(7, host))
                for verb, err, host in (
                    ("getaddrinfo", E.ENOMEM, "192.0.2.1"),
                    ("create_event_channel", E.EMFILE, None),
                    ("create_id", E.ENOMEM, None),
                    ("bind_addr", E.EADDRINUSE, None),
                    ("bind_addr", E.EADDRNOTAVAIL, "192.0.2.1"),
                    ("listen", E.EINVAL, None),
                )
            ],
        )

    verbs_errors_are(
        cm.run(body).ok(),
        {
            "getaddrinfo/192.0.2.1": (12, "rdma_getaddrinfo", "host 192.0.2.1 port 7"),
            "create_event_channel/None": (24, "rdma_create_event_channel", ""),
            "create_id/None": (12, "rdma_create_id", ""),
            "bind_addr/None": (98, "rdma_bind_addr", "any address port 7"),
            "bind_addr/192.0.2.1": (99, "rdma_bind_addr", "192.0.2.1 port 7"),
            "listen/None": (22, "rdma_listen", "port 7"),
        },
    )


def test_a_request_and_its_answers(cm):
    def body(fake):
        import ibverbs as ib
        from cm_helpers import catch, close_all, request, with_live

        T = ib.CMEventType
        out = {}
        L = ib.CMListener(4420)
        r = request(fake, L, b"\x07" * 56)
        out["request"] = [r.host, r.port, r.source, r.private_data.hex(), repr(r), r.context.name]
        pd = r.context.alloc_pd()
        cq = r.context.create_cq(4)
        out["no_qp"] = catch(r.accept)
        out["connect_passive"] = catch(r.connect)
        out["too_long"] = catch(r.accept, b"x" * 197)
        out["reject_too_long"] = catch(r.reject, b"x" * 149)
        qp = r.create_qp(pd, ib.QPInitAttr(send_cq=cq, recv_cq=cq))
        fake.fail("accept", 22)
        out["fail"] = catch(r.accept)
        out["still_request"] = repr(r)
        fake.clear()
        r.accept(b"\x09" * 196, responder_resources=4, initiator_depth=5, rnr_retry_count=6)
        rec = fake.one("accept")
        out["accept"] = [
            rec[k] for k in ("conn_param.private_data_len", "conn_param.responder_resources")
        ]
        out["accept2"] = [rec[k] for k in ("conn_param.initiator_depth", "conn_param.retry_count")]
        out["accept3"] = rec["conn_param.rnr_retry_count"]
        out["connected"] = [r.connected, repr(r)]
        out["again"] = catch(r.accept)
        out["reject_answered"] = catch(r.reject)
        close_all(qp, cq, pd, r)
        # start_accept, then the ESTABLISHED by poll_established
        r = request(fake, L)
        pd = r.context.alloc_pd()
        cq = r.context.create_cq(4)
        qp = r.create_qp(pd, ib.QPInitAttr(send_cq=cq, recv_cq=cq))
        fake.cm_answer("accept", -1)
        r.start_accept()
        out["accepting"] = [repr(r), r.poll_established()]
        fake.cm_queue(r.fd, T.ESTABLISHED)
        out["established"] = [r.poll_established(), r.connected]
        close_all(qp, cq, pd, r)
        # an error event ends accept
        r = request(fake, L)
        pd = r.context.alloc_pd()
        cq = r.context.create_cq(4)
        qp = r.create_qp(pd, ib.QPInitAttr(send_cq=cq, recv_cq=cq))
        fake.cm_answer("accept", T.CONNECT_ERROR, -110)
        out["accept_error"] = catch(r.accept, timeout=1)
        out["answered"] = repr(r)
        close_all(qp, cq, pd, r)
        # reject, with and without private data, and its failure
        r = request(fake, L)
        fake.fail("reject", 5)
        out["reject_fail"] = catch(r.reject)
        fake.clear()
        r.reject(b"no" * 74)
        out["reject"] = [fake.one("reject")["private_data_len"], repr(r)]
        r.close()
        r = request(fake, L)
        fake.clear()
        r.reject()
        rec = fake.one("reject")
        out["reject_empty"] = [rec["private_data"], rec["private_data_len"]]
        return with_live(fake, out, r, L)

    v = cm.run(body).ok()
    assert v["request"] == [
        "192.0.2.2",
        40000,
        "192.0.2.1",
        "07" * 56,
        "<ibverbs.CMID host='192.0.2.2' port=40000 request>",
        "fake0",
    ]
    assert v["no_qp"][0] == "ValueError" and "create_qp" in v["no_qp"][3]
    assert v["connect_passive"][0] == "ValueError"
    assert v["too_long"][0] == "ValueError" and "196" in v["too_long"][3]
    assert v["reject_too_long"][0] == "ValueError" and "148" in v["reject_too_long"][3]
    assert v["fail"][:3] == ["VerbsError", 22, "rdma_accept"]
    assert v["still_request"].endswith("request>")
    assert v["accept"] == [196, 4] and v["accept2"] == [5, 0] and v["accept3"] == 6
    assert v["connected"] == [True, "<ibverbs.CMID host='192.0.2.2' port=40000 connected>"]
    assert v["again"][0] == "ValueError" and v["reject_answered"][0] == "ValueError"
    assert v["accepting"] == ["<ibverbs.CMID host='192.0.2.2' port=40000 accepting>", None]
    assert v["established"] == ["", True]
    assert v["accept_error"][:3] == ["VerbsError", 110, "rdma_accept"]
    assert "while accepting" in v["accept_error"][3]
    assert v["answered"].endswith("answered>")
    assert v["reject_fail"][:3] == ["VerbsError", 5, "rdma_reject"]
    assert v["reject"] == [148, "<ibverbs.CMID host='192.0.2.2' port=40000 answered>"]
    assert v["reject_empty"] == ["", 0]
    assert v["live"] == ""


def test_a_request_whose_cmid_cannot_be_made_is_rejected(cm):
    """When the request's own channel cannot be made or the id cannot move
    to it, the binding rejects the request and destroys its id."""

    def body(fake):
        import errno as E

        import ibverbs as ib
        from cm_helpers import catch, with_live

        out = {}
        L = ib.CMListener(4420)
        for verb in ("create_event_channel", "migrate_id"):
            fake.cm_queue(L.fd, ib.CMEventType.CONNECT_REQUEST)
            fake.fail(verb, E.EMFILE)
            fake.clear()
            out[verb] = [catch(L.get_request, 1), [r.verb for r in fake.records()]]
        return with_live(fake, out, L)

    v = cm.run(body).ok()
    assert v["create_event_channel"][0][:3] == ["VerbsError", 24, "rdma_create_event_channel"]
    assert v["create_event_channel"][1][-3:] == ["create_event_channel", "reject", "destroy_id"]
    assert v["migrate_id"][0][:3] == ["VerbsError", 24, "rdma_migrate_id"]
    assert v["migrate_id"][1][-4:] == [
        "migrate_id",
        "reject",
        "destroy_id",
        "destroy_event_channel",
    ]
    assert v["live"] == ""


def test_get_request_skips_other_events_and_reports_removal(cm):
    def body(fake):
        import ibverbs as ib
        from cm_helpers import catch, with_live

        T = ib.CMEventType
        out = {}
        L = ib.CMListener(4420)
        out["none"] = L.poll_request()
        fake.cm_queue(L.fd, T.ADDR_CHANGE)
        out["skipped"] = L.poll_request()
        fake.cm_queue(L.fd, T.ADDR_CHANGE)
        out["timeout"] = catch(L.get_request, 0.05)
        fake.cm_queue(L.fd, T.TIMEWAIT_EXIT)
        fake.cm_queue(L.fd, T.CONNECT_REQUEST, 0, b"r")
        r = L.poll_request()
        out["polled"] = r.private_data
        r.close()
        fake.cm_queue(L.fd, T.CONNECT_REQUEST, 0, b"q")
        r = L.get_request()  # no limit
        out["no_limit"] = r.private_data
        r.close()
        fake.cm_queue(L.fd, T.DEVICE_REMOVAL, 0, b"gone")
        try:
            L.get_request(1)
        except ib.VerbsError as e:
            out["removal"] = [e.errno, e.operation, int(e.event), e.private_data, str(e)]
        # get_event: a request's CMID, other events without one
        fake.cm_queue(L.fd, T.CONNECT_REQUEST, 0, b"e")
        fake.cm_queue(L.fd, T.ESTABLISHED)
        ev = L.get_event(timeout=1)
        out["event"] = [int(ev.event), type(ev.cmid).__name__, ev.cmid.private_data, repr(ev)]
        ev.cmid.close()
        ev = L.poll_event()
        out["other"] = [int(ev.event), ev.cmid, ev.private_data]
        out["after"] = L.poll_event()
        # close with events still queued, a request among them
        fake.cm_queue(L.fd, T.CONNECT_REQUEST, 0, b"left")
        fake.cm_queue(L.fd, T.ADDR_CHANGE)
        L.close()
        out["closed"] = [catch(L.get_request), catch(L.poll_request), catch(lambda: L.fd), L.port]
        return with_live(fake, out)

    v = cm.run(body).ok()
    assert v["none"] is None and v["skipped"] is None
    assert v["timeout"][0] == "TimeoutError"
    assert v["timeout"][3] == (
        "no connection manager event within 50 ms while waiting for a connection request"
    )
    assert v["polled"] == "72" and v["no_limit"] == "71"
    assert v["removal"][:4] == [19, "rdma_get_cm_event", 11, "676f6e65"]
    assert "the listener's device went away (FAKE_CM_EVENT_11, status 0)" in v["removal"][4]
    assert v["event"] == [4, "CMID", "65", "<ibverbs.CMEvent FAKE_CM_EVENT_4 status=0>"]
    assert v["other"] == [9, None, ""] and v["after"] is None
    for err in v["closed"][:3]:
        assert err[:2] == ["VerbsError", 9], err  # EBADF
    assert v["closed"][3] == 4420
    assert v["live"] == ""


def test_the_address_of_a_request_of_each_family(cm):
    def body(fake):
        import socket

        import ibverbs as ib
        from cm_helpers import request, with_live

        out = {}
        with ib.CMListener(4420) as L:
            for fam in (socket.AF_INET6, 27):  # 27: AF_IB, no text form
                fake.cm_request_family(fam)
                r = request(fake, L)
                out[fam] = [r.host, r.port, r.source, repr(r)]
                r.close()
            fake.cm_request_family(socket.AF_INET)
            fake.cm_queue(L.fd, ib.CMEventType.CONNECT_REQUEST, 0, None)
            r = L.get_request(1)
            out["no_pdata"] = r.private_data
            r.close()
        return with_live(fake, out)

    v = cm.run(body).ok()
    assert v["10"] == [
        "2001:db8::2",
        40000,
        "2001:db8::1",
        "<ibverbs.CMID host='2001:db8::2' port=40000 request>",
    ]
    assert v["27"] == [None, 0, None, "<ibverbs.CMID host=None port=0 request>"]
    assert v["no_pdata"] == "" and v["live"] == ""


def test_a_failing_read_while_waiting_for_a_request(cm):
    def body(fake):
        import errno as E

        import ibverbs as ib
        from cm_helpers import catch

        L = ib.CMListener(4420)
        out = []
        for timeout in (None, 1):
            fake.cm_queue(L.fd, ib.CMEventType.CONNECT_REQUEST)
            fake.fail("get_cm_event", E.EIO)
            out.append(catch(L.get_request, timeout))
            L.get_request(0).close()  # the request stayed queued
        L.close()
        return out + [fake.live_report()]

    *errs, live = cm.run(body).ok()
    for err in errs:
        assert err[:3] == ["VerbsError", 5, "rdma_get_cm_event"], err
    assert live == ""


def test_a_listener_dropped_without_close(cm):
    def body(fake):
        import gc
        import sys

        import ibverbs as ib

        seen = []
        sys.unraisablehook = lambda u: seen.append(str(u.exc_value))
        L = ib.CMListener(4420)
        fake.cm_queue(L.fd, ib.CMEventType.CONNECT_REQUEST)
        del L
        out = [fake.live_report()]
        L = ib.CMListener(4420)
        fake.fail("destroy_id", 16)
        fake.clear()
        del L
        gc.collect()
        out.append(seen)
        out.append([r.verb for r in fake.records()])
        out.append(fake.live_report())
        return out

    live, seen, calls, left = cm.run(body).ok()
    assert live == ""
    # the failure is reported; the handle's dealloc tries once more
    assert len(seen) == 1 and "rdma_destroy_id" in seen[0]
    assert calls == ["destroy_id", "destroy_id", "destroy_event_channel"] and left == ""
