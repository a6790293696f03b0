"""AsyncEvent against the recording double (tests/fakes/recording/), which
answers one queued event (``fake.async_event``) per get_async_event: the
element each event type names, the element held while the event is not
acked, and the ways acking goes."""

from __future__ import annotations

import errno

from ibverbs import enums

E = enums.EventType


def test_each_event_type_names_its_element(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        E = enums.EventType
        about = {
            E.CQ_ERR: "cq",
            E.QP_FATAL: "qp",
            E.QP_REQ_ERR: "qp",
            E.QP_ACCESS_ERR: "qp",
            E.COMM_EST: "qp",
            E.SQ_DRAINED: "qp",
            E.PATH_MIG: "qp",
            E.PATH_MIG_ERR: "qp",
            E.QP_LAST_WQE_REACHED: "qp",
            E.SRQ_ERR: "srq",
            E.SRQ_LIMIT_REACHED: "srq",
            E.WQ_FATAL: "wq",
            E.DEVICE_FATAL: "stranger",
            E.PORT_ACTIVE: "port",
            E.PORT_ERR: "port",
            E.LID_CHANGE: "port",
            E.GID_CHANGE: "port",
        }
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            srq = pd.create_srq(max_wr=8, max_sge=1)
            qp = pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=4))
            wq = ctx.create_wq(pd, cq)
            objs = {"cq": cq, "qp": qp, "srq": srq, "wq": wq}
            for t, what in about.items():
                fake.async_event(int(t), what, 1)
                ev = ctx.get_async_event()
                el = ev.element
                who = next((k for k, o in objs.items() if el is o), el)
                out[t.name] = [ev.element_type, who, ev.event_type == t, ev.acked]
                ev.ack()
                out[t.name].append(ev.acked)
            for o in (wq, qp, srq):
                o.close()
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["CQ_ERR"] == ["cq", "cq", True, False, True]
    for name in ("QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR", "COMM_EST", "SQ_DRAINED"):
        assert out[name] == ["qp", "qp", True, False, True], name
    for name in ("PATH_MIG", "PATH_MIG_ERR", "QP_LAST_WQE_REACHED"):
        assert out[name] == ["qp", "qp", True, False, True], name
    assert out["SRQ_ERR"] == out["SRQ_LIMIT_REACHED"] == ["srq", "srq", True, False, True]
    assert out["WQ_FATAL"] == ["wq", "wq", True, False, True]
    # DEVICE_FATAL's element is the device: no object of ours.
    assert out["DEVICE_FATAL"] == ["device", None, True, False, True]
    for name in ("PORT_ACTIVE", "PORT_ERR", "LID_CHANGE", "GID_CHANGE"):
        assert out[name] == ["port", 1, True, False, True], name
    acks = res.calls("ack_async_event")
    assert [r["event.event_type"] for r in acks] == [int(E[name]) for name in out]
    assert res.live == 0, res.live_report


def test_an_unacked_event_holds_its_element_until_acked(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            qp = pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=4))
            fake.async_event(int(enums.EventType.QP_FATAL), "qp", 1)
            ev = ctx.get_async_event()
            out["repr"] = repr(ev)
            out["ctx"] = ev.context is ctx
            try:
                qp.close()
            except ibverbs.VerbsError as e:
                out["busy"] = [e.errno, qp.closed]
            # Context.ack_async_event takes this context's events only.
            try:
                ctx.ack_async_event(qp)
            except TypeError as e:
                out["type"] = str(e)
            with ibverbs.Context("fake1") as other:
                try:
                    other.ack_async_event(ev)
                except ValueError as e:
                    out["other"] = str(e)
            ctx.ack_async_event(ev)
            out["acked"] = [ev.acked, repr(ev).endswith(" acked>")]
            ctx.ack_async_event(ev)  # twice: nothing more to ack
            qp.close()
            out["closed"] = qp.closed
            # As a context manager: acked on the way out, even with the
            # element gone (a QP the binding did not create).
            fake.async_event(int(enums.EventType.COMM_EST), "stranger", 1)
            with ctx.get_async_event() as ev2:
                out["stranger"] = [ev2.element_type, ev2.element, ev2.acked]
            out["stranger"].append(ev2.acked)
            # An event dropped unacked is acked by its finalizer.
            fake.async_event(int(enums.EventType.CQ_ERR), "cq", 1)
            ctx.get_async_event()
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["ctx"] is True
    assert out["repr"].startswith("<ibverbs.AsyncEvent ") and " qp=<" in out["repr"]
    assert out["busy"] == [errno.EBUSY, False]
    assert "AsyncEvent" in out["type"]
    assert "Context" in out["other"]
    assert out["acked"] == [True, True]
    assert out["closed"] is True
    assert out["stranger"] == ["qp", None, False, True]
    assert [r["event.event_type"] for r in res.calls("ack_async_event")] == [
        int(E.QP_FATAL),
        int(E.COMM_EST),
        int(E.CQ_ERR),
    ]
    assert res.live == 0, res.live_report


def test_a_failed_read_is_an_error_naming_the_verb(recording):
    def body(fake):
        import errno

        import ibverbs

        out = []
        with ibverbs.Context("fake0") as ctx:
            for err in (errno.EIO, 0):
                if err:
                    fake.fail("get_async_event", err)
                try:
                    ctx.get_async_event()
                except ibverbs.VerbsError as e:
                    out.append([e.errno, e.operation, str(e)])
        return out

    out = recording.run(body).ok()
    assert out[0][:2] == [errno.EIO, "ibv_get_async_event"]
    assert out[1][:2] == [errno.EAGAIN, "ibv_get_async_event"]
    assert "no async event pending" in out[1][2]


def test_an_event_outliving_its_context_and_one_in_a_cycle(recording):
    def body(fake):
        import gc

        import ibverbs
        from ibverbs import enums

        out = {}
        ctx = ibverbs.Context("fake0")
        fake.async_event(int(enums.EventType.PORT_ERR), "port", 1)
        ev = ctx.get_async_event()
        out["text"] = ev.event_type_str
        ctx.close()  # a port event holds no element: the close goes through
        fake.clear()
        ev.ack()  # the context is gone: nothing to hand libibverbs
        out["after_close"] = [ev.acked, [r.verb for r in fake.records()]]
        with ibverbs.Context("fake0") as ctx2:
            fake.async_event(int(enums.EventType.LID_CHANGE), "port", 1)
            cycle = [ctx2.get_async_event()]
            cycle.append(cycle)
            del cycle
            fake.clear()
            gc.collect()  # the cycle's event is traversed, cleared, acked
            out["collected"] = [r.verb for r in fake.records()]
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["text"] == f"fake event {int(E.PORT_ERR)}"
    assert out["after_close"] == [True, []]
    assert out["collected"] == ["ack_async_event"]
    assert res.live == 0, res.live_report
