"""The guides' device blocks (docs/guides/*.md and README.md, marker
``<!-- run: device -->``: tests/support/guides.py) on this node's RDMA
device: rxe0 in the Soft-RoCE guest (rxe1 for the device suite's second
half).  Each block runs as a program of its own, with the device and the
server address of the examples replaced by the ones this test was given
(IBVERBS_TEST_DEVICE, IBVERBS_TEST_CM_SERVER); a pair runs its server and
client side by side; ``ranks=N`` runs N ranks with torchrun's
environment.  Blocks that another test runs its own way
(support.guides.ELSEWHERE) are left to it."""

from __future__ import annotations

import dataclasses
import os

import pytest

from support import guides

pytestmark = pytest.mark.integration

SERVER = os.environ.get("IBVERBS_TEST_CM_SERVER", "198.18.0.1")


def _collect():
    if not guides.GUIDES.is_dir():
        return [], []
    try:
        singles = guides.singles("device")
        pairs = guides.pairs("device")
    except guides.MarkerError:
        return [], []  # tests/host/test_guides.py says what is wrong
    singles = [b for b in singles if guides.key_of(b) not in guides.ELSEWHERE]
    pairs = [p for p in pairs if p[0] not in guides.ELSEWHERE]
    return singles, pairs


SINGLES, PAIRS = _collect()


def test_there_are_device_blocks():
    assert SINGLES and guides.GUIDES.is_dir(), "no device block found in docs/guides"


@pytest.mark.parametrize("block", SINGLES, ids=lambda b: b.id)
def test_device_block(block, device_name):
    code = guides.localize(block.program(), device_name, SERVER)
    if block.expected is not None:  # what it prints names this node's device too
        block = dataclasses.replace(
            block, expected=guides.localize(block.expected, device_name, SERVER)
        )
    if "ranks" in block.options:
        if "torch_store" in code:
            pytest.importorskip("torch", reason="the block uses torch.distributed's store")
        for rank, (rc, out) in enumerate(guides.run_ranks(block, code)):
            guides.check_output(block, rc, out, f" (rank {rank})")
        return
    rc, out = guides.run(block, code)
    guides.check_output(block, rc, out)


if PAIRS:  # today's only pair (the connection manager's) runs in test_cm_device.py

    @pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0])
    def test_device_pair(pair, device_name):
        name, server, client = pair
        (srv_rc, srv_out), (cli_rc, cli_out) = guides.run_pair(server, client, device_name, SERVER)
        guides.check_output(server, srv_rc, srv_out, " (server)")
        guides.check_output(client, cli_rc, cli_out, " (client)")
