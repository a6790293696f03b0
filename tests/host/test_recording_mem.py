"""The memory, import and device verbs of rdma-core 59-64 against the recording
double (tests/fakes/recording/memx.c): every argument and struct field the
binding passes, the comp_mask of what was given, the unimport on close of
imported objects, the ValuesEx record, and nothing left live.  A check of
what the binding hands libibverbs, not evidence that a provider runs them."""

from __future__ import annotations


def test_reg_mr_ex_buf_dmah_and_rereg(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            dmah = ctx.alloc_dmah(cpu_id=3, tph_mem_type=enums.TPHMemType.PM)
            out["dmah"] = [dmah.cpu_id, dmah.ph, int(dmah.tph_mem_type), int(dmah.comp_mask)]
            buf = pd.alloc_buf(8192)
            out["aligned"] = buf.addr % 4096 == 0
            mr = pd.reg_mr_ex(4096, 7, addr=buf.addr, iova=0x9000, dmah=dmah, buf=buf)
            out["mr"] = [mr.addr, mr.length, mr.buf is buf, mr.dmah is dmah]
            try:
                buf.close()
            except ibverbs.VerbsError as e:
                out["busy"] = e.errno
            mr2 = pd.reg_buf_mr(buf, buf.addr + 4096, 4096, 1)
            out["fd"] = buf.export_dmabuf_fd() >= 0
            pd2 = ctx.alloc_pd()
            mr3 = pd.reg_mr_ex(64, fd=5, fd_offset=16, iova=0x100)
            mr3.rereg(
                enums.ReregMRFlags.CHANGE_PD | enums.ReregMRFlags.CHANGE_ACCESS, pd=pd2, access=3
            )
            out["moved"] = [mr3.pd is pd2, mr3.access]
            fake.fail("rereg_mr", 95)
            try:
                mr3.rereg(enums.ReregMRFlags.CHANGE_ACCESS, access=1)
            except ibverbs.VerbsError as e:
                out["rereg_err"] = [e.errno, e.operation, e.rereg_err]
            for o in (mr, mr2, mr3, buf, dmah, pd2):
                o.close()
        return out

    res = recording.run(body)
    assert res.error is None, res.error
    v = res.value
    assert v["dmah"] == [3, None, 1, 5] and v["aligned"] and v["busy"] == 16
    rec = res.one("alloc_dmah")
    assert rec["attr.comp_mask"] == 5 and rec["attr.cpu_id"] == 3
    assert rec["attr.tph_mem_type"] == 1 and "attr.ph" not in rec
    recs = [r for r in res.records if r.verb == "reg_mr_ex"]
    a, c = recs
    assert a["attr.comp_mask"] == 0x33 and a["attr.length"] == 4096 and a["attr.access"] == 7
    assert a["attr.iova"] == 0x9000 and a["attr.dmah"] != 0 and a["attr.buf"] != 0
    assert "attr.fd" not in a and "attr.fd_offset" not in a
    assert c["attr.comp_mask"] == 0xD and c["attr.fd"] == 5 and c["attr.fd_offset"] == 16
    assert c["attr.iova"] == 0x100 and "attr.addr" not in c
    assert v["mr"] == [0x9000, 4096, True, True]
    b = res.one("reg_buf_mr")
    assert b["buf"] == a["attr.buf"] and b["length"] == 4096 and b["access"] == 1
    assert b["addr"] == a["attr.addr"] + 4096
    assert res.one("alloc_buf")["size"] == 8192
    first = [r for r in res.records if r.verb == "rereg_mr"][0]
    assert first["flags"] == 6 and first["access"] == 3 and first["pd"] != 0
    assert first["addr"] == 0 and first["length"] == 0
    assert v["moved"] == [True, 3]
    assert v["rereg_err"] == [95, "ibv_rereg_mr", -4]
    assert res.one("free_buf") and res.one("dealloc_dmah")
    assert res.live == 0, res.live_report


def test_imports_unimport_on_close(recording):
    def body(fake):
        import os

        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            fd = os.dup(0)
            ctx2 = ibverbs.Context.import_device(fd)
            os.fstat(fd)  # still the caller's: the binding imported a dup
            os.close(fd)
            pd = ctx2.import_pd(0x42)
            mr = pd.import_mr(0x43)
            dm = ctx2.import_dm(0x44, 4096)
            out["flags"] = [pd.imported, mr.imported, dm.imported, pd.handle, mr.handle]
            out["mr"] = [mr.addr, mr.length]
            try:
                pd.close()
            except ibverbs.VerbsError as e:
                out["busy"] = e.errno
            out["dmfd"] = dm.export_dmabuf_fd() >= 0
            for o in (mr, dm, pd, ctx2):
                o.close()
            own = ctx.alloc_pd()
            out["own"] = own.imported
            own.close()
        return out

    res = recording.run(body)
    assert res.error is None, res.error
    v = res.value
    assert v["flags"] == [True, True, True, 0x42, 0x43] and v["mr"] == [0x1000, 4096]
    assert v["busy"] == 16 and v["dmfd"] and v["own"] is False
    assert res.one("import_device")["cmd_fd"] >= 0
    assert res.one("import_pd")["pd_handle"] == 0x42
    assert res.one("import_mr")["mr_handle"] == 0x43
    assert res.one("import_dm")["dm_handle"] == 0x44
    for verb in ("unimport_pd", "unimport_mr", "unimport_dm", "dm_export_dmabuf_fd"):
        assert res.one(verb)
    verbs = [r.verb for r in res.records]
    assert "dereg_mr" not in verbs and "free_dm" not in verbs
    assert verbs.count("dealloc_pd") == 1  # only the process's own PD
    assert res.live == 0, res.live_report


def test_rt_values_port_speed_and_null_mr(recording):
    def body(fake):
        import ibverbs

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            v = ctx.query_rt_values_ex()
            speed = ctx.query_port_speed(1)
            null = pd.alloc_null_mr()
            out = [int(v.comp_mask), v.raw_clock_sec, v.raw_clock_nsec, speed, null.lkey > 0]
            null.close()
            fake.fail("query_rt_values", 95)
            try:
                ctx.query_rt_values_ex()
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
        return out

    res = recording.run(body)
    assert res.error is None, res.error
    assert res.value == [1, 12, 345678, 4000, True, [95, "ibv_query_rt_values_ex"]]
    assert [r["values.comp_mask"] for r in res.records if r.verb == "query_rt_values"] == [1, 1]
    assert res.one("query_port_speed")["port_num"] == 1
    assert res.one("alloc_null_mr")
    assert res.live == 0, res.live_report
