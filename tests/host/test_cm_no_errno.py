"""The CM's verbs failing without errno, against the recording double of
librdmacm (its ``recording.NO_ERRNO``: -1 with errno 0, as a librdmacm
may answer): each is a VerbsError naming the verb with the call site's
fallback errno (EINVAL; EIO for reading an event), never errno 0 or
"Success", the CMID still usable after, nothing leaked.  The verbs of
resolve and of the listener's setup are the failure-injection suite's
(tests/support/failinj.py); these are the ones only a connection
reaches."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def cm(recording):
    return recording.with_rdmacm()


def test_connect_and_disconnect(cm):
    def body(fake):
        import ibverbs as ib
        import recording
        from cm_helpers import catch, qp_of, with_live, world

        c, pd, cq = world()
        qp = qp_of(c, pd, cq)
        out = {}
        for verb, call in (("connect", c.connect), ("start_connect", c.start_connect)):
            fake.fail("connect", recording.NO_ERRNO)
            out[verb] = catch(call)
            out[verb + "_repr"] = repr(c)
        fake.cm_answer("connect", ib.CMEventType.ESTABLISHED)
        c.connect()
        fake.fail("disconnect", recording.NO_ERRNO)
        out["disconnect"] = catch(c.disconnect)
        out["connected_after"] = c.connected
        return with_live(fake, out, qp, cq, pd, c)

    v = cm.run(body).ok()
    for key in ("connect", "start_connect"):
        assert v[key][:3] == ["VerbsError", 22, "rdma_connect"], v[key]
        assert "Success" not in v[key][3]
        assert v[key + "_repr"].endswith("resolved>")  # no attempt left under way
    assert v["disconnect"][:3] == ["VerbsError", 22, "rdma_disconnect"]
    assert v["connected_after"] is False
    assert v["live"] == ""


def test_a_request_its_answers_and_its_cmid(cm):
    def body(fake):
        import ibverbs as ib
        import recording
        from cm_helpers import catch, close_all, request, with_live

        out = {}
        L = ib.CMListener(4420)
        r = request(fake, L)
        pd = r.context.alloc_pd()
        cq = r.context.create_cq(4)
        qp = r.create_qp(pd, ib.QPInitAttr(send_cq=cq, recv_cq=cq))
        for verb, call in (("accept", r.accept), ("reject", r.reject)):
            fake.fail(verb, recording.NO_ERRNO)
            out[verb] = catch(call)
            out[verb + "_repr"] = repr(r)
        r.accept()
        out["accepted"] = r.connected
        close_all(qp, cq, pd, r)
        # the request's own channel, and moving its id there
        for verb in ("create_event_channel", "migrate_id"):
            fake.cm_queue(L.fd, ib.CMEventType.CONNECT_REQUEST)
            fake.fail(verb, recording.NO_ERRNO)
            fake.clear()
            out[verb] = [catch(L.get_request, 1), [r.verb for r in fake.records()]]
        n = request(fake, L)
        out["next"] = repr(n)
        return with_live(fake, out, n, L)

    v = cm.run(body).ok()
    for verb in ("accept", "reject"):
        assert v[verb][:3] == ["VerbsError", 22, f"rdma_{verb}"], v[verb]
        assert "Success" not in v[verb][3]
        assert "request" in v[verb + "_repr"], v[verb + "_repr"]
    assert v["accepted"] is True
    for verb in ("create_event_channel", "migrate_id"):
        assert v[verb][0][:3] == ["VerbsError", 22, f"rdma_{verb}"], v[verb]
        assert v[verb][1][-1] in ("destroy_id", "destroy_event_channel")
        assert "reject" in v[verb][1]
    assert v["next"].startswith("<ibverbs.CMID")
    assert v["live"] == ""
