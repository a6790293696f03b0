"""make coverage's plumbing, checked without a coverage run (minutes):
setup.py's IBVERBS_INSTRUMENT knob gives the flags, the Makefile's target
runs the suites that make test runs (the same markers, the guests writing to
the --rw share), tools/coverage-python sends the counters there, and
tools/coverage's per-folder table adds up."""

import importlib.util
import re
import sys
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP_PY = ROOT / "setup.py"
MAKEFILE = ROOT / "Makefile"
TOOL = ROOT / "tools" / "coverage"
WRAPPER = ROOT / "tools" / "coverage-python"

pytestmark = pytest.mark.skipif(
    not (SETUP_PY.exists() and TOOL.exists()),
    reason="setup.py and tools/ are not in this tree (the wheel tests copy tests/ only)",
)


def _load(name, path):
    loader = SourceFileLoader(name, str(path))  # tools/coverage has no .py
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def setup_py():
    return _load("_ibverbs_setup_cov", SETUP_PY)


@pytest.fixture(scope="module")
def tool():
    return _load("_ibverbs_coverage_tool", TOOL)


def _recipe(target: str) -> str:
    """The recipe of TARGET in the Makefile, continuation lines joined."""
    text = MAKEFILE.read_text().replace("\\\n", " ")
    m = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M)
    assert m, f"no recipe for {target} in the Makefile"
    return m.group(1)


def test_instrument_knob_adds_the_coverage_flags(setup_py, monkeypatch):
    monkeypatch.setattr(setup_py, "probed_defines", lambda extra: [])
    monkeypatch.delenv("IBVERBS_EXTRA_CFLAGS", raising=False)
    monkeypatch.delenv("IBVERBS_EXTRA_LDFLAGS", raising=False)
    monkeypatch.delenv("IBVERBS_INSTRUMENT", raising=False)
    plain = setup_py.extension()
    assert "--coverage" not in plain.extra_compile_args
    assert "--coverage" not in plain.extra_link_args

    monkeypatch.setenv("IBVERBS_INSTRUMENT", "coverage")
    ext = setup_py.extension()
    for flag in ("--coverage", "-O0", "-g"):
        assert flag in ext.extra_compile_args
    assert "--coverage" in ext.extra_link_args
    # setuptools puts these after the interpreter's flags: its -O2 is undone.

    monkeypatch.setenv("IBVERBS_INSTRUMENT", "no-such-build")
    with pytest.raises(SystemExit, match="coverage"):
        setup_py.extension()


def test_make_coverage_runs_the_suites_of_make_test():
    cov = _recipe("coverage")
    # The interpreter of every suite is the wrapper, which writes the counters.
    assert "$(COV_PY)" in cov and "$(VPY) -m pytest" not in cov
    assert "tools/coverage build" in cov and "tools/coverage report" in cov
    # The host suite, with make test-host's markers.
    host = re.search(r"-m '([^']*)'", _recipe("test-host")).group(1)
    assert f"-m '{host}'" in cov
    # The device suite as test-guest runs it: both halves, then the removal.
    assert "--nodes 2" in cov and "sh tools/guest-suite $(COV_PY) " in cov
    # Every boot of test-twonode, by its markers.
    for markers in re.findall(r"-m '([^']*)'", _recipe("test-twonode")):
        assert f"-m '{markers}' tests/twonode" in cov, markers
    # Each guest boot shares $(OUT) read-write: the counters come back.
    boots = cov.count("$(RXE_VM)")
    assert boots == 4 and cov.count("--rw $(OUT)") == boots


def test_coverage_tools_come_from_the_makefile_pinned():
    text = MAKEFILE.read_text()
    tools = re.search(r"^COVERAGE_TOOLS := (.*)$", text, re.M).group(1).split()
    assert sorted(t.split("==")[0] for t in tools) == ["coverage", "gcovr"]
    assert all("==" in t for t in tools)
    assert re.search(r"^coverage: [^\n]*\$\(VENV\)/\.coverage-tools", text, re.M)


def test_wrapper_writes_into_the_guests_rw_share(tool):
    text = WRAPPER.read_text()
    # tools/coverage reads what the wrapper writes: the same directories.
    assert tool.DATA == ROOT / "build" / "out" / "coverage-data"
    assert 'data=$root/build/out/coverage-data' in text
    assert 'build=$root/build/coverage' in text and tool.BUILD == ROOT / "build" / "coverage"
    for var in ("GCOV_PREFIX=", "GCOV_PREFIX_STRIP=", "COVERAGE_FILE=", "PYTHONPATH="):
        assert f"export {var}" in text
    # One directory of counters per suite and node.
    assert "${IBVERBS_COVERAGE_RUN:-run}.node${IBVERBS_NODE:-0}" in text


def test_folder_table_adds_up(tool):
    def f(name, lines, branches, functions):
        return {
            "filename": name,
            "line_covered": lines[0],
            "line_total": lines[1],
            "branch_covered": branches[0],
            "branch_total": branches[1],
            "function_covered": functions[0],
            "function_total": functions[1],
        }

    summary = {
        "files": [
            f("src/ibverbs/_ibverbs/qp/qp.c", (8, 10), (3, 4), (1, 2)),
            f("src/ibverbs/_ibverbs/qp/templates/x.h", (1, 10), (0, 0), (0, 1)),
            f("src/ibverbs/_ibverbs/cm/cm.c", (0, 5), (0, 2), (0, 1)),
            f("src/ibverbs/other.c", (5, 5), (1, 1), (1, 1)),  # outside the core
        ]
    }
    rows = tool.folder_rows(summary)
    assert rows == [
        ("cm/", 0, 5, 0, 2, 0, 1),
        ("qp/", 9, 20, 3, 4, 1, 3),
        ("TOTAL", 9, 25, 3, 6, 1, 4),
    ]
    table = tool.folder_table(rows).splitlines()
    assert table[-1].split()[:2] == ["TOTAL", "36.0%"]
    assert " 0.0%" in table[2] and "    0/5" in table[2]
