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

from . import _ibverbs

is_supported = _ibverbs.mlx5_is_supported
open_device = _ibverbs.mlx5_open_device
query_device = _ibverbs.mlx5_query_device
get_data_direct_sysfs_path = _ibverbs.mlx5_get_data_direct_sysfs_path
reg_dmabuf_mr = _ibverbs.mlx5_reg_dmabuf_mr

#: ``mlx5dv_context_attr.flags``: open a DEVX context.
CONTEXT_FLAGS_DEVX = 1
#: ``mlx5_access`` of ``reg_dmabuf_mr``: map through the data-direct device.
REG_DMABUF_ACCESS_DATA_DIRECT = 1


def library_status() -> tuple[bool, str]:
    """(True, the loaded libmlx5's path) or (False, why it cannot be
    loaded).  Loads libmlx5.so.1 (once); calls no verb."""
    return _ibverbs._mlx5_status()


__all__ = [
    "CONTEXT_FLAGS_DEVX",
    "REG_DMABUF_ACCESS_DATA_DIRECT",
    "get_data_direct_sysfs_path",
    "is_supported",
    "open_device",
    "query_device",
    "reg_dmabuf_mr",
    "library_status",
]
