"""The misuse cases of ibverbs.efa (misuse_cases.py runs them).

libefa's direct verbs.  In the device group the REAL libefa (Debian 12's:
nodes to EFA_1.2) refuses every rxe object (EOPNOTSUPP) or lacks the
function (EOPNOTSUPP naming its release): the valid calls may raise; every
perturbed one must raise before libefa.  The "efa" group runs them with
the fake libefa.so.1 (tests/fakes/efa/, named by IBVERBS_LIBEFA), which
answers, and whose create_qp_ex and create_cq make rxe objects: efa.QP and
efa.CQ on a live device, with every public member after close.  The host
group has no handle to give: the first argument's bad values (None, wrong
types) raise before libefa loads, and the Python helpers run.
"""

from __future__ import annotations

import os

import ibverbs as ib
from ibverbs import efa
from misuse_core import Cases, D, M, bad_values, bind_methods, member_cases
from misuse_world import worlds


def efa_functions(valid):
    """(function, D) of each C function; valid: what its valid call does."""
    ctx, pd = (lambda w: w.ctx), (lambda w: w.pd)
    return [
        (efa.query_device, D(context=ctx, valid=valid)),
        (efa.get_max_sq_depth, D(context=ctx, max_send_sge=1, valid=valid)),
        (efa.get_max_rq_depth, D(context=ctx, max_recv_sge=1, valid=valid)),
        (efa.query_ah, D(ah=lambda w: w.ah, valid=valid)),
        (efa.query_mr, D(mr=lambda w: w.mr, valid=valid)),
        # the fake makes it through libibverbs' ibv_create_comp_cntr,
        # which rxe refuses (EOPNOTSUPP), as the real libefa does
        (efa.create_comp_cntr, D(context=ctx, valid="raise" if valid == "raise" else "any")),
        (
            efa.create_driver_qp,
            D(pd=pd, init_attr=lambda w: ib.QPInitAttr(send_cq=w.cq, recv_cq=w.cq), valid=valid),
        ),
        (efa.create_qp, D(pd=pd, init_attr=lambda w: ib.QPInitAttrEx(w.cq), valid=valid)),
        (efa.create_cq, D(context=ctx, init_attr=lambda w: ib.CQInitAttrEx(4), valid=valid)),
    ]


def efa_function_cases(cases, w, others, valid):
    for fn, spec in efa_functions(valid):
        label = "efa." + fn.__name__.removeprefix("_efa_")
        cases.method(label, fn, None, spec.bind(fn.__name__), w, others)
    cases.method("efa.libefa_status", efa.libefa_status, None, M(valid="ok"), w)


# efa.QP's and efa.CQ's own methods (outside a batch: EINVAL; outside a
# start_poll() session: ValueError); the inherited ones are QPEx's and
# CQEx's, exercised on the world's qpx and cqx (the same C code), and here
# after close.
EFA_OWN = {
    "efa.QP": {
        "wr_set_processing_hints": D(hints=efa.ProcessingHint.BURST_PPS_SENSITIVE),
        "query_wqs": M(valid="ok"),
    },
    "efa.CQ": {"read_sgid": M(), "is_unsolicited": M(), "query": M(valid="ok")},
}


def efa_objects(w):
    cq = efa.create_cq(
        w.ctx,
        ib.CQInitAttrEx(16, wc_flags=ib.CreateCQWCFlags.BYTE_LEN | ib.CreateCQWCFlags.QP_NUM),
        efa.WCFlags.WITH_SGID,
    )
    qp = efa.create_qp(
        w.pd,
        ib.QPInitAttrEx(w.cq, send_ops_flags=ib.QPCreateSendOpsFlags.SEND),
        wr_flags=efa.WRFlags.WITH_PROCESSING_HINTS,
    )
    return {"efa.QP": qp, "efa.CQ": cq}


def efa_fake_cases(device, qpex, cqex):
    """efa's functions against the fake libefa, and efa.QP and efa.CQ
    (made by it over rxe; the tables of their bases qpex, cqex) with every
    public member after close."""
    if not os.environ.get("IBVERBS_LIBEFA"):
        raise SystemExit("the efa group needs IBVERBS_LIBEFA naming the fake libefa.so.1")
    w, *others = worlds(device)
    cases = Cases()
    objs, closed = efa_objects(w), efa_objects(w)
    for o in closed.values():
        o.close()
    covered = {}
    for tname, base in (("efa.QP", qpex), ("efa.CQ", cqex)):
        obj, own = objs[tname], EFA_OWN[tname]
        # declared as EfaQP.<name> (the type's __name__ is "QP")
        bound = bind_methods(cases, tname, obj, {**base, **own}, prefix="Efa")
        covered[tname] = member_cases(cases, tname, obj, closed[tname], bound, w)
        for n in own:
            cases.method(tname, obj, n, bound[n], w, others)
    efa_function_cases(cases, w, others, "ok")
    return cases, covered


def efa_host_cases(cases):
    """ibverbs.efa's Python helpers; its C functions' arguments with no
    handle to give (None, wrong types) raise before libefa loads."""
    add, each = cases.add, cases.each
    add("efa.libefa_status()", efa.libefa_status, "ok")
    for fn, spec in efa_functions("raise"):
        label = "efa." + fn.__name__.removeprefix("_efa_")
        first = spec.bind(fn.__name__).params[0]
        for lbl, v, expect in bad_values(first):
            add(f"{label}({first.name}={lbl})", lambda fn=fn, v=v: fn(v), expect)
        add(f"{label}() without arguments", fn, "raise")
        add(f"{label}(unknown keyword)", lambda fn=fn: fn(no_such_keyword=1), "raise")
    gid = ib.Gid()
    bad = [("None", None), ("23 bytes", b"\0" * 23), ("25 bytes", b"\0" * 25), ("str", "x" * 24)]
    each("efa.EndpointInfo.from_bytes({})", efa.EndpointInfo.from_bytes, bad)
    bad = [("qpn=-1", (gid, -1)), ("qpn=2**32", (gid, 2**32)), ("qpn='1'", (gid, "1"))]
    bad += [
        ("qkey=True", (gid, 1, True)),
        ("gid=None", (None, 1)),
        ("gid=15 bytes", (b"x" * 15, 1)),
    ]
    each("efa.EndpointInfo({})", lambda a: efa.EndpointInfo(*a), bad)
    add("efa.EndpointInfo.qpn = ...", lambda: setattr(efa.EndpointInfo(gid, 1), "qpn", 2), "attr")
    for name in ("write_wrs", "read_wrs"):
        fn = getattr(efa, name)
        bad = [("max_rdma_size=0", (0, 8, 1, 0, 2, 0)), ("length=-1", (0, -1, 1, 0, 2, 8))]
        bad += [("addr=None", (None, 8, 1, 0, 2, 8)), ("lkey='x'", (0, 8, "x", 0, 2, 8))]
        each(f"efa.{name}({{}})", lambda a, fn=fn: fn(*a), bad)
        add(f"efa.{name}(valid)", lambda fn=fn: fn(0, 10, 1, 0, 2, 4), "ok")
    add("efa.create_ah(None, ...)", lambda: efa.create_ah(None, efa.EndpointInfo(gid, 1)), "raise")
    add("efa.create_ah(pd, None)", lambda: efa.create_ah(ib.PD, None), "raise")
