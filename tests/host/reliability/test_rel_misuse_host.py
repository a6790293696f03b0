"""The misuse suite's host group: WRs, SGEs, WCs, records, helpers and
module functions, with no device (the device group and what a case
expects: tests/device/reliability/test_rel_misuse.py)."""

from support import TESTS
from support.process import check_cases, run_cases

CASES = TESTS / "device" / "reliability" / "misuse_cases.py"


def test_misuse_host():
    """WRs, SGEs, WCs, records, helpers, module functions: no device."""
    results, crashes, _ = run_cases(CASES, "host")
    check_cases(results, crashes, 400)
