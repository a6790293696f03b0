"""Work queues and RSS indirection tables against the recording double
(tests/fakes/recording/): their attributes, field by field.  A check of what
the binding hands libibverbs and what it makes of the answers, not evidence
that a provider runs the verbs.  rxe refuses them:
tests/device/test_xrc_wq.py."""

from __future__ import annotations

import errno

from ibverbs import enums


def test_wq_and_rwq_ind_table_pass_their_attributes(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import RecvWR, enums

        W = enums.WQFlags
        out = {}
        buf = bytearray(256)
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
            mr = ibverbs.reg_tensor(pd, buf, enums.AccessFlags.LOCAL_WRITE)
            w1 = ctx.create_wq(pd, cq, max_wr=64, max_sge=2, create_flags=W.CVLAN_STRIPPING)
            w2 = ctx.create_wq(pd, cq)
            out["w1"] = [w1.pd is pd, w1.cq is cq, int(w1.wq_type), w1.max_wr, w1.max_sge]
            w1.modify(wq_state=enums.WQState.RDY)
            w2.modify(
                wq_state=enums.WQState.RDY,
                curr_wq_state=enums.WQState.RESET,
                flags=W.SCATTER_FCS,
                flags_mask=W.SCATTER_FCS | W.CVLAN_STRIPPING,
            )
            w2.modify(flags=W.DELAY_DROP)
            out["state"] = [int(w1.state), int(w2.state)]
            w1.post_recv(
                [
                    RecvWR(wr_id=5, sg_list=[mr.sge(64)]),
                    RecvWR(wr_id=6, sg_list=[mr.sge(32, offset=64)]),
                ]
            )
            fake.fail("post_wq_recv", errno.ENOMEM)
            try:
                w1.post_recv(RecvWR(wr_id=7, sg_list=[mr.sge(8)]))
            except ibverbs.VerbsError as e:
                out["post_err"] = [e.errno, e.operation]
            tbl = ctx.create_rwq_ind_table((w1, w2))
            out["tbl"] = [tbl.wqs == (w1, w2), tbl.context is ctx, tbl.ind_tbl_num != 0]
            for h in (w1, cq):
                try:
                    h.close()
                except ibverbs.VerbsError as e:
                    out.setdefault("busy", []).append(e.errno)
            try:
                ctx.create_rwq_ind_table([w1, w2, w1])
            except ValueError:
                out["three"] = "ValueError"
            nums = [w1.wq_num, w2.wq_num]
            tbl.close()
            out["wqs_after"] = tbl.wqs
            fake.fail("create_wq", errno.ENOMEM)
            try:
                ctx.create_wq(pd, cq)
            except ibverbs.VerbsError as e:
                out["create_err"] = [e.errno, e.operation]
            w1.close()
            w2.close()
            addr = mr.addr
            mr.close()
        return out, nums, addr

    res = recording.run(body)
    out, nums, addr = res.ok()
    assert out["w1"] == [True, True, int(enums.WQType.RQ), 64, 2]
    assert out["state"] == [int(enums.WQState.RDY)] * 2
    assert out["post_err"] == [errno.ENOMEM, "ibv_post_wq_recv"]
    assert out["tbl"] == [True, True, True]
    assert out["busy"] == [errno.EBUSY, errno.EBUSY]
    assert out["three"] == "ValueError"
    assert out["wqs_after"] == []
    assert out["create_err"] == [errno.ENOMEM, "ibv_create_wq"]
    c1, c2, _failed = res.calls("create_wq")
    W = enums.WQFlags
    assert c1["attr.comp_mask"] == int(enums.WQInitAttrMask.FLAGS)
    assert c1["attr.create_flags"] == int(W.CVLAN_STRIPPING)
    assert (c1["attr.max_wr"], c1["attr.max_sge"], c1["attr.wq_type"]) == (64, 2, 0)
    assert c1["attr.wq_context"] != 0 and c1["attr.pd"] == res.one("dealloc_pd")["pd"]
    assert c1["attr.cq"] == res.one("destroy_cq")["cq"]
    assert c2["attr.comp_mask"] == 0 and "attr.create_flags" not in c2.fields
    assert (c2["attr.max_wr"], c2["attr.max_sge"]) == (128, 1)
    m1, m2, m3 = res.calls("modify_wq")
    A = enums.WQAttrMask
    assert m1["attr.attr_mask"] == int(A.STATE) and m1["attr.wq_state"] == int(enums.WQState.RDY)
    assert "attr.flags" not in m1.fields
    assert m2["attr.attr_mask"] == int(A.STATE | A.CURR_STATE | A.FLAGS)
    assert m2["attr.curr_wq_state"] == int(enums.WQState.RESET)
    assert (m2["attr.flags"], m2["attr.flags_mask"]) == (
        int(W.SCATTER_FCS),
        int(W.SCATTER_FCS | W.CVLAN_STRIPPING),
    )
    # flags without flags_mask: the mask is the flags given
    assert m3["attr.attr_mask"] == int(A.FLAGS)
    assert (m3["attr.flags"], m3["attr.flags_mask"]) == (int(W.DELAY_DROP),) * 2
    p = res.calls("post_wq_recv")[0]
    assert p["wq_num"] == nums[0] and p["count"] == 2
    assert [p["wr[0].wr_id"], p["wr[1].wr_id"]] == [5, 6]
    assert (p["wr[0].sg_list[0].addr"], p["wr[0].sg_list[0].length"]) == (addr, 64)
    assert (p["wr[1].sg_list[0].addr"], p["wr[1].sg_list[0].length"]) == (addr + 64, 32)
    t = res.one("create_rwq_ind_table")
    assert t["attr.log_ind_tbl_size"] == 1 and t["attr.comp_mask"] == 0
    assert [t["attr.ind_tbl[0].wq_num"], t["attr.ind_tbl[1].wq_num"]] == nums
    v = res.verbs()
    assert v.index("destroy_rwq_ind_table") < v.index("destroy_wq")
    assert [r["wq_num"] for r in res.calls("destroy_wq")] == nums
    assert res.live == 0, res.live_report


def test_wq_and_rwq_ind_table_reprs_and_refused_arguments(recording):
    def body(fake):
        import gc

        import ibverbs
        from ibverbs import enums

        W = enums.WQFlags
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
            w = ctx.create_wq(pd, cq)
            t = ctx.create_rwq_ind_table([w])
            out["repr"] = [repr(w), repr(t)]
            fake.clear()
            for call in (
                lambda: w.modify(flags_mask=W.SCATTER_FCS),
                lambda: w.modify(),
                lambda: w.modify(wq_state="ready"),
                lambda: ctx.create_wq("pd", cq),
                lambda: ctx.create_rwq_ind_table(42),
                lambda: ctx.create_rwq_ind_table([w, pd]),
                lambda: ctx.create_rwq_ind_table(wqs=[w], extra=1),
            ):
                try:
                    call()
                except TypeError as e:
                    out.setdefault("type", []).append(str(e))
            with ibverbs.Context("fake0") as other:
                with other.alloc_pd() as opd, other.create_cq(4) as ocq:
                    ow = other.create_wq(opd, ocq)
                    try:
                        ctx.create_rwq_ind_table([w, ow])
                    except ValueError as e:
                        out["other"] = str(e)
                    ow.close()
            out["verbs"] = sorted({r.verb for r in fake.take()})
            t.close()
            w.close()
            out["closed"] = [repr(w), repr(t)]
            gc.collect()
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["repr"][0].startswith("<ibverbs.WQ wq_num=")
    assert out["repr"][1].startswith("<ibverbs.RWQIndTable ind_tbl_num=")
    assert out["type"][:2] == [
        "flags_mask needs flags",
        "modify() needs wq_state, curr_wq_state and/or flags",
    ]
    assert out["type"][5].startswith("wqs[1] must be a WQ")
    assert len(out["type"]) == 7
    assert "wqs[1]" in out["other"] and "Context" in out["other"]
    # nothing reached libibverbs but the other context's own objects
    assert "modify_wq" not in out["verbs"] and "create_rwq_ind_table" not in out["verbs"]
    assert out["closed"] == ["<ibverbs.WQ closed>", "<ibverbs.RWQIndTable closed>"]
    assert res.live == 0, res.live_report
