"""Split one test session into N shards that run side by side, by the
durations recorded from a real run.

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
A file's weight is the seconds it took in the guest (setup, call and
teardown of its tests), as recorded in ``shard-durations.json`` beside
this module; a file not listed counts as ``DEFAULT``.  The split only
needs them roughly right.

The durations are recorded, not written by hand: with
``IBVERBS_STORE_DURATIONS=PATH`` a session writes the seconds of each file
that ran to PATH (JSON, ``{file: seconds}``; tests/conftest.py), ``tools/
guest-suite --store-durations PREFIX`` has each node's process write
``PREFIX.K.json``, and ``make shard-durations`` runs the device suite that
way in the guest and merges the parts into shard-durations.json
(``python tests/support/shards.py merge OUT PART...``), to be committed.
Each shard also prints its files' times at the end of the session.
"""

from __future__ import annotations

import json
import os
import sys
from functools import lru_cache
from pathlib import Path

ENV = "IBVERBS_TEST_SHARD"
STORE_ENV = "IBVERBS_STORE_DURATIONS"
DEFAULT = 3.0
DURATIONS = Path(__file__).resolve().with_name("shard-durations.json")


def read_durations(path=DURATIONS) -> dict[str, float]:
    """``{file: seconds}`` from a durations file (the recorded one by
    default); ValueError naming the file for anything else."""
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) for k, v in data.items()
    ):
        raise ValueError(f"{path}: expected a JSON object of file: seconds")
    return {k: float(v) for k, v in data.items()}


@lru_cache(maxsize=None)
def durations() -> dict[str, float]:
    """The recorded seconds per file (shard-durations.json), read once."""
    return read_durations()


def write_durations(path, seconds) -> None:
    """Write ``{file: seconds}`` to PATH (sorted, to 0.1 s), through a
    temporary file so that a reader never sees half of it."""
    data = {f: round(s, 1) for f, s in sorted(seconds.items())}
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def merge(out, parts) -> dict[str, float]:
    """Write to OUT the durations of the files in the PARTS (one per
    process of a run; a file in several counts its longest), and return
    them.  OUT is written afresh: a file that no part ran is dropped."""
    merged: dict[str, float] = {}
    for part in parts:
        for f, s in read_durations(part).items():
            merged[f] = max(s, merged.get(f, 0.0))
    write_durations(out, merged)
    return merged


# Files that go to one shard together: each imports torch (14-20 s in the
# guest), which a process pays once.
TOGETHER = [("tests/device/test_bootstrap_device.py", "tests/gpu/test_gpudirect.py")]


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
    weights = durations() if weights is None else weights
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


class Timings:
    """Wall time per file of what ran (setup, call and teardown of each
    test): printed at the end of a sharded session, written to the
    durations file when asked (tests/conftest.py)."""

    def __init__(self, which=None):
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

    def write(self, path):
        write_durations(path, self.seconds)


def main(argv) -> int:
    """``python tests/support/shards.py merge OUT PART...`` (make
    shard-durations)."""
    if len(argv) < 3 or argv[0] != "merge":
        print("usage: shards.py merge OUT PART...", file=sys.stderr)
        return 2
    merged = merge(argv[1], argv[2:])
    print(f"{argv[1]}: {len(merged)} files, {sum(merged.values()):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
