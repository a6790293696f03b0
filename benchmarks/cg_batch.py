#!/usr/bin/env python3
"""Instructions per block of one batch of scattered RDMA WRITEs (prepare +
post + poll), counted by callgrind: the work-request objects against the
array batch (SendBatch) and a C program from the same arrays; the same for
receives (RecvBatch) and for reaping completions (CQ.poll_into, CQ.poll).

    python3 benchmarks/prepare.py          (on the host: cg_batch, cgtoggle.so)
    tools/rxe-vm --rw $PWD/build/out -- .venv/bin/python benchmarks/cg_batch.py

BLOCKS blocks of BLOCK bytes (default 4,096 of 16 KiB), each source block
and destination block picked at random from pools of BLOCKS blocks, one
RDMA WRITE each, posted 16 per ibv_post_send (the last signaled), at most
64 in flight, two RC QPs on one device (loopback).  Each program runs the
batch twice and counts the second (``--instr-atstart=no``, cgtoggle.so
around it); an empty poll sleeps 1 ms in every program, so that waiting
for the emulated device costs about the same everywhere.

- objects: a SendWR and an SGE per block, SendWRChains of 16 (the
  per-object path), completions as WC objects (``poll(16)``);
- post:    one SendBatch from the arrays, a Python loop of
  ``post(qp, k, 16)`` and ``poll_into`` (the thin per-piece path);
- batch:   one SendBatch from the arrays, ``progress(qp, 64, 16)`` (the
  C loop over the pieces and the completions);
- repost:  the SendBatch of the first run, its remote addresses replaced
  (``update(remote=...)``) and run again by ``progress``;
- c:       benchmarks/cg_batch.c, the same from the same kind of arrays.

Receives (``recv-*``): BLOCKS receive buffers at scattered offsets, posted
16 per call (at most 64 posted), each completion reaped (the recording
double completes a receive when it is posted; on a device the peer would
have to send, so these run over the double only): RecvWR objects in
RecvWRChains and ``poll(16)``; a RecvBatch, ``post(qp, k, 16)`` and
``poll_into``; a RecvBatch run by ``progress(qp, 64, 16)`` (the C loop);
``cg_batch ... recv``.  Completions (``poll-*``): the
batch's WRITEs all signaled, posted 16 at a time by ``SendBatch.post`` and
reaped before the next 16: ``poll(16)`` (a WC object each) against
``poll_into`` (each status read in Python), ``poll_into`` with the
statuses checked by one ``array.count`` (poll-bulk), and ``cg_batch ...
poll``.
"""

from __future__ import annotations

import argparse
import array
import ctypes
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from callgrind import loop_dump, totals  # noqa: E402

CHAIN, DEPTH = 16, 64
SEND = ["objects", "post", "batch", "repost", "c"]
RECV = ["recv-objects", "recv-batch", "recv-progress", "recv-c"]
POLL = ["poll-wc", "poll-into", "poll-bulk", "poll-c"]
MODES = SEND + RECV + POLL
C_MODES = {"c": "send", "recv-c": "recv", "poll-c": "poll"}  # cg_batch's MODE


def setup(device: str, gid_index: int, n: int, block: int):
    import numpy as np

    import ibverbs as ib

    ctx = ib.Context(device)
    pd = ctx.alloc_pd()
    src = np.zeros(n * block, dtype=np.uint8)
    dst = np.zeros(n * block, dtype=np.uint8)
    acc = ib.AccessFlags
    mr_src = ib.reg_tensor(pd, src, acc.LOCAL_WRITE)
    mr_dst = ib.reg_tensor(pd, dst, acc.LOCAL_WRITE | acc.REMOTE_WRITE)
    cq = ctx.create_cq(DEPTH + 16)
    attr = ib.QPInitAttr(cq, max_send_wr=DEPTH, max_recv_wr=DEPTH)
    qa, qb = pd.create_qp(attr), pd.create_qp(attr)
    gid = ctx.query_gid(1, gid_index)
    port = ctx.query_port(1)
    for q, peer in ((qa, qb), (qb, qa)):
        ib.connect_rc(
            q, ib.local_qp_info(peer, port, gid, port=1), port=1, sgid_index=gid_index,
            access=acc.LOCAL_WRITE | acc.REMOTE_WRITE, timeout=14, retry_cnt=7,
        )  # fmt: skip
    rng = np.random.default_rng(0)
    return ib, np, qa, cq, mr_src, mr_dst, rng.permutation(n), rng.permutation(n)


def run_objects(ib, qa, cq, mr_src, mr_dst, s, d, block):
    """The per-object path: prepare every WR, post the chains, poll WCs."""
    wrs = [
        ib.SendWR(
            wr_id=k,
            sg_list=[ib.SGE(mr_src, block, offset=int(s[k]) * block)],
            opcode=ib.WROpcode.RDMA_WRITE,
            remote_addr=mr_dst.addr + int(d[k]) * block,
            rkey=mr_dst.rkey,
        )
        for k in range(len(s))
    ]
    chains = []
    for k in range(0, len(wrs), CHAIN):
        wrs[min(k + CHAIN, len(wrs)) - 1].send_flags = ib.SendFlags.SIGNALED
        chains.append(ib.SendWRChain(wrs[k : k + CHAIN]))
    nxt = done = empty = 0
    deadline = time.monotonic() + 300
    while done < len(wrs):
        assert time.monotonic() < deadline, f"{done} of {len(wrs)} completed"
        while nxt < len(chains) and nxt * CHAIN - done + CHAIN <= DEPTH:
            qa.post_send(chains[nxt])
            nxt += 1
        wcs = cq.poll(16)
        for wc in wcs:
            assert wc.status == 0
            done = wc.wr_id + 1
        if not wcs:
            empty += 1
            time.sleep(0.001)
    for c in chains:
        c.release()
    return empty


def run_batch(np, qa, cq, batch, ids, st):
    """Post a SendBatch 16 rows at a time, reap into arrays."""
    n, post, poll_into = len(batch), batch.post, cq.poll_into
    nxt = done = empty = 0
    deadline = time.monotonic() + 300
    while done < n:
        assert time.monotonic() < deadline, f"{done} of {n} completed"
        while nxt < n and nxt - done + CHAIN <= DEPTH:
            nxt += post(qa, nxt, CHAIN)
        got = poll_into(wr_id=ids, status=st)
        if got:
            for k in range(got):
                assert st[k] == 0
            done = ids[got - 1] + 1
        else:
            empty += 1
            time.sleep(0.001)
    return empty


def run_progress(qa, batch):
    """The whole batch by SendBatch.progress: one C loop, 64 in flight."""
    n, progress = len(batch), batch.progress
    empty = 0
    deadline = time.monotonic() + 300
    while progress(qa, DEPTH, CHAIN) < n:
        assert time.monotonic() < deadline, "the batch did not complete"
        empty += 1
        time.sleep(0.001)
    return empty


def run_recv_objects(ib, qa, cq, mr_src, s, block):
    """Receives as RecvWR objects in RecvWRChains of 16, WCs reaped."""
    wrs = [
        ib.RecvWR(wr_id=k, sg_list=[ib.SGE(mr_src, block, offset=int(s[k]) * block)])
        for k in range(len(s))
    ]
    chains = [ib.RecvWRChain(wrs[k : k + CHAIN]) for k in range(0, len(wrs), CHAIN)]
    nxt = done = empty = 0
    while done < len(wrs):
        while nxt < len(chains) and nxt * CHAIN - done + CHAIN <= DEPTH:
            qa.post_recv(chains[nxt])
            nxt += 1
        wcs = cq.poll(16)
        for wc in wcs:
            assert wc.status == 0
        done += len(wcs)
        if not wcs:
            empty += 1
            time.sleep(0.001)
    for c in chains:
        c.release()
    return empty


def run_recv_batch(qa, cq, batch, ids, st):
    """A RecvBatch posted 16 rows at a time, reaped into arrays."""
    n, post, poll_into = len(batch), batch.post, cq.poll_into
    nxt = done = empty = 0
    while done < n:
        while nxt < n and nxt - done + CHAIN <= DEPTH:
            nxt += post(qa, nxt, CHAIN)
        got = poll_into(wr_id=ids, status=st)
        for k in range(got):
            assert st[k] == 0
        done += got
        if not got:
            empty += 1
            time.sleep(0.001)
    return empty


def run_recv_progress(qa, batch):
    """The whole RecvBatch by progress: one C loop, 64 posted."""
    n, progress = len(batch), batch.progress
    empty = 0
    while progress(qa, DEPTH, CHAIN) < n:
        empty += 1
        time.sleep(0.001)
    return empty


def run_poll(qa, cq, batch, into, ids, st):
    """Every row signaled, 16 posted, the 16 reaped: WCs or arrays."""
    n, post = len(batch), batch.post
    nxt = empty = 0
    while nxt < n:
        want = post(qa, nxt, CHAIN)
        nxt += want
        while want:
            if into == "bulk":  # one C call checks them all: the rows
                got = cq.poll_into(wr_id=ids, status=st)  # past got are
                assert st.count(0) == len(st)  # earlier ones, all 0
            elif into:
                got = cq.poll_into(wr_id=ids, status=st)
                for k in range(got):
                    assert st[k] == 0
            else:
                wcs = cq.poll(16)
                for wc in wcs:
                    assert wc.status == 0
                got = len(wcs)
            want -= got
            if not got:
                empty += 1
                time.sleep(0.001)
    return empty


def program(mode: str, device: str, gid_index: int, n: int, block: int) -> None:
    ib, np, qa, cq, mr_src, mr_dst, s, d = setup(device, gid_index, n, block)
    toggle = ctypes.CDLL(os.environ["CG_TOGGLE"]) if "CG_TOGGLE" in os.environ else None
    if "IBVERBS_LIBIBVERBS" in os.environ:  # the recording double: its log off
        ctypes.CDLL(os.environ["IBVERBS_LIBIBVERBS"]).fake_set_recording(0)
    ids, st = array.array("Q", bytes(8 * 16)), array.array("i", bytes(4 * 16))
    src_off, dst_off = s * block, d * block
    batch = None
    empty = 0
    for rnd in range(2):
        if rnd == 1 and toggle:
            toggle.cg_start()
        if mode == "objects":
            empty = run_objects(ib, qa, cq, mr_src, mr_dst, s, d, block)
        elif mode == "recv-objects":
            empty = run_recv_objects(ib, qa, cq, mr_src, s, block)
        elif mode == "recv-batch":
            batch = ib.RecvBatch(mr_src, src_off, block)
            empty = run_recv_batch(qa, cq, batch, ids, st)
        elif mode == "recv-progress":
            batch = ib.RecvBatch(mr_src, src_off, block)
            empty = run_recv_progress(qa, batch)
        elif mode in ("poll-wc", "poll-into", "poll-bulk"):
            batch = ib.SendBatch(
                mr_src, src_off, block, dst_off, mr_dst.rkey, remote_base=mr_dst.addr,
                signal_every=1,
            )  # fmt: skip
            into = {"poll-into": True, "poll-bulk": "bulk"}.get(mode, False)
            empty = run_poll(qa, cq, batch, into, ids, st)
        elif mode in ("post", "batch") or batch is None:
            batch = ib.SendBatch(
                mr_src, src_off, block, dst_off, mr_dst.rkey, remote_base=mr_dst.addr,
                signal_every=CHAIN,
            )  # fmt: skip
            if mode == "post":
                empty = run_batch(np, qa, cq, batch, ids, st)
            else:
                empty = run_progress(qa, batch)
        else:  # repost: the next request's remote addresses
            batch.update(remote=dst_off[::-1].copy())
            empty = run_progress(qa, batch)
        if rnd == 1 and toggle:
            toggle.cg_stop()
    print(f"{mode}: {n} blocks, {empty} empty polls")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-d", "--device", default=os.environ.get("IBVERBS_TEST_DEVICE", "rxe0"))
    p.add_argument(
        "-x", "--gid-index", type=int, default=None, help="default: the RoCE v2 IPv4 GID"
    )
    p.add_argument("-n", "--blocks", type=int, default=4096)
    p.add_argument("-b", "--block", type=int, default=16384)
    p.add_argument("--bench", default=os.path.join(ROOT, "build", "bench"))
    p.add_argument("--out", default=os.path.join(ROOT, "build", "out"))
    p.add_argument("--only", help="comma-separated subset of " + ",".join(MODES))
    p.add_argument(
        "--program", choices=[m for m in MODES if m not in C_MODES], help=argparse.SUPPRESS
    )
    a = p.parse_args(argv)
    if a.gid_index is None:
        import ibverbs as ib

        with ib.Context(a.device) as ctx:
            a.gid_index = ctx.find_gid(1).index
    if a.program:  # one program, run under valgrind by the driver below
        program(a.program, a.device, a.gid_index, a.blocks, a.block)
        return 0
    work = os.path.join(a.out, "callgrind")
    os.makedirs(work, exist_ok=True)
    size = [a.device, str(a.gid_index), str(a.blocks), str(a.block)]
    results = {}
    for mode in a.only.split(",") if a.only else MODES:
        if mode in C_MODES:
            cmd = [os.path.join(a.bench, "cg_batch"), *size, C_MODES[mode]]
        else:
            cmd = [sys.executable, os.path.abspath(__file__), "--program", mode]
            cmd += ["-d", a.device, "-x", str(a.gid_index), "-n", str(a.blocks)]
            cmd += ["-b", str(a.block)]
        prefix = os.path.join(work, f"cg.batch-{mode}.out")
        # One BLAS thread: numpy's idle OpenBLAS workers spin, and valgrind
        # runs one thread at a time (and would count their spinning).
        env = dict(
            os.environ,
            PYTHONHASHSEED="0",
            CG_TOGGLE=os.path.join(a.bench, "cgtoggle.so"),
            OPENBLAS_NUM_THREADS="1",
            OMP_NUM_THREADS="1",
        )
        if cmd[0].endswith("cg_batch") and "IBVERBS_LIBIBVERBS" in env:  # over the recording double
            env["LD_PRELOAD"] = env["IBVERBS_LIBIBVERBS"]
        t0 = time.monotonic()
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={prefix}"]
            + cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        if proc.returncode != 0:
            print(f"{mode}: failed ({proc.returncode}):\n{proc.stdout[-3000:]}", flush=True)
            results[mode] = {"error": proc.stdout[-3000:]}
            continue
        ir = totals(loop_dump(prefix))
        empty = [line for line in proc.stdout.splitlines() if "empty polls" in line]
        results[mode] = {"instructions": ir, "per_block": ir / a.blocks, "run": empty}
        print(
            f"{mode:8} {ir / a.blocks:9.0f} instructions/block  "
            f"({empty[-1] if empty else '?'}; {time.monotonic() - t0:.0f} s)",
            flush=True,
        )
    for group, floor in ((SEND, "c"), (RECV, "recv-c"), (POLL, "poll-c")):
        if "per_block" not in results.get(floor, {}):
            continue
        for mode in group:
            if "per_block" in results.get(mode, {}):
                results[mode]["over_c"] = results[mode]["per_block"] / results[floor]["per_block"]
        print(
            "over c: "
            + ", ".join(
                f"{m} {results[m]['over_c']:.2f}x" for m in group if "over_c" in results.get(m, {})
            )
        )
    with open(os.path.join(a.out, "cg_batch.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0 if all("per_block" in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
