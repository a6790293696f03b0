"""The misuse cases of ibverbs.mlx5 (misuse_cases.py runs them).

Every public function of ibverbs.mlx5 with its valid call, each declared
parameter perturbed and its arity; every method of mlx5.QP and mlx5.CQ
the same way, and every public member of both after close.

Where they run:
- the host group: on the recording double of libibverbs and the fake
  libmlx5.so.1 (tests/fakes/), built into a temporary folder by
  ``use_fakes()`` before ibverbs is imported (IBVERBS_LIBIBVERBS,
  IBVERBS_LIBMLX5); the valid calls succeed there, so mlx5.QP and mlx5.CQ
  exist and their methods are exercised;
- the device group, in the guest: the real libmlx5 on rxe0, which refuses
  every checking entry point (VerbsError); no mlx5.QP or mlx5.CQ can be
  made there, so only the module functions run, on the rxe objects of the
  device worlds.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

FAKES = Path(__file__).resolve().parents[2] / "fakes"


def use_fakes():
    """Point ibverbs at the recording double and the fake libmlx5 (built
    here unless both variables are set already); call before ``import
    ibverbs``.  Returns why not (a string) or None."""
    if os.environ.get("IBVERBS_LIBIBVERBS") and os.environ.get("IBVERBS_LIBMLX5"):
        return None
    sys.path.insert(0, str(FAKES))
    try:
        import mlx5 as fake_mlx5
        import recording

        if recording.compiler() is None:
            return "no C compiler for the fakes"
        out = tempfile.mkdtemp(prefix="ibverbs-misuse-fakes-")
        atexit.register(shutil.rmtree, out, True)
        lib = recording.build(out)
        mlib = fake_mlx5.build(out)
    except Exception as e:  # noqa: BLE001 - any build failure: no mlx5 cases
        return f"the fakes did not build: {e}"
    finally:
        sys.path.remove(str(FAKES))
        for name in ("mlx5", "recording", "cshared"):
            sys.modules.pop(name, None)
    os.environ["IBVERBS_LIBIBVERBS"] = lib
    os.environ["IBVERBS_LIBMLX5"] = mlib
    return None


@contextlib.contextmanager
def _no_cm(ib):
    """misuse_world.World without its CM objects (the double has no CM
    addresses)."""
    saved = ib.has_rdmacm
    ib.has_rdmacm = lambda: False
    try:
        yield
    finally:
        ib.has_rdmacm = saved


def _add_mlx5_objects(w):
    """An mlx5 CQ, a DCI, an RC QP of mlx5.create_qp (the fake makes them)."""
    import ibverbs as ib
    from ibverbs import mlx5
    from misuse_world import QPEX_OPS

    w.m_cq = mlx5.create_cq(w.ctx, ib.CQInitAttrEx(16))
    w.m_dci = mlx5.create_qp(
        w.pd,
        ib.QPInitAttrEx(w.m_cq, send_ops_flags=QPEX_OPS, max_inline_data=64),
        dc_type=mlx5.DCType.DCI,
        log_num_concurent=2,
    )
    w.m_rc = mlx5.create_qp(
        w.pd, ib.QPInitAttrEx(w.m_cq, send_ops_flags=QPEX_OPS, max_inline_data=64)
    )


def host_worlds():
    """(w, closed, other Context, other PD) on the double's fake0, with the
    mlx5 objects; None where the fake libmlx5 is not the one loaded."""
    import ibverbs as ib
    from ibverbs import mlx5
    from misuse_world import OtherPD, World

    if not any(d.name == "fake0" for d in ib.get_device_list()):
        return None
    if not mlx5.library_status()[0] or not mlx5.is_supported("fake0"):
        return None
    with _no_cm(ib):
        w, cw, ow = World("fake0"), World("fake0"), World("fake0")
    opd = OtherPD(w)
    for x in (w, cw, ow):
        _add_mlx5_objects(x)
    # closed as World(close=True) closes, the mlx5 objects first
    for a in "m_rc m_dci m_cq cqx mw1 mw ah qpx ud qp srq mr cq_ch cq ch pd ctx".split():
        getattr(cw, a).close()
    return w, cw, ow, opd


def function_specs(fake):
    """{ibverbs.mlx5 function: D} for the valid call on worlds' objects:
    on the fake each valid call succeeds, on rxe the real libmlx5 refuses
    it (VerbsError: "any") except where no verb is called."""
    import ibverbs as ib
    from ibverbs import mlx5
    from misuse_core import D

    ok = "ok" if fake else "any"
    qp = (lambda w: w.m_rc) if fake else (lambda w: w.qp)
    return {
        # a name or a Device: rxe0 is no mlx5 device (False), fake0 is
        mlx5.is_supported: D(device=lambda w: w.ctx.name, valid="ok"),
        mlx5.open_device: D(device=lambda w: w.ctx.name, flags=0, valid=ok),
        mlx5.query_device: D(ctx=lambda w: w.ctx, valid=ok),
        mlx5.get_data_direct_sysfs_path: D(ctx=lambda w: w.ctx, valid=ok),
        # the fake takes any fd; rxe refuses before the kernel sees it
        mlx5.reg_dmabuf_mr: D(
            pd=lambda w: w.pd, offset=0, length=4096, iova=0, fd=0, access=0, valid=ok
        ),
        mlx5.create_cq: D(
            context=lambda w: w.ctx, init_attr=lambda w: ib.CQInitAttrEx(4), valid=ok
        ),
        mlx5.create_qp: D(
            pd=lambda w: w.pd,
            init_attr=lambda w: ib.QPInitAttrEx(w.m_cq if fake else w.cq),
            valid=ok,
        ),
        mlx5.modify_qp_udp_sport: D(qp=qp, udp_sport=49152, valid=ok),
        mlx5.modify_qp_lag_port: D(qp=qp, port_num=1, valid=ok),
        mlx5.query_qp_lag_port: D(qp=qp, valid=ok),
        mlx5.dci_stream_id_reset: D(
            qp=(lambda w: w.m_dci) if fake else (lambda w: w.qp), stream_id=0, valid=ok
        ),
        # an object of another type: TypeError; on rxe the library refuses
        mlx5.init_obj: D(obj=qp, valid=ok),
        # an inline of mlx5dv.h: the opcode of a CQE's last byte, no verb
        mlx5.get_cqe_opcode: D(cqe=bytes(64), valid="ok", extra_bad={"cqe": (("str", "x" * 64),)}),
    }


class InBatch:
    """The DCI with one send WR open: each call of a DC address setter
    runs after wr_start() and wr_send(), and wr_abort() follows it."""

    def __init__(self, qp):
        self.qp = qp

    def __getattr__(self, name):
        fn = getattr(self.qp, name)

        def call(*args, **kwargs):
            self.qp.wr_start()
            try:
                self.qp.wr_send()
                return fn(*args, **kwargs)
            finally:
                self.qp.wr_abort()

        return call


def qp_methods():
    """mlx5.QP's own methods (its QPEx methods: misuse_cases.QPEX)."""
    from misuse_core import D, M

    return {
        "wr_set_dc_addr": D(ah=lambda w: w.ah, remote_dctn=1, remote_dc_key=1, valid="ok"),
        "wr_set_dc_addr_stream": D(
            ah=lambda w: w.ah, remote_dctn=1, remote_dc_key=1, stream_id=0, valid="ok"
        ),
        "modify_udp_sport": D(udp_sport=49152, valid="ok"),
        "modify_lag_port": D(port_num=1, valid="ok"),
        "query_lag_port": M(valid="ok"),
        "dci_stream_id_reset": D(stream_id=0, valid="ok"),
    }


def mlx5_cases(cases, worlds, fake, qpex, cqex):
    """Add the cases to ``cases``; worlds: (w, closed, other Context,
    other PD).  On the fake, mlx5.QP and mlx5.CQ too: every member after
    close (with the QPEx and CQEx tables, qpex and cqex), the own methods
    of mlx5.QP perturbed.  Returns the covered names ({type: names}) for
    the harness."""
    from ibverbs import mlx5
    from misuse_core import bind_methods, member_cases

    w, cw, ow, opd = worlds
    for fn, spec in function_specs(fake).items():
        label = f"mlx5.{fn.__name__.removeprefix('_mlx5_')}"
        cases.method(label, fn, None, spec.bind(fn.__name__), w, (cw, ow, opd))
    if not fake:
        return {}
    covered = {}
    own = qp_methods()
    for tname, attr, table in (
        ("mlx5.QP", "m_dci", {**qpex, **own}),
        ("mlx5.CQ", "m_cq", cqex),
    ):
        obj = getattr(w, attr)
        # mlx5.QP's own methods are declared under the C type's name (Mlx5QP)
        bound = bind_methods(cases, tname, obj, table, prefix="Mlx5")
        covered[tname] = member_cases(cases, tname, obj, getattr(cw, attr), bound, w)
        # The inherited methods on an RC mlx5.QP, whose expectations are
        # the table's (a DCI is addressed per WR, as UD is).
        target = w.m_rc if tname == "mlx5.QP" else obj
        for n, spec in bound.items():
            if n not in own:
                cases.method(tname, target, n, spec, w, (cw, ow, opd))
        if tname == "mlx5.QP":
            own = {n: bound[n] for n in own}
    dci = w.m_dci
    for n, spec in own.items():
        target = InBatch(dci) if n.startswith("wr_set_dc_addr") else dci
        first = len(cases)
        cases.method("mlx5.QP", target, n, spec, w, (cw, ow, opd))
        # The DC setters take an AH of the QP's Context, as
        # QPEx.wr_set_ud_addr does (an address vector carries no PD).
        for i in range(first, len(cases)):
            if cases[i][0].endswith("(ah=AH of another PD)"):
                cases[i] = (cases[i][0], cases[i][1], "any")
    add = cases.add
    # A QP that mlx5.create_qp did not make: the setters have no mlx5dv_qp_ex
    # (an rxe-like QP of the double), and init_obj refuses what is no QP/CQ.
    add(
        "mlx5.QP: DC setter on a non-DC QP",
        lambda: InBatch(w.m_rc).wr_set_dc_addr(w.ah, 1, 1),
        "raise",
    )
    add("mlx5.init_obj(a PD)", lambda: mlx5.init_obj(w.pd), "any")
    add("mlx5.init_obj(closed mlx5.QP)", lambda: mlx5.init_obj(cw.m_dci), "closed")
    add("mlx5.init_obj(closed mlx5.CQ)", lambda: mlx5.init_obj(cw.m_cq), "closed")
    add(
        "mlx5.create_qp(dct_access_key without DCT)",
        lambda: mlx5.create_qp(w.pd, __import__("ibverbs").QPInitAttrEx(w.m_cq), dct_access_key=1),
        "raise",
    )
    return covered


def group_cases(cases, worlds, qpex, cqex):
    """The mlx5 cases of a group: in the host group (worlds None) on the
    fake libmlx5 with worlds of its own on the double's fake0; in the
    device group the real libmlx5 on the device worlds' objects.  qpex,
    cqex: misuse_cases.py's QPEx and CQEx tables."""
    from ibverbs import mlx5

    if worlds is None:
        worlds = host_worlds()
        if worlds is None:
            print("no mlx5 cases: the fake libmlx5 is not loaded", file=sys.stderr)
            return
        fake = True
    else:
        if not mlx5.library_status()[0]:
            print(f"no mlx5 cases: {mlx5.library_status()[1]}", file=sys.stderr)
            return
        if worlds[0].ctx.query_device().vendor_id == 0x02C9:
            return  # an mlx5 device: the fake's expectations do not apply
        fake = False
    mlx5_cases(cases, worlds, fake, qpex, cqex)
