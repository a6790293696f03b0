"""The misuse cases, run in a subprocess by test_rel_misuse.py.

    python misuse_cases.py GROUP [--start N] [--device NAME]

GROUP is "host" (no device needed: WRs, WC, records, module functions,
Context of a missing device) or "device" (every handle type against a live
device: rxe0 in the guest).  For each case it prints one line

    BEGIN <index> <name>

before running it and one JSON line (``{"i":..., "name":..., "ok":...}``)
after, then ``DONE <count>`` at the end.  A case that kills the process
(a crash) is the one whose BEGIN has no result line; the harness starts
the script again with ``--start`` after it, so one crash does not hide
the cases behind it.

Most cases come from the tables below: for every method, its valid call,
each parameter perturbed (the bad values its declaration in
``_ibverbs._specs`` implies: None, wrong types, each bound + 1, a closed
handle, another Context's or PD's), its arity, and every public member
after close (misuse_core.py).  The hand-written ones check what no
declaration says: records' fields, state machines, the data path
(misuse_datapath.py) and Python code that closes, in the middle of a call,
what the call uses (misuse_midcall.py).

What a case expects (the README's "Safety" contract):
- "raise": a bad argument (None, a wrong type, out of range, a closed
  handle, an object of another Context/PD) raises TypeError, ValueError,
  OverflowError or VerbsError, never anything else and never a crash;
- "closed": any use of a closed handle raises VerbsError(EBADF) (or
  ValueError);
- "any": may succeed or raise one of those (e.g. a value in range that the
  device refuses), but must not crash;
- "ok": must succeed (the valid call the other cases perturb);
- "timeout": may succeed, raise one of those or TimeoutError (a wait of 0 s);
- "index": an index out of range raises IndexError (sequence protocol).
"""

from __future__ import annotations

import array
import errno
import json
import os
import sys
import traceback

# Run as a script: tests/ on sys.path, for the support package.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# ibverbs.mlx5 (misuse_mlx5.py): the host group runs on the recording double
# and the fake libmlx5, chosen before ibverbs loads libibverbs.
import misuse_mlx5  # noqa: E402  (imports no ibverbs)

if sys.argv[1:2] == ["host"]:
    misuse_mlx5.use_fakes()

import ibverbs as ib  # noqa: E402
from misuse_core import (  # noqa: E402
    ALLOWED,
    U32,
    U64,
    Cases,
    D,
    M,
    P,
    bad_values,
    bind_methods,
    judge,
    member_cases,
)
from misuse_datapath import device_datapath_cases, host_datapath_cases  # noqa: E402
from misuse_midcall import evil_record, midcall_cases  # noqa: E402
from misuse_efa import efa_fake_cases, efa_function_cases, efa_host_cases  # noqa: E402
from misuse_world import CM_ADDR, HANDLE_ATTRS, worlds  # noqa: E402

from support import GID_INDEX, PORT  # noqa: E402
from support.rdma import ALL_ACCESS  # noqa: E402

CQEX_FIELDS = """opcode vendor_err byte_len imm_data invalidated_rkey qp_num src_qp wc_flags
    slid sl dlid_path_bits completion_ts completion_wallclock_ns cvlan flow_tag"""
# Types whose constructor is no public way to make one.
NOT_CONSTRUCTIBLE = """PD MR CQ CompChannel QP SRQ AH AsyncEvent MW TD ParentDomain
    Counters CompCntr FlowAction CMID CMEvent""".split()


# ---------------------------------------------------------------------------
# Method tables: (the World's attribute, {method: M or D})
# ---------------------------------------------------------------------------

# A remote address and key in the world's MR (the QPEx builders).
REMOTE = dict(rkey=lambda w: w.mr.rkey, remote_addr=lambda w: w.mr.addr)
GRH_BAD = {"grh": (("39 bytes", bytes(39)), ("str", "x" * 40))}
MCAST = dict(gid="::ffff:239.1.2.3", lid=0, extra_bad={"gid": (("15 bytes", b"\xff" * 15),)})

# Besides the classic verbs: XRC, the extended SRQ, WQs and RSS tables,
# ECE, rate limits: rxe creates basic SRQs only; every other valid call is
# refused (EOPNOTSUPP), and a call needing an XRCD or WQ stops at that
# argument (none can exist).  Memory, import and device verbs (rdma-core
# 59-64): rxe runs none of the imports, DMA handles, rt values, port speed,
# null MR or rereg (EOPNOTSUPP), and rdma-core 44 lacks reg_mr_ex,
# alloc_buf and reg_buf_mr (EOPNOTSUPP): the valid calls may raise; every
# perturbed one raises before the verb.  Thread and parent domains,
# counters, completion counters, flow actions: rxe makes none of these
# objects, so each valid call is refused (EOPNOTSUPP) and an argument
# that must be one of them has no valid value (None).
CONTEXT = {
    "alloc_pd": M(valid="ok"),
    "create_comp_channel": M(valid="ok"),
    "create_cq": D(cqe=4, channel=None, comp_vector=0, valid="ok"),
    "get_async_event": M(),  # async_fd is non-blocking: EAGAIN
    # No AsyncEvent to give (none pending): the checks of the argument
    # and of the handle; tests/device/test_compat_device.py acks real ones.
    "ack_async_event": M(P("event", None, obj="AsyncEvent")),
    "query_device": M(valid="ok"),
    "query_port": D(port_num=PORT, valid="ok"),
    "query_gid": D(port_num=PORT, index=GID_INDEX, valid="ok"),
    "query_gid_ex": D(port=PORT, index=GID_INDEX),
    "query_pkey": D(port=PORT, index=0, valid="ok"),
    "query_gid_table": M(valid="ok"),
    "find_gid": D(port=PORT, gid_type=2, valid="ok"),
    "get_pkey_index": D(port=PORT, pkey=0xFFFF, valid="ok"),
    "get_device_index": M(valid="ok"),
    # rxe resolves its own GID's neighbour, or answers with an errno
    "resolve_eth_l2_from_gid": M(P("ah_attr", lambda w: w.ah_attr, obj="AHAttr")),
    "create_cq_ex": D(init_attr=lambda w: ib.CQInitAttrEx(4), valid="ok"),
    "query_device_ex": M(valid="ok"),
    "alloc_dm": D(length=4096, log_align_req=0),  # rxe: no device memory
    "open_xrcd": D(fd=-1, oflags=os.O_CREAT),
    "open_qp": D(xrcd=None, qp_num=1, qp_type=ib.QPType.XRC_RECV),
    "create_srq_ex": D(
        pd=lambda w: w.pd, srq_type=ib.SRQType.BASIC, max_wr=8, max_sge=1, srq_limit=0, valid="ok"
    ),
    "create_wq": D(pd=lambda w: w.pd, cq=lambda w: w.cq, wq_type=0, max_wr=8, max_sge=1),
    # no WQ can exist: the empty list is refused (ValueError)
    "create_rwq_ind_table": D(wqs=[]),
    "create_qp_ex": D(init_attr=lambda w: ib.QPInitAttrEx(w.cq, pd=w.pd), valid="ok"),
    # Replies to a UD sender (test_ud_reply): a WC without the GRH flag
    # makes a non-global address (rxe may refuse its AH on RoCE).
    "init_ah_from_wc": D(
        port=PORT, wc=lambda w: ib.WC(src_qp=1), grh=bytes(40), valid="ok", extra_bad=GRH_BAD
    ),
    "import_device": D(cmd_fd=lambda w: w.ctx.cmd_fd),
    "import_pd": D(pd_handle=lambda w: w.pd.handle),
    "import_dm": D(dm_handle=0, length=0),
    "alloc_dmah": D(cpu_id=0, ph=0, tph_mem_type=0),
    "query_rt_values_ex": D(comp_mask=1),
    "query_port_speed": D(port_num=PORT),
    "alloc_td": M(),
    "alloc_parent_domain": D(pd=lambda w: w.pd, td=None),
    "create_counters": M(),
    "create_comp_cntr": D(type=0, flags=0),
    "query_comp_cntr_caps": M(),
    "create_flow_action_esp": D(attr=lambda w: ib.FlowActionESPAttr(spi=1)),
}
PD_ = {
    "reg_mr": D(addr=lambda w: w.mr.addr, length=64, access=0, owner=lambda w: w.buf, valid="ok"),
    "reg_mr_iova": D(
        # the kernel: the same offset in a page as addr
        addr=lambda w: w.mr.addr,
        length=64,
        iova=lambda w: 0x10000 + (w.mr.addr & 4095),
        access=0,
        owner=lambda w: w.buf,
        valid="ok",
    ),
    "reg_dmabuf_mr": D(offset=0, length=4096, iova=0, fd=0, access=0),
    "create_qp": D(init_attr=lambda w: ib.QPInitAttr(send_cq=w.cq, recv_cq=w.cq), valid="ok"),
    "create_srq": D(max_wr=8, max_sge=1, srq_limit=0, valid="ok"),
    "create_ah": D(attr=lambda w: w.ah_attr, valid="ok"),
    # No DM on rxe: every call stops at the dm argument.
    "reg_dm_mr": D(dm=None, offset=0, length=64, access=ib.AccessFlags.ZERO_BASED),
    "reg_implicit_odp_mr": D(access=0),  # rxe: EINVAL (6.1) or EOPNOTSUPP (6.12)
    "advise_mr": D(advice=0, flags=0, sg_list=lambda w: [w.sge]),  # rxe: EOPNOTSUPP
    "alloc_mw": D(type=ib.MWType.TYPE_2, valid="ok"),
    "create_qp_ex": D(init_attr=lambda w: ib.QPInitAttrEx(w.cq), valid="ok"),
    "create_ah_from_wc": D(
        wc=lambda w: ib.WC(src_qp=1), grh=bytes(40), port=PORT, extra_bad=GRH_BAD
    ),
    "reg_mr_ex": D(
        length=64,
        access=0,
        addr=lambda w: w.mr.addr,
        iova=lambda w: 0x10000 + (w.mr.addr & 4095),
        owner=lambda w: w.buf,
    ),
    "alloc_buf": D(size=4096),
    # No Buf on rdma-core 44: every call stops at the buf argument.
    "reg_buf_mr": D(buf=None, addr=0, length=64, access=0),
    "alloc_null_mr": M(),
    "import_mr": D(mr_handle=lambda w: w.mr.handle),
}
# poll() clamps a huge num_entries to the CQ's size; resize: rxe refuses
# (EINVAL) above max_cqe; ack_events: none delivered (ValueError).
CQ_ = {
    "poll": M(P("num_entries", 4, lo=1, optional=True), valid="ok"),
    "poll_count": M(P("num_entries", 4, lo=1, hi=2**63 - 1), valid="ok"),
    # parsed by hand (the data path): keyword-only integer arrays
    "poll_into": M(P("wr_id", lambda w: array.array("Q", bytes(32)), kw=True), valid="ok"),
    "resize": D(cqe=8, valid="ok"),
    "req_notify": D(solicited_only=False, valid="ok"),
    "ack_events": D(nevents=1),
    "modify": D(cq_count=1, cq_period=1),
}
# The QP is RC in RESET: the provider may refuse a valid call (rxe:
# EINVAL for attach_mcast, EOPNOTSUPP for create_flow).
QP_ = {
    "post_send": M(P("wr", lambda w: w.swr, obj="SendWR|list")),
    "post_recv": M(P("wr", lambda w: w.rwr, obj="RecvWR|list")),
    # columns of integers: two rows of 8 bytes in the world's MR
    "post_send_batch": D(
        mr=lambda w: w.mr,
        local=lambda w: array.array("Q", [0, 8]),
        lengths=8,
        remote=lambda w: array.array("Q", [w.mr.addr, w.mr.addr + 8]),
        rkey=lambda w: w.mr.rkey,
    ),
    "post_recv_batch": D(mr=lambda w: w.mr, local=lambda w: array.array("Q", [0, 8]), lengths=8),
    "modify": M(
        P("mask", ib.QPAttrMask.STATE, lo=0, hi=2**31 - 1),
        P("qp_state", ib.QPState.RESET, kw=True, lo=0, hi=7),
    ),
    "query": D(mask=ib.QPAttrMask.STATE, valid="ok"),
    "to_init": D(port=PORT, access=0, pkey_index=0, qkey=0),
    "to_rtr": D(remote=lambda w: w.info, sgid_index=GID_INDEX),
    "to_rts": D(psn=0, timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1),
    "create_flow": D(flow_attr=lambda w: w.flow_attr),
    "bind_mw": D(mw=lambda w: w.mw1, mw_bind=lambda w: w.mw_bind),
    "modify_rate_limit": D(rate_limit=1000, max_burst_sz=0, typical_pkt_sz=0),
    "query_ece": M(),
    "set_ece": M(P("ece", lambda w: ib.ECE(0x1234, 1), obj="ECE")),
    "attach_mcast": D(**MCAST),
    "detach_mcast": D(**MCAST),
    "query_data_in_order": D(op=0, flags=0, valid="ok"),
    "attach_comp_cntr": D(comp_cntr=None, op_mask=1),
}
# The extended QP: the QP's methods, then a batch opened by wr_start's
# valid call, in which the builders' valid calls reach the provider (their
# perturbed calls must not), closed by wr_abort's.
QPEX = {
    **QP_,
    "wr_start": M(valid="ok"),
    "wr_send": M(valid="ok"),
    "wr_send_imm": D(imm_data=1, valid="ok"),
    "wr_send_inv": D(invalidate_rkey=1, valid="ok"),
    "wr_rdma_write": D(**REMOTE, valid="ok"),
    "wr_set_sge": M(
        P("lkey", lambda w: w.mr.lkey, **U32),
        P("addr", lambda w: w.mr.addr, **U64),
        P("length", 8, **U32),
        valid="ok",
    ),
    "wr_rdma_write_imm": D(**REMOTE, imm_data=1, valid="ok"),
    "wr_set_sge_list": D(sg_list=lambda w: [w.sge], valid="ok"),
    "wr_rdma_read": D(**REMOTE, valid="ok"),
    "wr_atomic_cmp_swp": D(**REMOTE, compare=0, swap=1, valid="ok"),
    "wr_atomic_fetch_add": D(**REMOTE, add=1, valid="ok"),
    # after wr_atomic_fetch_add, which takes SGEs only: refused (EINVAL)
    "wr_set_inline_data": D(data=b"abc"),
    "wr_set_inline_data_list": D(buf_list=[b"ab", b"c"]),
    "wr_local_inv": D(invalidate_rkey=1, valid="ok"),
    "wr_atomic_write": D(**REMOTE, data=b"12345678", valid="ok"),
    # built against rdma-core 44: EOPNOTSUPP; else not in QPEX_OPS: EINVAL
    "wr_flush": D(**REMOTE, len=8, type=1, level=1),
    "wr_set_ud_addr": D(ah=lambda w: w.ah, remote_qpn=1, remote_qkey=1),  # RC: EINVAL
    # a type 2 window of this PD (the batch is aborted below)
    "wr_bind_mw": D(
        mw=lambda w: w.mw,
        rkey=lambda w: ib.inc_rkey(w.mw.rkey),
        bind_info=lambda w: w.bind_info,
        valid="ok",
    ),
    "wr_abort": M(valid="ok"),
    "wr_complete": M(),  # no batch open: EINVAL
    # no batch open (and no TSO, not XRC_SEND): EINVAL
    "wr_send_tso": D(hdr=b"h" * 14, mss=1000),
    "wr_set_xrc_srqn": D(remote_srqn=1),
}
SRQ_ = {
    "post_recv": M(P("wr", lambda w: w.rwr, obj="RecvWR|list")),
    "modify": D(max_wr=None, srq_limit=4),
    "query": M(valid="ok"),
    "get_srq_num": M(),
    "post_srq_ops": M(P("ops", lambda w: ib.OpsWR(ib.OpsWROpcode.TAG_SYNC), obj="OpsWR|list")),
}
# Outside a start_poll() session every accessor raises ValueError.
CQEX = {
    **CQ_,
    "poll_into": M(P("wr_id", lambda w: array.array("Q", bytes(32)), kw=True), valid="ok"),
    "start_poll": M(valid="ok"),  # empty: False, no session
    "next_poll": M(),
    "end_poll": M(),
    **{f"read_{f}": M() for f in CQEX_FIELDS.split()},
    "read_tm_info": M(),
}
DEVICE_METHODS = {
    "Context": ("ctx", CONTEXT),
    "PD": ("pd", PD_),
    "MR": (
        "mr",
        {
            "sge": D(length=8, offset=0, valid="ok"),
            "rereg": D(flags=ib.ReregMRFlags.CHANGE_ACCESS, access=ALL_ACCESS),
        },
    ),
    "CQ": ("cq", CQ_),
    "CompChannel": ("ch", {"get_cq_event": M()}),  # non-blocking fd, no event: EAGAIN
    "QP": ("qp", QP_),
    "SRQ": ("srq", SRQ_),
    "AH": ("ah", {}),
    "CQEx": ("cqx", CQEX),
    "MW": ("mw", {}),
    "QPEx": ("qpx", QPEX),
}


# The CM: a resolved CMID without a QP (connect, accept and their started
# halves refuse), then create_qp, last, gives it one; a listener on no
# connection (every wait of 0 s times out).
CM_METHODS = {
    "CMID": (
        "cmid",
        {
            "connect": D(timeout=1),
            "start_connect": D(),
            "accept": D(timeout=1),
            "start_accept": D(),
            "reject": D(),
            "disconnect": M(valid="ok"),
            "get_event": D(timeout=0, valid="timeout", bare=False),
            "poll_event": M(valid="ok"),
            "poll_established": M(valid="raise"),  # none started
            "resolve": D(host=CM_ADDR, port=7999),
            "create_qp": D(
                pd=lambda w: w.cm_pd,
                init_attr=lambda w: ib.QPInitAttr(send_cq=w.cm_cq),
                valid="ok",
            ),
        },
    ),
    "CMListener": (
        "listener",
        {
            "get_request": D(timeout=0, valid="timeout", bare=False),
            "get_event": D(timeout=0, valid="timeout", bare=False),
            "poll_request": M(valid="ok"),
            "poll_event": M(valid="ok"),
        },
    ),
}
if ib.has_rdmacm():
    DEVICE_METHODS.update(CM_METHODS)

# The UD QP posts for real: its valid send goes out.
UD_METHODS = {
    "post_send": M(P("wr", lambda w: w.ud_wr, obj="SendWR|list"), valid="ok"),
}


def declared_functions(device):
    """Module functions and constructors of the declarations: (callable,
    D); device None in the host group, where a Context cannot open."""
    out = [
        (ib.is_qpt_supported, D(caps=0, qp_type=ib.QPType.RC, valid="ok")),
        (ib.Context, D(name=device or "rxe0", valid="ok" if device else "any")),
    ]
    if ib.has_rdmacm():
        out.append((ib.CMListener, D(port=0, valid="ok" if device else "any")))
    return [
        (f, d.bind(f"{f.__name__}.__new__" if isinstance(f, type) else f.__name__)) for f, d in out
    ]


# ---------------------------------------------------------------------------
# Case generation
# ---------------------------------------------------------------------------


def device_cases(device):
    w, cw, ow, opd = all_worlds = worlds(device)
    others = all_worlds[1:]
    cases = Cases()
    covered = {}
    for tname, (attr, methods) in DEVICE_METHODS.items():
        obj = getattr(w, attr)
        bound = bind_methods(cases, tname, obj, methods, strict=True)
        covered[tname] = member_cases(cases, tname, obj, getattr(cw, attr), bound, w)
        for n, spec in bound.items():
            cases.method(tname, obj, n, spec, w, others)
    for n, spec in UD_METHODS.items():
        cases.method("UD QP", w.ud, n, spec, w, others, after=w.drain)
    for fn, spec in declared_functions(device):
        cases.method(fn.__name__, fn, None, spec, w, others)
    efa_function_cases(cases, w, others, "any")
    direct_cases(cases)
    device_datapath_cases(cases, w, cw, ow, opd)
    record_cases(cases, w, cw, ow, opd)
    state_cases(cases, w, cw, device)
    midcall_cases(cases, w, device)
    domain_cases(cases, w)
    cm_cases(cases, w, cw)
    misuse_mlx5.group_cases(cases, all_worlds, QPEX, CQEX)
    return cases, covered


def direct_cases(cases):
    for tname in NOT_CONSTRUCTIBLE:
        cases.add(f"{tname}() direct", getattr(ib, tname), "raise")


def record_cases(cases, w, cw, ow, opd):
    """Handles and values inside records (QPInitAttr, AHAttr, QPInfo):
    closed, of another Context or PD, of a wrong type or out of range;
    values in their declared range that the device refuses."""
    add, each = cases.add, cases.each
    IA = ib.QPInitAttr

    def create_qp(**fields):
        ia = IA(send_cq=w.cq, recv_cq=w.cq)
        for k, v in fields.items():
            setattr(ia, k, v)
        return w.pd.create_qp(ia)

    bad = [("send_cq of another Context", dict(send_cq=ow.cq))]
    bad += [("recv_cq of another Context", dict(recv_cq=ow.cq))]
    bad += [("srq of another PD", dict(srq=opd.srq)), ("srq of another Context", dict(srq=ow.srq))]
    each("create_qp({})", lambda f: create_qp(**f), bad)
    bad = [
        (f"closed {k}", {k: getattr(cw, k.split("_")[-1])}) for k in ("send_cq", "recv_cq", "srq")
    ]
    each("create_qp({})", lambda f: create_qp(**f), bad, "closed")
    for field, bad in [
        ("send_cq", None),
        ("send_cq", w.pd),
        ("recv_cq", w.srq),
        ("srq", w.cq),
        ("qp_type", "RC"),
        ("qp_type", -1),
        ("qp_type", 2**40),
        ("max_send_wr", -1),
        ("max_send_wr", 2**32),
        ("max_recv_sge", None),
        ("max_inline_data", 1.5),
        ("max_send_wr", 2**31),
    ]:
        expect = "any" if (field == "max_recv_sge" and bad is None) else "raise"
        add(
            f"create_qp(init_attr.{field}={bad!r})",
            lambda f=field, v=bad: create_qp(**{f: v}),
            expect,
        )
    add("create_qp(unknown qp_type 200)", lambda: create_qp(qp_type=200), "raise")
    add("create_qp(huge max_send_wr)", lambda: create_qp(max_send_wr=2**32 - 1), "raise")
    add("create_cq(huge cqe)", lambda: w.ctx.create_cq(2**31 - 1), "raise")
    add(
        "create_cq(comp_vector out of device range)",
        lambda: w.ctx.create_cq(4, comp_vector=10**6),
        "raise",
    )
    bad = [("dgid=bad text", dict(dgid="not a gid")), ("dgid=15 bytes", dict(dgid=b"x" * 15))]
    bad += [("sgid_index=300", dict(sgid_index=300)), ("port 9", dict(port_num=9))]
    bad += [("sgid_index past the GID table", dict(sgid_index=250))]
    each("create_ah({})", lambda f: w.pd.create_ah(evil_record(w.ah_attr, "", **f)), bad)
    rc_qp = lambda: w.pd.create_qp(IA(send_cq=w.cq))  # noqa: E731
    add("RC to_rtr(None)", lambda: rc_qp().to_rtr(None, sgid_index=GID_INDEX), "raise")
    add("RC to_rtr without sgid_index", lambda: rc_qp().to_rtr(w.info), "raise")
    # QP.modify parses its attributes by keyword, by hand.
    mask = ib.QPAttrMask
    add("modify(unknown attribute)", lambda: w.qp.modify(mask.STATE, no_such=1), "raise")
    add("modify(ah_attr=None)", lambda: w.qp.modify(mask.AV, ah_attr=None), "raise")
    add("modify(cap=None)", lambda: w.qp.modify(mask.CAP, cap=None), "raise")
    rts = lambda: rc_qp().modify(mask.STATE, qp_state=ib.QPState.RTS)  # noqa: E731
    add("modify(qp_state=RTS from RESET)", rts, "raise")
    each(
        "modify({})",
        lambda a: w.qp.modify(*a),
        [("mask=-1", (-1,)), ("every mask bit", (0x7FFFFFFF,))],
    )
    add("modify(two masks)", lambda: w.qp.modify(1, mask=1), "raise")
    add("query(every mask bit)", lambda: w.qp.query(mask=0x7FFFFFFF), "any")
    # In range, refused by the kernel or the device.
    bad = [("addr=0, huge length", (0, 2**63, 0)), ("addr + length overflows", (2**64 - 16, 64, 0))]
    bad += [("unmapped address", (8, 4096, 0)), ("unknown access bits", (w.mr.addr, 64, 1 << 30))]
    bad += [("array object as addr", (w.buf, 64, 0))]
    each("reg_mr({})", lambda a: w.pd.reg_mr(*a), bad)
    LW, RW = ib.AccessFlags.LOCAL_WRITE, ib.AccessFlags.REMOTE_WRITE
    bad = [("bytes, writable", (b"x" * 64, LW)), ("bytes, REMOTE_WRITE", (b"x" * 64, RW))]
    bad += [("read-only memoryview, writable", (memoryview(b"x" * 64), LW))]
    bad += [("empty bytearray", (bytearray(), 0)), ("None", (None, 0))]
    each("reg_tensor({})", lambda a: ib.reg_tensor(w.pd, *a), bad)
    add("reg_tensor(closed PD)", lambda: ib.reg_tensor(cw.pd, bytearray(8), 0), "closed")
    bad = [("fd of a regular file", w.ch.fd), ("closed fd", 2**30)]
    each("reg_dmabuf_mr({})", lambda fd: w.pd.reg_dmabuf_mr(0, 4096, 0, fd, 0), bad)
    add("create_srq(max_sge huge)", lambda: w.pd.create_srq(max_wr=8, max_sge=2**31), "raise")
    add("create_srq(max_wr huge)", lambda: w.pd.create_srq(max_wr=2**31), "raise")
    add("SRQ.modify() with nothing", lambda: w.srq.modify(), "raise")
    add("SRQ.modify(max_wr larger than the device)", lambda: w.srq.modify(max_wr=2**31), "raise")
    add("query_port(port 2)", lambda: w.ctx.query_port(2), "raise")
    add("query_gid(index past the table)", lambda: w.ctx.query_gid(PORT, 10**6), "raise")
    add("query_pkey(index past the table)", lambda: w.ctx.query_pkey(PORT, 10**6), "raise")
    add("Context(no such device)", lambda: ib.Context("no_such_dev0"), "raise")
    add("Context(name with NUL)", lambda: ib.Context("rxe\0"), "raise")


def state_cases(cases, w, cw, device):
    """Lifecycles: events to acknowledge, parents with children, reprs."""
    add = cases.add
    add("ack_events more than delivered", lambda: w.cq.ack_events(5), "raise")
    add("CQ with a channel: ack_events(0)", lambda: w.cq_ch.ack_events(0), "raise")
    add("repr of every closed handle", lambda: [repr(getattr(cw, a)) for a in HANDLE_ATTRS], "ok")
    add("repr of every open handle", lambda: [repr(getattr(w, a)) for a in HANDLE_ATTRS], "ok")

    # Parents refuse to close while children exist; the refusal leaves
    # everything usable.
    def parent_refuses():
        for parent in (w.ctx, w.pd, w.cq, w.ch):
            try:
                parent.close()
            except ib.VerbsError as e:
                assert e.errno == errno.EBUSY, e
            else:
                raise AssertionError(f"{parent!r} closed with children/users")
        w.ctx.query_port(PORT)
        w.cq.poll(1)
        w.pd.create_srq(max_wr=4).close()
        return "refused"

    add("parents with children refuse to close (EBUSY) and stay usable", parent_refuses, "ok")

    # After the parent closed (children first): every factory of the
    # closed parent and every method of the closed child is EBADF.
    def parent_closed_then_child_use():
        ctx = ib.Context(device)
        pd = ctx.alloc_pd()
        cq = ctx.create_cq(4)
        qp = pd.create_qp(ib.QPInitAttr(send_cq=cq))
        for o in (qp, cq, pd, ctx):
            o.close()
        failures = []
        for call in (
            lambda: ctx.alloc_pd(),
            lambda: ctx.create_cq(4),
            lambda: pd.create_qp(ib.QPInitAttr(send_cq=cq)),
            lambda: qp.post_send(w.swr),
            lambda: qp.query(),
            lambda: qp.state,
            lambda: cq.poll(),
            lambda: pd.reg_mr(w.mr.addr, 8, 0),
        ):
            try:
                call()
                failures.append("returned")
            except ib.VerbsError as e:
                if e.errno != errno.EBADF:
                    failures.append(repr(e))
        assert not failures, failures

    add("after the parent closed: everything is EBADF", parent_closed_then_child_use, "ok")
    add("AsyncEvent: lifecycle of a CQ_ERR event", lambda: async_event_case(device), "ok")


def async_event_case(device):
    """A real async event (a CQ overrun's CQ_ERR): an unacked event keeps
    its CQ from closing (EBUSY, not a hang in ibv_destroy_cq); ack() is
    idempotent; the event stays readable after its CQ and Context closed."""
    from support.rdma import make_rc_pair, wait_async_event

    ctx = ib.Context(device)
    pd = ctx.alloc_pd()
    buf = bytearray(4096)
    mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
    qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=1)
    qb.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr.sge(8)]) for i in range(32)])
    qa.post_send(
        [
            ib.SendWR(wr_id=i, sg_list=[mr.sge(8)], send_flags=ib.SendFlags.SIGNALED)
            for i in range(32)
        ]
    )
    ev = wait_async_event(ctx, ib.EventType.CQ_ERR, or_none=True)
    assert ev is not None, "no CQ_ERR event after a CQ overrun"
    cq = ev.element
    assert cq is ca or cq is cb, ev
    assert ev.element_type == "cq" and ev.context is ctx and not ev.acked
    for o in (qa, qb):
        o.close()
    try:
        cq.close()
    except ib.VerbsError as e:
        assert e.errno == errno.EBUSY, e
    else:
        raise AssertionError("a CQ with an unacked event closed")
    ev.ack()
    ev.ack()
    assert ev.acked
    with ev:
        pass
    for o in (ca, cb, mr, pd):
        o.close()
    ctx.close()  # later CQ_ERR events may still be queued unread: fine
    repr(ev)
    ev.ack()
    assert (
        ev.element is cq
        and ev.context is ctx
        and cq.closed
        and ev.event_type == ib.EventType.CQ_ERR
    )


def domain_cases(cases, w):
    """Flow specs that point to a Counters or FlowAction object: anything
    else in their place, or their bytes without the FlowAttr, raise before
    the provider sees a pointer; a parent domain in a CQInitAttrEx; an
    ESP attribute's fields."""
    add, each = cases.add, cases.each
    for label, spec in (("Count", ib.FlowSpecActionCount), ("Handle", ib.FlowSpecActionHandle)):
        bad = [("None", None), ("a PD", w.pd), ("an int", 1), ("a QP", w.qp)]
        attr = lambda o, s=spec: ib.FlowAttr(port=PORT, specs=[s(o)])  # noqa: E731
        each(
            f"create_flow(FlowSpecAction{label}({{}}))",
            lambda o, a=attr: w.qp.create_flow(a(o)),
            bad,
        )
        raw = attr(None).to_bytes()
        add(
            f"create_flow(bytes of FlowSpecAction{label})",
            lambda r=raw: w.qp.create_flow(r),
            "raise",
        )
    bad = [("a PD", w.pd), ("an int", 1), ("a CQ", w.cq)]
    each(
        "create_cq_ex(parent_domain={})",
        lambda p: w.ctx.create_cq_ex(ib.CQInitAttrEx(4, parent_domain=p)),
        bad,
    )
    bad = [
        ("key=str", {"key": "k"}),
        ("key of 33 bytes", {"key": b"k" * 33}),
        ("empty key", {"key": b""}),
    ]
    bad += [("spi=-1", {"spi": -1}), ("spi=2**32", {"spi": 2**32}), ("esn=2**32", {"esn": 2**32})]
    bad += [
        ("replay_window=1.5", {"replay_window": 1.5}),
        ("iv=2**64", {"key": b"k" * 16, "iv": 2**64}),
    ]
    esp = lambda b: w.ctx.create_flow_action_esp(ib.FlowActionESPAttr(**b))  # noqa: E731
    each("create_flow_action_esp({})", esp, bad)


def cm_cases(cases, w, cw):
    """The CM's state machine on a CMID of its own (resolved, then given
    a QP), records of another Context, what a declaration has no range for."""
    if not ib.has_rdmacm():
        return
    add = cases.add

    class CM:
        """A resolved CMID with its PD/CQ, made on first use."""

        cmid = None

        def get(self):
            if self.cmid is None:
                self.cmid = ib.CMID.resolve(CM_ADDR, 7999)
                self.pd = self.cmid.context.alloc_pd()
                self.cq = self.cmid.context.create_cq(4)
            return self

        def attr(self, cq=None, **kw):
            return ib.QPInitAttr(send_cq=cq or self.get().cq, **kw)

    cm = CM()
    add("CMID.__enter__ after close", lambda: cw.cmid.__enter__(), "closed")
    add(
        "CMID.create_qp(send_cq=another Context's)",
        lambda: cm.get().cmid.create_qp(cm.pd, cm.attr(w.cq)),
        "raise",
    )
    add(
        "CMID.create_qp(recv_cq=another Context's)",
        lambda: cm.get().cmid.create_qp(cm.pd, cm.attr(recv_cq=w.cq)),
        "raise",
    )
    add(
        "CMID.create_qp(qp_type=UD)",
        lambda: cm.get().cmid.create_qp(cm.pd, cm.attr(qp_type=ib.QPType.UD)),
        "raise",
    )
    add("CMID.connect before create_qp", lambda: cm.get().cmid.connect(timeout=1), "raise")
    add("CMID.start_connect before create_qp", lambda: cm.get().cmid.start_connect(), "raise")
    for n in ("accept", "reject", "start_accept"):
        add(f"CMID.{n} on the active side", lambda n=n: getattr(cm.get().cmid, n)(), "raise")
    add("CMID.connect(private_data too long)", lambda: cm.get().cmid.connect(b"x" * 256), "raise")
    add(
        "CMID.start_connect(private_data too long)",
        lambda: cm.get().cmid.start_connect(b"x" * 57),
        "raise",
    )
    add("CMID.connect(timeout=-1)", lambda: cm.get().cmid.connect(timeout=-1), "raise")
    add("CMID.context.close()", lambda: cm.get().cmid.context.close(), "raise")

    def first_qp():
        cm.qp = cm.get().cmid.create_qp(cm.pd, cm.attr())  # kept open

    add("CMID.create_qp(valid)", first_qp, "ok")
    add("CMID.create_qp a second QP", lambda: cm.get().cmid.create_qp(cm.pd, cm.attr()), "raise")
    add("CMID.close() with its QP open", lambda: cm.get().cmid.close(), "raise")
    add("CMID.qp.close()", lambda: cm.get().cmid.qp.close(), "ok")
    add("CMID.close() with its PD open", lambda: cm.get().cmid.close(), "raise")


# ---------------------------------------------------------------------------
# Host cases: no device needed
# ---------------------------------------------------------------------------


def host_cases():
    cases = Cases()
    add, each = cases.add, cases.each
    host_datapath_cases(cases)
    for fn, spec in declared_functions(None):
        cases.method(fn.__name__, fn, None, spec, None)
    direct_cases(cases)
    for fn in ("wc_status_str", "event_type_str"):
        for lbl, v, expect in bad_values(P("v", 0, lo=0, hi=2**31 - 1)):
            add(f"{fn}({lbl})", lambda fn=fn, v=v: getattr(ib._ibverbs, fn)(v), expect)
        add(f"{fn}(12345)", lambda fn=fn: getattr(ib._ibverbs, fn)(12345), "ok")
    add("is_fork_initialized()", lambda: ib.is_fork_initialized(), "any")
    add("fork_init(1)", lambda: ib.fork_init(1), "raise")
    each(
        "Gid({})",
        ib.Gid,
        [("None", None), ("15 bytes", b"x" * 15), ("'nonsense'", "nonsense"), ("1", 1)],
    )
    add("Gid.raw = ...", lambda: setattr(ib.Gid(), "raw", b""), "attr")
    add("AHAttr(dgid='x')", lambda: ib.AHAttr(dgid="x"), "raise")
    bad = [("qp_num=2**24", (2**24, 0, 0, ib.Gid(), 1, 1)), ("port=0", (1, 0, 0, ib.Gid(), 0, 1))]
    bad += [("mtu=6", (1, 0, 0, ib.Gid(), 1, 6)), ("gid=None", (1, 0, 0, None, 1, 1))]
    each("QPInfo({})", lambda a: ib.QPInfo(*a), bad)
    bad = [("None", None), ("str", "x" * 28), ("27 bytes", b"\0" * 27), ("29 bytes", b"\0" * 29)]
    bad += [("28 zero bytes", b"\0" * 28)]
    each("QPInfo.from_bytes({})", ib.QPInfo.from_bytes, bad)
    connect = lambda: ib.connect_rc(None, None, port=1, sgid_index=0, access=0)  # noqa: E731
    add("connect_rc(None, ...)", connect, "raise")
    bad = [
        ("None", None),
        ("b''", b""),
        ("non-contiguous memoryview", memoryview(bytearray(16))[::2]),
    ]
    each("tensor_addr_len({})", ib.tensor_addr_len, bad)
    add("Device(None)", lambda: ib.Device(None), "raise")
    bad = [("no such device", "no_such_dev0"), ("very long name", "x" * 100000)]
    bad += [("name with NUL", "rxe\0"), ("surrogates", "\udcff")]
    each("Context({})", ib.Context, bad)
    add("Device('nope').open()", lambda: ib.Device("no_such_dev0").open(), "raise")
    add("get_device_list()", lambda: ib.get_device_list(), "ok")
    efa_host_cases(cases)
    misuse_mlx5.group_cases(cases, None, QPEX, CQEX)
    return cases


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


def main(argv):
    group = argv[1]
    start = 0
    device = os.environ.get("IBVERBS_TEST_DEVICE") or "rxe0"
    if "--start" in argv:
        start = int(argv[argv.index("--start") + 1])
    if "--device" in argv:
        device = argv[argv.index("--device") + 1]
    covered = {}
    if group == "host":
        cases = host_cases()
    elif group == "efa":
        cases, covered = efa_fake_cases(device, QPEX, CQEX)
    else:
        cases, covered = device_cases(device)
    print(json.dumps({"covered": covered}), flush=True)
    for i, (name, fn, expect) in enumerate(cases):
        if i < start:
            continue
        print(f"BEGIN {i} {name}", flush=True)
        exc = result = None
        try:
            result = fn()
        except BaseException as e:  # noqa: BLE001 - the point is to see it
            exc = e
        ok, why = judge(expect, exc, result)
        rec = {
            "i": i,
            "name": name,
            "expect": expect,
            "ok": ok,
            "why": why,
            "exc": type(exc).__name__ if exc else None,
            "msg": str(exc)[:300] if exc else None,
        }
        if not ok and exc is not None and not isinstance(exc, ALLOWED):
            rec["tb"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[
                -1500:
            ]
        print(json.dumps(rec), flush=True)
        result = exc = None
    print(f"DONE {len(cases)}", flush=True)


if __name__ == "__main__":
    main(sys.argv)
