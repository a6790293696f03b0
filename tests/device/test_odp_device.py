"""On-demand paging (ODP MRs, implicit ODP, PD.advise_mr) against a real
device.  rxe offers ODP only on some kernels: where the provider refuses,
the test asserts the errno it answered and skips naming it; what the kernel
answers is checked against tests/support/kernels.py."""

import errno

import numpy as np
import pytest

import ibverbs as ib

from support import kernels
from support.rdma import ALL_ACCESS, UNSUPPORTED, errno_name, make_rc_pair, poll_until

pytestmark = pytest.mark.integration


def test_odp_registration(ctx, pd):
    caps = ctx.query_device_ex().odp_caps
    buf = np.zeros(1 << 16, dtype=np.uint8)
    access = ALL_ACCESS | ib.AccessFlags.ON_DEMAND
    try:
        mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, access, owner=buf)
    except ib.VerbsError as e:
        # rxe: EINVAL on 6.1 (no ODP in the kernel driver), EOPNOTSUPP on 6.12.
        assert e.errno in UNSUPPORTED + (errno.EINVAL,), e
        assert not caps.general_caps & ib.ODPGeneralCaps.SUPPORT or e.errno != errno.EINVAL
        pytest.skip(
            f"ODP: ibv_reg_mr(ON_DEMAND) answered {errno_name(e.errno)} on {ctx.name} "
            f"(odp general_caps={caps.general_caps:#x})"
        )
    assert mr.access & ib.AccessFlags.ON_DEMAND
    # An RDMA write into the ODP region faults its pages in.
    qa, ca, qb, cb = make_rc_pair(ctx, pd)
    src = np.full(4096, 9, dtype=np.uint8)
    smr = pd.reg_mr(src.ctypes.data, src.nbytes, ALL_ACCESS, owner=src)
    qa.post_send(
        ib.SendWR(
            wr_id=1,
            sg_list=[smr.sge(4096)],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=mr.addr + 8192,
            rkey=mr.rkey,
        )
    )
    poll_until(ca, 1)[0].raise_for_status()
    # Every byte, unless the kernel table (support/kernels.py) records that
    # this kernel loses part of such a write (7.2: all but one packet).
    answer = kernels.landed(buf[8192 : 8192 + 4096], 9)
    if kernels.expected("odp_write_resident") is None:
        assert answer == "runs", answer  # a kernel not in the table: all of it
    kernels.check("odp_write_resident", answer)


def test_implicit_odp(ctx, pd):
    caps = ctx.query_device_ex().odp_caps
    try:
        mr = pd.reg_implicit_odp_mr(ALL_ACCESS)
    except ib.VerbsError as e:
        assert e.errno in UNSUPPORTED + (errno.EINVAL,), e
        assert not caps.general_caps & ib.ODPGeneralCaps.SUPPORT_IMPLICIT
        pytest.skip(
            f"implicit ODP: ibv_reg_mr(NULL, SIZE_MAX, ON_DEMAND) answered "
            f"{errno_name(e.errno)} on {ctx.name} (general_caps={caps.general_caps:#x})"
        )
    assert mr.addr == 0 and mr.access & ib.AccessFlags.ON_DEMAND
    mr.close()


def test_advise_mr(ctx, pd):
    arr = np.zeros(1 << 16, dtype=np.uint8)
    mr = pd.reg_mr(arr.ctypes.data, arr.nbytes, ALL_ACCESS, owner=arr)
    # Argument checks before the provider.
    with pytest.raises(ValueError):
        pd.advise_mr(ib.AdviseMRAdvice.PREFETCH, 0, [])
    with pytest.raises(TypeError):
        pd.advise_mr(ib.AdviseMRAdvice.PREFETCH, 0, [mr])
    with pytest.raises(TypeError):
        pd.advise_mr(ib.AdviseMRAdvice.PREFETCH, 0, mr.sge(64))
    other = ctx.alloc_pd()
    with pytest.raises(ValueError, match="another PD"):
        other.advise_mr(ib.AdviseMRAdvice.PREFETCH, 0, [mr.sge(64)])
    other.close()
    try:
        pd.advise_mr(ib.AdviseMRAdvice.PREFETCH_WRITE, ib.AdviseMRFlags.FLUSH, [mr.sge(4096)])
    except ib.VerbsError as e:
        # Without ODP an MR has nothing to prefetch: EOPNOTSUPP (no op) or
        # EINVAL (not an ODP MR) from the provider.
        assert e.errno in UNSUPPORTED + (errno.EINVAL,), e
        pytest.skip(f"advise_mr: ibv_advise_mr answered {errno_name(e.errno)} on {ctx.name}")
    mr.close()
