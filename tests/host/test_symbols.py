"""The built module links neither libibverbs nor librdmacm: no undefined ibv_*
or rdma_* symbol and
only glibc's own libraries NEEDED: libc, and libdl.so.2 in a wheel's build
(IBVERBS_GLIBC_FLOOR, setup.py), where dlopen & co. are bound to their
pre-2.34 versions (README, Portability)."""

import shutil
import subprocess
import sysconfig

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
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        # the free-threaded build's thread-local storage (core/handle.c):
        # __tls_get_addr, from glibc's own loader
        needed = [n for n in needed if not n.startswith("ld-linux")]
    if needed != ["libc.so.6"]:
        # the glibc-2.17 build of make wheel: libdl only for the old dlopen
        assert needed == ["libdl.so.2", "libc.so.6"], needed
        syms = subprocess.run(
            ["readelf", "-W", "--dyn-syms", SO], check=True, capture_output=True, text=True
        ).stdout
        assert "dlopen@GLIBC_2.2.5" in syms or "dlopen@GLIBC_2.17" in syms


@pytest.mark.skipif(shutil.which("nm") is None, reason="binutils nm not installed")
def test_exports_only_the_init_function():
    out = subprocess.run(
        ["nm", "-D", "--defined-only", SO], check=True, capture_output=True, text=True
    ).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.split()]
    assert names == ["PyInit__ibverbs"]
