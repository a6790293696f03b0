"""The REAL libmlx5.so.1 refusing the DEVX calls and mkeys on Soft-RoCE
(rxe) objects, in the guest: every entry point that checks its provider
(through libmlx5's DV ops lookup, which finds none for an rxe context)
answers EOPNOTSUPP, raised as a VerbsError naming the function, and
nothing is left behind (the parents close at once, the device's resource
counts are unchanged).  The calls that take a DEVX object, a channel or
an mkey (obj modify/query/destroy, umem dereg, free_uar, subscribe,
get_event, destroy_mkey, wr_mr_list) cannot be reached on rxe, which
makes none: they run against the fake libmlx5 only
(tests/host/test_mlx5_devx.py).

On an NVIDIA ConnectX/BlueField device (vendor id 0x02c9) these refusals
do not happen: the module skips there, as rdma-core's own tests do."""

import errno

import pytest

import ibverbs as ib
from ibverbs import mlx5

from support.rdma import refused

pytestmark = pytest.mark.integration

MLX5_VENDOR_ID = 0x02C9


@pytest.fixture
def objects(request, device_name):
    """support.fixtures' counted_objects (a Context, a PD, a CQ and an RC
    QP, checked to close at once and leave the device's counts as they
    were) of a device that is not an mlx5."""
    ok, why = mlx5.library_status()
    if not ok:
        pytest.skip(f"libmlx5.so.1 cannot be loaded: {why}")
    with ib.Context(device_name) as ctx:
        if ctx.query_device().vendor_id == MLX5_VENDOR_ID:
            pytest.skip("an mlx5 device: these are the refusals of other providers")
    return request.getfixturevalue("counted_objects")


def test_is_not_mlx5(objects, device_name):
    assert mlx5.is_supported(device_name) is False


def test_devx_commands_refused(objects):
    ctx, _, _, qp = objects
    cmd = bytes(16)
    refused("mlx5dv_devx_general_cmd", mlx5.devx_general_cmd, ctx, cmd, 16)
    refused("mlx5dv_devx_query_eqn", mlx5.devx_query_eqn, ctx, 0)
    refused("mlx5dv_devx_obj_create", mlx5.devx_obj_create, ctx, cmd, 16)
    refused("mlx5dv_devx_qp_modify", mlx5.devx_qp_modify, qp, cmd, 16)
    refused("mlx5dv_devx_qp_query", mlx5.devx_qp_query, qp, cmd, 16)


def test_devx_objects_refused(objects):
    ctx = objects[0]
    buf = bytearray(8192)
    A = ib.AccessFlags
    refused("mlx5dv_devx_umem_reg", mlx5.devx_umem_reg, ctx, buf, A.LOCAL_WRITE)
    refused("mlx5dv_devx_umem_reg_ex", mlx5.devx_umem_reg_ex, ctx, buf, A.LOCAL_WRITE, 1 << 12)
    with open("/dev/null") as f:  # any fd: the library refuses first
        refused(
            "mlx5dv_devx_umem_reg_ex",
            mlx5.devx_umem_reg_dmabuf,
            ctx,
            f.fileno(),
            0,
            4096,
            A.LOCAL_WRITE,
            1 << 12,
        )
    # the refused registrations hold nothing: the buffer can be resized
    buf.extend(b"x")
    refused("mlx5dv_devx_alloc_uar", mlx5.devx_alloc_uar, ctx, mlx5.UAR_ALLOC_TYPE_NC)
    refused("mlx5dv_devx_create_event_channel", mlx5.devx_create_event_channel, ctx)


def test_mkey_refused(objects):
    pd = objects[1]
    refused("mlx5dv_create_mkey", mlx5.create_mkey, pd, mlx5.MKEY_INIT_ATTR_FLAGS_INDIRECT, 4)


def test_closed_parent_is_ebadf_before_the_library(objects, device_name):
    ctx = ib.Context(device_name)
    ctx.close()
    # EBADF from the binding: the library never sees a closed Context
    for fn, args in (
        (mlx5.devx_general_cmd, (b"", 8)),
        (mlx5.devx_query_eqn, (0,)),
        (mlx5.devx_alloc_uar, ()),
        (mlx5.devx_create_event_channel, ()),
    ):
        with pytest.raises(ib.VerbsError) as e:
            fn(ctx, *args)
        assert e.value.errno == errno.EBADF
