"""What the tests share: the device, port and GID index they use, a free
TCP port and an rdma_cm port, and the helpers that were copied between
directories, each defined once (rdma.py: an RC pair, buffers, work
requests, polling, async events, the link; process.py: resource counters
and the subprocess case runner; fixtures.py: ctx, pd, cq, the RC pair,
the fake libcuda, ..., loaded for every test by tests/conftest.py;
load_path: a script or example loaded as a module by its path;
fakes.py: the fake PD of the host tests; shards.py: the guest's split of
the device suite, by shard-durations.json).

pytest puts tests/ on sys.path (pyproject.toml, ``pythonpath``), so a
test imports ``from support import PORT``; a script run in a subprocess
inserts ``TESTS`` itself.  Nothing here imports conftest.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# tools/rxe-vm sets these in the guest (rxe0, port 1, the IPv4 GID's index).
DEVICE = os.environ.get("IBVERBS_TEST_DEVICE")
PORT = int(os.environ.get("IBVERBS_TEST_PORT", "1"))


def _gid_index() -> int:
    """$IBVERBS_TEST_GID_INDEX (the rig finds it in sysfs), else the RoCE v2
    IPv4 GID that Context.find_gid picks on $IBVERBS_TEST_DEVICE, else 1."""
    if os.environ.get("IBVERBS_TEST_GID_INDEX"):
        return int(os.environ["IBVERBS_TEST_GID_INDEX"])
    if DEVICE:
        try:
            import ibverbs as ib

            with ib.Context(DEVICE) as ctx:
                return ctx.find_gid(PORT).index
        except (ImportError, OSError, ValueError):
            pass
    return 1


GID_INDEX = _gid_index()
# The netdev under the device (the link-flap and device-removal tests).
NETDEV = os.environ.get("IBVERBS_TEST_NETDEV", "veth0")


def device_name():
    """The device the device tests use ($IBVERBS_TEST_DEVICE, else the
    first one listed), or None."""
    if DEVICE:
        return DEVICE
    import ibverbs as ib

    devs = ib.get_device_list()
    return devs[0].name if devs else None


_next_cm_port = [7471 + (os.getpid() % 400) * 10]


def cm_port() -> int:
    """An rdma_cm port no earlier test of this process used (rdma_cm ports
    are not visible to the socket API, so no bind() probe as free_port
    does); each process starts from its own range."""
    _next_cm_port[0] += 1
    return _next_cm_port[0]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on now at HOST ("" for every
    address), for a server the test starts next."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def load_path(name: str, path, *, register: bool = False):
    """The Python file PATH executed as a module named NAME (a script, an
    example or a docs extension that is no package).  With REGISTER it is
    put in sys.modules first: dataclasses look their module up there."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class PassCount:
    """How many tests marked MARKER passed this session: the conftests'
    check that a rig run did not skip everything."""

    def __init__(self, marker: str):
        self.marker = marker
        self.passed = 0

    def add(self, report) -> None:
        """pytest_runtest_logreport's report, counted if it is a passed call."""
        if report.when == "call" and report.passed and self.marker in report.keywords:
            self.passed += 1
