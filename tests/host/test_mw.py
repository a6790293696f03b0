"""Memory windows without a device: inc_rkey, the records, and the checks
SendWR makes on the bind fields before any verb (the windows themselves
are in tests/device/test_mw_device.py).

Which MRs a memory window keeps alive, against the recording double
(tests/fakes/recording): a bound window holds the MR of its last bind
posted, since the kernel refuses to deregister an MR a window is bound to.
The hold moves only once the WR that changes the binding was posted (a
failed post_send or wr_complete, or a wr_abort, leaves it as it was).  The
MR a bind replaces, or that a LOCAL_INV this process posts on a QP of the
window's PD invalidates, or that an unbind (type 1, length 0) frees, is
parked until a later post or bind finds the kernel agrees it is unbound
(its deregistration succeeds) and nothing else references it, or the
window closes.  Seen here as the dereg_mr the double records (the device
side, with 7.2's late invalidations, is tests/device/test_mw_device.py)."""

from __future__ import annotations

import errno
import inspect
import textwrap

import pytest

import ibverbs as ib
from ibverbs import MWBind, MWBindInfo, SendWR, WROpcode, enums


def test_inc_rkey_is_verbs_h():
    # ibv_inc_rkey: the low 8 bits (the key) plus one, wrapping; the index
    # (the upper 24 bits) stays.
    assert ib.inc_rkey(0x12345600) == 0x12345601
    assert ib.inc_rkey(0x123456FF) == 0x12345600
    assert ib.inc_rkey(0xFFFFFFFF) == 0xFFFFFF00
    assert ib.inc_rkey(0) == 1
    for bad in (-1, 2**32):
        with pytest.raises(ValueError, match="rkey"):
            ib.inc_rkey(bad)
    with pytest.raises(TypeError):
        ib.inc_rkey("1")


def test_enums_from_headers():
    assert ib.MWType.TYPE_1 == 1 and ib.MWType.TYPE_2 == 2
    assert ib.WROpcode.BIND_MW == 8
    assert ib.WCOpcode.BIND_MW == 5 and ib.WCOpcode.LOCAL_INV == 6


def test_records():
    info = MWBindInfo(None, 0x1000, 64, ib.AccessFlags.REMOTE_READ)
    assert info == MWBindInfo(None, 0x1000, 64, ib.AccessFlags.REMOTE_READ)
    assert info != MWBindInfo(None, 0x1000, 65, ib.AccessFlags.REMOTE_READ)
    assert "length=64" in repr(info)
    bind = MWBind(info, wr_id=3, send_flags=ib.SendFlags.SIGNALED)
    assert bind.bind_info is info and bind.wr_id == 3
    assert "wr_id=3" in repr(bind)
    with pytest.raises(AttributeError):
        info.other = 1  # __slots__


def test_sendwr_bind_fields_are_checked():
    with pytest.raises(ValueError, match="BIND_MW needs mw="):
        SendWR(opcode=WROpcode.BIND_MW)
    with pytest.raises(ValueError, match="both mw= and bind_info="):
        SendWR(opcode=WROpcode.BIND_MW, bind_info=MWBindInfo(None, 0, 0))
    with pytest.raises(TypeError, match="mw must be an MW"):
        SendWR(opcode=WROpcode.BIND_MW, mw=1, bind_info=MWBindInfo(None, 0, 0))
    with pytest.raises(TypeError, match="mw must be an MW"):
        SendWR(opcode=WROpcode.BIND_MW, mw="mw", bind_info=object())
    # None is "not given"
    wr = SendWR(mw=None, bind_info=None)
    assert wr.mw is None and wr.bind_info is None


def test_atomic_write_opcode_is_accepted():
    # The 8 bytes to write travel in the SGE; what runs it is the device's
    # business (tests/device/test_atomic_write.py).
    sge = ib.SGE(0x1000, 8, lkey=1)
    wr = SendWR(opcode=WROpcode.ATOMIC_WRITE, sg_list=[sge], remote_addr=0x2000, rkey=0x10)
    assert wr.opcode is WROpcode.ATOMIC_WRITE
    assert wr.remote_addr == 0x2000 and wr.rkey == 0x10
    with pytest.raises(ValueError, match="compare_add"):
        SendWR(opcode=WROpcode.ATOMIC_WRITE, sg_list=[sge], compare_add=1)


def _common(fake):
    """The objects every test here uses, in the child: (ibverbs, ctx, pd,
    cq, qp in RTS, a function that counts the dereg_mr calls since it was
    last called, and done(out, *handles), which closes them all and
    returns out)."""
    import ibverbs
    from ibverbs import enums

    ctx = ibverbs.Context("fake0")
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(64)
    ops = enums.QPCreateSendOpsFlags
    qp = pd.create_qp_ex(
        ibverbs.QPInitAttrEx(
            cq, send_ops_flags=ops.SEND | ops.BIND_MW | ops.LOCAL_INV | ops.SEND_WITH_INV
        )
    )
    qp.to_init(1)
    qp.to_rtr(ibverbs.QPInfo(5, 0, 0, bytes(16), 1, 3), sgid_index=0)
    qp.to_rts()
    fake.take()

    def deregs():
        import gc

        gc.collect()
        return sum(1 for r in fake.take() if r.verb == "dereg_mr")

    def done(out, *handles):
        for h in (*handles, qp, cq, pd, ctx):
            h.close()
        return out

    return ibverbs, ctx, pd, cq, qp, deregs, done


def _bind_wr(ib, mw, mr, rkey, wr_id=1, length=64):
    from ibverbs import enums

    A = enums.AccessFlags
    return ib.SendWR(
        wr_id,
        opcode=enums.WROpcode.BIND_MW,
        send_flags=enums.SendFlags.SIGNALED,
        mw=mw,
        rkey=rkey,
        bind_info=ib.MWBindInfo(mr, mr.addr, length, A.REMOTE_WRITE),
    )


def _reg(pd, addr):
    from ibverbs import enums

    A = enums.AccessFlags
    return pd.reg_mr(addr, 4096, A.LOCAL_WRITE | A.REMOTE_WRITE | A.MW_BIND)


def _run(recording, body):
    """body(fake) in the double's child, with the helpers above (the child
    gets source, not objects)."""
    helpers = "".join(inspect.getsource(f) + "\n\n" for f in (_common, _bind_wr, _reg))
    return recording.run(helpers + textwrap.dedent(inspect.getsource(body))).ok()


def test_a_failed_bind_post_keeps_the_old_hold(recording):
    def body(fake):
        import errno

        from ibverbs import enums

        ib, ctx, pd, cq, qp, deregs, done = _common(fake)
        out = {}
        mw = pd.alloc_mw(enums.MWType.TYPE_2)
        mr1, mr2 = _reg(pd, 0x10000), _reg(pd, 0x20000)
        rkey1 = ib.inc_rkey(mw.rkey)
        qp.post_send(_bind_wr(ib, mw, mr1, rkey1))
        cq.poll(4)
        fake.fail("post_send", errno.ENOMEM)
        wr2 = _bind_wr(ib, mw, mr2, ib.inc_rkey(rkey1), wr_id=2)
        try:
            qp.post_send(wr2)
        except ib.VerbsError as e:
            out["failed"] = e.errno
        del wr2
        deregs()
        # mr1: still held by the window (its bind is the last posted).
        del mr1
        out["mr1_gone"] = deregs()
        # mr2: the failed bind took no hold on it.
        del mr2
        out["mr2_gone"] = deregs()
        # The window still binds mr1 under rkey1: a LOCAL_INV lets it go.
        qp.post_send(ib.SendWR(3, opcode=enums.WROpcode.LOCAL_INV, rkey=rkey1))
        out["after_inv"] = deregs()
        return done(out, mw)

    v = _run(recording, body)
    assert v == {"failed": 12, "mr1_gone": 0, "mr2_gone": 1, "after_inv": 1}, v


def test_local_inv_releases_only_its_window(recording):
    def body(fake):
        import errno

        from ibverbs import enums

        ib, ctx, pd, cq, qp, deregs, done = _common(fake)
        W = enums.WROpcode
        out = {}
        mw = pd.alloc_mw(enums.MWType.TYPE_2)
        rkey = ib.inc_rkey(mw.rkey)
        qp.post_send(_bind_wr(ib, mw, _reg(pd, 0x10000), rkey))
        deregs()
        # Another rkey, and a SEND_WITH_INV (which invalidates at the
        # peer): nothing here lets go.
        qp.post_send(ib.SendWR(2, opcode=W.LOCAL_INV, rkey=rkey ^ 0x100))
        qp.post_send(ib.SendWR(3, opcode=W.SEND_WITH_INV, rkey=rkey))
        out["other"] = deregs()
        # The same rkey on a QP of another PD: not this window.
        with ctx.alloc_pd() as pd2:
            qp2 = pd2.create_qp(ib.QPInitAttr(cq))
            for st in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
                qp2.modify(enums.QPAttrMask.STATE, qp_state=st)
            qp2.post_send(ib.SendWR(4, opcode=W.LOCAL_INV, rkey=rkey))
            qp2.close()
        out["other_pd"] = deregs()
        # A LOCAL_INV whose post fails lets nothing go.
        fake.fail("post_send", errno.EINVAL)
        try:
            qp.post_send(ib.SendWR(5, opcode=W.LOCAL_INV, rkey=rkey))
        except ib.VerbsError as e:
            out["failed"] = e.errno
        out["after_failed"] = deregs()
        # In a list, after a bind of another window: both take effect.
        mw_b = pd.alloc_mw(enums.MWType.TYPE_2)
        rkey_b = ib.inc_rkey(mw_b.rkey)
        qp.post_send(
            [
                _bind_wr(ib, mw_b, _reg(pd, 0x30000), rkey_b, wr_id=6),
                ib.SendWR(7, opcode=W.LOCAL_INV, rkey=rkey),
            ]
        )
        out["list"] = deregs()
        # A LOCAL_INV in a SendWRChain (of the window bound in the list).
        chain = ib.SendWRChain([ib.SendWR(8, opcode=W.LOCAL_INV, rkey=rkey_b)])
        qp.post_send(chain)
        chain.release()
        out["chain"] = deregs()
        return done(out, mw, mw_b)

    v = _run(recording, body)
    assert v == {
        "other": 0,
        "other_pd": 0,
        "failed": 22,
        "after_failed": 0,
        "list": 1,
        "chain": 1,
    }, v


def test_type1_unbind_and_close_release(recording):
    def body(fake):
        from ibverbs import enums

        ib, ctx, pd, cq, qp, deregs, done = _common(fake)
        A = enums.AccessFlags
        out = {}
        mw1 = pd.alloc_mw(enums.MWType.TYPE_1)
        mr = _reg(pd, 0x10000)
        qp.bind_mw(mw1, ib.MWBind(ib.MWBindInfo(mr, mr.addr, 64, A.REMOTE_WRITE)))
        keep = _reg(pd, 0x20000)
        del mr
        out["bound"] = deregs()
        qp.bind_mw(mw1, ib.MWBind(ib.MWBindInfo(keep, keep.addr, 0, A.REMOTE_WRITE)))
        out["unbound"] = deregs()
        mw2 = pd.alloc_mw(enums.MWType.TYPE_2)
        qp.post_send(_bind_wr(ib, mw2, keep, ib.inc_rkey(mw2.rkey)))
        del keep
        out["held"] = deregs()
        mw2.close()
        out["closed"] = deregs()
        return done(out, mw1)

    v = _run(recording, body)
    assert v == {"bound": 0, "unbound": 1, "held": 0, "closed": 1}, v


def test_qp_ex_batches_move_the_hold_once_posted(recording):
    def body(fake):
        import errno

        from ibverbs import enums

        ib, ctx, pd, cq, qp, deregs, done = _common(fake)
        A = enums.AccessFlags
        out = {}
        mw = pd.alloc_mw(enums.MWType.TYPE_2)
        mr1, mr2 = _reg(pd, 0x10000), _reg(pd, 0x20000)
        rkey1 = ib.inc_rkey(mw.rkey)
        qp.wr_start()
        qp.wr_bind_mw(mw, rkey1, ib.MWBindInfo(mr1, mr1.addr, 64, A.REMOTE_WRITE))
        qp.wr_complete()
        # An aborted bind and a failed batch leave mr1 held, mr2 free.
        rkey2 = ib.inc_rkey(rkey1)
        info2 = ib.MWBindInfo(mr2, mr2.addr, 64, A.REMOTE_WRITE)
        qp.wr_start()
        qp.wr_bind_mw(mw, rkey2, info2)
        qp.wr_abort()
        fake.fail("wr_complete", errno.ENOMEM)
        qp.wr_start()
        qp.wr_bind_mw(mw, rkey2, info2)
        try:
            qp.wr_complete()
        except ib.VerbsError as e:
            out["failed"] = e.errno
        del info2
        deregs()
        del mr1
        out["mr1"] = deregs()
        del mr2
        out["mr2"] = deregs()
        # A failed LOCAL_INV batch keeps it; a posted one lets it go.
        fake.fail("wr_complete", errno.ENOMEM)
        qp.wr_start()
        qp.wr_local_inv(rkey1)
        try:
            qp.wr_complete()
        except ib.VerbsError:
            pass
        out["inv_failed"] = deregs()
        qp.wr_start()
        qp.wr_local_inv(rkey1)
        qp.wr_complete()
        out["inv"] = deregs()
        return done(out, mw)

    v = _run(recording, body)
    assert v == {"failed": 12, "mr1": 0, "mr2": 1, "inv_failed": 0, "inv": 1}, v


def test_a_refused_dereg_stays_parked(recording):
    """The sweep's deregistration is how the package asks the kernel
    whether the binding is gone: EINVAL (still bound, as 7.2's rxe answers
    right after the post) leaves the MR parked, open and its memory's owner
    alive, no error raised or reported; the next post tries again."""

    def body(fake):
        import errno
        import sys
        import weakref

        from ibverbs import enums

        ib, ctx, pd, cq, qp, deregs, done = _common(fake)
        A = enums.AccessFlags
        out = {}
        reported = []
        sys.unraisablehook = lambda u: reported.append(repr(u.exc_value))

        class Owner:
            pass

        owner = Owner()
        alive = weakref.ref(owner)
        mr = pd.reg_mr(0x10000, 4096, A.LOCAL_WRITE | A.REMOTE_WRITE | A.MW_BIND, owner=owner)
        del owner
        mw = pd.alloc_mw(enums.MWType.TYPE_2)
        rkey = ib.inc_rkey(mw.rkey)
        qp.post_send(_bind_wr(ib, mw, mr, rkey))
        del mr
        deregs()
        fake.fail("dereg_mr", errno.EINVAL)
        qp.post_send(ib.SendWR(2, opcode=enums.WROpcode.LOCAL_INV, rkey=rkey))
        out["tried"] = deregs()
        out["alive_after_refusal"] = alive() is not None
        qp.post_send(ib.SendWR(3))
        out["retried"] = deregs()
        out["alive_after_retry"] = alive() is not None
        out["reported"] = reported
        return done(out, mw)

    v = _run(recording, body)
    assert v == {
        "tried": 1,
        "alive_after_refusal": True,
        "retried": 1,
        "alive_after_retry": False,
        "reported": [],
    }, v


def test_memory_windows_alloc_and_bind(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        A = enums.AccessFlags
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            mr = pd.reg_mr(0x10000, 8192, A.LOCAL_WRITE | A.REMOTE_WRITE | A.MW_BIND)
            qp = pd.create_qp(ibverbs.QPInitAttr(cq))
            for st in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
                qp.modify(enums.QPAttrMask.STATE, qp_state=st)
            mw1 = pd.alloc_mw(enums.MWType.TYPE_1)
            before = mw1.rkey
            info = ibverbs.MWBindInfo(mr, 0x10100, 256, A.REMOTE_WRITE)
            out["rkey"] = qp.bind_mw(mw1, ibverbs.MWBind(info, 31, enums.SendFlags.SIGNALED))
            out["rkeys"] = [before, mw1.rkey]
            mw2 = pd.alloc_mw(enums.MWType.TYPE_2)
            wr = ibverbs.SendWR(
                32,
                opcode=enums.WROpcode.BIND_MW,
                send_flags=enums.SendFlags.SIGNALED,
                mw=mw2,
                rkey=ibverbs.inc_rkey(mw2.rkey),
                bind_info=info,
            )
            qp.post_send(wr)
            out["wc"] = [[w.wr_id, int(w.opcode)] for w in cq.poll(4)]
            out["mw2"] = mw2.rkey
            for o in (mw2, mw1, qp, mr):
                o.close()
        return out

    res = recording.run(body)
    v = res.ok()
    t1, t2 = res.calls("alloc_mw")
    assert (t1["type"], t2["type"]) == (int(enums.MWType.TYPE_1), int(enums.MWType.TYPE_2))
    bind = res.one("bind_mw")
    A = enums.AccessFlags
    assert bind.prefixed("mw_bind.") == {
        "wr_id": 31,
        "send_flags": int(enums.SendFlags.SIGNALED),
        "bind_info.mr": bind["mw_bind.bind_info.mr"],
        "bind_info.addr": 0x10100,
        "bind_info.length": 256,
        "bind_info.mw_access_flags": int(A.REMOTE_WRITE),
    }
    assert bind["mw_bind.bind_info.mr"] == res.one("dereg_mr")["mr"]
    before, after = v["rkeys"]
    assert after == v["rkey"] and after & ~0xFF == before & ~0xFF and after != before
    post = res.one("post_send").prefixed("wr[0].")
    assert post["opcode"] == int(enums.WROpcode.BIND_MW)
    assert post["bind_mw.mw"] == res.calls("dealloc_mw")[0]["mw"]
    assert (post["bind_mw.bind_info.addr"], post["bind_mw.bind_info.length"]) == (0x10100, 256)
    assert post["bind_mw.bind_info.mw_access_flags"] == int(A.REMOTE_WRITE)
    assert post["bind_mw.bind_info.mr"] == bind["mw_bind.bind_info.mr"]
    W = enums.WCOpcode
    assert v["wc"] == [[31, int(W.BIND_MW)], [32, int(W.BIND_MW)]]
    assert res.live == 0, res.live_report


def test_bound_window_holds_its_mr(recording):
    """A window keeps the MR of its last bind alive (the kernel refuses to
    deregister an MR under a bound window): with no other reference, the
    MR is deregistered only after the window is deallocated; a bind to
    another MR, or an unbind (length 0), parks the old one, which the next
    post or bind deregisters once nothing else references it."""

    def body(fake):
        import gc

        import ibverbs
        from ibverbs import enums

        A = enums.AccessFlags
        acc = A.LOCAL_WRITE | A.REMOTE_WRITE | A.MW_BIND
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            qp = pd.create_qp(ibverbs.QPInitAttr(cq))
            for st in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
                qp.modify(enums.QPAttrMask.STATE, qp_state=st)
            mw1 = pd.alloc_mw(enums.MWType.TYPE_1)
            mw2 = pd.alloc_mw(enums.MWType.TYPE_2)
            mrs = [pd.reg_mr(0x10000 * (i + 1), 4096, acc) for i in range(3)]
            out["mrs"] = [mr.lkey for mr in mrs]

            def info(mr, n=256):
                return ibverbs.MWBindInfo(mr, mr.addr, n, A.REMOTE_WRITE)

            qp.bind_mw(mw1, ibverbs.MWBind(info(mrs[0])))
            qp.post_send(
                ibverbs.SendWR(
                    opcode=enums.WROpcode.BIND_MW,
                    mw=mw2,
                    rkey=ibverbs.inc_rkey(mw2.rkey),
                    bind_info=info(mrs[1]),
                )
            )
            spare = mrs[2]
            del mrs
            gc.collect()
            # Moving mw1 to the spare MR lets mrs[0] go (the bind's own
            # sweep); unbinding it (length 0) parks the spare, still
            # referenced here, and the next post lets it go; closing mw2
            # lets mrs[1] go.
            qp.bind_mw(mw1, ibverbs.MWBind(info(spare)))
            qp.bind_mw(mw1, ibverbs.MWBind(info(spare, 0)))
            del spare
            gc.collect()
            qp.post_send(ibverbs.SendWR(9))
            mw2.close()
            mw1.close()
            qp.close()
        return out

    res = recording.run(body)
    v = res.ok()
    verbs = res.verbs()
    assert len(v["mrs"]) == len(res.calls("reg_mr")) == len(res.calls("dereg_mr")) == 3
    order = [r.verb for r in res.records if r.verb in ("bind_mw", "dereg_mr", "dealloc_mw")]
    assert order == [
        "bind_mw",
        "bind_mw",
        "dereg_mr",
        "bind_mw",
        "dereg_mr",
        "dealloc_mw",
        "dereg_mr",
        "dealloc_mw",
    ], verbs
    assert res.live == 0, res.live_report


def test_mw_attributes_and_refused_bind_info(recording):
    def body(fake):
        from ibverbs import enums

        ib, ctx, pd, cq, qp, deregs, done = _common(fake)
        A = enums.AccessFlags
        out = {}
        mw1 = pd.alloc_mw(enums.MWType.TYPE_1)
        mw2 = pd.alloc_mw(enums.MWType.TYPE_2)
        mr = _reg(pd, 0x10000)
        out["attrs"] = [int(mw1.type), type(mw1.type).__name__, mw1.handle > 0, mw1.rkey > 0]
        out["repr"] = repr(mw1) == (f"<ibverbs.MW type=1 rkey={mw1.rkey:#x} handle={mw1.handle}>")
        mw2.rkey = 0x1234
        out["set"] = mw2.rkey
        for call in (
            lambda: delattr(mw2, "rkey"),
            lambda: setattr(mw2, "rkey", -1),
            lambda: qp.bind_mw(mw1, ib.MWBind(ib.MWBindInfo(pd, 0, 0, A.REMOTE_WRITE))),
            lambda: qp.bind_mw(mw1, ib.MWBind(ib.MWBindInfo(mr, "0", 64, A.REMOTE_WRITE))),
            lambda: qp.bind_mw(mw1, ib.MWBind(ib.MWBindInfo(mr, 2**64 - 8, 64, A.REMOTE_WRITE))),
        ):
            try:
                call()
            except (AttributeError, TypeError, ValueError) as e:
                out.setdefault("errors", []).append([type(e).__name__, str(e)])
        try:
            qp.bind_mw(mw2, ib.MWBind(ib.MWBindInfo(mr, mr.addr, 64, A.REMOTE_WRITE)))
        except ib.VerbsError as e:
            out["type2"] = [e.errno, e.operation, str(e).partition("argument: ")[2]]
        out["verbs"] = sorted({r.verb for r in fake.take()} - {"reg_mr", "alloc_mw"})
        mw1.close()
        out["closed"] = repr(mw1)
        mr.close()
        return done(out, mw2)

    v = _run(recording, body)
    assert v["attrs"] == [1, "MWType", True, True]
    assert v["repr"] is True
    assert v["set"] == 0x1234
    assert v["errors"] == [
        ["AttributeError", "cannot delete rkey"],
        ["ValueError", "rkey must be in range 0..2**32-1"],
        [
            "TypeError",
            "bind_info.mr must be an MR, not <class 'ibverbs._ibverbs.PD'> (length=0 unbinds)",
        ],
        ["TypeError", "bind_info.addr must be an int, not <class 'str'>"],
        ["ValueError", "bind_info.addr + length overflows"],
    ]
    assert v["type2"] == [
        errno.EINVAL,
        "ibv_bind_mw",
        "QP.bind_mw binds type 1 windows; bind a type 2 window with a SendWR(opcode=BIND_MW)",
    ]
    assert v["verbs"] == []  # none of them reached ibv_bind_mw
    assert v["closed"] == "<ibverbs.MW closed>"
