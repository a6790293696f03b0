"""The small read paths of mem/ (Buf, DMAH, TD, ParentDomain) and of the
handle protocol that other host tests leave out, against the recording
double (tests/fakes/recording/): reprs open and closed, size and DMAH
fields, a with block whose close is refused."""

from __future__ import annotations

import errno


def test_reprs_and_fields_open_and_closed(recording):
    def body(fake):
        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            buf = pd.alloc_buf(8192)
            dmah = ctx.alloc_dmah(ph=2)
            td = ctx.alloc_td()
            with_td = ctx.alloc_parent_domain(pd, td=td)
            plain = ctx.alloc_parent_domain(pd)
            out["buf"] = [repr(buf) == f"<ibverbs.Buf addr=0x{buf.addr:x} size=8192>", buf.size]
            out["dmah"] = [repr(dmah), dmah.ph, dmah.cpu_id, dmah.tph_mem_type]
            out["domains"] = [repr(td), repr(with_td), repr(plain), with_td.td is td]
            objs = (buf, dmah, with_td, plain, td)
            for o in objs:
                o.close()
            out["closed"] = [repr(o) for o in objs]
            out["size_after"] = buf.size
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["buf"] == [True, 8192]
    assert out["dmah"] == ["<ibverbs.DMAH comp_mask=0x2>", 2, None, None]
    assert out["domains"] == [
        "<ibverbs.TD>",
        "<ibverbs.ParentDomain with TD>",
        "<ibverbs.ParentDomain>",
        True,
    ]
    assert out["closed"] == [
        "<ibverbs.Buf closed>",
        "<ibverbs.DMAH closed>",
        "<ibverbs.ParentDomain closed>",
        "<ibverbs.ParentDomain closed>",
        "<ibverbs.TD closed>",
    ]
    assert out["size_after"] == 8192
    assert res.live == 0, res.live_report


def test_a_with_block_whose_close_is_refused_raises_ebusy(recording):
    def body(fake):
        import ibverbs

        with ibverbs.Context("fake0") as ctx:
            pd = ctx.alloc_pd()
            try:
                with pd:
                    mw = pd.alloc_mw(ibverbs.MWType.TYPE_2)
            except ibverbs.VerbsError as e:
                err = [e.errno, e.operation, str(e), pd.closed]
            mw.close()
            pd.close()
        return err

    res = recording.run(body)
    err = res.ok()
    assert err[0] == errno.EBUSY and err[1] == "ibv_dealloc_pd"
    assert "MW x1" in err[2]
    assert err[3] is False
    assert res.live == 0, res.live_report
