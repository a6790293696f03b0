#!/usr/bin/env python3
"""The quickstart across two hosts: the client RDMA-writes 4 KiB into the
server's memory, and the SERVER checks that the bytes arrived.

    server:  python examples/quickstart_two_hosts.py -d rxe0 -g 1 --listen 198.18.0.1
    client:  python examples/quickstart_two_hosts.py -d rxe1 -g 1 198.18.0.1

The out-of-band exchange is one TCP connection: the client sends its
28-byte QPInfo record; the server answers with its own record followed by
the target buffer's address (8 bytes) and rkey (4 bytes), big-endian.  The
client then writes with RDMA_WRITE_WITH_IMM (immediate = the byte count),
so the server learns from a receive completion that the write landed;
neither side's CPU touches the other's memory.  Under tools/rxe-vm
--nodes 2 the two nodes' devices and addresses are in IBVERBS_DEVICE and
IBVERBS_NODE_ADDRS.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import struct
import sys
import time

import ibverbs as ib

PORT = 1
SIZE = 4096
TAIL = struct.Struct(">QI")  # the server's buffer address and rkey


def expected() -> bytes:
    return bytes((i * 7 + 3) % 251 for i in range(SIZE))


def recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise SystemExit("the peer closed the connection early")
        data += chunk
    return data


def connect_retrying(host: str, port: int, timeout: float) -> socket.socket:
    """Connect to the server, waiting for it to listen (it may start later)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection((host, port), 10)
        except (ConnectionRefusedError, socket.timeout):
            if time.monotonic() > deadline:
                raise SystemExit(f"nobody listens on {host}:{port}") from None
            time.sleep(0.2)


def wait_completion(cq: ib.CQ, timeout: float = 30.0) -> ib.WC:
    deadline = time.monotonic() + timeout
    while True:
        wcs = cq.poll(1)
        if wcs:
            wcs[0].raise_for_status()
            return wcs[0]
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the completion")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("server", nargs="?", help="the server's address (client mode)")
    p.add_argument("--listen", metavar="ADDR", help="serve on ADDR (server mode)")
    p.add_argument("-d", "--device", required=True)
    p.add_argument(
        "-g", "--gid-index", type=int, default=None, help="default: the port's RoCE v2 IPv4 GID"
    )
    p.add_argument("-p", "--port", type=int, default=18530, help="TCP port")
    args = p.parse_args(argv[1:])
    if (args.server is None) == (args.listen is None):
        p.error("give either --listen ADDR (server) or the server's address (client)")

    access = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
    with contextlib.ExitStack() as res:
        ctx = res.enter_context(ib.Context(args.device))
        pd = res.enter_context(ctx.alloc_pd())
        cq = res.enter_context(ctx.create_cq(16))
        buf = bytearray(SIZE)
        mr = res.enter_context(ib.reg_tensor(pd, buf, access))
        qp = res.enter_context(
            pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.RC))
        )
        if args.gid_index is None:
            args.gid_index = ctx.find_gid(PORT).index
        gid = ctx.query_gid(PORT, args.gid_index)
        mine = ib.local_qp_info(
            qp, ctx.query_port(PORT), gid, port=PORT, psn=0x2000 + (args.server is None)
        )

        if args.listen:
            srv = res.enter_context(socket.create_server((args.listen, args.port)))
            srv.settimeout(120)
            conn = res.enter_context(srv.accept()[0])
            conn.settimeout(60)
            theirs = ib.QPInfo.from_bytes(recv_exact(conn, ib.QPInfo.WIRE_SIZE))
            ib.connect_rc(
                qp, theirs, port=PORT, sgid_index=args.gid_index, access=access, local_psn=mine.psn
            )
            qp.post_recv(ib.RecvWR(wr_id=1))  # consumed by the WRITE_WITH_IMM
            conn.sendall(mine.to_bytes() + TAIL.pack(mr.addr, mr.rkey))
            print(
                f"server {ib.Gid(mine.gid)}: QP {qp.qp_num:#x} connected to "
                f"QP {theirs.qp_num:#x} at {ib.Gid(theirs.gid)}; waiting for the write"
            )
            wc = wait_completion(cq, 120)
            if wc.opcode != ib.WCOpcode.RECV_RDMA_WITH_IMM or wc.imm_data != SIZE:
                print(f"FAILED: unexpected completion {wc}")
                return 1
            if bytes(buf) != expected():
                print("FAILED: the bytes in this host's memory differ")
                return 1
            print(
                f"verified on the server: all {SIZE} bytes written by {ib.Gid(theirs.gid)} arrived"
            )
            return 0

        sock = res.enter_context(connect_retrying(args.server, args.port, 120))
        sock.sendall(mine.to_bytes())
        reply = recv_exact(sock, ib.QPInfo.WIRE_SIZE + TAIL.size)
        theirs = ib.QPInfo.from_bytes(reply[: ib.QPInfo.WIRE_SIZE])
        addr, rkey = TAIL.unpack(reply[ib.QPInfo.WIRE_SIZE :])
        ib.connect_rc(
            qp, theirs, port=PORT, sgid_index=args.gid_index, access=access, local_psn=mine.psn
        )
        buf[:] = expected()
        t0 = time.perf_counter()
        qp.post_send(
            ib.SendWR(
                wr_id=2,
                sg_list=[ib.SGE(mr, SIZE)],
                opcode=ib.WROpcode.RDMA_WRITE_WITH_IMM,
                imm_data=SIZE,
                send_flags=ib.SendFlags.SIGNALED,
                remote_addr=addr,
                rkey=rkey,
            )
        )
        wait_completion(cq)
        print(
            f"client {ib.Gid(mine.gid)}: wrote {SIZE} bytes into {ib.Gid(theirs.gid)}'s memory "
            f"in {(time.perf_counter() - t0) * 1e6:.0f} us"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
