"""A SendBatch of scattered RDMA WRITEs from node 1 to node 0, whose QP
is destroyed mid-run: node 1 reaps the error and the flushes (by
CQ.poll_into, or by SendBatch.progress's CompletionError and its
``after``), every wr_id accounted for once by the accounting that
examples/kv_transfer.py uses, the blocks before the failure verified on
node 0, and no object left on either node."""

import time
from pathlib import Path

import numpy as np
import pytest

import ibverbs as ib
from support import load_path
from support.peers import connect, mkbuf, mr_desc, rc_qp
from support.process import rdma_counts

pytestmark = pytest.mark.twonode

ROOT = Path(__file__).resolve().parents[2]
kv = load_path("kv_transfer", ROOT / "examples" / "kv_transfer.py", register=True)

WS = ib.WCStatus
# A short transport timeout (268 ms, 2 retries) so that the vanished QP
# is declared dead within about a second (test_faults.py says why not
# shorter).
FAST_FAIL = {"timeout": 16, "retry_cnt": 2, "rnr_retry": 2}
N, POOL, BLOCK = 4096, 4096, 1024
DEPTH, PIECE = 64, 16
STARTED = 256  # rows complete before node 0 is told to destroy its QP
# What the first failed WRITE may meet: no QP (silence, RETRY_EXC_ERR) or
# a NAK while the kernel tears it down.
FIRST = {WS.RETRY_EXC_ERR, WS.REM_ACCESS_ERR, WS.REM_OP_ERR, WS.REM_INV_REQ_ERR}


def rows():
    rng = np.random.default_rng(11)
    return rng.permutation(POOL)[:N], rng.permutation(POOL)[:N]


def source(buf):
    buf.view(np.uint64)[:] = np.arange(buf.nbytes // 8, dtype=np.uint64) * 0x9E37 + 1


def streaming(chan):
    """Tell node 0 to destroy its QP, and wait until it has: the rows
    posted from then on meet no QP, whatever the machine's speed."""
    chan.send("streaming")
    chan.recv("destroyed", timeout=60)
    return True


def by_poll_into(chan, qp, cq, make, acct):
    """One batch of every row, by a Python loop of post(qp, k, 16) within
    DEPTH in flight, reaped by poll_into into Completions; until every
    posted WR completed after a failure (or all rows succeeded)."""
    batch = make(0, N)
    ids, st = np.zeros(16, np.uint64), np.zeros(16, np.int32)
    told = False
    deadline = time.monotonic() + 120
    while not (acct.failed and acct.outstanding == 0) and acct.done < N:
        assert time.monotonic() < deadline, f"{acct.done} of {acct.posted} completed"
        if not acct.failed and acct.posted < N and acct.outstanding + PIECE <= DEPTH:
            try:
                acct.post(batch.post(qp, acct.posted, PIECE))
            except ib.VerbsError:
                pass  # the QP in error refuses posts (some kernels): reap what is out
        got = cq.poll_into(wr_id=ids, status=st)
        acct.complete_many(ids, st, got)
        if not told and acct.done >= STARTED:
            told = streaming(chan)
    return told


def by_progress(chan, qp, cq, make, acct):
    """The first STARTED rows by progress (one call runs a whole batch
    while completions keep coming, so the rest is a second batch, wr_ids
    going on); then the rest by progress until its CompletionError, the
    WCs reaped with the failed one (``after``) and the flushes left in
    the CQ (poll_into)."""
    head, tail = make(0, STARTED), make(STARTED, N)
    deadline = time.monotonic() + 120
    while head.progress(qp, DEPTH, PIECE) < STARTED:
        assert time.monotonic() < deadline, "the first rows did not complete"
    acct.post(STARTED)
    acct.complete(STARTED - 1, int(WS.SUCCESS))
    told = streaming(chan)
    try:
        while (done := tail.progress(qp, DEPTH, PIECE)) < N - STARTED:
            assert time.monotonic() < deadline, f"{done} of {N - STARTED} rows complete"
    except ib.CompletionError as e:
        acct.post(e.posted)
        acct.complete(e.wc.wr_id, int(e.status))
        assert e.wc.wr_id == STARTED + e.row
        for wc in e.after:
            acct.complete(wc.wr_id, int(wc.status))
    ids, st = np.zeros(16, np.uint64), np.zeros(16, np.int32)
    while acct.outstanding:
        assert time.monotonic() < deadline, f"{acct.done} of {acct.posted} completed"
        acct.complete_many(ids, st, cq.poll_into(wr_id=ids, status=st))
    return told


@pytest.mark.parametrize("reap", ["poll_into", "progress"])
def test_batch_reports_the_error_and_the_flushes_after_the_peer_qp_dies(
    chan, me, node, ctx, pd, reap
):
    before = rdma_counts(node.device)
    s, d = rows()
    qp, cq = rc_qp(ctx, pd, max_send_wr=DEPTH)
    buf, mr = mkbuf(pd, POOL * BLOCK)
    if me == 0:  # the target: its QP destroyed once node 1 is streaming
        connect(chan, ctx, qp)
        chan.send("mr", mr_desc(mr))
        chan.recv("streaming", timeout=120)
        qp.close()
        chan.send("destroyed")
        first_failed = chan.recv("result", timeout=180)
        src = np.empty_like(buf)
        source(src)
        for k in range(first_failed):
            at, frm = d[k] * BLOCK, s[k] * BLOCK
            assert np.array_equal(buf[at : at + BLOCK], src[frm : frm + BLOCK]), f"row {k}"
    else:
        source(buf)
        connect(chan, ctx, qp, access=0, **FAST_FAIL)
        remote = chan.recv("mr")

        def make(lo, hi):  # rows lo..hi-1, wr_id = row
            return ib.SendBatch(
                mr, s[lo:hi] * BLOCK, BLOCK, d[lo:hi] * BLOCK, remote["rkey"],
                remote_base=remote["addr"], signal_every=PIECE, wr_id=lo,
            )  # fmt: skip

        acct = kv.Completions()  # raises on a wr_id completed twice or out of order
        run = by_poll_into if reap == "poll_into" else by_progress
        t0 = time.monotonic()
        assert run(chan, qp, cq, make, acct), f"only {acct.done} rows completed"
        elapsed = time.monotonic() - t0
        assert acct.failed, "every row completed: the batch outran the QP's destruction"
        first, status = acct.failed[0]
        assert status in FIRST, WS(status).name
        assert {st for _, st in acct.failed[1:]} <= {WS.WR_FLUSH_ERR}
        # every WR posted completed once: those after the first failure
        # one flush each, signaled or not
        assert acct.done == acct.posted and len(acct.failed) == acct.posted - first
        undelivered = kv.undelivered(
            kv.Batch(list(zip(s, d)), np.arange(N), np.ones(N, np.int64)), acct
        )
        assert undelivered == list(range(first, N))
        assert qp.query(ib.QPAttrMask.STATE)[0]["qp_state"] == ib.QPState.ERR
        chan.send("result", first)
        print(
            f"{reap}: {first} rows landed, then {WS(status).name} and "
            f"{len(acct.failed) - 1} flushed of {acct.posted} posted ({elapsed:.1f} s)"
        )
        qp.close()
    cq.close()
    mr.close()
    if before is not None:
        assert rdma_counts(node.device) == before
