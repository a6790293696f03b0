"""Split one test session into N shards that run side by side.

``make test-guest`` boots one guest with two nodes (``tools/rxe-vm --nodes
2``) and runs the device suite as two pytest processes, one per node, each
on its own rxe device, netdev and address: the emulated guest has two CPUs
and one pytest process keeps about one of them busy.  Each process is
given ``IBVERBS_TEST_SHARD=K/N`` (K = 0 .. N-1) and keeps the test files of
shard K only (tests/conftest.py calls :func:`select`).

A whole file goes to one shard (its module fixtures, its order and the
kernel objects it checks stay together), and the split is fixed: the
files, heaviest first, each to the shard with the least weight so far
(ties to the lower shard); the files of a ``TOGETHER`` group go as one.
The weights are the seconds each file took in the guest (``WEIGHTS``; a
file not listed counts as ``DEFAULT``); the split only needs them roughly
right.  Each shard prints its files' times
at the end of the session, which is what to copy here when they drift.
"""

from __future__ import annotations

import os

ENV = "IBVERBS_TEST_SHARD"
DEFAULT = 3.0

# Seconds per file in the guest (rxe0/rxe1 of one --nodes 2 boot, quiet
# 2-core host, 2026-12-01), as the shard report prints them.
WEIGHTS = {
    "tests/device/test_guides_device.py": 50.0,
    "tests/device/reliability/test_rel_leaks.py": 21.3,
    "tests/device/test_bootstrap_rxe.py": 20.0,
    "tests/device/reliability/test_rel_races.py": 17.0,
    "tests/gpu/test_gpudirect.py": 14.5,
    "tests/device/test_cm.py": 11.9,
    "tests/device/test_examples.py": 11.5,
    "tests/device/reliability/test_rel_fork.py": 9.8,
    "tests/device/test_context.py": 9.0,
    "tests/device/reliability/test_rel_state_machine.py": 8.8,
    "tests/device/test_portability_rxe.py": 7.8,
    "tests/device/test_mr.py": 7.7,
    "tests/device/test_cq.py": 7.4,
    "tests/device/reliability/test_rel_faults.py": 7.0,
    "tests/device/test_rc.py": 6.6,
    "tests/device/test_aio.py": 6.1,
    "tests/device/test_cuda_rxe.py": 5.9,
    "tests/device/test_aio_cm.py": 5.3,
    "tests/device/test_compat_rxe.py": 4.8,
    "tests/device/test_qp_ex.py": 4.7,
    "tests/device/test_mw.py": 4.7,
    "tests/device/test_qp.py": 4.4,
    "tests/device/test_helpers.py": 4.2,
    "tests/device/test_errors.py": 3.7,
    "tests/device/test_perf.py": 3.4,
    "tests/device/test_wrchain.py": 2.9,
    "tests/device/reliability/test_rel_misuse.py": 2.4,
    "tests/device/test_srq.py": 2.0,
    "tests/device/reliability/test_rel_security.py": 1.8,
    "tests/device/test_uc_ud.py": 1.6,
    "tests/device/test_poll_count.py": 1.6,
    "tests/device/test_cq_ex.py": 1.5,
    "tests/device/test_events.py": 1.3,
    "tests/device/test_dm_flow_odp.py": 0.8,
    "tests/device/test_atomic_write.py": 0.1,
}

# Files that go to one shard together: each imports torch (14-20 s in the
# guest), which a process pays once.
TOGETHER = [("tests/device/test_bootstrap_rxe.py", "tests/gpu/test_gpudirect.py")]


def parse(value: str | None) -> tuple[int, int] | None:
    """``"K/N"`` -> (K, N); None or "" -> None.  ValueError for anything
    else, naming the variable."""
    if not value:
        return None
    k, sep, n = value.partition("/")
    try:
        if not sep:
            raise ValueError
        shard, count = int(k), int(n)
    except ValueError:
        raise ValueError(f"{ENV}={value!r}: expected K/N, e.g. 0/2") from None
    if not 0 <= shard < count:
        raise ValueError(f"{ENV}={value!r}: K must be 0 .. N-1")
    return shard, count


def assign(files, count: int, weights=None, together=None) -> dict[str, int]:
    """The shard of each file: the heaviest first (a TOGETHER group as one,
    its weights summed), each to the shard with the least weight so far."""
    weights = WEIGHTS if weights is None else weights
    together = TOGETHER if together is None else together
    files = set(files)
    units, grouped = [], set()
    for group in together:
        present = tuple(sorted(f for f in group if f in files))
        if present:
            units.append(present)
            grouped.update(present)
    units += [(f,) for f in files - grouped]
    load = [0.0] * count
    out = {}
    for unit in sorted(units, key=lambda u: (-sum(weights.get(f, DEFAULT) for f in u), u)):
        k = min(range(count), key=lambda i: (load[i], i))
        for f in unit:
            out[f] = k
            load[k] += weights.get(f, DEFAULT)
    return out


def file_of(item, rootdir) -> str:
    """The item's file, relative to the rootdir, with / separators."""
    return os.path.relpath(str(item.path), str(rootdir)).replace(os.sep, "/")


def select(config, items) -> tuple[int, int] | None:
    """Keep the items of this process's shard (deselecting the others, so
    that pytest's summary says so); returns (K, N), or None unsharded."""
    try:
        which = parse(os.environ.get(ENV))
    except ValueError as e:
        import pytest

        raise pytest.UsageError(str(e)) from None
    if which is None:
        return None
    shard, count = which
    where = [(i, file_of(i, config.rootpath)) for i in items]
    of = assign({f for _, f in where}, count)
    keep = [i for i, f in where if of[f] == shard]
    drop = [i for i, f in where if of[f] != shard]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
    return which


class Report:
    """Wall time per file of what ran, printed at the end of the session."""

    def __init__(self, which):
        self.which = which
        self.seconds: dict[str, float] = {}

    def add(self, report):
        f = report.nodeid.split("::", 1)[0]
        self.seconds[f] = self.seconds.get(f, 0.0) + report.duration

    def lines(self):
        k, n = self.which
        total = sum(self.seconds.values())
        yield f"shard {k}/{n}: {len(self.seconds)} files, {total:.0f} s of tests"
        for f, s in sorted(self.seconds.items(), key=lambda x: -x[1]):
            yield f"    {s:6.1f} s  {f}"
