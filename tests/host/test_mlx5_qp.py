"""ibverbs.mlx5's CQ and QP (mlx5.create_cq, mlx5.create_qp, the DC setters
and the QP-level verbs) against the fake libmlx5.so.1 on top of the
recording double: every argument and struct byte the binding passes.  The
fake is a double, not evidence that anything works on an mlx5 device."""

from __future__ import annotations

import struct


def test_create_cq_passes_each_option_with_its_mask_bit(mlx5_fake):
    def body(fake):
        import ibverbs
        from ibverbs import mlx5

        with ibverbs.Context("fake0") as ctx:
            cq = mlx5.create_cq(
                ctx,
                ibverbs.CQInitAttrEx(cqe=16),
                cqe_comp_res_format=mlx5.CQEResFormat.CSUM,
                flags=mlx5.CQInitAttrFlags.CQE_PAD,
                cqe_size=128,
            )
            plain = mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=8))
            out = [type(cq).__name__, isinstance(cq, ibverbs.CQEx), cq.poll(), repr(type(cq))]
            try:
                mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=8), cqe_size=96)
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
            plain.close()
            cq.close()
        try:
            mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=8))
        except ibverbs.VerbsError as e:
            out.append(e.errno)
        return out

    res = mlx5_fake.run(body)
    typ, is_ex, polled, trepr, (err, op), ebadf = res.ok()
    assert (typ, is_ex, polled) == ("CQ", True, [])
    assert "ibverbs.mlx5.CQ" in trepr
    assert (err, op) == (22, "mlx5dv_create_cq")
    assert ebadf == 9
    full, plain, bad = res.mlx5_calls("mlx5dv_create_cq")
    assert full["cq_attr.cqe"] == 16
    assert full["attr.comp_mask"] == 7
    # comp_mask, then cqe_comp_res_format at 8, flags at 12, cqe_size at 16
    assert full["attr"] == struct.pack("<QB3xIH6x", 7, 2, 1, 128)
    assert plain["attr"] == bytes(24)
    assert bad["attr.comp_mask"] == 4 and bad["attr.cqe_size"] == 96


def _qp_body(fake):
    import ibverbs
    from ibverbs import mlx5

    ops = ibverbs.QPCreateSendOpsFlags
    out = {}
    with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
        cq = mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=16))
        dci = mlx5.create_qp(
            pd,
            ibverbs.QPInitAttrEx(cq, send_ops_flags=ops.SEND | ops.RDMA_WRITE),
            dc_type=mlx5.DCType.DCI,
            log_num_concurent=3,
            log_num_errored=1,
            create_flags=mlx5.QPCreateFlags.OOO_DP,
            send_ops_flags=mlx5.SendOpsFlags.MEMCPY,
        )
        out["dci"] = [type(dci).__name__, isinstance(dci, ibverbs.QPEx), int(dci.qp_type)]
        srq = pd.create_srq(8)
        dct = mlx5.create_qp(
            pd,
            ibverbs.QPInitAttrEx(cq, srq=srq),
            dc_type=mlx5.DCType.DCT,
            dct_access_key=0x1122334455667788,
        )
        rc = mlx5.create_qp(
            pd,
            ibverbs.QPInitAttrEx(cq, send_ops_flags=ops.SEND),
            create_flags=mlx5.QPCreateFlags.OOO_DP,
        )
        ah = pd.create_ah(ibverbs.AHAttr(dlid=3, port_num=1))
        mr = pd.reg_mr(0x100000, 4096, ibverbs.AccessFlags.LOCAL_WRITE)
        errs = []

        def err(f, *a, **kw):
            try:
                f(*a, **kw)
            except (ibverbs.VerbsError, ValueError) as e:
                errs.append(
                    [type(e).__name__, getattr(e, "errno", None), getattr(e, "operation", None)]
                )
            else:
                errs.append(None)

        err(dci.wr_set_dc_addr, ah, 5, 7)  # outside a batch
        dci.wr_start()
        err(dci.wr_set_dc_addr, ah, 5, 7)  # before a builder
        dci.wr_send()
        dci.wr_set_sge(mr.lkey, 0x100000, 64)
        dci.wr_set_dc_addr(ah, 0x123456, 0x1122334455667788)
        err(dci.wr_set_dc_addr, ah, 5, 7)  # twice
        dci.wr_rdma_write(0x99, 0x2000)
        dci.wr_set_sge(mr.lkey, 0x100000, 64)
        dci.wr_set_dc_addr_stream(ah, 77, 9, 5)
        dci.wr_abort()
        rc.wr_start()
        rc.wr_send()
        err(rc.wr_set_dc_addr, ah, 5, 7)  # not DC: no setter
        rc.wr_abort()
        dci.modify_udp_sport(49152)
        dci.modify_lag_port(2)
        out["lag"] = dci.query_lag_port()
        dci.dci_stream_id_reset(3)
        mlx5.modify_qp_udp_sport(rc, 1234)
        mlx5.modify_qp_lag_port(rc, 1)
        out["lag2"] = mlx5.query_qp_lag_port(rc)
        mlx5.dci_stream_id_reset(rc, 0)
        err(mlx5.modify_qp_lag_port, rc, 3)
        err(mlx5.create_qp, pd, ibverbs.QPInitAttrEx(cq), dct_access_key=1)
        err(mlx5.create_qp, pd, ibverbs.QPInitAttrEx(cq), log_num_concurent=1)
        out["errs"] = errs
        out["qpn"] = [dci.qp_num, rc.qp_num]
        for o in (dci, dct, rc):
            o.close()
        err(dci.modify_udp_sport, 1)
        err(dci.query_lag_port)
        err(mlx5.query_qp_lag_port, dci)
        ah.close()
        mr.close()
        srq.close()
        cq.close()
    return out


def test_create_qp_dc_and_the_dc_setters(mlx5_fake):
    res = mlx5_fake.run(_qp_body)
    out = res.ok()
    assert out["dci"] == ["QP", True, 0xFF]  # IBV_QPT_DRIVER
    dci, dct, rc = res.mlx5_calls("mlx5dv_create_qp")[:3]
    assert dci["qp_attr.qp_type"] == 0xFF and dct["qp_attr.qp_type"] == 0xFF
    assert dci["attr.comp_mask"] == 0xF
    # comp_mask, create_flags, {dc_type, pad, {log_num_concurent,
    # log_num_errored, 6 zero bytes}}, send_ops_flags
    assert dci["attr"] == struct.pack("<QI4xI4xBB6xQ", 0xF, 0x80, 2, 3, 1, 0x10)
    assert dct["attr"] == struct.pack("<QI4xI4xQQ", 2, 0, 1, 0x1122334455667788, 0)
    assert rc["attr"] == struct.pack("<QI4xI4xQQ", 1, 0x80, 0, 0, 0)
    assert rc["qp_attr.qp_type"] == 2  # RC, as given
    (a,) = res.mlx5_calls("mlx5dv_wr_set_dc_addr")
    assert (a["remote_dctn"], a["remote_dc_key"]) == (0x123456, 0x1122334455667788)
    assert a["ah"] != 0
    (s,) = res.mlx5_calls("mlx5dv_wr_set_dc_addr_stream")
    assert (s["remote_dctn"], s["remote_dc_key"], s["stream_id"]) == (77, 9, 5)
    assert out["lag"] == [1, 2] or out["lag"] == (1, 2)
    assert tuple(out["lag2"]) == (1, 2)
    dqpn, rqpn = out["qpn"]
    sp = res.mlx5_calls("mlx5dv_modify_qp_udp_sport")
    assert [(r["qp.qp_num"], r["udp_sport"]) for r in sp] == [(dqpn, 49152), (rqpn, 1234)]
    lp = res.mlx5_calls("mlx5dv_modify_qp_lag_port")
    assert [(r["qp.qp_num"], r["port_num"]) for r in lp] == [(dqpn, 2), (rqpn, 1), (rqpn, 3)]
    st = res.mlx5_calls("mlx5dv_dci_stream_id_reset")
    assert [(r["qp.qp_num"], r["stream_id"]) for r in st] == [(dqpn, 3), (rqpn, 0)]
    e = out["errs"]
    assert e[0] == ["VerbsError", 22, "mlx5dv_wr_set_dc_addr"]  # outside a batch
    assert e[1] == ["VerbsError", 22, "mlx5dv_wr_set_dc_addr"]  # no builder
    assert e[2] == ["VerbsError", 22, "mlx5dv_wr_set_dc_addr"]  # twice
    assert e[3] == ["VerbsError", 95, "mlx5dv_wr_set_dc_addr"]  # not a DCI
    assert e[4] == ["VerbsError", 22, "mlx5dv_modify_qp_lag_port"]
    assert e[5][0] == "ValueError" and e[6][0] == "ValueError"
    assert e[7][1] == 9 and e[8][1] == 9 and e[9][1] == 9  # EBADF once closed


def test_create_qp_failure_and_missing_symbol(mlx5_fake):
    def body(fake):
        import ibverbs
        from ibverbs import mlx5

        out = []
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = ctx.create_cq(4)
            try:
                mlx5.create_qp(pd, ibverbs.QPInitAttrEx(cq), dc_type=mlx5.DCType.DCI)
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
            try:
                mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=4))
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
            cq.close()
        return out

    res = mlx5_fake.run(body, fail={"mlx5dv_create_qp": 12, "mlx5dv_create_cq": 95})
    assert res.ok() == [[12, "mlx5dv_create_qp"], [95, "mlx5dv_create_cq"]]
