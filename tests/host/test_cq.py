"""CQs against the recording double (tests/fakes/recording/): every
attribute of create_cq and create_cq_ex, and completion events through a
channel.  A check of what the binding hands libibverbs and what it makes of
the answers, not evidence that a provider runs the verbs.  On rxe:
tests/device/test_cq_device.py."""

from __future__ import annotations

from ibverbs import enums


def test_create_cq_and_create_cq_ex_pass_every_attribute(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        W, F = enums.CreateCQWCFlags, enums.CreateCQAttrFlags
        with ibverbs.Context("fake0") as ctx:
            ch = ctx.create_comp_channel()
            cq = ctx.create_cq(100, ch, 3)
            cqe = cq.cqe
            attr = ibverbs.CQInitAttrEx(
                50,
                wc_flags=W.BYTE_LEN | W.QP_NUM | W.COMPLETION_TIMESTAMP,
                channel=ch,
                comp_vector=2,
                flags=F.SINGLE_THREADED,
            )
            cqx = ctx.create_cq_ex(attr)
            plain = ctx.create_cq_ex(ibverbs.CQInitAttrEx(8))
            for c in (plain, cqx, cq, ch):
                c.close()
        return cqe

    res = recording.run(body)
    assert res.ok() == 100
    cc = res.one("create_comp_channel")
    cq = res.one("create_cq")
    assert (cq["cqe"], cq["comp_vector"]) == (100, 3)
    assert cq["channel"] != 0 and cq["context"] == cc["context"]
    assert cq["cq_context"] != 0  # the CQ object: get_cq_event finds it back
    cqx, plain = res.calls("create_cq_ex")
    W, F = enums.CreateCQWCFlags, enums.CreateCQAttrFlags
    assert cqx.prefixed("attr.") == {
        "cqe": 50,
        "cq_context": cqx["attr.cq_context"],
        "channel": cq["channel"],
        "comp_vector": 2,
        "wc_flags": int(W.BYTE_LEN | W.QP_NUM | W.COMPLETION_TIMESTAMP),
        "comp_mask": 1,  # IBV_CQ_INIT_ATTR_MASK_FLAGS
        "flags": int(F.SINGLE_THREADED),
    }
    assert cqx["attr.cq_context"] != 0
    assert (plain["attr.cqe"], plain["attr.channel"], plain["attr.wc_flags"]) == (8, 0, 0)
    assert plain["attr.comp_mask"] == 0 and "attr.flags" not in plain
    assert len(res.calls("destroy_cq")) == 3
    assert res.verbs()[-2:] == ["destroy_comp_channel", "close_device"]
    assert res.live == 0, res.live_report


def test_completion_events_through_a_channel(recording):
    def body(fake):
        import select

        import ibverbs
        from ibverbs import enums

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            ch = ctx.create_comp_channel()
            cq = ctx.create_cq(8, ch)
            qp = pd.create_qp(ibverbs.QPInitAttr(cq))
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)
            idle = select.select([ch.fd], [], [], 0)[0]
            cq.req_notify()
            qp.post_recv(ibverbs.RecvWR(1, [ibverbs.SGE(0x1000, 8, 1)]))
            ready = select.select([ch.fd], [], [], 5)[0]
            same = ch.get_cq_event() is cq
            cq.ack_events(1)
            n = len(cq.poll(4))
            qp.close()
            cq.close()
            ch.close()
        return [len(idle), len(ready), same, n]

    res = recording.run(body)
    assert res.ok() == [0, 1, True, 1]
    assert res.one("req_notify_cq")["solicited_only"] == 0
    assert res.one("ack_cq_events")["nevents"] == 1
    assert res.one("get_cq_event")["channel"] == res.one("create_cq")["channel"]
    assert res.live == 0, res.live_report
