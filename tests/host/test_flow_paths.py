"""QP.create_flow's refusals of a FlowAttr that lies about itself, a
Counters of another Context in a spec, and the Flow and FlowAction reprs,
against the recording double (tests/fakes/recording/)."""

from __future__ import annotations


def test_create_flow_refuses_what_the_flow_attr_cannot_back(recording):
    def body(fake):
        import ibverbs
        from ibverbs import flow

        class NotBytes(flow.FlowAttr):
            def to_bytes(self):
                return bytearray(super().to_bytes())

        class ListObjects(flow.FlowAttr):
            def _objects(self):
                return list(super()._objects())

        class ShortObjects(flow.FlowAttr):
            def _objects(self):
                return ()

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            raw = ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.RAW_PACKET)
            with pd.create_qp(raw) as qp, ibverbs.Context("fake1") as other:
                theirs = other.create_counters()
                drop = [flow.FlowSpecActionDrop()]
                cases = {
                    "not_bytes": lambda: qp.create_flow(NotBytes(specs=drop)),
                    "list": lambda: qp.create_flow(ListObjects(specs=drop)),
                    "short": lambda: qp.create_flow(ShortObjects(specs=drop)),
                    "other_ctx": lambda: qp.create_flow(
                        flow.FlowAttr(specs=[flow.FlowSpecActionCount(theirs)])
                    ),
                }
                fake.clear()
                for name, fn in cases.items():
                    try:
                        fn()
                    except (TypeError, ValueError) as e:
                        out[name] = [type(e).__name__, str(e)]
                out["verbs"] = [r.verb for r in fake.records()]
                theirs.close()
                f = qp.create_flow(flow.FlowAttr(specs=drop))
                fa = ctx.create_flow_action_esp(ibverbs.FlowActionESPAttr(spi=1))
                out["repr"] = [repr(f), repr(fa)]
                f.close()
                fa.close()
                out["repr_closed"] = [repr(f), repr(fa)]
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["not_bytes"] == ["TypeError", "flow_attr.to_bytes() must return bytes"]
    assert out["list"] == ["TypeError", "FlowAttr._objects() must return a tuple"]
    assert out["short"] == ["ValueError", "FlowAttr._objects() has 0 items for 1 specs"]
    assert out["other_ctx"][0] == "ValueError"
    assert "spec 0: the Counters" in out["other_ctx"][1] and "Context" in out["other_ctx"][1]
    assert out["verbs"] == []
    assert out["repr"] == ["<ibverbs.Flow>", "<ibverbs.FlowAction>"]
    assert out["repr_closed"] == ["<ibverbs.Flow closed>", "<ibverbs.FlowAction closed>"]
    assert res.live == 0, res.live_report
