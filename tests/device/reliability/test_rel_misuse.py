"""Misuse suite: every public method of every type, called after close,
after its parent closed, with None, wrong types, out-of-range values,
objects of another Context or PD, and objects that run Python code in the
middle of a call (closing what the call is using).  Every case must raise
TypeError, ValueError, OverflowError or VerbsError (EBADF for a closed
handle) or, where the case allows it, succeed; never crash.

The host group (no device) is tests/host/reliability/test_rel_misuse_host.py.
The cases live in misuse_cases.py and run in subprocesses (one per group,
restarted after a case that kills it), so a segfault is a failed case,
not a dead test run.
"""

from pathlib import Path

import pytest

import ibverbs as ib

from support import device_name, load_path
from support.fakes import load_fake_module
from support.process import check_cases, run_cases

HERE = Path(__file__).resolve().parent


@pytest.mark.integration
def test_misuse_device():
    """Context, PD, MR, CQ, CompChannel, QP, SRQ, AH, AsyncEvent, the CM's
    CMID and CMListener on a live device, plus a second Context on the
    same device."""
    name = device_name()
    results, crashes, extra = run_cases(HERE / "misuse_cases.py", "device", "--device", name)
    check_cases(results, crashes, 1000)
    # The table covers every public member of every handle type.
    covered = extra["covered"]
    cm = {"CMID", "CMListener"} if ib.has_rdmacm() else set()
    assert set(covered) == cm | {
        "Context",
        "PD",
        "MR",
        "CQ",
        "CompChannel",
        "QP",
        "SRQ",
        "AH",
        "MW",
        "QPEx",
        "CQEx",
    }
    assert not [r for r in results if "NOT IN THE MISUSE TABLE" in r["name"]]


@pytest.mark.integration
def test_misuse_efa_over_the_fake_libefa(tmp_path):
    """ibverbs.efa's functions, efa.QP and efa.CQ on a live device, with
    the fake libefa.so.1 (tests/fakes/efa/: a double, which makes rxe
    objects where libefa makes EFA ones); the real libefa's refusals of
    the same calls are in the device group above."""
    import os

    build = HERE.parents[1] / "fakes" / "efa" / "build.py"
    mod = load_path("fake_efa_build", build)
    if load_fake_module("cshared").compiler() is None:
        # the arm64 guest of make test-arm64 has none
        pytest.skip("no C compiler (cc, gcc or clang) to build the fake libefa")
    env = dict(os.environ, IBVERBS_LIBEFA=str(mod.build(tmp_path)))
    results, crashes, extra = run_cases(
        HERE / "misuse_cases.py", "efa", "--device", device_name(), env=env
    )
    check_cases(results, crashes, 100)
    assert set(extra["covered"]) == {"efa.QP", "efa.CQ"}
    assert not [r for r in results if "NOT IN THE MISUSE TABLE" in r["name"]]
