"""ibverbs.efa's less travelled paths against the fake libefa.so.1
(tests/fakes/efa/) on the recording double: queues without rings, entries
without a sender GID, the readers refusing, each allocation of the record
builders failing in turn, a libefa that exports none of the functions,
missing arguments, and the objects' garbage-collector links.  The fake is
a double, not EFA."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from support import load_path
from support.process import can_fail_allocations

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def libefa(tmp_path_factory, recording):
    build = load_path("fake_efa_build", HERE.parent / "fakes" / "efa" / "build.py")
    return build.build(tmp_path_factory.mktemp("efa7"))


def test_rings_none_sgid_none_and_readers_in_a_session(recording, libefa):
    def body(fake, lib):
        import ctypes
        import errno as E
        import gc
        import os

        import ibverbs
        from ibverbs import efa
        from support.rdma import verbs_error_of

        os.environ["IBVERBS_LIBEFA"] = lib
        flib = ctypes.CDLL(lib)
        flib.efa_fake_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]
        out = {}
        W = efa.WCFlags
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            mr = pd.reg_mr(0x100000, 64, ibverbs.AccessFlags.LOCAL_WRITE)
            cq = efa.create_cq(
                ctx, ibverbs.CQInitAttrEx(cqe=16), W.WITH_SGID | W.WITH_IS_UNSOLICITED
            )
            bare = efa.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=16))
            ops = ibverbs.QPCreateSendOpsFlags
            qp = efa.create_qp(pd, ibverbs.QPInitAttrEx(cq, send_ops_flags=ops.SEND))
            out["refs"] = [ctx in gc.get_referents(cq), pd in gc.get_referents(qp)]
            for c in (cq, bare):
                u = pd.create_qp(ibverbs.QPInitAttr(c, qp_type=ibverbs.QPType.UD))
                u.to_init(1, qkey=1)
                u.post_recv(ibverbs.RecvWR(wr_id=5, sg_list=[mr.sge()]))
                u.post_recv(ibverbs.RecvWR(wr_id=6, sg_list=[mr.sge()]))
                u.close()
            try:
                cq.is_unsolicited()
            except ValueError as e:
                out["unsol_outside"] = str(e)
            assert cq.start_poll()
            out["entry"] = [cq.is_unsolicited(), str(cq.read_sgid())]
            flib.efa_fake_shape(1, 0)
            assert cq.next_poll()
            out["no_sgid"] = cq.read_sgid()
            cq.end_poll()
            assert bare.start_poll()
            e = verbs_error_of(bare.read_sgid)
            out["bare"] = [e.errno, "WITH_SGID" in str(e)]
            bare.end_poll()
            # a QP made without WRFlags.WITH_PROCESSING_HINTS
            qp.wr_start()
            qp.wr_send()
            e = verbs_error_of(lambda: qp.wr_set_processing_hints(1))
            out["hints"] = [e.errno, e.operation]
            qp.wr_abort()
            flib.efa_fake_shape(0, 1)
            a = cq.query()
            sq, rq = qp.query_wqs()
            out["no_rings"] = [a.ring, a.doorbell_view, sq.ring, sq.doorbell_view, rq.ring]
            flib.efa_fake_shape(1, 1)
            cc = efa.create_comp_cntr(ctx, comp_addr=0x1000, err_addr=0x2000)
            cc.close()
            flib.efa_fake_fail(b"create_comp_cntr", E.ENOMEM)
            e = verbs_error_of(lambda: efa.create_comp_cntr(ctx, err_addr=0x2000))
            out["cc_fail"] = [e.errno, e.operation, "flags=0x2" in str(e)]
            flib.efa_fake_fail(b"create_driver_qp", E.ENOMEM)
            e = verbs_error_of(lambda: efa.create_driver_qp(pd, ibverbs.QPInitAttr(cq)))
            out["dqp_fail"] = [e.errno, e.operation]
            del a, sq, rq
            for o in (qp, bare, cq):
                o.close()
            out["closed"] = [
                verbs_error_of(f).errno for f in (cq.read_sgid, cq.is_unsolicited, cq.query)
            ]
            mr.close()
        return out

    res = recording.run(body, libefa)
    out = res.ok()
    assert out["refs"] == [True, True]
    assert "outside a start_poll() session" in out["unsol_outside"]
    assert out["entry"] == [True, "f0f1:f2f3:f4f5:f6f7:f8f9:fafb:fcfd:feff"]
    assert out["no_sgid"] is None
    assert out["bare"] == [errno.EOPNOTSUPP, True]
    assert out["hints"] == [errno.EOPNOTSUPP, "efadv_wr_set_processing_hints"]
    assert out["no_rings"] == [None] * 5
    assert out["cc_fail"] == [errno.ENOMEM, "efadv_create_comp_cntr", True]
    assert out["dqp_fail"] == [errno.ENOMEM, "efadv_create_driver_qp"]
    assert out["closed"] == [errno.EBADF] * 3
    assert res.live == 0, res.live_report


@pytest.fixture(scope="module")
def libefa_2(tmp_path_factory, recording):
    build = load_path("fake_efa_build", HERE.parent / "fakes" / "efa" / "build.py")
    return build.build(tmp_path_factory.mktemp("efa2p"), max_node=2)


def test_a_libefa_without_the_functions_refuses_each(recording, libefa_2, tmp_path):
    """The recording double as libefa (it loads, and exports no efadv_*
    function): each module function is EOPNOTSUPP naming its function and
    the rdma-core release; a libefa that is not there: ImportError from
    each; then a libefa of EFA_1.2 (rdma-core 43): the methods whose
    functions came later refuse as the first."""

    def body(fake, lib):
        import os

        import ibverbs
        from ibverbs import efa
        from support.rdma import verbs_error_of

        os.environ["IBVERBS_LIBEFA"] = lib or os.environ["IBVERBS_LIBIBVERBS"]
        absent = lib is not None and not os.path.exists(lib)
        out = []
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = ctx.create_cq(4)
            mr = pd.reg_mr(0x100000, 64)
            ah = pd.create_ah(ibverbs.AHAttr(dlid=1, port_num=1))
            if lib is None or absent:
                calls = [
                    lambda: efa.query_device(ctx),
                    lambda: efa.get_max_rq_depth(ctx, 1),
                    lambda: efa.query_ah(ah),
                    lambda: efa.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=4)),
                    lambda: efa.create_qp(pd, ibverbs.QPInitAttrEx(cq)),
                    lambda: efa.create_driver_qp(pd, ibverbs.QPInitAttr(cq)),
                ]
            else:
                xcq = efa.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=4))
                ops = ibverbs.QPCreateSendOpsFlags
                qp = efa.create_qp(pd, ibverbs.QPInitAttrEx(xcq, send_ops_flags=ops.SEND))
                qp.wr_start()
                qp.wr_send()
                calls = [
                    xcq.query,
                    qp.query_wqs,
                    lambda: qp.wr_set_processing_hints(1),
                    lambda: efa.get_max_rq_depth(ctx, 1),
                ]
            for call in calls:
                if absent:
                    try:
                        call()
                    except ImportError as e:
                        out.append(["ImportError", "ibverbs-providers" in str(e)])
                    continue
                e = verbs_error_of(call)
                out.append([e.errno, e.operation, str(e).partition("not supported: ")[2]])
            if lib is not None and not absent:
                qp.wr_abort()
                qp.close()
                xcq.close()
            for o in (ah, mr, cq):
                o.close()
        return out

    def missing(lib, names):
        return [
            [
                errno.EOPNOTSUPP,
                f,
                f"{f} is not exported by the loaded {lib} (needs rdma-core {v} or newer)",
            ]
            for f, v in names
        ]

    out = recording.run(body, None).ok()
    assert out == missing(
        recording.lib,
        (
            ("efadv_query_device", 26),
            ("efadv_get_max_rq_depth", 63),
            ("efadv_query_ah", 26),
            ("efadv_create_cq", 43),
            ("efadv_create_qp_ex", 26),
            ("efadv_create_driver_qp", 24),
        ),
    )
    out = recording.run(body, str(tmp_path / "libefa.so.1")).ok()
    assert out == [["ImportError", True]] * 6
    out = recording.run(body, libefa_2).ok()
    assert out == missing(
        libefa_2,
        (
            ("efadv_query_cq", 59),
            ("efadv_query_qp_wqs", 59),
            ("efadv_qp_from_ibv_qp_ex", 64),
            ("efadv_get_max_rq_depth", 63),
        ),
    )


# The module functions of ibverbs.efa that take arguments.
FUNCTIONS = (
    "query_device",
    "get_max_sq_depth",
    "get_max_rq_depth",
    "query_ah",
    "query_mr",
    "create_comp_cntr",
    "create_driver_qp",
    "create_cq",
    "create_qp",
)


def test_each_function_refuses_missing_arguments(recording, libefa):
    def body(fake, lib, names):
        import os

        import ibverbs
        from ibverbs import efa

        os.environ["IBVERBS_LIBEFA"] = lib
        out = []
        for name in names:
            try:
                getattr(efa, name)()
            except TypeError as e:
                out.append([name, str(e)])
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = efa.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=4))
            qp = efa.create_qp(pd, ibverbs.QPInitAttrEx(cq))
            try:
                qp.wr_set_processing_hints()
            except TypeError as e:
                out.append(["wr_set_processing_hints", str(e)])
            qp.close()
            cq.close()
        return out

    out = recording.run(body, libefa, FUNCTIONS).ok()
    assert [o[0] for o in out] == [*FUNCTIONS, "wr_set_processing_hints"]
    assert all("missing" in msg for _, msg in out), out


@pytest.mark.skipif(not can_fail_allocations(), reason="needs _testcapi.set_nomemory")
def test_each_allocation_of_the_records_failing(recording, libefa):
    def body(fake, lib):
        import os

        import ibverbs
        from ibverbs import efa
        from support.nomem import each_allocation_fails

        os.environ["IBVERBS_LIBEFA"] = lib
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            mr = pd.reg_mr(0x100000, 4096, ibverbs.AccessFlags.LOCAL_WRITE)
            ah = efa.create_ah(pd, efa.EndpointInfo(ibverbs.Gid(bytes(range(16))), 7))
            cq = efa.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=16))
            qp = efa.create_qp(pd, ibverbs.QPInitAttrEx(cq))
            calls = {
                "query_device": lambda: efa.query_device(ctx).max_sq_wr,
                "query_ah": lambda: efa.query_ah(ah).ahn,
                "query_mr": lambda: efa.query_mr(mr).recv_ic_id,
                "query_cq": lambda: cq.query().num_entries,
                "query_wqs": lambda: [w.num_entries for w in qp.query_wqs()],
            }
            for name, call in calls.items():
                r = each_allocation_fails(call)
                out[name] = [r["failed"] > 0, r["other"], r["value"]]
            for o in (qp, cq, ah, mr):
                o.close()
        return out

    res = recording.run(body, libefa)
    out = res.ok()
    assert out["query_device"] == [True, [], 4096]
    assert out["query_ah"][:2] == [True, []]
    assert out["query_mr"] == [True, [], 1]
    assert out["query_cq"] == [True, [], 32]
    assert out["query_wqs"] == [True, [], [16, 64]]
    assert res.live == 0, res.live_report


def test_create_ah_and_the_wr_splitters_refuse_bad_arguments(recording):
    from ibverbs import efa

    with pytest.raises(TypeError, match="create_ah: pd must be a PD, not str"):
        efa.create_ah("pd", None)
    with pytest.raises(ValueError, match="length must be >= 0, not -1"):
        efa.write_wrs(0x1000, -1, 7, 0x9000, 9, 4)

    def body(fake):
        import ibverbs
        from ibverbs import efa

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            try:
                efa.create_ah(pd, ("gid", 1))
            except TypeError as e:
                return str(e)

    msg = recording.run(body).ok()
    assert msg == "create_ah: endpoint must be an EndpointInfo, not tuple"


def test_constructors_failing_without_errno(recording, libefa):
    """Each libefa constructor answering NULL with errno 0, as a provider
    may: VerbsError naming it with the binding's fallback, EINVAL, never
    errno 0; the context still usable, nothing left alive."""

    def body(fake, lib):
        import ctypes
        import os

        import ibverbs
        from ibverbs import efa
        from support.rdma import verbs_error_of

        os.environ["IBVERBS_LIBEFA"] = lib
        flib = ctypes.CDLL(lib)
        flib.efa_fake_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = ctx.create_cq(8)
            ops = ibverbs.QPCreateSendOpsFlags
            calls = {
                "create_cq": lambda: efa.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=16)),
                "create_qp_ex": lambda: efa.create_qp(
                    pd, ibverbs.QPInitAttrEx(cq, send_ops_flags=ops.SEND)
                ),
                "create_driver_qp": lambda: efa.create_driver_qp(pd, ibverbs.QPInitAttr(cq)),
                "create_comp_cntr": lambda: efa.create_comp_cntr(ctx, err_addr=0x2000),
            }
            for verb, call in calls.items():
                flib.efa_fake_fail(verb.encode(), -1)  # build.py's NO_ERRNO
                e = verbs_error_of(call)
                out[verb] = [e.errno, e.operation, "Success" in str(e)]
                call().close()  # nothing armed: it works
            cq.close()
        return out

    res = recording.run(body, libefa)
    out = res.ok()
    assert out == {v: [errno.EINVAL, f"efadv_{v}", False] for v in out} and len(out) == 4
    assert res.live == 0, res.live_report
