#!/usr/bin/env python3
"""Side by side: rdma-core's C tools, ``python -m ibverbs perf`` and a
pyverbs loop doing the same work, in one run on one device (rxe0 in the
Soft-RoCE guest), printed as ONE table with ratios.

    tools/rxe-vm --rw build/out -- python3 benchmarks/compare.py --out build/out
    make bench     # the same, --full
    make demo      # --quick, plus text bars and build/out/demo.svg

What runs (server and client as two processes on the device, over
127.0.0.1 for the TCP exchange):

- C: perftest's ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat,
  ib_send_lat (``-d DEV -x GID -F``) and ``ibv_rc_pingpong``; their
  output tables are parsed.  perftest prints ``ibv_wr* API: OFF`` on rxe:
  it posts with ibv_post_send, like us.
- ours: ``python -m ibverbs perf ... --loopback --json`` and
  ``examples/rc_pingpong.py`` (both ends), under the same interpreter as
  pyverbs (``/usr/bin/python3``, with ``PYTHONPATH=src``), so the
  interpreter is not a variable.
- pyverbs: ``benchmarks/pyverbs_bench.py`` (Debian's python3-pyverbs).

Each case runs ``--reps`` times, the implementations interleaved (in a
rotating order) so that a slow spell of the host hits all of them; the
table shows the best sample of each (the most msg/s or MB/s, the least
latency) and the ratio of the medians, and the JSON keeps every sample.
Targets are judged on the medians: the shared host's load moves the
emulated device's speed both ways during a run, and one such run moved a
best-of ratio by 30-70% (BENCHMARKS.md).  Ratios are ours / C and
pyverbs / C: for rates higher is better, for latency lower is better.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SYS_PY = "/usr/bin/python3"
KiB = 1024


# ---------------------------------------------------------------- running


class RunError(Exception):
    pass


_port = [18600]


def next_port() -> int:
    _port[0] += 1
    return _port[0]


def wait_listen(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Until something listens on TCP port `port` (read from /proc, so no
    probe connection disturbs a server that accepts exactly one)."""
    want = f":{port:04X} "
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(name) as f:
                    for line in f:
                        parts = line.split()
                        if len(parts) > 3 and parts[1].endswith(want.strip()) and parts[3] == "0A":
                            return
            except OSError:
                pass
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise RunError(f"server exited with {proc.returncode} before listening: {out[-500:]}")
        time.sleep(0.05)
    raise RunError(f"nothing listens on port {port} after {timeout} s")


def run_pair(
    server: list[str], client: list[str], port: int, env=None, timeout: float = 600.0
) -> tuple[str, str]:
    """Start the server, wait until it listens, run the client; returns
    (client output, server output).  Raises RunError on failure."""
    srv = subprocess.Popen(
        server, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        wait_listen(port, srv)
        try:
            cl = subprocess.run(
                client,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=env,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise RunError(f"timed out: {' '.join(client)}") from None
        try:
            sout, _ = srv.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            srv.kill()
            sout, _ = srv.communicate()
            raise RunError(
                f"server did not finish: {' '.join(server)}\n"
                f"client ({cl.returncode}): {cl.stdout[-1500:]}\n"
                f"server: {sout[-800:]}"
            ) from None
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    if cl.returncode != 0 or srv.returncode != 0:
        raise RunError(
            f"{os.path.basename(client[0])} failed (client {cl.returncode}, "
            f"server {srv.returncode}):\n{cl.stdout[-1500:]}\n{sout[-800:]}"
        )
    return cl.stdout, sout


def run_one(cmd: list[str], env=None, timeout: float = 600.0) -> str:
    try:
        p = subprocess.run(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise RunError(f"timed out: {' '.join(cmd)}") from None
    if p.returncode != 0:
        raise RunError(f"{' '.join(cmd)} exited with {p.returncode}:\n{p.stdout[-1500:]}")
    return p.stdout


# ------------------------------------------------------------- parsers


def parse_perftest(out: str) -> dict:
    """The results line under perftest's ' #bytes ...' header, plus a few
    settings from its banner."""
    info: dict = {}
    for key, pat in (
        ("wr_api", r"ibv_wr\* API\s*:\s*(\w+)"),
        ("inline", r"Max inline data\s*:\s*(\d+)"),
        ("tx_depth", r"TX depth\s*:\s*(\d+)"),
        ("cq_mod", r"CQ Moderation\s*:\s*(\d+)"),
        ("post_list", r"Post List\s*:\s*(\d+)"),
        ("outstand_reads", r"Outstand reads\s*:\s*(\d+)"),
    ):
        m = re.search(pat, out)
        if m:
            info[key] = int(m.group(1)) if m.group(1).isdigit() else m.group(1)
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes"):
            head = line
            vals = None
            for nxt in lines[i + 1 :]:
                if nxt.strip() and nxt.strip()[0].isdigit():
                    vals = nxt.split()
                    break
            if vals is None:
                break
            size, iters = int(vals[0]), int(vals[1])
            info.update(size=size, iters=iters)
            if "MsgRate" in head:
                # BW average is in MiB/s (perftest's MB = 2**20 B); it has
                # more digits than MsgRate[Mpps] at large sizes.
                avg = float(vals[3])
                info["mpps_printed"] = float(vals[4])
                info["MBps"] = avg * (1 << 20) / 1e6
                info["msg_rate"] = float(vals[4]) * 1e6 if size < 4096 else avg * (1 << 20) / size
            else:
                # t_min t_max t_typical t_avg t_stdev 99% 99.9%
                info.update(t_min=float(vals[2]), t_typical=float(vals[4]), lat_us=float(vals[5]))
            return info
    raise RunError("no results table in perftest's output:\n" + out[-1500:])


def parse_pingpong(out: str) -> dict:
    m = re.search(r"(\d+) iters in ([\d.]+) seconds = ([\d.]+) usec/iter", out)
    if not m:
        raise RunError("no 'usec/iter' line in the ping-pong output:\n" + out[-1500:])
    return {"iters": int(m.group(1)), "seconds": float(m.group(2)), "rtt_us": float(m.group(3))}


def parse_json_lines(out: str) -> list[dict]:
    res = []
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("{"):
            res.append(json.loads(line))
    if not res:
        raise RunError("no JSON result in the output:\n" + out[-1500:])
    return res


# --------------------------------------------------------------- cases


@dataclass
class Env:
    device: str
    gid: int
    ours_py: str
    pyverbs_py: str
    ours_env: dict
    pin: tuple | None = ("0", "1")  # CPUs of the server and the client

    def _pin(self, cmd: list[str], which: int) -> list[str]:
        if not self.pin:
            return cmd
        return ["taskset", "-c", self.pin[which]] + cmd

    def pair(self, server: list[str], client: list[str], port: int, env=None):
        return run_pair(self._pin(server, 0), self._pin(client, 1), port, env=env)

    def perftest(self, tool: str, args: list[str]) -> dict:
        port = next_port()
        base = [tool, "-d", self.device, "-x", str(self.gid), "-F", "-p", str(port)]
        if tool.endswith("_bw"):
            # No peak bandwidth: perftest then takes no time stamp per WR
            # (a little less work for C) and skips a post-processing pass
            # that is quadratic in the iterations (minutes in the guest).
            base.append("-N")
        out, _ = self.pair(base + args, base + args + ["127.0.0.1"], port)
        res = parse_perftest(out)
        if not res.get("msg_rate", 1) > 0 or not res.get("lat_us", 1) > 0:
            raise RunError(f"{tool} reported nothing measurable:\n{out[-1200:]}")
        return res

    def ours_perf(self, test: str, args: list[str]) -> dict:
        """Server and client as two processes, like perftest's: --loopback
        forks the server (one interpreter start-up instead of two) and
        --cpus pins the two ends as taskset pins the C tools'."""
        cmd = [
            self.ours_py,
            "-m",
            "ibverbs",
            "perf",
            test,
            "-d",
            self.device,
            "-x",
            str(self.gid),
            "--json",
            "--loopback",
            "-p",
            str(next_port()),
        ]
        if self.pin:
            cmd += ["--cpus", ",".join(self.pin)]
        return parse_json_lines(run_one(cmd + args, env=self.ours_env))[-1]

    def pyverbs(self, test: str, args: list[str]) -> dict:
        cmd = [
            self.pyverbs_py,
            os.path.join(HERE, "pyverbs_bench.py"),
            test,
            "-d",
            self.device,
            "-x",
            str(self.gid),
            "--json",
        ]
        if test == "pingpong" and self.pin:
            cmd += ["--cpus", ",".join(self.pin)]
        else:
            cmd = self._pin(cmd, 1)
        return parse_json_lines(run_one(cmd + args))[-1]

    def rc_pingpong(self, impl: str, size: int, iters: int) -> dict:
        port = next_port()
        if impl == "c":
            base, env = ["ibv_rc_pingpong"], None
        else:
            base = [self.ours_py, os.path.join(ROOT, "examples", "rc_pingpong.py")]
            env = self.ours_env
        args = base + [
            "-d",
            self.device,
            "-g",
            str(self.gid),
            "-s",
            str(size),
            "-n",
            str(iters),
            "-p",
            str(port),
        ]
        out, _ = self.pair(args, args + ["127.0.0.1"], port, env=env)
        return parse_pingpong(out)


@dataclass
class Case:
    key: str
    title: str
    metric: str  # "msg_rate", "MBps", "lat_us", "rtt_us"
    c: object  # callable(env) -> dict
    ours: object  # callable(env, c_result) -> dict
    pyverbs: object = None  # callable(env) -> dict, or None
    target: float | None = None
    c_desc: str = ""
    ours_desc: str = ""
    pyverbs_desc: str = ""
    samples: dict = field(default_factory=lambda: {"c": [], "ours": [], "pyverbs": []})
    info: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)

    @property
    def higher_is_better(self) -> bool:
        return self.metric in ("msg_rate", "MBps")

    def best(self, impl: str):
        vals = [s[self.metric] for s in self.samples[impl] if self.metric in s]
        if not vals:
            return None
        return max(vals) if self.higher_is_better else min(vals)

    def ratio(self, impl: str):
        c, x = self.best("c"), self.best(impl)
        if not c or x is None:
            return None
        return x / c

    def median(self, impl: str):
        vals = sorted(s[self.metric] for s in self.samples[impl] if self.metric in s)
        if not vals:
            return None
        k = len(vals) // 2
        return vals[k] if len(vals) % 2 else (vals[k - 1] + vals[k]) / 2

    def median_ratio(self, impl: str):
        c, x = self.median("c"), self.median(impl)
        if not c or x is None:
            return None
        return x / c

    def met(self):
        # Judged on the medians: on the shared, emulated rig one outlier
        # run (of C or of ours) moves the best-of ratio by 30-70%.
        r = self.median_ratio("ours")
        if self.target is None or r is None:
            return None
        return r >= self.target if self.higher_is_better else r <= self.target


def _lat_inline(c: dict) -> list[str]:
    n = c.get("inline") or 0
    return ["-I", str(n)] if n else []


def target_cases(it) -> list[Case]:
    """The four performance targets: each case's ratio to C it must reach."""
    n8, n64k, npp = it["small"], it["large"], it["pingpong"]
    return [
        Case(
            "write8_single",
            "8 B RDMA WRITE, 1 signaled WR per post, 256 in flight",
            "msg_rate",
            c=lambda e: e.perftest(
                "ib_write_bw", ["-s", "8", "-n", str(n8), "-t", "256", "--cq-mod", "1"]
            ),
            ours=lambda e, c: e.ours_perf("write_bw", ["-s", "8", "-n", str(n8), "-t", "256"]),
            pyverbs=lambda e: e.pyverbs("write_bw", ["-s", "8", "-n", str(n8), "-t", "256"]),
            target=0.90,
            c_desc=f"ib_write_bw -s 8 -n {n8} -t 256 --cq-mod 1",
            ours_desc=f"perf write_bw -s 8 -n {n8} -t 256",
            pyverbs_desc=f"pyverbs_bench.py write_bw -s 8 -n {n8} -t 256",
        ),
        Case(
            "write8_list16",
            "8 B RDMA WRITE, lists of 16 (last one signaled)",
            "msg_rate",
            c=lambda e: e.perftest("ib_write_bw", ["-s", "8", "-n", str(n8), "--post_list", "16"]),
            ours=lambda e, c: e.ours_perf(
                "write_bw", ["-s", "8", "-n", str(n8), "-l", "16", "-t", "128"]
            ),
            pyverbs=lambda e: e.pyverbs(
                "write_bw", ["-s", "8", "-n", str(n8), "-l", "16", "-t", "128"]
            ),
            target=1.0,
            c_desc=f"ib_write_bw -s 8 -n {n8} --post_list 16 (tx 128, cq-mod 16)",
            ours_desc=f"perf write_bw -s 8 -n {n8} -l 16 -t 128",
            pyverbs_desc=f"pyverbs_bench.py write_bw -s 8 -n {n8} -l 16",
        ),
        Case(
            "write64k_bw",
            "64 KiB RDMA WRITE bandwidth",
            "MBps",
            c=lambda e: e.perftest("ib_write_bw", ["-s", "65536", "-n", str(n64k)]),
            ours=lambda e, c: e.ours_perf(
                "write_bw", ["-s", "65536", "-n", str(n64k), "-t", "128", "--cq-mod", "100"]
            ),
            pyverbs=lambda e: e.pyverbs(
                "write_bw", ["-s", "65536", "-n", str(n64k), "-t", "128", "--cq-mod", "100"]
            ),
            target=0.98,
            c_desc=f"ib_write_bw -s 65536 -n {n64k} (defaults: tx 128, cq-mod 100)",
            ours_desc=f"perf write_bw -s 65536 -n {n64k} -t 128 --cq-mod 100",
            pyverbs_desc=f"pyverbs_bench.py write_bw -s 65536 -n {n64k} --cq-mod 100",
        ),
        Case(
            "pingpong4k",
            "RC SEND/RECV ping-pong, 4 KiB (usec/round trip)",
            "rtt_us",
            c=lambda e: e.rc_pingpong("c", 4096, npp),
            ours=lambda e, c: e.ours_perf("send_lat", ["-s", "4096", "-n", str(npp)]),
            pyverbs=lambda e: e.pyverbs("pingpong", ["-s", "4096", "-n", str(npp)]),
            target=1.10,
            c_desc=f"ibv_rc_pingpong -s 4096 -n {npp} (both ends)",
            ours_desc=f"perf send_lat -s 4096 -n {npp} (rtt_us)",
            pyverbs_desc=f"pyverbs_bench.py pingpong -s 4096 -n {npp}",
        ),
    ]


def example_cases(it) -> list[Case]:
    """The line-for-line port of ibv_rc_pingpong (same protocol: 500
    receives posted, both completions awaited, cq.poll building WCs)."""
    npp = it["pingpong"]
    return [
        Case(
            "pingpong4k_example",
            "ping-pong 4 KiB: examples/rc_pingpong.py",
            "rtt_us",
            c=lambda e: e.rc_pingpong("c", 4096, npp),
            ours=lambda e, c: e.rc_pingpong("ours", 4096, npp),
            c_desc=f"ibv_rc_pingpong -s 4096 -n {npp} (both ends)",
            ours_desc=f"examples/rc_pingpong.py -s 4096 -n {npp} (both ends)",
        ),
    ]


def extra_cases(it) -> list[Case]:
    """One of everything else at the perftest defaults (demo)."""
    n64k, nlat = it["large"], it["lat"]
    return [
        Case(
            "read64k_bw",
            "64 KiB RDMA READ bandwidth",
            "MBps",
            c=lambda e: e.perftest("ib_read_bw", ["-s", "65536", "-n", str(n64k)]),
            ours=lambda e, c: e.ours_perf(
                "read_bw", ["-s", "65536", "-n", str(n64k), "--cq-mod", "100"]
            ),
            c_desc=f"ib_read_bw -s 65536 -n {n64k}",
            ours_desc=f"perf read_bw -s 65536 -n {n64k} --cq-mod 100",
        ),
        Case(
            "send64k_bw",
            "64 KiB SEND bandwidth",
            "MBps",
            c=lambda e: e.perftest("ib_send_bw", ["-s", "65536", "-n", str(n64k)]),
            ours=lambda e, c: e.ours_perf(
                "send_bw", ["-s", "65536", "-n", str(n64k), "--cq-mod", "100"]
            ),
            c_desc=f"ib_send_bw -s 65536 -n {n64k}",
            ours_desc=f"perf send_bw -s 65536 -n {n64k} --cq-mod 100",
        ),
        Case(
            "write_lat8",
            "8 B RDMA WRITE latency (one-way, t_avg)",
            "lat_us",
            c=lambda e: e.perftest("ib_write_lat", ["-s", "8", "-n", str(nlat)]),
            ours=lambda e, c: e.ours_perf(
                "write_lat", ["-s", "8", "-n", str(nlat)] + _lat_inline(c)
            ),
            c_desc=f"ib_write_lat -s 8 -n {nlat}",
            ours_desc=f"perf write_lat -s 8 -n {nlat} (-I as C)",
        ),
        Case(
            "send_lat8",
            "8 B SEND latency (one-way, t_avg)",
            "lat_us",
            c=lambda e: e.perftest("ib_send_lat", ["-s", "8", "-n", str(nlat)]),
            ours=lambda e, c: e.ours_perf(
                "send_lat", ["-s", "8", "-n", str(nlat)] + _lat_inline(c)
            ),
            c_desc=f"ib_send_lat -s 8 -n {nlat}",
            ours_desc=f"perf send_lat -s 8 -n {nlat} (-I as C)",
        ),
    ]


def sweep_cases(it) -> list[Case]:
    """make bench: the bandwidth tests and the latency tests over sizes,
    at perftest's defaults (tx depth 128, cq-mod 100 for bandwidth)."""
    out = []
    for test, tool in (
        ("write_bw", "ib_write_bw"),
        ("read_bw", "ib_read_bw"),
        ("send_bw", "ib_send_bw"),
    ):
        for size in (8, 256, 4 * KiB, 64 * KiB, 1024 * KiB):
            n = max(200, min(it["small"], (64 << 20) // size) // 100 * 100)
            metric = "msg_rate" if size < 4 * KiB else "MBps"
            out.append(
                Case(
                    f"{test}_{size}",
                    f"{test} {size} B",
                    metric,
                    c=lambda e, tool=tool, size=size, n=n: e.perftest(
                        tool, ["-s", str(size), "-n", str(n)]
                    ),
                    ours=lambda e, c, test=test, size=size, n=n: e.ours_perf(
                        test, ["-s", str(size), "-n", str(n), "--cq-mod", "100"]
                    ),
                    c_desc=f"{tool} -s {size} -n {n}",
                    ours_desc=f"perf {test} -s {size} -n {n} --cq-mod 100",
                )
            )
    for test, tool in (("write_lat", "ib_write_lat"), ("send_lat", "ib_send_lat")):
        for size in (8, 256, 4 * KiB, 64 * KiB):
            n = it["lat"] if size <= 4 * KiB else max(100, it["lat"] // 4)
            out.append(
                Case(
                    f"{test}_{size}",
                    f"{test} {size} B (one-way)",
                    "lat_us",
                    c=lambda e, tool=tool, size=size, n=n: e.perftest(
                        tool, ["-s", str(size), "-n", str(n)]
                    ),
                    ours=lambda e, c, test=test, size=size, n=n: e.ours_perf(
                        test, ["-s", str(size), "-n", str(n)] + _lat_inline(c)
                    ),
                    c_desc=f"{tool} -s {size} -n {n}",
                    ours_desc=f"perf {test} -s {size} -n {n}",
                )
            )
    return out


def venv_case(it, venv_py: str) -> Case:
    """The first target again with ours under the project's .venv
    interpreter, to show what the interpreter build alone changes."""
    n8 = it["small"]
    return Case(
        "write8_single_venv",
        "8 B WRITE, 1 per post (ours under .venv python)",
        "msg_rate",
        c=lambda e: e.perftest(
            "ib_write_bw", ["-s", "8", "-n", str(n8), "-t", "256", "--cq-mod", "1"]
        ),
        ours=lambda e, c: Env(e.device, e.gid, venv_py, e.pyverbs_py, e.ours_env, e.pin).ours_perf(
            "write_bw", ["-s", "8", "-n", str(n8), "-t", "256"]
        ),
        c_desc=f"ib_write_bw -s 8 -n {n8} -t 256 --cq-mod 1",
        ours_desc=f"{venv_py} -m ibverbs perf write_bw -s 8 -n {n8} -t 256",
    )


# --------------------------------------------------------------- running


def run_cases(env: Env, cases: list[Case], reps: int, log=print) -> None:
    for case in cases:
        log(f"== {case.title}")
        impls = ["c", "ours"] + (["pyverbs"] if case.pyverbs else [])
        for r in range(reps):
            order = impls[r % len(impls) :] + impls[: r % len(impls)]
            for impl in order:
                t0 = time.monotonic()
                try:
                    if impl == "c":
                        res = case.c(env)
                        case.info.setdefault(
                            "c",
                            {
                                k: v
                                for k, v in res.items()
                                if k
                                in (
                                    "wr_api",
                                    "inline",
                                    "tx_depth",
                                    "cq_mod",
                                    "post_list",
                                    "outstand_reads",
                                )
                            },
                        )
                    elif impl == "ours":
                        c0 = case.samples["c"][0] if case.samples["c"] else {}
                        res = case.ours(env, c0)
                    else:
                        res = case.pyverbs(env)
                except RunError as e:
                    case.errors.append(f"{impl}: {e}")
                    log(f"   {impl:8} FAILED: {str(e).splitlines()[0]}")
                    continue
                case.samples[impl].append(res)
                log(
                    f"   {impl:8} {fmt_value(case.metric, res.get(case.metric)):>14}"
                    f"   ({time.monotonic() - t0:.1f} s)"
                )


UNITS = {"msg_rate": "K msg/s", "MBps": "MB/s", "lat_us": "us", "rtt_us": "us/iter"}


def fmt_value(metric: str, v) -> str:
    if v is None:
        return "-"
    if metric == "msg_rate":
        return f"{v / 1e3:.2f} K/s"
    if metric == "MBps":
        return f"{v:.2f} MB/s"
    return f"{v:.1f} us"


def fmt_ratio(r) -> str:
    return "-" if r is None else f"{r:.2f}x"


def table(cases: list[Case]) -> str:
    head = (
        f"{'case':<52} {'C':>13} {'ours':>13} {'pyverbs':>13} "
        f"{'ours/C':>7} {'pyv/C':>7} {'target':>12} {'median':>7}"
    )
    lines = [head, "-" * len(head)]
    for c in cases:
        tgt = ""
        if c.target is not None:
            sign = ">=" if c.higher_is_better else "<="
            met = c.met()
            tgt = f"{sign}{c.target:.2f}" + ("" if met is None else (" ok" if met else " MISS"))
        lines.append(
            f"{c.title[:52]:<52} {fmt_value(c.metric, c.best('c')):>13} "
            f"{fmt_value(c.metric, c.best('ours')):>13} "
            f"{fmt_value(c.metric, c.best('pyverbs')) if c.pyverbs else '':>13} "
            f"{fmt_ratio(c.ratio('ours')):>7} "
            f"{fmt_ratio(c.ratio('pyverbs')) if c.pyverbs else '':>7} {tgt:>12} "
            f"{fmt_ratio(c.median_ratio('ours')):>7}"
        )
    lines.append(
        "best sample of each; ratio = ours / C (rates: higher is better; "
        "latency: lower is better); median = ours / C of the medians, "
        "on which the target is judged"
    )
    return "\n".join(lines)


def markdown(cases: list[Case]) -> str:
    out = [
        "| case | C | ours | pyverbs | ours / C | pyverbs / C | target (judged on the medians) | ours / C (medians) |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for c in cases:
        tgt = ""
        if c.target is not None:
            sign = ">=" if c.higher_is_better else "<="
            met = c.met()
            tgt = f"{sign} {c.target:.2f}" + (
                "" if met is None else (" (met)" if met else " (**missed**)")
            )
        out.append(
            f"| {c.title} | {fmt_value(c.metric, c.best('c'))} | "
            f"{fmt_value(c.metric, c.best('ours'))} | "
            f"{fmt_value(c.metric, c.best('pyverbs')) if c.pyverbs else ''} | "
            f"{fmt_ratio(c.ratio('ours'))} | "
            f"{fmt_ratio(c.ratio('pyverbs')) if c.pyverbs else ''} | {tgt} | "
            f"{fmt_ratio(c.median_ratio('ours'))} |"
        )
    return "\n".join(out)


def commands(cases: list[Case]) -> str:
    out = []
    for c in cases:
        out.append(
            f"{c.key}:\n  C:       {c.c_desc}\n  ours:    {c.ours_desc}"
            + (f"\n  pyverbs: {c.pyverbs_desc}" if c.pyverbs else "")
        )
    return "\n".join(out)


def perf_ratio(case: Case, impl: str):
    """Performance relative to C (higher is better for every metric)."""
    r = case.ratio(impl)
    if r is None or r == 0:
        return None
    return r if case.higher_is_better else 1.0 / r


def text_bars(cases: list[Case], width: int = 40) -> str:
    """Performance relative to C as text bars (C = 1.00, longer is better)."""
    scale = max([1.0] + [perf_ratio(c, i) or 0 for c in cases for i in ("ours", "pyverbs")])
    lines = ["performance relative to C (C = 1.00; longer is better; latency as C / ours)"]
    for c in cases:
        lines.append(c.title)
        for impl, ch in (("c", "="), ("ours", "#"), ("pyverbs", ".")):
            if impl != "c" and (impl == "pyverbs" and not c.pyverbs):
                continue
            r = 1.0 if impl == "c" else perf_ratio(c, impl)
            if r is None:
                continue
            n = max(1, round(r / scale * width))
            lines.append(f"  {impl:8} {ch * n:<{width}} {r:5.2f}")
    return "\n".join(lines)


def svg(cases: list[Case], title: str, subtitle: str) -> str:
    """A hand-written horizontal grouped bar chart (no matplotlib)."""
    colors = {"c": "#7f7f7f", "ours": "#1f77b4", "pyverbs": "#ff7f0e"}
    names = {
        "c": "C (rdma-core / perftest)",
        "ours": "ibverbs (this package)",
        "pyverbs": "pyverbs",
    }
    label_w, bar_w, bar_h, gap = 360, 420, 16, 14
    scale_max = max(
        [1.2] + [(perf_ratio(c, i) or 0) * 1.05 for c in cases for i in ("ours", "pyverbs")]
    )
    y = 78
    body = []
    for c in cases:
        impls = ["c", "ours"] + (["pyverbs"] if c.pyverbs else [])
        body.append(f'<text x="10" y="{y + bar_h}" class="lbl">{_esc(c.title)}</text>')
        if c.target is not None:
            t = c.target if c.higher_is_better else 1.0 / c.target
            tx = label_w + t / scale_max * bar_w
            body.append(
                f'<line x1="{tx:.1f}" y1="{y - 3}" x2="{tx:.1f}" '
                f'y2="{y + len(impls) * bar_h + 3}" class="tgt"/>'
            )
        for impl in impls:
            r = 1.0 if impl == "c" else perf_ratio(c, impl)
            if r is not None:
                w = r / scale_max * bar_w
                raw = fmt_value(c.metric, c.best(impl))
                body.append(
                    f'<rect x="{label_w}" y="{y}" width="{w:.1f}" '
                    f'height="{bar_h - 3}" fill="{colors[impl]}"/>'
                )
                body.append(
                    f'<text x="{label_w + w + 5:.1f}" y="{y + bar_h - 5}" '
                    f'class="val">{r:.2f}  ({_esc(raw)})</text>'
                )
            y += bar_h
        y += gap
    one = label_w + 1.0 / scale_max * bar_w
    height = y + 50
    width = label_w + bar_w + 190
    legend = []
    lx = 10
    for impl in ("c", "ours", "pyverbs"):
        legend.append(
            f'<rect x="{lx}" y="{height - 30}" width="12" height="12" '
            f'fill="{colors[impl]}"/>'
            f'<text x="{lx + 17}" y="{height - 20}" class="val">{names[impl]}</text>'
        )
        lx += 215
    legend.append(
        f'<line x1="{lx}" y1="{height - 31}" x2="{lx}" y2="{height - 17}" '
        f'class="tgt"/><text x="{lx + 6}" y="{height - 20}" class="val">'
        f'target</text>'
    )
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
            "<style>.lbl{font-size:12px}.val{font-size:11px;fill:#333}"
            ".ttl{font-size:16px;font-weight:bold}.sub{font-size:11px;fill:#555}"
            ".tgt{stroke:#d62728;stroke-width:1.5;stroke-dasharray:4 3}"
            ".one{stroke:#999;stroke-width:1}</style>",
            f'<rect width="{width}" height="{height}" fill="white"/>',
            f'<text x="10" y="24" class="ttl">{_esc(title)}</text>',
            f'<text x="10" y="42" class="sub">{_esc(subtitle)}</text>',
            '<text x="10" y="58" class="sub">performance relative to C = 1.00 (longer is '
            'better; latency plotted as C time / implementation time)</text>',
            f'<line x1="{one:.1f}" y1="68" x2="{one:.1f}" y2="{y - gap + 4}" class="one"/>',
            *body,
            *legend,
            "</svg>",
            "",
        ]
    )


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def machine() -> str:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    where = "QEMU/TCG guest (tools/rxe-vm)" if os.environ.get("RXE_VM") else "host"
    return f"{where}, {os.cpu_count()} vCPU, {cpu}, kernel {os.uname().release}"


# ------------------------------------------------------------------ main


def build_env(args) -> Env:
    ours_py = args.python or (SYS_PY if os.path.exists(SYS_PY) else sys.executable)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(args.ours_path) + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    pin = None
    if not args.no_pin and len(os.sched_getaffinity(0)) >= 2:
        cpus = sorted(os.sched_getaffinity(0))
        pin = (str(cpus[0]), str(cpus[1]))
    return Env(args.device, args.gid_index, ours_py, SYS_PY, env, pin)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="C vs ibverbs vs pyverbs, one table")
    p.add_argument("-d", "--device", default=os.environ.get("IBVERBS_TEST_DEVICE", "rxe0"))
    p.add_argument("-x", "--gid-index", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="the four issue-6 targets only (make demo)")
    p.add_argument(
        "--full", action="store_true", help="add the size sweeps of every test (make bench)"
    )
    p.add_argument(
        "--reps", type=int, default=3, help="runs of each implementation per case (default 3)"
    )
    p.add_argument(
        "--sweep-reps", type=int, default=2, help="runs per case of the --full sweeps (default 2)"
    )
    p.add_argument("--scale", type=float, default=1.0, help="multiply the iteration counts")
    p.add_argument("--python", help="interpreter for ours (default /usr/bin/python3)")
    p.add_argument(
        "--ours-path",
        default=os.path.join(ROOT, "src"),
        help="PYTHONPATH entry holding the ibverbs package to measure "
        "(default src/, the make build; benchmarks/prepare.py "
        "leaves a private copy in build/bench/gil-kept/src)",
    )
    p.add_argument(
        "--no-pin", action="store_true", help="do not pin the server and the client to two CPUs"
    )
    p.add_argument("--out", help="directory for compare.json / compare.md / compare.txt")
    p.add_argument("--svg", help="write the bar chart here")
    p.add_argument("--bars", action="store_true", help="print text bars too")
    p.add_argument(
        "--case",
        action="append",
        metavar="KEY",
        help="run only this target case (write8_single, write8_list16, "
        "write64k_bw, pingpong4k); repeatable",
    )
    args = p.parse_args(argv)

    for tool in ("ib_write_bw", "ibv_rc_pingpong"):
        if shutil.which(tool) is None:
            print(f"compare: {tool} not found (install perftest / ibverbs-utils)", file=sys.stderr)
            return 2
    s = args.scale

    def r400(n: float) -> int:
        # A multiple of 400: of 16 (--post_list) and of 100 (--cq-mod).
        return max(400, int(n) // 400 * 400)

    it = {
        "small": r400(20000 * s),
        "large": r400(2000 * s),
        "pingpong": max(100, int(1000 * s)),
        "lat": max(100, int(1000 * s)),
    }
    env = build_env(args)
    cases = target_cases(it)
    if args.case:
        unknown = set(args.case) - {c.key for c in cases}
        if unknown:
            print(
                f"compare: unknown case(s) {sorted(unknown)}; the targets are "
                f"{[c.key for c in cases]}",
                file=sys.stderr,
            )
            return 2
        cases = [c for c in cases if c.key in args.case]
    if not args.quick and not args.case:
        cases += example_cases(it) + extra_cases(it)
        venv_py = os.path.join(ROOT, ".venv", "bin", "python")
        if os.path.exists(venv_py):
            cases.append(venv_case(it, venv_py))
    sweep = sweep_cases(it) if args.full else []
    print(f"machine: {machine()}")
    print(
        f"ours: {env.ours_py} (PYTHONPATH={args.ours_path}), pyverbs: {env.pyverbs_py}; "
        f"{args.reps} reps, interleaved; "
        + (f"server on CPU {env.pin[0]}, client on CPU {env.pin[1]}" if env.pin else "not pinned")
    )
    t0 = time.monotonic()
    run_cases(env, cases, args.reps)
    run_cases(env, sweep, args.sweep_reps)
    cases += sweep
    tbl = table(cases)
    print()
    print(tbl)
    if args.bars:
        print()
        print(text_bars(cases))
    errors = [f"{c.key}: {e}" for c in cases for e in c.errors]
    if errors:
        print("\nerrors:")
        for e in errors:
            print("  " + e.splitlines()[0])
    c_api = {c.info.get("c", {}).get("wr_api") for c in cases} - {None}
    note = (
        f"C posted with {'ibv_post_send (perftest: ibv_wr* API OFF)' if c_api == {'OFF'} else c_api}"
        if c_api
        else ""
    )
    if note:
        print(note)
    print(f"total {time.monotonic() - t0:.0f} s")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        doc = {
            "machine": machine(),
            "ours_python": env.ours_py,
            "reps": args.reps,
            "iterations": it,
            "note": note,
            "cases": [
                {
                    "key": c.key,
                    "title": c.title,
                    "metric": c.metric,
                    "target": c.target,
                    "met": c.met(),
                    "best": {i: c.best(i) for i in ("c", "ours", "pyverbs")},
                    "ratio": {i: c.ratio(i) for i in ("ours", "pyverbs")},
                    "median_ratio": {i: c.median_ratio(i) for i in ("ours", "pyverbs")},
                    "commands": {"c": c.c_desc, "ours": c.ours_desc, "pyverbs": c.pyverbs_desc},
                    "c_settings": c.info.get("c", {}),
                    "samples": c.samples,
                    "errors": c.errors,
                }
                for c in cases
            ],
        }
        with open(os.path.join(args.out, "compare.json"), "w") as f:
            json.dump(doc, f, indent=1)
        with open(os.path.join(args.out, "compare.md"), "w") as f:
            f.write(markdown(cases) + "\n")
        with open(os.path.join(args.out, "compare.txt"), "w") as f:
            f.write(f"machine: {machine()}\n\n{tbl}\n\n{commands(cases)}\n")
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(svg(cases, "ibverbs vs C vs pyverbs on " + args.device, machine()))
        print(f"chart: {args.svg}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
