"""fork() with verbs resources open, and ibverbs.fork_init() /
ibverbs.is_fork_initialized().

A forked child shares the parent's device file: a destroy verb run in the
child (an explicit close(), or the garbage collector at its exit) would
destroy the parent's QPs and MRs.  So in the child every inherited handle
is closed (an atfork handler, no verb called): using one raises
VerbsError(EBADF), closing or dropping one does nothing.  The child can
open its own Context and use RDMA.

Each scenario runs in a fresh interpreter (a subprocess), which forks.
"""

import subprocess
import sys
import textwrap

import pytest

import ibverbs as ib

from support import TESTS, device_name
from support.timeouts import scaled

pytestmark = pytest.mark.integration

PRELUDE = textwrap.dedent(r"""
    import errno, gc, json, os, sys
    sys.path.insert(0, sys.argv[2])
    import ibverbs as ib
    from support.rdma import ALL_ACCESS, make_rc_pair, poll_until
    DEV = sys.argv[1]

    def rdma_write(qa, ca, mr, buf, tag):
        buf[:8] = bytes(8)
        buf[100:108] = tag
        qa.post_send(ib.SendWR(wr_id=1, sg_list=[mr.sge(8, offset=100)],
                               opcode=ib.WROpcode.RDMA_WRITE,
                               send_flags=ib.SendFlags.SIGNALED,
                               remote_addr=mr.addr, rkey=mr.rkey))
        poll_until(ca, 1, timeout=30)[0].raise_for_status()
        assert bytes(buf[:8]) == tag, bytes(buf[:8])
""")

FORK = PRELUDE + textwrap.dedent(r"""
    import mmap
    call_fork_init = sys.argv[3] == "1"
    if call_fork_init:
        ib.fork_init()                     # before any device is opened
    mode = ib.is_fork_initialized()
    ctx = ib.Context(DEV)
    pd = ctx.alloc_pd()
    # With fork_init(), registered pages are left out of the child WHOLE
    # (MADV_DONTFORK), with whatever else shares them: malloc'd memory (a
    # bytearray) would take heap metadata with it.  Page-aligned memory
    # of its own (mmap) is what that mode needs.
    buf = mmap.mmap(-1, 4096) if call_fork_init else bytearray(4096)
    mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
    qa, ca, qb, cb = make_rc_pair(ctx, pd)
    rdma_write(qa, ca, mr, buf, b"PARENT-1")
    if call_fork_init:
        # Too late once a device is open: rdma-core refuses (EINVAL).
        try:
            ib.fork_init()
        except ib.VerbsError as e:
            assert e.errno == errno.EINVAL, e
    pid = os.fork()
    if pid == 0:
        # The child: Python code, garbage collection, its own RDMA.
        assert qa.closed and mr.closed and ctx.closed and pd.closed
        try:
            qa.post_send(ib.SendWR(wr_id=9))
        except ib.VerbsError as e:
            assert e.errno == errno.EBADF and "fork" in str(e), e
        else:
            raise AssertionError("an inherited QP posted in the child")
        mr.close()                          # no-ops: nothing destroyed
        qa.close()
        if not call_fork_init:
            # Registered memory is copy-on-write in the child (after
            # ibv_fork_init it is not mapped in the child at all).
            assert bytes(buf[:8]) == b"PARENT-1"
            buf[0:8] = b"CHILD..."
        data = json.dumps({"n": [i * i for i in range(1000)]})
        del qa, qb, ca, cb, mr, pd, ctx
        gc.collect()
        c2 = ib.Context(DEV)
        p2 = c2.alloc_pd()
        b2 = bytearray(4096)
        m2 = ib.reg_tensor(p2, b2, ALL_ACCESS)
        x = make_rc_pair(c2, p2)
        rdma_write(x[0], x[1], m2, b2, b"CHILD-OK")
        sys.exit(0)                         # a normal exit: finalizers run
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    # The parent's resources are intact, its memory its own.
    buf[200] = 7
    rdma_write(qa, ca, mr, buf, b"PARENT-2")
    assert buf[200] == 7
    for o in (qa, qb, ca, cb, mr, pd, ctx):
        o.close()
    print("MODE", mode, flush=True)
""")


@pytest.mark.parametrize("fork_init", [False, True], ids=["plain", "fork_init"])
def test_fork_with_registered_memory(fork_init):
    proc = subprocess.run(
        [sys.executable, "-c", FORK, device_name(), str(TESTS), "1" if fork_init else "0"],
        capture_output=True,
        text=True,
        timeout=scaled(300),
    )
    assert proc.returncode == 0 and "MODE" in proc.stdout, (
        f"exit status {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    )
    assert "Exception ignored" not in proc.stderr, proc.stderr
    mode = int(proc.stdout.split("MODE")[1].split()[0])
    # 0 DISABLED, 1 ENABLED (madvise DONTFORK), 2 UNNEEDED (kernel >= 5.13
    # keeps pinned pages correct across fork by itself; rdma-core then
    # reports 2 even after fork_init(), which still applies DONTFORK).
    assert mode in ((1, 2) if fork_init else (0, 2))


def test_is_fork_initialized_reports_a_mode():
    try:
        mode = ib.is_fork_initialized()
    except ib.VerbsError:  # rdma-core < 35
        pytest.skip("ibv_is_fork_initialized is not exported")
    assert mode in (0, 1, 2)


MULTI = PRELUDE + textwrap.dedent(r"""
    # Many children, forked while a CQ event channel and async events are
    # in use; each exits with and without finalization.
    ctx = ib.Context(DEV)
    pd = ctx.alloc_pd()
    ch = ctx.create_comp_channel()
    buf = bytearray(4096)
    mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
    qa, ca, qb, cb = make_rc_pair(ctx, pd, channel=ch)
    for i in range(3):
        ca.req_notify()
        pid = os.fork()
        if pid == 0:
            assert ch.closed
            gc.collect()
            if i % 2:
                os._exit(0)
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        rdma_write(qa, ca, mr, buf, b"ROUND-%02d" % i)
        assert ch.get_cq_event() is ca
        ca.ack_events(1)
    for o in (qa, qb, ca, cb, ch, mr, pd, ctx):
        o.close()
    print("DONE", flush=True)
""")


def test_repeated_forks_keep_the_parent_whole():
    proc = subprocess.run(
        [sys.executable, "-c", MULTI, device_name(), str(TESTS)],
        capture_output=True,
        text=True,
        timeout=scaled(300),
    )
    assert proc.returncode == 0 and "DONE" in proc.stdout, (
        f"exit status {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    )
