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
    "QueryQPDataInOrderFlags",
    "QueryQPDataInOrderCaps",
    # XRC, WQ/RSS, tag matching, QP create flags (xrc/, wq/, qp/qp_ex.c)
    "SRQInitAttrMask",
    "XRCDInitAttrMask",
    "QPOpenAttrMask",
    "OpsFlags",
    "QPInitAttrMask",
    "QPCreateFlags",
    "RXHashFunctionFlags",
    "RXHashFields",
    "WQAttrMask",
    "WQInitAttrMask",
    "WQFlags",
    "ReregMRFlags",
    "MRInitAttrMask",
    "DMAHInitAttrMask",
    "ValuesMask",
    "CQAttrMask",
    "ReadCountersFlags",
    "QPAttachCompCntrOp",
    "FlowActionESPFlags",
}

__all__ = sorted(_constants)

# Each class's docstring: what the C enum is and where it is used.
_DOCS = {
    "AccessFlags": "Memory access rights (``enum ibv_access_flags``): ``PD.reg_mr``'s\n"
    "``access``, ``QP.to_init``'s ``access``, a window's bind.",
    "AdviseMRAdvice": "What ``PD.advise_mr`` asks of an ODP MR (``IBV_ADVISE_MR_ADVICE_*``).",
    "AdviseMRFlags": "Flags of ``PD.advise_mr`` (``IBV_ADVISE_MR_FLAG_*``).",
    "AtomicCap": "How atomic operations are atomic on a device (``enum ibv_atomic_cap``,\n"
    "``DeviceAttr.atomic_cap``).",
    "CMEventType": "Connection manager event types (``enum rdma_cm_event_type``,\n"
    "``CMEvent.event``).",
    "CreateCQAttrFlags": "Flags of an extended CQ (``enum ibv_create_cq_attr_flags``,\n"
    "``CQInitAttrEx.flags``).",
    "CreateCQWCFlags": "The completion fields an extended CQ reports\n"
    "(``enum ibv_create_cq_wc_flags``, ``CQInitAttrEx.wc_flags``).",
    "DeviceCapFlags": "Device capabilities (``enum ibv_device_cap_flags``,\n"
    "``DeviceAttr.device_cap_flags``).",
    "EventType": "Asynchronous event types (``enum ibv_event_type``,\n``AsyncEvent.event_type``).",
    "FlowAttrType": "Kinds of flow steering rule (``enum ibv_flow_attr_type``,\n"
    "``FlowAttr.type``).",
    "FlowFlags": "Flags of a flow steering rule (``enum ibv_flow_flags``, ``FlowAttr.flags``).",
    "FlowSpecType": "Flow spec headers and actions (``enum ibv_flow_spec_type``); ``INNER``\n"
    "marks a header inside a tunnel.",
    "GIDType": "GID types of a port's GID table entries (``enum ibv_gid_type``):\n"
    "InfiniBand, RoCE v1, RoCE v2.",
    "LinkLayer": "A port's link layer (``IBV_LINK_LAYER_*``, ``PortAttr.link_layer``).",
    "MTU": "Path MTUs (``enum ibv_mtu``): ``PortAttr.active_mtu``, ``QP.to_rtr``'s\n``mtu``.",
    "MWType": "Memory window types (``enum ibv_mw_type``, ``PD.alloc_mw``).",
    "MigState": "Path migration states of a QP (``enum ibv_mig_state``).",
    "NodeType": "Kinds of RDMA device (``enum ibv_node_type``, ``Device.node_type``).",
    "ODPGeneralCaps": "On-demand paging support of a device (``enum ibv_odp_general_caps``,\n"
    "``ODPCaps.general_caps``).",
    "ODPTransportCapBits": "Operations a transport can do on ODP memory\n"
    "(``enum ibv_odp_transport_cap_bits``, ``ODPCaps``' per-transport caps).",
    "PortCapFlags": "Port capabilities (``enum ibv_port_cap_flags``, ``PortAttr.port_cap_flags``).",
    "PortState": "Logical port states (``enum ibv_port_state``, ``PortAttr.state``).",
    "QPAttrMask": "Which QP attributes ``QP.modify`` sets or ``QP.query`` reads\n"
    "(``enum ibv_qp_attr_mask``).",
    "QPCreateSendOpsFlags": "The work request builders an extended QP enables\n"
    "(``enum ibv_qp_create_send_ops_flags``, ``QPInitAttrEx.send_ops_flags``).",
    "QueryQPDataInOrderCaps": "What ``QP.query_data_in_order`` answers with\n"
    "``QueryQPDataInOrderFlags.RETURN_CAPS`` (``IBV_QUERY_QP_DATA_IN_ORDER_*``).",
    "QueryQPDataInOrderFlags": "Flags of ``QP.query_data_in_order``\n"
    "(``enum ibv_query_qp_data_in_order_flags``).",
    "QPState": "QP states (``enum ibv_qp_state``): RESET -> INIT -> RTR -> RTS, ERR.",
    "QPType": "QP transport types (``enum ibv_qp_type``, ``QPInitAttr.qp_type``).",
    "RawPacketCaps": "Raw packet QP capabilities (``enum ibv_raw_packet_caps``,\n"
    "``DeviceAttrEx.raw_packet_caps``).",
    "SRQAttrMask": "Which SRQ attributes ``SRQ.modify`` sets (``enum ibv_srq_attr_mask``).",
    "SendFlags": "Flags of a send work request (``enum ibv_send_flags``,\n``SendWR.send_flags``).",
    "TransportType": "Transports of an RDMA device (``enum ibv_transport_type``,\n"
    "``Device.transport_type``).",
    "WCFlags": "Flags of a work completion (``enum ibv_wc_flags``, ``WC.wc_flags``).",
    "WCOpcode": "What a work completion completed (``enum ibv_wc_opcode``, ``WC.opcode``).",
    "WCStatus": "Status of a work completion (``enum ibv_wc_status``, ``WC.status``);\n"
    "``WC.status_str`` is libibverbs' text for it.",
    "WROpcode": "Opcodes of a send work request (``enum ibv_wr_opcode``, ``SendWR.opcode``).",
    # XRC, WQ/RSS, tag matching, QP create flags
    "SRQType": "SRQ types (``enum ibv_srq_type``, ``Context.create_srq_ex``'s ``srq_type``).",
    "SRQInitAttrMask": "The comp_mask of ``struct ibv_srq_init_attr_ex``\n"
    "(``enum ibv_srq_init_attr_mask``; ``Context.create_srq_ex`` sets it).",
    "XRCDInitAttrMask": "The comp_mask of ``struct ibv_xrcd_init_attr``\n"
    "(``enum ibv_xrcd_init_attr_mask``; ``Context.open_xrcd`` sets it).",
    "QPOpenAttrMask": "The comp_mask of ``struct ibv_qp_open_attr``\n"
    "(``enum ibv_qp_open_attr_mask``; ``Context.open_qp`` sets it).",
    "OpsWROpcode": "Tag-matching list operations (``enum ibv_ops_wr_opcode``, ``OpsWR.opcode``).",
    "OpsFlags": "Flags of a tag-matching operation (``enum ibv_ops_flags``, ``OpsWR.flags``).",
    "QPInitAttrMask": "The comp_mask of ``struct ibv_qp_init_attr_ex``\n"
    "(``enum ibv_qp_init_attr_mask``; ``create_qp_ex`` sets it from the fields given).",
    "QPCreateFlags": "QP creation flags (``enum ibv_qp_create_flags``,\n"
    "``QPInitAttrEx.create_flags``).",
    "RXHashFunctionFlags": "RSS hash functions (``enum ibv_rx_hash_function_flags``,\n"
    "``RXHashConf.rx_hash_function``).",
    "RXHashFields": "Packet fields an RSS hash covers (``enum ibv_rx_hash_fields``,\n"
    "``RXHashConf.rx_hash_fields_mask``).",
    "WQType": "Work queue types (``enum ibv_wq_type``, ``Context.create_wq``).",
    "WQState": "Work queue states (``enum ibv_wq_state``, ``WQ.modify``, ``WQ.state``).",
    "WQAttrMask": "Which WQ attributes ``WQ.modify`` sets (``enum ibv_wq_attr_mask``).",
    "WQInitAttrMask": "The comp_mask of ``struct ibv_wq_init_attr``\n"
    "(``enum ibv_wq_init_attr_mask``; ``Context.create_wq`` sets it).",
    "WQFlags": "Work queue flags (``enum ibv_wq_flags``: ``Context.create_wq``'s\n"
    "``create_flags``, ``WQ.modify``'s ``flags``).",
    "ReregMRFlags": "What ``MR.rereg`` changes (``enum ibv_rereg_mr_flags``).",
    "MRInitAttrMask": "The fields of ``struct ibv_mr_init_attr`` that ``PD.reg_mr_ex`` was\n"
    "given (``enum ibv_mr_init_attr_mask``).",
    "DMAHInitAttrMask": "The fields ``Context.alloc_dmah`` was given\n"
    "(``enum ibv_dmah_init_attr_mask``, ``DMAH.comp_mask``).",
    "TPHMemType": "Memory types of a PCIe TLP processing hint (``enum ibv_tph_mem_type``,\n"
    "``Context.alloc_dmah``'s ``tph_mem_type``).",
    "ValuesMask": "The running values ``Context.query_rt_values_ex`` reads\n"
    "(``enum ibv_values_mask``).",
    "CQAttrMask": "Which CQ attributes ``CQ.modify`` sets (``enum ibv_cq_attr_mask``).",
    "CounterDescription": "What a counter of a Counters object counts\n"
    "(``enum ibv_counter_description``, ``Counters.attach_point_flow``).",
    "ReadCountersFlags": "Flags of ``Counters.read`` (``enum ibv_read_counters_flags``).",
    "CompCntrType": "What a completion counter counts (``enum ibv_comp_cntr_type``,\n"
    "``Context.create_comp_cntr``; rdma-core 65).",
    "QPAttachCompCntrOp": "The completions ``QP.attach_comp_cntr`` counts\n"
    "(``enum ibv_qp_attach_comp_cntr_op``; rdma-core 65).",
    "FlowActionESPFlags": "Modes of an ESP flow action (``enum ibv_flow_action_esp_flags``,\n"
    "``FlowActionESPAttr.flags``); INLINE_CRYPTO, TUNNEL and DECRYPT are 0.",
    "FlowActionIVAlgo": "IV algorithms of AES-GCM key material\n"
    "(``enum ibv_flow_action_esp_keymat_aes_gcm_iv_algo``, ``FlowActionESPAttr.iv_algo``).",
}


def _build(name: str, members: dict) -> type:
    base = enum.IntFlag if name in _FLAGS else enum.IntEnum
    cls = base(name, sorted(members.items(), key=lambda kv: kv[1]), module=__name__)
    cls.__doc__ = _DOCS.get(name)  # none: tests/host/test_docstrings.py says so
    return cls


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
SRQType: type[enum.IntEnum]
SRQInitAttrMask: type[enum.IntFlag]
XRCDInitAttrMask: type[enum.IntFlag]
QPOpenAttrMask: type[enum.IntFlag]
OpsWROpcode: type[enum.IntEnum]
OpsFlags: type[enum.IntFlag]
QPInitAttrMask: type[enum.IntFlag]
QPCreateFlags: type[enum.IntFlag]
RXHashFunctionFlags: type[enum.IntFlag]
RXHashFields: type[enum.IntFlag]
WQType: type[enum.IntEnum]
WQState: type[enum.IntEnum]
WQAttrMask: type[enum.IntFlag]
WQInitAttrMask: type[enum.IntFlag]
WQFlags: type[enum.IntFlag]
ReregMRFlags: type[enum.IntFlag]
MRInitAttrMask: type[enum.IntFlag]
DMAHInitAttrMask: type[enum.IntFlag]
TPHMemType: type[enum.IntEnum]
ValuesMask: type[enum.IntFlag]
CQAttrMask: type[enum.IntFlag]
CounterDescription: type[enum.IntEnum]
ReadCountersFlags: type[enum.IntFlag]
CompCntrType: type[enum.IntEnum]
QPAttachCompCntrOp: type[enum.IntFlag]
FlowActionESPFlags: type[enum.IntFlag]
FlowActionIVAlgo: type[enum.IntEnum]
