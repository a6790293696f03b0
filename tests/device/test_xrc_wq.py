"""XRC, the extended SRQ, work queues and RSS, ECE, rate limits and TSO on
Soft-RoCE.

``Context.create_srq_ex`` makes basic SRQs for real on rxe: RC traffic
lands in one, and its limits read back.  Everything else here is hardware
only: rxe's refusal is asserted (a VerbsError naming the verb, with the
errno libibverbs or rxe answers, as measured in the guest: EOPNOTSUPP
throughout, EINVAL where libibverbs checks the arguments first), and the
PD, CQ and Context close cleanly afterwards.  The recording double
(tests/host/test_xrc.py, test_srq.py, test_wq.py, test_qp.py) checks
what each of these verbs is passed."""

import errno

import pytest

import ibverbs as ib
from support.rdma import make_rc_pair, mkbuf, ok, poll_until, refused

pytestmark = pytest.mark.integration

SIGNALED = ib.SendFlags.SIGNALED


def test_create_srq_ex_basic_carries_rc_traffic(ctx, pd):
    srq = ctx.create_srq_ex(pd, max_wr=64, max_sge=2, srq_limit=0)
    assert srq.srq_type == ib.SRQType.BASIC
    assert srq.pd is pd and srq.xrcd is None and srq.cq is None
    attr = srq.query()
    assert attr["max_wr"] >= 64 and attr["max_sge"] >= 2 and attr["srq_limit"] == 0
    srq.modify(srq_limit=4)
    assert srq.query()["srq_limit"] == 4
    qa, ca, qb, cb = make_rc_pair(ctx, pd, srq=srq)
    n, size = 8, 128
    dst, mr_d = mkbuf(pd, n * size)
    srq.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr_d.sge(size, i * size)]) for i in range(n)])
    src, mr_s = mkbuf(pd, size, fill=0x5A)
    qa.post_send(
        [ib.SendWR(wr_id=100 + i, sg_list=[mr_s.sge()], send_flags=SIGNALED) for i in range(n)]
    )
    sends = ok(poll_until(ca, n), ib.WCOpcode.SEND)
    recvs = ok(poll_until(cb, n), ib.WCOpcode.RECV)
    assert sorted(w.wr_id for w in sends) == [100 + i for i in range(n)]
    assert sorted(w.wr_id for w in recvs) == list(range(n))
    assert all(w.byte_len == size and w.qp_num == qb.qp_num for w in recvs)
    assert (dst == 0x5A).all()
    # the SRQ is used by the QPs: it refuses close() until they are gone
    with pytest.raises(ib.VerbsError) as e:
        srq.close()
    assert e.value.errno == errno.EBUSY
    for o in (qa, qb, ca, cb, mr_s, mr_d, srq):
        o.close()
    assert srq.closed
    with pytest.raises(ib.VerbsError) as e:
        srq.query()
    assert e.value.errno == errno.EBADF
    pd.close()


def test_create_srq_ex_basic_with_a_cq(ctx, pd, cq):
    # comp_mask PD|TYPE|CQ is the provider's create_srq_ex op, which rxe
    # has from rdma-core 44 (libibverbs answers EOPNOTSUPP before)
    major = int((ib.library_version or "0").split(".")[0])
    if major >= 44:
        srq = ctx.create_srq_ex(pd, max_wr=16, cq=cq)
        assert srq.cq is cq and srq.query()["max_wr"] >= 16
        with pytest.raises(ib.VerbsError) as e:
            cq.close()  # used by the SRQ
        assert e.value.errno == errno.EBUSY
        srq.close()
    else:
        refused("ibv_create_srq_ex", lambda: ctx.create_srq_ex(pd, max_wr=16, cq=cq))
    cq.close()
    pd.close()


def test_srq_ex_hardware_only_verbs_refused(ctx, pd, cq):
    refused(
        "ibv_create_srq_ex",
        lambda: ctx.create_srq_ex(pd, srq_type=ib.SRQType.TM, cq=cq, max_num_tags=4, max_ops=4),
    )
    # an XRC SRQ needs an XRCD: libibverbs refuses the comp_mask
    refused(
        "ibv_create_srq_ex",
        lambda: ctx.create_srq_ex(pd, srq_type=ib.SRQType.XRC, cq=cq),
        err=errno.EINVAL,
    )
    srq = ctx.create_srq_ex(pd, max_wr=8)
    refused("ibv_get_srq_num", lambda: srq.get_srq_num())
    refused(
        "ibv_post_srq_ops", lambda: srq.post_srq_ops([ib.OpsWR(ib.OpsWROpcode.TAG_SYNC, wr_id=7)])
    )
    with pytest.raises(TypeError):
        srq.post_srq_ops(object())  # no opcode: not an OpsWR
    for o in (srq, cq, pd):
        o.close()


def test_xrc_domain_and_qps_refused(ctx, pd, cq):
    refused("ibv_open_xrcd", lambda: ctx.open_xrcd())
    with pytest.raises(TypeError):
        ctx.open_qp(pd, 17)  # not an XRCD
    for qpt in (ib.QPType.XRC_SEND,):
        refused("ibv_create_qp", lambda: pd.create_qp(ib.QPInitAttr(cq, qp_type=qpt)))
        refused("ibv_create_qp_ex", lambda: pd.create_qp_ex(ib.QPInitAttrEx(cq, qp_type=qpt)))
    # an XRC_RECV QP needs its XRCD (comp_mask XRCD): libibverbs refuses
    refused(
        "ibv_create_qp_ex",
        lambda: pd.create_qp_ex(ib.QPInitAttrEx(None, qp_type=ib.QPType.XRC_RECV)),
        err=errno.EINVAL,
    )
    cq.close()
    pd.close()


def test_wq_and_rss_refused(ctx, pd, cq):
    refused("ibv_create_wq", lambda: ctx.create_wq(pd, cq, max_wr=16))
    refused("ibv_create_wq", lambda: ctx.create_wq(pd, cq, create_flags=ib.WQFlags.SCATTER_FCS))
    with pytest.raises(ValueError):
        ctx.create_rwq_ind_table([])
    with pytest.raises(TypeError):
        ctx.create_rwq_ind_table([cq])
    conf = ib.RXHashConf(
        ib.RXHashFunctionFlags.TOEPLITZ,
        bytes(range(40)),
        ib.RXHashFields.SRC_IPV4 | ib.RXHashFields.DST_IPV4,
    )
    refused(
        "ibv_create_qp_ex",
        lambda: pd.create_qp_ex(
            ib.QPInitAttrEx(cq, qp_type=ib.QPType.RAW_PACKET, rx_hash_conf=conf)
        ),
    )
    cq.close()
    pd.close()


@pytest.mark.parametrize(
    "extra",
    [
        dict(send_ops_flags=ib.QPCreateSendOpsFlags.SEND | ib.QPCreateSendOpsFlags.TSO),
        dict(max_tso_header=64),
        dict(qp_type=ib.QPType.UD, source_qpn=5),
        dict(create_flags=ib.QPCreateFlags.SCATTER_FCS),
    ],
    ids=["TSO send op", "max_tso_header", "source_qpn", "create_flags"],
)
def test_qp_init_attr_ex_fields_refused(pd, cq, extra):
    refused("ibv_create_qp_ex", lambda: pd.create_qp_ex(ib.QPInitAttrEx(cq, **extra)))
    cq.close()  # no QP was left using it
    pd.close()


def test_qp_hardware_verbs_refused(pd, cq):
    qp = pd.create_qp(ib.QPInitAttr(cq))
    refused(
        "ibv_modify_qp_rate_limit",
        lambda: qp.modify_rate_limit(1000, max_burst_sz=4096, typical_pkt_sz=1024),
    )
    refused("ibv_query_ece", lambda: qp.query_ece())
    refused("ibv_set_ece", lambda: qp.set_ece(ib.ECE(0x1234, 1)))
    qx = pd.create_qp_ex(ib.QPInitAttrEx(cq))
    qx.wr_start()
    qx.wr_send()
    # rxe's QPs are neither TSO nor XRC_SEND: refused before the provider
    refused("ibv_wr_send_tso", lambda: qx.wr_send_tso(b"h" * 14, 1000), err=errno.EINVAL)
    refused("ibv_wr_set_xrc_srqn", lambda: qx.wr_set_xrc_srqn(5), err=errno.EINVAL)
    qx.wr_abort()
    for o in (qx, qp, cq, pd):
        o.close()
