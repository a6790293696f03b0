"""SendWRChain / RecvWRChain on a real device (rxe0 in the Soft-RoCE guest):
a chain is linked once and posted many times; each test checks the bytes
that arrived, and that the chain's checks between posts still refuse a
closed MR."""

import errno
import gc

import numpy as np
import pytest

import ibverbs as ib
from support.rdma import make_rc_pair, mkbuf, ok, poll_until, send_wr

pytestmark = pytest.mark.integration

SIGNALED = ib.SendFlags.SIGNALED
WRITE = ib.WROpcode.RDMA_WRITE


def writes(mr_src, mr_dst, n, size, signal_last=True):
    return [
        send_wr(
            [mr_src.sge(size, i * size)],
            wr_id=i,
            opcode=WRITE,
            dest=mr_dst,
            at=i * size,
            send_flags=SIGNALED if (i == n - 1 or not signal_last) else 0,
        )
        for i in range(n)
    ]


def test_chain_posted_many_times(pd, pair):
    """Selective signaling as in a benchmark loop: 16 writes, the last
    signaled, reposted 50 times; every round's data lands."""
    qa, ca, qb, cb = pair
    n, size = 16, 8
    src, mr_a = mkbuf(pd, n * size)
    dst, mr_b = mkbuf(pd, n * size)
    chain = ib.SendWRChain(writes(mr_a, mr_b, n, size))
    assert len(chain) == n and chain[-1].send_flags == SIGNALED
    for rnd in range(50):
        src[:] = np.arange(n * size, dtype=np.uint8) + rnd
        qa.post_send(chain)
        (wc,) = ok(poll_until(ca))
        assert wc.wr_id == n - 1
        assert bytes(dst) == bytes(src), f"round {rnd}"


def test_member_changes_are_seen(pd, pair):
    """The members are the WR objects, not copies: a new wr_id and remote
    address set between posts go out with the next post."""
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 16, fill=0x5A)
    dst, mr_b = mkbuf(pd, 64)
    chain = ib.SendWRChain(writes(mr_a, mr_b, 2, 8, signal_last=False))
    qa.post_send(chain)
    assert sorted(w.wr_id for w in ok(poll_until(ca, 2))) == [0, 1]
    assert (dst[:16] == 0x5A).all() and not dst[16:].any()
    chain[0].wr_id, chain[1].wr_id = 7, 8
    chain[0].remote_addr = mr_b.addr + 32
    chain[1].remote_addr = mr_b.addr + 40
    src[:] = 0x11
    qa.post_send(chain)
    assert sorted(w.wr_id for w in ok(poll_until(ca, 2))) == [7, 8]
    assert (dst[32:48] == 0x11).all() and (dst[:16] == 0x5A).all()


def test_recv_chain_send_chain(pd, pair):
    """A RecvWRChain reposted after each round of sends."""
    qa, ca, qb, cb = pair
    n, size = 4, 32
    src, mr_a = mkbuf(pd, n * size)
    dst, mr_b = mkbuf(pd, n * size)
    rchain = ib.RecvWRChain(
        [ib.RecvWR(wr_id=100 + i, sg_list=[mr_b.sge(size, i * size)]) for i in range(n)]
    )
    schain = ib.SendWRChain(
        [
            ib.SendWR(wr_id=i, sg_list=[mr_a.sge(size, i * size)], send_flags=SIGNALED)
            for i in range(n)
        ]
    )
    for rnd in range(5):
        src[:] = rnd + 1
        qb.post_recv(rchain)
        qa.post_send(schain)
        ok(poll_until(ca, n))
        got = ok(poll_until(cb, n))
        assert [w.wr_id for w in got] == [100 + i for i in range(n)]
        assert (dst == rnd + 1).all()


def test_srq_post_recv_chain(ctx, pd):
    srq = pd.create_srq(max_wr=16)
    qa, ca, qb, cb = make_rc_pair(ctx, pd, srq=srq)
    src, mr_a = mkbuf(pd, 8, fill=0x42)
    dst, mr_b = mkbuf(pd, 4 * 8)
    srq.post_recv(
        ib.RecvWRChain([ib.RecvWR(wr_id=i, sg_list=[mr_b.sge(8, 8 * i)]) for i in range(4)])
    )
    qa.post_send([ib.SendWR(wr_id=i, sg_list=[mr_a.sge()], send_flags=SIGNALED) for i in range(4)])
    ok(poll_until(ca, 4))
    assert sorted(w.wr_id for w in ok(poll_until(cb, 4))) == [0, 1, 2, 3]
    assert (dst == 0x42).all()


def test_members_refused_elsewhere_until_release(pd, pair):
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 16, fill=3)
    dst, mr_b = mkbuf(pd, 16)
    wrs = writes(mr_a, mr_b, 2, 8)
    free = send_wr([mr_a.sge(8)], wr_id=9, opcode=WRITE, dest=mr_b)
    chain = ib.SendWRChain(wrs)
    with pytest.raises(ValueError, match="belongs to a SendWRChain"):
        qa.post_send(wrs[1])
    with pytest.raises(ValueError, match="work request 1 belongs"):
        qa.post_send([free, wrs[0]])
    with pytest.raises(ValueError, match="work request 0 belongs"):
        ib.SendWRChain([wrs[1]])
    # A refused list left the chain's links alone and freed "free".
    qa.post_send(chain)
    assert ok(poll_until(ca))[0].wr_id == 1
    qa.post_send(free)
    assert ok(poll_until(ca))[0].wr_id == 9
    chain.release()
    assert chain.released and len(chain) == 0
    with pytest.raises(ValueError, match="released"):
        qa.post_send(chain)
    # Released: the WRs post on their own and in a new chain.
    qa.post_send(wrs[1])
    ok(poll_until(ca))
    with ib.SendWRChain(wrs) as again:
        qa.post_send(again)
        ok(poll_until(ca))
    assert again.released
    qa.post_send(wrs)
    ok(poll_until(ca))
    assert (dst == 3).all()


def test_dropped_chain_frees_its_members(pd, pair):
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 8)
    dst, mr_b = mkbuf(pd, 8)
    wrs = writes(mr_a, mr_b, 1, 8)
    ib.SendWRChain(wrs)  # dropped at once
    gc.collect()
    qa.post_send(wrs[0])
    ok(poll_until(ca))


def test_closed_mr_is_refused_between_posts(pd, pair):
    """Each post checks the chain's MRs: a closed one is EBADF naming the
    WR, and nothing is posted."""
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 16)
    other, mr_o = mkbuf(pd, 8)
    dst, mr_b = mkbuf(pd, 16)
    wrs = writes(mr_a, mr_b, 2, 8)
    wrs.insert(
        1,
        send_wr([mr_o.sge()], wr_id=5, opcode=WRITE, dest=mr_b, signaled=False),
    )
    chain = ib.SendWRChain(wrs)
    qa.post_send(chain)
    ok(poll_until(ca))
    mr_o.close()
    with pytest.raises(ib.VerbsError, match="work request 1") as ei:
        qa.post_send(chain)
    assert ei.value.errno == errno.EBADF
    assert ca.poll(4) == []
    with pytest.raises(ib.VerbsError, match="work request 1"):
        qa.post_send(chain)  # still refused: not a one-time check
    # Building a chain over a closed MR is refused at once, and frees the WRs.
    chain.release()
    with pytest.raises(ib.VerbsError, match="work request 1"):
        ib.SendWRChain(wrs)
    qa.post_send([wrs[0], wrs[2]])
    assert ok(poll_until(ca))[0].wr_id == 1


def test_post_error_names_the_chain_index(ctx, pd):
    """A chain longer than the send queue: ENOMEM names the first WR that
    did not fit, by its index in the chain; the ones before it went out."""
    qa, ca, qb, cb = make_rc_pair(ctx, pd, max_send_wr=8)
    depth = qa.query()[1].max_send_wr
    src, mr_a = mkbuf(pd, 8)
    dst, mr_b = mkbuf(pd, 8)
    chain = ib.SendWRChain(
        [send_wr([mr_a.sge()], wr_id=i, opcode=WRITE, dest=mr_b) for i in range(depth + 3)]
    )
    with pytest.raises(ib.VerbsError) as ei:
        qa.post_send(chain)
    assert ei.value.errno == errno.ENOMEM
    assert f"index {depth}" in str(ei.value) and f"wr_id={depth}" in str(ei.value)
    assert sorted(w.wr_id for w in ok(poll_until(ca, depth))) == list(range(depth))
    # The chain is intact after a failed post.
    assert [w.wr_id for w in chain] == list(range(depth + 3))


def test_wrong_kind_of_chain(pd, pair):
    qa, ca, qb, cb = pair
    rchain = ib.RecvWRChain([ib.RecvWR()])
    schain = ib.SendWRChain([ib.SendWR()])
    with pytest.raises(TypeError):
        qa.post_send(rchain)
    with pytest.raises(TypeError):
        qa.post_recv(schain)
