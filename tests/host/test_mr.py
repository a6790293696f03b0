"""Memory regions against the recording double (tests/fakes/recording/):
reg_mr's address, length and access flags, reg_mr_ex, buffers, DMA handles
and rereg_mr, reg_dmabuf_mr and advise_mr, field by field.  A check of what
the binding hands libibverbs and what it makes of the answers, not evidence
that a provider runs the verbs.  On rxe: tests/device/test_mr_device.py and
test_mr_ex.py."""

from __future__ import annotations

from ibverbs import enums


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
