"""XRC, the extended SRQ, work queues and RSS, ECE, rate limits and TSO on
Soft-RoCE.

``Context.create_srq_ex`` makes basic SRQs for real on rxe: RC traffic
lands in one, and its limits read back.  Everything else here is hardware
only: rxe's refusal is asserted (a VerbsError naming the verb, with the
errno libibverbs or rxe answers, as measured in the guest: EOPNOTSUPP
throughout, EINVAL where libibverbs checks the arguments first), and the
PD, CQ and Context close cleanly afterwards.  The recording double
(tests/host/test_recording_xrc.py) checks what each of these verbs is
passed."""

import errno

import pytest

import ibverbs as ib
from support.rdma import make_rc_pair, mkbuf, ok, poll_until

pytestmark = pytest.mark.integration

SIGNALED = ib.SendFlags.SIGNALED


def refused(e, verb, err=errno.EOPNOTSUPP):
    """e is the VerbsError of `verb` with errno `err`."""
    assert isinstance(e.value, ib.VerbsError)
    assert e.value.errno == err, e.value
    assert e.value.operation == verb
    assert verb in str(e.value)


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
        with pytest.raises(ib.VerbsError) as e:
            ctx.create_srq_ex(pd, max_wr=16, cq=cq)
        refused(e, "ibv_create_srq_ex")
    cq.close()
    pd.close()


def test_srq_ex_hardware_only_verbs_refused(ctx, pd, cq):
    with pytest.raises(ib.VerbsError) as e:
        ctx.create_srq_ex(pd, srq_type=ib.SRQType.TM, cq=cq, max_num_tags=4, max_ops=4)
    refused(e, "ibv_create_srq_ex")
    # an XRC SRQ needs an XRCD: libibverbs refuses the comp_mask
    with pytest.raises(ib.VerbsError) as e:
        ctx.create_srq_ex(pd, srq_type=ib.SRQType.XRC, cq=cq)
    refused(e, "ibv_create_srq_ex", errno.EINVAL)
    srq = ctx.create_srq_ex(pd, max_wr=8)
    with pytest.raises(ib.VerbsError) as e:
        srq.get_srq_num()
    refused(e, "ibv_get_srq_num")
    with pytest.raises(ib.VerbsError) as e:
        srq.post_srq_ops([ib.OpsWR(ib.OpsWROpcode.TAG_SYNC, wr_id=7)])
    refused(e, "ibv_post_srq_ops")
    with pytest.raises(TypeError):
        srq.post_srq_ops(object())  # no opcode: not an OpsWR
    for o in (srq, cq, pd):
        o.close()


def test_xrc_domain_and_qps_refused(ctx, pd, cq):
    with pytest.raises(ib.VerbsError) as e:
        ctx.open_xrcd()
    refused(e, "ibv_open_xrcd")
    with pytest.raises(TypeError):
        ctx.open_qp(pd, 17)  # not an XRCD
    for qpt in (ib.QPType.XRC_SEND,):
        with pytest.raises(ib.VerbsError) as e:
            pd.create_qp(ib.QPInitAttr(cq, qp_type=qpt))
        refused(e, "ibv_create_qp")
        with pytest.raises(ib.VerbsError) as e:
            pd.create_qp_ex(ib.QPInitAttrEx(cq, qp_type=qpt))
        refused(e, "ibv_create_qp_ex")
    # an XRC_RECV QP needs its XRCD (comp_mask XRCD): libibverbs refuses
    with pytest.raises(ib.VerbsError) as e:
        pd.create_qp_ex(ib.QPInitAttrEx(None, qp_type=ib.QPType.XRC_RECV))
    refused(e, "ibv_create_qp_ex", errno.EINVAL)
    cq.close()
    pd.close()


def test_wq_and_rss_refused(ctx, pd, cq):
    with pytest.raises(ib.VerbsError) as e:
        ctx.create_wq(pd, cq, max_wr=16)
    refused(e, "ibv_create_wq")
    with pytest.raises(ib.VerbsError) as e:
        ctx.create_wq(pd, cq, create_flags=ib.WQFlags.SCATTER_FCS)
    refused(e, "ibv_create_wq")
    with pytest.raises(ValueError):
        ctx.create_rwq_ind_table([])
    with pytest.raises(TypeError):
        ctx.create_rwq_ind_table([cq])
    conf = ib.RXHashConf(
        ib.RXHashFunctionFlags.TOEPLITZ,
        bytes(range(40)),
        ib.RXHashFields.SRC_IPV4 | ib.RXHashFields.DST_IPV4,
    )
    with pytest.raises(ib.VerbsError) as e:
        pd.create_qp_ex(ib.QPInitAttrEx(cq, qp_type=ib.QPType.RAW_PACKET, rx_hash_conf=conf))
    refused(e, "ibv_create_qp_ex")
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
    with pytest.raises(ib.VerbsError) as e:
        pd.create_qp_ex(ib.QPInitAttrEx(cq, **extra))
    refused(e, "ibv_create_qp_ex")
    cq.close()  # no QP was left using it
    pd.close()


def test_qp_hardware_verbs_refused(pd, cq):
    qp = pd.create_qp(ib.QPInitAttr(cq))
    with pytest.raises(ib.VerbsError) as e:
        qp.modify_rate_limit(1000, max_burst_sz=4096, typical_pkt_sz=1024)
    refused(e, "ibv_modify_qp_rate_limit")
    with pytest.raises(ib.VerbsError) as e:
        qp.query_ece()
    refused(e, "ibv_query_ece")
    with pytest.raises(ib.VerbsError) as e:
        qp.set_ece(ib.ECE(0x1234, 1))
    refused(e, "ibv_set_ece")
    qx = pd.create_qp_ex(ib.QPInitAttrEx(cq))
    qx.wr_start()
    qx.wr_send()
    # rxe's QPs are neither TSO nor XRC_SEND: refused before the provider
    with pytest.raises(ib.VerbsError) as e:
        qx.wr_send_tso(b"h" * 14, 1000)
    refused(e, "ibv_wr_send_tso", errno.EINVAL)
    with pytest.raises(ib.VerbsError) as e:
        qx.wr_set_xrc_srqn(5)
    refused(e, "ibv_wr_set_xrc_srqn", errno.EINVAL)
    qx.wr_abort()
    for o in (qx, qp, cq, pd):
        o.close()
