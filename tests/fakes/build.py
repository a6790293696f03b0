"""Build the test-only fake libraries in tests/fakes with the system C compiler.

    build = <this file, loaded by path (the tests are not packages)>
    path = build_fakecuda(tmpdir)            # .../libcuda.so.1
    path = build_fakecuda(tmpdir, dmabuf=False)  # without cuMemGetHandleForAddressRange

``FakeCuda(path)`` wraps the fake's control functions (fake_*) with ctypes.
The library is loaded by ibverbs.cuda through IBVERBS_LIBCUDA; dlopen of the
same path returns the same handle, so both sides share the fake's state.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from cshared import BuildError, compile_shared, compiler  # noqa: E402,F401

SOURCE = HERE / "fakecuda.c"


def build_fakecuda(outdir, *, dmabuf: bool = True) -> str:
    """Compile fakecuda.c into outdir/libcuda.so.1 and return its path."""
    return compile_shared(
        SOURCE, Path(outdir) / "libcuda.so.1", defines=None if dmabuf else {"FAKE_NO_DMABUF": True}
    )


class FakeCuda:
    """ctypes access to the fake driver's test controls."""

    MODE_NORMAL, MODE_STUB, MODE_NO_DEVICE = 0, 1, 2

    def __init__(self, path: str):
        self.path = path
        self.lib = lib = ctypes.CDLL(path)
        u64, i = ctypes.c_uint64, ctypes.c_int
        lib.fake_alloc.argtypes = [u64, i, u64]
        lib.fake_alloc.restype = u64
        lib.fake_alloc_host.argtypes = [u64, i]
        lib.fake_alloc_host.restype = u64
        lib.fake_free.argtypes = [u64]
        lib.fake_free.restype = i
        lib.fake_reset.argtypes = []
        lib.fake_reset.restype = None
        for name in (
            "fake_set_mode",
            "fake_set_export_error",
            "fake_set_flush_error",
            "fake_set_current",
        ):
            getattr(lib, name).argtypes = [i]
            getattr(lib, name).restype = None
        lib.fake_set_gpudirect.argtypes = [i, i, i]
        lib.fake_set_gpudirect.restype = None
        for name in (
            "fake_current_device",
            "fake_ctx_depth",
            "fake_init_calls",
            "fake_export_calls",
            "fake_flush_calls",
            "fake_open_exports",
            "fake_sync_calls",
        ):
            getattr(lib, name).argtypes = []
            getattr(lib, name).restype = i
        lib.fake_primary_refs.argtypes = [i]
        lib.fake_primary_refs.restype = i
        P = ctypes.POINTER
        lib.fake_last_export.argtypes = [P(u64), P(u64), P(i), P(u64), P(i)]
        lib.fake_last_export.restype = None
        lib.fake_last_flush.argtypes = [P(i), P(i), P(i)]
        lib.fake_last_flush.restype = None

    # allocations
    def alloc(self, size: int, device: int = 0, misalign: int = 0) -> int:
        ptr = self.lib.fake_alloc(size, device, misalign)
        if not ptr:
            raise MemoryError("fake_alloc failed")
        return ptr

    def alloc_host(self, size: int, device: int = 0) -> int:
        ptr = self.lib.fake_alloc_host(size, device)
        if not ptr:
            raise MemoryError("fake_alloc_host failed")
        return ptr

    def free(self, ptr: int) -> None:
        self.lib.fake_free(ptr)

    # behaviour
    def reset(self) -> None:
        self.lib.fake_reset()

    def set_mode(self, mode: int) -> None:
        self.lib.fake_set_mode(mode)

    def set_export_error(self, code: int) -> None:
        self.lib.fake_set_export_error(code)

    def set_flush_error(self, code: int) -> None:
        self.lib.fake_set_flush_error(code)

    def set_gpudirect(self, device: int, ordering: int, options: int) -> None:
        self.lib.fake_set_gpudirect(device, ordering, options)

    def set_current(self, device: int) -> None:
        self.lib.fake_set_current(device)

    # observations
    def current_device(self) -> int:
        return self.lib.fake_current_device()

    def ctx_depth(self) -> int:
        return self.lib.fake_ctx_depth()

    def primary_refs(self, device: int) -> int:
        return self.lib.fake_primary_refs(device)

    def init_calls(self) -> int:
        return self.lib.fake_init_calls()

    def export_calls(self) -> int:
        return self.lib.fake_export_calls()

    def flush_calls(self) -> int:
        return self.lib.fake_flush_calls()

    def sync_calls(self) -> int:
        return self.lib.fake_sync_calls()

    def open_exports(self) -> int:
        return self.lib.fake_open_exports()

    def last_export(self) -> dict:
        ptr, size, flags = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
        htype, dev = ctypes.c_int(), ctypes.c_int()
        self.lib.fake_last_export(
            ctypes.byref(ptr),
            ctypes.byref(size),
            ctypes.byref(htype),
            ctypes.byref(flags),
            ctypes.byref(dev),
        )
        return {
            "ptr": ptr.value,
            "size": size.value,
            "type": htype.value,
            "flags": flags.value,
            "device": dev.value,
        }

    def last_flush(self) -> tuple:
        t, s, d = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self.lib.fake_last_flush(ctypes.byref(t), ctypes.byref(s), ctypes.byref(d))
        return t.value, s.value, d.value
