"""ibverbs.mlx5 with the REAL libmlx5.so.1 on a device of another provider
(rxe0 in the Soft-RoCE guest): every entry point that checks its provider
refuses, as a VerbsError naming the function, and leaks nothing.

On an NVIDIA ConnectX host (vendor id 0x02c9, as rdma-core's tests check)
these refusals do not apply: the module skips, so the same file runs
unchanged there."""

from __future__ import annotations

import contextlib
import errno

import pytest

import ibverbs as ib
from ibverbs import mlx5
from support.process import rdma_counts
from support.rdma import refused

pytestmark = pytest.mark.integration

MLX5_VENDOR_ID = 0x02C9


@pytest.fixture(autouse=True)
def _not_mlx5(ctx):
    if ctx.query_device().vendor_id == MLX5_VENDOR_ID:
        pytest.skip("an mlx5 device: the refusal tests are for other providers")
    ok, why = mlx5.library_status()
    if not ok:
        pytest.skip(f"no libmlx5 here: {why}")


def test_the_real_library_is_loaded():
    ok, path = mlx5.library_status()
    # dladdr names the file the provider plugin links to as well
    # (libibverbs/libmlx5-rdmav34.so -> ../libmlx5.so.1.x).
    assert ok and "libmlx5" in path


def test_is_supported_is_false(ctx):
    assert mlx5.is_supported(ctx.name) is False, "mlx5dv_is_supported(rxe) answered True"
    dev = next(d for d in ib.get_device_list() if d.name == ctx.name)
    assert mlx5.is_supported(dev) is False


def test_open_device_refuses(ctx):
    with pytest.raises(ib.VerbsError) as e:
        mlx5.open_device(ctx.name)
    assert e.value.errno == errno.EOPNOTSUPP
    assert e.value.operation == "mlx5dv_open_device"


@contextlib.contextmanager
def _leaks_nothing(ctx):
    """The device's resource counts (where readable) are the same after
    the block as before it."""
    before = rdma_counts(ctx.name)
    yield
    if before is not None:
        assert rdma_counts(ctx.name) == before


def test_context_level_calls_refuse(ctx):
    refused("mlx5dv_query_device", mlx5.query_device, ctx)
    refused("mlx5dv_get_data_direct_sysfs_path", mlx5.get_data_direct_sysfs_path, ctx)


def test_reg_dmabuf_mr_refuses_and_leaks_nothing(ctx):
    with _leaks_nothing(ctx):
        with ctx.alloc_pd() as pd:
            verb = "mlx5dv_reg_dmabuf_mr"
            refused(verb, mlx5.reg_dmabuf_mr, pd, 0, 4096, 0, 0, mlx5_access=1)


def test_create_cq_and_create_qp_refuse_and_leak_nothing(ctx):
    with _leaks_nothing(ctx):
        refused("mlx5dv_create_cq", mlx5.create_cq, ctx, ib.CQInitAttrEx(cqe=8), cqe_size=64)
        with ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            ops = ib.QPCreateSendOpsFlags
            attr = ib.QPInitAttrEx(cq, send_ops_flags=ops.SEND)
            refused("mlx5dv_create_qp", mlx5.create_qp, pd, attr, dc_type=mlx5.DCType.DCI)
            ooo = mlx5.QPCreateFlags.OOO_DP
            refused("mlx5dv_create_qp", mlx5.create_qp, pd, ib.QPInitAttrEx(cq), create_flags=ooo)


def test_qp_level_verbs_refuse_an_rxe_qp(ctx):
    with _leaks_nothing(ctx):
        with ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            qp = pd.create_qp(ib.QPInitAttr(cq, qp_type=ib.QPType.RC))
            try:
                for f, args, name in (
                    (mlx5.modify_qp_udp_sport, (49152,), "mlx5dv_modify_qp_udp_sport"),
                    (mlx5.modify_qp_lag_port, (1,), "mlx5dv_modify_qp_lag_port"),
                    (mlx5.query_qp_lag_port, (), "mlx5dv_query_qp_lag_port"),
                    (mlx5.dci_stream_id_reset, (0,), "mlx5dv_dci_stream_id_reset"),
                ):
                    refused(name, f, qp, *args)
            finally:
                qp.close()


def test_init_obj_refuses_rxe_objects_and_the_cq_still_polls(ctx):
    with _leaks_nothing(ctx):
        with ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            qp = pd.create_qp(ib.QPInitAttr(cq, qp_type=ib.QPType.RC))
            srq = pd.create_srq(8)
            try:
                for o in (qp, cq, srq, pd):
                    refused("mlx5dv_init_obj", mlx5.init_obj, o)
                assert cq.poll() == []  # a refused init_obj leaves the CQ to libibverbs
            finally:
                srq.close()
                qp.close()
