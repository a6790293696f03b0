"""The pure parts of examples/kv_transfer.py: which WRITEs move which
blocks, how they are grouped into posts, and the accounting that proves
every posted WR completed exactly once (no device needed)."""

from pathlib import Path

import numpy as np
import pytest

import ibverbs as ib
from support import load_path

ROOT = Path(__file__).resolve().parents[2]
kv = load_path("kv_transfer", ROOT / "examples" / "kv_transfer.py", register=True)

OK = int(ib.WCStatus.SUCCESS)
RETRY = int(ib.WCStatus.RETRY_EXC_ERR)
FLUSH = int(ib.WCStatus.WR_FLUSH_ERR)


def test_contiguous_pairs_merge_up_to_max_write():
    pairs = [(i, i + 10) for i in range(8)]
    ws = kv.plan_writes(pairs, 4096, 3 * 4096)
    assert [(w.src_off, w.dst_off, w.length, w.first, w.count) for w in ws] == [
        (0, 40960, 12288, 0, 3),
        (12288, 53248, 12288, 3, 3),
        (24576, 65536, 8192, 6, 2),
    ]


def test_pairs_contiguous_on_one_side_only_do_not_merge():
    pairs = [(0, 5), (1, 9), (2, 10), (7, 11)]
    ws = kv.plan_writes(pairs, 16384, 1 << 20)
    # (1, 9) -> (2, 10) is contiguous on both sides; (2, 10) -> (7, 11) is not.
    assert [(w.first, w.count) for w in ws] == [(0, 1), (1, 2), (3, 1)]
    assert sum(w.length for w in ws) == 4 * 16384


def test_block_larger_than_max_write_is_one_write_per_pair():
    ws = kv.plan_writes([(0, 0), (1, 1)], 1 << 20, 4096)
    assert [(w.length, w.count) for w in ws] == [(1 << 20, 1), (1 << 20, 1)]


def test_plan_rejects_a_bad_block_size():
    with pytest.raises(ValueError, match="block_size"):
        kv.plan_writes([(0, 0)], 0, 4096)


def test_every_write_is_in_exactly_one_post():
    posts = kv.group_posts(37, chain=16, depth=256)
    assert [(r.start, r.stop) for r in posts] == [(0, 16), (16, 32), (32, 37)]
    assert [len(r) for r in kv.group_posts(10, chain=16, depth=4)] == [4, 4, 2]
    with pytest.raises(ValueError):
        kv.group_posts(10, chain=0, depth=4)


def test_scattered_pairs_are_distinct_on_both_sides():
    pairs = kv.scattered_pairs(1024, 16384, seed=3)
    src, dst = zip(*pairs)
    assert len(set(src)) == len(set(dst)) == 1024
    assert max(src) < 16384 and max(dst) < 16384
    assert sorted(src) != list(src)  # not in pool order
    assert pairs == kv.scattered_pairs(1024, 16384, seed=3)
    with pytest.raises(ValueError, match="do not fit"):
        kv.scattered_pairs(10, 9)


def test_signaled_completions_account_for_unsignaled_wrs():
    c = kv.Completions()
    c.post(16)
    c.post(16)
    c.complete(15, OK)
    assert (c.done, c.outstanding) == (16, 16)
    c.complete(31, OK)
    assert (c.done, c.outstanding, c.failed) == (32, 0, [])


def test_a_failure_then_flushes_each_wr_once():
    c = kv.Completions()
    c.post(16)
    c.post(16)
    c.complete(19, RETRY)  # 0..18 succeeded, 19 failed
    for k in range(20, 32):  # the rest flushed, one completion each
        c.complete(k, FLUSH)
    assert c.done == c.posted == 32
    assert [k for k, _ in c.failed] == list(range(19, 32))
    with pytest.raises(AssertionError, match="completed already"):
        c.complete(25, FLUSH)  # a second completion for one WR
    with pytest.raises(AssertionError, match="never posted"):
        c.complete(40, OK)


def test_undelivered_names_the_pairs_of_failed_and_unposted_writes():
    pairs = [(i, i) for i in range(6)] + [(20, 30), (40, 50)]
    plan = kv.plan_arrays(pairs, 4096, 2 * 4096)  # 3 merged writes, then 2 single
    batch = kv.Batch(pairs, plan["first"], plan["count"])
    c = kv.Completions()
    c.post(3)  # writes 3 and 4 were never posted
    c.complete(1, RETRY)
    c.complete(2, FLUSH)
    assert kv.undelivered(batch, c) == [2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("max_write", [4096, 3 * 4096, 16 * 4096])
def test_plan_arrays_is_plan_writes_as_columns(max_write):
    pairs = [(i, i + 100) for i in range(10)] + kv.scattered_pairs(40, 200, seed=3)
    pairs += [(500 + i, 900 + i) for i in range(7)] + [(3, 3), (4, 5)]
    plan = kv.plan_arrays(pairs, 4096, max_write)
    writes = kv.plan_writes(pairs, 4096, max_write)
    assert plan["src_off"].tolist() == [w.src_off for w in writes]
    assert plan["dst_off"].tolist() == [w.dst_off for w in writes]
    assert plan["length"].tolist() == [w.length for w in writes]
    assert plan["first"].tolist() == [w.first for w in writes]
    assert plan["count"].tolist() == [w.count for w in writes]


def test_complete_many_reads_poll_into_arrays():
    c = kv.Completions()
    c.post(40)
    ids, st = np.array([15, 31, 39, 0], np.uint64), np.array([OK, RETRY, FLUSH, OK], np.int32)
    c.complete_many(ids, st, 3)
    assert c.done == 40 and c.failed == [(31, RETRY), (39, FLUSH)]


def test_sizes_parse_units():
    assert kv.size("16K") == 16384 and kv.size("1M") == 1 << 20 and kv.size("123") == 123


def kv_body(fake, path, fail):
    """prepare() and run_batch() of 40 pairs over the double, in a child:
    what the run returns, or (fail: a failed completion injected) what
    its TransferError says."""
    import ctypes
    import time
    from types import SimpleNamespace

    import ibverbs as ib
    from support import load_path

    kv = load_path("kv_transfer", path, register=True)
    buf = ctypes.create_string_buffer(64 * 4096)
    with ib.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(256) as cq:
        mr = pd.reg_mr(ctypes.addressof(buf), len(buf), ib.AccessFlags.LOCAL_WRITE)
        qp = pd.create_qp(ib.QPInitAttr(cq, max_send_wr=64))
        for st in (ib.QPState.INIT, ib.QPState.RTR, ib.QPState.RTS):
            qp.modify(ib.QPAttrMask.STATE, qp_state=st)
        ep = SimpleNamespace(depth=64, qp=qp, cq=cq)
        pool = SimpleNamespace(block_size=4096, mr=mr)
        pairs = [(i, 63 - i) for i in range(40)]
        b = kv.prepare(ep, pool, {"addr": 1 << 20, "rkey": 7}, pairs, 16, 4096)
        if fail:
            fake.fail("completion", int(ib.WCStatus.REM_ACCESS_ERR))
        t0 = time.monotonic()
        try:
            acct = kv.run_batch(ep, b, imm=5, timeout=5.0)
            out = [b.posts, acct.posted, acct.done, ctypes.addressof(buf), mr.lkey]
        except kv.TransferError as e:
            out = [e.failed, str(e), time.monotonic() - t0]
        qp.close()
        mr.close()
    return out


def test_prepare_builds_one_send_batch_posted_chain_by_chain(recording):
    """prepare() and run_batch() against the recording double: every WRITE
    of the plan, CHAIN per post, the last of each post signaled, the
    batch's last a WRITE_WITH_IMM carrying the run's immediate."""

    res = recording.run(kv_body, str(ROOT / "examples" / "kv_transfer.py"), False)
    posts, posted, done, base, lkey = res.ok()
    assert posts == 3 and posted == done == 40
    recs = res.calls("post_send")
    assert [r["count"] for r in recs] == [16, 16, 8]
    rows = [r.prefixed(f"wr[{i}].") for r in recs for i in range(r["count"])]
    sig = int(ib.SendFlags.SIGNALED)
    assert [x["send_flags"] for x in rows] == ([0] * 15 + [sig]) * 2 + [0] * 7 + [sig]
    assert [x["wr_id"] for x in rows] == list(range(40))
    W, WI = int(ib.WROpcode.RDMA_WRITE), int(ib.WROpcode.RDMA_WRITE_WITH_IMM)
    assert [x["opcode"] for x in rows] == [W] * 39 + [WI] and rows[-1]["imm_data"] == 5
    assert [x["sg_list[0].addr"] for x in rows] == [base + i * 4096 for i in range(40)]
    assert [x["sg_list[0].length"] for x in rows] == [4096] * 40
    assert [x["sg_list[0].lkey"] for x in rows] == [lkey] * 40
    assert [x["wr.rdma.remote_addr"] for x in rows] == [
        (1 << 20) + (63 - i) * 4096 for i in range(40)
    ]
    assert [x["wr.rdma.rkey"] for x in rows] == [7] * 40


def test_run_batch_accounts_for_the_completions_reaped_with_a_failure(recording):
    """A failed completion in progress()'s poll: the completions the same
    poll reaped after it (CompletionError.after) are accounted for, so
    only the failed WRITE's pairs are reported undelivered."""

    res = recording.run(kv_body, str(ROOT / "examples" / "kv_transfer.py"), True)
    failed, msg, took = res.ok()
    # the 40 rows are posted at once (16, 16, 8), each post's last signaled:
    # row 15's completion fails, rows 31 and 39 complete in the same poll
    assert failed == [15]
    assert "first failure WR 15: REM_ACCESS_ERR" in msg and "40 WRs posted, 40 completed" in msg
    assert took < 4.0  # no wait for completions that were already reaped
