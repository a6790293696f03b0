"""ibverbs.efa with the REAL libefa.so.1 on Soft-RoCE: every efadv entry
point that checks its device refuses rxe objects with a VerbsError naming
the function, and nothing is left behind.  On an EFA device (vendor id
0x1d0f) these refusals do not apply: the module skips, as rdma-core's own
tests do."""

from __future__ import annotations

import errno

import pytest

import ibverbs
from ibverbs import efa

pytestmark = pytest.mark.integration

EFA_VENDOR_ID = 0x1D0F


@pytest.fixture
def rxe():
    devs = ibverbs.get_device_list()
    if not devs:
        pytest.skip("no RDMA device")
    ctx = ibverbs.Context(devs[0].name)
    if ctx.query_device().vendor_id == EFA_VENDOR_ID:
        ctx.close()
        pytest.skip("an EFA device: the refusals are for other providers")
    ok, why = efa.libefa_status()
    if not ok:
        ctx.close()
        pytest.skip(why)
    yield ctx
    ctx.close()


def refused(call, name):
    with pytest.raises(ibverbs.VerbsError) as ei:
        call()
    assert ei.value.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENODEV), ei.value
    assert name in str(ei.value)


def test_real_libefa_refuses_rxe_objects(rxe):
    ctx = rxe
    with ctx.alloc_pd() as pd, ctx.create_cq(4) as cq:
        refused(lambda: efa.query_device(ctx), "efadv_query_device")
        refused(lambda: efa.get_max_sq_depth(ctx), "efadv_get_max_sq_depth")
        refused(lambda: efa.get_max_rq_depth(ctx), "efadv_get_max_rq_depth")
        refused(lambda: efa.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=4)), "efadv_create_cq")
        refused(lambda: efa.create_qp(pd, ibverbs.QPInitAttrEx(cq)), "efadv_create_qp_ex")
        refused(lambda: efa.create_driver_qp(pd, ibverbs.QPInitAttr(cq)), "efadv_create_driver_qp")
        refused(lambda: efa.create_comp_cntr(ctx), "efadv_create_comp_cntr")
        gid = ctx.query_gid(1, 0)
        with efa.create_ah(pd, efa.EndpointInfo(gid, 1)) as ah:
            refused(lambda: efa.query_ah(ah), "efadv_query_ah")
        import ctypes

        mem = ctypes.create_string_buffer(4096)
        with pd.reg_mr(ctypes.addressof(mem), 4096, 0) as mr:
            refused(lambda: efa.query_mr(mr), "efadv_query_mr")
        # The converters are reachable only through efa.QP / efa.CQ, which
        # no call above could make on rxe.
        assert not any(isinstance(o, (efa.QP, efa.CQ)) for o in (cq, pd))
