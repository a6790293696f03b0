"""A hypothesis state machine over live verbs objects (in the guest).

Random sequences of: open a Context (up to two), alloc/close PDs, register
and close MRs, create CQs (some on a completion channel), SRQs, RC and UD
QPs, AHs, SRQs of Context.create_srq_ex (using a CQ), move QPs through their states (or to ERR), post sends and
receives, poll, close anything at all, and use closed handles.

Invariants, checked after every step against a model of the object graph:
- nothing crashes;
- close() raises VerbsError(EBUSY) exactly when the model says the handle
  still has open children or open users (QPs using a CQ or SRQ, CQs using
  a channel), and then leaves it open; otherwise it closes;
- a closed handle raises VerbsError(EBADF) on use, and close() again is a
  no-op;
- `closed` matches the model for every handle;
- after tearing everything down, the kernel's object counts are back to
  where they started.
"""

import errno
import os

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import ibverbs as ib

from support import GID_INDEX, PORT, device_name
from support.process import full_gc, rdma_counts
from support.rdma import verbs_error_of

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("IBVERBS_STATEFUL_EXAMPLES", "12"))
STEPS = int(os.environ.get("IBVERBS_STATEFUL_STEPS", "30"))
A = ib.AccessFlags


class H:
    """Model of one handle."""

    def __init__(self, obj, kind, parent=None, uses=()):
        self.obj, self.kind, self.parent = obj, kind, parent
        self.uses = list(uses)  # handles this one uses
        self.open = True
        self.children = []
        self.users = []
        if parent is not None:
            parent.children.append(self)
        for u in self.uses:
            u.users.append(self)

    def busy(self):
        return any(c.open for c in self.children) or any(u.open for u in self.users)

    def __repr__(self):
        return f"{self.kind}({'open' if self.open else 'closed'})"


def expect_ebadf(fn):
    e = verbs_error_of(fn)  # AssertionError: a closed handle worked
    assert e.errno == errno.EBADF, e


# What "use" means for each kind, on a closed handle.
USE = {
    "Context": lambda o: o.alloc_pd(),
    "PD": lambda o: o.create_srq(max_wr=4),
    "MR": lambda o: o.lkey,
    "CQ": lambda o: o.poll(4),
    "CompChannel": lambda o: o.fd,
    "QP": lambda o: o.query(),
    "SRQ": lambda o: o.query(),
    "AH": lambda o: o.handle,
}


class VerbsMachine(RuleBasedStateMachine):
    device = None

    @initialize()
    def setup(self):
        self.handles = []
        self.bufs = []

    def add(self, h):
        self.handles.append(h)
        return h

    def open_of(self, kind, **filt):
        return [
            h
            for h in self.handles
            if h.kind == kind and h.open and all(getattr(h, k, None) == v for k, v in filt.items())
        ]

    # ---- creation ---------------------------------------------------------

    @precondition(lambda self: len(self.open_of("Context")) < 2)
    @rule()
    def open_context(self):
        ctx = ib.Context(self.device)
        os.set_blocking(ctx.async_fd, False)
        self.add(H(ctx, "Context"))

    @precondition(lambda self: self.open_of("Context"))
    @rule(data=st.data())
    def alloc_pd(self, data):
        ctx = data.draw(st.sampled_from(self.open_of("Context")))
        self.add(H(ctx.obj.alloc_pd(), "PD", ctx))

    @precondition(lambda self: self.open_of("Context"))
    @rule(data=st.data())
    def create_channel(self, data):
        ctx = data.draw(st.sampled_from(self.open_of("Context")))
        ch = ctx.obj.create_comp_channel()
        os.set_blocking(ch.fd, False)
        self.add(H(ch, "CompChannel", ctx))

    @precondition(lambda self: self.open_of("Context"))
    @rule(data=st.data(), cqe=st.integers(1, 64), with_channel=st.booleans())
    def create_cq(self, data, cqe, with_channel):
        ctx = data.draw(st.sampled_from(self.open_of("Context")))
        chans = [c for c in self.open_of("CompChannel") if c.parent is ctx]
        ch = data.draw(st.sampled_from(chans)) if with_channel and chans else None
        cq = ctx.obj.create_cq(cqe, ch.obj if ch else None)
        self.add(H(cq, "CQ", ctx, uses=[ch] if ch else []))

    @precondition(lambda self: self.open_of("PD"))
    @rule(
        data=st.data(),
        size=st.sampled_from([64, 4096, 65536]),
        access=st.sampled_from(
            [0, int(A.LOCAL_WRITE), int(A.LOCAL_WRITE | A.REMOTE_WRITE | A.REMOTE_READ)]
        ),
    )
    def reg_mr(self, data, size, access):
        pd = data.draw(st.sampled_from(self.open_of("PD")))
        buf = bytearray(size)
        mr = ib.reg_tensor(pd.obj, buf, access)
        assert mr.owner is not None
        h = self.add(H(mr, "MR", pd))
        h.access = access

    @precondition(lambda self: self.open_of("PD"))
    @rule(data=st.data())
    def create_srq(self, data):
        pd = data.draw(st.sampled_from(self.open_of("PD")))
        self.add(H(pd.obj.create_srq(max_wr=16), "SRQ", pd))

    # Context.create_srq_ex: an SRQ that also uses a CQ (the provider's
    # create_srq_ex op, which rxe has from rdma-core 44), else a basic one.
    @precondition(lambda self: self.open_of("PD") and self.open_of("CQ"))
    @rule(data=st.data())
    def create_srq_ex(self, data):
        pd = data.draw(st.sampled_from(self.open_of("PD")))
        cqs = [c for c in self.open_of("CQ") if c.parent is pd.parent]
        with_cq = cqs and int((ib.library_version or "0").split(".")[0]) >= 44
        cq = data.draw(st.sampled_from(cqs)) if with_cq else None
        srq = pd.parent.obj.create_srq_ex(pd.obj, max_wr=16, cq=cq.obj if cq else None)
        self.add(H(srq, "SRQ", pd, uses=[cq] if cq else []))

    @precondition(lambda self: self.open_of("PD"))
    @rule(data=st.data())
    def create_ah(self, data):
        pd = data.draw(st.sampled_from(self.open_of("PD")))
        ctx = pd.obj.context
        gid = ctx.query_gid(PORT, GID_INDEX)
        ah = pd.obj.create_ah(ib.AHAttr(dgid=gid, sgid_index=GID_INDEX, port_num=PORT))
        self.add(H(ah, "AH", pd))

    @precondition(lambda self: self.open_of("PD") and self.open_of("CQ"))
    @rule(data=st.data(), ud=st.booleans(), with_srq=st.booleans())
    def create_qp(self, data, ud, with_srq):
        pd = data.draw(st.sampled_from(self.open_of("PD")))
        cqs = [c for c in self.open_of("CQ") if c.parent is pd.parent]
        if not cqs:
            return
        scq = data.draw(st.sampled_from(cqs))
        rcq = data.draw(st.sampled_from(cqs))
        srqs = [s for s in self.open_of("SRQ") if s.parent is pd]
        srq = data.draw(st.sampled_from(srqs)) if with_srq and srqs and not ud else None
        qp = pd.obj.create_qp(
            ib.QPInitAttr(
                send_cq=scq.obj,
                recv_cq=rcq.obj,
                srq=srq.obj if srq else None,
                qp_type=ib.QPType.UD if ud else ib.QPType.RC,
                max_send_wr=32,
                max_recv_wr=32,
            )
        )
        h = self.add(H(qp, "QP", pd, uses=[u for u in (scq, rcq, srq) if u]))
        h.ud = ud

    # ---- the data path and state changes ----------------------------------

    @precondition(lambda self: self.open_of("QP"))
    @rule(data=st.data(), state=st.sampled_from(["INIT", "RTS", "ERR", "RESET"]))
    def move_qp(self, data, state):
        q = data.draw(st.sampled_from(self.open_of("QP")))
        qp = q.obj
        try:
            if state == "INIT":
                qp.to_init(PORT, 0)
            elif state == "RTS":
                if not q.ud:
                    qp.to_init(PORT, 0)  # RC stays in INIT: no peer here
                    return
                qp.to_init(PORT, 0)
                qp.to_rtr(None)
                qp.to_rts(0)
            else:
                qp.modify(ib.QPAttrMask.STATE, qp_state=getattr(ib.QPState, state))
        except ib.VerbsError as e:
            assert e.errno == errno.EINVAL, e  # a transition the QP refuses

    @precondition(lambda self: self.open_of("QP") and self.open_of("MR"))
    @rule(data=st.data(), n=st.integers(1, 4), recv=st.booleans())
    def post(self, data, n, recv):
        q = data.draw(st.sampled_from(self.open_of("QP")))
        mrs = [m for m in self.open_of("MR") if m.parent is q.parent]
        if not mrs:
            return
        m = data.draw(st.sampled_from(mrs))
        sge = m.obj.sge(min(64, m.obj.length))
        try:
            if recv:
                if q.obj.srq is not None:
                    q.obj.srq.post_recv([ib.RecvWR(wr_id=i, sg_list=[sge]) for i in range(n)])
                else:
                    q.obj.post_recv([ib.RecvWR(wr_id=i, sg_list=[sge]) for i in range(n)])
            else:
                ahs = [a for a in self.open_of("AH") if a.parent is q.parent]
                if q.ud and ahs:
                    ah = data.draw(st.sampled_from(ahs)).obj
                    wrs = [
                        ib.SendWR(
                            wr_id=i,
                            sg_list=[sge],
                            ah=ah,
                            remote_qpn=q.obj.qp_num,
                            remote_qkey=0x11111111,
                            send_flags=ib.SendFlags.SIGNALED,
                        )
                        for i in range(n)
                    ]
                else:
                    wrs = [
                        ib.SendWR(wr_id=i, sg_list=[sge], send_flags=ib.SendFlags.SIGNALED)
                        for i in range(n)
                    ]
                q.obj.post_send(wrs)
        except ValueError:
            pass  # e.g. a UD send without an AH
        except ib.VerbsError as e:
            # A QP in a state that does not post, or a full queue.
            assert e.errno in (errno.EINVAL, errno.ENOMEM), e

    @precondition(lambda self: self.open_of("CQ"))
    @rule(data=st.data(), n=st.integers(1, 64))
    def poll(self, data, n):
        cq = data.draw(st.sampled_from(self.open_of("CQ")))
        for wc in cq.obj.poll(n):
            assert wc.status in (
                ib.WCStatus.SUCCESS,
                ib.WCStatus.WR_FLUSH_ERR,
                ib.WCStatus.LOC_PROT_ERR,
                ib.WCStatus.LOC_QP_OP_ERR,
                ib.WCStatus.LOC_LEN_ERR,
                ib.WCStatus.GENERAL_ERR,
            ), wc

    # ---- close and use-after-close ----------------------------------------

    @precondition(lambda self: self.handles)
    @rule(data=st.data())
    def close(self, data):
        h = data.draw(st.sampled_from(self.handles))
        if not h.open:
            h.obj.close()  # idempotent
            return
        if h.busy():
            try:
                h.obj.close()
            except ib.VerbsError as e:
                assert e.errno == errno.EBUSY, e
            else:
                raise AssertionError(
                    f"{h} closed while it had open children/users: "
                    f"{[c for c in h.children if c.open]} "
                    f"{[u for u in h.users if u.open]}"
                )
            assert not h.obj.closed
            return
        h.obj.close()
        h.open = False

    @precondition(lambda self: any(not h.open for h in self.handles))
    @rule(data=st.data())
    def use_closed(self, data):
        h = data.draw(st.sampled_from([h for h in self.handles if not h.open]))
        expect_ebadf(lambda: USE[h.kind](h.obj))

    @invariant()
    def closed_matches_model(self):
        for h in getattr(self, "handles", ()):
            assert h.obj.closed == (not h.open), h

    def teardown(self):
        # Children and users first: reverse creation order always works.
        for h in reversed(getattr(self, "handles", [])):
            if h.open:
                h.obj.close()
                h.open = False
        self.handles = []
        full_gc()


def test_verbs_state_machine():
    name = device_name()
    full_gc()  # what earlier tests dropped is not counted
    before = rdma_counts(name)
    VerbsMachine.device = name
    run_state_machine_as_test(
        VerbsMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            database=None,
            derandomize=os.environ.get("IBVERBS_STATEFUL_RANDOM") != "1",
            suppress_health_check=list(HealthCheck),
        ),
    )
    full_gc()
    assert rdma_counts(name) == before
