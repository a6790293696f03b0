"""CQ.poll_count, the zero-allocation polling path, against a real device
(rxe0 in the Soft-RoCE guest): it counts what poll() would return, builds
no WC objects, and raises CompletionError for a failed completion."""

import time

import pytest

import ibverbs as ib

from support.rdma import ALL_ACCESS
from support.timeouts import scaled

pytestmark = pytest.mark.integration


def count_until(cq, n, timeout=10.0, batch=64):
    """poll_count until n completions were counted; the calls' results."""
    got = []
    deadline = time.monotonic() + scaled(timeout)
    while sum(got) < n:
        k = cq.poll_count(batch)
        assert isinstance(k, int) and 0 <= k <= batch
        if k:
            got.append(k)
        elif time.monotonic() > deadline:
            raise AssertionError(f"timed out: {sum(got)} of {n} completions")
    return got


@pytest.fixture
def pair(pair, pd):
    """support's RC pair with a registered buffer: (mr, buf, qa, ca, qb,
    cb), all closed afterwards."""
    buf = bytearray(8192)
    mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
    qa, ca, qb, cb = pair
    yield mr, buf, qa, ca, qb, cb
    for o in (qa, qb, ca, cb, mr):
        o.close()


def writes(mr, n, *, signaled=True, rkey=None, first_id=0):
    flags = ib.SendFlags.SIGNALED if signaled else 0
    return [
        ib.SendWR(
            wr_id=first_id + i,
            sg_list=[mr.sge(8, offset=8 * i)],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=flags,
            remote_addr=mr.addr + 4096 + 8 * i,
            rkey=mr.rkey if rkey is None else rkey,
        )
        for i in range(n)
    ]


def test_empty_cq_counts_zero(pair):
    _, _, _, ca, _, _ = pair
    assert ca.poll_count(1) == 0
    assert ca.poll_count(64) == 0


def test_counts_every_signaled_completion(pair):
    mr, buf, qa, ca, _, cb = pair
    buf[:64] = bytes(range(1, 65))
    qa.post_send(writes(mr, 8))
    assert sum(count_until(ca, 8)) == 8
    assert ca.poll_count(16) == 0  # nothing counted twice
    assert cb.poll_count(16) == 0  # a write makes no remote completion
    assert buf[4096 : 4096 + 64] == buf[:64]


def test_at_most_num_entries_the_rest_stay(pair):
    mr, _, qa, ca, _, _ = pair
    qa.post_send(writes(mr, 6))
    time.sleep(0.2)
    got = count_until(ca, 2, batch=2)  # two at a time
    assert got and all(k <= 2 for k in got)
    rest = count_until(ca, 6 - sum(got), batch=64)
    assert sum(got) + sum(rest) == 6
    assert ca.poll_count(64) == 0


def test_unsignaled_wrs_are_not_counted(pair):
    mr, _, qa, ca, _, _ = pair
    lst = writes(mr, 16, signaled=False)
    lst[-1].send_flags = ib.SendFlags.SIGNALED  # selective signaling
    qa.post_send(lst)
    assert sum(count_until(ca, 1)) == 1
    time.sleep(0.1)
    assert ca.poll_count(64) == 0


def test_same_count_as_poll(pair):
    mr, _, qa, ca, _, _ = pair
    qa.post_send(writes(mr, 5))
    time.sleep(0.2)
    n = sum(count_until(ca, 5))
    qa.post_send(writes(mr, 5, first_id=100))
    wcs = []
    deadline = time.monotonic() + 10
    while len(wcs) < 5 and time.monotonic() < deadline:
        wcs += ca.poll(64)
    assert n == len(wcs) == 5
    assert sorted(wc.wr_id for wc in wcs) == list(range(100, 105))


def test_failed_completion_raises(pair):
    mr, _, qa, ca, _, _ = pair
    # A wrong rkey: the responder NAKs, the write completes in error.
    qa.post_send(writes(mr, 1, rkey=mr.rkey ^ 0x5A5A00, first_id=77))
    deadline = time.monotonic() + 10
    with pytest.raises(ib.CompletionError) as ei:
        while time.monotonic() < deadline:
            ca.poll_count(4)
        pytest.fail("no completion arrived")
    err = ei.value
    assert isinstance(err.wc, ib.WC)
    assert err.wc.wr_id == 77
    assert err.wc.status != ib.WCStatus.SUCCESS
    assert err.status == err.wc.status
    assert "wr_id=77" in str(err)
    # The QP is in error now: what is posted next is flushed, and
    # poll_count reports that as a failed completion too.
    qa.post_send(writes(mr, 1, first_id=78))
    with pytest.raises(ib.CompletionError) as ei:
        while time.monotonic() < deadline:
            ca.poll_count(4)
        pytest.fail("no flush completion arrived")
    assert ei.value.wc.status == ib.WCStatus.WR_FLUSH_ERR
    assert ei.value.wc.wr_id == 78


def test_arguments(pair):
    _, _, _, ca, _, _ = pair
    for bad in (0, -1):
        with pytest.raises(ValueError):
            ca.poll_count(bad)
    for bad in ("1", 1.0, None):
        with pytest.raises(TypeError):
            ca.poll_count(bad)
    assert ca.poll_count(2**40) == 0  # clamped to the CQ's size
    with pytest.raises(TypeError):
        ca.poll_count()  # METH_O: one argument


def test_closed_cq_raises(ctx):
    cq = ctx.create_cq(4)
    cq.close()
    with pytest.raises((ib.VerbsError, ValueError)):
        cq.poll_count(1)
