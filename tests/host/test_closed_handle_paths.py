"""Methods, attributes and arguments after close, against the recording
double (tests/fakes/recording/): each call is a VerbsError(EBADF) that
names the closed object, the double sees no verb for it, and nothing
leaks."""

from __future__ import annotations

import errno


def test_closed_objects_and_arguments_are_ebadf(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            cnt = ctx.create_counters()
            buf = pd.alloc_buf(4096)
            dm = ctx.alloc_dm(4096)
            wq = ctx.create_wq(pd, cq)
            wq2 = ctx.create_wq(pd, cq)
            tbl = ctx.create_rwq_ind_table([wq2])
            qp = pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=4))
            ece = qp.query_ece()
            dpd, dcq, dtd = ctx.alloc_pd(), ctx.create_cq(4), ctx.alloc_td()
            dxrcd = ctx.open_xrcd()
            mr = ibverbs.reg_tensor(pd, bytearray(64), ibverbs.AccessFlags.LOCAL_WRITE)
            sge = mr.sge(8)
            for o in (cnt, buf, dm, tbl, wq, qp, dpd, dcq, dtd, dxrcd, mr):
                o.close()
            calls = {
                # methods and attributes of a closed object
                "counters.attach_point_flow": lambda: cnt.attach_point_flow(
                    ibverbs.CounterDescription.PACKETS, 0
                ),
                "counters.read": lambda: cnt.read(2),
                "buf.export_dmabuf_fd": buf.export_dmabuf_fd,
                "buf.addr": lambda: buf.addr,
                "dm.copy_to": lambda: dm.copy_to(0, b"ab"),
                "dm.copy_from": lambda: dm.copy_from(0, 2),
                "dm.export_dmabuf_fd": dm.export_dmabuf_fd,
                "wq.modify": lambda: wq.modify(wq_state=enums.WQState.RDY),
                "wq.wq_num": lambda: wq.wq_num,
                "wq.state": lambda: wq.state,
                "rwq.ind_tbl_num": lambda: tbl.ind_tbl_num,
                "qp.attach_mcast": lambda: qp.attach_mcast("ff0e::1"),
                "qp.modify_rate_limit": lambda: qp.modify_rate_limit(1000),
                "qp.set_ece": lambda: qp.set_ece(ece),
                # a closed argument of an open object
                "create_rwq_ind_table": lambda: ctx.create_rwq_ind_table([wq]),
                "create_wq(pd)": lambda: ctx.create_wq(dpd, cq),
                "create_wq(cq)": lambda: ctx.create_wq(pd, dcq),
                "create_srq_ex(pd)": lambda: ctx.create_srq_ex(dpd),
                "create_srq_ex(cq)": lambda: ctx.create_srq_ex(pd, cq=dcq),
                "create_srq_ex(xrcd)": lambda: ctx.create_srq_ex(
                    pd, srq_type=ibverbs.SRQType.XRC, xrcd=dxrcd, cq=cq
                ),
                "alloc_parent_domain(pd)": lambda: ctx.alloc_parent_domain(dpd),
                "alloc_parent_domain(td)": lambda: ctx.alloc_parent_domain(pd, td=dtd),
                "pd.create_srq": lambda: dpd.create_srq(max_wr=4),
                "advise_mr(sge.mr)": lambda: pd.advise_mr(
                    ibverbs.AdviseMRAdvice.PREFETCH, 0, [sge]
                ),
            }
            fake.clear()
            for name, fn in calls.items():
                try:
                    fn()
                except ibverbs.VerbsError as e:
                    out[name] = [e.errno, "closed" in str(e)]
            out["verbs"] = [r.verb for r in fake.records()]
            out["names"] = list(calls)
            wq2.close()
        return out

    res = recording.run(body)
    out = res.ok()
    verbs, names = out.pop("verbs"), out.pop("names")
    assert len(names) == 24
    assert out == {name: [errno.EBADF, True] for name in names}
    assert verbs == []
    assert res.live == 0, res.live_report
