"""The module functions libibverbs answers without a device (core/lookups.c):
node and port-state text, the rate conversions, the flow-label UDP port and
is_qpt_supported."""

from __future__ import annotations

import pytest

import ibverbs as ib


def test_node_and_port_state_text():
    assert "channel adapter" in ib.node_type_str(ib.NodeType.CA)
    assert ib.node_type_str(ib.NodeType.UNKNOWN) == "unknown"
    assert ib.port_state_str(ib.PortState.ACTIVE) == "active"
    assert ib.port_state_str(ib.PortState.DOWN) == "down"
    with pytest.raises(TypeError):
        ib.port_state_str("active")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ib.node_type_str(-2)


# (enum ibv_rate value, multiple of 2.5 Gbit/s, Mbit/s): the ABI values.
RATES = [(2, 1, 2500), (5, 2, 5000), (3, 4, 10000), (7, 16, 40000)]


@pytest.mark.parametrize("rate,mult,mbps", RATES)
def test_rate_round_trips(rate, mult, mbps):
    assert ib.rate_to_mult(rate) == mult
    assert ib.mult_to_ibv_rate(mult) == rate
    assert ib.rate_to_mbps(rate) == mbps
    assert ib.mbps_to_ibv_rate(mbps) == rate


def test_rate_unknown_values():
    assert ib.mult_to_ibv_rate(3) == 0  # no 7.5 Gbit/s rate: IBV_RATE_MAX
    assert ib.mbps_to_ibv_rate(1) == 0
    assert ib.rate_to_mult(0) == -1
    with pytest.raises(ValueError):
        ib.rate_to_mbps(-1)


def _sport(fl: int) -> int:  # the formula of verbs.h, written out
    low, high = fl & 0x3FFF, fl & 0xFC000
    return (low ^ (high >> 14)) | 0xC000


@pytest.mark.parametrize("fl", [0, 1, 0x3FFF, 0x4000, 0x12345, 0xFFFFF])
def test_flow_label_to_udp_sport(fl):
    sport = ib.flow_label_to_udp_sport(fl)
    assert sport == _sport(fl)
    assert 0xC000 <= sport <= 0xFFFF


def test_flow_label_range():
    with pytest.raises(ValueError):
        ib.flow_label_to_udp_sport(0x100000)
    with pytest.raises(TypeError):
        ib.flow_label_to_udp_sport(None)  # type: ignore[arg-type]


def test_is_qpt_supported():
    caps = 1 << ib.QPType.RAW_PACKET
    assert ib.is_qpt_supported(caps, ib.QPType.RAW_PACKET) is True
    assert ib.is_qpt_supported(caps, ib.QPType.RC) is False
    with pytest.raises(ValueError):
        ib.is_qpt_supported(caps, 31)
    with pytest.raises(ValueError):
        ib.is_qpt_supported(-1, 0)


def test_gid_entry_ip():
    roce = ib.GidEntry(
        index=1,
        port=1,
        gid=ib.Gid("::ffff:10.0.0.1"),
        gid_type=ib.GIDType.ROCE_V2,
        ndev_ifindex=2,
        netdev="eth0",
    )
    assert str(roce.ip) == "10.0.0.1"
    v1 = ib.GidEntry(
        index=0, port=1, gid=ib.Gid("fe80::1"), gid_type=1, ndev_ifindex=2, netdev="eth0"
    )
    assert v1.gid_type is ib.GIDType.ROCE_V1 and str(v1.ip) == "fe80::1"
    ibe = ib.GidEntry(
        index=0, port=1, gid=ib.Gid("fe80::1"), gid_type=0, ndev_ifindex=0, netdev=None
    )
    assert ibe.ip is None
