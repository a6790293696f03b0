"""GPUDirect's CUDA half against a CUDA driver, with no RDMA device.

What ``tools/gpu-check --run`` runs on a lent GPU machine (marker
``gpu_driver``).  Each check runs twice, on two backends:

``real``
    the NVIDIA driver (libcuda.so.1) and torch's CUDA memory; skips with
    "no CUDA driver" where libcuda.so.1 cannot be loaded, or says what else
    is missing (torch, a GPU, a second GPU).
``fake``
    tests/fakes/fakecuda.c, the fake libcuda, over host memory: the same
    logic on any host (its "dma-buf" is a memfd); skips only without a C
    compiler.

Covered: ``import ibverbs`` with the libibverbs that the check carries and
an empty device list; ``cuda.dmabuf_fd`` on memory inside one of torch's
mappings (``expandable_segments:True``) and on a range spanning several,
with what the driver answers for that; the fd is a dma-buf of the right
size and is closed after use; memory of torch's plain caching allocator
(in a subprocess: torch reads PYTORCH_CUDA_ALLOC_CONF once, at CUDA start)
gives the documented error, never a crash; the pointer attributes that
``register_tensor`` reads and the device attributes that
``flush_gpudirect_writes`` reads, on device 0 and on another GPU where there
is one; ``flush_gpudirect_writes()`` and ``synchronize()`` in the tensor's
context; ``register_tensor`` on a PD whose ``reg_dmabuf_mr`` records its
arguments gets a live dma-buf fd and the offset/length/iova it should.

What the driver answered is collected in a findings dict, written as JSON
to $IBVERBS_GPU_REPORT when that is set (tools/gpu-check sets it).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import textwrap
import threading
from pathlib import Path

import pytest
from support.fakes import load_fake_module
from support.process import run_python

import ibverbs as ib
import ibverbs._cuda_driver as _cuda_driver
import ibverbs.cuda as cuda

pytestmark = pytest.mark.gpu_driver

PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20
UNDER_CHECK = os.environ.get("IBVERBS_GPU_CHECK") == "1"
ACCESS = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE | ib.AccessFlags.REMOTE_READ

CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_NOT_SUPPORTED = 801
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11
CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12
CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE = 1, 2
ATTR_GPUDIRECT_RDMA_SUPPORTED = 116
ATTR_FLUSH_WRITES_OPTIONS = 117
ATTR_WRITES_ORDERING = 118
ATTR_DMA_BUF_SUPPORTED = 124


# --------------------------------------------------------------------------
# Findings: what the driver answered, for the report
# --------------------------------------------------------------------------

_findings: dict = {}


@pytest.fixture(scope="session")
def findings():
    yield _findings
    path = os.environ.get("IBVERBS_GPU_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(_findings, f, indent=2, sort_keys=True, default=str)
            f.write("\n")


def note(findings, backend, key, value):
    findings.setdefault(backend.name, {})[key] = value


# --------------------------------------------------------------------------
# The public helpers (the compatibility contract), or their internal twins
# --------------------------------------------------------------------------


def dmabuf_fd(ptr, length):
    """``cuda.dmabuf_fd(ptr, length)`` (a page-aligned device range, the
    caller closes the fd); where that is not there yet, ``_export_dmabuf``
    on the same range, which then must not widen it."""
    public = getattr(cuda, "dmabuf_fd", None)
    if public is not None:
        return public(ptr, length)
    fd, start, n = cuda._export_dmabuf(ptr, length)
    if (start, n) != (ptr, length):
        os.close(fd)
        raise AssertionError(f"_export_dmabuf widened [{ptr:#x}, +{length}) to [{start:#x}, +{n})")
    return fd


def tensor_ptr_len(tensor):
    public = getattr(cuda, "tensor_ptr_len", None)
    if public is not None:
        return tuple(public(tensor))
    ptr, n, _ = cuda._tensor_range(tensor)
    return ptr, n


def aligned(ptr, n):
    start = ptr - ptr % PAGE
    end = -(-(ptr + n) // PAGE) * PAGE
    return start, end - start


# --------------------------------------------------------------------------
# File descriptors
# --------------------------------------------------------------------------


def fd_identity(fd):
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def open_fds_of(identity):
    """The fds of this process that refer to the file ``identity``."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.stat(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == identity:
            found.append(int(name))
    return found


def describe_fd(fd):
    """readlink and /proc/self/fdinfo of fd: what kind of file it is."""
    link = os.readlink(f"/proc/self/fd/{fd}")
    with open(f"/proc/self/fdinfo/{fd}") as f:
        info = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in f if ":" in line)}
    return link, info


# --------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------


class Device:
    def __init__(self, index):
        self.type, self.index = "cuda", index

    def __str__(self):
        return f"cuda:{self.index}"


class FakeTensor:
    """The parts of a torch CUDA tensor that ibverbs.cuda reads."""

    is_cuda = True

    def __init__(self, ptr, nbytes, device):
        self._ptr, self.nbytes, self.device = ptr, nbytes, Device(device)

    def data_ptr(self):
        return self._ptr

    def is_contiguous(self):
        return True

    def element_size(self):
        return 1

    def numel(self):
        return self.nbytes


class RealBackend:
    """libcuda.so.1 and torch."""

    name = "real"

    @staticmethod
    def is_dmabuf(link):
        # "/dmabuf:<name>" since Linux 5.3; "anon_inode:dmabuf" before
        return link.startswith("/dmabuf:") or link == "anon_inode:dmabuf"

    def __init__(self, torch):
        self.torch = torch
        self.device_count = torch.cuda.device_count()
        self._keep = []

    def alloc(self, nbytes, device=0, offset=0):
        """A tensor of nbytes that starts offset bytes into a fresh one."""
        base = self.torch.full(
            (nbytes + offset,), 7, dtype=self.torch.uint8, device=f"cuda:{device}"
        )
        self._keep.append(base)
        return base[offset:]

    def expandable(self, ptr):
        """Whether torch's segment holding ptr is an expandable one (None
        when its memory snapshot does not say)."""
        for seg in self.torch.cuda.memory_snapshot():
            base = seg.get("address", 0)
            if base <= ptr < base + seg.get("total_size", 0):
                return seg.get("is_expandable")
        return None

    def alloc_host(self, nbytes):
        t = self.torch.empty(nbytes, dtype=self.torch.uint8, pin_memory=True)
        self._keep.append(t)
        return t.data_ptr()

    @contextlib.contextmanager
    def current(self, device):
        """Device's primary context current on this thread, as torch has it."""
        with self.torch.cuda.device(device):
            self.torch.empty(1, device=f"cuda:{device}")
            yield

    def busy(self, device):
        """Queue about 50 ms of GPU work on device's current stream; return
        an event recorded after it."""
        self.torch.cuda._sleep(100_000_000)
        ev = self.torch.cuda.Event()
        ev.record()
        return ev

    def close(self):
        self._keep.clear()
        self.torch.cuda.synchronize()


class FakeBackend:
    """tests/fakes/fakecuda.c through IBVERBS_LIBCUDA."""

    name = "fake"

    @staticmethod
    def is_dmabuf(link):
        return link == "/memfd:fakecuda-dmabuf (deleted)"  # the fake's stand-in

    device_count = 2

    def __init__(self, fake):
        self.fake = fake
        self._ptrs = []

    def alloc(self, nbytes, device=0, offset=0):
        # misalign: the tensor starts `offset` bytes into a page-aligned mapping
        ptr = self.fake.alloc(nbytes, device, offset)
        self._ptrs.append(ptr)
        return FakeTensor(ptr, nbytes, device)

    def alloc_host(self, nbytes):
        ptr = self.fake.alloc_host(nbytes, 0)
        self._ptrs.append(ptr)
        return ptr

    @contextlib.contextmanager
    def current(self, device):
        before = self.fake.current_device()
        self.fake.set_current(device)
        try:
            yield
        finally:
            self.fake.set_current(before)

    def busy(self, device):
        return None

    def close(self):
        for p in self._ptrs:
            self.fake.free(p)
        self._ptrs.clear()
        self.fake.reset()


@pytest.fixture(scope="session")
def fake_libcuda(tmp_path_factory):
    build = load_fake_module("build")
    if build.compiler() is None:
        pytest.skip("no C compiler (cc/gcc/clang or $CC) to build the fake libcuda")
    path = build.build_fakecuda(tmp_path_factory.mktemp("fakecuda"))
    return build, path


@pytest.fixture(scope="session")
def real_torch(request):
    """torch with CUDA (conftest's torch fixture) on a machine whose NVIDIA
    driver loads."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        pytest.skip(f"no CUDA driver (libcuda.so.1 cannot be loaded: {e})")
    return request.getfixturevalue("torch")


@pytest.fixture(params=["fake", "real"])
def backend(request, monkeypatch, tmp_path, findings):
    # An empty sysfs: no peer-memory module, so a failed dma-buf export is
    # the error itself, not a fallback to reg_mr.
    (tmp_path / "sys").mkdir()
    monkeypatch.setenv("IBVERBS_SYSFS_ROOT", str(tmp_path / "sys"))
    if request.param == "fake":
        build, path = request.getfixturevalue("fake_libcuda")
        monkeypatch.setenv("IBVERBS_LIBCUDA", path)
        fake = build.FakeCuda(path)
        fake.reset()
        b = FakeBackend(fake)
    else:
        torch = request.getfixturevalue("real_torch")
        monkeypatch.delenv("IBVERBS_LIBCUDA", raising=False)
        b = RealBackend(torch)
    _cuda_driver.forget_driver()
    try:
        yield b
    finally:
        b.close()
        _cuda_driver.forget_driver()


def need_device(backend, device):
    if device >= backend.device_count:
        pytest.skip(f"no GPU {device}: the {backend.name} driver has {backend.device_count}")


def driver_lib():
    return _cuda_driver.driver().lib


def pointer_attribute(ptr, attr, ctype):
    value = ctype()
    rc = driver_lib().cuPointerGetAttribute(ctypes.byref(value), attr, ctypes.c_uint64(ptr))
    return rc, value.value


def device_attribute(attr, device):
    value = ctypes.c_int()
    rc = driver_lib().cuDeviceGetAttribute(ctypes.byref(value), attr, device)
    return value.value if rc == 0 else f"error {rc}"


def mapping_of(ptr):
    """(start, size) of the driver's allocation (mapping) holding ptr, or
    None when the driver does not say (then the findings show the code)."""
    rc1, start = pointer_attribute(ptr, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ctypes.c_uint64)
    rc2, size = pointer_attribute(ptr, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ctypes.c_size_t)
    if rc1 or rc2 or size == 0:
        _findings.setdefault("range_attribute_errors", []).append([ptr, rc1, rc2])
        return None
    return start, size


def export_outcome(backend, start, length, device=0):
    """Export [start, +length) with device's context current, as a caller
    of dmabuf_fd has it, and check what comes back: ("ok", (link, fdinfo))
    with the fd closed again, or ("error", CudaError)."""
    try:
        with backend.current(device):
            fd = dmabuf_fd(start, length)
    except cuda.CudaError as e:
        return "error", e
    try:
        ident = fd_identity(fd)
        link, info = describe_fd(fd)
        assert backend.is_dmabuf(link), f"fd {fd} is {link!r}, not a dma-buf"
        if backend.name == "real":
            assert int(info["size"]) == length, info
            assert "exp_name" in info, info  # dma-buf fields in fdinfo
        else:
            assert os.fstat(fd).st_size == length
    finally:
        os.close(fd)
    assert open_fds_of(ident) == [], "the exported dma-buf is still open"
    return "ok", (link, info)


def skip_if_no_dmabuf(e):
    if e.code is None or e.code == CUDA_ERROR_NOT_SUPPORTED:
        pytest.skip(f"this CUDA driver cannot export dma-bufs: {e}")


# --------------------------------------------------------------------------
# import ibverbs with the carried libibverbs
# --------------------------------------------------------------------------


def test_import_with_carried_libibverbs(findings):
    path = Path(ib.library_path)
    assert path.is_file(), ib.library_path
    devices = ib.get_device_list()
    assert isinstance(devices, list)
    findings["ibverbs"] = {
        "file": ib.__file__,
        "library_path": ib.library_path,
        "library_version": ib.library_version,
        "devices": [d.name for d in devices],
    }
    if not UNDER_CHECK:
        return
    # Under tools/gpu-check: the wheel and the carried rdma-core, nothing else.
    prefix = Path(os.environ["IBVERBS_GPU_CHECK_PREFIX"]).resolve()
    target = Path(os.environ["IBVERBS_GPU_CHECK_TARGET"]).resolve()
    assert prefix in path.resolve().parents, (path, prefix)
    assert target in Path(ib.__file__).resolve().parents, (ib.__file__, target)
    assert devices == [], "the GPU machine has no RDMA device, yet devices are listed"
    # libibverbs' own dependencies (libnl) come from the carried packages too
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if ".so" in line.split()[-1]}
    for name in ("libibverbs.so", "libnl-3.so", "libnl-route-3.so"):
        paths = [p for p in libs if Path(p).name.startswith(name)]
        assert paths, f"{name} is not mapped"
        assert all(prefix in Path(p).resolve().parents for p in paths), paths
    findings["ibverbs"]["mapped"] = sorted(p for p in libs if "/prefix/" in p)


# --------------------------------------------------------------------------
# dmabuf_fd: inside one mapping, across several
# --------------------------------------------------------------------------

# (offset of the tensor in its allocation, its size)
ONE_MAPPING = {
    "aligned-4-pages": (0, 4 * PAGE),
    "one-byte": (0, 1),
    "inside-a-page": (100, 200),
    "crossing-a-page": (PAGE - 10, 20),
    "unaligned-1MiB": (3, MiB + 17),
}


@pytest.mark.parametrize("offset,n", ONE_MAPPING.values(), ids=ONE_MAPPING.keys())
def test_dmabuf_fd_inside_one_mapping(backend, findings, offset, n):
    # torch may place a block across two of its mappings: take another
    for _ in range(8):
        t = backend.alloc(n, offset=offset)
        ptr, length = tensor_ptr_len(t)
        assert length == n
        start, alen = aligned(ptr, n)
        mapping = mapping_of(ptr)
        assert mapping is not None, "the driver does not report the mapping of device memory"
        mstart, msize = mapping
        if mstart <= start and start + alen <= mstart + msize:
            break
    else:
        raise AssertionError(f"8 tensors of {n} bytes, none inside one mapping")
    if backend.name == "real":
        expandable = backend.expandable(ptr)
        assert expandable is not False, (
            "torch placed the tensor in a plain segment: PYTORCH_CUDA_ALLOC_CONF="
            f"{os.environ.get('PYTORCH_CUDA_ALLOC_CONF')!r} was not in force when CUDA started"
        )
    kind, what = export_outcome(backend, start, alen)
    if kind == "error":
        skip_if_no_dmabuf(what)
        raise what
    note(
        findings,
        backend,
        "one_mapping_export",
        {
            "link": what[0],
            "fdinfo": what[1],
            "mapping_bytes": msize,
            "expandable": backend.expandable(ptr) if backend.name == "real" else None,
        },
    )


def test_dmabuf_fd_refuses_an_unaligned_range(backend):
    t = backend.alloc(2 * PAGE, offset=0)
    ptr, _ = tensor_ptr_len(t)
    if getattr(cuda, "dmabuf_fd", None) is None:
        pytest.skip("cuda.dmabuf_fd is not there yet (the driver module lacks it)")
    with pytest.raises(ValueError, match="page-aligned"):
        cuda.dmabuf_fd(ptr + 1, PAGE)
    with pytest.raises(ValueError, match="positive and page-aligned"):
        cuda.dmabuf_fd(ptr, PAGE + 1)


def test_dmabuf_fd_across_several_mappings(backend, findings):
    """A range over more than one of the driver's allocations: torch's
    expandable segments map 20 MiB pieces of physical memory into one
    reserved range, so a 64 MiB tensor spans several.  The driver may
    export it or refuse it; either way it says so cleanly, and
    register_tensor agrees with it."""
    n = 64 * MiB
    t = backend.alloc(n)
    ptr, _ = tensor_ptr_len(t)
    mapping = mapping_of(ptr)
    assert mapping is not None, "the driver does not report the mapping of device memory"
    mstart, msize = mapping
    if backend.name == "fake":
        # one fake allocation: run the range 4 pages past its end
        start, alen = aligned(mstart, msize + 4 * PAGE)
    else:
        start, alen = aligned(ptr, n)
    spans = mstart + msize < start + alen
    answer = {"range": [start, alen], "first_mapping": [mstart, msize], "spans_several": spans}
    if backend.name == "real":
        answer["alloc_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
        answer["expandable"] = backend.expandable(ptr)
        mappings, p = [], start
        while p < start + alen and len(mappings) < 64:
            m = mapping_of(p)
            if m is None:
                mappings.append([p, None])
                break
            mappings.append(list(m))
            p = m[0] + m[1]
        answer["mappings"] = mappings
    kind, what = export_outcome(backend, start, alen)
    if kind == "ok":
        answer["export"] = {"link": what[0], "fdinfo": what[1]}
    else:
        answer["export"] = {"code": what.code, "name": what.name, "error": str(what)}
    note(findings, backend, "several_mappings", answer)
    if not spans:
        pytest.skip(
            f"the driver reports one mapping of {msize} bytes for the "
            f"whole {n}-byte tensor: nothing spans several"
        )
    if kind == "error":
        skip_if_no_dmabuf(what)
        assert what.code == CUDA_ERROR_INVALID_VALUE, what
        assert what.operation == "cuMemGetHandleForAddressRange"

    # register_tensor on the same memory says the same thing.
    if backend.name == "fake":
        t = FakeTensor(mstart, msize + 4 * PAGE, 0)
    pd = RecordingPD()
    if kind == "ok":
        gmr = cuda.register_tensor(pd, t, ACCESS)
        assert gmr.path == "dmabuf" and backend.is_dmabuf(pd.calls[0]["link"])
        gmr.close()
    else:
        with pytest.raises(cuda.GpuDirectError) as e:
            cuda.register_tensor(pd, t, ACCESS)
        assert "expandable_segments:True" in str(e.value)
        assert pd.calls == []
        # The published fallback: reg_mr(ptr, nbytes, access), positional.
        assert pd.fallbacks == [tensor_ptr_len(t) + (ACCESS,)]


# --------------------------------------------------------------------------
# torch's plain caching allocator (no expandable segments)
# --------------------------------------------------------------------------

PLAIN_ALLOCATOR_SCRIPT = textwrap.dedent(r"""
    import json, os, sys, warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch
    import ibverbs as ib
    import ibverbs.cuda as cuda

    page = os.sysconf("SC_PAGE_SIZE")
    out = {"alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF")}
    t = torch.full((4 << 20,), 7, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    try:
        out["segments"] = sorted({str(s.get("is_expandable"))
                                  for s in torch.cuda.memory_snapshot()})
    except Exception as e:
        out["segments"] = repr(e)
    ptr, n = t.data_ptr(), t.nbytes
    start = ptr - ptr % page
    length = -(-(ptr + n) // page) * page - start
    try:
        f = getattr(cuda, "dmabuf_fd", None)
        if f is not None:
            fd = f(start, length)
        else:
            fd, _, _ = cuda._export_dmabuf(start, length)
    except cuda.CudaError as e:
        out["export"] = {"code": e.code, "name": e.name, "error": str(e)}
    else:
        out["export"] = {"link": os.readlink(f"/proc/self/fd/{fd}")}
        os.close(fd)

    class PD:
        def reg_dmabuf_mr(self, offset, length, iova, fd, access, *, owner=None):
            out["registered"] = {"offset": offset, "length": length, "iova": iova,
                                 "link": os.readlink(f"/proc/self/fd/{fd}")}
            return None

    try:
        cuda.register_tensor(PD(), t, int(ib.AccessFlags.LOCAL_WRITE))
    except cuda.GpuDirectError as e:
        out["register"] = {"error": str(e), "type": "GpuDirectError"}
    except Exception as e:
        out["register"] = {"error": str(e), "type": type(e).__name__}
    print("RESULT " + json.dumps(out))
""")


def test_plain_caching_allocator_gives_the_documented_error(real_torch, findings, tmp_path):
    env = dict(os.environ)
    env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:False"
    env.pop("PYTORCH_ALLOC_CONF", None)  # torch >= 2.9 reads this one first
    env["IBVERBS_SYSFS_ROOT"] = str(tmp_path)  # no peer-memory fallback
    env.pop("IBVERBS_LIBCUDA", None)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(ib.__file__).parents[1]), env.get("PYTHONPATH")])
    )
    proc = run_python(PLAIN_ALLOCATOR_SCRIPT, env, timeout=240)
    # A signal (negative returncode) is the crash this test exists to catch.
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout[-3000:]}"
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    out = json.loads(line[len("RESULT ") :])
    findings.setdefault("real", {})["plain_caching_allocator"] = out
    export, register = out["export"], out.get("register")
    if "code" in export:
        if export["code"] is None or export["code"] == CUDA_ERROR_NOT_SUPPORTED:
            pytest.skip(f"this CUDA driver cannot export dma-bufs: {export['error']}")
        # The documented error: a CudaError from the export, and from
        # register_tensor a GpuDirectError that names the torch setting.
        assert export["code"] == CUDA_ERROR_INVALID_VALUE, export
        assert register is not None and register["type"] == "GpuDirectError", out
        assert "expandable_segments:True" in register["error"], out
    else:
        # The driver exports cudaMalloc'd memory too: then it is a dma-buf
        # and register_tensor hands it on.
        assert RealBackend.is_dmabuf(export["link"]), out
        assert register is None, out
        assert RealBackend.is_dmabuf(out["registered"]["link"]), out


# --------------------------------------------------------------------------
# The attributes register_tensor and flush_gpudirect_writes read
# --------------------------------------------------------------------------


@pytest.mark.parametrize("device", [0, 1], ids=["gpu0", "gpu1"])
def test_pointer_attributes_of_device_memory(backend, findings, device):
    need_device(backend, device)
    t = backend.alloc(3 * PAGE + 5, device=device, offset=11)
    ptr, _ = tensor_ptr_len(t)
    rc, memtype = pointer_attribute(ptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ctypes.c_uint)
    assert (rc, memtype) == (0, CU_MEMORYTYPE_DEVICE)
    rc, ordinal = pointer_attribute(ptr, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ctypes.c_int)
    assert (rc, ordinal) == (0, device)
    # and what register_tensor makes of them (last byte: same answer)
    drv = _cuda_driver.driver()
    assert cuda._device_ordinal(drv, ptr) == device
    assert cuda._device_ordinal(drv, ptr + 3 * PAGE + 4) == device
    note(
        findings,
        backend,
        f"gpu{device}_attributes",
        {
            "memory_type": memtype,
            "device_ordinal": ordinal,
            "gpudirect_rdma_supported": device_attribute(ATTR_GPUDIRECT_RDMA_SUPPORTED, device),
            "dma_buf_supported": device_attribute(ATTR_DMA_BUF_SUPPORTED, device),
            "flush_writes_options": device_attribute(ATTR_FLUSH_WRITES_OPTIONS, device),
            "writes_ordering": device_attribute(ATTR_WRITES_ORDERING, device),
        },
    )


def test_pointer_attributes_of_host_memory(backend, findings):
    pinned = backend.alloc_host(2 * PAGE)
    rc, memtype = pointer_attribute(pinned, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ctypes.c_uint)
    assert (rc, memtype) == (0, CU_MEMORYTYPE_HOST)
    drv = _cuda_driver.driver()
    with pytest.raises(ValueError, match="host memory") as e1:
        cuda._device_ordinal(drv, pinned)
    # pageable memory the driver never saw: "not CUDA memory", or host
    # memory where the driver tracks all of it (HMM)
    plain = ctypes.create_string_buffer(4 * PAGE)
    addr = ctypes.addressof(plain)
    rc, memtype = pointer_attribute(addr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ctypes.c_uint)
    with pytest.raises(ValueError, match="not CUDA memory|not device memory") as e2:
        cuda._device_ordinal(drv, addr)
    note(
        findings,
        backend,
        "host_memory",
        {"pinned": str(e1.value), "pageable": str(e2.value), "pageable_answer": [rc, memtype]},
    )


def test_register_tensor_refuses_pinned_host_memory(backend):
    ptr = backend.alloc_host(PAGE)
    pd = RecordingPD()
    # a tensor-like object that claims CUDA but holds pinned host memory
    with pytest.raises(ValueError, match="host memory"):
        cuda.register_tensor(pd, FakeTensor(ptr, PAGE, 0), ACCESS)
    assert pd.calls == []


# --------------------------------------------------------------------------
# flush_gpudirect_writes() and synchronize() in the tensor's context
# --------------------------------------------------------------------------


@pytest.mark.parametrize("device", [0, 1], ids=["gpu0", "gpu1"])
def test_flush_gpudirect_writes_in_the_tensors_context(backend, findings, device):
    need_device(backend, device)
    t = backend.alloc(PAGE, device=device)
    if backend.name == "fake":
        # a device that does not order NIC writes but offers the host flush
        backend.fake.set_gpudirect(device, 0, 1)
    drv = _cuda_driver.driver()
    with backend.current(t.device.index):
        assert _cuda_driver.current_device(drv) == device
        ordering = device_attribute(ATTR_WRITES_ORDERING, device)
        options = device_attribute(ATTR_FLUSH_WRITES_OPTIONS, device)
        flushed = cuda.flush_gpudirect_writes()
        assert _cuda_driver.current_device(drv) == device
    # its rule, from the two attributes it reads (the published package's
    # flush returns None: then only the fake shows whether it flushed)
    want = (
        isinstance(ordering, int)
        and ordering < 100
        and bool(isinstance(options, int) and options & 1)
    )
    assert flushed is want or flushed is None, (ordering, options, flushed)
    if backend.name == "fake":
        assert want and backend.fake.flush_calls() == 1
        assert backend.fake.last_flush() == (0, 100, device)
    note(
        findings,
        backend,
        f"gpu{device}_flush",
        {"writes_ordering": ordering, "flush_options": options, "flushed": flushed},
    )


def test_flush_without_a_context_is_a_cuda_error(backend):
    backend.alloc(PAGE)  # the driver is up on the main thread
    _cuda_driver.driver()
    if backend.name == "fake":
        backend.fake.set_current(-1)
    out = {}

    def run():  # a new thread has no current context
        try:
            out["result"] = cuda.flush_gpudirect_writes()
        except BaseException as e:  # checked below
            out["error"] = e

    th = threading.Thread(target=run)
    th.start()
    th.join()
    assert isinstance(out.get("error"), cuda.CudaError), out
    assert out["error"].code == CUDA_ERROR_INVALID_CONTEXT


@pytest.mark.parametrize("device", [0, 1], ids=["gpu0", "gpu1"])
def test_synchronize_in_the_tensors_context(backend, device):
    need_device(backend, device)
    sync = getattr(cuda, "synchronize", None)
    if sync is None:
        pytest.skip("cuda.synchronize() is not there yet (the driver module lacks it)")
    t = backend.alloc(PAGE, device=device)
    drv = _cuda_driver.driver()
    with backend.current(t.device.index):
        pending = backend.busy(device)
        if pending is not None:
            assert not pending.query(), "the GPU finished 50 ms of work at once"
        try:
            assert sync() is None
        except cuda.CudaError as e:
            if backend.name == "fake" and e.code is None:
                pytest.skip(f"the fake libcuda has no cuCtxSynchronize: {e}")
            raise
        if pending is not None:
            assert pending.query(), "synchronize() returned before the work was done"
        assert _cuda_driver.current_device(drv) == device


# --------------------------------------------------------------------------
# register_tensor with a recording PD
# --------------------------------------------------------------------------


class RecordedMR:
    def __init__(self):
        self.lkey, self.rkey, self.closed = 0x51, 0x52, False

    def close(self):
        self.closed = True


class RecordingPD:
    """A PD-like object: reg_dmabuf_mr records its arguments and looks at
    the fd while it is open; no RDMA device is involved."""

    def __init__(self):
        self.calls = []
        self.fallbacks = []

    def reg_dmabuf_mr(self, offset, length, iova, fd, access, *, owner=None):
        link, info = describe_fd(fd)
        self.calls.append(
            {
                "offset": offset,
                "length": length,
                "iova": iova,
                "fd": fd,
                "access": access,
                "owner": owner,
                "link": link,
                "fdinfo": info,
                "identity": fd_identity(fd),
                "fd_size": os.fstat(fd).st_size,
            }
        )
        return RecordedMR()

    def reg_mr(self, *args, **kw):
        """The peer-memory fallback: recorded, and refused as a host
        without nvidia_peermem refuses it."""
        self.fallbacks.append(args)
        raise OSError(errno.EFAULT, "reg_mr: no peer-memory module (recording PD)")


REGISTER_CASES = {
    "aligned": (0, 8 * PAGE),
    "unaligned": (3, 5 * PAGE + 17),
    "small": (PAGE - 2, 64),
}


@pytest.mark.parametrize("device", [0, 1], ids=["gpu0", "gpu1"])
@pytest.mark.parametrize("offset,n", REGISTER_CASES.values(), ids=REGISTER_CASES.keys())
def test_register_tensor_with_a_recording_pd(backend, findings, device, offset, n):
    need_device(backend, device)
    t = backend.alloc(n, device=device, offset=offset)
    ptr, length = tensor_ptr_len(t)
    pd = RecordingPD()
    try:
        gmr = cuda.register_tensor(pd, t, ACCESS)
    except cuda.GpuDirectError as e:
        if isinstance(e.__cause__, cuda.CudaError):
            skip_if_no_dmabuf(e.__cause__)
        raise
    (call,) = pd.calls
    start, alen = aligned(ptr, length)
    assert backend.is_dmabuf(call["link"]), call["link"]
    assert call["offset"] == ptr - start and 0 <= call["offset"] < PAGE
    assert call["length"] == length == n
    assert call["iova"] == ptr
    assert call["access"] == ACCESS
    assert call["owner"] is t
    assert call["offset"] + call["length"] <= alen
    exported = int(call["fdinfo"]["size"]) if backend.name == "real" else call["fd_size"]
    assert exported == alen and alen % PAGE == 0
    # closed once register_tensor returned
    assert open_fds_of(call["identity"]) == []
    assert (gmr.path, gmr.device, gmr.addr, gmr.length) == ("dmabuf", device, ptr, n)
    gmr.close()
    assert pd.calls and gmr.closed
    note(
        findings,
        backend,
        f"register_{device}_{offset}_{n}",
        {k: call[k] for k in ("offset", "length", "iova", "link")},
    )
