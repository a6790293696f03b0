"""Drop-in compatibility with the published ``ibverbs`` package (2026.10.22).

Programs written for the published package must run here unchanged: every
public name it exports exists here with a compatible signature, and the
behaviours that callers rely on (points 1-11) hold.  These are the
host-side checks; tests/device/test_compat_device.py repeats the ones that
need a device on rxe0.  The published package is never imported: its surface
is written down below (names and signatures read from its wheel).
"""

import errno
import os
import pickle
import re
import shutil
import subprocess
import types
from pathlib import Path

import pytest

import ibverbs as ib
import ibverbs._cuda_driver as _cuda_driver
import ibverbs.cuda as cuda
from ibverbs import _ibverbs

ROOT = Path(__file__).resolve().parents[2]
PAGE = os.sysconf("SC_PAGE_SIZE")
ACCESS = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE

# ---------------------------------------------------------------------------
# The published surface
# ---------------------------------------------------------------------------

# ibverbs.__all__ of the published package, less CMID (see test_cmid below).
PUBLISHED_ALL = [
    "__version__",
    "AH",
    "CQ",
    "MR",
    "PD",
    "QP",
    "SRQ",
    "AHAttr",
    "AsyncEvent",
    "CompChannel",
    "Context",
    "Device",
    "DeviceAttr",
    "Gid",
    "PortAttr",
    "QPCap",
    "QPInitAttr",
    "RecvWR",
    "SendWR",
    "SGE",
    "VerbsError",
    "CompletionError",
    "WC",
    "get_device_list",
    "AccessFlags",
    "MTU",
    "NodeType",
    "PortState",
    "QPAttrMask",
    "QPState",
    "QPType",
    "SendFlags",
    "WCFlags",
    "WCOpcode",
    "WCStatus",
    "WROpcode",
    "QPInfo",
    "connect_rc",
    "local_qp_info",
    "reg_tensor",
    "tensor_addr_len",
]
PUBLISHED_CUDA_ALL = [
    "GpuMR",
    "dmabuf_fd",
    "flush_gpudirect_writes",
    "synchronize",
    "tensor_ptr_len",
    "register_tensor",
]
# Attributes and methods of the published classes (besides close/closed,
# __enter__/__exit__, which every handle has here).
PUBLISHED_MEMBERS = {
    "AH": ["pd"],
    "AsyncEvent": ["event_type", "event_type_str"],
    "CQ": ["ack_events", "channel", "context", "cqe", "poll", "req_notify"],
    "CompChannel": ["context", "fd", "get_cq_event"],
    "Context": [
        "ack_async_event",
        "alloc_pd",
        "async_fd",
        "create_comp_channel",
        "create_cq",
        "get_async_event",
        "name",
        "num_comp_vectors",
        "query_device",
        "query_gid",
        "query_port",
    ],
    "Gid": ["interface_id", "raw", "subnet_prefix"],
    "MR": ["addr", "handle", "length", "lkey", "owner", "pd", "rkey", "sge"],
    "PD": ["context", "create_ah", "create_qp", "create_srq", "reg_dmabuf_mr", "reg_mr"],
    "QP": [
        "modify",
        "pd",
        "post_recv",
        "post_send",
        "qp_num",
        "qp_type",
        "query",
        "recv_cq",
        "send_cq",
        "srq",
        "state",
        "to_init",
        "to_rtr",
        "to_rts",
    ],
    "SGE": ["addr", "length", "lkey", "owner"],
    "SRQ": ["modify", "pd", "post_recv", "query"],
    "WC": [
        "byte_len",
        "imm_data",
        "is_success",
        "opcode",
        "qp_num",
        "raise_for_status",
        "src_qp",
        "status",
        "status_str",
        "vendor_err",
        "wc_flags",
        "wr_id",
    ],
}
PUBLISHED_ENUMS = {
    "QPType": {"DRIVER": 0xFF},
    "WCStatus": {"TM_ERR": None, "TM_RNDV_INCOMPLETE": None},
    "WCFlags": {"TM_SYNC_REQ": 1 << 4, "TM_MATCH": 1 << 5, "TM_DATA_VALID": 1 << 6},
    "AccessFlags": {"FLUSH_GLOBAL": 1 << 8, "FLUSH_PERSISTENT": 1 << 9},
}


def test_public_surface():
    """Every name of the published ibverbs.__all__ / ibverbs.cuda.__all__
    is exported here, and every attribute its classes have exists."""
    for name in PUBLISHED_ALL:
        assert name in ib.__all__, name
        assert hasattr(ib, name), name
    for name in PUBLISHED_CUDA_ALL:
        assert name in cuda.__all__, name
        assert callable(getattr(cuda, name)), name
    for cls, members in PUBLISHED_MEMBERS.items():
        for m in members:
            assert hasattr(getattr(ib, cls), m), f"{cls}.{m}"


def test_cmid():
    if not hasattr(ib, "CMID"):
        pytest.skip("CMID comes with the connection manager (cm/), not in this build")
    assert "CMID" in ib.__all__
    for m in ("resolve", "create_qp", "connect", "disconnect", "close", "context"):
        assert hasattr(ib.CMID, m), m


def test_published_call_forms_of_the_value_types():
    """Positional and keyword forms that the published signatures allow."""
    # SGE(target, length, lkey=0, offset=0)
    s = ib.SGE(0x1000, 64, 7, 16)
    assert (s.addr, s.length, s.lkey) == (0x1010, 64, 7)
    # SendWR(wr_id, sg_list, opcode, send_flags, remote_addr, rkey, imm_data, ...)
    w = ib.SendWR(5, None, ib.WROpcode.RDMA_WRITE_WITH_IMM, 0, 0x2000, 9, 3)
    assert (w.wr_id, w.remote_addr, w.rkey, w.imm_data) == (5, 0x2000, 9, 3)
    assert w.sg_list == ()
    w = ib.SendWR(1, [s], ib.WROpcode.RDMA_WRITE, 0, 0x2000, 9, 0)  # default imm
    assert w.imm_data is None and w.num_sge == 1
    w = ib.SendWR(
        wr_id=1,
        sg_list=ib.SGE(0x1000, 8, 1),
        opcode=ib.WROpcode.ATOMIC_CMP_AND_SWP,
        send_flags=0,
        remote_addr=8,
        rkey=2,
        imm_data=0,
        compare_add=3,
        swap=4,
        ah=None,
        remote_qpn=0,
        remote_qkey=0,
    )
    assert (w.remote_addr, w.rkey, w.compare_add, w.swap) == (8, 2, 3, 4)
    # RecvWR(wr_id=0, sg_list=None)
    assert ib.RecvWR(3, None).sg_list == ()
    # QPInitAttr(send_cq, recv_cq, qp_type, max_send_wr, max_recv_wr,
    #            max_send_sge, max_recv_sge, max_inline_data, srq, sq_sig_all)
    a = ib.QPInitAttr("s", "r", ib.QPType.UC, 10, 20, 3, 4, 64, "srq", True)
    assert (
        a.qp_type,
        a.max_send_wr,
        a.max_recv_wr,
        a.max_send_sge,
        a.max_recv_sge,
        a.max_inline_data,
        a.srq,
        a.sq_sig_all,
    ) == (ib.QPType.UC, 10, 20, 3, 4, 64, "srq", True)
    # AHAttr(dgid, sgid_index, dlid, is_global, port_num, hop_limit,
    #        traffic_class, sl, flow_label, src_path_bits, static_rate)
    h = ib.AHAttr(None, 1, 7, 0, 2, 3, 4, 5, 6, 1, 2)
    assert (
        h.sgid_index,
        h.dlid,
        h.is_global,
        h.port_num,
        h.hop_limit,
        h.traffic_class,
        h.sl,
        h.flow_label,
        h.src_path_bits,
        h.static_rate,
    ) == (1, 7, False, 2, 3, 4, 5, 6, 1, 2)
    # VerbsError(operation, err, detail=None)
    e = ib.VerbsError("ibv_reg_mr", errno.EFAULT, "bad address given")
    assert isinstance(e, OSError) and e.errno == errno.EFAULT
    assert e.operation == "ibv_reg_mr" and "bad address given" in str(e)
    assert ib.VerbsError("ibv_poll_cq", errno.EIO).errno == errno.EIO
    e = ib.VerbsError(errno.EBUSY, "busy", "ibv_dealloc_pd")  # ours
    assert (e.errno, e.strerror, e.operation) == (errno.EBUSY, "busy", "ibv_dealloc_pd")
    # Device(name, guid), Gid(raw)
    assert ib.Device("rxe0", 5).guid == 5
    assert ib.Gid(bytes(range(16))).raw == bytes(range(16))


# ---------------------------------------------------------------------------
# 1. QPInfo.gid is bytes; a Gid equals its raw bytes
# ---------------------------------------------------------------------------

RAW = bytes.fromhex("fe800000000000000011223344556677")


def test_1_qpinfo_gid_is_bytes():
    gid = ib.Gid(RAW)
    assert gid == RAW and RAW == gid and hash(gid) == hash(RAW)
    assert gid == bytearray(RAW) and gid != RAW[:-1] + b"\0"
    assert {RAW: 1}[gid] == 1 and gid in {RAW}
    info = ib.QPInfo(1, 2, 3, gid, 1, 3)
    assert type(info.gid) is bytes and info.gid == RAW
    wire = info.to_bytes()
    back = ib.QPInfo.from_bytes(wire)
    assert type(back.gid) is bytes and back.gid == RAW == wire[10:26]
    assert back == info
    assert ib.QPInfo(1, 2, 3, RAW, 1, 3) == info  # bytes or Gid: the same
    qp = types.SimpleNamespace(qp_num=9)
    pa = types.SimpleNamespace(lid=0, active_mtu=ib.MTU.MTU_1024)
    assert ib.local_qp_info(qp, pa, gid, port=1).gid == gid.raw
    assert ib.local_qp_info(qp, pa, RAW, port=1).gid == RAW
    with pytest.raises(ValueError):
        ib.QPInfo(1, 2, 3, RAW[:15], 1, 3)


# ---------------------------------------------------------------------------
# 2. CompletionError is a VerbsError (EIO)
# ---------------------------------------------------------------------------


def test_2_completion_error_is_a_verbs_error():
    wc = ib.WC(
        wr_id=7, status=ib.WCStatus.REM_ACCESS_ERR, vendor_err=0x33, opcode=ib.WCOpcode.RDMA_WRITE
    )
    with pytest.raises(ib.VerbsError) as info:
        wc.raise_for_status()
    e = info.value
    assert type(e) is ib.CompletionError
    assert isinstance(e, OSError) and e.errno == errno.EIO
    assert e.wc is wc and e.status == ib.WCStatus.REM_ACCESS_ERR
    assert e.vendor_err == 0x33 and "REM_ACCESS_ERR" in str(e)
    try:
        wc.raise_for_status()
    except OSError as caught:
        assert caught.errno == errno.EIO
    e2 = pickle.loads(pickle.dumps(e)) if _wc_pickles() else e
    assert e2.errno == errno.EIO


def _wc_pickles():
    try:
        pickle.dumps(ib.WC(wr_id=1))
    except (TypeError, pickle.PicklingError):
        return False
    return True


# ---------------------------------------------------------------------------
# 3. SGE.owner
# ---------------------------------------------------------------------------


def test_3_sge_owner():
    assert ib.SGE(0x1000, 8, lkey=1).owner is None
    keep = object()
    s = ib.SGE(0x1000, 8, lkey=1, owner=keep)
    assert s.owner is keep and s.mr is None
    # the owner lives as long as the SGE, and as long as a WR holding it
    import weakref

    class Owner:
        pass

    o = Owner()
    ref = weakref.ref(o)
    wr = ib.SendWR(sg_list=[ib.SGE(0x1000, 8, lkey=1, owner=o)])
    del o
    assert ref() is not None
    del wr
    import gc

    gc.collect()
    assert ref() is None


# ---------------------------------------------------------------------------
# The fake CUDA driver (tests/fakes/fakecuda.c)
# ---------------------------------------------------------------------------


@pytest.fixture
def no_libcuda(monkeypatch, tmp_path):
    monkeypatch.setenv("IBVERBS_LIBCUDA", str(tmp_path / "no-libcuda.so.1"))
    _cuda_driver.forget_driver()
    yield
    _cuda_driver.forget_driver()


class DuckTensor:
    """Only what the published package reads of a torch tensor."""

    def __init__(self, ptr, nbytes, is_cuda=True, contiguous=True):
        self._ptr, self._n = ptr, nbytes
        self.is_cuda, self._contiguous = is_cuda, contiguous

    def data_ptr(self):
        return self._ptr

    def numel(self):
        return self._n // 2

    def element_size(self):
        return 2

    def is_contiguous(self):
        return self._contiguous


class PublishedStylePD:
    """A PD as tests written for the published package fake it: positional
    parameters only, no owner=."""

    def __init__(self):
        self.calls = []

    def reg_dmabuf_mr(self, offset, length, iova, fd, access):
        self.calls.append(("reg_dmabuf_mr", (offset, length, iova, access)))
        raise ib.VerbsError(errno.EOPNOTSUPP, "no dma-buf", "ibv_reg_dmabuf_mr")

    def reg_mr(self, addr, length, access):
        self.calls.append(("reg_mr", (addr, length, access)))
        return FakeMR(addr, length)


class FakeMR:
    def __init__(self, addr, length):
        self.addr, self.length, self.lkey, self.rkey = addr, length, 0x51, 0x52
        self.closed = False

    def close(self):
        self.closed = True


# ---------------------------------------------------------------------------
# 4. ibverbs.cuda: dmabuf_fd, synchronize, tensor_ptr_len, GpuMR
# ---------------------------------------------------------------------------


def test_4_dmabuf_fd_checks_before_loading_libcuda(no_libcuda):
    for ptr in (PAGE + 1, -PAGE, 0):
        with pytest.raises(ValueError, match="page-aligned"):
            cuda.dmabuf_fd(ptr, PAGE)
    for length in (0, -PAGE, PAGE + 1):
        with pytest.raises(ValueError, match="positive and page-aligned"):
            cuda.dmabuf_fd(PAGE, length)
    assert _cuda_driver._driver_instance is None  # libcuda never loaded
    with pytest.raises(cuda.CudaError):  # a good range: now it is needed
        cuda.dmabuf_fd(PAGE, PAGE)


def test_4_dmabuf_fd_exports(fake_cuda):
    ptr = fake_cuda.alloc_tracked(3 * PAGE)
    start = ptr - ptr % PAGE
    fd = cuda.dmabuf_fd(start, PAGE)
    try:
        assert isinstance(fd, int) and os.fstat(fd).st_size == PAGE
        assert fake_cuda.last_export()["ptr"] == start
        assert fake_cuda.last_export()["size"] == PAGE
    finally:
        os.close(fd)
    assert fake_cuda.open_exports() == 0


def test_4_synchronize(fake_cuda):
    with pytest.raises(cuda.CudaError) as info:  # no current context
        cuda.synchronize()
    assert isinstance(info.value, RuntimeError) and info.value.code == 201
    assert fake_cuda.sync_calls() == 0
    fake_cuda.set_current(0)
    cuda.synchronize()
    assert fake_cuda.sync_calls() == 1


def test_4_tensor_ptr_len(no_libcuda):
    t = DuckTensor(0x7000, 96)
    assert cuda.tensor_ptr_len(t) == (0x7000, 96)
    with pytest.raises(ValueError, match="contiguous"):
        cuda.tensor_ptr_len(DuckTensor(0x7000, 96, contiguous=False))
    with pytest.raises(TypeError):
        cuda.tensor_ptr_len(object())
    assert _cuda_driver._driver_instance is None


def test_4_gpumr_by_hand():
    mr = FakeMR(0, 4096)
    tensor = object()
    g = cuda.GpuMR(mr, 0x10000, 4096)
    assert (g.addr, g.length, g.tensor, g.closed) == (0x10000, 4096, None, False)
    assert (g.lkey, g.rkey) == (0x51, 0x52)
    g = cuda.GpuMR(mr, 0x10000, 4096, tensor)
    assert g.tensor is tensor and g.mr is mr
    s = g.sge()
    assert (s.addr, s.length, s.lkey) == (0x10000, 4096, 0x51)
    assert s.owner is g  # kept alive by the SGE
    s = g.sge(100, offset=50)
    assert (s.addr, s.length, s.owner) == (0x10000 + 50, 100, g)
    assert g.sge(offset=4096).length == 0
    with pytest.raises(ValueError, match="exceeds"):
        g.sge(4097)
    with pytest.raises(ValueError, match="exceeds"):
        g.sge(10, offset=4090)
    with pytest.raises(ValueError, match="outside"):
        g.sge(offset=-1)
    with pytest.raises(ValueError, match="outside"):
        g.sge(offset=4097)
    g.close()
    assert g.closed and mr.closed and g.tensor is None
    with pytest.raises(TypeError):
        cuda.GpuMR(mr, 0x10000, 4096, tensor, "dmabuf")  # the rest is keyword-only
    assert cuda.GpuMR(mr, 1, 2, path="dmabuf", device=0).path == "dmabuf"


def test_4_gpumr_sge_owner_from_register_tensor(fake_cuda):
    ptr = fake_cuda.alloc_tracked(2 * PAGE, misalign=64)
    t = DuckTensor(ptr, PAGE)
    pd = PublishedStylePD()
    g = cuda.register_tensor(pd, t, ACCESS)
    s = g.sge()
    assert s.owner is g and (s.addr, s.length) == (ptr, PAGE)
    g.close()


# ---------------------------------------------------------------------------
# 5. Duck-typed tensors
# ---------------------------------------------------------------------------


def test_5_register_tensor_duck_typed(fake_cuda):
    ptr = fake_cuda.alloc_tracked(4 * PAGE, misalign=100)
    with pytest.raises(ValueError, match=r"ibverbs\.reg_tensor"):
        cuda.register_tensor(PublishedStylePD(), DuckTensor(ptr, 64, is_cuda=False), ACCESS)
    with pytest.raises(ValueError, match="contiguous"):
        cuda.register_tensor(PublishedStylePD(), DuckTensor(ptr, 64, contiguous=False), ACCESS)
    with pytest.raises(ValueError, match="empty"):
        cuda.register_tensor(PublishedStylePD(), DuckTensor(ptr, 0), ACCESS)
    # A working one: the NIC refuses the dma-buf, reg_mr (positional) follows.
    pd = PublishedStylePD()
    t = DuckTensor(ptr, 2 * PAGE)
    g = cuda.register_tensor(pd, t, ACCESS)
    start = ptr - ptr % PAGE
    assert pd.calls == [
        ("reg_dmabuf_mr", (ptr - start, 2 * PAGE, ptr, ACCESS)),
        ("reg_mr", (ptr, 2 * PAGE, ACCESS)),
    ]
    assert g.tensor is t and g.addr == ptr and g.length == 2 * PAGE
    assert fake_cuda.open_exports() == 0


def test_5_export_failure_falls_back_to_reg_mr(fake_cuda, monkeypatch):
    ptr = fake_cuda.alloc_tracked(PAGE)

    def refuse(p, n):
        raise RuntimeError("cuMemGetHandleForAddressRange failed")

    monkeypatch.setattr(cuda, "dmabuf_fd", refuse)
    pd = PublishedStylePD()
    t = DuckTensor(ptr, 256)
    g = cuda.register_tensor(pd, t, ACCESS)
    assert pd.calls == [("reg_mr", (ptr, 256, ACCESS))]
    assert g.path == "peermem" and g.tensor is t


def test_5_reg_tensor_refuses_cuda_duck_tensors(no_libcuda):
    class NoPD:
        def reg_mr(self, *a, **k):
            raise AssertionError("must not be called")

    with pytest.raises(ValueError, match=r"ibverbs\.cuda\.register_tensor"):
        ib.reg_tensor(NoPD(), DuckTensor(0x10000, 64, is_cuda=True), ACCESS)
    assert ib.tensor_addr_len(DuckTensor(0x10000, 64, is_cuda=False)) == (0x10000, 64)


# ---------------------------------------------------------------------------
# 6. ack_async_event, event_type_str, WC.is_success, WC.status_str
# ---------------------------------------------------------------------------


def test_6_wc_is_success_and_status_str():
    ok = ib.WC(status=ib.WCStatus.SUCCESS)
    assert ok.is_success is True and ok.status_str == "success"
    bad = ib.WC(status=ib.WCStatus.WR_FLUSH_ERR)
    assert bad.is_success is False
    assert bad.status_str == "Work Request Flushed Error"  # ibv_wc_status_str
    assert ib.WC(status=12345).status_str == "unknown"
    assert callable(ib.Context.ack_async_event)
    assert isinstance(ib.AsyncEvent.event_type_str, types.GetSetDescriptorType)


# ---------------------------------------------------------------------------
# 8. Messages that callers match
# ---------------------------------------------------------------------------


def test_8_messages():
    with pytest.raises(ValueError, match="exactly 28 bytes"):
        ib.QPInfo.from_bytes(bytes(27))
    with pytest.raises(ValueError, match="exactly 28 bytes"):
        ib.QPInfo.from_bytes(bytes(29))
    with pytest.raises(ValueError, match="non-negative"):
        ib.SGE(0x1000, 8, lkey=1, offset=-1)
    with pytest.raises(ValueError, match="non-negative"):
        ib.SGE(0x1000, 8, 1, -(2**70))
    with pytest.raises(ValueError, match=re.escape("2**32")):
        ib.SGE(0x1000, 2**32, lkey=1)
    with pytest.raises(ValueError, match=re.escape("2**32")):
        ib.SGE(0x1000, 2**40, lkey=1)


# ---------------------------------------------------------------------------
# 9. Enum members
# ---------------------------------------------------------------------------


def test_9_enum_members():
    for cls, members in PUBLISHED_ENUMS.items():
        e = getattr(ib, cls)
        for name, value in members.items():
            assert name in e.__members__, f"{cls}.{name}"
            if value is not None:
                assert int(e[name]) == value, f"{cls}.{name}"
    assert ib.WCStatus.TM_RNDV_INCOMPLETE == ib.WCStatus.TM_ERR + 1
    # The ABI fallbacks are only the ones that need it, and their bits are
    # free in AccessFlags.
    assert set(_ibverbs._abi_constants) <= {
        "AccessFlags.FLUSH_GLOBAL",
        "AccessFlags.FLUSH_PERSISTENT",
        "QueryQPDataInOrderFlags.RETURN_CAPS",
        "QueryQPDataInOrderFlags.DEVICE_ONLY",
        "QueryQPDataInOrderCaps.WHOLE_MSG",
        "QueryQPDataInOrderCaps.ALIGNED_128_BYTES",
        # compat.h's copies of rdma-core 59/64 enums (rdma-core 59/64)
        *(f"MRInitAttrMask.{m}" for m in ("IOVA", "ADDR", "FD", "FD_OFFSET", "DMAH", "BUF")),
        *(f"DMAHInitAttrMask.{m}" for m in ("CPU_ID", "PH", "TPH_MEM_TYPE")),
        "TPHMemType.VM",
        "TPHMemType.PM",
    } | set(COMP_CNTR_ABI)
    others = [m for n, m in ib.AccessFlags.__members__.items() if not n.startswith("FLUSH_")]
    for name in ("FLUSH_GLOBAL", "FLUSH_PERSISTENT"):
        assert all(not int(m) & int(ib.AccessFlags[name]) for m in others)


def _header_value(name):
    """The value of enumerator ``name`` in <infiniband/verbs.h>, or None
    when the header does not define it."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to read <infiniband/verbs.h>")
    src = (
        "#include <stdio.h>\n#include <infiniband/verbs.h>\n"
        f'int main(void) {{ printf("%lld\\n", (long long)({name})); return 0; }}\n'
    )
    d = Path(os.environ.get("TMPDIR", "/tmp"))
    import tempfile

    with tempfile.TemporaryDirectory(dir=d) as tmp:
        c = Path(tmp) / "probe.c"
        c.write_text(src)
        exe = Path(tmp) / "probe"
        r = subprocess.run([cc, "-o", str(exe), str(c)], capture_output=True)
        if r.returncode != 0:
            return None
        return int(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)


@pytest.mark.parametrize("name", ["FLUSH_GLOBAL", "FLUSH_PERSISTENT"])
def test_9_flush_access_flags_match_the_header_or_the_abi(name):
    """rdma-core 45 added IBV_ACCESS_FLUSH_*: from a header that has them
    the value comes from the header (and must equal rdma-core's ABI value);
    built against an older one, the extension says it used the ABI value."""
    value = _header_value(f"IBV_ACCESS_{name}")
    ours = int(ib.AccessFlags[name])
    if value is None:
        assert f"AccessFlags.{name}" in _ibverbs._abi_constants
    else:
        assert f"AccessFlags.{name}" not in _ibverbs._abi_constants
        assert ours == value
    assert ours == PUBLISHED_ENUMS["AccessFlags"][name]


# rdma-core's values (verbs.h, enum ibv_query_qp_data_in_order_flags/_caps):
# the flags of rdma-core 47 (DEVICE_ONLY: 61) and the caps they return.
DATA_IN_ORDER_ABI = {
    "QueryQPDataInOrderFlags": {"RETURN_CAPS": 1 << 0, "DEVICE_ONLY": 1 << 1},
    "QueryQPDataInOrderCaps": {"WHOLE_MSG": 1 << 0, "ALIGNED_128_BYTES": 1 << 1},
}


@pytest.mark.parametrize(
    "cls,name", [(c, m) for c, ms in DATA_IN_ORDER_ABI.items() for m in ms], ids=str
)
def test_9_data_in_order_enums_match_the_header_or_the_abi(cls, name):
    """Where this machine's header has them (rdma-core 47/61) the values
    equal the header's; where it lacks them, the extension says it used
    the ABI value.  (An installed wheel may be built against other
    headers than this machine's: sid's rdma-core 65 under the abi3 wheel
    of rdma-core 44 has the values while the wheel used the ABI's.)"""
    value = _header_value(f"IBV_QUERY_QP_DATA_IN_ORDER_{name}")
    ours = int(getattr(ib.enums, cls)[name])
    if value is None:
        assert f"{cls}.{name}" in _ibverbs._abi_constants
    else:
        assert ours == value
    assert ours == DATA_IN_ORDER_ABI[cls][name]


# rdma-core 65's completion counter enums (verbs.h), which compat.h
# declares for older headers.
COMP_CNTR_ABI = {
    "CompCntrType.WRS": ("IBV_COMP_CNTR_TYPE_WRS", 0),
    "CompCntrType.BYTES": ("IBV_COMP_CNTR_TYPE_BYTES", 1),
    "QPAttachCompCntrOp.SEND": ("IBV_QP_ATTACH_COMP_CNTR_OP_SEND", 1 << 0),
    "QPAttachCompCntrOp.RECV": ("IBV_QP_ATTACH_COMP_CNTR_OP_RECV", 1 << 1),
    "QPAttachCompCntrOp.RDMA_READ": ("IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_READ", 1 << 2),
    "QPAttachCompCntrOp.REMOTE_RDMA_READ": ("IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ", 1 << 3),
    "QPAttachCompCntrOp.RDMA_WRITE": ("IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE", 1 << 4),
    "QPAttachCompCntrOp.REMOTE_RDMA_WRITE": (
        "IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE",
        1 << 5,
    ),
}


@pytest.mark.parametrize("member", sorted(COMP_CNTR_ABI))
def test_9_comp_cntr_enums_match_the_header_or_the_abi(member):
    """rdma-core 65 added the completion counters: where this machine's
    header has them the values equal the header's; where it lacks them,
    the extension says it used compat.h's (rdma-core's ABI value).  (An
    installed wheel may be built against other headers than this
    machine's, as the abi3 wheel of rdma-core 44 in sid's root.)"""
    cname, abi = COMP_CNTR_ABI[member]
    cls, name = member.split(".")
    ours = int(getattr(ib, cls)[name])
    value = _header_value(cname)
    if value is None:
        assert member in _ibverbs._abi_constants
    else:
        assert ours == value
    assert ours == abi


# ---------------------------------------------------------------------------
# 10. connect_rc passes the negotiated MTU to to_rtr
# ---------------------------------------------------------------------------


class WrappedQP:
    """A QP wrapper that sees every transition, as library code wraps QPs."""

    def __init__(self, active_mtu):
        self.calls = []
        attr = types.SimpleNamespace(active_mtu=active_mtu)
        self.pd = types.SimpleNamespace(context=types.SimpleNamespace(query_port=lambda port: attr))

    def to_init(self, *a, **k):
        self.calls.append(("to_init", a, k))

    def to_rtr(self, *a, **k):
        self.calls.append(("to_rtr", a, k))

    def to_rts(self, *a, **k):
        self.calls.append(("to_rts", a, k))


@pytest.mark.parametrize(
    "local,remote,want",
    [
        (ib.MTU.MTU_4096, ib.MTU.MTU_1024, ib.MTU.MTU_1024),
        (ib.MTU.MTU_1024, ib.MTU.MTU_4096, ib.MTU.MTU_1024),
        (ib.MTU.MTU_2048, ib.MTU.MTU_2048, ib.MTU.MTU_2048),
    ],
)
def test_10_connect_rc_passes_the_mtu(local, remote, want):
    qp = WrappedQP(local)
    info = ib.QPInfo(1, 0, 0, RAW, 1, remote)
    ib.connect_rc(qp, info, port=1, sgid_index=1, access=0)
    ((name, args, kw),) = [c for c in qp.calls if c[0] == "to_rtr"]
    assert args == (info,) and kw["mtu"] == want and kw["sgid_index"] == 1
    qp = WrappedQP(local)
    ib.connect_rc(qp, info, port=1, sgid_index=1, access=0, mtu=ib.MTU.MTU_256)
    assert qp.calls[1][2]["mtu"] == ib.MTU.MTU_256  # given: used as it is


# ---------------------------------------------------------------------------
# 11. README: pip install .
# ---------------------------------------------------------------------------


def test_11_readme_install_command():
    text = (ROOT / "README.md").read_text()
    assert "pip install ./ibverbs" not in text
    assert re.search(r"^pip install \.(\s|$)", text, re.M)


# ---------------------------------------------------------------------------
# The last four differences
# ---------------------------------------------------------------------------


class OnlyIsCuda:
    """An object that says it is CUDA memory and has nothing else."""

    is_cuda = True


def test_24_1_reg_tensor_looks_at_is_cuda_first(no_libcuda):
    class NoPD:
        def reg_mr(self, *a, **k):
            raise AssertionError("must not be called")

    with pytest.raises(ValueError, match=r"ibverbs\.cuda\.register_tensor"):
        ib.reg_tensor(NoPD(), OnlyIsCuda(), ACCESS)
    # is_cuda false or absent: the object is looked at as before
    with pytest.raises(TypeError, match="expected a numpy array"):
        ib.reg_tensor(NoPD(), types.SimpleNamespace(is_cuda=False), ACCESS)
    assert _cuda_driver._driver_instance is None  # no CUDA was touched


def test_24_2_connect_rc_makes_the_published_calls():
    qp = WrappedQP(ib.MTU.MTU_4096)
    info = ib.QPInfo(7, 5, 0, RAW, 1, ib.MTU.MTU_1024)
    ib.connect_rc(qp, info, port=1, sgid_index=3, access=ACCESS, local_psn=9, timeout=18)
    assert qp.calls == [
        ("to_init", (1, ACCESS), {}),
        ("to_rtr", (info,), {"sgid_index": 3, "mtu": ib.MTU.MTU_1024}),
        ("to_rts", (9,), {"timeout": 18}),
    ]
    # The RTR keywords still go to to_rtr, and only those.
    qp = WrappedQP(ib.MTU.MTU_1024)
    ib.connect_rc(qp, info, port=2, sgid_index=0, access=0, min_rnr_timer=1, retry_cnt=3)
    assert qp.calls[1] == (
        "to_rtr",
        (info,),
        {"sgid_index": 0, "mtu": ib.MTU.MTU_1024, "min_rnr_timer": 1},
    )
    assert qp.calls[2] == ("to_rts", (0,), {"retry_cnt": 3})
    # to_rtr's port defaults to the QP's own: the docstring and stub say so.
    assert "port to the QP's port" in ib.QP.to_rtr.__doc__
    stub = (Path(ib.__file__).parent / "_ibverbs.pyi").read_text()  # as installed
    assert re.search(r"def to_rtr\([^)]*port: int \| None = None", stub, re.S)


def test_24_4_register_tensor_falls_back_without_a_driver(no_libcuda):
    # No libcuda at all: the dma-buf path is closed, reg_mr (positional)
    # is tried, as the published package does.
    pd = PublishedStylePD()
    t = DuckTensor(0x10000, 4 * PAGE)
    g = cuda.register_tensor(pd, t, ACCESS)
    assert pd.calls == [("reg_mr", (0x10000, 4 * PAGE, ACCESS))]
    assert g.path == "peermem" and g.tensor is t and g.addr == 0x10000

    # Both fail: one error, both reasons in its message.
    class NothingWorks(PublishedStylePD):
        def reg_mr(self, addr, length, access):
            self.calls.append(("reg_mr", (addr, length, access)))
            raise ib.VerbsError(errno.EFAULT, "Bad address", "ibv_reg_mr")

    pd = NothingWorks()
    with pytest.raises(cuda.GpuDirectError) as info:
        cuda.register_tensor(pd, t, ACCESS)
    text = str(info.value)
    assert "no-libcuda.so.1" in text and "ibv_reg_mr" in text
    assert [path for path, _ in info.value.attempts] == ["dma-buf", "peer memory"]


def test_24_4_any_dmabuf_registration_error_falls_back(fake_cuda):
    # reg_dmabuf_mr raising OSError or RuntimeError, whatever its errno:
    # reg_mr follows, and the export's fd is closed.
    ptr = fake_cuda.alloc_tracked(PAGE)
    for exc in (
        ib.VerbsError(errno.EINVAL, "Invalid argument", "ibv_reg_dmabuf_mr"),
        OSError(errno.EIO, "I/O error"),
        RuntimeError("provider refused"),
    ):

        class Refusing(PublishedStylePD):
            def reg_dmabuf_mr(self, offset, length, iova, fd, access):
                self.calls.append(("reg_dmabuf_mr", (offset, length, iova, access)))
                raise exc

        pd = Refusing()
        g = cuda.register_tensor(pd, DuckTensor(ptr, 64), ACCESS)
        assert [c[0] for c in pd.calls] == ["reg_dmabuf_mr", "reg_mr"]
        assert pd.calls[1] == ("reg_mr", (ptr, 64, ACCESS))
        assert g.path == "peermem"
        assert fake_cuda.open_exports() == 0
