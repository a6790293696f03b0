"""Thread and parent domains (Context.alloc_td, alloc_parent_domain) on
rxe, which has neither: each call reaches the verb and comes back as a
VerbsError naming it with the errno rxe's libibverbs answers, and nothing
is left behind (the counted_objects fixture).  What the binding passes is
checked field by field against the recording double
(tests/host/test_domains.py)."""

import pytest

from support.rdma import refused

pytestmark = pytest.mark.integration


def test_thread_and_parent_domains(counted_objects):
    ctx, pd, _, _ = counted_objects
    refused("ibv_alloc_td", ctx.alloc_td)
    refused("ibv_alloc_parent_domain", ctx.alloc_parent_domain, pd)
    # the PD is not used by a parent domain that failed
    other = ctx.alloc_pd()
    refused("ibv_alloc_parent_domain", ctx.alloc_parent_domain, other, td=None)
    other.close()
