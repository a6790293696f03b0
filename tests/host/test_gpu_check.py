"""tools/gpu-check: the .deb unpacker here, and --prepare then --run as a
rehearsal of the GPU machine's one call (no GPU: the driver tests run on
the fake libcuda and skip the real driver, saying so).

--prepare needs the Debian mirror (apt-get download) and the Python index
(pip download of the pytest wheels): offline, that test skips and says
which download failed.  It builds the wheel once (about 25 s of CPU).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "gpu-check"


if not TOOL.exists():  # tools/test-wheels runs a scratch copy of tests/ alone
    pytest.skip(f"{TOOL} is not in this tree", allow_module_level=True)


def _load_tool():
    loader = importlib.machinery.SourceFileLoader("_gpu_check_tool", str(TOOL))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


gpu_check = _load_tool()


# --------------------------------------------------------------------------
# The unpacker (offline: hand-made .debs)
# --------------------------------------------------------------------------


def _tar(members) -> bytes:
    """A gzip tar of (name, kind, data-or-link) members."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tf.addfile(info)
            elif kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, data
                tf.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _deb(path: Path, data_members) -> Path:
    """An ar archive laid out as dpkg-deb writes one."""
    members = [
        ("debian-binary", b"2.0\n"),
        (
            "control.tar.gz",
            _tar(
                [
                    (
                        "./control",
                        "file",
                        b"Package: t\nVersion: 1\n"
                        b"Architecture: amd64\n"
                        b"Maintainer: t <t@t>\n"
                        b"Description: t\n",
                    )
                ]
            ),
        ),
        ("data.tar.gz", _tar(data_members)),
    ]
    out = bytearray(b"!<arch>\n")
    for name, body in members:
        out += (f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(body):<10}`\n").encode(
            "ascii"
        )
        out += body
        if len(body) % 2:
            out += b"\n"
    path.write_bytes(bytes(out))
    return path


LIB = "./usr/lib/x86_64-linux-gnu/"
GOOD = [
    ("./usr", "dir", None),
    ("./usr/lib", "dir", None),
    ("./usr/lib/x86_64-linux-gnu", "dir", None),
    (LIB + "libx.so.1.2.3", "file", b"\x7fELF not really"),
    (LIB + "libx.so.1", "sym", "libx.so.1.2.3"),
]


def _tree(root: Path) -> dict:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_file():
            out[rel] = ("file", p.read_bytes())
        else:
            out[rel] = ("dir",)
    return out


def test_python_unpacker_matches_dpkg_deb(tmp_path):
    deb = _deb(tmp_path / "x.deb", GOOD)
    gpu_check.extract_deb_python(deb, tmp_path / "py")
    tree = _tree(tmp_path / "py")
    assert tree["usr/lib/x86_64-linux-gnu/libx.so.1"] == ("link", "libx.so.1.2.3")
    assert tree["usr/lib/x86_64-linux-gnu/libx.so.1.2.3"] == ("file", b"\x7fELF not really")
    if shutil.which("dpkg-deb") is None:
        pytest.skip("no dpkg-deb here to compare the Python unpacker with")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path / "dpkg")], check=True)
    assert _tree(tmp_path / "dpkg") == tree


@pytest.mark.parametrize(
    "members",
    [
        [("../escape", "file", b"x")],
        [("./usr/../../escape", "file", b"x")],
        [("./usr", "dir", None), ("./usr/l", "sym", "../../../etc/passwd")],
        [("./abs", "sym", "/../../etc")],
    ],
    ids=["dotdot", "nested-dotdot", "relative-link-out", "absolute-link-out"],
)
def test_python_unpacker_keeps_everything_inside_the_prefix(tmp_path, members):
    deb = _deb(tmp_path / "evil.deb", members)
    with pytest.raises(gpu_check.CheckError, match="leaves the prefix"):
        gpu_check.extract_deb_python(deb, tmp_path / "prefix")
    assert not (tmp_path / "escape").exists()


def test_unpacker_refuses_root(tmp_path):
    deb = _deb(tmp_path / "x.deb", GOOD)
    with pytest.raises(gpu_check.CheckError, match="over /"):
        gpu_check.extract_deb(deb, Path("/"))


def test_not_a_deb(tmp_path):
    bad = tmp_path / "bad.deb"
    bad.write_bytes(b"PK\x03\x04 a zip, not an ar archive")
    with pytest.raises(gpu_check.CheckError, match="not a Debian package"):
        gpu_check.extract_deb_python(bad, tmp_path / "out")


def test_rdma_devices_named_by_their_kernel_driver(tmp_path):
    """EFA and mlx5 devices are found by the driver under their PCI device
    (a renamed ibdev keeps it); others are listed with no provider."""
    for name, driver, vendor in (
        ("rdmap16s27", "efa", "0x1d0f"),
        ("mlx5_0", "mlx5_core", "0x15b3"),
        ("rxe0", None, None),
    ):
        dev = tmp_path / "sys" / name / "device"
        dev.mkdir(parents=True)
        if driver:
            (tmp_path / "drivers" / driver).mkdir(parents=True)
            (dev / "driver").symlink_to(tmp_path / "drivers" / driver)
            (dev / "vendor").write_text(vendor + "\n")
    found = gpu_check.rdma_devices(tmp_path / "sys")
    assert found == [
        {"name": "mlx5_0", "driver": "mlx5_core", "vendor": "0x15b3", "provider": "mlx5"},
        {"name": "rdmap16s27", "driver": "efa", "vendor": "0x1d0f", "provider": "efa"},
        {"name": "rxe0", "driver": None, "vendor": None, "provider": None},
    ]
    assert gpu_check.rdma_devices(tmp_path / "absent") == []
    for provider, test in gpu_check.PROVIDER_TESTS.items():
        assert provider in gpu_check.PROVIDER_DRIVERS.values()
        assert test.startswith("tests/device/")


def test_provider_plugins_are_absolute_stems(tmp_path):
    """libibverbs appends its suffix to an absolute RDMAV_DRIVERS entry."""
    plugins = tmp_path / "usr/lib/x86_64-linux-gnu/libibverbs"
    plugins.mkdir(parents=True)
    for name in ("libmlx5-rdmav34.so", "libefa-rdmav34.so", "README"):
        (plugins / name).write_text("")
    assert gpu_check.provider_plugins(tmp_path) == f"{plugins}/libefa:{plugins}/libmlx5"


def test_device_command_fits_the_device_tool():
    cmd = gpu_check.device_command("build/gpu-check")
    assert len(cmd) <= gpu_check.COMMAND_LIMIT
    words = shlex.split(cmd)
    assert words[words.index("--run") - 1] == "tools/gpu-check"
    assert words[words.index("--dir") + 1] == "build/gpu-check"
    assert words[words.index("--out") + 1] == "$OUT"  # expanded there, by its shell
    assert "\n" not in cmd


# --------------------------------------------------------------------------
# --prepare, then --run, as the device tool would (needs the network)
# --------------------------------------------------------------------------


def _offline_reason(output: str) -> str | None:
    """What failed to download, when --prepare failed for want of a mirror."""
    if "failed (offline, or no package lists" in output:
        return "apt-get download"
    for what in (
        "Could not find a version",
        "No matching distribution",
        "Temporary failure",
        "NewConnectionError",
    ):
        if what in output and "pip download" in output:
            return f"pip download ({what})"
    return None


@pytest.fixture(scope="module")
def prepared():
    rel = "build/gpu-check-test"
    folder = ROOT / rel
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(TOOL), "--prepare", "--dir", rel],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0:
        why = _offline_reason(proc.stdout)
        if why is not None:
            pytest.skip(
                f"tools/gpu-check --prepare needs the package mirrors ({why} failed: offline?)"
            )
    assert proc.returncode == 0, proc.stdout[-4000:]
    yield folder, proc.stdout, time.monotonic() - t0
    shutil.rmtree(folder, ignore_errors=True)


def test_prepare_writes_the_command_and_a_small_folder(prepared):
    folder, output, _ = prepared
    command = (folder / "command.txt").read_text().strip()
    carry = json.loads((folder / "carry.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    rel = folder.relative_to(ROOT).as_posix()

    assert command == gpu_check.device_command(rel)
    assert len(command) <= 2000 and "\n" not in command
    assert carry == [rel] and len(carry) <= 8
    assert f"command: {command}" in output and json.dumps(carry) in output
    # git ignores it, so only `carry` takes it along
    assert (
        subprocess.run(
            ["git", "-C", str(ROOT), "check-ignore", "-q", f"{rel}/manifest.json"]
        ).returncode
        == 0
    )

    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert size == manifest["bytes"]
    assert size < 8 * 2**20, f"{size} bytes: far under 64 MiB means under 8 here"
    assert f"{size} bytes" in output

    names = {d["package"] for d in manifest["debs"]}
    assert {"libibverbs1", "ibverbs-providers"} <= names
    assert "adduser" not in names and "libc6" not in names  # no library we need
    for d in manifest["debs"]:
        deb = folder / "debs" / d["file"]
        assert deb.stat().st_size == d["bytes"]
        assert gpu_check.sha256(deb) == d["sha256"]
    wheel = folder / "wheel" / manifest["wheel"]["file"]
    assert wheel.name.startswith("ibverbs-") and "-cp39-abi3-" in wheel.name
    assert manifest["wheel"]["glibc"] is not None
    assert tuple(map(int, manifest["wheel"]["glibc"].split("."))) <= (2, 35)
    assert tuple(map(int, manifest["debs_glibc"].split("."))) <= (2, 36)
    assert {w.split("-")[0] for w in manifest["pytest_wheels"]} >= {"pytest", "pluggy"}


def test_prepared_libraries_resolve_inside_the_prefix(prepared, tmp_path):
    """Every NEEDED entry of the carried libraries is carried or glibc's."""
    folder, _, _ = prepared
    manifest = json.loads((folder / "manifest.json").read_text())
    for d in manifest["debs"]:
        gpu_check.extract_deb(folder / "debs" / d["file"], tmp_path)
    provided = {p.name for p in tmp_path.rglob("*.so*")}
    assert {"libibverbs.so.1", "libefa.so.1", "libmlx5.so.1"} <= provided
    assert any(p.name == "libmlx5-rdmav34.so" for p in tmp_path.rglob("libibverbs/*"))
    for elf in gpu_check.elf_files(tmp_path):
        for so in gpu_check.elf_needed(elf):
            assert so in provided or so in gpu_check.GLIBC_SONAMES, (elf, so)


def test_run_rehearsal_on_this_host(prepared, tmp_path):
    """The device command's --run, here: the carried libibverbs and the
    wheel are what the tests import, the fake-driver tests pass, the
    real-driver tests skip with "no CUDA driver", and the reports exist."""
    folder, _, _ = prepared
    out = tmp_path / "out"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "IBVERBS_LIBIBVERBS", "IBVERBS_LIBCUDA")
    }
    proc = subprocess.run(
        [
            sys.executable,
            str(TOOL),
            "--run",
            "--dir",
            folder.relative_to(ROOT).as_posix(),
            "--out",
            str(out),
            "tests/gpu/test_driver.py",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert {p.name for p in out.iterdir()} == {
        "env.json",
        "findings.json",
        "junit.xml",
        "pytest.log",
        "summary.json",
    }
    summary = json.loads((out / "summary.json").read_text())
    findings = json.loads((out / "findings.json").read_text())
    assert summary["exit"] == 0 and summary["failures"] == summary["errors"] == 0
    assert summary["passed"] >= 15
    assert "/prefix/" in findings["ibverbs"]["library_path"]
    assert "/site/" in findings["ibverbs"]["file"]
    assert findings["ibverbs"]["devices"] == []
    assert "fake" in findings
    root = ET.parse(out / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["test_import_with_carried_libibverbs"].find("skipped") is None
    if not Path("/proc/driver/nvidia").exists():
        real = [c for n, c in cases.items() if "[real" in n]
        assert real and all(c.find("skipped") is not None for c in real)
        assert any("no CUDA driver" in (c.find("skipped").get("message") or "") for c in real)
    assert "gpu-check summary" in proc.stdout
    env_json = json.loads((out / "env.json").read_text())
    assert env_json["rdma_devices"] == summary["rdma_devices"] == gpu_check.rdma_devices()
    assert summary["device_runs"] == {}  # this host has no EFA or mlx5 device
