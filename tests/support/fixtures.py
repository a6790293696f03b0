"""Fixtures for every test directory (tests/conftest.py loads this module
as a plugin): the device's name, a Context, PD and CQ on it, the port
and GID index, an RC pair, and ibverbs.cuda on the fake libcuda."""

from __future__ import annotations

import gc

import pytest

from support import GID_INDEX, PORT
from support import device_name as _device_name
from support.fakes import load_fake_module


@pytest.fixture
def device_name():
    name = _device_name()
    if name is None:
        pytest.skip("no RDMA device")
    return name


@pytest.fixture
def ctx(device_name):
    import ibverbs as ib

    c = ib.Context(device_name)
    yield c
    # Tests close what they create; the GC closes the rest in a safe
    # order, since children hold their parents.
    gc.collect()


@pytest.fixture
def port():
    return PORT


@pytest.fixture
def gid_index():
    return GID_INDEX


@pytest.fixture
def pd(ctx):
    return ctx.alloc_pd()


@pytest.fixture
def cq(ctx):
    return ctx.create_cq(256)


@pytest.fixture
def counted_objects(device_name):
    """A Context, a PD, a CQ and an RC QP for the tests of verbs a provider
    refuses: after the test each closes at once (no child was left) and
    the device's resource counts are as before."""
    import ibverbs as ib

    from support.process import rdma_counts

    before = rdma_counts(device_name)
    ctx = ib.Context(device_name)
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(16)
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    yield ctx, pd, cq, qp
    for o in (qp, cq, pd, ctx):
        o.close()
    assert rdma_counts(device_name) == before


@pytest.fixture
def need_cm():
    """Skips unless librdmacm loads and a device is listed (the rdma_cm
    tests: ``pytest.mark.usefixtures("need_cm")``)."""
    import ibverbs as ib

    if not ib.has_rdmacm():
        pytest.skip("librdmacm.so.1 cannot be loaded: " + ib._ibverbs._rdmacm_status()[1])
    if not ib.get_device_list():
        pytest.skip("no RDMA device")


@pytest.fixture
def pair_options():
    """Keyword arguments of support.rdma.make_rc_pair for ``pair``: none
    here; a test module that needs others overrides this fixture."""
    return {}


@pytest.fixture
def pair(ctx, pd, pair_options):
    """Two RC QPs on the device connected to each other (loopback), each
    with its own CQ: (qp_a, cq_a, qp_b, cq_b), built by make_rc_pair with
    ``pair_options``.  Left to the GC, as ctx's other children."""
    from support.rdma import make_rc_pair

    return make_rc_pair(ctx, pd, **pair_options)


def fakes_build():
    """tests/fakes/build.py, which builds the test-only C libraries (loaded
    by path: tests/fakes is no package)."""
    return load_fake_module("build")


@pytest.fixture(scope="module")
def fake_libcuda(tmp_path_factory):
    """The path of the fake libcuda (tests/fakes/fakecuda.c), built into a
    temporary folder; skips without a C compiler."""
    build = fakes_build()
    if build.compiler() is None:
        pytest.skip("no C compiler (cc/gcc/clang or $CC) to build the fake libcuda")
    return build.build_fakecuda(tmp_path_factory.mktemp("fakecuda"))


@pytest.fixture
def fake_cuda(monkeypatch, tmp_path, fake_libcuda):
    """ibverbs.cuda on the fake libcuda (IBVERBS_LIBCUDA), with an empty
    sysfs root (IBVERBS_SYSFS_ROOT: no peer-memory module), the driver
    forgotten before and after.  Yields the fake's controller (FakeCuda),
    reset, with ``sysfs``, and ``alloc_tracked(n, misalign=0)``, whose
    "device memory" (``allocated``) is freed afterwards."""
    import ibverbs._cuda_driver as driver

    monkeypatch.setenv("IBVERBS_LIBCUDA", fake_libcuda)
    sysfs = tmp_path / "sys"
    sysfs.mkdir()
    monkeypatch.setenv("IBVERBS_SYSFS_ROOT", str(sysfs))
    driver.forget_driver()
    f = fakes_build().FakeCuda(fake_libcuda)
    f.reset()
    f.sysfs = sysfs
    f.allocated = []

    def alloc_tracked(n, misalign=0):
        f.allocated.append(f.alloc(n, 0, misalign))
        return f.allocated[-1]

    f.alloc_tracked = alloc_tracked
    yield f
    gc.collect()
    driver.forget_driver()
    f.reset()
    for ptr in f.allocated:
        f.free(ptr)


@pytest.fixture(scope="session")
def recording(tmp_path_factory):
    """A Runner (tests/fakes/recording.py) of code in a child process whose
    ibverbs loads the recording double of libibverbs, built once per
    session; skips without a C compiler."""
    mod = load_fake_module("recording")
    if mod.compiler() is None:
        pytest.skip("no C compiler (cc/gcc/clang or $CC) to build the recording double")
    lib = mod.build(tmp_path_factory.mktemp("recording"))
    return mod.Runner(lib, tmp_path_factory.mktemp("recording-runs"))


@pytest.fixture(scope="session")
def mlx5_fake(recording, tmp_path_factory):
    """A Runner (tests/fakes/mlx5.py) like ``recording`` whose child also
    loads the fake libmlx5.so.1 (IBVERBS_LIBMLX5); its Result has the
    fake's records (``mlx5``, ``mlx5_one``)."""
    mod = load_fake_module("mlx5")
    lib = mod.build(tmp_path_factory.mktemp("mlx5"))
    return mod.Runner(recording.lib, lib, tmp_path_factory.mktemp("mlx5-runs"))
