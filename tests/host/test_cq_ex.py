"""The extended CQ against the recording double (tests/fakes/recording/):
the timestamps, cvlan and flow tag it reads from the double's completions.
A check of what the binding hands libibverbs and what it makes of the
answers, not evidence that a provider runs the verbs.  On rxe:
tests/device/test_cq_ex_device.py."""

from __future__ import annotations

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
