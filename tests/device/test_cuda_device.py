"""ibverbs.cuda on a real PD (rxe0 in the Soft-RoCE guest), with the fake
libcuda (tests/fakes/fakecuda.c) standing in for the CUDA driver.

The fake's "device memory" is host memory, so rxe can register it through the
peer-memory fallback (reg_mr on the raw pointer) and move data in and out.
"""

import ctypes
import errno
import gc
import os
import weakref

import pytest

import ibverbs as ib
import ibverbs.cuda as cuda

from support import rdma as rig  # make_rc_pair, poll_until, ALL_ACCESS

pytestmark = pytest.mark.integration

PAGE = os.sysconf("SC_PAGE_SIZE")


ACCESS = rig.ALL_ACCESS


class CudaArray:
    def __init__(self, ptr, n):
        self.ptr, self.n = ptr, n

    @property
    def __cuda_array_interface__(self):
        return {
            "data": (self.ptr, False),
            "shape": (self.n,),
            "typestr": "|u1",
            "strides": None,
            "version": 3,
        }


def gpu_alloc(fake_cuda, n, misalign=0):
    ptr = fake_cuda.alloc(n, 0, misalign)
    fake_cuda.allocated.append(ptr)
    return ptr


def nfds():
    return len(os.listdir("/proc/self/fd"))


def test_rxe_refuses_dmabuf_then_reg_mr_without_peer_memory(fake_cuda, pd):
    # rxe answers EOPNOTSUPP to the dma-buf; reg_mr is tried next even with
    # no peer-memory module loaded (as the published package does), and on
    # rxe (the fake's device memory is host memory) it works.
    n = 3 * PAGE + 100
    ptr = gpu_alloc(fake_cuda, n, misalign=40)
    t = CudaArray(ptr, n)
    cuda.register_tensor(pd, t, ACCESS).close()  # warm up
    before = nfds()
    for _ in range(20):
        gmr = cuda.register_tensor(pd, t, ACCESS)
        assert gmr.path == "peermem" and gmr.mr.addr == ptr
        gmr.close()
    # the export happened, for the page-aligned range ...
    start = ptr - ptr % PAGE
    assert fake_cuda.last_export()["ptr"] == start
    assert fake_cuda.last_export()["size"] == -(-(ptr + n - start) // PAGE) * PAGE
    assert fake_cuda.export_calls() == 21
    # nothing leaked
    assert fake_cuda.open_exports() == 0
    assert nfds() == before


def test_rxe_reg_dmabuf_mr_answers_eopnotsupp(fake_cuda, pd):
    ptr = gpu_alloc(fake_cuda, PAGE)
    fd, start, length = cuda._export_dmabuf(ptr, PAGE)
    try:
        with pytest.raises(ib.VerbsError) as info:
            pd.reg_dmabuf_mr(0, PAGE, ptr, fd, ACCESS)
    finally:
        os.close(fd)
    assert info.value.errno == errno.EOPNOTSUPP
    assert fake_cuda.open_exports() == 0


def test_rxe_peer_memory_fallback(fake_cuda, pd):
    (fake_cuda.sysfs / "module" / "nvidia_peermem").mkdir(parents=True)
    n = 2 * PAGE + 10
    ptr = gpu_alloc(fake_cuda, n, misalign=8)
    t = CudaArray(ptr, n)
    tref = weakref.ref(t)
    before = nfds()
    gmr = cuda.register_tensor(pd, t, ACCESS)
    assert gmr.path == "peermem"
    assert gmr.addr == ptr and gmr.length == n
    assert isinstance(gmr.mr, ib.MR) and gmr.mr.addr == ptr
    assert gmr.lkey == gmr.mr.lkey and gmr.rkey == gmr.mr.rkey
    sge = gmr.sge(100, offset=8)
    assert (sge.addr, sge.length, sge.lkey) == (ptr + 8, 100, gmr.lkey)
    assert fake_cuda.open_exports() == 0
    mr = gmr.mr
    del t
    gc.collect()
    assert tref() is not None
    gmr.close()
    assert mr.closed and gmr.closed
    gc.collect()
    assert tref() is None
    assert nfds() == before


def test_rxe_rdma_on_fallback_regions(fake_cuda, ctx, pd):
    (fake_cuda.sysfs / "module" / "nv_peer_mem").mkdir(parents=True)
    n = 3000
    src_ptr = gpu_alloc(fake_cuda, n, misalign=123)
    dst_ptr = gpu_alloc(fake_cuda, n, misalign=7)
    back_ptr = gpu_alloc(fake_cuda, n)
    pattern = bytes((i * 7 + 3) & 0xFF for i in range(n))
    ctypes.memmove(src_ptr, pattern, n)
    src = cuda.register_tensor(pd, CudaArray(src_ptr, n), ACCESS)
    dst = cuda.register_tensor(pd, CudaArray(dst_ptr, n), ACCESS)
    back = cuda.register_tensor(pd, CudaArray(back_ptr, n), ACCESS)
    qa, ca, qb, cb = rig.make_rc_pair(ctx, pd)
    try:
        # write src -> dst
        qa.post_send(rig.send_wr([src.sge()], wr_id=1, opcode=ib.WROpcode.RDMA_WRITE, dest=dst))
        for wc in rig.poll_until(ca):
            wc.raise_for_status()
        assert ctypes.string_at(dst_ptr, n) == pattern
        # read dst -> back, at an offset
        qa.post_send(
            rig.send_wr(
                [back.sge(n - 100, offset=100)],
                wr_id=2,
                opcode=ib.WROpcode.RDMA_READ,
                dest=dst,
                at=100,
            )
        )
        for wc in rig.poll_until(ca):
            wc.raise_for_status()
        assert ctypes.string_at(back_ptr + 100, n - 100) == pattern[100:]
    finally:
        for q in (qa, qb):
            q.close()
        for c in (ca, cb):
            c.close()
        for g in (src, dst, back):
            g.close()
