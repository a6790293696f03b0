"""GPUDirect RDMA with torch CUDA tensors, on real hardware.

The RDMA tests need torch with CUDA, a GPU, and an RDMA device that can
register GPU memory (dma-buf or a peer-memory module): two loopback RC QPs
move data GPU to GPU, checked with torch.equal.  The export tests need only
torch with CUDA: the real driver exports dma-buf fds for torch tensors.
Every part that is missing makes the tests skip, saying which.
"""

import os
import threading

import pytest

import ibverbs as ib
import ibverbs._cuda_driver as _cuda_driver
import ibverbs.cuda as cuda

from support import rdma as rig  # make_rc_pair, poll_until, ALL_ACCESS

pytestmark = pytest.mark.gpu

PAGE = os.sysconf("SC_PAGE_SIZE")
ACCESS = rig.ALL_ACCESS


def _flush_into(torch, tensor):
    with torch.cuda.device(tensor.device):
        cuda.flush_gpudirect_writes()


# --------------------------------------------------------------------------
# The driver side only: torch + CUDA, no RDMA device
# --------------------------------------------------------------------------


def _export_or_skip(ptr, n):
    try:
        return cuda._export_dmabuf(ptr, n)
    except cuda.CudaError as e:
        if e.code is None or e.code == _cuda_driver.CUDA_ERROR_NOT_SUPPORTED:
            pytest.skip(f"this CUDA driver cannot export dma-bufs: {e}")
        raise


def _check_export(ptr, n, fd, start, length):
    assert start % PAGE == 0 and length % PAGE == 0
    assert start <= ptr < ptr + n <= start + length
    assert start + PAGE > ptr  # no more than needed
    assert start + length - PAGE < ptr + n
    link = os.readlink(f"/proc/self/fd/{fd}")
    # "/dmabuf:<name>" since Linux 5.3 (dma-buf's own pseudo filesystem)
    assert link.startswith("/dmabuf:") or link == "anon_inode:dmabuf", link
    with open(f"/proc/self/fdinfo/{fd}") as f:
        info = dict(line.split(":", 1) for line in f if ":" in line)
    assert int(info["size"]) == length


@pytest.mark.parametrize(
    "offset,n",
    [
        (0, 4 * PAGE),  # aligned start and end
        (0, 1),  # one byte
        (100, 200),  # inside one page
        (PAGE - 10, 20),  # crossing a page
        (3, 5 * PAGE + 17),  # unaligned, several pages
    ],
)
def test_driver_exports_dmabuf_for_torch_tensor(torch, offset, n):
    base = torch.zeros(8 * PAGE, dtype=torch.uint8, device="cuda")
    base_ptr = base.data_ptr()
    pad = -base_ptr % PAGE  # start from a page boundary inside the tensor
    view = base[pad + offset : pad + offset + n]
    assert view.is_contiguous()
    ptr = view.data_ptr()
    fd, start, length = _export_or_skip(ptr, n)
    try:
        _check_export(ptr, n, fd, start, length)
    finally:
        os.close(fd)


def test_driver_export_from_a_thread_without_a_context(torch):
    t = torch.ones(3 * PAGE, dtype=torch.uint8, device="cuda")
    ptr, n = t.data_ptr() + 5, 2 * PAGE
    torch.cuda.synchronize()
    out = {}

    def run():
        try:
            out["result"] = cuda._export_dmabuf(ptr, n)
        except BaseException as e:  # re-raised below
            out["error"] = e

    th = threading.Thread(target=run)
    th.start()
    th.join()
    if "error" in out:
        e = out["error"]
        if isinstance(e, cuda.CudaError) and e.code in (
            None,
            _cuda_driver.CUDA_ERROR_NOT_SUPPORTED,
        ):
            pytest.skip(f"this CUDA driver cannot export dma-bufs: {e}")
        raise e
    fd, start, length = out["result"]
    try:
        _check_export(ptr, n, fd, start, length)
    finally:
        os.close(fd)


def test_flush_gpudirect_writes_on_a_real_driver(torch):
    with torch.cuda.device(0):
        torch.zeros(1, device="cuda")  # the primary context is current
        assert cuda.flush_gpudirect_writes() in (True, False)


def test_host_tensor_is_refused(torch):
    with pytest.raises(ValueError, match=r"ibverbs\.reg_tensor"):
        cuda.register_tensor(None, torch.zeros(16), ACCESS)


# --------------------------------------------------------------------------
# GPU to GPU over RDMA (loopback RC pair)
# --------------------------------------------------------------------------


@pytest.fixture
def pair(rdma_ctx, gpudirect):
    qa, ca, qb, cb = rig.make_rc_pair(rdma_ctx, gpudirect)
    yield qa, ca, qb, cb
    for q in (qa, qb):
        q.close()
    for c in (ca, cb):
        c.close()


def _tensors(torch, n=1 << 16, offset=0):
    """src with data, dst zeroed; with offset, views that start off a page
    boundary inside larger tensors."""
    src_base = torch.arange(n + offset, dtype=torch.float32, device="cuda") * 3 + 1
    dst_base = torch.zeros(n + offset, dtype=torch.float32, device="cuda")
    src, dst = src_base[offset:], dst_base[offset:]
    torch.cuda.synchronize()
    return src, dst


def _completed_as_copy(torch, cq, src, dst):
    """CQ's completions succeed and dst (flushed) then equals src."""
    for wc in rig.poll_until(cq):
        wc.raise_for_status()
    _flush_into(torch, dst)
    assert torch.equal(src, dst)


@pytest.mark.integration
@pytest.mark.parametrize("offset", [0, 3], ids=["aligned", "unaligned"])
def test_rdma_write_gpu_to_gpu(torch, gpudirect, pair, offset):
    qa, ca, qb, cb = pair
    src, dst = _tensors(torch, offset=offset)
    with (
        cuda.register_tensor(gpudirect, src, ACCESS) as smr,
        cuda.register_tensor(gpudirect, dst, ACCESS) as dmr,
    ):
        assert smr.addr == src.data_ptr() and dmr.addr == dst.data_ptr()
        qa.post_send(rig.send_wr([smr.sge()], wr_id=1, opcode=ib.WROpcode.RDMA_WRITE, dest=dmr))
        _completed_as_copy(torch, ca, src, dst)


@pytest.mark.integration
def test_rdma_read_gpu_to_gpu(torch, gpudirect, pair):
    qa, ca, qb, cb = pair
    src, dst = _tensors(torch)
    with (
        cuda.register_tensor(gpudirect, src, ACCESS) as smr,
        cuda.register_tensor(gpudirect, dst, ACCESS) as dmr,
    ):
        # qa reads the peer's src into its dst
        qa.post_send(rig.send_wr([dmr.sge()], wr_id=2, opcode=ib.WROpcode.RDMA_READ, dest=smr))
        _completed_as_copy(torch, ca, src, dst)


@pytest.mark.integration
def test_send_gpu_to_gpu(torch, gpudirect, pair):
    qa, ca, qb, cb = pair
    src, dst = _tensors(torch, n=4096, offset=5)
    with (
        cuda.register_tensor(gpudirect, src, ACCESS) as smr,
        cuda.register_tensor(gpudirect, dst, ACCESS) as dmr,
    ):
        qb.post_recv(ib.RecvWR(wr_id=7, sg_list=[dmr.sge()]))
        qa.post_send(rig.send_wr([smr.sge()], wr_id=8, opcode=ib.WROpcode.SEND))
        for wc in rig.poll_until(ca):
            wc.raise_for_status()
        (wc,) = rig.poll_until(cb)
        wc.raise_for_status()
        assert wc.wr_id == 7 and wc.byte_len == src.nbytes
        _flush_into(torch, dst)
        assert torch.equal(src, dst)


@pytest.mark.integration
def test_sge_pieces_gpu_to_gpu(torch, gpudirect, pair):
    """Two SGEs from one region, written to two places."""
    qa, ca, qb, cb = pair
    src, dst = _tensors(torch, n=8192)
    half = src.nbytes // 2
    with (
        cuda.register_tensor(gpudirect, src, ACCESS) as smr,
        cuda.register_tensor(gpudirect, dst, ACCESS) as dmr,
    ):
        for i, off in enumerate((half, 0)):
            qa.post_send(
                rig.send_wr(
                    [smr.sge(half, offset=off)],
                    wr_id=10 + i,
                    opcode=ib.WROpcode.RDMA_WRITE,
                    dest=dmr,
                    at=off,
                )
            )
        for wc in rig.poll_until(ca, 2):
            wc.raise_for_status()
        _flush_into(torch, dst)
        assert torch.equal(src, dst)
