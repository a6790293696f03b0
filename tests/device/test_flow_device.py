"""Flow steering (QP.create_flow, Flow) against a real device.  rxe
offers none: where the provider refuses, the test asserts the errno it
answered and skips naming it; the argument checks run everywhere."""

import errno

import pytest

import ibverbs as ib

from support import PORT
from support.rdma import UNSUPPORTED, errno_name, refused

pytestmark = pytest.mark.integration


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
            f"flow steering: ibv_create_flow answered {errno_name(e.errno)} on {ctx.name} "
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


# rxe has no ESP flow actions (the counted_objects fixture: nothing left).
def test_flow_action_esp(counted_objects):
    ctx, _, _, qp = counted_objects
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
