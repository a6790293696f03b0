"""Run the ranks of a job as forked processes of the test (helper module
for tests/device/test_bootstrap_rxe.py).

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
import socket
import sys
import time
import traceback
import warnings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    deadline = time.monotonic() + timeout
    status = {}
    while len(status) < len(children) and time.monotonic() < deadline:
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
            problems.append(f"rank {rank}: still running after {timeout} s, killed")
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
