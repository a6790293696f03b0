"""A provider without some verbs_context ops, against the recording double
(tests/fakes/recording/, ``fake_drop_ops``): query_port and
query_device_ex fall back to the exported legacy verbs, open_xrcd,
open_qp and create_srq_ex are VerbsError(EOPNOTSUPP) naming the verb,
and no verb is called for them."""

from __future__ import annotations

import errno


def test_missing_context_ops_fall_back_or_refuse(recording):
    def body(fake):
        import ctypes
        import errno

        import ibverbs
        from ibverbs import enums

        drop = fake.lib.fake_drop_ops
        drop.argtypes = [ctypes.c_char_p]
        drop.restype = ctypes.c_int
        out = {"unknown": drop(b"no_such_op")}

        def err(fn):
            try:
                fn()
            except ibverbs.VerbsError as e:
                return [e.errno, e.operation, str(e)]
            return "returned"

        with ibverbs.Context("fake0") as full:
            out["full"] = [int(full.query_port(1).state), full.query_device_ex().legacy]
        drop(b"query_port query_device_ex open_qp create_srq_ex")
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(4) as cq:
            xrcd = ctx.open_xrcd()
            fake.clear()
            out["port"] = int(ctx.query_port(1).state)
            out["dev"] = [ctx.query_device_ex().legacy, ctx.query_device_ex().orig_attr.max_qp]
            out["legacy_verbs"] = [r.verb for r in fake.take()]
            fake.fail("query_device", errno.EIO)
            out["dev_err"] = err(ctx.query_device_ex)
            fake.clear()
            out["open_qp"] = err(lambda: ctx.open_qp(xrcd, 5))
            out["srq_ex"] = err(
                lambda: ctx.create_srq_ex(pd, srq_type=enums.SRQType.TM, cq=cq, max_num_tags=4)
            )
            out["verbs"] = [r.verb for r in fake.records()]
            xrcd.close()
        drop(b"open_xrcd")
        with ibverbs.Context("fake0") as ctx:
            fake.clear()
            out["xrcd"] = err(ctx.open_xrcd)
            out["verbs"] += [r.verb for r in fake.records()]
        drop(b"")
        return out

    res = recording.run(body)
    out = res.ok()
    active = int(__import__("ibverbs").enums.PortState.ACTIVE)
    assert out["unknown"] == -1
    assert out["full"] == [active, False]
    assert out["port"] == active
    assert out["dev"] == [True, 1024]
    assert out["legacy_verbs"] == ["query_port", "query_device", "query_device"]
    assert out["dev_err"][:2] == [errno.EIO, "ibv_query_device"]
    lacks = "the provider does not implement it"
    assert out["xrcd"][:2] == [errno.EOPNOTSUPP, "ibv_open_xrcd"] and lacks in out["xrcd"][2]
    assert out["open_qp"][:2] == [errno.EOPNOTSUPP, "ibv_open_qp"] and lacks in out["open_qp"][2]
    assert out["srq_ex"][:2] == [errno.EOPNOTSUPP, "ibv_create_srq_ex"]
    assert out["verbs"] == []
    assert res.live == 0, res.live_report
