"""Device memory, flow steering and on-demand paging against a real
device.  rxe offers none of the first two and ODP only on some kernels:
where the provider refuses, the test asserts the errno it answered and
skips naming it; the argument checks run everywhere."""

import errno

import numpy as np
import pytest

import ibverbs as ib

from support import kernels
from support.rdma import ALL_ACCESS, make_rc_pair, poll_until

pytestmark = pytest.mark.integration

UNSUPPORTED = (errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS)


def name(e):
    return "EOPNOTSUPP" if e == errno.EOPNOTSUPP else errno.errorcode.get(e, str(e))


def alloc_dm_or_skip(ctx, length=4096):
    try:
        return ctx.alloc_dm(length)
    except ib.VerbsError as e:
        assert e.errno in UNSUPPORTED, e
        attr = ctx.query_device_ex()
        pytest.skip(
            f"device memory: ibv_alloc_dm answered {name(e.errno)} on {ctx.name} "
            f"(max_dm_size={attr.max_dm_size}: the provider has no alloc_dm)"
        )


# ------------------------------------------------------------ device memory


def test_alloc_dm_argument_checks(ctx):
    with pytest.raises(ValueError):
        ctx.alloc_dm(0)
    with pytest.raises(ValueError):
        ctx.alloc_dm(-1)
    with pytest.raises(TypeError):
        ctx.alloc_dm("4096")
    with pytest.raises(ValueError):
        ctx.alloc_dm(4096, log_align_req=64)
    with pytest.raises(TypeError):
        ctx.alloc_dm(4096, no_such=1)


def test_reg_dm_mr_argument_checks(ctx, pd):
    with pytest.raises(TypeError, match="DM"):
        pd.reg_dm_mr(pd, 0, 64, ib.AccessFlags.ZERO_BASED)
    with pytest.raises(TypeError):
        pd.reg_dm_mr(None, 0, 64, 0)


def test_dm_copy_and_register(ctx, pd):
    dm = alloc_dm_or_skip(ctx)
    assert dm.length == 4096 and dm.context is ctx
    data = bytes(range(256)) * 2
    dm.copy_to(64, data)
    assert dm.copy_from(64, len(data)) == data
    dm.copy_to(0, bytearray(b"abcd"))
    assert dm.copy_from(0, 4) == b"abcd"
    with pytest.raises(ValueError, match="beyond"):
        dm.copy_to(4095, b"xy")
    with pytest.raises(ValueError, match="beyond"):
        dm.copy_from(4000, 97)
    with pytest.raises(TypeError):
        dm.copy_to(0, "text")
    access = ib.AccessFlags.ZERO_BASED | ib.AccessFlags.LOCAL_WRITE
    with pytest.raises(ValueError, match="beyond"):
        pd.reg_dm_mr(dm, 4000, 200, access)
    mr = pd.reg_dm_mr(dm, 0, 4096, access)
    assert mr.owner is dm
    with pytest.raises(ib.VerbsError) as ei:
        dm.close()  # the MR uses it
    assert ei.value.errno == errno.EBUSY
    mr.close()
    dm.close()
    with pytest.raises(ib.VerbsError) as ei:
        dm.copy_from(0, 4)
    assert ei.value.errno == errno.EBADF
    with pytest.raises(ib.VerbsError) as ei:
        pd.reg_dm_mr(dm, 0, 64, access)
    assert ei.value.errno == errno.EBADF


# ------------------------------------------------------------ flow steering


def flow_attr():
    return ib.FlowAttr(
        port=1,
        specs=[
            ib.FlowSpecEth(dst_mac="02:00:00:00:00:01", ether_type=0x0800),
            ib.FlowSpecIPv4(dst_ip="10.0.0.1"),
            ib.FlowSpecTCPUDP(dst_port=4791, udp=True),
        ],
    )


def test_create_flow(ctx, pd, cq):
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.UD))
    qp.to_init(1, 0)
    try:
        flow = qp.create_flow(flow_attr())
    except ib.VerbsError as e:
        assert e.errno in UNSUPPORTED, e
        pytest.skip(
            f"flow steering: ibv_create_flow answered {name(e.errno)} on {ctx.name} "
            "(the provider has no create_flow)"
        )
    assert flow.qp is qp
    with pytest.raises(ib.VerbsError) as ei:
        qp.close()  # the flow is its child
    assert ei.value.errno == errno.EBUSY
    flow.close()
    qp.close()


def test_create_flow_argument_checks(ctx, pd, cq):
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.UD))
    good = flow_attr().to_bytes()
    with pytest.raises(TypeError):
        qp.create_flow(42)
    with pytest.raises(TypeError):
        qp.create_flow(None)
    with pytest.raises(TypeError):
        qp.create_flow(bytearray(good))
    with pytest.raises(ValueError):
        qp.create_flow(good[:10])  # shorter than struct ibv_flow_attr
    with pytest.raises(ValueError):
        qp.create_flow(good[:-4])  # size field disagrees
    # A spec whose size runs past the end of the buffer.
    bad = bytearray(good)
    bad[20 + 4 : 20 + 6] = (0xFFFF).to_bytes(2, "little")
    with pytest.raises(ValueError):
        qp.create_flow(bytes(bad))
    with pytest.raises(ValueError):
        qp.create_flow(ib.FlowAttr(port=0))
    qp.close()
    with pytest.raises(ib.VerbsError) as ei:
        qp.create_flow(flow_attr())
    assert ei.value.errno == errno.EBADF


# ------------------------------------------------------ on-demand paging


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
            f"ODP: ibv_reg_mr(ON_DEMAND) answered {name(e.errno)} on {ctx.name} "
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
            f"{name(e.errno)} on {ctx.name} (general_caps={caps.general_caps:#x})"
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
        pytest.skip(f"advise_mr: ibv_advise_mr answered {name(e.errno)} on {ctx.name}")
    mr.close()
