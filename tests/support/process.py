"""Process and kernel resources (RSS, fds, the device's object counts)
and the runner of the reliability suite's case scripts, which run in
subprocesses so that a crash is a failed case, not a dead run."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from support.timeouts import Deadline, communicate, scaled

# ---------------------------------------------------------------------------
# Process and kernel resources
# ---------------------------------------------------------------------------


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def fd_count():
    return len(os.listdir("/proc/self/fd"))


def rdma_counts(device):
    """{"pd": n, "cq": n, "qp": n, "mr": n, "ctx": n, "srq": n} of the
    device, from `rdma -j resource show` (None without the tool)."""
    if shutil.which("rdma") is None:
        return None
    out = subprocess.run(
        ["rdma", "-j", "resource", "show"], capture_output=True, text=True, timeout=scaled(60)
    )
    if out.returncode != 0:
        return None
    for entry in json.loads(out.stdout or "[]"):
        if entry.get("ifname") == device:
            return {k: v for k, v in entry.items() if k not in ("ifindex", "ifname")}
    return None


def cm_counts(device):
    """The device's cm_id, qp, cq, pd and mr counts (rdma_counts; an
    absent kind is None); skips the test when `rdma` cannot tell."""
    import pytest

    if shutil.which("rdma") is None:
        pytest.skip("the rdma tool (iproute2) is not installed")
    counts = rdma_counts(device)
    if counts is None:
        pytest.skip(f"`rdma resource show` does not list {device}")
    return {k: counts.get(k) for k in ("cm_id", "qp", "cq", "pd", "mr")}


def full_gc():
    for _ in range(3):
        gc.collect()


def measure(device, settle_to=None):
    """After a full GC: (RSS in KiB, open fds, the device's rdma_counts).

    The counts are the whole device's, read from the kernel's resource
    tracking: an object freed by this process can still be listed for a
    moment (the kernel releases some after close() returns, and counts
    other processes' objects too).  With SETTLE_TO (an earlier reading),
    counts that differ from it are read again for up to 10 s (scaled)
    until they match; where they still differ, the kernel's own list of
    the kinds that differ (owner pid and command) is added under "detail",
    so a failure says whose objects they are."""
    full_gc()
    rss, fds, counts = rss_kib(), fd_count(), rdma_counts(device)
    if settle_to is None or counts == settle_to:
        return rss, fds, counts
    deadline = time.monotonic() + scaled(10)
    while counts != settle_to and time.monotonic() < deadline:
        time.sleep(0.2)
        full_gc()
        counts = rdma_counts(device)
    if counts != settle_to and counts is not None and settle_to is not None:
        counts = dict(counts, detail=_rdma_detail(device, counts, settle_to))
    return rss, fds, counts


def _rdma_detail(device, counts, expected):
    """`rdma -j resource show KIND dev DEVICE` of each kind whose count
    differs: the kernel's owner (pid, comm) of every listed object."""
    detail = {}
    for kind in sorted(k for k in counts if counts.get(k) != expected.get(k)):
        out = subprocess.run(
            ["rdma", "-j", "resource", "show", kind, "dev", device],
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
        try:
            rows = json.loads(out.stdout or "[]")
        except ValueError:
            rows = out.stdout + out.stderr
        if isinstance(rows, list):
            rows = [
                {k: r.get(k) for k in ("pid", "comm", "ctxn", "pdn", "cqn", "lqpn") if k in r}
                for r in rows
                if isinstance(r, dict)
            ]
        detail[kind] = rows if len(str(rows)) < 2000 else str(rows)[:2000]
    return detail


def print_leak_result(kind, cycles, before, after, t0):
    """The JSON line a leak case prints for test_rel_leaks.py: the growth
    between two measure()s over CYCLES cycles of KIND, since T0."""
    (rss0, fd0, k0), (rss1, fd1, k1) = before, after
    print(
        json.dumps(
            {
                "type": kind,
                "cycles": cycles,
                "rss_growth_kib": rss1 - rss0,
                "fd_growth": fd1 - fd0,
                "rdma_before": k0,
                "rdma_after": k1,
                "seconds": round(time.monotonic() - t0, 1),
            }
        ),
        flush=True,
    )


# ---------------------------------------------------------------------------
# Running case scripts in subprocesses
# ---------------------------------------------------------------------------


def child_env(env=None):
    """env (or ours) with PYTHONPATH absolute and the folder of the
    ibverbs this process imports first: a child started in another folder
    would miss a relative ``src`` and import another tree's ibverbs (the
    virtual environment's editable install)."""
    import importlib.util

    env = dict(os.environ if env is None else env)
    paths = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    spec = importlib.util.find_spec("ibverbs")
    if spec is not None and spec.origin:
        # abspath, not resolve(): the coverage build's package is links to
        # src's files, and following them would import src's extension.
        paths.insert(0, str(Path(os.path.abspath(spec.origin)).parent.parent))
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def run_cases(script, *args, timeout=600, env=None):
    """Run the case script at path `script` (which prints BEGIN/result/DONE
    lines, see misuse_cases.py) until every case has a result: a case that
    kills the process is recorded as crashed and the script restarted
    after it.  Returns (results, crashes, extra) where extra is the first
    JSON line that is not a case result (e.g. coverage data)."""
    results, crashes, extra = [], [], None
    start = 0
    deadline = Deadline(timeout)
    env = child_env(env)
    while True:
        left = deadline.left()
        if left <= 0:
            raise AssertionError(f"{script}: out of time after {len(results)} cases")
        with subprocess.Popen(
            [sys.executable, str(script), *args, "--start", str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(Path(script).parent),
        ) as proc:
            try:
                stdout, stderr = communicate(proc, deadline)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise AssertionError(
                    f"{script}: out of time ({deadline.limit:.0f} s) after {len(results)} cases"
                ) from None
        begun = None
        done = False
        for line in stdout.splitlines():
            if line.startswith("BEGIN "):
                _, idx, name = line.split(" ", 2)
                begun = (int(idx), name)
            elif line.startswith("DONE "):
                done = True
            elif line.startswith("{"):
                rec = json.loads(line)
                if "i" in rec:
                    results.append(rec)
                    begun = None
                elif extra is None:
                    extra = rec
        if done and proc.returncode == 0:
            return results, crashes, extra
        if begun is None:
            raise AssertionError(
                f"{script} failed outside any case (rc {proc.returncode}):\n"
                f"{stdout[-2000:]}\n{stderr[-3000:]}"
            )
        crashes.append(
            {"i": begun[0], "name": begun[1], "rc": proc.returncode, "stderr": stderr[-2000:]}
        )
        start = begun[0] + 1


def check_cases(results, crashes, minimum):
    """Fail, listing them, on any crashed or failed case, or when fewer
    than `minimum` cases ran."""
    lines = [
        f"CRASHED (exit status {c['rc']}) in case {c['i']}: {c['name']}\n{c['stderr']}"
        for c in crashes
    ]
    for r in results:
        if not r["ok"]:
            lines.append(
                f"case {r['i']} {r['name']}: {r['why']} "
                f"[{r['exc']}: {r['msg']}]" + (f"\n{r['tb']}" if "tb" in r else "")
            )
    assert not lines, f"{len(lines)} misuse case(s) failed:\n" + "\n".join(lines)
    assert len(results) >= minimum, f"only {len(results)} cases ran"


def without_file(path, code, tmp_path, timeout=120):
    """Run python -c CODE in a private mount namespace (unshare(1), as
    root) where PATH reads as an empty file; the CompletedProcess (text).
    The caller skips when its stderr says the bind mount was refused."""
    empty = Path(tmp_path) / "empty"
    empty.write_bytes(b"")
    script = f"mount --bind {empty} {path} && exec {sys.executable} -c '{code}'"
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_python(code, env=None, timeout=None):
    """python -c CODE in a child (environment ENV, else this one's); the
    CompletedProcess, its stderr merged into its stdout (text)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


def can_fail_allocations() -> bool:
    """_testcapi.set_nomemory is here: CPython's test module, which some
    builds leave out (python-build-standalone's, Debian's without
    libpythonX.Y-testsuite)."""
    try:
        import _testcapi
    except ImportError:
        return False
    return hasattr(_testcapi, "set_nomemory")
