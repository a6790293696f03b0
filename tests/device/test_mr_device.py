"""Memory regions against a real device (rxe0 in the Soft-RoCE guest)."""

import errno
import gc
import os
import weakref

import numpy as np
import pytest

import ibverbs as ib

from support.rdma import ALL_ACCESS

pytestmark = pytest.mark.integration

A = ib.AccessFlags


def test_reg_mr_numpy_attributes(pd):
    buf = np.zeros(8192, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS)
    assert mr.addr == buf.ctypes.data
    assert mr.length == 8192
    assert isinstance(mr.lkey, int) and isinstance(mr.rkey, int)
    assert mr.lkey != 0 and mr.rkey != 0
    assert isinstance(mr.handle, int)
    assert mr.pd is pd
    assert mr.owner is None
    assert mr.access == int(ALL_ACCESS)
    assert mr.is_dmabuf is False
    assert not mr.closed
    assert f"lkey={mr.lkey:#x}" in repr(mr)
    # Two registrations of the same memory get distinct keys.
    mr2 = pd.reg_mr(buf.ctypes.data, 4096, A.LOCAL_WRITE)
    assert mr2.lkey != mr.lkey
    mr2.close()
    mr.close()
    assert mr.closed
    assert repr(mr) == "<ibverbs.MR closed>"


def test_access_defaults_and_plain_int(pd):
    buf = np.zeros(4096, dtype=np.uint8)
    with pd.reg_mr(buf.ctypes.data, 4096) as mr:
        assert mr.access == 0
    with pd.reg_mr(buf.ctypes.data, 4096, 1, owner=buf) as mr:
        assert mr.access == 1


def test_owner_retained_until_close(pd):
    buf = np.zeros(4096, dtype=np.uint8)
    ref = weakref.ref(buf)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)
    del buf
    gc.collect()
    assert ref() is not None
    assert mr.owner is ref()
    mr.close()
    gc.collect()
    assert ref() is None
    assert mr.owner is None


def test_owner_released_on_dealloc(pd):
    buf = np.zeros(4096, dtype=np.uint8)
    ref = weakref.ref(buf)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)
    del buf
    del mr
    assert ref() is None


def test_owner_cycle_is_collected(pd):
    class Holder:
        pass

    h = Holder()
    h.buf = np.zeros(4096, dtype=np.uint8)
    h.mr = pd.reg_mr(h.buf.ctypes.data, 4096, ALL_ACCESS, owner=h)
    ref = weakref.ref(h)
    del h
    gc.collect()
    assert ref() is None
    pd.close()  # the MR was deregistered: no child left


def test_reg_tensor_passes_owner(pd):
    buf = np.arange(1024, dtype=np.uint32)
    mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
    assert mr.addr == buf.ctypes.data and mr.length == buf.nbytes
    assert mr.owner is not None
    mr.close()


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"addr": "0x1000", "length": 4096}, TypeError),
        ({"addr": 1.5, "length": 4096}, TypeError),
        ({"addr": -1, "length": 4096}, ValueError),
        ({"addr": 4096, "length": 0}, ValueError),
        ({"addr": 4096, "length": -1}, ValueError),
        ({"addr": 2**64 - 4096, "length": 8192}, ValueError),
        ({"addr": 4096, "length": 4096, "access": -1}, ValueError),
        ({"addr": 4096, "length": 4096, "access": 2**40}, ValueError),
        ({"addr": 4096, "length": 4096, "access": "rw"}, TypeError),
    ],
)
def test_reg_mr_bad_arguments(pd, kwargs, exc):
    with pytest.raises(exc):
        pd.reg_mr(**kwargs)


def test_reg_mr_bad_access_is_einval(pd):
    buf = np.zeros(4096, dtype=np.uint8)
    # Remote write without local write is refused by the kernel.
    with pytest.raises(ib.VerbsError) as ei:
        pd.reg_mr(buf.ctypes.data, 4096, A.REMOTE_WRITE)
    assert ei.value.errno == errno.EINVAL
    assert ei.value.operation == "ibv_reg_mr"
    assert "access=0x" in str(ei.value)


def test_reg_mr_unmapped_address_is_efault(pd):
    with pytest.raises(ib.VerbsError) as ei:
        pd.reg_mr(0x1000, 4096, A.LOCAL_WRITE)
    assert ei.value.errno in (errno.EFAULT, errno.ENOMEM, errno.EINVAL)
    assert ei.value.operation == "ibv_reg_mr"


def test_reg_dmabuf_mr_unsupported_on_rxe(pd):
    r, w = os.pipe()
    try:
        with pytest.raises(ib.VerbsError) as ei:
            pd.reg_dmabuf_mr(0, 4096, 0x10000, r, A.LOCAL_WRITE)
    finally:
        os.close(r)
        os.close(w)
    assert ei.value.errno == errno.EOPNOTSUPP
    assert ei.value.operation == "ibv_reg_dmabuf_mr"


def test_reg_dmabuf_mr_bad_arguments(pd):
    with pytest.raises(ib.VerbsError) as ei:  # EBADF, as the published package
        pd.reg_dmabuf_mr(0, 4096, 0, -1, 0)
    assert ei.value.errno == errno.EBADF
    with pytest.raises(ValueError):
        pd.reg_dmabuf_mr(0, 0, 0, 3, 0)
    with pytest.raises(TypeError):
        pd.reg_dmabuf_mr(0, 4096, None, 3, 0)


def test_sge_bounds(pd):
    buf = np.zeros(4096, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, 4096, ALL_ACCESS, owner=buf)
    s = mr.sge()
    assert (s.addr, s.length, s.lkey) == (mr.addr, 4096, mr.lkey)
    assert s.mr is mr
    s = mr.sge(100, offset=10)
    assert (s.addr, s.length) == (mr.addr + 10, 100)
    s = mr.sge(offset=4000)
    assert (s.addr, s.length) == (mr.addr + 4000, 96)
    assert mr.sge(0, offset=4096).length == 0
    with pytest.raises(ValueError, match="past the end"):
        mr.sge(4097)
    with pytest.raises(ValueError, match="past the end"):
        mr.sge(100, offset=4000)
    with pytest.raises(ValueError, match="past the end"):
        mr.sge(offset=4097)
    with pytest.raises(ValueError):
        mr.sge(offset=-1)
    with pytest.raises(ValueError):
        mr.sge(-1)
    with pytest.raises(TypeError):
        mr.sge("10")
    mr.close()
    with pytest.raises(ib.VerbsError) as ei:
        mr.sge()
    assert ei.value.errno == errno.EBADF


def test_use_after_close_raises(pd):
    buf = np.zeros(4096, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, 4096, ALL_ACCESS)
    mr.close()
    mr.close()  # idempotent
    for name in ("lkey", "rkey", "addr", "length", "handle"):
        with pytest.raises(ib.VerbsError) as ei:
            getattr(mr, name)
        assert ei.value.errno == errno.EBADF
        assert "MR is closed" in str(ei.value)
    with pytest.raises(ib.VerbsError):
        with mr:
            pass
    pd.close()
    with pytest.raises(ib.VerbsError) as ei:
        pd.reg_mr(buf.ctypes.data, 4096, ALL_ACCESS)
    assert ei.value.errno == errno.EBADF


def test_context_manager(pd):
    buf = np.zeros(4096, dtype=np.uint8)
    with pd.reg_mr(buf.ctypes.data, 4096, ALL_ACCESS) as mr:
        assert not mr.closed
    assert mr.closed


def test_close_pd_with_open_mrs_is_ebusy(ctx, pd):
    buf = np.zeros(8192, dtype=np.uint8)
    mrs = [pd.reg_mr(buf.ctypes.data + i * 4096, 4096, ALL_ACCESS) for i in range(2)]
    with pytest.raises(ib.VerbsError) as ei:
        pd.close()
    assert ei.value.errno == errno.EBUSY
    assert "MR x2" in str(ei.value)
    with pytest.raises(ib.VerbsError) as ei:
        ctx.close()
    assert ei.value.errno == errno.EBUSY and "PD x1" in str(ei.value)
    # Everything still works after the refusals.
    assert not pd.closed and not ctx.closed
    assert mrs[0].lkey != mrs[1].lkey
    extra = pd.reg_mr(buf.ctypes.data, 8192, ALL_ACCESS)
    for m in mrs + [extra]:
        m.close()
    pd.close()
    ctx.close()
    assert pd.closed and ctx.closed


def test_many_registrations_do_not_leak(pd):
    buf = np.zeros(1 << 16, dtype=np.uint8)
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(200):
        mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)
        del mr
    # Every MR was deregistered: the PD has no children left.
    pd.close()
    assert len(os.listdir("/proc/self/fd")) == fds
