"""create_rwq_ind_table's refusals of its WQ list, against the recording
double (tests/fakes/recording/): no WQ, more than 2**16, an item that
is no WQ, a WQ of another Context; no verb is called for any."""

from __future__ import annotations


def test_create_rwq_ind_table_refuses_bad_lists(recording):
    def body(fake):
        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            with ibverbs.Context("fake1") as other, other.alloc_pd() as opd:
                with other.create_cq(4) as ocq:
                    wq = ctx.create_wq(pd, cq)
                    theirs = other.create_wq(opd, ocq)
                    fake.clear()
                    for name, wqs in (
                        ("empty", []),
                        ("too_many", [wq] * (1 << 17)),
                        ("not_wq", [wq, cq]),
                        ("other_ctx", [wq, theirs]),
                    ):
                        try:
                            ctx.create_rwq_ind_table(wqs)
                        except (TypeError, ValueError) as e:
                            out[name] = [type(e).__name__, str(e)]
                    out["verbs"] = [r.verb for r in fake.records()]
                    theirs.close()
                    wq.close()
        return out

    res = recording.run(body)
    out = res.ok()
    msg = "wqs must hold a power of two of WQs (1..65536), not "
    assert out["empty"] == ["ValueError", msg + "0"]
    assert out["too_many"] == ["ValueError", msg + str(1 << 17)]
    assert out["not_wq"][0] == "TypeError" and "wqs[1]" in out["not_wq"][1]
    assert out["other_ctx"][0] == "ValueError" and "wqs[1]" in out["other_ctx"][1]
    assert out["verbs"] == []
    assert res.live == 0, res.live_report
