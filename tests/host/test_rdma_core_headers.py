"""The source builds against every rdma-core from 33 to the newest.

For Debian 11's rdma-core 33 headers and Debian unstable's newest (65 when
written), fetched by tools/rdma-headers into
~/.cache/ibverbs-rdma-headers (once; about 9 s each), the extension is
built through setup.py (its probes, its flags) with the headers ahead of
/usr/include (``-isystem``), then imported against this machine's
libibverbs in a fresh interpreter:

- rdma-core 33: no probe of setup.py's PROBES holds; the module imports;
  what 33 lacks is absent from the enums (ATOMIC_WRITE, FLUSH) and the
  exported verbs 33 does not declare still load from a newer library
  (compat.h's prototypes: is_fork_initialized answers).
- the newest: every probe holds, WROpcode.FLUSH and the flush access bits
  are there.
Both builds match enums.pyi, which names the members only newer headers
have (Debian 13's rdma-core 56 adds FLUSH to Debian 12's 44).

A failed fetch or build fails the test: its output is in the message.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import load_path

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "setup.py"

pytestmark = pytest.mark.skipif(
    not SETUP.exists(), reason="not run from the source tree (no setup.py)"
)


def _setup_module():
    return load_path("_ibverbs_setup", SETUP)


def _succeeds(what, cmd, timeout, **kw):
    """subprocess.run(cmd, **kw) exits 0 (else the test fails naming WHAT,
    with the output); the CompletedProcess (text)."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert r.returncode == 0, f"{what} failed:\n{r.stdout}\n{r.stderr}"
    return r


def _headers(suite):
    r = _succeeds(f"tools/rdma-headers {suite}", [str(ROOT / "tools" / "rdma-headers"), suite], 600)
    inc = Path(r.stdout.strip().splitlines()[-1])
    assert (inc / "infiniband" / "verbs.h").is_file()
    version = (inc.parents[2] / "version").read_text().strip()
    return inc, version


PROBE = """
import errno, importlib.util, json, sys, ibverbs
from ibverbs import _ibverbs
spec = importlib.util.spec_from_file_location("gen_enum_stubs", sys.argv[1])
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
out = {"file": _ibverbs.__file__,
       "stub_current": gen.installed_stub().read_text() == gen.render(),
       "wr": sorted(ibverbs.WROpcode.__members__),
       "wc": sorted(ibverbs.WCOpcode.__members__),
       "ops": sorted(ibverbs.QPCreateSendOpsFlags.__members__),
       "access": sorted(ibverbs.AccessFlags.__members__),
       "optional": ibverbs.optional_verbs}
try:
    out["fork"] = ibverbs.is_fork_initialized()
except ibverbs.VerbsError as e:
    out["fork"] = [e.errno == errno.EOPNOTSUPP, str(e)]
print(json.dumps(out))
"""


def _build_and_import(tmp_path, inc):
    """Build the extension against the headers in ``inc``; import it."""
    pkg = tmp_path / "pkg"
    shutil.copytree(
        ROOT / "src" / "ibverbs",
        pkg / "ibverbs",
        ignore=shutil.ignore_patterns("*.so", "__pycache__", "_ibverbs"),
    )
    env = dict(os.environ)
    env["IBVERBS_EXTRA_CFLAGS"] = f"-isystem {inc}"
    env.pop("IBVERBS_GLIBC_FLOOR", None)
    r = _succeeds(
        f"build against {inc}",
        [
            sys.executable,
            str(SETUP),
            "-q",
            "build_ext",
            "-j",
            str(min(os.cpu_count() or 1, 4)),
            "--build-lib",
            str(tmp_path / "lib"),
            "--build-temp",
            str(tmp_path / "tmp"),
        ],
        900,
        cwd=ROOT,
        env=env,
    )
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    assert errors == [], "\n".join(errors)
    (so,) = (tmp_path / "lib" / "ibverbs").glob("_ibverbs*.so")
    shutil.copy(so, pkg / "ibverbs")
    # -S: no site, so no editable install's finder; only pkg/ is importable.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(pkg)
    r = _succeeds(
        f"import of the build against {inc}",
        [sys.executable, "-S", "-c", PROBE, str(ROOT / "tests" / "typing" / "gen_enum_stubs.py")],
        120,
        cwd=tmp_path,
        env=env,
    )
    got = json.loads(r.stdout)
    assert got["file"].startswith(str(pkg))
    # enums.pyi is the same for every rdma-core: it names the members that
    # only newer headers have (tests/typing/gen_enum_stubs.py, PROBED).
    assert got["stub_current"], f"enums.pyi does not describe the build against {inc}"
    return got


def _probes(inc):
    setup = _setup_module()
    have = {d for d, _ in setup.probed_defines(["-isystem", str(inc)])}
    return have, {define for _, define, _ in setup.PROBES + setup.MLX5_PROBES}


def test_builds_and_imports_with_rdma_core_33_headers(tmp_path):
    inc, version = _headers("bullseye")
    assert version.startswith("33."), version
    have, _ = _probes(inc)
    assert have == set(), f"rdma-core {version} headers have {have}?"
    got = _build_and_import(tmp_path, inc)
    assert "ATOMIC_WRITE" not in got["wr"] and "FLUSH" not in got["wr"]
    assert "ATOMIC_WRITE" not in got["ops"] and "FLUSH" not in got["ops"]
    # (AccessFlags' two flush bits are rdma-core's ABI values, typed into
    # core/enums.c for every build: registration takes them where the kernel
    # does.)
    assert {"RDMA_WRITE", "SEND", "ATOMIC_CMP_AND_SWP"} <= set(got["wr"])
    # Undeclared by 33's headers, declared by compat.h: the loaded (newer)
    # library's verbs are found and work.
    assert got["optional"]["ibv_reg_dmabuf_mr"] is True
    assert got["optional"]["ibv_is_fork_initialized"] is True
    assert got["fork"] in (0, 1, 2)


def test_builds_and_imports_with_the_newest_rdma_core_headers(tmp_path):
    inc, version = _headers("sid")
    assert int(version.split(".")[0]) >= 65, version
    have, every = _probes(inc)
    assert have == every, f"rdma-core {version} headers lack {every - have}"
    got = _build_and_import(tmp_path, inc)
    assert {"ATOMIC_WRITE", "FLUSH"} <= set(got["wr"])
    assert {"ATOMIC_WRITE", "FLUSH"} <= set(got["wc"])
    assert {"ATOMIC_WRITE", "FLUSH"} <= set(got["ops"])
    assert {"FLUSH_GLOBAL", "FLUSH_PERSISTENT"} <= set(got["access"])


def test_every_probe_names_a_release_between_34_and_the_newest():
    setup = _setup_module()
    probes = setup.PROBES + setup.MLX5_PROBES  # mlx5dv.h's: mlx5/
    defines = [define for _, define, _ in probes]
    assert len(defines) == len(set(defines))
    for expr, define, release in probes:
        assert define.startswith("IBVERBS_HAVE_") and 34 <= release <= 65, (expr, define)
    # Every probed define is used by the C sources, and every IBVERBS_HAVE_
    # the C sources test is probed.
    used = set()
    for f in (ROOT / "src" / "ibverbs" / "_ibverbs").rglob("*.[ch]"):
        for word in f.read_text().replace("(", " ").replace(")", " ").split():
            if word.startswith("IBVERBS_HAVE_"):
                used.add(word)
    assert used == set(defines)
