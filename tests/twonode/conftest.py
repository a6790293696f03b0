"""Fixtures for the two-node suite (marker ``twonode``).

These tests run as one pytest process per node under
``tools/rxe-vm --nodes 2`` (``make test-twonode``); each test function runs
on both nodes at once, and its two halves meet over TCP through
rendezvous.py.  Outside such a run (no IBVERBS_NODE) every test skips,
saying so; in such a run, a session where no twonode test passed fails.
"""

import gc
import os

import pytest

import ibverbs as ib
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


_passed = 0


def pytest_runtest_logreport(report):
    global _passed
    if report.when == "call" and report.passed and "twonode" in report.keywords:
        _passed += 1


def pytest_sessionfinish(session, exitstatus):
    if IN_RIG and _passed == 0 and exitstatus == 0:
        print("\ntwonode: no two-node test passed")
        session.exitstatus = 1


@pytest.fixture(scope="session")
def node():
    n = Node.from_env()
    if len(n.addrs) != 2:
        pytest.skip(f"the twonode suite wants 2 nodes, not {len(n.addrs)}")
    yield n
    n.close()


@pytest.fixture(scope="session")
def link(node):
    lk = node.connect(peer=1 - node.me)
    yield lk
    lk.close()


@pytest.fixture
def me(node):
    return node.me


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
def ctx(node):
    c = ib.Context(node.device)
    yield c
    gc.collect()


@pytest.fixture
def pd(ctx):
    return ctx.alloc_pd()
