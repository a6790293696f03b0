"""CQ, CompChannel and WC paths against the recording double that no other
host test takes: num_entries given every way, a failed completion from
poll_count, events left unacked at close, an event for a CQ whose
destroy failed, a get_cq_event that fails, req_notify's flag raising or
closing the CQ, and what a CQ hands the garbage collector."""

from __future__ import annotations

import pytest


def _cq_body(fake):
    import errno
    import gc
    import os

    from support.outcomes import result

    import ibverbs as ib
    from ibverbs import SGE, RecvWR, enums

    ctx = ib.Context("fake0")
    pd = ctx.alloc_pd()
    ch = ctx.create_comp_channel()
    cq = ctx.create_cq(8, ch)
    qp = pd.create_qp(ib.QPInitAttr(cq))
    qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)

    def recv(k=1):
        qp.post_recv([RecvWR(i, [SGE(0x1000, 8, 1)]) for i in range(k)])

    out = {
        "repr": repr(cq),
        "channel": cq.channel is ch,
        "ch repr": repr(ch).startswith("<ibverbs.CompChannel fd="),
    }
    out["referents"] = ch in gc.get_referents(cq)
    out["not a wc"] = result(lambda: pd.create_ah_from_wc("wc", bytes(40), 1))
    recv(3)
    out["poll kw"] = result(lambda: cq.poll(num_entries=2))
    out["poll huge"] = result(lambda: cq.poll(2**70))
    out["poll 0"] = result(lambda: cq.poll(0))
    out["poll -huge"] = result(lambda: cq.poll(-(2**70)))
    out["poll str"] = result(lambda: cq.poll("2"))
    out["poll kw str"] = result(lambda: cq.poll(num_entries="2"))
    out["poll kw none"] = result(lambda: cq.poll(**{}))
    out["count 0"] = result(lambda: cq.poll_count(0))
    out["count huge"] = result(lambda: cq.poll_count(2**70))
    out["count str"] = result(lambda: cq.poll_count("1"))
    fake.fail("completion", int(enums.WCStatus.LOC_PROT_ERR))
    recv()
    out["count failed"] = result(lambda: cq.poll_count(4))

    # An event got and not acked: closing the CQ acks it first.
    cq.req_notify()
    recv()
    out["event"] = ch.get_cq_event() is cq
    out["unacked"] = cq.events_unacked
    cq.poll(8)
    qp.close()
    fake.clear()
    cq.close()
    out["close"] = [(r.verb, r.get("nevents")) for r in fake.take()]
    out["closed repr"] = repr(cq)

    # A get_cq_event that fails: its errno; non-blocking with no event.
    fake.fail("get_cq_event", errno.EIO)
    os.set_blocking(ch.fd, False)
    out["get failed"] = result(ch.get_cq_event)
    out["get none"] = result(ch.get_cq_event)

    # A blocking wait that a signal handler interrupts: its exception.
    import signal

    def wake(signum, frame):
        raise TimeoutError("woken")

    os.set_blocking(ch.fd, True)
    signal.signal(signal.SIGALRM, wake)
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    out["interrupted"] = result(ch.get_cq_event)
    signal.setitimer(signal.ITIMER_REAL, 0)

    # req_notify's flag: its __bool__ raising, then closing the CQ.
    cq2 = ctx.create_cq(8, ch)

    class Raises:
        def __bool__(self):
            raise RuntimeError("no truth")

    class Closes:
        def __bool__(self):
            cq2.close()
            return True

    out["flag raises"] = result(lambda: cq2.req_notify(Raises()))
    out["flag closes"] = result(lambda: cq2.req_notify(Closes()))

    # An event for a CQ whose destroy failed when it was dropped: acked
    # and reported, not trusted.
    cq3 = ctx.create_cq(8, ch)
    qp3 = pd.create_qp(ib.QPInitAttr(cq3))
    qp3.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)
    cq3.req_notify()
    qp3.post_recv(RecvWR(1, [SGE(0x1000, 8, 1)]))
    qp3.close()
    fake.fail("destroy_cq", errno.EBUSY)
    del cq3
    gc.collect()
    fake.clear()
    out["orphan"] = result(ch.get_cq_event)
    out["orphan log"] = [(r.verb, r.get("nevents")) for r in fake.take()]
    # The leaked CQ still uses ch (by design); another channel closes.
    out["channel close"] = result(ch.close)[0]
    other = ctx.create_comp_channel()
    other.close()
    out["closed channel repr"] = repr(other)
    return out


@pytest.fixture(scope="module")
def cqs(recording):
    res = recording.run(_cq_body)
    return res, res.ok()


NUM = "num_entries must be"


def test_num_entries_every_way(cqs):
    _, out = cqs
    # Three receives completed: two by keyword, the last by a huge count
    # (clamped to the CQ's size), none left for poll(**{}).
    assert [out["poll kw"], out["poll huge"], out["poll kw none"]] == [2, 1, 0]
    assert out["poll 0"] == ["ValueError", f"{NUM} >= 1, got 0"]
    assert out["poll -huge"] == ["ValueError", f"{NUM} >= 1, got {-(2**70)}"]
    assert out["count 0"] == ["ValueError", f"{NUM} in 1..2**63-1, got 0"]
    assert out["count huge"] == ["ValueError", f"{NUM} in 1..2**63-1, got {2**70}"]
    for case in ("poll str", "poll kw str", "count str"):
        assert out[case] == ["TypeError", f"{NUM} an int, not <class 'str'>"]


def test_poll_count_raises_a_failed_completion(cqs):
    _, out = cqs
    assert out["count failed"] == [
        "CompletionError",
        "[Errno 5] work completion failed: LOC_PROT_ERR (status 4, vendor_err 0x0) wr_id=0 "
        "opcode=RECV qp_num=259",
    ]


def test_closing_a_cq_acks_its_events_first(cqs):
    _, out = cqs
    assert out["event"] and out["unacked"] == 1
    assert out["close"] == [["ack_cq_events", 1], ["destroy_cq", None]]
    assert out["repr"] == "<ibverbs.CQ cqe=8 with channel>"
    assert out["closed repr"] == "<ibverbs.CQ closed>"
    assert out["channel"] and out["referents"] and out["ch repr"]


def test_get_cq_event_failures(cqs):
    _, out = cqs
    assert out["get failed"] == ["VerbsError", "[Errno 5] ibv_get_cq_event: Input/output error"]
    assert out["get none"] == [
        "VerbsError",
        "[Errno 11] ibv_get_cq_event: Resource temporarily unavailable: no completion event "
        "pending (the channel fd is non-blocking)",
    ]
    # The CQ of the event was dropped after its destroy failed.
    assert out["orphan"] == [
        "VerbsError",
        "[Errno 116] ibv_get_cq_event: Stale file handle: completion event for a CQ that was "
        "not destroyed cleanly; event acked and dropped",
    ]
    assert out["orphan log"] == [["get_cq_event", None], ["ack_cq_events", 1]]


def test_an_ah_from_something_else_than_a_wc(cqs):
    _, out = cqs
    assert out["not a wc"][0] == "TypeError"
    assert out["not a wc"][1].startswith("wc must be a WC")


def test_a_signal_ends_the_wait_and_a_closed_channel_says_so(cqs):
    _, out = cqs
    assert out["interrupted"] == ["TimeoutError", "woken"]
    assert out["channel close"] == "VerbsError"
    assert out["closed channel repr"] == "<ibverbs.CompChannel closed>"


def test_req_notify_flag_that_raises_or_closes(cqs):
    _, out = cqs
    assert out["flag raises"] == ["RuntimeError", "no truth"]
    assert out["flag closes"] == ["VerbsError", "[Errno 9] Bad file descriptor: CQ is closed"]
