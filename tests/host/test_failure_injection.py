"""Every failure path of the C core taken, on the recording double.

The cases are generated (tests/support/failinj.py): every public method's
valid call once with the double's log on, to learn the libibverbs calls
it makes; then each of those calls made to fail in turn (each errno its
man page names, else EINVAL, and ENOMEM; and, for a verb that reports
through errno, a failure that sets none: the call site's fallback errno),
and each allocation of the call (CPython's ``_testcapi.set_nomemory``).  Each case checks the exception
(a VerbsError with the injected errno that names the verb, or what the
docstring says), that the object is still usable, and that nothing is
left alive in the double once all is closed.  They run in child
processes, a few chunks side by side: a crash is reported as the case it
happened in, and the chunk goes on after it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support.process import can_fail_allocations, check_cases, run_cases

SCRIPT = Path(__file__).resolve().parents[1] / "support" / "failinj.py"
CHUNKS = 2


def _env(recording):
    return dict(recording.env(), PYTHONFAULTHANDLER="1")


@pytest.fixture(scope="module")
def outcome(recording):
    """(results, crashes, totals) of every chunk, run side by side."""

    def chunk(c):
        return run_cases(SCRIPT, str(c), str(CHUNKS), env=_env(recording))

    with ThreadPoolExecutor(CHUNKS) as pool:
        parts = list(pool.map(chunk, range(CHUNKS)))
    results = [r for rs, _, _ in parts for r in rs]
    crashes = [c for _, cs, _ in parts for c in cs]
    return results, crashes, {extra["total"] for _, _, extra in parts}


def test_every_injected_failure_is_a_clean_error(outcome, capsys):
    results, crashes, totals = outcome
    calls = [r for r in results if r["verb"] != "PyMem"]
    allocs = [r for r in results if r["verb"] == "PyMem"]
    no_errno = [r for r in calls if r["name"].endswith("| no errno")]
    alloc = can_fail_allocations()
    with capsys.disabled():
        print(
            f"\nfailure injection: {len(calls)} (method, call, errno) cases over "
            f"{len({(r['method'], r['verb']) for r in calls})} (method, call) pairs "
            f"({len(no_errno)} cases failing without errno), "
            + (
                f"each allocation of {len(allocs)} methods failed; "
                if alloc
                else "no allocation failures (this interpreter has no _testcapi); "
            )
            + f"{sum(not r['ok'] for r in results)} failing, {len(crashes)} crashed"
        )
    assert (len(allocs) > 150) == alloc
    assert len(no_errno) > 60
    check_cases(results, crashes, minimum=700 if alloc else 500)
    assert len(totals) == 1 and len(results) + len(crashes) == totals.pop()


def test_every_public_method_is_reached(recording):
    """Each public method of the C core runs in the cases (so each call
    it makes fails once), or NOT_REACHED says why not."""
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "coverage"],
        env=_env(recording),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:]
    cov = json.loads(proc.stdout.splitlines()[-1])
    missing = sorted(n for n, why in cov["unreached"].items() if not why)
    assert not missing, f"public methods no case reaches and NOT_REACHED does not name: {missing}"
    assert "Context.alloc_pd" in cov["reached"] and "QP.close" in cov["reached"]


def test_fail_nth_fails_only_the_chosen_call(recording):
    """The double's fail_nth, which the cases use to fail the k-th call of
    a verb: the calls before it and after it go through."""

    def body(fake):
        import errno

        import ibverbs

        out = []
        with ibverbs.Context("fake0") as ctx:
            fake.fail_nth("alloc_pd", errno.ENOMEM, 1)
            pds = [ctx.alloc_pd()]
            try:
                ctx.alloc_pd()
            except ibverbs.VerbsError as e:
                out.append((e.errno, e.operation))
            pds.append(ctx.alloc_pd())
            for pd in pds:
                pd.close()
        return out

    res = recording.run(body)
    assert res.ok() == [[12, "ibv_alloc_pd"]]
    assert [r.get("injected_errno") for r in res.calls("alloc_pd")] == [None, 12, None]
    assert res.live == 0, res.live_report


def test_no_errno_fails_with_errno_zero(recording):
    """The double's failure without errno (recording.NO_ERRNO), which the
    cases arm for each verb of failinj.ERRNO_VERBS: the verb fails as its
    man page says with errno 0, a stale errno cleared; the binding reports
    its fallback (EINVAL for ibv_alloc_pd), never errno 0."""

    def body(fake):
        import ctypes

        import ibverbs
        import recording

        lib = ctypes.CDLL(fake.path, use_errno=True)
        lib.ibv_get_device_list.restype = ctypes.c_void_p
        n = ctypes.c_int(-1)
        fake.fail("get_device_list", recording.NO_ERRNO)
        ctypes.set_errno(5)
        listed = lib.ibv_get_device_list(ctypes.byref(n))
        out = [listed, ctypes.get_errno()]
        with ibverbs.Context("fake0") as ctx:
            fake.fail("alloc_pd", recording.NO_ERRNO)
            try:
                ctx.alloc_pd()
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation, str(e)])
            ctx.alloc_pd().close()
        return out

    res = recording.run(body)
    listed, errno_after, (err, op, msg) = res.ok()
    assert (listed, errno_after) == (None, 0)
    assert (err, op) == (22, "ibv_alloc_pd") and "Success" not in msg, msg
    assert [r.get("injected_errno") for r in res.calls("alloc_pd")] == [-1, None]
    assert res.live == 0, res.live_report
