"""Devices, contexts, queries and PDs against a real device (rxe0)."""

import errno
import gc
import json
import subprocess
import sys

import pytest

import ibverbs as ib
from support import GID_INDEX, PORT
from support.rdma import raises_each

pytestmark = pytest.mark.integration


def test_device_list_has_the_device(device_name):
    names = [d.name for d in ib.get_device_list()]
    assert device_name in names
    dev = next(d for d in ib.get_device_list() if d.name == device_name)
    assert dev.guid != 0
    with dev.open() as ctx:
        assert ctx.name == device_name


def test_query_device(ctx):
    a = ctx.query_device()
    assert isinstance(a, ib.DeviceAttr)
    assert isinstance(a.fw_ver, str)
    assert a.phys_port_cnt >= 1
    assert a.max_qp > 0 and a.max_qp_wr > 0 and a.max_cqe > 0 and a.max_sge > 0
    assert a.max_mr_size > 0
    assert a.atomic_cap in set(ib.AtomicCap)


def test_query_port_is_active(ctx):
    p = ctx.query_port(PORT)
    assert isinstance(p, ib.PortAttr)
    assert p.state == ib.PortState.ACTIVE
    assert p.active_mtu in set(ib.MTU) and p.max_mtu >= p.active_mtu
    assert p.gid_tbl_len > GID_INDEX
    if ctx.name.startswith("rxe"):
        assert p.link_layer == ib.LinkLayer.ETHERNET


@pytest.mark.parametrize("bad", [0, 2, 255])
def test_bad_port_raises_verbs_error(ctx, bad):
    if bad <= ctx.query_device().phys_port_cnt and bad != 0:
        pytest.skip("device has that port")
    with pytest.raises((ib.VerbsError, ValueError)) as ei:
        ctx.query_port(bad)
    if isinstance(ei.value, ib.VerbsError):
        assert ei.value.operation == "ibv_query_port"


def test_port_out_of_range_is_value_error(ctx):
    raises_each(ctx.query_port, (ValueError, (256,)), (ValueError, (-1,)), (TypeError, ("1",)))


def test_query_gid_roce_v2(ctx):
    gid = ctx.query_gid(PORT, GID_INDEX)
    assert isinstance(gid, ib.Gid) and not gid.is_zero()
    if ctx.name == "rxe0":
        # tools/rxe-vm puts 198.18.0.1 on veth0: an IPv4-mapped RoCE v2 GID.
        assert str(gid) == "::ffff:198.18.0.1"
        g2, gid_type, ifindex = ctx.query_gid_ex(PORT, GID_INDEX)
        assert g2 == gid and gid_type == ib.GIDType.ROCE_V2 and ifindex > 0


def test_query_gid_bad_index(ctx):
    n = ctx.query_port(PORT).gid_tbl_len
    with pytest.raises(ib.VerbsError):
        ctx.query_gid(PORT, n + 10)


def test_query_pkey(ctx):
    assert ctx.query_pkey(PORT, 0) == 0xFFFF


def test_context_attributes(ctx):
    assert ctx.num_comp_vectors >= 1
    assert ctx.async_fd >= 0 and ctx.cmd_fd >= 0
    assert "Context" in repr(ctx)


def test_pd_lifetime(ctx):
    pd = ctx.alloc_pd()
    assert pd.context is ctx and not pd.closed
    with pytest.raises(ib.VerbsError) as ei:
        ctx.close()
    assert ei.value.errno == errno.EBUSY and "PD x1" in str(ei.value)
    assert not ctx.closed
    ctx.query_port(PORT)  # still usable
    pd.close()
    pd.close()  # idempotent
    assert pd.closed
    with pytest.raises(ib.VerbsError) as ei:
        pd.reg_mr(0, 1, 0)
    assert ei.value.errno == errno.EBADF
    ctx.close()
    assert ctx.closed
    with pytest.raises(ib.VerbsError):
        ctx.query_device()
    with pytest.raises(ib.VerbsError):
        ctx.alloc_pd()


def test_context_manager_and_gc_order(device_name):
    with ib.Context(device_name) as ctx:
        with ctx.alloc_pd() as pd:
            assert not pd.closed
        assert pd.closed
    assert ctx.closed
    # Dropping the last reference to a context while children are alive
    # is safe: children keep the parent until they go.
    ctx = ib.Context(device_name)
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(4)
    del ctx
    gc.collect()
    assert not pd.context.closed
    del pd, cq
    gc.collect()


def test_cli_info_lists_the_device(device_name):
    out = subprocess.run(
        [sys.executable, "-m", "ibverbs", "info"], capture_output=True, text=True, check=True
    ).stdout
    assert f"hca_id: {device_name}" in out
    assert "PORT_ACTIVE" in out or "ACTIVE" in out
    data = json.loads(
        subprocess.run(
            [sys.executable, "-m", "ibverbs", "info", "--json", "-d", device_name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    dev = data["devices"][0]
    assert dev["name"] == device_name
    port = dev["ports"][0]
    assert port["state"] == "ACTIVE"
    gids = {g["index"]: g for g in port["gids"]}
    assert GID_INDEX in gids
    if device_name == "rxe0":
        assert gids[GID_INDEX]["gid"] == "::ffff:198.18.0.1"
        assert gids[GID_INDEX]["type"] == "RoCE v2"


def test_cli_bad_device_fails_cleanly():
    r = subprocess.run(
        [sys.executable, "-m", "ibverbs", "info", "-d", "nope0"], capture_output=True, text=True
    )
    assert r.returncode == 1
    assert "nope0" in r.stderr and "Traceback" not in r.stderr
