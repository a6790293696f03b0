"""What the binding passes to libibverbs for the verbs Soft-RoCE also
runs, checked field by field against the recording double
(tests/fakes/recording/): devices and ports, PD, MR access flags, CQs,
every QP init attribute, the to_init/to_rtr/to_rts masks and fields, a
post_send chain with every opcode's fields, post_recv, and what poll
makes of the double's completions.  The device tests show these verbs
work on rxe; these show the exact values the binding hands over."""

from __future__ import annotations

import errno

from ibverbs import enums

M = enums.QPAttrMask


def test_devices_ports_and_gids_come_from_the_library(recording):
    def body(fake):
        import ibverbs

        out = {}
        for name in ("fake0", "fake1"):
            with ibverbs.Context(name) as ctx:
                p = ctx.query_port(1)
                out[name] = {
                    "port": [int(p.state), int(p.link_layer), p.lid, p.sm_lid, int(p.active_mtu)],
                    "gid0": ctx.query_gid(1, 0).raw.hex(),
                    "pkey": ctx.query_pkey(1, 0),
                    "table": [[e.index, int(e.gid_type)] for e in ctx.query_gid_table()],
                    "guid": ctx.query_device().node_guid,
                }
        return out

    res = recording.run(body)
    v = res.ok()
    eth, ib = int(enums.LinkLayer.ETHERNET), int(enums.LinkLayer.INFINIBAND)
    active, mtu1024 = int(enums.PortState.ACTIVE), int(enums.MTU.MTU_1024)
    assert v["fake0"]["port"] == [active, eth, 0, 0, mtu1024]
    assert v["fake1"]["port"] == [active, ib, 0x11, 1, mtu1024]
    assert v["fake0"]["gid0"] == "fe80000000000000020000fffe000000"
    assert v["fake0"]["pkey"] == v["fake1"]["pkey"] == 0xFFFF
    roce2, ib_gid = int(enums.GIDType.ROCE_V2), int(enums.GIDType.IB)
    assert v["fake0"]["table"] == [[0, roce2], [1, roce2]]
    assert v["fake1"]["table"] == [[0, ib_gid]]
    for rec in res.calls("query_gid"):
        assert (rec["port_num"], rec["index"]) == (1, 0)
    assert [r["device"] for r in res.calls("open_device")] == ["fake0", "fake1"]
    assert len(res.calls("close_device")) == 2
    assert res.live == 0, res.live_report


def test_reg_mr_passes_address_length_and_access_flags(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        A = enums.AccessFlags
        combos = [
            A.LOCAL_WRITE,
            A.LOCAL_WRITE | A.REMOTE_WRITE | A.REMOTE_READ,
            A.LOCAL_WRITE | A.REMOTE_ATOMIC | A.MW_BIND,
            A.LOCAL_WRITE | A.RELAXED_ORDERING,
            0,
        ]
        keys = []
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            for i, acc in enumerate(combos):
                with pd.reg_mr(0x100000 * (i + 1), 4096 * (i + 1), acc) as mr:
                    keys.append([mr.lkey, mr.rkey, mr.addr, mr.length, mr.access])
            with pd.reg_mr_iova(0x200000, 8192, 0x1000, A.LOCAL_WRITE) as mr:
                keys.append([mr.lkey, mr.rkey, mr.addr, mr.length, mr.access, mr.iova])
        return [[int(a) for a in combos], keys]

    res = recording.run(body)
    combos, keys = res.ok()
    regs = [r for r in res.records if r.verb.startswith("reg_mr")]
    # An optional-range bit (RELAXED_ORDERING) goes through reg_mr_iova2
    # with iova = addr, as verbs.h's ibv_reg_mr macro does.
    assert [r.verb for r in regs] == ["reg_mr"] * 3 + ["reg_mr_iova2", "reg_mr", "reg_mr_iova"]
    for i, (rec, acc, key) in enumerate(zip(regs, combos, keys)):
        assert (rec["addr"], rec["length"], rec["access"]) == (
            0x100000 * (i + 1),
            4096 * (i + 1),
            acc,
        )
        assert key[0] == key[1] != 0 and key[2:] == [rec["addr"], rec["length"], acc]
    assert regs[3]["iova"] == regs[3]["addr"]
    # MR.addr is the address work requests use: the iova (MR.iova too).
    assert keys[5][2:] == [0x1000, 8192, int(enums.AccessFlags.LOCAL_WRITE), 0x1000]
    iova = regs[5]
    assert (iova["addr"], iova["length"], iova["iova"]) == (0x200000, 8192, 0x1000)
    assert iova["access"] == int(enums.AccessFlags.LOCAL_WRITE)
    assert len(res.calls("dereg_mr")) == len(combos) + 1
    assert res.live == 0, res.live_report


def test_create_cq_and_create_cq_ex_pass_every_attribute(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        W, F = enums.CreateCQWCFlags, enums.CreateCQAttrFlags
        with ibverbs.Context("fake0") as ctx:
            ch = ctx.create_comp_channel()
            cq = ctx.create_cq(100, ch, 3)
            cqe = cq.cqe
            attr = ibverbs.CQInitAttrEx(
                50,
                wc_flags=W.BYTE_LEN | W.QP_NUM | W.COMPLETION_TIMESTAMP,
                channel=ch,
                comp_vector=2,
                flags=F.SINGLE_THREADED,
            )
            cqx = ctx.create_cq_ex(attr)
            plain = ctx.create_cq_ex(ibverbs.CQInitAttrEx(8))
            for c in (plain, cqx, cq, ch):
                c.close()
        return cqe

    res = recording.run(body)
    assert res.ok() == 100
    cc = res.one("create_comp_channel")
    cq = res.one("create_cq")
    assert (cq["cqe"], cq["comp_vector"]) == (100, 3)
    assert cq["channel"] != 0 and cq["context"] == cc["context"]
    assert cq["cq_context"] != 0  # the CQ object: get_cq_event finds it back
    cqx, plain = res.calls("create_cq_ex")
    W, F = enums.CreateCQWCFlags, enums.CreateCQAttrFlags
    assert cqx.prefixed("attr.") == {
        "cqe": 50,
        "cq_context": cqx["attr.cq_context"],
        "channel": cq["channel"],
        "comp_vector": 2,
        "wc_flags": int(W.BYTE_LEN | W.QP_NUM | W.COMPLETION_TIMESTAMP),
        "comp_mask": 1,  # IBV_CQ_INIT_ATTR_MASK_FLAGS
        "flags": int(F.SINGLE_THREADED),
    }
    assert cqx["attr.cq_context"] != 0
    assert (plain["attr.cqe"], plain["attr.channel"], plain["attr.wc_flags"]) == (8, 0, 0)
    assert plain["attr.comp_mask"] == 0 and "attr.flags" not in plain
    assert len(res.calls("destroy_cq")) == 3
    assert res.verbs()[-2:] == ["destroy_comp_channel", "close_device"]
    assert res.live == 0, res.live_report


def test_create_qp_passes_every_init_attribute(recording):
    def body(fake):
        import ibverbs

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            scq, rcq = ctx.create_cq(16), ctx.create_cq(32)
            srq = pd.create_srq(max_wr=64, max_sge=3, srq_limit=5)
            attr = ibverbs.QPInitAttr(
                scq,
                rcq,
                qp_type=ibverbs.QPType.UC,
                max_send_wr=12,
                max_recv_wr=0,
                max_send_sge=3,
                max_recv_sge=4,
                max_inline_data=128,
                sq_sig_all=True,
                srq=srq,
            )
            qp = pd.create_qp(attr)
            got = [qp.qp_num, int(qp.qp_type), qp.sq_sig_all, qp.cap.max_inline_data]
            ud = pd.create_qp(ibverbs.QPInitAttr(scq, qp_type=ibverbs.QPType.UD))
            for o in (ud, qp, srq, rcq, scq):
                o.close()
        return got

    res = recording.run(body)
    qp_num, qp_type, sq_sig_all, inline = res.ok()
    uc, ud = res.calls("create_qp")
    scq, rcq = res.calls("create_cq")
    srq = res.one("create_srq")
    assert srq.prefixed("attr.") == {"max_wr": 64, "max_sge": 3, "srq_limit": 5}
    assert uc["pd"] == srq["pd"]
    assert uc["attr.send_cq"] != uc["attr.recv_cq"]
    assert uc["attr.srq"] == res.one("destroy_srq")["srq"]
    assert uc["attr.qp_context"] != 0
    assert uc.prefixed("attr.cap.") == {
        "max_send_wr": 12,
        "max_recv_wr": 0,
        "max_send_sge": 3,
        "max_recv_sge": 4,
        "max_inline_data": 128,
    }
    assert (uc["attr.qp_type"], uc["attr.sq_sig_all"]) == (int(enums.QPType.UC), 1)
    assert (qp_type, sq_sig_all, inline) == (int(enums.QPType.UC), True, 128)
    assert qp_num == res.calls("destroy_qp")[1]["qp_num"]
    assert ud["attr.qp_type"] == int(enums.QPType.UD)
    assert ud["attr.send_cq"] == ud["attr.recv_cq"] and ud["attr.srq"] == 0
    assert ud["attr.sq_sig_all"] == 0
    assert res.live == 0, res.live_report


def test_to_init_to_rtr_to_rts_masks_and_fields(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        A = enums.AccessFlags
        remote = ibverbs.QPInfo(
            qp_num=0x123456,
            psn=0x0ABCDE,
            lid=0,
            gid=bytes.fromhex("00000000000000000000ffffc0000263"),
            port=1,
            mtu=int(enums.MTU.MTU_4096),
        )
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            with pd.create_qp(ibverbs.QPInitAttr(cq)) as qp:
                qp.to_init(1, A.LOCAL_WRITE | A.REMOTE_WRITE, pkey_index=0)
                qp.to_rtr(remote, sgid_index=1, hop_limit=9, sl=2, traffic_class=0x20)
                qp.to_rts(psn=0x42, timeout=17, retry_cnt=5, rnr_retry=6, max_rd_atomic=4)
                state = int(qp.state)
            with pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.UD)) as ud:
                ud.to_init(1, qkey=0x11111111)
                ud.to_rtr(None)
                ud.to_rts(psn=7)
        return state

    res = recording.run(body)
    assert res.ok() == int(enums.QPState.RTS)
    init, rtr, rts, ud_init, ud_rtr, ud_rts = res.calls("modify_qp")
    A = enums.AccessFlags
    assert init["attr_mask"] == int(M.STATE | M.PKEY_INDEX | M.PORT | M.ACCESS_FLAGS)
    assert init.prefixed("attr.") == {
        "qp_state": int(enums.QPState.INIT),
        "qp_access_flags": int(A.LOCAL_WRITE | A.REMOTE_WRITE),
        "pkey_index": 0,
        "port_num": 1,
    }
    rc_rtr = M.STATE | M.AV | M.PATH_MTU | M.DEST_QPN | M.RQ_PSN
    assert rtr["attr_mask"] == int(rc_rtr | M.MAX_DEST_RD_ATOMIC | M.MIN_RNR_TIMER)
    assert rtr.prefixed("attr.ah_attr.") == {
        "dlid": 0,
        "sl": 2,
        "src_path_bits": 0,
        "static_rate": 0,
        "is_global": 1,
        "port_num": 1,
        "grh.dgid": bytes.fromhex("00000000000000000000ffffc0000263"),
        "grh.flow_label": 0,
        "grh.sgid_index": 1,
        "grh.hop_limit": 9,
        "grh.traffic_class": 0x20,
    }
    assert rtr["attr.qp_state"] == int(enums.QPState.RTR)
    # min(remote 4096, the port's active 1024)
    assert rtr["attr.path_mtu"] == int(enums.MTU.MTU_1024)
    assert (rtr["attr.dest_qp_num"], rtr["attr.rq_psn"]) == (0x123456, 0x0ABCDE)
    assert (rtr["attr.max_dest_rd_atomic"], rtr["attr.min_rnr_timer"]) == (1, 12)
    rc_rts = M.STATE | M.SQ_PSN | M.TIMEOUT | M.RETRY_CNT | M.RNR_RETRY | M.MAX_QP_RD_ATOMIC
    assert rts["attr_mask"] == int(rc_rts)
    assert rts.prefixed("attr.") == {
        "qp_state": int(enums.QPState.RTS),
        "timeout": 17,
        "retry_cnt": 5,
        "rnr_retry": 6,
        "max_rd_atomic": 4,
        "sq_psn": 0x42,
    }
    assert ud_init["attr_mask"] == int(M.STATE | M.PKEY_INDEX | M.PORT | M.QKEY)
    assert ud_init["attr.qkey"] == 0x11111111
    assert ud_rtr["attr_mask"] == int(M.STATE)
    assert ud_rts["attr_mask"] == int(M.STATE | M.SQ_PSN) and ud_rts["attr.sq_psn"] == 7
    assert res.live == 0, res.live_report


def test_post_send_chain_passes_every_work_request_field(recording):
    def body(fake):
        import ctypes

        import ibverbs
        from ibverbs import enums

        Op, S = enums.WROpcode, enums.SendFlags
        buf = ctypes.create_string_buffer(b"inline!!" + bytes(4088))
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(32) as cq:
            mr = pd.reg_mr(ctypes.addressof(buf), 4096, enums.AccessFlags.LOCAL_WRITE)
            attr = ibverbs.QPInitAttr(cq, max_send_sge=2, max_inline_data=64)
            qp = pd.create_qp(attr)
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.RTR)
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.RTS)
            sig = S.SIGNALED
            chain = [
                ibverbs.SendWR(
                    1, [mr.sge(100), mr.sge(200, 512)], Op.RDMA_WRITE, sig, 0xAB000, 0x77
                ),
                ibverbs.SendWR(
                    2, [mr.sge(8)], Op.RDMA_WRITE_WITH_IMM, sig | S.FENCE, 0xAC000, 0x78, 0xDEADBEEF
                ),
                ibverbs.SendWR(3, [mr.sge(16)], Op.SEND_WITH_IMM, sig | S.SOLICITED, imm_data=5),
                ibverbs.SendWR(4, [mr.sge(64)], Op.RDMA_READ, sig, remote_addr=0xAD000, rkey=0x79),
                ibverbs.SendWR(
                    5, [mr.sge(8)], Op.ATOMIC_CMP_AND_SWP, sig, 0xAE000, 0x7A, compare_add=3, swap=9
                ),
                ibverbs.SendWR(
                    6, [mr.sge(8)], Op.ATOMIC_FETCH_AND_ADD, sig, 0xAF000, 0x7B, compare_add=11
                ),
                ibverbs.SendWR(7, [mr.sge(8)], Op.SEND, sig | S.INLINE),
                ibverbs.SendWR(8, [mr.sge(4)], Op.SEND, 0),  # unsignaled
            ]
            qp.post_send(chain)
            wcs = [[w.wr_id, int(w.opcode), w.byte_len, int(w.status)] for w in cq.poll(16)]
            out = [mr.lkey, ctypes.addressof(buf), wcs]
            qp.close()
            mr.close()
        return out

    res = recording.run(body)
    lkey, base, wcs = res.ok()
    rec = res.one("post_send")
    Op, S = enums.WROpcode, enums.SendFlags
    assert rec["count"] == 8 and rec["qp_num"] == res.one("destroy_qp")["qp_num"]
    w = [rec.prefixed(f"wr[{i}].") for i in range(8)]

    def sge(i, j):
        return {k: w[i][f"sg_list[{j}].{k}"] for k in ("addr", "length", "lkey")}

    assert [x["wr_id"] for x in w] == list(range(1, 9))
    assert [x["opcode"] for x in w] == [
        int(o)
        for o in (
            Op.RDMA_WRITE,
            Op.RDMA_WRITE_WITH_IMM,
            Op.SEND_WITH_IMM,
            Op.RDMA_READ,
            Op.ATOMIC_CMP_AND_SWP,
            Op.ATOMIC_FETCH_AND_ADD,
            Op.SEND,
            Op.SEND,
        )
    ]
    sig = int(S.SIGNALED)
    assert [x["send_flags"] for x in w] == [
        sig,
        sig | int(S.FENCE),
        sig | int(S.SOLICITED),
        sig,
        sig,
        sig,
        sig | int(S.INLINE),
        0,
    ]
    assert w[0]["num_sge"] == 2
    assert sge(0, 0) == {"addr": base, "length": 100, "lkey": lkey}
    assert sge(0, 1) == {"addr": base + 512, "length": 200, "lkey": lkey}
    assert (w[0]["wr.rdma.remote_addr"], w[0]["wr.rdma.rkey"]) == (0xAB000, 0x77)
    assert (w[1]["wr.rdma.remote_addr"], w[1]["wr.rdma.rkey"]) == (0xAC000, 0x78)
    assert w[1]["imm_data"] == 0xDEADBEEF  # host order in, network order on the wire
    assert w[2]["imm_data"] == 5
    assert (w[3]["wr.rdma.remote_addr"], w[3]["wr.rdma.rkey"]) == (0xAD000, 0x79)
    assert {k: v for k, v in w[4].items() if k.startswith("wr.atomic.")} == {
        "wr.atomic.remote_addr": 0xAE000,
        "wr.atomic.compare_add": 3,
        "wr.atomic.swap": 9,
        "wr.atomic.rkey": 0x7A,
    }
    assert (w[5]["wr.atomic.compare_add"], w[5]["wr.atomic.rkey"]) == (11, 0x7B)
    assert w[6]["sg_list[0].data"] == b"inline!!"
    W = enums.WCOpcode
    assert wcs == [
        [1, int(W.RDMA_WRITE), 300, 0],
        [2, int(W.RDMA_WRITE), 8, 0],
        [3, int(W.SEND), 16, 0],
        [4, int(W.RDMA_READ), 64, 0],
        [5, int(W.COMP_SWAP), 8, 0],
        [6, int(W.FETCH_ADD), 8, 0],
        [7, int(W.SEND), 8, 0],
    ]
    assert res.live == 0, res.live_report


def test_post_recv_ud_send_and_what_poll_returns(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(32) as cq:
            attr = ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.UD, max_recv_sge=2)
            qp = pd.create_qp(attr)
            qp.to_init(1, qkey=0x1234)
            qp.post_recv(
                [
                    ibverbs.RecvWR(10, [ibverbs.SGE(0x5000, 40, 0x99), ibverbs.SGE(0x6000, 60, 9)]),
                    ibverbs.RecvWR(11, [ibverbs.SGE(0x7000, 1000, 0x99)]),
                ]
            )
            wcs = cq.poll(4)
            out["wc"] = [
                [w.wr_id, int(w.status), int(w.opcode), w.byte_len, w.qp_num, w.src_qp] for w in wcs
            ]
            out["qp_num"] = qp.qp_num
            qp.to_rtr(None)
            qp.to_rts()
            ah_attr = ibverbs.AHAttr(
                dgid=bytes.fromhex("fe800000000000000000000000000001"),
                sgid_index=1,
                port_num=1,
                is_global=True,
                hop_limit=3,
            )
            with pd.create_ah(ah_attr) as ah:
                wr = ibverbs.SendWR(
                    12,
                    [ibverbs.SGE(0x8000, 20, 0x99)],
                    enums.WROpcode.SEND,
                    enums.SendFlags.SIGNALED,
                    ah=ah,
                    remote_qpn=0xABCDE,
                    remote_qkey=0x1234,
                )
                qp.post_send(wr)
            fake.fail("completion", int(enums.WCStatus.REM_ACCESS_ERR))
            qp.post_recv(ibverbs.RecvWR(13, [ibverbs.SGE(0x5000, 8, 0x99)]))
            wcs = cq.poll(4)
            out["sent"] = [[w.wr_id, int(w.status)] for w in wcs]
            try:
                wcs[-1].raise_for_status()
            except ibverbs.CompletionError as e:
                out["error"] = [e.errno, int(e.status), e.wc.wr_id]
            qp.close()
        return out

    res = recording.run(body)
    v = res.ok()
    recv = int(enums.WCOpcode.RECV)
    qpn = v["qp_num"]
    assert v["wc"] == [[10, 0, recv, 100, qpn, qpn], [11, 0, recv, 1000, qpn, qpn]]
    post_recv = res.calls("post_recv")[0]
    assert post_recv["count"] == 2 and post_recv["qp_num"] == qpn
    assert post_recv.prefixed("wr[0].") == {
        "wr_id": 10,
        "num_sge": 2,
        "sg_list[0].addr": 0x5000,
        "sg_list[0].length": 40,
        "sg_list[0].lkey": 0x99,
        "sg_list[1].addr": 0x6000,
        "sg_list[1].length": 60,
        "sg_list[1].lkey": 9,
    }
    ah = res.one("create_ah")
    assert ah["attr.is_global"] == 1 and ah["attr.port_num"] == 1
    assert ah["attr.grh.dgid"] == bytes.fromhex("fe800000000000000000000000000001")
    assert (ah["attr.grh.sgid_index"], ah["attr.grh.hop_limit"]) == (1, 3)
    send = res.one("post_send")
    assert send["wr[0].wr.ud.ah"] == res.one("destroy_ah")["ah"]
    assert (send["wr[0].wr.ud.remote_qpn"], send["wr[0].wr.ud.remote_qkey"]) == (0xABCDE, 0x1234)
    bad = int(enums.WCStatus.REM_ACCESS_ERR)
    assert v["sent"] == [[12, 0], [13, bad]]
    assert v["error"] == [errno.EIO, bad, 13]
    assert res.live == 0, res.live_report


def test_injected_failures_raise_verbs_error_and_leak_nothing(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import enums

        out = []

        def expect(verb, err, call):
            fake.fail(verb, err)
            try:
                call()
            except ibverbs.VerbsError as e:
                out.append([verb, e.errno, e.operation])
            else:
                out.append([verb, "no error"])

        expect("open_device", errno.ENODEV, lambda: ibverbs.Context("fake0"))
        with ibverbs.Context("fake0") as ctx:
            expect("create_cq", errno.ENOMEM, lambda: ctx.create_cq(8))
            expect("create_comp_channel", errno.EMFILE, ctx.create_comp_channel)
            with ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
                expect("reg_mr", errno.EFAULT, lambda: pd.reg_mr(0x1000, 64, 0))
                expect("create_qp", errno.EINVAL, lambda: pd.create_qp(ibverbs.QPInitAttr(cq)))
                expect("create_srq", errno.ENOSYS, pd.create_srq)
                with pd.create_qp(ibverbs.QPInitAttr(cq)) as qp:
                    expect("modify_qp", errno.EINVAL, lambda: qp.to_init(1))
                    qp.to_init(1)
                    qp.to_rtr(ibverbs.QPInfo(1, 0, 0, bytes(16), 1, 3), sgid_index=0)
                    qp.to_rts()
                    wrs = [ibverbs.SendWR(i, [ibverbs.SGE(0x1000, 8, 1)]) for i in (1, 2)]
                    expect("post_send", errno.ENOMEM, lambda: qp.post_send(wrs))
                    expect("post_recv", errno.ENOMEM, lambda: qp.post_recv(ibverbs.RecvWR(1)))
                    expect("poll_cq", errno.EIO, lambda: cq.poll(1))
                    expect("query_qp", errno.EIO, qp.query)
                fake.fail("destroy_cq", errno.EBUSY)
                c2 = ctx.create_cq(4)
                try:
                    c2.close()
                except ibverbs.VerbsError as e:
                    out.append(["destroy_cq", e.errno, e.operation, c2.closed])
                c2.close()  # the retry frees it
            expect("query_port", errno.EIO, lambda: ctx.query_port(1))
        return [out, int(enums.QPState.RTS)]

    res = recording.run(body)
    out, _ = res.ok()
    assert out == [
        ["open_device", errno.ENODEV, "ibv_open_device"],
        ["create_cq", errno.ENOMEM, "ibv_create_cq"],
        ["create_comp_channel", errno.EMFILE, "ibv_create_comp_channel"],
        ["reg_mr", errno.EFAULT, "ibv_reg_mr"],
        ["create_qp", errno.EINVAL, "ibv_create_qp"],
        ["create_srq", errno.ENOSYS, "ibv_create_srq"],
        ["modify_qp", errno.EINVAL, "ibv_modify_qp"],
        ["post_send", errno.ENOMEM, "ibv_post_send"],
        ["post_recv", errno.ENOMEM, "ibv_post_recv"],
        ["poll_cq", errno.EIO, "ibv_poll_cq"],
        ["query_qp", errno.EIO, "ibv_query_qp"],
        ["destroy_cq", errno.EBUSY, "ibv_destroy_cq", False],
        ["query_port", errno.EIO, "ibv_query_port"],
    ]
    assert res.live == 0, res.live_report
