"""Flow steering rules for ``QP.create_flow`` (``ibv_create_flow``).

A :class:`FlowAttr` holds the rule (type, priority, port, flags) and a
list of specs, one class per ``struct ibv_flow_spec_*`` of verbs.h.  Each
spec takes the fields of its ``val`` struct by name and a ``mask`` dict;
a field given without a mask entry is matched exactly (all mask bits
set), a field left out is not matched.  Multi-byte header fields
(``ether_type``, ports, addresses, ...) are given in host order and
written in network order, as the providers expect; MAC addresses take
``"aa:bb:cc:dd:ee:ff"`` or 6 bytes, IP addresses text, bytes or an int.

``FlowAttr.to_bytes()`` serializes the rule the way verbs.h lays it out:
``struct ibv_flow_attr`` followed by the specs, each padded to its C
struct's size (taken from the compiled headers: ``_ibverbs._flow_layouts``).
``ibv_flow_spec_action_handle`` and ``ibv_flow_spec_counter_action`` point
to a FlowAction and a Counters object (:class:`FlowSpecActionHandle`,
:class:`FlowSpecActionCount`): ``to_bytes()`` writes a null pointer there,
and ``QP.create_flow`` fills in the object's own, so only a
:class:`FlowAttr` (not its bytes) can carry them.
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Any, ClassVar, Iterable

from ._ibverbs import _flow_layouts
from .enums import FlowAttrType, FlowSpecType

__all__ = [
    "FlowAttr",
    "FlowSpec",
    "FlowSpecEth",
    "FlowSpecIPv4",
    "FlowSpecIPv4Ext",
    "FlowSpecIPv6",
    "FlowSpecESP",
    "FlowSpecTCPUDP",
    "FlowSpecGRE",
    "FlowSpecMPLS",
    "FlowSpecTunnel",
    "FlowSpecActionTag",
    "FlowSpecActionDrop",
    "FlowSpecActionHandle",
    "FlowSpecActionCount",
]

LAYOUTS: dict[str, tuple[int, int, int, int]] = _flow_layouts()

# Field kinds: struct format (network order) and the all-ones mask.
_KINDS = {
    "u8": ("B", 0xFF),
    "u16": ("H", 0xFFFF),
    "u32": ("I", 0xFFFFFFFF),
    "mac": ("6s", b"\xff" * 6),
    "ip4": ("I", 0xFFFFFFFF),
    "ip6": ("16s", b"\xff" * 16),
}


def _conv(kind: str, name: str, v: Any) -> Any:
    if kind == "mac":
        if isinstance(v, str):
            parts = v.split(":")
            if len(parts) != 6:
                raise ValueError(f"{name}: not a MAC address: {v!r}")
            try:
                return bytes(int(p, 16) for p in parts)
            except ValueError:
                raise ValueError(f"{name}: not a MAC address: {v!r}") from None
        if isinstance(v, (bytes, bytearray)) and len(v) == 6:
            return bytes(v)
        raise TypeError(f"{name}: a MAC is 'aa:bb:cc:dd:ee:ff' or 6 bytes, not {v!r}")
    if kind == "ip4" and isinstance(v, (str, bytes)):
        return int(ipaddress.IPv4Address(v))
    if kind == "ip6":
        if isinstance(v, int) and not isinstance(v, bool):
            return ipaddress.IPv6Address(v).packed
        if isinstance(v, str):
            return ipaddress.IPv6Address(v).packed
        if isinstance(v, (bytes, bytearray)) and len(v) == 16:
            return bytes(v)
        raise TypeError(f"{name}: an IPv6 address is text, 16 bytes or an int, not {v!r}")
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"{name} must be an int, not {type(v).__name__}")
    hi = _KINDS[kind][1]
    assert isinstance(hi, int)
    if not 0 <= v <= hi:
        raise ValueError(f"{name} must be in range 0..{hi:#x}, got {v}")
    return v


class FlowSpec:
    """A spec of a flow rule: the fields of its ``val`` struct and their
    ``mask``.  ``inner=True`` matches the inner headers of a tunnel
    (``FlowSpecType.INNER``).

    The base of the ``FlowSpec*`` classes, which say which fields they
    take; a field given is matched exactly unless ``mask`` says which
    bits, a field left out (or None) is not matched.  Builds bytes only:
    ``QP.create_flow`` calls the verb.

    Args:
        mask: field name -> mask value, for a partial match.
        inner: match the inner headers of a tunnel.
        **fields: the header fields, in host order.

    Raises:
        TypeError: an unknown field or mask entry, or a value of the
            wrong type.
        ValueError: a value out of its field's range, or a malformed
            MAC or IP address.
    """

    LAYOUT: ClassVar[str] = ""
    TYPE: ClassVar[int] = 0
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = ()

    def __init__(self, *, mask: dict[str, Any] | None = None, inner: bool = False, **fields: Any):
        names = {n for n, _ in self.FIELDS}
        for n in fields:
            if n not in names:
                raise TypeError(f"{type(self).__name__}() got an unexpected field {n!r}")
        self.val: dict[str, Any] = {}
        self.mask: dict[str, Any] = {}
        kinds = dict(self.FIELDS)
        for n, v in fields.items():
            if v is not None:
                self.val[n] = _conv(kinds[n], n, v)
                self.mask[n] = _KINDS[kinds[n]][1]
        if mask is not None and not isinstance(mask, dict):
            raise TypeError(
                f"{type(self).__name__}: mask must be a dict, not {type(mask).__name__}"
            )
        for n, v in (mask or {}).items():
            if n not in names:
                raise TypeError(f"{type(self).__name__}: mask has an unknown field {n!r}")
            self.mask[n] = _conv(kinds[n], f"mask[{n!r}]", v)
        self.inner = bool(inner)

    @property
    def spec_type(self) -> int:
        """The FlowSpecType value written in the spec, with INNER for an
        inner match."""
        return int(self.TYPE) | (int(FlowSpecType.INNER) if self.inner else 0)

    def _filter(self, values: dict[str, Any]) -> bytes:
        fmt = "!" + "".join(_KINDS[k][0] for _, k in self.FIELDS)
        zero = {"mac": bytes(6), "ip6": bytes(16)}
        args = [values.get(n, zero.get(k, 0)) for n, k in self.FIELDS]
        return struct.pack(fmt, *args)

    def to_bytes(self) -> bytes:
        """The ``struct ibv_flow_spec_*`` as the C compiler lays it out:
        type, size, then the ``val`` and ``mask`` filters in network
        order.  Calls no verb; raises nothing for a spec that built."""
        size, off_val, off_mask, fsize = LAYOUTS[self.LAYOUT]
        buf = bytearray(size)
        struct.pack_into("=IH", buf, 0, self.spec_type, size)
        for off, values in ((off_val, self.val), (off_mask, self.mask)):
            raw = self._filter(values)
            if len(raw) > fsize:  # pragma: no cover - a header mismatch
                raise RuntimeError(f"{self.LAYOUT}: filter is {len(raw)} bytes, C has {fsize}")
            buf[off : off + len(raw)] = raw
        return bytes(buf)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.val.items())
        return f"{type(self).__name__}({inner}{', inner=True' if self.inner else ''})"


class FlowSpecEth(FlowSpec):
    """``ibv_flow_spec_eth``: dst_mac, src_mac, ether_type, vlan_tag."""

    LAYOUT = "eth"
    TYPE = FlowSpecType.ETH
    FIELDS = (("dst_mac", "mac"), ("src_mac", "mac"), ("ether_type", "u16"), ("vlan_tag", "u16"))


class FlowSpecIPv4(FlowSpec):
    """``ibv_flow_spec_ipv4``: src_ip, dst_ip."""

    LAYOUT = "ipv4"
    TYPE = FlowSpecType.IPV4
    FIELDS = (("src_ip", "ip4"), ("dst_ip", "ip4"))


class FlowSpecIPv4Ext(FlowSpec):
    """``ibv_flow_spec_ipv4_ext``: src_ip, dst_ip, proto, tos, ttl, flags."""

    LAYOUT = "ipv4_ext"
    TYPE = FlowSpecType.IPV4_EXT
    FIELDS = (
        ("src_ip", "ip4"),
        ("dst_ip", "ip4"),
        ("proto", "u8"),
        ("tos", "u8"),
        ("ttl", "u8"),
        ("flags", "u8"),
    )


class FlowSpecIPv6(FlowSpec):
    """``ibv_flow_spec_ipv6``: src_ip, dst_ip, flow_label, next_hdr,
    traffic_class, hop_limit."""

    LAYOUT = "ipv6"
    TYPE = FlowSpecType.IPV6
    FIELDS = (
        ("src_ip", "ip6"),
        ("dst_ip", "ip6"),
        ("flow_label", "u32"),
        ("next_hdr", "u8"),
        ("traffic_class", "u8"),
        ("hop_limit", "u8"),
    )


class FlowSpecESP(FlowSpec):
    """``ibv_flow_spec_esp``: spi, seq."""

    LAYOUT = "esp"
    TYPE = FlowSpecType.ESP
    FIELDS = (("spi", "u32"), ("seq", "u32"))


class FlowSpecTCPUDP(FlowSpec):
    """``ibv_flow_spec_tcp_udp``: dst_port, src_port; ``udp=True`` for
    ``FlowSpecType.UDP`` (default TCP)."""

    LAYOUT = "tcp_udp"
    TYPE = FlowSpecType.TCP
    FIELDS = (("dst_port", "u16"), ("src_port", "u16"))

    def __init__(self, *, udp: bool = False, **kw: Any):
        super().__init__(**kw)
        self.udp = bool(udp)

    @property
    def spec_type(self) -> int:
        """FlowSpecType.UDP or TCP, with INNER for an inner match."""
        base = FlowSpecType.UDP if self.udp else FlowSpecType.TCP
        return int(base) | (int(FlowSpecType.INNER) if self.inner else 0)


class FlowSpecGRE(FlowSpec):
    """``ibv_flow_spec_gre``: c_ks_res0_ver, protocol, key."""

    LAYOUT = "gre"
    TYPE = FlowSpecType.GRE
    FIELDS = (("c_ks_res0_ver", "u16"), ("protocol", "u16"), ("key", "u32"))


class FlowSpecMPLS(FlowSpec):
    """``ibv_flow_spec_mpls``: label (the whole 32-bit MPLS label)."""

    LAYOUT = "mpls"
    TYPE = FlowSpecType.MPLS
    FIELDS = (("label", "u32"),)


class FlowSpecTunnel(FlowSpec):
    """``ibv_flow_spec_tunnel`` (``VXLAN_TUNNEL``): tunnel_id."""

    LAYOUT = "tunnel"
    TYPE = FlowSpecType.VXLAN_TUNNEL
    FIELDS = (("tunnel_id", "u32"),)


class FlowSpecActionTag(FlowSpec):
    """``struct ibv_flow_spec_action_tag``: mark what the rule matches
    with ``tag_id`` (a CQEx reports it as ``flow_tag``).

    Raises:
        TypeError: tag_id is not an int.
        ValueError: tag_id does not fit 32 bits.
    """

    LAYOUT = "action_tag"
    TYPE = FlowSpecType.ACTION_TAG

    def __init__(self, tag_id: int):
        super().__init__()
        self.tag_id = _conv("u32", "tag_id", tag_id)

    def to_bytes(self) -> bytes:
        """The ``struct ibv_flow_spec_action_tag``: type, size, tag_id.
        Calls no verb."""
        size, off, _, _ = LAYOUTS[self.LAYOUT]
        buf = bytearray(size)
        struct.pack_into("=IH", buf, 0, self.spec_type, size)
        struct.pack_into("=I", buf, off, self.tag_id)
        return bytes(buf)

    def __repr__(self) -> str:
        return f"FlowSpecActionTag(tag_id={self.tag_id})"


class FlowSpecActionDrop(FlowSpec):
    """``struct ibv_flow_spec_action_drop``: drop what the rule matches."""

    LAYOUT = "action_drop"
    TYPE = FlowSpecType.ACTION_DROP

    def __init__(self) -> None:
        super().__init__()

    def to_bytes(self) -> bytes:
        """The ``struct ibv_flow_spec_action_drop``: type and size only.
        Calls no verb."""
        size = LAYOUTS[self.LAYOUT][0]
        buf = bytearray(size)
        struct.pack_into("=IH", buf, 0, self.spec_type, size)
        return bytes(buf)

    def __repr__(self) -> str:
        return "FlowSpecActionDrop()"


class _FlowSpecObject(FlowSpec):
    """A spec that points to a verbs object: type, size and a pointer
    that ``QP.create_flow`` fills in (``to_bytes()`` leaves it null)."""

    def __init__(self, obj: Any):
        super().__init__()
        self.obj = obj

    def to_bytes(self) -> bytes:
        """The struct with a null pointer: type and size only.  Calls no
        verb."""
        size = LAYOUTS[self.LAYOUT][0]
        buf = bytearray(size)
        struct.pack_into("=IH", buf, 0, self.spec_type, size)
        return bytes(buf)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.obj!r})"


class FlowSpecActionHandle(_FlowSpecObject):
    """``struct ibv_flow_spec_action_handle``: apply a FlowAction (from
    ``Context.create_flow_action_esp``) to what the rule matches.

    Args:
        action: the FlowAction, of the QP's Context (checked by
            ``QP.create_flow``).
    """

    LAYOUT = "action_handle"
    TYPE = FlowSpecType.ACTION_HANDLE

    def __init__(self, action: Any):
        super().__init__(action)

    @property
    def action(self) -> Any:
        """The FlowAction the rule applies."""
        return self.obj


class FlowSpecActionCount(_FlowSpecObject):
    """``struct ibv_flow_spec_counter_action``: count what the rule matches
    on a Counters object (set up first with ``attach_point_flow``).

    Args:
        counters: the Counters, of the QP's Context (checked by
            ``QP.create_flow``).
    """

    LAYOUT = "action_count"
    TYPE = FlowSpecType.ACTION_COUNT

    def __init__(self, counters: Any):
        super().__init__(counters)

    @property
    def counters(self) -> Any:
        """The Counters the rule counts on."""
        return self.obj


# struct ibv_flow_attr, natively aligned: comp_mask, type, size, priority,
# num_of_specs, port, flags.
_ATTR = struct.Struct("@IiHHBBI")


class FlowAttr:
    """``struct ibv_flow_attr`` and its specs, for ``QP.create_flow``.

    A plain record; ``to_bytes()`` checks the fields.  Building one calls
    no verb: ``QP.create_flow`` calls ``ibv_create_flow`` (man page
    ibv_create_flow(3)).
    """

    __slots__ = {
        "type": "A FlowAttrType: NORMAL, ALL_DEFAULT, MC_DEFAULT or SNIFFER.",
        "priority": "The rule's priority, 0..65535 (lower is matched first).",
        "port": "The port the rule applies to, from 1.",
        "flags": "FlowFlags bits (DONT_TRAP, EGRESS).",
        "specs": "The list of FlowSpec objects the packet must all match.",
    }

    def __init__(
        self,
        type: int = FlowAttrType.NORMAL,
        priority: int = 0,
        port: int = 1,
        flags: int = 0,
        specs: Iterable[FlowSpec] = (),
    ):
        self.type = type
        self.priority = priority
        self.port = port
        self.flags = flags
        self.specs = list(specs)

    def to_bytes(self) -> bytes:
        """The attr and its specs in one buffer, as ``ibv_create_flow``
        takes them (man page ibv_create_flow(3)); calls no verb.

        Raises:
            TypeError: a field is not an int, or a spec not a FlowSpec.
            ValueError: a field out of range, more than 255 specs, or
                more than 65535 bytes in all.
        """
        for name, v, lo, hi in (
            ("type", self.type, 0, 2**31 - 1),
            ("priority", self.priority, 0, 0xFFFF),
            ("port", self.port, 1, 0xFF),
            ("flags", self.flags, 0, 0xFFFFFFFF),
        ):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"FlowAttr.{name} must be an int, not {type(v).__name__}")
            if not lo <= v <= hi:
                raise ValueError(f"FlowAttr.{name} must be in range {lo}..{hi}, got {v}")
        if len(self.specs) > 0xFF:
            raise ValueError(f"at most 255 specs, got {len(self.specs)}")
        for i, s in enumerate(self.specs):
            if not isinstance(s, FlowSpec):
                raise TypeError(f"specs[{i}] must be a FlowSpec, not {type(s).__name__}")
        body = b"".join(s.to_bytes() for s in self.specs)
        head = LAYOUTS["attr"][0]
        if _ATTR.size != head:  # pragma: no cover - a header mismatch
            raise RuntimeError(f"struct ibv_flow_attr is {head} bytes, expected {_ATTR.size}")
        size = head + len(body)
        if size > 0xFFFF:
            raise ValueError(f"the flow attr is {size} bytes, more than 65535")
        return (
            _ATTR.pack(0, self.type, size, self.priority, len(self.specs), self.port, self.flags)
            + body
        )

    def _objects(self) -> tuple[Any, ...]:
        """For ``QP.create_flow``: per spec, in order, the object whose
        pointer its struct carries, or None."""
        return tuple(s.obj if isinstance(s, _FlowSpecObject) else None for s in self.specs)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"FlowAttr({inner})"
