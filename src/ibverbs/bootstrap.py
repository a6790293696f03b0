"""Connect N ranks through the key-value store the job already has.

Any object with the part of ``torch.distributed.Store`` that ``TCPStore``,
``FileStore``, ``HashStore`` and ``PrefixStore`` share serves as the store:
``set(key, value)``, a blocking ``get(key) -> bytes`` and ``add(key, n) ->
int``.  torch is never imported here, except by :func:`torch_store`, the
helper for torchrun's environment.

Every collective of this module takes a generation number, a per-rank
sequence number kept in the store with ``add`` (``<prefix>/seq/<rank>``):
the n-th collective of every rank uses generation n, so one store (and one
prefix) serves any number of exchanges, and a job restarted on the same
store starts after the generations its predecessor used instead of reading
their keys.  Within a generation a rank ``set``s its data, then counts
itself in with ``add``; the others wait for the count with ``add(key, 0)``
(which never blocks), so a timeout can name the ranks that never arrived.
``get`` is only called for keys known to exist.
"""

from __future__ import annotations

import logging
import os
import random
import struct
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ._objects import Gid, QPInitAttr, VerbsError
from .enums import AccessFlags, GIDType, LinkLayer, QPType
from .helpers import QPInfo, connect_rc, local_qp_info

if TYPE_CHECKING:
    from ._ibverbs import CQ, PD, QP, Context

__all__ = [
    "Store",
    "RemoteMR",
    "allgather",
    "barrier",
    "connect_mesh",
    "exchange_mr",
    "pick_gid_index",
    "torch_store",
    "DEFAULT_TIMEOUT",
]

log = logging.getLogger("ibverbs.bootstrap")

#: Seconds a collective waits for the other ranks before TimeoutError.
DEFAULT_TIMEOUT = 300.0

_DEFAULT_ACCESS = AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_READ


class Store(Protocol):
    """The part of ``torch.distributed.Store`` used here: any object with
    these three methods (a ``TCPStore``, ``FileStore``, ``HashStore``, or
    ``torch_store()``'s) works as the rendezvous of the functions here."""

    def set(self, key: str, value: bytes, /) -> None:
        """Store ``value`` under ``key``, replacing what was there."""
        ...

    def get(self, key: str, /) -> bytes:
        """The value under ``key``, waiting (up to the store's own
        timeout) until some rank has set it."""
        ...

    def add(self, key: str, amount: int, /) -> int:
        """Add ``amount`` to the integer counter under ``key`` (0 when
        unset) atomically and return the new value."""
        ...


class RemoteMR(NamedTuple):
    """What a peer needs to address one-sided writes and reads to an MR
    (``exchange_mr`` returns them)."""

    addr: int
    length: int
    rkey: int


RemoteMR.addr.__doc__ = "The MR's start address, the remote_addr of RDMA work requests."
RemoteMR.length.__doc__ = "The MR's length in bytes."
RemoteMR.rkey.__doc__ = "The MR's remote key."


_REMOTE_MR = struct.Struct(">QQI")


def _check_group(rank: int, world_size: int) -> None:
    for name, v in (("rank", rank), ("world_size", world_size)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} must be an int, not {type(v).__name__}")
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in 0..{world_size - 1}, got {rank}")


def _check_prefix(prefix: str) -> None:
    if not isinstance(prefix, str) or not prefix:
        raise ValueError("prefix must be a non-empty str")


def _ranks_text(ranks: list[int]) -> str:
    if len(ranks) > 16:
        return ", ".join(map(str, ranks[:16])) + f", ... ({len(ranks)} in all)"
    return ", ".join(map(str, ranks))


def _exchange(
    store: Store,
    rank: int,
    world_size: int,
    data: bytes | None,
    prefix: str,
    timeout: float,
    what: str,
) -> tuple[str, int]:
    """Publish ``data`` (unless None) for this rank in a new generation and
    wait until all ranks have arrived.  Returns (key base, generation)."""
    _check_group(rank, world_size)
    _check_prefix(prefix)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number, not {type(timeout).__name__}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0, got {timeout}")
    gen = int(store.add(f"{prefix}/seq/{rank}", 1))
    base = f"{prefix}/{gen}"
    if data is not None:
        store.set(f"{base}/data/{rank}", data)
    store.add(f"{base}/in/{rank}", 1)
    count_key = f"{base}/count"
    store.add(count_key, 1)
    deadline = time.monotonic() + timeout
    pause = 0.0005
    while store.add(count_key, 0) < world_size:
        now = time.monotonic()
        if now >= deadline:
            missing = [r for r in range(world_size) if store.add(f"{base}/in/{r}", 0) == 0]
            raise TimeoutError(
                f"{what}: rank {rank} of {world_size} waited {timeout:g} s in "
                f"generation {gen} of prefix {prefix!r}; rank(s) "
                f"{_ranks_text(missing)} never arrived"
            )
        time.sleep(min(pause, deadline - now))
        pause = min(pause * 2, 0.02)
    return base, gen


def allgather(
    store: Store,
    rank: int,
    world_size: int,
    data: bytes,
    *,
    prefix: str = "ibverbs",
    timeout: float = DEFAULT_TIMEOUT,
) -> list[bytes]:
    """Every rank's ``data``, indexed by rank, on every rank.

    All ranks must call it (and the other collectives of this module,
    with the same prefix) in the same order.  Uses only the store; calls
    no verb.

    Args:
        store: the key-value store (see Store).
        rank: this rank, 0..world_size-1.
        world_size: the number of ranks.
        data: what this rank contributes (bytes).
        prefix: the key prefix; one prefix per group of ranks.
        timeout: seconds to wait for the other ranks.

    Returns:
        A list of world_size bytes objects.

    Raises:
        TimeoutError: not every rank arrived within ``timeout`` seconds
            (the message names the ranks that did not).
        TypeError: rank, world_size or timeout is not a number.
        ValueError: rank outside 0..world_size-1, world_size < 1, an
            empty prefix, or timeout <= 0.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, not {type(data).__name__}")
    base, _ = _exchange(store, rank, world_size, bytes(data), prefix, timeout, "allgather")
    return [bytes(store.get(f"{base}/data/{r}")) for r in range(world_size)]


def barrier(
    store: Store,
    rank: int,
    world_size: int,
    *,
    prefix: str = "ibverbs",
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """Return once every rank has called it.  Uses only the store; calls no
    verb.

    Raises:
        TimeoutError: not every rank arrived within ``timeout`` seconds
            (the message names the ranks that did not).
        TypeError: rank, world_size or timeout is not a number.
        ValueError: rank outside 0..world_size-1, world_size < 1, an
            empty prefix, or timeout <= 0.
    """
    _exchange(store, rank, world_size, None, prefix, timeout, "barrier")


def exchange_mr(
    store: Store,
    rank: int,
    world_size: int,
    mr: Any,
    *,
    prefix: str = "ibverbs",
    timeout: float = DEFAULT_TIMEOUT,
) -> list[RemoteMR]:
    """``RemoteMR(addr, length, rkey)`` of every rank's ``mr``, indexed by
    rank, through ``allgather``.  Calls no verb.

    Args:
        mr: an ``MR``, an ``ibverbs.cuda.GpuMR`` or anything with
            ``addr``, ``length`` and ``rkey``.

    Raises:
        TypeError: mr lacks addr, length or rkey.
        ValueError: a field does not fit its record (addr and length 64
            bits, rkey 32), or a rank sent a malformed record.
        TimeoutError: as ``allgather``.
    """
    try:
        mine = _REMOTE_MR.pack(int(mr.addr), int(mr.length), int(mr.rkey))
    except AttributeError:
        raise TypeError(
            f"mr must have addr, length and rkey (an MR or a GpuMR), not {type(mr).__name__}"
        ) from None
    except struct.error as e:
        raise ValueError(f"mr: {e}") from None
    out = []
    for r, blob in enumerate(
        allgather(store, rank, world_size, mine, prefix=prefix, timeout=timeout)
    ):
        if len(blob) != _REMOTE_MR.size:
            raise ValueError(
                f"exchange_mr: rank {r} sent {len(blob)} bytes, "
                f"not a {_REMOTE_MR.size}-byte MR record"
            )
        out.append(RemoteMR(*_REMOTE_MR.unpack(blob)))
    return out


# ---------------------------------------------------------------------------
# The full mesh of RC QPs
# ---------------------------------------------------------------------------


def _gid_type(ctx: Context, port: int, index: int) -> int | None:
    try:  # VerbsError(EOPNOTSUPP) when libibverbs lacks ibv_query_gid_ex
        return int(ctx.query_gid_ex(port, index)[1])
    except VerbsError:
        pass
    path = f"/sys/class/infiniband/{ctx.name}/ports/{port}/gid_attrs/types/{index}"
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return {"IB/RoCE v1": int(GIDType.ROCE_V1), "RoCE v2": int(GIDType.ROCE_V2)}.get(text)


_V4_MAPPED = bytes(10) + b"\xff\xff"


def pick_gid_index(ctx: Context, port: int = 1) -> int | None:
    """The GID index every rank uses when ``connect_mesh`` gets
    ``gid_index=None``.

    On an InfiniBand port None (the LID addresses the peer); on Ethernet
    (RoCE) the lowest index holding a RoCE v2 GID with an IPv4-mapped
    address (the type from ``ibv_query_gid_ex``, or sysfs where libibverbs
    lacks it).

    Wraps ``ibv_query_port``, ``ibv_query_gid`` and ``ibv_query_gid_ex``
    (man pages ibv_query_port(3), ibv_query_gid(3),
    ibv_query_gid_ex(3)).

    Raises:
        ValueError: the port has no such GID (give the netdev an IPv4
            address, or pass gid_index).
        VerbsError: querying the port failed (e.g. EINVAL for a port
            the device lacks).
    """
    attr = ctx.query_port(port)
    if attr.link_layer == LinkLayer.INFINIBAND:
        return None
    for i in range(attr.gid_tbl_len):
        try:
            gid = ctx.query_gid(port, i)
        except VerbsError:
            continue
        if gid.raw[:12] != _V4_MAPPED:
            continue
        if _gid_type(ctx, port, i) == GIDType.ROCE_V2:
            return i
    raise ValueError(
        f"{ctx.name} port {port} has no RoCE v2 GID with an IPv4 address "
        "(give the netdev an IPv4 address, or pass gid_index)"
    )


def connect_mesh(
    store: Store,
    rank: int,
    world_size: int,
    pd: PD,
    *,
    send_cq: CQ,
    recv_cq: CQ | None = None,
    port: int = 1,
    gid_index: int | None = None,
    access: int = _DEFAULT_ACCESS,
    qp_init: Mapping[str, Any] | None = None,
    prefix: str = "ibverbs",
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[int, QP]:
    """One RC QP per peer, connected: ``{peer_rank: QP}``.

    Each rank creates ``world_size - 1`` QPs on ``pd`` (``send_cq``, and
    ``recv_cq`` or else ``send_cq`` as well; ``qp_init`` holds more
    ``QPInitAttr`` keywords, e.g. ``max_send_wr``), publishes their
    ``QPInfo``s through the store, connects each to its peer's QP (INIT with
    ``access`` as remote access, RTR, RTS) and waits in a barrier, so every
    QP of every rank is at RTS when it returns.

    ``gid_index=None`` applies :func:`pick_gid_index` and logs the choice on
    the ``ibverbs.bootstrap`` logger.  On failure the QPs created here are
    closed again.

    Wraps ``ibv_create_qp`` and ``ibv_modify_qp`` (through
    ``PD.create_qp`` and ``connect_rc``) and ``ibv_query_port`` and
    ``ibv_query_gid`` (man pages ibv_create_qp(3), ibv_modify_qp(3),
    ibv_query_port(3), ibv_query_gid(3)).

    Raises:
        VerbsError: a verb failed (e.g. ENOMEM creating a QP, EINVAL in
            a transition).
        TypeError: qp_init sets send_cq, recv_cq or qp_type, or rank,
            world_size or timeout is not a number.
        ValueError: no usable GID (see ``pick_gid_index``), a peer sent
            records of another world_size, rank outside
            0..world_size-1, world_size < 1, an empty prefix, or
            timeout <= 0.
        TimeoutError: not every rank arrived within ``timeout`` seconds
            (the message names the ranks that did not).
    """
    _check_group(rank, world_size)
    ctx = pd.context
    if gid_index is None:
        gid_index = pick_gid_index(ctx, port)
        if gid_index is None:
            log.info("connect_mesh: %s port %d is InfiniBand: addressing by LID", ctx.name, port)
        else:
            log.info(
                "connect_mesh: %s port %d: RoCE v2 IPv4 GID index %d (%s)",
                ctx.name,
                port,
                gid_index,
                ctx.query_gid(port, gid_index),
            )
    port_attr = ctx.query_port(port)
    if gid_index is None:
        gid, sgid_index = Gid(bytes(16)), 0
    else:
        gid, sgid_index = ctx.query_gid(port, gid_index), gid_index
    init = dict(qp_init or {})
    for k in ("send_cq", "recv_cq", "qp_type"):
        if k in init:
            raise TypeError(f"qp_init must not set {k!r}: connect_mesh sets it")
    qps: dict[int, QP] = {}
    try:
        mine = []
        empty = bytes(QPInfo.WIRE_SIZE)
        for peer in range(world_size):
            if peer == rank:
                mine.append(empty)
                continue
            qp = pd.create_qp(
                QPInitAttr(
                    send_cq=send_cq,
                    recv_cq=recv_cq if recv_cq is not None else send_cq,
                    qp_type=QPType.RC,
                    **init,
                )
            )
            qps[peer] = qp
            info = local_qp_info(qp, port_attr, gid, port=port, psn=random.getrandbits(24))
            mine.append(info.to_bytes())
        blobs = allgather(store, rank, world_size, b"".join(mine), prefix=prefix, timeout=timeout)
        size = QPInfo.WIRE_SIZE
        for peer, qp in qps.items():
            blob = blobs[peer]
            if len(blob) != size * world_size:
                raise ValueError(
                    f"connect_mesh: rank {peer} sent {len(blob)} bytes, not "
                    f"{world_size} QPInfo records (a different world_size?)"
                )
            remote = QPInfo.from_bytes(blob[rank * size : (rank + 1) * size])
            local_psn = QPInfo.from_bytes(mine[peer]).psn
            connect_rc(
                qp, remote, port=port, sgid_index=sgid_index, access=access, local_psn=local_psn
            )
        barrier(store, rank, world_size, prefix=prefix, timeout=timeout)
    except BaseException:
        for qp in qps.values():
            try:
                qp.close()
            except Exception:  # noqa: BLE001 - the first error is the one to see
                pass
        raise
    return qps


# ---------------------------------------------------------------------------
# torchrun
# ---------------------------------------------------------------------------


def torch_store(*, timeout: float = DEFAULT_TIMEOUT) -> tuple[Any, int, int]:
    """``(store, rank, world_size)`` for a process started by torchrun (or
    with ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` set).

    The default process group's store when ``torch.distributed`` is
    initialized; else torch's own ``env://`` rendezvous, which builds the
    ``TCPStore`` (rank 0 serves it, or torchrun's agent does, under a prefix
    per restart attempt).  Needs torch (``pip install ibverbs[torch]``).
    Calls no verb.

    Raises:
        ImportError: torch is not installed.
        RuntimeError: torch has no ``torch.distributed``, or the
            environment variables are missing.
    """
    try:
        import torch.distributed as dist
    except ImportError:
        raise ImportError(
            "ibverbs.bootstrap.torch_store needs torch: pip install 'ibverbs[torch]'"
        ) from None
    from datetime import timedelta

    if not dist.is_available():
        raise RuntimeError("this torch build has no torch.distributed")
    if dist.is_initialized():
        from torch.distributed import distributed_c10d

        return (distributed_c10d._get_default_store(), dist.get_rank(), dist.get_world_size())
    missing = [
        k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ
    ]
    if missing:
        raise RuntimeError(
            f"torch_store: {', '.join(missing)} not set (run under torchrun, "
            "or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)"
        )
    from torch.distributed.rendezvous import rendezvous

    store, rank, world_size = next(iter(rendezvous("env://", timeout=timedelta(seconds=timeout))))
    return store, rank, world_size
