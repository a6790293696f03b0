"""IBV_WR_ATOMIC_WRITE from ibv_post_send: 8 bytes written at once at the
remote address.  Where the device runs it, the bytes are checked on both
sides; where it does not, the test skips with the status the provider gave,
after checking that the target was left alone.

Seen on rxe with Debian 12's rdma-core 44: kernel 6.1 (whose rxe predates
atomic write) completes the WR with LOC_QP_OP_ERR, kernel 6.12 with
REM_ACCESS_ERR (run it there: RXE_VM_KERNEL_PACKAGE=linux-image-6.12-amd64).
"""

import os

import pytest

import ibverbs as ib
from support.rdma import atomic_write_8

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not hasattr(ib.WROpcode, "ATOMIC_WRITE"),
        reason="the rdma-core headers of this build have no IBV_WR_ATOMIC_WRITE (rdma-core < 42)",
    ),
]

# What rxe answered where it does not run atomic write (see above).
NOT_RUN = {ib.WCStatus.LOC_QP_OP_ERR, ib.WCStatus.REM_ACCESS_ERR}


def test_atomic_write(ctx, pd):
    wc, src, dst = atomic_write_8(ctx, pd)
    assert wc.wr_id == 21
    if wc.status != ib.WCStatus.SUCCESS:
        assert wc.status in NOT_RUN, wc
        assert (dst == 0x22).all(), "a failed atomic write changed the target"
        pytest.skip(
            f"{ctx.name} did not run IBV_WR_ATOMIC_WRITE (kernel {os.uname().release}, "
            f"libibverbs {ib.library_version}): the completion status was "
            f"{ib.WCStatus(wc.status).name}"
        )
    assert wc.opcode == ib.WCOpcode.ATOMIC_WRITE
    assert list(dst[8:16]) == list(range(1, 9))
    assert (dst[:8] == 0x22).all() and (dst[16:] == 0x22).all()
    assert list(src[:8]) == list(range(1, 9)) and (src[8:] == 0x11).all()
