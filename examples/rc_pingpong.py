#!/usr/bin/env python3
"""RC ping-pong over SEND/RECV, wire-compatible with rdma-core's C
``ibv_rc_pingpong``: either end can be this script or the C tool.

    server:  python examples/rc_pingpong.py -d rxe0 -g 1
    client:  python examples/rc_pingpong.py -d rxe0 -g 1 SERVERNAME

How the two ends meet (the C tool's protocol):

- The client opens a TCP connection to the server (port 18515 by default).
- Each side describes its QP as the text ``LID:QPN:PSN:GID`` formatted as
  ``%04x:%06x:%06x:`` followed by the 16 GID bytes as 32 hex digits, in
  byte order; the message is sent as a fixed 52-byte, NUL-padded buffer.
- The client writes its message first; the server reads it, moves its QP to
  RTS, and answers with its own; the client then writes ``"done"`` (five
  bytes with the NUL) and closes, and connects its QP.
- Both sides posted their receives before the exchange.  The client sends
  first; from then on each side sends again once its previous send has
  completed and a message has arrived, until both have done ``-n`` sends
  and receives.

Options mirror the C tool: -p port, -d device, -i ib port, -s size,
-m mtu, -r rx depth, -n iterations, -l service level, -g GID index.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import socket
import sys
import time

import ibverbs as ib

RECV_WRID = 1
SEND_WRID = 2
MSG_SIZE = 52  # len("0000:000000:000000:" + 32 hex digits) + NUL
MTU_BY_BYTES = {
    256: ib.MTU.MTU_256,
    512: ib.MTU.MTU_512,
    1024: ib.MTU.MTU_1024,
    2048: ib.MTU.MTU_2048,
    4096: ib.MTU.MTU_4096,
}


class PingPongError(Exception):
    pass


# ---------------------------------------------------------------------------
# The text exchange
# ---------------------------------------------------------------------------


def encode_dest(lid: int, qpn: int, psn: int, gid: ib.Gid) -> bytes:
    text = f"{lid:04x}:{qpn:06x}:{psn:06x}:{gid.raw.hex()}".encode("ascii")
    if len(text) != MSG_SIZE - 1:
        raise PingPongError(f"cannot encode destination {text!r}")
    return text + b"\0"


def decode_dest(msg: bytes) -> tuple[int, int, int, ib.Gid]:
    """(lid, qpn, psn, gid) from a peer's 52-byte message."""
    try:
        text = msg.split(b"\0", 1)[0].decode("ascii")
        lid, qpn, psn, gid = text.split(":")
        return int(lid, 16), int(qpn, 16), int(psn, 16), ib.Gid(bytes.fromhex(gid))
    except ValueError as e:
        raise PingPongError(f"malformed destination message {msg!r}: {e}") from None


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise PingPongError(f"peer closed the connection after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def client_exchange(host: str, port: int, my_msg: bytes, connect_timeout: float):
    deadline = time.monotonic() + connect_timeout
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=30)
            break
        except OSError as e:
            if time.monotonic() >= deadline:
                raise PingPongError(f"couldn't connect to {host}:{port}: {e}") from None
            time.sleep(0.1)
    with sock:
        sock.sendall(my_msg)
        remote = recv_exact(sock, MSG_SIZE)
        sock.sendall(b"done\0")
    return decode_dest(remote)


def server_listen(port: int) -> socket.socket:
    if socket.has_dualstack_ipv6():
        try:
            return socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
        except OSError:
            pass
    return socket.create_server(("", port))


def server_exchange(listener: socket.socket, my_msg: bytes, connect_qp, accept_timeout: float):
    listener.settimeout(accept_timeout or None)
    try:
        conn, _ = listener.accept()
    except socket.timeout:
        raise PingPongError(f"no client connected within {accept_timeout} s") from None
    with conn:
        conn.settimeout(30)
        remote = decode_dest(recv_exact(conn, MSG_SIZE))
        # Like the C server: connect before answering, so that the client
        # can send as soon as it has our address.
        connect_qp(remote)
        conn.sendall(my_msg)
        done = recv_exact(conn, 5)
        if done != b"done\0":
            raise PingPongError(f"expected 'done' from the client, got {done!r}")
    return remote


# ---------------------------------------------------------------------------
# The ping-pong
# ---------------------------------------------------------------------------


def open_device(name: str | None) -> ib.Context:
    devices = ib.get_device_list()
    if not devices:
        raise PingPongError("no RDMA devices found")
    if name is None:
        return devices[0].open()
    for dev in devices:
        if dev.name == name:
            return dev.open()
    raise PingPongError(f"IB device {name} not found")


def run(args) -> int:
    mtu = MTU_BY_BYTES.get(args.mtu)
    if mtu is None:
        raise PingPongError(f"invalid MTU {args.mtu}")
    # Every resource is a context manager; the ExitStack closes them in
    # reverse order (QP before CQ, MR before PD, ...) however we leave.
    with contextlib.ExitStack() as stack:
        ctx = stack.enter_context(open_device(args.ib_dev))
        pd = stack.enter_context(ctx.alloc_pd())
        buf = bytearray(args.size)
        mr = stack.enter_context(ib.reg_tensor(pd, buf, ib.AccessFlags.LOCAL_WRITE))
        cq = stack.enter_context(ctx.create_cq(args.rx_depth + 1))
        qp = stack.enter_context(
            pd.create_qp(
                ib.QPInitAttr(
                    send_cq=cq,
                    recv_cq=cq,
                    qp_type=ib.QPType.RC,
                    max_send_wr=1,
                    max_recv_wr=args.rx_depth,
                    max_send_sge=1,
                    max_recv_sge=1,
                )
            )
        )
        qp.to_init(args.ib_port, 0)

        # One RecvWR per receive slot, built once and reposted as a chain.
        sge = ib.SGE(mr, args.size)
        recvs = [ib.RecvWR(RECV_WRID, [sge]) for _ in range(args.rx_depth)]
        qp.post_recv(recvs)
        routs = args.rx_depth
        send_wr = ib.SendWR(SEND_WRID, [sge], ib.WROpcode.SEND, ib.SendFlags.SIGNALED)

        port_attr = ctx.query_port(args.ib_port)
        if port_attr.link_layer != ib.LinkLayer.ETHERNET and port_attr.lid == 0:
            raise PingPongError("couldn't get local LID")
        if args.gid_idx >= 0:
            gid = ctx.query_gid(args.ib_port, args.gid_idx)
        else:
            gid = ib.Gid(bytes(16))
        psn = random.getrandbits(24)
        print(
            f"  local address:  LID 0x{port_attr.lid:04x}, QPN 0x{qp.qp_num:06x}, "
            f"PSN 0x{psn:06x}, GID {gid}",
            flush=True,
        )
        my_msg = encode_dest(port_attr.lid, qp.qp_num, psn, gid)

        def connect_qp(remote):
            lid, qpn, rpsn, rgid = remote
            info = ib.QPInfo(qpn, rpsn, lid, rgid, args.ib_port, mtu)
            qp.to_rtr(
                info,
                sgid_index=max(args.gid_idx, 0),
                mtu=mtu,
                port=args.ib_port,
                sl=args.sl,
                hop_limit=1,
                max_dest_rd_atomic=1,
                min_rnr_timer=12,
            )
            qp.to_rts(psn, timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1)

        if args.servername:
            remote = client_exchange(args.servername, args.port, my_msg, args.connect_timeout)
            connect_qp(remote)
        else:
            with server_listen(args.port) as listener:
                remote = server_exchange(listener, my_msg, connect_qp, args.timeout)
        lid, qpn, rpsn, rgid = remote
        print(
            f"  remote address: LID 0x{lid:04x}, QPN 0x{qpn:06x}, PSN 0x{rpsn:06x}, GID {rgid}",
            flush=True,
        )

        pending = RECV_WRID
        start = time.perf_counter()
        if args.servername:
            qp.post_send(send_wr)
            pending |= SEND_WRID

        rcnt = scnt = 0
        last_progress = time.monotonic()
        while rcnt < args.iters or scnt < args.iters:
            wcs = cq.poll(2)
            if not wcs:
                if args.timeout and time.monotonic() - last_progress > args.timeout:
                    raise PingPongError(
                        f"no completion for {args.timeout} s (sent {scnt}, received {rcnt})"
                    )
                continue
            last_progress = time.monotonic()
            for wc in wcs:
                wc.raise_for_status()
                if wc.wr_id == SEND_WRID:
                    scnt += 1
                elif wc.wr_id == RECV_WRID:
                    routs -= 1
                    if routs <= 1:
                        more = args.rx_depth - routs
                        qp.post_recv(recvs[:more])
                        routs += more
                    rcnt += 1
                else:
                    raise PingPongError(f"completion for unknown wr_id {wc.wr_id}")
                pending &= ~wc.wr_id
                if scnt < args.iters and not pending:
                    qp.post_send(send_wr)
                    pending = RECV_WRID | SEND_WRID
        elapsed = time.perf_counter() - start

        usec = elapsed * 1e6
        nbytes = args.size * args.iters * 2
        print(f"{nbytes} bytes in {elapsed:.2f} seconds = {nbytes * 8 / usec:.2f} Mbit/sec")
        print(f"{args.iters} iters in {elapsed:.2f} seconds = {usec / args.iters:.2f} usec/iter")
    return 0


def parse_args(argv):
    p = argparse.ArgumentParser(description="RC ping-pong, interoperable with ibv_rc_pingpong")
    p.add_argument("servername", nargs="?", help="connect to this server (omit to be the server)")
    p.add_argument(
        "-p",
        "--port",
        type=int,
        default=18515,
        help="listen on/connect to TCP port (default 18515)",
    )
    p.add_argument("-d", "--ib-dev", help="use this IB device (default first)")
    p.add_argument(
        "-i", "--ib-port", type=int, default=1, help="use this port of the IB device (default 1)"
    )
    p.add_argument(
        "-s",
        "--size",
        type=int,
        default=4096,
        help="size of the message to exchange (default 4096)",
    )
    p.add_argument("-m", "--mtu", type=int, default=1024, help="path MTU in bytes (default 1024)")
    p.add_argument(
        "-r",
        "--rx-depth",
        type=int,
        default=500,
        help="number of receives to post at a time (default 500)",
    )
    p.add_argument(
        "-n", "--iters", type=int, default=1000, help="number of exchanges (default 1000)"
    )
    p.add_argument("-l", "--sl", type=int, default=0, help="service level value (default 0)")
    p.add_argument(
        "-g", "--gid-idx", type=int, default=-1, help="local port GID index (needed on RoCE)"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="give up after this many seconds without a client "
        "or a completion (0: never; default 30)",
    )
    p.add_argument(
        "--connect-timeout",
        type=float,
        default=10.0,
        help="client: keep retrying the TCP connection this long (default 10 s)",
    )
    args = p.parse_args(argv)
    if args.size < 1 or args.iters < 1 or args.rx_depth < 2:
        p.error("size and iters must be >= 1, rx-depth >= 2")
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except (PingPongError, ib.VerbsError, ib.CompletionError, OSError) as e:
        print(f"rc_pingpong: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
