"""A small fixed loop for callgrind: post one signaled 8-byte RDMA WRITE,
poll until its completion, N times, on two RC QPs of one device connected
to each other.  benchmarks/callgrind.py runs it under
``valgrind --tool=callgrind`` at two values of N and divides the
difference of the instruction counts by the difference of N, so start-up
and set-up cancel out.

    python3 benchmarks/cg_loop.py ours|pyverbs|baseline DEVICE GID_INDEX N

ours:     qp.post_send(wr) + cq.poll_count(1)       (this package)
ours-wrex: the same WRs through QPEx's wr_start/wr_rdma_write/wr_set_sge/
          wr_complete (CG_LIST of them in one batch) + cq.poll_count(1)
pyverbs:  qp.post_send(wr) + cq.poll(1)             (rdma-core's pyverbs)
baseline: the same Python loop calling two trivial builtins, no verbs: the
          interpreter's share (loop, two calls, test), to subtract.
With CG_LIST=16 each iteration posts a chained list of 16 WRs, the last
one signaled (ours: a SendWRChain, or with CG_PLAIN=1 a Python list;
pyverbs: SendWR.next_wr).
Run it with /usr/bin/python3 (pyverbs is built for it; for ours set
PYTHONPATH=src).  With CG_TOGGLE=build/bench/cgtoggle.so and valgrind's
--instr-atstart=no only the measured loop is instrumented (after a
warm-up run of the same loop, so the interpreter has specialized it).
"""

import ctypes
import os
import sys


def ours(dev, gid_index):
    import ibverbs as ib

    ctx = ib.Context(dev)
    pd = ctx.alloc_pd()
    buf = bytearray(8192)
    acc = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
    mr = ib.reg_tensor(pd, buf, acc)
    cq = ctx.create_cq(256)
    qa, qb = (
        pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, max_send_wr=64, max_recv_wr=64))
        for _ in range(2)
    )
    pa = ctx.query_port(1)
    gid = ctx.query_gid(1, gid_index)
    ia = ib.local_qp_info(qa, pa, gid, port=1)
    ibb = ib.local_qp_info(qb, pa, gid, port=1)
    ib.connect_rc(qa, ibb, port=1, sgid_index=gid_index, access=acc)
    ib.connect_rc(qb, ia, port=1, sgid_index=gid_index, access=acc)
    wrs = [
        ib.SendWR(
            wr_id=1,
            sg_list=[ib.SGE(mr, 8)],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=ib.SendFlags.SIGNALED if i == LIST - 1 else 0,
            remote_addr=mr.addr + 4096,
            rkey=mr.rkey,
        )
        for i in range(LIST)
    ]
    if LIST == 1:
        wr = wrs[0]
    else:
        wr = wrs if os.environ.get("CG_PLAIN") == "1" else ib.SendWRChain(wrs)
    keep = (ctx, pd, mr, cq, qa, qb)
    return qa.post_send, wr, cq.poll_count, (lambda r: r), keep


def ours_wrex(dev, gid_index):
    """The same CG_LIST writes (the last signaled) with the extended QP's
    wr_* calls in one wr_start/wr_complete batch."""
    import ibverbs as ib

    ctx = ib.Context(dev)
    pd = ctx.alloc_pd()
    buf = bytearray(8192)
    acc = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
    mr = ib.reg_tensor(pd, buf, acc)
    cq = ctx.create_cq(256)
    attr = ib.QPInitAttrEx(
        send_cq=cq,
        recv_cq=cq,
        max_send_wr=64,
        max_recv_wr=64,
        send_ops_flags=ib.QPCreateSendOpsFlags.RDMA_WRITE,
    )
    qa, qb = pd.create_qp_ex(attr), pd.create_qp_ex(attr)
    pa = ctx.query_port(1)
    gid = ctx.query_gid(1, gid_index)
    ia = ib.local_qp_info(qa, pa, gid, port=1)
    ibb = ib.local_qp_info(qb, pa, gid, port=1)
    ib.connect_rc(qa, ibb, port=1, sgid_index=gid_index, access=acc)
    ib.connect_rc(qb, ia, port=1, sgid_index=gid_index, access=acc)
    start, write, set_sge, complete = qa.wr_start, qa.wr_rdma_write, qa.wr_set_sge, qa.wr_complete
    rkey, raddr, lkey, laddr = mr.rkey, mr.addr + 4096, mr.lkey, mr.addr
    qa.wr_id = 1
    rest = range(LIST - 1)

    def post(_):
        start()
        qa.wr_flags = 0
        for _ in rest:
            write(rkey, raddr)
            set_sge(lkey, laddr, 8)
        qa.wr_flags = 2  # SIGNALED
        write(rkey, raddr)
        set_sge(lkey, laddr, 8)
        complete()

    keep = (ctx, pd, mr, cq, qa, qb)
    return post, None, cq.poll_count, (lambda r: r), keep


def pyverbs(dev, gid_index):
    import pyverbs.enums as e
    from pyverbs.addr import AHAttr, GlobalRoute
    from pyverbs.cq import CQ
    from pyverbs.device import Context
    from pyverbs.mr import MR
    from pyverbs.pd import PD
    from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
    from pyverbs.wr import SGE, SendWR

    ctx = Context(name=dev)
    pd = PD(ctx)
    acc = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
    mr = MR(pd, 8192, acc)
    cq = CQ(ctx, 256, None, None, 0)
    cap = QPCap(max_send_wr=64, max_recv_wr=64, max_send_sge=1, max_recv_sge=1)
    qa, qb = (QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap)) for _ in range(2))
    gid = ctx.query_gid(1, gid_index)
    for qp, peer in ((qa, qb), (qb, qa)):
        attr = QPAttr(qp_state=e.IBV_QPS_INIT)
        attr.qp_access_flags = acc
        attr.port_num = 1
        qp.to_init(attr)
        attr = QPAttr(qp_state=e.IBV_QPS_RTR)
        attr.path_mtu = e.IBV_MTU_1024
        attr.dest_qp_num = peer.qp_num
        attr.max_dest_rd_atomic = 1
        attr.min_rnr_timer = 1
        attr.ah_attr = AHAttr(
            port_num=1, is_global=1, gr=GlobalRoute(dgid=gid, sgid_index=gid_index, hop_limit=1)
        )
        qp.to_rtr(attr)
        attr = QPAttr(qp_state=e.IBV_QPS_RTS)
        attr.timeout, attr.retry_cnt, attr.rnr_retry, attr.max_rd_atomic = 14, 7, 7, 1
        qp.to_rts(attr)
    wrs = []
    for i in range(LIST):
        w = SendWR(
            wr_id=1,
            opcode=e.IBV_WR_RDMA_WRITE,
            num_sge=1,
            sg=[SGE(mr.buf, 8, mr.lkey)],
            send_flags=e.IBV_SEND_SIGNALED if i == LIST - 1 else 0,
        )
        w.set_wr_rdma(mr.rkey, mr.buf + 4096)
        if wrs:
            wrs[-1].next_wr = w
        wrs.append(w)
    wr = wrs[0]
    keep = (ctx, pd, mr, cq, qa, qb, wrs)
    return qa.post_send, wr, cq.poll, (lambda r: r[0]), keep


def baseline(dev, gid_index):
    # id(x) and abs(1): two METH_O builtins, the second returning a true
    # value, so the loop below runs exactly as with a hit on the first poll.
    return id, None, abs, (lambda r: r), None


def loop_ours(post, wr, poll, n):
    empty = 0
    for _ in range(n):
        post(wr)
        while not poll(1):
            empty += 1
    return empty


def loop_pyverbs(post, wr, poll, n):
    empty = 0
    for _ in range(n):
        post(wr)
        while not poll(1)[0]:
            empty += 1
    return empty


LIST = int(os.environ.get("CG_LIST", "1"))


def main():
    impl, dev, gid_index, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    post, wr, poll, _, keep = {
        "ours": ours,
        "ours-wrex": ours_wrex,
        "pyverbs": pyverbs,
        "baseline": baseline,
    }[impl](dev, gid_index)
    loop = loop_pyverbs if impl == "pyverbs" else loop_ours
    start = stop = lambda: None
    if os.environ.get("CG_TOGGLE"):
        lib = ctypes.CDLL(os.environ["CG_TOGGLE"])
        start, stop = lib.cg_start, lib.cg_stop
    loop(post, wr, poll, 64)  # warm-up: the interpreter specializes the loop
    start()
    empty = loop(post, wr, poll, n)
    stop()
    print(f"{impl}: {n} iterations, {empty} empty polls")
    del keep


if __name__ == "__main__":
    main()
