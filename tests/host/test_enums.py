"""Every enum value equals the constant that the C compiler sees in
<infiniband/verbs.h> (checked by compiling a program against the same
headers), and the enum classes have the right kinds and names."""

import enum
import shutil
import subprocess

import pytest

import ibverbs as ib
from ibverbs import _ibverbs, enums

PREFIX = {
    "AccessFlags": "IBV_ACCESS_",
    "QPType": "IBV_QPT_",
    "QPState": "IBV_QPS_",
    "QPAttrMask": "IBV_QP_",
    "WROpcode": "IBV_WR_",
    "SendFlags": "IBV_SEND_",
    "WCStatus": "IBV_WC_",
    "WCOpcode": "IBV_WC_",
    "WCFlags": "IBV_WC_",
    "MTU": "IBV_",
    "PortState": "IBV_PORT_",
    "NodeType": "IBV_NODE_",
    "TransportType": "IBV_TRANSPORT_",
    "EventType": "IBV_EVENT_",
    "SRQAttrMask": "IBV_SRQ_",
    "AtomicCap": "IBV_ATOMIC_",
    "MigState": "IBV_MIG_",
    "GIDType": "IBV_GID_TYPE_",
    "QueryQPDataInOrderFlags": "IBV_QUERY_QP_DATA_IN_ORDER_",
    "QueryQPDataInOrderCaps": "IBV_QUERY_QP_DATA_IN_ORDER_",
    "DeviceCapFlags": "IBV_DEVICE_",
    "PortCapFlags": "IBV_PORT_",
    "LinkLayer": "IBV_LINK_LAYER_",
    "CMEventType": "RDMA_CM_EVENT_",
    "CreateCQWCFlags": "IBV_WC_EX_WITH_",
    "CreateCQAttrFlags": "IBV_CREATE_CQ_ATTR_",
    "ODPTransportCapBits": "IBV_ODP_",
    "ODPGeneralCaps": "IBV_ODP_",
    "RawPacketCaps": "IBV_RAW_PACKET_CAP_",
    "AdviseMRAdvice": "IBV_ADVISE_MR_ADVICE_",
    "AdviseMRFlags": "IBV_ADVISE_MR_FLAG_",
    "FlowAttrType": "IBV_FLOW_ATTR_",
    "FlowFlags": "IBV_FLOW_ATTR_FLAGS_",
    "FlowSpecType": "IBV_FLOW_SPEC_",
    "MWType": "IBV_MW_",
    "QPCreateSendOpsFlags": "IBV_QP_EX_WITH_",
    # XRC, WQ/RSS, tag matching, QP create flags
    "SRQType": "IBV_SRQT_",
    "SRQInitAttrMask": "IBV_SRQ_INIT_ATTR_",
    "XRCDInitAttrMask": "IBV_XRCD_INIT_ATTR_",
    "QPOpenAttrMask": "IBV_QP_OPEN_ATTR_",
    "OpsWROpcode": "IBV_WR_",
    "OpsFlags": "IBV_OPS_",
    "QPInitAttrMask": "IBV_QP_INIT_ATTR_",
    "QPCreateFlags": "IBV_QP_CREATE_",
    "RXHashFunctionFlags": "IBV_RX_HASH_FUNC_",
    "RXHashFields": "IBV_RX_HASH_",
    "WQType": "IBV_WQT_",
    "WQState": "IBV_WQS_",
    "WQAttrMask": "IBV_WQ_ATTR_",
    "WQInitAttrMask": "IBV_WQ_INIT_ATTR_",
    "WQFlags": "IBV_WQ_FLAGS_",
    "ReregMRFlags": "IBV_REREG_MR_",
    "MRInitAttrMask": "IBV_REG_MR_MASK_",
    "DMAHInitAttrMask": "IBV_DMAH_INIT_ATTR_MASK_",
    "TPHMemType": "IBV_TPH_MEM_TYPE_",
    "ValuesMask": "IBV_VALUES_MASK_",
    "CQAttrMask": "IBV_CQ_ATTR_",
    "CounterDescription": "IBV_COUNTER_",
    "ReadCountersFlags": "IBV_READ_COUNTERS_ATTR_",
    "CompCntrType": "IBV_COMP_CNTR_TYPE_",
    "QPAttachCompCntrOp": "IBV_QP_ATTACH_COMP_CNTR_OP_",
    "FlowActionESPFlags": "IBV_FLOW_ACTION_ESP_FLAGS_",
    "FlowActionIVAlgo": "IBV_FLOW_ACTION_IV_ALGO_",
}


def test_every_class_has_a_prefix():
    assert set(_ibverbs._constants) == set(PREFIX)


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_values_match_compiled_headers(tmp_path):
    # Members the headers may lack, with rdma-core's ABI value: checked in
    # tests/host/test_compat.py.
    pairs = [
        (c, m)
        for c, ms in _ibverbs._constants.items()
        for m in ms
        if f"{c}.{m}" not in _ibverbs._abi_constants
    ]
    lines = [
        f'printf("%s.%s %lld\\n", "{c}", "{m}", (long long)({PREFIX[c]}{m}));' for c, m in pairs
    ]
    src = tmp_path / "consts.c"
    src.write_text(
        "#include <stdio.h>\n#include <infiniband/verbs.h>\n"
        "#include <rdma/rdma_cma.h>\n"
        "int main(void) {\n" + "\n".join(lines) + "\nreturn 0; }\n"
    )
    exe = tmp_path / "consts"
    subprocess.run(["cc", "-o", str(exe), str(src)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    seen = {}
    for line in out.splitlines():
        key, value = line.split()
        seen[key] = int(value)
    assert len(seen) == len(pairs)
    for c, m in pairs:
        assert int(getattr(getattr(enums, c), m)) == seen[f"{c}.{m}"], (c, m)


def test_flag_and_enum_kinds():
    assert issubclass(ib.AccessFlags, enum.IntFlag)
    assert issubclass(ib.SendFlags, enum.IntFlag)
    assert issubclass(ib.QPAttrMask, enum.IntFlag)
    assert issubclass(ib.WCFlags, enum.IntFlag)
    assert issubclass(ib.QPType, enum.IntEnum)
    assert issubclass(ib.WCStatus, enum.IntEnum)
    assert issubclass(ib.MTU, enum.IntEnum)


def test_names_follow_the_c_constants():
    assert ib.MTU.MTU_1024.name == "MTU_1024"
    assert ib.AccessFlags.LOCAL_WRITE == 1
    assert ib.QPType.RC == 2 and ib.QPType.UD == 4
    assert ib.WCStatus.SUCCESS == 0
    assert ib.WROpcode.RDMA_WRITE == 0
    for name in (
        "SEND",
        "SEND_WITH_IMM",
        "RDMA_WRITE",
        "RDMA_WRITE_WITH_IMM",
        "RDMA_READ",
        "ATOMIC_CMP_AND_SWP",
        "ATOMIC_FETCH_AND_ADD",
    ):
        assert hasattr(ib.WROpcode, name)
    for name in ("FENCE", "SIGNALED", "SOLICITED", "INLINE"):
        assert hasattr(ib.SendFlags, name)
    assert ib.PortState.ACTIVE == 4
    assert ib.EventType.PORT_ACTIVE.name == "PORT_ACTIVE"


def test_status_strings_come_from_libibverbs():
    assert _ibverbs.wc_status_str(int(ib.WCStatus.SUCCESS)) == "success"
    assert _ibverbs.wc_status_str(int(ib.WCStatus.REM_ACCESS_ERR)) == "remote access error"
    assert "port" in _ibverbs.event_type_str(int(ib.EventType.PORT_ACTIVE)).lower()
