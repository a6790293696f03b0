"""The type stubs (src/ibverbs/_ibverbs.pyi, enums.pyi, py.typed) describe the
built module: mypy --strict over the package and tests/typing/examples.py,
and stubtest against the runtime (README, Portability; ``make typecheck``
runs the same two commands)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ibverbs
from support import load_path

ROOT = Path(__file__).resolve().parents[2]
TYPING = ROOT / "tests" / "typing"
PKG = Path(ibverbs.__file__).resolve().parent

have_mypy = importlib.util.find_spec("mypy") is not None
need_mypy = pytest.mark.skipif(
    not have_mypy, reason="mypy not installed (pip install -e '.[test]' brings it)"
)
need_source = pytest.mark.skipif(
    not (ROOT / "src" / "ibverbs" / "_ibverbs.pyi").exists(),
    reason="not run from the source tree (the mypy configuration and tests/typing live there)",
)


def _load_gen():
    return load_path("_ibverbs_gen_enum_stubs", TYPING / "gen_enum_stubs.py")


def _run(*args):
    env = dict(os.environ)
    env.pop("MYPYPATH", None)
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_package_ships_its_stubs():
    # PEP 561: py.typed marks the package typed; the extension and the
    # enums built at import have stubs next to them.
    for name in ("py.typed", "_ibverbs.pyi", "enums.pyi"):
        assert (PKG / name).is_file(), f"{name} missing from {PKG}"


def test_enum_stub_matches_the_compiled_constants():
    # enums.pyi spells out what ibverbs.enums builds from the headers; it is
    # generated, and must be regenerated when core/enums.c changes.
    gen = _load_gen()
    stub = gen.installed_stub()
    assert stub.read_text() == gen.render(), (
        f"{stub} is stale: run python tests/typing/gen_enum_stubs.py"
    )


@need_mypy
@need_source
def test_mypy_strict_on_the_package_and_the_readme_examples():
    r = _run("mypy", "--no-error-summary")
    assert r.returncode == 0, r.stdout + r.stderr


@need_mypy
@need_source
def test_stubtest_against_the_built_module():
    r = _run(
        "mypy.stubtest",
        "ibverbs",
        "--mypy-config-file",
        "pyproject.toml",
        "--allowlist",
        "tests/typing/stubtest-allowlist.txt",
    )
    assert r.returncode == 0, r.stdout + r.stderr
