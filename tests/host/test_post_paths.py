"""QP.post_send and QP.post_recv of lists and tuples against the recording
double: a WR met twice (the slow pass), wrong items after the first, a
chain's member, the WR a provider rejects named by its index, the hint of
each errno, and every WR free to be posted again after a refusal."""

from __future__ import annotations

import pytest


def _post_body(fake):
    import ctypes
    import errno

    from support.outcomes import raised, rts

    import ibverbs as ib
    from ibverbs import SGE, RecvWR, RecvWRChain, SendWR, SendWRChain, enums

    buf = ctypes.create_string_buffer(65536)
    ctx = ib.Context("fake0")
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(256)
    mr = pd.reg_mr(ctypes.addressof(buf), 65536, enums.AccessFlags.LOCAL_WRITE)

    caps = dict(max_send_wr=64, max_recv_wr=64, max_send_sge=2, max_recv_sge=2)
    qp = rts(pd.create_qp(ib.QPInitAttr(cq, **caps)))
    ud = rts(pd.create_qp(ib.QPInitAttr(cq, qp_type=enums.QPType.UD, **caps)))
    srq = pd.create_srq(max_wr=16, max_sge=1)
    on_srq = pd.create_qp(ib.QPInitAttr(cq, srq=srq))

    def sge(k=0):
        return SGE(mr, 8, offset=8 * k)

    a, b, c = (SendWR(wr_id=k, sg_list=[sge(k)]) for k in (1, 2, 3))
    wide = SendWR(wr_id=4, sg_list=[sge(0), sge(1), sge(2)])  # over max_send_sge
    ra, rb = (RecvWR(wr_id=k, sg_list=[sge(k)]) for k in (5, 6))
    rwide = RecvWR(wr_id=7, sg_list=[sge(0), sge(1), sge(2)])
    member = SendWR(wr_id=8, sg_list=[sge(8)])
    chain = SendWRChain([member])
    rmember = RecvWR(wr_id=9, sg_list=[sge(9)])
    rchain = RecvWRChain([rmember])

    def posts():
        """The wr_ids of each post logged since the last call."""
        return [
            [r[f"wr[{i}].wr_id"] for i in range(r["count"])]
            for r in fake.take()
            if r.verb.startswith("post_")
        ]

    out = {}
    fake.clear()
    cases = {
        "twice": lambda: qp.post_send([a, b, a]),
        "twice in a row": lambda: qp.post_send((a, a)),
        "tail twice": lambda: qp.post_send([b, a, c, a]),
        "not a WR": lambda: qp.post_send([a, b, 5]),
        "twice, then not a WR": lambda: qp.post_send([a, a, "x"]),
        "a member": lambda: qp.post_send([a, member]),
        "a member alone": lambda: qp.post_send(member),
        "recv twice": lambda: qp.post_recv([ra, rb, ra]),
        "recv not a WR": lambda: qp.post_recv((ra, a)),
        "recv member": lambda: qp.post_recv([ra, rmember]),
        "not a list": lambda: qp.post_send({a}),
        "empty": lambda: qp.post_send(()),
        "srq's qp": lambda: on_srq.post_recv(ra),
        "ud without an ah": lambda: ud.post_send([a, b]),
    }
    for name, fn in cases.items():
        out[name] = raised(fn)
    out["refused posts reach no verb"] = posts()

    # Each WR is unlinked again: a list of them all posts as is.
    qp.post_send([a, b, c])
    qp.post_recv((ra, rb))
    out["after"] = posts()
    cq.poll(64)

    # The provider rejects one WR of a list: its index and wr_id.
    out["rejected third"] = raised(lambda: qp.post_send([a, b, wide]))
    out["rejected second recv"] = raised(lambda: qp.post_recv((ra, rwide)))
    out["rejected second of a tuple"] = raised(lambda: qp.post_send((c, wide)))
    cq.poll(64)
    for err in (errno.ENOMEM, errno.EINVAL, errno.EIO):
        fake.fail("post_send", err)
        out[f"errno {err}"] = raised(lambda: qp.post_send(b))
    fake.fail("post_srq_recv", errno.EINVAL)
    out["srq rejects"] = raised(lambda: srq.post_recv([ra, rb]))
    fake.clear()
    qp.post_send(a)
    out["single after failures"] = posts()
    chain.release()
    rchain.release()
    cq.poll(64)
    for o in (on_srq, srq, ud, qp, mr, cq, pd, ctx):
        o.close()
    return out


@pytest.fixture(scope="module")
def posted(recording):
    res = recording.run(_post_body)
    return res, res.ok()


MEMBER = "belongs to a SendWRChain: post the chain, or release() it first"
REFUSED = {
    "twice": ["ValueError", "work request 2 appears more than once in the list"],
    "twice in a row": ["ValueError", "work request 1 appears more than once in the list"],
    "tail twice": ["ValueError", "work request 3 appears more than once in the list"],
    "not a WR": ["TypeError", "work request 2 must be a SendWR, not <class 'int'>"],
    "twice, then not a WR": ["TypeError", "work request 2 must be a SendWR, not <class 'str'>"],
    "a member": ["ValueError", f"work request 1 {MEMBER}"],
    "a member alone": ["ValueError", f"work request 0 {MEMBER}"],
    "recv member": [
        "ValueError",
        "work request 1 belongs to a RecvWRChain: post the chain, or release() it first",
    ],
    "recv twice": ["ValueError", "work request 2 appears more than once in the list"],
    "recv not a WR": [
        "TypeError",
        "work request 1 must be a RecvWR, not <class 'ibverbs._ibverbs.SendWR'>",
    ],
    "not a list": ["TypeError", "expected a SendWR or a list of SendWR, not <class 'set'>"],
    "empty": ["ValueError", "empty list of work requests"],
    "srq's qp": ["ValueError", "this QP receives through its SRQ: use qp.srq.post_recv()"],
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_list_names_the_item(posted, case):
    _, out = posted
    assert out[case] == REFUSED[case]


def test_a_ud_list_without_an_ah_is_refused_before_the_verb(posted):
    _, out = posted
    name, msg = out["ud without an ah"]
    assert name == "ValueError" and "work request 0" in msg and "AH" in msg
    assert out["refused posts reach no verb"] == []


def test_every_wr_is_free_again_after_a_refusal(posted):
    _, out = posted
    assert out["after"] == [[1, 2, 3], [5, 6]]
    assert out["single after failures"] == [[1]]


def test_the_rejected_wr_is_named_by_its_index(posted):
    _, out = posted
    assert out["rejected third"][0] == "VerbsError"
    assert "send WR at index 2 (wr_id=4) was rejected by QP" in out["rejected third"][1]
    assert "receive WR at index 1 (wr_id=7) was rejected by QP" in out["rejected second recv"][1]
    assert "send WR at index 1 (wr_id=4)" in out["rejected second of a tuple"][1]
    assert out["srq rejects"] == [
        "VerbsError",
        "[Errno 22] ibv_post_srq_recv: Invalid argument: receive WR at index 0 (wr_id=5) "
        "was rejected",
    ]


def test_each_errno_has_its_hint(posted):
    _, out = posted
    head = "send WR at index 0 (wr_id=2) was rejected by QP"
    nomem, inval, eio = (out[f"errno {e}"][1] for e in (12, 22, 5))
    assert head in nomem and nomem.endswith("(RTS) (the queue is full: too many WRs outstanding?)")
    assert head in inval and inval.endswith(
        "(RTS) (too many SGEs, an unsupported opcode or flag, or a QP state that does not "
        "allow posting?)"
    )
    assert eio.startswith("[Errno 5] ibv_post_send: Input/output error: ")
    assert head in eio and eio.endswith("(RTS)")


def test_nothing_is_left_open(posted):
    res, _ = posted
    assert res.live == 0, res.live_report
