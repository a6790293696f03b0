#!/usr/bin/env python3
"""User-space instructions per 16 KiB block: examples/kv_transfer.py next
to Mooncake's batch_transfer_sync_write, counted by callgrind on the
sending side (node 1), across the two nodes of one boot.

    cc -O2 -shared -fPIC -o build/bench/cgtoggle.so benchmarks/cgtoggle.c
    tools/rxe-vm --nodes 2 --mem 3072 --rw $PWD/build/out -- \\
        .venv/bin/python benchmarks/peers_callgrind.py --out $PWD/build/out

The scattered pattern of benchmarks/peers.py (16 KiB blocks, random
source and destination blocks of a 16,384-block pool on both sides; the
same pairs), --blocks of them per batch.  The receiving side runs
normally on node 0; the sending side runs on node 1 under ``valgrind
--tool=callgrind --instr-atstart=no``, instrumented only around the
timed call (cgtoggle.so's cg_start / cg_stop, as benchmarks/callgrind.py
does):
- kv_transfer: kv_transfer.run_batch (benchmarks/peers_cg_kv.py wraps
  it): posting the batch's SendWRChains and reaping its completions; two
  batches, the second counted (the first warms the interpreter up);
- mooncake: one batch_transfer_sync_write, after a warm-up write that
  makes the connection (benchmarks/peers_engines.py);
- nixl (not by default): get_xfer_descs + initialize_xfer + transfer to
  DONE.
Every thread of the process counts (callgrind serializes them), so an
engine's worker and polling threads are in its figure, and so is any
polling while the (emulated) wire is busy: both senders poll their CQs
without sleeping, kv_transfer in the calling thread, Mooncake in its
worker threads.  callgrind_annotate's inclusive figures of the biggest
functions (and of their own, self, costs) are kept in the JSON to show
where the instructions went.
Writes OUT/peers-callgrind.json and prints instructions per block.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import peers  # noqa: E402
from callgrind import totals  # noqa: E402

VALGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]


def dumps(prefix: str) -> list[str]:
    """callgrind's "loop" dumps under PREFIX, in the order they were made."""
    found = []
    for path in glob.glob(prefix + ".*"):
        with open(path, errors="replace") as f:
            if "Client Request: loop" in f.read(4096):
                found.append(path)
    return sorted(found, key=lambda p: int(p.rsplit(".", 1)[1].split("-")[0]))


def top(path: str, n: int = 12, inclusive: bool = True) -> list[tuple[int, str]]:
    """The N biggest inclusive (or self) costs (instructions, function) of a dump."""
    out = subprocess.run(
        [
            "callgrind_annotate",
            f"--inclusive={'yes' if inclusive else 'no'}",
            "--threshold=99",
            path,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", line)
        if m and ":" in m.group(2) and not m.group(2).startswith("file:"):
            rows.append((int(m.group(1).replace(",", "")), m.group(2)[:120]))
    return rows[:n]


def count(a, pat, engine: str) -> dict:
    work = Path(a.out) / "callgrind-peers"
    work.mkdir(parents=True, exist_ok=True)
    prefix = str(work / f"cg.{engine}.out")
    for old in glob.glob(prefix + "*"):
        os.unlink(old)
    vg = VALGRIND + [f"--callgrind-out-file={prefix}"]
    env = {"CG_TOGGLE": a.toggle, "PYTHONHASHSEED": "0"}
    p = peers.port()
    if engine == "kv_transfer":
        ex = [a.py, str(ROOT / "examples" / "kv_transfer.py"), "-p", str(p)]
        srv = ex + ["-d", a.dev0, "--serve", a.addr0, "--timeout", "900"]
        cli = [*vg, a.py, str(HERE / "peers_cg_kv.py"), "-p", str(p), "-d", a.dev1]
        cli += ["--connect", a.addr0, "--batches", "2", "--scatter", "--timeout", "900"]
        cli += ["--blocks", str(pat["blocks"]), "--block-size", str(pat["block_size"])]
        cli += ["--pool-blocks", str(pat["pool_blocks"])]
        _, out, notes = peers.pair(a, srv, cli, env_c=env, timeout=3000, wait_port=p)
        verified = "verified by the receiver" in out
    else:
        job = Path(a.tmp) / f"job-{p}.json"
        job.write_text(json.dumps({**pat, "pairs": peers.pairs_of(pat)}))
        drv = [a.peer_py, str(HERE / "peers_engines.py"), engine]
        env_s = {}
        if engine == "mooncake":
            env_s["MC_GID_INDEX"] = env["MC_GID_INDEX"] = "1"
            # Its Python binding gives a synchronous batch MC_TRANSFER_TIMEOUT
            # seconds (30 by default), which the sender under callgrind on a
            # busy host overran (2026-12-06: "Sync batch data transfer
            # timeout", the batch not done): the same 900 s as kv_transfer's.
            env["MC_TRANSFER_TIMEOUT"] = "900"
        else:
            for e, dev in ((env_s, a.dev0), (env, a.dev1)):
                e.update(peers.UCX_ENV, UCX_NET_DEVICES=f"{dev}:1", LD_PRELOAD=peers.LIBIBVERBS)
        srv = drv + ["target", "--dev", a.dev0, "--ip", a.addr0, "--ctl", str(p)]
        cli = [*vg, *drv, "initiator", "--dev", a.dev1, "--ip", a.addr1]
        cli += ["--ctl", f"{a.addr0}:{p}", "--job", str(job)]
        _, out, notes = peers.pair(a, srv, cli, env_s=env_s, env_c=env, timeout=3000, wait_port=p)
        verified = peers.verified_in(out)
    found = dumps(prefix)
    if not found:
        raise peers.Failed(f"{engine}: no 'loop' dump: {out[-1500:]}")
    ir = totals(found[-1])
    return {
        "instructions": ir,
        "blocks": pat["blocks"],
        "per_block": ir / pat["blocks"],
        "verified": verified,
        "dump": os.path.basename(found[-1]),
        "top_inclusive": top(found[-1]),
        "top_self": top(found[-1], inclusive=False),
        **({"notes": notes} if notes else {}),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "out"))
    ap.add_argument("--blocks", type=int, default=1024, help="16 KiB blocks per batch")
    ap.add_argument("--engines", default="kv_transfer,mooncake")
    ap.add_argument("--toggle", default=str(ROOT / "build" / "bench" / "cgtoggle.so"))
    ap.add_argument(
        "--peer-python", dest="peer_py", default=str(ROOT / "build/peers-venv/bin/python")
    )
    a = ap.parse_args()
    addrs = os.environ.get("IBVERBS_NODE_ADDRS", "198.18.0.1,198.18.0.2").split(",")
    a.addr0, a.addr1 = addrs[0], addrs[1]
    if os.environ.get("IBVERBS_NODE", "0") != "0":
        return peers.agent(a.addr1)
    a.dev0, a.dev1 = "rxe0", "rxe1"
    a.py, a.tmp = sys.executable, "/tmp"
    peers.VERBOSE[0] = 4000
    pat = {**peers.PATTERNS["16k"], "blocks": a.blocks}
    results = {}
    try:
        for engine in a.engines.split(","):
            try:
                r = count(a, pat, engine)
            except (peers.Failed, subprocess.TimeoutExpired, OSError) as e:
                r = {"error": str(e)}
            results[engine] = r
            shown = (
                f"{r['per_block']:,.0f} instructions per block ({r['blocks']} blocks, "
                f"{'verified' if r['verified'] else 'NOT verified'})"
                if "per_block" in r
                else f"FAILED {r['error'][:2000]}"
            )
            print(f"callgrind {engine}: {shown}", flush=True)
    finally:
        peers.stop_agent(a)
    if "per_block" in results.get("kv_transfer", {}) and "per_block" in results.get("mooncake", {}):
        results["kv_over_mooncake"] = (
            results["kv_transfer"]["per_block"] / results["mooncake"]["per_block"]
        )
        print(f"kv_transfer / mooncake instructions per block: {results['kv_over_mooncake']:.2f}")
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "peers-callgrind.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all("per_block" in r for r in results.values() if isinstance(r, dict)) else 1


if __name__ == "__main__":
    sys.exit(main())
