"""RC data transfers on a real device (rxe0 in the Soft-RoCE guest): every
test checks the bytes that arrived, not only the completion status."""

import socket
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ibverbs as ib
from support.rdma import ALL_ACCESS, make_rc_pair, mkbuf, ok, poll_until, send_wr
from support.timeouts import scaled

pytestmark = pytest.mark.integration

SIGNALED = ib.SendFlags.SIGNALED


def test_send_recv(pd, pair):
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 256)
    dst, mr_b = mkbuf(pd, 256)
    src[:] = np.arange(256, dtype=np.uint8)
    qb.post_recv(ib.RecvWR(wr_id=7, sg_list=[mr_b.sge()]))
    qa.post_send(ib.SendWR(wr_id=1, sg_list=[ib.SGE(mr_a, 200)], send_flags=SIGNALED))
    (wa,) = ok(poll_until(ca), ib.WCOpcode.SEND)
    assert wa.wr_id == 1
    (wb,) = ok(poll_until(cb), ib.WCOpcode.RECV)
    assert wb.wr_id == 7 and wb.byte_len == 200 and wb.qp_num == qb.qp_num
    assert not wb.wc_flags & ib.WCFlags.WITH_IMM
    assert bytes(dst[:200]) == bytes(src[:200])
    assert not dst[200:].any()


def test_send_with_imm(pd, pair):
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 64, fill=0x5A)
    dst, mr_b = mkbuf(pd, 64)
    qb.post_recv(ib.RecvWR(wr_id=2, sg_list=[mr_b.sge()]))
    qa.post_send(
        send_wr([mr_a.sge()], wr_id=3, opcode=ib.WROpcode.SEND_WITH_IMM, imm_data=0xDEADBEEF)
    )
    ok(poll_until(ca), ib.WCOpcode.SEND)
    (wb,) = ok(poll_until(cb), ib.WCOpcode.RECV)
    assert wb.wc_flags & ib.WCFlags.WITH_IMM
    assert wb.imm_data == 0xDEADBEEF
    assert wb.byte_len == 64 and (dst == 0x5A).all()


def test_rdma_write(pd, pair):
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 4096)
    dst, mr_b = mkbuf(pd, 4096)
    src[:] = np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8)
    qa.post_send(
        send_wr(
            [ib.SGE(mr_a, 1000, offset=10)],
            wr_id=9,
            opcode=ib.WROpcode.RDMA_WRITE,
            dest=mr_b,
            at=100,
        )
    )
    (wa,) = ok(poll_until(ca), ib.WCOpcode.RDMA_WRITE)
    assert wa.wr_id == 9
    assert bytes(dst[100:1100]) == bytes(src[10:1010])
    assert not dst[:100].any() and not dst[1100:].any()
    assert cb.poll(4) == []  # a plain write makes no completion remotely


def test_rdma_write_with_imm(pd, pair):
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 512, fill=0xC3)
    dst, mr_b = mkbuf(pd, 512)
    qb.post_recv(ib.RecvWR(wr_id=11))  # no SGE: the data goes to remote_addr
    qa.post_send(
        send_wr(
            [mr_a.sge()],
            wr_id=12,
            opcode=ib.WROpcode.RDMA_WRITE_WITH_IMM,
            dest=mr_b,
            imm_data=0x01020304,
        )
    )
    ok(poll_until(ca), ib.WCOpcode.RDMA_WRITE)
    (wb,) = ok(poll_until(cb), ib.WCOpcode.RECV_RDMA_WITH_IMM)
    assert wb.wr_id == 11
    assert wb.wc_flags & ib.WCFlags.WITH_IMM and wb.imm_data == 0x01020304
    assert wb.byte_len == 512
    assert (dst == 0xC3).all()


def test_rdma_read(pd, pair):
    qa, ca, qb, cb = pair
    local, mr_a = mkbuf(pd, 2048)
    remote, mr_b = mkbuf(pd, 2048)
    remote[:] = np.arange(2048, dtype=np.uint16).astype(np.uint8)[::-1]
    qa.post_send(
        send_wr(
            [mr_a.sge(1024, offset=512)], wr_id=21, opcode=ib.WROpcode.RDMA_READ, dest=mr_b, at=256
        )
    )
    (wa,) = ok(poll_until(ca), ib.WCOpcode.RDMA_READ)
    assert wa.byte_len == 1024
    assert bytes(local[512:1536]) == bytes(remote[256:1280])
    assert not local[:512].any() and not local[1536:].any()


def _need_atomics(ctx):
    if ctx.query_device().atomic_cap == 0:
        pytest.skip("device has no atomics (atomic_cap NONE)")


def test_compare_and_swap(ctx, pd, pair):
    _need_atomics(ctx)
    qa, ca, qb, cb = pair
    old, mr_old = mkbuf(pd, 1, dtype=np.uint64)
    target, mr_t = mkbuf(pd, 2, dtype=np.uint64)
    target[:] = [100, 7]

    def cas(compare, swap):
        qa.post_send(
            send_wr(
                [mr_old.sge()],
                wr_id=31,
                opcode=ib.WROpcode.ATOMIC_CMP_AND_SWP,
                dest=mr_t,
                compare_add=compare,
                swap=swap,
            )
        )
        ok(poll_until(ca), ib.WCOpcode.COMP_SWAP)
        return int(old[0])

    assert cas(100, 0x1122334455667788) == 100  # matched: swapped
    assert int(target[0]) == 0x1122334455667788
    assert cas(1, 5) == 0x1122334455667788  # no match: unchanged
    assert int(target[0]) == 0x1122334455667788
    assert int(target[1]) == 7  # neighbour untouched


def test_fetch_and_add(ctx, pd, pair):
    _need_atomics(ctx)
    qa, ca, qb, cb = pair
    old, mr_old = mkbuf(pd, 1, dtype=np.uint64)
    target, mr_t = mkbuf(pd, 1, dtype=np.uint64)
    target[0] = 10
    for expect_old in (10, 15, 20):
        qa.post_send(
            send_wr(
                [mr_old.sge()],
                wr_id=41,
                opcode=ib.WROpcode.ATOMIC_FETCH_AND_ADD,
                dest=mr_t,
                compare_add=5,
            )
        )
        ok(poll_until(ca), ib.WCOpcode.FETCH_ADD)
        assert int(old[0]) == expect_old
    assert int(target[0]) == 25


def test_multi_sge_gather(pd, pair):
    qa, ca, qb, cb = pair
    b1, mr1 = mkbuf(pd, 16)
    b2, mr2 = mkbuf(pd, 16)
    b1[:6] = np.frombuffer(b"hello ", np.uint8)
    b2[3:8] = np.frombuffer(b"world", np.uint8)
    dst, mr_b = mkbuf(pd, 64)
    qb.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr_b.sge()]))
    qa.post_send(
        ib.SendWR(wr_id=2, send_flags=SIGNALED, sg_list=[ib.SGE(mr1, 6), ib.SGE(mr2, 5, offset=3)])
    )
    ok(poll_until(ca))
    (wb,) = ok(poll_until(cb), ib.WCOpcode.RECV)
    assert wb.byte_len == 11
    assert bytes(dst[:11]) == b"hello world"


def test_multi_sge_scatter(pd, pair):
    """The receive side scatters one message over two SGEs."""
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 12)
    src[:] = np.frombuffer(b"abcdefghijkl", np.uint8)
    d1, mr1 = mkbuf(pd, 5)
    d2, mr2 = mkbuf(pd, 16)
    qb.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr1.sge(), mr2.sge()]))
    qa.post_send(ib.SendWR(sg_list=[mr_a.sge()], send_flags=SIGNALED))
    ok(poll_until(ca))
    ok(poll_until(cb))
    assert bytes(d1) == b"abcde" and bytes(d2[:7]) == b"fghijkl"


def test_inline_send(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd, max_inline_data=64)
    if qa.cap.max_inline_data < 32:
        pytest.skip(f"inline data not supported (cap {qa.cap})")
    dst, mr_b = mkbuf(pd, 64)
    # Unregistered memory and lkey 0: only an inline send can carry it.
    src = np.frombuffer(bytearray(b"inline payload, 32 bytes long!!"), np.uint8)
    qb.post_recv(ib.RecvWR(wr_id=5, sg_list=[mr_b.sge()]))
    qa.post_send(
        send_wr(
            [ib.SGE(src.ctypes.data, src.nbytes, lkey=0)],
            wr_id=6,
            send_flags=SIGNALED | ib.SendFlags.INLINE,
        )
    )
    src[:] = 0  # the data was copied at post time
    ok(poll_until(ca), ib.WCOpcode.SEND)
    (wb,) = ok(poll_until(cb), ib.WCOpcode.RECV)
    assert wb.byte_len == 31
    assert bytes(dst[:31]) == b"inline payload, 32 bytes long!!"


def test_chained_list(pd, pair):
    qa, ca, qb, cb = pair
    n, size = 8, 32
    src, mr_a = mkbuf(pd, n * size)
    dst, mr_b = mkbuf(pd, n * size)
    for i in range(n):
        src[i * size : (i + 1) * size] = i + 1
    qb.post_recv([ib.RecvWR(wr_id=100 + i, sg_list=[mr_b.sge(size, i * size)]) for i in range(n)])
    wrs = [
        ib.SendWR(wr_id=200 + i, sg_list=[mr_a.sge(size, i * size)], send_flags=SIGNALED)
        for i in range(n)
    ]
    qa.post_send(wrs)
    assert [w.wr_id for w in ok(poll_until(ca, n))] == [200 + i for i in range(n)]
    got = ok(poll_until(cb, n), ib.WCOpcode.RECV)
    assert [w.wr_id for w in got] == [100 + i for i in range(n)]
    assert bytes(dst) == bytes(src)
    # The WRs are usable again after a post (the chain was undone).
    qb.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr_b.sge(size)]))
    qa.post_send(wrs[3])
    ok(poll_until(ca))
    ok(poll_until(cb))


def test_chained_tuple_mixed_opcodes(pd, pair):
    """A write then a send in one chain: RC orders them, so when the send
    arrives the written data is in place."""
    qa, ca, qb, cb = pair
    src, mr_a = mkbuf(pd, 128, fill=0x77)
    dst, mr_b = mkbuf(pd, 128)
    msg, mr_m = mkbuf(pd, 8)
    qb.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr_m.sge()]))
    qa.post_send(
        (
            send_wr(
                [mr_a.sge()], wr_id=1, opcode=ib.WROpcode.RDMA_WRITE, dest=mr_b, signaled=False
            ),
            ib.SendWR(wr_id=2, sg_list=[mr_a.sge(8)], send_flags=SIGNALED),
        )
    )
    (wa,) = ok(poll_until(ca))
    assert wa.wr_id == 2
    ok(poll_until(cb))
    assert (dst == 0x77).all() and (msg == 0x77).all()


# ---- two processes over a TCP socket ----------------------------------

PEER = textwrap.dedent(r"""
    import os, socket, struct, sys
    import numpy as np
    import ibverbs as ib

    port, gid_index = int(sys.argv[1]), int(sys.argv[2])
    name = os.environ.get("IBVERBS_TEST_DEVICE") or ib.get_device_list()[0].name
    access = (ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
              | ib.AccessFlags.REMOTE_READ)
    ctx = ib.Context(name)
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(16)
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    buf = np.zeros(4096, np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, access)
    msg = np.zeros(8, np.uint8)
    mr_msg = pd.reg_mr(msg.ctypes.data, msg.nbytes, access)

    srv = socket.create_server(("127.0.0.1", 0))
    print(srv.getsockname()[1], flush=True)
    conn, _ = srv.accept()
    local = ib.local_qp_info(qp, ctx.query_port(port), ctx.query_gid(port, gid_index),
                             port=port, psn=0x2222)
    conn.sendall(local.to_bytes() + struct.pack("!QI", mr.addr, mr.rkey))
    data = b""
    while len(data) < 28:
        data += conn.recv(28 - len(data))
    remote = ib.QPInfo.from_bytes(data)
    ib.connect_rc(qp, remote, port=port, sgid_index=gid_index, access=access,
                  local_psn=local.psn)
    qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr_msg.sge()]))
    conn.sendall(b"R")  # ready: the receive is posted and the QP connected

    def wait(n=1):
        got = []
        while len(got) < n:
            got += cq.poll(n - len(got))
        for wc in got:
            wc.raise_for_status()
        return got

    (wc,) = wait()                     # the peer's "done" send
    assert wc.opcode == ib.WCOpcode.RECV and bytes(msg) == b"written!", bytes(msg)
    # Echo a digest of what the peer wrote into buf, by SEND.
    digest = np.array([int(buf.astype(np.uint64).sum())], np.uint64)
    mr_d = pd.reg_mr(digest.ctypes.data, digest.nbytes, access)
    qp.post_send(ib.SendWR(wr_id=2, sg_list=[mr_d.sge()],
                           send_flags=ib.SendFlags.SIGNALED))
    wait()
    conn.recv(1)                       # the peer has its copy; tear down
    print("child ok", flush=True)
""")


def test_two_processes(ctx, pd, port, gid_index):
    with subprocess.Popen(
        [sys.executable, "-c", PEER, str(port), str(gid_index)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            _drive_peer(ctx, pd, port, gid_index, child)
        finally:
            if child.poll() is None:
                child.kill()


def _drive_peer(ctx, pd, port, gid_index, child):
    """The parent side: write into the child's buffer, then SEND "written!";
    the child answers with a digest of what it found, by SEND."""
    line = child.stdout.readline()
    if not line.strip().isdigit():
        child.wait(60)
        pytest.fail(f"peer did not start: {line!r} {child.stderr.read()}")
    with socket.create_connection(("127.0.0.1", int(line)), timeout=scaled(120)) as sock:
        _exchange(ctx, pd, port, gid_index, child, sock)


def _exchange(ctx, pd, port, gid_index, child, sock):
    cq = ctx.create_cq(16)
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    src, mr = mkbuf(pd, 4096)
    src[:] = np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8)
    msg, mr_msg = mkbuf(pd, 8)
    msg[:] = np.frombuffer(b"written!", np.uint8)
    digest, mr_d = mkbuf(pd, 1, dtype=np.uint64)

    data = b""
    while len(data) < 40:
        data += sock.recv(40 - len(data))
    remote = ib.QPInfo.from_bytes(data[:28])
    raddr, rkey = struct.unpack("!QI", data[28:])
    local = ib.local_qp_info(
        qp, ctx.query_port(port), ctx.query_gid(port, gid_index), port=port, psn=0x3333
    )
    sock.sendall(local.to_bytes())
    ib.connect_rc(
        qp, remote, port=port, sgid_index=gid_index, access=ALL_ACCESS, local_psn=local.psn
    )
    qp.post_recv(ib.RecvWR(wr_id=9, sg_list=[mr_d.sge()]))
    assert sock.recv(1) == b"R"
    qp.post_send(
        [
            send_wr(
                [mr.sge()],
                wr_id=1,
                opcode=ib.WROpcode.RDMA_WRITE,
                remote_addr=raddr,
                rkey=rkey,
                signaled=False,
            ),
            ib.SendWR(wr_id=2, sg_list=[mr_msg.sge()], send_flags=SIGNALED),
        ]
    )
    wcs = ok(poll_until(cq, 2, timeout=60))
    assert sorted(w.opcode for w in wcs) == [ib.WCOpcode.SEND, ib.WCOpcode.RECV]
    assert int(digest[0]) == int(src.astype(np.uint64).sum())
    sock.sendall(b"x")
    out, err = child.communicate(timeout=scaled(120))
    assert child.returncode == 0, err
    assert "child ok" in out
    qp.close()
