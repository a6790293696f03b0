"""Memory windows without a device: inc_rkey, the records, and the checks
SendWR makes on the bind fields before any verb (the windows themselves
are in tests/device/test_mw.py)."""

import pytest

import ibverbs as ib
from ibverbs import MWBind, MWBindInfo, SendWR, WROpcode


def test_inc_rkey_is_verbs_h():
    # ibv_inc_rkey: the low 8 bits (the key) plus one, wrapping; the index
    # (the upper 24 bits) stays.
    assert ib.inc_rkey(0x12345600) == 0x12345601
    assert ib.inc_rkey(0x123456FF) == 0x12345600
    assert ib.inc_rkey(0xFFFFFFFF) == 0xFFFFFF00
    assert ib.inc_rkey(0) == 1
    for bad in (-1, 2**32):
        with pytest.raises(ValueError, match="rkey"):
            ib.inc_rkey(bad)
    with pytest.raises(TypeError):
        ib.inc_rkey("1")


def test_enums_from_headers():
    assert ib.MWType.TYPE_1 == 1 and ib.MWType.TYPE_2 == 2
    assert ib.WROpcode.BIND_MW == 8
    assert ib.WCOpcode.BIND_MW == 5 and ib.WCOpcode.LOCAL_INV == 6


def test_records():
    info = MWBindInfo(None, 0x1000, 64, ib.AccessFlags.REMOTE_READ)
    assert info == MWBindInfo(None, 0x1000, 64, ib.AccessFlags.REMOTE_READ)
    assert info != MWBindInfo(None, 0x1000, 65, ib.AccessFlags.REMOTE_READ)
    assert "length=64" in repr(info)
    bind = MWBind(info, wr_id=3, send_flags=ib.SendFlags.SIGNALED)
    assert bind.bind_info is info and bind.wr_id == 3
    assert "wr_id=3" in repr(bind)
    with pytest.raises(AttributeError):
        info.other = 1  # __slots__


def test_sendwr_bind_fields_are_checked():
    with pytest.raises(ValueError, match="BIND_MW needs mw="):
        SendWR(opcode=WROpcode.BIND_MW)
    with pytest.raises(ValueError, match="both mw= and bind_info="):
        SendWR(opcode=WROpcode.BIND_MW, bind_info=MWBindInfo(None, 0, 0))
    with pytest.raises(TypeError, match="mw must be an MW"):
        SendWR(opcode=WROpcode.BIND_MW, mw=1, bind_info=MWBindInfo(None, 0, 0))
    with pytest.raises(TypeError, match="mw must be an MW"):
        SendWR(opcode=WROpcode.BIND_MW, mw="mw", bind_info=object())
    # None is "not given"
    wr = SendWR(mw=None, bind_info=None)
    assert wr.mw is None and wr.bind_info is None


def test_atomic_write_opcode_is_accepted():
    # The 8 bytes to write travel in the SGE; what runs it is the device's
    # business (tests/device/test_atomic_write.py).
    sge = ib.SGE(0x1000, 8, lkey=1)
    wr = SendWR(opcode=WROpcode.ATOMIC_WRITE, sg_list=[sge], remote_addr=0x2000, rkey=0x10)
    assert wr.opcode is WROpcode.ATOMIC_WRITE
    assert wr.remote_addr == 0x2000 and wr.rkey == 0x10
    with pytest.raises(ValueError, match="compare_add"):
        SendWR(opcode=WROpcode.ATOMIC_WRITE, sg_list=[sge], compare_add=1)
