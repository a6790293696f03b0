"""The remaining verbs of today's binding against the recording double
(tests/fakes/recording/): memory windows (alloc, bind by verb and by
work request), SRQ modify/query/post, resize_cq, query_qp reading back
what modify_qp set, query_device_ex, the GID/P_Key/index/L2 helpers and
the rate conversions, async events (none: EAGAIN)."""

from __future__ import annotations

from ibverbs import enums


def test_memory_windows_alloc_and_bind(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        A = enums.AccessFlags
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            mr = pd.reg_mr(0x10000, 8192, A.LOCAL_WRITE | A.REMOTE_WRITE | A.MW_BIND)
            qp = pd.create_qp(ibverbs.QPInitAttr(cq))
            for st in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
                qp.modify(enums.QPAttrMask.STATE, qp_state=st)
            mw1 = pd.alloc_mw(enums.MWType.TYPE_1)
            before = mw1.rkey
            info = ibverbs.MWBindInfo(mr, 0x10100, 256, A.REMOTE_WRITE)
            out["rkey"] = qp.bind_mw(mw1, ibverbs.MWBind(info, 31, enums.SendFlags.SIGNALED))
            out["rkeys"] = [before, mw1.rkey]
            mw2 = pd.alloc_mw(enums.MWType.TYPE_2)
            wr = ibverbs.SendWR(
                32,
                opcode=enums.WROpcode.BIND_MW,
                send_flags=enums.SendFlags.SIGNALED,
                mw=mw2,
                rkey=ibverbs.inc_rkey(mw2.rkey),
                bind_info=info,
            )
            qp.post_send(wr)
            out["wc"] = [[w.wr_id, int(w.opcode)] for w in cq.poll(4)]
            out["mw2"] = mw2.rkey
            for o in (mw2, mw1, qp, mr):
                o.close()
        return out

    res = recording.run(body)
    v = res.ok()
    t1, t2 = res.calls("alloc_mw")
    assert (t1["type"], t2["type"]) == (int(enums.MWType.TYPE_1), int(enums.MWType.TYPE_2))
    bind = res.one("bind_mw")
    A = enums.AccessFlags
    assert bind.prefixed("mw_bind.") == {
        "wr_id": 31,
        "send_flags": int(enums.SendFlags.SIGNALED),
        "bind_info.mr": bind["mw_bind.bind_info.mr"],
        "bind_info.addr": 0x10100,
        "bind_info.length": 256,
        "bind_info.mw_access_flags": int(A.REMOTE_WRITE),
    }
    assert bind["mw_bind.bind_info.mr"] == res.one("dereg_mr")["mr"]
    before, after = v["rkeys"]
    assert after == v["rkey"] and after & ~0xFF == before & ~0xFF and after != before
    post = res.one("post_send").prefixed("wr[0].")
    assert post["opcode"] == int(enums.WROpcode.BIND_MW)
    assert post["bind_mw.mw"] == res.calls("dealloc_mw")[0]["mw"]
    assert (post["bind_mw.bind_info.addr"], post["bind_mw.bind_info.length"]) == (0x10100, 256)
    assert post["bind_mw.bind_info.mw_access_flags"] == int(A.REMOTE_WRITE)
    assert post["bind_mw.bind_info.mr"] == bind["mw_bind.bind_info.mr"]
    W = enums.WCOpcode
    assert v["wc"] == [[31, int(W.BIND_MW)], [32, int(W.BIND_MW)]]
    assert res.live == 0, res.live_report


def test_bound_window_holds_its_mr(recording):
    """A window keeps the MR of its last bind alive (the kernel refuses to
    deregister an MR under a bound window): with no other reference, the
    MR is deregistered only after the window is deallocated; a bind to
    another MR, or an unbind (length 0), parks the old one, which the next
    post or bind deregisters once nothing else references it."""

    def body(fake):
        import gc

        import ibverbs
        from ibverbs import enums

        A = enums.AccessFlags
        acc = A.LOCAL_WRITE | A.REMOTE_WRITE | A.MW_BIND
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            qp = pd.create_qp(ibverbs.QPInitAttr(cq))
            for st in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
                qp.modify(enums.QPAttrMask.STATE, qp_state=st)
            mw1 = pd.alloc_mw(enums.MWType.TYPE_1)
            mw2 = pd.alloc_mw(enums.MWType.TYPE_2)
            mrs = [pd.reg_mr(0x10000 * (i + 1), 4096, acc) for i in range(3)]
            out["mrs"] = [mr.lkey for mr in mrs]

            def info(mr, n=256):
                return ibverbs.MWBindInfo(mr, mr.addr, n, A.REMOTE_WRITE)

            qp.bind_mw(mw1, ibverbs.MWBind(info(mrs[0])))
            qp.post_send(
                ibverbs.SendWR(
                    opcode=enums.WROpcode.BIND_MW,
                    mw=mw2,
                    rkey=ibverbs.inc_rkey(mw2.rkey),
                    bind_info=info(mrs[1]),
                )
            )
            spare = mrs[2]
            del mrs
            gc.collect()
            # Moving mw1 to the spare MR lets mrs[0] go (the bind's own
            # sweep); unbinding it (length 0) parks the spare, still
            # referenced here, and the next post lets it go; closing mw2
            # lets mrs[1] go.
            qp.bind_mw(mw1, ibverbs.MWBind(info(spare)))
            qp.bind_mw(mw1, ibverbs.MWBind(info(spare, 0)))
            del spare
            gc.collect()
            qp.post_send(ibverbs.SendWR(9))
            mw2.close()
            mw1.close()
            qp.close()
        return out

    res = recording.run(body)
    v = res.ok()
    verbs = res.verbs()
    assert len(v["mrs"]) == len(res.calls("reg_mr")) == len(res.calls("dereg_mr")) == 3
    order = [r.verb for r in res.records if r.verb in ("bind_mw", "dereg_mr", "dealloc_mw")]
    assert order == [
        "bind_mw",
        "bind_mw",
        "dereg_mr",
        "bind_mw",
        "dereg_mr",
        "dealloc_mw",
        "dereg_mr",
        "dealloc_mw",
    ], verbs
    assert res.live == 0, res.live_report


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


def test_device_ex_and_the_lookup_helpers(recording):
    def body(fake):
        import errno
        import os

        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            ex = ctx.query_device_ex()
            out["ex"] = [ex.legacy, ex.hca_core_clock, ex.max_dm_size, ex.orig_attr.max_qp]
            gid, gid_type, ifindex = ctx.query_gid_ex(1, 1)
            out["gid_ex"] = [gid.raw.hex(), int(gid_type), ifindex]
            out["pkey_index"] = ctx.get_pkey_index(1, 0xFFFF)
            out["device_index"] = ctx.get_device_index()
            ah = ibverbs.AHAttr(
                dgid=bytes.fromhex("00000000000000000000ffffc0000205"),
                sgid_index=1,
                port_num=1,
                is_global=True,
            )
            mac, vid = ctx.resolve_eth_l2_from_gid(ah)
            out["l2"] = [mac.hex(), vid]
            os.set_blocking(ctx.async_fd, False)
            try:
                ctx.get_async_event()
            except ibverbs.VerbsError as e:
                out["async"] = [e.errno == errno.EAGAIN, e.operation]
        ten, twenty_five = ibverbs.mult_to_ibv_rate(4), ibverbs.mbps_to_ibv_rate(25781)
        out["rates"] = [
            int(ten),
            ibverbs.rate_to_mult(ten),
            int(twenty_five),
            ibverbs.rate_to_mbps(twenty_five),
        ]
        return out

    res = recording.run(body)
    v = res.ok()
    assert v["ex"] == [False, 1000000, 1 << 20, 1024]
    assert res.one("query_device_ex")["attr_size"] > 0
    assert v["gid_ex"] == [
        "00000000000000000000ffffc0000201",
        int(enums.GIDType.ROCE_V2),
        2,
    ]
    g = res.one("query_gid_ex")
    assert (g["port_num"], g["gid_index"], g["flags"]) == (1, 1, 0)
    assert v["pkey_index"] == 0 and res.one("get_pkey_index")["pkey"] == 0xFFFF
    assert v["device_index"] == 0
    assert v["l2"] == ["0200c0000205", 0xFFFF]
    l2 = res.one("resolve_eth_l2_from_gid")
    assert l2["attr.grh.dgid"] == bytes.fromhex("00000000000000000000ffffc0000205")
    assert (l2["attr.grh.sgid_index"], l2["attr.is_global"]) == (1, 1)
    assert v["async"] == [True, "ibv_get_async_event"]
    # IBV_RATE_10_GBPS is 3 and IBV_RATE_25_GBPS 15 in verbs.h
    assert v["rates"] == [3, 4, 15, 25781]
    assert res.one("mult_to_ibv_rate")["mult"] == 4
    assert res.one("rate_to_mult")["rate"] == 3
    assert res.one("mbps_to_ibv_rate")["mbps"] == 25781
    assert res.one("rate_to_mbps")["rate"] == 15
    assert res.live == 0, res.live_report


def test_query_gid_ex_does_not_leak(recording):
    # gid_to_py (device/context.c) kept a reference to the GID's
    # bytes, one leaked object per call.  Thousands of calls on the
    # double must leave the interpreter's allocated blocks flat.
    def body(fake):
        import gc
        import sys

        import ibverbs

        def blocks():
            gc.collect()
            return sys.getallocatedblocks()

        with ibverbs.Context("fake0") as ctx:
            for _ in range(200):  # warm up caches (enums, interned names)
                ctx.query_gid_ex(1, 1)
            before = blocks()
            for _ in range(5000):
                gid, gid_type, ifindex = ctx.query_gid_ex(1, 1)
            del gid, gid_type, ifindex
            after = blocks()
        return {"grown": after - before}

    v = recording.run(body).ok()
    # One leaked bytes object per call would be 5000 blocks.
    assert v["grown"] < 50, v
