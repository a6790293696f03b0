"""ibverbs.bootstrap with a real torch.distributed.TCPStore and rxe0: four
ranks (forked processes on this node) connect a full mesh of RC QPs, write
into each other's memory, and run examples/allreduce_ring.py as torchrun
would start it.  Every torch-using guest test is in this one file: torch
takes about 30 s to import in the emulated guest."""

import importlib.util
import logging
from pathlib import Path

import pytest

import ibverbs as ib
from ibverbs import bootstrap

from support.rankrun import free_port, run_ranks, torchrun_env

pytestmark = pytest.mark.integration

WORLD = 4
ROOT = Path(__file__).resolve().parents[2]
ACCESS = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE


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
        "127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=60)
    )

    def rank_main(rank):
        records = []
        handler = logging.Handler()
        handler.emit = records.append
        logging.getLogger("ibverbs.bootstrap").addHandler(handler)
        logging.getLogger("ibverbs.bootstrap").setLevel(logging.INFO)
        store = dist.TCPStore(
            "127.0.0.1", server.port, is_master=False, timeout=timedelta(seconds=60)
        )
        with ib.Context(device_name) as ctx:
            pd = ctx.alloc_pd()
            cq = ctx.create_cq(64)
            buf = np.zeros(WORLD, dtype=np.uint64)
            mr = ib.reg_tensor(pd, buf, ACCESS)
            src = np.array([1000 + rank], dtype=np.uint64)
            src_mr = ib.reg_tensor(pd, src, 0)
            qps = bootstrap.connect_mesh(store, rank, WORLD, pd, send_cq=cq, port=port, timeout=60)
            states = sorted({int(qp.state) for qp in qps.values()})
            remote = bootstrap.exchange_mr(store, rank, WORLD, mr, timeout=60)
            for peer, qp in qps.items():
                qp.post_send(
                    ib.SendWR(
                        wr_id=peer,
                        sg_list=[src_mr.sge()],
                        opcode=ib.WROpcode.RDMA_WRITE,
                        send_flags=ib.SendFlags.SIGNALED,
                        remote_addr=remote[peer].addr + 8 * rank,
                        rkey=remote[peer].rkey,
                    )
                )
            done = []
            while len(done) < WORLD - 1:
                for wc in cq.poll(WORLD):
                    wc.raise_for_status()
                    done.append(wc.wr_id)
            bootstrap.barrier(store, rank, WORLD, timeout=60)
            seen = buf.tolist()
            bootstrap.barrier(store, rank, WORLD, timeout=60)  # before closing
            for qp in qps.values():
                qp.close()
            mr.close()
            src_mr.close()
            cq.close()
            pd.close()
        return {
            "buf": seen,
            "peers": sorted(qps),
            "states": states,
            "done": sorted(done),
            "log": [r.getMessage() for r in records],
            "remote": [tuple(r) for r in remote],
        }

    res = run_ranks(rank_main, range(WORLD), timeout=150)
    for rank, r in res.items():
        others = [p for p in range(WORLD) if p != rank]
        assert r["peers"] == others and r["done"] == others
        assert r["states"] == [int(ib.QPState.RTS)]
        assert r["buf"] == [0 if p == rank else 1000 + p for p in range(WORLD)]
        assert r["remote"] == res[0]["remote"]
        assert len(r["log"]) == 1 and "RoCE v2 IPv4 GID index" in r["log"][0], r["log"]
    print("\n" + res[0]["log"][0])


def load_example():
    spec = importlib.util.spec_from_file_location(
        "allreduce_ring", ROOT / "examples" / "allreduce_ring.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
        timeout=180,
    )
    assert rcs == {r: 0 for r in range(WORLD)}
