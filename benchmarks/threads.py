#!/usr/bin/env python3
"""Scaling with threads (make bench-threads): the aggregate rate of
post_send + poll_count of N threads, each with its own RC QP and CQ, for
three builds side by side:

- ``freethreaded``: the cp3XYt extension under a --disable-gil CPython
  (tools/freethreaded-python, build/ft-venv);
- ``gil``: the abi3 extension under the same CPython source built with the
  GIL, the same flags otherwise (tools/freethreaded-python --gil,
  build/gil-venv): the like-for-like baseline, which the ratios use;
- ``gil-venv``: the abi3 extension under the project's venv (a distro or
  pyenv CPython, PGO/LTO-built, another version): what a user runs today;

on three targets:

- ``fake``: the recording double of libibverbs (tests/fakes/recording,
  loaded through IBVERBS_LIBIBVERBS, its log off): a provider that does
  nothing, so the rate is the binding's and the interpreter's own cost,
  on the host's real cores;
- ``rxe``: rxe0 in the Soft-RoCE guest (tools/rxe-vm), both interpreters;
- ``loop``: the same loop calling two no-op builtin methods (set.discard,
  dict.get) instead of the two verbs: the interpreter's own share (host).

Each thread opens its own CQ and pair of RC QPs connected to each other
(on the Context and PD all threads share), warms up, waits at a barrier,
then for ``--seconds`` posts signaled 8-byte RDMA WRITEs while fewer than
DEPTH are outstanding and reaps them with ``CQ.poll_count`` (perftest's
scheme; on the double every post completes at once, so the loop is one
post + one poll).  ops/s = completions of all threads / wall time.  One
process per measurement; the builds and thread counts interleave, repeated
``--reps`` times, since the host is shared and noisy: the table shows the
best and the median of each.

    python3 benchmarks/threads.py [--targets loop,fake,rxe] [--reps 5]
        [--seconds 1] [--out build/out]         prepare, measure, report
    python3 benchmarks/threads.py --measure TARGET --json FILE ...
                                                one target, here (the guest
                                                runs this for rxe)
    python3 benchmarks/threads.py --report build/out/threads.json

Writes OUT/threads.json ({"runs": [{"build", "threads", "target",
"ops_per_s"}, ...]}, one entry per measurement, plus "summary") and
OUT/threads.md (the table).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BENCH = os.path.join(ROOT, "build", "bench")
DEPTH = 16
CHUNK = 512  # loop iterations between looks at the stop flag
BUILDS = ("gil", "freethreaded", "gil-venv")
# Where each build's private copy of the package lies (prepare()), and
# the interpreter that runs it.
VARIANT = {"gil": "gil-same-source", "freethreaded": "freethreaded", "gil-venv": "gil-kept"}
PYTHON = {
    "gil": os.path.join(ROOT, "build", "gil-venv", "bin", "python"),
    "freethreaded": os.path.join(ROOT, "build", "ft-venv", "bin", "python"),
    "gil-venv": os.path.join(ROOT, ".venv", "bin", "python"),
}
FAKE_LIB = os.path.join(BENCH, "recording", "libibverbs-recording.so")
DEVICE = {"loop": None, "fake": "fake0", "rxe": "rxe0"}


def thread_counts() -> list[int]:
    """1, 2, then powers of two up to the CPU count, and the CPU count."""
    cpus = os.cpu_count() or 1
    counts = {1, 2, cpus}
    n = 4
    while n < cpus:
        counts.add(n)
        n *= 2
    return sorted(counts)


# ------------------------------------------------------ one measurement ---


def worker_main(target: str, threads: int, seconds: float) -> dict:
    """In a child process: N threads, each its own QP pair and CQ; the
    aggregate completions per second."""
    import ctypes

    if target == "loop":
        # Methods of this thread's own objects: a shared callable (a
        # builtin function, a type) would have its reference count
        # contended by every thread on a free-threaded 3.13.
        return run_threads(threads, seconds, lambda i: (set().discard, {DEPTH: 1}.get, 0, []))
    import ibverbs as ib

    if target == "fake":
        ctypes.CDLL(os.environ["IBVERBS_LIBIBVERBS"]).fake_set_recording(0)
    gid_index = 1 if target == "rxe" else 0
    acc = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
    ctx = ib.Context(DEVICE[target])
    pd = ctx.alloc_pd()
    port = ctx.query_port(1)
    gid = ctx.query_gid(1, gid_index)

    def open_pair(i: int):
        buf = bytearray(8192)
        mr = ib.reg_tensor(pd, buf, acc)
        cq = ctx.create_cq(2 * DEPTH)
        attr = ib.QPInitAttr(send_cq=cq, recv_cq=cq, max_send_wr=DEPTH, max_recv_wr=1)
        qa, qb = pd.create_qp(attr), pd.create_qp(attr)
        keep = [qa, qb, cq, mr]
        ia = ib.local_qp_info(qa, port, gid, port=1)
        ibb = ib.local_qp_info(qb, port, gid, port=1)
        ib.connect_rc(qa, ibb, port=1, sgid_index=gid_index, access=acc)
        ib.connect_rc(qb, ia, port=1, sgid_index=gid_index, access=acc)
        wr = ib.SendWR(
            wr_id=i,
            sg_list=[ib.SGE(mr, 8)],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=mr.addr + 4096,
            rkey=mr.rkey,
        )
        return qa.post_send, cq.poll_count, wr, keep

    try:
        return run_threads(threads, seconds, open_pair)
    finally:
        pd.close()
        ctx.close()


def run_threads(threads: int, seconds: float, open_pair) -> dict:
    """threads threads, each with open_pair(i) = (post, poll, wr, handles
    to close), the post/poll loop for seconds after a common start."""
    import threading
    import time

    stop = [False]
    ready = threading.Barrier(threads + 1)
    done = [0] * threads
    warm = [0] * threads
    cpu = [0.0] * threads
    errors: list[str] = []

    def run(i: int) -> None:
        # Made on this thread, so that its objects are this thread's own
        # (free-threaded CPython: their reference counts stay local).
        try:
            post, poll, wr, keep = open_pair(i)

            def loop(rounds: int, depth: int = DEPTH, chunk: range = range(CHUNK)) -> int:
                # Locals only: a free-threaded 3.13 does not specialize
                # LOAD_GLOBAL, and the rate should be the binding's.
                out = n = 0
                for _ in range(rounds):
                    for _ in chunk:
                        if out < depth:
                            post(wr)
                            out += 1
                        got = poll(depth)
                        out -= got
                        n += got
                    if stop[0]:
                        break
                while out:  # drain
                    got = poll(depth)
                    out -= got
                    n += got
                return n

            warm[i] = loop(20)  # warm-up: the interpreter specializes the loop
        except BaseException as e:
            errors.append(f"thread {i}: {e!r}")
            ready.abort()
            raise
        try:
            ready.wait()
        except threading.BrokenBarrierError:
            return
        c0 = time.thread_time()
        done[i] = loop(1 << 62)
        cpu[i] = time.thread_time() - c0
        for h in keep:
            h.close()

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop[0] = True
    for t in ts:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise SystemExit("; ".join(errors))
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    return {
        "ops_per_s": sum(done) / elapsed,
        "ops_total": sum(done) + sum(warm),  # with the warm-up's (callgrind)
        "cpu_s": sum(cpu),
        "wall_s": elapsed,
        "gil_enabled": gil,
        "python": sys.version,
    }


def measure_one(build: str, target: str, threads: int, seconds: float) -> dict:
    """One measurement in a fresh process of build's interpreter."""
    env = dict(os.environ, PYTHONPATH=os.path.join(BENCH, VARIANT[build], "src"))
    if target == "fake":
        env["IBVERBS_LIBIBVERBS"] = FAKE_LIB
    cmd = [PYTHON[build], os.path.abspath(__file__), "--worker", target]
    cmd += ["--threads", str(threads), "--seconds", str(seconds)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120 + seconds)
    if p.returncode != 0:
        raise SystemExit(f"threads: {build} {target} x{threads} failed:\n{p.stderr}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if build == "freethreaded" and res["gil_enabled"]:
        raise SystemExit("threads: the GIL is on in the free-threaded run")
    return res


def measure(target: str, reps: int, seconds: float, builds=BUILDS) -> list[dict]:
    """Every build x thread count, interleaved, reps times."""
    runs = []
    counts = thread_counts()
    for rep in range(reps):
        order = builds if rep % 2 == 0 else builds[::-1]
        for threads in counts:
            for build in order:
                r = measure_one(build, target, threads, seconds)
                runs.append(
                    {
                        "build": build,
                        "threads": threads,
                        "target": target,
                        "ops_per_s": round(r["ops_per_s"]),
                        # CPU time the loops got: ops per CPU-second is
                        # what a shared host's load does not change.
                        "cores": round(r["cpu_s"] / r["wall_s"], 2),
                        "ops_per_cpu_s": round(r["ops_per_s"] * r["wall_s"] / r["cpu_s"]),
                    }
                )
                print(
                    f"  {target} rep {rep + 1}/{reps} {build:13} x{threads}: "
                    f"{r['ops_per_s'] / 1e3:9.1f} k ops/s",
                    flush=True,
                )
    return runs


def callgrind_one(build: str, seconds: float, out: str) -> dict:
    """Instructions inside QP.post_send and CQ.poll_count (their C
    functions and what they call: the double's verbs are nearly free) per
    post + poll, one thread on the double, under callgrind
    (--toggle-collect on the two functions: only their cost is counted,
    not the interpreter's loop around them)."""
    f = os.path.join(out, f"callgrind.threads.{build}.out")
    env = dict(os.environ, PYTHONPATH=os.path.join(BENCH, VARIANT[build], "src"))
    env["IBVERBS_LIBIBVERBS"] = FAKE_LIB
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={f}"]
    cmd += ["--toggle-collect=qp_post_send", "--toggle-collect=cq_poll_count"]
    cmd += [PYTHON[build], os.path.abspath(__file__), "--worker", "fake"]
    cmd += ["--threads", "1", "--seconds", str(seconds)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"threads: callgrind of {build} failed:\n{p.stderr[-4000:]}")
    ops = json.loads(p.stdout.strip().splitlines()[-1])["ops_total"]
    # Per function: the cost lines of its own blocks ("fn=", names
    # compressed as "(id)"): its instructions and, after each "calls=",
    # the inclusive cost of a call it made.  Collection is on only inside
    # the two, so that is their inclusive cost, whoever called them.
    names: dict[str, str] = {}
    cost = {"qp_post_send": 0, "cq_poll_count": 0}
    fn = None
    with open(f) as fh:
        for line in fh:
            if line.startswith(("fn=", "cfn=")):
                ident, _, name = line.partition("=")[2].strip().partition(" ")
                if name:
                    names[ident] = name
                if line.startswith("fn="):
                    fn = names.get(ident, ident)
            elif fn in cost and line[:1] in "0123456789+-*":
                cost[fn] += int(line.split()[1])
    return {
        "build": build,
        "ops": ops,
        "post_send": round(cost["qp_post_send"] / ops),
        "poll_count": round(cost["cq_poll_count"] / ops),
    }


def callgrind(builds, seconds: float, out: str) -> None:
    os.makedirs(out, exist_ok=True)
    rows = [callgrind_one(b, seconds, out) for b in builds]
    lines = ["| build | `post_send` | `poll_count` | both |", "|---|---:|---:|---:|"]
    for r in rows:
        both = r["post_send"] + r["poll_count"]
        lines.append(f"| {r['build']} | {r['post_send']} | {r['poll_count']} | {both} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "threads-callgrind.md"), "w") as f:
        f.write(text)
    print(text, end="")


# ------------------------------------------------------------- prepare ---


def prepare(builds=BUILDS) -> None:
    """The builds' private copies of the package (prepare.py's
    build_variant, by each build's interpreter) and the double."""
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, "tests", "fakes"))
    import prepare as prep
    import recording

    for build in builds:
        if not os.path.exists(PYTHON[build]):
            raise SystemExit(
                f"threads: no {PYTHON[build]} (make build; make ft-venv gil-venv for "
                "the free-threaded one and its same-source GIL build)"
            )
        print(f"threads: building the {build} extension")
        prep.build_variant(BENCH, VARIANT[build], False, python=PYTHON[build])
    print("threads: building the recording double")
    recording.build(os.path.dirname(FAKE_LIB))


# -------------------------------------------------------------- report ---


def summarize(runs: list[dict]) -> list[dict]:
    """Per (target, build, threads): the best and median rate, the ratios
    of the bests to the build's 1 thread and to the GIL build, the median
    cores the loops got and the median rate per CPU-second."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["target"], r["build"], r["threads"]), []).append(r)

    def best(key):
        return max(r["ops_per_s"] for r in groups[key]) if key in groups else None

    rows = []
    for key, rs in sorted(groups.items()):
        target, build, threads = key
        one, gil = best((target, build, 1)), best((target, "gil", threads))
        per_cpu = [r["ops_per_cpu_s"] for r in rs if r.get("ops_per_cpu_s")]
        rows.append(
            {
                "target": target,
                "build": build,
                "threads": threads,
                "n": len(rs),
                "best": best(key),
                "median": statistics.median(r["ops_per_s"] for r in rs),
                "best_vs_1_thread": best(key) / one if one else None,
                "best_vs_gil": best(key) / gil if gil else None,
                "cores": statistics.median(r.get("cores", 0) for r in rs),
                "per_cpu_s": statistics.median(per_cpu) if per_cpu else None,
            }
        )
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| target | build | threads | best k ops/s | median k ops/s | best vs 1 thread "
        "| best vs same-source GIL build | cores used | k ops per CPU-s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        per_cpu = f"{r['per_cpu_s'] / 1e3:,.0f}" if r["per_cpu_s"] else "-"
        vs_gil = f"{r['best_vs_gil']:.2f}x" if r["best_vs_gil"] else "-"
        out.append(
            f"| {r['target']} | {r['build']} | {r['threads']} | {r['best'] / 1e3:,.0f} "
            f"| {r['median'] / 1e3:,.0f} | {r['best_vs_1_thread']:.2f}x "
            f"| {vs_gil} | {r['cores']:.2f} | {per_cpu} |"
        )
    return "\n".join(out)


def goals(rows: list[dict]) -> list[str]:
    """The issue's two goals, on the double: from the best rates, and from
    the rates per CPU-second (which the host's other load changes less)."""
    by = {(r["target"], r["build"], r["threads"]): r for r in rows}
    ft1, ft2 = by.get(("fake", "freethreaded", 1)), by.get(("fake", "freethreaded", 2))
    gil1, venv1 = by.get(("fake", "gil", 1)), by.get(("fake", "gil-venv", 1))

    def per_cpu(a, b, times=1):
        ok = a and b and a["per_cpu_s"] and b["per_cpu_s"]
        return times * a["per_cpu_s"] / b["per_cpu_s"] if ok else None

    # (what, ratio of the bests, ratio per CPU-second, how that is read, goal)
    checks = []
    if ft1 and ft2:
        checks.append(
            (
                "free-threaded 2 threads / 1 thread",
                ft2["best_vs_1_thread"],
                per_cpu(ft2, ft1, 2),
                "on 2 free cores (2 x per-CPU-s rate of 2 threads / 1 thread's)",
                1.5,
            )
        )
    if ft1 and gil1:
        checks.append(
            (
                "free-threaded 1 thread / same-source GIL build 1 thread",
                ft1["best_vs_gil"],
                per_cpu(ft1, gil1),
                "per CPU-second",
                0.8,
            )
        )
    if ft1 and venv1:
        checks.append(
            (
                "free-threaded 1 thread / the venv's GIL build 1 thread (not like for like)",
                ft1["best"] / venv1["best"],
                per_cpu(ft1, venv1),
                "per CPU-second",
                0.8,
            )
        )
    lines = []
    for what, best, cpu, how, goal in checks:
        for label, x in ((f"fake: {what}: best", best), (f"      {how}:", cpu)):
            if x is not None:
                lines.append(
                    f"{label} {x:.2f}x ({'met' if x >= goal else 'missed'}, goal >= {goal}x)"
                )
    return lines


def report(path: str) -> None:
    with open(path) as f:
        data = json.load(f)
    rows = summarize(data["runs"])
    data["summary"] = rows
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
    text = table(rows) + "\n\n" + "\n".join(goals(rows)) + "\n"
    with open(os.path.splitext(path)[0] + ".md", "w") as f:
        f.write(text)
    print(text, end="")


# ---------------------------------------------------------------- main ---


def run_rxe(reps: int, seconds: float, out: str, builds=BUILDS) -> list[dict]:
    """The rxe target: this script's --measure rxe in one guest boot."""
    os.makedirs(out, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="threads-rxe-", suffix=".json", dir=out)
    os.close(fd)
    try:
        cmd = [os.path.join(ROOT, "tools", "rxe-vm"), "--rw", out, "--"]
        cmd += [PYTHON["gil-venv"], os.path.abspath(__file__), "--measure", "rxe", "--json", tmp]
        cmd += ["--reps", str(reps), "--seconds", str(seconds), "--builds", ",".join(builds)]
        for boot in (1, 2):
            rc = subprocess.run(cmd, cwd=ROOT).returncode
            # 125: the rig failed (on a loaded host the emulated guest's
            # kernel can miss its timer check at boot): once more.
            if rc != 125:
                break
            print(f"threads: the guest failed to start (boot {boot})", flush=True)
        if rc != 0:
            raise SystemExit(f"threads: the rxe run failed ({rc})")
        with open(tmp) as f:
            return json.load(f)["runs"]
    finally:
        os.unlink(tmp)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--targets", default="loop,fake,rxe")
    p.add_argument(
        "--builds",
        default=",".join(BUILDS),
        help="which builds (gil: same-source GIL; gil-venv: the venv's)",
    )
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--out", default=os.path.join(ROOT, "build", "out"))
    p.add_argument("--no-prepare", action="store_true", help="use the builds already made")
    p.add_argument("--measure", metavar="TARGET", help="measure one target here")
    p.add_argument("--json", help="with --measure: where to write its runs")
    p.add_argument("--worker", metavar="TARGET", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--report", metavar="JSON", help="summarize a threads.json again")
    p.add_argument(
        "--callgrind",
        action="store_true",
        help="instructions per post + poll inside the two methods, per build (fake, 1 thread)",
    )
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker_main(args.worker, args.threads, args.seconds)))
        return 0
    if args.report:
        report(args.report)
        return 0
    builds = tuple(b for b in args.builds.split(",") if b)
    if set(builds) - set(BUILDS) or "freethreaded" not in builds:
        p.error(f"--builds: some of {BUILDS}, freethreaded among them")
    if args.callgrind:
        if not args.no_prepare:
            prepare(builds)
        callgrind(builds, args.seconds, args.out)
        return 0
    if args.measure:
        runs = measure(args.measure, args.reps, args.seconds, builds)
        with open(args.json, "w") as f:
            json.dump({"runs": runs}, f)
        return 0
    targets = [t for t in args.targets.split(",") if t]
    unknown = set(targets) - set(DEVICE)
    if unknown:
        p.error(f"unknown targets {sorted(unknown)} (loop, fake, rxe)")
    if not args.no_prepare:
        prepare(builds)
    runs: list[dict] = []
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "threads.json")
    for target in targets:
        print(f"threads: {target}, threads {thread_counts()}, {args.reps} reps", flush=True)
        if target == "rxe":
            runs += run_rxe(args.reps, args.seconds, args.out, builds)
        else:
            runs += measure(target, args.reps, args.seconds, builds)
        with open(path, "w") as f:  # what is measured so far, kept if a later target fails
            json.dump({"runs": runs}, f)
    report(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
