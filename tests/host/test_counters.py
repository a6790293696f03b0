"""Counters and completion counters against the recording double
(tests/fakes/recording/): attach, read, bind to a flow, and the comp_cntr
verbs.  A check of what the binding hands libibverbs and what it makes of
the answers, not evidence that a provider runs the verbs.  rxe refuses them:
tests/device/test_counters_device.py."""

from __future__ import annotations

import errno

import ibverbs


def test_counters_attach_read_and_bind_to_a_flow(recording):
    def body(fake):
        import ibverbs
        from support.rdma import verbs_error_of
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
                out["closed"] = verbs_error_of(lambda: qp.create_flow(rule)).errno
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

        from support.rdma import verbs_error_of

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
                e = verbs_error_of(lambda: cc.inc(1))
                out["inc_err"] = [e.errno, e.operation]
                cc2.close()
                cc.close()
                out["closed"] = verbs_error_of(cc.read).errno
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


def test_counters_reprs_bad_arguments_and_a_failed_read(recording):
    def body(fake):
        import errno

        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            c = ctx.create_counters()
            cc = ctx.create_comp_cntr(ibverbs.CompCntrType.BYTES)
            out["repr"] = [repr(c), repr(cc)]
            for call in (
                lambda: c.attach_point_flow("packets", 0),
                lambda: ctx.create_comp_cntr("bytes"),
            ):
                try:
                    call()
                except TypeError as e:
                    out.setdefault("type", []).append(str(e))
            fake.clear()
            fake.fail("read_counters", errno.EOPNOTSUPP)
            try:
                c.read(2, flags=1)
            except ibverbs.VerbsError as e:
                out["read"] = [e.errno, e.operation, str(e)]
            out["retry"] = c.read(2)
            out["verbs"] = [r.verb for r in fake.take()]
            c.close()
            cc.close()
            out["closed"] = [repr(c), repr(cc)]
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["repr"] == ["<ibverbs.Counters>", "<ibverbs.CompCntr type=1>"]
    assert out["type"][0] == "counter_desc must be an int, not <class 'str'>"
    assert out["type"][1].startswith("type must be an int")
    assert out["read"][:2] == [errno.EOPNOTSUPP, "ibv_read_counters"]
    assert "ncounters=2 flags=0x1" in out["read"][2]
    assert out["retry"] == [1000, 1001]
    # nothing attached for the TypeErrors; the failed read, then the retry
    assert out["verbs"] == ["read_counters", "read_counters"]
    assert out["closed"] == ["<ibverbs.Counters closed>", "<ibverbs.CompCntr closed>"]
    assert res.live == 0, res.live_report
