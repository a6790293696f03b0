"""NVIDIA ConnectX / BlueField direct verbs (libmlx5's ``mlx5dv.h``).

::

    from ibverbs import mlx5

    if mlx5.is_supported("mlx5_0"):
        ctx = mlx5.open_device("mlx5_0")
        caps = mlx5.query_device(ctx)

libmlx5.so.1 (Debian's and Ubuntu's ``ibverbs-providers``, RHEL's
``libibverbs``) is loaded on the first call that needs it, never by
``import ibverbs``: the same file the mlx5 provider plugin uses.  A
function the loaded libmlx5 lacks raises ``VerbsError(EOPNOTSUPP)`` naming
it and the rdma-core release that added it.  On a device of another
provider (Soft-RoCE, siw, EFA) the checking calls refuse with a
``VerbsError`` naming the function.  docs/guides/mlx5.md walks through DC
queue pairs, data-direct GPU registration and ``init_obj``.
"""

from __future__ import annotations

import enum
from typing import Any

from . import _ibverbs, _tensor
from ._objects import Mlx5Obj

is_supported = _ibverbs._mlx5_is_supported
open_device = _ibverbs._mlx5_open_device
query_device = _ibverbs._mlx5_query_device
get_data_direct_sysfs_path = _ibverbs._mlx5_get_data_direct_sysfs_path
reg_dmabuf_mr = _ibverbs._mlx5_reg_dmabuf_mr
create_cq = _ibverbs._mlx5_create_cq
create_qp = _ibverbs._mlx5_create_qp
modify_qp_udp_sport = _ibverbs._mlx5_modify_qp_udp_sport
modify_qp_lag_port = _ibverbs._mlx5_modify_qp_lag_port
query_qp_lag_port = _ibverbs._mlx5_query_qp_lag_port
dci_stream_id_reset = _ibverbs._mlx5_dci_stream_id_reset
init_obj = _ibverbs._mlx5_init_obj
get_cqe_opcode = _ibverbs._mlx5_get_cqe_opcode

QP = _ibverbs.Mlx5QP
CQ = _ibverbs.Mlx5CQ


class DCType(enum.IntEnum):
    """``enum mlx5dv_dc_type``: ``create_qp(dc_type=...)``."""

    DCT = 1
    DCI = 2


class QPCreateFlags(enum.IntFlag):
    """``enum mlx5dv_qp_create_flags``: ``create_qp(create_flags=...)``."""

    TUNNEL_OFFLOADS = 1 << 0
    TIR_ALLOW_SELF_LOOPBACK_UC = 1 << 1
    TIR_ALLOW_SELF_LOOPBACK_MC = 1 << 2
    DISABLE_SCATTER_TO_CQE = 1 << 3
    ALLOW_SCATTER_TO_CQE = 1 << 4
    PACKET_BASED_CREDIT_MODE = 1 << 5
    SIG_PIPELINING = 1 << 6
    OOO_DP = 1 << 7


class SendOpsFlags(enum.IntFlag):
    """``enum mlx5dv_qp_create_send_ops_flags``: ``create_qp(send_ops_flags=...)``."""

    MR_INTERLEAVED = 1 << 0
    MR_LIST = 1 << 1
    MKEY_CONFIGURE = 1 << 2
    RAW_WQE = 1 << 3
    MEMCPY = 1 << 4


class CQEResFormat(enum.IntFlag):
    """``enum mlx5dv_cqe_comp_res_format``: ``create_cq(cqe_comp_res_format=...)``."""

    HASH = 1 << 0
    CSUM = 1 << 1
    CSUM_STRIDX = 1 << 2


class CQInitAttrFlags(enum.IntFlag):
    """``enum mlx5dv_cq_init_attr_flags``: ``create_cq(flags=...)``."""

    CQE_PAD = 1 << 0


#: ``mlx5dv_context_attr.flags``: open a DEVX context.
CONTEXT_FLAGS_DEVX = 1
#: ``mlx5_access`` of ``reg_dmabuf_mr``: map through the data-direct device.
REG_DMABUF_ACCESS_DATA_DIRECT = 1


# DEVX and mkeys (mlx5/devx.c, mlx5/mkey.c): raw PRM bytes in and out.
DevxUmem = _ibverbs.Mlx5DevxUmem
DevxUAR = _ibverbs.Mlx5DevxUAR
DevxObj = _ibverbs.Mlx5DevxObj
DevxEventChannel = _ibverbs.Mlx5DevxEventChannel
Mkey = _ibverbs.Mlx5Mkey
devx_general_cmd = _ibverbs._mlx5_devx_general_cmd
devx_query_eqn = _ibverbs._mlx5_devx_query_eqn
devx_qp_modify = _ibverbs._mlx5_devx_qp_modify
devx_qp_query = _ibverbs._mlx5_devx_qp_query
devx_alloc_uar = _ibverbs._mlx5_devx_alloc_uar
devx_obj_create = _ibverbs._mlx5_devx_obj_create
devx_create_event_channel = _ibverbs._mlx5_devx_create_event_channel
create_mkey = _ibverbs._mlx5_create_mkey
wr_mr_list = _ibverbs._mlx5_wr_mr_list

#: ``devx_alloc_uar`` flags: a BlueFlame page, a non-cached page.
UAR_ALLOC_TYPE_BF = 0
UAR_ALLOC_TYPE_NC = 1
#: ``devx_create_event_channel`` flags: events carry only their cookie.
DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA = 1
#: ``create_mkey`` create_flags: an indirect mkey (required).
MKEY_INIT_ATTR_FLAGS_INDIRECT = 1


def _host_memory(buffer: Any, access: int) -> tuple[_tensor.Memory, int, int]:
    """A host buffer's memory (its owner pins it), address and length, for a umem."""
    mem = _tensor.describe(buffer)
    if mem is None:
        raise TypeError(f"buffer must be a buffer or a host tensor, not {type(buffer).__name__}")
    if mem.addr is None or (mem.device is not None and not mem.host):
        raise ValueError(f"buffer lives on device {mem.device!r}, not in host memory")
    if mem.nbytes is None or mem.nbytes == 0:
        mem.release()
        raise ValueError("buffer is empty")
    if mem.readonly and int(access) & 0xB:  # LOCAL_WRITE, REMOTE_WRITE, REMOTE_ATOMIC
        mem.release()
        raise ValueError("buffer is read-only: register it without write access")
    return mem, mem.addr, mem.nbytes


def devx_umem_reg(ctx: _ibverbs.Context, buffer: Any, access: int) -> DevxUmem:
    """Register a host buffer as a DEVX umem (``mlx5dv_devx_umem_reg``).

    The umem holds the buffer (for a bytearray, a memoryview whose export
    keeps it from being resized) until it is closed; ``umem.umem_id`` goes
    into the PRM commands.  Raises TypeError for a non-buffer, ValueError
    for empty, device or read-only memory given write access, VerbsError
    as ``_ibverbs._mlx5_devx_umem_reg`` does."""
    mem, addr, nbytes = _host_memory(buffer, access)
    try:
        return _ibverbs._mlx5_devx_umem_reg(ctx, addr, nbytes, access, owner=mem.owner)
    except BaseException:
        mem.release()
        raise


def devx_umem_reg_ex(ctx: _ibverbs.Context, buffer: Any, access: int, pgsz_bitmap: int) -> DevxUmem:
    """Register a host buffer as a DEVX umem with the page sizes allowed
    (``mlx5dv_devx_umem_reg_ex``, rdma-core 35; bit n of pgsz_bitmap:
    2**n bytes).  Holds the buffer as ``devx_umem_reg`` does."""
    mem, addr, nbytes = _host_memory(buffer, access)
    try:
        return _ibverbs._mlx5_devx_umem_reg_ex(
            ctx, addr, nbytes, access, pgsz_bitmap, owner=mem.owner
        )
    except BaseException:
        mem.release()
        raise


def devx_umem_reg_dmabuf(
    ctx: _ibverbs.Context,
    fd: int,
    offset: int,
    length: int,
    access: int,
    pgsz_bitmap: int,
    *,
    owner: Any = None,
) -> DevxUmem:
    """Register ``length`` bytes at ``offset`` of a dma-buf (GPU memory)
    as a DEVX umem (``mlx5dv_devx_umem_reg_ex`` with
    MLX5DV_UMEM_MASK_DMABUF, rdma-core 37); ``owner`` (e.g. the tensor)
    is held until close."""
    return _ibverbs._mlx5_devx_umem_reg_ex(
        ctx, offset, length, access, pgsz_bitmap, dmabuf_fd=fd, owner=owner
    )


def library_status() -> tuple[bool, str]:
    """(True, the loaded libmlx5's path) or (False, why it cannot be
    loaded).  Loads libmlx5.so.1 (once); calls no verb."""
    return _ibverbs._mlx5_status()


__all__ = [
    "CQ",
    "CQEResFormat",
    "CQInitAttrFlags",
    "DCType",
    "Mlx5Obj",
    "QP",
    "QPCreateFlags",
    "SendOpsFlags",
    "create_cq",
    "create_qp",
    "dci_stream_id_reset",
    "get_cqe_opcode",
    "init_obj",
    "modify_qp_lag_port",
    "modify_qp_udp_sport",
    "query_qp_lag_port",
    "DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA",
    "DevxEventChannel",
    "DevxObj",
    "DevxUAR",
    "DevxUmem",
    "MKEY_INIT_ATTR_FLAGS_INDIRECT",
    "Mkey",
    "UAR_ALLOC_TYPE_BF",
    "UAR_ALLOC_TYPE_NC",
    "create_mkey",
    "devx_alloc_uar",
    "devx_create_event_channel",
    "devx_general_cmd",
    "devx_obj_create",
    "devx_qp_modify",
    "devx_qp_query",
    "devx_query_eqn",
    "devx_umem_reg",
    "devx_umem_reg_dmabuf",
    "devx_umem_reg_ex",
    "wr_mr_list",
    "CONTEXT_FLAGS_DEVX",
    "REG_DMABUF_ACCESS_DATA_DIRECT",
    "get_data_direct_sysfs_path",
    "is_supported",
    "open_device",
    "query_device",
    "reg_dmabuf_mr",
    "library_status",
]
