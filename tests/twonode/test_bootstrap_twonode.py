"""ibverbs.bootstrap across the two nodes: four ranks, two forked on each
node, meet through a real torch.distributed.TCPStore served on node 0,
connect a full mesh of RC QPs with connect_mesh, and each rank RDMA-writes
its rank number into every peer's memory.  A QP to a rank on the other
node must name that node's GID (its IPv4-mapped RoCE v2 address), so the
mesh really crosses between the devices."""

import ipaddress
import logging

import pytest

import ibverbs as ib
from ibverbs import bootstrap
from support.rankrun import run_ranks

pytestmark = pytest.mark.twonode

WORLD = 4
PER_NODE = 2
ACCESS = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
TIMEOUT = 240  # importing torch in the emulated guest takes 30 s or more


def test_mesh_of_four_ranks_two_per_node(chan, me, node):
    dist = pytest.importorskip(
        "torch.distributed", reason="torch is not installed (pip install 'ibverbs[torch]')"
    )
    np = pytest.importorskip("numpy")
    from datetime import timedelta

    server = None
    if me == 0:
        server = dist.TCPStore(
            node.addr,
            0,
            is_master=True,
            wait_for_workers=False,
            timeout=timedelta(seconds=TIMEOUT),
        )
        chan.send("store port", server.port)
        store_port = server.port
    else:
        store_port = chan.recv("store port", timeout=TIMEOUT)
    store_host = node.addrs[0]
    node_of = {r: r // PER_NODE for r in range(WORLD)}
    mapped = {
        n: ipaddress.IPv6Address("::ffff:" + addr).packed for n, addr in enumerate(node.addrs)
    }

    def rank_main(rank):
        records = []
        handler = logging.Handler()
        handler.emit = records.append
        logging.getLogger("ibverbs.bootstrap").addHandler(handler)
        logging.getLogger("ibverbs.bootstrap").setLevel(logging.INFO)
        store = dist.TCPStore(
            store_host, store_port, is_master=False, timeout=timedelta(seconds=TIMEOUT)
        )
        with ib.Context(node.device) as ctx:
            pd = ctx.alloc_pd()
            cq = ctx.create_cq(64)
            buf = np.zeros(WORLD, dtype=np.uint64)
            mr = ib.reg_tensor(pd, buf, ACCESS)
            src = np.array([1000 + rank], dtype=np.uint64)
            src_mr = ib.reg_tensor(pd, src, 0)
            qps = bootstrap.connect_mesh(
                store, rank, WORLD, pd, send_cq=cq, prefix="twonode-mesh", timeout=TIMEOUT
            )
            dgids = {peer: bytes(qp.query()[0]["ah_attr"].dgid.raw) for peer, qp in qps.items()}
            remote = bootstrap.exchange_mr(
                store, rank, WORLD, mr, prefix="twonode-mr", timeout=TIMEOUT
            )
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
            bootstrap.barrier(store, rank, WORLD, prefix="twonode-b1", timeout=TIMEOUT)
            seen = buf.tolist()
            bootstrap.barrier(store, rank, WORLD, prefix="twonode-b2", timeout=TIMEOUT)
            for qp in qps.values():
                qp.close()
            for h in (mr, src_mr, cq, pd):
                h.close()
        return {
            "buf": seen,
            "done": sorted(done),
            "dgids": dgids,
            "log": [r.getMessage() for r in records],
        }

    mine = [me * PER_NODE + i for i in range(PER_NODE)]
    res = run_ranks(rank_main, mine, timeout=2 * TIMEOUT)
    for rank, r in res.items():
        others = [p for p in range(WORLD) if p != rank]
        assert r["done"] == others
        assert r["buf"] == [0 if p == rank else 1000 + p for p in range(WORLD)], (rank, r)
        for peer in others:
            # The QP's destination is the peer node's own GID.
            assert r["dgids"][peer] == mapped[node_of[peer]], (rank, peer)
        assert len(r["log"]) == 1 and "RoCE v2 IPv4 GID index" in r["log"][0], r["log"]
    print(
        f"\nnode {me}: ranks {mine} wrote into all {WORLD - 1} peers, "
        f"{PER_NODE * (WORLD - PER_NODE)} QPs crossing to the other node"
    )
    chan.barrier("ranks done", timeout=2 * TIMEOUT)
    del server
