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

What a case expects (the README's "Safety" contract):
- "raise": a bad argument (None, a wrong type, out of range, a closed
  handle, an object of another Context/PD) raises TypeError, ValueError,
  OverflowError or VerbsError, never anything else and never a crash;
- "closed": any use of a closed handle raises VerbsError(EBADF) (or
  ValueError);
- "any": may succeed or raise one of those (e.g. a value in range that the
  device refuses), but must not crash;
- "ok": must succeed (the valid call the other cases perturb);
- "index": an index out of range raises IndexError (sequence protocol).
"""

from __future__ import annotations

import copy
import errno
import gc
import json
import os
import sys
import time
import traceback

# Run as a script: tests/ on sys.path, for the support package.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import ibverbs as ib  # noqa: E402

from support import GID_INDEX, PORT  # noqa: E402
from support.rdma import ALL_ACCESS  # noqa: E402
from support.timeouts import Deadline  # noqa: E402

ALLOWED = (TypeError, ValueError, OverflowError, ib.VerbsError)
# Every operation an RC extended QP can be created with on rxe.
_F = ib.QPCreateSendOpsFlags
QPEX_OPS = (
    _F.RDMA_WRITE
    | _F.RDMA_WRITE_WITH_IMM
    | _F.SEND
    | _F.SEND_WITH_IMM
    | _F.RDMA_READ
    | _F.ATOMIC_CMP_AND_SWP
    | _F.ATOMIC_FETCH_AND_ADD
    | _F.LOCAL_INV
    | _F.BIND_MW
    | _F.SEND_WITH_INV
    | _F.ATOMIC_WRITE
)

# Attributes that are plain Python state, readable after close.
READABLE_AFTER_CLOSE = {
    "closed",
    "name",
    "context",
    "pd",
    "owner",
    "access",
    "is_dmabuf",
    "channel",
    "events_unacked",
    "qp_type",
    "cap",
    "sq_sig_all",
    "send_cq",
    "recv_cq",
    "srq",
    "wc_flags",
    "polling",
    "send_ops_flags",
    # XRC, RSS (SRQ.srq_type, SRQ.xrcd, SRQ.cq, QP.xrcd, QP.rwq_ind_tbl)
    "srq_type",
    "xrcd",
    "cq",
    "rwq_ind_tbl",
}
# Attributes that are settable (QPEx.wr_id, QPEx.wr_flags; MW.rkey, the
# C struct field a program assigns).
WRITABLE = {"QPEx.wr_id", "QPEx.wr_flags", "MW.rkey"}
# Methods fine to call after close: close() is idempotent.
CALLABLE_AFTER_CLOSE = {"close"}
# Properties that raise on an open handle too: a CQEx's current entry
# exists only inside a start_poll() session (ValueError outside one).
READ_RAISES = {"CQEx.wr_id", "CQEx.status"}


# ---------------------------------------------------------------------------
# Parameters and their bad values
# ---------------------------------------------------------------------------


class P:
    """One parameter: its valid value (or a function of the world giving
    it), whether it is passed by keyword, its integer range or the handle
    type it takes, and whether None is legal."""

    def __init__(
        self,
        name,
        valid,
        *,
        kw=False,
        lo=None,
        hi=None,
        obj=None,
        nullable=False,
        foreign=None,
        extra_bad=(),
        free=False,
        optional=False,
    ):
        self.name, self.valid, self.kw = name, valid, kw
        self.optional = optional or kw  # may be left out
        self.free = free  # any object is fine (an owner, a flag)
        self.lo, self.hi, self.obj, self.nullable = lo, hi, obj, nullable
        self.foreign = foreign  # "raise" or "any": another ctx/PD's object
        self.extra_bad = extra_bad  # (label, value-or-fn) pairs that must raise

    def value(self, w):
        return self.valid(w) if callable(self.valid) else self.valid


WRONG_TYPES = [
    ("str", "1"),
    ("float", 1.5),
    ("bytes", b"\x01"),
    ("object", object()),
    ("list", [1]),
]
HANDLE_ATTRS = ["ctx", "pd", "mr", "cq", "ch", "qp", "srq", "ah", "cqx"]
OBJ_ATTR = {
    "Context": "ctx",
    "PD": "pd",
    "MR": "mr",
    "CQ": "cq",
    "CompChannel": "ch",
    "QP": "qp",
    "SRQ": "srq",
    "AH": "ah",
    "MW": "mw",
}


def bad_values(p: P, w, closed_w, other_w, other_pd_w):
    """(label, value, expect) for parameter p."""
    out = []
    if p.free:
        return [(lbl, v, "any") for lbl, v in WRONG_TYPES] + [
            (lbl, v(w) if callable(v) else v, "raise") for lbl, v in p.extra_bad
        ]
    if not p.nullable:
        out.append(("None", None, "raise"))
    if p.obj is None:
        out += [(lbl, v, "raise") for lbl, v in WRONG_TYPES]
        if p.lo is not None:
            if p.lo - 1 >= -(2**63):
                out.append((f"{p.lo - 1}", p.lo - 1, "raise"))
            out.append(("-2**64", -(2**64), "raise"))
        if p.hi is not None:
            out.append((f"{p.hi}+1", p.hi + 1, "raise"))
            out.append(("2**64", 2**64, "raise"))
            out.append(("2**100", 2**100, "raise"))
    else:
        kinds = p.obj.split("|")
        # a kind's own type (a list where a list goes) is no wrong type
        own = {"list", "bytes", "str", "float"} & set(kinds) | {"list"}
        out += [(lbl, v, "raise") for lbl, v in WRONG_TYPES if lbl not in own]
        if "float" not in kinds:  # a number takes an int too
            out.append(("int", 1, "raise"))
        for kind in ("Context", "PD", "MR", "CQ", "CompChannel", "QP", "SRQ", "AH"):
            # A QP has every field a QPInitAttr has (duck typing).
            if kind not in kinds and not (
                kind == "QP" and any(k.startswith("QPInitAttr") for k in kinds)
            ):
                out.append((f"a {kind}", getattr(w, OBJ_ATTR[kind]), "raise"))
        for kind in kinds:
            if kind in OBJ_ATTR:
                out.append((f"closed {kind}", getattr(closed_w, OBJ_ATTR[kind]), "closed"))
                if p.foreign:
                    out.append(
                        (f"{kind} of another Context", getattr(other_w, OBJ_ATTR[kind]), p.foreign)
                    )
                    if kind in ("MR", "SRQ", "AH"):
                        out.append(
                            (
                                f"{kind} of another PD",
                                getattr(other_pd_w, OBJ_ATTR[kind]),
                                p.foreign,
                            )
                        )
    for lbl, v in p.extra_bad:
        out.append((lbl, v(w) if callable(v) else v, "raise"))
    return out


class M:
    """A method: its parameters, and what its valid call may do."""

    def __init__(self, *params, valid="any"):
        self.params = params
        self.valid = valid  # expectation of the unperturbed call

    def call(self, obj, name, w, override=None):
        args, kwargs = [], {}
        by_kw = False  # after a parameter left out, the rest by keyword
        for p in self.params:
            if override and override[0] is p:
                v = override[1]
            elif p.valid is OMIT:
                by_kw = True
                continue
            else:
                v = p.value(w)
            if p.kw or by_kw:
                kwargs[p.name] = v
            else:
                args.append(v)
        return getattr(obj, name)(*args, **kwargs)


# The argument declarations of the C extension (core/args.h).
SPECS = ib._ibverbs._specs
# What bad_values treats a declared kind as (an "obj" of its own: wrong
# types and other handles raise, the kind's own type is left out).
KIND_OBJ = {"buffer": "bytes", "list": "list", "text": "str", "number": "float"}
OMIT = object()  # a parameter the valid call leaves out


class D(M):
    """A declared method: its parameters, their ranges and kinds come from
    its declaration (``_ibverbs._specs``).  ``values`` gives the valid value
    (or a function of the world) of each parameter the valid call passes;
    the others are left out of it, and their bad values tried all the
    same.  ``extra_bad``: {parameter: ((label, value), ...)} that must
    raise besides what the declaration implies."""

    def __init__(self, *, valid="any", extra_bad=None, **values):
        super().__init__(valid=valid)
        self.values = values
        self.extra_bad = extra_bad or {}
        self.qual = None

    def bind(self, qual):
        """A copy with the parameters of qual's declaration (one D may
        serve a type and its subclass: QP and QPEx)."""
        declared = SPECS[qual]
        names = {p["name"] for p in declared}
        unknown = (set(self.values) | set(self.extra_bad)) - names
        assert not unknown, f"{qual}: no parameter {sorted(unknown)}"
        bound = copy.copy(self)
        bound.qual = qual
        bound.params = tuple(self._param(qual, p) for p in declared)
        return bound

    def _param(self, qual, p):
        valid = self.values.get(p["name"], OMIT)
        if valid is OMIT and not p["optional"]:
            raise KeyError(f"{qual}: no valid value for its required {p['name']}")
        kind = p["kind"]
        ints = kind in ("int", "flags", "enum")
        extra = tuple(self.extra_bad.get(p["name"], ()))
        if kind == "buffer" and p["lo"] > 1:
            extra += ((f"{p['lo'] - 1} bytes", bytes(p["lo"] - 1)),)
        return P(
            p["name"],
            valid,
            kw=p["kw_only"],
            optional=p["optional"],
            nullable=p["none_ok"],
            lo=p["lo"] if ints else None,
            hi=p["hi"] if ints else None,
            obj=KIND_OBJ.get(kind, p["cls"] if kind in ("handle", "record") else None),
            foreign="raise" if p["parent"] else None,
            free=kind == "object",
            extra_bad=extra,
        )


def declared_name(cls, name):
    """The qualified name under which a method of cls is declared (its own
    class's or a base's), or None."""
    for c in cls.__mro__:
        if f"{c.__name__}.{name}" in SPECS:
            return f"{c.__name__}.{name}"
    return None


# ---------------------------------------------------------------------------
# The worlds: one set of live objects, one closed, one on another Context
# ---------------------------------------------------------------------------


class World:
    def __init__(self, device, *, close=False):
        self.ctx = ib.Context(device)
        os.set_blocking(self.ctx.async_fd, False)
        self.pd = self.ctx.alloc_pd()
        self.buf = bytearray(8192)
        self.mr = ib.reg_tensor(self.pd, self.buf, ALL_ACCESS)
        self.ch = self.ctx.create_comp_channel()
        os.set_blocking(self.ch.fd, False)
        self.cq = self.ctx.create_cq(512)
        self.cq_ch = self.ctx.create_cq(16, self.ch)
        self.srq = self.pd.create_srq(max_wr=64)
        self.qp = self.pd.create_qp(ib.QPInitAttr(send_cq=self.cq, recv_cq=self.cq))
        self.qpx = self.pd.create_qp_ex(
            ib.QPInitAttrEx(self.cq, send_ops_flags=QPEX_OPS, max_inline_data=64)
        )
        self.ud = self.pd.create_qp(
            ib.QPInitAttr(send_cq=self.cq, recv_cq=self.cq, qp_type=ib.QPType.UD)
        )
        self.ud.to_init(PORT, 0)
        self.ud.to_rtr(None)
        self.ud.to_rts(0)
        self.gid = self.ctx.query_gid(PORT, GID_INDEX)
        self.ah_attr = ib.AHAttr(dgid=self.gid, sgid_index=GID_INDEX, port_num=PORT)
        self.ah = self.pd.create_ah(self.ah_attr)
        self.mw = self.pd.alloc_mw(ib.MWType.TYPE_2)
        self.mw1 = self.pd.alloc_mw(ib.MWType.TYPE_1)
        self.bind_info = ib.MWBindInfo(self.mr, self.mr.addr, 64, ib.AccessFlags.REMOTE_READ)
        self.mw_bind = ib.MWBind(self.bind_info)
        self.sge = self.mr.sge(64)
        self.swr = ib.SendWR(wr_id=1, sg_list=[self.sge])
        self.rwr = ib.RecvWR(wr_id=1, sg_list=[self.sge])
        self.ud_wr = ib.SendWR(
            wr_id=2,
            sg_list=[self.sge],
            ah=self.ah,
            remote_qpn=self.ud.qp_num,
            remote_qkey=0x11111111,
        )
        self.info = ib.QPInfo(self.qp.qp_num, 0, 0, self.gid, PORT, ib.MTU.MTU_1024)
        self.cqx = self.ctx.create_cq_ex(
            ib.CQInitAttrEx(16, wc_flags=ib.CreateCQWCFlags.BYTE_LEN | ib.CreateCQWCFlags.QP_NUM)
        )
        self.flow_attr = ib.FlowAttr(port=PORT, specs=[ib.FlowSpecEth(ether_type=0x0800)])
        if close:
            self.cqx.close()
            for o in (
                self.mw1,
                self.mw,
                self.ah,
                self.qpx,
                self.ud,
                self.qp,
                self.srq,
                self.mr,
                self.cq_ch,
                self.cq,
                self.ch,
                self.pd,
                self.ctx,
            ):
                o.close()

    def drain(self):
        if not self.cq.closed:
            while self.cq.poll(512):
                pass


class OtherPD:
    """Objects of a second PD on the main world's Context."""

    def __init__(self, w):
        self.pd = w.ctx.alloc_pd()
        self.buf = bytearray(4096)
        self.mr = ib.reg_tensor(self.pd, self.buf, ALL_ACCESS)
        self.srq = self.pd.create_srq(max_wr=8)
        self.ah = self.pd.create_ah(w.ah_attr)
        self.ctx, self.cq, self.ch, self.qp = w.ctx, w.cq, w.ch, w.qp


# ---------------------------------------------------------------------------
# Method tables
# ---------------------------------------------------------------------------

U8P = dict(lo=1, hi=255)
I32 = dict(lo=0, hi=2**31 - 1)
U32 = dict(lo=0, hi=2**32 - 1)
U64 = dict(lo=0, hi=2**64 - 1)


DEVICE_METHODS = {
    "Context": (
        "ctx",
        {
            "alloc_pd": M(valid="ok"),
            "create_comp_channel": M(valid="ok"),
            "create_cq": D(cqe=4, channel=None, comp_vector=0, valid="ok"),
            "get_async_event": M(),  # async_fd is non-blocking: EAGAIN
            # No AsyncEvent to give (none pending): the checks of the argument
            # and of the handle; tests/device/test_compat_rxe.py acks real ones.
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
            # rxe: EOPNOTSUPP (no device memory)
            "alloc_dm": D(length=4096, log_align_req=0),
        },
    ),
    "PD": (
        "pd",
        {
            "reg_mr": D(
                addr=lambda w: w.mr.addr, length=64, access=0, owner=lambda w: w.buf, valid="ok"
            ),
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
            "create_qp": D(
                init_attr=lambda w: ib.QPInitAttr(send_cq=w.cq, recv_cq=w.cq), valid="ok"
            ),
            "create_srq": D(max_wr=8, max_sge=1, srq_limit=0, valid="ok"),
            "create_ah": D(attr=lambda w: w.ah_attr, valid="ok"),
            # No DM on rxe: every call stops at the dm argument.
            "reg_dm_mr": D(dm=None, offset=0, length=64, access=ib.AccessFlags.ZERO_BASED),
            # rxe: EINVAL (6.1) or EOPNOTSUPP (6.12)
            "reg_implicit_odp_mr": D(access=0),
            # rxe: EOPNOTSUPP (no advise_mr op)
            "advise_mr": D(advice=0, flags=0, sg_list=lambda w: [w.sge]),
            "alloc_mw": D(type=ib.MWType.TYPE_2, valid="ok"),
        },
    ),
    "MR": (
        "mr",
        {
            "sge": D(length=8, offset=0, valid="ok"),
        },
    ),
    "CQ": (
        "cq",
        {
            # poll() clamps a huge num_entries to the CQ's size.
            "poll": M(P("num_entries", 4, lo=1, optional=True), valid="ok"),
            "poll_count": M(P("num_entries", 4, lo=1, hi=2**63 - 1), valid="ok"),
            # rxe: EINVAL above max_cqe
            "resize": D(cqe=8, valid="ok"),
            "req_notify": D(solicited_only=False, valid="ok"),
            "ack_events": D(nevents=1),  # none delivered: ValueError
        },
    ),
    "CompChannel": (
        "ch",
        {
            "get_cq_event": M(),  # non-blocking fd, no event: EAGAIN
        },
    ),
    "QP": (
        "qp",
        {
            "post_send": M(P("wr", lambda w: w.swr, obj="SendWR|list")),
            "post_recv": M(P("wr", lambda w: w.rwr, obj="RecvWR|list")),
            "modify": M(
                P("mask", ib.QPAttrMask.STATE, lo=0, hi=2**31 - 1),
                P("qp_state", ib.QPState.RESET, kw=True, lo=0, hi=7),
            ),
            "query": D(mask=ib.QPAttrMask.STATE, valid="ok"),
            "to_init": D(port=PORT, access=0, pkey_index=0, qkey=0),
            "to_rtr": D(
                remote=lambda w: w.info,
                sgid_index=GID_INDEX,
                mtu=None,
                port=None,
                max_dest_rd_atomic=None,
                min_rnr_timer=None,
                hop_limit=None,
                sl=None,
                traffic_class=None,
                flow_label=None,
            ),
            "to_rts": D(psn=0, timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1),
            # rxe: EOPNOTSUPP (no flow steering)
            "create_flow": D(flow_attr=lambda w: w.flow_attr),
            # The QP is in RESET: the provider may refuse the valid call.
            "bind_mw": D(mw=lambda w: w.mw1, mw_bind=lambda w: w.mw_bind),
        },
    ),
    "SRQ": (
        "srq",
        {
            "post_recv": M(P("wr", lambda w: w.rwr, obj="RecvWR|list")),
            "modify": D(max_wr=None, srq_limit=4),
            "query": M(valid="ok"),
        },
    ),
    "AH": ("ah", {}),
    # Outside a start_poll() session every accessor raises ValueError.
    "CQEx": (
        "cqx",
        {
            "poll": M(P("num_entries", 4, lo=1, optional=True), valid="ok"),
            "poll_count": M(P("num_entries", 4, lo=1, hi=2**63 - 1), valid="ok"),
            # rxe: EINVAL above max_cqe
            "resize": D(cqe=8, valid="ok"),
            "req_notify": D(solicited_only=False, valid="ok"),
            "ack_events": D(nevents=1),
            "start_poll": M(valid="ok"),  # empty: False, no session
            "next_poll": M(),
            "end_poll": M(),
            **{
                f"read_{f}": M()
                for f in (
                    "opcode",
                    "vendor_err",
                    "byte_len",
                    "imm_data",
                    "invalidated_rkey",
                    "qp_num",
                    "src_qp",
                    "wc_flags",
                    "slid",
                    "sl",
                    "dlid_path_bits",
                    "completion_ts",
                    "completion_wallclock_ns",
                    "cvlan",
                    "flow_tag",
                )
            },
        },
    ),
    "MW": ("mw", {}),
}

# XRC, the extended SRQ, WQs and RSS tables, ECE, rate limits: rxe creates
# basic SRQs only; every other valid call is refused (EOPNOTSUPP), and a
# call needing an XRCD or WQ stops at that argument (none can exist).
DEVICE_METHODS["Context"][1].update(
    {
        "open_xrcd": D(fd=-1, oflags=os.O_CREAT),
        "open_qp": D(xrcd=None, qp_num=1, qp_type=ib.QPType.XRC_RECV),
        "create_srq_ex": D(
            pd=lambda w: w.pd,
            srq_type=ib.SRQType.BASIC,
            max_wr=8,
            max_sge=1,
            srq_limit=0,
            xrcd=None,
            cq=None,
            max_num_tags=None,
            max_ops=None,
            valid="ok",
        ),
        "create_wq": D(
            pd=lambda w: w.pd, cq=lambda w: w.cq, wq_type=0, max_wr=8, max_sge=1, create_flags=None
        ),
        # no WQ can exist: the empty list is refused (ValueError)
        "create_rwq_ind_table": D(wqs=[]),
    }
)
DEVICE_METHODS["SRQ"][1].update(
    {
        "get_srq_num": M(),
        "post_srq_ops": M(P("ops", lambda w: ib.OpsWR(ib.OpsWROpcode.TAG_SYNC), obj="OpsWR|list")),
    }
)
DEVICE_METHODS["QP"][1].update(
    {
        "modify_rate_limit": D(rate_limit=1000, max_burst_sz=0, typical_pkt_sz=0),
        "query_ece": M(),
        "set_ece": M(P("ece", lambda w: ib.ECE(0x1234, 1), obj="ECE")),
    }
)

# The extended QP: the QP's methods, then a batch opened by wr_start's
# valid call, in which the builders' valid calls reach the provider (their
# perturbed calls must not), closed by wr_abort's.
DEVICE_METHODS["Context"][1]["create_qp_ex"] = D(
    init_attr=lambda w: ib.QPInitAttrEx(w.cq, pd=w.pd), valid="ok"
)
DEVICE_METHODS["PD"][1]["create_qp_ex"] = D(init_attr=lambda w: ib.QPInitAttrEx(w.cq), valid="ok")
# Multicast groups and replies to a UD sender (test_mcast, test_ud_reply).
# The QP is RC in RESET (rxe: EINVAL for attach_mcast); a WC without the
# GRH flag makes a non-global address (rxe may refuse its AH on RoCE).
DEVICE_METHODS["Context"][1]["init_ah_from_wc"] = D(
    port=PORT,
    wc=lambda w: ib.WC(src_qp=1),
    grh=bytes(40),
    valid="ok",
    extra_bad={"grh": (("39 bytes", bytes(39)), ("str", "x" * 40))},
)
DEVICE_METHODS["PD"][1]["create_ah_from_wc"] = D(
    wc=lambda w: ib.WC(src_qp=1),
    grh=bytes(40),
    port=PORT,
    extra_bad={"grh": (("39 bytes", bytes(39)), ("str", "x" * 40))},
)
DEVICE_METHODS["QP"][1]["attach_mcast"] = D(
    gid="::ffff:239.1.2.3", lid=0, extra_bad={"gid": (("15 bytes", b"\xff" * 15),)}
)
DEVICE_METHODS["QP"][1]["detach_mcast"] = D(
    gid="::ffff:239.1.2.3", lid=0, extra_bad={"gid": (("15 bytes", b"\xff" * 15),)}
)
DEVICE_METHODS["QP"][1]["query_data_in_order"] = D(op=0, flags=0, valid="ok")
DEVICE_METHODS["QPEx"] = (
    "qpx",
    {
        **DEVICE_METHODS["QP"][1],
        "wr_start": M(valid="ok"),
        "wr_send": M(valid="ok"),
        "wr_send_imm": D(imm_data=1, valid="ok"),
        "wr_send_inv": D(invalidate_rkey=1, valid="ok"),
        "wr_rdma_write": D(rkey=lambda w: w.mr.rkey, remote_addr=lambda w: w.mr.addr, valid="ok"),
        "wr_set_sge": M(
            P("lkey", lambda w: w.mr.lkey, **U32),
            P("addr", lambda w: w.mr.addr, **U64),
            P("length", 8, **U32),
            valid="ok",
        ),
        "wr_rdma_write_imm": D(
            rkey=lambda w: w.mr.rkey, remote_addr=lambda w: w.mr.addr, imm_data=1, valid="ok"
        ),
        "wr_set_sge_list": D(sg_list=lambda w: [w.sge], valid="ok"),
        "wr_rdma_read": D(rkey=lambda w: w.mr.rkey, remote_addr=lambda w: w.mr.addr, valid="ok"),
        "wr_atomic_cmp_swp": D(
            rkey=lambda w: w.mr.rkey, remote_addr=lambda w: w.mr.addr, compare=0, swap=1, valid="ok"
        ),
        "wr_atomic_fetch_add": D(
            rkey=lambda w: w.mr.rkey, remote_addr=lambda w: w.mr.addr, add=1, valid="ok"
        ),
        # after wr_atomic_fetch_add, which takes SGEs only: refused (EINVAL)
        "wr_set_inline_data": D(data=b"abc"),
        "wr_set_inline_data_list": D(buf_list=[b"ab", b"c"]),
        "wr_local_inv": D(invalidate_rkey=1, valid="ok"),
        "wr_atomic_write": D(
            rkey=lambda w: w.mr.rkey, remote_addr=lambda w: w.mr.addr, data=b"12345678", valid="ok"
        ),
        # built against rdma-core 44: EOPNOTSUPP; else not in QPEX_OPS: EINVAL
        "wr_flush": D(
            rkey=lambda w: w.mr.rkey, remote_addr=lambda w: w.mr.addr, len=8, type=1, level=1
        ),
        # an RC QP: refused (EINVAL)
        "wr_set_ud_addr": D(ah=lambda w: w.ah, remote_qpn=1, remote_qkey=1),
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
    },
)

# Memory, import and device verbs (rdma-core 59-64).  rxe runs none of the imports,
# DMA handles, rt values, port speed, null MR or rereg (EOPNOTSUPP), and
# rdma-core 44 lacks reg_mr_ex, alloc_buf and reg_buf_mr (EOPNOTSUPP): the
# valid calls may raise; every perturbed one raises before the verb.
DEVICE_METHODS["Context"][1].update(
    {
        "import_device": D(cmd_fd=lambda w: w.ctx.cmd_fd),
        "import_pd": D(pd_handle=lambda w: w.pd.handle),
        "import_dm": D(dm_handle=0, length=0),
        "alloc_dmah": D(cpu_id=0, ph=0, tph_mem_type=0),
        "query_rt_values_ex": D(comp_mask=1),
        "query_port_speed": D(port_num=PORT),
    }
)
DEVICE_METHODS["PD"][1].update(
    {
        "reg_mr_ex": D(
            length=64,
            access=0,
            addr=lambda w: w.mr.addr,
            iova=lambda w: 0x10000 + (w.mr.addr & 4095),
            fd=None,
            fd_offset=None,
            dmah=None,
            buf=None,
            owner=lambda w: w.buf,
        ),
        "alloc_buf": D(size=4096),
        # No Buf on rdma-core 44: every call stops at the buf argument.
        "reg_buf_mr": D(buf=None, addr=0, length=64, access=0),
        "alloc_null_mr": M(),
        "import_mr": D(mr_handle=lambda w: w.mr.handle),
    }
)
DEVICE_METHODS["MR"][1]["rereg"] = D(flags=ib.ReregMRFlags.CHANGE_ACCESS, access=ALL_ACCESS)
# Plain state, None/False after close; the class method needs no instance.
READABLE_AFTER_CLOSE |= {"imported", "buf", "dmah"}
CALLABLE_ON_CLOSED = {"Context.import_device"}
# Thread and parent domains, counters, completion counters, flow actions
# (mem/domain.c, counters/, qp/flow_action.c): rxe makes none of these
# objects, so each valid call is refused (EOPNOTSUPP) and an argument that
# must be one of them has no valid value (None).
_DOMAIN_CTX_METHODS = {
    "alloc_td": M(),
    "alloc_parent_domain": D(pd=lambda w: w.pd, td=None),
    "create_counters": M(),
    "create_comp_cntr": D(type=0, flags=0),
    "query_comp_cntr_caps": M(),
    "create_flow_action_esp": D(attr=lambda w: ib.FlowActionESPAttr(spi=1)),
}
DEVICE_METHODS["Context"][1].update(_DOMAIN_CTX_METHODS)
DEVICE_METHODS["CQ"][1]["modify"] = D(cq_count=1, cq_period=1)
DEVICE_METHODS["CQEx"][1]["modify"] = D(cq_count=1, cq_period=1)
DEVICE_METHODS["CQEx"][1]["read_tm_info"] = M()  # no session: ValueError
DEVICE_METHODS["QP"][1]["attach_comp_cntr"] = D(comp_cntr=None, op_mask=1)
DEVICE_METHODS["QPEx"][1]["attach_comp_cntr"] = D(comp_cntr=None, op_mask=1)

# The UD QP posts for real: its valid send goes out.
UD_METHODS = {
    "post_send": M(P("wr", lambda w: w.ud_wr, obj="SendWR|list"), valid="ok"),
}


# ---------------------------------------------------------------------------
# Objects that run Python code in the middle of a call
# ---------------------------------------------------------------------------


class Closer:
    """Closes the given handles (best effort) when triggered."""

    def __init__(self, *handles):
        self.handles = handles

    def fire(self):
        for h in self.handles:
            try:
                h.close()
            except ib.VerbsError:
                pass


class EvilBool(Closer):
    def __bool__(self):
        self.fire()
        return False


def evil_record(base, name, closer, **fields):
    """An object with base's fields whose `name` attribute, when read,
    runs closer.fire() first."""
    attrs = {
        k: getattr(base, k)
        for k in dir(base)
        if not k.startswith("_") and not callable(getattr(base, k))
    }
    attrs.update(fields)

    class Evil:
        def __getattr__(self, key):
            if key == name:
                closer.fire()
            if key in attrs:
                return attrs[key]
            raise AttributeError(key)

    return Evil()


class EvilGid(bytearray):
    """16 bytes whose conversion by Gid() (bytes(value) calls __bytes__)
    closes handles."""

    def __init__(self, raw, *handles):
        super().__init__(raw)
        self.closer = Closer(*handles)

    def __bytes__(self):
        self.closer.fire()
        return bytes(bytearray(self))


# ---------------------------------------------------------------------------
# Case generation
# ---------------------------------------------------------------------------


def device_cases(device):
    w = World(device)
    cw = World(device, close=True)
    ow = World(device)  # another Context on the same device
    opd = OtherPD(w)
    cases = []

    def add(name, fn, expect):
        cases.append((name, fn, expect))

    # Every public member of every handle type must be covered.
    covered = {}
    for tname, (attr, methods) in DEVICE_METHODS.items():
        obj = getattr(w, attr)
        cobj = getattr(cw, attr)
        bound = {}
        for n, spec in methods.items():
            qual = declared_name(type(obj), n)
            bound[n] = spec.bind(qual) if isinstance(spec, D) else spec
            if qual is not None and not isinstance(spec, D):
                add(
                    f"{tname}.{n}: DECLARED ({qual}) BUT WRITTEN BY HAND: use D()",
                    lambda: (_ for _ in ()).throw(AssertionError("hand-written")),
                    "ok",
                )
        methods = bound
        names = [n for n in dir(type(obj)) if not n.startswith("_")]
        covered[tname] = names
        for n in names:
            member = getattr(type(obj), n)
            is_method = (
                callable(member)
                and not isinstance(member, property)
                and type(member).__name__ not in ("getset_descriptor", "member_descriptor")
            )
            # --- after close (the closed world: children, then parents)
            if is_method:
                spec = methods.get(n)
                if n in CALLABLE_AFTER_CLOSE:
                    add(f"{tname}.{n}() after close", lambda o=cobj, n=n: getattr(o, n)(), "ok")
                    continue
                if spec is None:
                    add(
                        f"{tname}.{n}: NOT IN THE MISUSE TABLE",
                        lambda: (_ for _ in ()).throw(AssertionError("uncovered")),
                        "ok",
                    )
                    continue
                add(
                    f"{tname}.{n} after close",
                    lambda o=cobj, n=n, s=spec: s.call(o, n, w),
                    "any" if f"{tname}.{n}" in CALLABLE_ON_CLOSED else "closed",
                )
            else:
                add(
                    f"{tname}.{n} read after close",
                    lambda o=cobj, n=n: getattr(o, n),
                    "any" if n in READABLE_AFTER_CLOSE else "closed",
                )
                add(
                    f"{tname}.{n} read",
                    lambda o=obj, n=n: getattr(o, n),
                    "raise" if f"{tname}.{n}" in READ_RAISES else "ok",
                )
                add(
                    f"{tname}.{n} write",
                    lambda o=obj, n=n: setattr(o, n, 1),
                    "any" if f"{tname}.{n}" in WRITABLE else "attr",
                )
        for n, spec in methods.items():
            target = obj
            # --- the valid call
            add(f"{tname}.{n}(valid)", lambda o=target, n=n, s=spec: s.call(o, n, w), spec.valid)
            # --- each parameter perturbed
            for p in spec.params:
                for lbl, v, expect in bad_values(p, w, cw, ow, opd):
                    add(
                        f"{tname}.{n}({p.name}={lbl})",
                        lambda o=target, n=n, s=spec, p=p, v=v: s.call(o, n, w, (p, v)),
                        expect,
                    )
            # --- arity
            if spec.params:
                add(
                    f"{tname}.{n}() without arguments",
                    lambda o=target, n=n: getattr(o, n)(),
                    "raise" if any(not p.optional for p in spec.params) else "any",
                )
            add(
                f"{tname}.{n}(too many arguments)",
                lambda o=target, n=n, k=len(spec.params): getattr(o, n)(*([0] * (k + 1))),
                "raise",
            )
            add(
                f"{tname}.{n}(unknown keyword)",
                lambda o=target, n=n: getattr(o, n)(no_such_keyword=1),
                "raise",
            )

    # --- the UD QP, which can post for real
    for n, spec in UD_METHODS.items():
        add(f"UD QP.{n}(valid)", lambda n=n, s=spec: (s.call(w.ud, n, w), w.drain()), spec.valid)
        for p in spec.params:
            for lbl, v, expect in bad_values(p, w, cw, ow, opd):
                add(
                    f"UD QP.{n}({p.name}={lbl})",
                    lambda n=n, s=spec, p=p, v=v: s.call(w.ud, n, w, (p, v)),
                    expect,
                )
    cases += special_device_cases(w, cw, ow, opd, device)
    return cases, covered


def special_device_cases(w, cw, ow, opd, device):
    """Hand-written cases: object graphs that cross Contexts and PDs,
    closed objects inside records and WRs, Python code that closes a
    handle in the middle of a call."""
    cases = []

    def add(name, fn, expect):
        cases.append((name, fn, expect))

    IA = ib.QPInitAttr
    # Objects of another Context / PD inside records.
    add(
        "create_qp(send_cq of another Context)",
        lambda: w.pd.create_qp(IA(send_cq=ow.cq, recv_cq=w.cq)),
        "raise",
    )
    add(
        "create_qp(recv_cq of another Context)",
        lambda: w.pd.create_qp(IA(send_cq=w.cq, recv_cq=ow.cq)),
        "raise",
    )
    add(
        "create_qp(srq of another PD)",
        lambda: w.pd.create_qp(IA(send_cq=w.cq, recv_cq=w.cq, srq=opd.srq)),
        "raise",
    )
    add(
        "create_qp(srq of another Context)",
        lambda: w.pd.create_qp(IA(send_cq=w.cq, recv_cq=w.cq, srq=ow.srq)),
        "raise",
    )
    add(
        "create_qp(closed send_cq)",
        lambda: w.pd.create_qp(IA(send_cq=cw.cq, recv_cq=w.cq)),
        "closed",
    )
    add(
        "create_qp(closed recv_cq)",
        lambda: w.pd.create_qp(IA(send_cq=w.cq, recv_cq=cw.cq)),
        "closed",
    )
    add(
        "create_qp(closed srq)",
        lambda: w.pd.create_qp(IA(send_cq=w.cq, recv_cq=w.cq, srq=cw.srq)),
        "closed",
    )
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

        def fn(field=field, bad=bad):
            ia = IA(send_cq=w.cq, recv_cq=w.cq)
            setattr(ia, field, bad)
            return w.pd.create_qp(ia)

        expect = "any" if (field == "max_recv_sge" and bad is None) else "raise"
        add(f"create_qp(init_attr.{field}={bad!r})", fn, expect)
    add(
        "create_qp(unknown qp_type 200)",
        lambda: w.pd.create_qp(IA(send_cq=w.cq, qp_type=200)),
        "raise",
    )
    add(
        "create_qp(huge max_send_wr)",
        lambda: w.pd.create_qp(IA(send_cq=w.cq, max_send_wr=2**32 - 1)),
        "raise",
    )
    add("create_qp(object() as init_attr)", lambda: w.pd.create_qp(object()), "raise")
    add("create_cq(channel of another Context)", lambda: w.ctx.create_cq(4, channel=ow.ch), "raise")
    add("create_cq(huge cqe)", lambda: w.ctx.create_cq(2**31 - 1), "raise")
    add(
        "create_cq(comp_vector out of device range)",
        lambda: w.ctx.create_cq(4, comp_vector=10**6),
        "raise",
    )
    add("create_ah(None)", lambda: w.pd.create_ah(None), "raise")
    add("create_ah(object())", lambda: w.pd.create_ah(object()), "raise")
    add(
        "create_ah(dgid=bad text)",
        lambda: w.pd.create_ah(evil_record(w.ah_attr, "", Closer(), dgid="not a gid")),
        "raise",
    )
    add(
        "create_ah(dgid=15 bytes)",
        lambda: w.pd.create_ah(evil_record(w.ah_attr, "", Closer(), dgid=b"x" * 15)),
        "raise",
    )
    add(
        "create_ah(sgid_index=300)",
        lambda: w.pd.create_ah(evil_record(w.ah_attr, "", Closer(), sgid_index=300)),
        "raise",
    )
    add(
        "create_ah(sgid_index past the GID table)",
        lambda: w.pd.create_ah(evil_record(w.ah_attr, "", Closer(), sgid_index=250)),
        "raise",
    )
    add(
        "create_ah(port 9)",
        lambda: w.pd.create_ah(evil_record(w.ah_attr, "", Closer(), port_num=9)),
        "raise",
    )
    # SGEs and WRs over closed or foreign objects.
    add("SGE(closed MR)", lambda: ib.SGE(cw.mr, 8), "closed")
    add("MR.sge past the end", lambda: w.mr.sge(8, offset=len(w.buf)), "raise")
    add("MR.sge length past the end", lambda: w.mr.sge(len(w.buf) + 1), "raise")
    add("SendWR(ah=closed AH)", lambda: ib.SendWR(ah=cw.ah), "any")

    def post_closed_mr():
        pd = w.ctx.alloc_pd()
        buf = bytearray(64)
        mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
        wr = ib.SendWR(
            wr_id=9, sg_list=[mr.sge()], ah=w.ah, remote_qpn=w.ud.qp_num, remote_qkey=0x11111111
        )
        mr.close()
        pd.close()
        w.ud.post_send(wr)

    add("post_send(WR over an MR closed after the WR was built)", post_closed_mr, "closed")

    def post_closed_ah():
        ah = w.pd.create_ah(w.ah_attr)
        wr = ib.SendWR(wr_id=9, sg_list=[w.sge], ah=ah, remote_qpn=1, remote_qkey=1)
        ah.close()
        w.ud.post_send(wr)

    add("post_send(WR whose AH was closed after the WR was built)", post_closed_ah, "closed")

    def post_recv_closed_mr():
        buf = bytearray(64)
        mr = ib.reg_tensor(w.pd, buf, ALL_ACCESS)
        wr = ib.RecvWR(wr_id=9, sg_list=[mr.sge()])
        mr.close()
        w.qp.post_recv(wr)

    add("post_recv(WR over a closed MR)", post_recv_closed_mr, "closed")

    def srq_post_closed_mr():
        buf = bytearray(64)
        mr = ib.reg_tensor(w.pd, buf, ALL_ACCESS)
        wr = ib.RecvWR(wr_id=9, sg_list=[mr.sge()])
        mr.close()
        w.srq.post_recv(wr)

    add("SRQ.post_recv(WR over a closed MR)", srq_post_closed_mr, "closed")
    add(
        "UD post_send(AH of another PD)",
        lambda: (
            w.ud.post_send(
                ib.SendWR(
                    wr_id=3, sg_list=[w.sge], ah=opd.ah, remote_qpn=w.ud.qp_num, remote_qkey=1
                )
            ),
            w.drain(),
        ),
        "any",
    )
    add(
        "UD post_send(AH of another Context)",
        lambda: (
            w.ud.post_send(
                ib.SendWR(wr_id=3, sg_list=[w.sge], ah=ow.ah, remote_qpn=w.ud.qp_num, remote_qkey=1)
            ),
            w.drain(),
        ),
        "any",
    )
    add(
        "UD post_send(MR of another Context)",
        lambda: (
            w.ud.post_send(
                ib.SendWR(
                    wr_id=3, sg_list=[ow.mr.sge(8)], ah=w.ah, remote_qpn=w.ud.qp_num, remote_qkey=1
                )
            ),
            w.drain(),
        ),
        "any",
    )
    add("UD post_send(no AH)", lambda: w.ud.post_send(ib.SendWR(wr_id=3, sg_list=[w.sge])), "raise")
    add(
        "UD post_send(RDMA_WRITE)",
        lambda: w.ud.post_send(
            ib.SendWR(wr_id=3, sg_list=[w.sge], ah=w.ah, opcode=ib.WROpcode.RDMA_WRITE)
        ),
        "raise",
    )
    add(
        "post_send(the same WR twice in a list)",
        lambda: w.ud.post_send([w.ud_wr, w.ud_wr]),
        "raise",
    )
    add("post_send(a RecvWR)", lambda: w.ud.post_send(w.rwr), "raise")
    add("post_recv(a SendWR)", lambda: w.qp.post_recv(w.swr), "raise")
    add("post_send(empty list)", lambda: w.ud.post_send([]), "raise")
    add("post_send(list with None)", lambda: w.ud.post_send([w.ud_wr, None]), "raise")
    add(
        "post_send(more WRs than the SQ holds)",
        lambda: (
            w.ud.post_send(
                [
                    ib.SendWR(wr_id=i, sg_list=[w.sge], ah=w.ah, remote_qpn=1, remote_qkey=1)
                    for i in range(4096)
                ]
            ),
            w.drain(),
        ),
        "raise",
    )
    add(
        "post_send(more SGEs than max_send_sge)",
        lambda: w.ud.post_send(
            ib.SendWR(wr_id=3, sg_list=[w.sge] * 5, ah=w.ah, remote_qpn=1, remote_qkey=1)
        ),
        "raise",
    )

    # --- SendWRChain / RecvWRChain: the checks a chain keeps between posts
    def ud_chain(*extra, ah=None):
        wrs = [
            ib.SendWR(wr_id=4, sg_list=[w.sge], ah=ah or w.ah, remote_qpn=1, remote_qkey=1),
            *extra,
        ]
        return ib.SendWRChain(wrs)

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

    def chain_closed_mr():
        buf = bytearray(64)
        mr = ib.reg_tensor(w.pd, buf, ALL_ACCESS)
        chain = ud_chain(
            ib.SendWR(wr_id=5, sg_list=[mr.sge()], ah=w.ah, remote_qpn=1, remote_qkey=1)
        )
        setup_post(chain)
        mr.close()
        # Checked before the provider is called: EBADF, never ENOMEM.
        w.ud.post_send(chain)

    add("post_send(SendWRChain over an MR closed after a post)", chain_closed_mr, "closed")

    def chain_closed_ah():
        ah = w.pd.create_ah(w.ah_attr)
        chain = ud_chain(ah=ah)
        setup_post(chain)
        ah.close()
        w.ud.post_send(chain)

    add("post_send(SendWRChain whose AH was closed after a post)", chain_closed_ah, "closed")

    def chain_new_ah_closed():
        chain = ud_chain()
        setup_post(chain)
        ah = w.pd.create_ah(w.ah_attr)
        chain[0].ah = ah
        ah.close()
        w.ud.post_send(chain)

    add(
        "post_send(SendWRChain: a member's new AH closed before the post)",
        chain_new_ah_closed,
        "closed",
    )

    def recv_chain_closed_mr(target):
        buf = bytearray(64)
        mr = ib.reg_tensor(w.pd, buf, ALL_ACCESS)
        chain = ib.RecvWRChain([ib.RecvWR(wr_id=9, sg_list=[mr.sge()])])
        mr.close()
        target().post_recv(chain)

    add(
        "post_recv(RecvWRChain over a closed MR)",
        lambda: recv_chain_closed_mr(lambda: w.qp),
        "closed",
    )
    add(
        "SRQ.post_recv(RecvWRChain over a closed MR)",
        lambda: recv_chain_closed_mr(lambda: w.srq),
        "closed",
    )
    add("post_send(SendWRChain) on a closed QP", lambda: cw.ud.post_send(ud_chain()), "closed")
    add(
        "post_send(released SendWRChain)",
        lambda: (lambda c: (c.release(), w.ud.post_send(c)))(ud_chain()),
        "raise",
    )
    add(
        "post_send(a member of a SendWRChain)",
        lambda: (lambda c: w.ud.post_send(c[0]))(ud_chain()),
        "raise",
    )
    add(
        "post_send(a list holding a member of a SendWRChain)",
        lambda: (lambda c: w.ud.post_send([ib.SendWR(), c[0]]))(ud_chain()),
        "raise",
    )
    add(
        "UD post_send(SendWRChain with an RDMA_WRITE)",
        lambda: w.ud.post_send(
            ud_chain(ib.SendWR(wr_id=3, sg_list=[w.sge], ah=w.ah, opcode=ib.WROpcode.RDMA_WRITE))
        ),
        "raise",
    )
    add(
        "UD post_send(SendWRChain with no AH)",
        lambda: w.ud.post_send(ud_chain(ib.SendWR(wr_id=3, sg_list=[w.sge]))),
        "raise",
    )
    add("post_recv(a SendWRChain)", lambda: w.qp.post_recv(ud_chain()), "raise")
    add("post_send(a RecvWRChain)", lambda: w.ud.post_send(ib.RecvWRChain([ib.RecvWR()])), "raise")
    add(
        "post_send(SendWRChain longer than the SQ)",
        lambda: (
            w.ud.post_send(
                ib.SendWRChain(
                    ib.SendWR(wr_id=i, sg_list=[w.sge], ah=w.ah, remote_qpn=1, remote_qkey=1)
                    for i in range(4096)
                )
            ),
            w.drain(),
        ),
        "raise",
    )
    add(
        "post_recv on a QP with an SRQ",
        lambda: w.pd.create_qp(IA(send_cq=w.cq, recv_cq=w.cq, srq=w.srq)).post_recv(w.rwr),
        "raise",
    )
    add("ack_events more than delivered", lambda: w.cq.ack_events(5), "raise")
    add("CQ with a channel: ack_events(0)", lambda: w.cq_ch.ack_events(0), "raise")
    # to_rtr / modify with records of the wrong shape.
    add(
        "RC to_rtr(None)",
        lambda: w.pd.create_qp(IA(send_cq=w.cq)).to_rtr(None, sgid_index=GID_INDEX),
        "raise",
    )
    add(
        "RC to_rtr(object())",
        lambda: w.pd.create_qp(IA(send_cq=w.cq)).to_rtr(object(), sgid_index=GID_INDEX),
        "raise",
    )
    add(
        "RC to_rtr without sgid_index",
        lambda: w.pd.create_qp(IA(send_cq=w.cq)).to_rtr(w.info),
        "raise",
    )
    add("modify(unknown attribute)", lambda: w.qp.modify(ib.QPAttrMask.STATE, no_such=1), "raise")
    add("modify(ah_attr=None)", lambda: w.qp.modify(ib.QPAttrMask.AV, ah_attr=None), "raise")
    add("modify(cap=None)", lambda: w.qp.modify(ib.QPAttrMask.CAP, cap=None), "raise")
    add(
        "modify(qp_state=RTS from RESET)",
        lambda: w.pd.create_qp(IA(send_cq=w.cq)).modify(
            ib.QPAttrMask.STATE, qp_state=ib.QPState.RTS
        ),
        "raise",
    )
    add("modify(mask=-1)", lambda: w.qp.modify(-1), "raise")
    add("modify(every mask bit)", lambda: w.qp.modify(0x7FFFFFFF), "raise")
    add("modify(two masks)", lambda: w.qp.modify(1, mask=1), "raise")
    add("query(every mask bit)", lambda: w.qp.query(mask=0x7FFFFFFF), "any")
    add("reg_mr(addr=0, huge length)", lambda: w.pd.reg_mr(0, 2**63, 0), "raise")
    add("reg_mr(addr + length overflows)", lambda: w.pd.reg_mr(2**64 - 16, 64, 0), "raise")
    add("reg_mr(unmapped address)", lambda: w.pd.reg_mr(8, 4096, 0), "raise")
    add("reg_mr(unknown access bits)", lambda: w.pd.reg_mr(w.mr.addr, 64, 1 << 30), "raise")
    add("reg_mr(array object as addr)", lambda: w.pd.reg_mr(w.buf, 64, 0), "raise")
    add(
        "reg_tensor(bytes, writable)",
        lambda: ib.reg_tensor(w.pd, b"x" * 64, ib.AccessFlags.LOCAL_WRITE),
        "raise",
    )
    add(
        "reg_tensor(bytes, REMOTE_WRITE)",
        lambda: ib.reg_tensor(w.pd, b"x" * 64, ib.AccessFlags.REMOTE_WRITE),
        "raise",
    )
    add(
        "reg_tensor(read-only memoryview, writable)",
        lambda: ib.reg_tensor(w.pd, memoryview(b"x" * 64), ib.AccessFlags.LOCAL_WRITE),
        "raise",
    )
    add("reg_tensor(empty bytearray)", lambda: ib.reg_tensor(w.pd, bytearray(), 0), "raise")
    add("reg_tensor(None)", lambda: ib.reg_tensor(w.pd, None, 0), "raise")
    add("reg_tensor(closed PD)", lambda: ib.reg_tensor(cw.pd, bytearray(8), 0), "closed")
    add(
        "reg_dmabuf_mr(fd of a regular file)",
        lambda: w.pd.reg_dmabuf_mr(0, 4096, 0, w.ch.fd, 0),
        "raise",
    )
    add("reg_dmabuf_mr(closed fd)", lambda: w.pd.reg_dmabuf_mr(0, 4096, 0, 2**30, 0), "raise")
    add("create_srq(max_sge huge)", lambda: w.pd.create_srq(max_wr=8, max_sge=2**31), "raise")
    add("create_srq(max_wr huge)", lambda: w.pd.create_srq(max_wr=2**31), "raise")
    add("SRQ.modify() with nothing", lambda: w.srq.modify(), "raise")
    add("SRQ.modify(max_wr larger than the device)", lambda: w.srq.modify(max_wr=2**31), "raise")
    add("query_port(port 2)", lambda: w.ctx.query_port(2), "raise")
    add("query_gid(index past the table)", lambda: w.ctx.query_gid(PORT, 10**6), "raise")
    add("query_pkey(index past the table)", lambda: w.ctx.query_pkey(PORT, 10**6), "raise")
    add("Context.name after close", lambda: cw.ctx.name, "ok")
    add("repr of every closed handle", lambda: [repr(getattr(cw, a)) for a in HANDLE_ATTRS], "ok")
    add("repr of every open handle", lambda: [repr(getattr(w, a)) for a in HANDLE_ATTRS], "ok")
    add("PD() direct", lambda: ib.PD(), "raise")
    add("QP() direct", lambda: ib.QP(), "raise")
    add("AsyncEvent() direct", lambda: ib.AsyncEvent(), "raise")
    add("Context(None)", lambda: ib.Context(None), "raise")
    add("Context(no such device)", lambda: ib.Context("no_such_dev0"), "raise")
    add("Context(name with NUL)", lambda: ib.Context("rxe\0"), "raise")

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
        qp = pd.create_qp(IA(send_cq=cq))
        for o in (qp, cq, pd, ctx):
            o.close()
        failures = []
        for call in (
            lambda: ctx.alloc_pd(),
            lambda: ctx.create_cq(4),
            lambda: pd.create_qp(IA(send_cq=cq)),
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

    # Python code that runs inside a call closes what the call uses.
    def evil_init_attr(which):
        ctx = w.ctx
        pd = ctx.alloc_pd()
        cq1, cq2 = ctx.create_cq(4), ctx.create_cq(4)
        srq = pd.create_srq(max_wr=4) if which == "srq" else None
        target = {"pd": pd, "send_cq": cq1, "recv_cq": cq2, "srq": srq}[which]
        base = IA(send_cq=cq1, recv_cq=cq2, srq=srq)
        # The last attribute read_init_attr reads closes the target.
        rec = evil_record(base, "max_inline_data", Closer(target))
        return pd.create_qp(rec)

    for which in ("pd", "send_cq", "recv_cq", "srq"):
        add(
            f"create_qp: init_attr attribute closes the {which} mid-call",
            lambda which=which: evil_init_attr(which),
            "closed",
        )

    def evil_sig_all():
        pd = w.ctx.alloc_pd()
        cq = w.ctx.create_cq(4)
        return pd.create_qp(evil_record(IA(send_cq=cq), "x", Closer(), sq_sig_all=EvilBool(cq)))

    add("create_qp: sq_sig_all.__bool__ closes the CQ", evil_sig_all, "closed")

    def evil_ah(field):
        pd = w.ctx.alloc_pd()
        return pd.create_ah(evil_record(w.ah_attr, field, Closer(pd)))

    for field in ("dgid", "is_global", "sgid_index"):
        add(f"create_ah: reading attr.{field} closes the PD", lambda f=field: evil_ah(f), "closed")

    def evil_ah_gid():
        pd = w.ctx.alloc_pd()
        return pd.create_ah(evil_record(w.ah_attr, "", Closer(), dgid=EvilGid(w.gid.raw, pd)))

    add("create_ah: Gid(dgid) conversion closes the PD", evil_ah_gid, "closed")

    def evil_to_rtr_gid():
        cq = w.ctx.create_cq(4)
        qp = w.pd.create_qp(IA(send_cq=cq))
        qp.to_init(PORT, 0)
        remote = evil_record(w.info, "", Closer(), gid=EvilGid(w.gid.raw, qp))
        return qp.to_rtr(remote, sgid_index=GID_INDEX, port=PORT, mtu=1)

    add("to_rtr: Gid(remote.gid) conversion closes the QP", evil_to_rtr_gid, "closed")

    def evil_req_notify():
        cq = w.ctx.create_cq(4)
        return cq.req_notify(solicited_only=EvilBool(cq))

    add("req_notify: solicited_only.__bool__ closes the CQ", evil_req_notify, "closed")

    def evil_to_rtr(field):
        cq = w.ctx.create_cq(4)
        qp = w.pd.create_qp(IA(send_cq=cq))
        qp.to_init(PORT, 0)
        remote = evil_record(w.info, field, Closer(qp))
        return qp.to_rtr(remote, sgid_index=GID_INDEX)

    for field in ("qp_num", "gid", "mtu"):
        add(
            f"to_rtr: reading remote.{field} closes the QP",
            lambda f=field: evil_to_rtr(f),
            "closed",
        )

    def evil_to_rtr_port():
        cq = w.ctx.create_cq(4)
        qp = w.pd.create_qp(IA(send_cq=cq))
        qp.to_init(PORT, 0)
        remote = evil_record(w.info, "gid", Closer(qp))
        return qp.to_rtr(remote, sgid_index=GID_INDEX, port=PORT, mtu=1)

    add("to_rtr(port=, mtu=): reading remote.gid closes the QP", evil_to_rtr_port, "closed")

    def evil_modify():
        cq = w.ctx.create_cq(4)
        qp = w.pd.create_qp(IA(send_cq=cq))
        return qp.modify(ib.QPAttrMask.AV, ah_attr=evil_record(w.ah_attr, "dgid", Closer(qp)))

    add("modify: reading ah_attr.dgid closes the QP", evil_modify, "closed")

    def evil_modify_cap():
        cq = w.ctx.create_cq(4)
        qp = w.pd.create_qp(IA(send_cq=cq))
        cap = evil_record(qp.cap, "max_inline_data", Closer(qp))
        return qp.modify(ib.QPAttrMask.CAP, cap=cap)

    add("modify: reading cap.max_inline_data closes the QP", evil_modify_cap, "closed")

    # A finalizer run by a GC pass inside a factory closes its parent.
    def gc_finalizer(factory_name):
        ctx = ib.Context(device)
        pd = ctx.alloc_pd()
        cq = ctx.create_cq(4)
        target = ctx if factory_name == "create_cq" else pd
        calls = {
            "create_cq": lambda: ctx.create_cq(4),
            "create_srq": lambda: pd.create_srq(max_wr=4),
            "create_qp": lambda: pd.create_qp(IA(send_cq=cq)),
        }
        if factory_name == "create_cq":
            cq.close()
            pd.close()
        results = []
        old = gc.get_threshold()
        try:
            for k in range(1, 40):

                class Cycle:
                    def __del__(self, t=target):
                        try:
                            t.close()
                        except ib.VerbsError:
                            pass

                c = Cycle()
                c.self = c
                del c
                gc.set_threshold(1 + k % 3)
                try:
                    obj = calls[factory_name]()
                    results.append("made")
                    obj.close()
                except ib.VerbsError as e:
                    results.append(e.errno)
                finally:
                    gc.set_threshold(*old)
                if target.closed:
                    break
        finally:
            gc.set_threshold(*old)
        return results

    for fname in ("create_cq", "create_srq", "create_qp"):
        add(
            f"{fname}: a GC finalizer closes the parent mid-call",
            lambda f=fname: gc_finalizer(f),
            "any",
        )
    add("AsyncEvent: lifecycle of a CQ_ERR event", lambda: async_event_case(device), "ok")
    cases += cm_cases(w, ow)
    cases += mw_cases(w, cw, ow)
    cases += domain_cases(w, ow)
    return cases


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


# ---------------------------------------------------------------------------
# Host cases: no device needed
# ---------------------------------------------------------------------------


def host_cases():
    cases = []

    def add(name, fn, expect):
        cases.append((name, fn, expect))

    sge = ib.SGE(0x1000, 64, lkey=1)
    swr_params = [
        ("wr_id", U64),
        ("send_flags", U32),
        ("remote_addr", U64),
        ("rkey", U32),
        ("compare_add", U64),
        ("swap", U64),
        ("remote_qpn", dict(lo=0, hi=0xFFFFFF)),
        ("remote_qkey", U32),
    ]
    for name, rng in swr_params:
        p = P(name, 0, kw=True, **rng)
        for lbl, v, expect in bad_values(p, None, None, None, None):
            add(f"SendWR({name}={lbl})", lambda n=name, v=v: ib.SendWR(**{n: v}), expect)
            add(f"SendWR.{name} = {lbl}", lambda n=name, v=v: setattr(ib.SendWR(), n, v), expect)
    for lbl, v, _ in bad_values(P("opcode", 0, lo=0), None, None, None, None):
        add(f"SendWR(opcode={lbl})", lambda v=v: ib.SendWR(opcode=v), "raise")
    add("SendWR(opcode=99)", lambda: ib.SendWR(opcode=99), "raise")
    add("SendWR(imm_data without an IMM opcode)", lambda: ib.SendWR(imm_data=1), "raise")
    add(
        "SendWR(imm_data=2**32)",
        lambda: ib.SendWR(opcode=ib.WROpcode.SEND_WITH_IMM, imm_data=2**32),
        "raise",
    )
    add(
        "SendWR(imm_data='x')",
        lambda: ib.SendWR(opcode=ib.WROpcode.SEND_WITH_IMM, imm_data="x"),
        "raise",
    )
    # sg_list=None is the published package's default (no SGEs):
    # tests/host/test_compat.py checks what it builds.
    add("SendWR(sg_list=None)", lambda: ib.SendWR(sg_list=None), "any")
    add("RecvWR(sg_list=None)", lambda: ib.RecvWR(sg_list=None), "any")
    for lbl, v in [
        ("int", 1),
        ("str", "abc"),
        ("bytes", b"ab"),
        ("list of int", [1]),
        ("list with None", [sge, None]),
        ("dict", {1: 2}),
    ]:
        add(f"SendWR(sg_list={lbl})", lambda v=v: ib.SendWR(sg_list=v), "raise")
        add(f"RecvWR(sg_list={lbl})", lambda v=v: ib.RecvWR(sg_list=v), "raise")
    # An iterable that raises: its exception comes through unchanged.
    add(
        "SendWR(sg_list=generator raising)",
        lambda: ib.SendWR(sg_list=(1 / 0 for _ in range(1))),
        "propagate",
    )
    add(
        "RecvWR(sg_list=generator raising)",
        lambda: ib.RecvWR(sg_list=(1 / 0 for _ in range(1))),
        "propagate",
    )
    add("SendWR(sg_list of 100000 SGEs)", lambda: ib.SendWR(sg_list=[sge] * 100000), "any")
    add("SendWR(ah=int)", lambda: ib.SendWR(ah=1), "raise")
    add("SendWR(ah=object())", lambda: ib.SendWR(ah=object()), "raise")
    add("SendWR.sg_list = ...", lambda: setattr(ib.SendWR(), "sg_list", [sge]), "attr")
    add("SendWR.opcode = None", lambda: setattr(ib.SendWR(), "opcode", None), "raise")
    # Allowed so that imm_data can be set before the opcode; unused by SEND.
    add("SendWR.imm_data on SEND", lambda: setattr(ib.SendWR(), "imm_data", 5), "any")
    add("SendWR.ah = 5", lambda: setattr(ib.SendWR(), "ah", 5), "raise")
    add("del SendWR.wr_id", lambda: delattr(ib.SendWR(), "wr_id"), "raise_or_attr")
    for lbl, v, expect in bad_values(P("wr_id", 0, **U64), None, None, None, None):
        add(f"RecvWR(wr_id={lbl})", lambda v=v: ib.RecvWR(wr_id=v), expect)
        add(f"RecvWR.wr_id = {lbl}", lambda v=v: setattr(ib.RecvWR(), "wr_id", v), expect)
    add("RecvWR(too many args)", lambda: ib.RecvWR(1, [], 3), "raise")
    # SendWRChain / RecvWRChain construction
    for kind, wr in (("SendWRChain", ib.SendWR), ("RecvWRChain", ib.RecvWR)):
        cls = getattr(ib, kind)
        for lbl, v in [
            ("None", None),
            ("int", 1),
            ("str", "ab"),
            ("bytes", b"ab"),
            ("empty list", []),
            ("list with None", [wr(), None]),
            ("dict", {1: 2}),
            ("one WR", wr()),
            ("the other kind", [ib.RecvWR() if wr is ib.SendWR else ib.SendWR()]),
            ("the same WR twice", (lambda x: [x, x])(wr())),
        ]:
            add(f"{kind}({lbl})", lambda c=cls, v=v: c(v), "raise")
        add(f"{kind}(generator raising)", lambda c=cls: c(1 / 0 for _ in range(1)), "propagate")
        add(f"{kind}() without arguments", lambda c=cls: c(), "raise")
        add(f"{kind}(too many arguments)", lambda c=cls, wr=wr: c([wr()], 1), "raise")
        add(
            f"{kind}(a member of another chain)",
            lambda c=cls, wr=wr: (lambda x: (c([x]), c([x])))(wr()),
            "raise",
        )
        add(
            f"{kind}.released = True",
            lambda c=cls, wr=wr: setattr(c([wr()]), "released", True),
            "attr",
        )
        add(f"{kind}[out of range]", lambda c=cls, wr=wr: c([wr()])[5], "index")
        add(
            f"{kind}[after release]",
            lambda c=cls, wr=wr: (lambda x: (x.release(), x[0]))(c([wr()])),
            "index",
        )
        add(
            f"{kind}.release() twice",
            lambda c=cls, wr=wr: (lambda x: (x.release(), x.release()))(c([wr()])),
            "ok",
        )
    # SGE
    for name, (valid, rng) in {
        "mr_or_addr": (0x1000, U64),
        "length": (64, U32),
        "lkey": (1, U32),
        "offset": (0, U64),
    }.items():
        p = P(name, valid, **rng)
        for lbl, v, expect in bad_values(p, None, None, None, None):
            args = {"mr_or_addr": 0x1000, "length": 64, "lkey": 1, "offset": 0}
            args[name] = v

            def fn(args=args):
                a = dict(args)
                return ib.SGE(a.pop("mr_or_addr"), a.pop("length"), **a)

            add(f"SGE({name}={lbl})", fn, "raise")
    add("SGE(address + offset overflows)", lambda: ib.SGE(2**64 - 1, 8, lkey=1, offset=1), "raise")
    # WC
    add("WC()", lambda: ib.WC(), "any")
    for field in (
        "wr_id",
        "status",
        "opcode",
        "byte_len",
        "qp_num",
        "wc_flags",
        "vendor_err",
        "imm_data",
        "src_qp",
        "pkey_index",
        "slid",
        "sl",
        "dlid_path_bits",
    ):
        for lbl, v in [("None", None), ("-1", -1), ("2**64", 2**64), ("str", "x"), ("float", 1.5)]:
            add(f"WC({field}={lbl})", lambda f=field, v=v: ib.WC(**{f: v}), "raise")
    add("WC(unknown field)", lambda: ib.WC(nope=1), "raise")
    add(
        "WC(status=unknown).raise_for_status()",
        lambda: ib.WC(status=200).raise_for_status(),
        "completion",
    )
    add("WC(opcode=unknown) repr", lambda: repr(ib.WC(status=5, opcode=999)), "ok")
    add("WC.wr_id = 1", lambda: setattr(ib.WC(), "wr_id", 1), "attr")
    # Module functions
    for fn in ("wc_status_str", "event_type_str"):
        for lbl, v, expect in bad_values(P("v", 0, **I32), None, None, None, None):
            add(f"{fn}({lbl})", lambda fn=fn, v=v: getattr(ib._ibverbs, fn)(v), expect)
        add(f"{fn}(12345)", lambda fn=fn: getattr(ib._ibverbs, fn)(12345), "ok")
    add("is_fork_initialized()", lambda: ib.is_fork_initialized(), "any")
    add("fork_init(1)", lambda: ib.fork_init(1), "raise")
    # Records and helpers
    add("Gid(None)", lambda: ib.Gid(None), "raise")
    add("Gid(15 bytes)", lambda: ib.Gid(b"x" * 15), "raise")
    add("Gid('nonsense')", lambda: ib.Gid("nonsense"), "raise")
    add("Gid(1)", lambda: ib.Gid(1), "raise")
    add("Gid.raw = ...", lambda: setattr(ib.Gid(), "raw", b""), "attr")
    add("AHAttr(dgid='x')", lambda: ib.AHAttr(dgid="x"), "raise")
    add("QPInfo(qp_num=2**24)", lambda: ib.QPInfo(2**24, 0, 0, ib.Gid(), 1, 1), "raise")
    add("QPInfo(port=0)", lambda: ib.QPInfo(1, 0, 0, ib.Gid(), 0, 1), "raise")
    add("QPInfo(mtu=6)", lambda: ib.QPInfo(1, 0, 0, ib.Gid(), 1, 6), "raise")
    add("QPInfo(gid=None)", lambda: ib.QPInfo(1, 0, 0, None, 1, 1), "raise")
    add("QPInfo.from_bytes(None)", lambda: ib.QPInfo.from_bytes(None), "raise")
    add("QPInfo.from_bytes(str)", lambda: ib.QPInfo.from_bytes("x" * 28), "raise")
    add("QPInfo.from_bytes(27 bytes)", lambda: ib.QPInfo.from_bytes(b"\0" * 27), "raise")
    add("QPInfo.from_bytes(29 bytes)", lambda: ib.QPInfo.from_bytes(b"\0" * 29), "raise")
    add("QPInfo.from_bytes(28 zero bytes)", lambda: ib.QPInfo.from_bytes(b"\0" * 28), "raise")
    add(
        "connect_rc(None, ...)",
        lambda: ib.connect_rc(None, None, port=1, sgid_index=0, access=0),
        "raise",
    )
    add("tensor_addr_len(None)", lambda: ib.tensor_addr_len(None), "raise")
    add("tensor_addr_len(b'')", lambda: ib.tensor_addr_len(b""), "raise")
    add(
        "tensor_addr_len(non-contiguous memoryview)",
        lambda: ib.tensor_addr_len(memoryview(bytearray(16))[::2]),
        "raise",
    )
    add("Device(None)", lambda: ib.Device(None), "raise")
    add("Context(None)", lambda: ib.Context(None), "raise")
    add("Context(1)", lambda: ib.Context(1), "raise")
    add("Context(no such device)", lambda: ib.Context("no_such_dev0"), "raise")
    add("Context(very long name)", lambda: ib.Context("x" * 100000), "raise")
    add("Context(name with NUL)", lambda: ib.Context("rxe\0"), "raise")
    add("Context(surrogates)", lambda: ib.Context("\udcff"), "raise")
    add("Device('nope').open()", lambda: ib.Device("no_such_dev0").open(), "raise")
    add("get_device_list()", lambda: ib.get_device_list(), "ok")
    for tname in ("PD", "MR", "CQ", "CompChannel", "QP", "SRQ", "AH", "AsyncEvent"):
        add(f"{tname}() direct", lambda t=tname: getattr(ib, t)(), "raise")
    return cases


def mw_cases(w, cw, ow):
    """Memory windows: closed MWs and MRs inside bind WRs and records,
    wrong types, a type 2 window given to ibv_bind_mw, the MW's rkey."""
    cases = []

    def add(name, fn, expect):
        cases.append((name, fn, expect))

    BIND = ib.WROpcode.BIND_MW

    def bind_wr(mw=None, info=None, **kw):
        return ib.SendWR(opcode=BIND, mw=mw or w.mw, rkey=1, bind_info=info or w.bind_info, **kw)

    add("SendWR(BIND_MW)", bind_wr, "ok")
    add("SendWR(BIND_MW, closed MW)", lambda: bind_wr(cw.mw), "closed")
    add(
        "SendWR(BIND_MW, bind_info with a closed MR)",
        lambda: bind_wr(info=ib.MWBindInfo(cw.mr, 0, 64, 0)),
        "closed",
    )
    add("SendWR(BIND_MW, no mw)", lambda: ib.SendWR(opcode=BIND, bind_info=w.bind_info), "raise")
    add("SendWR(BIND_MW, no bind_info)", lambda: ib.SendWR(opcode=BIND, mw=w.mw), "raise")
    add("SendWR(BIND_MW, mw=an MR)", lambda: bind_wr(w.mr), "raise")
    add("SendWR(BIND_MW, bind_info=an MR)", lambda: bind_wr(info=w.mr), "raise")
    add(
        "SendWR(BIND_MW, bind_info.mr=None)",
        lambda: bind_wr(info=ib.MWBindInfo(None, 0, 0)),
        "raise",
    )
    add(
        "SendWR(BIND_MW, bind_info.mr=an MW)",
        lambda: bind_wr(info=ib.MWBindInfo(w.mw, 0, 0)),
        "raise",
    )
    add(
        "SendWR(BIND_MW, bind_info.length=2**64)",
        lambda: bind_wr(info=ib.MWBindInfo(w.mr, 0, 2**64)),
        "raise",
    )
    add(
        "SendWR(BIND_MW, bind_info.mw_access_flags=-1)",
        lambda: bind_wr(info=ib.MWBindInfo(w.mr, 0, 64, -1)),
        "raise",
    )
    add("SendWR(BIND_MW, sg_list)", lambda: bind_wr(sg_list=[w.sge]), "raise")
    add(
        "SendWR(RDMA_WRITE, mw)",
        lambda: ib.SendWR(opcode=ib.WROpcode.RDMA_WRITE, mw=w.mw, bind_info=w.bind_info),
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
        (mw if which == "mw" else mr).close()
        try:
            w.qp.post_send(wr)
        finally:
            mw.close()
            mr.close()

    add("post_send(BIND_MW whose MW was closed)", lambda: post_closed("mw"), "closed")
    add("post_send(BIND_MW whose MR was closed)", lambda: post_closed("mr"), "closed")
    add("bind_mw(a type 2 MW)", lambda: w.qp.bind_mw(w.mw, w.mw_bind), "raise")
    add("bind_mw(closed MW)", lambda: w.qp.bind_mw(cw.mw1, w.mw_bind), "closed")
    add(
        "bind_mw(MWBindInfo with a closed MR)",
        lambda: w.qp.bind_mw(w.mw1, ib.MWBind(ib.MWBindInfo(cw.mr, 0, 64, 0))),
        "closed",
    )
    add(
        "bind_mw(MWBindInfo without an MR)",
        lambda: w.qp.bind_mw(w.mw1, ib.MWBind(ib.MWBindInfo(None, 0, 0))),
        "raise",
    )
    add("bind_mw(a bare MWBindInfo)", lambda: w.qp.bind_mw(w.mw1, w.bind_info), "raise")
    add(
        "bind_mw(MWBind(wr_id=-1))",
        lambda: w.qp.bind_mw(w.mw1, ib.MWBind(w.bind_info, wr_id=-1)),
        "raise",
    )
    add(
        "bind_mw(MWBind(bind_info=None))",
        lambda: w.qp.bind_mw(w.mw1, ib.MWBind(None)),
        "raise",
    )
    add("bind_mw on a closed QP", lambda: cw.qp.bind_mw(w.mw1, w.mw_bind), "closed")
    for lbl, v in (("-1", -1), ("2**32", 2**32), ("str", "1"), ("None", None)):
        add(f"MW.rkey = {lbl}", lambda v=v: setattr(w.mw, "rkey", v), "raise")
    add("MW.rkey = 1 after close", lambda: setattr(cw.mw, "rkey", 1), "closed")
    add("del MW.rkey", lambda: delattr(w.mw, "rkey"), "attr")
    add("MW() direct", lambda: ib.MW(), "raise")
    for lbl, v in (("-1", -1), ("2**32", 2**32), ("str", "1"), ("None", None)):
        add(f"inc_rkey({lbl})", lambda v=v: ib.inc_rkey(v), "raise")
    add("inc_rkey(0xff)", lambda: ib.inc_rkey(0xFF), "ok")
    return cases


CM_ADDR = os.environ.get("IBVERBS_TEST_CM_SERVER", "198.18.0.1")


def domain_cases(w, ow):
    """Flow specs that point to a Counters or FlowAction object: anything
    else in their place, or their bytes without the FlowAttr, raise before
    the provider sees a pointer; a parent domain in a CQInitAttrEx."""
    cases = []

    def add(name, fn, expect):
        cases.append((name, fn, expect))

    for label, spec in (
        ("Count", ib.FlowSpecActionCount),
        ("Handle", ib.FlowSpecActionHandle),
    ):
        for what, obj in (("None", None), ("a PD", w.pd), ("an int", 1), ("a QP", w.qp)):
            attr = ib.FlowAttr(port=PORT, specs=[spec(obj)])
            add(
                f"create_flow(FlowSpecAction{label}({what}))",
                lambda a=attr: w.qp.create_flow(a),
                "raise",
            )
        raw = ib.FlowAttr(port=PORT, specs=[spec(None)]).to_bytes()
        add(
            f"create_flow(bytes of FlowSpecAction{label})",
            lambda r=raw: w.qp.create_flow(r),
            "raise",
        )
    for what, pdom in (("a PD", w.pd), ("an int", 1), ("a CQ", w.cq)):
        add(
            f"create_cq_ex(parent_domain={what})",
            lambda p=pdom: w.ctx.create_cq_ex(ib.CQInitAttrEx(4, parent_domain=p)),
            "raise",
        )
    add(
        "alloc_parent_domain(td=a PD)",
        lambda: w.ctx.alloc_parent_domain(w.pd, td=ow.pd),
        "raise",
    )
    for what, bad in (
        ("key=str", {"key": "k"}),
        ("key of 33 bytes", {"key": b"k" * 33}),
        ("empty key", {"key": b""}),
        ("spi=-1", {"spi": -1}),
        ("spi=2**32", {"spi": 2**32}),
        ("esn=2**32", {"esn": 2**32}),
        ("replay_window=1.5", {"replay_window": 1.5}),
        ("iv=2**64", {"key": b"k" * 16, "iv": 2**64}),
    ):
        add(
            f"create_flow_action_esp({what})",
            lambda b=bad: w.ctx.create_flow_action_esp(ib.FlowActionESPAttr(**b)),
            "raise",
        )
    for tname in ("TD", "ParentDomain", "Counters", "CompCntr", "FlowAction"):
        add(f"{tname}() direct", lambda t=tname: getattr(ib, t)(), "raise")
    return cases


def cm_cases(w, ow):
    """CMID and CMListener: closed objects, PDs/CQs of another Context, a
    second QP, calls in the wrong state.  Resolving needs no listener."""
    if not ib.has_rdmacm():
        return []
    cases = []

    def add(name, fn, expect):
        cases.append((name, fn, expect))

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

    def closed_cmid():
        c = ib.CMID.resolve(CM_ADDR, 7998)
        c.close()
        return c

    def closed_listener():
        lst = ib.CMListener(0)
        lst.close()
        return lst

    for n, call in [
        ("connect", lambda c: c.connect()),
        ("accept", lambda c: c.accept()),
        ("reject", lambda c: c.reject()),
        ("disconnect", lambda c: c.disconnect()),
        ("get_event", lambda c: c.get_event(timeout=0)),
        ("create_qp", lambda c: c.create_qp(w.pd, ib.QPInitAttr(send_cq=w.cq))),
        ("fd", lambda c: c.fd),
        ("context", lambda c: c.context),
        ("__enter__", lambda c: c.__enter__()),
    ]:
        add(f"CMID.{n} after close", lambda call=call: call(closed_cmid()), "closed")
    add("CMID.close() after close", lambda: closed_cmid().close(), "ok")
    for n, call in [
        ("get_request", lambda c: c.get_request(timeout=0)),
        ("get_event", lambda c: c.get_event(timeout=0)),
        ("fd", lambda c: c.fd),
    ]:
        add(f"CMListener.{n} after close", lambda call=call: call(closed_listener()), "closed")
    add(
        "CMID.create_qp(pd=another Context's)",
        lambda: cm.get().cmid.create_qp(ow.pd, ib.QPInitAttr(send_cq=ow.cq)),
        "raise",
    )
    add(
        "CMID.create_qp(pd=a plain Context's PD)",
        lambda: cm.get().cmid.create_qp(w.pd, cm.attr()),
        "raise",
    )
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
    add("CMID.create_qp(pd=None)", lambda: cm.get().cmid.create_qp(None, cm.attr()), "raise")
    add("CMID.create_qp(init_attr=None)", lambda: cm.get().cmid.create_qp(cm.pd, None), "raise")
    add(
        "CMID.create_qp(qp_type=UD)",
        lambda: cm.get().cmid.create_qp(cm.pd, cm.attr(qp_type=ib.QPType.UD)),
        "raise",
    )
    add("CMID.connect before create_qp", lambda: cm.get().cmid.connect(timeout=1), "raise")
    add("CMID.accept on the active side", lambda: cm.get().cmid.accept(), "raise")
    add("CMID.reject on the active side", lambda: cm.get().cmid.reject(), "raise")
    add("CMID.disconnect when not connected", lambda: cm.get().cmid.disconnect(), "ok")
    add("CMID.connect(private_data too long)", lambda: cm.get().cmid.connect(b"x" * 256), "raise")
    add("CMID.connect(private_data=str)", lambda: cm.get().cmid.connect("x"), "raise")
    add(
        "CMID.connect(initiator_depth=256)",
        lambda: cm.get().cmid.connect(initiator_depth=256),
        "raise",
    )
    add("CMID.connect(timeout=-1)", lambda: cm.get().cmid.connect(timeout=-1), "raise")
    add("CMID.get_event(timeout='1')", lambda: cm.get().cmid.get_event(timeout="1"), "raise")
    add("CMID.context.close()", lambda: cm.get().cmid.context.close(), "raise")

    def first_qp():
        cm.qp = cm.get().cmid.create_qp(cm.pd, cm.attr())  # kept open

    add("CMID.create_qp(valid)", first_qp, "ok")
    add("CMID.create_qp a second QP", lambda: cm.get().cmid.create_qp(cm.pd, cm.attr()), "raise")
    add("CMID.close() with its QP open", lambda: cm.get().cmid.close(), "raise")
    add("CMID.qp.close()", lambda: cm.get().cmid.qp.close(), "ok")
    add("CMID.close() with its PD open", lambda: cm.get().cmid.close(), "raise")
    add(
        "CMID resolve/close, then its Context",
        lambda: (lambda c: (c.close(), c.context))(ib.CMID.resolve(CM_ADDR, 7997)),
        "closed",
    )
    for tname in ("CMID", "CMEvent"):
        add(f"{tname}() direct", lambda t=tname: getattr(ib, t)(), "raise")
    # The started halves and the non-blocking steps (ibverbs.aio's).
    for n, call in [
        ("start_connect", lambda c: c.start_connect()),
        ("start_accept", lambda c: c.start_accept()),
        ("poll_established", lambda c: c.poll_established()),
        ("poll_event", lambda c: c.poll_event()),
    ]:
        add(f"CMID.{n} after close", lambda call=call: call(closed_cmid()), "closed")
    for n, call in [
        ("poll_request", lambda c: c.poll_request()),
        ("poll_event", lambda c: c.poll_event()),
    ]:
        add(f"CMListener.{n} after close", lambda call=call: call(closed_listener()), "closed")
    add("CMID.start_connect before create_qp", lambda: cm.get().cmid.start_connect(), "raise")
    add("CMID.start_connect(timeout=1)", lambda: cm.get().cmid.start_connect(timeout=1), "raise")
    add(
        "CMID.start_connect(private_data too long)",
        lambda: cm.get().cmid.start_connect(b"x" * 57),
        "raise",
    )
    add(
        "CMID.start_connect(rnr_retry_count=-1)",
        lambda: cm.get().cmid.start_connect(rnr_retry_count=-1),
        "raise",
    )
    add("CMID.start_accept on the active side", lambda: cm.get().cmid.start_accept(), "raise")
    add("CMID.start_accept(private_data=1)", lambda: cm.get().cmid.start_accept(1), "raise")
    add("CMID.poll_established, none started", lambda: cm.get().cmid.poll_established(), "raise")
    add("CMID.poll_event with none ready", lambda: cm.get().cmid.poll_event(), "ok")
    add("CMID.poll_event(1)", lambda: cm.get().cmid.poll_event(1), "raise")

    def listener_polls():
        with ib.CMListener(0) as lst:
            assert lst.poll_request() is None and lst.poll_event() is None

    add("CMListener.poll_request/poll_event with none ready", listener_polls, "ok")
    return cases


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


def judge(expect, exc, result):
    """(ok, why) for one outcome."""
    if exc is None:
        if expect in ("ok", "any"):
            return True, ""
        return False, f"returned {result!r:.200} where an exception was expected"
    if expect == "attr":
        return isinstance(exc, AttributeError), ""
    if expect == "raise_or_attr":
        return isinstance(exc, ALLOWED + (AttributeError,)), ""
    if expect == "completion":
        return isinstance(exc, ib.CompletionError), ""
    if expect == "index":
        return isinstance(exc, IndexError), ""
    if expect == "propagate":
        return isinstance(exc, ZeroDivisionError), ""
    if expect == "ok":
        return False, "the valid call raised"
    if not isinstance(exc, ALLOWED):
        return False, f"{type(exc).__name__} is not TypeError/ValueError/OverflowError/VerbsError"
    if expect == "closed":
        if isinstance(exc, ValueError) or (
            isinstance(exc, ib.VerbsError) and exc.errno == errno.EBADF
        ):
            return True, ""
        return False, "use of a closed handle must raise VerbsError(EBADF)"
    return True, ""


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
