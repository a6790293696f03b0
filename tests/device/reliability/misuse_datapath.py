"""Misuse cases of the data path, which parses by hand (no declaration to
derive them from): the WR, SGE and WC constructors, WR chains, memory
window binds, and post_send/post_recv with closed or foreign objects
inside their WRs."""

from __future__ import annotations

import array

import errno
import time

import ibverbs as ib
from misuse_core import U32, U64, D, P, bad_values

from support.rdma import ALL_ACCESS
from support.timeouts import Deadline


def host_datapath_cases(cases):
    """The constructors and fields of WRs, chains, SGEs and WCs."""
    add, each = cases.add, cases.each
    sge = ib.SGE(0x1000, 64, lkey=1)
    for name, rng in (
        ("wr_id", U64),
        ("send_flags", U32),
        ("remote_addr", U64),
        ("rkey", U32),
        ("compare_add", U64),
        ("swap", U64),
        ("remote_qpn", dict(lo=0, hi=0xFFFFFF)),
        ("remote_qkey", U32),
    ):
        for lbl, v, expect in bad_values(P(name, 0, kw=True, **rng)):
            add(f"SendWR({name}={lbl})", lambda n=name, v=v: ib.SendWR(**{n: v}), expect)
            add(f"SendWR.{name} = {lbl}", lambda n=name, v=v: setattr(ib.SendWR(), n, v), expect)
    for lbl, v, _ in bad_values(P("opcode", 0, lo=0)):
        add(f"SendWR(opcode={lbl})", lambda v=v: ib.SendWR(opcode=v), "raise")
    add("SendWR(opcode=99)", lambda: ib.SendWR(opcode=99), "raise")
    add("SendWR(imm_data without an IMM opcode)", lambda: ib.SendWR(imm_data=1), "raise")
    imm = ib.WROpcode.SEND_WITH_IMM
    add("SendWR(imm_data=2**32)", lambda: ib.SendWR(opcode=imm, imm_data=2**32), "raise")
    add("SendWR(imm_data='x')", lambda: ib.SendWR(opcode=imm, imm_data="x"), "raise")
    for cls in (ib.SendWR, ib.RecvWR):
        k = cls.__name__
        # None is the published package's default (no SGEs):
        # tests/host/test_compat.py checks what it builds.
        add(f"{k}(sg_list=None)", lambda c=cls: c(sg_list=None), "any")
        bad = [("int", 1), ("str", "abc"), ("bytes", b"ab"), ("list of int", [1])]
        bad += [("list with None", [sge, None]), ("dict", {1: 2})]
        each(k + "(sg_list={})", lambda v, c=cls: c(sg_list=v), bad)
        # An iterable that raises: its exception comes through unchanged.
        raising = lambda c=cls: c(sg_list=(1 / 0 for _ in range(1)))  # noqa: E731
        add(f"{k}(sg_list=generator raising)", raising, "propagate")
    add("SendWR(sg_list of 100000 SGEs)", lambda: ib.SendWR(sg_list=[sge] * 100000), "any")
    each("SendWR(ah={})", lambda v: ib.SendWR(ah=v), [("int", 1), ("object()", object())])
    add("SendWR.sg_list = ...", lambda: setattr(ib.SendWR(), "sg_list", [sge]), "attr")
    add("SendWR.opcode = None", lambda: setattr(ib.SendWR(), "opcode", None), "raise")
    # Allowed so that imm_data can be set before the opcode; unused by SEND.
    add("SendWR.imm_data on SEND", lambda: setattr(ib.SendWR(), "imm_data", 5), "any")
    add("SendWR.ah = 5", lambda: setattr(ib.SendWR(), "ah", 5), "raise")
    add("del SendWR.wr_id", lambda: delattr(ib.SendWR(), "wr_id"), "raise_or_attr")
    for lbl, v, expect in bad_values(P("wr_id", 0, **U64)):
        add(f"RecvWR(wr_id={lbl})", lambda v=v: ib.RecvWR(wr_id=v), expect)
        add(f"RecvWR.wr_id = {lbl}", lambda v=v: setattr(ib.RecvWR(), "wr_id", v), expect)
    add("RecvWR(too many args)", lambda: ib.RecvWR(1, [], 3), "raise")
    for kind, wr in (("SendWRChain", ib.SendWR), ("RecvWRChain", ib.RecvWR)):
        cls = getattr(ib, kind)
        other = ib.RecvWR if wr is ib.SendWR else ib.SendWR
        bad = [("None", None), ("int", 1), ("str", "ab"), ("bytes", b"ab"), ("empty list", [])]
        bad += [("list with None", [wr(), None]), ("dict", {1: 2}), ("one WR", wr())]
        bad += [("the other kind", [other()]), ("the same WR twice", (lambda x: [x, x])(wr()))]
        each(kind + "({})", cls, bad)
        add(f"{kind}(generator raising)", lambda c=cls: c(1 / 0 for _ in range(1)), "propagate")
        add(f"{kind}() without arguments", cls, "raise")
        add(f"{kind}(too many arguments)", lambda c=cls, wr=wr: c([wr()], 1), "raise")
        twice = lambda c=cls, wr=wr: (lambda x: (c([x]), c([x])))(wr())  # noqa: E731
        add(f"{kind}(a member of another chain)", twice, "raise")
        add(
            f"{kind}.released = True",
            lambda c=cls, wr=wr: setattr(c([wr()]), "released", True),
            "attr",
        )
        add(f"{kind}[out of range]", lambda c=cls, wr=wr: c([wr()])[5], "index")
        late = lambda c=cls, wr=wr: (lambda x: (x.release(), x[0]))(c([wr()]))  # noqa: E731
        add(f"{kind}[after release]", late, "index")
        twice = lambda c=cls, wr=wr: (lambda x: (x.release(), x.release()))(c([wr()]))  # noqa: E731
        add(f"{kind}.release() twice", twice, "ok")

    def sge_with(**args):
        a = {"mr_or_addr": 0x1000, "length": 64, "lkey": 1, "offset": 0, **args}
        return ib.SGE(a.pop("mr_or_addr"), a.pop("length"), **a)

    for name, rng in (("mr_or_addr", U64), ("length", U32), ("lkey", U32), ("offset", U64)):
        for lbl, v, _ in bad_values(P(name, 0, **rng)):
            add(f"SGE({name}={lbl})", lambda n=name, v=v: sge_with(**{n: v}), "raise")
    add("SGE(address + offset overflows)", lambda: ib.SGE(2**64 - 1, 8, lkey=1, offset=1), "raise")
    add("WC()", ib.WC, "any")
    wc_bad = [("None", None), ("-1", -1), ("2**64", 2**64), ("str", "x"), ("float", 1.5)]
    fields = "wr_id status opcode byte_len qp_num wc_flags vendor_err imm_data src_qp"
    for field in (fields + " pkey_index slid sl dlid_path_bits").split():
        each(f"WC({field}={{}})", lambda v, f=field: ib.WC(**{f: v}), wc_bad)
    add("WC(unknown field)", lambda: ib.WC(nope=1), "raise")
    unknown = lambda: ib.WC(status=200).raise_for_status()  # noqa: E731
    add("WC(status=unknown).raise_for_status()", unknown, "completion")
    add("WC(opcode=unknown) repr", lambda: repr(ib.WC(status=5, opcode=999)), "ok")
    add("WC.wr_id = 1", lambda: setattr(ib.WC(), "wr_id", 1), "attr")


def batch_cases(cases, w, cw):
    """SendBatch and RecvBatch: columns that are not arrays of integers or
    out of the MR, posts to what is not a queue, a closed MR or QP."""
    add, each = cases.add, cases.each
    rows = array.array("Q", [0, 8])

    def send(**kw):
        args = dict(mr=w.mr, local=rows, lengths=8, remote=rows, rkey=1)
        return ib.SendBatch(**{**args, **kw})

    bad = [("a str", "12"), ("a float array", array.array("d", [0.0, 1.0])), ("a list", [0, 8])]
    bad += [
        ("an object", object()),
        ("None", None),
        ("a past-the-end offset", array.array("Q", [0, 8192])),
    ]
    each("SendBatch(local={})", lambda v: send(local=v), bad)
    each("RecvBatch(local={})", lambda v: ib.RecvBatch(w.mr, v, 8), bad)
    each("SendBatch(lengths={})", lambda v: send(lengths=v), [("-1", -1), ("2**64", 2**64)])
    each("SendBatch(mr={})", lambda v: send(mr=v), [("closed MR", cw.mr), ("a PD", w.pd)])
    each("SendBatch.post({})", lambda q: send().post(q), [("None", None), ("a CQ", w.cq)])
    each("RecvBatch.post({})", lambda q: ib.RecvBatch(w.mr, rows, 8).post(q), [("an MR", w.mr)])
    add("SendBatch.post(closed QP)", lambda: send().post(cw.qp), "closed")
    add("RecvBatch.post(closed SRQ)", lambda: ib.RecvBatch(w.mr, rows, 8).post(cw.srq), "closed")
    add("SendBatch.post(qp, start=-1)", lambda: send().post(w.qp, -1), "raise")
    add("SendBatch.post(qp, start=3)", lambda: send().post(w.qp, 3), "raise")
    add(
        "SendBatch.update(remote=3 rows)",
        lambda: send().update(remote=array.array("Q", [1] * 3)),
        "raise",
    )

    def closed_mr(make, method="post"):
        mr = ib.reg_tensor(w.pd, bytearray(64), ALL_ACCESS)
        batch = make(mr)
        mr.close()
        recv_post = isinstance(batch, ib.RecvBatch) and method == "post"
        getattr(batch, method)(w.srq if recv_post else w.qp)

    add(
        "SendBatch over an MR closed before the post",
        lambda: closed_mr(lambda m: send(mr=m)),
        "closed",
    )
    add(
        "RecvBatch over an MR closed before the post",
        lambda: closed_mr(lambda m: ib.RecvBatch(m, rows, 8)),
        "closed",
    )
    each("SendBatch.progress({})", lambda q: send().progress(q), [("None", None), ("a CQ", w.cq)])
    add("SendBatch.progress(closed QP)", lambda: send().progress(cw.qp), "closed")
    bad = [
        ("depth=-1", (-1, 16)),
        ("depth=0", (0, 16)),
        ("piece=0", (8, 0)),
        ("piece='x'", (8, "x")),
    ]
    each("SendBatch.progress(qp, {})", lambda a: send().progress(w.qp, *a), bad)
    add("SendBatch.progress(UD QP)", lambda: send().progress(w.ud), "raise")
    add(
        "SendBatch.progress over an MR closed before it",
        lambda: closed_mr(lambda m: send(mr=m), "progress"),
        "closed",
    )
    add("SendBatch.reset() without a run", lambda: send().reset(), "ok")
    recv = ib.RecvBatch(w.mr, rows, 8)
    each("RecvBatch.progress({})", recv.progress, [("None", None), ("an SRQ", w.srq)])
    add("RecvBatch.progress(closed QP)", lambda: recv.progress(cw.qp), "closed")
    each("RecvBatch.progress(qp, {})", lambda a: recv.progress(w.qp, *a), bad)
    add(
        "RecvBatch.progress over an MR closed before it",
        lambda: closed_mr(lambda m: ib.RecvBatch(m, rows, 8), "progress"),
        "closed",
    )
    add("RecvBatch.reset() without a run", recv.reset, "ok")
    ud_batch_cases(cases, w, cw)
    qpex_batch_cases(cases, w)


def qpex_batch_cases(cases, w):
    """SendBatches on a QPEx (the ibv_wr_* path): a QP not ready, a
    wr_start() batch open, a UD batch on an RC QPEx."""
    add = cases.add
    rows = array.array("Q", [0, 8])

    def send(**kw):
        return ib.SendBatch(w.mr, rows, 8, rows, 1, **kw)

    add("SendBatch.post(QPEx not in RTS)", lambda: send().post(w.qpx), "any")
    add(
        "SendBatch(inline).post(QPEx not in RTS)",
        lambda: send(inline_threshold=8).post(w.qpx),
        "any",
    )
    add("SendBatch.progress(QPEx not in RTS)", lambda: send().progress(w.qpx), "any")

    def in_wr_start(method):
        w.qpx.wr_start()
        try:
            getattr(send(), method)(w.qpx)
        finally:
            w.qpx.wr_abort()

    add("SendBatch.post(QPEx in wr_start)", lambda: in_wr_start("post"), "raise")
    add("SendBatch.progress(QPEx in wr_start)", lambda: in_wr_start("progress"), "raise")
    ud = lambda: ib.SendBatch(  # noqa: E731
        w.mr, rows, 8, opcode=ib.WROpcode.SEND, ah=w.ah, remote_qpn=1
    )
    add("UD SendBatch.post(RC QPEx)", lambda: ud().post(w.qpx), "raise")


def ud_batch_cases(cases, w, cw):
    """UD SendBatches: AHs that are not AHs or are closed (before the
    build or after it), QPNs out of range, the wrong kind of QP."""
    add, each = cases.add, cases.each
    rows = array.array("Q", [0, 8])

    def ud(**kw):
        args = dict(mr=w.mr, local=rows, lengths=8, opcode=ib.WROpcode.SEND, ah=w.ah)
        return ib.SendBatch(**{**args, "remote_qpn": 1, **kw})

    bad = [
        ("closed AH", cw.ah),
        ("an int", 5),
        ("a list with an MR", [w.ah, w.mr]),
        ("3 AHs for 2 rows", [w.ah] * 3),
        ("a list with a closed AH", [w.ah, cw.ah]),
    ]
    each("SendBatch(ah={})", lambda v: ud(ah=v), bad)
    bad = [("2**24", 2**24), ("-1", -1), ("a str", "1"), ("None", None)]
    each("SendBatch(ah=, remote_qpn={})", lambda v: ud(remote_qpn=v), bad)
    each("SendBatch(ah=, remote_qkey={})", lambda v: ud(remote_qkey=v), [("2**32", 2**32)])
    add("SendBatch(ah=, opcode=RDMA_WRITE)", lambda: ud(opcode=ib.WROpcode.RDMA_WRITE), "raise")
    add("SendBatch(remote_qpn= without ah)", lambda: ud(ah=None), "raise")
    add("SendBatch(ah=).post(RC QP)", lambda: ud().post(w.qp), "raise")
    add("SendBatch(ah=).progress(RC QP)", lambda: ud().progress(w.qp), "raise")
    add("SendBatch(ah=).update(remote_qpn=2**24)", lambda: ud().update(remote_qpn=2**24), "raise")
    add(
        "SendBatch.update(remote_qpn=) without ah",
        lambda: ib.SendBatch(w.mr, rows, 8, opcode=ib.WROpcode.SEND).update(remote_qpn=1),
        "raise",
    )

    def closed_ah(method):
        ah = w.pd.create_ah(w.ah_attr)
        batch = ud(ah=[w.ah, ah])
        ah.close()
        getattr(batch, method)(w.ud)

    add("UD SendBatch.post over an AH closed after the build", lambda: closed_ah("post"), "closed")
    add("UD SendBatch.progress over an AH closed after it", lambda: closed_ah("progress"), "closed")


def batch_declared_cases(cases, w, worlds):
    """The declared arguments of SendBatch's and RecvBatch's constructors
    and of SendBatch.update: the valid call and each one perturbed."""
    rows = lambda w: array.array("Q", [0, 8])  # noqa: E731
    mr = lambda w: w.mr  # noqa: E731
    send = D(mr=mr, local=rows, lengths=8, remote=rows, rkey=lambda w: w.mr.rkey, valid="ok")
    recv = D(mr=mr, local=rows, lengths=8, valid="ok")
    for t, d in ((ib.SendBatch, send), (ib.RecvBatch, recv)):
        cases.method(t.__name__, t, None, d.bind(f"{t.__name__}.__new__"), w, worlds)
    batch = ib.SendBatch(w.mr, rows(w), 8, rows(w), w.mr.rkey, imm_data=1)
    update = D(remote=rows, rkey=1, imm_data=2, valid="ok").bind("SendBatch.update")
    cases.method("SendBatch", batch, "update", update, w, worlds)


def device_datapath_cases(cases, w, cw, ow, opd):
    """Posts of WRs and chains over closed or foreign objects, the checks
    a chain keeps between posts, bind WRs."""
    add, each = cases.add, cases.each
    add("SGE(closed MR)", lambda: ib.SGE(cw.mr, 8), "closed")
    add("MR.sge past the end", lambda: w.mr.sge(8, offset=len(w.buf)), "raise")
    add("MR.sge length past the end", lambda: w.mr.sge(len(w.buf) + 1), "raise")
    add("SendWR(ah=closed AH)", lambda: ib.SendWR(ah=cw.ah), "any")
    batch_cases(cases, w, cw)
    batch_declared_cases(cases, w, (cw, ow, opd))

    def ud_wr(i=3, sg=None, ah=None, qpn=None, **kw):
        sg = [w.sge] if sg is None else sg
        return ib.SendWR(
            wr_id=i, sg_list=sg, ah=ah or w.ah, remote_qpn=qpn or 1, remote_qkey=1, **kw
        )

    def close_then_post(make, post):
        """Build a WR over a fresh object, close the object, post."""
        wr, obj = make()
        obj.close()
        post(wr)

    def fresh_mr():
        return ib.reg_tensor(w.pd, bytearray(64), ALL_ACCESS)

    def mr_of_closed_pd():
        pd = w.ctx.alloc_pd()
        mr = ib.reg_tensor(pd, bytearray(64), ALL_ACCESS)
        wr = ud_wr(9, [mr.sge()], qpn=w.ud.qp_num)
        mr.close()
        return wr, pd

    def closed_ah():
        ah = w.pd.create_ah(w.ah_attr)
        return ud_wr(9, ah=ah), ah

    def recv_over(chain=False):
        mr = fresh_mr()
        wr = ib.RecvWR(wr_id=9, sg_list=[mr.sge()])
        return (ib.RecvWRChain([wr]) if chain else wr), mr

    post_send, post_recv = (lambda wr: w.ud.post_send(wr)), (lambda wr: w.qp.post_recv(wr))
    srq_recv = lambda wr: w.srq.post_recv(wr)  # noqa: E731
    closing = [
        ("post_send(WR over an MR closed after the WR was built)", mr_of_closed_pd, post_send),
        ("post_send(WR whose AH was closed after the WR was built)", closed_ah, post_send),
        ("post_recv(WR over a closed MR)", recv_over, post_recv),
        ("SRQ.post_recv(WR over a closed MR)", recv_over, srq_recv),
        ("post_recv(RecvWRChain over a closed MR)", lambda: recv_over(True), post_recv),
        ("SRQ.post_recv(RecvWRChain over a closed MR)", lambda: recv_over(True), srq_recv),
    ]
    for name, make, post in closing:
        add(name, lambda m=make, p=post: close_then_post(m, p), "closed")
    for what, wr in (
        ("AH of another PD", lambda: ud_wr(ah=opd.ah, qpn=w.ud.qp_num)),
        ("AH of another Context", lambda: ud_wr(ah=ow.ah, qpn=w.ud.qp_num)),
        ("MR of another Context", lambda: ud_wr(sg=[ow.mr.sge(8)], qpn=w.ud.qp_num)),
    ):
        add(f"UD post_send({what})", lambda wr=wr: (w.ud.post_send(wr()), w.drain()), "any")
    rdma_write = ib.WROpcode.RDMA_WRITE
    bad = [("no AH", lambda: ib.SendWR(wr_id=3, sg_list=[w.sge]))]
    bad += [("RDMA_WRITE", lambda: ud_wr(opcode=rdma_write))]
    each("UD post_send({})", lambda wr: w.ud.post_send(wr()), bad)
    each("UD post_send(SendWRChain with {})", lambda wr: w.ud.post_send(ud_chain(wr())), bad)
    bad = [("the same WR twice in a list", [w.ud_wr, w.ud_wr]), ("a RecvWR", w.rwr)]
    bad += [("empty list", []), ("list with None", [w.ud_wr, None])]
    bad += [("more SGEs than max_send_sge", ud_wr(sg=[w.sge] * 5))]
    each("post_send({})", w.ud.post_send, bad)
    add("post_recv(a SendWR)", lambda: w.qp.post_recv(w.swr), "raise")
    many = lambda: [ud_wr(i) for i in range(4096)]  # noqa: E731
    for name, wrs in (
        ("more WRs than the SQ holds", many),
        ("SendWRChain longer than the SQ", lambda: ib.SendWRChain(many())),
    ):
        add(f"post_send({name})", lambda wrs=wrs: (w.ud.post_send(wrs()), w.drain()), "raise")

    # --- SendWRChain / RecvWRChain: the checks a chain keeps between posts
    def ud_chain(*extra, ah=None):
        return ib.SendWRChain([ud_wr(4, ah=ah), *extra])

    def setup_post(chain):
        # The valid post before the misuse, not what the case checks.  An
        # earlier case ("more WRs than the SQ holds") fills the UD QP's
        # send queue; rxe frees a slot only once its requester has
        # retired the WQE.  6.1's rxe_post_send runs the requester inline
        # in the doorbell syscall (rxe_run_task); newer kernels (7.2
        # here) schedule it on a kernel worker (rxe_sched_task), so
        # w.drain() can find the CQ empty while the queue is still full,
        # and the provider then refuses with ENOMEM (rdma-core's rxe
        # post_send: queue full).  Wait for room; any other error, or no
        # room in time, fails the case.
        deadline = Deadline(30)
        while True:
            try:
                w.ud.post_send(chain)
                break
            except ib.VerbsError as e:
                if e.errno != errno.ENOMEM or deadline.expired():
                    raise
            w.drain()
            time.sleep(0.01)
        w.drain()

    def chain_closed(which):
        """Post a chain once, close an object it uses, post it again:
        checked before the provider is called (EBADF, never ENOMEM)."""
        mr = fresh_mr() if which == "mr" else None
        ah = w.pd.create_ah(w.ah_attr)
        chain = ud_chain(ud_wr(5, [mr.sge()])) if mr else ud_chain(ah=ah if which == "ah" else None)
        setup_post(chain)
        if which == "new ah":
            chain[0].ah = ah
        (mr or ah).close()
        w.ud.post_send(chain)

    for which, name in (
        ("mr", "SendWRChain over an MR closed after a post"),
        ("ah", "SendWRChain whose AH was closed after a post"),
        ("new ah", "SendWRChain: a member's new AH closed before the post"),
    ):
        add(f"post_send({name})", lambda k=which: chain_closed(k), "closed")
    add("post_send(SendWRChain) on a closed QP", lambda: cw.ud.post_send(ud_chain()), "closed")
    released = lambda c: (c.release(), w.ud.post_send(c))  # noqa: E731
    bad = [
        ("released SendWRChain", released),
        ("a member of a SendWRChain", lambda c: w.ud.post_send(c[0])),
    ]
    bad += [
        ("a list holding a member of a SendWRChain", lambda c: w.ud.post_send([ib.SendWR(), c[0]]))
    ]
    each("post_send({})", lambda f: f(ud_chain()), bad)
    add("post_recv(a SendWRChain)", lambda: w.qp.post_recv(ud_chain()), "raise")
    add("post_send(a RecvWRChain)", lambda: w.ud.post_send(ib.RecvWRChain([ib.RecvWR()])), "raise")
    srq_qp = lambda: w.pd.create_qp(ib.QPInitAttr(send_cq=w.cq, recv_cq=w.cq, srq=w.srq))  # noqa: E731
    add("post_recv on a QP with an SRQ", lambda: srq_qp().post_recv(w.rwr), "raise")
    mw_bind_cases(cases, w, cw)


def mw_bind_cases(cases, w, cw):
    """Memory window binds: closed MWs and MRs inside bind WRs and
    records, a type 2 window given to ibv_bind_mw, the MW's rkey."""
    add, each = cases.add, cases.each
    BIND = ib.WROpcode.BIND_MW

    def bind_wr(mw=None, info=None, **kw):
        return ib.SendWR(opcode=BIND, mw=mw or w.mw, rkey=1, bind_info=info or w.bind_info, **kw)

    add("SendWR(BIND_MW)", bind_wr, "ok")
    add("SendWR(BIND_MW, closed MW)", lambda: bind_wr(cw.mw), "closed")
    closed_mr_info = lambda: ib.MWBindInfo(cw.mr, 0, 64, 0)  # noqa: E731
    add(
        "SendWR(BIND_MW, bind_info with a closed MR)",
        lambda: bind_wr(info=closed_mr_info()),
        "closed",
    )
    add("SendWR(BIND_MW, no mw)", lambda: ib.SendWR(opcode=BIND, bind_info=w.bind_info), "raise")
    add("SendWR(BIND_MW, no bind_info)", lambda: ib.SendWR(opcode=BIND, mw=w.mw), "raise")
    add("SendWR(BIND_MW, mw=an MR)", lambda: bind_wr(w.mr), "raise")
    add("SendWR(BIND_MW, bind_info=an MR)", lambda: bind_wr(info=w.mr), "raise")
    infos = [
        ("mr=None", (None, 0, 0)),
        ("mr=an MW", (w.mw, 0, 0)),
        ("length=2**64", (w.mr, 0, 2**64)),
    ]
    infos += [("mw_access_flags=-1", (w.mr, 0, 64, -1))]
    each("SendWR(BIND_MW, bind_info.{})", lambda a: bind_wr(info=ib.MWBindInfo(*a)), infos)
    add("SendWR(BIND_MW, sg_list)", lambda: bind_wr(sg_list=[w.sge]), "raise")
    write = ib.WROpcode.RDMA_WRITE
    add(
        "SendWR(RDMA_WRITE, mw)",
        lambda: ib.SendWR(opcode=write, mw=w.mw, bind_info=w.bind_info),
        "raise",
    )
    add(
        "SendWR(BIND_MW).opcode = SEND",
        lambda: setattr(bind_wr(), "opcode", ib.WROpcode.SEND),
        "raise",
    )
    add("SendWR(BIND_MW).mw = None", lambda: setattr(bind_wr(), "mw", None), "attr")
    add("SendWR(SEND).opcode = BIND_MW", lambda: setattr(ib.SendWR(), "opcode", BIND), "raise")

    def post_closed(which):
        mw = w.pd.alloc_mw(ib.MWType.TYPE_2)
        mr = ib.reg_tensor(w.pd, w.buf, ib.AccessFlags.MW_BIND | ib.AccessFlags.LOCAL_WRITE)
        wr = bind_wr(mw, ib.MWBindInfo(mr, mr.addr, 64, 0))
        (mw if which == "MW" else mr).close()
        try:
            w.qp.post_send(wr)
        finally:
            mw.close()
            mr.close()

    for which in ("MW", "MR"):
        add(
            f"post_send(BIND_MW whose {which} was closed)", lambda k=which: post_closed(k), "closed"
        )
    # ibv_bind_mw: records inside its MWBind, which the declaration does not see.
    add("bind_mw(a type 2 MW)", lambda: w.qp.bind_mw(w.mw, w.mw_bind), "raise")
    bind = lambda b: w.qp.bind_mw(w.mw1, b)  # noqa: E731
    add("bind_mw(MWBindInfo with a closed MR)", lambda: bind(ib.MWBind(closed_mr_info())), "closed")
    bad = [("MWBindInfo without an MR", lambda: ib.MWBind(ib.MWBindInfo(None, 0, 0)))]
    bad += [("a bare MWBindInfo", lambda: w.bind_info)]
    bad += [("MWBind(wr_id=-1)", lambda: ib.MWBind(w.bind_info, wr_id=-1))]
    bad += [("MWBind(bind_info=None)", lambda: ib.MWBind(None))]
    each("bind_mw({})", lambda b: bind(b()), bad)
    rkeys = [("-1", -1), ("2**32", 2**32), ("str", "1"), ("None", None)]
    each("MW.rkey = {}", lambda v: setattr(w.mw, "rkey", v), rkeys)
    add("MW.rkey = 1 after close", lambda: setattr(cw.mw, "rkey", 1), "closed")
    add("del MW.rkey", lambda: delattr(w.mw, "rkey"), "attr")
    each("inc_rkey({})", ib.inc_rkey, rkeys)
    add("inc_rkey(0xff)", lambda: ib.inc_rkey(0xFF), "ok")
