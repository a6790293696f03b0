#!/usr/bin/env python3
"""Build what the benchmarks need, on the host (the guest's / is read-only):

- build/bench/cg_loop          the C loop of benchmarks/cg_loop.c
- build/bench/cg_batch         the C batch of benchmarks/cg_batch.c
- build/bench/cgtoggle.so      callgrind start/stop for benchmarks/cg_loop.py
- build/bench/gil-kept/src/ibverbs       the package, extension built as is
- build/bench/gil-released/src/ibverbs   the same with the GIL released
  around ibv_post_send/ibv_post_recv/ibv_poll_cq (HANDLE_BUSY marks
  around it), the variant the GIL measurement compares against.

Both GIL variants are compiled here the same way, by setup.py build_ext
(the flags named there), so that they differ in one define only:
-DIBVERBS_BENCH_RELEASE_GIL, which selects the GIL-released code paths
(wr/post.c, cq/cq.c).  The released variant
exists only for this measurement: the shipped code keeps the GIL on the
data path (BENCHMARKS.md, "GIL").

    python3 benchmarks/prepare.py [--out build/bench]
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CC = os.environ.get("CC", "cc")

# The interpreter that runs setup.py: the project's venv (make build made
# it; it has the setuptools pyproject.toml needs), else this one.
VENV_PY = os.path.join(ROOT, ".venv", "bin", "python")
SETUP_PY = os.environ.get("IBVERBS_PYTHON") or (
    VENV_PY if os.path.exists(VENV_PY) else sys.executable
)


def run(cmd: list[str]) -> None:
    print("  " + " ".join(cmd))
    subprocess.run(cmd, check=True)


def build_c(out: str) -> None:
    run(
        [
            CC,
            "-O2",
            "-Wall",
            "-Wextra",
            "-o",
            os.path.join(out, "cg_loop"),
            os.path.join(HERE, "cg_loop.c"),
            "-libverbs",
        ]
    )
    run(
        [
            CC,
            "-O2",
            "-Wall",
            "-Wextra",
            "-o",
            os.path.join(out, "cg_batch"),
            os.path.join(HERE, "cg_batch.c"),
            "-libverbs",
        ]
    )
    run(
        [
            CC,
            "-O2",
            "-Wall",
            "-shared",
            "-fPIC",
            "-o",
            os.path.join(out, "cgtoggle.so"),
            os.path.join(HERE, "cgtoggle.c"),
        ]
    )


def build_variant(out: str, name: str, release_gil: bool, python: str = SETUP_PY) -> None:
    """A private copy of the package with the extension built by setup.py
    (its flags, the interpreter's optimisation) run by python, the released
    variant with -DIBVERBS_BENCH_RELEASE_GIL added.  (benchmarks/threads.py
    builds the free-threaded variant with a free-threaded python.)"""
    pkg = os.path.join(out, name, "src", "ibverbs")
    tmp = os.path.join(out, name, "build")
    shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    shutil.copytree(
        os.path.join(ROOT, "src", "ibverbs"),
        pkg,
        ignore=shutil.ignore_patterns("*.so", "__pycache__"),
    )
    env = dict(
        os.environ, IBVERBS_EXTRA_CFLAGS="-DIBVERBS_BENCH_RELEASE_GIL" if release_gil else ""
    )
    print(
        "  "
        + ("IBVERBS_EXTRA_CFLAGS=-DIBVERBS_BENCH_RELEASE_GIL " if release_gil else "")
        + f"{python} setup.py build_ext -b {tmp}/lib -t {tmp}/tmp"
    )
    subprocess.run(
        [
            python,
            "setup.py",
            "-q",
            "build_ext",
            "-b",
            os.path.join(tmp, "lib"),
            "-t",
            os.path.join(tmp, "tmp"),
        ],
        check=True,
        cwd=ROOT,
        env=env,
    )
    built = glob.glob(os.path.join(tmp, "lib", "ibverbs", "_ibverbs*.so"))
    if len(built) != 1:
        sys.exit(f"prepare: expected one built extension, found {built}")
    shutil.copy(built[0], pkg)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.join(ROOT, "build", "bench"))
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    print("prepare: C loop, callgrind toggle, GIL variants ->", args.out)
    build_c(args.out)
    build_variant(args.out, "gil-kept", False)
    build_variant(args.out, "gil-released", True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
