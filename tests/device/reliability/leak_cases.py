"""Create/destroy cycles of every resource type; run in a subprocess by
test_rel_leaks.py (a fresh process: its RSS and fd table are ours alone).

    python leak_cases.py DEVICE CYCLES [TYPE...]

For each type: a warm-up, then CYCLES create/close (or create/drop, for
the garbage-collector path) cycles; prints one JSON line with the growth of
RSS (KiB), of /proc/self/fd, and the device's kernel object counts
(`rdma -j resource show`) before and after.
"""

from __future__ import annotations

import array
import errno
import json
import os
import sys
import time

# Run as a script: tests/ on sys.path, for the support package.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import ibverbs as ib  # noqa: E402

from support import GID_INDEX, PORT  # noqa: E402
from support.rdma import ALL_ACCESS, make_rc_pair, verbs_error_of  # noqa: E402
from support.process import fd_count, full_gc, measure, print_leak_result, rdma_counts  # noqa: E402


def cycles(device):
    """{name: (setup, one_cycle)}; setup() returns what the cycle needs."""

    def base():
        ctx = ib.Context(device)
        pd = ctx.alloc_pd()
        buf = bytearray(1 << 16)
        cq = ctx.create_cq(64)
        gid = ctx.query_gid(PORT, GID_INDEX)
        ah_attr = ib.AHAttr(dgid=gid, sgid_index=GID_INDEX, port_num=PORT)
        return dict(
            ctx=ctx, pd=pd, buf=buf, cq=cq, ah_attr=ah_attr, addr=ib.tensor_addr_len(buf)[0]
        )

    def ud(s):
        qp = s["pd"].create_qp(
            ib.QPInitAttr(send_cq=s["cq"], recv_cq=s["cq"], qp_type=ib.QPType.UD)
        )
        qp.to_init(PORT, 0)
        qp.to_rtr(None)
        qp.to_rts(0)
        s["ud"] = qp
        s["ah"] = s["pd"].create_ah(s["ah_attr"])
        s["mr"] = ib.reg_tensor(s["pd"], s["buf"], ALL_ACCESS)
        s["wr"] = ib.SendWR(
            wr_id=1,
            sg_list=[s["mr"].sge(64)],
            send_flags=ib.SendFlags.SIGNALED,
            ah=s["ah"],
            remote_qpn=qp.qp_num,
            remote_qkey=0x11111111,
        )
        return s

    def data_path(s):
        # A fresh WR each time (SGE, SendWR objects), post, poll the WC.
        wr = ib.SendWR(
            wr_id=2,
            sg_list=[s["mr"].sge(64)],
            send_flags=ib.SendFlags.SIGNALED,
            ah=s["ah"],
            remote_qpn=s["ud"].qp_num,
            remote_qkey=0x11111111,
        )
        s["ud"].post_send(wr)
        n = 0
        while n < 1:
            for wc in s["cq"].poll(4):
                wc.raise_for_status()
                n += 1

    def chain_path(s):
        # A fresh SendWRChain of two WRs (one through an MR that is then
        # closed, so the post after it is refused), posted and released.
        mr = ib.reg_tensor(s["pd"], s["buf"], ALL_ACCESS)
        wrs = [
            ib.SendWR(
                wr_id=3,
                sg_list=[m.sge(64)],
                ah=s["ah"],
                send_flags=ib.SendFlags.SIGNALED if i else 0,
                remote_qpn=s["ud"].qp_num,
                remote_qkey=0x11111111,
            )
            for i, m in enumerate((s["mr"], mr))
        ]
        chain = ib.SendWRChain(wrs)
        s["ud"].post_send(chain)
        n = 0
        while n < 1:  # the second WR is the signaled one
            for wc in s["cq"].poll(4):
                wc.raise_for_status()
                n += 1
        mr.close()
        try:
            s["ud"].post_send(chain)
        except ib.VerbsError:
            pass
        else:
            raise AssertionError("a chain over a closed MR was posted")
        chain.release()

    def ctx_cycle(s):
        ib.Context(device).close()

    def ctx_gc(s):
        # Dropped, not closed: the deallocator closes it.
        ctx = ib.Context(device)
        ctx.alloc_pd()

    def channel_cycle(s):
        ch = s["ctx"].create_comp_channel()
        cq = s["ctx"].create_cq(4, ch)
        cq.req_notify()
        cq.close()
        ch.close()

    def qp_cycle(s):
        s["pd"].create_qp(ib.QPInitAttr(send_cq=s["cq"], recv_cq=s["cq"])).close()

    def qp_gc(s):
        # A QP, its CQ and an MR dropped together: GC closes them in order.
        cq = s["ctx"].create_cq(4)
        qp = s["pd"].create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
        mr = ib.reg_tensor(s["pd"], s["buf"], 0)
        del qp, cq, mr

    def cq_resize_cycle(s):
        # Each resize maps a new queue; a refused one must leak nothing.
        cq = s["ctx"].create_cq(8)
        cq.resize(64)
        cq.resize(16)
        try:
            cq.resize(2**31 - 1)
        except ib.VerbsError as e:
            assert e.errno == errno.EINVAL, e
        cq.close()

    def cqex_data_path(s):
        # A CQEx with a QP on it, an empty raw session and an empty poll().
        cq = s["ctx"].create_cq_ex(ib.CQInitAttrEx(8, wc_flags=ib.CreateCQWCFlags.BYTE_LEN))
        qp = s["pd"].create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
        qp.close()
        assert cq.start_poll() is False
        assert cq.poll(4) == []
        cq.close()

    def cqex_gc(s):
        # Dropped, not closed, with a QP on it: GC closes both in order.
        cq = s["ctx"].create_cq_ex(ib.CQInitAttrEx(8))
        qp = s["pd"].create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
        del qp, cq

    unsupported = (errno.EOPNOTSUPP, errno.ENOSYS)

    def dm_cycle(s):
        # rxe has no device memory: then the refused path must leak nothing.
        try:
            dm = s["ctx"].alloc_dm(4096)
        except ib.VerbsError as e:
            assert e.errno in unsupported, e
            return
        mr = s["pd"].reg_dm_mr(dm, 0, 4096, ib.AccessFlags.ZERO_BASED)
        mr.close()
        dm.close()

    def flow_cycle(s):
        # rxe has no flow steering: then the refused path must leak nothing.
        qp = s["pd"].create_qp(
            ib.QPInitAttr(send_cq=s["cq"], recv_cq=s["cq"], qp_type=ib.QPType.UD)
        )
        try:
            qp.create_flow(s["flow"]).close()
        except ib.VerbsError as e:
            assert e.errno in unsupported, e
        qp.close()

    def with_flow(s):
        s["flow"] = ib.FlowAttr(port=PORT, specs=[ib.FlowSpecEth(ether_type=0x0800)])
        return s

    def mw_cycle(s):
        # Both types, and a BIND_MW WR holding the window and an MR (built,
        # never posted), dropped before the window is closed.
        mr = ib.reg_tensor(s["pd"], s["buf"], ib.AccessFlags.MW_BIND | ib.AccessFlags.LOCAL_WRITE)
        for t in (ib.MWType.TYPE_1, ib.MWType.TYPE_2):
            mw = s["pd"].alloc_mw(t)
            ib.SendWR(
                opcode=ib.WROpcode.BIND_MW,
                mw=mw,
                rkey=ib.inc_rkey(mw.rkey),
                bind_info=ib.MWBindInfo(mr, mr.addr, 64, ib.AccessFlags.REMOTE_READ),
            )
            mw.close()
        mr.close()

    def hw_refused(s):
        # rxe refuses each: nothing may stay behind, in Python or the kernel
        calls = (
            lambda: s["ctx"].open_xrcd(),
            lambda: s["ctx"].create_wq(s["pd"], s["cq"]),
            lambda: s["pd"].create_qp_ex(ib.QPInitAttrEx(s["cq"], qp_type=ib.QPType.XRC_SEND)),
            lambda: s["ctx"].create_srq_ex(
                s["pd"], srq_type=ib.SRQType.TM, cq=s["cq"], max_num_tags=4, max_ops=4
            ),
        )
        for call in calls:
            e = verbs_error_of(call)  # AssertionError: rxe accepted it
            assert e.errno == errno.EOPNOTSUPP, e

    def qpex_cycle(s):
        ops = ib.QPCreateSendOpsFlags.SEND | ib.QPCreateSendOpsFlags.RDMA_WRITE
        s["pd"].create_qp_ex(ib.QPInitAttrEx(s["cq"], send_ops_flags=ops)).close()

    def qpex_batch(s):
        # A batch that holds an SGE (and its MR), closed by close(); one
        # dropped with its batch open (the deallocator aborts it).
        if "mr" not in s:
            s["mr"] = ib.reg_tensor(s["pd"], s["buf"], ALL_ACCESS)
        for drop in (False, True):
            qp = s["pd"].create_qp_ex(ib.QPInitAttrEx(s["cq"]))
            qp.wr_start()
            qp.wr_send()
            qp.wr_set_sge(s["mr"].sge(64))
            if not drop:
                qp.close()
            del qp

    def mcast(s):
        # A UD QP's groups (kernel state per QP) and the GRH of a request
        # from this node's own address (an IPv4 header after 20 bytes).
        s = ud(s)
        ip = s["ctx"].find_gid(PORT).ip.packed
        s["grh"] = bytes(20) + bytes([0x45, 0, 0, 60, 0, 0, 0x40, 0, 64, 17, 0, 0]) + ip + ip
        s["wc"] = ib.WC(wc_flags=ib.WCFlags.GRH, src_qp=s["ud"].qp_num)
        return s

    def mcast_cycle(s):
        # Join and leave; a QP closed, and one dropped, while in two groups.
        s["ud"].attach_mcast("::ffff:239.1.2.3")
        s["ud"].detach_mcast("::ffff:239.1.2.3")
        for drop in (False, True):
            qp = s["pd"].create_qp(
                ib.QPInitAttr(send_cq=s["cq"], recv_cq=s["cq"], qp_type=ib.QPType.UD)
            )
            qp.attach_mcast("::ffff:239.1.2.3")
            qp.attach_mcast("::ffff:239.1.2.4")
            if not drop:
                qp.close()
            del qp

    def ah_from_wc_cycle(s):
        s["pd"].create_ah_from_wc(s["wc"], s["grh"], PORT).close()
        s["ctx"].init_ah_from_wc(PORT, s["wc"], s["grh"])

    # Memory verbs (rdma-core 59-64): what the loaded libibverbs and rxe run is
    # created and closed; what they refuse must leave nothing behind.
    def is_refused(fn):
        try:
            fn()
        except ib.VerbsError as e:
            assert e.errno in unsupported, e
            return True
        return False

    def reg_mr_ex_cycle(s):
        # Run for real where the library has the verb (rdma-core 59: the
        # sid root of the distribution matrix), refused only where not.
        iova = 0x10000 + (s["addr"] & 4095)
        if not ib.optional_verbs["ibv_reg_mr_ex"]:
            assert is_refused(lambda: s["pd"].reg_mr_ex(4096, 0, addr=s["addr"], iova=iova))
            return
        s["pd"].reg_mr_ex(4096, 0, addr=s["addr"], iova=iova).close()
        # and one dropped, not closed: the deallocator deregisters it
        s["pd"].reg_mr_ex(4096, 0, addr=s["addr"], iova=iova)

    def buf_cycle(s):
        if not ib.optional_verbs["ibv_alloc_buf"]:  # rdma-core 64
            assert is_refused(lambda: s["pd"].alloc_buf(8192))
            return
        buf = s["pd"].alloc_buf(8192)
        s["pd"].reg_buf_mr(buf, buf.addr, 4096).close()
        s["pd"].reg_mr_ex(4096, addr=buf.addr + 4096, buf=buf).close()
        buf.close()
        # a Buf dropped with an MR on it: the MR goes first, then the Buf
        buf = s["pd"].alloc_buf(4096)
        mr = s["pd"].reg_buf_mr(buf, buf.addr, 4096)
        del buf, mr

    def refusals_cycle(s):
        mr = s["pd"].reg_mr(s["addr"], 4096, 0)
        is_refused(lambda: mr.rereg(ib.ReregMRFlags.CHANGE_ACCESS, access=ALL_ACCESS))
        mr.close()
        is_refused(lambda: s["ctx"].import_pd(s["pd"].handle).close())
        is_refused(lambda: s["pd"].import_mr(0).close())
        is_refused(lambda: s["pd"].alloc_null_mr().close())
        is_refused(lambda: s["ctx"].alloc_dmah(cpu_id=0).close())
        is_refused(lambda: s["ctx"].query_rt_values_ex())
        is_refused(lambda: ib.Context.import_device(s["ctx"].cmd_fd).close())

    def srq_ex_qp_cycle(s):
        # An extended SRQ with its own CQ and an RC QP receiving through
        # it, closed in order; then the same three dropped together.
        for drop in (False, True):
            cq = s["ctx"].create_cq(8)
            srq = s["ctx"].create_srq_ex(s["pd"], max_wr=8, cq=cq)
            qp = s["pd"].create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, srq=srq))
            if not drop:
                qp.close()
                srq.close()
                cq.close()
            del qp, srq, cq

    def hw_refused_more(s):
        # The domain, counter and hardware QP verbs that rxe
        # refuses: each refusal must leave no object behind.
        qp = s["pd"].create_qp(ib.QPInitAttr(send_cq=s["cq"], recv_cq=s["cq"]))
        calls = (
            s["ctx"].alloc_td,
            lambda: s["ctx"].alloc_parent_domain(s["pd"]),
            lambda: s["cq"].modify(4, 10),
            s["ctx"].create_counters,
            s["ctx"].create_comp_cntr,
            lambda: s["ctx"].create_flow_action_esp(s["esp"]),
            lambda: qp.modify_rate_limit(1000),
            qp.query_ece,
            lambda: qp.set_ece(ib.ECE(0x1234, 1)),
        )
        for call in calls:
            assert is_refused(call), call
        try:
            # rxe in rdma-core 65 passes it to the kernel, 44 has no op;
            # without ODP there is nothing to prefetch either way.
            s["pd"].advise_mr(ib.AdviseMRAdvice.PREFETCH, 0, [s["mr"].sge(64)])
        except ib.VerbsError as e:
            assert e.errno in unsupported + (errno.EINVAL,), e
        qp.close()

    def rc(s):
        s["mr"] = ib.reg_tensor(s["pd"], s["buf"], ALL_ACCESS)
        s["qa"], s["ca"], s["qb"], s["cb"] = make_rc_pair(s["ctx"], s["pd"], cq_size=64)
        s["rows"] = array.array("Q", range(0, 4096, 64))
        s["st"] = array.array("i", bytes(4 * 16))
        return s

    def batch_cycle(s):
        # A SendBatch over a fresh MR run to the end by progress(), a
        # RecvBatch built on it; odd cycles close the MR, even ones drop
        # it with the batches (the GC path).
        mr = ib.reg_tensor(s["pd"], bytearray(4096), ALL_ACCESS)
        rows = s["rows"]
        b = ib.SendBatch(mr, rows, 64, rows, s["mr"].rkey, remote_base=s["mr"].addr, signal_every=8)
        while b.progress(s["qa"], 32, 8) < len(b):
            pass
        ib.RecvBatch(mr, rows, 64, wr_id=rows)
        assert s["ca"].poll_into(status=s["st"]) == 0
        s["odd"] = not s.get("odd")
        if s["odd"]:
            mr.close()

    def ud_batch_cycle(s):
        # A UD SendBatch over a fresh AH (one per row, the same twice),
        # run to the end by progress(); odd cycles close the AH, even
        # ones drop it with the batch (the GC path).
        ah = s["pd"].create_ah(s["ah_attr"])
        rows = array.array("Q", range(0, 1024, 64))
        b = ib.SendBatch(
            s["mr"],
            rows,
            64,
            opcode=ib.WROpcode.SEND,
            ah=[ah, s["ah"]] * 8,
            remote_qpn=s["ud"].qp_num,
            remote_qkey=0x11111111,
            signal_every=4,
        )
        while b.progress(s["ud"], 16, 4) < len(b):
            pass
        s["odd"] = not s.get("odd")
        if s["odd"]:
            ah.close()

    def with_hw(s):
        s["mr"] = ib.reg_tensor(s["pd"], s["buf"], ALL_ACCESS)
        s["esp"] = ib.FlowActionESPAttr(
            spi=1, flags=ib.FlowActionESPFlags.ENCRYPT, key=bytes(16), icv_len=16
        )
        return s

    return {
        "SRQ (create_srq_ex with a CQ) + RC QP (closed, dropped)": (base, srq_ex_qp_cycle),
        "domain, counter, ECE, rate limit, advise_mr refused": (
            lambda: with_hw(base()),
            hw_refused_more,
        ),
        "UD QP multicast groups (attach, detach, closed/dropped in one)": (
            lambda: mcast(base()),
            mcast_cycle,
        ),
        "AH (create_ah_from_wc, init_ah_from_wc)": (lambda: mcast(base()), ah_from_wc_cycle),
        "CQEx": (
            base,
            lambda s: s["ctx"].create_cq_ex(ib.CQInitAttrEx(64, wc_flags=0x7F)).close(),
        ),
        "CQEx + QP": (base, cqex_data_path),
        "CQEx + QP (dropped)": (base, cqex_gc),
        "DM + MR (or EOPNOTSUPP)": (base, dm_cycle),
        "Flow (or EOPNOTSUPP)": (lambda: with_flow(base()), flow_cycle),
        "Context": (lambda: {}, ctx_cycle),
        "Context (dropped, with a PD)": (lambda: {}, ctx_gc),
        "PD": (base, lambda s: s["ctx"].alloc_pd().close()),
        "MR (reg_mr)": (base, lambda s: s["pd"].reg_mr(s["addr"], 4096, 0).close()),
        "MR (reg_mr_iova)": (
            base,
            lambda s: s["pd"].reg_mr_iova(s["addr"], 4096, 0x10000 + (s["addr"] & 4095), 0).close(),
        ),
        "MR (reg_tensor)": (base, lambda s: ib.reg_tensor(s["pd"], s["buf"], ALL_ACCESS).close()),
        "CQ": (base, lambda s: s["ctx"].create_cq(64).close()),
        "CQ (resized up, down, refused)": (base, cq_resize_cycle),
        "CompChannel + CQ": (base, channel_cycle),
        "QP": (base, qp_cycle),
        "QP + CQ + MR (dropped)": (base, qp_gc),
        "SRQ": (base, lambda s: s["pd"].create_srq(max_wr=16).close()),
        "AH": (base, lambda s: s["pd"].create_ah(s["ah_attr"]).close()),
        "post_send + poll": (lambda: ud(base()), data_path),
        "SendWRChain post + poll": (lambda: ud(base()), chain_path),
        "SendBatch.progress + RecvBatch (MR closed or dropped)": (lambda: rc(base()), batch_cycle),
        "UD SendBatch.progress (AH closed or dropped)": (lambda: ud(base()), ud_batch_cycle),
        "MW (types 1 and 2, with a BIND_MW WR)": (base, mw_cycle),
        "MW (dropped)": (base, lambda s: s["pd"].alloc_mw(ib.MWType.TYPE_2)),
        "QPEx": (base, qpex_cycle),
        "QPEx batch (closed, dropped)": (base, qpex_batch),
        "SRQ (create_srq_ex)": (base, lambda s: s["ctx"].create_srq_ex(s["pd"], max_wr=16).close()),
        "SRQ (create_srq_ex, dropped)": (base, lambda s: s["ctx"].create_srq_ex(s["pd"])),
        "XRC, WQ, RSS, ECE refused (EOPNOTSUPP)": (base, hw_refused),
        "MR (reg_mr_ex at an iova, or EOPNOTSUPP)": (base, reg_mr_ex_cycle),
        "Buf + MRs (reg_buf_mr, reg_mr_ex(buf=), or EOPNOTSUPP)": (base, buf_cycle),
        "refused memory verbs (rereg, imports, null MR, DMAH, rt values)": (
            base,
            refusals_cycle,
        ),
    }


def main(argv):
    device, n = argv[1], int(argv[2])
    only = argv[3:]
    table = cycles(device)
    start = rdma_counts(device)
    for name, (setup, cycle) in table.items():
        if only and name not in only:
            continue
        t0 = time.monotonic()
        state = setup()
        warm = min(200, max(20, n // 10))
        for _ in range(warm):
            cycle(state)
        before = measure(device)
        for _ in range(n):
            cycle(state)
        after = measure(device, settle_to=before[2])
        print_leak_result(name, n, before, after, t0)
        for key in ("qa", "qb", "ca", "cb", "ud", "ah", "mr", "cq", "pd", "ctx"):
            o = state.pop(key, None)
            if o is not None:
                o.close()
        state.clear()
        full_gc()
    full_gc()
    print(
        json.dumps({"rdma_start": start, "rdma_end": measure(device, start)[2], "fds": fd_count()}),
        flush=True,
    )
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv)
