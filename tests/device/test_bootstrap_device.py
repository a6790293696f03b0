"""ibverbs.bootstrap with a real torch.distributed.TCPStore and rxe0: four
ranks (forked processes on this node) connect a full mesh of RC QPs, write
into each other's memory, and run examples/allreduce_ring.py as torchrun
would start it.  Every torch-using guest test is in this one file: torch
takes about 30 s to import in the emulated guest."""

from pathlib import Path

import pytest

from support import free_port, load_path
from support.rankrun import check_mesh, mesh_write_rank, run_ranks, torchrun_env
from support.timeouts import scaled

pytestmark = pytest.mark.integration

WORLD = 4
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist():
    return pytest.importorskip(
        "torch.distributed", reason="torch is not installed (pip install 'ibverbs[torch]')"
    )


@pytest.fixture(scope="module")
def np():
    return pytest.importorskip("numpy")


def test_mesh_of_four_ranks_writes_into_every_peer(dist, np, device_name, port):
    from datetime import timedelta

    server = dist.TCPStore(
        "127.0.0.1",
        0,
        is_master=True,
        wait_for_workers=False,
        timeout=timedelta(seconds=scaled(60)),
    )

    def rank_main(rank):
        store = dist.TCPStore(
            "127.0.0.1", server.port, is_master=False, timeout=timedelta(seconds=scaled(60))
        )
        return mesh_write_rank(store, rank, WORLD, device_name, port=port, timeout=scaled(60))

    res = run_ranks(rank_main, range(WORLD), timeout=150)
    check_mesh(res, WORLD)
    print("\n" + res[0]["log"][0])


def load_example():
    return load_path("allreduce_ring", ROOT / "examples" / "allreduce_ring.py")


@pytest.mark.parametrize("args", [["--count", "10007"], ["--count", "4096", "--integers"]])
def test_allreduce_ring_example_as_under_torchrun(dist, np, device_name, args):
    """The example's own main(), in four processes with the environment
    torchrun gives its workers (env:// rendezvous: rank 0 serves the
    TCPStore); each checks its result bit for bit against numpy."""
    example = load_example()
    master_port = free_port()
    rcs = run_ranks(
        lambda rank: example.main([*args, "--device", device_name, "--timeout", "120"]),
        range(WORLD),
        env_for=lambda r: torchrun_env(r, WORLD, "127.0.0.1", master_port),
        timeout=scaled(180),
    )
    assert rcs == {r: 0 for r in range(WORLD)}
