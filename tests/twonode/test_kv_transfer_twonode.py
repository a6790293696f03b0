"""examples/kv_transfer.py across the two nodes: node 1 sends, node 0
receives and checks every block's CRC32; both patterns (contiguous and
scattered), then the same with one side killed mid-batch: the survivor
fails naming the blocks that did not make it, within its timeout, and the
sender accounts for every WR it posted (each completed exactly once)."""

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.peers import GID_INDEX, wait_listening
from support.timeouts import scaled

pytestmark = pytest.mark.twonode

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = [sys.executable, str(ROOT / "examples" / "kv_transfer.py")]


def spawn(args):
    return subprocess.Popen(
        EXAMPLE + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def finish(proc, timeout=180):
    try:
        out, _ = proc.communicate(timeout=scaled(timeout))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out


def common(node, port):
    return ["-d", node.device, "-g", str(GID_INDEX), "-p", str(port)]


@pytest.mark.parametrize(
    "pattern,args",
    [
        ("contiguous", ["--blocks", "16", "--block-size", "64K"]),
        (
            # more WRITEs (256) than the send queue holds (32): the depth
            # bounds what is in flight; chains of 8
            "scattered",
            ["--blocks", "256", "--block-size", "4K", "--pool-blocks", "2048", "--scatter"]
            + ["--depth", "32", "--chain", "8"],
        ),
    ],
)
def test_kv_transfer_verified(chan, me, node, pattern, args):
    port = 18741 if pattern == "contiguous" else 18742
    if me == 0:
        proc = spawn(["--serve", node.addrs[0]] + common(node, port))
        try:
            wait_listening(port, proc)
            chan.send("listening")
        finally:
            status, out = finish(proc)
    else:
        chan.recv("listening", timeout=120)
        proc = spawn(
            ["--connect", node.addrs[0], "--batches", "2", "--json"] + args + common(node, port)
        )
        status, out = finish(proc)
    peer = chan.exchange("status", status)
    assert status == 0, f"node {me} exited {status}:\n{out}"
    assert peer == 0, f"node {1 - me} failed"
    if me == 0:
        n = 16 if pattern == "contiguous" else 256
        assert f"received 2 batches of {n} blocks, every block's CRC32 checked" in out, out
    else:
        assert "verified by the receiver" in out, out
        line = re.search(r"^kv_transfer: .*$", out, re.M).group(0)
        print(f"{pattern}: {line}")


# 4096 x 16 KiB (64 MiB): seconds across the emulated link, so a kill 0.3 s
# into the batch lands while most WRITEs are still to come.
BIG = ["--blocks", "4096", "--block-size", "16K", "--scatter", "--pool-blocks", "4096"]


@pytest.mark.parametrize("victim", ["receiver", "sender"])
def test_kv_transfer_peer_killed_mid_batch(chan, me, node, victim):
    port = 18743 if victim == "receiver" else 18744
    t0 = time.monotonic()
    if me == 0:
        proc = spawn(["--serve", node.addrs[0], "--timeout", "60"] + common(node, port))
        wait_listening(port, proc)
        chan.send("listening")
        line = proc.stdout.readline()
        while line and "receiving batch 0" not in line:
            line = proc.stdout.readline()
        assert line, f"the receiver ended before the batch: {finish(proc)}"
        if victim == "receiver":
            time.sleep(0.3)
            proc.send_signal(signal.SIGKILL)
        else:
            chan.send("batch started")
        status, out = finish(proc)
    else:
        chan.recv("listening", timeout=120)
        proc = spawn(
            ["--connect", node.addrs[0], "--batches", "1", "--timeout", "60", "--retry-cnt", "2"]
            + BIG
            + common(node, port)
        )
        if victim == "sender":
            chan.recv("batch started", timeout=120)
            time.sleep(0.3)
            proc.send_signal(signal.SIGKILL)
        status, out = finish(proc)
    elapsed = time.monotonic() - t0
    chan.exchange("done", status)
    survivor = 1 if victim == "receiver" else 0
    if me != survivor:
        assert status == -signal.SIGKILL, out
        return
    assert status == 1, f"the survivor exited {status}:\n{out}"
    assert elapsed < 120, f"the survivor took {elapsed:.0f} s"
    if victim == "receiver":
        m = re.search(
            r"batch 0 FAILED: (\d+) of 4096 blocks not delivered \(src->dst: \d+->\d+.*"
            r"first failure WR \d+: (\w+); (\d+) WRs posted, (\d+) completed, (\d+) in error",
            out,
        )
        assert m, out
        failed, posted, completed, errors = (int(m.group(k)) for k in (1, 3, 4, 5))
        assert 0 < failed <= 4096
        assert posted == completed, out  # every posted WR completed once
        assert errors >= 1
        print(f"receiver killed: {failed} blocks undelivered, {m.group(2)}; {errors} WRs in error")
    else:
        m = re.search(
            r"batch 0 FAILED: the sender went away mid-batch .*; (\d+) of 4096 blocks did not arrive",
            out,
        )
        assert m, out
        assert int(m.group(1)) > 0
        print(f"sender killed: the receiver names {m.group(1)} blocks that did not arrive")
