"""dlopen/dlsym loading: a missing libibverbs is a clean ImportError that
names the library and the package providing it."""

import os
import shutil
import subprocess
import sys

import pytest

from support.process import without_file

CODE = "import ibverbs"


def run_py(code, env=None, prefix=()):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(
        [*prefix, sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120
    )


def test_missing_library_override_is_import_error(tmp_path):
    r = run_py(CODE, {"IBVERBS_LIBIBVERBS": str(tmp_path / "libibverbs.so.1")})
    assert r.returncode == 1
    assert "ImportError" in r.stderr
    assert "libibverbs.so.1" in r.stderr and "libibverbs1" in r.stderr
    assert "Segmentation" not in r.stderr


def test_library_without_verbs_names_the_missing_symbol():
    # libc is a real library that lacks every verb.
    r = run_py(CODE, {"IBVERBS_LIBIBVERBS": "libc.so.6"})
    assert r.returncode == 1
    assert "ImportError" in r.stderr and "ibv_get_device_list" in r.stderr


def _real_lib():
    from ibverbs import library_path

    return library_path


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare(1) for a private mount namespace",
)
def test_no_libibverbs_in_a_private_mount_namespace(tmp_path):
    lib = _real_lib()
    r = without_file(lib, CODE, tmp_path)
    if "mount:" in r.stderr and "ImportError" not in r.stderr:
        pytest.skip(f"bind mount not permitted here: {r.stderr.strip()}")
    assert r.returncode == 1, r.stderr
    assert "ImportError" in r.stderr and "libibverbs.so.1" in r.stderr
