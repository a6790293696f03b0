"""The GID table and the lookups libibverbs answers itself, on rxe0:
Context.query_gid_table, find_gid, get_pkey_index, get_device_index."""

from __future__ import annotations

import errno
import ipaddress
import socket

import pytest

import ibverbs as ib
from support import GID_INDEX, PORT

pytestmark = pytest.mark.integration


def _table(ctx):
    if not ib.optional_verbs.get("_ibv_query_gid_table", True):
        pytest.skip("libibverbs lacks ibv_query_gid_table (rdma-core < 32)")
    return ctx.query_gid_table()


def test_table_has_the_rig_gid_as_roce_v2_ipv4(ctx):
    table = _table(ctx)
    assert table, "an active rxe port has GIDs"
    by_index = {(e.port, e.index): e for e in table}
    e = by_index[(PORT, GID_INDEX)]
    assert e.gid_type == ib.GIDType.ROCE_V2
    assert isinstance(e.gid_type, ib.GIDType)
    assert isinstance(e.ip, ipaddress.IPv4Address)
    assert e.gid == ctx.query_gid(PORT, GID_INDEX)
    assert e.gid.raw[12:] == e.ip.packed
    assert e.netdev == socket.if_indextoname(e.ndev_ifindex)
    gid, gid_type, ifindex = ctx.query_gid_ex(PORT, GID_INDEX)
    assert (gid, gid_type, ifindex) == (e.gid, e.gid_type, e.ndev_ifindex)


def test_find_gid_picks_the_rig_gid(ctx):
    e = ctx.find_gid(PORT)
    assert e.index == GID_INDEX and e.port == PORT
    assert ctx.find_gid(PORT, ip=str(e.ip)) == e
    assert ctx.find_gid(port=PORT, ip=e.ip, gid_type=ib.GIDType.ROCE_V2) == e
    assert ctx.find_gid(PORT, ip=f"::ffff:{e.ip}") == e


def test_find_gid_refuses(ctx):
    with pytest.raises(ValueError, match="no GID"):
        ctx.find_gid(PORT, ip="192.0.2.254")
    with pytest.raises(ValueError, match="not an IP address"):
        ctx.find_gid(PORT, ip="not-an-ip")
    with pytest.raises(TypeError):
        ctx.find_gid(PORT, ip=42)
    with pytest.raises(ValueError):
        ctx.find_gid(0)


def test_get_pkey_index(ctx):
    assert ctx.get_pkey_index(PORT, 0xFFFF) == 0
    assert ctx.query_pkey(PORT, 0) == 0xFFFF
    with pytest.raises(ValueError):
        ctx.get_pkey_index(PORT, 0x10000)


def test_get_device_index(ctx):
    idx = ctx.get_device_index()
    assert idx >= 0
    assert ctx.get_device_index() == idx


def test_closed_context_raises_ebadf(device_name):
    c = ib.Context(device_name)
    c.close()
    for call in (
        c.query_gid_table,
        c.find_gid,
        c.get_device_index,
        lambda: c.get_pkey_index(PORT, 0xFFFF),
    ):
        with pytest.raises(ib.VerbsError) as ei:
            call()
        assert ei.value.errno == errno.EBADF


def test_resolve_eth_l2_from_gid_of_own_gid_is_the_netdev_mac(ctx):
    """rxe0's own RoCE v2 GID resolves (kernel neighbour lookup of a local
    address) to its netdev's MAC, untagged."""
    e = ctx.find_gid(PORT)
    ah_attr = ib.AHAttr(dgid=e.gid, sgid_index=e.index, port_num=PORT)
    mac, vid = ctx.resolve_eth_l2_from_gid(ah_attr)
    with open(f"/sys/class/net/{e.netdev}/address") as f:
        want = bytes.fromhex(f.read().strip().replace(":", ""))
    assert isinstance(mac, bytes) and mac == want
    assert vid == 0xFFFF
