"""Fixtures for the two-node suite (marker ``twonode``).

These tests run as one pytest process per node under
``tools/rxe-vm --nodes 2`` (``make test-twonode``); each test function runs
on both nodes at once, and its two halves meet over TCP through
rendezvous.py.  test_mesh.py (fixtures ``mesh_node`` and ``chans``) runs
under ``--nodes 3`` or more, every node meeting every other.  Outside such
a run (no IBVERBS_NODE) every test skips, saying so; in such a run, a
session where no twonode test passed fails.
"""

import gc
import os

import pytest

import ibverbs as ib
from support import PassCount
from support.rendezvous import Node

IN_RIG = "IBVERBS_NODE" in os.environ and "IBVERBS_NODE_ADDRS" in os.environ


def pytest_collection_modifyitems(config, items):
    if IN_RIG:
        return
    skip = pytest.mark.skip(
        reason="two-node test: run under tools/rxe-vm --nodes 2 (make test-twonode)"
    )
    for item in items:
        if item.get_closest_marker("twonode"):
            item.add_marker(skip)


_twonode = PassCount("twonode")


def pytest_runtest_logreport(report):
    _twonode.add(report)


def pytest_sessionfinish(session, exitstatus):
    # Only a session that selected two-node tests (the device suite runs
    # under --nodes 2 too, one shard per node: see support/shards.py).
    selected = any(i.get_closest_marker("twonode") for i in getattr(session, "items", ()))
    if IN_RIG and selected and _twonode.passed == 0 and exitstatus == 0:
        print("\ntwonode: no two-node test passed")
        session.exitstatus = 1


@pytest.fixture(scope="session")
def rig_node():
    """This node among however many the rig runs (``--nodes N``)."""
    n = Node.from_env()
    yield n
    n.close()  # and every link made through it


@pytest.fixture(scope="session")
def node(rig_node):
    """This node, in a run of exactly two (most of the suite)."""
    if len(rig_node.addrs) != 2:
        pytest.skip(f"the twonode suite wants 2 nodes, not {len(rig_node.addrs)}")
    return rig_node


@pytest.fixture(scope="session")
def link(node):
    return node.connect(peer=1 - node.me)


@pytest.fixture(scope="session")
def mesh_node(rig_node):
    """This node, in a run of three or more (tests/twonode/test_mesh.py)."""
    if len(rig_node.addrs) < 3:
        pytest.skip(
            f"a mesh test wants 3 or more nodes (tools/rxe-vm --nodes 3), not {len(rig_node.addrs)}"
        )
    return rig_node


@pytest.fixture
def chans(rig_node, request):
    """This test's channel to each other node, by node number (any N)."""
    cs = {p: lk.channel(request.node.nodeid) for p, lk in rig_node.mesh().items()}
    yield cs
    rep = getattr(request.node, "rep_call", None)
    for c in cs.values():
        c.close("passed" if rep is not None and rep.passed else "failed")


@pytest.fixture
def me(rig_node):
    return rig_node.me


@pytest.fixture
def chan(link, request):
    """This test's channel to the peer's half of the same test."""
    c = link.channel(request.node.nodeid)
    yield c
    rep = getattr(request.node, "rep_call", None)
    c.close("passed" if rep is not None and rep.passed else "failed")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.rep_call = rep


@pytest.fixture
def ctx(rig_node):
    c = ib.Context(rig_node.device)
    yield c
    gc.collect()


@pytest.fixture
def pd(ctx):
    return ctx.alloc_pd()
