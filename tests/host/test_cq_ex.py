"""The extended CQ against the recording double (tests/fakes/recording/):
the timestamps, cvlan and flow tag it reads from the double's completions.
A check of what the binding hands libibverbs and what it makes of the
answers, not evidence that a provider runs the verbs.  On rxe:
tests/device/test_cq_ex_device.py."""

from __future__ import annotations

import errno

from ibverbs import enums


def test_extended_cq_reads_timestamps_cvlan_and_flow_tag(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        W = enums.CreateCQWCFlags
        fake.set_wc_ex(5000, 1_800_000_000_000_000_000, 0x0E07, 0xFEED)
        flags = W.COMPLETION_TIMESTAMP | W.COMPLETION_TIMESTAMP_WALLCLOCK | W.CVLAN
        flags |= W.FLOW_TAG | W.BYTE_LEN
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = ctx.create_cq_ex(ibverbs.CQInitAttrEx(32, wc_flags=flags))
            qp = pd.create_qp(ibverbs.QPInitAttr(cq, max_send_sge=2))
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)
            for wr_id in (7, 8):
                qp.post_recv(ibverbs.RecvWR(wr_id=wr_id, sg_list=[ibverbs.SGE(0x1000, 256, 1)]))
            wcs = cq.poll(4)
            out["poll"] = [
                [w.wr_id, w.completion_ts, w.completion_wallclock_ns, w.cvlan, w.flow_tag]
                for w in wcs
            ]
            qp.post_recv(ibverbs.RecvWR(wr_id=9, sg_list=[ibverbs.SGE(0x1000, 64, 1)]))
            assert cq.start_poll()
            out["read"] = [
                cq.wr_id,
                cq.read_completion_ts(),
                cq.read_completion_wallclock_ns(),
                cq.read_cvlan(),
                cq.read_flow_tag(),
                cq.read_byte_len(),
            ]
            # A post while polling (its completion lands on this CQ).
            qp.post_recv(ibverbs.RecvWR(wr_id=10, sg_list=[ibverbs.SGE(0x1000, 32, 1)]))
            cq.end_poll()
            out["after"] = [[w.wr_id, w.completion_ts] for w in cq.poll(4)]
            qp.close()
            cq.close()
        return out

    res = recording.run(body)
    v = res.ok()
    wall = 1_800_000_000_000_000_000
    assert v["poll"] == [
        [7, 5001, wall + 1, 0x0E07, 0xFEED],
        [8, 5002, wall + 2, 0x0E07, 0xFEED],
    ]
    assert v["read"] == [9, 5003, wall + 3, 0x0E07, 0xFEED, 64]
    assert v["after"] == [[10, 5004]]
    rec = res.one("create_cq_ex")
    W = enums.CreateCQWCFlags
    want = W.COMPLETION_TIMESTAMP | W.COMPLETION_TIMESTAMP_WALLCLOCK | W.CVLAN
    assert rec["attr.wc_flags"] == int(want | W.FLOW_TAG | W.BYTE_LEN)
    assert rec["attr.cqe"] == 32
    for field in ("completion_ts", "completion_wallclock_ns", "cvlan", "flow_tag"):
        assert len(res.calls(f"read_{field}")) == 4, field
    assert res.live == 0, res.live_report


def test_extended_cq_refuses_bad_attributes_and_session_misuse(recording):
    def body(fake):
        import errno

        import ibverbs

        out = {}

        def err(call):
            try:
                call()
                return "no error"
            except (TypeError, ValueError) as e:
                return [type(e).__name__, str(e)]
            except ibverbs.VerbsError as e:
                return [e.errno, e.operation, str(e)]

        A = ibverbs.CQInitAttrEx
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ibverbs.Context("fake0") as o:
            ch = o.create_comp_channel()
            fake.clear()
            out["attrs"] = [
                err(lambda a=a: ctx.create_cq_ex(a))
                for a in (
                    A(0),
                    A(8, wc_flags=1 << 40),
                    A(8, comp_vector=-1),
                    A(8, flags=1 << 20),
                    A(8, channel=pd),
                    A(8, channel=ch),
                    A(8, parent_domain=pd),
                )
            ]
            out["verbs"] = [r.verb for r in fake.take()]
            fake.fail("create_cq_ex", errno.ENOMEM)
            out["failed"] = err(lambda: ctx.create_cq_ex(A(8, flags=1)))
            cq = ctx.create_cq_ex(A(8))
            qp = pd.create_qp(ibverbs.QPInitAttr(cq))
            qp.to_init(1)
            qp.post_recv(ibverbs.RecvWR(wr_id=1, sg_list=[ibverbs.SGE(0x1000, 8, 1)]))
            assert cq.start_poll()
            out["poll_in_session"] = err(lambda: cq.poll(1))
            out["next"] = cq.next_poll()
            out["no_entry"] = err(cq.read_byte_len)
            cq.end_poll()
            out["empty"] = cq.start_poll()
            out["outside"] = err(cq.read_byte_len)
            qp.close()
            cq.close()
            ch.close()
        return out

    out = recording.run(body).ok()
    attrs = out["attrs"]
    assert attrs[0][0] == "ValueError" and "cqe" in attrs[0][1]
    assert attrs[1] == [
        "ValueError",
        "wc_flags has bits no CQEx takes: 0x10000000000 (CreateCQWCFlags)",
    ]
    assert attrs[2][0] == "ValueError" and "comp_vector" in attrs[2][1]
    assert attrs[3][0] == "ValueError" and "flags" in attrs[3][1]
    assert attrs[4][0] == "TypeError" and attrs[4][1].startswith("channel must be a CompChannel")
    assert attrs[5][0] == "ValueError" and "channel" in attrs[5][1] and "Context" in attrs[5][1]
    assert attrs[6][0] == "TypeError" and "parent_domain must be a ParentDomain" in attrs[6][1]
    assert out["verbs"] == []  # all refused before ibv_create_cq_ex
    assert out["failed"][:2] == [errno.ENOMEM, "ibv_create_cq_ex"]
    assert "cqe=8 wc_flags=0x0 flags=0x1" in out["failed"][2]
    assert out["poll_in_session"] == [
        "ValueError",
        "a start_poll() session is open on this CQEx: call end_poll() first",
    ]
    assert out["next"] is False
    assert out["no_entry"] == [
        "ValueError",
        "read_byte_len(): no current entry (next_poll() returned False or failed)",
    ]
    assert out["empty"] is False
    assert out["outside"][0] in ("ValueError", errno.EINVAL)
