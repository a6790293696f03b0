"""SendBatch, RecvBatch and CQ.poll_into on a real device (rxe in the
guest): scattered blocks verified block by block, a re-posted batch with
new remote addresses, receives, and completions with errors."""

from __future__ import annotations

import time

import numpy as np
import pytest

import ibverbs as ib
from support.rdma import mkbuf

pytestmark = pytest.mark.integration

BLOCK = 1024
SUCCESS = int(ib.WCStatus.SUCCESS)


@pytest.fixture
def pair_options():
    return dict(max_send_wr=64, max_recv_wr=64, cq_size=512)


def run(qp, cq, batch, depth, timeout=30.0):
    """Post every row of batch (pieces of at most depth in flight) and
    reap the completions into arrays; (wr_ids, statuses) of them all."""
    ids = np.zeros(64, dtype=np.uint64)
    st = np.zeros(64, dtype=np.int32)
    got_ids, got_st = [], []
    nxt = outstanding = 0
    pieces = []
    deadline = time.monotonic() + timeout
    while nxt < len(batch) or outstanding:
        if nxt < len(batch) and outstanding == 0:
            k = batch.post(qp, nxt, depth)
            pieces.append(k)
            nxt += k
            outstanding = 1  # one signaled WR per piece (its last)
        n = cq.poll_into(wr_id=ids, status=st)
        got_ids += ids[:n].tolist()
        got_st += st[:n].tolist()
        outstanding -= n
        assert time.monotonic() < deadline, f"{outstanding} completions missing"
    return got_ids, got_st, pieces


def scattered_blocks(pd, n, pool, seed):
    """Two buffers of pool blocks, src of random bytes (seed), dst zeroed,
    and n distinct source and n distinct destination block numbers (drawn
    with seed + 1): src, mr_a, dst, mr_b, s, d."""
    src, mr_a = mkbuf(pd, pool * BLOCK)
    dst, mr_b = mkbuf(pd, pool * BLOCK)
    src[:] = np.random.default_rng(seed).integers(0, 256, src.size, dtype=np.uint8)
    rng = np.random.default_rng(seed + 1)
    s, d = rng.choice(pool, n, replace=False), rng.choice(pool, n, replace=False)
    return src, mr_a, dst, mr_b, s, d


def test_scattered_write_batch_arrives_block_by_block(pd, pair):
    qa, ca, qb, cb = pair
    n, pool = 3000, 4096
    src, mr_a, dst, mr_b, s, d = scattered_blocks(pd, n, pool, 1)
    batch = ib.SendBatch(
        mr_a, s * BLOCK, BLOCK, d * BLOCK, mr_b.rkey, remote_base=mr_b.addr, signal_every=64
    )
    ids, st, pieces = run(qa, ca, batch, 64)
    assert st == [SUCCESS] * len(st)
    assert sum(pieces) == n and max(pieces) == 64
    assert ids[-1] == n - 1
    for k in range(n):
        got = dst[d[k] * BLOCK : (d[k] + 1) * BLOCK]
        assert np.array_equal(got, src[s[k] * BLOCK : (s[k] + 1) * BLOCK]), f"block {k}"

    # Re-posted with new remote addresses: the same sources elsewhere.
    dst[:] = 0
    d2 = np.random.default_rng(3).permutation(pool)[:n]
    batch.update(remote=d2 * BLOCK, wr_id=10_000)
    ids, st, _ = run(qa, ca, batch, 64)
    assert st == [SUCCESS] * len(st) and ids[-1] == 10_000 + n - 1
    for k in range(n):
        got = dst[d2[k] * BLOCK : (d2[k] + 1) * BLOCK]
        assert np.array_equal(got, src[s[k] * BLOCK : (s[k] + 1) * BLOCK]), f"block {k}"


def test_read_batch_and_write_with_imm(pd, pair):
    qa, ca, qb, cb = pair
    n = 200
    local, mr_a = mkbuf(pd, n * 64)
    remote, mr_b = mkbuf(pd, n * 64)
    remote[:] = np.arange(remote.size, dtype=np.uint8)
    order = np.random.default_rng(4).permutation(n)
    read = ib.SendBatch(
        mr_a,
        np.arange(n) * 64,
        64,
        order * 64,
        mr_b.rkey,
        remote_base=mr_b.addr,
        opcode=ib.WROpcode.RDMA_READ,
    )
    _, st, _ = run(qa, ca, read, 64)
    assert st == [SUCCESS] * len(st)
    for k in range(n):
        assert np.array_equal(
            local[k * 64 : k * 64 + 64], remote[order[k] * 64 : order[k] * 64 + 64]
        )

    # A WRITE batch whose last row carries an immediate: the receiver's one
    # completion says the whole batch landed.
    qb.post_recv(ib.RecvWR(wr_id=77))
    qa.post_send_batch(
        mr_a,
        np.arange(8) * 64,
        64,
        np.arange(8) * 64,
        mr_b.rkey,
        remote_base=mr_b.addr,
        imm_data=0xABCD,
    )
    ids, imm, op = np.zeros(4, np.uint64), np.zeros(4, np.uint32), np.zeros(4, np.uint8)
    deadline = time.monotonic() + 10
    while cb.poll_into(wr_id=ids, imm_data=imm, opcode=op) == 0:
        assert time.monotonic() < deadline
    assert (ids[0], imm[0], op[0]) == (77, 0xABCD, int(ib.WCOpcode.RECV_RDMA_WITH_IMM))
    assert np.array_equal(remote[: 8 * 64], local[: 8 * 64])


def test_send_batch_into_recv_batch(pd, pair):
    qa, ca, qb, cb = pair
    n = 48
    src, mr_a = mkbuf(pd, n * 256)
    dst, mr_b = mkbuf(pd, n * 256)
    src[:] = np.random.default_rng(5).integers(0, 256, src.size, dtype=np.uint8)
    lengths = np.arange(1, n + 1, dtype=np.uint32) * 5
    recv = ib.RecvBatch(mr_b, np.arange(n) * 256, 256, wr_id=1000)
    assert recv.post(qb) == n
    qa.post_send_batch(mr_a, np.arange(n) * 256, lengths, opcode=ib.WROpcode.SEND)
    ids, nbytes, st = np.zeros(n, np.uint64), np.zeros(n, np.uint32), np.zeros(n, np.uint8)
    got = 0
    deadline = time.monotonic() + 10
    while got < n:
        k = cb.poll_into(wr_id=ids[got:], byte_len=nbytes[got:], status=st[got:])
        got += k
        assert time.monotonic() < deadline
    assert ids.tolist() == list(range(1000, 1000 + n))
    assert nbytes.tolist() == lengths.tolist() and not st.any()
    for k in range(n):
        assert np.array_equal(
            dst[k * 256 : k * 256 + lengths[k]], src[k * 256 : k * 256 + lengths[k]]
        )


def test_poll_into_reports_the_error_and_the_flushes(pd, pair):
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 8 * 64)
    dst, mr_b = mkbuf(pd, 8 * 64)
    # Row 2 goes past the remote MR's end: a remote access error, then
    # every later WR of the batch is flushed.
    remote = np.array([0, 64, 8 * 64, 128, 192, 256], dtype=np.uint64)
    batch = ib.SendBatch(
        mr_a, np.arange(6) * 64, 64, remote, mr_b.rkey, remote_base=mr_b.addr, signal_every=1
    )
    assert batch.post(qa) == 6
    ids, st = np.zeros(16, np.uint64), np.zeros(16, np.int32)
    got = 0
    deadline = time.monotonic() + 30
    while got < 6:
        got += ca.poll_into(wr_id=ids[got:], status=st[got:])
        assert time.monotonic() < deadline, f"{got} of 6 completions"
    assert ids[:6].tolist() == [0, 1, 2, 3, 4, 5]
    assert st[:2].tolist() == [SUCCESS] * 2
    assert st[2] == int(ib.WCStatus.REM_ACCESS_ERR)
    assert st[3:6].tolist() == [int(ib.WCStatus.WR_FLUSH_ERR)] * 3


def run_progress(qp, batch, depth, piece, timeout=30.0):
    """The whole batch by SendBatch.progress; the calls it took."""
    calls = 1
    deadline = time.monotonic() + timeout
    while batch.progress(qp, depth, piece) < len(batch):
        assert time.monotonic() < deadline, "the batch did not complete"
        calls += 1
    return calls


def test_progress_writes_scattered_blocks_and_reposts(pd, pair):
    qa, ca, qb, cb = pair
    n, pool = 4000, 4096
    src, mr_a, dst, mr_b, s, d = scattered_blocks(pd, n, pool, 4)
    batch = ib.SendBatch(mr_a, s * BLOCK, BLOCK, d * BLOCK, mr_b.rkey, remote_base=mr_b.addr)
    run_progress(qa, batch, 48, 16)
    assert ca.poll_count(16) == 0  # every completion reaped by progress
    for k in range(n):
        got = dst[d[k] * BLOCK : (d[k] + 1) * BLOCK]
        assert np.array_equal(got, src[s[k] * BLOCK : (s[k] + 1) * BLOCK]), f"block {k}"

    # Re-posted with new remote addresses and a wr_id column.
    dst[:] = 0
    d2 = np.random.default_rng(6).permutation(pool)[:n]
    batch.update(remote=d2 * BLOCK, wr_id=np.arange(n, dtype=np.uint64)[::-1].copy())
    run_progress(qa, batch, 64, 64)
    for k in range(n):
        got = dst[d2[k] * BLOCK : (d2[k] + 1) * BLOCK]
        assert np.array_equal(got, src[s[k] * BLOCK : (s[k] + 1) * BLOCK]), f"block {k}"


def test_progress_names_the_failed_row(pd, pair):
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 64 * 64)
    dst, mr_b = mkbuf(pd, 64 * 64)
    # Row 37 goes past the remote MR's end: its completion fails (every
    # error completes, signaled or not), the rows after it flush.
    remote = np.arange(64, dtype=np.uint64) * 64
    remote[37] = 64 * 64
    batch = ib.SendBatch(mr_a, np.arange(64) * 64, 64, remote, mr_b.rkey, remote_base=mr_b.addr)
    with pytest.raises(ib.CompletionError) as e:
        run_progress(qa, batch, 32, 8)
    assert e.value.row == 37 and e.value.status == ib.WCStatus.REM_ACCESS_ERR
    assert e.value.strerror.startswith("SendBatch row 37: ")
    # the run ended: the flushed rows stay in the CQ, a new run is refused
    # by the QP in error (not by the batch).  6.1's rxe refuses the post;
    # 7.2's takes it and flushes the rows, asynchronously: progress()
    # reports the first flushed row once its completion is in.
    time.sleep(0.2)
    assert all(w.status == ib.WCStatus.WR_FLUSH_ERR for w in ca.poll(64))
    deadline = time.monotonic() + 10
    with pytest.raises(ib.VerbsError) as again:
        while time.monotonic() < deadline:
            batch.progress(qa)
    if isinstance(again.value, ib.CompletionError):
        assert again.value.status == ib.WCStatus.WR_FLUSH_ERR, again.value


@pytest.mark.parametrize("qpex", [False, True], ids=["post_send", "qpex"])
def test_ud_batch_of_sends_into_recv_batches(ctx, pd, port, gid_index, qpex):
    """Hundreds of UD SENDs by one SendBatch, alternating between two
    receivers (an AH, QPN and Q_Key column per row), each received by a
    RecvBatch and verified message by message; from a QP, and from a
    QPEx (the ibv_wr_* path)."""
    n, msg, grh = 400, 64, 40
    scq, rcq = ctx.create_cq(64), ctx.create_cq(n + 16)

    def ud(qkey, ex=False, **kw):
        init = dict(send_cq=scq, recv_cq=rcq, qp_type=ib.QPType.UD, **kw)
        if ex:
            ops = ib.QPCreateSendOpsFlags.SEND | ib.QPCreateSendOpsFlags.SEND_WITH_IMM
            qp = pd.create_qp_ex(ib.QPInitAttrEx(send_ops_flags=ops, **init))
        else:
            qp = pd.create_qp(ib.QPInitAttr(**init))
        qp.to_init(port, 0, qkey=qkey)
        qp.to_rtr(None)
        qp.to_rts(0)
        return qp

    qa = ud(0x1111, qpex, max_send_wr=64)
    assert isinstance(qa, ib.QPEx) == qpex
    qkeys = (0x1234, 0x5678)
    rx = [ud(k, max_recv_wr=n // 2) for k in qkeys]
    gid = ctx.query_gid(port, gid_index)
    ahs = [pd.create_ah(ib.AHAttr(dgid=gid, sgid_index=gid_index, port_num=port)) for _ in rx]
    src, mr_a = mkbuf(pd, n * msg)
    dst, mr_b = mkbuf(pd, n * 128)
    src[:] = np.random.default_rng(7).integers(0, 256, src.size, dtype=np.uint8)
    half = np.arange(n // 2)
    for j, qp in enumerate(rx):  # receiver j's k-th buffer takes row 2k + j
        recv = ib.RecvBatch(mr_b, (2 * half + j) * 128, grh + msg, wr_id=j * 10_000)
        assert recv.post(qp) == n // 2
    row = np.arange(n)
    batch = ib.SendBatch(
        mr_a,
        row * msg,
        msg,
        opcode=ib.WROpcode.SEND_WITH_IMM,
        imm_data=0xFEED,
        ah=[ahs[k % 2] for k in range(n)],
        remote_qpn=np.array([rx[k % 2].qp_num for k in range(n)], dtype=np.uint32),
        remote_qkey=np.array([qkeys[k % 2] for k in range(n)], dtype=np.uint32),
        wr_id=500,
    )
    run_progress(qa, batch, 64, 16)
    ids, nbytes = np.zeros(n, np.uint64), np.zeros(n, np.uint32)
    st, imm = np.zeros(n, np.int32), np.zeros(n, np.uint32)
    got = 0
    deadline = time.monotonic() + 30
    while got < n:
        got += rcq.poll_into(
            wr_id=ids[got:], byte_len=nbytes[got:], status=st[got:], imm_data=imm[got:]
        )
        assert time.monotonic() < deadline, f"{got} of {n} messages"
    assert not st.any() and set(nbytes.tolist()) == {grh + msg}
    assert set(imm.tolist()) == {0xFEED}
    assert sorted(ids.tolist()) == sorted([j * 10_000 + k for j in (0, 1) for k in half])
    for k in range(n):
        got = dst[k * 128 + grh : k * 128 + grh + msg]
        assert np.array_equal(got, src[k * msg : (k + 1) * msg]), f"message {k}"
    for o in (qa, *rx, *ahs, mr_a, mr_b, scq, rcq):
        o.close()


def test_write_batch_on_a_qpex_by_the_wr_builders(ctx, pd):
    """A QPEx pair: a scattered WRITE batch (the last row WITH_IMM, small
    rows inline) by progress(), then re-posted by post() pieces; block by
    block."""
    from support.rdma import make_rc_pair

    F = ib.QPCreateSendOpsFlags
    qa, ca, qb, cb = make_rc_pair(
        ctx,
        pd,
        send_ops_flags=F.RDMA_WRITE | F.RDMA_WRITE_WITH_IMM,
        max_send_wr=64,
        max_recv_wr=64,
        max_inline_data=64,
        cq_size=512,
    )
    assert isinstance(qa, ib.QPEx)
    n, pool = 2000, 4096
    src, mr_a, dst, mr_b, s, d = scattered_blocks(pd, n, pool, 8)
    lengths = np.where(np.arange(n) % 3 == 0, 48, BLOCK).astype(np.uint32)  # every 3rd inline
    batch = ib.SendBatch(
        mr_a,
        s * BLOCK,
        lengths,
        d * BLOCK,
        mr_b.rkey,
        remote_base=mr_b.addr,
        imm_data=0xC0DE,
        inline_threshold=64,
    )
    for rnd, dests in enumerate((d, np.random.default_rng(10).permutation(pool)[:n])):
        dst[:] = 0
        ib.RecvBatch(mr_b, np.zeros(1, np.uint64), 0, wr_id=900 + rnd).post(qb)
        if rnd == 0:
            run_progress(qa, batch, 48, 16)
        else:
            batch.update(remote=dests * BLOCK)
            _, st, _ = run(qa, ca, batch, 64)
            assert st == [SUCCESS] * len(st)
        ids, imm = np.zeros(1, np.uint64), np.zeros(1, np.uint32)
        deadline = time.monotonic() + 10
        while cb.poll_into(wr_id=ids, imm_data=imm) == 0:
            assert time.monotonic() < deadline
        assert (ids[0], imm[0]) == (900 + rnd, 0xC0DE)
        for k in range(n):
            ln = lengths[k]
            got = dst[dests[k] * BLOCK : dests[k] * BLOCK + ln]
            assert np.array_equal(got, src[s[k] * BLOCK : s[k] * BLOCK + ln]), f"block {k}"


def test_recv_progress_takes_a_stream_of_sends(pd, pair):
    """A RecvBatch of 256 buffers run by progress (64 posted at most)
    while a SendBatch of SENDs follows what it has posted; each message
    verified, every receive completion reaped by progress."""
    qa, ca, qb, cb = pair
    n = 256
    src, mr_a = mkbuf(pd, n * 256)
    dst, mr_b = mkbuf(pd, n * 256)
    src[:] = np.random.default_rng(7).integers(0, 256, src.size, dtype=np.uint8)
    lengths = np.arange(n, dtype=np.uint32) % 200 + 17
    recv = ib.RecvBatch(mr_b, np.arange(n)[::-1].copy() * 256, 256, wr_id=5000)
    send = ib.SendBatch(mr_a, np.arange(n) * 256, lengths, opcode=ib.WROpcode.SEND)
    sent = done = 0
    deadline = time.monotonic() + 30
    while done < n:
        done = recv.progress(qb, 64, 16)
        room = min(done + 48, n) - sent  # progress keeps >= 48 posted
        ca.poll_count(16)  # the sends' completions (a failed one raises)
        if room > 0:
            sent += send.post(qa, sent, min(room, 16))
        assert time.monotonic() < deadline, f"{done} of {n} received"
    while ca.poll_count(16):
        pass
    assert cb.poll_count(16) == 0  # every receive completion reaped
    for k in range(n):
        at = (n - 1 - k) * 256
        assert np.array_equal(dst[at : at + lengths[k]], src[k * 256 : k * 256 + lengths[k]])


@pytest.fixture
def cqex_pair(ctx, pd):
    from support.rdma import make_rc_pair

    W = ib.CreateCQWCFlags
    pair = make_rc_pair(
        ctx, pd, max_send_wr=64, max_recv_wr=64, cq_size=128, wc_flags=W.BYTE_LEN | W.IMM
    )
    yield pair
    for o in pair:
        o.close()


def test_cq_ex_poll_into_reports_receives_errors_and_flushes(pd, cqex_pair):
    qa, ca, qb, cb = cqex_pair
    src, mr_a = mkbuf(pd, 8 * 64)
    dst, mr_b = mkbuf(pd, 8 * 64)
    ib.RecvBatch(mr_b, np.arange(2) * 64, 64, wr_id=70).post(qb)
    imm = ib.SendBatch(
        mr_a, np.arange(2) * 64, np.array([5, 9]), opcode=ib.WROpcode.SEND, imm_data=0xBEEF,
        signal_every=1,
    )  # fmt: skip
    assert imm.post(qa) == 2
    ids, st, op = np.zeros(8, np.uint64), np.zeros(8, np.int32), np.zeros(8, np.uint8)
    nbytes, im = np.zeros(8, np.uint32), np.zeros(8, np.uint32)
    got = 0
    deadline = time.monotonic() + 10
    while got < 2:
        got += cb.poll_into(
            wr_id=ids[got:], status=st[got:], opcode=op[got:], byte_len=nbytes[got:],
            imm_data=im[got:],
        )  # fmt: skip
        assert time.monotonic() < deadline
    assert ids[:2].tolist() == [70, 71] and not st[:2].any()
    assert op[:2].tolist() == [int(ib.WCOpcode.RECV)] * 2
    assert nbytes[:2].tolist() == [5, 9]
    # the imm batch's imm_data goes with its last row only
    assert im[:2].tolist() == [0, 0xBEEF]
    # Row 2 past the remote MR's end: REM_ACCESS_ERR, then flushes.
    remote = np.array([0, 64, 8 * 64, 128, 192, 256], dtype=np.uint64)
    batch = ib.SendBatch(
        mr_a, np.arange(6) * 64, 64, remote, mr_b.rkey, remote_base=mr_b.addr, signal_every=1
    )
    assert batch.post(qa) == 6
    got = 0
    deadline = time.monotonic() + 30
    while got < 8:  # the two SEND completions first
        got += ca.poll_into(wr_id=ids[got:], status=st[got:])
        assert time.monotonic() < deadline, f"{got} of 8 completions"
    assert ids[:8].tolist() == [0, 1, 0, 1, 2, 3, 4, 5]
    assert st[:4].tolist() == [SUCCESS] * 4
    assert st[4] == int(ib.WCStatus.REM_ACCESS_ERR)
    assert st[5:8].tolist() == [int(ib.WCStatus.WR_FLUSH_ERR)] * 3
