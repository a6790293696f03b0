"""Fixtures for every test directory (tests/conftest.py loads this module
as a plugin): the device's name, a Context, PD and CQ on it, the port
and GID index, and an RC pair."""

from __future__ import annotations

import gc

import pytest

from support import GID_INDEX, PORT
from support import device_name as _device_name


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
