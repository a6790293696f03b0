#!/usr/bin/env python3
"""An RDMA connection manager client, wire-compatible with rdma-core's C
``rdma_client``: it talks to rdma-core's ``rdma_server`` or to
examples/cm_server.py.

    python examples/cm_client.py [-s SERVER] [-p PORT] [-b SOURCE]

The C tools' protocol: post one 16-byte receive, connect, send 16 bytes,
receive 16 back, disconnect.  Exits 0 when both completions succeeded.
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-s", "--server", default="127.0.0.1")
    p.add_argument("-p", "--port", type=int, default=7471)
    p.add_argument(
        "-b", "--source", default=None, help="source address to bind (needed across two devices)"
    )
    p.add_argument("-t", "--timeout", type=float, default=60.0)
    a = p.parse_args(argv)

    with ib.CMID.resolve(a.server, a.port, a.source) as cmid:
        ctx = cmid.context
        with ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            recv_buf = ctypes.create_string_buffer(MSG)
            send_buf = ctypes.create_string_buffer(b"ibverbs cm ping!", MSG)
            with (
                pd.reg_mr(
                    ctypes.addressof(recv_buf), MSG, ib.AccessFlags.LOCAL_WRITE, owner=recv_buf
                ) as rmr,
                pd.reg_mr(ctypes.addressof(send_buf), MSG, owner=send_buf) as smr,
            ):
                attr = ib.QPInitAttr(
                    send_cq=cq, recv_cq=cq, max_send_wr=1, max_recv_wr=1, sq_sig_all=True
                )
                with cmid.create_qp(pd, attr) as qp:
                    qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[rmr.sge()]))
                    cmid.connect(timeout=a.timeout)
                    qp.post_send(ib.SendWR(wr_id=2, sg_list=[smr.sge()]))
                    got = {wait_wc(cq, a.timeout).wr_id, wait_wc(cq, a.timeout).wr_id}
                    assert got == {1, 2}, got
                    print(f"client: got {recv_buf.raw!r} from {cmid.host}:{cmid.port}")
                    cmid.disconnect()
    print("client: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
