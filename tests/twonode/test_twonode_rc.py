"""RC between two nodes: each operation's bytes are checked in the memory
they landed in, on the node that owns it (node 0 is the requester unless
said otherwise)."""

import numpy as np
import pytest

import ibverbs as ib
from support.peers import SIGNALED, connect, mkbuf, mr_desc, poll_until, rc_qp
from support.rdma import send_wr

pytestmark = pytest.mark.twonode

OP = ib.WROpcode


def pattern(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def test_send_recv_imm_multi_sge_inline(chan, me, ctx, pd):
    qp, cq = rc_qp(ctx, pd, max_inline_data=64)
    connect(chan, ctx, qp)
    if me == 1:  # receives are posted once the QP left RESET
        dst, mr = mkbuf(pd, 3 * 1024)
        qp.post_recv([ib.RecvWR(wr_id=100 + i, sg_list=[mr.sge(1024, 1024 * i)]) for i in range(3)])
    chan.barrier("recvs posted")
    if me == 0:
        src, mr = mkbuf(pd, 2048)
        src[:] = pattern(2048, 1)
        small = bytes(pattern(40, 2))
        qp.post_send(
            [
                # SEND of two SGEs gathered into one message
                send_wr([mr.sge(300, 0), mr.sge(500, 1000)], wr_id=1),
                send_wr(
                    [mr.sge(700, 1500 - 700)], wr_id=2, opcode=OP.SEND_WITH_IMM, imm_data=0xCAFE0001
                ),
            ]
        )
        # Inline: the bytes are copied at post time; the source is
        # overwritten before the completion to prove it.
        inl, mr_i = mkbuf(pd, 40)
        inl[:] = np.frombuffer(small, np.uint8)
        qp.post_send(
            ib.SendWR(wr_id=3, sg_list=[mr_i.sge()], send_flags=SIGNALED | ib.SendFlags.INLINE)
        )
        inl[:] = 0
        wcs = poll_until(cq, 3, timeout=20, check=True)
        assert sorted(w.wr_id for w in wcs) == [1, 2, 3]
        chan.send(
            "expect",
            {"a": bytes(src[:300]) + bytes(src[1000:1500]), "b": bytes(src[800:1500]), "c": small},
        )
    else:
        want = chan.recv("expect")
        wcs = poll_until(cq, 3, timeout=20, check=True)
        assert [w.wr_id for w in wcs] == [100, 101, 102]
        a, b, c = wcs
        assert a.opcode == ib.WCOpcode.RECV and a.byte_len == 800
        assert not a.wc_flags & ib.WCFlags.WITH_IMM
        assert b.wc_flags & ib.WCFlags.WITH_IMM and b.imm_data == 0xCAFE0001
        assert b.byte_len == 700 and c.byte_len == 40
        assert bytes(dst[:800]) == want["a"]
        assert bytes(dst[1024 : 1024 + 700]) == want["b"]
        assert bytes(dst[2048 : 2048 + 40]) == want["c"]
        assert not dst[800:1024].any() and not dst[2088:].any()


def test_write_write_imm_and_read(chan, me, ctx, pd):
    qp, cq = rc_qp(ctx, pd)
    buf, mr = mkbuf(pd, 8192)
    connect(chan, ctx, qp)
    if me == 1:
        buf[4096:] = pattern(4096, 3)  # what node 0 will read
        qp.post_recv(ib.RecvWR(wr_id=9))  # for the WRITE_WITH_IMM
    theirs = chan.exchange("mr", mr_desc(mr))
    if me == 0:
        buf[:4096] = pattern(4096, 4)
        qp.post_send(
            [
                send_wr(
                    [mr.sge(3000, 0)],
                    wr_id=1,
                    opcode=OP.RDMA_WRITE,
                    remote_addr=theirs["addr"] + 100,
                    rkey=theirs["rkey"],
                ),
                send_wr(
                    [mr.sge(96, 3000)],
                    wr_id=2,
                    opcode=OP.RDMA_WRITE_WITH_IMM,
                    imm_data=77,
                    remote_addr=theirs["addr"] + 3100,
                    rkey=theirs["rkey"],
                ),
                send_wr(
                    [mr.sge(4096, 4096)],
                    wr_id=3,
                    opcode=OP.RDMA_READ,
                    remote_addr=theirs["addr"] + 4096,
                    rkey=theirs["rkey"],
                ),
            ]
        )
        wcs = poll_until(cq, 3, timeout=20, check=True)
        assert [(w.wr_id, w.opcode) for w in wcs] == [
            (1, ib.WCOpcode.RDMA_WRITE),
            (2, ib.WCOpcode.RDMA_WRITE),
            (3, ib.WCOpcode.RDMA_READ),
        ]
        # READ: node 1's bytes, checked here in node 0's memory
        assert bytes(buf[4096:]) == chan.recv("read source")
        chan.send("written", bytes(buf[:3096]))
    else:
        chan.send("read source", bytes(buf[4096:]))
        (wc,) = poll_until(cq, timeout=20, check=True)
        assert wc.opcode == ib.WCOpcode.RECV_RDMA_WITH_IMM and wc.imm_data == 77
        assert wc.byte_len == 96 and wc.wr_id == 9
        assert bytes(buf[100:3196]) == chan.recv("written")
        assert not buf[:100].any() and not buf[3196:4096].any()


def test_atomics(chan, me, ctx, pd):
    if ctx.query_device().atomic_cap == 0:
        pytest.skip("no atomics on this device")  # the same on both nodes
    qp, cq = rc_qp(ctx, pd)
    words, mr = mkbuf(pd, 4, dtype=np.uint64)
    if me == 1:
        words[:] = [100, 7, 0, 0]
    connect(chan, ctx, qp)
    theirs = chan.exchange("mr", mr_desc(mr))
    if me == 0:

        def atomic(wr_id, opcode, slot, **kw):
            qp.post_send(
                ib.SendWR(
                    wr_id=wr_id,
                    sg_list=[mr.sge(8, 8 * slot)],
                    opcode=opcode,
                    remote_addr=theirs["addr"],
                    rkey=theirs["rkey"],
                    send_flags=SIGNALED,
                    **kw,
                )
            )
            (wc,) = poll_until(cq, timeout=20, check=True)
            assert wc.wr_id == wr_id
            return int(words[slot])

        assert atomic(1, OP.ATOMIC_CMP_AND_SWP, 0, compare_add=100, swap=0x1122334455667788) == 100
        assert atomic(2, OP.ATOMIC_CMP_AND_SWP, 1, compare_add=5, swap=1) == 0x1122334455667788
        assert atomic(3, OP.ATOMIC_FETCH_AND_ADD, 2, compare_add=10) == 0x1122334455667788
        assert atomic(4, OP.ATOMIC_FETCH_AND_ADD, 3, compare_add=10) == 0x1122334455667792
        chan.send("done")
    else:
        chan.recv("done")
        # swapped, left alone by the failed compare, then +10 twice
        assert int(words[0]) == 0x1122334455667788 + 20
        assert int(words[1]) == 7
