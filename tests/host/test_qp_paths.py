"""QP paths the other host tests leave out, against the recording double
(tests/fakes/recording/): the remote GID's forms in to_rtr, the masks of
a raw packet QP's to_init, failed queries and modifies with their
messages."""

from __future__ import annotations

import errno


def test_to_rtr_reads_the_remote_gid_in_each_form(recording):
    def body(fake):
        from types import SimpleNamespace

        import ibverbs

        out = {}

        def remote(gid):
            return SimpleNamespace(qp_num=0x42, psn=7, lid=3, gid=gid, port=1, mtu=3)

        with ibverbs.Context("fake1") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            for name, gid in (
                ("none", None),
                ("text", "fe80::9"),
                ("bytes", bytes(range(16))),
                ("short", b"\x01" * 15),
                ("bad", "not a gid"),
            ):
                with pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=4)) as qp:
                    qp.to_init(1)
                    fake.clear()
                    try:
                        qp.to_rtr(remote(gid), sgid_index=0)
                    except (ValueError, TypeError) as e:
                        out[name] = [type(e).__name__, str(e)]
                        continue
                    r = fake.one("modify_qp")
                    out[name] = [r.get("attr.ah_attr.is_global"), r.get("attr.ah_attr.grh.dgid")]
        return out

    out = recording.run(body).ok()
    assert out["none"] == [0, "00" * 16]
    assert out["text"] == [1, "fe80" + "00" * 13 + "09"]
    assert out["bytes"] == [1, bytes(range(16)).hex()]
    assert out["short"] == ["ValueError", "remote.gid must be 16 bytes"]
    assert out["bad"][0] == "ValueError"


def test_raw_packet_to_init_sets_no_pkey_or_access(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            ia = ibverbs.QPInitAttr(cq, qp_type=enums.QPType.RAW_PACKET, max_send_wr=4)
            with pd.create_qp(ia) as qp:
                fake.clear()
                qp.to_init(1)
                return fake.one("modify_qp")["attr_mask"]

    mask = recording.run(body).ok()
    from ibverbs import enums

    A = enums.QPAttrMask
    assert mask == int(A.STATE | A.PORT)


def test_failed_query_and_modify_name_the_qp(recording):
    def body(fake):
        import errno

        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            with pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=4)) as qp:
                out["qpn"] = qp.qp_num
                for name, fn in (
                    ("state", lambda: qp.state),
                    ("query", lambda: qp.query()),
                ):
                    fake.fail("query_qp", errno.EIO)
                    try:
                        fn()
                    except ibverbs.VerbsError as e:
                        out[name] = [e.errno, e.operation, str(e)]
                qp.to_init(1)
                fake.fail("modify_qp", errno.EINVAL)
                try:
                    qp.modify(ibverbs.QPAttrMask.QKEY, qkey=5)
                except ibverbs.VerbsError as e:
                    out["modify"] = [e.errno, e.operation, str(e)]
                out["after"] = [int(qp.state), qp.query()[0]["qkey"]]
        return out

    out = recording.run(body).ok()
    qpn = out["qpn"]
    assert out["state"][:2] == [errno.EIO, "ibv_query_qp"]
    assert f"QP {qpn} state" in out["state"][2]
    assert out["query"][:2] == [errno.EIO, "ibv_query_qp"]
    assert out["modify"][:2] == [errno.EINVAL, "ibv_modify_qp"]
    assert f"QP {qpn} in INIT" in out["modify"][2]
    assert out["after"][0] == 1  # still INIT
