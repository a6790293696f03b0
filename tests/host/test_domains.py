"""The records and flow specs of thread/parent domains, counters,
completion counters and ESP flow actions, which need no device.  Against
the recording double (tests/fakes/recording/): thread and parent domains,
a CQ in one, and their refusals leaving nothing."""

import errno
import struct

import pytest

import ibverbs
import ibverbs as ib
from ibverbs.flow import LAYOUTS


def test_pointer_specs_serialize_null_and_name_their_objects():
    marker_a, marker_b = object(), object()
    count, handle = ib.FlowSpecActionCount(marker_a), ib.FlowSpecActionHandle(marker_b)
    assert count.counters is marker_a and handle.action is marker_b
    attr = ib.FlowAttr(specs=[ib.FlowSpecEth(ether_type=0x0800), count, handle])
    assert attr._objects() == (None, marker_a, marker_b)
    for spec, name, t in (
        (count, "action_count", ib.FlowSpecType.ACTION_COUNT),
        (handle, "action_handle", ib.FlowSpecType.ACTION_HANDLE),
    ):
        size, off, _, psize = LAYOUTS[name]
        raw = spec.to_bytes()
        assert len(raw) == size and struct.unpack_from("=IH", raw) == (t, size)
        assert raw[off : off + psize] == bytes(psize)  # QP.create_flow fills it
    assert "FlowSpecActionCount(" in repr(count)


def test_records():
    a = ib.CQInitAttrEx(8)
    assert a.parent_domain is None and "parent_domain=None" in repr(a)
    esp = ib.FlowActionESPAttr(spi=5, key=b"secret-key-bytes")
    assert esp.replay_window is None and esp.esn is None and esp.key == b"secret-key-bytes"
    assert "secret" not in repr(esp) and "key=<key>" in repr(esp)
    assert ib.WCTMInfo(tag=1, priv=2).tag == 1
    assert ib.CompCntrCaps(max_value=1, max_counters=2, supported_qp_attach_ops=3).max_counters == 2


def test_enums():
    assert ib.CreateCQWCFlags.TM_INFO == 1 << 10
    assert ib.QPAttachCompCntrOp.REMOTE_RDMA_WRITE == 1 << 5
    assert ib.CompCntrType.BYTES == 1 and ib.CounterDescription.BYTES == 1
    assert ib.FlowActionESPFlags.ENCRYPT == 1 << 2
    assert issubclass(ib.ParentDomain, ib.PD)


@pytest.mark.parametrize("name", ["TD", "ParentDomain", "Counters", "CompCntr", "FlowAction"])
def test_no_direct_construction(name):
    with pytest.raises(TypeError):
        getattr(ib, name)()


def cq_ptr(res):
    return res.one("destroy_cq")["cq"]


def test_thread_and_parent_domains_and_a_cq_in_one(recording):
    def body(fake):
        import errno

        import ibverbs

        F = ibverbs.CreateCQWCFlags
        out = {}
        with ibverbs.Context("fake0") as ctx:
            pd = ctx.alloc_pd()
            td = ctx.alloc_td()
            pdom = ctx.alloc_parent_domain(pd, td=td)
            plain = ctx.alloc_parent_domain(pd)
            out["types"] = [type(pdom).__name__, isinstance(pdom, ibverbs.PD)]
            out["refs"] = [pdom.pd is pd, pdom.td is td, plain.td is None, pdom.context is ctx]
            # the PD and TD are in use: close refuses, and both stay usable
            for o in (pd, td):
                try:
                    o.close()
                except ibverbs.VerbsError as e:
                    out.setdefault("busy", []).append([e.errno, o.closed])
            # a parent domain is a PD for every PD factory
            buf = bytearray(64)
            mr = ibverbs.reg_tensor(pdom, buf, ibverbs.AccessFlags.LOCAL_WRITE)
            cq = ctx.create_cq_ex(
                ibverbs.CQInitAttrEx(8, wc_flags=F.BYTE_LEN | F.TM_INFO, parent_domain=pdom)
            )
            qp = pdom.create_qp(ibverbs.QPInitAttr(cq, cq))
            for state in ("INIT", "RTR", "RTS"):
                qp.modify(ibverbs.QPAttrMask.STATE, qp_state=ibverbs.QPState[state])
            try:
                pdom.close()
            except ibverbs.VerbsError as e:
                out["pdom_busy"] = e.errno
            cq.modify(16, 100)
            qp.post_send(ibverbs.SendWR(wr_id=7, sg_list=[mr.sge(8)], send_flags=2))
            assert cq.start_poll()
            tm = cq.read_tm_info()
            out["tm"] = [cq.wr_id, tm.tag, tm.priv, type(tm).__name__]
            cq.end_poll()
            fake.fail("modify_cq", errno.EOPNOTSUPP)
            try:
                cq.modify(1, 0)
            except ibverbs.VerbsError as e:
                out["modify_err"] = [e.errno, e.operation]
            for o in (qp, cq, mr, plain, pdom):
                o.close()
            out["after"] = [pdom.pd, pdom.td, pdom.closed]
            td.close()
            pd.close()
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["types"] == ["ParentDomain", True]
    assert out["refs"] == [True, True, True, True]
    assert out["busy"] == [[errno.EBUSY, False], [errno.EBUSY, False]]
    assert out["pdom_busy"] == errno.EBUSY
    assert out["tm"] == [7, 0x1122334455667788, 0xFEEDBEEF, "WCTMInfo"]
    assert out["modify_err"] == [errno.EOPNOTSUPP, "ibv_modify_cq"]
    assert out["after"] == [None, None, True]
    assert res.live == 0, res.live_report

    td = res.one("alloc_td")
    assert td["attr.comp_mask"] == 0
    with_td, without = res.calls("alloc_parent_domain")
    for rec in (with_td, without):
        assert rec["attr.comp_mask"] == 0 and "attr.alloc" not in rec
        assert rec["context"] == td["context"]
    assert with_td["attr.td"] == res.one("dealloc_td")["td"] != 0
    assert without["attr.td"] == 0
    assert with_td["attr.pd"] == without["attr.pd"] != 0
    # ibv_dealloc_pd frees the parent domains, then the PD
    freed = [r["pd"] for r in res.calls("dealloc_pd")]
    assert freed[-1] == with_td["attr.pd"] and len(freed) == 3
    pdom_ptr = freed[1]
    cq = res.one("create_cq_ex")
    assert cq["attr.comp_mask"] == 2  # IBV_CQ_INIT_ATTR_MASK_PD only
    assert cq["attr.parent_domain"] == pdom_ptr
    assert cq["attr.wc_flags"] == int(
        ibverbs.CreateCQWCFlags.BYTE_LEN | ibverbs.CreateCQWCFlags.TM_INFO
    )
    qp = res.one("create_qp")
    assert qp["pd"] == pdom_ptr
    ok, failed = res.calls("modify_cq")
    assert ok.prefixed("attr.") == {
        "attr_mask": int(ibverbs.CQAttrMask.MODERATE),
        "moderate.cq_count": 16,
        "moderate.cq_period": 100,
    }
    assert ok["cq"] == cq_ptr(res)
    assert failed["injected_errno"] == errno.EOPNOTSUPP
    assert failed["attr.moderate.cq_count"] == 1 and failed["attr.moderate.cq_period"] == 0
    assert res.one("read_tm_info")["cq"] == ok["cq"]


def test_parent_domain_refusals_leave_nothing(recording):
    def body(fake):
        import errno

        import ibverbs

        out = []
        with ibverbs.Context("fake0") as ctx, ibverbs.Context("fake1") as other:
            pd, opd, otd = ctx.alloc_pd(), other.alloc_pd(), other.alloc_td()
            for call in (
                lambda: ctx.alloc_parent_domain(opd),
                lambda: ctx.alloc_parent_domain(pd, td=otd),
                lambda: ctx.alloc_parent_domain(pd, td=pd),
                lambda: ctx.alloc_parent_domain(ctx),
            ):
                try:
                    call()
                except (TypeError, ValueError) as e:
                    out.append(type(e).__name__)
            pdom = ctx.alloc_parent_domain(pd)
            try:
                ctx.alloc_parent_domain(pdom)
            except TypeError:
                out.append("nested")
            try:
                other.create_cq_ex(ibverbs.CQInitAttrEx(4, parent_domain=pdom))
            except ValueError:
                out.append("cq of another context")
            fake.fail("alloc_parent_domain", errno.ENOMEM)
            try:
                ctx.alloc_parent_domain(pd)
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
            fake.fail("alloc_td", errno.EOPNOTSUPP)
            try:
                ctx.alloc_td()
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
            for o in (pdom, pd, opd, otd):
                o.close()
        return out

    res = recording.run(body)
    assert res.ok() == [
        "ValueError",
        "ValueError",
        "TypeError",
        "TypeError",
        "nested",
        "cq of another context",
        [errno.ENOMEM, "ibv_alloc_parent_domain"],
        [errno.EOPNOTSUPP, "ibv_alloc_td"],
    ]
    assert len(res.calls("alloc_parent_domain")) == 2  # the valid one, the injected failure
    assert not res.calls("create_cq_ex")
    assert res.live == 0, res.live_report
