"""Multicast groups against the recording double (tests/fakes/recording/):
attach, detach and close pass each group.  A check of what the binding hands
libibverbs and what it makes of the answers, not evidence that a provider
runs the verbs.  On rxe: tests/device/test_mcast_device.py."""

from __future__ import annotations

import ipaddress

import ibverbs

GROUP6 = "ff12::1234"


GROUP4 = "::ffff:239.1.2.3"


def test_attach_detach_and_close_pass_each_group(recording):
    def body(fake):
        import ibverbs as ib

        with ib.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = ctx.create_cq(16)
            qp = pd.create_qp(ib.QPInitAttr(cq, cq, qp_type=ib.QPType.UD))
            fake.clear()
            qp.attach_mcast("ff12::1234", lid=0xC001)
            qp.attach_mcast(ib.Gid("::ffff:239.1.2.3"))
            qp.attach_mcast(bytes(ib.Gid("ff12::1234").raw), 0xC001)  # again: one entry
            qp.detach_mcast(b"\xff\x12" + bytes(13) + b"\x01", lid=7)  # not joined
            in_order = [
                qp.query_data_in_order(ib.WROpcode.RDMA_WRITE),
                qp.query_data_in_order(
                    op=ib.WROpcode.SEND, flags=ib.QueryQPDataInOrderFlags.RETURN_CAPS
                ),
            ]
            qp.close()  # leaves the two groups it is still in, then destroys
            cq.close()
            return in_order

    res = recording.run(body)
    res.ok()
    caps = ibverbs.QueryQPDataInOrderCaps
    assert res.value == [1, int(caps.WHOLE_MSG | caps.ALIGNED_128_BYTES)]
    att = res.calls("attach_mcast")
    assert [(a["gid"], a["lid"]) for a in att] == [
        (ipaddress.IPv6Address(GROUP6).packed, 0xC001),
        (ipaddress.IPv6Address(GROUP4).packed, 0),
        (ipaddress.IPv6Address(GROUP6).packed, 0xC001),
    ]
    qpn = att[0]["qp_num"]
    assert all(a["qp_num"] == qpn and a["qp"] == att[0]["qp"] for a in att)
    q = res.calls("query_qp_data_in_order")
    assert [(c["op"], c["flags"]) for c in q] == [
        (int(ibverbs.WROpcode.RDMA_WRITE), 0),
        (int(ibverbs.WROpcode.SEND), 1),
    ]
    # The explicit detach (of a group it is not in: the verb decides),
    # then close(): each group it joined once, in join order, before the
    # QP's destroy.
    g6, g4 = ipaddress.IPv6Address(GROUP6).packed, ipaddress.IPv6Address(GROUP4).packed
    det = [(d["gid"], d["lid"]) for d in res.calls("detach_mcast")]
    assert det == [(b"\xff\x12" + bytes(13) + b"\x01", 7), (g6, 0xC001), (g4, 0)]
    verbs = res.verbs()
    assert verbs.count("destroy_qp") == 1
    assert verbs.index("destroy_qp") > max(i for i, v in enumerate(verbs) if v == "detach_mcast")
    assert res.live == 0, res.live_report
