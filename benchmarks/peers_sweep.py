#!/usr/bin/env python3
"""examples/kv_transfer.py's send queue depth and chain length on the
scattered 16 KiB pattern of benchmarks/peers.py, one boot, node 1 -> node 0.

    tools/rxe-vm --nodes 2 --mem 3072 -- .venv/bin/python benchmarks/peers_sweep.py

Each setting runs kv_transfer once (3 batches, the median kept), the
settings in turn, REPS times, then ib_write_bw on the same messages for
scale.  --chain 1 posts every WR alone, and so signals every WR (the last
WR of a chain is the signaled one).  Prints one line per run.
"""

from __future__ import annotations

import argparse
import os
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402

SETTINGS = [(128, 16), (256, 32), (128, 1), (64, 8)]  # (depth, chain)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    addrs = os.environ.get("IBVERBS_NODE_ADDRS", "198.18.0.1,198.18.0.2").split(",")
    a = types.SimpleNamespace(
        addr0=addrs[0], addr1=addrs[1], dev0="rxe0", dev1="rxe1", py=sys.executable, tmp="/tmp"
    )
    if os.environ.get("IBVERBS_NODE", "0") != "0":
        return peers.agent(a.addr1)
    pat = peers.PATTERNS["16k"]
    try:
        for rep in range(args.reps):
            for depth, chain in SETTINGS:
                extra = ["--depth", str(depth), "--chain", str(chain), "--batches", "3"]
                try:
                    r = peers.run_kv(a, pat, extra)
                    shown = f"{r['gbps']:.4f} GB/s, verified {r['verified']}"
                except (peers.Failed, ValueError, KeyError, OSError) as e:
                    shown = f"FAILED {str(e)[:300]}"
                print(f"rep {rep} depth {depth} chain {chain}: {shown}", flush=True)
            try:
                shown = f"{peers.run_ib_write_bw(a, pat)['gbps']:.4f} GB/s"
            except (peers.Failed, OSError) as e:
                shown = f"FAILED {str(e)[:300]}"
            print(f"rep {rep} ib_write_bw: {shown}", flush=True)
    finally:
        peers.stop_agent(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
