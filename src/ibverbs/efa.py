"""AWS EFA direct verbs (libefa's ``efadv.h``): SRD queue pairs and the rest.

EFA has no RC queue pairs: reliable SENDs and one-sided RDMA READ/WRITE go
over SRD QPs, which only :func:`create_qp` (``efadv_create_qp_ex``) makes::

    import ibverbs as ib
    from ibverbs import efa

    ctx = ib.Context("rdmap16s27")
    attr = efa.query_device(ctx)              # max_rdma_size, caps, ...
    pd = ctx.alloc_pd()
    cq = efa.create_cq(ctx, ib.CQInitAttrEx(cqe=256), efa.WCFlags.WITH_SGID)
    qp = efa.create_qp(pd, ib.QPInitAttrEx(cq, send_ops_flags=...))
    qp.to_init(1, qkey=efa.DEFAULT_QKEY); qp.to_rtr(None); qp.to_rts()
    me = efa.EndpointInfo(ctx.query_gid(1, 0), qp.qp_num, efa.DEFAULT_QKEY)
    ...                                        # exchange me.to_bytes()
    ah = efa.create_ah(pd, efa.EndpointInfo.from_bytes(peer_bytes))

libefa.so.1 (Debian/Ubuntu: ibverbs-providers; RHEL/Fedora: libibverbs) is
loaded by the first call that needs it, never by ``import ibverbs``; the
environment variable ``IBVERBS_LIBEFA`` names another file (for tests).  A
function the loaded libefa lacks raises ``VerbsError(EOPNOTSUPP)`` naming it
and the rdma-core release that added it; on a device that is not EFA,
libefa answers EOPNOTSUPP.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _ibverbs
from ._objects import (
    AHAttr,
    EfaAHAttr,
    EfaCQAttr,
    EfaDeviceAttr,
    EfaMRAttr,
    EfaWQAttr,
    Gid,
)
from .enums import SendFlags, WROpcode

if TYPE_CHECKING:
    from . import AH, PD, SendWR

__all__ = [
    "CQ",
    "DEFAULT_QKEY",
    "QP",
    "DeviceCaps",
    "DriverQPType",
    "EfaAHAttr",
    "EfaCQAttr",
    "EfaDeviceAttr",
    "EfaMRAttr",
    "EfaWQAttr",
    "EndpointInfo",
    "MRAttrValidity",
    "ProcessingHint",
    "QPFlags",
    "SQDepthFlags",
    "WCFlags",
    "WQCaps",
    "WRFlags",
    "create_ah",
    "create_comp_cntr",
    "create_cq",
    "create_driver_qp",
    "create_qp",
    "get_max_rq_depth",
    "get_max_sq_depth",
    "libefa_status",
    "query_ah",
    "query_device",
    "query_mr",
    "read_wrs",
    "write_wrs",
]

#: The Q_Key SRD users (libfabric's EFA provider among them) agree on.
DEFAULT_QKEY = 0x11111111

QP = _ibverbs.EfaQP
CQ = _ibverbs.EfaCQ

query_device = _ibverbs._efa_query_device
get_max_sq_depth = _ibverbs._efa_get_max_sq_depth
get_max_rq_depth = _ibverbs._efa_get_max_rq_depth
query_ah = _ibverbs._efa_query_ah
query_mr = _ibverbs._efa_query_mr
create_comp_cntr = _ibverbs._efa_create_comp_cntr
create_driver_qp = _ibverbs._efa_create_driver_qp
create_qp = _ibverbs._efa_create_qp
create_cq = _ibverbs._efa_create_cq
libefa_status = _ibverbs._efa_libefa_status


class DriverQPType(enum.IntEnum):
    """``EFADV_QP_DRIVER_TYPE_*``: the QP types libefa creates."""

    SRD = 0


class DeviceCaps(enum.IntFlag):
    """``EFADV_DEVICE_ATTR_CAPS_*`` (``EfaDeviceAttr.device_caps``)."""

    RDMA_READ = 1 << 0
    RNR_RETRY = 1 << 1
    CQ_WITH_SGID = 1 << 2
    RDMA_WRITE = 1 << 3
    UNSOLICITED_WRITE_RECV = 1 << 4
    CQ_WITH_EXT_MEM_DMABUF = 1 << 5
    COMP_CNTR = 1 << 6


class QPFlags(enum.IntFlag):
    """``EFADV_QP_FLAGS_*`` (``create_qp(flags=)``)."""

    UNSOLICITED_WRITE_RECV = 1 << 0
    INLINE_WRITE = 1 << 1


class WRFlags(enum.IntFlag):
    """``EFADV_WR_EX_WITH_*`` (``create_qp(wr_flags=)``)."""

    WITH_PROCESSING_HINTS = 1 << 0


class ProcessingHint(enum.IntFlag):
    """``EFADV_WR_PROCESSING_HINT_*`` (``QP.wr_set_processing_hints``)."""

    BURST_PPS_SENSITIVE = 1 << 0


class SQDepthFlags(enum.IntFlag):
    """``EFADV_SQ_DEPTH_ATTR_*`` (``get_max_sq_depth(flags=)``)."""

    INLINE_WRITE = 1 << 0


class WCFlags(enum.IntFlag):
    """``EFADV_WC_EX_WITH_*`` (``create_cq``'s ``efa_wc_flags``)."""

    WITH_SGID = 1 << 0
    WITH_IS_UNSOLICITED = 1 << 1


class MRAttrValidity(enum.IntFlag):
    """``EFADV_MR_ATTR_VALIDITY_*`` (``EfaMRAttr.ic_id_validity``)."""

    RECV_IC_ID = 1 << 0
    RDMA_READ_IC_ID = 1 << 1
    RDMA_RECV_IC_ID = 1 << 2


class WQCaps(enum.IntFlag):
    """``EFADV_WQ_CAPS_*`` (``EfaWQAttr.caps``)."""

    REQ_ID_64_BIT = 1 << 0


_ENDPOINT = struct.Struct("!16sII")


@dataclass(frozen=True)
class EndpointInfo:
    """What a peer needs to reach an SRD (or UD) QP: its port's GID, the
    QP number and the Q_Key.

    ``to_bytes()`` is 24 bytes: the 16 GID bytes, then the QP number and
    the Q_Key as 32-bit unsigned integers in network byte order
    (big-endian).  ``from_bytes()`` reads the same layout."""

    gid: Gid
    qpn: int
    qkey: int = DEFAULT_QKEY

    SIZE = _ENDPOINT.size

    def __post_init__(self) -> None:
        object.__setattr__(self, "gid", Gid(self.gid))
        for name in ("qpn", "qkey"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"EndpointInfo.{name} must be an int, not {type(v).__name__}")
            if not 0 <= v <= 0xFFFFFFFF:
                raise ValueError(f"EndpointInfo.{name} must be in 0..2**32-1, not {v}")

    def to_bytes(self) -> bytes:
        """The 24-byte wire form (GID, QPN, QKey; big-endian integers)."""
        return _ENDPOINT.pack(bytes(self.gid), self.qpn, self.qkey)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> EndpointInfo:
        """Read the 24-byte wire form.

        Raises:
            ValueError: data is not exactly 24 bytes.
        """
        data = bytes(data)
        if len(data) != _ENDPOINT.size:
            raise ValueError(
                f"EndpointInfo.from_bytes needs exactly {_ENDPOINT.size} bytes "
                f"(16 GID, 4 QPN, 4 QKey), got {len(data)}"
            )
        gid, qpn, qkey = _ENDPOINT.unpack(data)
        return cls(Gid(gid), qpn, qkey)


def create_ah(
    pd: PD, endpoint: EndpointInfo, port_num: int = 1, *, sgid_index: int = 0, sl: int = 0
) -> AH:
    """The AH that reaches ``endpoint`` (its GID) from ``port_num``.

    Wraps ``ibv_create_ah`` with a global route to ``endpoint.gid``; post
    to the peer with ``(ah, endpoint.qpn, endpoint.qkey)``.  On EFA
    ``efa.query_ah(ah).ahn`` is the number the peer's completions show
    in ``wc.slid``.

    Raises:
        TypeError: pd is not a PD or endpoint not an EndpointInfo.
        VerbsError: the AH could not be created (``errno``)."""
    if not isinstance(pd, _ibverbs.PD):
        raise TypeError(f"create_ah: pd must be a PD, not {type(pd).__name__}")
    if not isinstance(endpoint, EndpointInfo):
        raise TypeError(
            f"create_ah: endpoint must be an EndpointInfo, not {type(endpoint).__name__}"
        )
    return pd.create_ah(
        AHAttr(dgid=endpoint.gid, sgid_index=sgid_index, port_num=port_num, sl=sl, is_global=True)
    )


def _split(
    opcode: WROpcode,
    addr: int,
    length: int,
    lkey: int,
    remote_addr: int,
    rkey: int,
    max_rdma_size: int,
    wr_id: int,
    signal_last: bool,
    ud: dict[str, Any],
) -> list[SendWR]:
    from . import SGE, SendWR

    if max_rdma_size <= 0:
        raise ValueError(f"max_rdma_size must be positive, not {max_rdma_size}")
    if length < 0:
        raise ValueError(f"length must be >= 0, not {length}")
    wrs: list[SendWR] = []
    off = 0
    while off < length or (length == 0 and not wrs):
        n = min(max_rdma_size, length - off)
        last = off + n >= length
        flags = SendFlags.SIGNALED if (last and signal_last) else 0
        wrs.append(
            SendWR(
                wr_id=wr_id + len(wrs),
                sg_list=[SGE(addr + off, n, lkey)],
                opcode=opcode,
                send_flags=flags,
                remote_addr=remote_addr + off,
                rkey=rkey,
                **ud,
            )
        )
        off += n
    return wrs


def write_wrs(
    addr: int,
    length: int,
    lkey: int,
    remote_addr: int,
    rkey: int,
    max_rdma_size: int,
    *,
    wr_id: int = 0,
    signal_last: bool = True,
    ah: AH | None = None,
    remote_qpn: int = 0,
    remote_qkey: int = 0,
) -> list[SendWR]:
    """RDMA WRITE ``length`` bytes from ``addr`` to ``remote_addr`` as
    SendWRs of at most ``max_rdma_size`` bytes each (the device's limit:
    ``query_device(ctx).max_rdma_size``); ``wr_id`` counts up from the
    first; only the last is signaled when ``signal_last``.  On SRD give
    the peer's ``ah``, ``remote_qpn`` and ``remote_qkey``."""
    ud: dict[str, Any] = (
        {} if ah is None else {"ah": ah, "remote_qpn": remote_qpn, "remote_qkey": remote_qkey}
    )
    return _split(
        WROpcode.RDMA_WRITE,
        addr,
        length,
        lkey,
        remote_addr,
        rkey,
        max_rdma_size,
        wr_id,
        signal_last,
        ud,
    )


def read_wrs(
    addr: int,
    length: int,
    lkey: int,
    remote_addr: int,
    rkey: int,
    max_rdma_size: int,
    *,
    wr_id: int = 0,
    signal_last: bool = True,
    ah: AH | None = None,
    remote_qpn: int = 0,
    remote_qkey: int = 0,
) -> list[SendWR]:
    """RDMA READ ``length`` bytes from ``remote_addr`` into ``addr`` as
    SendWRs of at most ``max_rdma_size`` bytes each; as
    :func:`write_wrs`."""
    ud: dict[str, Any] = (
        {} if ah is None else {"ah": ah, "remote_qpn": remote_qpn, "remote_qkey": remote_qkey}
    )
    return _split(
        WROpcode.RDMA_READ,
        addr,
        length,
        lkey,
        remote_addr,
        rkey,
        max_rdma_size,
        wr_id,
        signal_last,
        ud,
    )
