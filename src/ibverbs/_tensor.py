"""Where a tensor's memory is: one introspection for host and GPU tensors.

Used by :func:`ibverbs.reg_tensor` and :func:`ibverbs.tensor_addr_len`
(host memory, ``helpers.py``) and by :func:`ibverbs.cuda.register_tensor`
and :func:`ibverbs.cuda.tensor_ptr_len` (CUDA memory, ``cuda.py``).
:func:`describe` reads what an object exposes, duck-typed (numpy and torch
are never imported), and says where the memory lives; each caller then
refuses what it cannot register, with its own messages.

The protocols, in the order they are tried:

- ``bytes``, ``bytearray``, ``memoryview``: the buffer protocol;
- torch-like (a callable ``data_ptr()``): the address, the size from
  ``numel() * element_size()`` (or ``nbytes``), ``is_contiguous()``, the
  device from ``device.type`` / ``device.index`` or ``is_cuda``;
- ``__cuda_array_interface__`` (CuPy, Numba, ...): CUDA memory;
- ``__array_interface__`` (numpy): host memory;
- any other buffer object.

DLPack's ``__dlpack_device__()`` (a ``(device type, device id)`` pair)
says where the memory of an object that has one lives, when the protocol
that gives the address does not (numpy arrays, buffers): :data:`DLPACK`
names the types.  The address itself is never taken from ``__dlpack__``
(that would consume a capsule).  Nothing here calls a verb or touches CUDA.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

# DLPack's DLDeviceType (dlpack.h); the names are ours, torch's where it has one.
DLPACK = {
    1: "cpu",
    2: "cuda",
    3: "cuda_host",
    4: "opencl",
    7: "vulkan",
    8: "metal",
    9: "vpi",
    10: "rocm",
    11: "rocm_host",
    12: "ext_dev",
    13: "cuda_managed",
    14: "oneapi",
    15: "webgpu",
    16: "hexagon",
    17: "maia",
}

#: Devices whose memory is host memory that ``ibv_reg_mr`` takes as is
#: (pinned CUDA or ROCm host memory is ordinary pages to the NIC).
HOST_DEVICES = frozenset({"cpu", "cuda_host", "rocm_host"})

#: Devices whose memory ``ibverbs.cuda`` registers.
CUDA_DEVICES = frozenset({"cuda", "cuda_managed"})


class Memory:
    """What :func:`describe` learned about an object's memory.

    ``kind`` is the protocol that gave the address (``"buffer"``,
    ``"torch"``, ``"cuda_array_interface"``, ``"array_interface"``);
    ``device`` where it lives (``"cpu"``, ``"cuda"``, a :data:`DLPACK`
    name, torch's device type, or None when nothing says), ``index`` the
    device ordinal when known; ``nbytes`` is None when the size cannot be
    told; ``layout`` is ``(shape, strides)`` for the array interfaces;
    ``owner`` is what retains the memory (the object, or a memoryview
    whose export pins a resizable buffer).
    """

    __slots__ = (
        "kind",
        "addr",
        "nbytes",
        "readonly",
        "contiguous",
        "device",
        "index",
        "layout",
        "owner",
    )

    def __init__(
        self,
        kind: str,
        addr: int | None,
        nbytes: int | None,
        *,
        device: str | None,
        index: int | None = None,
        readonly: bool = False,
        contiguous: bool = True,
        layout: tuple[tuple[int, ...], Any] | None = None,
        owner: Any = None,
    ) -> None:
        self.kind = kind
        self.addr = addr
        self.nbytes = nbytes
        self.device = device
        self.index = index
        self.readonly = readonly
        self.contiguous = contiguous
        self.layout = layout
        self.owner = owner

    @property
    def host(self) -> bool:
        """True when the memory is known to be host memory."""
        return self.device in HOST_DEVICES

    def release(self) -> None:
        """Drop the buffer export a resizable buffer's memoryview holds."""
        if isinstance(self.owner, memoryview):
            self.owner.release()


def unknown_size(obj: Any) -> TypeError:
    """The error for a torch-like object whose size cannot be told
    (``Memory.nbytes`` None)."""
    return TypeError(
        f"cannot tell the size of {type(obj).__name__} (no numel()/element_size() or nbytes)"
    )


def dlpack_device(obj: Any) -> tuple[str, int] | None:
    """``(device name, device id)`` from ``obj.__dlpack_device__()``, or
    None when the object has none or it cannot answer (a torch tensor on
    the meta device raises)."""
    method = getattr(obj, "__dlpack_device__", None)
    if not callable(method):
        return None
    try:
        dev_type, dev_id = method()
        dev_type, dev_id = int(dev_type), int(dev_id)
    except Exception:  # noqa: BLE001 - any answer but a pair is "unknown"
        return None
    return DLPACK.get(dev_type, f"dlpack device type {dev_type}"), dev_id


def c_contiguous(shape: tuple[int, ...], strides: Any, itemsize: int) -> bool:
    """Whether an array interface's strides (None: C order) are C order;
    dimensions of 1 may have any stride."""
    if strides is None:
        return True
    expect = itemsize
    for dim, stride in zip(reversed(shape), reversed(tuple(strides))):
        if dim != 1 and stride != expect:
            return False
        expect *= dim
    return True


def _from_interface(obj: Any, name: str, device: str | None, index: int | None) -> Memory:
    """``__array_interface__`` or ``__cuda_array_interface__`` (``name``)."""
    ai = getattr(obj, name)
    try:
        addr, readonly = ai["data"]
        shape = tuple(int(n) for n in ai.get("shape", ()))
        itemsize = int(ai["typestr"][2:])
        strides = ai.get("strides")
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise TypeError(f"malformed {name}: {e!r}") from None
    nbytes = getattr(obj, "nbytes", None)
    if isinstance(nbytes, int) and not isinstance(nbytes, bool):
        itemsize = getattr(obj, "itemsize", itemsize)
    else:
        nbytes = itemsize
        for dim in shape:
            nbytes *= dim
    flags: Any = getattr(obj, "flags", None)
    try:
        contiguous = bool(flags["C_CONTIGUOUS"])
    except (TypeError, KeyError, IndexError):
        contiguous = c_contiguous(shape, strides, itemsize)
    return Memory(
        name.strip("_"),
        int(addr or 0),
        int(nbytes),
        device=device,
        index=index,
        readonly=bool(readonly),
        contiguous=contiguous,
        layout=(shape, strides),
        owner=obj,
    )


def _from_torch(t: Any) -> Memory:
    """A torch-like tensor: a callable ``data_ptr()``."""
    device: Any = getattr(t, "device", None)
    dev_type = getattr(device, "type", None)
    index = getattr(device, "index", None)
    if dev_type is None:
        is_cuda = getattr(t, "is_cuda", None)
        if is_cuda is not None:
            dev_type = "cuda" if is_cuda else "cpu"
        else:
            dl = dlpack_device(t)
            if dl is not None:
                dev_type, index = dl
    numel = getattr(t, "numel", None)
    element_size = getattr(t, "element_size", None)
    if callable(numel) and callable(element_size):
        nbytes: int | None = int(numel()) * int(element_size())
    elif isinstance(getattr(t, "nbytes", None), int):
        nbytes = int(t.nbytes)
    else:
        nbytes = None
    is_contiguous = getattr(t, "is_contiguous", None)
    contiguous = not callable(is_contiguous) or bool(is_contiguous())
    return Memory(
        "torch",
        int(t.data_ptr()),
        nbytes,
        device=None if dev_type is None else str(dev_type),
        index=index if isinstance(index, int) else None,
        contiguous=contiguous,
        owner=t,
    )


def _buffer_address(obj: Any, view: memoryview, nbytes: int) -> Memory:
    """The address of a C-contiguous buffer: bytes directly, writable
    buffers through a ctypes view of them."""
    if isinstance(obj, bytes):
        # Immutable and never resized: the bytes object itself retains it.
        view.release()
        addr = ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value or 0
        return Memory("buffer", addr, nbytes, device="cpu", readonly=True, owner=obj)
    if view.readonly:
        view.release()
        raise ValueError(
            f"read-only {type(obj).__name__} buffers are not supported (only "
            "bytes); pass a writable buffer or a numpy array over it"
        )
    if nbytes == 0:
        return Memory("buffer", 0, 0, device="cpu", owner=view)
    # The memoryview "view" holds a buffer export: while it lives, a
    # bytearray cannot be resized (which would move its memory), so it is
    # what an MR retains.
    arr = (ctypes.c_char * nbytes).from_buffer(view)
    addr = ctypes.addressof(arr)
    del arr
    return Memory("buffer", addr, nbytes, device="cpu", owner=view)


def _from_buffer(obj: Any, address: bool) -> Memory | None:
    """A buffer object, or None when ``obj`` is none.  With ``address``
    False only where it lives is asked (no export is kept, nothing is
    checked)."""
    try:
        view = memoryview(obj)
    except TypeError:
        return None
    nbytes = view.nbytes
    dl = dlpack_device(obj)
    if not address or (dl is not None and dl[0] not in HOST_DEVICES):
        view.release()
        if dl is None:
            return Memory("buffer", None, nbytes, device="cpu", owner=obj)
        return Memory("buffer", None, nbytes, device=dl[0], index=dl[1], owner=obj)
    if nbytes and not view.c_contiguous:
        view.release()
        raise ValueError("the buffer is not C-contiguous")
    mem = _buffer_address(obj, view, nbytes)
    if dl is not None:
        mem.device, mem.index = dl
    return mem


def describe(obj: Any, *, buffers: str = "address") -> Memory | None:
    """What ``obj`` exposes about its memory (see the module), or None when
    it is neither a tensor nor a buffer.

    ``buffers`` says what to do with a plain buffer object: ``"address"``
    takes its address (and checks it is C-contiguous and writable unless
    it is bytes), ``"where"`` only says where it lives (``addr`` None),
    ``"no"`` does not look (None).  A buffer on a device that is not host
    memory (by ``__dlpack_device__``) has no address either.

    Raises:
        TypeError: a malformed array interface.
        ValueError: a buffer that is not C-contiguous, or a read-only
            buffer other than bytes (only when its address is asked).
    """
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return None if buffers == "no" else _from_buffer(obj, buffers == "address")
    if callable(getattr(obj, "data_ptr", None)):
        return _from_torch(obj)
    if hasattr(obj, "__cuda_array_interface__"):
        dl = dlpack_device(obj)
        if dl is not None and dl[0] in CUDA_DEVICES:
            return _from_interface(obj, "__cuda_array_interface__", *dl)
        return _from_interface(obj, "__cuda_array_interface__", "cuda", None)
    if buffers == "no":
        return None
    if hasattr(obj, "__array_interface__"):
        dl = dlpack_device(obj)
        return _from_interface(obj, "__array_interface__", *(dl or ("cpu", None)))
    return _from_buffer(obj, buffers == "address")


# ------------------------------------------------------- integer columns
# The batches of the data path (wr/batch.c, wr/recv_batch.c, CQ.poll_into)
# read and write columns of integers in C; the 3.9 Limited API has no
# buffer protocol, so their address and element type are found here, once
# per column and call.

#: struct format letters of integer items (lower case: signed).
_INT_LETTERS = "bBhHiIlLqQnN"
_NATIVE_ORDERS = {"@", "=", "<" if sys.byteorder == "little" else ">"}


def _column_error(name: str, what: str) -> ValueError:
    return ValueError(f"{name} must be a 1-D C-contiguous array of integers: {what}")


def _torch_column(t: Any, name: str) -> tuple[int, int, int, bool, Any]:
    dtype = t.dtype
    if getattr(dtype, "is_floating_point", False) or getattr(dtype, "is_complex", False):
        raise _column_error(name, f"its dtype is {dtype}")
    if str(dtype) == "torch.bool":
        raise _column_error(name, "its dtype is torch.bool")
    dev = getattr(getattr(t, "device", None), "type", "cpu")
    if dev != "cpu":
        raise _column_error(name, f"it lives on {dev}, not the CPU")
    if t.dim() != 1:
        raise _column_error(name, f"it has {t.dim()} dimensions")
    if not t.is_contiguous():
        raise _column_error(name, "it is not contiguous")
    # What a tensor reports is checked, not trusted: a count below zero
    # would read as the C side's "one int for every row".
    count, size = int(t.numel()), int(t.element_size())
    if count < 0:
        raise _column_error(name, f"its numel() is {count}")
    if size not in (1, 2, 4, 8):
        raise _column_error(name, f"its element_size() is {size}")
    return int(t.data_ptr()), count, size, bool(dtype.is_signed), t


def int_column(obj: Any, name: str, writable: bool) -> tuple[int, int, int, bool, Any]:
    """(address, count, itemsize, signed, owner) of a 1-D C-contiguous
    column of integers: a buffer (numpy array, ``array.array``,
    memoryview, bytearray) or a torch CPU tensor.  ``owner`` keeps the
    memory (a buffer export) while the caller reads or writes it; the
    caller releases a memoryview owner after.  A read-only buffer is copied
    unless ``writable`` is asked (then ValueError).

    Raises:
        TypeError: obj is neither a buffer nor a tensor.
        ValueError: not 1-D, not contiguous, not integers, read-only
            where ``writable``.
    """
    if callable(getattr(obj, "data_ptr", None)) and hasattr(obj, "dtype"):
        return _torch_column(obj, name)
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(
            f"{name} must be an array of integers (numpy, array.array, memoryview, "
            f"a torch CPU tensor) or an int, not {type(obj).__name__}"
        ) from None
    fmt = view.format
    order, letter = (fmt[0], fmt[1:]) if len(fmt) == 2 else ("@", fmt)
    if letter not in _INT_LETTERS or view.itemsize not in (1, 2, 4, 8):
        bad = f"its item format is {fmt!r}"
    elif order not in _NATIVE_ORDERS:
        bad = f"its byte order is not the machine's ({fmt!r})"
    elif view.ndim != 1:
        bad = f"it has {view.ndim} dimensions"
    elif not view.c_contiguous:
        bad = "it is strided (numpy.ascontiguousarray makes a copy)"
    else:
        bad = None
    if bad is not None:
        view.release()
        raise _column_error(name, bad)
    kind = (view.itemsize, letter.islower())
    n = len(view)
    if n == 0:
        return 0, 0, kind[0], kind[1], view
    if view.readonly:
        if writable:
            view.release()
            raise ValueError(f"{name} is read-only: completions are written into it")
        data = view.tobytes()
        view.release()
        addr = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
        return addr, n, kind[0], kind[1], data
    arr = (ctypes.c_char * view.nbytes).from_buffer(view)
    addr = ctypes.addressof(arr)
    del arr
    return addr, n, kind[0], kind[1], view
