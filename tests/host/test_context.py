"""Context against the recording double (tests/fakes/recording/): the device
list, ports and GIDs, query_device_ex and the GID/P_Key/index/L2 and rate
helpers, query_gid_ex, the imported objects and their unimport on close,
query_rt_values, query_port_speed and the null MR, field by field.  A check
of what the binding hands libibverbs and what it makes of the answers, not
evidence that a provider runs the verbs.  On rxe:
tests/device/test_context_device.py."""

from __future__ import annotations

import errno

from ibverbs import enums


def test_devices_ports_and_gids_come_from_the_library(recording):
    def body(fake):
        import ibverbs

        out = {}
        for name in ("fake0", "fake1"):
            with ibverbs.Context(name) as ctx:
                p = ctx.query_port(1)
                out[name] = {
                    "port": [int(p.state), int(p.link_layer), p.lid, p.sm_lid, int(p.active_mtu)],
                    "gid0": ctx.query_gid(1, 0).raw.hex(),
                    "pkey": ctx.query_pkey(1, 0),
                    "table": [[e.index, int(e.gid_type)] for e in ctx.query_gid_table()],
                    "guid": ctx.query_device().node_guid,
                }
        return out

    res = recording.run(body)
    v = res.ok()
    eth, ib = int(enums.LinkLayer.ETHERNET), int(enums.LinkLayer.INFINIBAND)
    active, mtu1024 = int(enums.PortState.ACTIVE), int(enums.MTU.MTU_1024)
    assert v["fake0"]["port"] == [active, eth, 0, 0, mtu1024]
    assert v["fake1"]["port"] == [active, ib, 0x11, 1, mtu1024]
    assert v["fake0"]["gid0"] == "fe80000000000000020000fffe000000"
    assert v["fake0"]["pkey"] == v["fake1"]["pkey"] == 0xFFFF
    roce2, ib_gid = int(enums.GIDType.ROCE_V2), int(enums.GIDType.IB)
    assert v["fake0"]["table"] == [[0, roce2], [1, roce2]]
    assert v["fake1"]["table"] == [[0, ib_gid]]
    for rec in res.calls("query_gid"):
        assert (rec["port_num"], rec["index"]) == (1, 0)
    assert [r["device"] for r in res.calls("open_device")] == ["fake0", "fake1"]
    assert len(res.calls("close_device")) == 2
    assert res.live == 0, res.live_report


def test_imports_unimport_on_close(recording):
    def body(fake):
        import os

        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            fd = os.dup(0)
            ctx2 = ibverbs.Context.import_device(fd)
            os.fstat(fd)  # still the caller's: the binding imported a dup
            os.close(fd)
            pd = ctx2.import_pd(0x42)
            mr = pd.import_mr(0x43)
            dm = ctx2.import_dm(0x44, 4096)
            out["flags"] = [pd.imported, mr.imported, dm.imported, pd.handle, mr.handle]
            out["mr"] = [mr.addr, mr.length]
            try:
                pd.close()
            except ibverbs.VerbsError as e:
                out["busy"] = e.errno
            out["dmfd"] = dm.export_dmabuf_fd() >= 0
            for o in (mr, dm, pd, ctx2):
                o.close()
            own = ctx.alloc_pd()
            out["own"] = own.imported
            own.close()
        return out

    res = recording.run(body)
    assert res.error is None, res.error
    v = res.value
    assert v["flags"] == [True, True, True, 0x42, 0x43] and v["mr"] == [0x1000, 4096]
    assert v["busy"] == 16 and v["dmfd"] and v["own"] is False
    assert res.one("import_device")["cmd_fd"] >= 0
    assert res.one("import_pd")["pd_handle"] == 0x42
    assert res.one("import_mr")["mr_handle"] == 0x43
    assert res.one("import_dm")["dm_handle"] == 0x44
    for verb in ("unimport_pd", "unimport_mr", "unimport_dm", "dm_export_dmabuf_fd"):
        assert res.one(verb)
    verbs = [r.verb for r in res.records]
    assert "dereg_mr" not in verbs and "free_dm" not in verbs
    assert verbs.count("dealloc_pd") == 1  # only the process's own PD
    assert res.live == 0, res.live_report


def test_rt_values_port_speed_and_null_mr(recording):
    def body(fake):
        import ibverbs

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            v = ctx.query_rt_values_ex()
            speed = ctx.query_port_speed(1)
            null = pd.alloc_null_mr()
            out = [int(v.comp_mask), v.raw_clock_sec, v.raw_clock_nsec, speed, null.lkey > 0]
            null.close()
            fake.fail("query_rt_values", 95)
            try:
                ctx.query_rt_values_ex()
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
        return out

    res = recording.run(body)
    assert res.error is None, res.error
    assert res.value == [1, 12, 345678, 4000, True, [95, "ibv_query_rt_values_ex"]]
    assert [r["values.comp_mask"] for r in res.records if r.verb == "query_rt_values"] == [1, 1]
    assert res.one("query_port_speed")["port_num"] == 1
    assert res.one("alloc_null_mr")
    assert res.live == 0, res.live_report


def test_a_failed_pkey_lookup_names_port_and_pkey(recording):
    def body(fake):
        import errno

        import ibverbs

        with ibverbs.Context("fake0") as ctx:
            fake.fail("get_pkey_index", errno.ENOENT)
            try:
                ctx.get_pkey_index(1, 0x8001)
            except ibverbs.VerbsError as e:
                return [e.errno, str(e)]

    # the values, not "%#x" (which CPython 3.12's PyUnicode_FromFormat
    # refuses as a SystemError, and 3.11's printed as it stands)
    assert recording.run(body).ok() == [
        errno.ENOENT,
        "[Errno 2] ibv_get_pkey_index: No such file or directory: port 1 pkey 0x8001",
    ]


def test_device_ex_and_the_lookup_helpers(recording):
    def body(fake):
        import errno
        import os

        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            ex = ctx.query_device_ex()
            out["ex"] = [ex.legacy, ex.hca_core_clock, ex.max_dm_size, ex.orig_attr.max_qp]
            gid, gid_type, ifindex = ctx.query_gid_ex(1, 1)
            out["gid_ex"] = [gid.raw.hex(), int(gid_type), ifindex]
            out["pkey_index"] = ctx.get_pkey_index(1, 0xFFFF)
            out["device_index"] = ctx.get_device_index()
            ah = ibverbs.AHAttr(
                dgid=bytes.fromhex("00000000000000000000ffffc0000205"),
                sgid_index=1,
                port_num=1,
                is_global=True,
            )
            mac, vid = ctx.resolve_eth_l2_from_gid(ah)
            out["l2"] = [mac.hex(), vid]
            os.set_blocking(ctx.async_fd, False)
            try:
                ctx.get_async_event()
            except ibverbs.VerbsError as e:
                out["async"] = [e.errno == errno.EAGAIN, e.operation]
        ten, twenty_five = ibverbs.mult_to_ibv_rate(4), ibverbs.mbps_to_ibv_rate(25781)
        out["rates"] = [
            int(ten),
            ibverbs.rate_to_mult(ten),
            int(twenty_five),
            ibverbs.rate_to_mbps(twenty_five),
        ]
        return out

    res = recording.run(body)
    v = res.ok()
    assert v["ex"] == [False, 1000000, 1 << 20, 1024]
    assert res.one("query_device_ex")["attr_size"] > 0
    assert v["gid_ex"] == [
        "00000000000000000000ffffc0000201",
        int(enums.GIDType.ROCE_V2),
        2,
    ]
    g = res.one("query_gid_ex")
    assert (g["port_num"], g["gid_index"], g["flags"]) == (1, 1, 0)
    assert v["pkey_index"] == 0 and res.one("get_pkey_index")["pkey"] == 0xFFFF
    assert v["device_index"] == 0
    assert v["l2"] == ["0200c0000205", 0xFFFF]
    l2 = res.one("resolve_eth_l2_from_gid")
    assert l2["attr.grh.dgid"] == bytes.fromhex("00000000000000000000ffffc0000205")
    assert (l2["attr.grh.sgid_index"], l2["attr.is_global"]) == (1, 1)
    assert v["async"] == [True, "ibv_get_async_event"]
    # IBV_RATE_10_GBPS is 3 and IBV_RATE_25_GBPS 15 in verbs.h
    assert v["rates"] == [3, 4, 15, 25781]
    assert res.one("mult_to_ibv_rate")["mult"] == 4
    assert res.one("rate_to_mult")["rate"] == 3
    assert res.one("mbps_to_ibv_rate")["mbps"] == 25781
    assert res.one("rate_to_mbps")["rate"] == 15
    assert res.live == 0, res.live_report


def test_query_gid_ex_does_not_leak(recording):
    # gid_to_py (device/context.c) kept a reference to the GID's
    # bytes, one leaked object per call.  Thousands of calls on the
    # double must leave the interpreter's allocated blocks flat.
    def body(fake):
        import gc
        import sys

        import ibverbs

        def blocks():
            gc.collect()
            return sys.getallocatedblocks()

        with ibverbs.Context("fake0") as ctx:
            for _ in range(200):  # warm up caches (enums, interned names)
                ctx.query_gid_ex(1, 1)
            before = blocks()
            for _ in range(5000):
                gid, gid_type, ifindex = ctx.query_gid_ex(1, 1)
            del gid, gid_type, ifindex
            after = blocks()
        return {"grown": after - before}

    v = recording.run(body).ok()
    # One leaked bytes object per call would be 5000 blocks.
    assert v["grown"] < 50, v


def test_find_gid_by_ip_and_the_errors(recording):
    def body(fake):
        import ipaddress

        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            for ip in ("192.0.2.1", ipaddress.IPv4Address("192.0.2.1"), "::ffff:192.0.2.1"):
                e = ctx.find_gid(ip=ip)
                out.setdefault("found", []).append([e.index, e.port, int(e.gid_type)])
            out["default"] = ctx.find_gid().index
            for kw in (
                {"ip": "192.0.2.9"},
                {"ip": "not an address"},
                {"gid_type": ibverbs.GIDType.IB},
                {"ip": "192.0.2.1", "gid_type": ibverbs.GIDType.ROCE_V1},
            ):
                try:
                    ctx.find_gid(**kw)
                except ValueError as e:
                    out.setdefault("value", []).append(str(e))
            try:
                ctx.find_gid(ip=3232235521)
            except TypeError as e:
                out["type"] = str(e)
        with ibverbs.Context("fake1") as ib_ctx:
            out["ib"] = ib_ctx.find_gid(gid_type=ibverbs.GIDType.IB).index
        return out

    res = recording.run(body)
    out = res.ok()
    roce2 = 2  # IBV_GID_TYPE_ROCE_V2
    assert out["found"] == [[1, 1, roce2]] * 3
    assert out["default"] == 1  # the IPv4-mapped one
    assert out["value"] == [
        "fake0 port 1 has no GID of type 2 for 192.0.2.9",
        "not an IP address: 'not an address'",
        "fake0 port 1 has no GID of type 0 with an IPv4 address (give the netdev an IPv4 "
        "address, or pass ip)",
        "fake0 port 1 has no GID of type 1 for 192.0.2.1",
    ]
    assert out["type"].startswith("ip must be a str, an ipaddress address")
    assert out["ib"] == 0
    assert len(res.calls("query_gid_table")) == 8


def test_context_fds_refused_arguments_and_a_bad_import_fd(recording):
    def body(fake):
        import os

        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            out["fds"] = [type(ctx.async_fd).__name__, type(ctx.cmd_fd).__name__]
            fake.clear()
            for call in (
                lambda: ctx.query_port("1"),
                lambda: ctx.query_gid(1, "0"),
                lambda: ctx.query_gid_ex(1, "0"),
                lambda: ctx.query_pkey(1, None),
                lambda: ibverbs.Context.import_device("3"),
            ):
                try:
                    call()
                except TypeError as e:
                    out.setdefault("type", []).append(str(e))
            out["verbs"] = [r.verb for r in fake.take()]
            r, w = os.pipe()
            os.close(r)
            os.close(w)
            try:
                ibverbs.Context.import_device(r)
            except ibverbs.VerbsError as e:
                out["import"] = [e.errno, e.operation, str(e).endswith(f"cmd_fd {r}")]
        for getter in ("async_fd", "cmd_fd", "num_comp_vectors"):
            try:
                getattr(ctx, getter)
            except ibverbs.VerbsError as e:
                out.setdefault("closed", []).append(e.errno)
        return out

    out = recording.run(body).ok()
    assert out["fds"] == ["int", "int"]
    assert len(out["type"]) == 5
    assert out["type"][0].startswith("port_num must be an int")
    assert out["verbs"] == []
    assert out["import"] == [errno.EBADF, "ibv_import_device", True]
    assert out["closed"] == [errno.EBADF] * 3
