"""Completion paths against the recording double
(tests/fakes/recording/): the extended QP's wr_* batch, completion
events through a channel, and posts and polls from several threads at
once (each with its own QP and CQ, and on one shared QP), every
completion returned exactly once, with recording on and off."""

from __future__ import annotations

from ibverbs import enums


def test_qp_ex_batch_passes_each_builder_and_setter(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        F = enums.QPCreateSendOpsFlags
        ops = F.SEND | F.SEND_WITH_IMM | F.RDMA_WRITE | F.RDMA_READ | F.ATOMIC_FETCH_AND_ADD
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
            attr = ibverbs.QPInitAttrEx(cq, send_ops_flags=ops, max_send_sge=2, max_inline_data=16)
            with pd.create_qp_ex(attr) as qp:
                qp.to_init(1)
                qp.to_rtr(ibverbs.QPInfo(5, 0, 0, bytes(16), 1, 3), sgid_index=0)
                qp.to_rts()
                qp.wr_start()
                qp.wr_id, qp.wr_flags = 21, enums.SendFlags.SIGNALED
                qp.wr_rdma_write(0x55, 0xA000)
                qp.wr_set_sge(7, 0x1000, 64)
                qp.wr_id = 22
                qp.wr_send_imm(0x01020304)
                qp.wr_set_sge_list([ibverbs.SGE(0x2000, 16, 7), ibverbs.SGE(0x3000, 32, 7)])
                qp.wr_id, qp.wr_flags = 23, enums.SendFlags.SIGNALED | enums.SendFlags.INLINE
                qp.wr_send()
                qp.wr_set_inline_data(b"tiny")
                qp.wr_id = 24
                qp.wr_atomic_fetch_add(0x56, 0xB000, 99)
                qp.wr_set_sge(7, 0x4000, 8)
                qp.wr_complete()
                wcs = [[w.wr_id, int(w.opcode), w.byte_len] for w in cq.poll(8)]
                qp.wr_start()
                qp.wr_rdma_read(1, 2)
                qp.wr_abort()
                left = cq.poll(8)
        return [wcs, len(left)]

    res = recording.run(body)
    wcs, left = res.ok()
    W = enums.WCOpcode
    assert wcs == [
        [21, int(W.RDMA_WRITE), 64],
        [22, int(W.SEND), 48],
        [23, int(W.SEND), 4],
        [24, int(W.FETCH_ADD), 8],
    ]
    assert left == 0
    create = res.one("create_qp_ex")
    F = enums.QPCreateSendOpsFlags
    want = F.SEND | F.SEND_WITH_IMM | F.RDMA_WRITE | F.RDMA_READ | F.ATOMIC_FETCH_AND_ADD
    assert create["attr.send_ops_flags"] == int(want)
    assert create["attr.pd"] == res.one("dealloc_pd")["pd"]
    assert create["attr.comp_mask"] == 0x41  # IBV_QP_INIT_ATTR_PD | _SEND_OPS_FLAGS
    assert create["attr.cap.max_inline_data"] == 16
    sig = int(enums.SendFlags.SIGNALED)
    write = res.one("wr_rdma_write")
    assert (write["wr_id"], write["wr_flags"], write["rkey"], write["remote_addr"]) == (
        21,
        sig,
        0x55,
        0xA000,
    )
    assert res.one("wr_send_imm")["imm_data"] == 0x01020304
    sl = res.one("wr_set_sge_list")
    assert sl["num_sge"] == 2
    assert (sl["sg_list[1].addr"], sl["sg_list[1].length"], sl["sg_list[1].lkey"]) == (
        0x3000,
        32,
        7,
    )
    send = res.one("wr_send")
    assert send["wr_flags"] == sig | int(enums.SendFlags.INLINE)
    assert res.one("wr_set_inline_data")["data"] == b"tiny"
    fa = res.one("wr_atomic_fetch_add")
    assert (fa["wr_id"], fa["rkey"], fa["remote_addr"], fa["add"]) == (24, 0x56, 0xB000, 99)
    sges = res.calls("wr_set_sge")
    assert [(s["lkey"], s["addr"], s["length"]) for s in sges] == [(7, 0x1000, 64), (7, 0x4000, 8)]
    assert res.one("wr_complete")["count"] == 4
    assert res.one("wr_abort")["count"] == 1
    assert res.live == 0, res.live_report


def test_completion_events_through_a_channel(recording):
    def body(fake):
        import select

        import ibverbs
        from ibverbs import enums

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            ch = ctx.create_comp_channel()
            cq = ctx.create_cq(8, ch)
            qp = pd.create_qp(ibverbs.QPInitAttr(cq))
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)
            idle = select.select([ch.fd], [], [], 0)[0]
            cq.req_notify()
            qp.post_recv(ibverbs.RecvWR(1, [ibverbs.SGE(0x1000, 8, 1)]))
            ready = select.select([ch.fd], [], [], 5)[0]
            same = ch.get_cq_event() is cq
            cq.ack_events(1)
            n = len(cq.poll(4))
            qp.close()
            cq.close()
            ch.close()
        return [len(idle), len(ready), same, n]

    res = recording.run(body)
    assert res.ok() == [0, 1, True, 1]
    assert res.one("req_notify_cq")["solicited_only"] == 0
    assert res.one("ack_cq_events")["nevents"] == 1
    assert res.one("get_cq_event")["channel"] == res.one("create_cq")["channel"]
    assert res.live == 0, res.live_report


def test_threads_post_and_poll_each_completion_exactly_once(recording):
    def body(fake, record, per_thread):
        import threading

        import ibverbs
        from ibverbs import enums

        fake.set_recording(record)
        nthreads = 4
        got = [None] * nthreads
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            shared_cq = ctx.create_cq(4096)
            shared = pd.create_qp(ibverbs.QPInitAttr(shared_cq, max_send_wr=4096))
            for qp in (shared,):
                for st in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
                    qp.modify(enums.QPAttrMask.STATE, qp_state=st)

            def own(k):
                cq = ctx.create_cq(64)
                qp = pd.create_qp(ibverbs.QPInitAttr(cq))
                for st in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
                    qp.modify(enums.QPAttrMask.STATE, qp_state=st)
                seen = []
                sge = ibverbs.SGE(0x1000, 8, 1)
                for i in range(per_thread):
                    wr_id = k * per_thread + i
                    qp.post_send(ibverbs.SendWR(wr_id, sge, send_flags=enums.SendFlags.SIGNALED))
                    seen += [w.wr_id for w in cq.poll(2)]
                    # and one on the shared QP, polled by whoever comes
                    shared.post_send(
                        ibverbs.SendWR(wr_id, sge, send_flags=enums.SendFlags.SIGNALED)
                    )
                    seen += [-1 - w.wr_id for w in shared_cq.poll(2)]
                qp.close()
                cq.close()
                got[k] = seen

            threads = [threading.Thread(target=own, args=(k,)) for k in range(nthreads)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rest = [-1 - w.wr_id for w in shared_cq.poll(4096)]
            shared.close()
            shared_cq.close()
        fake.set_recording(True)
        own_ids = sorted(x for g in got for x in g if x >= 0)
        shared_ids = sorted(-1 - x for g in got + [rest] for x in g if x < 0)
        total = nthreads * per_thread
        return [
            own_ids == list(range(total)),
            shared_ids == list(range(total)),
            fake.cq_overflows(),
        ]

    for record, n in ((False, 2000), (True, 300)):
        res = recording.run(body, record, n)
        assert res.ok() == [True, True, 0], record
        posts = len(res.calls("post_send"))
        assert posts == (8 * n if record else 0)
        assert res.live == 0, res.live_report
