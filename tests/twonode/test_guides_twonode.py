"""The guides' two-node pairs (``<!-- run: twonode pair=P role=R -->``:
tests/support/guides.py) across the two nodes of the rig: the server half
on node 0, the client half on node 1, each on its own device, the
examples' device names and server address replaced by this node's device
and node 0's address.  The client runs once node 0 has started its
server, and again while it finds nobody listening yet."""

from __future__ import annotations

import time

import pytest

from support import guides
from support.timeouts import scaled

pytestmark = pytest.mark.twonode


def _pairs():
    if not guides.GUIDES.is_dir():
        return []
    try:
        return guides.pairs("twonode")
    except guides.MarkerError:
        return []  # tests/host/test_guides.py says what is wrong


PAIRS = _pairs()


def test_there_are_twonode_pairs():
    assert PAIRS, "no two-node pair found in docs/guides"


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0])
def test_twonode_pair(pair, chan, me, node):
    name, server, client = pair
    block = server if me == 0 else client
    code = guides.localize(block.program(), node.device, node.addrs[0], any_rxe=True)
    if me == 0:
        rc, out, peer = serve(block, code, chan)
    else:
        chan.recv("started", timeout=120)
        rc, out = guides.run_client(block, code, None)
        chan.send("client", rc)
        peer = chan.recv("server", timeout=block.timeout + 60)
    guides.check_output(block, rc, out, f" (node {me}, {block.options['role']})")
    assert peer == 0, f"node {1 - me} ({'client' if me == 0 else 'server'}) exited with {peer}"


def serve(block, code, chan):
    """Node 0: start the server, tell node 1, wait for the server to end
    (killed at once when the client failed: nobody is coming)."""
    proc = guides.start(block, code)
    peer = None
    try:
        chan.send("started")
        deadline = time.monotonic() + scaled(block.timeout)
        while proc.poll() is None and time.monotonic() < deadline:
            if peer is not None:
                time.sleep(0.2)
                continue
            try:
                peer = chan.recv("client", timeout=1)
            except TimeoutError:
                continue
            if peer != 0:
                proc.kill()
        rc, out = guides.finish(proc, max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    chan.send("server", rc)
    if peer is None:
        peer = chan.recv("client", timeout=block.timeout + 60)
    return rc, out, peer
