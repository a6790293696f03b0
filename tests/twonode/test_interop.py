"""Interop across the nodes: examples/rc_pingpong.py against rdma-core's C
ibv_rc_pingpong in both directions (and C against C, the rig's round-trip
figure), and `python -m ibverbs perf` next to perftest's ib_write_bw."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.peers import GID_INDEX, run, wait_listening
from support.timeouts import communicate

pytestmark = [pytest.mark.twonode, pytest.mark.separate_vms]

ROOT = Path(__file__).resolve().parents[2]
PY_PINGPONG = [sys.executable, str(ROOT / "examples" / "rc_pingpong.py")]
C_PINGPONG = ["ibv_rc_pingpong"]
ITERS = 200


def serve_and_connect(chan, me, node, server_cmd, client_cmd, port, timeout=180):
    """Node 0 runs SERVER_CMD (listening on PORT), node 1 runs CLIENT_CMD
    followed by node 0's address; both must exit 0. Returns this node's
    output.  Node 1 reports how its client ended (its exit status, or
    "timed out") before node 0 waits for the server: a server whose client
    failed may wait for it forever (ib_write_bw does), so it is killed
    then, and both nodes fail this test together instead of node 0 still
    serving while node 1 has moved on to the next one."""
    if me == 0:
        with subprocess.Popen(
            server_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as proc:
            try:
                wait_listening(port, proc)
                chan.send("listening")
                peer_status = chan.recv("client", timeout=timeout + 30)
                if peer_status != 0:
                    proc.kill()
                out, _ = communicate(proc, 60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
        status = proc.returncode
        chan.send("server", status)
        assert peer_status == 0, f"node 1's client failed ({peer_status}); the server:\n{out}"
        assert status == 0, f"node 0 exited {status}:\n{out}"
    else:
        chan.recv("listening", timeout=120)
        try:
            status, out = run(client_cmd + [node.addrs[0]], timeout=timeout)
        except subprocess.TimeoutExpired as e:
            status, out = "timed out", e.output or ""
        chan.send("client", status)
        peer_status = chan.recv("server", timeout=120)
        assert status == 0, f"node {me} exited {status}:\n{out}"
        assert peer_status == 0, f"node {1 - me} failed"
    return out


def usec_per_iter(out):
    m = re.search(r"([0-9.]+) usec/iter", out)
    assert m, out
    return float(m.group(1))


@pytest.mark.parametrize("server,client", [("python", "c"), ("c", "python"), ("c", "c")])
def test_rc_pingpong(chan, me, node, server, client):
    tools = {"python": PY_PINGPONG, "c": C_PINGPONG}
    port = {"python": 18711, "c": 18712}[server] + (client == "c" and server == "c")
    args = [
        "-d",
        node.device,
        "-g",
        str(GID_INDEX),
        "-n",
        str(ITERS),
        "-s",
        "4096",
        "-p",
        str(port),
    ]
    out = serve_and_connect(chan, me, node, tools[server] + args, tools[client] + args, port)
    us = usec_per_iter(out)
    assert f"{ITERS} iters" in out
    print(
        f"rc_pingpong 4 KiB x {ITERS}, {server} server on node 0, {client} client "
        f"on node 1: {us:.0f} us per round trip (node {me})"
    )


def test_perf_write_bw_next_to_ib_write_bw(chan, me, node):
    """Both tools with the QPs' ACK timeout at 2**18 * 4 us, about 1 s
    (perftest's -u; 67 ms by default): on a loaded host the emulated
    link carries a few MB/s, so 128 outstanding 64 KiB WRITEs take longer
    than 67 ms to be acknowledged; the sender then retransmits what
    arrives anyway (thousands of duplicate requests counted by rxe on a
    loaded 2-core host, 2026-12-06) and gives up (RETRY_EXC_ERR) when
    the guests stall for 7 timeouts."""
    size, iters = 65536, 400
    dev = ["-d", node.device, "-x", str(GID_INDEX), "-u", "18"]
    ours = [
        sys.executable,
        "-m",
        "ibverbs",
        "perf",
        "write_bw",
        *dev,
        "-s",
        "64K",
        "-n",
        str(iters),
        "-p",
        "18721",
        "--timeout",
        "120",
    ]
    out = serve_and_connect(chan, me, node, ours, ours + ["--json"], 18721)
    theirs = ["ib_write_bw", *dev, "-s", str(size), "-n", str(iters), "-p", "18722", "-F"]
    out_c = serve_and_connect(chan, me, node, theirs, theirs, 18722)
    if me == 1:
        import json

        res = json.loads(out.strip().splitlines()[-1])
        ours_mbps = float(res["MBps"])
        m = re.search(rf"^\s*{size}\s+{iters}\s+[0-9.]+\s+([0-9.]+)", out_c, re.M)
        assert m, out_c
        c_mbps = float(m.group(1)) * (1 << 20) / 1e6  # perftest's MB is 2**20 B
        assert ours_mbps > 0 and c_mbps > 0
        print(
            f"write_bw 64 KiB across nodes: ibverbs {ours_mbps:.1f} MB/s, "
            f"ib_write_bw {c_mbps:.1f} MB/s, ratio {ours_mbps / c_mbps:.2f}"
        )


def test_quickstart_two_hosts_example(chan, me, node):
    """examples/quickstart_two_hosts.py as make demo runs it: node 1 writes
    4 KiB into node 0's memory, node 0 checks it; each names the other by
    its GID in text (::ffff:<the other node's address>)."""
    example = [sys.executable, str(ROOT / "examples" / "quickstart_two_hosts.py")]
    args = ["-d", node.device, "-g", str(GID_INDEX), "-p", "18731"]
    out = serve_and_connect(
        chan, me, node, example + args + ["--listen", node.addrs[0]], example + args, 18731
    )
    peer = f"::ffff:{node.addrs[1 - me]}"
    if me == 0:
        assert f"verified on the server: all 4096 bytes written by {peer} arrived" in out, out
    else:
        assert f"wrote 4096 bytes into {peer}'s memory" in out, out
