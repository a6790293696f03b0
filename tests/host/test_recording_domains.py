"""What the binding passes to libibverbs for thread and parent domains,
CQ moderation, tag matching reads, counters, completion counters and ESP
flow actions, checked field by field against the recording double
(tests/fakes/recording/domains.c, counters.c), and what Python gets
back.  No provider here runs these verbs (rxe answers EOPNOTSUPP:
tests/device/test_domains_counters.py): this is not evidence that they
work on hardware, only that the binding hands them what it should."""

from __future__ import annotations

import errno

import ibverbs


def test_thread_and_parent_domains_and_a_cq_in_one(recording):
    def body(fake):
        import errno
        import ibverbs

        F = ibverbs.CreateCQWCFlags
        out = {}
        with ibverbs.Context("fake0") as ctx:
            pd = ctx.alloc_pd()
            td = ctx.alloc_td()
            pdom = ctx.alloc_parent_domain(pd, td=td)
            plain = ctx.alloc_parent_domain(pd)
            out["types"] = [type(pdom).__name__, isinstance(pdom, ibverbs.PD)]
            out["refs"] = [pdom.pd is pd, pdom.td is td, plain.td is None, pdom.context is ctx]
            # the PD and TD are in use: close refuses, and both stay usable
            for o in (pd, td):
                try:
                    o.close()
                except ibverbs.VerbsError as e:
                    out.setdefault("busy", []).append([e.errno, o.closed])
            # a parent domain is a PD for every PD factory
            buf = bytearray(64)
            mr = ibverbs.reg_tensor(pdom, buf, ibverbs.AccessFlags.LOCAL_WRITE)
            cq = ctx.create_cq_ex(
                ibverbs.CQInitAttrEx(8, wc_flags=F.BYTE_LEN | F.TM_INFO, parent_domain=pdom)
            )
            qp = pdom.create_qp(ibverbs.QPInitAttr(cq, cq))
            for state in ("INIT", "RTR", "RTS"):
                qp.modify(ibverbs.QPAttrMask.STATE, qp_state=ibverbs.QPState[state])
            try:
                pdom.close()
            except ibverbs.VerbsError as e:
                out["pdom_busy"] = e.errno
            cq.modify(16, 100)
            qp.post_send(ibverbs.SendWR(wr_id=7, sg_list=[mr.sge(8)], send_flags=2))
            assert cq.start_poll()
            tm = cq.read_tm_info()
            out["tm"] = [cq.wr_id, tm.tag, tm.priv, type(tm).__name__]
            cq.end_poll()
            fake.fail("modify_cq", errno.EOPNOTSUPP)
            try:
                cq.modify(1, 0)
            except ibverbs.VerbsError as e:
                out["modify_err"] = [e.errno, e.operation]
            for o in (qp, cq, mr, plain, pdom):
                o.close()
            out["after"] = [pdom.pd, pdom.td, pdom.closed]
            td.close()
            pd.close()
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["types"] == ["ParentDomain", True]
    assert out["refs"] == [True, True, True, True]
    assert out["busy"] == [[errno.EBUSY, False], [errno.EBUSY, False]]
    assert out["pdom_busy"] == errno.EBUSY
    assert out["tm"] == [7, 0x1122334455667788, 0xFEEDBEEF, "WCTMInfo"]
    assert out["modify_err"] == [errno.EOPNOTSUPP, "ibv_modify_cq"]
    assert out["after"] == [None, None, True]
    assert res.live == 0, res.live_report

    td = res.one("alloc_td")
    assert td["attr.comp_mask"] == 0
    with_td, without = res.calls("alloc_parent_domain")
    for rec in (with_td, without):
        assert rec["attr.comp_mask"] == 0 and "attr.alloc" not in rec
        assert rec["context"] == td["context"]
    assert with_td["attr.td"] == res.one("dealloc_td")["td"] != 0
    assert without["attr.td"] == 0
    assert with_td["attr.pd"] == without["attr.pd"] != 0
    # ibv_dealloc_pd frees the parent domains, then the PD
    freed = [r["pd"] for r in res.calls("dealloc_pd")]
    assert freed[-1] == with_td["attr.pd"] and len(freed) == 3
    pdom_ptr = freed[1]
    cq = res.one("create_cq_ex")
    assert cq["attr.comp_mask"] == 2  # IBV_CQ_INIT_ATTR_MASK_PD only
    assert cq["attr.parent_domain"] == pdom_ptr
    assert cq["attr.wc_flags"] == int(
        ibverbs.CreateCQWCFlags.BYTE_LEN | ibverbs.CreateCQWCFlags.TM_INFO
    )
    qp = res.one("create_qp")
    assert qp["pd"] == pdom_ptr
    ok, failed = res.calls("modify_cq")
    assert ok.prefixed("attr.") == {
        "attr_mask": int(ibverbs.CQAttrMask.MODERATE),
        "moderate.cq_count": 16,
        "moderate.cq_period": 100,
    }
    assert ok["cq"] == cq_ptr(res)
    assert failed["injected_errno"] == errno.EOPNOTSUPP
    assert failed["attr.moderate.cq_count"] == 1 and failed["attr.moderate.cq_period"] == 0
    assert res.one("read_tm_info")["cq"] == ok["cq"]


def cq_ptr(res):
    return res.one("destroy_cq")["cq"]


def test_parent_domain_refusals_leave_nothing(recording):
    def body(fake):
        import errno
        import ibverbs

        out = []
        with ibverbs.Context("fake0") as ctx, ibverbs.Context("fake1") as other:
            pd, opd, otd = ctx.alloc_pd(), other.alloc_pd(), other.alloc_td()
            for call in (
                lambda: ctx.alloc_parent_domain(opd),
                lambda: ctx.alloc_parent_domain(pd, td=otd),
                lambda: ctx.alloc_parent_domain(pd, td=pd),
                lambda: ctx.alloc_parent_domain(ctx),
            ):
                try:
                    call()
                except (TypeError, ValueError) as e:
                    out.append(type(e).__name__)
            pdom = ctx.alloc_parent_domain(pd)
            try:
                ctx.alloc_parent_domain(pdom)
            except TypeError:
                out.append("nested")
            try:
                other.create_cq_ex(ibverbs.CQInitAttrEx(4, parent_domain=pdom))
            except ValueError:
                out.append("cq of another context")
            fake.fail("alloc_parent_domain", errno.ENOMEM)
            try:
                ctx.alloc_parent_domain(pd)
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
            fake.fail("alloc_td", errno.EOPNOTSUPP)
            try:
                ctx.alloc_td()
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
            for o in (pdom, pd, opd, otd):
                o.close()
        return out

    res = recording.run(body)
    assert res.ok() == [
        "ValueError",
        "ValueError",
        "TypeError",
        "TypeError",
        "nested",
        "cq of another context",
        [errno.ENOMEM, "ibv_alloc_parent_domain"],
        [errno.EOPNOTSUPP, "ibv_alloc_td"],
    ]
    assert len(res.calls("alloc_parent_domain")) == 2  # the valid one, the injected failure
    assert not res.calls("create_cq_ex")
    assert res.live == 0, res.live_report


def test_counters_attach_read_and_bind_to_a_flow(recording):
    def body(fake):
        import ibverbs
        from ibverbs import flow

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            with (
                ctx.create_cq(8) as cq,
                pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.RAW_PACKET)) as qp,
            ):
                c = ctx.create_counters()
                c.attach_point_flow(ibverbs.CounterDescription.PACKETS, 0)
                c.attach_point_flow(ibverbs.CounterDescription.BYTES, 1)
                rule = flow.FlowAttr(
                    specs=[flow.FlowSpecEth(ether_type=0x0800), flow.FlowSpecActionCount(c)]
                )
                f = qp.create_flow(rule)
                c.attach_point_flow(ibverbs.CounterDescription.BYTES, 2, flow=f)
                out["values"] = c.read(3)
                out["cached"] = c.read(1, flags=ibverbs.ReadCountersFlags.PREFER_CACHED)
                try:
                    c.read(0)
                except ValueError:
                    out["read0"] = "ValueError"
                try:
                    qp.create_flow(rule.to_bytes())
                except TypeError:
                    out["bytes"] = "TypeError"
                f.close()
                c.close()
                try:
                    qp.create_flow(rule)
                except ibverbs.VerbsError as e:
                    out["closed"] = e.errno
        return out

    res = recording.run(body)
    out = res.ok()
    assert out == {
        "values": [1000, 1001, 1002],
        "cached": [1000],
        "read0": "ValueError",
        "bytes": "TypeError",
        "closed": errno.EBADF,
    }
    assert res.live == 0, res.live_report
    assert res.one("create_counters")["attr.comp_mask"] == 0
    ptr = res.one("destroy_counters")["counters"]
    a0, a1, a2 = res.calls("attach_counters_point_flow")
    assert [a0["attr.counter_desc"], a0["attr.index"], a0["flow"], a0["counters"]] == [
        int(ibverbs.CounterDescription.PACKETS),
        0,
        0,
        ptr,
    ]
    assert [a1["attr.counter_desc"], a1["attr.index"], a1["attr.comp_mask"]] == [1, 1, 0]
    assert a2["flow"] == res.one("destroy_flow")["flow"] != 0
    r3, r1 = res.calls("read_counters")
    assert [r3["ncounters"], r3["flags"], r1["ncounters"], r1["flags"]] == [3, 0, 1, 1]
    # only the FlowAttr made it to the verb: its count spec holds the pointer
    made = res.one("create_flow")
    assert made["attr.num_of_specs"] == 2
    raw = made["spec[1].bytes"]
    size, off, _, psize = ibverbs.flow.LAYOUTS["action_count"]
    assert len(raw) == size
    assert int.from_bytes(raw[off : off + psize], "little") == ptr


def test_comp_cntr_verbs(recording):
    def body(fake):
        import errno
        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            caps = ctx.query_comp_cntr_caps()
            out["caps"] = [caps.max_value, caps.max_counters, caps.supported_qp_attach_ops]
            out["caps_type"] = type(caps).__name__
            with pd.create_qp(ibverbs.QPInitAttr(cq, cq)) as qp:
                cc = ctx.create_comp_cntr(ibverbs.CompCntrType.BYTES, flags=0)
                cc2 = ctx.create_comp_cntr()
                out["type"] = [cc.type, type(cc.type).__name__, cc2.type]
                cc.set(10)
                cc.inc(5)
                cc.set_err(2)
                cc.inc_err(2**64 - 3)
                out["read"] = [cc.read(), cc.read_err()]
                ops = ibverbs.QPAttachCompCntrOp
                qp.attach_comp_cntr(cc, ops.SEND | ops.RDMA_WRITE)
                for bad in (-1, 2**64):
                    try:
                        cc.set(bad)
                    except ValueError:
                        out.setdefault("bad", []).append(bad)
                try:
                    qp.attach_comp_cntr(pd, 1)
                except TypeError:
                    out["not_cc"] = True
                fake.fail("inc_comp_cntr", errno.EINVAL)
                try:
                    cc.inc(1)
                except ibverbs.VerbsError as e:
                    out["inc_err"] = [e.errno, e.operation]
                cc2.close()
                cc.close()
                try:
                    cc.read()
                except ibverbs.VerbsError as e:
                    out["closed"] = e.errno
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["caps"] == [2**48 - 1, 64, 0x3F] and out["caps_type"] == "CompCntrCaps"
    assert out["type"] == [1, "CompCntrType", 0]
    assert out["read"] == [15, 2**64 - 1]
    assert out["bad"] == [-1, 2**64] and out["not_cc"]
    assert out["inc_err"] == [errno.EINVAL, "ibv_inc_comp_cntr"]
    assert out["closed"] == errno.EBADF
    assert res.live == 0, res.live_report
    assert res.one("query_comp_cntr_caps")["caps_size"] == 16
    c1, c2 = res.calls("create_comp_cntr")
    assert c1.prefixed("attr.") == {"comp_mask": 0, "type": 1, "flags": 0}
    assert c2["attr.type"] == int(ibverbs.CompCntrType.WRS)
    ptr = res.calls("destroy_comp_cntr")[1]["comp_cntr"]
    assert [r["value"] for r in res.calls("set_comp_cntr")] == [10]
    assert [r["amount"] for r in res.calls("inc_comp_cntr")] == [5, 1]
    assert res.one("set_err_comp_cntr")["value"] == 2
    assert res.one("inc_err_comp_cntr")["amount"] == 2**64 - 3
    att = res.one("qp_attach_comp_cntr")
    assert att["comp_cntr"] == ptr and att["qp.qp_num"] == res.one("destroy_qp")["qp_num"]
    assert att.prefixed("attr.") == {"comp_mask": 0, "op_mask": 0x11}


def test_esp_flow_action_fields(recording):
    def body(fake):
        import ibverbs
        from ibverbs import flow

        E = ibverbs.FlowActionESPFlags
        full = ibverbs.FlowActionESPAttr(
            spi=0xABCD,
            seq=3,
            tfc_pad=4,
            flags=E.FULL_OFFLOAD | E.ENCRYPT,
            hard_limit_pkts=2**40,
            key=bytes(range(32)),
            iv=2**63 + 1,
            iv_algo=ibverbs.FlowActionIVAlgo.SEQ,
            salt=0x5A17,
            icv_len=16,
            replay_window=128,
            esn=9,
        )
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            with pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.RAW_PACKET)) as qp:
                fa = ctx.create_flow_action_esp(full)
                fa.modify_esp(ibverbs.FlowActionESPAttr(spi=1))
                f = qp.create_flow(flow.FlowAttr(specs=[flow.FlowSpecActionHandle(fa)]))
                try:
                    fa.close()  # the kernel would hold it; the binding holds nothing
                except ibverbs.VerbsError as e:
                    out["close"] = e.errno
                f.close()
                out["closed"] = fa.closed
                for bad in ({"key": b"k" * 33}, {"spi": 2**32}, {"esn": -1}):
                    try:
                        ctx.create_flow_action_esp(ibverbs.FlowActionESPAttr(**bad))
                    except ValueError:
                        out.setdefault("bad", 0)
                        out["bad"] += 1
                try:
                    ctx.create_flow_action_esp(object())
                except TypeError:
                    out["not_attr"] = True
        return out

    res = recording.run(body)
    out = res.ok()
    assert out == {"closed": True, "bad": 3, "not_attr": True}
    assert res.live == 0, res.live_report
    made = res.one("create_flow_action_esp")
    E = ibverbs.FlowActionESPFlags
    assert made.prefixed("esp.") == {
        "esp_attr": made["esp.esp_attr"],
        "spi": 0xABCD,
        "seq": 3,
        "tfc_pad": 4,
        "flags": int(E.FULL_OFFLOAD | E.ENCRYPT),
        "hard_limit_pkts": 2**40,
    }
    assert made.prefixed("keymat.") == {
        "iv": 2**63 + 1,
        "iv_algo": 0,
        "salt": 0x5A17,
        "icv_len": 16,
        "key_len": 32,
        "aes_key": bytes(range(32)),
    }
    assert made["keymat_proto"] == 0 and made["keymat_len"] == 56
    assert made["replay_proto"] == 1 and made["replay_len"] == 4 and made["replay.size"] == 128
    assert made["esp_encap"] == 0 and made["comp_mask"] == 1 and made["esn"] == 9
    mod = res.one("modify_flow_action_esp")
    ptr = res.one("destroy_flow_action")["action"]
    assert mod["action"] == ptr and mod["esp.spi"] == 1
    assert mod["keymat_ptr"] == 0 and mod["keymat_len"] == 0
    assert mod["replay_proto"] == 0 and mod["replay_ptr"] == 0
    assert mod["comp_mask"] == 0 and "esn" not in mod
    raw = res.one("create_flow")["spec[0].bytes"]
    size, off, _, psize = ibverbs.flow.LAYOUTS["action_handle"]
    assert int.from_bytes(raw[off : off + psize], "little") == ptr
