"""SRQ paths the other host tests leave out, against the recording double
(tests/fakes/recording/): post_srq_ops with an sg_list that is no
sequence, or whose reading closes the SRQ, and a failed query_srq."""

from __future__ import annotations

import errno


def test_post_srq_ops_refuses_a_bad_sg_list_and_a_closed_srq(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import OpsWR, enums

        OP = enums.OpsWROpcode
        out = {}
        buf = bytearray(64)
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            mr = ibverbs.reg_tensor(pd, buf, enums.AccessFlags.LOCAL_WRITE)
            srq = ctx.create_srq_ex(pd, srq_type=enums.SRQType.TM, cq=cq, max_num_tags=8)
            fake.clear()
            # OpsWR makes its sg_list a tuple; one set afterwards is read
            # by the C as it is.
            op = OpsWR(OP.TAG_ADD, wr_id=1, tag=1, mask=1)
            op.sg_list = 5
            try:
                srq.post_srq_ops(op)
            except TypeError as e:
                out["not_seq"] = str(e)

            class Closing:
                """An sg_list whose iteration closes the SRQ."""

                def __iter__(self):
                    srq.close()
                    yield mr.sge(8)

            op.sg_list = Closing()
            try:
                srq.post_srq_ops(op)
            except ibverbs.VerbsError as e:
                out["closed"] = [e.errno, srq.closed]
            out["verbs"] = [r.verb for r in fake.records()]
            srq2 = pd.create_srq(max_wr=4)
            fake.fail("query_srq", errno.EIO)
            try:
                srq2.query()
            except ibverbs.VerbsError as e:
                out["query"] = [e.errno, e.operation]
            out["query_after"] = srq2.query()["max_wr"] >= 4
            srq2.close()
            mr.close()
        return out

    res = recording.run(body)
    out = res.ok()
    assert "not iterable" in out["not_seq"]
    assert out["closed"] == [errno.EBADF, True]
    assert out["verbs"] == ["destroy_srq"]
    assert out["query"] == [errno.EIO, "ibv_query_srq"]
    assert out["query_after"] is True
    assert res.live == 0, res.live_report
