"""What the binding passes to libibverbs for XRC, the extended SRQ, tag
matching, work queues and RSS, every comp_mask field of
``ibv_qp_init_attr_ex``, ECE, rate limits and TSO, checked field by field
against the recording double (tests/fakes/recording/xrc.c, wq.c,
qp_hw.c), and what the Python side makes of the answers.  No provider
here runs these verbs (tests/device/test_xrc_wq.py asserts rxe's
refusals): this is not evidence that they work on hardware, only that the
binding hands them what it should."""

from __future__ import annotations

import errno

from ibverbs import enums

QI = enums.QPInitAttrMask
SI = enums.SRQInitAttrMask


def test_open_xrcd_and_open_qp_pass_fd_oflags_and_the_qp(recording, tmp_path):
    def body(fake, path):
        import errno
        import os

        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            x = ctx.open_xrcd()
            out["private"] = [x.fd, x.oflags, x.context is ctx]
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            shared = ctx.open_xrcd(fd=fd, oflags=os.O_CREAT | os.O_EXCL)
            qp = ctx.open_qp(shared, 0x1234)
            out["qp"] = [qp.qp_num, int(qp.qp_type), qp.pd is shared, qp.context is ctx]
            try:
                shared.close()
            except ibverbs.VerbsError as e:
                out["busy"] = [e.errno, str(e)]
            qp.close()
            shared.close()
            os.close(fd)
            x.close()
            try:
                x.close()
                out["closed"] = x.closed
            except ibverbs.VerbsError:
                out["closed"] = "raised"
            fake.fail("open_xrcd", errno.ENOMEM)
            try:
                ctx.open_xrcd()
            except ibverbs.VerbsError as e:
                out["injected"] = [e.errno, e.operation]
            for bad in (-2, 2**31):
                try:
                    ctx.open_xrcd(fd=bad)
                except ValueError:
                    out.setdefault("bad", []).append(bad)
        return out, os.O_CREAT, os.O_EXCL

    res = recording.run(body, str(tmp_path / "xrc-domain"))
    out, o_creat, o_excl = res.ok()
    assert out["private"] == [-1, o_creat, True]
    assert out["qp"] == [0x1234, int(enums.QPType.XRC_RECV), True, True]
    assert out["busy"][0] == errno.EBUSY and "QP" in out["busy"][1]
    assert out["closed"] is True
    assert out["injected"] == [errno.ENOMEM, "ibv_open_xrcd"]
    assert out["bad"] == [-2, 2**31]
    opens = res.calls("open_xrcd")
    mask = int(enums.XRCDInitAttrMask.FD | enums.XRCDInitAttrMask.OFLAGS)
    assert [r["attr.comp_mask"] for r in opens] == [mask] * 3
    assert [(r["attr.fd"], r["attr.oflags"]) for r in opens[:2]] == [
        (-1, o_creat),
        (opens[1]["attr.fd"], o_creat | o_excl),
    ]
    assert opens[1]["attr.fd"] >= 0
    oq = res.one("open_qp")
    om = enums.QPOpenAttrMask
    assert oq["attr.comp_mask"] == int(om.XRCD | om.CONTEXT | om.NUM | om.TYPE)
    assert oq["attr.qp_num"] == 0x1234
    assert oq["attr.qp_type"] == int(enums.QPType.XRC_RECV)
    assert oq["attr.qp_context"] != 0
    closes = res.calls("close_xrcd")
    assert len(closes) == 2 and oq["attr.xrcd"] == closes[0]["xrcd"]
    assert res.one("destroy_qp")["qp_num"] == 0x1234
    # the QP went before its XRCD
    v = res.verbs()
    assert v.index("destroy_qp") < v.index("close_xrcd")
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


def test_create_qp_ex_passes_every_comp_mask_field(recording):
    def body(fake):
        import ibverbs
        from ibverbs import QPInitAttrEx, RXHashConf, enums

        T, S, C = enums.QPType, enums.QPCreateSendOpsFlags, enums.QPCreateFlags
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
            x = ctx.open_xrcd()
            tgt = pd.create_qp_ex(QPInitAttrEx(qp_type=T.XRC_RECV, xrcd=x))
            out["tgt"] = [tgt.xrcd is x, tgt.send_cq, int(tgt.send_ops_flags)]
            try:
                tgt.wr_start()
            except ibverbs.VerbsError as e:
                out["tgt_wr_start"] = e.errno
            try:
                x.close()
            except ibverbs.VerbsError as e:
                out["xrcd_busy"] = e.errno
            tgt.close()
            ini = pd.create_qp_ex(QPInitAttrEx(cq, qp_type=T.XRC_SEND))
            ini.wr_start()
            ini.wr_send()
            ini.wr_set_xrc_srqn(0x4242)
            ini.wr_set_sge(0x1, 0x2000, 16)
            ini.wr_abort()  # not connected: the builders are what counts
            ini.close()
            wqs = [ctx.create_wq(pd, cq) for _ in range(2)]
            tbl = ctx.create_rwq_ind_table(wqs)
            key = bytes(range(40))
            fields = enums.RXHashFields.SRC_IPV4 | enums.RXHashFields.DST_PORT_TCP
            conf = RXHashConf(enums.RXHashFunctionFlags.TOEPLITZ, key, fields)
            rss = pd.create_qp_ex(
                QPInitAttrEx(qp_type=T.RAW_PACKET, rwq_ind_tbl=tbl, rx_hash_conf=conf)
            )
            out["rss"] = [rss.rwq_ind_tbl is tbl, rss.recv_cq, int(rss.send_ops_flags)]
            try:
                tbl.close()
            except ibverbs.VerbsError as e:
                out["tbl_busy"] = e.errno
            rss.close()
            tbl.close()
            for w in wqs:
                w.close()
            ud = pd.create_qp_ex(
                QPInitAttrEx(cq, qp_type=T.UD, source_qpn=0x77, create_flags=C.SCATTER_FCS)
            )
            ud.close()
            tso = pd.create_qp_ex(
                QPInitAttrEx(
                    cq, qp_type=T.RAW_PACKET, send_ops_flags=S.SEND | S.TSO, max_tso_header=128
                )
            )
            tso.wr_start()
            tso.wr_send_tso(bytes(range(54)), 1460)
            tso.wr_set_sge(0x1, 0x1000, 4000)
            tso.wr_abort()
            tso.close()
            x.close()
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["tgt"] == [True, None, 0]
    assert out["tgt_wr_start"] == errno.EINVAL
    assert out["xrcd_busy"] == errno.EBUSY
    assert out["rss"] == [True, None, 0]
    assert out["tbl_busy"] == errno.EBUSY
    tgt, ini, rss, ud, tso = res.calls("create_qp_ex")
    pd_ptr = res.one("dealloc_pd")["pd"]
    assert all(r["attr.pd"] == pd_ptr for r in (tgt, ini, rss, ud, tso))
    # XRC_RECV: PD | XRCD, no CQs, no send ops
    assert tgt["attr.comp_mask"] == int(QI.PD | QI.XRCD)
    assert tgt["attr.xrcd"] == res.one("close_xrcd")["xrcd"]
    assert (tgt["attr.send_cq"], tgt["attr.recv_cq"]) == (0, 0)
    assert tgt["attr.qp_type"] == int(enums.QPType.XRC_RECV)
    # XRC_SEND: the send ops; the batch names the remote SRQ
    assert ini["attr.comp_mask"] == int(QI.PD | QI.SEND_OPS_FLAGS)
    assert ini["attr.qp_type"] == int(enums.QPType.XRC_SEND)
    assert res.one("wr_set_xrc_srqn")["remote_srqn"] == 0x4242
    # RSS: the table and the hash
    assert rss["attr.comp_mask"] == int(QI.PD | QI.IND_TABLE | QI.RX_HASH)
    assert rss["attr.rwq_ind_tbl"] != 0
    assert rss["attr.rx_hash_conf.rx_hash_function"] == int(enums.RXHashFunctionFlags.TOEPLITZ)
    assert rss["attr.rx_hash_conf.rx_hash_key_len"] == 40
    assert rss["attr.rx_hash_conf.rx_hash_key"] == bytes(range(40))
    assert rss["attr.rx_hash_conf.rx_hash_fields_mask"] == int(
        enums.RXHashFields.SRC_IPV4 | enums.RXHashFields.DST_PORT_TCP
    )
    assert (rss["attr.send_cq"], rss["attr.recv_cq"]) == (0, 0)
    # source_qpn adds SOURCE_QPN to the create flags given
    assert ud["attr.comp_mask"] == int(QI.PD | QI.CREATE_FLAGS | QI.SEND_OPS_FLAGS)
    C = enums.QPCreateFlags
    assert ud["attr.create_flags"] == int(C.SCATTER_FCS | C.SOURCE_QPN)
    assert ud["attr.source_qpn"] == 0x77
    # TSO: the header size and the builder's header
    assert tso["attr.comp_mask"] == int(QI.PD | QI.MAX_TSO_HEADER | QI.SEND_OPS_FLAGS)
    assert tso["attr.max_tso_header"] == 128
    S = enums.QPCreateSendOpsFlags
    assert tso["attr.send_ops_flags"] == int(S.SEND | S.TSO)
    st = res.one("wr_send_tso")
    assert (st["hdr"], st["hdr_sz"], st["mss"]) == (bytes(range(54)), 54, 1460)
    assert res.live == 0, res.live_report


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


def test_rate_limit_and_ece_pass_their_fields(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import ECE, QPInitAttr

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
            with pd.create_qp(QPInitAttr(cq)) as qp:
                qp.modify_rate_limit(100000, max_burst_sz=4096, typical_pkt_sz=1500)
                qp.modify_rate_limit(0)
                qp.set_ece(ECE(0x1234, 0x5, 0x1))
                ece = qp.query_ece()
                out["ece"] = [ece.vendor_id, ece.options, ece.comp_mask]
                try:
                    qp.set_ece(ECE(0, 1))
                except ibverbs.VerbsError as e:
                    out["zero"] = [e.errno, e.operation]
                for bad in (dict(typical_pkt_sz=2**16), dict(max_burst_sz=-1)):
                    try:
                        qp.modify_rate_limit(1, **bad)
                    except ValueError:
                        out.setdefault("bad", []).append(sorted(bad))
                try:
                    qp.set_ece(object())
                except TypeError:
                    out["not_ece"] = True
                fake.fail("modify_qp_rate_limit", errno.EINVAL)
                try:
                    qp.modify_rate_limit(1)
                except ibverbs.VerbsError as e:
                    out["injected"] = [e.errno, e.operation]
                qpn = qp.qp_num
        return out, qpn

    res = recording.run(body)
    out, qpn = res.ok()
    assert out["ece"] == [0xFA4E, 0x11, 0x1]
    assert out["zero"] == [errno.EOPNOTSUPP, "ibv_set_ece"]
    assert out["bad"] == [["typical_pkt_sz"], ["max_burst_sz"]]
    assert out["not_ece"] is True
    assert out["injected"] == [errno.EINVAL, "ibv_modify_qp_rate_limit"]
    r1, r2, _ = res.calls("modify_qp_rate_limit")
    assert r1["qp_num"] == qpn
    assert (r1["attr.rate_limit"], r1["attr.max_burst_sz"], r1["attr.typical_pkt_sz"]) == (
        100000,
        4096,
        1500,
    )
    assert r1["attr.comp_mask"] == 0
    assert (r2["attr.rate_limit"], r2["attr.max_burst_sz"], r2["attr.typical_pkt_sz"]) == (0, 0, 0)
    s = res.calls("set_ece")[0]
    assert (s["qp_num"], s["ece.vendor_id"], s["ece.options"], s["ece.comp_mask"]) == (
        qpn,
        0x1234,
        0x5,
        0x1,
    )
    assert res.one("query_ece")["qp_num"] == qpn
    assert res.live == 0, res.live_report
