"""Misuse suite: every public method of every type, called after close,
after its parent closed, with None, wrong types, out-of-range values,
objects of another Context or PD, and objects that run Python code in the
middle of a call (closing what the call is using).  Every case must raise
TypeError, ValueError, OverflowError or VerbsError (EBADF for a closed
handle) or, where the case allows it, succeed; never crash.

The cases live in misuse_cases.py and run in subprocesses (one per group,
restarted after a case that kills it), so a segfault is a failed case,
not a dead test run.
"""

import pytest

from relutil import device_name, run_cases


def check(results, crashes, minimum):
    lines = [f"CRASHED (exit status {c['rc']}) in case {c['i']}: {c['name']}\n"
             f"{c['stderr']}" for c in crashes]
    for r in results:
        if not r["ok"]:
            lines.append(f"case {r['i']} {r['name']}: {r['why']} "
                         f"[{r['exc']}: {r['msg']}]" + (f"\n{r['tb']}" if "tb" in r else ""))
    assert not lines, f"{len(lines)} misuse case(s) failed:\n" + "\n".join(lines)
    assert len(results) >= minimum, f"only {len(results)} cases ran"


def test_misuse_host():
    """WRs, SGEs, WCs, records, helpers, module functions: no device."""
    results, crashes, _ = run_cases("misuse_cases.py", "host")
    check(results, crashes, 400)


@pytest.mark.integration
def test_misuse_device():
    """Context, PD, MR, CQ, CompChannel, QP, SRQ, AH, AsyncEvent on a live
    device, plus a second Context on the same device."""
    name = device_name()
    results, crashes, extra = run_cases("misuse_cases.py", "device", "--device", name)
    check(results, crashes, 1000)
    # The table covers every public member of every handle type.
    covered = extra["covered"]
    assert set(covered) == {"Context", "PD", "MR", "CQ", "CompChannel", "QP",
                            "SRQ", "AH"}
    assert not [r for r in results if "NOT IN THE MISUSE TABLE" in r["name"]]
