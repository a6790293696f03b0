"""Create/destroy cycles of every resource type (leak_cases.py, in a fresh
subprocess): RSS grows by less than 1 MiB, /proc/self/fd stays flat and
the device's kernel objects (`rdma -j resource show`: pd, cq, qp, mr, srq,
ctx) return to their baseline.

`make test` runs IBVERBS_LEAK_CYCLES (default 1000) cycles of each type;
`make leakcheck` runs 100,000 (the issue's figure: ~40 min in the emulated
guest).
"""

import json
import os
import subprocess
import sys

from pathlib import Path

import pytest

import ibverbs as ib
from support import device_name
from support.timeouts import scaled

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.integration

CYCLES = int(os.environ.get("IBVERBS_LEAK_CYCLES", "1000"))
RSS_LIMIT_KIB = 1024
# Under AddressSanitizer (make sanitize) freed memory sits in ASan's
# quarantine, so RSS says nothing about leaks; fds and kernel objects still do.
SANITIZED = "libasan" in os.environ.get("LD_PRELOAD", "")


def _leak_cases(*types):
    """leak_cases.py's cycles (all, or those named) in a child process; a
    list of what grew, and the number of types that ran."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "leak_cases.py"), device_name(), str(CYCLES), *types],
        capture_output=True,
        text=True,
        timeout=max(900, CYCLES // 10),
        cwd=str(HERE),
    )
    assert proc.returncode == 0 and "DONE" in proc.stdout, (
        f"exit status {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    recs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    problems = []
    for r in recs:
        if "type" not in r:
            continue
        print(
            f"{r['type']}: {r['cycles']} cycles, RSS +{r['rss_growth_kib']} KiB, "
            f"fds {r['fd_growth']:+d}, {r['seconds']} s"
        )
        if r["rss_growth_kib"] >= RSS_LIMIT_KIB and not SANITIZED:
            problems.append(f"{r['type']}: RSS grew {r['rss_growth_kib']} KiB")
        if r["fd_growth"] != 0:
            problems.append(f"{r['type']}: {r['fd_growth']:+d} fds")
        if r["rdma_before"] != r["rdma_after"]:
            problems.append(f"{r['type']}: kernel objects {r['rdma_before']} -> {r['rdma_after']}")
    end = recs[-1]
    if end.get("rdma_start") != end.get("rdma_end"):
        problems.append(f"kernel objects not back to baseline: {end}")
    return problems, len([r for r in recs if "type" in r])


def test_create_destroy_cycles_do_not_leak():
    problems, ran = _leak_cases()
    assert ran >= 12
    assert not problems, "\n".join(problems)


# libibverbs' own memory verbs over rxe's reg_mr (rdma-core 59 and 64):
# created for real only where the loaded library has them, so this runs in
# the sid root of the distribution matrix too (tools/distro-subset.txt).
LIBRARY_MEMORY = (
    "MR (reg_mr_ex at an iova, or EOPNOTSUPP)",
    "Buf + MRs (reg_buf_mr, reg_mr_ex(buf=), or EOPNOTSUPP)",
)


def test_library_memory_verb_cycles_do_not_leak():
    """The cycles of LIBRARY_MEMORY alone: where the library has the verbs
    each cycle creates and frees the MRs and Bufs (a refusal there fails
    the cycle), elsewhere each asserts the refusal."""
    print("libibverbs", ib.library_version, "reg_mr_ex", ib.optional_verbs["ibv_reg_mr_ex"])
    problems, ran = _leak_cases(*LIBRARY_MEMORY)
    assert ran == len(LIBRARY_MEMORY)
    assert not problems, "\n".join(problems)


CM_CYCLES = int(os.environ.get("IBVERBS_CM_LEAK_CYCLES", "200"))


def test_cm_connect_cycles_do_not_leak():
    """cm_leak.py: connect/transfer/disconnect cycles through the
    connection manager leave RSS, fds and the kernel's cm_id, qp, cq, pd
    and mr counts flat (IBVERBS_CM_LEAK_CYCLES: 200 in `make test`, 2,000
    in `make leakcheck`)."""
    if not ib.has_rdmacm():
        pytest.skip("librdmacm.so.1 cannot be loaded")
    # A leak grows on every run; a one-time step of the child's heap (a
    # new malloc arena: about 1 MiB, seen once in 200 cycles that grow
    # 16-28 KiB otherwise) does not.  So RSS over the limit is measured
    # once more, in a new child, and must be over it again to fail.
    for _ in range(2):
        r = _cm_leak_run()
        assert r["fd_growth"] == 0
        assert r["rdma_before"] == r["rdma_after"]
        if r["rdma_after"] is not None:
            assert "cm_id" in r["rdma_after"]
        if SANITIZED or r["rss_growth_kib"] < RSS_LIMIT_KIB:
            break
    else:
        raise AssertionError(
            f"RSS grew {r['rss_growth_kib']} KiB (limit {RSS_LIMIT_KIB}) on two runs"
        )


def _cm_leak_run():
    proc = subprocess.run(
        [sys.executable, str(HERE / "cm_leak.py"), device_name(), str(CM_CYCLES)],
        capture_output=True,
        text=True,
        timeout=scaled(max(900, CM_CYCLES)),
        cwd=str(HERE),
    )
    assert proc.returncode == 0 and "DONE" in proc.stdout, (
        f"exit status {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    r = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    print(
        f"cm_connect: {r['cycles']} cycles, RSS +{r['rss_growth_kib']} KiB, "
        f"fds {r['fd_growth']:+d}, {r['seconds']} s, {r['rdma_after']}"
    )
    return r
