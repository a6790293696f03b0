"""The connection manager on the host (no RDMA device): librdmacm is loaded
lazily, import works without it, and bad arguments are refused before
anything is loaded."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import ibverbs as ib
from support.process import without_file


def run_py(code, env=None, prefix=()):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(
        [*prefix, sys.executable, "-c", textwrap.dedent(code)],
        env=e,
        capture_output=True,
        text=True,
        timeout=120,
    )


def loaded_rdmacm():
    with open("/proc/self/maps") as f:
        return "librdmacm" in f.read()


# Runs in a fresh interpreter: prints whether librdmacm got mapped at
# import and after each step.
LAZY = """
    import ibverbs as ib

    def mapped():
        with open("/proc/self/maps") as f:
            return "librdmacm" in f.read()

    print("import", mapped())
    for args in [("",), ("a\\0b",), ("h", 0), ("h", 65536), ("h", 1, ""),
                 ("h", 1, 5), ("h", 1, None, 0)]:
        try:
            ib.CMID.resolve(*args[:3], **({"timeout_ms": args[3]} if len(args) > 3 else {}))
        except (TypeError, ValueError):
            pass
    for args in [(-1,), (65536,), (1, "")]:
        try:
            ib.CMListener(*args)
        except (TypeError, ValueError):
            pass
    print("validation", mapped())
    print("has_rdmacm", ib.has_rdmacm())
    print("after", mapped())
"""


def test_import_and_argument_checks_do_not_load_librdmacm():
    r = run_py(LAZY)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert "import False" in lines and "validation False" in lines
    if "has_rdmacm True" in lines:
        assert "after True" in lines


def test_missing_librdmacm_is_a_clear_error(tmp_path):
    code = """
        import ibverbs as ib
        print("has", ib.has_rdmacm())
        print("status", ib._ibverbs._rdmacm_status())
        for f in (lambda: ib.CMID.resolve("198.18.0.1", 7471),
                  lambda: ib.CMListener(7471)):
            try:
                f()
            except ImportError as e:
                print("error", e)
    """
    r = run_py(code, {"IBVERBS_LIBRDMACM": str(tmp_path / "librdmacm.so.1")})
    assert r.returncode == 0, r.stderr
    assert "has False" in r.stdout
    errors = [line for line in r.stdout.splitlines() if line.startswith("error")]
    assert len(errors) == 2
    for line in errors:
        assert "librdmacm.so.1" in line and "librdmacm1" in line
        assert "RHEL" in line


def test_library_without_the_cm_names_the_missing_symbol():
    r = run_py(
        """
        import ibverbs as ib
        try:
            ib.CMID.resolve("198.18.0.1")
        except ImportError as e:
            print("error", e)
    """,
        {"IBVERBS_LIBRDMACM": "libc.so.6"},
    )
    assert r.returncode == 0, r.stderr
    assert "rdma_create_event_channel" in r.stdout and "librdmacm1" in r.stdout


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare(1) for a private mount namespace",
)
def test_import_without_librdmacm_in_a_private_mount_namespace(tmp_path):
    ok, path = ib._ibverbs._rdmacm_status()
    if not ok:
        pytest.skip("librdmacm is not installed here: " + path)
    code = "import ibverbs as ib; print(ib.has_rdmacm()); print(ib._ibverbs._rdmacm_status()[1])"
    r = without_file(os.path.realpath(path), code, tmp_path)
    if "mount:" in r.stderr:
        pytest.skip(f"bind mount not permitted here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("False\n")
    assert "librdmacm.so.1" in r.stdout and "librdmacm1" in r.stdout


@pytest.mark.parametrize(
    "args, kw, exc",
    [
        (("",), {}, ValueError),
        (("a\0b",), {}, ValueError),
        ((b"host",), {}, TypeError),
        ((None,), {}, TypeError),
        (("h", 0), {}, ValueError),
        (("h", 65536), {}, ValueError),
        (("h", -1), {}, ValueError),
        (("h", "1"), {}, TypeError),
        (("h", 1, ""), {}, ValueError),
        (("h", 1, "a\0"), {}, ValueError),
        (("h", 1, 5), {}, ValueError),
        (("h", 1), {"timeout_ms": 0}, ValueError),
        (("h",), {"bogus": 1}, TypeError),
    ],
)
def test_resolve_argument_validation(args, kw, exc):
    with pytest.raises(exc):
        ib.CMID.resolve(*args, **kw)


@pytest.mark.parametrize(
    "args, kw, exc",
    [
        ((-1,), {}, ValueError),
        ((65536,), {}, ValueError),
        (("7471",), {}, TypeError),
        ((7471, ""), {}, ValueError),
        ((7471, "a\0b"), {}, ValueError),
        ((7471,), {"backlog": 0}, ValueError),
    ],
)
def test_listener_argument_validation(args, kw, exc):
    with pytest.raises(exc):
        ib.CMListener(*args, **kw)


def test_types_cannot_be_built_directly():
    for t in (ib.CMID, ib.CMEvent):
        with pytest.raises(TypeError):
            t()


def test_has_rdmacm_matches_status():
    ok, detail = ib._ibverbs._rdmacm_status()
    assert ib.has_rdmacm() is ok
    if ok:
        assert "librdmacm" in detail and loaded_rdmacm()
    else:
        assert "librdmacm.so.1" in detail


def test_cm_event_types_come_from_the_header():
    from ibverbs.enums import CMEventType

    assert CMEventType.ADDR_RESOLVED == 0
    assert {
        "ESTABLISHED",
        "DISCONNECTED",
        "REJECTED",
        "CONNECT_ERROR",
        "UNREACHABLE",
        "DEVICE_REMOVAL",
        "TIMEWAIT_EXIT",
    } <= set(CMEventType.__members__)


def test_info_says_whether_the_cm_is_available(tmp_path):
    import json

    r = run_py("from ibverbs.__main__ import main; main(['info'])")
    assert r.returncode == 0, r.stderr
    ok = ib.has_rdmacm()
    assert f"connection manager: {'available' if ok else 'not available'}" in r.stdout
    r = run_py("from ibverbs.__main__ import main; main(['info', '--json'])")
    assert json.loads(r.stdout)["rdmacm"]["available"] is ok
    r = run_py(
        "from ibverbs.__main__ import main; main(['info'])",
        {"IBVERBS_LIBRDMACM": str(tmp_path / "librdmacm.so.1")},
    )
    assert r.returncode == 0, r.stderr
    assert "connection manager: not available" in r.stdout
    assert "librdmacm1" in r.stdout
