#!/usr/bin/env python3
"""Move KV-cache blocks from one host's memory to another's with RDMA WRITEs.

    receiver:  python examples/kv_transfer.py -d rxe0 --serve 198.18.0.1
    sender:    python examples/kv_transfer.py -d rxe1 --connect 198.18.0.1 \\
                   --blocks 1024 --block-size 16K --pool-blocks 16384 --scatter

Each side registers one pool of fixed-size blocks (one MR for the whole
pool).  The sender opens a TCP connection, sends its QPInfo and the shape
of the job (block size, pool size, the (src block, dst block) pairs and a
CRC32 of each source block); the receiver allocates and registers its
pool, answers with its QPInfo, the pool's address and its rkey.  From then
on the receiver's CPU does nothing but wait: the sender moves every pair
with one RDMA WRITE, many in flight (as many as the send queue holds).
The WRITEs are one SendBatch, built in C from columns of the block table
(source offsets, destination offsets, lengths: numpy arrays), and run by
SendBatch.progress: one C loop posts --chain rows at a time (one
ibv_post_send each, only the last row of a post signaled) and reaps the
completions; after a failure the flushes are reaped into arrays
(CQ.poll_into).  The last WRITE of a batch carries an
immediate (the batch number): RC delivers in order, so when the receiver's
completion for it arrives, every block of the batch has landed.  The
receiver then checks each destination block's CRC32 and says so over TCP.

Blocks may be scattered over both pools (--scatter: random source and
destination blocks, as KV-cache pages are); runs of pairs that are
contiguous on both sides are merged into one WRITE of up to --max-write
bytes.  The sender prints one line: batches, GB/s (median, min, max) and
whether the receiver verified every block; --json prints it as JSON too.

If the peer dies mid-batch, the sender accounts for every WR it posted
(each one completes exactly once: signaled successes, implied unsignaled
ones before them, errors and flushes) and fails with the blocks that were
not delivered; the receiver, if it is the survivor, names the blocks whose
CRC did not match.  Under tools/rxe-vm --nodes 2 the devices and
addresses are in IBVERBS_DEVICE and IBVERBS_NODE_ADDRS.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import select
import socket
import statistics
import struct
import sys
import time
import zlib
from dataclasses import dataclass

import numpy as np

import ibverbs as ib

PORT = 1
TCP_PORT = 18540
ACCESS = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
SUCCESS = int(ib.WCStatus.SUCCESS)


class TransferError(RuntimeError):
    """A batch did not complete; .failed lists the pair indexes not delivered."""

    def __init__(self, message: str, failed: list[int]):
        super().__init__(message)
        self.failed = failed


# --------------------------------------------------------------- planning
# Pure functions (no device): which WRITEs move which blocks, how they are
# grouped into posts.  tests/host/test_kv_transfer.py checks them.


@dataclass(frozen=True)
class Write:
    """One RDMA WRITE: LENGTH bytes from SRC_OFF in the local pool to
    DST_OFF in the remote pool, carrying pairs[first : first + count]."""

    src_off: int
    dst_off: int
    length: int
    first: int
    count: int


def plan_writes(pairs, block_size: int, max_write: int) -> list[Write]:
    """One Write per pair, except that consecutive pairs contiguous on BOTH
    sides (src+1, dst+1) merge into one Write of at most MAX_WRITE bytes."""
    if block_size <= 0:
        raise ValueError(f"block_size must be positive, got {block_size}")
    per_write = max(1, max_write // block_size)
    writes: list[Write] = []
    i, n = 0, len(pairs)
    while i < n:
        s0, d0 = pairs[i]
        k = 1
        while k < per_write and i + k < n and tuple(pairs[i + k]) == (s0 + k, d0 + k):
            k += 1
        writes.append(Write(s0 * block_size, d0 * block_size, k * block_size, i, k))
        i += k
    return writes


def plan_arrays(pairs, block_size: int, max_write: int) -> dict[str, np.ndarray]:
    """plan_writes as columns, computed on arrays (no object per Write):
    src_off, dst_off, length, and first/count (the pairs each carries)."""
    if block_size <= 0:
        raise ValueError(f"block_size must be positive, got {block_size}")
    per_write = max(1, max_write // block_size)
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    n = len(p)
    src, dst = p[:, 0], p[:, 1]
    # Pair i continues pair i-1's run when both sides are contiguous.
    cont = np.zeros(n, dtype=bool)
    cont[1:] = (src[1:] == src[:-1] + 1) & (dst[1:] == dst[:-1] + 1)
    starts = np.flatnonzero(~cont)
    pos = np.arange(n) - starts[np.cumsum(~cont) - 1]  # index inside its run
    first = np.flatnonzero(pos % per_write == 0)  # runs cut every per_write
    count = np.diff(np.append(first, n))
    return {
        "src_off": src[first] * block_size,
        "dst_off": dst[first] * block_size,
        "length": count * block_size,
        "first": first,
        "count": count,
    }


def group_posts(n_writes: int, chain: int, depth: int) -> list[range]:
    """Split write indexes 0..n_writes-1 into posts of CHAIN WRs (the last
    may be shorter); a post never holds more WRs than the send queue."""
    if chain < 1 or depth < 1:
        raise ValueError(f"chain and depth must be >= 1, got {chain} and {depth}")
    step = min(chain, depth)
    return [range(k, min(k + step, n_writes)) for k in range(0, n_writes, step)]


def scattered_pairs(n: int, pool_blocks: int, seed: int = 0) -> list[tuple[int, int]]:
    """N (src, dst) pairs, each side N distinct blocks picked at random from
    a pool of POOL_BLOCKS, in random order: KV-cache pages."""
    if n > pool_blocks:
        raise ValueError(f"{n} blocks do not fit a pool of {pool_blocks}")
    rng = np.random.default_rng(seed)
    src = rng.choice(pool_blocks, n, replace=False)
    dst = rng.choice(pool_blocks, n, replace=False)
    return [(int(s), int(d)) for s, d in zip(src, dst)]


class Completions:
    """Every WR posted on one send queue completes exactly once.

    WRs are numbered 0, 1, ... in post order (their wr_id).  RC completes
    them in order, so a successful completion for WR k also completes the
    unsignaled WRs before it; an error completion for WR k means the ones
    before it succeeded and k failed; once the QP is in error, every later
    WR comes back flushed, one completion each, signaled or not."""

    def __init__(self) -> None:
        self.posted = 0
        self.done = 0  # WRs 0..done-1 have completed
        self.failed: list[tuple[int, int]] = []  # (wr_id, status)

    def post(self, n: int) -> None:
        self.posted += n

    def complete_many(self, wr_ids, statuses, n: int) -> None:
        """complete() for the first N rows of two arrays (CQ.poll_into's)."""
        for k in range(n):
            self.complete(int(wr_ids[k]), int(statuses[k]))

    def complete(self, wr_id: int, status: int) -> None:
        if not self.done <= wr_id < self.posted:
            raise AssertionError(
                f"completion for WR {wr_id}: completed already or never posted "
                f"({self.done} of {self.posted} done)"
            )
        if status != SUCCESS:
            self.failed.append((wr_id, status))
        self.done = wr_id + 1

    @property
    def outstanding(self) -> int:
        return self.posted - self.done


# ----------------------------------------------------------------- wiring


def send_msg(sock: socket.socket, obj) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv_msg(sock: socket.socket):
    def exact(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the peer closed the connection")
            buf += chunk
        return buf

    (n,) = struct.unpack(">I", exact(4))
    return json.loads(exact(n))


class Pool:
    """N_BLOCKS blocks of BLOCK_SIZE bytes in one registered buffer."""

    def __init__(self, pd: ib.PD, n_blocks: int, block_size: int):
        self.block_size = block_size
        self.buf = np.zeros(n_blocks * block_size, dtype=np.uint8)
        self.mr = ib.reg_tensor(pd, self.buf, ACCESS)

    def block(self, i: int) -> memoryview:
        b = self.block_size
        return memoryview(self.buf[i * b : (i + 1) * b])

    def crc(self, i: int) -> int:
        return zlib.crc32(self.block(i))


class Endpoint:
    """One side: device, PD, a CQ and an RC QP whose send queue holds DEPTH WRs."""

    def __init__(
        self,
        stack: contextlib.ExitStack,
        device: str,
        gid_index: int | None,
        depth: int,
        events=False,
    ):
        self.ctx = stack.enter_context(ib.Context(device))
        self.pd = stack.enter_context(self.ctx.alloc_pd())
        # A receiver sleeps until its CQ has something (a completion channel);
        # a sender polls.
        self.channel = stack.enter_context(self.ctx.create_comp_channel()) if events else None
        # Room for a completion per WR: after an error every WR is flushed.
        self.cq = stack.enter_context(self.ctx.create_cq(depth + 16, self.channel))
        self.qp = stack.enter_context(
            self.pd.create_qp(
                ib.QPInitAttr(send_cq=self.cq, recv_cq=self.cq, max_send_wr=depth, max_recv_wr=16)
            )
        )
        if gid_index is None:  # the RoCE v2 GID with an IPv4 address
            gid_index = self.ctx.find_gid(PORT).index
        self.depth, self.gid_index = depth, gid_index
        gid = self.ctx.query_gid(PORT, gid_index)
        self.info = ib.local_qp_info(self.qp, self.ctx.query_port(PORT), gid, port=PORT)

    def connect(self, theirs: ib.QPInfo, timeout: int = 16, retry_cnt: int = 7) -> None:
        """RESET -> RTS.  A WR not acknowledged within 4.096 us * 2**TIMEOUT
        (16: 268 ms) is sent again, RETRY_CNT times, then fails: how long
        a dead peer takes to be noticed."""
        ib.connect_rc(
            self.qp,
            theirs,
            port=PORT,
            sgid_index=self.gid_index,
            access=ACCESS,
            timeout=timeout,
            retry_cnt=retry_cnt,
        )


# ----------------------------------------------------------------- sender


@dataclass
class Batch:
    """The WRITEs that move one list of pairs: one SendBatch, built once,
    posted CHAIN rows at a time per run."""

    pairs: list[tuple[int, int]]
    first: np.ndarray  # the first pair each WRITE carries
    count: np.ndarray  # how many pairs it carries
    send: ib.SendBatch | None = None
    chain: int = 16

    @property
    def posts(self) -> int:
        return -(-len(self.first) // self.chain)


def prepare(ep: Endpoint, pool: Pool, remote: dict, pairs, chain: int, max_write: int) -> Batch:
    """Build the WRITEs for PAIRS once (NIXL's "initialize_xfer"): the
    plan's columns become one SendBatch, every CHAIN-th row signaled, the
    last a WRITE_WITH_IMM (its immediate set per run)."""
    plan = plan_arrays(pairs, pool.block_size, max_write)
    step = min(chain, ep.depth)
    send = ib.SendBatch(
        pool.mr,
        plan["src_off"],
        plan["length"],
        plan["dst_off"],
        remote["rkey"],
        remote_base=remote["addr"],
        signal_every=step,
        imm_data=0,
    )
    return Batch(list(pairs), plan["first"], plan["count"], send, step)


def run_batch(ep: Endpoint, batch: Batch, imm: int, timeout: float = 30.0) -> Completions:
    """Run every row of BATCH by SendBatch.progress (one C loop: posts of
    CHAIN rows, never more WRs in flight than the send queue holds, the
    completions reaped into the batch's count) until each WR has
    completed.  On a failed completion, reap the flushes of the rows after
    it into arrays (CQ.poll_into) so that each posted WR is accounted for
    once.  Raises TransferError naming the pairs that were not delivered."""
    send, qp = batch.send, ep.qp
    send.update(imm_data=imm)
    acct = Completions()
    n = len(send)
    deadline = time.monotonic() + timeout
    try:
        while (done := send.progress(qp, ep.depth, batch.chain)) < n:
            if time.monotonic() > deadline:
                send.reset()
                acct.posted = acct.done = done
                raise TransferError(
                    f"timed out: {n - done} WRs not completed", undelivered(batch, acct)
                )
    except ib.CompletionError as e:
        acct.post(e.posted)
        acct.complete(e.row, int(e.status))
        for wc in e.after:  # reaped by the same poll as the failed one
            acct.complete(wc.wr_id, int(wc.status))
        drain(ep, acct, deadline)
    if acct.failed:
        failed = undelivered(batch, acct)
        wr_id, status = acct.failed[0]
        shown = ", ".join(f"{s}->{d}" for s, d in (batch.pairs[i] for i in failed[:8]))
        raise TransferError(
            f"{len(failed)} of {len(batch.pairs)} blocks not delivered (src->dst: {shown}"
            f"{', ...' if len(failed) > 8 else ''}); first failure WR {wr_id}: "
            f"{ib.WCStatus(status).name}; {acct.posted} WRs posted, {acct.done} completed, "
            f"{len(acct.failed)} in error",
            failed,
        )
    acct.post(n)
    acct.done = n
    return acct


def drain(ep: Endpoint, acct: Completions, deadline: float) -> None:
    """Reap the completions of the WRs still in flight into arrays (after
    a failure: one flush each) until every posted WR has completed."""
    ids, statuses = np.zeros(16, dtype=np.uint64), np.zeros(16, dtype=np.int32)
    while acct.done < acct.posted:
        got = ep.cq.poll_into(wr_id=ids, status=statuses)
        acct.complete_many(ids, statuses, got)
        if not got and time.monotonic() > deadline:
            break


def undelivered(batch: Batch, acct: Completions) -> list[int]:
    """Pair indexes whose WRITE failed, was flushed or was never posted."""
    bad = [k for k, _ in acct.failed] + list(range(acct.done, len(batch.first)))
    first, count = batch.first, batch.count
    return sorted(i for k in bad for i in range(int(first[k]), int(first[k] + count[k])))


def sender(args) -> int:
    pairs = (
        scattered_pairs(args.blocks, args.pool_blocks, args.seed)
        if args.scatter
        else [(i, i) for i in range(args.blocks)]
    )
    with contextlib.ExitStack() as stack:
        ep = Endpoint(stack, args.device, args.gid_index, args.depth)
        pool = Pool(ep.pd, args.pool_blocks, args.block_size)
        stack.callback(pool.mr.close)
        # Every source block different: its 8-byte words count up.
        pool.buf.view(np.uint64)[:] = np.arange(pool.buf.nbytes // 8, dtype=np.uint64) * 0x9E37
        sock = stack.enter_context(connect_retrying(args.connect, args.port, 120))
        send_msg(
            sock,
            {
                "qp": ep.info.to_bytes().hex(),
                "block_size": args.block_size,
                "pool_blocks": args.pool_blocks,
                "pairs": pairs,
                "crcs": [pool.crc(s) for s, _ in pairs],
                "batches": args.batches,
            },
        )
        reply = recv_msg(sock)
        ep.connect(ib.QPInfo.from_bytes(bytes.fromhex(reply["qp"])), retry_cnt=args.retry_cnt)

        t0 = time.perf_counter()
        batch = prepare(ep, pool, reply, pairs, args.chain, args.max_write)
        t_prep = time.perf_counter() - t0
        nbytes = len(pairs) * args.block_size
        rates, verified = [], True
        for b in range(args.batches):
            recv_msg(sock)  # the receiver is ready for batch b
            t0 = time.perf_counter()
            try:
                run_batch(ep, batch, imm=b, timeout=args.timeout)
            except TransferError as e:
                print(f"kv_transfer: batch {b} FAILED: {e}", flush=True)
                return 1
            rates.append(nbytes / (time.perf_counter() - t0) / 1e9)
            ok = recv_msg(sock)
            verified &= ok["verified"]
            if not ok["verified"]:
                print(f"kv_transfer: batch {b}: the receiver found bad blocks: {ok['bad'][:8]}")
        send_msg(sock, {"done": True})
    med = statistics.median(rates)
    result = {
        "engine": "kv_transfer",
        "blocks": len(pairs),
        "block_size": args.block_size,
        "scattered": bool(args.scatter),
        "writes": len(batch.first),
        "posts": batch.posts,
        "batches": args.batches,
        "median_gbps": med,
        "min_gbps": min(rates),
        "max_gbps": max(rates),
        "first_with_prepare_gbps": nbytes / (nbytes / rates[0] / 1e9 + t_prep) / 1e9,
        "prepare_ms": t_prep * 1e3,
        "verified": verified,
    }
    print(
        f"kv_transfer: {len(pairs)} x {args.block_size} B blocks"
        f"{' scattered' if args.scatter else ''}, {len(batch.first)} WRITEs in "
        f"{batch.posts} posts, {args.batches} batches: {med:.4f} GB/s median "
        f"(min {min(rates):.4f}, max {max(rates):.4f}), prepare {t_prep * 1e3:.1f} ms, "
        f"{'verified by the receiver' if verified else 'NOT VERIFIED'}"
    )
    if args.json:
        print(json.dumps(result))
    return 0 if verified else 1


# --------------------------------------------------------------- receiver


def wait_imm(ep: Endpoint, sock: socket.socket, imm: int, timeout: float) -> None:
    """Sleep until the batch's WRITE_WITH_IMM has completed, or the sender
    went away (its TCP connection closed), or TIMEOUT passed."""
    deadline = time.monotonic() + timeout
    while True:
        ep.cq.req_notify()
        for wc in ep.cq.poll(1):  # (polled after arming: nothing is missed)
            wc.raise_for_status()
            if wc.imm_data != imm:
                raise TransferError(f"immediate {wc.imm_data} where batch {imm} was due", [])
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no completion of batch {imm} within {timeout} s")
        ready = select.select([ep.channel.fd, sock], [], [], left)[0]
        if sock in ready:
            try:
                gone = not sock.recv(1, socket.MSG_PEEK)
            except OSError as e:  # a reset: the sender's process died
                gone, why = True, e.strerror
            else:
                why = "closed"
            if gone:
                raise ConnectionError(f"the sender went away mid-batch (connection {why})")
        if ep.channel.fd in ready:
            ep.channel.get_cq_event()
            ep.cq.ack_events(1)


def receiver(args) -> int:
    with contextlib.ExitStack() as stack:
        srv = stack.enter_context(socket.create_server((args.serve, args.port)))
        srv.settimeout(max(120.0, args.timeout))  # how long the sender may take to come
        sock = stack.enter_context(srv.accept()[0])
        job = recv_msg(sock)
        ep = Endpoint(stack, args.device, args.gid_index, 16, events=True)
        pool = Pool(ep.pd, job["pool_blocks"], job["block_size"])
        stack.callback(pool.mr.close)
        ep.connect(ib.QPInfo.from_bytes(bytes.fromhex(job["qp"])))
        send_msg(sock, {"qp": ep.info.to_bytes().hex(), "addr": pool.mr.addr, "rkey": pool.mr.rkey})
        dsts = [d for _, d in job["pairs"]]
        for b in range(job["batches"]):
            pool.buf[:] = 0  # so that a block that did not arrive shows
            ep.qp.post_recv(ib.RecvWR(wr_id=b))
            send_msg(sock, {"ready": b})
            print(f"kv_transfer: receiving batch {b}", flush=True)
            try:
                wait_imm(ep, sock, b, args.timeout)
            except (ConnectionError, TimeoutError) as e:
                bad = [i for i, d in enumerate(dsts) if pool.crc(d) != job["crcs"][i]]
                print(
                    f"kv_transfer: batch {b} FAILED: {e}; {len(bad)} of {len(dsts)} blocks "
                    f"did not arrive (pairs {bad[:8]}{' ...' if len(bad) > 8 else ''})"
                )
                return 1
            bad = [i for i, d in enumerate(dsts) if pool.crc(d) != job["crcs"][i]]
            send_msg(sock, {"verified": not bad, "bad": bad[:64]})
        recv_msg(sock)
    print(
        f"kv_transfer: received {job['batches']} batches of {len(dsts)} blocks, "
        f"every block's CRC32 checked"
    )
    return 0


def connect_retrying(host: str, port: int, timeout: float) -> socket.socket:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection((host, port), 10)
        except (ConnectionRefusedError, socket.timeout):
            if time.monotonic() > deadline:
                raise SystemExit(f"nobody listens on {host}:{port}") from None
            time.sleep(0.2)


def size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--serve", metavar="ADDR", help="receive, listening on ADDR")
    mode.add_argument("--connect", metavar="HOST", help="send to the receiver at HOST")
    p.add_argument("-d", "--device", required=True)
    p.add_argument(
        "-g", "--gid-index", type=int, default=None, help="default: the port's RoCE v2 IPv4 GID"
    )
    p.add_argument("-p", "--port", type=int, default=TCP_PORT, help="TCP port")
    p.add_argument("--blocks", type=int, default=64, help="pairs to move per batch")
    p.add_argument("--block-size", type=size, default=1 << 20)
    p.add_argument("--pool-blocks", type=int, help="blocks per pool (default: --blocks)")
    p.add_argument("--scatter", action="store_true", help="random blocks on both sides")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batches", type=int, default=3, help="batches (each timed)")
    p.add_argument("--retry-cnt", type=int, default=7, help="transport retries (sender)")
    p.add_argument("--depth", type=int, default=128, help="send queue depth (WRs in flight)")
    p.add_argument("--chain", type=int, default=16, help="WRs per post")
    p.add_argument("--max-write", type=size, default=1 << 20, help="largest merged WRITE")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per batch")
    p.add_argument("--json", action="store_true", help="also print the result as JSON")
    args = p.parse_args(argv[1:])
    if args.pool_blocks is None:
        args.pool_blocks = args.blocks
    if args.connect:
        if args.blocks < 1 or args.blocks > args.pool_blocks:
            p.error(f"--blocks must be in 1..{args.pool_blocks} (the pool's size)")
        return sender(args)
    return receiver(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
