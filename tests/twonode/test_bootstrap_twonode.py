"""ibverbs.bootstrap across the nodes: two ranks forked on each node (four
on two nodes, six under ``--nodes 3``) meet through a real
torch.distributed.TCPStore served on node 0, connect a full mesh of RC QPs
with connect_mesh, and each rank RDMA-writes its rank number into every
peer's memory.  A QP to a rank on another node must name that node's GID
(its IPv4-mapped RoCE v2 address), so the mesh really crosses between the
devices."""

import ipaddress

import pytest

from support.rankrun import check_mesh, mesh_write_rank, run_ranks
from support.timeouts import scaled

pytestmark = [pytest.mark.twonode, pytest.mark.nodes3]

PER_NODE = 2
TIMEOUT = scaled(240)  # importing torch in the emulated guest takes 30 s or more


def test_mesh_of_ranks_two_per_node(chans, me, rig_node):
    dist = pytest.importorskip(
        "torch.distributed", reason="torch is not installed (pip install 'ibverbs[torch]')"
    )
    pytest.importorskip("numpy")  # mesh_write_rank uses it
    from datetime import timedelta

    node = rig_node
    world = PER_NODE * len(node.addrs)
    server = None
    if me == 0:
        server = dist.TCPStore(
            node.addr,
            0,
            is_master=True,
            wait_for_workers=False,
            timeout=timedelta(seconds=TIMEOUT),
        )
        for c in chans.values():
            c.send("store port", server.port)
        store_port = server.port
    else:
        store_port = chans[0].recv("store port", timeout=TIMEOUT)
    store_host = node.addrs[0]
    node_of = {r: r // PER_NODE for r in range(world)}
    mapped = {
        n: ipaddress.IPv6Address("::ffff:" + addr).packed for n, addr in enumerate(node.addrs)
    }

    def rank_main(rank):
        store = dist.TCPStore(
            store_host, store_port, is_master=False, timeout=timedelta(seconds=TIMEOUT)
        )
        return mesh_write_rank(store, rank, world, node.device, prefix="twonode", timeout=TIMEOUT)

    mine = [me * PER_NODE + i for i in range(PER_NODE)]
    res = run_ranks(rank_main, mine, timeout=2 * TIMEOUT)
    check_mesh(res, world)
    for rank, r in res.items():
        for peer in (p for p in range(world) if p != rank):
            # The QP's destination is the peer node's own GID.
            assert r["dgids"][peer] == mapped[node_of[peer]], (rank, peer)
    print(
        f"\nnode {me}: ranks {mine} wrote into all {world - 1} peers, "
        f"{PER_NODE * (world - PER_NODE)} QPs crossing to the other nodes"
    )
    for c in chans.values():  # node 0 serves the store: it leaves last
        c.send("ranks done")
    for c in chans.values():
        c.recv("ranks done", timeout=2 * TIMEOUT)
    del server
