"""mlx5.init_obj and mlx5.get_cqe_opcode against the fake libmlx5.so.1:
the struct mlx5dv_obj the binding passes, the records it builds, and the
CQ handed to its user refusing to be polled.  The fake is a double, not
evidence that anything works on an mlx5 device."""

from __future__ import annotations

import pytest

from support.process import can_fail_allocations


def test_init_obj_records_and_user_owned_cq(mlx5_fake):
    def body(fake):
        import ibverbs
        from support.rdma import verbs_error_of
        from ibverbs import mlx5

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = mlx5.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=16))
            plain = ctx.create_cq(8)
            qp = mlx5.create_qp(pd, ibverbs.QPInitAttrEx(cq))
            srq = pd.create_srq(8)
            q = mlx5.init_obj(qp)
            out["qp"] = [
                q.kind,
                q.obj is qp,
                q.sq_wqe_cnt,
                q.sq_stride,
                len(q.sq),
                q.sq.readonly,
                q.sq[0],
                len(q.rq),
                q.sqn,
                q.comp_mask,
                q.sq_buf - q.rq_buf,
                bytes(q.dbrec_view).hex(),
            ]
            out["polls_before"] = cq.poll()
            c = mlx5.init_obj(cq)
            out["cq"] = [c.kind, c.cqn, c.cqe_cnt, c.cqe_size, len(c.ring), c.ring.readonly]
            out["opcode"] = mlx5.get_cqe_opcode(c.ring[64:128])
            refused = []
            for f in (cq.poll, lambda: cq.poll_count(1), cq.start_poll):
                try:
                    f()
                except ValueError as e:
                    refused.append(str(e))
            out["refused"] = refused
            c2 = mlx5.init_obj(plain)
            try:
                plain.poll()
            except ValueError as e:
                out["plain_refused"] = "init_obj" in str(e)
            try:
                plain.poll_into(wr_id=bytearray(8))
            except ValueError as e:
                out["poll_into_refused"] = "init_obj" in str(e)
            s = mlx5.init_obj(srq)
            out["srq"] = [s.kind, s.srqn, s.stride, len(s.ring), len(s.dbrec_view)]
            p = mlx5.init_obj(pd)
            out["pd"] = [p.kind, p.pdn]
            try:
                p.pdn = 1
            except AttributeError:
                out["readonly"] = True
            try:
                mlx5.init_obj(ctx)
            except TypeError as e:
                out["typeerr"] = str(e)
            del q, c, c2, s, p
            for o in (qp, srq, cq, plain):
                o.close()
            out["ebadf"] = verbs_error_of(lambda: mlx5.init_obj(qp)).errno
        return out

    res = mlx5_fake.run(body)
    out = res.ok()
    assert out["qp"] == [
        "qp",
        True,
        8,
        64,
        512,
        True,
        0,
        256,
        4,
        3,
        1024,
        "1100000022000000",
    ]
    assert out["polls_before"] == []
    assert out["cq"] == ["cq", 0x77, 16, 64, 1024, True]
    assert out["opcode"] == 127 >> 4  # byte 63 of the second CQE: 127
    assert len(out["refused"]) == 3 and all("mlx5.init_obj()" in m for m in out["refused"])
    assert out["plain_refused"] is True
    assert out["poll_into_refused"] is True
    assert out["srq"] == ["srq", 0x55, 32, 256, 4]
    assert out["pd"] == ["pd", 0x33] and out["readonly"] is True
    assert "obj must be a QP, CQ, SRQ, PD or DM" in out["typeerr"]
    assert out["ebadf"] == 9
    recs = res.mlx5_calls("mlx5dv_init_obj")
    assert [r["obj_type"] for r in recs] == [1, 2, 2, 4, 0x40]
    assert recs[0]["qp.out.comp_mask"] == 7  # UAR offset, raw handles, TIR address
    assert recs[0]["qp.in"] != 0
    assert recs[3]["srq.out.comp_mask"] == 1
    # struct mlx5dv_obj: only the pair of the object's type is set
    assert recs[4]["obj_bytes"][:96] == bytes(96)
    assert not res.mlx5_calls("mlx5dv_init_obj@MLX5_1.0")


@pytest.mark.parametrize(
    "cqe,want", [(bytes(63) + b"\xd3", 13), (bytearray(63) + b"\x20", 2), (bytes(64), 0)]
)
def test_get_cqe_opcode(cqe, want):
    from ibverbs import mlx5

    assert mlx5.get_cqe_opcode(cqe) == want
    assert mlx5.get_cqe_opcode(memoryview(bytes(cqe))) == want


def test_get_cqe_opcode_refuses():
    from ibverbs import mlx5

    with pytest.raises(ValueError):
        mlx5.get_cqe_opcode(bytes(32))
    with pytest.raises(TypeError):
        mlx5.get_cqe_opcode("x" * 64)


def test_get_cqe_opcode_refuses_no_argument_and_non_buffers():
    from ibverbs import mlx5

    with pytest.raises(TypeError):
        mlx5.get_cqe_opcode()
    with pytest.raises(TypeError, match="cannot convert 'object' object to bytes"):
        mlx5.get_cqe_opcode(object())


def test_init_obj_dm_empty_rq_failure_and_each_allocation_failing(mlx5_fake):
    """A DM's record; a QP on an SRQ, whose receive queue libmlx5 leaves
    empty (None, not a view); the function's failure named; each
    allocation of each kind's record failing in turn (MemoryError, nothing
    else, where _testcapi can fail allocations); no argument at all."""

    def body(fake, sweep):
        import ibverbs
        from ibverbs import mlx5
        from support.nomem import each_allocation_fails

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            dm = ctx.alloc_dm(4096)
            d = mlx5.init_obj(dm)
            out["dm"] = [d.kind, d.obj is dm, d.length, d.comp_mask, d.remote_va, len(d.view)]
            out["dm_view"] = bytes(d.view[:4]).hex()
            cq = ctx.create_cq(8)
            srq = pd.create_srq(8)
            qp = pd.create_qp(ibverbs.QPInitAttr(cq, srq=srq))
            q = mlx5.init_obj(qp)
            out["on_srq"] = [q.rq, q.rq_wqe_cnt, q.rq_buf, len(q.sq)]
            try:
                mlx5.init_obj()
            except TypeError as e:
                out["noarg"] = str(e)
            sweeps, r = {}, None
            for name, o in (("qp", qp), ("cq", cq), ("srq", srq), ("pd", pd), ("dm", dm)):
                if sweep:
                    r = each_allocation_fails(lambda o=o: mlx5.init_obj(o))
                    sweeps[name] = [r["failed"] > 0, r["other"], r["value"].kind]
            out["sweeps"] = sweeps
            del d, q, r
            for o in (qp, srq, cq, dm):
                o.close()
        return out

    sweep = can_fail_allocations()
    res = mlx5_fake.run(body, sweep)
    out = res.ok()
    # the fake's DM: 128 bytes of its ring at offset 2048 (bytes count up)
    assert out["dm"] == ["dm", True, 128, 1, 0xABC000, 128]
    assert out["dm_view"] == "00010203"
    assert out["on_srq"] == [None, 0, 0, 512]
    assert "obj" in out["noarg"]
    for kind in ("qp", "cq", "srq", "pd", "dm") if sweep else ():
        assert out["sweeps"][kind] == [True, [], kind], kind
    recs = res.mlx5_calls("mlx5dv_init_obj")
    assert recs[0]["obj_type"] == 0x10 and recs[0]["dm.out.comp_mask"] == 1


def test_init_obj_failure_names_the_function(mlx5_fake):
    def body(fake):
        import ibverbs
        from ibverbs import mlx5
        from support.rdma import verbs_error_of

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            e = verbs_error_of(lambda: mlx5.init_obj(pd))
            again = mlx5.init_obj(pd).pdn  # only the first call failed
        return [e.errno, str(e), again]

    import errno

    res = mlx5_fake.run(body, fail={"mlx5dv_init_obj": (errno.EPROTO, 1)})
    out = res.ok()
    assert out[0] == errno.EPROTO
    assert "mlx5dv_init_obj" in out[1] and "a pd" in out[1]
    assert out[2] == 0x33
    first, second = res.mlx5_calls("mlx5dv_init_obj")
    assert first["injected_errno"] == errno.EPROTO and "injected_errno" not in second
