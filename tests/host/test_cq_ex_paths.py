"""CQEx paths against the recording double that no other host test takes:
a closed channel or parent domain at creation, a failed completion from
poll and poll_count, num_entries given every way, closing, leaving a
``with`` block and dropping a CQEx inside a poll session, and what it
hands the garbage collector."""

from __future__ import annotations

import pytest


def _cq_ex_body(fake):
    import gc

    from support.outcomes import result

    import ibverbs as ib
    from ibverbs import SGE, RecvWR, enums

    A = ib.CQInitAttrEx
    ctx = ib.Context("fake0")
    pd = ctx.alloc_pd()
    out = {}
    ch = ctx.create_comp_channel()
    ch.close()
    out["closed channel"] = result(lambda: ctx.create_cq_ex(A(8, channel=ch)))
    pdom = ctx.alloc_parent_domain(pd)
    pdom.close()
    out["closed parent domain"] = result(lambda: ctx.create_cq_ex(A(8, parent_domain=pdom)))
    out["cqe str"] = result(lambda: ctx.create_cq_ex(A("8")))

    ch = ctx.create_comp_channel()
    pdom = ctx.alloc_parent_domain(pd)
    cq = ctx.create_cq_ex(A(8, channel=ch, parent_domain=pdom))
    refs = gc.get_referents(cq)
    out["referents"] = [ch in refs, pdom in refs]
    qp = pd.create_qp(ib.QPInitAttr(cq))
    qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)

    def recv(k=1):
        qp.post_recv([RecvWR(i, [SGE(0x1000, 8, 1)]) for i in range(k)])

    recv(4)
    # A field the CQEx was not created to report reads None.
    out["not asked"] = [w.completion_ts for w in cq.poll(1)]
    out["poll huge"] = result(lambda: cq.poll(2**70))
    out["poll 0"] = result(lambda: cq.poll(0))
    out["poll str"] = result(lambda: cq.poll("1"))
    out["count huge"] = result(lambda: cq.poll_count(2**70))
    out["count -huge"] = result(lambda: cq.poll_count(-(2**70)))
    status = int(enums.WCStatus.REM_ACCESS_ERR)
    fake.fail("completion", status)
    recv()
    out["poll failed"] = [[w.wr_id, int(w.status), w.byte_len] for w in cq.poll(4)]
    fake.fail("completion", status)
    recv()
    out["count failed"] = result(lambda: cq.poll_count(4))

    # Inside a session: close refuses, the repr says so, a with block
    # ends it, and so does dropping the CQEx.
    recv()
    qp.close()
    cq.start_poll()
    out["repr polling"] = repr(cq).endswith(" with channel polling>")
    out["close polling"] = result(cq.close)
    fake.clear()
    with cq:
        pass
    out["with"] = [r.verb for r in fake.take()]
    cq2 = ctx.create_cq_ex(A(8))
    qp2 = pd.create_qp(ib.QPInitAttr(cq2))
    qp2.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)
    qp2.post_recv(RecvWR(9, [SGE(0x1000, 8, 1)]))
    qp2.close()
    cq2.start_poll()
    fake.clear()
    del cq2
    gc.collect()
    out["dropped"] = [r.verb for r in fake.take()]
    for o in (pdom, ch, pd, ctx):
        o.close()
    return out


@pytest.fixture(scope="module")
def cq_ex(recording):
    res = recording.run(_cq_ex_body)
    return res, res.ok()


EBADF = "[Errno 9] Bad file descriptor: "
NUM = "num_entries must be"


def test_closed_parents_at_creation(cq_ex):
    _, out = cq_ex
    assert out["closed channel"] == ["VerbsError", EBADF + "CompChannel is closed"]
    assert out["closed parent domain"] == ["VerbsError", EBADF + "ParentDomain is closed"]
    assert out["cqe str"] == ["TypeError", "cqe must be an int, not <class 'str'>"]
    assert out["referents"] == [True, True]


def test_num_entries_every_way(cq_ex):
    _, out = cq_ex
    assert out["not asked"] == [None]
    assert out["poll huge"] == 3  # clamped to the CQ's size: the three there
    assert out["poll 0"] == ["ValueError", f"{NUM} >= 1, got 0"]
    assert out["poll str"] == ["TypeError", f"{NUM} an int, not <class 'str'>"]
    assert out["count huge"] == ["ValueError", f"{NUM} in 1..2**63-1, got {2**70}"]
    assert out["count -huge"] == ["ValueError", f"{NUM} in 1..2**63-1, got {-(2**70)}"]


def test_a_failed_completion(cq_ex):
    _, out = cq_ex
    # poll returns it, with nothing but wr_id and status read.
    assert out["poll failed"] == [[0, 10, 0]]
    assert out["count failed"] == [
        "CompletionError",
        "[Errno 5] work completion failed: REM_ACCESS_ERR (status 10, vendor_err 0x0) wr_id=0 "
        "opcode=SEND qp_num=0",
    ]


def test_a_session_at_close(cq_ex):
    res, out = cq_ex
    assert out["repr polling"]
    assert out["close polling"] == [
        "VerbsError",
        "[Errno 16] ibv_destroy_cq: Device or resource busy: a start_poll() session is open: "
        "call end_poll() first",
    ]
    assert out["with"] == ["end_poll", "destroy_cq"]
    assert out["dropped"] == ["end_poll", "destroy_cq"]
    assert res.live == 0, res.live_report
