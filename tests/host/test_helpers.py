"""ibverbs.helpers on the host: the QPInfo wire format, local_qp_info and
connect_rc against stand-in objects, and tensor registration with a fake PD
that records its reg_mr call (no device needed)."""

import array
import ctypes
import struct
import types

import pytest

import ibverbs as ib
from ibverbs import AccessFlags, Gid, QPInfo
from ibverbs.helpers import connect_rc, local_qp_info, reg_tensor, tensor_addr_len
from support.fakes import FakePD

GID = Gid("fe80::1234:5678:9abc:def0")
RW = AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE
RO = AccessFlags.REMOTE_READ


# ---------------------------------------------------------------------------
# QPInfo
# ---------------------------------------------------------------------------


def info(**kw):
    args = dict(qp_num=0x123456, psn=0xABCDEF, lid=0x1234, gid=GID, port=1, mtu=ib.MTU.MTU_1024)
    args.update(kw)
    return QPInfo(**args)


def test_qpinfo_round_trip():
    i = info()
    raw = i.to_bytes()
    assert isinstance(raw, bytes) and len(raw) == 28 == QPInfo.WIRE_SIZE
    assert QPInfo.from_bytes(raw) == i
    assert QPInfo.from_bytes(bytearray(raw)) == i
    assert QPInfo.from_bytes(memoryview(raw)) == i


def test_qpinfo_layout_is_big_endian():
    raw = info().to_bytes()
    assert raw == struct.pack(">IIH16sBB", 0x123456, 0xABCDEF, 0x1234, GID.raw, 1, 3)
    assert raw[:4] == b"\x00\x12\x34\x56"


def test_qpinfo_fields():
    i = info(gid=GID.raw, mtu=5)
    assert isinstance(i.gid, bytes) and i.gid == GID.raw and i.gid == GID
    assert i.mtu == ib.MTU.MTU_4096 and isinstance(i.mtu, ib.MTU)
    assert info(gid=str(GID)).gid == GID
    assert info(qp_num=0, psn=0, lid=0).to_bytes()[:10] == bytes(10)
    extremes = info(qp_num=2**24 - 1, psn=2**24 - 1, lid=0xFFFF, port=255, mtu=1)
    assert QPInfo.from_bytes(extremes.to_bytes()) == extremes


@pytest.mark.parametrize(
    "field,value",
    [
        ("qp_num", 2**24),
        ("psn", 2**24),
        ("qp_num", -1),
        ("lid", 2**16),
        ("port", 0),
        ("port", 256),
        ("mtu", 0),
        ("mtu", 6),
    ],
)
def test_qpinfo_rejects_out_of_range(field, value):
    with pytest.raises(ValueError):
        info(**{field: value})


def test_qpinfo_rejects_bad_types():
    with pytest.raises(TypeError):
        info(qp_num="1")
    with pytest.raises(TypeError):
        info(port=True)
    with pytest.raises(ValueError):
        info(gid=b"\x00" * 15)
    with pytest.raises(TypeError):
        info(gid=12)


def _raw(qp_num=1, psn=2, lid=3, gid=GID.raw, port=1, mtu=3):
    return struct.pack(">IIH16sBB", qp_num, psn, lid, gid, port, mtu)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        _raw()[:-1],
        _raw() + b"\x00",
        bytes(100),
        _raw(qp_num=2**24),
        _raw(psn=2**24),
        _raw(qp_num=2**32 - 1),
        _raw(port=0),
        _raw(mtu=0),
        _raw(mtu=6),
        _raw(mtu=255),
    ],
)
def test_from_bytes_rejects_malformed(data):
    with pytest.raises(ValueError):
        QPInfo.from_bytes(data)


@pytest.mark.parametrize("data", [None, 28, "x" * 28, [0] * 28, _raw().hex()])
def test_from_bytes_rejects_non_bytes(data):
    with pytest.raises(ValueError):
        QPInfo.from_bytes(data)


def test_qpinfo_is_exported():
    assert ib.QPInfo is QPInfo and ib.helpers.QPInfo is QPInfo
    assert ib.connect_rc is connect_rc and ib.local_qp_info is local_qp_info
    assert ib.reg_tensor is reg_tensor and ib.tensor_addr_len is tensor_addr_len


# ---------------------------------------------------------------------------
# local_qp_info / connect_rc with stand-ins
# ---------------------------------------------------------------------------


def test_local_qp_info():
    qp = types.SimpleNamespace(qp_num=0x42)
    port_attr = types.SimpleNamespace(lid=7, active_mtu=ib.MTU.MTU_2048)
    i = local_qp_info(qp, port_attr, GID, port=1, psn=0x99)
    assert i == QPInfo(0x42, 0x99, 7, GID, 1, ib.MTU.MTU_2048)
    assert local_qp_info(qp, port_attr, GID, port=2).psn == 0


class RecordingQP:
    def __init__(self, active_mtu=ib.MTU.MTU_4096):
        self.calls = []
        port_attr = types.SimpleNamespace(active_mtu=active_mtu)
        self.pd = types.SimpleNamespace(
            context=types.SimpleNamespace(query_port=lambda port: port_attr)
        )

    def __getattr__(self, name):
        def record(*args, **kw):
            self.calls.append((name, args, kw))

        return record


def test_connect_rc_sequence():
    qp = RecordingQP()
    remote = info()
    connect_rc(
        qp,
        remote,
        port=1,
        sgid_index=3,
        access=RW,
        local_psn=0x77,
        rnr_retry=5,
        timeout=10,
        min_rnr_timer=1,
    )
    assert qp.calls == [
        ("to_init", (1, RW), {}),
        ("to_rtr", (remote,), dict(sgid_index=3, mtu=ib.MTU.MTU_1024, min_rnr_timer=1)),
        ("to_rts", (0x77,), dict(rnr_retry=5, timeout=10)),
    ]


def test_connect_rc_explicit_mtu():
    qp = RecordingQP()
    connect_rc(qp, info(), port=2, sgid_index=0, access=0, mtu=ib.MTU.MTU_512)
    assert qp.calls[1][2]["mtu"] == ib.MTU.MTU_512
    assert qp.calls[2] == ("to_rts", (0,), {})


def test_connect_rc_wants_a_qpinfo():
    with pytest.raises(TypeError):
        connect_rc(RecordingQP(), info().to_bytes(), port=1, sgid_index=0, access=0)


# ---------------------------------------------------------------------------
# tensor_addr_len / reg_tensor with a fake PD
# ---------------------------------------------------------------------------


def numpy():
    return pytest.importorskip("numpy")


def test_numpy_array():
    np = numpy()
    a = np.arange(16, dtype=np.uint32)
    assert tensor_addr_len(a) == (a.ctypes.data, 64)
    pd = FakePD()
    mr = reg_tensor(pd, a, RW)
    assert (mr.addr, mr.length) == (a.ctypes.data, 64)
    assert pd.registered() == [(a.ctypes.data, 64, RW, a)]
    assert pd.registered()[0][3] is a


def test_numpy_slice_and_views():
    np = numpy()
    a = np.zeros(100, dtype=np.uint8)
    assert tensor_addr_len(a[10:20]) == (a.ctypes.data + 10, 10)
    with pytest.raises(ValueError, match="contiguous"):
        tensor_addr_len(a[::2])
    with pytest.raises(ValueError, match="contiguous"):
        reg_tensor(FakePD(), np.zeros((4, 4)).T, RW)
    with pytest.raises(ValueError, match="empty"):
        reg_tensor(FakePD(), np.zeros(0), RW)
    with pytest.raises(ValueError, match="empty"):
        tensor_addr_len(a[5:5])


def test_numpy_read_only():
    np = numpy()
    a = np.zeros(8)
    a.flags.writeable = False
    for acc in (
        AccessFlags.LOCAL_WRITE,
        AccessFlags.REMOTE_WRITE,
        AccessFlags.REMOTE_ATOMIC,
        RW | RO,
    ):
        with pytest.raises(ValueError, match="read-only"):
            reg_tensor(FakePD(), a, acc)
    pd = FakePD()
    reg_tensor(pd, a, RO)
    assert pd.registered() == [(a.ctypes.data, 64, RO, a)]
    reg_tensor(pd, a, 0)


def test_bytearray():
    b = bytearray(b"hello world")
    addr, n = tensor_addr_len(b)
    assert n == 11 and ctypes.string_at(addr, n) == b"hello world"
    b.extend(b"!")  # tensor_addr_len does not pin it
    pd = FakePD()
    reg_tensor(pd, b, RW)
    addr, n, acc, owner = pd.registered()[0]
    assert n == 12 and ctypes.string_at(addr, n) == b"hello world!"
    assert isinstance(owner, memoryview) and owner.obj is b
    # the owner pins the bytearray: it cannot move while registered
    with pytest.raises(BufferError):
        b.extend(b"more")
    owner.release()
    b.extend(b"more")


def test_bytes_read_only_access_only():
    data = b"immutable data"
    addr, n = tensor_addr_len(data)
    assert n == len(data) and ctypes.string_at(addr, n) == data
    pd = FakePD()
    reg_tensor(pd, data, RO)
    assert pd.registered() == [(addr, n, RO, data)] and pd.registered()[0][3] is data
    for acc in (
        AccessFlags.LOCAL_WRITE,
        AccessFlags.REMOTE_WRITE,
        AccessFlags.REMOTE_ATOMIC,
        int(RW),
    ):
        with pytest.raises(ValueError, match="read-only"):
            reg_tensor(FakePD(), data, acc)


def test_empty_buffers():
    for obj in (b"", bytearray(), memoryview(bytearray()), array.array("i")):
        with pytest.raises(ValueError, match="empty"):
            reg_tensor(FakePD(), obj, RO)


def test_other_buffers():
    arr = array.array("d", [1.0, 2.0])
    addr, n = tensor_addr_len(arr)
    assert (addr, n) == (arr.buffer_info()[0], 16)
    mv = memoryview(bytearray(10))
    pd = FakePD()
    reg_tensor(pd, mv[2:6], RW)
    assert pd.registered()[0][1] == 4
    with pytest.raises(ValueError, match="contiguous"):
        reg_tensor(FakePD(), mv[::2], RW)
    with pytest.raises(ValueError, match="read-only"):
        reg_tensor(FakePD(), memoryview(b"abc"), RO)


def test_unsupported_objects():
    for obj in (None, 5, "text", [1, 2, 3], object()):
        with pytest.raises(TypeError):
            reg_tensor(FakePD(), obj, RO)
    assert FakePD().calls == []


class FakeTorchTensor:
    """Just the torch.Tensor surface that the helpers use."""

    def __init__(self, ptr, numel, elsize=4, contiguous=True, device="cpu"):
        self._ptr, self._numel, self._elsize = ptr, numel, elsize
        self._contiguous = contiguous
        self.device = types.SimpleNamespace(type=device)

    def data_ptr(self):
        return self._ptr

    def numel(self):
        return self._numel

    def element_size(self):
        return self._elsize

    def is_contiguous(self):
        return self._contiguous


def test_torch_like_cpu_tensor():
    t = FakeTorchTensor(0x10000, 256, 2)
    assert tensor_addr_len(t) == (0x10000, 512)
    pd = FakePD()
    reg_tensor(pd, t, RW)
    assert pd.registered() == [(0x10000, 512, RW, t)]


def test_torch_like_refusals():
    with pytest.raises(ValueError, match="contiguous"):
        reg_tensor(FakePD(), FakeTorchTensor(0x1000, 8, contiguous=False), RW)
    with pytest.raises(ValueError, match="empty"):
        reg_tensor(FakePD(), FakeTorchTensor(0x1000, 0), RW)
    cuda = FakeTorchTensor(0x7F0000000000, 8, device="cuda")
    with pytest.raises(ValueError, match=r"ibverbs\.cuda\.register_tensor"):
        reg_tensor(FakePD(), cuda, RW)
    # the address of a CUDA tensor is still available (for ibverbs.cuda)
    assert tensor_addr_len(cuda) == (0x7F0000000000, 32)


def test_cuda_array_interface_refused():
    class CupyLike:
        __cuda_array_interface__ = {
            "data": (0x7F0000001000, False),
            "shape": (4,),
            "typestr": "<f8",
            "strides": None,
            "version": 3,
        }

    with pytest.raises(ValueError, match="register_tensor"):
        reg_tensor(FakePD(), CupyLike(), RW)
    assert tensor_addr_len(CupyLike()) == (0x7F0000001000, 32)


def test_array_interface_without_flags():
    class ArrayLike:
        def __init__(self, strides):
            self.__array_interface__ = {
                "data": (0x5000, False),
                "shape": (2, 3),
                "typestr": "<i4",
                "strides": strides,
                "version": 3,
            }

    assert tensor_addr_len(ArrayLike(None)) == (0x5000, 24)
    assert tensor_addr_len(ArrayLike((12, 4))) == (0x5000, 24)
    with pytest.raises(ValueError, match="contiguous"):
        tensor_addr_len(ArrayLike((4, 8)))
