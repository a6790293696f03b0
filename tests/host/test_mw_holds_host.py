"""Which MRs a memory window keeps alive, against the recording double
(tests/fakes/recording): a bound window holds the MR of its last bind
posted, since the kernel refuses to deregister an MR a window is bound to.
The hold moves only once the WR that changes the binding was posted (a
failed post_send or wr_complete, or a wr_abort, leaves it as it was).  The
MR a bind replaces, or that a LOCAL_INV this process posts on a QP of the
window's PD invalidates, or that an unbind (type 1, length 0) frees, is
parked until a later post or bind finds the kernel agrees it is unbound
(its deregistration succeeds) and nothing else references it, or the
window closes.  Seen here as the dereg_mr the double records (the device
side, with 7.2's late invalidations, is tests/device/test_mw.py)."""

from __future__ import annotations

import inspect
import textwrap


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
