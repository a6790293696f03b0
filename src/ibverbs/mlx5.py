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

from . import _ibverbs
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
    "CONTEXT_FLAGS_DEVX",
    "REG_DMABUF_ACCESS_DATA_DIRECT",
    "get_data_direct_sysfs_path",
    "is_supported",
    "open_device",
    "query_device",
    "reg_dmabuf_mr",
    "library_status",
]
