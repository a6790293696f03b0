"""ibverbs.mlx5's DEVX calls and mkeys against the fake libmlx5.so.1
(tests/fakes/mlx5/devx.c, mkey.c) on top of the recording double: every
argument and byte the binding passes, what it makes of the answers, and
the lifetimes (children of their Context/PD, EBADF after close, closed
with their parent).  The fake is a double, not evidence that anything
works on an mlx5 device."""

from __future__ import annotations

import re
import struct

B = bytes.fromhex  # the child's bytes come back as hex (recording.Runner)


def test_general_cmd_and_query_eqn(mlx5_fake):
    def body(fake):
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        cmd = bytes.fromhex("01000000") + bytes(12)  # QUERY_HCA_CAP opcode 0x100
        out = [mlx5.devx_general_cmd(ctx, cmd, 32)]
        out.append(mlx5.devx_general_cmd(ctx, bytearray(b"\x05" * 4), 4))
        out.append(mlx5.devx_query_eqn(ctx, 3))
        for bad in (
            lambda: mlx5.devx_general_cmd(ctx, "str", 8),
            lambda: mlx5.devx_general_cmd(ctx, b"", (1 << 20) + 1),
        ):
            try:
                bad()
            except (TypeError, ValueError) as e:
                out.append(type(e).__name__)
        ctx.close()
        out.append(verbs_error_of(lambda: mlx5.devx_general_cmd(ctx, cmd, 8)).errno)
        return out

    res = mlx5_fake.run(body)
    out32, out4, eqn, te, ve, ebadf = res.ok()
    cmd = bytes.fromhex("01000000") + bytes(12)
    assert B(out32) == bytes(8) + cmd + bytes(8)
    assert B(out4) == bytes(4)
    assert eqn == 103
    assert (te, ve, ebadf) == ("TypeError", "ValueError", 9)
    recs = res.mlx5_calls("mlx5dv_devx_general_cmd")
    assert len(recs) == 2
    assert (recs[0]["inlen"], recs[0]["in"], recs[0]["outlen"]) == (16, cmd, 32)
    assert (recs[1]["in"], recs[1]["outlen"]) == (b"\x05" * 4, 4)
    assert recs[0]["ctx"] == res.mlx5_one("mlx5dv_devx_query_eqn")["ctx"] != 0
    assert res.mlx5_one("mlx5dv_devx_query_eqn")["vector"] == 3


def test_general_cmd_error_names_the_function(mlx5_fake):
    def body(fake):
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        ctx = mlx5.open_device("fake0")
        out = []
        for call in (
            lambda: mlx5.devx_general_cmd(ctx, b"\0" * 16, 16),
            lambda: mlx5.devx_query_eqn(ctx, 0),
            lambda: mlx5.devx_obj_create(ctx, b"\0" * 16, 16),
            lambda: mlx5.devx_alloc_uar(ctx, 1),
            lambda: mlx5.devx_create_event_channel(ctx),
            lambda: mlx5.devx_umem_reg(ctx, bytearray(64), 1),
        ):
            e = verbs_error_of(call)
            out.append([e.errno, e.operation])
        ctx.close()
        return out

    fail = {
        "mlx5dv_devx_general_cmd": 22,
        "mlx5dv_devx_query_eqn": 95,
        "mlx5dv_devx_obj_create": 5,
        "mlx5dv_devx_alloc_uar": 12,
        "mlx5dv_devx_create_event_channel": 95,
        "mlx5dv_devx_umem_reg": 14,
    }
    res = mlx5_fake.run(body, fail=fail)
    assert res.ok() == [[v, k] for k, v in fail.items()]
    assert res.live == 0, res.live_report


def test_umem_reg_holds_the_buffer_until_close(mlx5_fake):
    def body(fake):
        import ibverbs
        from support.rdma import verbs_error_of
        from ibverbs import mlx5

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        buf = bytearray(b"\x2a" * 4096)
        A = ibverbs.AccessFlags
        umem = mlx5.devx_umem_reg(ctx, buf, A.LOCAL_WRITE | A.REMOTE_WRITE)
        assert isinstance(umem, mlx5.DevxUmem)
        out = [type(umem).__name__, umem.umem_id, umem.size, int(umem.access)]
        out.append(type(umem.owner).__name__)
        try:
            buf.extend(b"x")  # pinned by the umem's memoryview
        except BufferError:
            out.append("pinned")
        out.append(verbs_error_of(ctx.close).errno)  # EBUSY: the umem is open
        umem.close()
        umem.close()
        buf.extend(b"x")
        out.append(umem.owner)
        out.append(verbs_error_of(lambda: umem.umem_id).errno)
        for bad, exc in ((b"ro", ValueError), (3, TypeError), (bytearray(), ValueError)):
            try:
                mlx5.devx_umem_reg(ctx, bad, A.LOCAL_WRITE)
            except exc as e:
                out.append(type(e).__name__)
        ro = mlx5.devx_umem_reg(ctx, b"readonly", 0)
        out.append(ro.umem_id)
        del ro  # dropped: deregistered by its deallocation
        ctx.close()
        return out

    res = mlx5_fake.run(body)
    out = res.ok()
    assert out[:5] == ["DevxUmem", 0x10, 4096, 3, "memoryview"]
    assert out[5:10] == ["pinned", 16, None, 9, "ValueError"]
    assert out[10:] == ["TypeError", "ValueError", 0x11]
    assert res.live == 0, res.live_report
    regs = res.mlx5_calls("mlx5dv_devx_umem_reg")
    assert [(r["size"], r["access"], r["first_byte"]) for r in regs] == [
        (4096, 3, 0x2A),
        (8, 0, ord("r")),
    ]
    assert regs[0]["addr"] != 0
    deregs = res.mlx5_calls("mlx5dv_devx_umem_dereg")
    assert [r["umem_id"] for r in deregs] == [0x10, 0x11]  # once each


def test_umem_reg_ex_and_dmabuf_pass_the_struct(mlx5_fake):
    def body(fake):
        from ibverbs import mlx5

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        buf = bytearray(8192)
        u1 = mlx5.devx_umem_reg_ex(ctx, buf, 1, 1 << 12)
        owner = object()
        u2 = mlx5.devx_umem_reg_dmabuf(ctx, 9, 4096, 65536, 1, 1 << 16, owner=owner)
        out = [u1.umem_id, u2.umem_id, u2.addr, u2.owner is owner]
        u1.close()
        u2.close()
        ctx.close()
        return out

    res = mlx5_fake.run(body)
    assert res.ok() == [0x10, 0x11, 4096, True]
    r1, r2 = res.mlx5_calls("mlx5dv_devx_umem_reg_ex")
    addr = r1["in.addr"]
    assert addr != 0
    assert (r1["in.size"], r1["in.access"], r1["in.pgsz_bitmap"]) == (8192, 1, 4096)
    assert (r1["in.comp_mask"], r1["in.dmabuf_fd"]) == (0, -1)
    # addr, size, access (+4 padding), pgsz_bitmap, comp_mask, dmabuf_fd (+4)
    want = struct.pack("<QQI4xQQi4x", addr, 8192, 1, 4096, 0, -1)
    assert r1["in"] == want
    assert r2["in"] == struct.pack("<QQI4xQQi4x", 4096, 65536, 1, 1 << 16, 1, 9)


def test_uar_fields_and_lifetime(mlx5_fake):
    def body(fake):
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        uar = mlx5.devx_alloc_uar(ctx, mlx5.UAR_ALLOC_TYPE_NC)
        assert isinstance(uar, mlx5.DevxUAR)
        out = [uar.reg_addr - uar.base_addr, uar.page_id, uar.mmap_off, uar.comp_mask]
        out += [uar.flags, uar.context is ctx, "page_id=7" in repr(uar)]
        uar.close()
        out.append(verbs_error_of(lambda: uar.reg_addr).errno)
        uar2 = mlx5.devx_alloc_uar(ctx)
        out.append(verbs_error_of(ctx.close).errno)  # EBUSY while a child is open
        uar2.close()
        ctx.close()
        return out

    res = mlx5_fake.run(body)
    assert res.ok() == [0x800, 7, 0x3000, 0, 1, True, True, 9, 16]
    assert res.live == 0, res.live_report
    assert [r["flags"] for r in res.mlx5_calls("mlx5dv_devx_alloc_uar")] == [1, 0]
    assert len(res.mlx5_calls("mlx5dv_devx_free_uar")) == 2
    verbs = [r.verb for r in res.mlx5 if r.verb.startswith("mlx5dv_devx")]
    assert verbs[-1] == "mlx5dv_devx_free_uar"
    assert res.one("close_device") is not None


def test_obj_create_modify_query_destroy(mlx5_fake):
    def body(fake):
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        obj, out_create = mlx5.devx_obj_create(ctx, b"\x09\x00" + bytes(14), 16)
        assert isinstance(obj, mlx5.DevxObj)
        out = [type(obj).__name__, out_create]
        out.append(obj.modify(b"\x0a\x0b", 12))
        out.append(obj.query(b"\x0c", outlen=9))
        obj.close()
        out.append(verbs_error_of(lambda: obj.query(b"", 8)).errno)
        obj2, _ = mlx5.devx_obj_create(ctx, b"\x01", 8)
        out.append(verbs_error_of(ctx.close).errno)
        del obj2
        ctx.close()
        return out

    res = mlx5_fake.run(body)
    typ, created, modified, queried, ebadf, closed = res.ok()
    assert typ == "DevxObj"
    assert B(created) == bytes(8) + (0x100).to_bytes(4, "big") + bytes(4)
    assert B(modified) == bytes(8) + b"\x0a\x0b" + bytes(2)
    assert B(queried) == bytes(8) + b"\x0c"
    assert (ebadf, closed) == (9, 16)
    assert res.live == 0, res.live_report
    c = res.mlx5_calls("mlx5dv_devx_obj_create")[0]
    assert (c["in"], c["inlen"], c["outlen"]) == (b"\x09\x00" + bytes(14), 16, 16)
    m = res.mlx5_one("mlx5dv_devx_obj_modify")
    assert (m["obj.id"], m["in"], m["outlen"]) == (0x100, b"\x0a\x0b", 12)
    assert res.mlx5_one("mlx5dv_devx_obj_query")["obj.id"] == 0x100
    assert [r["obj.id"] for r in res.mlx5_calls("mlx5dv_devx_obj_destroy")] == [0x100, 0x101]


def test_obj_destroy_failure_keeps_it_usable(mlx5_fake):
    def body(fake):
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        obj, _ = mlx5.devx_obj_create(ctx, b"\x01", 8)
        out = []
        e = verbs_error_of(obj.close)
        out += [e.errno, e.operation, obj.closed]
        return out

    res = mlx5_fake.run(body, fail={"mlx5dv_devx_obj_destroy": 16})
    assert res.ok() == [16, "mlx5dv_devx_obj_destroy", False]


def test_qp_modify_and_query(mlx5_fake):
    def body(fake):
        import ibverbs
        from ibverbs import mlx5

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        pd, cq = ctx.alloc_pd(), ctx.create_cq(8)
        qp = pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.RC))
        out = [qp.qp_num]
        out.append(mlx5.devx_qp_modify(qp, b"\x05\x00", 10))
        out.append(mlx5.devx_qp_query(qp, b"\x05\x01", 10))
        try:
            mlx5.devx_qp_modify(pd, b"", 8)
        except TypeError as e:
            out.append(type(e).__name__)
        qp.close()
        cq.close()
        pd.close()
        ctx.close()
        return out

    res = mlx5_fake.run(body)
    qpn, mod, qry, te = res.ok()
    assert B(mod) == bytes(8) + b"\x05\x00" and B(qry) == bytes(8) + b"\x05\x01"
    assert te == "TypeError"
    assert res.mlx5_one("mlx5dv_devx_qp_modify")["qp.qp_num"] == qpn
    assert res.mlx5_one("mlx5dv_devx_qp_query")["in"] == b"\x05\x01"


def test_event_channel_subscribe_and_get_event(mlx5_fake):
    def body(fake):
        import os

        from ibverbs import mlx5

        from support.rdma import verbs_error_of

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        ch = mlx5.devx_create_event_channel(ctx, 0)
        obj, _ = mlx5.devx_obj_create(ctx, b"\x01", 16)
        assert isinstance(ch, mlx5.DevxEventChannel)
        out = [ch.fd >= 0, ch.flags]
        ch.subscribe(obj, [0x1F, 0x22], cookie=0xDEADBEEF)
        out.append(ch.get_event(72))
        ch.subscribe(None, [0x0A])
        os.set_blocking(ch.fd, False)
        out.append(ch.get_event(8))
        for bad in ([], [70000], ["x"]):
            try:
                ch.subscribe(None, bad)
            except (TypeError, ValueError) as e:
                out.append(type(e).__name__)
        obj.close()
        out.append(verbs_error_of(lambda: ch.subscribe(obj, [1])).errno)
        ch.close()
        out.append(verbs_error_of(ch.get_event).errno)
        ctx.close()
        return out

    res = mlx5_fake.run(body)
    out = res.ok()
    assert out[:2] == [True, 0]
    ev = B(out[2])
    assert len(ev) == 64 and ev[:8] == (0xDEADBEEF).to_bytes(8, "little")
    assert ev[8:12] == (0x1F).to_bytes(4, "little") and ev[12:] == b"\xee" * 52
    assert B(out[3]) == bytes(8)  # the cookie 0, no room for the data
    assert out[4:] == ["ValueError", "ValueError", "TypeError", 9, 9]
    s1, s2 = res.mlx5_calls("mlx5dv_devx_subscribe_devx_event")
    assert (s1["obj.id"], s1["events_sz"], s1["cookie"]) == (0x100, 4, 0xDEADBEEF)
    assert s1["events_num"] == struct.pack("<HH", 0x1F, 0x22)
    assert (s2["obj.id"], s2["events_num"], s2["cookie"]) == (0, b"\x0a\x00", 0)
    assert [r["event_resp_len"] for r in res.mlx5_calls("mlx5dv_devx_get_event")] == [72, 8]
    assert len(res.mlx5_calls("mlx5dv_devx_destroy_event_channel")) == 1


def test_mkey_create_destroy(mlx5_fake):
    def body(fake):
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        ctx = mlx5.open_device("fake0")
        pd = ctx.alloc_pd()
        mk = mlx5.create_mkey(pd, mlx5.MKEY_INIT_ATTR_FLAGS_INDIRECT, 8)
        assert isinstance(mk, mlx5.Mkey)
        out = [type(mk).__name__, mk.lkey, mk.rkey, mk.max_entries, mk.pd is pd]
        e = verbs_error_of(lambda: mlx5.create_mkey(pd, 0, 8))
        out += [e.errno, e.operation]
        out.append(verbs_error_of(pd.close).errno)
        mk.close()
        out.append(verbs_error_of(lambda: mk.lkey).errno)
        mk2 = mlx5.create_mkey(pd)
        out.append(verbs_error_of(pd.close).errno)
        mk2.close()
        pd.close()
        ctx.close()
        return out

    res = mlx5_fake.run(body)
    assert res.ok() == ["Mkey", 0x1234, 0x5678, 8, True, 22, "mlx5dv_create_mkey", 16, 9, 16]
    assert res.live == 0, res.live_report
    c1, c2, c3 = res.mlx5_calls("mlx5dv_create_mkey")
    assert (c1["attr.create_flags"], c1["attr.max_entries"]) == (1, 8)
    assert c1["attr"] == struct.pack("<QIH2x", c1["attr.pd"], 1, 8)
    assert c1["attr.pd"] != 0
    assert (c3["attr.create_flags"], c3["attr.max_entries"]) == (1, 1)
    assert [r["lkey"] for r in res.mlx5_calls("mlx5dv_destroy_mkey")] == [0x1234, 0x1235]


def _mr_list_body(fake):
    import ibverbs
    from support.rdma import verbs_error_of
    from ibverbs import VerbsError, enums, mlx5

    F = enums.QPCreateSendOpsFlags
    ctx = mlx5.open_device("fake0")
    pd, cq = ctx.alloc_pd(), ctx.create_cq(8)
    qp = pd.create_qp_ex(ibverbs.QPInitAttrEx(cq, send_ops_flags=F.SEND, max_send_sge=2))
    mk = mlx5.create_mkey(pd, 1, 4)
    sges = [ibverbs.SGE(0x1000, 64, 7), ibverbs.SGE(0x2000, 128, 8)]
    A = ibverbs.AccessFlags
    out = []
    e = verbs_error_of(lambda: mlx5.wr_mr_list(qp, mk, A.LOCAL_WRITE, sges))
    out.append([e.errno, e.operation])
    qp.wr_start()
    try:
        mlx5.wr_mr_list(qp, mk, A.LOCAL_WRITE | A.REMOTE_READ, sges)
        out.append("posted")
    except VerbsError as e:
        out.append([e.errno, e.operation])
    for bad in ([], ["x"]):
        try:
            mlx5.wr_mr_list(qp, mk, 0, bad)
        except (TypeError, ValueError) as e:
            out.append(type(e).__name__)
    qp.wr_abort()
    plain = pd.create_qp(ibverbs.QPInitAttr(cq))
    try:
        mlx5.wr_mr_list(plain, mk, 0, sges)
    except TypeError as e:
        out.append(type(e).__name__)
    for o in (plain, mk, qp, cq, pd, ctx):
        o.close()
    return out


def test_wr_mr_list_through_the_qp_ex_pointers(mlx5_fake):
    res = mlx5_fake.run(_mr_list_body)
    assert res.ok() == [[22, "mlx5dv_wr_mr_list"], "posted", "ValueError", "TypeError", "TypeError"]
    rec = res.mlx5_one("mlx5dv_wr_mr_list")
    assert (rec["mkey.lkey"], rec["access_flags"], rec["num_sges"]) == (0x1234, 5, 2)
    assert rec["sge"] == struct.pack("<QII", 0x1000, 64, 7) + struct.pack("<QII", 0x2000, 128, 8)
    # the converter ran only after mlx5dv_is_supported said yes
    verbs = [r.verb for r in res.mlx5]
    i = verbs.index("mlx5dv_qp_ex_from_ibv_qp_ex")
    assert "mlx5dv_is_supported" in verbs[:i]


def test_wr_mr_list_refuses_a_foreign_device_and_a_qp_without_mr_list(mlx5_fake):
    # the device is not mlx5: the unchecked converter is never called
    res = mlx5_fake.run(_foreign_body)
    assert res.ok() == [95, "mlx5dv_wr_mr_list"]
    assert res.mlx5_calls("mlx5dv_qp_ex_from_ibv_qp_ex") == []
    # a QP made without MLX5DV_QP_EX_WITH_MR_LIST: no pointer, EOPNOTSUPP
    res = mlx5_fake.run(_mr_list_body, fail={"mlx5dv_wr_mr_list": 1})
    assert res.ok()[1] == [95, "mlx5dv_wr_mr_list"]


def _foreign_body(fake):
    import os

    import ibverbs
    from ibverbs import VerbsError, enums, mlx5

    F = enums.QPCreateSendOpsFlags
    ctx = ibverbs.Context("fake0")
    pd, cq = ctx.alloc_pd(), ctx.create_cq(8)
    qp = pd.create_qp_ex(ibverbs.QPInitAttrEx(cq, send_ops_flags=F.SEND))
    # the mkey from the fake: its create does not check the device
    mk = mlx5.create_mkey(pd, 1, 4)
    os.environ["IBVERBS_FAKE_MLX5_UNSUPPORTED"] = "fake0"
    qp.wr_start()
    try:
        mlx5.wr_mr_list(qp, mk, 0, [ibverbs.SGE(0x1000, 64, 7)])
    except VerbsError as e:
        return [e.errno, e.operation]
    finally:
        qp.wr_abort()
    return None


def test_umem_repr_gc_refusals_and_a_failed_reg_ex(mlx5_fake):
    def body(fake):
        import gc

        import ibverbs
        from ibverbs import mlx5

        ctx = mlx5.open_device("fake0", mlx5.CONTEXT_FLAGS_DEVX)
        buf = bytearray(4096)
        try:  # armed: the fake fails it
            mlx5.devx_umem_reg_ex(ctx, bytearray(8192), 1, 1 << 12)
        except ibverbs.VerbsError as e:
            failed = [e.errno, e.operation, str(e)]
        umem = mlx5.devx_umem_reg(ctx, buf, ibverbs.AccessFlags.LOCAL_WRITE)
        out = {"repr": repr(umem), "gc": any(r is umem.owner for r in gc.get_referents(umem))}
        out["failed"] = failed
        for call in (
            lambda: mlx5.devx_umem_reg(ctx, buf, "rw"),
            lambda: mlx5.devx_umem_reg_ex(ctx, buf, 1, "4K"),
            lambda: mlx5.devx_query_eqn(ctx, "0"),
            lambda: mlx5.devx_qp_modify(ctx, b"", 16),
            lambda: mlx5.devx_qp_query(ctx, b"", 16),
        ):
            try:
                call()
            except TypeError as e:
                out.setdefault("type", []).append(str(e))
        umem.close()
        out["closed"] = repr(umem)
        ctx.close()
        return out

    res = mlx5_fake.run(body, fail={"mlx5dv_devx_umem_reg_ex": 12})
    out = res.ok()
    assert out["repr"] == "<ibverbs.mlx5.DevxUmem umem_id=16 size=4096>"
    assert out["gc"] is True
    assert len(out["type"]) == 5
    assert out["failed"][:2] == [12, "mlx5dv_devx_umem_reg_ex"]
    # the values, not the format codes (PyUnicode_FromFormat has no %llx)
    assert re.search(
        r"Cannot allocate memory: addr=0x[0-9a-f]+ size=8192 access=0x1 pgsz_bitmap=0x1000 ",
        out["failed"][2],
    ), out["failed"][2]
    assert out["closed"] == "<ibverbs.mlx5.DevxUmem closed>"
