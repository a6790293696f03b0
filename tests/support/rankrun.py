"""Run the ranks of a job as forked processes of the test (helper module
for tests/device/test_bootstrap_device.py and
tests/twonode/test_bootstrap_twonode.py), and the body of a rank that
both run (mesh_write_rank, check_mesh).

Forked, not spawned: the children inherit the test process's imports
(torch takes 30 s to import in the emulated guest), and each opens its own
RDMA Context (handles inherited over fork are closed in the child).

run_ranks() runs the ranks *given* to it, so a job spread over nodes runs
one call per node with that node's ranks (two per node, say), the same
world_size and the same store address; one node runs them all.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import time
import traceback
import warnings

from support.timeouts import Deadline


def torchrun_env(rank, world_size, master_addr, master_port, local_rank=None):
    """The variables torchrun gives a worker (those env:// reads)."""
    return {
        "RANK": str(rank),
        "WORLD_SIZE": str(world_size),
        "LOCAL_RANK": str(rank if local_rank is None else local_rank),
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
    }


def _child(fn, rank, env, wfd):
    try:
        os.environ.update(env)
        result = ("ok", fn(rank))
    except BaseException:  # noqa: BLE001 - reported to the parent
        result = ("error", traceback.format_exc())
    try:
        data = pickle.dumps(result)
    except Exception:  # noqa: BLE001
        data = pickle.dumps(("error", f"rank {rank}: unpicklable result {result!r:.200}"))
    with os.fdopen(wfd, "wb") as f:
        f.write(data)
    sys.stdout.flush()
    sys.stderr.flush()


def run_ranks(fn, ranks, *, env_for=None, timeout=120.0):
    """fn(rank) in one forked child per rank; returns {rank: result}.

    env_for(rank) gives variables set in that child.  A rank that raises,
    dies or outlives ``timeout`` (then all are killed) fails the call with
    every rank's story in the message."""
    children = {}
    for rank in ranks:
        rfd, wfd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        with warnings.catch_warnings():
            # 3.12+ warns when forking a process with threads (the
            # TCPStore server's); the child uses none of their state.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # child: never returns into the test
            code = 1
            try:
                os.close(rfd)
                _child(fn, rank, env_for(rank) if env_for else {}, wfd)
                code = 0
            finally:
                os._exit(code)
        os.close(wfd)
        children[rank] = (pid, os.fdopen(rfd, "rb"))
    deadline = Deadline(timeout)
    status = {}
    while len(status) < len(children) and not deadline.expired():
        for rank, (pid, _) in children.items():
            if rank not in status:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status[rank] = st
        time.sleep(0.05)
    timed_out = [r for r in children if r not in status]
    for rank in timed_out:
        os.kill(children[rank][0], signal.SIGKILL)
        status[rank] = os.waitpid(children[rank][0], 0)[1]
    results, problems = {}, []
    for rank, (pid, f) in sorted(children.items()):
        data = f.read()
        f.close()
        if rank in timed_out:
            problems.append(f"rank {rank}: still running after {deadline.limit:.0f} s, killed")
        elif not data:
            problems.append(f"rank {rank}: died (wait status {status[rank]:#x})")
        else:
            kind, value = pickle.loads(data)
            if kind == "ok":
                results[rank] = value
            else:
                problems.append(f"rank {rank} raised:\n{value}")
    if problems:
        raise AssertionError("\n".join(problems))
    return results


def mesh_write_rank(store, rank, world_size, device, *, port=1, prefix="mesh", timeout=60.0):
    """One rank of the mesh test, in a child of run_ranks: connect_mesh
    over ``store``, every rank RDMA-writes 1000 + its rank into slot
    ``rank`` of every peer's buffer, a barrier, read the own buffer.
    Returns what check_mesh() checks, plus each QP's destination GID
    (``dgids``, by peer) and the bootstrap log lines."""
    import logging
    import threading

    import numpy as np

    import ibverbs as ib
    from ibverbs import bootstrap

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    # This rank's records only, where ranks are threads of one process
    # (tests/device/test_threads_device.py).
    me = threading.get_ident()
    handler.addFilter(lambda record: record.thread == me)
    log = logging.getLogger("ibverbs.bootstrap")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    access = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
    with ib.Context(device) as ctx:
        pd = ctx.alloc_pd()
        cq = ctx.create_cq(64)
        buf = np.zeros(world_size, dtype=np.uint64)
        mr = ib.reg_tensor(pd, buf, access)
        src = np.array([1000 + rank], dtype=np.uint64)
        src_mr = ib.reg_tensor(pd, src, 0)
        qps = bootstrap.connect_mesh(
            store,
            rank,
            world_size,
            pd,
            send_cq=cq,
            port=port,
            prefix=f"{prefix}-qp",
            timeout=timeout,
        )
        states = sorted({int(qp.state) for qp in qps.values()})
        dgids = {peer: bytes(qp.query()[0]["ah_attr"].dgid.raw) for peer, qp in qps.items()}
        remote = bootstrap.exchange_mr(
            store, rank, world_size, mr, prefix=f"{prefix}-mr", timeout=timeout
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
        while len(done) < world_size - 1:
            for wc in cq.poll(world_size):
                wc.raise_for_status()
                done.append(wc.wr_id)
        bootstrap.barrier(store, rank, world_size, prefix=f"{prefix}-written", timeout=timeout)
        seen = buf.tolist()
        bootstrap.barrier(store, rank, world_size, prefix=f"{prefix}-read", timeout=timeout)
        for qp in qps.values():
            qp.close()
        for h in (mr, src_mr, cq, pd):
            h.close()
    log.removeHandler(handler)
    return {
        "buf": seen,
        "peers": sorted(qps),
        "states": states,
        "done": sorted(done),
        "dgids": dgids,
        "log": [r.getMessage() for r in records],
        "remote": [tuple(r) for r in remote],
    }


def check_mesh(results, world_size):
    """The results of mesh_write_rank for some ranks of the job: every
    peer connected (RTS) and written to, every slot holding its writer's
    value, the same MR table everywhere, one log line naming the GID."""
    import ibverbs as ib

    first = next(iter(results.values()))
    for rank, r in results.items():
        others = [p for p in range(world_size) if p != rank]
        assert r["peers"] == others and r["done"] == others, (rank, r)
        assert r["states"] == [int(ib.QPState.RTS)], (rank, r)
        assert r["buf"] == [0 if p == rank else 1000 + p for p in range(world_size)], (rank, r)
        assert r["remote"] == first["remote"], (rank, r)
        assert len(r["log"]) == 1 and "RoCE v2 IPv4 GID index" in r["log"][0], r["log"]
