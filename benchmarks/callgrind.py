#!/usr/bin/env python3
"""Instructions per post_send + poll, counted by callgrind: the binding's
own overhead, apart from the emulator (callgrind counts the guest's
user-space instructions; the kernel's share, rxe, is not counted).

    tools/rxe-vm --rw build/out -- python3 benchmarks/callgrind.py --out build/out
    (needs python3 benchmarks/prepare.py on the host first)

Each program posts one signaled 8-byte RDMA WRITE and polls until its
completion, N times (benchmarks/cg_loop.py, benchmarks/cg_loop.c), under
``valgrind --tool=callgrind --instr-atstart=no``: only the measured loop
is instrumented (client requests around it), after a warm-up run.
Reported: instructions per iteration, and for this binding the inclusive
cost of its two C functions per call.

- c:            the loop in C on libibverbs: the provider's own cost
- ours:         this package (src/, as built by make build); with --list N
                the N WRs are a SendWRChain (linked once, posted as is)
- ours-plain-list: with --list N only: the same N WRs as a Python list,
                linked, checked and unlinked by every post_send
- ours-gil-kept / ours-gil-released: the package compiled twice by
                benchmarks/prepare.py, the second releasing the GIL around
                ibv_post_send / ibv_poll_cq (the GIL measurement)
- ours-wrex:    this package's extended QP: the same WRs built with
                wr_rdma_write + wr_set_sge in one wr_start/wr_complete batch
- pyverbs:      rdma-core's pyverbs
- baseline:     the same Python loop calling two trivial builtins: the
                interpreter's share of a loop iteration with two calls
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SYS_PY = "/usr/bin/python3"


def programs(bench: str, dev: str, gid: int, n: int) -> dict:
    loop = os.path.join(HERE, "cg_loop.py")
    src = os.path.join(ROOT, "src")
    py = [SYS_PY, loop]
    return {
        "c": ([os.path.join(bench, "cg_loop"), dev, str(gid), str(n)], None),
        "ours": (py + ["ours", dev, str(gid), str(n)], src),
        "ours-plain-list": (py + ["ours", dev, str(gid), str(n)], src),
        "ours-gil-kept": (
            py + ["ours", dev, str(gid), str(n)],
            os.path.join(bench, "gil-kept", "src"),
        ),
        "ours-gil-released": (
            py + ["ours", dev, str(gid), str(n)],
            os.path.join(bench, "gil-released", "src"),
        ),
        "pyverbs": (py + ["pyverbs", dev, str(gid), str(n)], None),
        "ours-wrex": (py + ["ours-wrex", dev, str(gid), str(n)], src),
        "baseline": (py + ["baseline", dev, str(gid), str(n)], None),
    }


def loop_dump(prefix: str) -> str:
    for path in sorted(glob.glob(prefix + "*")):
        with open(path, errors="replace") as f:
            head = f.read(4096)
        if "Client Request: loop" in head:
            return path
    raise RuntimeError(f"no 'loop' dump among {prefix}*")


def totals(path: str) -> int:
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


def inclusive(path: str, names: list[str]) -> dict:
    """Inclusive instruction counts of the named functions (callgrind_annotate)."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s.*?[\s:]([A-Za-z_]\w*)\s*(\[|$)", line)
        if m and m.group(2) in names and m.group(2) not in res:
            res[m.group(2)] = int(m.group(1).replace(",", ""))
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-d", "--device", default=os.environ.get("IBVERBS_TEST_DEVICE", "rxe0"))
    p.add_argument("-x", "--gid-index", type=int, default=1)
    p.add_argument("-n", "--iters", type=int, default=2000)
    p.add_argument(
        "--bench",
        default=os.path.join(ROOT, "build", "bench"),
        help="where benchmarks/prepare.py built its files",
    )
    p.add_argument("--out", default=os.path.join(ROOT, "build", "out"))
    p.add_argument("--only", help="comma-separated subset of the programs")
    p.add_argument(
        "--list",
        type=int,
        default=1,
        help="WRs per post_send (a chain, the last signaled; default 1)",
    )
    args = p.parse_args(argv)
    toggle = os.path.join(args.bench, "cgtoggle.so")
    if not os.path.exists(toggle):
        print(
            f"callgrind: {toggle} missing: run python3 benchmarks/prepare.py on the host first",
            file=sys.stderr,
        )
        return 2
    work = os.path.join(args.out, "callgrind")
    os.makedirs(work, exist_ok=True)
    progs = programs(args.bench, args.device, args.gid_index, args.iters)
    if args.list == 1:
        del progs["ours-plain-list"]  # the same as "ours"
    if args.only:
        progs = {k: v for k, v in progs.items() if k in args.only.split(",")}
    suffix = "" if args.list == 1 else f"-list{args.list}"
    results = {}
    for name, (cmd, pypath) in progs.items():
        prefix = os.path.join(work, f"cg.{name}{suffix}.out")
        for old in glob.glob(prefix + "*"):
            os.unlink(old)
        env = dict(
            os.environ,
            PYTHONHASHSEED="0",
            CG_TOGGLE=toggle,
            CG_LIST=str(args.list),
            CG_PLAIN="1" if name == "ours-plain-list" else "0",
        )
        if pypath:
            env["PYTHONPATH"] = pypath
        t0 = time.monotonic()
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={prefix}",
                *cmd,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        if proc.returncode != 0:
            print(f"{name}: failed ({proc.returncode}):\n{proc.stdout[-2000:]}")
            results[name] = {"error": proc.stdout[-2000:]}
            continue
        dump = loop_dump(prefix)
        ir = totals(dump)
        m = re.search(r"(\d+) empty polls", proc.stdout)
        r = {
            "instructions": ir,
            "iters": args.iters,
            "per_iter": ir / args.iters,
            "empty_polls": int(m.group(1)) if m else None,
            "seconds": round(time.monotonic() - t0, 1),
        }
        if name.startswith("ours"):
            inc = inclusive(dump, ["qp_post_send", "qpex_wr_complete", "cq_poll_count"])
            r["per_call"] = {k: v / args.iters for k, v in inc.items()}
        results[name] = r
        print(
            f"{name:18} {r['per_iter']:9.0f} instructions/iteration "
            f"(empty polls {r['empty_polls']}, {r['seconds']} s)"
            + (
                f"  {', '.join(f'{k} {v:.0f}' for k, v in r.get('per_call', {}).items())}"
                if r.get("per_call")
                else ""
            ),
            flush=True,
        )
    ok = {k: v["per_iter"] for k, v in results.items() if "per_iter" in v}
    if {"c", "ours", "baseline"} <= ok.keys():
        own = ok["ours"] - ok["c"] - ok["baseline"]
        print(
            f"\nthis binding's own overhead per post_send + poll_count"
            f"{'' if args.list == 1 else f' (lists of {args.list})'}: "
            f"ours - c - baseline = {own:.0f} instructions"
        )
        results["derived"] = {"ours_minus_c": ok["ours"] - ok["c"], "binding_own": own}
        if "pyverbs" in ok:
            results["derived"]["pyverbs_minus_c"] = ok["pyverbs"] - ok["c"]
            results["derived"]["pyverbs_over_ours"] = ok["pyverbs"] / ok["ours"]
    name = f"callgrind{suffix}.json"
    with open(os.path.join(args.out, name), "w") as f:
        json.dump(results, f, indent=1)
    return 0 if all("per_iter" in v for k, v in results.items() if k != "derived") else 1


if __name__ == "__main__":
    sys.exit(main())
