"""The examples run, and examples/rc_pingpong.py interoperates with
rdma-core's C ibv_rc_pingpong in both directions (loopback on one device)."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import GID_INDEX as _GID_INDEX
from support import free_port
from support.timeouts import scaled

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GID_INDEX = str(_GID_INDEX)
ITERS = "50"
TIMEOUT = scaled(240)  # the Soft-RoCE guest is emulated: be generous


def py(script, *args):
    return [sys.executable, str(EXAMPLES / script), *map(str, args)]


def c_pingpong():
    tool = shutil.which("ibv_rc_pingpong")
    if tool is None:
        pytest.skip("ibv_rc_pingpong (rdma-core's ibverbs-utils) is not installed")
    return tool


def listening(port):
    """True when some socket listens on TCP port (IPv4 or IPv6)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state = fields[1], fields[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                return True
    return False


def start_server(cmd, port):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while not listening(port):
        if proc.poll() is not None:
            out = proc.communicate()[0]
            pytest.fail(f"server exited with {proc.returncode} before listening:\n{out}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"server did not listen on {port}:\n{proc.communicate()[0]}")
        time.sleep(0.05)
    return proc


def run_pair(server_cmd, client_cmd, port):
    server = start_server(server_cmd, port)
    try:
        client = subprocess.run(
            client_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT
        )
        server_out = server.communicate(timeout=TIMEOUT)[0]
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    report = f"server {server_cmd}:\n{server_out}\nclient {client_cmd}:\n{client.stdout}"
    assert server.returncode == 0, report
    assert client.returncode == 0, report
    for out in (server_out, client.stdout):
        assert f"{ITERS} iters in" in out, report
        assert "remote address" in out, report
    return server_out, client.stdout


def pingpong_args(device_name, port):
    return ["-d", device_name, "-g", GID_INDEX, "-n", ITERS, "-p", str(port)]


def remote_qpn(out):
    line = next(x for x in out.splitlines() if "remote address" in x)
    return int(line.split("QPN ")[1].split(",")[0], 16)


def local_qpn(out):
    line = next(x for x in out.splitlines() if "local address" in x)
    return int(line.split("QPN ")[1].split(",")[0], 16)


def test_python_client_with_c_server(device_name):
    tool = c_pingpong()
    port = free_port("")
    args = pingpong_args(device_name, port)
    server_out, client_out = run_pair([tool, *args], py("rc_pingpong.py", *args, "localhost"), port)
    # each side learned the other's QP number from the exchange
    assert remote_qpn(client_out) == local_qpn(server_out)
    assert remote_qpn(server_out) == local_qpn(client_out)


def test_python_server_with_c_client(device_name):
    tool = c_pingpong()
    port = free_port("")
    args = pingpong_args(device_name, port)
    server_out, client_out = run_pair(py("rc_pingpong.py", *args), [tool, *args, "localhost"], port)
    assert remote_qpn(client_out) == local_qpn(server_out)
    assert remote_qpn(server_out) == local_qpn(client_out)


def test_python_both_ends_with_other_sizes(device_name):
    port = free_port("")
    args = pingpong_args(device_name, port) + ["-s", "100", "-r", "4", "-m", "512"]
    run_pair(py("rc_pingpong.py", *args), py("rc_pingpong.py", *args, "localhost"), port)


def test_pingpong_client_without_server_fails_cleanly(device_name):
    port = free_port("")
    res = subprocess.run(
        py(
            "rc_pingpong.py",
            *pingpong_args(device_name, port),
            "--connect-timeout",
            "0.5",
            "localhost",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )
    assert res.returncode == 1
    assert "couldn't connect" in res.stdout


def test_quickstart(device_name):
    res = subprocess.run(
        py("quickstart.py", device_name, GID_INDEX),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )
    assert res.returncode == 0, res.stdout
    assert "verified: all 4096 bytes arrived" in res.stdout
