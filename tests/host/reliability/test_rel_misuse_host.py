"""The misuse suite's host group: WRs, SGEs, WCs, records, helpers and
module functions, with no device (the device group and what a case
expects: tests/device/reliability/test_rel_misuse.py)."""

import pytest

from support import TESTS
from support.process import check_cases, run_cases

CASES = TESTS / "device" / "reliability" / "misuse_cases.py"


def test_misuse_host():
    """WRs, SGEs, WCs, records, helpers, module functions: no device."""
    results, crashes, _ = run_cases(CASES, "host")
    check_cases(results, crashes, 400)


def test_misuse_host_mlx5():
    """ibverbs.mlx5's functions, mlx5.QP and mlx5.CQ (misuse_mlx5.py) on
    the fake libmlx5 over the recording double, which the host group
    builds (a C compiler is needed: without one it has no mlx5 cases)."""
    from support.fakes import load_fake_module

    if load_fake_module("recording").compiler() is None:
        pytest.skip("no C compiler for the fake libmlx5")
    results, crashes, _ = run_cases(CASES, "host")
    mlx5 = [r for r in results if r["name"].startswith("mlx5.")]
    assert not crashes
    assert len(mlx5) > 1000, len(mlx5)
    assert all(r["ok"] for r in mlx5)
    names = {r["name"].split("(")[0] for r in mlx5}
    for fn in ("is_supported", "create_qp", "init_obj", "get_cqe_opcode", "reg_dmabuf_mr"):
        assert f"mlx5.{fn}" in names
    for m in ("wr_set_dc_addr", "wr_set_dc_addr_stream", "query_lag_port", "poll", "wr_start"):
        assert any(n.endswith(f".{m}") for n in names), m
    assert not [r for r in results if "NOT IN THE MISUSE TABLE" in r["name"]]
