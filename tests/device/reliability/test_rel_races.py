"""1,000 races of close() against calls in another thread (race_cases.py,
run in a subprocess so that a crash or a hang fails the test instead of
killing the run): close() of a CompChannel, Context, PD, QP or CQ while
another thread is inside get_cq_event, get_async_event, post_send, poll,
QP.query or reg_mr; and two threads polling one CQ.

The contract (README, "Safety"): GIL-free calls mark their handle busy and
close() raises VerbsError(EBUSY) meanwhile; otherwise close() succeeds and
the other thread's next call raises VerbsError(EBADF).  Never a crash.
"""

import json
import os
import subprocess
import sys

from pathlib import Path

import pytest

from support import device_name
from support.timeouts import scaled

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.integration

SCALE = float(os.environ.get("IBVERBS_RACE_SCALE", "1"))
EXPECTED = {"A": 250, "B": 200, "C": 100, "D": 250, "E": 100, "F": 100, "G": 40}


def test_close_races_blocking_calls():
    proc = subprocess.run(
        [sys.executable, str(HERE / "race_cases.py"), device_name(), "--scale", str(SCALE)],
        capture_output=True,
        text=True,
        timeout=scaled(900),
        cwd=str(HERE),
    )
    kinds = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    summary = "\n".join(
        f"{k['kind']}: {k['n']} races {k['counts']} ({k.get('seconds')} s)" for k in kinds
    )
    print(summary)
    errors = [f"{k['kind']}: {e}" for k in kinds for e in k["errors"]]
    assert proc.returncode == 0 and "DONE" in proc.stdout, (
        f"race_cases.py exit status {proc.returncode}\n{summary}\n"
        + "\n".join(errors)
        + f"\n{proc.stderr[-3000:]}"
    )
    assert not errors, "\n".join(errors)
    by = {k["kind"][0]: k for k in kinds}
    for letter, n in EXPECTED.items():
        assert by[letter]["n"] == max(1, int(n * SCALE)), by[letter]
    total = sum(k["n"] for k in kinds if k["kind"][0] != "G")
    assert total >= int(1000 * SCALE)
    # Both sides of the race happened: calls caught in flight (EBUSY while
    # busy, then woken) and closes that won (the call then saw EBADF).
    if SCALE >= 1:
        assert by["B"]["counts"].get("EBUSY, call woken", 0) > 0, by["B"]
        assert by["B"]["counts"].get("closed, call EBADF", 0) > 0, by["B"]
        assert by["E"]["counts"].get("EBUSY", 0) > 0, by["E"]
