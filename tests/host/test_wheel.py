"""The wheels ``make wheel`` writes (abi3 and free-threaded, x86_64 and
aarch64) and the sdist they are built from.

For each architecture, x86_64 and aarch64 (cross-built), the wheel in
dist/ is checked from the file itself:

- auditwheel (PyPI) tags it manylinux2014 (glibc 2.17) or older, and the
  file name carries that tag, cp39-abi3;
- its extension is an ELF of the right machine; NEEDED lists glibc's own
  libraries only (libc.so.6, libdl.so.2 / libpthread.so.0 where dlopen
  lived before glibc 2.34, the dynamic loader), no RPATH/RUNPATH;
- no versioned glibc symbol newer than GLIBC_2.17 (readelf --version-info),
  no undefined ibv_*/rdma_* symbol and no libibverbs/librdmacm link.

The method (setup.py, glibc_floor.h) is checked on a small file too, for
both architectures: the same dlopen call is GLIBC_2.34 without the header
and the base version with it.

A wheel that is not in dist/ skips, saying so, unless
IBVERBS_REQUIRE_WHEELS=1 (make test sets it, after make wheel); the
aarch64 ones skip only when the cross compiler is absent (make deps
installs it).
"""

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
C_DIR = ROOT / "src" / "ibverbs" / "_ibverbs"
CROSS = {"x86_64": "gcc", "aarch64": "aarch64-linux-gnu-gcc"}
E_MACHINE = {"x86_64": 62, "aarch64": 183}
BASE = {"x86_64": "GLIBC_2.2.5", "aarch64": "GLIBC_2.17"}
GLIBC_LIBS = {
    "x86_64": {"libc.so.6", "libdl.so.2", "libpthread.so.0", "ld-linux-x86-64.so.2"},
    "aarch64": {"libc.so.6", "libdl.so.2", "libpthread.so.0", "ld-linux-aarch64.so.1"},
}
# Only in the source tree: tools/test-wheels runs these tests from a
# scratch copy of tests/, which has no dist/.
REQUIRED = os.environ.get("IBVERBS_REQUIRE_WHEELS") == "1" and (ROOT / "setup.py").exists()

need_readelf = pytest.mark.skipif(shutil.which("readelf") is None, reason="no readelf (binutils)")


def _version():
    text = (ROOT / "pyproject.toml").read_text()
    (version,) = re.findall(r'^version = "([^"]+)"$', text, re.M)
    return version


def _need_cross(arch):
    if shutil.which(CROSS[arch]) is None:
        if arch == "aarch64":
            pytest.skip(f"no {CROSS[arch]} (the cross tools; make deps installs them)")
        pytest.skip(f"no {CROSS[arch]}")


def _missing(what):
    if REQUIRED:
        pytest.fail(f"{what} (IBVERBS_REQUIRE_WHEELS=1)")
    pytest.skip(f"{what}: make wheel writes it")


def _wheel(arch):
    _need_cross(arch)
    found = sorted(DIST.glob(f"ibverbs-{_version()}-cp39-abi3-*{arch}.whl"))
    if not found:
        _missing(f"no dist/ibverbs-{_version()}-cp39-abi3-*_{arch}.whl")
    assert len(found) == 1, found
    return found[0]


def _readelf(*args):
    return subprocess.run(
        ["readelf", "-W", *args], check=True, capture_output=True, text=True
    ).stdout


def _glibc(v):
    return tuple(int(x) for x in v.split("."))


def elf_facts(so):
    """(e_machine, NEEDED, glibc versions needed, RPATH/RUNPATH lines,
    undefined symbol names) of a shared object, by readelf."""
    head = Path(so).read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and head[4] == 2, "not a 64-bit ELF"
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    dyn = _readelf("-d", str(so))
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", dyn))
    paths = re.findall(r"\((?:RPATH|RUNPATH)\).*", dyn)
    versions = set(re.findall(r"Name: (GLIBC_[0-9.]+)", _readelf("-V", str(so))))
    undefined = set()
    for line in _readelf("--dyn-syms", str(so)).splitlines():
        f = line.split()
        if len(f) >= 8 and f[6] == "UND":
            undefined.add(f[7].split("@")[0])
    return machine, needed, versions, paths, undefined


def _extension(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert "ibverbs/_ibverbs.abi3.so" in names, names
        assert not [n for n in names if n.endswith((".c", ".h"))]
        assert {"ibverbs/py.typed", "ibverbs/_ibverbs.pyi"} <= set(names)
        return Path(z.extract("ibverbs/_ibverbs.abi3.so", tmp_path))


ARCHES = pytest.mark.parametrize("arch", ["x86_64", "aarch64"])


@need_readelf
@ARCHES
def test_wheel_extension_needs_only_glibc_2_17(arch, tmp_path):
    so = _extension(_wheel(arch), tmp_path)
    machine, needed, versions, paths, undefined = elf_facts(so)
    assert machine == E_MACHINE[arch]
    assert "libc.so.6" in needed and needed <= GLIBC_LIBS[arch], needed
    assert versions and max(_glibc(v[6:]) for v in versions) <= (2, 17), sorted(versions)
    assert paths == []
    assert not [s for s in undefined if s.startswith(("ibv_", "rdma_", "_ibv_"))]
    assert b"libibverbs.so.1\0" in so.read_bytes()


@ARCHES
def test_auditwheel_tags_the_wheel_manylinux2014(arch):
    wheel = _wheel(arch)
    m = re.fullmatch(rf"ibverbs-{re.escape(_version())}-cp39-abi3-(.+)\.whl", wheel.name)
    assert m, wheel.name
    tags = m.group(1).split(".")
    assert f"manylinux2014_{arch}" in tags or any(
        re.fullmatch(rf"manylinux_2_(\d+)_{arch}", t) and int(t.split("_")[2]) <= 17 for t in tags
    ), tags
    r = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if r.returncode != 0 and "No module named auditwheel" in r.stderr:
        _missing("auditwheel is not installed (make wheel installs it)")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    m = re.search(rf'consistent with the following platform tag: "manylinux_2_(\d+)_{arch}"', text)
    assert m and int(m.group(1)) <= 17, text
    assert "cp39-abi3" in text


def test_sdist_carries_every_source_file():
    found = sorted(DIST.glob(f"ibverbs-{_version()}.tar.gz"))
    if not found:
        _missing(f"no dist/ibverbs-{_version()}.tar.gz")
    top = f"ibverbs-{_version()}/"
    with tarfile.open(found[0]) as t:
        names = {n[len(top) :] for n in t.getnames() if n.startswith(top)}
    c_files = {str(p.relative_to(ROOT)) for p in C_DIR.rglob("*.[ch]")}
    assert c_files and c_files <= names, sorted(c_files - names)
    py_files = {str(p.relative_to(ROOT)) for p in (ROOT / "src" / "ibverbs").glob("*.py")}
    assert py_files <= names, sorted(py_files - names)
    assert {"setup.py", "pyproject.toml", "README.md", "LICENSE", "PKG-INFO"} <= names


# ---------------------------------------- the method, on a small file ---

DLOPEN_C = """
#include <dlfcn.h>
#include <fcntl.h>
void *probe(const char *n) { return fcntl(0, F_GETFD) < 0 ? 0 : dlopen(n, RTLD_NOW); }
"""


@need_readelf
@ARCHES
@pytest.mark.parametrize("floor", [False, True], ids=["plain", "glibc_floor"])
def test_glibc_floor_header_pins_dlopen_and_fcntl(arch, floor, tmp_path):
    _need_cross(arch)
    src = tmp_path / "probe.c"
    src.write_text(DLOPEN_C)
    so = tmp_path / "probe.so"
    cmd = [CROSS[arch], "-shared", "-fPIC", "-O2", "-D_FILE_OFFSET_BITS=64"]
    if floor:
        cmd += ["-include", str(C_DIR / "glibc_floor.h")]
    cmd += ["-o", str(so), str(src)]
    if floor:
        cmd += ["-Wl,--no-as-needed", "-l:libdl.so.2"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    machine, needed, versions, _, undefined = elf_facts(so)
    assert machine == E_MACHINE[arch]
    assert {"dlopen", "fcntl64" if not floor else "fcntl"} <= undefined
    syms = _readelf("--dyn-syms", str(so))
    if floor:
        assert versions <= {BASE[arch], "GLIBC_2.17"}, versions
        assert f"dlopen@{BASE[arch]}" in syms
        assert "libdl.so.2" in needed
    else:
        # what a plain build on this glibc (2.34 or newer) references
        assert "GLIBC_2.34" in versions, versions
