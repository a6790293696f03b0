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
initiator prints one JSON line starting with RESULT, the target "... all
N blocks verified" when every block matched.

What is timed is the batch call alone, as for kv_transfer (whose QP
connect and MR registration come before its clock starts): memory is
registered and the engine has connected to the target first, by a
warm-up write of 64 bytes of the first pair (the engines connect lazily,
on the first transfer to a peer).  The real batch then writes those 64
bytes again and the rest of the block, so the check still sees it.

Both sides leave the normal way, interpreter teardown included: NIXL's
processes die of SIGSEGV there (rc 139 / -11, every run, both sides), and
peers.py records that as a note on a run whose verification came first.
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


def result(obj):
    print("RESULT " + json.dumps(obj), flush=True)


# ---------------------------------------------------------------- Mooncake


def mooncake_engine(ip, dev, protocol="rdma"):
    from mooncake.engine import TransferEngine

    eng = TransferEngine()
    rc = eng.initialize(ip, "P2PHANDSHAKE", protocol, dev)
    if rc != 0:
        raise SystemExit(f"mooncake: initialize failed ({rc})")
    return eng


def mooncake_target(a, sock, job):
    eng = mooncake_engine(a.ip, a.dev, a.protocol)
    buf = pool(job["pool_blocks"], job["block_size"], False)
    if eng.register_memory(buf.ctypes.data, buf.nbytes) != 0:
        raise SystemExit("mooncake: register_memory failed")
    send_msg(sock, {"session": f"{a.ip}:{eng.get_rpc_port()}", "addr": buf.ctypes.data})
    return eng, buf


def mooncake_initiator(a, sock, job, src):
    eng = mooncake_engine(a.ip, a.dev, a.protocol)
    if eng.register_memory(src.ctypes.data, src.nbytes) != 0:
        raise SystemExit("mooncake: register_memory failed")
    where = recv_msg(sock)
    bs = job["block_size"]
    srcs = [src.ctypes.data + s * bs for s, _ in job["pairs"]]
    dsts = [where["addr"] + d * bs for _, d in job["pairs"]]
    lens = [bs] * len(srcs)
    # Warm-up: the first transfer to a segment makes the connection.
    if eng.transfer_sync_write(where["session"], srcs[0], dsts[0], 64) != 0:
        raise SystemExit("mooncake: the warm-up transfer_sync_write failed")
    toggle = cg_toggle()
    t0 = time.perf_counter()
    toggle[0]()
    rc = eng.batch_transfer_sync_write(where["session"], srcs, dsts, lens)
    toggle[1]()
    t = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"mooncake: batch_transfer_sync_write failed ({rc})")
    return eng, {"seconds": t}


# -------------------------------------------------------------------- NIXL


def nixl_agent(name):
    try:  # nixl-cu12's module; "nixl" is the meta-package's name
        from nixl_cu12 import nixl_agent, nixl_agent_config
    except ImportError:
        from nixl import nixl_agent, nixl_agent_config
    return nixl_agent(name, nixl_agent_config(backends=["UCX"]))


def nixl_register(agent, buf):
    reg = agent.get_reg_descs([(buf.ctypes.data, buf.nbytes, 0, "")], "DRAM")
    if agent.register_memory(reg) is None:
        raise SystemExit("nixl: register_memory failed")
    return reg


def nixl_wait(agent, handle, what):
    state = agent.transfer(handle)
    while state == "PROC":
        state = agent.check_xfer_state(handle)
    if state != "DONE":
        raise SystemExit(f"nixl: {what} ended in state {state}")


def nixl_target(a, sock, job):
    agent = nixl_agent("target")
    buf = pool(job["pool_blocks"], job["block_size"], False)
    reg = nixl_register(agent, buf)
    send_msg(sock, {"meta": agent.get_agent_metadata().hex(), "addr": buf.ctypes.data})
    return (agent, reg), buf


def nixl_initiator(a, sock, job, src):
    agent = nixl_agent("initiator")
    reg = nixl_register(agent, src)
    where = recv_msg(sock)
    peer = agent.add_remote_agent(bytes.fromhex(where["meta"]))
    if isinstance(peer, bytes):
        peer = peer.decode()
    bs = job["block_size"]
    pairs = job["pairs"]

    def descs(base, blocks, n):
        return agent.get_xfer_descs([(base + b * bs, n, 0) for b in blocks], "DRAM")

    # Warm-up: UCX connects to the target on the first transfer.
    s0, d0 = pairs[0]
    warm = agent.initialize_xfer(
        "WRITE", descs(src.ctypes.data, [s0], 64), descs(where["addr"], [d0], 64), peer
    )
    nixl_wait(agent, warm, "the warm-up WRITE")
    agent.release_xfer_handle(warm)
    toggle = cg_toggle()
    t0 = time.perf_counter()
    toggle[0]()
    local = descs(src.ctypes.data, [s for s, _ in pairs], bs)
    remote = descs(where["addr"], [d for _, d in pairs], bs)
    handle = agent.initialize_xfer("WRITE", local, remote, peer)
    t1 = time.perf_counter()
    nixl_wait(agent, handle, "the WRITE")
    toggle[1]()
    t2 = time.perf_counter()
    agent.release_xfer_handle(handle)
    return (agent, reg), {"seconds": t2 - t1, "seconds_with_handle": t2 - t0}


def cg_toggle():
    """callgrind's start/stop around the timed call when CG_TOGGLE names
    benchmarks/cgtoggle.so (benchmarks/peers_callgrind.py); else no-ops."""
    if not os.environ.get("CG_TOGGLE"):
        return (lambda: None, lambda: None)
    import ctypes

    lib = ctypes.CDLL(os.environ["CG_TOGGLE"])
    return (lib.cg_start, lib.cg_stop)


# -------------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser()
    p.add_argument("engine", choices=["mooncake", "nixl"])
    p.add_argument("role", choices=["target", "initiator"])
    p.add_argument("--dev", required=True)
    p.add_argument("--ip", required=True)
    p.add_argument("--ctl", required=True, help="target: PORT; initiator: HOST:PORT")
    p.add_argument(
        "--protocol", default="rdma", help="mooncake's transport (tcp: a check without RDMA)"
    )
    p.add_argument("--job", help="initiator: the job as JSON (block_size, pool_blocks, pairs)")
    a = p.parse_args()
    if a.role == "target":
        srv = socket.create_server((a.ip, int(a.ctl)))
        srv.settimeout(1800)  # an initiator under valgrind takes minutes to come
        sock = srv.accept()[0]
        job = recv_msg(sock)
        keep, buf = (mooncake_target if a.engine == "mooncake" else nixl_target)(a, sock, job)
        recv_msg(sock)  # the initiator's transfer is over
        dsts = [d for _, d in job["pairs"]]
        bad = [i for i, c in enumerate(crcs(buf, dsts, job["block_size"])) if c != job["crcs"][i]]
        send_msg(sock, {"bad": len(bad)})
        if bad:
            print(f"{a.engine} target: FAILED: {len(bad)} of {len(dsts)} blocks bad", flush=True)
            return 1
        print(f"{a.engine} target: all {len(dsts)} blocks verified", flush=True)
        recv_msg(sock)  # the initiator is done with this engine's memory
        del keep
        return 0
    with open(a.job) as f:
        job = json.load(f)
    src = pool(job["pool_blocks"], job["block_size"], True)
    job["crcs"] = crcs(src, [s for s, _ in job["pairs"]], job["block_size"])
    host, port = a.ctl.rsplit(":", 1)
    deadline = time.monotonic() + 1800
    while True:
        try:
            sock = socket.create_connection((host, int(port)), 10)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    send_msg(sock, job)
    init = mooncake_initiator if a.engine == "mooncake" else nixl_initiator
    keep, res = init(a, sock, job, src)
    send_msg(sock, {"written": True})
    bad = recv_msg(sock)["bad"]
    nbytes = len(job["pairs"]) * job["block_size"]
    res.update(engine=a.engine, gbps=nbytes / res["seconds"] / 1e9, verified=bad == 0, bad=bad)
    if "seconds_with_handle" in res:
        res["gbps_with_handle"] = nbytes / res["seconds_with_handle"] / 1e9
    result(res)
    send_msg(sock, {"bye": True})
    del keep
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
