"""CQEx over many completions reaped in batches of varied sizes: poll(n),
poll_count(n) and the raw start_poll/next_poll/end_poll iteration each
return every completion exactly once, with its own fields, and nothing
after the last.

The defect these catch: the rxe provider of rdma-core 34 to 54 ends its
polling session inside next_poll when that answers ENOENT (it stores the
consumer index there), so the end_poll that the verbs contract asks for
next moves the consumer index one slot past the producer: later polls
read stale or zeroed slots, and the kernel sees a full CQ.  A batch
larger than what is ready ends exactly that way, hence the sizes below.
cq/cq_ex.c says how CQEx avoids the sequence."""

import time

import pytest

import ibverbs as ib

from support.rdma import make_rc_pair, mkbuf
from support.timeouts import scaled

pytestmark = pytest.mark.integration

F = ib.CreateCQWCFlags
FLAGS = F.BYTE_LEN | F.QP_NUM
# Sends per round, and the batch sizes the reapers cycle through: most
# rounds end in a batch larger than what is left (next_poll meets an
# empty CQ), some end exactly.
ROUNDS = (1, 3, 7, 2, 12, 5, 16, 1, 9, 4, 20, 6, 11, 2, 8, 13, 3, 17, 10, 5)
SIZES = (2, 1, 5, 3, 16, 4, 7, 1, 32, 6, 2, 13)
MAX_LEN = 64


def length(wr_id):
    """The bytes the send with this wr_id carries: its receive's byte_len."""
    return 1 + wr_id % MAX_LEN


class Reaper:
    """Reap one CQEx with one method ("poll", "poll_count" or "raw"),
    cycling through SIZES; each call returns what one batch gave: a list
    of (wr_id, status, opcode, byte_len, qp_num), or a count."""

    def __init__(self, cq, how, start):
        self.cq, self.how, self.i = cq, how, start

    def size(self):
        self.i += 1
        return SIZES[self.i % len(SIZES)]

    def batch(self):
        n = self.size()
        if self.how == "poll_count":
            k = self.cq.poll_count(n)
            assert 0 <= k <= n
            return k
        if self.how == "poll":
            wcs = self.cq.poll(n)
            assert len(wcs) <= n
            return [(w.wr_id, w.status, w.opcode, w.byte_len, w.qp_num) for w in wcs]
        # raw: read n entries in one session, or stop where next_poll
        # answers False; end_poll either way.
        got = []
        if not self.cq.start_poll():
            return got
        try:
            while True:
                c = self.cq
                got.append((c.wr_id, c.status, c.read_opcode(), c.read_byte_len(), c.read_qp_num()))
                if len(got) == n or not c.next_poll():
                    break
        finally:
            self.cq.end_poll()
        return got


def reap(reaper, want, timeout=20.0):
    """Batches until `want` completions came: the entries (or counts)."""
    entries, count = [], 0
    deadline = time.monotonic() + scaled(timeout)
    while count < want:
        got = reaper.batch()
        k = got if isinstance(got, int) else len(got)
        if not isinstance(got, int):
            entries.extend(got)
        count += k
        assert count <= want, f"{reaper.how}: {count} completions, {want} posted: {entries[:6]}"
        if k == 0:
            assert time.monotonic() < deadline, f"{reaper.how}: timed out, {count} of {want}"
            time.sleep(0.0005)
    return entries


def check(entries, expect, seen, opcode, qp_num, *, byte_len):
    """Each entry is one of `expect` (wr_ids), never seen before, with the
    right status, opcode, QP and (for receives) byte_len."""
    for wr_id, status, op, blen, qpn in entries:
        assert wr_id in expect, f"wr_id {wr_id:#x}: not posted in this round (stale entry?)"
        assert wr_id not in seen, f"wr_id {wr_id:#x} reaped twice"
        seen.add(wr_id)
        assert status == ib.WCStatus.SUCCESS, (wr_id, status)
        assert op == opcode, (wr_id, op)
        assert qpn == qp_num, (wr_id, qpn)
        if byte_len:
            assert blen == length(wr_id), (wr_id, blen)
    assert {e[0] for e in entries} == expect


@pytest.mark.parametrize("recv_how, send_how", [("poll", "poll_count"), ("raw", "poll")])
def test_every_completion_once_in_varied_batches(ctx, pd, recv_how, send_how):
    qa, ca, qb, cb = make_rc_pair(
        ctx, pd, cq_size=32, max_send_wr=32, max_recv_wr=32, wc_flags=FLAGS
    )
    src, smr = mkbuf(pd, MAX_LEN, fill=0x5A)
    dst, dmr = mkbuf(pd, MAX_LEN * 32)
    recv, send = Reaper(cb, recv_how, 0), Reaper(ca, send_how, 5)
    seen_r, seen_s = set(), set()
    wr_id = 0
    try:
        for m in ROUNDS:
            ids = range(wr_id + 1, wr_id + 1 + m)
            wr_id += m
            qb.post_recv(
                [
                    ib.RecvWR(wr_id=i, sg_list=[dmr.sge(MAX_LEN, offset=MAX_LEN * k)])
                    for k, i in enumerate(ids)
                ]
            )
            qa.post_send(
                [
                    ib.SendWR(
                        wr_id=i,
                        sg_list=[smr.sge(length(i))],
                        opcode=ib.WROpcode.SEND,
                        send_flags=ib.SendFlags.SIGNALED,
                    )
                    for i in ids
                ]
            )
            # A receive has the wr_id of its send, and its length.
            r = reap(recv, m)
            if recv_how != "poll_count":
                check(r, set(ids), seen_r, ib.WCOpcode.RECV, qb.qp_num, byte_len=True)
            s = reap(send, m)
            if send_how != "poll_count":
                check(s, set(ids), seen_s, ib.WCOpcode.SEND, qa.qp_num, byte_len=False)
        # Nothing after the last: a consumer index past the producer would
        # show the ring's old slots here.
        time.sleep(0.05)
        for cq in (ca, cb):
            assert cq.poll(32) == []
            assert cq.poll_count(32) == 0
            assert cq.start_poll() is False
        assert wr_id == sum(ROUNDS)
    finally:
        for o in (qa, qb, ca, cb, smr, dmr):
            o.close()
