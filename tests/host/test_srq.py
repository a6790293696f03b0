"""SRQs against the recording double (tests/fakes/recording/): modify, query
and post_recv (with resize_cq and query_qp in the same run), every comp_mask
field of create_srq_ex, and the tag-matching post_srq_ops.  A check of what
the binding hands libibverbs and what it makes of the answers, not evidence
that a provider runs the verbs.  On rxe: tests/device/test_srq_device.py."""

from __future__ import annotations

import errno

from ibverbs import enums

SI = enums.SRQInitAttrMask


def test_srq_resize_cq_and_query_qp(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            with pd.create_srq(max_wr=32, max_sge=2) as srq:
                srq.modify(max_wr=64, srq_limit=7)
                out["srq"] = srq.query()
                srq.post_recv([ibverbs.RecvWR(1, ibverbs.SGE(0x1000, 8, 3)), ibverbs.RecvWR(2)])
                out["srq_posted"] = fake.srq_posted()
            cq.resize(100)
            out["cqe"] = cq.cqe
            with pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=9)) as qp:
                qp.to_init(1, enums.AccessFlags.REMOTE_READ, pkey_index=0)
                attrs, cap = qp.query()
                out["qp"] = [
                    int(attrs["qp_state"]),
                    attrs["port_num"],
                    int(attrs["qp_access_flags"]),
                ]
                out["cap"] = cap.max_send_wr
        return out

    res = recording.run(body)
    v = res.ok()
    assert v["srq"]["max_wr"] == 64 and v["srq"]["srq_limit"] == 7 and v["srq"]["max_sge"] == 2
    mod = res.one("modify_srq")
    assert mod["srq_attr_mask"] == int(enums.SRQAttrMask.MAX_WR | enums.SRQAttrMask.LIMIT)
    assert (mod["attr.max_wr"], mod["attr.srq_limit"]) == (64, 7)
    post = res.one("post_srq_recv")
    assert post["count"] == 2 and post["wr[0].sg_list[0].lkey"] == 3 and post["wr[1].num_sge"] == 0
    assert v["srq_posted"] == 2
    assert res.one("resize_cq")["cqe"] == 100 and v["cqe"] == 100
    assert v["qp"] == [int(enums.QPState.INIT), 1, int(enums.AccessFlags.REMOTE_READ)]
    assert v["cap"] == 9
    assert res.live == 0, res.live_report


def test_create_srq_ex_passes_every_field_of_its_comp_mask(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import enums

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = ctx.create_cq(16)
            x = ctx.open_xrcd()
            srq = ctx.create_srq_ex(
                pd, srq_type=enums.SRQType.XRC, xrcd=x, cq=cq, max_wr=64, max_sge=2, srq_limit=3
            )
            out["xrc"] = [
                int(srq.srq_type),
                srq.xrcd is x,
                srq.cq is cq,
                srq.pd is pd,
                srq.get_srq_num() == srq.handle,
                srq.query(),
            ]
            for h in (cq, x):
                try:
                    h.close()
                except ibverbs.VerbsError as e:
                    out.setdefault("busy", []).append(e.errno)
            srq.close()
            tm = ctx.create_srq_ex(pd, srq_type=enums.SRQType.TM, cq=cq, max_num_tags=16, max_ops=8)
            tm.close()
            # a basic SRQ goes through the exported ibv_create_srq
            basic = ctx.create_srq_ex(pd, max_wr=32)
            out["basic"] = [int(basic.srq_type), basic.xrcd, basic.cq]
            basic.close()
            fake.fail("create_srq_ex", errno.EINVAL)
            try:
                ctx.create_srq_ex(pd, srq_type=enums.SRQType.XRC, xrcd=x, cq=cq)
            except ibverbs.VerbsError as e:
                out["injected"] = [e.errno, e.operation]
            out["after"] = [cq.close(), x.close()]
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["xrc"] == [1, True, True, True, True, {"max_wr": 64, "max_sge": 2, "srq_limit": 3}]
    assert out["busy"] == [errno.EBUSY, errno.EBUSY]
    assert out["basic"] == [int(enums.SRQType.BASIC), None, None]
    assert out["injected"] == [errno.EINVAL, "ibv_create_srq_ex"]
    xrc, tm, failed = res.calls("create_srq_ex")
    pd_ptr = res.one("dealloc_pd")["pd"]
    cq_ptr = res.one("destroy_cq")["cq"]
    assert xrc["attr.comp_mask"] == int(SI.PD | SI.TYPE | SI.XRCD | SI.CQ)
    assert xrc["attr.srq_type"] == int(enums.SRQType.XRC)
    assert (xrc["attr.attr.max_wr"], xrc["attr.attr.max_sge"], xrc["attr.attr.srq_limit"]) == (
        64,
        2,
        3,
    )
    assert xrc["attr.pd"] == pd_ptr and xrc["attr.cq"] == cq_ptr
    assert xrc["attr.xrcd"] == res.one("close_xrcd")["xrcd"]
    assert xrc["attr.srq_context"] != 0
    assert "attr.tm_cap.max_num_tags" not in xrc.fields
    assert tm["attr.comp_mask"] == int(SI.PD | SI.TYPE | SI.CQ | SI.TM)
    assert tm["attr.srq_type"] == int(enums.SRQType.TM)
    assert (tm["attr.tm_cap.max_num_tags"], tm["attr.tm_cap.max_ops"]) == (16, 8)
    assert (tm["attr.attr.max_wr"], tm["attr.attr.max_sge"]) == (128, 1)
    assert "attr.xrcd" not in tm.fields
    assert failed.fields.get("injected_errno") == errno.EINVAL
    assert res.one("create_srq")["attr.max_wr"] == 32
    assert len(res.calls("get_srq_num")) == 1
    assert res.live == 0, res.live_report


def test_post_srq_ops_passes_every_op_field_and_returns_the_handles(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import OpsWR, enums

        OP, F = enums.OpsWROpcode, enums.OpsFlags
        buf = bytearray(256)
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            with ctx.create_cq(16) as cq:
                srq = ctx.create_srq_ex(pd, srq_type=enums.SRQType.TM, cq=cq, max_num_tags=8)
                mr = ibverbs.reg_tensor(pd, buf, enums.AccessFlags.LOCAL_WRITE)
                ops = [
                    OpsWR(
                        OP.TAG_ADD,
                        wr_id=1,
                        flags=F.SIGNALED,
                        recv_wr_id=9,
                        sg_list=[mr.sge(64), mr.sge(32, offset=64)],
                        tag=0xABC,
                        mask=0xFFF,
                    ),
                    OpsWR(OP.TAG_DEL, wr_id=2, handle=77),
                    OpsWR(OP.TAG_SYNC, wr_id=3, flags=F.TM_SYNC, unexpected_cnt=5),
                ]
                handles = srq.post_srq_ops(ops)
                single = srq.post_srq_ops(OpsWR(OP.TAG_SYNC, wr_id=4))
                fake.fail("post_srq_ops", errno.ENOMEM)
                try:
                    srq.post_srq_ops(ops)
                except ibverbs.VerbsError as e:
                    err = [e.errno, e.operation]
                lkey, addr = mr.lkey, mr.addr
                mr.close()
                try:
                    srq.post_srq_ops(ops)
                except ibverbs.VerbsError as e:
                    closed = e.errno
                srq.close()
        return handles, single, err, closed, addr, lkey

    res = recording.run(body)
    handles, single, err, closed, addr, lkey = res.ok()
    assert handles[0] != 0 and handles[1:] == [77, 0]
    assert single == [0]
    assert err == [errno.ENOMEM, "ibv_post_srq_ops"]
    assert closed == errno.EBADF
    first = res.calls("post_srq_ops")[0]
    OP, F = enums.OpsWROpcode, enums.OpsFlags
    assert first["count"] == 3
    assert [first[f"op[{i}].wr_id"] for i in range(3)] == [1, 2, 3]
    assert [first[f"op[{i}].opcode"] for i in range(3)] == [int(OP.TAG_ADD), int(OP.TAG_DEL), 2]
    assert [first[f"op[{i}].flags"] for i in range(3)] == [int(F.SIGNALED), 0, int(F.TM_SYNC)]
    assert first["op[1].tm.handle"] == 77 and first["op[2].tm.unexpected_cnt"] == 5
    add = first.fields
    assert (add["op[0].tm.add.recv_wr_id"], add["op[0].tm.add.tag"]) == (9, 0xABC)
    assert (add["op[0].tm.add.mask"], add["op[0].tm.add.num_sge"]) == (0xFFF, 2)
    assert (add["op[0].tm.add.sg_list[0].addr"], add["op[0].tm.add.sg_list[0].length"]) == (
        addr,
        64,
    )
    assert add["op[0].tm.add.sg_list[1].addr"] == addr + 64
    assert add["op[0].tm.add.sg_list[1].length"] == 32
    assert add["op[0].tm.add.sg_list[0].lkey"] == add["op[0].tm.add.sg_list[1].lkey"] == lkey
    assert "op[1].tm.add.tag" not in add  # only TAG_ADD carries the add fields
    # the failed post (injected) was recorded; the one with a closed MR never reached it
    assert len(res.calls("post_srq_ops")) == 3
    assert res.live == 0, res.live_report


def test_post_srq_ops_refuses_malformed_ops_before_the_verb(recording):
    def body(fake):
        import ibverbs
        from ibverbs import OpsWR, enums

        OP = enums.OpsWROpcode
        buf = bytearray(4096)
        out = []
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
            srq = ctx.create_srq_ex(pd, srq_type=enums.SRQType.TM, cq=cq, max_num_tags=8)
            mr = ibverbs.reg_tensor(pd, buf, enums.AccessFlags.LOCAL_WRITE)
            fake.clear()
            for ops in (
                [],
                [OpsWR(OP.TAG_SYNC)] * 65,
                [OpsWR(OP.TAG_SYNC), "sync"],
                [OpsWR(OP.TAG_SYNC, unexpected_cnt=2**32)],
                [OpsWR(OP.TAG_SYNC, flags=-1)],
                [OpsWR(OP.TAG_ADD, sg_list=[mr.sge(8), "sge"])],
                [OpsWR(OP.TAG_ADD, sg_list=[mr.sge(8)] * 40)] * 2,
            ):
                try:
                    srq.post_srq_ops(ops)
                except (TypeError, ValueError) as e:
                    out.append([type(e).__name__, str(e)])
            out.append([r.verb for r in fake.take()])
            mr.close()
            srq.close()
        return out

    out = recording.run(body).ok()
    assert out[0] == ["ValueError", "post_srq_ops takes 1..64 ops, not 0"]
    assert out[1] == ["ValueError", "post_srq_ops takes 1..64 ops, not 65"]
    assert out[2] == ["TypeError", "ops[1] must be an OpsWR, not <class 'str'> (it has no opcode)"]
    assert out[3] == ["ValueError", "ops[0].unexpected_cnt must be in range 0..2**32-1"]
    assert out[4] == ["ValueError", "ops[0].flags must be in range 0..2**31-1"]
    assert out[5] == ["TypeError", "ops[0].sg_list[1] must be an SGE, not <class 'str'>"]
    assert out[6] == ["ValueError", "ops[1].sg_list: more than 64 SGEs in all"]
    assert out[7] == []  # none reached ibv_post_srq_ops
