"""Counters (Context.create_counters) and completion counters
(Context.create_comp_cntr, QP.attach_comp_cntr) on rxe, which has neither:
each call reaches the verb and comes back as a VerbsError naming it with
the errno rxe's libibverbs answers (EOPNOTSUPP: the provider has no op, or
the loaded libibverbs predates the verb), and nothing is left behind (the
counted_objects fixture).  What the binding passes is checked field by
field against the recording double (tests/host/test_counters.py)."""

import pytest

import ibverbs as ib

from support import PORT
from support.rdma import refused

pytestmark = pytest.mark.integration


def test_counters(counted_objects):
    ctx, _, _, qp = counted_objects
    refused("ibv_create_counters", ctx.create_counters)
    # a count spec needs a Counters object: refused before any verb
    with pytest.raises(TypeError, match="Counters"):
        qp.create_flow(ib.FlowAttr(port=PORT, specs=[ib.FlowSpecActionCount(ctx)]))


def test_comp_cntr(counted_objects):
    ctx, _, _, qp = counted_objects
    old = not ib.optional_verbs["ibv_create_comp_cntr"]
    e = refused("ibv_query_comp_cntr_caps", ctx.query_comp_cntr_caps)
    assert ("rdma-core 65" in str(e)) == old
    e = refused("ibv_create_comp_cntr", ctx.create_comp_cntr)
    assert ("rdma-core 65" in str(e)) == old
    refused("ibv_create_comp_cntr", ctx.create_comp_cntr, ib.CompCntrType.BYTES, 0)
    with pytest.raises(TypeError, match="CompCntr"):
        qp.attach_comp_cntr(None, ib.QPAttachCompCntrOp.SEND)
