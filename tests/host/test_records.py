"""The plain-Python records of ibverbs (ibverbs._objects, ibverbs.Device):
equality across types, hashing, reprs, read-only fields, and a
CompletionError of values no enum names.  No verb is called."""

from __future__ import annotations

import errno
import pickle
from types import SimpleNamespace

import pytest

import ibverbs as ib
from ibverbs import _objects


def test_read_only_records_compare_hash_and_show_their_fields():
    a = _objects.QPCap(max_send_wr=4, max_recv_wr=8)
    b = _objects.QPCap(max_send_wr=4, max_recv_wr=8)
    c = _objects.QPCap(max_send_wr=5, max_recv_wr=8)
    assert a == b and a != c and hash(a) == hash(b)
    assert a != _objects.TMCaps(max_send_wr=4, max_recv_wr=8)  # another record type
    assert a.__eq__((4, 8)) is NotImplemented
    assert repr(a) == "QPCap(max_send_wr=4, max_recv_wr=8)"
    assert {"max_send_wr", "max_recv_wr", "_asdict"} <= set(dir(a))
    assert a._asdict() == {"max_send_wr": 4, "max_recv_wr": 8}
    with pytest.raises(AttributeError, match="QPCap is read-only"):
        a.max_send_wr = 9
    with pytest.raises(AttributeError, match="QPCap has no attribute 'nope'"):
        a.nope  # noqa: B018


def test_completion_error_of_unknown_status_and_opcode_pickles():
    wc = SimpleNamespace(status=200, opcode=99, vendor_err=0x12, wr_id=7, qp_num=0x33)
    e = ib.CompletionError(wc)
    assert (e.errno, e.status, e.vendor_err) == (errno.EIO, 200, 0x12)
    assert str(e) == (
        "[Errno 5] work completion failed: 200 (status 200, vendor_err 0x12) wr_id=7 opcode=99 qp_num=51"
    )
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is ib.CompletionError and str(back) == str(e) and back.wc == wc


def test_gid_equals_its_bytes_and_shows_its_address():
    raw = bytes(10) + b"\xff\xff" + bytes([192, 0, 2, 1])
    g = ib.Gid(raw)
    assert repr(g) == "Gid('::ffff:192.0.2.1')"
    assert g == raw and g == bytearray(raw) and g == memoryview(raw) and g == ib.Gid(raw)
    assert g != bytes(16) and g.__eq__(1) is NotImplemented


def test_attribute_records_compare_by_value_and_repr_their_fields():
    cq = object()
    ia = ib.QPInitAttr(cq, max_inline_data=16)
    assert repr(ia).startswith("QPInitAttr(send_cq=<object") and "max_inline_data=16" in repr(ia)
    ah = ib.AHAttr(dlid=3, port_num=1)
    assert ah == ib.AHAttr(dlid=3, port_num=1) and ah != ib.AHAttr(dlid=4, port_num=1)
    assert ah.__eq__("ah") is NotImplemented
    assert repr(ah).startswith("AHAttr(") and "dlid=3" in repr(ah)
    bi = ib.MWBindInfo(None, 0x1000, 64, 0)
    assert bi.__eq__(0) is NotImplemented
    rx = ib.RXHashConf(1, b"k" * 40, 3)
    assert rx == ib.RXHashConf(1, b"k" * 40, 3) and rx != ib.RXHashConf(1, b"k" * 40, 4)
    assert rx.__eq__(None) is NotImplemented
    assert (
        repr(rx)
        == f"RXHashConf(rx_hash_function=1, rx_hash_key={b'k' * 40!r}, rx_hash_fields_mask=3)"
    )
    ece = ib.ECE(0x15B3, 0x1, comp_mask=1)
    assert ece == ib.ECE(0x15B3, 0x1, 1) and ece.__eq__(1) is NotImplemented
    assert repr(ece) == "ECE(vendor_id=5555, options=1, comp_mask=1)"
    for unhashable in (rx, ece):
        with pytest.raises(TypeError, match="unhashable"):
            hash(unhashable)
    op = ib.OpsWR(ib.OpsWROpcode.TAG_SYNC, wr_id=4)
    assert repr(op) == (
        "OpsWR(wr_id=4, opcode=<OpsWROpcode.TAG_SYNC: 2>, flags=0, unexpected_cnt=0, "
        "handle=0, recv_wr_id=0, sg_list=(), tag=0, mask=0)"
    )


def test_device_equality_hash_and_repr():
    a = ib.Device("fake0", guid=0x1234)
    assert a == ib.Device("fake0", guid=0x1234) and a != ib.Device("fake0", guid=0x1235)
    assert a.__eq__("fake0") is NotImplemented
    assert hash(a) == hash(ib.Device("fake0", guid=0x1234))
    assert len({a, ib.Device("fake0", guid=0x1234), ib.Device("fake1")}) == 2
    assert repr(a) == "Device(name='fake0', guid=0x0000000000001234)"
    with pytest.raises(TypeError, match="device name must be a str, not int"):
        ib.Device(0)
