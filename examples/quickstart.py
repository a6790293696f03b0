#!/usr/bin/env python3
"""The README quickstart, runnable on one machine.

Two RC queue pairs on the same device are connected to each other
(loopback), so no second host and no socket are needed: the "out-of-band
exchange" is a pair of QPInfo.to_bytes()/from_bytes() calls.  One QP then
RDMA-writes a buffer into the other's memory, and the script checks that
the bytes arrived.

    python examples/quickstart.py [DEVICE [GID_INDEX]]

DEVICE defaults to $IBVERBS_TEST_DEVICE, else the first device.  GID_INDEX
defaults to $IBVERBS_GID_INDEX (or $IBVERBS_TEST_GID_INDEX), else the port's
RoCE v2 GID with an IPv4 address (``Context.find_gid``), or 0 on InfiniBand.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

import ibverbs as ib

PORT = 1
SIZE = 4096


def pick_device(argv) -> ib.Device:
    name = argv[1] if len(argv) > 1 else os.environ.get("IBVERBS_TEST_DEVICE")
    devices = ib.get_device_list()
    if name:
        for dev in devices:
            if dev.name == name:
                return dev
        raise SystemExit(
            f"no RDMA device named {name!r} (have: {', '.join(d.name for d in devices) or 'none'})"
        )
    if not devices:
        raise SystemExit("no RDMA device found")
    return devices[0]


def pick_gid_index(argv, ctx: ib.Context) -> int:
    if len(argv) > 2:
        return int(argv[2])
    for var in ("IBVERBS_GID_INDEX", "IBVERBS_TEST_GID_INDEX"):
        if os.environ.get(var):
            return int(os.environ[var])
    if ctx.query_port(PORT).link_layer == ib.LinkLayer.INFINIBAND:
        return 0
    return ctx.find_gid(PORT).index  # the RoCE v2 GID with an IPv4 address


def make_buffer(fill: int):
    """A 4 KiB host buffer: a numpy array when numpy is installed (as in the
    README), else a bytearray."""
    try:
        import numpy as np
    except ImportError:
        return bytearray([fill]) * SIZE
    return np.full(SIZE, fill, dtype=np.uint8)


def poll_one(cq, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        wcs = cq.poll(16)
        if wcs:
            for wc in wcs:
                wc.raise_for_status()
            return wcs[0]
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the completion")


def main(argv) -> int:
    dev = pick_device(argv)
    # Every resource is a context manager; the ExitStack closes them in
    # reverse order of creation (QPs, MRs, CQs, PD, context), however we
    # leave.
    with contextlib.ExitStack() as res:
        # 1. Open the device and set up resources.
        ctx = res.enter_context(dev.open())
        gid_index = pick_gid_index(argv, ctx)
        print(f"device {dev.name}, port {PORT}, GID index {gid_index}")
        pd = res.enter_context(ctx.alloc_pd())
        cq_a = res.enter_context(ctx.create_cq(64))
        cq_b = res.enter_context(ctx.create_cq(64))

        # 2. Register memory: the source on side A, the target on side B.
        access = (
            ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE | ib.AccessFlags.REMOTE_READ
        )
        src = make_buffer(0)
        for i in range(SIZE):
            src[i] = i % 251
        dst = make_buffer(0)
        src_mr = res.enter_context(ib.reg_tensor(pd, src, ib.AccessFlags.LOCAL_WRITE))
        dst_mr = res.enter_context(ib.reg_tensor(pd, dst, access))
        print(f"registered 2 x {SIZE} bytes: src lkey {src_mr.lkey:#x}, dst rkey {dst_mr.rkey:#x}")

        # 3. Create two reliable-connected QPs.
        qp_a = res.enter_context(
            pd.create_qp(ib.QPInitAttr(send_cq=cq_a, recv_cq=cq_a, qp_type=ib.QPType.RC))
        )
        qp_b = res.enter_context(
            pd.create_qp(ib.QPInitAttr(send_cq=cq_b, recv_cq=cq_b, qp_type=ib.QPType.RC))
        )

        # 4. Exchange connection info "out of band", then connect both ends.
        port_attr = ctx.query_port(PORT)
        gid = ctx.query_gid(PORT, gid_index)
        info_a = ib.local_qp_info(qp_a, port_attr, gid, port=PORT, psn=0x111)
        info_b = ib.local_qp_info(qp_b, port_attr, gid, port=PORT, psn=0x222)
        remote_for_a = ib.QPInfo.from_bytes(info_b.to_bytes())
        remote_for_b = ib.QPInfo.from_bytes(info_a.to_bytes())
        ib.connect_rc(
            qp_a, remote_for_a, port=PORT, sgid_index=gid_index, access=access, local_psn=info_a.psn
        )
        ib.connect_rc(
            qp_b, remote_for_b, port=PORT, sgid_index=gid_index, access=access, local_psn=info_b.psn
        )
        print(
            f"connected QP {qp_a.qp_num:#x} <-> QP {qp_b.qp_num:#x} "
            f"(GID {gid}, {ib.QPState(qp_a.state).name})"
        )

        # 5. Post an RDMA write and reap the completion.
        t0 = time.perf_counter()
        qp_a.post_send(
            ib.SendWR(
                wr_id=1,
                sg_list=[ib.SGE(src_mr, SIZE)],
                opcode=ib.WROpcode.RDMA_WRITE,
                send_flags=ib.SendFlags.SIGNALED,
                remote_addr=dst_mr.addr,
                rkey=dst_mr.rkey,
            )
        )
        wc = poll_one(cq_a)
        elapsed = time.perf_counter() - t0
        print(
            f"RDMA write of {SIZE} bytes completed: wr_id {wc.wr_id}, "
            f"{ib.WCStatus(wc.status).name} in {elapsed * 1e6:.0f} us"
        )

        if bytes(dst) != bytes(src):
            print("FAILED: the target buffer differs from the source")
            return 1
        print(f"verified: all {SIZE} bytes arrived")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
