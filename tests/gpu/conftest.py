"""Fixtures for the GPUDirect tests (marker gpu): torch with CUDA, a GPU and,
for the RDMA tests, an RDMA device that can register GPU memory (dma-buf or
peer memory).  Each fixture skips with the reason when its part is missing.
"""

import os
import warnings

import pytest

# torch's CUDA memory is dma-buf exportable only when VMM-backed; this must
# be set before torch initialises CUDA (a value the user set wins).
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")


@pytest.fixture(scope="session")
def torch():
    """torch, with CUDA and at least one GPU."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # import-time warnings are not ours
        try:
            import torch
        except ImportError as e:
            pytest.skip(f"torch is not installed ({e}): pip install torch")
    if not torch.backends.cuda.is_built():
        pytest.skip(f"torch {torch.__version__} is built without CUDA")
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        pytest.skip("no GPU visible to torch (torch.cuda.is_available() is False)")
    return torch


@pytest.fixture(scope="session")
def rdma_device_name():
    import ibverbs as ib

    name = os.environ.get("IBVERBS_TEST_DEVICE")
    if name:
        return name
    devs = ib.get_device_list()
    if not devs:
        pytest.skip("no RDMA device (an RDMA NIC, or set IBVERBS_TEST_DEVICE)")
    return devs[0].name


@pytest.fixture
def rdma_ctx(rdma_device_name):
    import ibverbs as ib

    ctx = ib.Context(rdma_device_name)
    yield ctx
    # Children (PD, MRs, QPs) hold the context; the GC frees them in order.
    del ctx
    import gc

    gc.collect()


@pytest.fixture
def rdma_pd(rdma_ctx):
    return rdma_ctx.alloc_pd()


@pytest.fixture
def gpudirect(torch, rdma_device_name, rdma_pd):
    """The PD, once a small CUDA tensor registered on it; skips when neither
    dma-buf nor peer memory works on this host."""
    import ibverbs as ib
    import ibverbs.cuda

    probe = torch.zeros(1024, dtype=torch.uint8, device="cuda")
    try:
        ib.cuda.register_tensor(rdma_pd, probe, ib.AccessFlags.LOCAL_WRITE).close()
    except ib.cuda.GpuDirectError as e:
        pytest.skip(
            f"{rdma_device_name} cannot register GPU memory "
            f"(needs dma-buf support or a peer-memory module): {e}"
        )
    return rdma_pd
