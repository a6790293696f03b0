"""MR paths the other host tests leave out, against the recording double
(tests/fakes/recording/): MR.rereg moving an MR into a PD that already
has children (the MR joins them, the new PD's close names both MRs, the
old PD closes), PD.advise_mr's refusals of its sg_list and its failed
verb, and reg_mr_ex's and rereg's refusals of inconsistent arguments."""

from __future__ import annotations

import errno


def test_rereg_into_a_pd_with_children(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        out = {}
        with ibverbs.Context("fake0") as ctx:
            pd, pd2 = ctx.alloc_pd(), ctx.alloc_pd()
            stay = pd2.reg_mr_ex(64, fd=5, fd_offset=0, iova=0x100)
            mr = pd.reg_mr_ex(64, fd=5, fd_offset=16, iova=0x200)
            mr.rereg(enums.ReregMRFlags.CHANGE_PD, pd=pd2)
            out["moved"] = [mr.pd is pd2, stay.pd is pd2]
            pd.close()
            out["old_closed"] = pd.closed
            try:
                pd2.close()
            except ibverbs.VerbsError as e:
                out["busy"] = [e.errno, str(e)]
            for o in (stay, mr, pd2):
                o.close()
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["moved"] == [True, True]
    assert out["old_closed"] is True
    assert out["busy"][0] == errno.EBUSY
    assert "MR x2" in out["busy"][1]
    assert res.live == 0, res.live_report


def test_advise_mr_refuses_bad_sg_lists(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import enums

        A = enums.AccessFlags.ON_DEMAND
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.alloc_pd() as pd2:
            with pd.reg_mr(0x10000, 4096, A) as mr, pd2.reg_mr(0x20000, 4096, A) as theirs:
                fake.clear()
                for name, sgl in (
                    ("not_list", 5),
                    ("empty", []),
                    ("not_sge", [mr.sge(8), 5]),
                    ("other_pd", (mr.sge(8), theirs.sge(8))),
                ):
                    try:
                        pd.advise_mr(enums.AdviseMRAdvice.PREFETCH, 0, sgl)
                    except (TypeError, ValueError) as e:
                        out[name] = [type(e).__name__, str(e)]
                out["verbs"] = [r.verb for r in fake.records()]
                fake.fail("advise_mr", errno.EIO)
                try:
                    pd.advise_mr(enums.AdviseMRAdvice.PREFETCH, 0, [mr.sge(8)])
                except ibverbs.VerbsError as e:
                    out["failed"] = [e.errno, e.operation, str(e)]
                try:
                    pd.reg_implicit_odp_mr("rw")
                except TypeError as e:
                    out["implicit"] = str(e)
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["not_list"][0] == "TypeError" and "sg_list" in out["not_list"][1]
    assert out["empty"] == ["ValueError", "sg_list must hold at least one SGE"]
    assert out["not_sge"][0] == "TypeError" and "sg_list[1]" in out["not_sge"][1]
    assert out["other_pd"][0] == "ValueError" and "sg_list[1].mr" in out["other_pd"][1]
    assert out["verbs"] == []
    assert out["failed"][:2] == [errno.EIO, "ibv_advise_mr"]
    assert "advice=0 flags=0x0 num_sge=1" in out["failed"][2]
    assert "access" in out["implicit"]
    assert res.live == 0, res.live_report


def test_reg_mr_ex_and_rereg_refuse_inconsistent_arguments(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        R = enums.ReregMRFlags
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            buf = pd.alloc_buf(4096)
            mr = pd.reg_mr_ex(64, fd=5, fd_offset=16, iova=0x100)
            bmr = pd.reg_buf_mr(buf, buf.addr, 4096, 1)
            fake.clear()
            cases = {
                "overflow": lambda: pd.reg_mr_ex(4096, 1, addr=2**64 - 16),
                "access_flag_only": lambda: mr.rereg(R.CHANGE_ACCESS),
                "access_only": lambda: mr.rereg(R.CHANGE_PD, pd=pd, access=1),
                "trans_without_len": lambda: mr.rereg(R.CHANGE_TRANSLATION, addr=0x1000),
                "trans_of_buf_mr": lambda: bmr.rereg(
                    R.CHANGE_TRANSLATION, addr=buf.addr, length=64
                ),
            }
            for name, fn in cases.items():
                try:
                    fn()
                except ValueError as e:
                    out[name] = str(e)
            out["verbs"] = [r.verb for r in fake.records()]
            for o in (bmr, mr, buf):
                o.close()
        return out

    res = recording.run(body)
    out = res.ok()
    assert out.pop("verbs") == []
    assert out["overflow"] == "addr + length overflows the address space"
    access = "access goes with ReregMRFlags.CHANGE_ACCESS, and it needs access"
    assert out["access_flag_only"] == out["access_only"] == access
    assert out["trans_without_len"].startswith("addr and length (and owner) go with")
    assert out["trans_of_buf_mr"].startswith("a new translation needs an MR of reg_mr")
    assert res.live == 0, res.live_report
