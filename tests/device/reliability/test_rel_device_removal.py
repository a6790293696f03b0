"""The RDMA device deleted under a process that uses it
(`rdma link delete rxe0` mid-traffic).  Marked runs_last, so it runs
after every other test of the guest session (tests/conftest.py): it takes
rxe0 away, then adds it back.

On this kernel rxe does not deliver DEVICE_FATAL: the delete blocks until
the process closes its Context (tools/rxe-vm, RIG notes).  So the child
process below: keeps traffic going, starts the delete in the background,
records the async events it gets (DEVICE_FATAL / PORT_ERR, or none), keeps
calling verbs (each must work or raise VerbsError, never crash), closes
everything, sees the delete complete, checks that the device is gone
(Context() raises VerbsError) and exits cleanly.  The test then re-adds
rxe0 and waits for its port to be ACTIVE again.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

import ibverbs as ib

from support import GID_INDEX, NETDEV, PORT, TESTS, device_name
from support.timeouts import scaled

pytestmark = [pytest.mark.integration, pytest.mark.runs_last]

CHILD = textwrap.dedent(r"""
    import errno, json, os, select, subprocess, sys, time
    sys.path.insert(0, sys.argv[2])
    import ibverbs as ib
    from support.rdma import ALL_ACCESS, make_rc_pair
    from support.timeouts import scaled
    DEV = sys.argv[1]
    log = {"events": [], "calls": {}}

    def note(name, fn):
        try:
            fn()
            log["calls"].setdefault(name, []).append("ok")
        except ib.VerbsError as e:
            log["calls"].setdefault(name, []).append(f"VerbsError {e.errno}")

    ctx = ib.Context(DEV)
    os.set_blocking(ctx.async_fd, False)
    pd = ctx.alloc_pd()
    buf = bytearray(1 << 16)
    mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
    qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=1024, max_send_wr=512)
    wr = ib.SendWR(wr_id=1, sg_list=[mr.sge(4096)], opcode=ib.WROpcode.RDMA_WRITE,
                   send_flags=ib.SendFlags.SIGNALED, remote_addr=mr.addr + 8192,
                   rkey=mr.rkey)
    for _ in range(64):
        qa.post_send(wr)
    deleter = subprocess.Popen(["rdma", "link", "delete", DEV],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    t0 = time.monotonic()
    # Mid-traffic: keep posting and polling while the delete is pending.
    while time.monotonic() - t0 < 3.0:
        note("post_send", lambda: qa.post_send(wr))
        note("poll", lambda: ca.poll(64))
        r, _, _ = select.select([ctx.async_fd], [], [], 0.05)
        if r:
            try:
                ev = ctx.get_async_event()
                log["events"].append(int(ev.event_type))
                ev.ack()
            except ib.VerbsError as e:
                log["events"].append(f"VerbsError {e.errno}")
    log["delete_pending_while_open"] = deleter.poll() is None
    note("query_port", lambda: ctx.query_port(1))
    note("query_device", lambda: ctx.query_device())
    note("alloc_pd", lambda: ctx.alloc_pd().close())
    note("create_cq", lambda: ctx.create_cq(4).close())
    note("reg_mr", lambda: ib.reg_tensor(pd, bytearray(64), 0).close())
    note("qp.query", lambda: qa.query())
    note("qp.state", lambda: qa.state)
    # Close everything (children first); each close works or raises
    # VerbsError, and what a failed close leaves open is retried.
    order = [qa, qb, ca, cb, mr, pd, ctx]
    for o in order:
        note("close " + type(o).__name__, o.close)
    for o in order:
        if not o.closed:
            note("close again " + type(o).__name__, o.close)
    log["all_closed"] = all(o.closed for o in order)
    try:
        out, _ = deleter.communicate(timeout=scaled(120))
        log["delete_rc"] = deleter.returncode
        log["delete_out"] = out.decode(errors="replace")[-500:]
    except subprocess.TimeoutExpired:
        deleter.kill()
        log["delete_rc"] = "timeout"
    log["delete_seconds"] = round(time.monotonic() - t0, 1)
    try:
        ib.Context(DEV)
        log["reopen"] = "opened"
    except ib.VerbsError as e:
        log["reopen"] = f"VerbsError {e.errno}"
    log["devices"] = [d.name for d in ib.get_device_list()]
    print("LOG " + json.dumps(log), flush=True)
""")


def _readd(name):
    subprocess.run(
        ["rdma", "link", "add", name, "type", "rxe", "netdev", NETDEV],
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if name in [d.name for d in ib.get_device_list()]:
            try:
                with ib.Context(name) as c:
                    if (
                        c.query_port(PORT).state == ib.PortState.ACTIVE
                        and not c.query_gid(PORT, GID_INDEX).is_zero()
                    ):
                        return True
            except ib.VerbsError:
                pass
        time.sleep(0.2)
    return False


def _librdmacm_loaded():
    with open("/proc/self/maps") as f:
        return "librdmacm" in f.read()


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("rdma") is None,
    reason="needs root and iproute2's rdma tool (the Soft-RoCE guest)",
)
def test_device_deleted_mid_traffic():
    name = device_name()
    if not name.startswith("rxe"):
        pytest.skip(f"{name} is not a Soft-RoCE device that can be deleted and re-added")
    if not os.path.exists(f"/sys/class/net/{NETDEV}"):
        pytest.skip(f"no netdev {NETDEV} to re-add {name} on")
    if _librdmacm_loaded():
        # librdmacm opens every device once and keeps it open until the
        # process exits; the kernel then cannot delete the device.
        pytest.skip(
            "this process has loaded librdmacm (an earlier connection-manager "
            "test), which holds the device open until exit: run this test in a "
            "process of its own, as make test-guest does"
        )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, name, str(TESTS)],
            capture_output=True,
            text=True,
            timeout=scaled(300),
        )
    finally:
        back = _readd(name)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("LOG ")]
    assert proc.returncode == 0 and lines, (
        f"the process did not exit cleanly: status {proc.returncode}\n"
        f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    log = json.loads(lines[-1][4:])
    print(json.dumps(log, indent=1))
    assert log["all_closed"], log
    assert log["delete_rc"] == 0, log
    assert log["reopen"].startswith("VerbsError"), log
    assert name not in log["devices"], log
    # Every call during the removal worked or raised VerbsError (note()
    # lets nothing else through; a crash would have killed the child).
    events = [e for e in log["events"] if isinstance(e, int)]
    assert set(events) <= {
        int(ib.EventType.DEVICE_FATAL),
        int(ib.EventType.PORT_ERR),
        int(ib.EventType.PORT_ACTIVE),
        int(ib.EventType.CQ_ERR),
        int(ib.EventType.QP_FATAL),
        int(ib.EventType.GID_CHANGE),
    }, log
    assert "Exception ignored" not in proc.stderr, proc.stderr
    assert back, f"{name} did not come back ACTIVE after `rdma link add`"
