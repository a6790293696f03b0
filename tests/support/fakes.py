"""The test doubles: ``load_fake_module`` loads a module of tests/fakes
(the builders of the test-only C libraries and their controllers), and a
fake PD for the host tests of ``reg_tensor`` and ``cuda.register_tensor``
records the registrations it is asked for and returns fake MRs; each verb
can be told to fail.  No device, no ibverbs import."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path

FAKES = Path(__file__).resolve().parents[1] / "fakes"


_load_lock = threading.RLock()  # a fake module may load another


def load_fake_module(name: str):
    """tests/fakes/<name>.py as a module (loaded by path: tests/fakes is no
    package), once per process.  Under a lock: the free-threaded parallel
    run calls it from several threads, and a module is in sys.modules
    (its dataclasses look it up) before it has finished executing."""
    modname = f"_ibverbs_fakes_{name}"
    with _load_lock:
        if modname not in sys.modules:
            spec = importlib.util.spec_from_file_location(modname, FAKES / f"{name}.py")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[modname] = mod
            try:
                spec.loader.exec_module(mod)
            except BaseException:
                del sys.modules[modname]
                raise
        return sys.modules[modname]


class FakeMR:
    """What a registration returns: addr, length, lkey, rkey; close() sets
    closed, or raises close_error when one is set."""

    def __init__(self, addr, length, lkey, rkey):
        self.addr, self.length, self.lkey, self.rkey = addr, length, lkey, rkey
        self.closed = False
        self.close_error = None

    def close(self):
        if self.close_error is not None:
            raise self.close_error
        self.closed = True


class FakePD:
    """Records each registration in ``calls`` as (verb, {argument: value}),
    in order; raises ``dmabuf_error`` from reg_dmabuf_mr and
    ``reg_mr_error`` from reg_mr when they are set."""

    def __init__(self, dmabuf_error=None, reg_mr_error=None):
        self.dmabuf_error = dmabuf_error
        self.reg_mr_error = reg_mr_error
        self.calls = []

    def reg_dmabuf_mr(self, offset, length, iova, fd, access, *, owner=None):
        st = os.fstat(fd)  # the fd is open during the call
        self.calls.append(
            (
                "reg_dmabuf_mr",
                {
                    "offset": offset,
                    "length": length,
                    "iova": iova,
                    "fd": fd,
                    "access": access,
                    "fd_size": st.st_size,
                    "owner": owner,
                },
            )
        )
        if self.dmabuf_error is not None:
            raise self.dmabuf_error
        return FakeMR(offset, length, 0x1111, 0x2222)

    def reg_mr(self, addr, length, access, *, owner=None):
        self.calls.append(
            ("reg_mr", {"addr": addr, "length": length, "access": access, "owner": owner})
        )
        if self.reg_mr_error is not None:
            raise self.reg_mr_error
        return FakeMR(addr, length, 0x3333, 0x4444)

    def names(self):
        """The verbs called, in order."""
        return [name for name, _ in self.calls]

    def registered(self):
        """The reg_mr calls as (addr, length, access, owner) tuples."""
        return [
            (a["addr"], a["length"], a["access"], a["owner"])
            for v, a in self.calls
            if v == "reg_mr"
        ]
