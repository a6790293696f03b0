#!/usr/bin/env python3
"""Side by side across the two nodes of tools/rxe-vm --nodes 2: rdma-core's
ib_write_bw (C), `python -m ibverbs perf write_bw`, examples/kv_transfer.py,
Mooncake's transfer engine and NIXL, on the same workloads, interleaved,
in one boot.

    make bench-peers      # makes build/peers-venv, boots, runs this, writes build/out
    tools/rxe-vm --nodes 2 --mem 3072 --rw build/out -- \\
        .venv/bin/python benchmarks/peers.py --out build/out

Patterns (each written node 1 -> node 0, rxe1 -> rxe0):
  1m      64 x 1 MiB contiguous blocks
  16k     4,096 x 16 KiB blocks scattered over a 16,384-block (256 MiB)
          pool on both sides (random source and destination blocks, the
          KV-cache page pattern)
ib_write_bw and perf write_bw move the same number of messages of the
same size, contiguous (they know no scatter) and unverified;
kv_transfer, Mooncake (batch_transfer_sync_write) and NIXL (one
initialize_xfer + transfer) write the same pairs and the receiver checks
every block's CRC32.  Two entries per engine where the set-up of a batch
is apart from its transfer: "nixl" times transfer() to DONE, "nixl+handle"
also get_xfer_descs and initialize_xfer; "kv_transfer+handle" also
kv_transfer.prepare.  "kv_transfer-contig" (16k only, a diagnostic) moves
the same 4,096 x 16 KiB unmerged but in order, not scattered.

The command runs once per node.  Node 1's instance serves node 0's
requests (benchmarks/peers.py's "agent": run this command line with these
extra environment variables, answer its exit status and output); node 0's
instance drives the benchmark: for every run it starts the receiving side
itself (rxe0) and has node 1 start the sending side (rxe1), so each side
is a child of its own node's process, with its node's environment.
Each round runs every engine once per pattern, the engines in a rotating
order.  Ratios against ib_write_bw's median in the same boot are the
figure: absolute numbers mean nothing in the emulator.  A peer that is
not installed or fails is reported as such (its error kept), not dropped.
A process that crashes after its transfer was verified (NIXL's processes
die of SIGSEGV at interpreter exit, rc 139 or -11) counts as verified
with a note, kept in the results ("exit_crashes"); a crash before the
verification is a failure.
Writes OUT/peers.json ({pattern: {engine: {median_gbps, min_gbps,
max_gbps, n, verified}}}), peers-samples.json, peers.md and peers.svg.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "examples"))
import kv_transfer  # noqa: E402  (the example's pair planner)

PATTERNS = {
    "1m": {"blocks": 64, "block_size": 1 << 20, "pool_blocks": 64, "scatter": False},
    "16k": {"blocks": 4096, "block_size": 16 << 10, "pool_blocks": 16384, "scatter": True},
}
ENGINES = ["ib_write_bw", "ibverbs-perf", "kv_transfer", "mooncake", "nixl", "kv_transfer-contig"]
UCX_ENV = {"UCX_TLS": "rc_verbs,ud_verbs", "UCX_IB_GID_INDEX": "1"}
LIBIBVERBS = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"
_port = [18900]
VERBOSE = [1500]  # characters of a failed run's output kept


def port():
    _port[0] += 1
    return _port[0]


class Failed(Exception):
    pass


AGENT_PORT = 18899
CRASH = (139, -11)  # SIGSEGV: through a shell, from Popen


def agent(addr, port=AGENT_PORT, idle=3600.0):
    """Node 1: run node 0's requests ({argv, env, timeout}), one per TCP
    connection, answering {rc, out}; end on {"quit": true} or when idle."""
    with socket.create_server((addr, port)) as srv:
        srv.settimeout(idle)
        while True:
            try:
                conn = srv.accept()[0]
            except TimeoutError:
                print(f"peers agent: idle for {idle:.0f} s, leaving", flush=True)
                return 0
            with conn:
                req = kv_transfer.recv_msg(conn)
                if req.get("quit"):
                    srv.close()  # before the answer: the next agent may take the port
                    kv_transfer.send_msg(conn, {"bye": True})
                    return 0
                try:
                    p = subprocess.run(
                        req["argv"],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                        env={**os.environ, **req.get("env", {})},
                        timeout=req.get("timeout", 600),
                    )
                    reply = {"rc": p.returncode, "out": p.stdout}
                except subprocess.TimeoutExpired as e:
                    out = e.stdout.decode(errors="replace") if e.stdout else ""
                    reply = {"rc": None, "out": out + f"\n(timed out after {e.timeout} s)"}
                except OSError as e:
                    reply = {"rc": 127, "out": str(e)}
                kv_transfer.send_msg(conn, reply)


def on_node1(a, argv, env=None, timeout=600):
    """Run ARGV as a child of node 1's process; returns (rc, output)."""
    with kv_transfer.connect_retrying(a.addr1, AGENT_PORT, 120) as sock:
        sock.settimeout(timeout + 60)
        kv_transfer.send_msg(sock, {"argv": argv, "env": env or {}, "timeout": timeout})
        reply = kv_transfer.recv_msg(sock)
    if reply["rc"] is None:
        raise Failed(f"node 1's side timed out: {reply['out'][-VERBOSE[0] :]}")
    return reply["rc"], reply["out"]


def stop_agent(a):
    """Tell node 1's agent to leave (it may be gone already)."""
    with contextlib.suppress(OSError, SystemExit):
        with kv_transfer.connect_retrying(a.addr1, AGENT_PORT, 5) as sock:
            sock.settimeout(30)
            kv_transfer.send_msg(sock, {"quit": True})
            kv_transfer.recv_msg(sock)


def pair(a, server, client, *, env_s=None, env_c=None, timeout=600, wait_port=None):
    """Run SERVER here (node 0), then CLIENT on node 1; both must end well.
    Returns (server out, client out, notes).  A crash (SIGSEGV) counts as
    success, with a note, only for a process whose output already holds
    its RESULT or "verified" line."""
    s = subprocess.Popen(
        server,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env_s or {})},
    )
    try:
        if wait_port:
            kv_wait_listening(wait_port, s)
        c_rc, c_out = on_node1(a, client, env_c, timeout)
        s_out, _ = s.communicate(timeout=120)
    finally:
        if s.poll() is None:
            s.kill()
            s.communicate()
    notes = []
    for name, rc, out in (("client", c_rc, c_out), ("server", s.returncode, s_out)):
        if rc in CRASH and verified_in(out):
            notes.append(f"{name} crashed (rc {rc}, SIGSEGV) after its verified transfer")
            continue
        if rc != 0:
            raise Failed(f"{name} exited {rc}: {out[-VERBOSE[0] :]}")
    return s_out, c_out, notes


def verified_in(out):
    """Whether OUT holds a side's word that the transfer was verified: the
    initiator's RESULT line with "verified": true, or the target's line."""
    m = re.search(r"^RESULT (.*)$", out, re.M)
    if m:
        try:
            return json.loads(m.group(1)).get("verified") is True
        except ValueError:
            return False
    return re.search(r"^\w+ target: all \d+ blocks verified", out, re.M) is not None


def kv_wait_listening(p, proc, timeout=120.0):
    needle = f":{p:04X}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for f in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(f) as fh:
                for line in fh:
                    parts = line.split()
                    if len(parts) > 3 and parts[1].endswith(needle) and parts[3] == "0A":
                        return
        if proc.poll() is not None:
            raise Failed(f"the server exited ({proc.returncode}): {proc.stdout.read()[-1500:]}")
        time.sleep(0.1)
    raise Failed(f"nothing listens on {p}")


def pairs_of(pat):
    if pat["scatter"]:
        return kv_transfer.scattered_pairs(pat["blocks"], pat["pool_blocks"], 0)
    return [(i, i) for i in range(pat["blocks"])]


# ------------------------------------------------------------- the engines


def run_ib_write_bw(a, pat):
    p = port()
    args = ["-d", a.dev0, "-x", "1", "-s", str(pat["block_size"]), "-n", str(pat["blocks"])]
    srv = ["ib_write_bw", *args, "-p", str(p), "-F"]
    cli = ["ib_write_bw", "-d", a.dev1, *args[2:], "-p", str(p), "-F", a.addr0]
    _, out, _ = pair(a, srv, cli, wait_port=p)
    m = re.search(rf"^\s*{pat['block_size']}\s+{pat['blocks']}\s+[0-9.]+\s+([0-9.]+)", out, re.M)
    if not m:
        raise Failed(f"no result line: {out[-800:]}")
    return {"gbps": float(m.group(1)) * (1 << 20) / 1e9, "verified": False}


def run_perf(a, pat):
    p = port()
    base = [a.py, "-m", "ibverbs", "perf", "write_bw", "-x", "1", "-s", str(pat["block_size"])]
    base += ["-n", str(pat["blocks"]), "-p", str(p), "--timeout", "300"]
    _, out, _ = pair(
        a, base + ["-d", a.dev0], base + ["-d", a.dev1, "--json", a.addr0], wait_port=p
    )
    res = json.loads(out.strip().splitlines()[-1])
    res = res[0] if isinstance(res, list) else res
    return {"gbps": float(res["MBps"]) / 1e3, "verified": False}


def run_kv(a, pat, extra=()):
    p = port()
    ex = [a.py, str(ROOT / "examples" / "kv_transfer.py"), "-p", str(p)]
    cli = ex + ["-d", a.dev1, "--connect", a.addr0, "--batches", "1", "--json"]
    cli += ["--blocks", str(pat["blocks"]), "--block-size", str(pat["block_size"])]
    cli += ["--pool-blocks", str(pat["pool_blocks"])] + (["--scatter"] if pat["scatter"] else [])
    cli += list(extra)
    _, out, _ = pair(a, ex + ["-d", a.dev0, "--serve", a.addr0], cli, wait_port=p)
    res = json.loads(out.strip().splitlines()[-1])
    return {
        "gbps": res["median_gbps"],
        "gbps_with_handle": res["first_with_prepare_gbps"],
        "verified": res["verified"],
    }


def run_kv_contig(a, pat):
    """The diagnostic beside the scattered pattern: kv_transfer moving the
    same number of blocks of the same size, contiguous and not merged
    (one WRITE per block, --max-write = the block size), over a pool of
    just those blocks: what ib_write_bw and perf write_bw measure, plus the
    CRC check.  Apart from kv_transfer on the scattered pattern, only the
    blocks' places in memory differ."""
    if not pat["scatter"]:
        raise NotApplicable
    flat = {**pat, "scatter": False, "pool_blocks": pat["blocks"]}
    return run_kv(a, flat, ["--max-write", str(pat["block_size"])])


class NotApplicable(Exception):
    pass


def run_peer(a, pat, engine):
    if not os.access(a.peer_py, os.X_OK):
        raise Failed(f"not installed: no {a.peer_py} (make bench-peers creates it)")
    p = port()
    job = Path(a.tmp) / f"job-{p}.json"
    job.write_text(json.dumps({**pat, "pairs": pairs_of(pat)}))
    drv = [a.peer_py, str(HERE / "peers_engines.py"), engine]
    env_s, env_c = {}, {}
    if engine == "mooncake":
        env_s["MC_GID_INDEX"] = env_c["MC_GID_INDEX"] = "1"
    else:
        for e, dev in ((env_s, a.dev0), (env_c, a.dev1)):
            e.update(UCX_ENV, UCX_NET_DEVICES=f"{dev}:1", LD_PRELOAD=LIBIBVERBS)
    srv = drv + ["target", "--dev", a.dev0, "--ip", a.addr0, "--ctl", str(p)]
    cli = drv + ["initiator", "--dev", a.dev1, "--ip", a.addr1, "--ctl", f"{a.addr0}:{p}"]
    s_out, out, notes = pair(
        a, srv, cli + ["--job", str(job)], env_s=env_s, env_c=env_c, wait_port=p
    )
    m = re.search(r"^RESULT (.*)$", out, re.M)
    if not m:
        raise Failed(f"no RESULT line: {out[-1500:]}")
    res = json.loads(m.group(1))
    if notes:
        res["notes"] = notes
    return res


RUNNERS = {
    "ib_write_bw": run_ib_write_bw,
    "ibverbs-perf": run_perf,
    "kv_transfer": run_kv,
    "kv_transfer-contig": run_kv_contig,
    "mooncake": lambda a, pat: run_peer(a, pat, "mooncake"),
    "nixl": lambda a, pat: run_peer(a, pat, "nixl"),
}


# --------------------------------------------------------------- reporting


def summarize(samples):
    """{pattern: {engine: {...}}} from the per-run samples."""
    out = {}
    for pname, by_engine in samples.items():
        row = out.setdefault(pname, {})
        for eng, runs in by_engine.items():
            if not runs:  # not run on this pattern
                continue
            for key, label in (("gbps", eng), ("gbps_with_handle", f"{eng}+handle")):
                if eng in ("kv_transfer", "nixl") or key == "gbps":
                    vals = [r[key] for r in runs if "error" not in r and key in r]
                    errs = [r["error"] for r in runs if "error" in r]
                    if not vals and key != "gbps":
                        continue
                    row[label] = {
                        "median_gbps": statistics.median(vals) if vals else None,
                        "min_gbps": min(vals) if vals else None,
                        "max_gbps": max(vals) if vals else None,
                        "n": len(vals),
                        "verified": bool(vals)
                        and all(r.get("verified") for r in runs if "error" not in r),
                        **({"errors": errs[:3]} if errs else {}),
                        **crashes(runs),
                    }
    return out


def crashes(runs):
    """The runs whose processes crashed after a verified transfer, kept."""
    notes = [n for r in runs for n in r.get("notes", [])]
    if not notes:
        return {}
    return {"exit_crashes": sum(1 for r in runs if r.get("notes")), "notes": sorted(set(notes))}


def table(summary):
    lines = [
        "| pattern | engine | median GB/s | min | max | n | vs ib_write_bw "
        "| kv_transfer vs it | verified |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for pname, row in summary.items():
        c = (row.get("ib_write_bw") or {}).get("median_gbps")
        kv = (row.get("kv_transfer") or {}).get("median_gbps")
        for eng, r in row.items():
            if r["median_gbps"] is None:
                err = (r.get("errors") or ["no result"])[0].splitlines()[0][:80]
                lines.append(f"| {pname} | {eng} | failed: {err} | | | 0 | | | |")
                continue
            ratio = f"{r['median_gbps'] / c:.2f}x" if c else "-"
            vs_kv = f"{kv / r['median_gbps']:.2f}x" if kv else "-"
            ok = "yes" if r["verified"] else "no"
            if r.get("exit_crashes"):
                ok += f", then SIGSEGV at exit ({r['exit_crashes']} of {r['n']} runs)"
            lines.append(
                f"| {pname} | {eng} | {r['median_gbps']:.4f} | {r['min_gbps']:.4f} | "
                f"{r['max_gbps']:.4f} | {r['n']} | {ratio} | {vs_kv} | {ok} |"
            )
    return "\n".join(lines) + "\n"


def svg(summary):
    rows = [(p, e, r["median_gbps"]) for p, row in summary.items() for e, r in row.items()]
    top = max([v for _, _, v in rows if v] or [1])
    h, out = 22, []
    for i, (p, e, v) in enumerate(rows):
        y = 10 + i * h
        w = 0 if not v else 400 * v / top
        out.append(f'<text x="5" y="{y + 14}" font-size="12">{p} {e}</text>')
        out.append(f'<rect x="200" y="{y}" width="{w:.1f}" height="16" fill="#4a7ab5"/>')
        label = f"{v:.4f} GB/s" if v else "failed"
        out.append(f'<text x="{205 + w:.1f}" y="{y + 13}" font-size="11">{label}</text>')
    height = 20 + len(rows) * h
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="720" height="{height}" '
        f'font-family="sans-serif">{"".join(out)}</svg>\n'
    )


def rounds(a):
    """Every engine on every pattern, A.rounds times, in rotating order."""
    engines = a.engines.split(",")
    samples = {p: {e: [] for e in engines} for p in a.patterns.split(",")}
    for rnd in range(a.rounds):
        for pname in samples:
            k = rnd % len(engines)
            for eng in engines[k:] + engines[:k]:
                t0 = time.monotonic()
                try:
                    r = RUNNERS[eng](a, PATTERNS[pname])
                except NotApplicable:
                    continue
                except (Failed, subprocess.TimeoutExpired, ValueError, KeyError, OSError) as e:
                    r = {"error": str(e)}
                r["wall_s"] = time.monotonic() - t0
                samples[pname][eng].append(r)
                shown = (
                    f"{r['gbps']:.4f} GB/s" if "gbps" in r else f"FAILED {r['error'][: VERBOSE[0]]}"
                )
                if r.get("notes"):
                    shown += f" [{'; '.join(r['notes'])}]"
                print(f"round {rnd} {pname} {eng}: {shown} ({r['wall_s']:.0f} s)", flush=True)
    return samples


TARGETS = [  # (pattern, reference engine, the ratio kv_transfer must reach)
    ("1m", "ib_write_bw", 0.9),
    ("1m", "mooncake", 1.0),
    ("1m", "nixl", 1.0),
    ("16k", "mooncake", 1.0),
    ("16k", "nixl", 1.0),
]


def report_runs(out: Path) -> str:
    """A table of every full boot kept in OUT/peers-runs: kv_transfer's
    median over each reference engine's median, that boot's, per target."""
    runs = []
    if not (out / "peers-runs").is_dir():
        return "no boot's figures in " + str(out / "peers-runs") + "\n"
    for f in sorted((out / "peers-runs").glob("run-*.json"), key=lambda f: int(f.stem[4:])):
        data = json.loads(f.read_text())
        if not data.get("meta", {}).get("quick"):
            runs.append((f.stem, data))
    lines = [
        "| boot | " + " | ".join(f"{p} kv/{e} (>= {t})" for p, e, t in TARGETS) + " |",
        "|---|" + "---:|" * len(TARGETS),
    ]
    ratios = {t: [] for t in TARGETS}
    for name, data in runs:
        cells = []
        for p, e, t in TARGETS:
            kv = data.get(p, {}).get("kv_transfer", {}).get("median_gbps")
            ref = data.get(p, {}).get(e, {}).get("median_gbps")
            if kv and ref:
                ratios[(p, e, t)].append(kv / ref)
                cells.append(f"{kv / ref:.2f}x {'met' if kv / ref >= t else 'MISSED'}")
            else:
                cells.append("no figure")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cells = []
    for key in TARGETS:
        r = ratios[key]
        if r:
            med = statistics.median(r)
            cells.append(
                f"{med:.2f}x ({min(r):.2f}-{max(r):.2f}) {'met' if med >= key[2] else 'MISSED'}"
            )
        else:
            cells.append("no figure")
    lines.append(f"| median of {len(runs)} boots (min-max) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "out"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--patterns", default="1m,16k")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument(
        "--peer-python", dest="peer_py", default=str(ROOT / "build/peers-venv/bin/python")
    )
    ap.add_argument("--verbose", action="store_true", help="print failures in full")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: block counts divided by 16 (8 x 1 MiB; 256 x 16 KiB in 1,024)",
    )
    ap.add_argument(
        "--report-runs",
        action="store_true",
        help="no boot: sum up OUT/peers-runs (every full boot) into OUT/peers-boots.md",
    )
    a = ap.parse_args()
    if a.report_runs:
        md = report_runs(Path(a.out))
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "peers-boots.md").write_text(md)
        print(md)
        return 0
    if a.verbose:
        VERBOSE[0] = 20000
    if a.quick:
        for pat in PATTERNS.values():  # (ib_write_bw wants 5 iterations or more)
            pat["blocks"] = max(8, pat["blocks"] // 16)
            pat["pool_blocks"] = max(pat["blocks"], pat["pool_blocks"] // 16)
    addrs = os.environ.get("IBVERBS_NODE_ADDRS", "198.18.0.1,198.18.0.2").split(",")
    a.addr0, a.addr1 = addrs[0], addrs[1]
    if os.environ.get("IBVERBS_NODE", "0") != "0":
        return agent(a.addr1)  # node 1 runs the sending sides for node 0
    a.dev0, a.dev1 = "rxe0", "rxe1"
    a.py, a.tmp = sys.executable, "/tmp"
    t_start = time.monotonic()
    try:
        samples = rounds(a)
    finally:
        stop_agent(a)
    summary = summarize(samples)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "peers-samples.json").write_text(json.dumps(samples, indent=1) + "\n")
    md = table(summary)
    (out / "peers.md").write_text(md)
    (out / "peers.svg").write_text(svg(summary))
    # Every boot's figures kept apart too: peers-runs/run-N.{json,md}.
    runs = out / "peers-runs"
    runs.mkdir(exist_ok=True)
    n = 1 + max([int(f.stem[4:]) for f in runs.glob("run-*.json") if f.stem[4:].isdigit()] + [0])
    meta = {"rounds": a.rounds, "quick": a.quick, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ")}
    (runs / f"run-{n}.json").write_text(json.dumps({"meta": meta, **summary}, indent=1) + "\n")
    (runs / f"run-{n}.md").write_text(md)
    print(md)
    print(f"peers: {a.rounds} rounds in {time.monotonic() - t_start:.0f} s; results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
