#!/usr/bin/env python3
"""An RDMA connection manager server, wire-compatible with rdma-core's C
``rdma_server``: rdma-core's ``rdma_client`` (or examples/cm_client.py) can
talk to it.

    python examples/cm_server.py [-s ADDRESS] [-p PORT] [-n CONNECTIONS]

For each connection (the C tools' protocol): accept it with one 16-byte
receive posted, wait for the client's 16-byte message, send 16 bytes back,
then disconnect.  Exits 0 once -n connections have been served.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time

import ibverbs as ib

MSG = 16


def wait_wc(cq, timeout=30.0):
    """The next completion of cq, raising on a failed one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        wcs = cq.poll()
        if wcs:
            wcs[0].raise_for_status()
            return wcs[0]
    raise TimeoutError("no completion within %.0f s" % timeout)


def serve_one(listener, timeout):
    with listener.get_request(timeout=timeout) as cmid:
        ctx = cmid.context
        with ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            buf = ctypes.create_string_buffer(MSG)
            with pd.reg_mr(ctypes.addressof(buf), MSG, ib.AccessFlags.LOCAL_WRITE, owner=buf) as mr:
                attr = ib.QPInitAttr(
                    send_cq=cq,
                    recv_cq=cq,
                    max_send_wr=1,
                    max_recv_wr=1,
                    max_inline_data=MSG,
                    sq_sig_all=True,
                )
                with cmid.create_qp(pd, attr) as qp:
                    qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr.sge()]))
                    cmid.accept(timeout=timeout)
                    wait_wc(cq, timeout)
                    print(f"server: got {buf.raw!r} from {cmid.host}")
                    qp.post_send(
                        ib.SendWR(wr_id=2, sg_list=[mr.sge()], send_flags=ib.SendFlags.INLINE)
                    )
                    wait_wc(cq, timeout)
                    cmid.disconnect()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-s", "--server", default=None, help="address to bind (default: any)")
    p.add_argument("-p", "--port", type=int, default=7471)
    p.add_argument("-n", "--connections", type=int, default=1)
    p.add_argument("-t", "--timeout", type=float, default=60.0)
    a = p.parse_args(argv)
    with ib.CMListener(a.port, a.server) as listener:
        print(f"server: listening on port {listener.port}", flush=True)
        for _ in range(a.connections):
            serve_one(listener, a.timeout)
    print("server: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
