"""SendWRChain and RecvWRChain posted against the recording double: the
checks between posts (a closed MR, AH or window, a replaced AH), the
record of the handles its members use past 64 of them, a failed post
naming the member, the refusals of a build, and what the chain hands the
garbage collector."""

from __future__ import annotations

import pytest

from ibverbs.enums import WROpcode

BIND_MW = WROpcode.BIND_MW


def _chain_body(fake):
    import ctypes
    import errno
    import gc

    from support.outcomes import raised, rts

    import ibverbs as ib
    from ibverbs import SGE, RecvWR, RecvWRChain, SendWR, SendWRChain, enums

    A, W = enums.AccessFlags, enums.WROpcode
    buf = ctypes.create_string_buffer(1 << 20)
    base = ctypes.addressof(buf)
    ctx = ib.Context("fake0")
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(1024)

    qp = rts(pd.create_qp(ib.QPInitAttr(cq, max_send_wr=256, max_recv_wr=256)))
    ud = rts(pd.create_qp(ib.QPInitAttr(cq, qp_type=enums.QPType.UD, max_send_wr=16)))
    srq = pd.create_srq(max_wr=32, max_sge=1)

    def reg(k):
        return pd.reg_mr(base + 4096 * k, 4096, A.LOCAL_WRITE | A.REMOTE_WRITE | A.MW_BIND)

    def outcome(fn):
        fake.clear()
        return raised(fn)

    out = {}

    # 70 members over 70 MRs: the chain records each MR once, past the
    # 64 it compares with, and each post finds them all open.
    mrs = [reg(k) for k in range(70)]
    wrs = [SendWR(wr_id=k, sg_list=[SGE(mr, 8)]) for k, mr in enumerate(mrs)]
    wrs.append(SendWR(wr_id=70, sg_list=[SGE(mrs[0], 8, offset=8)]))
    chain = SendWRChain(wrs)
    out["referents"] = sum(1 for o in gc.get_referents(chain) if isinstance(o, ib.MR))
    fake.clear()
    qp.post_send(chain)
    qp.post_send(chain)
    rec = [r for r in fake.records() if r.verb == "post_send"]
    out["counts"] = [r["count"] for r in rec]
    out["first_ids"] = [r["wr[0].wr_id"] for r in rec]
    cq.poll(1024)
    # A member's MR closed between posts: the full check names it.
    chain.release()
    mrs[5].close()
    chain = SendWRChain(wrs[:5] + [SendWR(wr_id=99, sg_list=[SGE(mrs[6], 8)])])
    mrs[6].close()
    out["closed_mr"] = outcome(lambda: qp.post_send(chain))
    chain.release()
    out["released"] = outcome(lambda: qp.post_send(chain))
    out["released_iter"] = list(chain)

    # A failed post of a chain names the member the provider rejected.
    chain = SendWRChain([SendWR(wr_id=k + 10, sg_list=[SGE(mrs[0], 8)]) for k in range(3)])
    fake.fail("post_send", errno.ENOMEM)
    out["failed_send"] = outcome(lambda: qp.post_send(chain))
    qp.post_send(chain)
    out["after_failure"] = [r["count"] for r in fake.records() if r.verb == "post_send"]
    chain.release()
    cq.poll(1024)

    # UD members: replacing one's AH marks the chain for a full check,
    # and a closed AH is found before the post.
    ah1 = pd.create_ah(ib.AHAttr(dlid=1, port_num=1))
    ah2 = pd.create_ah(ib.AHAttr(dlid=2, port_num=1))
    uwrs = [
        SendWR(
            wr_id=k,
            opcode=W.SEND,
            ah=ah1,
            remote_qpn=5,
            remote_qkey=7,
            sg_list=[SGE(mrs[0], 8)],
        )
        for k in range(2)
    ]
    uchain = SendWRChain(uwrs)
    uwrs[1].ah = ah2
    fake.clear()
    ud.post_send(uchain)
    out["ud_ahs"] = [
        r["wr[1].wr.ud.ah"] == r["wr[0].wr.ud.ah"] for r in fake.records() if r.verb == "post_send"
    ]
    uwrs[0].ah = ah2
    ah1.close()
    ud.post_send(uchain)
    out["ud_after_swap"] = [r["count"] for r in fake.records() if r.verb == "post_send"]
    uchain.release()
    cq.poll(64)

    # A chain of window binds records the window and the bound MR.
    mw = pd.alloc_mw(enums.MWType.TYPE_2)
    bmr = reg(100)
    bind = SendWR(
        1,
        opcode=W.BIND_MW,
        mw=mw,
        rkey=ib.inc_rkey(mw.rkey),
        bind_info=ib.MWBindInfo(bmr, bmr.addr, 64, A.REMOTE_WRITE),
    )
    bchain = SendWRChain([bind, SendWR(2, sg_list=[SGE(bmr, 8)])])
    out["bind_referents"] = sorted(
        type(o).__name__ for o in gc.get_referents(bchain) if isinstance(o, (ib.MR, ib.MW))
    )
    fake.clear()
    qp.post_send(bchain)
    out["bind_posted"] = [r["wr[0].opcode"] for r in fake.records() if r.verb == "post_send"]
    bchain.release()
    cq.poll(64)

    # Receive chains: on the QP, on an SRQ (its failure names the WR
    # without a QP), and a failed build that leaves no member claimed.
    rwrs = [RecvWR(wr_id=k, sg_list=[SGE(mrs[0], 8)]) for k in range(3)]
    rchain = RecvWRChain(rwrs)
    fake.clear()
    qp.post_recv(rchain)
    fake.fail("post_recv", errno.EINVAL)
    out["failed_recv"] = outcome(lambda: qp.post_recv(rchain))
    fake.clear()
    srq.post_recv(rchain)
    out["srq_count"] = [r["count"] for r in fake.records() if r.verb == "post_srq_recv"]
    fake.fail("post_srq_recv", errno.ENOMEM)
    out["failed_srq"] = outcome(lambda: srq.post_recv(rchain))
    rchain.release()

    def boom():
        yield RecvWR()
        raise KeyError("from the generator")

    out["generator"] = outcome(lambda: RecvWRChain(boom()))
    out["keyword"] = outcome(lambda: RecvWRChain(rwrs, extra=1))
    closed = reg(200)
    late = RecvWR(wr_id=5, sg_list=[SGE(closed, 8)])
    late_send = SendWR(wr_id=7, sg_list=[SGE(closed, 8)])
    closed.close()
    out["closed_at_build"] = outcome(lambda: RecvWRChain(rwrs[:2] + [late]))
    out["free_again"] = len(RecvWRChain(rwrs[:2]))
    gone = RecvWRChain(rwrs[:1])
    gone.release()
    out["recv released"] = outcome(lambda: qp.post_recv(gone))
    out["send closed at build"] = outcome(lambda: SendWRChain([SendWR(6), late_send]))
    cq.poll(1024)
    for o in (srq, ud, qp, *[m for m in mrs if not m.closed], bmr, mw, ah2, cq, pd, ctx):
        o.close()
    return out


@pytest.fixture(scope="module")
def chains(recording):
    res = recording.run(_chain_body)
    return res, res.ok()


def test_a_chain_records_each_handle_once_past_64(chains):
    _, out = chains
    assert out["referents"] == 70
    assert out["counts"] == [71, 71] and out["first_ids"] == [0, 0]


def test_a_closed_member_mr_and_a_released_chain_are_refused(chains):
    _, out = chains
    assert out["closed_mr"] == [
        "VerbsError",
        "[Errno 9] Bad file descriptor: work request 5: sg_list[0] points into a closed MR",
    ]
    assert out["released"] == ["ValueError", "this SendWRChain was released"]
    assert out["released_iter"] == []


def test_a_failed_chain_post_names_the_member(chains):
    _, out = chains
    name, msg = out["failed_send"]
    assert name == "VerbsError"
    assert "send WR at index 0 (wr_id=10) was rejected" in msg
    assert "the queue is full" in msg
    assert out["after_failure"] == [3, 3]  # the refused post, then the next
    name, msg = out["failed_recv"]
    assert "receive WR at index 0 (wr_id=0) was rejected" in msg and "too many SGEs" in msg
    assert out["srq_count"] == [3]
    # An SRQ's failure names no QP.
    assert out["failed_srq"] == [
        "VerbsError",
        "[Errno 12] ibv_post_srq_recv: Cannot allocate memory: receive WR at index 0 "
        "(wr_id=0) was rejected",
    ]


def test_a_replaced_or_closed_ah_is_checked_again(chains):
    _, out = chains
    assert out["ud_ahs"] == [False]
    assert out["ud_after_swap"] == [2, 2]


def test_a_chain_of_binds_holds_the_window_and_its_mr(chains):
    _, out = chains
    assert out["bind_referents"] == ["MR", "MW"]
    assert out["bind_posted"] == [int(BIND_MW)]


def test_a_refused_build_claims_nothing(chains):
    res, out = chains
    assert out["generator"] == ["KeyError", "'from the generator'"]
    assert out["keyword"] == ["TypeError", "RecvWRChain() takes at most 1 argument (2 given)"]
    assert out["closed_at_build"] == [
        "VerbsError",
        "[Errno 9] Bad file descriptor: work request 2: sg_list[0] points into a closed MR",
    ]
    assert out["free_again"] == 2
    assert out["recv released"] == ["ValueError", "this RecvWRChain was released"]
    assert out["send closed at build"] == [
        "VerbsError",
        "[Errno 9] Bad file descriptor: work request 1: sg_list[0] points into a closed MR",
    ]
    assert res.live == 0, res.live_report
