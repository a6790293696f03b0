"""Thread and parent domains, CQ moderation, tag matching completions,
counters, completion counters and ESP flow actions on rxe, which has none
of them: each call reaches the verb and comes back as a VerbsError naming
it with the errno rxe's libibverbs answers (EOPNOTSUPP: the provider has
no op, or the loaded libibverbs predates the verb), and nothing is left
behind (the parents close at once, the device's resource counts are
unchanged).  What the binding passes to these verbs is checked field by
field against the recording double (tests/host/test_domains.py,
test_counters.py, test_flow.py)."""

import pytest

import ibverbs as ib

from support import PORT
from support.process import rdma_counts
from support.rdma import refused

pytestmark = pytest.mark.integration


@pytest.fixture
def objects(device_name):
    """A Context, a PD, a CQ and an RC QP; after the test each closes at
    once (no child was left) and the device counts are as before."""
    before = rdma_counts(device_name)
    ctx = ib.Context(device_name)
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(16)
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    yield ctx, pd, cq, qp
    for o in (qp, cq, pd, ctx):
        o.close()
    assert rdma_counts(device_name) == before


def test_thread_and_parent_domains(objects):
    ctx, pd, _, _ = objects
    refused("ibv_alloc_td", ctx.alloc_td)
    refused("ibv_alloc_parent_domain", ctx.alloc_parent_domain, pd)
    # the PD is not used by a parent domain that failed
    other = ctx.alloc_pd()
    refused("ibv_alloc_parent_domain", ctx.alloc_parent_domain, other, td=None)
    other.close()


def test_modify_cq(objects):
    ctx, _, cq, _ = objects
    refused("ibv_modify_cq", cq.modify, 4, 10)
    cqx = ctx.create_cq_ex(ib.CQInitAttrEx(8))
    refused("ibv_modify_cq", cqx.modify, cq_count=1, cq_period=0)
    cqx.close()


def test_tm_info(objects):
    ctx = objects[0]
    # rxe's create_cq_ex takes none of the wc_flags beyond the standard ones
    refused(
        "ibv_create_cq_ex",
        ctx.create_cq_ex,
        ib.CQInitAttrEx(8, wc_flags=ib.CreateCQWCFlags.TM_INFO),
    )
    cqx = ctx.create_cq_ex(ib.CQInitAttrEx(8, wc_flags=ib.CreateCQWCFlags.BYTE_LEN))
    with pytest.raises(ValueError, match="session"):
        cqx.read_tm_info()
    cqx.close()


def test_counters(objects):
    ctx, _, _, qp = objects
    refused("ibv_create_counters", ctx.create_counters)
    # a count spec needs a Counters object: refused before any verb
    with pytest.raises(TypeError, match="Counters"):
        qp.create_flow(ib.FlowAttr(port=PORT, specs=[ib.FlowSpecActionCount(ctx)]))


def test_comp_cntr(objects):
    ctx, _, _, qp = objects
    old = not ib.optional_verbs["ibv_create_comp_cntr"]
    e = refused("ibv_query_comp_cntr_caps", ctx.query_comp_cntr_caps)
    assert ("rdma-core 65" in str(e)) == old
    e = refused("ibv_create_comp_cntr", ctx.create_comp_cntr)
    assert ("rdma-core 65" in str(e)) == old
    refused("ibv_create_comp_cntr", ctx.create_comp_cntr, ib.CompCntrType.BYTES, 0)
    with pytest.raises(TypeError, match="CompCntr"):
        qp.attach_comp_cntr(None, ib.QPAttachCompCntrOp.SEND)


def test_flow_action_esp(objects):
    ctx, _, _, qp = objects
    attr = ib.FlowActionESPAttr(
        spi=0x1234,
        flags=ib.FlowActionESPFlags.ENCRYPT,
        key=bytes(range(16)),
        salt=7,
        icv_len=16,
        replay_window=64,
        esn=1,
    )
    refused("ibv_create_flow_action_esp", ctx.create_flow_action_esp, attr)
    with pytest.raises(TypeError, match="FlowAction"):
        qp.create_flow(ib.FlowAttr(port=PORT, specs=[ib.FlowSpecActionHandle(None)]))
