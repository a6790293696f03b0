"""ibverbs._tensor, the one tensor introspection under reg_tensor,
tensor_addr_len, cuda.register_tensor and cuda.tensor_ptr_len: each
protocol with a small fake exposing only that protocol, and real numpy
arrays (no device, no CUDA)."""

import ctypes

import pytest

from ibverbs import _tensor, cuda, reg_tensor, tensor_addr_len

np = pytest.importorskip("numpy")


class DLPackBuffer(bytearray):
    """Only a buffer and __dlpack_device__."""

    def __init__(self, dev_type, dev_id=0, n=64):
        super().__init__(n)
        self.dev = (dev_type, dev_id)

    def __dlpack_device__(self):
        return self.dev


class CAIOnly:
    """Only __cuda_array_interface__."""

    def __init__(self, ptr, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {
            "data": (ptr, False),
            "shape": shape,
            "typestr": typestr,
            "strides": strides,
            "version": 3,
        }


class AIOnly:
    """Only __array_interface__ (over numpy's memory, to have an address)."""

    def __init__(self, arr, dlpack=None):
        self.__array_interface__ = dict(arr.__array_interface__)
        self._arr = arr
        if dlpack is not None:
            self.__dlpack_device__ = lambda: dlpack


class TorchLike:
    def __init__(self, ptr=0x7000, n=16, contiguous=True, device=None, is_cuda=None, dlpack=None):
        self._ptr, self._n, self._contiguous = ptr, n, contiguous
        if device is not None:
            self.device = device
        if is_cuda is not None:
            self.is_cuda = is_cuda
        if dlpack is not None:
            self.__dlpack_device__ = lambda: dlpack

    def data_ptr(self):
        return self._ptr

    def numel(self):
        return self._n

    def element_size(self):
        return 4

    def is_contiguous(self):
        return self._contiguous


class Dev:
    def __init__(self, type, index=None):
        self.type, self.index = type, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


def test_dlpack_device_names_and_failures():
    assert _tensor.dlpack_device(DLPackBuffer(1)) == ("cpu", 0)
    assert _tensor.dlpack_device(DLPackBuffer(2, 3)) == ("cuda", 3)
    assert _tensor.dlpack_device(DLPackBuffer(3)) == ("cuda_host", 0)
    assert _tensor.dlpack_device(DLPackBuffer(10, 1)) == ("rocm", 1)
    assert _tensor.dlpack_device(DLPackBuffer(99)) == ("dlpack device type 99", 0)
    assert _tensor.dlpack_device(object()) is None

    class Raises:
        def __dlpack_device__(self):
            raise RuntimeError("meta tensor")

    assert _tensor.dlpack_device(Raises()) is None


def test_numpy_array():
    a = np.arange(16, dtype=np.float32)
    mem = _tensor.describe(a)
    assert (mem.kind, mem.addr, mem.nbytes) == ("array_interface", a.ctypes.data, 64)
    assert (mem.device, mem.index, mem.host, mem.contiguous, mem.readonly) == (
        "cpu",
        0,
        True,
        True,
        False,
    )
    assert mem.owner is a
    assert mem.layout[0] == (16,)
    assert not _tensor.describe(a[::2]).contiguous
    a.flags.writeable = False
    assert _tensor.describe(a).readonly


def test_array_interface_alone():
    a = np.zeros((4, 4), dtype=np.int16)
    mem = _tensor.describe(AIOnly(a))
    assert (mem.addr, mem.nbytes, mem.device, mem.index) == (a.ctypes.data, 32, "cpu", None)
    t = a.T
    assert not _tensor.describe(AIOnly(t)).contiguous
    assert _tensor.describe(AIOnly(a, dlpack=(2, 1))).device == "cuda"


def test_malformed_interface_is_a_type_error():
    with pytest.raises(TypeError, match="malformed __cuda_array_interface__"):
        _tensor.describe(CAIOnly(0x1000, (4,), typestr="?"))


def test_cuda_array_interface_alone():
    mem = _tensor.describe(CAIOnly(0x10000, (2, 8)))
    assert (mem.kind, mem.addr, mem.nbytes) == ("cuda_array_interface", 0x10000, 64)
    assert (mem.device, mem.index, mem.host, mem.contiguous) == ("cuda", None, False, True)
    mem = _tensor.describe(CAIOnly(0x10000, (2, 8), strides=(64, 4)))
    assert not mem.contiguous
    # Dimensions of 1 may have any stride.
    assert _tensor.describe(CAIOnly(0x10000, (1, 8), strides=(999, 4))).contiguous


def test_dlpack_buffer_host_and_device():
    mem = _tensor.describe(DLPackBuffer(3))  # pinned CUDA host memory
    assert (mem.kind, mem.device, mem.host, mem.nbytes) == ("buffer", "cuda_host", True, 64)
    assert mem.addr == ctypes.addressof((ctypes.c_char * 64).from_buffer(mem.owner))
    mem.release()
    mem = _tensor.describe(DLPackBuffer(2, 1))
    assert (mem.device, mem.index, mem.addr, mem.host) == ("cuda", 1, None, False)


def test_torch_like_devices():
    mem = _tensor.describe(TorchLike(device=Dev("cuda", 2)))
    assert (mem.kind, mem.addr, mem.nbytes, mem.device, mem.index) == (
        "torch",
        0x7000,
        64,
        "cuda",
        2,
    )
    assert _tensor.describe(TorchLike(is_cuda=False)).device == "cpu"
    assert _tensor.describe(TorchLike(is_cuda=True)).device == "cuda"
    assert _tensor.describe(TorchLike(dlpack=(10, 0))).device == "rocm"
    assert _tensor.describe(TorchLike()).device is None
    assert not _tensor.describe(TorchLike(contiguous=False)).contiguous


def test_buffers_modes():
    b = bytearray(8)
    assert _tensor.describe(b, buffers="no") is None
    where = _tensor.describe(b, buffers="where")
    assert (where.addr, where.nbytes, where.device) == (None, 8, "cpu")
    b.extend(b"x")  # no export kept: still resizable
    assert _tensor.describe(object()) is None


# The public names over it keep their own messages.


def test_reg_tensor_refuses_a_device_named_by_dlpack():
    with pytest.raises(ValueError, match=r"device 'rocm'.*ibverbs\.cuda\.register_tensor"):
        reg_tensor(None, DLPackBuffer(10), 0)
    with pytest.raises(ValueError, match="gives no address"):
        tensor_addr_len(DLPackBuffer(2))


def test_host_names_take_pinned_host_memory():
    obj = DLPackBuffer(3)
    addr, n = tensor_addr_len(obj)
    assert n == 64 and addr


def test_register_tensor_refuses_other_devices_without_cuda():
    with pytest.raises(ValueError, match="CUDA memory only"):
        cuda.register_tensor(None, DLPackBuffer(10), 0)
    with pytest.raises(ValueError, match=r"ibverbs\.reg_tensor"):
        cuda.register_tensor(None, DLPackBuffer(1), 0)
    with pytest.raises(TypeError, match="no address"):
        cuda.register_tensor(None, DLPackBuffer(2), 0)
    with pytest.raises(ValueError, match=r"__dlpack_device__ rocm.*ibverbs\.reg_tensor"):
        cuda.register_tensor(None, TorchLike(dlpack=(10, 0)), 0)


def test_tensor_ptr_len_over_each_protocol():
    assert cuda.tensor_ptr_len(TorchLike()) == (0x7000, 64)
    assert cuda.tensor_ptr_len(CAIOnly(0x10000, (16,))) == (0x10000, 64)
    with pytest.raises(TypeError, match="data_ptr"):
        cuda.tensor_ptr_len(np.zeros(4))
    with pytest.raises(ValueError, match="empty"):
        cuda.tensor_ptr_len(CAIOnly(0x10000, (0,)))
    assert tensor_addr_len(TorchLike(device=Dev("cuda", 0))) == (0x7000, 64)


def test_real_torch_cpu_tensor():
    torch = pytest.importorskip("torch")
    t = torch.arange(8, dtype=torch.int32)
    mem = _tensor.describe(t)
    assert (mem.kind, mem.addr, mem.nbytes, mem.device, mem.host) == (
        "torch",
        t.data_ptr(),
        32,
        "cpu",
        True,
    )
    assert _tensor.dlpack_device(t) == ("cpu", 0)
    assert not _tensor.describe(t.view(2, 4).t()).contiguous
    with pytest.raises(ValueError, match=r"not a CUDA tensor \(device cpu\)"):
        cuda.register_tensor(None, t, 0)
