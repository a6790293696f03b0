"""ibverbs.mlx5 against the fake libmlx5.so.1 (tests/fakes/mlx5/) on top
of the recording double of libibverbs: every argument and struct byte the
binding passes, and what it makes of the answers.  The fake is a double,
not evidence that anything works on an mlx5 device."""

from __future__ import annotations

import errno
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


def test_a_libmlx5_without_the_symbols_names_each_and_its_release(recording):
    """A library that loads but exports no mlx5dv_* function (here the
    recording double): each call is EOPNOTSUPP naming the missing symbol
    and the rdma-core release that added it."""

    def body(fake):
        import os

        os.environ["IBVERBS_LIBMLX5"] = os.environ["IBVERBS_LIBIBVERBS"]
        import ibverbs
        from ibverbs import mlx5

        out = [list(mlx5.library_status())]
        with ibverbs.Context("fake0") as ctx:
            for call in (
                lambda: mlx5.is_supported("fake0"),
                lambda: mlx5.open_device("fake0"),
                lambda: mlx5.query_device(ctx),
            ):
                try:
                    call()
                except ibverbs.VerbsError as e:
                    out.append([e.errno, e.operation, str(e).partition("not supported: ")[2]])
        return out

    out = recording.run(body).ok()
    assert out[0] == [True, recording.lib]
    missing = "{} is not exported by the loaded libmlx5 (needs rdma-core {} or newer)"
    assert out[1:] == [
        [errno.EOPNOTSUPP, f, missing.format(f, since)]
        for f, since in (
            ("mlx5dv_is_supported", 22),
            ("mlx5dv_open_device", 21),
            ("mlx5dv_query_device", 13),
        )
    ]


def test_open_device_and_query_device(mlx5_fake):
    def body(fake):
        import ibverbs
        from ibverbs import mlx5

        ctx = mlx5.open_device("fake0", flags=mlx5.CONTEXT_FLAGS_DEVX)
        out = [type(ctx).__name__, ctx.name, mlx5.query_device(ctx)]
        out.append(mlx5.get_data_direct_sysfs_path(ctx))
        pd = ctx.alloc_pd()
        mr = mlx5.reg_dmabuf_mr(
            pd,
            4096,
            65536,
            0x7F0000000000,
            7,
            ibverbs.AccessFlags.LOCAL_WRITE,
            mlx5_access=mlx5.REG_DMABUF_ACCESS_DATA_DIRECT,
        )
        out.append([type(mr).__name__, mr.addr, mr.length, mr.is_dmabuf])
        mr.close()
        pd.close()
        ctx.close()
        try:
            mlx5.query_device(ctx)
        except ibverbs.VerbsError as e:
            out.append(e.errno)
        return out

    res = mlx5_fake.run(body)
    typ, name, caps, path, mr, ebadf = res.ok()
    assert (typ, name) == ("Context", "fake0")
    rec = res.mlx5_one("mlx5dv_open_device")
    assert rec["device.name"] == "fake0"
    assert (rec["attr.flags"], rec["attr.comp_mask"]) == (1, 0)
    # flags 1, comp_mask 0 (after 4 bytes of padding), fds NULL
    assert rec["attr"] == bytes([1, 0, 0, 0]) + bytes(20)
    q = res.mlx5_one("mlx5dv_query_device")
    assert q["attrs.comp_mask"] == 0x1FFFF
    raw = q["attrs"]
    assert raw[16:24] == (0x1FFFF).to_bytes(8, "little")
    assert raw[:16] == bytes(16) and raw[24:] == bytes(len(raw) - 24)
    assert len(raw) == 200  # rdma-core 65's sizeof(struct mlx5dv_context)
    assert caps["version"] == 1 and caps["flags"] == 5 and caps["comp_mask"] == 0x1FFFF
    assert caps["cqe_comp_caps"] == {"max_num": 100, "supported_format": 101}
    assert caps["striding_rq_caps"]["supported_qpts"] == 304
    assert caps["num_lag_ports"] == 2 and caps["hca_core_clock"] != 0
    assert caps["dci_streams_caps"] == {"max_log_num_concurent": 12, "max_log_num_errored": 13}
    assert caps["max_dc_rd_atom"] == 1500 and caps["max_dc_init_rd_atom"] == 1501
    assert caps["reg_c0"] == {"value": 1600, "mask": 1601}
    assert caps["ooo_recv_wrs_caps"]["max_uc"] == 1704
    assert path == "/sys/devices/pci0000:00/0000:00:1f.6"
    assert res.mlx5_one("mlx5dv_get_data_direct_sysfs_path")["buf_len"] == 4096
    assert mr == ["MR", 0x7F0000000000, 65536, True]
    r = res.mlx5_one("mlx5dv_reg_dmabuf_mr")
    assert (r["offset"], r["length"], r["iova"], r["fd"]) == (4096, 65536, 0x7F0000000000, 7)
    assert (r["access"], r["mlx5_access"]) == (1, 1)
    assert ebadf == 9
    assert res.live == 0, res.live_report


def test_open_device_refused_and_missing_groups(mlx5_fake):
    def body(fake):
        from ibverbs import VerbsError, mlx5

        out = []
        try:
            mlx5.open_device("fake0")
        except VerbsError as e:
            out.append([e.errno, e.operation])
        return out

    res = mlx5_fake.run(body, unsupported=["fake0"])
    assert res.ok() == [[95, "mlx5dv_open_device"]]

    def body2(fake):
        import ibverbs
        from ibverbs import VerbsError, mlx5

        with ibverbs.Context("fake0") as ctx:
            out = []
            for f in (mlx5.query_device, mlx5.get_data_direct_sysfs_path):
                try:
                    f(ctx)
                except VerbsError as e:
                    out.append([e.errno, e.operation])
            with ctx.alloc_pd() as pd:
                try:
                    mlx5.reg_dmabuf_mr(pd, 0, 4096, 0, -1)
                except VerbsError as e:
                    out.append([e.errno, e.operation])
            return out

    fail = {"mlx5dv_query_device": 95, "mlx5dv_get_data_direct_sysfs_path": 19}
    res = mlx5_fake.run(body2, fail=fail)
    assert res.ok() == [
        [95, "mlx5dv_query_device"],
        [19, "mlx5dv_get_data_direct_sysfs_path"],
        [9, "mlx5dv_reg_dmabuf_mr"],
    ]
    assert res.mlx5_calls("mlx5dv_reg_dmabuf_mr") == []
