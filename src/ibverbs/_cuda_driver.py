"""The CUDA driver library through ctypes: what ``ibverbs.cuda`` calls.

``libcuda.so.1`` (or the file ``IBVERBS_LIBCUDA`` names, for tests) is
dlopened by the first :func:`driver` call, initialised once with
``cuInit(0)``, and its entry points resolved lazily with the prototypes of
:data:`SIGNATURES`; a failed call is a :class:`CudaError` named by the
driver itself when it can (``cuGetErrorName`` / ``cuGetErrorString``),
else by :data:`FALLBACK_ERRORS`.  Here too: the ``cuda.h`` constants the
GPUDirect logic uses, the calling thread's current device and a context
manager that makes a device's primary context current.

Nothing here knows about tensors, verbs or registration paths
(``cuda.py`` does); nothing touches CUDA at import.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading

# --------------------------------------------------------------------------
# cuda.h constants (the driver ABI; they never change once published)
# --------------------------------------------------------------------------

CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_STUB_LIBRARY = 34
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_NOT_SUPPORTED = 801

CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_MEMORYTYPE_HOST = 1
CU_MEMORYTYPE_DEVICE = 2
CU_MEMORYTYPE_ARRAY = 3
CU_MEMORYTYPE_UNIFIED = 4
CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1

CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS = 117
CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING = 118
CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST = 1 << 0
CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER = 100
CU_GPU_DIRECT_RDMA_WRITES_ORDERING_ALL_DEVICES = 200
CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX = 0
CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER = 100
CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES = 200

# Names and texts for the codes we may meet when the driver cannot name
# them itself (the toolkit's stub libcuda fails every call, cuGetErrorName
# included).  The driver's own answer is used whenever it gives one.
FALLBACK_ERRORS = {
    1: ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    2: ("CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    3: ("CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
    4: ("CUDA_ERROR_DEINITIALIZED", "driver shutting down"),
    34: ("CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"),
    36: ("CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "API call requires a newer CUDA driver"),
    46: ("CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"),
    100: ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
    101: ("CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
    201: ("CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
    801: ("CUDA_ERROR_NOT_SUPPORTED", "operation not supported"),
    999: ("CUDA_ERROR_UNKNOWN", "unknown error"),
}

DEFAULT_LIBCUDA = "libcuda.so.1"


class CudaError(RuntimeError):
    """A CUDA driver call failed, or libcuda cannot be used at all.

    ``code`` is the driver's ``CUresult`` (None when the library could not
    be loaded or lacks an entry point), ``name`` and ``text`` the driver's
    own name and description of it (``cuGetErrorName`` /
    ``cuGetErrorString``), ``operation`` the call that failed.
    """

    def __init__(self, code, name, text, operation=None):
        self.code = code
        self.name = name
        self.text = text
        self.operation = operation
        where = f"{operation}: " if operation else ""
        if code is None:
            msg = f"{where}{text}"
        else:
            msg = f"{where}{name} ({code}): {text}"
        super().__init__(msg)

    def __reduce__(self):
        return (type(self), (self.code, self.name, self.text, self.operation))


# Public as ibverbs.cuda.CudaError (its reference page, repr and pickles).
CudaError.__module__ = "ibverbs.cuda"


# --------------------------------------------------------------------------
# The library
# --------------------------------------------------------------------------

_c_int, _c_uint, _c_void_p = ctypes.c_int, ctypes.c_uint, ctypes.c_void_p
_c_u64, _c_size_t = ctypes.c_uint64, ctypes.c_size_t
_P = ctypes.POINTER

# Symbol -> argument types; every entry point returns a CUresult.  The
# names are the ones the driver exports for the ABI that cuda.h declares:
# cuda.h maps cuCtxPushCurrent to cuCtxPushCurrent_v2 and so on, and the
# unversioned symbols that a driver still exports are the old ABI.
SIGNATURES = {
    "cuInit": (_c_uint,),
    "cuDriverGetVersion": (_P(_c_int),),
    "cuGetErrorName": (_c_int, _P(ctypes.c_char_p)),
    "cuGetErrorString": (_c_int, _P(ctypes.c_char_p)),
    "cuDeviceGet": (_P(_c_int), _c_int),
    "cuDeviceGetAttribute": (_P(_c_int), _c_int, _c_int),
    "cuDevicePrimaryCtxRetain": (_P(_c_void_p), _c_int),
    "cuDevicePrimaryCtxRelease_v2": (_c_int,),
    "cuCtxGetCurrent": (_P(_c_void_p),),
    "cuCtxGetDevice": (_P(_c_int),),
    "cuCtxSynchronize": (),
    "cuCtxPushCurrent_v2": (_c_void_p,),
    "cuCtxPopCurrent_v2": (_P(_c_void_p),),
    "cuPointerGetAttribute": (_c_void_p, _c_int, _c_u64),
    "cuMemGetHandleForAddressRange": (_c_void_p, _c_u64, _c_size_t, _c_int, ctypes.c_ulonglong),
    "cuFlushGPUDirectRDMAWrites": (_c_int, _c_int),
}

# Entry points that older drivers lack: the release that added each.
SINCE = {
    "cuMemGetHandleForAddressRange": "CUDA 11.7 (driver 515)",
    "cuFlushGPUDirectRDMAWrites": "CUDA 11.3 (driver 465)",
}


class Driver:
    """A loaded libcuda with lazily resolved entry points."""

    def __init__(self, path):
        self.path = path
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as e:
            if path == DEFAULT_LIBCUDA:
                why = (
                    "is the NVIDIA driver installed? libcuda.so.1 comes "
                    "with the driver, not with the CUDA toolkit"
                )
            else:
                why = "IBVERBS_LIBCUDA names it"
            raise CudaError(None, None, f"cannot load {path} ({why}): {e}", "dlopen") from None
        self._fns = {}

    def fn(self, name):
        """The entry point, or None when the library does not export it."""
        try:
            return self._fns[name]
        except KeyError:
            pass
        try:
            f = getattr(self.lib, name)
        except AttributeError:
            f = None
        else:
            f.argtypes = SIGNATURES[name]
            f.restype = _c_int
        self._fns[name] = f
        return f

    def require(self, name):
        f = self.fn(name)
        if f is None:
            since = SINCE.get(name)
            need = f" (added in {since})" if since else ""
            raise CudaError(
                None,
                None,
                f"{self.path} does not export {name}{need}; "
                f"the NVIDIA driver is too old{self._version()}",
                name,
            )
        return f

    def _version(self):
        """ ", which supports CUDA X.Y" from cuDriverGetVersion, or ""."""
        f = self.fn("cuDriverGetVersion")
        v = _c_int()
        if f is None or f(ctypes.byref(v)) != 0:
            return ""
        return f", which supports CUDA {v.value // 1000}.{v.value % 1000 // 10}"

    def call(self, name, *args):
        rc = self.require(name)(*args)
        if rc != 0:
            raise self.error(rc, name)

    def error(self, code, operation):
        """CudaError for a CUresult, named by the driver when it can."""
        fallback = FALLBACK_ERRORS.get(code, (f"CUresult {code}", "unknown error"))
        name, text = fallback
        s = ctypes.c_char_p()
        f = self.fn("cuGetErrorName")
        if f is not None and f(code, ctypes.byref(s)) == 0 and s.value:
            name = s.value.decode("ascii", "replace")
        s = ctypes.c_char_p()
        f = self.fn("cuGetErrorString")
        if f is not None and f(code, ctypes.byref(s)) == 0 and s.value:
            text = s.value.decode("utf-8", "replace")
        if code == CUDA_ERROR_STUB_LIBRARY:
            text += (
                f" ({self.path} is the CUDA toolkit's stub; the NVIDIA "
                "driver's libcuda.so.1 must come first on the library path)"
            )
        return CudaError(code, name, text, operation)

    def attribute(self, attr, device):
        value = _c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(value), attr, device)
        return value.value


_lock = threading.Lock()
_driver_instance: Driver | None = None


def driver():
    """The loaded driver, after one successful cuInit(0)."""
    global _driver_instance
    d = _driver_instance
    if d is not None:
        return d
    with _lock:
        if _driver_instance is None:
            d = Driver(os.environ.get("IBVERBS_LIBCUDA") or DEFAULT_LIBCUDA)
            d.call("cuInit", 0)
            _driver_instance = d
        return _driver_instance


def forget_driver():
    """Drop the loaded driver so that the next use loads and initialises
    it again (tests; the library itself stays mapped)."""
    global _driver_instance
    with _lock:
        _driver_instance = None


def current_device(drv):
    """The device of the calling thread's current context, or None."""
    ctx = _c_void_p()
    drv.call("cuCtxGetCurrent", ctypes.byref(ctx))
    if not ctx.value:
        return None
    dev = _c_int()
    drv.call("cuCtxGetDevice", ctypes.byref(dev))
    return dev.value


@contextlib.contextmanager
def device_context(drv, ordinal):
    """Run the block with a context of device ``ordinal`` current: the
    caller's when it already is one, else that device's primary context
    (the one torch and the CUDA runtime use), pushed and popped."""
    if current_device(drv) == ordinal:
        yield
        return
    dev = _c_int()
    drv.call("cuDeviceGet", ctypes.byref(dev), ordinal)
    ctx = _c_void_p()
    drv.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
    try:
        drv.call("cuCtxPushCurrent_v2", ctx)
        try:
            yield
        finally:
            drv.call("cuCtxPopCurrent_v2", ctypes.byref(_c_void_p()))
    finally:
        drv.call("cuDevicePrimaryCtxRelease_v2", dev)


def device_attribute_or_zero(drv, attr, device):
    """A device attribute; 0 when the driver does not know it (older than
    the attribute), which for both GPUDirect attributes means "none"."""
    value = _c_int()
    rc = drv.require("cuDeviceGetAttribute")(ctypes.byref(value), attr, device)
    if rc == CUDA_ERROR_INVALID_VALUE:
        return 0
    if rc != 0:
        raise drv.error(rc, "cuDeviceGetAttribute")
    return value.value
