"""``python -m ibverbs perf`` end to end on a real device (rxe0 in the
guest), with tiny iteration counts: every test runs, the numbers are
positive and the counts are what was asked for.  One test goes through the
command line; the others call ibverbs.perf.run() (same code, no
interpreter start-up)."""

import json
import subprocess
import sys

import pytest

from ibverbs.perf import PerfError, run

from support import GID_INDEX, PORT, free_port
from support.timeouts import scaled

pytestmark = pytest.mark.integration


def perf_args(device_name, test, *args):
    """The command line of one loopback test on the device (a fresh port,
    a 60 s timeout), then args."""
    where = ["-d", device_name, "-i", str(PORT), "-x", str(GID_INDEX), "--loopback"]
    return [test, *where, "-p", str(free_port()), "--timeout", "60", *args]


def perf(device_name, test, *args):
    """ibverbs.perf.run in this process: the server is a forked child, so
    no interpreter starts (seconds each in the emulated guest)."""
    return run(perf_args(device_name, test, *args))


def check_bw(r, test, size, msgs):
    assert r["test"] == test and r["impl"] == "ibverbs"
    assert r["size"] == size
    assert r["msgs"] == msgs
    assert r["seconds"] > 0 and r["msg_rate"] > 0 and r["MBps"] > 0
    assert r["MBps"] == pytest.approx(r["msg_rate"] * size / 1e6)


def test_cli_json(device_name):
    """The command line itself: one JSON object per size, one per line."""
    args = perf_args(device_name, "write_bw", "--json", "-s", "8,4K", "-n", "64", "-l", "4")
    cmd = [sys.executable, "-m", "ibverbs", "perf", *args, "-t", "16"]
    p = subprocess.run(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=scaled(120)
    )
    assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stdout}\n{p.stderr}"
    res = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["size"] for r in res] == [8, 4096]
    for r in res:
        # Lists of 4, the last one signaled.
        check_bw(r, "write_bw", r["size"], 64)
        assert r["post_list"] == 4 and r["cq_mod"] == 4


def test_write_bw_iterations_round_up_to_whole_units(device_name):
    (r,) = perf(device_name, "write_bw", "-s", "64", "-n", "30", "--cq-mod", "8", "-t", "32")
    check_bw(r, "write_bw", 64, 32)
    (r,) = perf(device_name, "write_bw", "-s", "8", "-n", "50", "-t", "256")
    check_bw(r, "write_bw", 8, 50)
    assert r["cq_mod"] == 1


def test_read_bw(device_name):
    (r,) = perf(device_name, "read_bw", "-s", "1K", "-n", "48", "-t", "16")
    check_bw(r, "read_bw", 1024, 48)


def test_send_bw_two_qps(device_name):
    # Several QPs: completions are told apart by wc.qp_num.
    (r,) = perf(device_name, "send_bw", "-s", "256", "-n", "40", "-q", "2", "-t", "16", "-r", "32")
    check_bw(r, "send_bw", 256, 80)
    assert r["qps"] == 2


@pytest.mark.parametrize("test", ["send_lat", "write_lat"])
def test_latency(device_name, test):
    res = perf(device_name, test, "-s", "8,2K", "-n", "20")
    assert [r["size"] for r in res] == [8, 2048]
    for r in res:
        assert r["test"] == test and r["iters"] == 20
        assert r["lat_us"] > 0
        assert r["rtt_us"] == pytest.approx(2 * r["lat_us"])


def test_bad_arguments(device_name):
    with pytest.raises(PerfError, match="multiple of --post-list"):
        perf(device_name, "write_bw", "-l", "3", "--cq-mod", "4")
    with pytest.raises(PerfError, match="must not exceed --tx-depth"):
        perf(device_name, "write_bw", "--cq-mod", "64", "-t", "32")
