"""Faults between the nodes: the peer process killed in the middle of a
stream of writes, the peer's link taken down and back up, a peer that
never answers the out-of-band exchange."""

import gc
import os
import select
import socket
import subprocess
import sys
import time

import pytest

import ibverbs as ib
from support.peers import (
    GID_INDEX,
    PORT,
    SIGNALED,
    connect,
    local_info,
    mkbuf,
    mr_desc,
    poll_until,
    port_state,
    qp_count,
    rc_qp,
    wait_async_event,
)
from support.rendezvous import exchange_once
from support.timeouts import scaled

pytestmark = pytest.mark.twonode

WS = ib.WCStatus
# A short transport timeout (4.096 us * 2**16 = 268 ms) and few retries, so
# that a vanished peer is declared dead within about a second.  Not shorter:
# an emulated guest on a loaded machine stalls for tens of milliseconds, and
# with 17 ms (2**12) three such stalls in a row end a healthy connection with
# RETRY_EXC_ERR.  (This test failed on node 0 in a CI run of 2026-12-01 whose
# round trips were 11 ms, with 17 ms here; it passed on every other run.)
FAST_FAIL = {"timeout": 16, "retry_cnt": 2, "rnr_retry": 2}
CHUNK = 16 * 1024


# The peer process that gets killed: its own context, QP and 8 chunks of
# memory, connected through the test process (lines of hex on its stdin and
# stdout); then it waits to be killed.  What the writes in flight meet
# depends on the order in which the kernel releases the dead process's
# objects: no QP any more (silence, so RETRY_EXC_ERR at the sender), or for a
# moment a QP whose MR is gone (a NAK: REM_ACCESS_ERR).  The MR is
# registered before the QP, so that the kernel's newest-first release makes
# the first the rule; the second is a correct outcome too and is accepted.
# (With the QP created first, one run in a few ended on another status than
# RETRY_EXC_ERR, on CI and here.)
PEER_SCRIPT = """
import sys, time, ibverbs as ib
dev, gid_index, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ctx = ib.Context(dev)
pd = ctx.alloc_pd()
cq = ctx.create_cq(16)
buf = bytearray(8 * chunk)
acc = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
mr = ib.reg_tensor(pd, buf, acc)
qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.RC))
info = ib.local_qp_info(qp, ctx.query_port(1), ctx.query_gid(1, gid_index), port=1, psn=0x4242)
print(info.to_bytes().hex(), mr.addr, mr.rkey, flush=True)
theirs = ib.QPInfo.from_bytes(bytes.fromhex(sys.stdin.readline().strip()))
ib.connect_rc(qp, theirs, port=1, sgid_index=gid_index, access=acc, local_psn=info.psn)
print("ok", flush=True)
while True:
    time.sleep(60)
"""


def _readline(proc, timeout=60.0):
    r, _, _ = select.select([proc.stdout], [], [], scaled(timeout))
    assert r, f"the peer process said nothing within {timeout} s"
    line = proc.stdout.readline()
    assert line, f"the peer process exited ({proc.wait()})"
    return line.split()


def test_peer_killed_mid_stream(chan, me, node, ctx, pd):
    if me == 1:
        with subprocess.Popen(
            [sys.executable, "-c", PEER_SCRIPT, node.device, str(GID_INDEX), str(CHUNK)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        ) as proc:
            try:
                info, addr, rkey = _readline(proc)
                theirs = chan.exchange(
                    "qp", {"info": bytes.fromhex(info), "addr": int(addr), "rkey": int(rkey)}
                )
                proc.stdin.write(theirs.hex() + "\n")
                proc.stdin.flush()
                assert _readline(proc) == ["ok"]
                chan.send("ready")
                chan.recv("streaming")
            finally:
                proc.kill()  # SIGKILL: no chance to clean up
                proc.wait()
        chan.send("killed")
        chan.recv("result", timeout=120)
        return
    qp, cq = rc_qp(ctx, pd, max_send_wr=64)
    buf, mr = mkbuf(pd, CHUNK)
    mine = local_info(ctx, qp, 0x77)
    peer = chan.exchange("qp", mine.to_bytes())
    ib.connect_rc(
        qp,
        ib.QPInfo.from_bytes(peer["info"]),
        port=PORT,
        sgid_index=GID_INDEX,
        access=0,
        local_psn=mine.psn,
        **FAST_FAIL,
    )
    chan.recv("ready")
    posted, seen, statuses = [], [], []
    window, next_id, told = 16, 0, False
    t_told = t_err = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        while not statuses or statuses[-1] == WS.SUCCESS:
            if next_id - len(seen) >= window:
                break
            try:
                qp.post_send(
                    ib.SendWR(
                        wr_id=next_id,
                        sg_list=[mr.sge()],
                        opcode=ib.WROpcode.RDMA_WRITE,
                        send_flags=SIGNALED,
                        remote_addr=peer["addr"] + CHUNK * (next_id % 8),
                        rkey=peer["rkey"],
                    )
                )
            except ib.VerbsError:
                break  # the QP went to the error state: nothing more goes out
            posted.append(next_id)
            next_id += 1
        for wc in cq.poll(16):
            seen.append(wc.wr_id)
            statuses.append(wc.status)
            if wc.status != WS.SUCCESS and t_err is None:
                t_err = time.monotonic()
        if not told and len(seen) >= 32:
            chan.send("streaming")  # the peer is killed on this
            told = True
            t_told = time.monotonic()
        if statuses and statuses[-1] != WS.SUCCESS and len(seen) == len(posted):
            break
    chan.recv("killed")
    assert told, (
        f"only {len(seen)} writes completed before the kill; statuses "
        f"{sorted({WS(s).name for s in statuses})}"
    )
    assert sorted(seen) == posted, "each wr_id must complete exactly once"
    assert seen == posted, "RC completions come in posting order"
    first_err = next(i for i, s in enumerate(statuses) if s != WS.SUCCESS)
    assert statuses[first_err] in (WS.RETRY_EXC_ERR, WS.REM_ACCESS_ERR), (
        first_err,
        [WS(s).name for s in statuses[first_err:]],
    )
    assert all(s == WS.WR_FLUSH_ERR for s in statuses[first_err + 1 :])
    assert qp.query(ib.QPAttrMask.STATE)[0]["qp_state"] == ib.QPState.ERR
    # 268 ms x (2 retries + 1), plus the kill, on a slow emulated machine.
    elapsed = t_err - t_told
    assert elapsed < 30, f"RETRY_EXC_ERR {elapsed:.1f} s after the kill was asked for"
    print(
        f"{first_err} writes landed; then {WS(statuses[first_err]).name} and "
        f"{len(statuses) - first_err - 1} flushed, {elapsed:.2f} s after the kill was asked for"
    )
    chan.send("result")


def _link(state):
    dev = os.environ.get("IBVERBS_NODE_LINK")
    if not dev:
        pytest.skip("IBVERBS_NODE_LINK is not set (tools/rxe-vm --nodes sets it)")
    subprocess.run(["ip", "link", "set", dev, state], check=True)


def _wait_port(ctx, want, timeout=30.0):
    deadline = time.monotonic() + scaled(timeout)
    while port_state(ctx) != want:
        assert time.monotonic() < deadline, f"port state {port_state(ctx)!r}, want {want!r}"
        time.sleep(0.1)


def test_peer_link_down_then_up(chan, me, ctx, pd):
    qp, cq = rc_qp(ctx, pd)
    buf, mr = mkbuf(pd, 4096)
    connect(chan, ctx, qp, **FAST_FAIL)
    theirs = chan.exchange("mr", mr_desc(mr))
    gid = ctx.query_gid(PORT, GID_INDEX)
    if me == 1:
        _link("down")
        try:
            wait_async_event(ctx, ib.EventType.PORT_ERR, timeout=20, ack=True)
            _wait_port(ctx, ib.PortState.DOWN)
            chan.send("down")
            chan.recv("errored")
        finally:
            _link("up")
        wait_async_event(ctx, ib.EventType.PORT_ACTIVE, timeout=20, ack=True)
        _wait_port(ctx, ib.PortState.ACTIVE)
        assert ctx.query_gid(PORT, GID_INDEX) == gid
        chan.send("up")
    else:
        chan.recv("down")
        qp.post_send(
            ib.SendWR(
                wr_id=1,
                sg_list=[mr.sge()],
                opcode=ib.WROpcode.RDMA_WRITE,
                remote_addr=theirs["addr"],
                rkey=theirs["rkey"],
                send_flags=SIGNALED,
            )
        )
        (wc,) = poll_until(cq, timeout=30, check=False)
        assert wc.status == WS.RETRY_EXC_ERR, WS(wc.status).name
        chan.send("errored")
        chan.recv("up")
    # A new connection over the restored link works.
    qp2, cq2 = rc_qp(ctx, pd)
    connect(chan, ctx, qp2, tag="qp2")
    theirs = chan.exchange("mr2", mr_desc(mr))
    if me == 0:
        buf[:] = 0x5D
        qp2.post_send(
            ib.SendWR(
                wr_id=2,
                sg_list=[mr.sge()],
                opcode=ib.WROpcode.RDMA_WRITE,
                remote_addr=theirs["addr"],
                rkey=theirs["rkey"],
                send_flags=SIGNALED,
            )
        )
        poll_until(cq2, timeout=30, check=True)
        chan.send("written")
    else:
        chan.recv("written")
        assert (buf == 0x5D).all()


def test_peer_never_answers(chan, me, node, ctx, pd):
    if me == 1:
        # Listens (the kernel completes the TCP handshake) but never reads
        # nor answers.
        with socket.create_server((node.addr, 0), backlog=4) as ls:
            chan.send("listening", ls.getsockname()[1])
            chan.recv("gave up", timeout=120)
        return
    port = chan.recv("listening")
    gc.collect()
    before = qp_count(node.device)
    with pd.create_qp(
        ib.QPInitAttr(
            send_cq=ctx.create_cq(4),
            recv_cq=ctx.create_cq(4),
            qp_type=ib.QPType.RC,
            max_send_wr=4,
            max_recv_wr=4,
        )
    ) as qp:
        info = local_info(ctx, qp, 0x99)
        assert qp_count(node.device) == before + 1
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            exchange_once(
                node.addrs[1], port, info.to_bytes(), listen=False, timeout=2.0, source=node.addr
            )
        waited = time.monotonic() - start
    gc.collect()
    assert qp_count(node.device) == before
    assert 2.0 <= waited < 15.0, waited
    chan.send("gave up")
