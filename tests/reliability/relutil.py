"""Helpers shared by the reliability tests and their subprocess scripts.

Not a conftest: the integration tests import their own conftest by name,
so this directory keeps its helpers in a module of its own.
"""

from __future__ import annotations

import gc
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import ibverbs as ib

HERE = Path(__file__).resolve().parent
PORT = int(os.environ.get("IBVERBS_TEST_PORT", "1"))
GID_INDEX = int(os.environ.get("IBVERBS_TEST_GID_INDEX", "1"))
NETDEV = os.environ.get("IBVERBS_TEST_NETDEV", "veth0")
ALL_ACCESS = (ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
              | ib.AccessFlags.REMOTE_READ | ib.AccessFlags.REMOTE_ATOMIC)


def device_name():
    """The device the integration tests use, or None."""
    name = os.environ.get("IBVERBS_TEST_DEVICE")
    if name:
        return name
    devs = ib.get_device_list()
    return devs[0].name if devs else None


def make_rc_pair(ctx, pd, *, max_send_wr=128, max_recv_wr=128, cq_size=256,
                 rnr_retry=7, channel=None, access=ALL_ACCESS, min_rnr_timer=None):
    """Two RC QPs on one device connected to each other (loopback), each
    with its own CQ (on `channel` if given).  (qa, ca, qb, cb)."""
    port_attr = ctx.query_port(PORT)
    gid = ctx.query_gid(PORT, GID_INDEX)
    out = []
    for _ in range(2):
        cq = ctx.create_cq(cq_size, channel)
        qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq,
                                        max_send_wr=max_send_wr,
                                        max_recv_wr=max_recv_wr,
                                        max_send_sge=2, max_recv_sge=2))
        out.append((qp, cq))
    (qa, ca), (qb, cb) = out
    ia = ib.local_qp_info(qa, port_attr, gid, port=PORT, psn=0x1234)
    ibb = ib.local_qp_info(qb, port_attr, gid, port=PORT, psn=0x4321)
    extra = {} if min_rnr_timer is None else {"min_rnr_timer": min_rnr_timer}
    ib.connect_rc(qa, ibb, port=PORT, sgid_index=GID_INDEX, access=access,
                  local_psn=ia.psn, rnr_retry=rnr_retry, **extra)
    ib.connect_rc(qb, ia, port=PORT, sgid_index=GID_INDEX, access=access,
                  local_psn=ibb.psn, rnr_retry=rnr_retry, **extra)
    return qa, ca, qb, cb


def poll_until(cq, n=1, timeout=10.0):
    """Poll until n completions arrived; returns them (AssertionError on
    timeout)."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        got.extend(cq.poll(n - len(got)))
        if len(got) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out: {len(got)} of {n} completions")
            time.sleep(0.0005)
    return got


def wait_async_event(ctx, event_type, timeout=10.0):
    """The next async event of event_type (others are acked on the way);
    None on timeout.  Works with a blocking or non-blocking async_fd."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        r, _, _ = select.select([ctx.async_fd], [], [], left)
        if not r:
            continue
        was = os.get_blocking(ctx.async_fd)
        os.set_blocking(ctx.async_fd, False)
        try:
            ev = ctx.get_async_event()
        except ib.VerbsError:
            continue
        finally:
            os.set_blocking(ctx.async_fd, was)
        if ev.event_type == event_type:
            return ev
        ev.ack()


def drain_async_events(ctx):
    """Read and ack every async event pending now; their types."""
    was = os.get_blocking(ctx.async_fd)
    os.set_blocking(ctx.async_fd, False)
    types = []
    try:
        while True:
            try:
                ev = ctx.get_async_event()
            except ib.VerbsError:
                return types
            types.append(int(ev.event_type))
            ev.ack()
    finally:
        os.set_blocking(ctx.async_fd, was)


# ---------------------------------------------------------------------------
# Process and kernel resources
# ---------------------------------------------------------------------------

def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def fd_count():
    return len(os.listdir("/proc/self/fd"))


def rdma_counts(device):
    """{"pd": n, "cq": n, "qp": n, "mr": n, "ctx": n, "srq": n} of the
    device, from `rdma -j resource show` (None without the tool)."""
    if shutil.which("rdma") is None:
        return None
    out = subprocess.run(["rdma", "-j", "resource", "show"], capture_output=True,
                         text=True, timeout=60)
    if out.returncode != 0:
        return None
    for entry in json.loads(out.stdout or "[]"):
        if entry.get("ifname") == device:
            return {k: v for k, v in entry.items() if k not in ("ifindex", "ifname")}
    return None


def full_gc():
    for _ in range(3):
        gc.collect()


# ---------------------------------------------------------------------------
# Running case scripts in subprocesses
# ---------------------------------------------------------------------------

def run_cases(script, *args, timeout=600, env=None):
    """Run tests/reliability/<script> (which prints BEGIN/result/DONE
    lines, see misuse_cases.py) until every case has a result: a case that
    kills the process is recorded as crashed and the script restarted
    after it.  Returns (results, crashes, extra) where extra is the first
    JSON line that is not a case result (e.g. coverage data)."""
    results, crashes, extra = [], [], None
    start = 0
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{script}: out of time after {len(results)} cases")
        proc = subprocess.run(
            [sys.executable, str(HERE / script), *args, "--start", str(start)],
            capture_output=True, text=True, timeout=left, env=env, cwd=str(HERE))
        begun = None
        done = False
        for line in proc.stdout.splitlines():
            if line.startswith("BEGIN "):
                _, idx, name = line.split(" ", 2)
                begun = (int(idx), name)
            elif line.startswith("DONE "):
                done = True
            elif line.startswith("{"):
                rec = json.loads(line)
                if "i" in rec:
                    results.append(rec)
                    begun = None
                elif extra is None:
                    extra = rec
        if done and proc.returncode == 0:
            return results, crashes, extra
        if begun is None:
            raise AssertionError(
                f"{script} failed outside any case (rc {proc.returncode}):\n"
                f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
        crashes.append({"i": begun[0], "name": begun[1], "rc": proc.returncode,
                        "stderr": proc.stderr[-2000:]})
        start = begun[0] + 1
