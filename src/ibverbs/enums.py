"""Enumerations of libibverbs, built from the values in the compiled
rdma-core headers (``_ibverbs._constants``), never typed in by hand.

A member's name is the C constant minus its prefix:
``IBV_ACCESS_LOCAL_WRITE`` -> ``AccessFlags.LOCAL_WRITE``,
``IBV_MTU_1024`` -> ``MTU.MTU_1024``.  Flags are ``enum.IntFlag``, the rest
``enum.IntEnum``; every function that takes one also takes a plain int.
"""

from __future__ import annotations

import enum

from ._ibverbs import _constants

_FLAGS = {
    "AccessFlags",
    "QPAttrMask",
    "SendFlags",
    "WCFlags",
    "SRQAttrMask",
    "DeviceCapFlags",
    "PortCapFlags",
    "CreateCQWCFlags",
    "CreateCQAttrFlags",
    "ODPTransportCapBits",
    "ODPGeneralCaps",
    "RawPacketCaps",
    "AdviseMRFlags",
    "FlowFlags",
    "QPCreateSendOpsFlags",
}

__all__ = sorted(_constants)


def _build(name: str, members: dict) -> type:
    base = enum.IntFlag if name in _FLAGS else enum.IntEnum
    return base(name, sorted(members.items(), key=lambda kv: kv[1]), module=__name__)


for _name, _members in _constants.items():
    globals()[_name] = _build(_name, _members)
del _name, _members

# Names for static checkers; the classes themselves come from the loop above.
AccessFlags: type[enum.IntFlag]
QPType: type[enum.IntEnum]
QPState: type[enum.IntEnum]
QPAttrMask: type[enum.IntFlag]
WROpcode: type[enum.IntEnum]
SendFlags: type[enum.IntFlag]
WCStatus: type[enum.IntEnum]
WCOpcode: type[enum.IntEnum]
WCFlags: type[enum.IntFlag]
MTU: type[enum.IntEnum]
PortState: type[enum.IntEnum]
NodeType: type[enum.IntEnum]
TransportType: type[enum.IntEnum]
EventType: type[enum.IntEnum]
SRQAttrMask: type[enum.IntFlag]
AtomicCap: type[enum.IntEnum]
MigState: type[enum.IntEnum]
GIDType: type[enum.IntEnum]
DeviceCapFlags: type[enum.IntFlag]
PortCapFlags: type[enum.IntFlag]
LinkLayer: type[enum.IntEnum]
CreateCQWCFlags: type[enum.IntFlag]
CreateCQAttrFlags: type[enum.IntFlag]
ODPTransportCapBits: type[enum.IntFlag]
ODPGeneralCaps: type[enum.IntFlag]
RawPacketCaps: type[enum.IntFlag]
AdviseMRAdvice: type[enum.IntEnum]
AdviseMRFlags: type[enum.IntFlag]
FlowAttrType: type[enum.IntEnum]
FlowFlags: type[enum.IntFlag]
FlowSpecType: type[enum.IntEnum]
MWType: type[enum.IntEnum]
QPCreateSendOpsFlags: type[enum.IntFlag]
