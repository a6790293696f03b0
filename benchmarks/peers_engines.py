#!/usr/bin/env python3
"""One side of one Mooncake or NIXL transfer, for benchmarks/peers.py.

    python peers_engines.py mooncake|nixl target    --dev rxe0 --ip A0 --ctl PORT ...
    python peers_engines.py mooncake|nixl initiator --dev rxe1 --ip A1 --ctl A0:PORT ...

Runs under the peers' own virtual environment (build/peers-venv, made by
`make bench-peers`), never the project's.  The two sides meet over a TCP
control connection (JSON messages): the target registers a pool, says
where it is (and how to reach its engine), the initiator writes the
(src block, dst block) pairs into it with the engine's batch call and
times it, the target checks each destination block's CRC32.  The
initiator prints one JSON line starting with RESULT.  NIXL segfaults at
interpreter exit (rc 139, every run, both sides): both sides leave with
os._exit once the result is printed and flushed, and peers.py accepts
139 only from a run whose RESULT line came first.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import time
import zlib

import numpy as np


def send_msg(sock, obj):
    data = json.dumps(obj).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv_msg(sock):
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the peer closed the control connection")
            buf += chunk
        return buf

    (n,) = struct.unpack(">I", exact(4))
    return json.loads(exact(n))


def pool(n_blocks, block_size, fill):
    buf = np.zeros(n_blocks * block_size, dtype=np.uint8)
    if fill:
        buf.view(np.uint64)[:] = np.arange(buf.nbytes // 8, dtype=np.uint64) * 0x9E37
    return buf


def crcs(buf, blocks, block_size):
    mv = memoryview(buf)
    return [zlib.crc32(mv[b * block_size : (b + 1) * block_size]) for b in blocks]


def done(obj=None):
    if obj is not None:
        print("RESULT " + json.dumps(obj), flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # NIXL's teardown segfaults (rc 139); skip it


# ---------------------------------------------------------------- Mooncake


def mooncake_engine(ip, dev):
    from mooncake.engine import TransferEngine

    eng = TransferEngine()
    rc = eng.initialize(ip, "P2PHANDSHAKE", "rdma", dev)
    if rc != 0:
        raise SystemExit(f"mooncake: initialize failed ({rc})")
    return eng


def mooncake_target(a, sock, job):
    eng = mooncake_engine(a.ip, a.dev)
    buf = pool(job["pool_blocks"], job["block_size"], False)
    if eng.register_memory(buf.ctypes.data, buf.nbytes) != 0:
        raise SystemExit("mooncake: register_memory failed")
    send_msg(sock, {"session": f"{a.ip}:{eng.get_rpc_port()}", "addr": buf.ctypes.data})
    return buf


def mooncake_initiator(a, sock, job, src):
    eng = mooncake_engine(a.ip, a.dev)
    if eng.register_memory(src.ctypes.data, src.nbytes) != 0:
        raise SystemExit("mooncake: register_memory failed")
    where = recv_msg(sock)
    bs = job["block_size"]
    srcs = [src.ctypes.data + s * bs for s, _ in job["pairs"]]
    dsts = [where["addr"] + d * bs for _, d in job["pairs"]]
    lens = [bs] * len(srcs)
    t0 = time.perf_counter()
    rc = eng.batch_transfer_sync_write(where["session"], srcs, dsts, lens)
    t = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"mooncake: batch_transfer_sync_write failed ({rc})")
    return {"seconds": t}


# -------------------------------------------------------------------- NIXL


def nixl_agent(name):
    try:
        from nixl_cu12 import nixl_agent, nixl_agent_config
    except ImportError:
        from nixl import nixl_agent, nixl_agent_config
    return nixl_agent(name, nixl_agent_config(backends=["UCX"]))


def nixl_target(a, sock, job):
    agent = nixl_agent("target")
    buf = pool(job["pool_blocks"], job["block_size"], False)
    agent.register_memory([(buf.ctypes.data, buf.nbytes, 0, "")], "DRAM")
    send_msg(sock, {"meta": agent.get_agent_metadata().hex(), "addr": buf.ctypes.data})
    theirs = recv_msg(sock)
    agent.add_remote_agent(bytes.fromhex(theirs["meta"]))
    return buf


def nixl_initiator(a, sock, job, src):
    agent = nixl_agent("initiator")
    agent.register_memory([(src.ctypes.data, src.nbytes, 0, "")], "DRAM")
    where = recv_msg(sock)
    peer = agent.add_remote_agent(bytes.fromhex(where["meta"]))
    send_msg(sock, {"meta": agent.get_agent_metadata().hex()})
    bs = job["block_size"]
    local = agent.get_xfer_descs(
        [(src.ctypes.data + s * bs, bs, 0) for s, _ in job["pairs"]], "DRAM"
    )
    remote = agent.get_xfer_descs(
        [(where["addr"] + d * bs, bs, 0) for _, d in job["pairs"]], "DRAM"
    )
    t0 = time.perf_counter()
    deadline = t0 + 120
    while True:  # the remote metadata may take a moment to be usable
        try:
            handle = agent.initialize_xfer("WRITE", local, remote, peer)
            break
        except Exception:
            if time.perf_counter() > deadline:
                raise
            time.sleep(0.01)
    t1 = time.perf_counter()
    state = agent.transfer(handle)
    while state == "PROC":
        state = agent.check_xfer_state(handle)
    t2 = time.perf_counter()
    if state != "DONE":
        raise SystemExit(f"nixl: transfer ended in state {state}")
    return {"seconds": t2 - t1, "seconds_with_handle": t2 - t0}


# -------------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser()
    p.add_argument("engine", choices=["mooncake", "nixl"])
    p.add_argument("role", choices=["target", "initiator"])
    p.add_argument("--dev", required=True)
    p.add_argument("--ip", required=True)
    p.add_argument("--ctl", required=True, help="target: PORT; initiator: HOST:PORT")
    p.add_argument("--job", help="initiator: the job as JSON (block_size, pool_blocks, pairs)")
    a = p.parse_args()
    if a.role == "target":
        srv = socket.create_server((a.ip, int(a.ctl)))
        srv.settimeout(300)
        sock = srv.accept()[0]
        job = recv_msg(sock)
        buf = (mooncake_target if a.engine == "mooncake" else nixl_target)(a, sock, job)
        recv_msg(sock)  # the initiator's transfer is over
        dsts = [d for _, d in job["pairs"]]
        bad = [i for i, c in enumerate(crcs(buf, dsts, job["block_size"])) if c != job["crcs"][i]]
        send_msg(sock, {"bad": len(bad)})
        print(
            f"{a.engine} target: {len(dsts) - len(bad)} of {len(dsts)} blocks verified", flush=True
        )
        done()
    with open(a.job) as f:
        job = json.load(f)
    src = pool(job["pool_blocks"], job["block_size"], True)
    job["crcs"] = crcs(src, [s for s, _ in job["pairs"]], job["block_size"])
    host, port = a.ctl.rsplit(":", 1)
    deadline = time.monotonic() + 300
    while True:
        try:
            sock = socket.create_connection((host, int(port)), 10)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    send_msg(sock, job)
    res = (mooncake_initiator if a.engine == "mooncake" else nixl_initiator)(a, sock, job, src)
    send_msg(sock, {"written": True})
    bad = recv_msg(sock)["bad"]
    nbytes = len(job["pairs"]) * job["block_size"]
    res.update(engine=a.engine, gbps=nbytes / res["seconds"] / 1e9, verified=bad == 0, bad=bad)
    if "seconds_with_handle" in res:
        res["gbps_with_handle"] = nbytes / res["seconds_with_handle"] / 1e9
    done(res)


if __name__ == "__main__":
    main()
