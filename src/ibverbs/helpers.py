"""RC connection helpers and memory registration of tensors.

Nothing here is on the data path; it is plain Python over the verbs API.

- :class:`QPInfo` is what two peers exchange out of band to connect a QP:
  a fixed 28-byte big-endian wire format (``to_bytes`` / ``from_bytes``).
- :func:`local_qp_info` describes a local QP, :func:`connect_rc` walks a
  QP through RESET -> INIT -> RTR -> RTS towards a remote one (RC or UC).
- :func:`tensor_addr_len` and :func:`reg_tensor` take numpy arrays, torch
  CPU tensors, ``bytes``, ``bytearray`` and other buffer objects, duck-typed:
  neither numpy nor torch is imported (``ibverbs._tensor`` reads them, as
  it does for ``ibverbs.cuda``).
"""

from __future__ import annotations

import dataclasses
import struct
from typing import TYPE_CHECKING, Any

from . import _tensor
from ._objects import Gid
from .enums import MTU, AccessFlags

if TYPE_CHECKING:
    from ._ibverbs import MR, PD, QP
    from ._objects import PortAttr

__all__ = ["QPInfo", "local_qp_info", "connect_rc", "reg_tensor", "tensor_addr_len"]

_WIRE = struct.Struct(">IIH16sBB")
_U24 = (1 << 24) - 1


def _check_int(name: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in range {lo}..{hi}, got {value}")
    return int(value)


@dataclasses.dataclass
class QPInfo:
    """What a peer needs to connect to a QP: QP number, starting PSN, LID,
    GID, port number and the port's active MTU (an ``MTU`` value, 1..5).

    ``to_bytes()`` is a fixed 28-byte big-endian record, struct
    ``">IIH16sBB"``: u32 qp_num, u32 psn, u16 lid, 16-byte gid, u8 port,
    u8 mtu.  ``from_bytes()`` accepts exactly that and nothing else.

    ``gid`` is the 16 raw bytes of the wire format; a :class:`Gid` (or IPv6
    text) given on construction is stored as its ``.raw``.  A ``Gid``
    compares equal to its raw bytes, so ``info.gid == ctx.query_gid(...)``.
    Calls no verb.

    Raises:
        TypeError: a field of the wrong type.
        ValueError: qp_num or psn above 2**24-1, lid above 65535, port
            outside 1..255, mtu outside 1..5, or gid not a GID.
    """

    qp_num: int
    psn: int
    lid: int
    gid: bytes
    port: int
    mtu: int

    WIRE_SIZE = _WIRE.size  # 28 (not a field: no annotation)

    def __post_init__(self):
        self.qp_num = _check_int("qp_num", self.qp_num, 0, _U24)
        self.psn = _check_int("psn", self.psn, 0, _U24)
        self.lid = _check_int("lid", self.lid, 0, 0xFFFF)
        self.port = _check_int("port", self.port, 1, 0xFF)
        self.mtu = MTU(_check_int("mtu", self.mtu, 1, 5))
        self.gid = Gid(self.gid).raw

    def to_bytes(self) -> bytes:
        """The 28-byte big-endian wire record (see the class); raises
        nothing, the fields were checked when built."""
        return _WIRE.pack(self.qp_num, self.psn, self.lid, self.gid, self.port, int(self.mtu))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> QPInfo:
        """Parse a record ``to_bytes()`` wrote.

        Raises:
            ValueError: not bytes-like, not exactly 28 bytes, or a field out
                of range.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValueError(f"QPInfo.from_bytes() takes bytes, not {type(data).__name__}")
        data = bytes(data)
        if len(data) != _WIRE.size:
            raise ValueError(f"a QPInfo record must be exactly {_WIRE.size} bytes, got {len(data)}")
        qp_num, psn, lid, gid, port, mtu = _WIRE.unpack(data)
        try:
            return cls(qp_num, psn, lid, gid, port, mtu)
        except (TypeError, ValueError) as e:
            raise ValueError(f"malformed QPInfo record: {e}") from None


def local_qp_info(
    qp: QP, port_attr: PortAttr, gid: Gid | bytes, *, port: int, psn: int = 0
) -> QPInfo:
    """The QPInfo to send to a peer for ``qp`` on ``port``.

    Takes the LID and active MTU from ``port_attr``
    (``Context.query_port(port)``) and the GID from
    ``Context.query_gid(port, index)`` (stored as its 16 raw bytes); calls
    no verb itself.

    Args:
        qp: the local QP (its ``qp_num``).
        port_attr: the PortAttr of ``port``.
        gid: the local GID the peer addresses (a Gid or 16 bytes).
        port: the local port number.
        psn: the starting PSN of the QP's send queue (24 bits).

    Raises:
        TypeError, ValueError: a field QPInfo refuses.
    """
    return QPInfo(qp.qp_num, psn, port_attr.lid, Gid(gid).raw, port, port_attr.active_mtu)


_RTR_KEYS = frozenset(
    {"max_dest_rd_atomic", "min_rnr_timer", "hop_limit", "sl", "traffic_class", "flow_label"}
)


def connect_rc(
    qp: QP,
    remote: QPInfo,
    *,
    port: int,
    sgid_index: int,
    access: int,
    local_psn: int = 0,
    mtu: int | None = None,
    **rts_kwargs: int,
) -> None:
    """Connect ``qp`` (RC or UC, in RESET) to ``remote``: RESET -> INIT
    (``access`` as its remote access flags) -> RTR -> RTS.

    The calls are exactly the published package's: ``qp.to_init(port,
    access)``, ``qp.to_rtr(remote, sgid_index=..., mtu=...)`` (``to_rtr``
    takes the port the QP was given at INIT) and ``qp.to_rts(local_psn,
    **rts_kwargs)``, so code that wraps or fakes a QP sees the same calls.
    The path MTU defaults to the smaller of the local port's active MTU
    (``qp.pd.context.query_port(port)``) and ``remote.mtu``; it is passed
    to ``QP.to_rtr`` explicitly, as ``mtu=``.  The other keywords go to
    ``QP.to_rts`` (``timeout``, ``retry_cnt``, ``rnr_retry``,
    ``max_rd_atomic``), except the RTR ones (``max_dest_rd_atomic``,
    ``min_rnr_timer``, ``hop_limit``, ``sl``, ``traffic_class``,
    ``flow_label``), which go to ``QP.to_rtr``.

    Wraps ``ibv_modify_qp`` three times through the QP's methods, and
    ``ibv_query_port`` when ``mtu`` is None (man pages ibv_modify_qp(3),
    ibv_query_port(3)).

    Args:
        qp: the QP, in RESET.
        remote: the peer's QPInfo.
        port: the local port.
        sgid_index: the local GID index (RoCE; any value on InfiniBand).
        access: AccessFlags the peer may use (REMOTE_WRITE, ...).
        local_psn: the starting PSN of the local send queue.
        mtu: the path MTU, or None for the smaller of both ports'.

    Raises:
        TypeError: remote is not a QPInfo.
        VerbsError: a transition failed (``errno``, e.g. EINVAL for a QP
            not in RESET or an attribute the device refuses).
        ValueError: an attribute out of range (as ``QP.to_rtr``).
    """
    if not isinstance(remote, QPInfo):
        raise TypeError(f"remote must be a QPInfo, not {type(remote).__name__}")
    rtr_kwargs = {k: rts_kwargs.pop(k) for k in list(rts_kwargs) if k in _RTR_KEYS}
    if mtu is None:
        local_mtu = qp.pd.context.query_port(port).active_mtu
        mtu = MTU(min(int(local_mtu), int(remote.mtu)))
    qp.to_init(port, access)
    qp.to_rtr(remote, sgid_index=sgid_index, mtu=mtu, **rtr_kwargs)
    qp.to_rts(local_psn, **rts_kwargs)


# ---------------------------------------------------------------------------
# Tensors and buffers
# ---------------------------------------------------------------------------

_WRITABLE_ACCESS = AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC

_GPU_HINT = "register GPU memory with ibverbs.cuda.register_tensor(pd, tensor, access)"


def _describe(tensor) -> tuple[_tensor.Memory, int]:
    """The memory of a host or device tensor and its size, with
    reg_tensor's checks."""
    mem = _tensor.describe(tensor)
    if mem is None:
        raise TypeError(
            "expected a numpy array, a torch tensor, bytes, bytearray or "
            f"another buffer object, not {type(tensor).__name__}"
        )
    if mem.nbytes is None:
        raise _tensor.unknown_size(tensor)
    if mem.nbytes and not mem.contiguous:
        if mem.kind == "torch":
            raise ValueError("the tensor is not contiguous: register tensor.contiguous() instead")
        raise ValueError(
            "the array is not C-contiguous: register a contiguous copy (numpy.ascontiguousarray)"
        )
    if mem.nbytes == 0:
        raise ValueError("cannot register an empty tensor (0 bytes)")
    return mem, mem.nbytes


def _address(tensor, mem: _tensor.Memory) -> int:
    """The address of ``mem``; ValueError when nothing gives one."""
    if mem.addr is None:
        raise ValueError(
            f"{type(tensor).__name__} lives on device {mem.device!r} (__dlpack_device__) "
            "and gives no address: expose data_ptr() or __cuda_array_interface__"
        )
    return mem.addr


def tensor_addr_len(tensor: Any) -> tuple[int, int]:
    """``(address, nbytes)`` of a contiguous, non-empty tensor or buffer.

    Takes a numpy array, torch tensor (CPU or CUDA: a device address
    then), bytes, bytearray or another C-contiguous buffer.  The address
    is only valid while the object lives (and, for a bytearray, is not
    resized).  Calls no verb.

    Raises:
        ValueError: empty, not contiguous, or a read-only buffer other
            than bytes.
        TypeError: not a tensor nor a buffer.
    """
    mem, nbytes = _describe(tensor)
    if mem.owner is not tensor:
        mem.release()
    return _address(tensor, mem), nbytes


def reg_tensor(pd: PD, tensor: Any, access: int) -> MR:
    """Register a host tensor's memory with ``pd.reg_mr`` and return the MR,
    which retains the tensor until it is closed.

    Takes a contiguous, non-empty numpy array, torch CPU tensor, bytes,
    bytearray or other writable C-contiguous buffer (duck-typed: numpy and
    torch are never imported).  Read-only memory (``bytes``, read-only
    arrays) is only registered without write access (LOCAL_WRITE,
    REMOTE_WRITE, REMOTE_ATOMIC).  CUDA tensors go to
    ``ibverbs.cuda.register_tensor``: any object whose ``is_cuda`` is true
    is refused before anything else is looked at, as the published package
    does.  For a bytearray (or another resizable buffer) ``mr.owner`` is a
    memoryview of it (``mr.owner.obj`` is the bytearray): its buffer
    export keeps the bytearray from being resized while registered.

    Wraps ``ibv_reg_mr`` through ``PD.reg_mr`` (man page ibv_reg_mr(3)).

    Args:
        pd: the PD to register with.
        tensor: the memory.
        access: AccessFlags of the MR.

    Returns:
        The new MR.

    Raises:
        ValueError: a CUDA or other device tensor (``device.type``,
            ``__cuda_array_interface__`` or ``__dlpack_device__`` say where
            it lives), empty or not contiguous memory, or write access to
            read-only memory.
        TypeError: not a tensor nor a buffer.
        VerbsError: the verb failed (e.g. ENOMEM over the locked-memory
            limit, EFAULT).
    """
    if getattr(tensor, "is_cuda", False):
        raise ValueError(f"{type(tensor).__name__} is a CUDA tensor (is_cuda is true): {_GPU_HINT}")
    mem, nbytes = _describe(tensor)
    if mem.device is not None and not mem.host:
        raise ValueError(
            f"{type(tensor).__name__} lives on device {mem.device!r}, not in "
            f"host memory: {_GPU_HINT}"
        )
    if mem.readonly and int(access) & int(_WRITABLE_ACCESS):
        raise ValueError(
            f"{type(tensor).__name__} memory is read-only: it can only be "
            "registered without LOCAL_WRITE, REMOTE_WRITE and REMOTE_ATOMIC "
            f"(access={int(access):#x})"
        )
    return pd.reg_mr(_address(tensor, mem), nbytes, access, owner=mem.owner)
