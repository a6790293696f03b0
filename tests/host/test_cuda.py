"""ibverbs.cuda against a fake libcuda (tests/fakes/fakecuda.c) and a fake PD.

No GPU, no RDMA device: the fake driver's "device memory" is host memory, and
FakePD records the registrations it is asked for.  The fake is compiled with
the system C compiler into a temporary folder and loaded through the
test-only override IBVERBS_LIBCUDA.
"""

import errno
import gc
import os
import pickle
import re
import weakref
from pathlib import Path

import pytest
from support.fakes import FakePD, load_fake_module
from support.process import run_python

import ibverbs as ib
import ibverbs._cuda_driver as _cuda_driver
import ibverbs.cuda as cuda
from ibverbs.cuda import CudaError, GpuDirectError, GpuMR

PAGE = os.sysconf("SC_PAGE_SIZE")
ACCESS = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE


build = load_fake_module("build")


def _fake_library(tmp_path_factory, name, **kw):
    if build.compiler() is None:
        pytest.skip("no C compiler (cc/gcc/clang or $CC) to build the fake libcuda")
    return build.build_fakecuda(tmp_path_factory.mktemp(name), **kw)


@pytest.fixture(scope="session")
def fake_path(tmp_path_factory):
    return _fake_library(tmp_path_factory, "fakecuda")


@pytest.fixture(scope="session")
def fake_nodmabuf_path(tmp_path_factory):
    return _fake_library(tmp_path_factory, "fakecuda-nodmabuf", dmabuf=False)


class Fake(build.FakeCuda):
    """The fake driver, with the allocations of one test freed after it."""

    def __init__(self, path):
        super().__init__(path)
        self.allocated = []

    def alloc(self, size, device=0, misalign=0):
        ptr = super().alloc(size, device, misalign)
        self.allocated.append(ptr)
        return ptr

    def alloc_host(self, size, device=0):
        ptr = super().alloc_host(size, device)
        self.allocated.append(ptr)
        return ptr

    def free_all(self):
        for ptr in self.allocated:
            self.free(ptr)
        self.allocated.clear()


def _use_fake(monkeypatch, tmp_path, path):
    monkeypatch.setenv("IBVERBS_LIBCUDA", path)
    # An empty sysfs: the host's own /sys must not decide the fallback.
    sysfs = tmp_path / "sys"
    sysfs.mkdir()
    monkeypatch.setenv("IBVERBS_SYSFS_ROOT", str(sysfs))
    _cuda_driver.forget_driver()
    f = Fake(path)
    f.reset()
    return f


@pytest.fixture
def fake(monkeypatch, tmp_path, fake_path):
    f = _use_fake(monkeypatch, tmp_path, fake_path)
    yield f
    gc.collect()
    assert f.open_exports() == 0, "an exported dma-buf fd leaked"
    _cuda_driver.forget_driver()
    f.reset()
    f.free_all()


@pytest.fixture
def fake_nodmabuf(monkeypatch, tmp_path, fake_nodmabuf_path):
    f = _use_fake(monkeypatch, tmp_path, fake_nodmabuf_path)
    yield f
    _cuda_driver.forget_driver()
    f.reset()
    f.free_all()


@pytest.fixture
def peermem(monkeypatch):
    """Make a peer-memory module look loaded; returns a function that takes
    the sysfs path to create (default module/nvidia_peermem)."""

    def make(rel="module/nvidia_peermem"):
        root = Path(os.environ["IBVERBS_SYSFS_ROOT"])
        (root / rel).mkdir(parents=True)
        return str(root / rel)

    return make


# --------------------------------------------------------------------------
# Fakes for tensors and the PD
# --------------------------------------------------------------------------


class CudaArray:
    """Anything with __cuda_array_interface__ (CuPy, Numba, ...)."""

    def __init__(self, ptr, shape, typestr="|u1", strides=None):
        self.ptr, self.shape, self.typestr, self.strides = ptr, shape, typestr, strides

    @property
    def __cuda_array_interface__(self):
        return {
            "data": (self.ptr, False),
            "shape": self.shape,
            "typestr": self.typestr,
            "strides": self.strides,
            "version": 3,
        }


class Device:
    def __init__(self, type, index=None):
        self.type, self.index = type, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


class TorchLike:
    """The parts of torch.Tensor that register_tensor reads."""

    def __init__(self, ptr, nbytes, device="cuda", index=0, contiguous=True, element_size=4):
        self._ptr, self._nbytes, self._contiguous = ptr, nbytes, contiguous
        self._element_size = element_size
        self.device = Device(device, index)

    def data_ptr(self):
        return self._ptr

    def is_contiguous(self):
        return self._contiguous

    def element_size(self):
        return self._element_size

    def numel(self):
        return self._nbytes // self._element_size

    @property
    def nbytes(self):
        return self._nbytes


class OldTorchLike(TorchLike):
    """A torch without Tensor.nbytes: numel() * element_size()."""

    nbytes = None


def verbs_error(err, op):
    return ib.VerbsError(err, os.strerror(err), op)


def nfds():
    return len(os.listdir("/proc/self/fd"))


def aligned(ptr, n, page=PAGE):
    start = ptr - ptr % page
    end = -(-(ptr + n) // page) * page
    return start, end - start


# --------------------------------------------------------------------------
# The dma-buf path: alignment, offset, iova, the fd
# --------------------------------------------------------------------------

ALIGNMENT_CASES = {
    "exactly-aligned": (0, PAGE),
    "one-byte": (0, 1),
    "last-byte-of-a-page": (PAGE - 1, 1),
    "unaligned-start-and-end": (100, 200),
    "crossing-a-page": (PAGE - 10, 20),
    "unaligned-several-pages": (100, 3 * PAGE),
    "aligned-start-unaligned-end": (0, 2 * PAGE + 1),
    "start-past-first-page": (PAGE + 5, PAGE),
}


@pytest.mark.parametrize("misalign,n", ALIGNMENT_CASES.values(), ids=ALIGNMENT_CASES.keys())
def test_dmabuf_alignment(fake, misalign, n):
    ptr = fake.alloc(n, misalign=misalign)
    pd = FakePD()
    t = CudaArray(ptr, (n,))
    gmr = cuda.register_tensor(pd, t, ACCESS)

    start, length = aligned(ptr, n)
    assert start % PAGE == 0 and length % PAGE == 0
    assert start <= ptr and ptr + n <= start + length
    assert fake.last_export() == {"ptr": start, "size": length, "type": 1, "flags": 0, "device": 0}
    assert pd.names() == ["reg_dmabuf_mr"]
    args = pd.calls[0][1]
    assert args["offset"] == ptr - start
    assert args["length"] == n
    assert args["iova"] == ptr
    assert args["access"] == ACCESS
    assert args["fd_size"] == length  # the fd exported for that range
    assert args["owner"] is t  # the MR retains the tensor too
    assert gmr.path == "dmabuf"
    assert gmr.addr == ptr and gmr.length == n
    assert fake.open_exports() == 0


def test_page_size_comes_from_sysconf(fake, monkeypatch):
    big = 4 * PAGE
    base = fake.alloc(16 * PAGE)
    ptr = -(-base // big) * big + 100  # 100 bytes into a 4-page block
    real = os.sysconf
    monkeypatch.setattr(os, "sysconf", lambda name: big if name == "SC_PAGE_SIZE" else real(name))
    pd = FakePD()
    cuda.register_tensor(pd, CudaArray(ptr, (10,)), ACCESS)
    assert fake.last_export()["ptr"] == ptr - 100
    assert fake.last_export()["size"] == big
    assert pd.calls[0][1]["offset"] == 100


def test_fd_closed_after_registration(fake):
    ptr = fake.alloc(3 * PAGE, misalign=17)
    pd = FakePD()
    before = nfds()
    gmr = cuda.register_tensor(pd, CudaArray(ptr, (3 * PAGE,)), ACCESS)
    fd = pd.calls[0][1]["fd"]
    assert fake.open_exports() == 0
    assert nfds() == before
    with pytest.raises(OSError) as e:
        os.fstat(fd)
    assert e.value.errno == errno.EBADF
    gmr.close()


def test_fd_closed_when_registration_fails(fake):
    ptr = fake.alloc(PAGE)
    before = nfds()
    for err in (errno.EINVAL, errno.EOPNOTSUPP):
        pd = FakePD(
            dmabuf_error=verbs_error(err, "ibv_reg_dmabuf_mr"),
            reg_mr_error=verbs_error(errno.EFAULT, "ibv_reg_mr"),
        )
        with pytest.raises(ib.VerbsError):
            cuda.register_tensor(pd, CudaArray(ptr, (PAGE,)), ACCESS)
        assert fake.open_exports() == 0
    assert nfds() == before


def test_no_fd_leak_over_many_registrations(fake, peermem):
    ptr = fake.alloc(5000, misalign=3)
    t = CudaArray(ptr, (5000,))
    ok, refused = (
        FakePD(),
        FakePD(
            dmabuf_error=verbs_error(errno.EOPNOTSUPP, "ibv_reg_dmabuf_mr"),
            reg_mr_error=verbs_error(errno.EFAULT, "ibv_reg_mr"),
        ),
    )
    cuda.register_tensor(ok, t, ACCESS).close()  # warm up lazy imports
    before = nfds()
    for _ in range(50):
        cuda.register_tensor(ok, t, ACCESS).close()
        with pytest.raises(GpuDirectError):
            cuda.register_tensor(refused, t, ACCESS)
    assert nfds() == before
    assert fake.open_exports() == 0
    assert fake.export_calls() == 101


def test_export_dmabuf_internal(fake):
    ptr = fake.alloc(1000, misalign=300)
    fd, start, length = cuda._export_dmabuf(ptr, 1000)
    try:
        assert (start, length) == aligned(ptr, 1000)
        assert os.fstat(fd).st_size == length
        assert fake.open_exports() == 1
    finally:
        os.close(fd)
    assert fake.open_exports() == 0


def test_export_dmabuf_rejects_a_bad_range(fake):
    with pytest.raises(ValueError):
        cuda._export_dmabuf(0, 10)
    with pytest.raises(ValueError):
        cuda._export_dmabuf(fake.alloc(10), 0)


# --------------------------------------------------------------------------
# Tensors: torch-like and __cuda_array_interface__
# --------------------------------------------------------------------------


def test_torch_like_tensor(fake):
    ptr = fake.alloc(4096 * 4, device=1, misalign=64)
    t = TorchLike(ptr, 4096 * 4, index=1)
    pd = FakePD()
    gmr = cuda.register_tensor(pd, t, ACCESS)
    assert gmr.tensor is t and gmr.device == 1
    assert pd.calls[0][1]["length"] == 4096 * 4
    assert fake.last_export()["device"] == 1


def test_torch_like_without_nbytes(fake):
    ptr = fake.alloc(40)
    pd = FakePD()
    gmr = cuda.register_tensor(pd, OldTorchLike(ptr, 40, element_size=8), ACCESS)
    assert gmr.length == 40  # numel() * element_size()


def test_torch_device_index_must_match_the_driver(fake):
    ptr = fake.alloc(64, device=0)
    pd = FakePD()
    with pytest.raises(ValueError, match="cuda:1"):
        cuda.register_tensor(pd, TorchLike(ptr, 64, index=1), ACCESS)
    assert pd.calls == []


def test_cuda_array_interface_shapes(fake):
    ptr = fake.alloc(4 * 4 * 4)
    pd = FakePD()
    # explicit C-contiguous strides
    gmr = cuda.register_tensor(pd, CudaArray(ptr, (4, 4), "<f4", (16, 4)), ACCESS)
    assert gmr.length == 64
    # a dimension of size 1 may have any stride
    gmr = cuda.register_tensor(pd, CudaArray(ptr, (1, 8), "<f8", (999, 8)), ACCESS)
    assert gmr.length == 64


def test_refuses_non_contiguous(fake):
    ptr = fake.alloc(64)
    pd = FakePD()
    with pytest.raises(ValueError, match="contiguous"):
        cuda.register_tensor(pd, TorchLike(ptr, 64, contiguous=False), ACCESS)
    with pytest.raises(ValueError, match="contiguous"):
        cuda.register_tensor(pd, CudaArray(ptr, (4, 4), "<f4", (4, 16)), ACCESS)
    assert pd.calls == [] and fake.export_calls() == 0


def test_refuses_empty(fake):
    ptr = fake.alloc(64)
    pd = FakePD()
    with pytest.raises(ValueError, match="empty"):
        cuda.register_tensor(pd, TorchLike(ptr, 0), ACCESS)
    with pytest.raises(ValueError, match="empty"):
        cuda.register_tensor(pd, CudaArray(0, (0,)), ACCESS)
    with pytest.raises(ValueError, match="empty"):
        cuda.register_tensor(pd, CudaArray(ptr, (3, 0), "<f4"), ACCESS)
    assert pd.calls == [] and fake.export_calls() == 0


def host_objects():
    objs = [
        TorchLike(0x1000, 64, device="cpu", index=None),
        bytearray(64),
        memoryview(bytearray(64)),
    ]
    try:
        import numpy
    except ImportError:
        pass
    else:
        objs.append(numpy.zeros(16))
    return objs


@pytest.mark.parametrize("obj", host_objects(), ids=lambda o: type(o).__name__)
def test_refuses_host_tensors_without_touching_cuda(monkeypatch, tmp_path, obj):
    monkeypatch.setenv("IBVERBS_LIBCUDA", str(tmp_path / "no-libcuda.so.1"))
    _cuda_driver.forget_driver()
    with pytest.raises(ValueError, match=r"ibverbs\.reg_tensor"):
        cuda.register_tensor(FakePD(), obj, ACCESS)
    assert _cuda_driver._driver_instance is None


def test_refuses_other_objects():
    with pytest.raises(TypeError, match="CUDA tensor"):
        cuda.register_tensor(FakePD(), object(), ACCESS)
    with pytest.raises(TypeError, match="__cuda_array_interface__"):
        cuda.register_tensor(FakePD(), CudaArray(0x1000, (4,), typestr="?"), ACCESS)


def test_refuses_pinned_host_memory(fake):
    ptr = fake.alloc_host(PAGE)
    with pytest.raises(ValueError, match=r"host memory.*ibverbs\.reg_tensor"):
        cuda.register_tensor(FakePD(), CudaArray(ptr, (PAGE,)), ACCESS)


def test_refuses_memory_unknown_to_cuda(fake):
    buf = bytearray(PAGE)
    import ctypes

    ptr = ctypes.addressof((ctypes.c_char * PAGE).from_buffer(buf))
    with pytest.raises(ValueError, match=r"not CUDA memory.*ibverbs\.reg_tensor"):
        cuda.register_tensor(FakePD(), CudaArray(ptr, (PAGE,)), ACCESS)


# --------------------------------------------------------------------------
# Contexts and entry points
# --------------------------------------------------------------------------


def test_export_without_a_current_context_uses_the_primary_one(fake):
    ptr = fake.alloc(PAGE, device=1)
    assert fake.current_device() == -1
    cuda.register_tensor(FakePD(), CudaArray(ptr, (PAGE,)), ACCESS)
    assert fake.last_export()["device"] == 1
    assert fake.ctx_depth() == 0  # popped
    assert fake.primary_refs(1) == 0  # released


def test_export_switches_to_the_memory_device_and_back(fake):
    fake.set_current(0)
    ptr = fake.alloc(PAGE, device=1)
    cuda.register_tensor(FakePD(), CudaArray(ptr, (PAGE,)), ACCESS)
    assert fake.last_export()["device"] == 1
    assert fake.current_device() == 0 and fake.ctx_depth() == 1
    assert fake.primary_refs(1) == 0


def test_export_keeps_a_current_context_of_the_right_device(fake):
    fake.set_current(1)
    ptr = fake.alloc(PAGE, device=1)
    cuda.register_tensor(FakePD(), CudaArray(ptr, (PAGE,)), ACCESS)
    assert fake.last_export()["device"] == 1
    assert fake.current_device() == 1 and fake.ctx_depth() == 1


def test_entry_points_are_the_versioned_names():
    # cuda.h maps these API names to *_v2; the unversioned symbols are the
    # old ABI.  (The fake exports only the versioned ones, so the context
    # tests above fail if the wrong name is resolved.)
    for old in ("cuCtxPushCurrent", "cuCtxPopCurrent", "cuDevicePrimaryCtxRelease"):
        assert old not in _cuda_driver.SIGNATURES
        assert old + "_v2" in _cuda_driver.SIGNATURES


def test_cuinit_called_once(fake):
    ptr = fake.alloc(PAGE)
    pd = FakePD()
    for _ in range(3):
        cuda.register_tensor(pd, CudaArray(ptr, (PAGE,)), ACCESS)
    assert fake.init_calls() == 1


def test_import_does_not_load_libcuda_or_torch(fake_path):
    code = (
        "import sys, ibverbs, ibverbs.cuda\n"
        "maps = open('/proc/self/maps').read()\n"
        "assert 'libcuda' not in maps, 'libcuda mapped at import'\n"
        "assert 'torch' not in sys.modules\n"
        "ibverbs._cuda_driver.driver()\n"
        "assert 'libcuda' in open('/proc/self/maps').read()\n"
    )
    env = dict(os.environ, IBVERBS_LIBCUDA=fake_path)
    proc = run_python(code, env)
    assert proc.returncode == 0, proc.stdout


# --------------------------------------------------------------------------
# Fallback to peer memory, and the errors when nothing works
# --------------------------------------------------------------------------


@pytest.mark.parametrize("module", cuda._PEERMEM_PATHS)
@pytest.mark.parametrize("err", [errno.EOPNOTSUPP, errno.EPROTONOSUPPORT])
def test_fallback_when_the_nic_refuses_dmabuf(fake, peermem, module, err):
    peermem(module)
    ptr = fake.alloc(1000, misalign=10)
    pd = FakePD(dmabuf_error=verbs_error(err, "ibv_reg_dmabuf_mr"))
    t = CudaArray(ptr, (1000,))
    gmr = cuda.register_tensor(pd, t, ACCESS)
    assert pd.names() == ["reg_dmabuf_mr", "reg_mr"]
    assert pd.calls[1][1] == {"addr": ptr, "length": 1000, "access": ACCESS, "owner": t}
    assert gmr.path == "peermem"
    assert gmr.addr == ptr and gmr.lkey == 0x3333 and gmr.rkey == 0x4444
    assert fake.open_exports() == 0


@pytest.mark.parametrize("code", [801, 1], ids=["NOT_SUPPORTED", "INVALID_VALUE"])
def test_fallback_when_the_driver_refuses_the_export(fake, peermem, code):
    peermem()
    fake.set_export_error(code)
    ptr = fake.alloc(PAGE)
    pd = FakePD()
    gmr = cuda.register_tensor(pd, CudaArray(ptr, (PAGE,)), ACCESS)
    assert pd.names() == ["reg_mr"]
    assert gmr.path == "peermem"


def test_fallback_when_the_driver_lacks_the_export(fake_nodmabuf, peermem):
    peermem("module/nv_peer_mem")
    ptr = fake_nodmabuf.alloc(PAGE)
    pd = FakePD()
    gmr = cuda.register_tensor(pd, CudaArray(ptr, (PAGE,)), ACCESS)
    assert pd.names() == ["reg_mr"]
    assert gmr.path == "peermem"


def test_error_names_both_paths_when_nothing_works(fake):
    # No peer-memory module: reg_mr is still tried (as the published
    # package does); its failure is explained by the missing module.
    pd, reg_err = both_paths_failing()
    e = register_refused(pd, fake.alloc(PAGE))
    assert isinstance(e, ib.VerbsError) and isinstance(e, OSError)
    assert e.errno == errno.EFAULT
    assert e.operation == "register_tensor"
    assert [path for path, _ in e.attempts] == ["dma-buf", "peer memory"]
    text = str(e)
    assert "dma-buf" in text and "ibv_reg_dmabuf_mr" in text
    assert "peer memory" in text and "nvidia_peermem" in text and "ibv_reg_mr" in text
    assert os.environ["IBVERBS_SYSFS_ROOT"] in text
    assert pd.names() == ["reg_dmabuf_mr", "reg_mr"]
    assert e.__cause__ is reg_err


def no_reg_mr():
    return FakePD(reg_mr_error=verbs_error(errno.EFAULT, "ibv_reg_mr"))


def both_paths_failing():
    """A FakePD whose reg_dmabuf_mr and reg_mr fail; and reg_mr's error."""
    reg_err = verbs_error(errno.EFAULT, "ibv_reg_mr")
    dmabuf_err = verbs_error(errno.EOPNOTSUPP, "ibv_reg_dmabuf_mr")
    return FakePD(dmabuf_error=dmabuf_err, reg_mr_error=reg_err), reg_err


def register_refused(pd, ptr):
    """register_tensor of PAGE bytes at ptr raises GpuDirectError: the error."""
    with pytest.raises(GpuDirectError) as info:
        cuda.register_tensor(pd, CudaArray(ptr, (PAGE,)), ACCESS)
    return info.value


def test_error_when_the_export_is_refused_and_no_peermem(fake):
    fake.set_export_error(1)
    e = register_refused(no_reg_mr(), fake.alloc(PAGE))
    text = str(e)
    assert "cuMemGetHandleForAddressRange" in text
    assert "CUDA_ERROR_INVALID_VALUE" in text
    assert "expandable_segments" in text


def test_error_uses_the_driver_text(fake):
    fake.set_export_error(801)
    e = register_refused(no_reg_mr(), fake.alloc(PAGE))
    assert "CUDA_ERROR_NOT_SUPPORTED (801): operation not supported (fake)" in str(e)
    assert "801" in e.attempts[0][1]


def test_error_when_the_driver_lacks_the_export(fake_nodmabuf):
    e = register_refused(no_reg_mr(), fake_nodmabuf.alloc(PAGE))
    assert "does not export cuMemGetHandleForAddressRange" in str(e)
    assert "CUDA 11.7" in str(e)
    assert "supports CUDA 12.4" in str(e)  # cuDriverGetVersion


def test_error_when_peermem_registration_fails(fake, peermem):
    path = peermem()
    pd, reg_err = both_paths_failing()
    e = register_refused(pd, fake.alloc(PAGE))
    assert e.errno == errno.EFAULT
    assert e.__cause__ is reg_err
    assert path in str(e) and "ibv_reg_mr" in str(e) and "ibv_reg_dmabuf_mr" in str(e)
    assert len(e.attempts) == 2


def test_other_dmabuf_errors_fall_back_too(fake, peermem):
    # As in the published package: any OSError of reg_dmabuf_mr, not only
    # "no dma-buf support", sends the registration to reg_mr.
    peermem()
    ptr = fake.alloc(PAGE)
    err = verbs_error(errno.EINVAL, "ibv_reg_dmabuf_mr")
    pd = FakePD(dmabuf_error=err)
    gmr = cuda.register_tensor(pd, CudaArray(ptr, (PAGE,)), ACCESS)
    assert pd.names() == ["reg_dmabuf_mr", "reg_mr"]
    assert gmr.path == "peermem"
    assert fake.open_exports() == 0


def test_any_export_error_falls_back_to_reg_mr(fake):
    # As in the published package: whatever the export raises, reg_mr is
    # tried (with or without a peer-memory module).
    fake.set_export_error(999)
    ptr = fake.alloc(PAGE)
    pd = FakePD()
    gmr = cuda.register_tensor(pd, CudaArray(ptr, (PAGE,)), ACCESS)
    assert pd.names() == ["reg_mr"] and gmr.path == "peermem"
    with pytest.raises(GpuDirectError, match="CUDA_ERROR_UNKNOWN"):
        cuda.register_tensor(no_reg_mr(), CudaArray(ptr, (PAGE,)), ACCESS)


# --------------------------------------------------------------------------
# Driver errors
# --------------------------------------------------------------------------


def test_stub_library(fake):
    fake.set_mode(fake.MODE_STUB)
    with pytest.raises(CudaError) as info:
        cuda.synchronize()
    e = info.value
    assert isinstance(e, RuntimeError)
    assert e.code == 34 and e.name == "CUDA_ERROR_STUB_LIBRARY"
    assert e.operation == "cuInit"
    assert "CUDA driver is a stub library" in str(e)
    assert fake.path in str(e)
    # register_tensor does not stop there: reg_mr is tried, and
    # when it fails too, the driver's answer is one of the two reasons.
    with pytest.raises(GpuDirectError) as info:
        cuda.register_tensor(no_reg_mr(), CudaArray(0x10000, (8,)), ACCESS)
    assert "CUDA_ERROR_STUB_LIBRARY" in str(info.value) and fake.path in str(info.value)
    gmr = cuda.register_tensor(FakePD(), CudaArray(0x10000, (8,)), ACCESS)
    assert gmr.path == "peermem" and gmr.device is None


def test_stub_library_after_init(fake):
    ptr = fake.alloc(PAGE)
    cuda.register_tensor(FakePD(), CudaArray(ptr, (PAGE,)), ACCESS)
    fake.set_mode(fake.MODE_STUB)
    with pytest.raises(GpuDirectError, match="CUDA_ERROR_STUB_LIBRARY"):
        cuda.register_tensor(no_reg_mr(), CudaArray(ptr, (PAGE,)), ACCESS)
    pd = FakePD()
    assert cuda.register_tensor(pd, CudaArray(ptr, (PAGE,)), ACCESS).path == "peermem"
    assert pd.names() == ["reg_mr"]


def test_no_device(fake):
    fake.set_mode(fake.MODE_NO_DEVICE)
    with pytest.raises(CudaError) as info:
        cuda.flush_gpudirect_writes()
    e = info.value
    assert e.code == 100 and e.name == "CUDA_ERROR_NO_DEVICE"
    assert "no CUDA-capable device is detected" in str(e)
    # not cached: once the driver works, the next call initialises it
    fake.set_mode(fake.MODE_NORMAL)
    fake.set_current(0)
    assert cuda.flush_gpudirect_writes() is False


def test_missing_libcuda(monkeypatch, tmp_path):
    missing = str(tmp_path / "libcuda.so.1")
    monkeypatch.setenv("IBVERBS_LIBCUDA", missing)
    _cuda_driver.forget_driver()
    try:
        with pytest.raises(CudaError) as info:
            cuda.flush_gpudirect_writes()
        assert info.value.code is None
        assert missing in str(info.value)
        # No driver: register_tensor falls back to reg_mr ...
        pd = FakePD()
        assert cuda.register_tensor(pd, CudaArray(0x10000, (8,)), ACCESS).path == "peermem"
        assert pd.names() == ["reg_mr"]
        # ... and names the missing library when that fails too.
        with pytest.raises(GpuDirectError, match=re.escape(missing)):
            cuda.register_tensor(no_reg_mr(), CudaArray(0x10000, (8,)), ACCESS)
    finally:
        _cuda_driver.forget_driver()


def test_errors_pickle():
    e = CudaError(34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library", "cuInit")
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.code, e2.name, e2.operation, str(e2)) == (e.code, e.name, e.operation, str(e))
    g = GpuDirectError(errno.EOPNOTSUPP, "nothing worked", attempts=[("dma-buf", "x")])
    g2 = pickle.loads(pickle.dumps(g))
    assert (g2.errno, g2.operation, g2.attempts, str(g2)) == (
        g.errno,
        g.operation,
        g.attempts,
        str(g),
    )


# --------------------------------------------------------------------------
# GpuMR
# --------------------------------------------------------------------------


def test_gpumr_attributes(fake):
    ptr = fake.alloc(1000, misalign=24)
    t = CudaArray(ptr, (250,), "<f4")
    mr_pd = FakePD()
    gmr = cuda.register_tensor(mr_pd, t, ACCESS)
    assert isinstance(gmr, GpuMR)
    assert gmr.addr == ptr  # the iova, not ibv_mr.addr (the offset)
    assert gmr.mr.addr == 24 % PAGE
    assert gmr.length == 1000
    assert (gmr.lkey, gmr.rkey) == (0x1111, 0x2222)
    assert gmr.tensor is t and gmr.device == 0 and gmr.path == "dmabuf"
    assert not gmr.closed
    assert "dmabuf" in repr(gmr) and hex(ptr) in repr(gmr)


def sge_fields(sge):
    return sge.addr, sge.length, sge.lkey


def test_gpumr_sge(fake):
    ptr = fake.alloc(1000, misalign=24)
    gmr = cuda.register_tensor(FakePD(), CudaArray(ptr, (1000,)), ACCESS)
    assert sge_fields(gmr.sge()) == (ptr, 1000, 0x1111)
    assert sge_fields(gmr.sge(100)) == (ptr, 100, 0x1111)
    assert sge_fields(gmr.sge(offset=200)) == (ptr + 200, 800, 0x1111)
    assert sge_fields(gmr.sge(300, offset=700)) == (ptr + 700, 300, 0x1111)
    with pytest.raises(ValueError, match="exceeds"):
        gmr.sge(301, offset=700)
    with pytest.raises(ValueError, match="exceeds"):
        gmr.sge(1001)
    with pytest.raises(ValueError):
        gmr.sge(offset=1001)
    with pytest.raises(ValueError):
        gmr.sge(offset=-1)
    with pytest.raises(ValueError):
        gmr.sge(-1)
    with pytest.raises(TypeError):
        gmr.sge(1.5)


def test_gpumr_sge_over_4gib(fake):
    n = 2**32 + PAGE
    ptr = fake.alloc(n)  # reserved, never touched
    gmr = cuda.register_tensor(FakePD(), CudaArray(ptr, (n,)), ACCESS)
    assert gmr.length == n
    with pytest.raises(ValueError, match="split"):
        gmr.sge()
    with pytest.raises(ValueError, match="split"):
        gmr.sge(2**32)
    assert sge_fields(gmr.sge(2**32 - 1)) == (ptr, 2**32 - 1, 0x1111)
    assert sge_fields(gmr.sge(offset=2**32)) == (ptr + 2**32, PAGE, 0x1111)


def test_gpumr_close_releases_the_tensor(fake):
    ptr = fake.alloc(PAGE)
    t = CudaArray(ptr, (PAGE,))
    ref = weakref.ref(t)
    gmr = cuda.register_tensor(FakePD(), t, ACCESS)
    mr = gmr.mr
    del t
    gc.collect()
    assert ref() is not None  # retained
    gmr.close()
    assert mr.closed and gmr.closed and gmr.tensor is None
    gc.collect()
    assert ref() is None
    gmr.close()  # idempotent
    assert gmr.addr == ptr and gmr.length == PAGE
    for use in (lambda: gmr.lkey, lambda: gmr.rkey, gmr.sge):
        with pytest.raises(ib.VerbsError) as info:
            use()
        assert info.value.errno == errno.EBADF
    assert "closed" in repr(gmr)


def test_gpumr_context_manager(fake):
    ptr = fake.alloc(PAGE)
    with cuda.register_tensor(FakePD(), CudaArray(ptr, (PAGE,)), ACCESS) as gmr:
        assert not gmr.closed
    assert gmr.closed and gmr.mr.closed and gmr.tensor is None


def test_gpumr_close_failure_keeps_the_tensor(fake):
    ptr = fake.alloc(PAGE)
    t = CudaArray(ptr, (PAGE,))
    gmr = cuda.register_tensor(FakePD(), t, ACCESS)
    gmr.mr.close_error = verbs_error(errno.EBUSY, "ibv_dereg_mr")
    with pytest.raises(ib.VerbsError):
        gmr.close()
    assert not gmr.closed and gmr.tensor is t
    gmr.mr.close_error = None
    gmr.close()
    assert gmr.closed


def test_gpumr_dropped_without_close_releases_everything(fake):
    ptr = fake.alloc(PAGE)
    t = CudaArray(ptr, (PAGE,))
    tref = weakref.ref(t)
    gmr = cuda.register_tensor(FakePD(), t, ACCESS)
    gref = weakref.ref(gmr)
    del t, gmr
    gc.collect()
    assert gref() is None and tref() is None


# --------------------------------------------------------------------------
# flush_gpudirect_writes
# --------------------------------------------------------------------------


def test_flush_needs_a_current_context(fake):
    with pytest.raises(CudaError) as info:
        cuda.flush_gpudirect_writes()
    assert info.value.code == 201
    assert "no current CUDA context" in str(info.value)
    assert fake.flush_calls() == 0


FLUSH_CASES = {
    # (writes ordering, flush options) -> flushed?
    "none-ordering-host-flush": (0, 1, True),
    "none-ordering-host-and-memops": (0, 3, True),
    "none-ordering-memops-only": (0, 2, False),
    "none-ordering-no-flush": (0, 0, False),
    "owner-ordering": (100, 3, False),
    "all-devices-ordering": (200, 3, False),
}


@pytest.mark.parametrize("ordering,options,flushed", FLUSH_CASES.values(), ids=FLUSH_CASES.keys())
def test_flush_decision(fake, ordering, options, flushed):
    fake.set_current(0)
    fake.set_gpudirect(0, ordering, options)
    assert cuda.flush_gpudirect_writes() is flushed
    assert fake.flush_calls() == int(flushed)
    if flushed:
        # CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX, ..._TO_OWNER
        assert fake.last_flush() == (0, 100, 0)


def test_flush_reads_the_current_device(fake):
    fake.set_gpudirect(0, 100, 3)
    fake.set_gpudirect(1, 0, 1)
    fake.set_current(1)
    assert cuda.flush_gpudirect_writes() is True
    assert fake.last_flush() == (0, 100, 1)
    fake.set_current(0)
    assert cuda.flush_gpudirect_writes() is False


def test_flush_error(fake):
    fake.set_current(0)
    fake.set_gpudirect(0, 0, 1)
    fake.set_flush_error(999)
    with pytest.raises(CudaError) as info:
        cuda.flush_gpudirect_writes()
    assert info.value.code == 999
    assert info.value.operation == "cuFlushGPUDirectRDMAWrites"


# --------------------------------------------------------------------------
# The constants and entry-point names, against a real cuda.h when one exists
# --------------------------------------------------------------------------


def _find_cuda_h():
    import glob

    roots = [
        os.environ.get("CUDA_HOME"),
        os.environ.get("CUDA_PATH"),
        "/usr/local/cuda",
        *sorted(glob.glob("/usr/local/cuda-*")),
        "/usr",
    ]
    for root in roots:
        if root:
            for rel in (
                "include/cuda.h",
                "targets/x86_64-linux/include/cuda.h",
                "targets/sbsa-linux/include/cuda.h",
            ):
                path = os.path.join(root, rel)
                if os.path.exists(path) and "cuCtxGetCurrent" in Path(path).read_text():
                    return path
    return None


@pytest.fixture(scope="module")
def cuda_h():
    path = _find_cuda_h()
    if path is None:
        pytest.skip("no CUDA toolkit header (cuda.h) on this host; set CUDA_HOME")
    return Path(path).read_text()


def test_constants_match_cuda_h(cuda_h):
    import re

    names = {
        n: v
        for n, v in vars(_cuda_driver).items()
        if n.startswith(("CU_", "CUDA_ERROR_")) and isinstance(v, int)
    }
    assert len(names) > 10
    for name, value in names.items():
        m = re.search(rf"\b{name}\s*=\s*([0-9xXa-fA-F<\s]+?)\s*[,}}/\n]", cuda_h)
        assert m, f"{name} is not in cuda.h"
        text = m.group(1).replace(" ", "")
        parts = text.split("<<")
        header_value = int(parts[0], 0) << (int(parts[1], 0) if len(parts) > 1 else 0)
        assert value == header_value, f"{name}: {value} != cuda.h's {text}"
    for code, (name, _) in _cuda_driver.FALLBACK_ERRORS.items():
        assert re.search(rf"\b{name}\s*=\s*{code}\b", cuda_h), name


def test_entry_point_names_match_cuda_h(cuda_h):
    import re

    remaps = dict(re.findall(r"#define\s+(cu\w+)\s+(cu\w+_v\d+)\b", cuda_h))
    for name in _cuda_driver.SIGNATURES:
        assert name not in remaps, f"{name} is remapped by cuda.h to {remaps[name]}"
        if re.search(r"_v\d+$", name):
            assert name in remaps.values(), f"cuda.h maps nothing to {name}"
            api = next(k for k, v in remaps.items() if v == name)
        else:
            api = name
        assert re.search(rf"CUresult CUDAAPI {api}\(", cuda_h), f"{api} not in cuda.h"
