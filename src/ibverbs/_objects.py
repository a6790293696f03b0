"""Plain Python classes that the C core builds and raises.

They live in Python because nothing about them is hot: errors, and the
attribute records returned by the query verbs (``Context.query_device``,
``query_port``, ``query_gid``, ``QP.query``).  Attribute names are the C
struct field names.
"""

from __future__ import annotations

import errno as _errno
import ipaddress
import os as _os
from typing import Any, overload

__all__ = [
    "VerbsError",
    "CompletionError",
    "DeviceAttr",
    "PortAttr",
    "Gid",
    "GidEntry",
    "QPCap",
    "QPInitAttr",
    "AHAttr",
    "QPInitAttrEx",
    "RXHashConf",
    "ECE",
    "OpsWR",
    "MWBindInfo",
    "MWBind",
    "ValuesEx",
    "WCTMInfo",
    "CompCntrCaps",
    "FlowActionESPAttr",
]


class VerbsError(OSError):
    """A verb failed.  ``errno``, ``strerror`` and ``operation`` (the verb's
    name, e.g. ``"ibv_reg_mr"``) say what and why.

    ``VerbsError(errno, strerror, operation=None)``; the published
    package's ``VerbsError(operation, errno, detail=None)`` (a str first)
    builds the same error, with ``os.strerror(errno)`` and the detail as
    its text."""

    @overload
    def __init__(self, errno: int, strerror: str, operation: str | None = None) -> None: ...
    @overload
    def __init__(self, errno: str, strerror: int, operation: object = None) -> None: ...

    def __init__(self, errno, strerror, operation=None):
        if isinstance(errno, str) and isinstance(strerror, int):
            # The published order: (operation, err, detail=None).
            op, err, detail = errno, strerror, operation
            text = _os.strerror(err)
            if detail is not None:
                text = f"{text}: {detail}"
            errno, strerror, operation = err, text, op
        super().__init__(errno, strerror)
        self.operation = operation

    def __str__(self) -> str:
        where = f"{self.operation}: " if self.operation else ""
        return f"[Errno {self.errno}] {where}{self.strerror}"

    def __reduce__(self):
        return (type(self), (self.errno, self.strerror, self.operation))


class CompletionError(VerbsError):
    """A work completion with a status other than SUCCESS (raised by
    ``WC.raise_for_status()`` and ``CQ.poll_count()``).

    A :class:`VerbsError` (so an ``OSError``) with errno ``EIO``; ``wc`` is
    the completion, ``status`` its ``WCStatus``, ``vendor_err`` the
    provider's code, and the message names the status."""

    def __init__(self, wc):
        self.wc = wc
        self.vendor_err = wc.vendor_err
        from .enums import WCOpcode, WCStatus

        try:
            self.status = WCStatus(wc.status)
            status_name = self.status.name
        except ValueError:
            self.status = wc.status
            status_name = str(wc.status)
        try:
            opcode = WCOpcode(wc.opcode).name
        except ValueError:
            opcode = str(wc.opcode)
        super().__init__(
            _errno.EIO,
            f"work completion failed: {status_name} (status {int(wc.status)}, "
            f"vendor_err {wc.vendor_err:#x}) wr_id={wc.wr_id} opcode={opcode} "
            f"qp_num={wc.qp_num}",
        )

    def __reduce__(self):
        return (type(self), (self.wc,))


class _Record:
    """A read-only bag of named fields, compared by value."""

    __slots__ = ("_fields",)

    def __init__(self, **fields):
        object.__setattr__(self, "_fields", fields)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __dir__(self):
        return sorted(set(self._fields) | set(super().__dir__()))

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._fields == other._fields

    def __hash__(self):
        return hash(tuple(sorted(self._fields.items())))

    def _asdict(self) -> dict:
        return dict(self._fields)

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"{type(self).__name__}({inner})"


class DeviceAttr(_Record):
    """``struct ibv_device_attr`` (``fw_ver`` is a str)."""

    __slots__ = ()


class PortAttr(_Record):
    """``struct ibv_port_attr``, plus ``port_num``."""

    __slots__ = ()


class GidEntry(_Record):
    """One entry of a port's GID table (``struct ibv_gid_entry``), from
    ``Context.query_gid_table`` and ``Context.find_gid``.

    Fields: ``index`` (``gid_index``), ``port`` (``port_num``), ``gid`` (a
    Gid), ``gid_type`` (a ``GIDType``), ``ndev_ifindex``, plus ``netdev``
    (the interface's name, None for none) and ``ip``: for a RoCE entry the
    address the GID holds (an ``ipaddress.IPv4Address`` for an IPv4-mapped
    GID, else an ``IPv6Address``), None for an InfiniBand one.
    """

    __slots__ = ()

    def __init__(self, **fields):
        from .enums import GIDType

        try:
            fields["gid_type"] = GIDType(fields["gid_type"])
        except ValueError:
            pass
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None
        if fields["gid_type"] != GIDType.IB:
            addr = ipaddress.IPv6Address(bytes(fields["gid"]))
            ip = addr.ipv4_mapped or addr
        fields.setdefault("ip", ip)
        super().__init__(**fields)


class ValuesEx(_Record):
    """``struct ibv_values_ex``, from ``Context.query_rt_values_ex``: ``comp_mask`` (the
    ``ValuesMask`` the provider filled), ``raw_clock_sec`` and ``raw_clock_nsec`` (its
    ``struct timespec raw_clock``: the device clock that ``WCEx.completion_ts`` counts in)."""

    __slots__ = ()


class QPCap(_Record):
    """``struct ibv_qp_cap``: max_send_wr, max_recv_wr, max_send_sge,
    max_recv_sge, max_inline_data."""

    __slots__ = ()


class Gid:
    """A 16-byte GID (``union ibv_gid``), immutable.

    ``Gid(raw_bytes)``, ``Gid("fe80::1")`` (IPv6 text) or ``Gid(gid)``;
    ``str()`` gives the IPv6 text.  A Gid equals (and hashes like) its 16
    raw bytes.  ``Context.query_gid`` returns them.

    Raises:
        ValueError: not 16 bytes, or text that is not an IPv6 address.
        TypeError: another type.
    """

    __slots__ = {"raw": "The 16 bytes, network order."}
    raw: bytes

    def __init__(self, value: Gid | str | bytes | bytearray | memoryview = bytes(16)) -> None:
        if isinstance(value, Gid):
            raw = value.raw
        elif isinstance(value, str):
            try:
                raw = ipaddress.IPv6Address(value).packed
            except ValueError as e:
                raise ValueError(f"not a GID: {value!r} ({e})") from None
        elif isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
        else:
            raise TypeError(f"Gid() takes 16 bytes, IPv6 text or a Gid, not {type(value).__name__}")
        if len(raw) != 16:
            raise ValueError(f"a GID is 16 bytes, got {len(raw)}")
        object.__setattr__(self, "raw", raw)

    def __setattr__(self, name, value):
        raise AttributeError("Gid is read-only")

    @property
    def subnet_prefix(self) -> int:
        """The first 8 bytes as an int (``ibv_gid.global.subnet_prefix``)."""
        return int.from_bytes(self.raw[:8], "big")

    @property
    def interface_id(self) -> int:
        """The last 8 bytes as an int (``ibv_gid.global.interface_id``)."""
        return int.from_bytes(self.raw[8:], "big")

    def is_zero(self) -> bool:
        """True for the all-zero GID (an unused GID table entry)."""
        return self.raw == bytes(16)

    def __bytes__(self) -> bytes:
        return self.raw

    def __str__(self) -> str:
        addr = ipaddress.IPv6Address(self.raw)
        v4 = addr.ipv4_mapped
        if v4 is not None:  # RoCE v2 over IPv4; same text on every Python
            return f"::ffff:{v4}"
        return str(addr)

    def __repr__(self) -> str:
        return f"Gid('{self}')"

    # A Gid equals its 16 raw bytes (and hashes like them), so code that
    # compares QPInfo.gid (bytes) with Context.query_gid() works either way.
    def __eq__(self, other):
        if isinstance(other, Gid):
            return self.raw == other.raw
        if isinstance(other, (bytes, bytearray, memoryview)):
            return self.raw == other
        return NotImplemented

    def __hash__(self):
        return hash(self.raw)


class QPInitAttr:
    """``struct ibv_qp_init_attr`` for ``PD.create_qp`` (and
    ``CMID.create_qp``): the CQs, the transport and the queue sizes.

    A plain record: values are checked when the QP is created.  The
    ``max_*`` fields are the sizes asked for; the QP's ``cap`` says what
    the device gave.  ``recv_cq`` defaults to ``send_cq``, ``qp_type`` to
    ``QPType.RC``.
    """

    __slots__ = {
        "send_cq": "The CQ of the send queue's completions.",
        "recv_cq": "The CQ of the receive queue's completions.",
        "qp_type": "The transport, a QPType (RC, UC, UD, RAW_PACKET).",
        "srq": "An SRQ the QP receives from, or None.",
        "max_send_wr": "Send work requests outstanding at most.",
        "max_recv_wr": "Receive work requests outstanding at most (0 with an SRQ).",
        "max_send_sge": "SGEs per send work request at most.",
        "max_recv_sge": "SGEs per receive work request at most.",
        "max_inline_data": "Bytes a send may carry inline (SendFlags.INLINE).",
        "sq_sig_all": "True: every send completes with a WC, not only SIGNALED ones.",
        "qp_context": "Kept for the C struct's shape and not passed on: the native "
        "qp_context is the QP object itself.",
    }

    def __init__(
        self,
        send_cq,
        recv_cq=None,
        qp_type=None,
        max_send_wr: int = 128,
        max_recv_wr: int = 128,
        max_send_sge: int = 1,
        max_recv_sge: int = 1,
        max_inline_data: int = 0,
        srq=None,
        sq_sig_all: bool = False,
        qp_context=None,
    ):
        from .enums import QPType

        self.send_cq = send_cq
        self.recv_cq = send_cq if recv_cq is None else recv_cq
        self.qp_type = QPType.RC if qp_type is None else qp_type
        self.srq = srq
        self.max_send_wr = max_send_wr
        self.max_recv_wr = max_recv_wr
        self.max_send_sge = max_send_sge
        self.max_recv_sge = max_recv_sge
        self.max_inline_data = max_inline_data
        self.sq_sig_all = sq_sig_all
        self.qp_context = qp_context

    def __repr__(self):
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"QPInitAttr({inner})"


class QPInitAttrEx(QPInitAttr):
    """``struct ibv_qp_init_attr_ex`` for ``PD.create_qp_ex`` and
    ``Context.create_qp_ex``: QPInitAttr's fields, plus ``send_ops_flags``
    (QPCreateSendOpsFlags: the ``wr_*`` builders the QP may use; when None,
    SEND, or none for an XRC_RECV or RSS QP), ``pd`` (required by
    ``Context.create_qp_ex``), ``create_flags`` (QPCreateFlags), ``xrcd``
    (an XRC_RECV QP's XRCD), ``rwq_ind_tbl`` and ``rx_hash_conf`` (an RSS
    QP's RWQIndTable and RXHashConf), ``source_qpn`` (adds
    QPCreateFlags.SOURCE_QPN) and ``max_tso_header``.

    The comp_mask (QPInitAttrMask) is PD, plus SEND_OPS_FLAGS when
    send_ops_flags is non-zero, CREATE_FLAGS when create_flags (or
    source_qpn) is, and XRCD, IND_TABLE, RX_HASH, MAX_TSO_HEADER for each
    of those fields that is not None.  ``send_cq`` may be None for an
    XRC_RECV or RSS QP (which have no send queue of their own).  Values are
    checked when the QP is created.  XRC, RSS, source_qpn, max_tso_header
    and the create flags are never run on hardware here; checked against
    the recording double (rxe refuses them)."""

    __slots__ = {
        "send_ops_flags": "QPCreateSendOpsFlags: the ``wr_*`` builders the QP may use.",
        "pd": "The PD of the QP (required by ``Context.create_qp_ex``).",
        "create_flags": "``enum ibv_qp_create_flags`` bits, 0 for none.",
        "xrcd": "The XRCD of an XRC_RECV QP, or None.",
        "rwq_ind_tbl": "The RWQIndTable of an RSS QP, or None.",
        "rx_hash_conf": "The RXHashConf of an RSS QP, or None.",
        "source_qpn": "The QP number a UD QP sends as (SOURCE_QPN), or None.",
        "max_tso_header": "The largest TSO header the QP sends, or None.",
    }

    def __init__(
        self,
        send_cq=None,
        recv_cq=None,
        qp_type=None,
        max_send_wr: int = 128,
        max_recv_wr: int = 128,
        max_send_sge: int = 1,
        max_recv_sge: int = 1,
        max_inline_data: int = 0,
        srq=None,
        sq_sig_all: bool = False,
        qp_context=None,
        *,
        send_ops_flags=None,
        pd=None,
        create_flags: int = 0,
        xrcd=None,
        rwq_ind_tbl=None,
        rx_hash_conf=None,
        source_qpn: int | None = None,
        max_tso_header: int | None = None,
    ):
        super().__init__(
            send_cq,
            recv_cq,
            qp_type,
            max_send_wr,
            max_recv_wr,
            max_send_sge,
            max_recv_sge,
            max_inline_data,
            srq,
            sq_sig_all,
            qp_context,
        )
        from .enums import QPCreateSendOpsFlags, QPType

        if send_ops_flags is None:
            # an XRC receive or RSS QP sends nothing of its own
            no_send = self.qp_type == QPType.XRC_RECV or rwq_ind_tbl is not None
            send_ops_flags = QPCreateSendOpsFlags(0 if no_send else QPCreateSendOpsFlags.SEND)
        self.send_ops_flags = send_ops_flags
        self.pd = pd
        self.create_flags = create_flags
        self.xrcd = xrcd
        self.rwq_ind_tbl = rwq_ind_tbl
        self.rx_hash_conf = rx_hash_conf
        self.source_qpn = source_qpn
        self.max_tso_header = max_tso_header

    def __repr__(self):
        names = (*QPInitAttr.__slots__, *QPInitAttrEx.__slots__)
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in names)
        return f"QPInitAttrEx({inner})"


class AHAttr:
    """``struct ibv_ah_attr`` (with its GRH) for ``PD.create_ah`` and the
    ``ah_attr`` of ``QP.modify``.  ``dgid`` takes a Gid, 16 bytes or IPv6
    text; giving one turns ``is_global`` on.  A plain record: values are
    checked when the AH or QP uses it.

    Raises:
        ValueError: dgid is not a GID (see Gid).
        TypeError: dgid is of another type.
    """

    __slots__ = {
        "dgid": "The destination GID (a Gid), or None without a GRH.",
        "sgid_index": "The index of the source GID in the port's GID table.",
        "port_num": "The local port, from 1.",
        "is_global": "True: the packets carry a GRH (RoCE always needs one).",
        "hop_limit": "The GRH hop limit.",
        "dlid": "The destination LID (InfiniBand; 0 on RoCE).",
        "sl": "The service level.",
        "traffic_class": "The GRH traffic class.",
        "flow_label": "The GRH flow label.",
        "src_path_bits": "The source LID path bits (InfiniBand).",
        "static_rate": "The injection rate limit (``enum ibv_rate``, 0: none).",
    }

    def __init__(
        self,
        dgid=None,
        sgid_index: int = 0,
        dlid: int = 0,
        is_global=None,
        port_num: int = 1,
        hop_limit: int = 64,
        traffic_class: int = 0,
        sl: int = 0,
        flow_label: int = 0,
        src_path_bits: int = 0,
        static_rate: int = 0,
    ):
        self.dgid = None if dgid is None else Gid(dgid)
        self.sgid_index = sgid_index
        self.port_num = port_num
        self.is_global = (dgid is not None) if is_global is None else bool(is_global)
        self.hop_limit = hop_limit
        self.dlid = dlid
        self.sl = sl
        self.traffic_class = traffic_class
        self.flow_label = flow_label
        self.src_path_bits = src_path_bits
        self.static_rate = static_rate

    def __eq__(self, other):
        if not isinstance(other, AHAttr):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self):
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"AHAttr({inner})"


# ---------------------------------------------------------------------------
# Extended CQ and device capabilities (Context.create_cq_ex, query_device_ex)
# ---------------------------------------------------------------------------

__all__ += [
    "CQInitAttrEx",
    "DeviceAttrEx",
    "ODPCaps",
    "TSOCaps",
    "RSSCaps",
    "PacketPacingCaps",
    "TMCaps",
    "CQModerationCaps",
    "PCIAtomicCaps",
]


class CQInitAttrEx:
    """``struct ibv_cq_init_attr_ex`` for ``Context.create_cq_ex``.

    ``wc_flags`` (``CreateCQWCFlags``) names the fields that the CQEx's
    ``read_*`` accessors and ``poll()`` may read; ``flags`` is
    ``CreateCQAttrFlags``.  Values are checked when the CQ is created."""

    __slots__ = {
        "cqe": "Completions the CQ holds at least.",
        "wc_flags": "CreateCQWCFlags: the fields the CQ reports.",
        "channel": "A CompChannel for its notifications, or None.",
        "comp_vector": "The completion vector (interrupt), below ``Context.num_comp_vectors``.",
        "flags": "CreateCQAttrFlags.",
        "parent_domain": "A ParentDomain for the CQ (``IBV_CQ_INIT_ATTR_MASK_PD``), or None.",
    }

    def __init__(
        self,
        cqe: int,
        wc_flags: int = 0,
        channel=None,
        comp_vector: int = 0,
        flags: int = 0,
        parent_domain=None,
    ):
        self.cqe = cqe
        self.wc_flags = wc_flags
        self.channel = channel
        self.comp_vector = comp_vector
        self.flags = flags
        self.parent_domain = parent_domain

    def __repr__(self):
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"CQInitAttrEx({inner})"


class DeviceAttrEx(_Record):
    """``struct ibv_device_attr_ex``: ``orig_attr`` (a DeviceAttr), the
    nested caps as records (``odp_caps``, ``tso_caps``, ``rss_caps``,
    ``packet_pacing_caps``, ``tm_caps``, ``cq_mod_caps``,
    ``pci_atomic_caps``), the scalar fields by their C names, and
    ``legacy``: True when the provider has no ``query_device_ex`` and only
    ``orig_attr`` is filled (the rest reads 0)."""

    __slots__ = ()


class ODPCaps(_Record):
    """``struct ibv_odp_caps``: general_caps (ODPGeneralCaps) and the
    per-transport rc_odp_caps, uc_odp_caps, ud_odp_caps
    (ODPTransportCapBits)."""

    __slots__ = ()


class TSOCaps(_Record):
    """``struct ibv_tso_caps``: max_tso, supported_qpts."""

    __slots__ = ()


class RSSCaps(_Record):
    """``struct ibv_rss_caps``."""

    __slots__ = ()


class PacketPacingCaps(_Record):
    """``struct ibv_packet_pacing_caps``."""

    __slots__ = ()


class TMCaps(_Record):
    """``struct ibv_tm_caps`` (tag matching)."""

    __slots__ = ()


class CQModerationCaps(_Record):
    """``struct ibv_cq_moderation_caps``: max_cq_count, max_cq_period."""

    __slots__ = ()


class PCIAtomicCaps(_Record):
    """``struct ibv_pci_atomic_caps``: fetch_add, swap, compare_swap."""

    __slots__ = ()


class MWBindInfo:
    """``struct ibv_mw_bind_info``: what a memory window is bound to (the
    part ``addr``, ``length`` of ``mr``) and the remote access it grants
    (``mw_access_flags``, AccessFlags: REMOTE_READ, REMOTE_WRITE, ...).
    ``mr`` needs ``AccessFlags.MW_BIND``; ``length=0`` unbinds a type 1
    window.  A plain record: values are checked by the bind."""

    __slots__ = {
        "mr": "The MR the window opens into.",
        "addr": "The start address of the window, inside the MR.",
        "length": "The window's length in bytes (0 unbinds a type 1 window).",
        "mw_access_flags": "AccessFlags the window grants remote peers.",
    }

    def __init__(self, mr, addr: int, length: int, mw_access_flags: int = 0):
        self.mr = mr
        self.addr = addr
        self.length = length
        self.mw_access_flags = mw_access_flags

    def __eq__(self, other):
        if not isinstance(other, MWBindInfo):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self):
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"MWBindInfo({inner})"


class MWBind:
    """``struct ibv_mw_bind`` for ``QP.bind_mw`` (type 1 windows): the
    bind's ``wr_id`` and ``send_flags`` (SendFlags.SIGNALED asks for a
    completion) and its ``bind_info`` (an MWBindInfo)."""

    __slots__ = {
        "wr_id": "The cookie of the bind's work completion.",
        "send_flags": "SendFlags of the bind (SIGNALED asks for a completion).",
        "bind_info": "The MWBindInfo: what the window is bound to.",
    }

    def __init__(self, bind_info: MWBindInfo, wr_id: int = 0, send_flags: int = 0):
        self.bind_info = bind_info
        self.wr_id = wr_id
        self.send_flags = send_flags

    def __repr__(self):
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"MWBind({inner})"


class RXHashConf:
    """``struct ibv_rx_hash_conf``: how an RSS QP
    (``QPInitAttrEx(rwq_ind_tbl=..., rx_hash_conf=...)``) hashes packets
    over its WQs.  A plain record: values are checked when the QP is
    created."""

    __slots__ = {
        "rx_hash_function": "An RXHashFunctionFlags (TOEPLITZ).",
        "rx_hash_key": "The hash key, bytes (at most 255; its length is rx_hash_key_len).",
        "rx_hash_fields_mask": "RXHashFields: the packet fields hashed.",
    }

    def __init__(self, rx_hash_function: int, rx_hash_key: bytes, rx_hash_fields_mask: int):
        self.rx_hash_function = rx_hash_function
        self.rx_hash_key = rx_hash_key
        self.rx_hash_fields_mask = rx_hash_fields_mask

    def __eq__(self, other):
        if not isinstance(other, RXHashConf):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self):
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"RXHashConf({inner})"


class ECE:
    """``struct ibv_ece``: enhanced connection establishment options, from
    ``QP.query_ece`` and for ``QP.set_ece`` (``vendor_id`` the provider's
    IEEE OUI, ``options`` its bits, ``comp_mask`` which are valid)."""

    __slots__ = {
        "vendor_id": "The provider's IEEE OUI (0 is refused by ibv_set_ece).",
        "options": "The vendor's ECE option bits.",
        "comp_mask": "Which option bits are valid.",
    }

    def __init__(self, vendor_id: int, options: int, comp_mask: int = 0):
        self.vendor_id = vendor_id
        self.options = options
        self.comp_mask = comp_mask

    def __eq__(self, other):
        if not isinstance(other, ECE):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self):
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"ECE({inner})"


class OpsWR:
    """``struct ibv_ops_wr`` for ``SRQ.post_srq_ops`` (tag matching):
    ``wr_id``, ``opcode`` (OpsWROpcode), ``flags`` (OpsFlags), and the
    ``tm`` fields flattened: ``unexpected_cnt``, ``handle`` (of the tag a
    TAG_DEL removes) and TAG_ADD's ``recv_wr_id``, ``sg_list`` (SGEs),
    ``tag`` and ``mask``.  A plain record: values are checked when posted."""

    __slots__ = {
        "wr_id": "The cookie of the operation's completion.",
        "opcode": "An OpsWROpcode: TAG_ADD, TAG_DEL or TAG_SYNC.",
        "flags": "OpsFlags (SIGNALED, TM_SYNC).",
        "unexpected_cnt": "``tm.unexpected_cnt``: unexpected messages seen.",
        "handle": "``tm.handle``: the tag a TAG_DEL removes.",
        "recv_wr_id": "``tm.add.recv_wr_id``: the wr_id of the tag's receive.",
        "sg_list": "``tm.add.sg_list``: the SGEs a matched message lands in.",
        "tag": "``tm.add.tag``: the tag, 64 bits.",
        "mask": "``tm.add.mask``: the tag bits that must match.",
    }

    def __init__(
        self,
        opcode: int,
        wr_id: int = 0,
        flags: int = 0,
        *,
        unexpected_cnt: int = 0,
        handle: int = 0,
        recv_wr_id: int = 0,
        sg_list=(),
        tag: int = 0,
        mask: int = 0,
    ):
        self.opcode = opcode
        self.wr_id = wr_id
        self.flags = flags
        self.unexpected_cnt = unexpected_cnt
        self.handle = handle
        self.recv_wr_id = recv_wr_id
        self.sg_list = tuple(sg_list)
        self.tag = tag
        self.mask = mask

    def __repr__(self):
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"OpsWR({inner})"


# Domains, counters, flow actions (mem/domain.c, counters/, qp/flow_action.c)


class WCTMInfo(_Record):
    """``struct ibv_wc_tm_info`` (``CQEx.read_tm_info``): ``tag`` (from the
    tag matching header) and ``priv`` (its opaque user data)."""

    __slots__ = ()


class CompCntrCaps(_Record):
    """``struct ibv_comp_cntr_caps`` (``Context.query_comp_cntr_caps``):
    ``max_value``, ``max_counters``, ``supported_qp_attach_ops``
    (QPAttachCompCntrOp bits)."""

    __slots__ = ()


class FlowActionESPAttr:
    """``struct ibv_flow_action_esp_attr`` for
    ``Context.create_flow_action_esp`` and ``FlowAction.modify_esp``.

    The ESP fields (``struct ibv_flow_action_esp``), the AES-GCM key
    material when ``key`` is given (``keymat_proto`` AES_GCM, ``key_len``
    its length in bytes), a replay bitmap of ``replay_window`` entries when
    given (``replay_proto`` BMP, else NONE), and ``esn`` with
    ``IBV_FLOW_ACTION_ESP_MASK_ESN`` when given.  The tunnel encapsulation
    list (``esp_encap``) is not offered.  A plain record: values are checked
    when the verb is called."""

    __slots__ = {
        "spi": "The security parameter index.",
        "seq": "The initial sequence number.",
        "tfc_pad": "Traffic flow confidentiality padding, in bytes.",
        "flags": "FlowActionESPFlags (FULL_OFFLOAD, TRANSPORT, ENCRYPT, ESN_NEW_WINDOW).",
        "hard_limit_pkts": "Packets after which the key expires (0: none).",
        "key": "The AES-GCM key (16, 24 or 32 bytes), or None for no key material.",
        "iv": "The AES-GCM initialization vector.",
        "iv_algo": "A FlowActionIVAlgo (SEQ).",
        "salt": "The AES-GCM salt.",
        "icv_len": "The integrity check value's length.",
        "replay_window": "The anti-replay bitmap's size, or None for no replay protection.",
        "esn": "The starting extended sequence number, or None.",
    }

    def __init__(
        self,
        spi: int = 0,
        seq: int = 0,
        tfc_pad: int = 0,
        flags: int = 0,
        hard_limit_pkts: int = 0,
        key: bytes | None = None,
        iv: int = 0,
        iv_algo: int = 0,
        salt: int = 0,
        icv_len: int = 0,
        replay_window: int | None = None,
        esn: int | None = None,
    ):
        self.spi = spi
        self.seq = seq
        self.tfc_pad = tfc_pad
        self.flags = flags
        self.hard_limit_pkts = hard_limit_pkts
        self.key = key
        self.iv = iv
        self.iv_algo = iv_algo
        self.salt = salt
        self.icv_len = icv_len
        self.replay_window = replay_window
        self.esn = esn

    def __repr__(self):
        inner = ", ".join(
            f"{k}={'<key>' if k == 'key' and self.key is not None else repr(getattr(self, k))}"
            for k in self.__slots__
        )
        return f"FlowActionESPAttr({inner})"


# ---------------------------------------------------------------- efa ---
# The records of ibverbs.efa (libefa's efadv.h), built by efa/*.c.


class EfaDeviceAttr(_Record):
    """``struct efadv_device_attr`` (``efa.query_device``): ``max_sq_wr``,
    ``max_rq_wr``, ``max_sq_sge``, ``max_rq_sge``, ``inline_buf_size``,
    ``inline_buf_size_ex`` (0 where libefa predates it), ``device_caps``
    (``efa.DeviceCaps`` bits) and ``max_rdma_size``."""

    __slots__ = ()


class EfaAHAttr(_Record):
    """``struct efadv_ah_attr`` (``efa.query_ah``): ``ahn``, the AH's
    number, which a receiver sees in ``wc.slid``."""

    __slots__ = ()


class EfaMRAttr(_Record):
    """``struct efadv_mr_attr`` (``efa.query_mr``): ``ic_id_validity``
    (``efa.MRAttrValidity`` bits) and ``recv_ic_id``, ``rdma_read_ic_id``,
    ``rdma_recv_ic_id`` (None where not valid)."""

    __slots__ = ()


class EfaWQAttr(_Record):
    """``struct efadv_wq_attr`` (``efa.QP.query_wqs``): ``buffer``,
    ``doorbell`` (addresses), ``ring``, ``doorbell_view`` (read-only
    memoryviews), ``entry_size``, ``num_entries``, ``max_batch``, ``caps``
    and ``qp`` (kept alive by the record)."""

    __slots__ = ()


class EfaCQAttr(_Record):
    """``struct efadv_cq_attr`` (``efa.CQ.query``): ``buffer``,
    ``doorbell`` (addresses), ``ring``, ``doorbell_view`` (read-only
    memoryviews), ``entry_size``, ``num_entries`` and ``cq`` (kept alive
    by the record)."""

    __slots__ = ()


class Mlx5Obj(_Record):
    """The mlx5 layout of a QP, CQ, SRQ, PD or DM (``mlx5.init_obj``):
    ``kind``, ``obj`` (kept alive by the record) and the fields of
    ``struct mlx5dv_qp`` / ``_cq`` / ``_srq`` / ``_pd`` / ``_dm``;
    addresses are ints, rings and doorbell records read-only
    memoryviews."""

    __slots__ = ()
