"""ibverbs.mlx5 against the fake libmlx5.so.1 (tests/fakes/mlx5/) on top
of the recording double of libibverbs: every argument and struct byte the
binding passes, and what it makes of the answers.  The fake is a double,
not evidence that anything works on an mlx5 device."""

from __future__ import annotations

import errno
import subprocess
import sys

import pytest

from support.process import can_fail_allocations


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


def test_device_names_and_lists_refused(mlx5_fake):
    """A device given by something that is not a str or a Device, by a name
    with a NUL or a lone surrogate, or not found; the device list failing;
    each function without arguments."""

    def body(fake):
        import errno as E

        import ibverbs
        from ibverbs import mlx5

        class Raising:
            @property
            def name(self):
                raise RuntimeError("no name here")

        class Named:
            name = 5

        out = []
        for f in (mlx5.is_supported, mlx5.open_device):
            for dev in (Raising(), Named(), object(), "fa\0ke", "\udc80", "nosuch9"):
                try:
                    f(dev)
                except Exception as e:  # noqa: BLE001 - the type is the answer
                    out.append([f.__name__, type(e).__name__, str(e)[:40]])
        for err in (E.EPERM, E.ENOSYS):
            fake.fail("get_device_list", err)
            try:
                mlx5.open_device("fake0")
            except ibverbs.VerbsError as e:
                out.append(["list", e.errno, e.operation, "fake0" in str(e)])
        for f in (
            mlx5.is_supported,
            mlx5.open_device,
            mlx5.query_device,
            mlx5.get_data_direct_sysfs_path,
            mlx5.reg_dmabuf_mr,
        ):
            try:
                f()
            except TypeError as e:
                out.append(["noarg", "missing" in str(e)])
        return out

    out = mlx5_fake.run(body).ok()
    each = [
        ["RuntimeError", "no name here"],
        ["TypeError", "device must be a str or Device, not <c"],
        ["TypeError", "device must be a str or Device, not <c"],
        ["ValueError", "device: embedded null character"],
        ["UnicodeEncodeError", "'utf-8' codec can't encode character '\\"],
        ["VerbsError", "[Errno 19] "],
    ]
    got = [o[1:] for o in out[:12]]
    for i, (typ, msg) in enumerate(each * 2):
        assert got[i][0] == typ and got[i][1].startswith(msg), (i, got[i])
    assert [o[0] for o in out[:12]] == ["_mlx5_is_supported"] * 6 + ["_mlx5_open_device"] * 6
    assert out[12:14] == [
        ["list", errno.EPERM, "ibv_get_device_list", True],
        ["list", errno.ENODEV, "ibv_get_device_list", True],
    ]
    assert out[14:] == [["noarg", True]] * 5


def test_query_device_groups_not_answered_and_dmabuf_refused(mlx5_fake):
    def body(fake):
        import ibverbs
        from ibverbs import mlx5

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            caps = mlx5.query_device(ctx)
            out["caps"] = {k: caps[k] for k in ("comp_mask", "cqe_comp_caps", "sw_parsing_caps")}
            out["nones"] = sorted(k for k, v in caps.items() if v is None)
            try:
                mlx5.reg_dmabuf_mr(pd, 0, 4096, 0x1000, 5, mlx5_access=1)
            except ibverbs.VerbsError as e:
                out["dmabuf"] = [e.errno, e.operation, str(e).partition(": ")[2]]
        return out

    res = mlx5_fake.run(body, caps=0x1, fail={"mlx5dv_reg_dmabuf_mr": errno.EPERM})
    out = res.ok()
    assert out["caps"] == {
        "comp_mask": 1,
        "cqe_comp_caps": {"max_num": 100, "supported_format": 101},
        "sw_parsing_caps": None,
    }
    assert len(out["nones"]) == 17 and "ooo_recv_wrs_caps" in out["nones"]
    assert out["dmabuf"][:2] == [errno.EPERM, "mlx5dv_reg_dmabuf_mr"]
    assert "fd=5 length=4096 access=0x0 mlx5_access=0x1" in out["dmabuf"][2]
    assert res.mlx5_one("mlx5dv_reg_dmabuf_mr")["injected_errno"] == errno.EPERM


@pytest.mark.skipif(not can_fail_allocations(), reason="needs _testcapi.set_nomemory")
def test_each_allocation_of_open_device_query_device_reg_dmabuf_failing(mlx5_fake):
    def body(fake):
        from ibverbs import mlx5
        from support.nomem import each_allocation_fails

        def open_close():
            ctx = mlx5.open_device("fake0")
            try:
                return ctx.name
            finally:
                ctx.close()

        def reg_close(pd):
            mr = mlx5.reg_dmabuf_mr(pd, 0, 4096, 0x1000, 5)
            try:
                return mr.is_dmabuf
            finally:
                mr.close()

        r1 = each_allocation_fails(open_close)
        with mlx5.open_device("fake0") as ctx, ctx.alloc_pd() as pd:
            r2 = each_allocation_fails(lambda: mlx5.query_device(ctx)["reg_c0"])
            r3 = each_allocation_fails(lambda: reg_close(pd))
        return [[r["failed"] > 0, r["other"], r["value"]] for r in (r1, r2, r3)]

    res = mlx5_fake.run(body)
    assert res.ok() == [
        [True, [], "fake0"],
        [True, [], {"value": 1600, "mask": 1601}],
        [True, [], True],
    ]
    assert res.live == 0, res.live_report


def test_a_libmlx5_without_the_symbols_refuses_every_function(recording, tmp_path):
    """The recording double as libmlx5, as above, for each of the other
    module functions, with valid arguments: EOPNOTSUPP naming the missing
    mlx5dv_* function; a libmlx5 that is not there: ImportError from each;
    no libibverbs object left behind."""

    def body(fake, lib):
        import os

        os.environ["IBVERBS_LIBMLX5"] = lib or os.environ["IBVERBS_LIBIBVERBS"]
        import ibverbs
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        out = []
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = ctx.create_cq(8)
            qp = pd.create_qp(ibverbs.QPInitAttr(cq))
            buf = bytearray(4096)
            calls = [
                lambda: mlx5.open_device("fake0"),
                lambda: mlx5.query_device(ctx),
                lambda: mlx5.get_data_direct_sysfs_path(ctx),
                lambda: mlx5.reg_dmabuf_mr(pd, 0, 4096, 0, 3),
                lambda: mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=4)),
                lambda: mlx5.create_qp(pd, ibverbs.QPInitAttrEx(cq)),
                lambda: mlx5.modify_qp_udp_sport(qp, 5000),
                lambda: mlx5.modify_qp_lag_port(qp, 1),
                lambda: mlx5.query_qp_lag_port(qp),
                lambda: mlx5.dci_stream_id_reset(qp, 1),
                lambda: mlx5.init_obj(pd),
                lambda: mlx5.devx_general_cmd(ctx, bytes(16), 16),
                lambda: mlx5.devx_query_eqn(ctx, 0),
                lambda: mlx5.devx_qp_modify(qp, bytes(16), 16),
                lambda: mlx5.devx_qp_query(qp, bytes(16), 16),
                lambda: mlx5.devx_umem_reg(ctx, buf, 1),
                lambda: mlx5.devx_umem_reg_ex(ctx, buf, 1, 1 << 12),
                lambda: mlx5.devx_alloc_uar(ctx),
                lambda: mlx5.devx_obj_create(ctx, bytes(16), 16),
                lambda: mlx5.devx_create_event_channel(ctx),
                lambda: mlx5.create_mkey(pd),
            ]
            for call in calls:
                if lib is None:
                    e = verbs_error_of(call)
                    out.append([e.errno, e.operation])
                    continue
                try:
                    call()
                except ImportError as e:
                    out.append(["ImportError", "ibverbs-providers" in str(e)])
            qp.close()
            cq.close()
        return out

    res = recording.run(body, None)
    names = (
        "open_device",
        "query_device",
        "get_data_direct_sysfs_path",
        "reg_dmabuf_mr",
        "create_cq",
        "create_qp",
        "modify_qp_udp_sport",
        "modify_qp_lag_port",
        "query_qp_lag_port",
        "dci_stream_id_reset",
        "init_obj",
        "devx_general_cmd",
        "devx_query_eqn",
        "devx_qp_modify",
        "devx_qp_query",
        "devx_umem_reg",
        "devx_umem_reg_ex",
        "devx_alloc_uar",
        "devx_obj_create",
        "devx_create_event_channel",
        "create_mkey",
    )
    assert res.ok() == [[errno.EOPNOTSUPP, f"mlx5dv_{n}"] for n in names]
    assert res.live == 0, res.live_report
    res = recording.run(body, str(tmp_path / "libmlx5.so.1"))
    assert res.ok() == [["ImportError", True]] * len(names)
    assert res.live == 0, res.live_report
