"""What the binding passes to libibverbs for the verbs no provider here
runs (flow steering, device memory, dmabuf MRs, advise_mr, the extended
CQ's timestamp/cvlan/flow_tag fields), checked field by field against the
recording double (tests/fakes/recording/).  This is not evidence that the
verbs work on hardware: only that the binding hands them what it should
and reads their answers back right."""

from __future__ import annotations

import errno

import ibverbs
from ibverbs import enums


def test_create_flow_passes_the_attr_and_every_spec_field(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import flow

        spec = flow.FlowAttr(
            priority=3,
            port=1,
            flags=int(ibverbs.enums.FlowFlags.DONT_TRAP),
            specs=[
                flow.FlowSpecEth(dst_mac="02:00:00:00:00:01", ether_type=0x0800),
                flow.FlowSpecIPv4(dst_ip="192.0.2.7", mask={"dst_ip": 0xFFFFFF00}),
                flow.FlowSpecTCPUDP(udp=True, dst_port=4791),
                flow.FlowSpecIPv6(src_ip="2001:db8::1", flow_label=0x12345, inner=True),
                flow.FlowSpecActionTag(0xBEEF),
                flow.FlowSpecActionDrop(),
            ],
        )
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            with ctx.create_cq(8) as cq:
                with pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.RAW_PACKET)) as qp:
                    with qp.create_flow(spec):
                        pass
                    fake.fail("create_flow", errno.EOPNOTSUPP)
                    try:
                        qp.create_flow(spec)
                    except ibverbs.VerbsError as e:
                        return [e.errno, e.operation]
        return None

    res = recording.run(body)
    assert res.ok() == [errno.EOPNOTSUPP, "ibv_create_flow"]
    rec, failed = res.calls("create_flow")
    assert failed["injected_errno"] == errno.EOPNOTSUPP
    qp = res.one("create_qp")
    assert qp["attr.qp_type"] == int(ibverbs.QPType.RAW_PACKET)
    assert rec.prefixed("attr.") == {
        "comp_mask": 0,
        "type": int(enums.FlowAttrType.NORMAL),
        "size": rec["attr.size"],
        "priority": 3,
        "num_of_specs": 6,
        "port": 1,
        "flags": int(enums.FlowFlags.DONT_TRAP),
    }
    T = enums.FlowSpecType
    s0, s1, s2, s3 = (rec.prefixed(f"spec[{i}].") for i in range(4))
    assert s0["type"] == T.ETH
    assert s0["val.dst_mac"] == bytes.fromhex("020000000001")
    assert s0["mask.dst_mac"] == b"\xff" * 6
    assert (s0["val.ether_type"], s0["mask.ether_type"]) == (0x0800, 0xFFFF)
    assert s0["val.src_mac"] == s0["mask.src_mac"] == bytes(6)  # not matched
    assert (s0["val.vlan_tag"], s0["mask.vlan_tag"]) == (0, 0)
    assert s1["type"] == T.IPV4
    assert (s1["val.dst_ip"], s1["mask.dst_ip"]) == (0xC0000207, 0xFFFFFF00)
    assert (s1["val.src_ip"], s1["mask.src_ip"]) == (0, 0)
    assert s2["type"] == T.UDP
    assert (s2["val.dst_port"], s2["mask.dst_port"]) == (4791, 0xFFFF)
    assert s3["type"] == T.IPV6 | T.INNER
    assert s3["val.src_ip"] == bytes.fromhex("20010db8000000000000000000000001")
    assert (s3["val.flow_label"], s3["mask.flow_label"]) == (0x12345, 0xFFFFFFFF)
    assert rec["spec[4].type"] == T.ACTION_TAG and rec["spec[4].tag_id"] == 0xBEEF
    assert rec["spec[5].type"] == T.ACTION_DROP
    # The sizes add up: the attr, then each spec, as the C structs are.
    sizes = [rec[f"spec[{i}].size"] for i in range(6)]
    assert rec["attr.size"] == 20 + sum(sizes)
    assert "spec[0].bytes" not in rec  # every spec type was decoded
    assert len(res.calls("destroy_flow")) == 1
    assert res.live == 0, res.live_report


def test_device_memory_alloc_copy_and_register(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        access = enums.AccessFlags.ZERO_BASED | enums.AccessFlags.LOCAL_WRITE
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            with ctx.alloc_dm(4096, log_align_req=6) as dm:
                dm.copy_to(8, b"hello, dm!!!")
                back = dm.copy_from(8, 12)
                with pd.reg_dm_mr(dm, 64, 1024, access) as mr:
                    keys = [mr.lkey, mr.rkey, mr.length]
        return {"back": back.hex(), "keys": keys}

    res = recording.run(body)
    v = res.ok()
    assert bytes.fromhex(v["back"]) == b"hello, dm!!!"
    a = res.one("alloc_dm")
    assert a.prefixed("attr.") == {"length": 4096, "log_align_req": 6, "comp_mask": 0}
    to, frm = res.one("memcpy_to_dm"), res.one("memcpy_from_dm")
    assert (to["dm_offset"], to["length"], to["data"]) == (8, 12, b"hello, dm!!!")
    assert (frm["dm_offset"], frm["length"]) == (8, 12)
    reg = res.one("reg_dm_mr")
    assert reg["dm"] == to["dm"] == frm["dm"]
    assert (reg["dm_offset"], reg["length"]) == (64, 1024)
    access = enums.AccessFlags.ZERO_BASED | enums.AccessFlags.LOCAL_WRITE
    assert reg["access"] == int(access)
    assert reg["pd"] == res.one("dealloc_pd")["pd"]
    assert v["keys"][2] == 1024 and v["keys"][0] == v["keys"][1] != 0
    assert res.one("free_dm")["dm"] == to["dm"]
    assert res.verbs().index("dereg_mr") < res.verbs().index("free_dm")
    assert res.live == 0, res.live_report


def test_device_memory_failures_name_the_verb(recording):
    def body(fake):
        import errno

        import ibverbs

        out = []
        with ibverbs.Context("fake0") as ctx:
            fake.fail("alloc_dm", errno.ENOMEM)
            try:
                ctx.alloc_dm(4096)
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
            with ctx.alloc_dm(4096) as dm:
                fake.fail("memcpy_to_dm", errno.EIO)
                try:
                    dm.copy_to(0, b"abcd")
                except ibverbs.VerbsError as e:
                    out.append([e.errno, e.operation])
        return out

    res = recording.run(body)
    assert res.ok() == [
        [errno.ENOMEM, "ibv_alloc_dm"],
        [errno.EIO, "ibv_memcpy_to_dm"],
    ]
    assert res.live == 0, res.live_report


def test_reg_dmabuf_mr_passes_offset_length_iova_fd_and_access(recording):
    def body(fake):
        import os

        import ibverbs
        from ibverbs import enums

        fd = os.open(os.devnull, os.O_RDONLY)
        access = enums.AccessFlags.LOCAL_WRITE | enums.AccessFlags.REMOTE_READ
        try:
            with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
                with pd.reg_dmabuf_mr(4096, 65536, 0x7F0000000000, fd, access) as mr:
                    got = [mr.length, mr.lkey, mr.rkey, mr.is_dmabuf, mr.access]
        finally:
            os.close(fd)
        return [fd, got]

    res = recording.run(body)
    fd, (length, lkey, rkey, is_dmabuf, access) = res.ok()
    rec = res.one("reg_dmabuf_mr")
    want = enums.AccessFlags.LOCAL_WRITE | enums.AccessFlags.REMOTE_READ
    assert (rec["offset"], rec["length"], rec["iova"]) == (4096, 65536, 0x7F0000000000)
    assert (rec["fd"], rec["access"]) == (fd, int(want))
    assert (length, is_dmabuf, access) == (65536, True, int(want))
    assert lkey == rkey != 0
    assert res.live == 0, res.live_report


def test_advise_mr_passes_advice_flags_and_each_sge(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            with pd.reg_mr(0x10000, 1 << 20, enums.AccessFlags.ON_DEMAND) as mr:
                pd.advise_mr(
                    enums.AdviseMRAdvice.PREFETCH_WRITE,
                    enums.AdviseMRFlags.FLUSH,
                    [mr.sge(4096), mr.sge(8192, offset=65536)],
                )
                return [mr.lkey, mr.addr]

    res = recording.run(body)
    lkey, addr = res.ok()
    rec = res.one("advise_mr")
    assert rec["advice"] == int(enums.AdviseMRAdvice.PREFETCH_WRITE)
    assert rec["flags"] == int(enums.AdviseMRFlags.FLUSH)
    assert rec["num_sges"] == 2
    assert rec.prefixed("sg_list[0].") == {"addr": addr, "length": 4096, "lkey": lkey}
    assert rec.prefixed("sg_list[1].") == {"addr": addr + 65536, "length": 8192, "lkey": lkey}
    assert res.one("reg_mr")["access"] == int(enums.AccessFlags.ON_DEMAND)
    assert res.live == 0, res.live_report


def test_extended_cq_reads_timestamps_cvlan_and_flow_tag(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        W = enums.CreateCQWCFlags
        fake.set_wc_ex(5000, 1_800_000_000_000_000_000, 0x0E07, 0xFEED)
        flags = W.COMPLETION_TIMESTAMP | W.COMPLETION_TIMESTAMP_WALLCLOCK | W.CVLAN
        flags |= W.FLOW_TAG | W.BYTE_LEN
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = ctx.create_cq_ex(ibverbs.CQInitAttrEx(32, wc_flags=flags))
            qp = pd.create_qp(ibverbs.QPInitAttr(cq, max_send_sge=2))
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)
            for wr_id in (7, 8):
                qp.post_recv(ibverbs.RecvWR(wr_id=wr_id, sg_list=[ibverbs.SGE(0x1000, 256, 1)]))
            wcs = cq.poll(4)
            out["poll"] = [
                [w.wr_id, w.completion_ts, w.completion_wallclock_ns, w.cvlan, w.flow_tag]
                for w in wcs
            ]
            qp.post_recv(ibverbs.RecvWR(wr_id=9, sg_list=[ibverbs.SGE(0x1000, 64, 1)]))
            assert cq.start_poll()
            out["read"] = [
                cq.wr_id,
                cq.read_completion_ts(),
                cq.read_completion_wallclock_ns(),
                cq.read_cvlan(),
                cq.read_flow_tag(),
                cq.read_byte_len(),
            ]
            # A post while polling (its completion lands on this CQ).
            qp.post_recv(ibverbs.RecvWR(wr_id=10, sg_list=[ibverbs.SGE(0x1000, 32, 1)]))
            cq.end_poll()
            out["after"] = [[w.wr_id, w.completion_ts] for w in cq.poll(4)]
            qp.close()
            cq.close()
        return out

    res = recording.run(body)
    v = res.ok()
    wall = 1_800_000_000_000_000_000
    assert v["poll"] == [
        [7, 5001, wall + 1, 0x0E07, 0xFEED],
        [8, 5002, wall + 2, 0x0E07, 0xFEED],
    ]
    assert v["read"] == [9, 5003, wall + 3, 0x0E07, 0xFEED, 64]
    assert v["after"] == [[10, 5004]]
    rec = res.one("create_cq_ex")
    W = enums.CreateCQWCFlags
    want = W.COMPLETION_TIMESTAMP | W.COMPLETION_TIMESTAMP_WALLCLOCK | W.CVLAN
    assert rec["attr.wc_flags"] == int(want | W.FLOW_TAG | W.BYTE_LEN)
    assert rec["attr.cqe"] == 32
    for field in ("completion_ts", "completion_wallclock_ns", "cvlan", "flow_tag"):
        assert len(res.calls(f"read_{field}")) == 4, field
    assert res.live == 0, res.live_report
