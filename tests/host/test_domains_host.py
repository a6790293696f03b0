"""The records and flow specs of thread/parent domains, counters,
completion counters and ESP flow actions, which need no device."""

import struct

import pytest

import ibverbs as ib
from ibverbs.flow import LAYOUTS


def test_pointer_specs_serialize_null_and_name_their_objects():
    marker_a, marker_b = object(), object()
    count, handle = ib.FlowSpecActionCount(marker_a), ib.FlowSpecActionHandle(marker_b)
    assert count.counters is marker_a and handle.action is marker_b
    attr = ib.FlowAttr(specs=[ib.FlowSpecEth(ether_type=0x0800), count, handle])
    assert attr._objects() == (None, marker_a, marker_b)
    for spec, name, t in (
        (count, "action_count", ib.FlowSpecType.ACTION_COUNT),
        (handle, "action_handle", ib.FlowSpecType.ACTION_HANDLE),
    ):
        size, off, _, psize = LAYOUTS[name]
        raw = spec.to_bytes()
        assert len(raw) == size and struct.unpack_from("=IH", raw) == (t, size)
        assert raw[off : off + psize] == bytes(psize)  # QP.create_flow fills it
    assert "FlowSpecActionCount(" in repr(count)


def test_records():
    a = ib.CQInitAttrEx(8)
    assert a.parent_domain is None and "parent_domain=None" in repr(a)
    esp = ib.FlowActionESPAttr(spi=5, key=b"secret-key-bytes")
    assert esp.replay_window is None and esp.esn is None and esp.key == b"secret-key-bytes"
    assert "secret" not in repr(esp) and "key=<key>" in repr(esp)
    assert ib.WCTMInfo(tag=1, priv=2).tag == 1
    assert ib.CompCntrCaps(max_value=1, max_counters=2, supported_qp_attach_ops=3).max_counters == 2


def test_enums():
    assert ib.CreateCQWCFlags.TM_INFO == 1 << 10
    assert ib.QPAttachCompCntrOp.REMOTE_RDMA_WRITE == 1 << 5
    assert ib.CompCntrType.BYTES == 1 and ib.CounterDescription.BYTES == 1
    assert ib.FlowActionESPFlags.ENCRYPT == 1 << 2
    assert issubclass(ib.ParentDomain, ib.PD)


@pytest.mark.parametrize("name", ["TD", "ParentDomain", "Counters", "CompCntr", "FlowAction"])
def test_no_direct_construction(name):
    with pytest.raises(TypeError):
        getattr(ib, name)()
