"""Portability (README, Portability): one abi3 extension for CPython 3.9 and
newer, and a libibverbs that lacks newer verbs still imports.

- The built extension uses only the 3.9 stable ABI (abi3audit).
- An rdma-core without ``ibv_reg_dmabuf_mr`` (or any other optional verb)
  imports; only the call that needs the verb raises.  Emulated with
  tests/fakes/noverbs_shim.c, a libibverbs stand-in that forwards every verb
  to the real library except the hidden ones, loaded through the test-only
  override IBVERBS_LIBIBVERBS.  The device half (``PD.reg_dmabuf_mr``
  raising EOPNOTSUPP) is tests/device/test_portability_device.py.
- The installed distribution's metadata: BSD-3-Clause, Python >= 3.9, the
  ``test`` and ``gpu`` extras, and one version, pyproject.toml's.

The wheel-level claims (file name tag, ``auditwheel show``, NEEDED and the
glibc 2.17 floor, for x86_64 and aarch64) are tests/host/test_wheel.py's;
every CPython on the machine is tools/test-wheels'; builds against
rdma-core 33's and the newest headers are test_rdma_core_headers.py's.
"""

import importlib.metadata
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.fakes import load_fake_module

import ibverbs
from ibverbs import _ibverbs

ROOT = Path(__file__).resolve().parents[2]
SO = _ibverbs.__file__
OPTIONAL = (
    "ibv_reg_dmabuf_mr",
    "ibv_reg_mr_iova2",
    "ibv_reg_mr_iova",
    "_ibv_query_gid_ex",
    "_ibv_query_gid_table",
    "ibv_is_fork_initialized",
    "ibv_qp_to_qp_ex",
    "ibv_attach_mcast",
    "ibv_detach_mcast",
    "ibv_init_ah_from_wc",
    "ibv_create_ah_from_wc",
    "ibv_query_qp_data_in_order",
    # ECE (qp/rate_limit_ece.c)
    "ibv_set_ece",
    "ibv_query_ece",
    # memory, import and device verbs (rdma-core 59-64)
    "ibv_rereg_mr",
    "ibv_import_device",
    "ibv_import_pd",
    "ibv_unimport_pd",
    "ibv_import_mr",
    "ibv_unimport_mr",
    "ibv_import_dm",
    "ibv_unimport_dm",
    "ibv_reg_mr_ex",
    "ibv_alloc_dmah",
    "ibv_dealloc_dmah",
    "ibv_dm_export_dmabuf_fd",
    "ibv_query_port_speed",
    "ibv_alloc_buf",
    "ibv_free_buf",
    "ibv_reg_buf_mr",
    "ibv_export_buf_dmabuf_fd",
    # completion counters (counters/comp_cntr.c), rdma-core 65
    "_ibv_query_comp_cntr_caps",
    "ibv_create_comp_cntr",
    "ibv_destroy_comp_cntr",
    "ibv_set_comp_cntr",
    "ibv_set_err_comp_cntr",
    "ibv_inc_comp_cntr",
    "ibv_inc_err_comp_cntr",
    "ibv_read_comp_cntr",
    "ibv_read_err_comp_cntr",
    "ibv_qp_attach_comp_cntr",
)


noverbs = load_fake_module("noverbs")


# ---------------------------------------------------------------- abi3 ---


def test_extension_is_the_abi3_build():
    import sysconfig

    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        # a free-threaded interpreter has no abi3: its own cp3XYt build
        assert Path(SO).name == "_ibverbs" + sysconfig.get_config_var("EXT_SUFFIX")
    else:
        assert Path(SO).name == "_ibverbs.abi3.so"


def _abi3audit(path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "abi3audit",
            "--strict",
            "-R",
            "--assume-minimum-abi3",
            "3.9",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        report = json.loads(r.stdout)
    except ValueError:
        pytest.fail(f"abi3audit gave no JSON report (rc {r.returncode}):\n{r.stdout}\n{r.stderr}")
    (spec,) = report["specs"].values()
    return r.returncode, spec["object"]["result"]


need_abi3audit = pytest.mark.skipif(
    importlib.util.find_spec("abi3audit") is None,
    reason="abi3audit not installed (pip install -e '.[test]' brings it)",
)


@need_abi3audit
def test_extension_uses_only_the_3_9_stable_abi():
    rc, result = _abi3audit(SO)
    assert result["non_abi3_symbols"] == []
    assert result["future_abi3_objects"] == {}
    assert result["computed"] == "3.9" and result["is_abi3_baseline_compatible"]
    assert rc == 0


@need_abi3audit
@pytest.mark.skipif(noverbs.compiler() is None, reason="no C compiler")
def test_abi3audit_rejects_symbols_outside_the_3_9_stable_abi(tmp_path):
    # The checker itself: a 3.10 stable-ABI function and a non-ABI one.
    src = tmp_path / "bad.c"
    src.write_text(
        "extern void *PyType_FromModuleAndSpec(void *, void *, void *);\n"
        "extern const char *PyUnicode_AsUTF8(void *);\n"
        "void *PyInit_bad(void) { PyUnicode_AsUTF8(0);\n"
        "  return PyType_FromModuleAndSpec(0, 0, 0); }\n"
    )
    so = tmp_path / "bad.abi3.so"
    subprocess.run([noverbs.compiler(), "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    rc, result = _abi3audit(so)
    assert rc != 0
    assert "PyType_FromModuleAndSpec" in result["future_abi3_objects"]
    assert "PyUnicode_AsUTF8" in result["non_abi3_symbols"]


# ------------------------------------- an older rdma-core (shim library) ---


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    why = noverbs.missing_tools()
    if why is not None:
        pytest.skip(f"cannot build the libibverbs shim: {why}")
    return noverbs.build_shim(tmp_path_factory.mktemp("noverbs"), ibverbs.library_path)


PROBE = """
import json, ibverbs, errno
out = {"optional_verbs": ibverbs.optional_verbs,
       "library_version": ibverbs.library_version,
       "devices": [d.name for d in ibverbs.get_device_list()]}
try:
    ibverbs.is_fork_initialized()
    out["is_fork_initialized"] = "ok"
except ibverbs.VerbsError as e:
    out["is_fork_initialized"] = [e.errno == errno.EOPNOTSUPP, e.operation, str(e)]
print(json.dumps(out))
"""


def _probe(shim, *hide):
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        env=noverbs.shim_env(shim, hide),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_shim_forwards_to_the_real_library(shim):
    # The shim with nothing hidden behaves like the real library.
    r = _probe(shim)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["optional_verbs"] == ibverbs.optional_verbs
    assert got["devices"] == [d.name for d in ibverbs.get_device_list()]


def test_without_reg_dmabuf_mr_import_works(shim):
    r = _probe(shim, "ibv_reg_dmabuf_mr")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["optional_verbs"]["ibv_reg_dmabuf_mr"] is False
    others = {k: v for k, v in got["optional_verbs"].items() if k != "ibv_reg_dmabuf_mr"}
    assert others == {k: v for k, v in ibverbs.optional_verbs.items() if k != "ibv_reg_dmabuf_mr"}
    assert isinstance(got["devices"], list)


def test_without_any_optional_verb_import_works_and_only_the_call_raises(shim):
    r = _probe(shim, *OPTIONAL)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["optional_verbs"] == {name: False for name in OPTIONAL}
    eopnotsupp, operation, message = got["is_fork_initialized"]
    assert eopnotsupp and operation == "ibv_is_fork_initialized"
    assert "rdma-core 35" in message


def test_without_a_required_verb_import_names_it(shim):
    r = _probe(shim, "ibv_create_qp")
    assert r.returncode == 1
    assert "ImportError" in r.stderr and "ibv_create_qp" in r.stderr
    assert "Segmentation" not in r.stderr


# ------------------------------------------------------------- metadata ---


def _metadata():
    try:
        return importlib.metadata.metadata("ibverbs")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(
            "ibverbs is not installed (no distribution metadata): pip install -e . or a wheel"
        )


def test_distribution_metadata():
    md = _metadata()
    assert md["License-Expression"] == "BSD-3-Clause"
    assert md["Requires-Python"] == ">=3.9"
    assert {"test", "gpu"} <= set(md.get_all("Provides-Extra"))
    classifiers = set(md.get_all("Classifier"))
    for minor in range(9, 16):  # 3.14, 3.15: make test-distros (sid)
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert "Typing :: Typed" in classifiers
    assert md.get_all("Requires-Dist") is None or all(
        "extra ==" in req for req in md.get_all("Requires-Dist")
    )


@pytest.mark.skipif(not (ROOT / "pyproject.toml").exists(), reason="not run from the source tree")
def test_one_version_pyproject_is_the_source():
    md = _metadata()
    text = (ROOT / "pyproject.toml").read_text()
    (version,) = re.findall(r'^version = "([^"]+)"$', text, re.M)
    assert md["Version"] == version == ibverbs.__version__, (
        "installed metadata is stale: reinstall (make build)"
    )


@pytest.mark.skipif(shutil.which("readelf") is None, reason="binutils readelf not installed")
def test_extension_loads_libibverbs_by_soname_only():
    # No DT_NEEDED on it and no path baked in: dlopen("libibverbs.so.1").
    out = subprocess.run(["readelf", "-d", SO], check=True, capture_output=True, text=True).stdout
    assert "libibverbs" not in out
    strings = Path(SO).read_bytes()
    assert b"libibverbs.so.1\0" in strings
