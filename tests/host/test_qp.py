"""QPs against the recording double (tests/fakes/recording/): every init
attribute of create_qp, the to_init/to_rtr/to_rts masks and fields, rate
limits and ECE.  A check of what the binding hands libibverbs and what it
makes of the answers, not evidence that a provider runs the verbs.  On rxe:
tests/device/test_qp_device.py."""

from __future__ import annotations

import errno

from ibverbs import enums

M = enums.QPAttrMask


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


def test_rate_limit_and_ece_pass_their_fields(recording):
    def body(fake):
        import errno

        import ibverbs

        from support.rdma import verbs_error_of
        from ibverbs import ECE, QPInitAttr

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
            with pd.create_qp(QPInitAttr(cq)) as qp:
                qp.modify_rate_limit(100000, max_burst_sz=4096, typical_pkt_sz=1500)
                qp.modify_rate_limit(0)
                qp.set_ece(ECE(0x1234, 0x5, 0x1))
                ece = qp.query_ece()
                out["ece"] = [ece.vendor_id, ece.options, ece.comp_mask]
                e = verbs_error_of(lambda: qp.set_ece(ECE(0, 1)))
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
                e = verbs_error_of(lambda: qp.modify_rate_limit(1))
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


def test_create_qp_refuses_bad_init_attrs_and_names_each_type(recording):
    """create_qp's checks of QPInitAttr before ibv_create_qp (the log stays
    empty), a failed create's message naming the type, and the repr of
    each QP type."""

    def body(fake):
        import errno

        import ibverbs
        from ibverbs import QPInitAttr, QPType

        out = {}
        with (
            ibverbs.Context("fake0") as ctx,
            ctx.alloc_pd() as pd,
            ctx.alloc_pd() as pd2,
            ctx.create_cq(8) as cq,
            ibverbs.Context("fake0") as other,
            other.create_cq(8) as ocq,
        ):
            srq = pd2.create_srq(max_wr=8)
            shut = ctx.create_cq(8)
            shut.close()
            fake.clear()
            for ia in (
                QPInitAttr(None),
                QPInitAttr(pd),
                QPInitAttr(shut),
                QPInitAttr(ocq),
                QPInitAttr(cq, srq=cq),
                QPInitAttr(cq, srq=srq),
                QPInitAttr(cq, max_send_wr=-1),
                QPInitAttr(cq, max_inline_data="x"),
            ):
                try:
                    pd.create_qp(ia)
                except (TypeError, ValueError, ibverbs.VerbsError) as e:
                    out.setdefault("errors", []).append([type(e).__name__, str(e)])
            out["verbs"] = [r.verb for r in fake.take()]
            fake.fail("create_qp", errno.ENOMEM)
            try:
                pd.create_qp(QPInitAttr(cq, qp_type=QPType.UD, srq=None, max_inline_data=8))
            except ibverbs.VerbsError as e:
                out["failed"] = str(e)
            reprs = []
            for t in (QPType.UC, QPType.UD, QPType.RAW_PACKET):
                qp = pd.create_qp(QPInitAttr(cq, qp_type=t))
                reprs.append(repr(qp).split(" qp_num=")[0])
                qp.close()
                reprs.append(repr(qp))
            out["reprs"] = reprs
            srq.close()
        return out

    out = recording.run(body).ok()
    errs = out["errors"]
    assert errs[0][0] == "TypeError" and errs[0][1].startswith("init_attr.send_cq must be a CQ")
    assert errs[1][0] == "TypeError" and errs[1][1].startswith("init_attr.send_cq must be a CQ")
    assert errs[2][0] == "VerbsError" and errs[2][1].endswith("CQ is closed")
    assert errs[3][0] == "ValueError" and "init_attr.send_cq" in errs[3][1]
    assert "Context" in errs[3][1]
    assert errs[4][0] == "TypeError" and errs[4][1].startswith(
        "init_attr.srq must be an SRQ or None"
    )
    assert errs[5][0] == "ValueError" and "init_attr.srq" in errs[5][1] and "PD" in errs[5][1]
    assert errs[6][0] == "ValueError" and "init_attr.max_send_wr" in errs[6][1]
    assert errs[7][0] == "TypeError" and "init_attr.max_inline_data" in errs[7][1]
    assert out["verbs"] == []
    assert "UD QP with max_send_wr=128 max_recv_wr=128 max_send_sge=1" in out["failed"]
    assert "max_inline_data=8" in out["failed"]
    assert out["reprs"] == [
        "<ibverbs.QP UC",
        "<ibverbs.QP UC closed>",
        "<ibverbs.QP UD",
        "<ibverbs.QP UD closed>",
        "<ibverbs.QP RAW_PACKET",
        "<ibverbs.QP RAW_PACKET closed>",
    ]
