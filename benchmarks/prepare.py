#!/usr/bin/env python3
"""Build what the benchmarks need, on the host (the guest's / is read-only):

- build/bench/cg_loop          the C loop of benchmarks/cg_loop.c
- build/bench/cgtoggle.so      callgrind start/stop for benchmarks/cg_loop.py
- build/bench/gil-kept/src/ibverbs       the package, extension built as is
- build/bench/gil-released/src/ibverbs   the same with the GIL released
  around ibv_post_send/ibv_post_recv/ibv_poll_cq (HANDLE_BUSY marks
  around it), the variant the GIL measurement compares against.

Both GIL variants are compiled here the same way (same compiler, same
flags), so that they differ in that one thing only.  The released variant
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
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CC = os.environ.get("CC", "cc")

# (file, text as shipped, the GIL-released version)
GIL_PATCHES = [
    ("qp.c", "\trc = ibv_post_send(QPP(self), head, &bad);\n",
     "\tHANDLE_BUSY_ENTER(self);\n\tPy_BEGIN_ALLOW_THREADS\n"
     "\trc = ibv_post_send(QPP(self), head, &bad);\n"
     "\tPy_END_ALLOW_THREADS\n\tHANDLE_BUSY_EXIT(self);\n"),
    ("qp.c", "\trc = ibv_post_recv(QPP(self), head, &bad);\n",
     "\tHANDLE_BUSY_ENTER(self);\n\tPy_BEGIN_ALLOW_THREADS\n"
     "\trc = ibv_post_recv(QPP(self), head, &bad);\n"
     "\tPy_END_ALLOW_THREADS\n\tHANDLE_BUSY_EXIT(self);\n"),
    ("cq.c", "\trc = ibv_poll_cq(cq, n, c->wcs);\n",
     "\tHANDLE_BUSY_ENTER(self);\n\tPy_BEGIN_ALLOW_THREADS\n"
     "\trc = ibv_poll_cq(cq, n, c->wcs);\n"
     "\tPy_END_ALLOW_THREADS\n\tHANDLE_BUSY_EXIT(self);\n"),
]


def run(cmd: list[str]) -> None:
    print("  " + " ".join(cmd))
    subprocess.run(cmd, check=True)


def build_c(out: str) -> None:
    run([CC, "-O2", "-Wall", "-Wextra", "-o", os.path.join(out, "cg_loop"),
         os.path.join(HERE, "cg_loop.c"), "-libverbs"])
    run([CC, "-O2", "-Wall", "-shared", "-fPIC", "-o",
         os.path.join(out, "cgtoggle.so"), os.path.join(HERE, "cgtoggle.c")])


def build_variant(out: str, name: str, release_gil: bool) -> None:
    pkg = os.path.join(out, name, "src", "ibverbs")
    shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "src", "ibverbs"), pkg,
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    csrc = os.path.join(pkg, "_ibverbs")
    if release_gil:
        for fname, old, new in GIL_PATCHES:
            path = os.path.join(csrc, fname)
            with open(path) as f:
                text = f.read()
            if text.count(old) != 1:
                sys.exit(f"prepare: cannot patch {fname}: {old.strip()!r} "
                         f"found {text.count(old)} times")
            with open(path, "w") as f:
                f.write(text.replace(old, new))
    inc = sysconfig.get_paths()["include"]
    run([CC, "-shared", "-fPIC", "-O3", "-g", "-fwrapv", "-DNDEBUG", "-std=gnu11",
         "-Wall", "-Wno-unused-parameter", "-Wno-missing-field-initializers",
         "-fvisibility=hidden", "-DPy_LIMITED_API=0x03090000", f"-I{inc}",
         "-o", os.path.join(pkg, "_ibverbs.abi3.so"),
         *sorted(glob.glob(os.path.join(csrc, "*.c")))])


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
