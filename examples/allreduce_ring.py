#!/usr/bin/env python3
"""Ring all-reduce of a float32 numpy array among N ranks, over RDMA writes.

    torchrun --nproc-per-node 4 examples/allreduce_ring.py [--count 65536]
        [--device rxe0] [--port 1] [--gid-index N]

Each rank takes the job's store from torchrun's environment
(``ibverbs.bootstrap.torch_store``), connects one RC QP to every other rank
(``connect_mesh``) and learns where its right-hand neighbour's receive
buffer is (``exchange_mr``).  The all-reduce is the classic ring:
N-1 reduce-scatter steps, then N-1 all-gather steps; in each step a rank
RDMA-writes one chunk into its right neighbour's memory with immediate data,
so the neighbour gets a completion when the chunk has landed, adds it to its
own (or copies it) and sends on.  Completions are waited for on a
completion channel, not by spinning.

Every rank then checks its result bit for bit against numpy: the inputs are
made from a seed per rank, so each rank rebuilds all of them, and chunk c
must equal ``numpy.sum`` over the N inputs in the order the ring added them
(from rank c on round the ring: float addition is not associative, so the
order is part of the answer).  ``--integers`` uses integer-valued inputs,
whose sums are exact, and then checks the whole array against plain
``numpy.sum(inputs, axis=0)``.  Prints one line per rank, exits non-zero
on a mismatch.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import sys
import time
from typing import Any

import numpy as np

import ibverbs as ib
from ibverbs import bootstrap

WRITE_ACCESS = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE


def chunk_bounds(count: int, world_size: int) -> list[int]:
    """Chunk c of the array is [bounds[c], bounds[c + 1])."""
    return [count * c // world_size for c in range(world_size + 1)]


def make_input(rank: int, count: int, integers: bool = False) -> np.ndarray:
    rng = np.random.default_rng(1000 + rank)
    if integers:
        return rng.integers(-1000, 1000, count).astype(np.float32)
    return rng.standard_normal(count, dtype=np.float32) * np.float32(rank + 1)


def expected_sum(inputs: list[np.ndarray]) -> np.ndarray:
    """numpy's sum of the inputs, chunk by chunk in the ring's order: chunk
    c is ((x[c] + x[c+1]) + x[c+2]) + ... (ranks modulo N)."""
    n = len(inputs)
    bounds = chunk_bounds(inputs[0].size, n)
    out = np.empty_like(inputs[0])
    for c in range(n):
        lo, hi = bounds[c], bounds[c + 1]
        rows = np.stack([inputs[(c + k) % n][lo:hi] for k in range(n)])
        out[lo:hi] = np.sum(rows, axis=0)
    return out


def _wait(cq: ib.CQ, channel: ib.CompChannel, deadline: float) -> ib.WC:
    """One completion of cq, sleeping on the channel when there is none."""
    while True:
        wcs = cq.poll(1)
        if not wcs:
            cq.req_notify()
            wcs = cq.poll(1)  # one that came before the arming
        if wcs:
            wcs[0].raise_for_status()
            return wcs[0]
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([channel.fd], [], [], left)[0]:
            raise TimeoutError("all-reduce: no completion in time")
        channel.get_cq_event()
        cq.ack_events(1)


def ring_allreduce(
    store: Any,
    rank: int,
    world_size: int,
    data: np.ndarray,
    *,
    device: str,
    port: int = 1,
    gid_index: int | None = None,
    timeout: float = 120.0,
) -> np.ndarray:
    """Sum ``data`` (a contiguous float32 array, the same size on every
    rank) over all ranks, in place; returns it."""
    if data.dtype != np.float32 or data.ndim != 1 or not data.flags.c_contiguous:
        raise ValueError("data must be a contiguous 1-D float32 array")
    n = world_size
    if n == 1:
        return data
    count = data.size
    bounds = chunk_bounds(count, n)
    right, left = (rank + 1) % n, (rank - 1) % n
    deadline = time.monotonic() + timeout
    # Landing zones: [0, count) for reduce-scatter, [count, 2 count) for
    # all-gather.  Every chunk slot is written once, so a fast neighbour
    # never overwrites a chunk before it has been used.
    stage = np.zeros(2 * count, dtype=np.float32)
    with contextlib.ExitStack() as stack:

        def own(obj: Any) -> Any:
            stack.callback(obj.close)  # closed in reverse: children first
            return obj

        ctx = own(ib.Context(device))
        pd = own(ctx.alloc_pd())
        chans = [own(ctx.create_comp_channel()) for _ in range(2)]
        send_cq = own(ctx.create_cq(2 * n, channel=chans[0]))
        recv_cq = own(ctx.create_cq(2 * n, channel=chans[1]))
        data_mr = own(ib.reg_tensor(pd, data, 0))  # only read, locally
        stage_mr = own(ib.reg_tensor(pd, stage, WRITE_ACCESS))
        qps = bootstrap.connect_mesh(
            store,
            rank,
            n,
            pd,
            send_cq=send_cq,
            recv_cq=recv_cq,
            port=port,
            gid_index=gid_index,
            access=WRITE_ACCESS,
            qp_init={"max_send_wr": 2 * n, "max_recv_wr": 2 * n},
            prefix="allreduce_ring",
            timeout=timeout,
        )
        for qp in qps.values():
            own(qp)
        # Receives for the left neighbour's writes with immediate, posted
        # before the exchange below: nobody writes before everyone is in it.
        for step in range(2 * (n - 1)):
            qps[left].post_recv(ib.RecvWR(wr_id=step))
        dest = bootstrap.exchange_mr(
            store, rank, n, stage_mr, prefix="allreduce_ring", timeout=timeout
        )[right]

        def send(step: int, c: int, zone: int) -> None:
            lo, hi = bounds[c], bounds[c + 1]
            sges = [data_mr.sge((hi - lo) * 4, lo * 4)] if hi > lo else []
            qps[right].post_send(
                ib.SendWR(
                    wr_id=step,
                    sg_list=sges,
                    opcode=ib.WROpcode.RDMA_WRITE_WITH_IMM,
                    send_flags=ib.SendFlags.SIGNALED,
                    imm_data=step,
                    remote_addr=dest.addr + (zone * count + lo) * 4,
                    rkey=dest.rkey,
                )
            )

        def arrived(step: int) -> None:
            wc = _wait(recv_cq, chans[1], deadline)
            if wc.opcode != ib.WCOpcode.RECV_RDMA_WITH_IMM or wc.imm_data != step:
                raise RuntimeError(f"step {step}: unexpected completion {wc!r}")

        # Reduce-scatter: send chunk (rank - s), receive chunk (rank - 1 - s)
        # and add our own to it; rank r ends with chunk r + 1 summed.
        for s in range(n - 1):
            send(s, (rank - s) % n, 0)
            arrived(s)
            c = (rank - 1 - s) % n
            lo, hi = bounds[c], bounds[c + 1]
            np.add(stage[lo:hi], data[lo:hi], out=data[lo:hi])
            _wait(send_cq, chans[0], deadline)
        # All-gather: pass the summed chunks on round the ring.
        for s in range(n - 1):
            step = n - 1 + s
            send(step, (rank + 1 - s) % n, 1)
            arrived(step)
            c = (rank - s) % n
            lo, hi = bounds[c], bounds[c + 1]
            data[lo:hi] = stage[count + lo : count + hi]
            _wait(send_cq, chans[0], deadline)
        # Nobody closes its QPs while a neighbour may still write into it.
        bootstrap.barrier(store, rank, n, prefix="allreduce_ring", timeout=timeout)
    return data


def default_device() -> str:
    name = os.environ.get("IBVERBS_TEST_DEVICE")
    if name:
        return name
    devices = ib.get_device_list()
    if not devices:
        raise SystemExit("no RDMA device found")
    return devices[0].name


def run(
    store: Any,
    rank: int,
    world_size: int,
    *,
    count: int,
    device: str,
    port: int = 1,
    gid_index: int | None = None,
    integers: bool = False,
    timeout: float = 120.0,
) -> bool:
    """One all-reduce and its check; prints one line, returns success."""
    inputs = [make_input(r, count, integers) for r in range(world_size)]
    data = inputs[rank].copy()
    t0 = time.perf_counter()
    ring_allreduce(
        store,
        rank,
        world_size,
        data,
        device=device,
        port=port,
        gid_index=gid_index,
        timeout=timeout,
    )
    took = time.perf_counter() - t0
    want = np.sum(np.stack(inputs), axis=0) if integers else expected_sum(inputs)
    same = np.array_equal(data.view(np.uint32), want.view(np.uint32))
    bad = int(np.count_nonzero(data.view(np.uint32) != want.view(np.uint32)))
    print(
        f"rank {rank}/{world_size}: {count} float32 summed in {took:.3f} s: "
        + ("bit-identical to numpy" if same else f"{bad} values DIFFER from numpy"),
        flush=True,
    )
    return same


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=65536, help="floats per rank")
    ap.add_argument("--device", default=None, help="RDMA device (default: first)")
    ap.add_argument("--port", type=int, default=1)
    ap.add_argument(
        "--gid-index", type=int, default=None, help="default: the port's RoCE v2 IPv4 GID"
    )
    ap.add_argument(
        "--integers",
        action="store_true",
        help="integer-valued inputs, checked against plain numpy.sum",
    )
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args(argv)
    store, rank, world_size = bootstrap.torch_store(timeout=args.timeout)
    ok = run(
        store,
        rank,
        world_size,
        count=args.count,
        device=args.device or default_device(),
        port=args.port,
        gid_index=args.gid_index,
        integers=args.integers,
        timeout=args.timeout,
    )
    leave(store, rank, world_size, timeout=args.timeout)
    return 0 if ok else 1


def leave(store: Any, rank: int, world_size: int, *, timeout: float) -> None:
    """Without torchrun's agent, rank 0 serves the TCPStore (env://), so it
    must exit last: the others may still be reading the store in the final
    barrier.  Each rank counts itself out; rank 0 waits for the count."""
    gen = store.add(f"allreduce_ring/seq/{rank}", 0)  # same on every rank now
    key = f"allreduce_ring/{gen}/left"
    store.add(key, 1)
    deadline = time.monotonic() + timeout
    while rank == 0 and store.add(key, 0) < world_size:
        if time.monotonic() > deadline:
            raise TimeoutError("allreduce_ring: ranks did not leave in time")
        time.sleep(0.01)


if __name__ == "__main__":
    sys.exit(main())
