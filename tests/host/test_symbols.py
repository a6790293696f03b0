"""The built module links neither libibverbs nor librdmacm: no undefined ibv_*
or rdma_* symbol and
only libc NEEDED (README, Portability)."""

import shutil
import subprocess

import pytest

from ibverbs import _ibverbs

SO = _ibverbs.__file__


@pytest.mark.skipif(shutil.which("nm") is None, reason="binutils nm not installed")
def test_no_undefined_ibv_symbols():
    out = subprocess.run(
        ["nm", "-D", "--undefined-only", SO], check=True, capture_output=True, text=True
    ).stdout
    bad = [line for line in out.splitlines() if "ibv_" in line or "rdma_" in line]
    assert bad == []


@pytest.mark.skipif(shutil.which("readelf") is None, reason="binutils readelf not installed")
def test_needs_only_libc():
    out = subprocess.run(["readelf", "-d", SO], check=True, capture_output=True, text=True).stdout
    needed = [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]
    assert needed == ["libc.so.6"], needed


@pytest.mark.skipif(shutil.which("nm") is None, reason="binutils nm not installed")
def test_exports_only_the_init_function():
    out = subprocess.run(
        ["nm", "-D", "--defined-only", SO], check=True, capture_output=True, text=True
    ).stdout
    funcs = [line.split()[-1] for line in out.splitlines() if " T " in line]
    assert funcs == ["PyInit__ibverbs"]
