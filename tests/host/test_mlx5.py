"""ibverbs.mlx5 against the fake libmlx5.so.1 (tests/fakes/mlx5/) on top
of the recording double of libibverbs: every argument and struct byte the
binding passes, and what it makes of the answers.  The fake is a double,
not evidence that anything works on an mlx5 device."""

from __future__ import annotations

import subprocess
import sys


def test_import_ibverbs_does_not_load_libmlx5():
    code = (
        "import ibverbs, ibverbs.mlx5\n"
        "maps = open('/proc/self/maps').read()\n"
        "print('libmlx5' in maps)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_fake_has_the_real_version_nodes(mlx5_fake):
    from support.fakes import load_fake_module

    nodes = load_fake_module("mlx5").version_nodes(mlx5_fake.mlx5_lib)
    assert nodes["mlx5dv_is_supported"] == "MLX5_1.8"
    assert nodes["mlx5dv_init_obj"] == "MLX5_1.0,MLX5_1.2"


def test_is_supported(mlx5_fake):
    def body(fake):
        import ibverbs
        from ibverbs import mlx5

        dev = ibverbs.get_device_list()[0]
        return [mlx5.is_supported("fake0"), mlx5.is_supported(dev), mlx5.library_status()]

    res = mlx5_fake.run(body)
    yes, by_record, status = res.ok()
    assert yes is True and by_record is True
    assert status[0] is True and status[1] == mlx5_fake.mlx5_lib
    recs = res.mlx5_calls("mlx5dv_is_supported")
    assert [r["device.name"] for r in recs] == ["fake0", "fake0"]
    assert recs[0]["device"] != 0


def test_is_supported_false_and_errors(mlx5_fake):
    def body(fake):
        from ibverbs import VerbsError, mlx5

        out = [mlx5.is_supported("fake0")]
        try:
            mlx5.is_supported("nosuch9")
        except VerbsError as e:
            out.append([e.errno, e.operation])
        try:
            mlx5.is_supported(3)
        except TypeError as e:
            out.append(str(e))
        return out

    res = mlx5_fake.run(body, unsupported=["fake0"])
    no, (err, op), typeerr = res.ok()
    assert no is False
    assert (err, op) == (19, "mlx5dv_is_supported")  # ENODEV
    assert "device must be a str or Device" in typeerr


def test_missing_library_names_the_package(tmp_path):
    code = (
        "from ibverbs import mlx5\n"
        "ok, why = mlx5.library_status()\n"
        "print(ok)\nprint(why)\n"
        "try:\n    mlx5.is_supported('x')\nexcept ImportError as e:\n    print('IE', e)\n"
    )
    env = dict(__import__("os").environ, IBVERBS_LIBMLX5=str(tmp_path / "libmlx5.so.1"))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.splitlines()
    assert out[0] == "False"
    assert "libmlx5.so.1" in out[1] and "ibverbs-providers" in out[1]
    assert out[2].startswith("IE ") and "ibverbs-providers" in out[2]
