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


def library_status() -> tuple[bool, str]:
    """(True, the loaded libmlx5's path) or (False, why it cannot be
    loaded).  Loads libmlx5.so.1 (once); calls no verb."""
    return _ibverbs._mlx5_status()


__all__ = [
    "is_supported",
    "library_status",
]
