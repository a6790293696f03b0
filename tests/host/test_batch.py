"""SendBatch, RecvBatch, QP.post_send_batch/post_recv_batch and CQ.poll_into
against the recording double: every field of every built WR, the bad
columns (each error names its row), the pieces, the lifetimes."""

from __future__ import annotations

import errno

import pytest

from ibverbs import RecvBatch, SendBatch, enums

Op = enums.WROpcode
SIG = int(enums.SendFlags.SIGNALED)
INL = int(enums.SendFlags.INLINE)


# The child's world: an RC QP in RTS over a 64 KiB MR.  Defined in each
# body (the body's source is what runs in the child).
WORLD = """
import ctypes
import numpy as np
import ibverbs
from ibverbs import enums
from support.outcomes import rts

def world(max_send_wr=64, max_recv_wr=64, max_inline_data=64):
    buf = ctypes.create_string_buffer(65536)
    ctx = ibverbs.Context("fake0")
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(256)
    mr = pd.reg_mr(ctypes.addressof(buf), 65536, enums.AccessFlags.LOCAL_WRITE)
    attr = ibverbs.QPInitAttr(cq, max_send_wr=max_send_wr, max_recv_wr=max_recv_wr,
                              max_inline_data=max_inline_data)
    return buf, ctx, pd, cq, mr, rts(pd.create_qp(attr))

# An RC QP in RTS whose side ("send", "recv") CQ holds one completion and
# drops the rest: a progress() run on it waits.
def stalled_qp(ctx, pd, cq, side):
    small = ctx.create_cq(1)
    if side == "send":
        return rts(pd.create_qp(ibverbs.QPInitAttr(small, max_send_wr=64)))
    return rts(pd.create_qp(ibverbs.QPInitAttr(cq, recv_cq=small, max_recv_wr=64)))

# Start b's run on the stalled q2; each of refused (callables) then raises
# ValueError; reset() ends the run, and b posts to qp again; bad progress()
# arguments raise; a closed q2 is EBADF.  What each step gave, in order.
def under_way(b, q2, qp, cq, refused):
    out = [b.progress(q2, 32, 16)]
    for f in refused:
        try:
            f()
        except ValueError as e:
            out.append(str(e))
    b.reset()
    out.append(b.post(qp, 0, 4))
    cq.poll_count(16)
    for args in ((qp, 0), (qp, 8, 0), (cq,)):
        try:
            b.progress(*args)
        except (ValueError, TypeError) as e:
            out.append(type(e).__name__)
    q2.close()
    try:
        b.progress(q2)
    except ibverbs.VerbsError as e:
        out.append(e.errno)
    return out
"""


def run(recording, src):
    res = recording.run(WORLD + src)
    return res


def refused_in_world(recording, call, exc, words):
    """CALL (source text, in world()'s names) raises EXC, WORDS in its message."""
    res = run(
        recording,
        f"""
def body(fake):
    from ibverbs import SendBatch, RecvBatch
    buf, ctx, pd, cq, mr, qp = world()
    {call}
""",
    )
    assert res.error is not None and res.error["type"] == exc.__name__, res.error
    assert words in res.error["message"]
    return res


def wrs(rec):
    return [rec.prefixed(f"wr[{i}].") for i in range(rec["count"])]


def test_send_batch_writes_every_field_of_every_wr(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    local = np.array([0, 4096, 100, 8192, 65536 - 16], dtype=np.int64)
    lengths = array.array("I", [16, 4096, 32, 1000, 16])
    remote = np.array([5, 6, 7, 8, 9], dtype=np.uint32) * 0x1000
    b = ibverbs.SendBatch(mr, local, lengths, remote, 0x77, remote_base=0xA0000,
                          wr_id=100, signal_every=2, imm_data=0xDEADBEEF,
                          inline_threshold=32)
    assert len(b) == 5 and b.mr is mr and b.opcode == enums.WROpcode.RDMA_WRITE
    assert b.post(qp) == 5
    wcs = [(w.wr_id, int(w.status)) for w in cq.poll(16)]
    return [mr.lkey, ctypes.addressof(buf), wcs]
import array
""",
    )
    lkey, base, wcs = res.ok()
    rec = res.one("post_send")
    w = wrs(rec)
    assert rec["count"] == 5
    assert [x["wr_id"] for x in w] == [100, 101, 102, 103, 104]
    W, WI = int(Op.RDMA_WRITE), int(Op.RDMA_WRITE_WITH_IMM)
    assert [x["opcode"] for x in w] == [W, W, W, W, WI]
    # signal every 2nd and the last; inline at 32 bytes or fewer
    assert [x["send_flags"] for x in w] == [INL, SIG, INL, SIG, SIG | INL]
    assert [x["num_sge"] for x in w] == [1] * 5
    assert [x["sg_list[0].addr"] for x in w] == [base + o for o in (0, 4096, 100, 8192, 65520)]
    assert [x["sg_list[0].length"] for x in w] == [16, 4096, 32, 1000, 16]
    assert [x["sg_list[0].lkey"] for x in w] == [lkey] * 5
    assert [x["wr.rdma.remote_addr"] for x in w] == [0xA0000 + k * 0x1000 for k in (5, 6, 7, 8, 9)]
    assert [x["wr.rdma.rkey"] for x in w] == [0x77] * 5
    assert w[4]["imm_data"] == 0xDEADBEEF and "imm_data" not in w[3]
    assert wcs == [[101, 0], [103, 0], [104, 0]]


def test_send_batch_opcodes_columns_and_addresses(recording):
    pytest.importorskip("torch")  # a torch CPU tensor is one of the columns
    res = run(
        recording,
        """
def body(fake):
    import torch
    buf, ctx, pd, cq, mr, qp = world()
    out = {}
    # SEND_WITH_IMM: every row carries the immediate; no remote.
    ibverbs.SendBatch(mr, memoryview(array.array("q", [0, 64])), 8,
                      opcode=enums.WROpcode.SEND_WITH_IMM, imm_data=7).post(qp)
    # READ with per-row rkeys and a wr_id column (a torch tensor).
    ibverbs.SendBatch(mr, torch.tensor([0, 128], dtype=torch.int32), 64,
                      np.array([0x5000, 0x6000], dtype=np.uint64),
                      np.array([1, 2], dtype=np.uint16),
                      opcode=enums.WROpcode.RDMA_READ,
                      wr_id=np.array([9, 3], dtype=np.uint64)).post(qp)
    # No MR: addresses and lkeys (one column each).
    base = ctypes.addressof(buf)
    qp.post_send_batch(None, np.array([base, base + 8], dtype=np.uint64), 8,
                       np.array([0, 8], dtype=np.int64), 5, remote_base=0x9000,
                       lkey=np.array([mr.lkey, mr.lkey], dtype=np.uint32),
                       opcode=enums.WROpcode.RDMA_WRITE)
    # SEND: the last becomes SEND_WITH_IMM with imm_data.
    qp.post_send_batch(mr, np.arange(3, dtype=np.uint8), 1,
                       opcode=enums.WROpcode.SEND, imm_data=1)
    return [mr.lkey, base]
import array
""",
    )
    lkey, base = res.ok()
    send_imm, read, by_addr, send = (wrs(r) for r in res.calls("post_send"))
    assert [x["opcode"] for x in send_imm] == [int(Op.SEND_WITH_IMM)] * 2
    assert [x["imm_data"] for x in send_imm] == [7, 7]
    assert [x["opcode"] for x in read] == [int(Op.RDMA_READ)] * 2
    assert [x["wr_id"] for x in read] == [9, 3]
    assert [x["wr.rdma.rkey"] for x in read] == [1, 2]
    assert [x["wr.rdma.remote_addr"] for x in read] == [0x5000, 0x6000]
    assert [x["sg_list[0].addr"] for x in read] == [base, base + 128]
    assert [x["sg_list[0].addr"] for x in by_addr] == [base, base + 8]
    assert [x["sg_list[0].lkey"] for x in by_addr] == [lkey, lkey]
    assert [x["wr.rdma.remote_addr"] for x in by_addr] == [0x9000, 0x9008]
    assert [x["wr_id"] for x in by_addr] == [0, 1]
    assert [x["opcode"] for x in send] == [int(Op.SEND)] * 2 + [int(Op.SEND_WITH_IMM)]
    assert send[2]["imm_data"] == 1
    assert [x["send_flags"] for x in send] == [0, 0, SIG]


def test_send_batch_posts_in_pieces_and_update_replaces_columns(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world(max_send_wr=8)
    n = 20
    b = ibverbs.SendBatch(mr, np.arange(n) * 16, 16, np.arange(n) * 32, 3,
                          signal_every=16)
    posted = []
    k = 0
    while k < n:
        k += b.post(qp, k)
        posted.append(k)
    assert b.post(qp, n) == 0
    assert b.post(qp, 3, count=2) == 2
    b.update(remote=np.arange(n)[::-1].copy() * 64, wr_id=1000)
    b.post(qp, 0, 4)
    try:
        b.update(imm_data=5)
    except ValueError as e:
        return posted, str(e)
""",
    )
    posted, err = res.ok()
    assert posted == [8, 16, 20] and "without imm_data" in err
    p1, p2, p3, p4, p5 = (wrs(r) for r in res.calls("post_send"))
    assert [len(p) for p in (p1, p2, p3, p4, p5)] == [8, 8, 4, 2, 4]
    # each post's last row is signaled, and row 15 (every 16th)
    assert [x["send_flags"] for x in p1] == [0] * 7 + [SIG]
    assert [x["send_flags"] for x in p2] == [0] * 7 + [SIG]
    assert [x["send_flags"] for x in p4] == [0, SIG]
    assert [x["wr_id"] for x in p2] == list(range(8, 16))
    assert [x["sg_list[0].addr"] - p1[0]["sg_list[0].addr"] for x in p3] == [
        16 * k for k in range(16, 20)
    ]
    # update: new remote addresses and wr_ids, the rest as built
    assert [x["wr.rdma.remote_addr"] for x in p5] == [64 * k for k in (19, 18, 17, 16)]
    assert [x["wr_id"] for x in p5] == [1000, 1001, 1002, 1003]
    assert [x["sg_list[0].length"] for x in p5] == [16] * 4
    assert [x["wr.rdma.rkey"] for x in p5] == [3] * 4


BAD = [
    # (constructor call, error type, words of the message)
    ("SendBatch(mr, np.arange(3), np.arange(2), np.arange(3), 1)", ValueError, "lengths has 2"),
    ("SendBatch(mr, np.array([0, 65530]), 16, np.arange(2), 1)", ValueError, "row 1"),
    ("SendBatch(mr, np.array([0, -1]), 16, np.arange(2), 1)", ValueError, "row 1 is negative"),
    ("SendBatch(mr, np.arange(2.0), 16, np.arange(2), 1)", ValueError, "format is 'd'"),
    ("SendBatch(mr, np.zeros((2, 2), np.int64), 16, np.arange(2), 1)", ValueError, "2 dimensions"),
    ("SendBatch(mr, np.arange(4)[::2], 16, np.arange(2), 1)", ValueError, "strided"),
    ("SendBatch(mr, [0, 1], 16, np.arange(2), 1)", TypeError, "array of integers"),
    ("SendBatch(mr, np.arange(2), 16, np.arange(2), 2**32)", ValueError, "rkey does not fit"),
    ("SendBatch(mr, np.arange(2), 2**32, np.arange(2), 1)", ValueError, "length does not fit"),
    ("SendBatch(mr, np.arange(2), 16, None, None)", ValueError, "needs remote and rkey"),
    (
        "SendBatch(mr, np.arange(2), 16, np.arange(2), 1, opcode=enums.WROpcode.SEND)",
        ValueError,
        "SEND batch has no remote",
    ),
    ("SendBatch(None, np.arange(2), 16, np.arange(2), 1)", ValueError, "not both"),
    ("SendBatch(mr, np.arange(2), 16, np.arange(2), 1, lkey=3)", ValueError, "not both"),
    (
        "SendBatch(mr, np.arange(2), 16, np.arange(2), 1, opcode=enums.WROpcode.RDMA_READ,"
        " imm_data=1)",
        ValueError,
        "READ carries no imm_data",
    ),
    ("SendBatch(mr, np.arange(0), 16, np.arange(0), 1)", ValueError, "no rows"),
    (
        "SendBatch(mr, np.arange(2), 16, np.array([1, 2**64 - 1], np.uint64), 1, remote_base=1)",
        ValueError,
        "row 1: remote_base + remote overflows",
    ),
    ("SendBatch(mr, np.arange(2), 16, np.arange(2), 1, opcode=9)", ValueError, "opcode"),
    ("RecvBatch(mr, np.array([0, 65536]), 1)", ValueError, "row 1"),
    ("RecvBatch(mr, np.arange(2), np.arange(3))", ValueError, "lengths has 3"),
]


@pytest.mark.parametrize("call,exc,words", BAD, ids=[b[2] for b in BAD])
def test_bad_columns_are_refused_naming_the_row(recording, call, exc, words):
    res = refused_in_world(recording, call, exc, words)
    assert not res.calls("post_send")


def test_a_refused_update_leaves_the_batch_as_it_was(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    b = ibverbs.SendBatch(mr, np.arange(3) * 8, 8, np.arange(3) * 8, 1)
    errs = []
    for kw in (dict(remote=np.arange(2)), dict(local=np.array([0, 8, 65535])),
               dict(rkey=np.array([1, 2, 2**40])), dict(lkey=1)):
        try:
            b.update(**kw)
        except ValueError as e:
            errs.append(str(e))
    b.post(qp)
    return errs
""",
    )
    errs = res.ok()
    assert len(errs) == 4 and "row 2" in errs[1] and "row 2" in errs[2]
    w = wrs(res.one("post_send"))
    assert [x["wr.rdma.remote_addr"] for x in w] == [0, 8, 16]
    assert [x["wr.rdma.rkey"] for x in w] == [1, 1, 1]


def test_batch_holds_its_mr_and_a_closed_mr_is_ebadf(recording):
    res = run(
        recording,
        """
import gc
import weakref
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    b = ibverbs.SendBatch(mr, np.arange(2) * 8, 8, np.arange(2), 1)
    r = ibverbs.RecvBatch(mr, np.arange(2) * 8, 8)
    out = []
    for batch in (b, r):
        try:
            batch.post(qp, 0, 0)
        except Exception as e:
            out.append(repr(e))
    mr.close()
    for batch in (b, r):
        try:
            batch.post(qp)
        except ibverbs.VerbsError as e:
            out.append(e.errno)
    qp.close()
    try:
        b.post(qp)
    except ibverbs.VerbsError as e:
        out.append(e.errno)
    try:
        b.post(mr)
    except TypeError as e:
        out.append("TypeError")
    del b, r
    gc.collect()
    return out
""",
    )
    assert res.ok() == [errno.EBADF, errno.EBADF, errno.EBADF, "TypeError"]
    assert not res.calls("post_send") and not res.calls("post_recv")
    assert res.live == 0, res.live_report


def test_a_failed_post_names_the_row(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    b = ibverbs.SendBatch(mr, np.arange(4) * 8, 8, np.arange(4), 1, wr_id=50)
    fake.fail("post_send", 12)
    b.post(qp, 2)
""",
    )
    assert res.error["type"] == "VerbsError" and res.error["errno"] == errno.ENOMEM
    assert "index 2 (wr_id=52)" in res.error["message"]


def test_post_send_batch_refuses_more_than_the_queue_and_ud(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world(max_send_wr=4)
    out = []
    try:
        qp.post_send_batch(mr, np.arange(5), 1, np.arange(5), 1)
    except ValueError as e:
        out.append(str(e))
    ud = pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=enums.QPType.UD))
    try:
        ibverbs.SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND).post(ud)
    except ValueError as e:
        out.append(str(e))
    return out
""",
    )
    full, ud = res.ok()
    assert "5 rows do not fit the send queue (4" in full
    assert "UD QP" in ud
    assert not res.calls("post_send")


UD_WORLD = """
def ud_world(n_ah=1, max_send_wr=64):
    buf, ctx, pd, cq, mr, qp = world(max_send_wr=max_send_wr)
    ud = pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=enums.QPType.UD,
                                         max_send_wr=max_send_wr))
    ud.to_init(1, qkey=0x1234)
    ud.to_rtr(None)
    ud.to_rts()
    ahs = [pd.create_ah(ibverbs.AHAttr(dlid=k + 1, port_num=1)) for k in range(n_ah)]
    return buf, ctx, pd, cq, mr, qp, ud, ahs
"""


def test_ud_batch_writes_ah_qpn_and_qkey_of_every_wr(recording):
    res = run(
        recording,
        UD_WORLD
        + """
def body(fake):
    buf, ctx, pd, cq, mr, qp, ud, ahs = ud_world(n_ah=3)
    rows = [ahs[k % 3] for k in range(7)]
    qpns = np.array([0x10 + k for k in range(7)], dtype=np.uint32)
    qkeys = array.array("Q", [0x1000 + k for k in range(7)])
    b = ibverbs.SendBatch(mr, np.arange(7) * 64, 64, opcode=enums.WROpcode.SEND_WITH_IMM,
                          imm_data=0x99, ah=rows, remote_qpn=qpns, remote_qkey=qkeys,
                          wr_id=40)
    one = ibverbs.SendBatch(mr, np.arange(3) * 64, 8, opcode=enums.WROpcode.SEND,
                            ah=ahs[1], remote_qpn=0xFFFFFF, inline_threshold=8)
    del rows
    out = [b.post(ud), one.post(ud)]
    cq.poll(16)  # progress() wants the send CQ to itself
    out.append(b.progress(ud, piece=4))
    b.update(remote_qpn=5, remote_qkey=np.array([9] * 7, dtype=np.int16))
    out.append(b.post(ud, 5))
    for ah in ahs:
        ah.close()
    return out + [mr.lkey, ctypes.addressof(buf)]
import array
""",
    )
    *posted, lkey, base = res.ok()
    assert posted == [7, 3, 7, 2]
    ah = [r["ah"] for r in res.calls("destroy_ah")]
    assert len(set(ah)) == 3
    posts = res.calls("post_send")
    w = wrs(posts[0])
    assert [x["wr.ud.ah"] for x in w] == [ah[k % 3] for k in range(7)]
    assert [x["wr.ud.remote_qpn"] for x in w] == [0x10 + k for k in range(7)]
    assert [x["wr.ud.remote_qkey"] for x in w] == [0x1000 + k for k in range(7)]
    assert [x["wr_id"] for x in w] == list(range(40, 47))
    assert [x["opcode"] for x in w] == [int(Op.SEND_WITH_IMM)] * 7
    assert [x["imm_data"] for x in w] == [0x99] * 7
    assert [x["sg_list[0].addr"] for x in w] == [base + 64 * k for k in range(7)]
    assert [x["sg_list[0].length"] for x in w] == [64] * 7
    assert [x["sg_list[0].lkey"] for x in w] == [lkey] * 7
    assert [x["send_flags"] for x in w] == [0] * 6 + [SIG]
    w = wrs(posts[1])
    assert [x["wr.ud.ah"] for x in w] == [ah[1]] * 3
    assert [x["wr.ud.remote_qpn"] for x in w] == [0xFFFFFF] * 3
    assert [x["wr.ud.remote_qkey"] for x in w] == [0] * 3
    assert [x["opcode"] for x in w] == [int(Op.SEND)] * 3
    assert [x["send_flags"] for x in w] == [INL, INL, SIG | INL]
    # progress in pieces of 4: every row as built
    sent = [x for r in posts[2:4] for x in wrs(r)]
    assert [x["wr.ud.ah"] for x in sent] == [ah[k % 3] for k in range(7)]
    assert [x["wr.ud.remote_qpn"] for x in sent] == [0x10 + k for k in range(7)]
    # the update replaced the QPNs and Q_Keys only
    w = wrs(posts[4])
    assert [(x["wr.ud.remote_qpn"], x["wr.ud.remote_qkey"]) for x in w] == [(5, 9)] * 2
    assert [x["wr.ud.ah"] for x in w] == [ah[2], ah[0]]
    assert res.live == 0, res.live_report


def test_ud_batch_holds_its_ahs_and_a_closed_ah_is_ebadf(recording):
    res = run(
        recording,
        UD_WORLD
        + """
def body(fake):
    import gc, sys
    buf, ctx, pd, cq, mr, qp, ud, ahs = ud_world(n_ah=2)
    b = ibverbs.SendBatch(mr, np.arange(4), 1, opcode=enums.WROpcode.SEND,
                          ah=(ahs[0], ahs[1], ahs[0], ahs[1]), remote_qpn=7)
    held = [sys.getrefcount(a) for a in ahs]
    ahs[1].close()
    out = []
    for call in (lambda: b.post(ud), lambda: b.progress(ud),
                 lambda: ibverbs.SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND,
                                           ah=ahs[1], remote_qpn=7)):
        try:
            call()
        except ibverbs.VerbsError as e:
            out.append(e.errno)
    refs = sys.getrefcount(ahs[0])
    del b
    gc.collect()
    return [out, refs - sys.getrefcount(ahs[0])]
""",
    )
    assert res.ok() == [[errno.EBADF] * 3, 1]
    assert not res.calls("post_send")
    assert res.live == 0, res.live_report


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (
            "SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND, ah=ahs[0])",
            ValueError,
            "needs remote_qpn",
        ),
        (
            "SendBatch(mr, np.arange(2), 1, np.arange(2), 1, ah=ahs[0], remote_qpn=1)",
            ValueError,
            "SEND or SEND_WITH_IMM",
        ),
        (
            "SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND, remote_qpn=1)",
            ValueError,
            "go with ah",
        ),
        (
            "SendBatch(mr, np.arange(3), 1, opcode=enums.WROpcode.SEND, ah=ahs * 2, remote_qpn=1)",
            ValueError,
            "ah has 2 AHs for 3 rows",
        ),
        (
            "SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND, ah=[ahs[0], mr], "
            "remote_qpn=1)",
            TypeError,
            "row 1: ah must be an AH",
        ),
        (
            "SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND, ah=5, remote_qpn=1)",
            TypeError,
            "a sequence of AHs",
        ),
        (
            "SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND, ah=ahs[0], "
            "remote_qpn=np.array([1, 1 << 24]))",
            ValueError,
            "row 1: remote_qpn does not fit 24 bits",
        ),
        (
            "SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND, ah=ahs[0], "
            "remote_qpn=1, remote_qkey=np.array([1, 1 << 32]))",
            ValueError,
            "row 1: remote_qkey does not fit 32 bits",
        ),
        (
            "SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND, ah=ahs[0], "
            "remote_qpn=1).post(qp)",
            ValueError,
            "posts to a UD QP only",
        ),
        (
            "SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND).post(ud)",
            ValueError,
            "build the SendBatch with ah=",
        ),
        (
            "SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND).update(remote_qpn=1)",
            ValueError,
            "go with a UD batch",
        ),
        (
            "SendBatch(mr, np.arange(2), 1, opcode=enums.WROpcode.SEND, ah=ahs[0], "
            "remote_qpn=1).update(remote_qpn=np.arange(3))",
            ValueError,
            "remote_qpn",
        ),
    ],
)
def test_bad_ud_batches_are_refused(recording, call, exc, words):
    res = run(
        recording,
        UD_WORLD
        + f"""
def body(fake):
    from ibverbs import SendBatch
    buf, ctx, pd, cq, mr, qp, ud, ahs = ud_world()
    {call}
""",
    )
    assert res.error is not None and res.error["type"] == exc.__name__, res.error
    assert words in res.error["message"], res.error
    assert not res.calls("post_send")


def test_post_send_batch_of_a_ud_qp(recording):
    res = run(
        recording,
        UD_WORLD
        + """
def body(fake):
    buf, ctx, pd, cq, mr, qp, ud, ahs = ud_world(max_send_wr=4)
    ud.post_send_batch(mr, np.arange(4), 1, opcode=enums.WROpcode.SEND, ah=ahs[0],
                       remote_qpn=np.arange(4) + 100, remote_qkey=0x1234)
    return [w.wr_id for w in cq.poll(8)]
""",
    )
    assert res.ok() == [3]
    w = wrs(res.one("post_send"))
    assert [x["wr.ud.remote_qpn"] for x in w] == [100, 101, 102, 103]
    assert [x["wr.ud.remote_qkey"] for x in w] == [0x1234] * 4
    assert len({x["wr.ud.ah"] for x in w}) == 1 and w[0]["wr.ud.ah"] != 0


QPEX_WORLD = """
def qpex_world(ops, qp_type=enums.QPType.RC, rts=True):
    buf, ctx, pd, cq, mr, qp = world()
    attr = ibverbs.QPInitAttrEx(cq, send_ops_flags=ops, qp_type=qp_type, max_send_wr=64,
                                max_inline_data=64)
    qpx = pd.create_qp_ex(attr)
    if qp_type == enums.QPType.UD:
        qpx.to_init(1, qkey=0x1234)
        qpx.to_rtr(None)
    else:
        qpx.to_init(1)
        qpx.to_rtr(ibverbs.QPInfo(5, 0, 0, bytes(16), 1, 3), sgid_index=0)
    if rts:
        qpx.to_rts()
    return buf, ctx, pd, cq, mr, qpx
F = enums.QPCreateSendOpsFlags
"""


def qpex_wrs(res):
    """The wr_* calls of each wr_start..wr_complete, as lists of records."""
    out, cur = [], None
    for r in res.records:
        if r.verb == "wr_start":
            cur = []
        elif r.verb == "wr_complete":
            out.append((cur, r["count"]))
            cur = None
        elif cur is not None and r.verb.startswith("wr_"):
            cur.append(r)
    return out


def test_batch_on_a_qpex_posts_by_the_wr_builders(recording):
    res = run(
        recording,
        QPEX_WORLD
        + """
def body(fake):
    buf, ctx, pd, cq, mr, qpx = qpex_world(F.RDMA_WRITE | F.RDMA_WRITE_WITH_IMM | F.SEND)
    local = np.array([0, 4096, 100, 8192, 65536 - 16], dtype=np.int64)
    lengths = np.array([16, 4096, 32, 1000, 16], dtype=np.uint32)
    b = ibverbs.SendBatch(mr, local, lengths, np.arange(5) * 0x1000, 0x77, remote_base=0xA0000,
                          wr_id=100, signal_every=2, imm_data=0xDEADBEEF, inline_threshold=32)
    out = [b.post(qpx), [w.wr_id for w in cq.poll(16)]]
    out.append(b.progress(qpx, 4, 2))
    return out + [mr.lkey, ctypes.addressof(buf)]
""",
    )
    posted, wcs, done, lkey, base = res.ok()
    assert (posted, wcs, done) == (5, [101, 103, 104], 5)
    assert not res.calls("post_send")
    batches = qpex_wrs(res)
    assert [n for _, n in batches] == [5, 2, 2, 1]
    calls, _ = batches[0]
    builders = calls[0::2]
    assert [c.verb for c in builders] == ["wr_rdma_write"] * 4 + ["wr_rdma_write_imm"]
    assert [c["wr_id"] for c in builders] == [100, 101, 102, 103, 104]
    assert [c["wr_flags"] for c in builders] == [INL, SIG, INL, SIG, SIG | INL]
    assert [c["rkey"] for c in builders] == [0x77] * 5
    assert [c["remote_addr"] for c in builders] == [0xA0000 + k * 0x1000 for k in range(5)]
    assert builders[4]["imm_data"] == 0xDEADBEEF
    data = calls[1::2]
    assert [c.verb for c in data] == [
        "wr_set_inline_data",
        "wr_set_sge",
        "wr_set_inline_data",
        "wr_set_sge",
        "wr_set_inline_data",
    ]
    assert [c["addr"] for c in data] == [base + o for o in (0, 4096, 100, 8192, 65520)]
    assert [c["length"] for c in data] == [16, 4096, 32, 1000, 16]
    assert [data[k]["lkey"] for k in (1, 3)] == [lkey] * 2
    # progress's pieces: the last of each signaled for its post
    flags = [c["wr_flags"] for calls, _ in batches[1:] for c in calls[0::2]]
    assert flags == [INL, SIG, INL, SIG, SIG | INL]
    assert res.live == 0, res.live_report


def test_ud_batch_on_a_qpex_sets_each_ud_address(recording):
    res = run(
        recording,
        QPEX_WORLD
        + """
def body(fake):
    buf, ctx, pd, cq, mr, qpx = qpex_world(F.SEND | F.SEND_WITH_IMM, enums.QPType.UD)
    ahs = [pd.create_ah(ibverbs.AHAttr(dlid=k + 1, port_num=1)) for k in range(2)]
    b = ibverbs.SendBatch(mr, np.arange(4) * 64, 64, opcode=enums.WROpcode.SEND_WITH_IMM,
                          imm_data=7, ah=[ahs[0], ahs[1], ahs[1], ahs[0]],
                          remote_qpn=np.arange(4) + 0x40, remote_qkey=0x1234)
    out = b.post(qpx)
    for ah in ahs:
        ah.close()
    return out
""",
    )
    assert res.ok() == 4
    ah = [r["ah"] for r in res.calls("destroy_ah")]
    ((calls, n),) = qpex_wrs(res)
    assert n == 4 and not res.calls("post_send")
    assert [c.verb for c in calls[0::3]] == ["wr_send_imm"] * 4
    assert [c["imm_data"] for c in calls[0::3]] == [7] * 4
    ud = calls[1::3]
    assert [c.verb for c in ud] == ["wr_set_ud_addr"] * 4
    assert [c["ah"] for c in ud] == [ah[0], ah[1], ah[1], ah[0]]
    assert [c["remote_qpn"] for c in ud] == [0x40, 0x41, 0x42, 0x43]
    assert [c["remote_qkey"] for c in ud] == [0x1234] * 4
    assert [c.verb for c in calls[2::3]] == ["wr_set_sge"] * 4


def test_a_qpex_without_the_ops_posts_by_ibv_post_send(recording):
    res = run(
        recording,
        QPEX_WORLD
        + """
def body(fake):
    buf, ctx, pd, cq, mr, qpx = qpex_world(F.RDMA_WRITE)  # no WRITE_WITH_IMM
    b = ibverbs.SendBatch(mr, np.arange(3) * 8, 8, np.arange(3), 1, imm_data=1)
    return b.post(qpx)
""",
    )
    assert res.ok() == 3
    assert res.one("post_send")["count"] == 3 and not qpex_wrs(res)


def test_a_refused_wr_complete_names_the_first_row_and_posts_none(recording):
    res = run(
        recording,
        QPEX_WORLD
        + """
def body(fake):
    buf, ctx, pd, cq, mr, qpx = qpex_world(F.RDMA_WRITE, rts=False)  # RTR: refused
    b = ibverbs.SendBatch(mr, np.arange(6) * 8, 8, np.arange(6), 1, wr_id=30)
    out = []
    try:
        b.post(qpx, 2)
    except ibverbs.VerbsError as e:
        out.append([e.errno, str(e)])
    try:
        b.progress(qpx, 4, 2)
    except ibverbs.VerbsError as e:
        out.append([e.errno, str(e)])
    qpx.to_rts()
    while b.progress(qpx, 4, 2) < 6:  # the run goes on from row 0
        pass
    return out + [cq.poll_count(16)]
""",
    )
    (e1, m1), (e2, m2), left = res.ok()
    assert e1 == e2 == errno.EINVAL
    assert "index 2 (wr_id=32)" in m1 and "index 0 (wr_id=30)" in m2
    assert [n for _, n in qpex_wrs(res)] == [4, 2, 2, 2, 2]
    assert left == 0


def test_progress_posts_in_pieces_within_depth_and_reaps(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    ids = np.arange(100, dtype=np.uint64)[::-1].copy() + 7  # not row + base
    b = ibverbs.SendBatch(mr, np.arange(100) * 8, 8, np.arange(100) * 8, 0x55,
                          wr_id=ids)
    first = b.progress(qp, depth=40, piece=16)
    again = b.progress(qp)  # a new run, default depth (64) and piece (16)
    return [first, again, cq.poll_count(16)]
""",
    )
    assert res.ok() == [100, 100, 0]
    # at most 40 rows in flight: the double completes each signaled piece
    # at once, so each poll reaps every row posted before it
    counts, in_flight, most = [], 0, 0
    for r in res.records:
        if r.verb == "post_send" and sum(counts) < 100:
            counts.append(r["count"])
            in_flight += r["count"]
            most = max(most, in_flight)
        elif r.verb == "poll_cq":
            in_flight = 0
    assert counts == [16] * 6 + [4] and most == 36  # 16 + 16 + 4
    sent = [w for r in res.calls("post_send") for w in wrs(r)]
    assert [w["wr_id"] for w in sent[:100]] == list(range(106, 6, -1))
    assert [w["wr_id"] for w in sent[100:]] == list(range(106, 6, -1))
    # each piece's last row signaled for its post, none other
    assert [i for i, w in enumerate(sent[:100]) if w["send_flags"] & SIG] == [
        *range(15, 96, 16),
        99,
    ]
    assert res.live == 0, res.live_report


def test_progress_names_the_failed_row_and_ends_the_run(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    b = ibverbs.SendBatch(mr, np.arange(64) * 8, 8, np.arange(64), 1, wr_id=1000)
    fake.fail("completion", int(enums.WCStatus.REM_ACCESS_ERR))
    try:
        b.progress(qp, 32, 8)
    except ibverbs.CompletionError as e:
        err = [e.row, e.wc.wr_id, e.strerror, e.errno, e.posted, [w.wr_id for w in e.after]]
    cq.poll_count(64)  # the rows in flight stay in the CQ
    return [err, b.progress(qp, 32, 8)]  # a new run from row 0
""",
    )
    (row, wr_id, msg, err, posted, after), n = res.ok()
    assert (row, wr_id, n, err, posted) == (7, 1007, 64, errno.EIO, 32)
    assert after == [1015, 1023, 1031]  # reaped with row 7's, each piece's last
    assert msg.startswith("SendBatch row 7: work completion failed: REM_ACCESS_ERR")


def test_progress_refuses_while_a_run_is_under_way(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    q2 = stalled_qp(ctx, pd, cq, "send")
    b = ibverbs.SendBatch(mr, np.arange(32) * 8, 8, np.arange(32), 1)
    refused = (lambda: b.post(q2), lambda: b.update(rkey=2), lambda: b.progress(qp))
    return under_way(b, q2, qp, cq, refused)
""",
    )
    out = res.ok()
    assert out[0] == 16  # the first piece's completion went in, the second's dropped
    assert "run of this batch is under way (16 of 32 rows complete)" in out[1]
    assert "under way" in out[2] and "on another QP" in out[3]
    assert out[4:] == [4, "ValueError", "ValueError", "TypeError", errno.EBADF]
    assert res.live == 0, res.live_report


# progress() of each batch: the batch (in world()'s names), its post verb,
# a WR of the same QP that is none of the batch's, and what the error of
# its completion calls the batch's rows.
GOES_ON = [
    (
        "ibverbs.SendBatch(mr, np.arange(40) * 8, 8, np.arange(40), 1, wr_id=500)",
        "post_send",
        "qp.post_send(ibverbs.SendWR(wr_id=9, opcode=enums.WROpcode.RDMA_WRITE,"
        " remote_addr=0, rkey=1, send_flags=enums.SendFlags.SIGNALED))",
        "wr_id 9 is not a row in flight",
    ),
    (
        "ibverbs.RecvBatch(mr, np.arange(40) * 8, 8, wr_id=500)",
        "post_recv",
        "qp.post_recv(ibverbs.RecvWR(wr_id=9))",
        "wr_id 9 is not the next row in flight",
    ),
]


@pytest.mark.parametrize("make,verb,stranger,words", GOES_ON, ids=["send", "recv"])
def test_progress_goes_on_after_a_failed_verb_and_strangers_end_it(
    recording, make, verb, stranger, words
):
    res = run(
        recording,
        f"""
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    b = {make}
    out = []
    for verb in ({verb!r}, "poll_cq"):
        fake.fail(verb, 12)
        try:
            b.progress(qp)
        except ibverbs.VerbsError as e:
            out.append(str(e))
        out.append(b.progress(qp))  # the run goes on, counts intact
    {stranger}  # a completion that is none of the batch's
    try:
        b.progress(qp)
    except ValueError as e:
        out.append(str(e))
    cq.poll_count(64)
    mr.close()
    try:
        b.progress(qp)
    except ibverbs.VerbsError as e:
        out.append(e.errno)
    return out
""",
    )
    out = res.ok()
    assert "index 0 (wr_id=500)" in out[0] and out[1] == 40
    assert "ibv_poll_cq" in out[2] and out[3] == 40
    assert words in out[4]
    assert out[5] == errno.EBADF
    assert res.live == 0, res.live_report


def test_progress_reaps_before_it_reports_a_refused_post(recording):
    """A post refused after a WR failed (a QP in error may refuse them):
    the loop still reaps, and the failed completion raises, not the post's
    VerbsError; alone, the refused post raises after the reap."""
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    out = []
    send = ibverbs.SendBatch(mr, np.arange(64) * 8, 8, np.arange(64), 1, wr_id=100)
    recv = ibverbs.RecvBatch(mr, np.arange(64) * 8, 8, wr_id=300)
    for b, verb in ((send, "post_send"), (recv, "post_recv")):
        fake.fail("completion", int(enums.WCStatus.REM_ACCESS_ERR))
        fake.fail_nth(verb, 22, 1)  # the second piece's post
        try:
            b.progress(qp, 32, 8)
        except ibverbs.CompletionError as e:
            out.append([type(b).__name__, e.row, e.posted, e.wc.wr_id])
        while cq.poll_count(16):
            pass
    fake.fail_nth("post_send", 22, 1)
    try:
        send.progress(qp, 32, 8)
    except ibverbs.VerbsError as e:
        out.append([e.errno, send.progress(qp, 32, 8)])  # then it goes on
    return out
""",
    )
    assert res.ok() == [
        ["SendBatch", 7, 8, 107],
        ["RecvBatch", 0, 8, 300],
        [errno.EINVAL, 64],
    ]
    verbs = [r.verb for r in res.records if r.verb in ("post_send", "poll_cq")]
    i = verbs.index("post_send")
    assert verbs[i : i + 3] == ["post_send", "post_send", "poll_cq"]
    assert res.live == 0, res.live_report


def test_recv_batch_and_poll_into(recording):
    pytest.importorskip("torch")  # a torch CPU tensor is one of the columns
    res = run(
        recording,
        """
def body(fake):
    import torch
    buf, ctx, pd, cq, mr, qp = world(max_recv_wr=4)
    r = ibverbs.RecvBatch(mr, np.arange(6) * 1024, np.array([10, 20, 30, 40, 50, 60]),
                          wr_id=np.arange(6, dtype=np.uint64) + 500)
    assert r.post(qp) == 4 and r.post(qp, 4) == 2
    qp.post_recv_batch(mr, array.array("H", [0]), 7)
    wr_id = np.zeros(5, dtype=np.uint64)
    status = torch.zeros(5, dtype=torch.int32)
    opcode = array.array("B", bytes(5))
    byte_len = np.zeros(5, dtype=np.uint32)
    imm = np.full(5, 9, dtype=np.int64)
    got = [cq.poll_into(wr_id=wr_id, status=status, opcode=opcode, byte_len=byte_len,
                        imm_data=imm)]
    first = [wr_id.tolist(), status.tolist(), list(opcode), byte_len.tolist(), imm.tolist()]
    got.append(cq.poll_into(wr_id=wr_id, num_entries=1))
    got.append(cq.poll_into(wr_id=wr_id, byte_len=byte_len))
    got.append(cq.poll_into(wr_id=wr_id))
    return [got, first, wr_id[:1].tolist(), byte_len[:1].tolist(), mr.lkey,
            ctypes.addressof(buf)]
import array
""",
    )
    got, first, last_id, last_len, lkey, base = res.ok()
    p1, p2, p3 = (wrs(r) for r in res.calls("post_recv"))
    assert [len(p) for p in (p1, p2, p3)] == [4, 2, 1]
    rows = p1 + p2
    assert [x["wr_id"] for x in rows] == list(range(500, 506))
    assert [x["num_sge"] for x in rows] == [1] * 6
    assert [x["sg_list[0].addr"] for x in rows] == [base + 1024 * k for k in range(6)]
    assert [x["sg_list[0].length"] for x in rows] == [10, 20, 30, 40, 50, 60]
    assert [x["sg_list[0].lkey"] for x in rows] == [lkey] * 6
    assert p3[0]["wr_id"] == 0 and p3[0]["sg_list[0].length"] == 7
    assert got == [5, 1, 1, 0]
    recv = int(enums.WCOpcode.RECV)
    assert first == [[500, 501, 502, 503, 504], [0] * 5, [recv] * 5, [10, 20, 30, 40, 50], [0] * 5]
    assert last_id == [0] and last_len == [7]


def test_recv_progress_posts_in_pieces_within_depth_and_reaps(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    ids = np.arange(100, dtype=np.uint64)[::-1].copy() + 7  # not row + base
    r = ibverbs.RecvBatch(mr, np.arange(100) * 64, 64, wr_id=ids)
    first = r.progress(qp, depth=40, piece=16)
    again = r.progress(qp)  # a new run, default depth (64) and piece (16)
    return [first, again, cq.poll_count(16), ctypes.addressof(buf), mr.lkey]
""",
    )
    first, again, left, base, lkey = res.ok()
    assert (first, again, left) == (100, 100, 0)
    # at most 40 rows posted and not complete: the double completes each
    # receive when it is posted, so each poll reaps what was posted before
    counts, posted, most = [], 0, 0
    for r in res.records:
        if r.verb == "post_recv" and sum(counts) < 100:
            counts.append(r["count"])
            posted += r["count"]
            most = max(most, posted)
        elif r.verb == "poll_cq":
            posted = max(posted - 16, 0)
    assert counts == [16] * 6 + [4] and most == 36  # 16 + 16 + 4
    rows = [w for r in res.calls("post_recv") for w in wrs(r)]
    assert [w["wr_id"] for w in rows] == list(range(106, 6, -1)) * 2
    assert [w["sg_list[0].addr"] for w in rows[:100]] == [base + 64 * k for k in range(100)]
    assert {w["sg_list[0].length"] for w in rows} == {64}
    assert {w["sg_list[0].lkey"] for w in rows} == {lkey}
    assert res.live == 0, res.live_report


def test_recv_progress_names_the_failed_row_and_ends_the_run(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    r = ibverbs.RecvBatch(mr, np.arange(64) * 8, 8, wr_id=1000)
    out = [r.progress(qp, 32, 8)]
    fake.fail("completion", int(enums.WCStatus.LOC_LEN_ERR))
    try:
        r.progress(qp, 32, 8)  # a new run: its first row fails
    except ibverbs.CompletionError as e:
        after = [w.wr_id for w in e.after]
        out.append([e.row, e.wc.wr_id, e.strerror, e.errno, e.posted, after])
    out.append(sum(iter(lambda: cq.poll_count(16), 0)))  # the rest stay in the CQ
    return out
""",
    )
    done, (row, wr_id, msg, err, posted, after), left = res.ok()
    # 32 rows posted (4 pieces of 8) before the first poll; the poll that
    # reaped row 0 reaped 15 more (``after``), 16 left in the CQ
    assert (done, row, wr_id, err, posted, left) == (64, 0, 1000, errno.EIO, 32, 16)
    assert after == list(range(1001, 1016))
    assert msg.startswith("RecvBatch row 0: work completion failed: LOC_LEN_ERR")
    assert res.live == 0, res.live_report


def test_recv_progress_refuses_while_a_run_is_under_way(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    q2 = stalled_qp(ctx, pd, cq, "recv")
    r = ibverbs.RecvBatch(mr, np.arange(32) * 8, 8)
    out = under_way(r, q2, qp, cq, (lambda: r.post(q2), lambda: r.progress(qp)))
    srq = pd.create_srq(max_wr=8)
    q3 = pd.create_qp(ibverbs.QPInitAttr(cq, srq=srq))
    cqx = ctx.create_cq_ex(ibverbs.CQInitAttrEx(cqe=8))
    q4 = pd.create_qp(ibverbs.QPInitAttr(cq, recv_cq=cqx))
    for q in (q3, q4):
        try:
            r.progress(q)
        except ValueError as e:
            out.append(str(e))
    for o in (q4, cqx, q3, srq):
        o.close()
    return out
""",
    )
    out = res.ok()
    assert out[0] == 1  # one completion went in, the rest dropped
    assert "run of this batch is under way (1 of 32 rows complete)" in out[1]
    assert "on another QP" in out[2]
    assert out[3:8] == [4, "ValueError", "ValueError", "TypeError", errno.EBADF]
    assert "receives through its SRQ" in out[8] and "receive CQ is a CQEx" in out[9]
    assert res.live == 0, res.live_report


def test_cq_ex_poll_into_writes_every_field(recording):
    res = run(
        recording,
        """
def body(fake):
    W = enums.CreateCQWCFlags
    buf, ctx, pd, cq, mr, qp = world()
    cqx = ctx.create_cq_ex(ibverbs.CQInitAttrEx(32, wc_flags=W.BYTE_LEN | W.IMM))
    q = pd.create_qp(ibverbs.QPInitAttr(cqx))
    for s in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
        q.modify(enums.QPAttrMask.STATE, qp_state=s)
    ibverbs.RecvBatch(mr, np.arange(3) * 64, np.array([10, 20, 30]), wr_id=70).post(q)
    fake.fail("completion", int(enums.WCStatus.LOC_PROT_ERR))
    one = np.zeros(1, dtype=np.uint64)
    ibverbs.SendBatch(mr, one, 8, one, 1, wr_id=80, signal_every=1).post(q)
    wr_id = np.zeros(3, dtype=np.uint64)
    status = np.zeros(8, dtype=np.int32)
    opcode = np.zeros(8, dtype=np.uint8)
    byte_len = np.zeros(8, dtype=np.uint32)
    imm = np.full(8, 9, dtype=np.int64)
    arrays = dict(wr_id=wr_id, status=status, opcode=opcode, byte_len=byte_len, imm_data=imm)
    got = [cqx.poll_into(**arrays)]  # at most 3: wr_id's rows
    first = [a.tolist()[:3] for a in arrays.values()]
    got.append(cqx.poll_into(**arrays))
    last = [a.tolist()[:1] for a in arrays.values()]
    got.append(cqx.poll_into(**arrays))
    out = [got, first, last]
    plain = ctx.create_cq_ex(ibverbs.CQInitAttrEx(8))
    for f in (lambda: plain.poll_into(byte_len=byte_len), lambda: plain.poll_into(imm_data=imm),
              lambda: ibverbs.CQ.poll_into(plain, wr_id=wr_id)):
        try:
            f()
        except ValueError as e:
            out.append(str(e))
    out.append(plain.poll_into(wr_id=wr_id, status=status, opcode=opcode))
    q.close()
    cqx.close()
    plain.close()
    try:
        cqx.poll_into(wr_id=wr_id)
    except ibverbs.VerbsError as e:
        out.append(e.errno)
    return out
""",
    )
    out = res.ok()
    got, first, last = out[:3]
    assert got == [3, 1, 0]
    recv, write = int(enums.WCOpcode.RECV), int(enums.WCOpcode.RDMA_WRITE)
    assert first == [[70, 71, 72], [0] * 3, [recv] * 3, [10, 20, 30], [0] * 3]
    # the failed WRITE: wr_id and status only (a failed entry has no other
    # field), the rest written as 0
    assert last == [[80], [int(enums.WCStatus.LOC_PROT_ERR)], [last[2][0]], [0], [0]]
    assert last[2][0] in (0, write)
    assert "byte_len needs CreateCQWCFlags.BYTE_LEN" in out[3]
    assert "imm_data needs CreateCQWCFlags.IMM" in out[4]
    assert "use CQEx.poll_into()" in out[5]
    assert out[6:] == [0, errno.EBADF]
    assert [r.verb for r in res.records].count("start_poll") >= 3
    assert res.live == 0, res.live_report


POLL_INTO_BAD = [
    ("cq.poll_into()", TypeError, "at least one array"),
    ("cq.poll_into(np.zeros(2, np.uint64))", TypeError, "keyword arguments only"),
    ("cq.poll_into(wr_id=np.zeros(2, np.uint32))", ValueError, "at least 8 bytes"),
    ("cq.poll_into(wr_id=bytes(16))", ValueError, "read-only"),
    ("cq.poll_into(wr_id=np.zeros(2))", ValueError, "format is 'd'"),
    ("cq.poll_into(status=np.zeros(2, np.int32).data.toreadonly())", ValueError, "read-only"),
    ("cq.poll_into(wr_id=np.zeros(2, np.uint64), num_entries=0)", ValueError, ">= 1"),
    ("cq.poll_into(wrid=np.zeros(2, np.uint64))", TypeError, "unexpected keyword"),
]


@pytest.mark.parametrize("call,exc,words", POLL_INTO_BAD, ids=[b[2] for b in POLL_INTO_BAD])
def test_poll_into_refuses_bad_arrays(recording, call, exc, words):
    refused_in_world(recording, call, exc, words)


def test_poll_into_releases_the_arrays_on_close(recording):
    res = run(
        recording,
        """
def body(fake):
    buf, ctx, pd, cq, mr, qp = world()
    ids = bytearray(16)
    cq.poll_into(wr_id=memoryview(ids).cast("Q"))
    try:
        ids.extend(b"x")  # held: a buffer export
        held = False
    except BufferError:
        held = True
    qp.close()
    cq.close()
    ids.extend(b"x")
    return held
""",
    )
    assert res.ok() is True


def test_batch_types_are_exported_and_gc_tracked():
    import gc

    import ibverbs as ib

    assert ib.SendBatch is SendBatch and ib.RecvBatch is RecvBatch
    # GC types: a batch holds its MR, which may hold the batch (owner=)
    assert SendBatch.__flags__ & (1 << 14) and RecvBatch.__flags__ & (1 << 14)
    assert "QP.post_send_batch" in ib._ibverbs._specs and "SendBatch.update" in ib._ibverbs._specs
    assert not gc.is_tracked(0)
