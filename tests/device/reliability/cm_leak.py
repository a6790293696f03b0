"""Connect/transfer/disconnect cycles through the connection manager; run
in a subprocess by test_rel_leaks.py (a fresh process: its RSS and fd table
are ours alone).

    python cm_leak.py DEVICE CYCLES

One CMListener serves every connection from a thread; each cycle the main
thread resolves, creates its PD/CQ/MR/QP, connects, exchanges 16 bytes both
ways, disconnects and closes everything, and the server side does the same
(accept, receive, send, wait for DISCONNECTED, close).  Prints one JSON line
with the growth of RSS (KiB), of /proc/self/fd and the device's kernel
object counts (`rdma -j resource show`: cm_id, qp, cq, pd, mr) over the
measured cycles, after a warm-up.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

# Run as a script: tests/ on sys.path, for the support package.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import ibverbs as ib  # noqa: E402
from ibverbs.enums import CMEventType  # noqa: E402

from support.process import measure, print_leak_result  # noqa: E402
from support.timeouts import scaled  # noqa: E402

ADDR = os.environ.get("IBVERBS_TEST_CM_SERVER", "198.18.0.1")
SOURCE = os.environ.get("IBVERBS_TEST_CM_SOURCE") or None
MSG = 16
TIMEOUT = scaled(60)


def wait_wc(cq, n):
    deadline = time.monotonic() + TIMEOUT
    got = 0
    while got < n:
        for wc in cq.poll(4):
            wc.raise_for_status()
            got += 1
        if time.monotonic() > deadline:
            raise TimeoutError("no completion")
        time.sleep(0)


def endpoint(cmid):
    """PD, CQ, MR and QP on cmid's Context, one receive posted; returns
    the objects to close, in order."""
    ctx = cmid.context
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(8)
    buf = ctypes.create_string_buffer(MSG * 2)
    mr = pd.reg_mr(ctypes.addressof(buf), MSG * 2, ib.AccessFlags.LOCAL_WRITE, owner=buf)
    qp = cmid.create_qp(
        pd, ib.QPInitAttr(send_cq=cq, recv_cq=cq, max_send_wr=2, max_recv_wr=2, sq_sig_all=True)
    )
    qp.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr.sge(MSG)]))
    return qp, mr, cq, pd, cmid


def send(objs):
    qp, mr = objs[0], objs[1]
    qp.post_send(ib.SendWR(wr_id=2, sg_list=[mr.sge(MSG, offset=MSG)]))


def close(objs):
    for o in objs:
        o.close()


def server(listener, n, errors):
    try:
        for _ in range(n):
            cmid = listener.get_request(timeout=TIMEOUT)
            objs = endpoint(cmid)
            cmid.accept(timeout=TIMEOUT)
            wait_wc(objs[2], 1)
            send(objs)
            wait_wc(objs[2], 1)
            ev = cmid.get_event(timeout=TIMEOUT)
            assert ev.event == CMEventType.DISCONNECTED, ev
            close(objs)
    except BaseException as e:  # noqa: BLE001 - reported by the main thread
        errors.append(repr(e))


def client(port):
    cmid = ib.CMID.resolve(ADDR, port, SOURCE, timeout_ms=5000)
    objs = endpoint(cmid)
    cmid.connect(timeout=TIMEOUT)
    send(objs)
    wait_wc(objs[2], 2)
    cmid.disconnect()
    close(objs)


def run(listener, n):
    errors = []
    t = threading.Thread(target=server, args=(listener, n, errors))
    t.start()
    try:
        for _ in range(n):
            if errors:
                break
            client(listener.port)
    finally:
        t.join(TIMEOUT * 2)
    if errors or t.is_alive():
        raise AssertionError(f"server: {errors or 'hung'}")


def main(argv):
    device, n = argv[1], int(argv[2])
    with ib.CMListener(0, ADDR) as listener:
        run(listener, min(20, n))  # warm-up: caches, lazy loads
        before = measure(device)
        t0 = time.monotonic()
        run(listener, n)
        after = measure(device, settle_to=before[2])
    print_leak_result("cm_connect", n, before, after, t0)
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv)
