"""The pure parts of examples/kv_transfer.py: which WRITEs move which
blocks, how they are grouped into posts, and the accounting that proves
every posted WR completed exactly once (no device needed)."""

import ctypes
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import ibverbs as ib

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kv_transfer", ROOT / "examples" / "kv_transfer.py")
kv = importlib.util.module_from_spec(_spec)
sys.modules["kv_transfer"] = kv  # dataclasses look their module up
_spec.loader.exec_module(kv)

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
    writes = kv.plan_writes(pairs, 4096, 2 * 4096)  # 3 merged writes, then 2 single
    batch = kv.Batch(pairs, writes, posts=[])
    c = kv.Completions()
    c.post(3)  # writes 3 and 4 were never posted
    c.complete(1, RETRY)
    c.complete(2, FLUSH)
    assert kv.undelivered(batch, c) == [2, 3, 4, 5, 6, 7]


def test_sizes_parse_units():
    assert kv.size("16K") == 16384 and kv.size("1M") == 1 << 20 and kv.size("123") == 123


def test_prepare_links_chains_and_marks_signals(monkeypatch):
    """prepare() builds real SendWRChains (no QP needed): one per post,
    the last WR of each signaled, the batch's last a WRITE_WITH_IMM.  The
    pool's SGEs point at a plain buffer (a raw address and a made-up lkey)
    since there is no device to register it with."""
    buf = (ctypes.c_char * (64 * 4096))()
    real_sge = ib.SGE
    monkeypatch.setattr(
        kv.ib, "SGE", lambda _mr, n, offset=0: real_sge(ctypes.addressof(buf) + offset, n, lkey=1)
    )
    pool = SimpleNamespace(block_size=4096, mr=None)
    pairs = [(i, 63 - i) for i in range(40)]
    b = kv.prepare(SimpleNamespace(depth=64), pool, {"addr": 1 << 20, "rkey": 7}, pairs, 16, 4096)
    try:
        assert b.sizes == [16, 16, 8] and [len(c) for c in b.posts] == b.sizes
        for chain in b.posts:
            flags = [int(w.send_flags) for w in chain]
            assert flags[-1] & int(ib.SendFlags.SIGNALED)
            assert not any(f & int(ib.SendFlags.SIGNALED) for f in flags[:-1])
        assert b.last is b.posts[-1][len(b.posts[-1]) - 1]
        assert b.last.opcode == ib.WROpcode.RDMA_WRITE_WITH_IMM
        assert [w.wr_id for c in b.posts for w in c] == list(range(40))
        assert b.posts[0][0].remote_addr == (1 << 20) + 63 * 4096
        assert b.posts[0][0].rkey == 7
    finally:
        for c in b.posts:
            c.release()
