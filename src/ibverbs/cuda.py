"""GPUDirect RDMA: register CUDA tensors with an RDMA device.

::

    import ibverbs as ib
    import ibverbs.cuda

    gmr = ib.cuda.register_tensor(pd, tensor, access)   # retains tensor
    qp.post_send(ib.SendWR(sg_list=[gmr.sge()], ...,
                           remote_addr=peer.addr, rkey=peer.rkey))
    ...
    ib.cuda.flush_gpudirect_writes()   # receiver, before CUDA reads dst
    gmr.close()

Neither ``import ibverbs`` nor ``import ibverbs.cuda`` touches CUDA, and
torch is never imported: tensors are duck-typed.  The CUDA driver library
is dlopened (with ctypes) by the first call that needs it: ``libcuda.so.1``,
or the file named by the environment variable ``IBVERBS_LIBCUDA``, an
override meant for tests (the suite points it at a fake driver).

Registration paths, chosen by :func:`register_tensor`:

``dmabuf``
    The page-aligned range around the tensor is exported as a dma-buf file
    descriptor (``cuMemGetHandleForAddressRange``) and registered with
    ``pd.reg_dmabuf_mr(offset, length, iova=device address, fd, access)``;
    the fd is closed right after.  Needs CUDA 11.7+, a kernel and NVIDIA
    driver with dma-buf support, a NIC driver that imports dma-bufs, and
    memory that the driver can export (torch: set
    ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` before CUDA starts).
``peermem``
    When the export raises (any CUDA error, e.g. a driver without the
    export call, CUDA_ERROR_NOT_SUPPORTED or CUDA_ERROR_INVALID_VALUE) or
    the verbs provider answers EOPNOTSUPP / EPROTONOSUPPORT, the raw device
    pointer is registered with ``pd.reg_mr(ptr, nbytes, access)``, as the
    published package does.  That works where a peer-memory kernel module
    is loaded (``nvidia_peermem``, ``nv_peer_mem``, or
    ``/sys/kernel/mm/memory_peers/nv_mem``); when it fails, the error says
    whether one is.

The published package's helpers are here too: :func:`dmabuf_fd` (the
export alone, for a page-aligned range), :func:`synchronize`
(``cuCtxSynchronize``), :func:`tensor_ptr_len`, and ``GpuMR(mr, addr,
length, tensor=None)`` for an MR registered by hand.

Errors:

:class:`CudaError` (a ``RuntimeError``)
    a CUDA driver call failed (``.code``, ``.name``, ``.text`` are the
    driver's own error code, name and text, ``.operation`` the call), or
    libcuda cannot be loaded or lacks an entry point (``.code`` is None).
:class:`GpuDirectError` (a :class:`ibverbs.VerbsError`)
    no registration path worked; its message and ``.attempts`` say which
    paths were tried and why each failed.
``ValueError`` / ``TypeError``
    a tensor that cannot be registered: not CUDA memory (host memory goes
    to :func:`ibverbs.reg_tensor`), not contiguous, empty.
"""

from __future__ import annotations

import ctypes
import errno as _errno
import inspect
import operator
import os
from typing import Any

from . import _cuda_driver as _cu
from . import _tensor
from ._cuda_driver import CudaError
from ._ibverbs import MR, PD, SGE
from ._objects import VerbsError

__all__ = [
    "CudaError",
    "GpuDirectError",
    "GpuMR",
    "dmabuf_fd",
    "flush_gpudirect_writes",
    "register_tensor",
    "synchronize",
    "tensor_ptr_len",
]

# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


class GpuDirectError(VerbsError):
    """No way to register GPU memory worked.

    ``errno`` is EOPNOTSUPP when no path is available, or the errno of the
    last registration that was tried; ``attempts`` is a tuple of
    ``(path, reason)`` pairs, e.g. ``("dma-buf", "...EOPNOTSUPP...")``.
    """

    def __init__(self, errno, strerror, operation="register_tensor", attempts=()):
        super().__init__(errno, strerror, operation)
        self.attempts = tuple(attempts)

    def __reduce__(self):
        return (type(self), (self.errno, self.strerror, self.operation, self.attempts))


def _closed_error():
    return VerbsError(_errno.EBADF, "GpuMR is closed", "GpuMR")


# --------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------

_HOST_HINT = "register host memory with ibverbs.reg_tensor(pd, tensor, access)"


def _tensor_range(tensor):
    """(device pointer, nbytes, device index or None) of a CUDA tensor.

    Duck-typed (``ibverbs._tensor``): a torch-like tensor (``data_ptr()``,
    ``is_cuda`` or ``device.type``, ``is_contiguous()``, ``nbytes`` or
    ``numel() * element_size()``) or an object with
    ``__cuda_array_interface__``; ``__dlpack_device__`` says where other
    objects live.  Raises ValueError for host, other devices',
    non-contiguous or empty tensors, TypeError for anything else.  Touches
    no CUDA.
    """
    mem = _tensor.describe(tensor, buffers="where")
    name = type(tensor).__name__
    if mem is None:
        raise TypeError(
            "register_tensor() takes a CUDA tensor (torch-like, or with "
            f"__cuda_array_interface__), not {name}"
        )
    if mem.kind == "torch":
        is_cuda = getattr(tensor, "is_cuda", None)
        if is_cuda is None:
            # No is_cuda: device.type (or __dlpack_device__) decides; with
            # neither, the driver does (_device_ordinal refuses memory
            # that is not CUDA's).
            is_cuda = mem.device is None or mem.device in _tensor.CUDA_DEVICES
        if not is_cuda:
            device = getattr(tensor, "device", None)
            if device is not None:
                where = f"device {device}"
            elif getattr(tensor, "is_cuda", None) is False:
                where = "is_cuda is False"
            else:
                where = f"__dlpack_device__ {mem.device}"
            raise ValueError(f"not a CUDA tensor ({where}): {_HOST_HINT}")
    elif mem.kind != "cuda_array_interface":
        if mem.device in _tensor.CUDA_DEVICES:
            raise TypeError(
                f"{name} is on {mem.device}:{mem.index} (__dlpack_device__) but gives "
                "no address: register_tensor() takes data_ptr() or __cuda_array_interface__"
            )
        if not mem.host:
            raise ValueError(
                f"{name} lives on device {mem.device!r}, not in CUDA memory: "
                "ibverbs.cuda registers CUDA memory only"
            )
        raise ValueError(f"not CUDA memory ({name}): {_HOST_HINT}")
    ptr, nbytes = _checked_range(tensor, mem)
    if nbytes == 0:
        raise ValueError("tensor is empty: nothing to register")
    return ptr, nbytes, mem.index


def _checked_range(tensor, mem):
    """(pointer, nbytes) of a torch-like or CUDA-array-interface Memory,
    with tensor_ptr_len's checks."""
    if mem.kind == "torch":
        if not mem.contiguous:
            raise ValueError("tensor is not contiguous: register a .contiguous() copy")
        if mem.nbytes is None:
            raise _tensor.unknown_size(tensor)
        return mem.addr, mem.nbytes
    if mem.nbytes == 0:
        raise ValueError("tensor is empty: nothing to register")
    if not mem.contiguous:
        shape, strides = mem.layout
        strides = None if strides is None else tuple(strides)
        raise ValueError(
            f"array is not C-contiguous (shape {shape}, strides "
            f"{strides}): register a contiguous copy"
        )
    return mem.addr, mem.nbytes


def tensor_ptr_len(tensor: Any) -> tuple[int, int]:
    """``(device address, nbytes)`` of a contiguous tensor: torch-like
    (``data_ptr()``, ``numel() * element_size()`` or ``nbytes``) or with
    ``__cuda_array_interface__``.  ValueError when not contiguous,
    TypeError for anything else.  Touches no CUDA and does not check where
    the memory lives (:func:`register_tensor` does)."""
    mem = _tensor.describe(tensor, buffers="no")
    if mem is None:
        raise TypeError(
            "expected a tensor exposing data_ptr() or "
            f"__cuda_array_interface__, not {type(tensor).__name__}"
        )
    return _checked_range(tensor, mem)


def _device_ordinal(drv, ptr):
    """The device of a CUDA device pointer; ValueError for memory that is
    not device memory."""
    memtype = ctypes.c_uint()
    f = drv.require("cuPointerGetAttribute")
    rc = f(ctypes.byref(memtype), _cu.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr)
    if rc == _cu.CUDA_ERROR_INVALID_VALUE:
        raise ValueError(
            f"address {ptr:#x} is not CUDA memory "
            f"(cuPointerGetAttribute: CUDA_ERROR_INVALID_VALUE): "
            f"{_HOST_HINT}"
        )
    if rc != 0:
        raise drv.error(rc, "cuPointerGetAttribute")
    if memtype.value != _cu.CU_MEMORYTYPE_DEVICE:
        kind = {
            _cu.CU_MEMORYTYPE_HOST: "host",
            _cu.CU_MEMORYTYPE_ARRAY: "a CUDA array",
            _cu.CU_MEMORYTYPE_UNIFIED: "unified",
        }.get(memtype.value, "not device")
        raise ValueError(f"address {ptr:#x} is {kind} memory, not device memory: {_HOST_HINT}")
    ordinal = ctypes.c_int()
    drv.call(
        "cuPointerGetAttribute", ctypes.byref(ordinal), _cu.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr
    )
    return ordinal.value


def dmabuf_fd(ptr: int, length: int) -> int:
    """Export the device memory ``[ptr, ptr + length)`` as a dma-buf file
    descriptor (``cuMemGetHandleForAddressRange``); the caller closes it.

    ``ptr`` and ``length`` must be page-aligned (ValueError, before libcuda
    is loaded); :func:`register_tensor` aligns a tensor's range itself.
    The export runs in a context of the memory's device.  CudaError when
    the driver refuses (torch: the allocation must be VMM-backed,
    ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``)."""
    ptr = operator.index(ptr)
    length = operator.index(length)
    page = os.sysconf("SC_PAGE_SIZE")
    if ptr <= 0 or ptr % page:
        raise ValueError(
            f"ptr must be a positive, page-aligned device address (page size {page}), got {ptr:#x}"
        )
    if length <= 0 or length % page:
        raise ValueError(
            f"length must be positive and page-aligned (a multiple of {page}), got {length}"
        )
    drv = _cu.driver()
    export = drv.require("cuMemGetHandleForAddressRange")
    device = _device_ordinal(drv, ptr)
    fd = ctypes.c_int(-1)
    with _cu.device_context(drv, device):
        rc = export(ctypes.byref(fd), ptr, length, _cu.CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)
    if rc != 0:
        raise drv.error(rc, "cuMemGetHandleForAddressRange")
    return fd.value


def _export_dmabuf(ptr, length):
    """dma-buf fd for the host-page-aligned range around [ptr, ptr +
    length): (fd, aligned_start, aligned_length); the caller closes fd.
    Goes through the module's dmabuf_fd (which tests may replace)."""
    if ptr <= 0 or length <= 0:
        raise ValueError(f"bad range: address {ptr:#x}, length {length}")
    page = os.sysconf("SC_PAGE_SIZE")
    start = ptr & ~(page - 1)
    end = (ptr + length + page - 1) & ~(page - 1)
    return dmabuf_fd(start, end - start), start, end - start


# --------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------

# Relative to the sysfs root ($IBVERBS_SYSFS_ROOT, for tests; else /sys).
_PEERMEM_PATHS = (
    "module/nvidia_peermem",
    "module/nv_peer_mem",
    "kernel/mm/memory_peers/nv_mem",
)


def _peermem_module():
    """The sysfs path showing a loaded peer-memory module, or None."""
    root = os.environ.get("IBVERBS_SYSFS_ROOT") or "/sys"
    for rel in _PEERMEM_PATHS:
        path = os.path.join(root, rel)
        if os.path.exists(path):
            return path
    return None


def _peermem_state():
    module = _peermem_module()
    if module is not None:
        return f"{module} exists"
    root = os.environ.get("IBVERBS_SYSFS_ROOT") or "/sys"
    looked = ", ".join(os.path.join(root, p) for p in _PEERMEM_PATHS)
    return (
        f"no peer-memory kernel module is loaded (none of {looked} exists; modprobe nvidia_peermem)"
    )


def _export_hint(e):
    code = getattr(e, "code", None)
    if code == _cu.CUDA_ERROR_NOT_SUPPORTED:
        return "; this driver or kernel cannot export dma-bufs"
    if code == _cu.CUDA_ERROR_INVALID_VALUE:
        return (
            "; the allocation cannot be exported as a dma-buf (torch: set "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before CUDA "
            "initializes)"
        )
    return ""


def _owner_kw(pd, method, tensor):
    """``{"owner": tensor}`` when ``method`` takes owner= (an ibverbs.PD's
    do), else ``{}``: the arguments themselves are always positional, as
    the published package passes them, so a duck-typed PD with
    ``reg_mr(addr, length, access)`` works too."""
    if isinstance(pd, PD):
        return {"owner": tensor}
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return {}
    if any(p.name == "owner" or p.kind is p.VAR_KEYWORD for p in params):
        return {"owner": tensor}
    return {}


def register_tensor(pd: PD, tensor: Any, access: int) -> GpuMR:
    """Register a CUDA tensor's memory with ``pd`` for RDMA.

    ``tensor`` is a contiguous, non-empty CUDA tensor: torch-like (an
    object with ``is_cuda`` or ``device``, ``data_ptr()``, ``numel()``,
    ``element_size()``, ``is_contiguous()``) or with
    ``__cuda_array_interface__``.  Exports the page-aligned range with
    :func:`dmabuf_fd` and registers it with ``pd.reg_dmabuf_mr(offset,
    nbytes, ptr, fd, access)``; when the driver cannot be loaded or asked
    where the memory lives, or the export or ``reg_dmabuf_mr`` raises
    RuntimeError or OSError, falls back to ``pd.reg_mr(ptr, nbytes,
    access)`` (the peer-memory path), as the published package does.  Both also get
    ``owner=tensor`` where they take it (an :class:`ibverbs.PD` does), so
    the MR retains the tensor as well.
    Returns a :class:`GpuMR` that retains ``tensor`` until closed.

    Wraps ``ibv_reg_dmabuf_mr`` or ``ibv_reg_mr`` through the PD (man page
    ibv_reg_mr(3)), and the CUDA driver's ``cuMemGetHandleForAddressRange``.

    Raises:
        ValueError: a tensor that cannot be registered: host memory (use
            ``ibverbs.reg_tensor``), not contiguous, empty.
        TypeError: not a tensor.
        GpuDirectError: no registration path worked (it says what each
            path answered, the driver's absence included).
    """
    ptr, length, index = _tensor_range(tensor)
    attempts = []
    ordinal = index
    try:
        ordinal = _device_ordinal(_cu.driver(), ptr)
    except (RuntimeError, OSError) as e:  # CudaError is a RuntimeError
        # No driver to ask: the dma-buf path is closed, reg_mr may still
        # work (as in the published package, nothing is raised yet).
        attempts.append(("dma-buf", f"the CUDA driver cannot be used: {e}"))
    else:
        if index is not None and index != ordinal:
            raise ValueError(
                f"tensor says device cuda:{index}, but the driver "
                f"places address {ptr:#x} on device {ordinal}"
            )
        mr = _register_dmabuf(pd, tensor, ptr, length, access, attempts)
        if mr is not None:
            return GpuMR(mr, ptr, length, tensor, path="dmabuf", device=ordinal)

    try:
        mr = pd.reg_mr(ptr, length, access, **_owner_kw(pd, pd.reg_mr, tensor))
    except OSError as e:
        attempts.append(("peer memory", f"{_peermem_state()}; {e}"))
        raise GpuDirectError(
            e.errno or _errno.EOPNOTSUPP, _failure(ptr, length, attempts), attempts=attempts
        ) from e
    return GpuMR(mr, ptr, length, tensor, path="peermem", device=ordinal)


def _register_dmabuf(pd, tensor, ptr, length, access, attempts):
    """The dma-buf path of register_tensor: export the page-aligned range
    with dmabuf_fd and register it with reg_dmabuf_mr.  The MR, or None
    with the reason appended to ``attempts`` when the export or the
    registration raised RuntimeError/OSError (the published package falls
    back to reg_mr on either)."""
    try:
        fd, start, _ = _export_dmabuf(ptr, length)
    except (RuntimeError, OSError) as e:
        attempts.append(("dma-buf", f"{e}{_export_hint(e)}"))
        return None
    try:
        reg = pd.reg_dmabuf_mr
        return reg(ptr - start, length, ptr, fd, access, **_owner_kw(pd, reg, tensor))
    except (RuntimeError, OSError) as e:
        attempts.append(("dma-buf", str(e)))
        return None
    finally:
        os.close(fd)


def _failure(ptr, length, attempts):
    tried = "; ".join(f"{path}: {why}" for path, why in attempts)
    return f"cannot register CUDA memory [{ptr:#x}, +{length}) for RDMA: {tried}"


class GpuMR:
    """A registered CUDA tensor (from :func:`register_tensor`).

    ``addr`` is the device address to hand to peers (the iova; for a
    dma-buf MR ``ibv_mr.addr`` holds an offset, not an address), ``length``
    the tensor's size in bytes, ``lkey``/``rkey`` the MR's keys, ``mr`` the
    :class:`ibverbs.MR`, ``tensor`` the retained tensor (None once closed),
    ``path`` ``"dmabuf"`` or ``"peermem"``, ``device`` the CUDA device
    ordinal (both None when not given).  ``close()`` deregisters and drops
    the tensor; a context manager.

    ``GpuMR(mr, addr, length, tensor=None, *, path=None, device=None)``
    wraps an MR registered by hand (``addr`` the device address it maps).
    """

    # The MR retains the tensor too (its owner), so the memory outlives the
    # registration even when only gmr.mr is kept.
    __slots__ = ("_mr", "_tensor", "_addr", "_length", "_path", "_device", "_closed", "__weakref__")

    def __init__(
        self,
        mr: Any,
        addr: int,
        length: int,
        tensor: Any = None,
        *,
        path: str | None = None,
        device: int | None = None,
    ) -> None:
        self._mr = mr
        self._tensor = tensor
        self._addr = operator.index(addr)
        self._length = operator.index(length)
        self._path = path
        self._device = device
        self._closed = False

    def _check(self):
        if self._closed:
            raise _closed_error()

    @property
    def addr(self) -> int:
        """The device address to hand to peers (the iova the MR maps)."""
        return self._addr

    @property
    def length(self) -> int:
        """The registered size in bytes."""
        return self._length

    @property
    def lkey(self) -> int:
        """The MR's local key (VerbsError(EBADF) once closed)."""
        self._check()
        return self._mr.lkey

    @property
    def rkey(self) -> int:
        """The MR's remote key, for peers (VerbsError(EBADF) once closed)."""
        self._check()
        return self._mr.rkey

    @property
    def mr(self) -> MR:
        """The :class:`ibverbs.MR` of the registration."""
        return self._mr

    @property
    def tensor(self) -> Any:
        """The tensor kept alive, None once closed or when none was given."""
        return self._tensor

    @property
    def path(self) -> str | None:
        """How the memory was registered: ``"dmabuf"``, ``"peermem"`` or None."""
        return self._path

    @property
    def device(self) -> int | None:
        """The CUDA device ordinal, or None when not known."""
        return self._device

    @property
    def closed(self) -> bool:
        """True once close() ran or the MR was closed."""
        return self._closed or bool(self._mr.closed)

    def sge(self, length: int | None = None, offset: int = 0) -> SGE:
        """An ``ibverbs.SGE`` for ``length`` bytes (default: to the end) at
        ``offset`` into the region; ValueError when the range exceeds the
        region, for an offset outside it, or over 2**32 - 1 bytes (split
        the transfer into several SGEs).  The SGE's ``owner`` is this
        GpuMR, which it keeps alive (and with it the tensor).  Calls no
        verb.

        Raises:
            ValueError: the range is outside the region or longer than
                2**32 - 1 bytes.
            VerbsError: the GpuMR is closed (EBADF).
        """
        self._check()
        offset = operator.index(offset)
        if offset < 0 or offset > self._length:
            raise ValueError(f"offset {offset} is outside the {self._length}-byte region")
        if length is None:
            length = self._length - offset
        else:
            length = operator.index(length)
            if length < 0:
                raise ValueError(f"negative SGE length {length}")
        if offset + length > self._length:
            raise ValueError(
                f"SGE of {length} bytes at offset {offset} "
                f"exceeds the {self._length}-byte region "
                f"(runs past its end)"
            )
        if length > 0xFFFFFFFF:
            raise ValueError(
                f"an SGE carries at most 2**32 - 1 bytes, not "
                f"{length}: split the transfer into several SGEs "
                f"(sge(length, offset) for each piece)"
            )
        addr = self._addr + offset
        mr = self._mr
        if isinstance(mr, MR) and mr.addr <= addr and addr + length <= mr.addr + mr.length:
            # Through the MR itself: a post then checks that it is open.
            return SGE(mr, length, offset=addr - mr.addr, owner=self)
        return SGE(addr, length, lkey=mr.lkey, owner=self)

    def close(self) -> None:
        """Deregister the MR and drop the tensor.  Idempotent.

        Wraps ``ibv_dereg_mr`` through ``MR.close`` (man page
        ibv_reg_mr(3)).

        Raises:
            VerbsError: the MR cannot be deregistered (``errno`` says
                why, e.g. EBUSY); the GpuMR stays open.
        """
        if self._closed:
            return
        self._mr.close()
        self._tensor = None
        self._closed = True

    def __enter__(self) -> GpuMR:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self):
        if self._closed:
            return "<ibverbs.cuda.GpuMR closed>"
        device = "" if self._device is None else f" device=cuda:{self._device}"
        return (
            f"<ibverbs.cuda.GpuMR {self._path} addr={self._addr:#x} length={self._length}{device}>"
        )


# --------------------------------------------------------------------------
# Ordering
# --------------------------------------------------------------------------


def synchronize() -> None:
    """Wait for all CUDA work in the calling thread's current context
    (``cuCtxSynchronize``): call it before posting a work request that
    reads memory a kernel or copy produced.  CudaError when it fails (no
    current context: CUDA_ERROR_INVALID_CONTEXT)."""
    _cu.driver().call("cuCtxSynchronize")


def flush_gpudirect_writes(*, all_devices: bool = False) -> bool:
    """Make RDMA writes that have completed visible to later CUDA work in
    the current CUDA context.

    Call it on the receiving side after the completion or notification
    that says the data arrived, before launching CUDA work that reads it.
    Reads the current device's GPUDirect RDMA write ordering; when the
    device does not order NIC writes for its own work (below
    CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER) and supports the host-side
    flush, calls ``cuFlushGPUDirectRDMAWrites(current context, to owner)``.
    With ``all_devices=True`` the writes are made visible to every device
    in the context's scope (ordering below ..._ALL_DEVICES; flush "to all
    devices").
    Returns True when a flush was issued, False when none was needed (or
    the device offers none).  CudaError when the thread has no current CUDA
    context (torch: run inside ``torch.cuda.device(dst.device)``).
    """
    drv = _cu.driver()
    device = _cu.current_device(drv)
    if device is None:
        raise CudaError(
            _cu.CUDA_ERROR_INVALID_CONTEXT,
            "CUDA_ERROR_INVALID_CONTEXT",
            "no current CUDA context on this thread: make the "
            "destination device current first (torch: "
            "with torch.cuda.device(dst.device): ...)",
            "cuCtxGetCurrent",
        )
    ordering = _cu.device_attribute_or_zero(
        drv, _cu.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, device
    )
    if all_devices:
        needed = _cu.CU_GPU_DIRECT_RDMA_WRITES_ORDERING_ALL_DEVICES
        scope = _cu.CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES
    else:
        needed = _cu.CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER
        scope = _cu.CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER
    if ordering >= needed:
        return False
    options = _cu.device_attribute_or_zero(
        drv, _cu.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, device
    )
    if not options & _cu.CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST:
        return False
    drv.call(
        "cuFlushGPUDirectRDMAWrites", _cu.CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX, scope
    )
    return True
