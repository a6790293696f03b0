"""ibverbs.mlx5's less travelled paths against the fake libmlx5.so.1 on the
recording double: the DEVX objects' and mkeys' reprs and getters once
closed, missing arguments, the QP and CQ garbage-collector links, the
failures of subscribe, get_event and query_qp_lag_port, and each
allocation of the DEVX and mkey constructors failing in turn.  The fake is
a double, not evidence that anything works on an mlx5 device."""

from __future__ import annotations

import errno

import pytest

from support.process import can_fail_allocations


def test_reprs_getters_and_methods_once_closed(mlx5_fake):
    def body(fake):
        import gc

        import ibverbs
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        out = {}
        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        pd = ctx.alloc_pd()
        cq = mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=8))
        ops = ibverbs.QPCreateSendOpsFlags
        qp = mlx5.create_qp(pd, ibverbs.QPInitAttrEx(cq, send_ops_flags=ops.SEND))
        out["gc"] = [ctx in gc.get_referents(cq), pd in gc.get_referents(qp)]
        uar = mlx5.devx_alloc_uar(ctx)
        obj, _ = mlx5.devx_obj_create(ctx, b"\x01", 8)
        ch = mlx5.devx_create_event_channel(ctx)
        mk = mlx5.create_mkey(pd, mlx5.MKEY_INIT_ATTR_FLAGS_INDIRECT, 4)
        umem = mlx5.devx_umem_reg_dmabuf(ctx, 9, 0, 4096, 1, 1 << 12)
        out["open"] = [repr(obj), repr(ch) == f"<ibverbs.mlx5.DevxEventChannel fd={ch.fd}>"]
        out["mkey"] = [repr(mk) == f"<ibverbs.mlx5.Mkey lkey={mk.lkey:#x} rkey={mk.rkey:#x}>"]
        out["mkey"].append(mk.create_flags)
        out["umem_owner"] = [umem.owner, ctx in gc.get_referents(umem)]
        buf = bytearray(4096)
        held = mlx5.devx_umem_reg(ctx, buf, 1)
        owner = held.owner
        out["umem_held"] = [owner in gc.get_referents(held), owner.obj is buf]
        # dropped without close(): deregistered, the owner let go
        dropped = mlx5.devx_umem_reg_dmabuf(ctx, 9, 0, 4096, 1, 1 << 12)
        del held, dropped, owner
        gc.collect()
        buf.append(0)  # no export left: the bytearray may be resized
        out["dc_stream"] = None
        qp.wr_start()
        qp.wr_send()
        ah = pd.create_ah(ibverbs.AHAttr(dlid=3, port_num=1))
        e = verbs_error_of(lambda: qp.wr_set_dc_addr_stream(ah, 1, 2, 3))
        out["dc_stream"] = [e.errno, "stream setter" in str(e)]
        e = verbs_error_of(lambda: mlx5.devx_qp_modify(qp, b"\x05\x00", 8))
        out["in_batch"] = [e.errno, "wr_start() batch is open" in str(e)]
        qp.wr_abort()
        ah.close()
        for o in (umem, mk, ch, obj, uar):
            o.close()
        out["closed"] = [repr(uar), repr(obj), repr(ch), repr(mk)]
        out["ebadf"] = [
            verbs_error_of(f).errno
            for f in (
                lambda: uar.base_addr,
                lambda: uar.page_id,
                lambda: uar.mmap_off,
                lambda: uar.comp_mask,
                lambda: obj.modify(b"\x01", 8),
                lambda: ch.fd,
                lambda: ch.subscribe(None, [1]),
                lambda: mk.lkey,
                lambda: mk.rkey,
            )
        ]
        qp.close()
        out["qp_closed"] = [
            verbs_error_of(f).errno
            for f in (
                lambda: qp.wr_set_dc_addr(None, 1, 2),
                lambda: qp.wr_set_dc_addr_stream(None, 1, 2, 3),
                lambda: qp.modify_lag_port(1),
                lambda: qp.dci_stream_id_reset(1),
            )
        ]
        cq.close()
        pd.close()
        ctx.close()
        return out

    res = mlx5_fake.run(body)
    out = res.ok()
    assert out["gc"] == [True, True]
    assert out["open"] == ["<ibverbs.mlx5.DevxObj>", True]
    assert out["mkey"] == [True, 1]
    assert out["umem_owner"] == [None, True]
    assert out["umem_held"] == [True, True]
    assert len(res.mlx5_calls("mlx5dv_devx_umem_dereg")) == 3
    assert out["dc_stream"] == [errno.EOPNOTSUPP, True]
    assert out["in_batch"] == [errno.EBUSY, True]
    assert out["closed"] == [
        "<ibverbs.mlx5.DevxUAR closed>",
        "<ibverbs.mlx5.DevxObj closed>",
        "<ibverbs.mlx5.DevxEventChannel closed>",
        "<ibverbs.mlx5.Mkey closed>",
    ]
    assert out["ebadf"] == [errno.EBADF] * 9
    assert out["qp_closed"] == [errno.EBADF] * 4
    assert res.mlx5_calls("mlx5dv_devx_qp_modify") == []
    assert res.live == 0, res.live_report


# Module functions of ibverbs.mlx5 with required arguments (the others:
# test_mlx5.py).
FUNCTIONS = (
    "create_qp",
    "modify_qp_udp_sport",
    "modify_qp_lag_port",
    "dci_stream_id_reset",
    "devx_alloc_uar",
    "devx_obj_create",
    "devx_create_event_channel",
    "create_mkey",
)


def test_functions_and_methods_refuse_missing_arguments(mlx5_fake):
    def body(fake, names):
        import ibverbs
        from ibverbs import mlx5

        out = []

        def refused(name, f, *args):
            try:
                f(*args)
            except (TypeError, ValueError) as e:
                out.append([name, type(e).__name__, str(e)])

        for name in names:
            refused(name, getattr(mlx5, name))
        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        pd = ctx.alloc_pd()
        cq = mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=8))
        qp = mlx5.create_qp(pd, ibverbs.QPInitAttrEx(cq))
        obj, _ = mlx5.devx_obj_create(ctx, b"\x01", 8)
        ch = mlx5.devx_create_event_channel(ctx)
        refused("qp.wr_set_dc_addr", qp.wr_set_dc_addr)
        refused("qp.modify_udp_sport", qp.modify_udp_sport)
        refused("qp.modify_lag_port", qp.modify_lag_port)
        refused("qp.dci_stream_id_reset", qp.dci_stream_id_reset)
        refused("obj.modify", obj.modify)
        refused("ch.get_event", ch.get_event, "x")
        refused("ch.subscribe", ch.subscribe, None, list(range(300)))
        mk = mlx5.create_mkey(pd, 1, 4)
        sges = [ibverbs.SGE(0x1000, 64, 7)] * 257
        refused("wr_mr_list", mlx5.wr_mr_list, qp, mk, 0, sges)
        for o in (mk, ch, obj, qp, cq, pd, ctx):
            o.close()
        return out

    out = mlx5_fake.run(body, FUNCTIONS).ok()
    assert [o[0] for o in out] == [
        *FUNCTIONS,
        "qp.wr_set_dc_addr",
        "qp.modify_udp_sport",
        "qp.modify_lag_port",
        "qp.dci_stream_id_reset",
        "obj.modify",
        "ch.get_event",
        "ch.subscribe",
        "wr_mr_list",
    ]
    assert all(o[1] == "TypeError" and "missing" in o[2] for o in out[:13]), out
    assert out[13][1] == "TypeError"
    assert out[14][1:] == ["ValueError", "events must list 1 to 256 event types, not 300"]
    assert out[15][1:] == ["ValueError", "sge_list must hold 1 to 256 SGEs, not 257"]


def test_subscribe_get_event_and_lag_port_failing(mlx5_fake):
    """subscribe answering a negative errno (-5: EIO), get_event failing
    (-1 with errno), query_qp_lag_port failing: VerbsError naming each."""

    def body(fake):
        import os

        import ibverbs
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        pd = ctx.alloc_pd()
        cq = mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=8))
        qp = mlx5.create_qp(pd, ibverbs.QPInitAttrEx(cq))
        ch = mlx5.devx_create_event_channel(ctx)
        os.set_blocking(ch.fd, False)
        out = []
        for f in (
            lambda: ch.subscribe(None, [1, 2], cookie=7),
            lambda: ch.get_event(16),
            qp.query_lag_port,
        ):
            e = verbs_error_of(f)
            out.append([e.errno, e.operation, str(e).partition(": ")[2]])
        for o in (ch, qp, cq, pd, ctx):
            o.close()
        return out

    fail = {
        "mlx5dv_devx_subscribe_devx_event": -5,
        "mlx5dv_devx_get_event": errno.EAGAIN,
        "mlx5dv_query_qp_lag_port": errno.EINVAL,
    }
    res = mlx5_fake.run(body, fail=fail)
    out = res.ok()
    assert out[0][:2] == [errno.EIO, "mlx5dv_devx_subscribe_devx_event"]
    assert "2 event types cookie=0x7" in out[0][2]
    assert out[1][:2] == [errno.EAGAIN, "mlx5dv_devx_get_event"] and "length=16" in out[1][2]
    assert out[2][:2] == [errno.EINVAL, "mlx5dv_query_qp_lag_port"]
    assert res.live == 0, res.live_report


@pytest.mark.skipif(not can_fail_allocations(), reason="needs _testcapi.set_nomemory")
def test_each_allocation_of_the_devx_constructors_failing(mlx5_fake):
    def body(fake):
        import functools

        import ibverbs
        from ibverbs import mlx5
        from support.nomem import each_allocation_fails

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        pd = ctx.alloc_pd()
        buf = bytearray(4096)

        def made(f, value):
            o = f()
            obj = o[0] if isinstance(o, tuple) else o
            try:
                return value(obj)
            finally:
                obj.close()

        # Each call's functions are made here, before the sweep arms the
        # allocator: CPython 3.12 and 3.13 crash in PyFunction_New when its
        # own allocation fails (a lambda made while armed).
        makers = {
            "obj_create": (lambda: mlx5.devx_obj_create(ctx, b"\x01", 8), repr),
            "umem_reg": (lambda: mlx5.devx_umem_reg(ctx, buf, 1), lambda o: o.size),
            "umem_dmabuf": (
                lambda: mlx5.devx_umem_reg_dmabuf(ctx, 9, 0, 4096, 1, 1 << 12),
                lambda o: o.size,
            ),
            "alloc_uar": (lambda: mlx5.devx_alloc_uar(ctx), lambda o: o.flags),
            "event_channel": (lambda: mlx5.devx_create_event_channel(ctx), lambda o: o.flags),
            "mkey": (lambda: mlx5.create_mkey(pd, 1, 4), lambda o: o.create_flags),
            "cq": (lambda: mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=8)), lambda o: o.cqe),
        }
        calls = {"general_cmd": lambda: len(mlx5.devx_general_cmd(ctx, b"\x01" * 16, 32))}
        calls.update({k: functools.partial(made, *fv) for k, fv in makers.items()})
        ch = mlx5.devx_create_event_channel(ctx)

        def subscribe_str():
            try:
                ch.subscribe(None, [1, "x"])
            except TypeError as e:
                return str(e)

        calls["subscribe_str"] = subscribe_str
        out = {}
        for name, call in calls.items():
            r = each_allocation_fails(call)
            out[name] = [r["failed"] > 0, r["other"], r["value"]]
        ch.close()
        pd.close()
        ctx.close()
        return out

    res = mlx5_fake.run(body)
    out = res.ok()
    assert out == {
        "subscribe_str": [True, [], "events[1] must be an int"],
        "general_cmd": [True, [], 32],
        "obj_create": [True, [], "<ibverbs.mlx5.DevxObj>"],
        "umem_reg": [True, [], 4096],
        "umem_dmabuf": [True, [], 4096],
        "alloc_uar": [True, [], 0],
        "event_channel": [True, [], 0],
        "mkey": [True, [], 1],
        "cq": [True, [], 8],
    }
    assert res.live == 0, res.live_report


def test_umem_reg_refuses_device_memory():
    from ibverbs import mlx5

    class OnGpu:
        __cuda_array_interface__ = {
            "shape": (4096,),
            "typestr": "|u1",
            "data": (0x7F0000000000, False),
            "version": 3,
        }

    for reg in (
        lambda b: mlx5.devx_umem_reg(None, b, 1),
        lambda b: mlx5.devx_umem_reg_ex(None, b, 1, 1 << 12),
    ):
        with pytest.raises(ValueError, match="buffer lives on device 'cuda', not in host memory"):
            reg(OnGpu())


def test_get_cqe_opcode_refuses_an_int_and_streams_need_a_dci(mlx5_fake):
    from ibverbs import mlx5

    with pytest.raises(TypeError, match="cqe must be a bytes-like, not <class 'int'>"):
        mlx5.get_cqe_opcode(64)

    def body(fake):
        import ibverbs
        from ibverbs import mlx5

        out = []
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=8))
            try:
                mlx5.create_qp(pd, ibverbs.QPInitAttrEx(cq), log_num_errored=1)
            except ValueError as e:
                out.append(str(e))
            dci = mlx5.create_qp(
                pd, ibverbs.QPInitAttrEx(cq), dc_type=mlx5.DCType.DCI, log_num_errored=2
            )
            dci.close()
            cq.close()
        return out

    res = mlx5_fake.run(body)
    out = res.ok()
    assert len(out) == 1 and "are for a DCI (dc_type=DCType.DCI) only" in out[0]
    (rec,) = res.mlx5_calls("mlx5dv_create_qp")
    # comp_mask DC | DCI_STREAMS, {dc_type DCI, {log_num_concurent 0,
    # log_num_errored 2}}
    assert rec["attr.comp_mask"] == 0xA
    assert rec["attr"][16:26] == bytes([2, 0, 0, 0, 0, 0, 0, 0, 0, 2])


@pytest.fixture(scope="module")
def mlx5_without_is_supported(recording, tmp_path_factory):
    """A Runner whose libmlx5 is the fake without mlx5dv_is_supported: no
    rdma-core release is so (22 added it, 24 the mkeys), but a library
    that is must meet a refusal, not a call through a NULL pointer."""
    from support.fakes import load_fake_module

    mod = load_fake_module("mlx5")
    lib = mod.build(tmp_path_factory.mktemp("mlx5-old"), hide=("mlx5dv_is_supported",))
    return mod.Runner(recording.lib, lib, tmp_path_factory.mktemp("mlx5-old-runs"))


def test_wr_mr_list_needs_is_supported(mlx5_without_is_supported):
    """wr_mr_list checks the QP's device with mlx5dv_is_supported before it
    converts the QP: a libmlx5 without it refuses, converting nothing."""

    def body(fake):
        import ibverbs
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        F = ibverbs.QPCreateSendOpsFlags
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = ctx.create_cq(8)
            qp = pd.create_qp_ex(ibverbs.QPInitAttrEx(cq, send_ops_flags=F.SEND))
            mk = mlx5.create_mkey(pd, 1, 4)
            qp.wr_start()
            e = verbs_error_of(lambda: mlx5.wr_mr_list(qp, mk, 0, [ibverbs.SGE(0x1000, 64, 7)]))
            qp.wr_abort()
            for o in (mk, qp, cq):
                o.close()
        return [e.errno, e.operation, str(e).partition(": ")[2]]

    res = mlx5_without_is_supported.run(body)
    err, op, msg = res.ok()
    assert (err, op) == (errno.EOPNOTSUPP, "mlx5dv_wr_mr_list")
    assert "lacks mlx5dv_is_supported or mlx5dv_qp_ex_from_ibv_qp_ex" in msg
    assert res.mlx5_calls("mlx5dv_qp_ex_from_ibv_qp_ex") == []
    assert res.live == 0, res.live_report


def test_constructors_failing_without_errno(mlx5_fake):
    """Each libmlx5 constructor answering NULL (-1 for get_event) with
    errno 0, as a provider may: VerbsError naming it with the binding's
    fallback (EOPNOTSUPP for the DEVX and mkey verbs and open_device,
    EINVAL for reg_dmabuf_mr and the CQ and QP, EIO for get_event), never
    errno 0; nothing left alive."""

    def body(fake):
        import os

        import ibverbs
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        pd = ctx.alloc_pd()
        ch = mlx5.devx_create_event_channel(ctx)
        os.set_blocking(ch.fd, False)
        buf = bytearray(4096)
        cq = ctx.create_cq(8)
        calls = {
            "open_device": lambda: mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX),
            "reg_dmabuf_mr": lambda: mlx5.reg_dmabuf_mr(pd, 0, 4096, 0, 5),
            "create_mkey": lambda: mlx5.create_mkey(pd, 1, 4),
            "devx_umem_reg": lambda: mlx5.devx_umem_reg(ctx, buf, 1),
            "devx_umem_reg_ex": lambda: mlx5.devx_umem_reg_ex(ctx, buf, 1, 1 << 12),
            "devx_alloc_uar": lambda: mlx5.devx_alloc_uar(ctx),
            "devx_obj_create": lambda: mlx5.devx_obj_create(ctx, b"\x01", 8),
            "devx_create_event_channel": lambda: mlx5.devx_create_event_channel(ctx),
            "devx_get_event": lambda: ch.get_event(16),
            "create_cq": lambda: mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=8)),
            "create_qp": lambda: mlx5.create_qp(pd, ibverbs.QPInitAttrEx(cq)),
        }
        out = {}
        for name, call in calls.items():
            e = verbs_error_of(call)
            out[name] = [e.errno, e.operation, "Success" in str(e)]
        for o in (ch, cq, pd, ctx):
            o.close()
        return out

    from fakes.recording import NO_ERRNO

    second = ("mlx5dv_open_device", "mlx5dv_devx_create_event_channel")
    fail = {
        f"mlx5dv_{v}": (NO_ERRNO, 2) if f"mlx5dv_{v}" in second else NO_ERRNO
        for v in (
            "open_device reg_dmabuf_mr create_mkey devx_umem_reg devx_umem_reg_ex devx_alloc_uar"
            " devx_obj_create devx_create_event_channel devx_get_event create_cq create_qp"
        ).split()
    }
    res = mlx5_fake.run(body, fail=fail)
    out = res.ok()
    fallback = {"reg_dmabuf_mr": errno.EINVAL, "devx_get_event": errno.EIO}
    fallback.update(create_cq=errno.EINVAL, create_qp=errno.EINVAL)
    assert out == {
        name: [fallback.get(name, errno.EOPNOTSUPP), f"mlx5dv_{name}", False] for name in out
    }
    assert len(out) == 11
    assert res.live == 0, res.live_report
