"""XRC domains against the recording double (tests/fakes/recording/):
open_xrcd and open_qp pass the fd, the oflags and the QP.  A check of what
the binding hands libibverbs and what it makes of the answers, not evidence
that a provider runs the verbs.  rxe refuses them:
tests/device/test_xrc_wq.py."""

from __future__ import annotations

import errno
import sys

import pytest

from ibverbs import enums
from support.process import can_fail_allocations


def test_open_xrcd_and_open_qp_pass_fd_oflags_and_the_qp(recording, tmp_path):
    def body(fake, path):
        import errno
        import os

        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            x = ctx.open_xrcd()
            out["private"] = [x.fd, x.oflags, x.context is ctx]
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            shared = ctx.open_xrcd(fd=fd, oflags=os.O_CREAT | os.O_EXCL)
            qp = ctx.open_qp(shared, 0x1234)
            out["qp"] = [qp.qp_num, int(qp.qp_type), qp.pd is shared, qp.context is ctx]
            try:
                shared.close()
            except ibverbs.VerbsError as e:
                out["busy"] = [e.errno, str(e)]
            qp.close()
            shared.close()
            os.close(fd)
            x.close()
            try:
                x.close()
                out["closed"] = x.closed
            except ibverbs.VerbsError:
                out["closed"] = "raised"
            fake.fail("open_xrcd", errno.ENOMEM)
            try:
                ctx.open_xrcd()
            except ibverbs.VerbsError as e:
                out["injected"] = [e.errno, e.operation]
            for bad in (-2, 2**31):
                try:
                    ctx.open_xrcd(fd=bad)
                except ValueError:
                    out.setdefault("bad", []).append(bad)
        return out, os.O_CREAT, os.O_EXCL

    res = recording.run(body, str(tmp_path / "xrc-domain"))
    out, o_creat, o_excl = res.ok()
    assert out["private"] == [-1, o_creat, True]
    assert out["qp"] == [0x1234, int(enums.QPType.XRC_RECV), True, True]
    assert out["busy"][0] == errno.EBUSY and "QP" in out["busy"][1]
    assert out["closed"] is True
    assert out["injected"] == [errno.ENOMEM, "ibv_open_xrcd"]
    assert out["bad"] == [-2, 2**31]
    opens = res.calls("open_xrcd")
    mask = int(enums.XRCDInitAttrMask.FD | enums.XRCDInitAttrMask.OFLAGS)
    assert [r["attr.comp_mask"] for r in opens] == [mask] * 3
    assert [(r["attr.fd"], r["attr.oflags"]) for r in opens[:2]] == [
        (-1, o_creat),
        (opens[1]["attr.fd"], o_creat | o_excl),
    ]
    assert opens[1]["attr.fd"] >= 0
    oq = res.one("open_qp")
    om = enums.QPOpenAttrMask
    assert oq["attr.comp_mask"] == int(om.XRCD | om.CONTEXT | om.NUM | om.TYPE)
    assert oq["attr.qp_num"] == 0x1234
    assert oq["attr.qp_type"] == int(enums.QPType.XRC_RECV)
    assert oq["attr.qp_context"] != 0
    closes = res.calls("close_xrcd")
    assert len(closes) == 2 and oq["attr.xrcd"] == closes[0]["xrcd"]
    assert res.one("destroy_qp")["qp_num"] == 0x1234
    # the QP went before its XRCD
    v = res.verbs()
    assert v.index("destroy_qp") < v.index("close_xrcd")
    assert res.live == 0, res.live_report


def test_xrcd_repr_and_refused_arguments(recording):
    def body(fake):
        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            x = ctx.open_xrcd()
            out["repr"] = repr(x)
            fake.clear()
            for call in (
                lambda: ctx.open_qp(x, "qp"),
                lambda: ctx.open_qp("xrcd", 1),
                lambda: ctx.open_xrcd(fd="0"),
            ):
                try:
                    call()
                except TypeError as e:
                    out.setdefault("type", []).append(str(e))
            out["verbs"] = [r.verb for r in fake.take()]
            x.close()
            out["closed"] = repr(x)
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["repr"] == "<ibverbs.XRCD fd=-1>"
    assert len(out["type"]) == 3 and out["type"][0].startswith("qp_num must be an int")
    assert out["verbs"] == []
    assert out["closed"] == "<ibverbs.XRCD closed>"
    assert res.live == 0, res.live_report


def test_open_qp_failing_and_closed_parents(recording):
    def body(fake):
        import errno

        import ibverbs
        from support.rdma import verbs_error_of

        out = {}
        ctx = ibverbs.Context("fake0")
        x = ctx.open_xrcd()
        fake.fail("open_qp", errno.ENOENT)
        e = verbs_error_of(lambda: ctx.open_qp(x, 0x77))
        out["failed"] = [e.errno, e.operation, "qp_num=119" in str(e)]
        qp = ctx.open_qp(x, 0x77)  # the next one opens
        out["again"] = qp.qp_num
        qp.close()
        x.close()
        out["xrcd_closed"] = verbs_error_of(lambda: ctx.open_qp(x, 1)).errno
        ctx.close()
        out["ctx_closed"] = [
            verbs_error_of(ctx.open_xrcd).errno,
            verbs_error_of(lambda: ctx.open_qp(x, 1)).errno,
        ]
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["failed"] == [errno.ENOENT, "ibv_open_qp", True]
    assert out["again"] == 0x77
    assert out["xrcd_closed"] == errno.EBADF
    assert out["ctx_closed"] == [errno.EBADF, errno.EBADF]
    assert len(res.calls("open_qp")) == 2
    assert res.live == 0, res.live_report


@pytest.mark.skipif(not can_fail_allocations(), reason="needs _testcapi.set_nomemory")
def test_each_allocation_of_open_xrcd_and_open_qp_failing(recording):
    def body(fake):
        import ibverbs
        from support.nomem import each_allocation_fails

        def open_close_qp(x):
            qp = ctx.open_qp(x, 0x55)
            try:
                return qp.qp_num
            finally:
                qp.close()

        with ibverbs.Context("fake0") as ctx:
            r1 = each_allocation_fails(lambda: ctx.open_xrcd().close())
            x = ctx.open_xrcd()
            r2 = each_allocation_fails(lambda: open_close_qp(x))
            x.close()
        return [[r["failed"] > 0, r["other"], r["value"]] for r in (r1, r2)]

    res = recording.run(body)
    assert res.ok() == [[True, [], None], [True, [], 0x55]]
    assert res.live == 0, res.live_report


@pytest.mark.skipif(
    sys.version_info >= (3, 12),
    reason="CPython 3.12 and later run a due collection at the next bytecode "
    "boundary, never inside a C call's allocation; 3.9-3.11 (the host venv) run it",
)
def test_a_collection_closing_the_parent_during_the_call(recording):
    """The garbage collector may run while the new object is allocated,
    and a finalizer may close the Context (open_xrcd, open_qp) or the XRCD
    (open_qp): the call then refuses with EBADF, nothing opened."""

    def body(fake):
        import gc

        import ibverbs

        class Closer:
            def __init__(self, targets):
                self.targets, self.me = targets, self

            def __del__(self):
                for t in self.targets:
                    t.close()

        def during_collection(targets, method, args):
            # no allocation of a tracked object between enable() and the
            # method's own: its first one runs the collection
            threshold = gc.get_threshold()
            gc.disable()
            Closer(targets)  # a cycle: collected, finalized, at the next pass
            gc.set_threshold(1)
            gc.enable()
            try:
                method(*args)
            except ibverbs.VerbsError as e:
                return e.errno
            finally:
                gc.set_threshold(*threshold)

        out = {}
        ctx, ctx2 = ibverbs.Context("fake0"), ibverbs.Context("fake0")
        x, x2 = ctx.open_xrcd(), ctx2.open_xrcd()
        out["open_qp"] = [during_collection([x], ctx.open_qp, (x, 5)), x.closed]
        e = during_collection([x2, ctx2], ctx2.open_qp, (x2, 5))
        out["open_qp_ctx"] = [e, ctx2.closed]
        out["open_xrcd"] = [during_collection([ctx], ctx.open_xrcd, ()), ctx.closed]
        return out

    res = recording.run(body)
    assert res.ok() == {
        "open_qp": [errno.EBADF, True],
        "open_qp_ctx": [errno.EBADF, True],
        "open_xrcd": [errno.EBADF, True],
    }
    assert res.calls("open_qp") == [] and len(res.calls("open_xrcd")) == 2
    assert res.live == 0, res.live_report
