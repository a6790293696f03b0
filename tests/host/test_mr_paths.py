"""MR.rereg moving an MR into a PD that already has children, against
the recording double (tests/fakes/recording/): the MR joins the new PD's
children (its close refused, naming both MRs), the old PD closes."""

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
