#!/usr/bin/env python3
"""Batches of 16 signaled-last 8-byte RDMA WRITEs: the extended QP's wr_*
calls (one wr_start/wr_complete batch) against a SendWRChain (one
post_send), timed in one process, interleaved, on rxe loopback.

    tools/rxe-vm -- .venv/bin/python benchmarks/wr_ex.py [--iters N] [--reps R]

Each repetition runs N batches of each kind (post, then poll until the
batch's completion) and reports microseconds per WR; the table has the
best and the median repetition of each and their ratios.  The setups are
benchmarks/cg_loop.py's ("ours" with CG_LIST=16, "ours-wrex").
callgrind's instructions per iteration of the same loops:

    tools/rxe-vm --rw $PWD/build/out -- /usr/bin/python3 benchmarks/callgrind.py \\
        --list 16 --only ours,ours-wrex --iters 500 --out build/out
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("CG_LIST", "16")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cg_loop  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-d", "--device", default=os.environ.get("IBVERBS_TEST_DEVICE", "rxe0"))
    p.add_argument("-x", "--gid-index", type=int, default=1)
    p.add_argument("--iters", type=int, default=300, help="batches per repetition")
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    n_wr = cg_loop.LIST
    setups = {
        "SendWRChain": cg_loop.ours(args.device, args.gid_index),
        "wr_* batch": cg_loop.ours_wrex(args.device, args.gid_index),
    }
    times: dict[str, list[float]] = {k: [] for k in setups}
    for post, wr, poll, _, _ in setups.values():
        cg_loop.loop_ours(post, wr, poll, 32)  # warm-up
    for rep in range(args.reps):
        order = list(setups) if rep % 2 == 0 else list(reversed(setups))
        for name in order:
            post, wr, poll, _, _ = setups[name]
            t0 = time.perf_counter()
            cg_loop.loop_ours(post, wr, poll, args.iters)
            times[name].append((time.perf_counter() - t0) / (args.iters * n_wr) * 1e6)
    print(f"{n_wr} WRs per batch, {args.iters} batches x {args.reps} repetitions")
    print(f"{'':14} {'best us/WR':>11} {'median us/WR':>13}")
    for name, ts in times.items():
        print(f"{name:14} {min(ts):11.2f} {statistics.median(ts):13.2f}")
    a, b = times["wr_* batch"], times["SendWRChain"]
    print(
        f"wr_* / SendWRChain: best {min(a) / min(b):.2f}, "
        f"median {statistics.median(a) / statistics.median(b):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
