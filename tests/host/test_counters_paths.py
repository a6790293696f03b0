"""Counters.attach_point_flow failing for a rule bound to a flow, against
the recording double (tests/fakes/recording/): the error names the
verb, the counter and the flow, and the Counters stays usable."""

from __future__ import annotations

import errno


def test_a_failed_attach_to_a_flow_says_so(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import flow

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            raw = ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.RAW_PACKET)
            with pd.create_qp(raw) as qp:
                c = ctx.create_counters()
                f = qp.create_flow(flow.FlowAttr(specs=[flow.FlowSpecActionCount(c)]))
                fake.fail("attach_counters_point_flow", errno.EINVAL)
                try:
                    c.attach_point_flow(ibverbs.CounterDescription.BYTES, 3, flow=f)
                except ibverbs.VerbsError as e:
                    out["err"] = [e.errno, e.operation, str(e)]
                c.attach_point_flow(ibverbs.CounterDescription.BYTES, 3, flow=f)
                f.close()
                c.close()
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["err"][:2] == [errno.EINVAL, "ibv_attach_counters_point_flow"]
    assert "counter_desc=1 index=3 with a flow" in out["err"][2]
    calls = res.calls("attach_counters_point_flow")
    assert len(calls) == 2 and calls[1]["attr.index"] == 3
    assert res.live == 0, res.live_report
