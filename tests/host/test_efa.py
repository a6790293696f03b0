"""ibverbs.efa against the fake libefa.so.1 (tests/fakes/efa/) on top of the
recording double of libibverbs: what the binding hands libefa (every
argument, the struct bytes and sizes), what it makes of the answers, the
lifetimes and the refusals.  A check of the binding, not evidence that EFA
runs these calls: the fake answers as the device would.  The real libefa
refusing rxe objects: tests/device/test_efa_device.py."""

from __future__ import annotations

import errno
import struct
import sys
from pathlib import Path

import pytest

import ibverbs
from ibverbs import efa
from support import load_path

HERE = Path(__file__).resolve().parent


def _build_mod():
    return load_path("fake_efa_build", HERE.parent / "fakes" / "efa" / "build.py")


@pytest.fixture(scope="module")
def libefa(tmp_path_factory, recording):
    return _build_mod().build(tmp_path_factory.mktemp("efa7"))


@pytest.fixture(scope="module")
def libefa_old(tmp_path_factory, recording):
    return _build_mod().build(tmp_path_factory.mktemp("efa2"), max_node=2)


def test_import_does_not_load_libefa():
    maps = Path("/proc/self/maps").read_text()
    assert "libefa.so" not in maps or "libefa" in str(sys.modules)


def test_endpoint_info_round_trip_and_layout():
    gid = ibverbs.Gid(bytes(range(16)))
    e = efa.EndpointInfo(gid, 0x123456, 0x11111111)
    b = e.to_bytes()
    assert len(b) == 24 == efa.EndpointInfo.SIZE
    assert b[:16] == bytes(range(16))
    assert struct.unpack("!II", b[16:]) == (0x123456, 0x11111111)
    assert efa.EndpointInfo.from_bytes(b) == e
    assert efa.EndpointInfo.from_bytes(bytearray(b)) == e
    for bad in (b[:23], b + b"\0", b""):
        with pytest.raises(ValueError, match="exactly 24 bytes"):
            efa.EndpointInfo.from_bytes(bad)
    with pytest.raises(ValueError):
        efa.EndpointInfo(gid, -1)
    with pytest.raises(TypeError):
        efa.EndpointInfo(gid, "1")


def test_write_and_read_wrs_split_at_max_rdma_size():
    wrs = efa.write_wrs(0x1000, 10, 7, 0x9000, 9, 4, wr_id=100)
    assert [w.sg_list[0].length for w in wrs] == [4, 4, 2]
    assert [w.sg_list[0].addr for w in wrs] == [0x1000, 0x1004, 0x1008]
    assert [w.remote_addr for w in wrs] == [0x9000, 0x9004, 0x9008]
    assert [w.wr_id for w in wrs] == [100, 101, 102]
    assert all(w.opcode == ibverbs.WROpcode.RDMA_WRITE and w.rkey == 9 for w in wrs)
    assert [bool(w.send_flags & ibverbs.SendFlags.SIGNALED) for w in wrs] == [False, False, True]
    r = efa.read_wrs(0, 8, 1, 0, 2, 8)
    assert len(r) == 1 and r[0].opcode == ibverbs.WROpcode.RDMA_READ
    assert len(efa.write_wrs(0, 0, 1, 0, 2, 8)) == 1
    with pytest.raises(ValueError):
        efa.write_wrs(0, 8, 1, 0, 2, 0)


def test_efa_calls_against_the_fake(recording, libefa):
    def body(fake, lib):
        import ctypes
        import errno as E
        import os

        import ibverbs
        from ibverbs import efa

        os.environ["IBVERBS_LIBEFA"] = lib
        flog = ctypes.CDLL(lib)
        flog.efa_fake_log.restype = ctypes.c_char_p
        flog.efa_fake_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]

        def take():
            s = flog.efa_fake_log().decode()
            flog.efa_fake_clear()
            return [ln.split() for ln in s.splitlines()]

        out = {}
        out["status"] = efa.libefa_status()
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            a = efa.query_device(ctx)
            out["dev"] = a._asdict()
            out["sq"] = efa.get_max_sq_depth(ctx, 1, 2, 64, flags=efa.SQDepthFlags.INLINE_WRITE)
            out["rq"] = efa.get_max_rq_depth(ctx, 2)
            mr = pd.reg_mr(0x100000, 4096, ibverbs.AccessFlags.LOCAL_WRITE)
            out["mr"] = efa.query_mr(mr)._asdict()
            ep = efa.EndpointInfo(ibverbs.Gid(bytes(range(16))), 77)
            ah = efa.create_ah(pd, ep)
            out["ahn"] = efa.query_ah(ah).ahn
            out["ah_handle"] = fake.records()[-1].fields.get("handle") if fake.records() else None
            cq = efa.create_cq(
                ctx,
                ibverbs.CQInitAttrEx(cqe=16),
                efa.WCFlags.WITH_SGID | efa.WCFlags.WITH_IS_UNSOLICITED,
            )
            out["cq_type"] = type(cq).__name__, isinstance(cq, ibverbs.CQEx)
            cqa = cq.query()
            out["cqa"] = (
                cqa.entry_size,
                cqa.num_entries,
                cqa.ring[0],
                cqa.ring.readonly,
                len(cqa.ring),
            )
            ops = ibverbs.QPCreateSendOpsFlags
            qp = efa.create_qp(
                pd,
                ibverbs.QPInitAttrEx(cq, send_ops_flags=ops.SEND | ops.RDMA_WRITE),
                flags=efa.QPFlags.UNSOLICITED_WRITE_RECV,
                sl=3,
                wr_flags=efa.WRFlags.WITH_PROCESSING_HINTS,
            )
            out["qp_type"] = type(qp).__name__, isinstance(qp, ibverbs.QPEx), int(qp.qp_type)
            sq, rq = qp.query_wqs()
            out["wqs"] = (
                sq.entry_size,
                sq.num_entries,
                sq.max_batch,
                sq.caps,
                sq.ring[0],
                sq.ring.readonly,
                bytes(sq.doorbell_view) == (0x01020304).to_bytes(4, "little"),
                rq.num_entries,
                sq.qp is qp,
            )
            try:
                qp.wr_set_processing_hints(1)
            except ibverbs.VerbsError as e:
                out["hints_outside"] = e.errno
            qp.wr_start()
            try:
                qp.wr_set_processing_hints(1)
            except ibverbs.VerbsError as e:
                out["hints_no_wr"] = e.errno
            qp.wr_send()
            qp.wr_set_processing_hints(efa.ProcessingHint.BURST_PPS_SENSITIVE)
            qp.wr_abort()
            try:
                cq.read_sgid()
            except ValueError as e:
                out["sgid_outside"] = str(e)
            cc = efa.create_comp_cntr(ctx, comp_addr=0x1000)
            out["cc"] = type(cc).__name__
            dqp = efa.create_driver_qp(pd, ibverbs.QPInitAttr(cq))
            out["dqp"] = type(dqp).__name__
            out["log"] = take()
            flog.efa_fake_fail(b"query_device", E.EOPNOTSUPP)
            try:
                efa.query_device(ctx)
            except ibverbs.VerbsError as e:
                out["refused"] = e.errno, str(e)
            flog.efa_fake_fail(b"create_qp_ex", E.EOPNOTSUPP)
            try:
                efa.create_qp(pd, ibverbs.QPInitAttrEx(cq))
            except ibverbs.VerbsError as e:
                out["qp_refused"] = e.errno, str(e)
            qp.close()
            for call in (qp.query_wqs, lambda: qp.wr_set_processing_hints(1)):
                try:
                    call()
                except ibverbs.VerbsError as e:
                    out.setdefault("ebadf", []).append(e.errno)
            try:
                efa.query_ah(ah) if not ah.close() else None
                efa.query_ah(ah)
            except ibverbs.VerbsError as e:
                out.setdefault("ebadf", []).append(e.errno)
            try:
                efa.query_device(pd)
            except TypeError as e:
                out["typeerr"] = str(e)
            for o in (dqp, cc, cq, mr):
                o.close()
        try:
            efa.query_device(ctx)
        except ibverbs.VerbsError as e:
            out.setdefault("ebadf", []).append(e.errno)
        return out

    res = recording.run(body, libefa)
    assert res.error is None, res.error.get("traceback", res.error)
    v = res.value
    assert v["status"][0] is True and v["status"][1].endswith("libefa.so.1")
    assert v["dev"] == {
        "max_sq_wr": 4096,
        "max_rq_wr": 32768,
        "max_sq_sge": 2,
        "max_rq_sge": 3,
        "inline_buf_size": 32,
        "inline_buf_size_ex": 256,
        "device_caps": 0x7F,
        "max_rdma_size": 1 << 30,
    }
    assert v["sq"] == 4096 // 2 and v["rq"] == 32768 // 3
    assert v["mr"] == {
        "ic_id_validity": 5,
        "recv_ic_id": 1,
        "rdma_read_ic_id": None,
        "rdma_recv_ic_id": 3,
    }
    assert v["cq_type"] == ["CQ", True]
    assert v["cqa"] == [32, 32, 0x5A, True, 1024]
    assert v["qp_type"] == ["QP", True, int(ibverbs.QPType.DRIVER)]
    assert v["wqs"] == [64, 16, 8, 1, 0xAA, True, True, 64, True]
    assert v["hints_outside"] == 22 and v["hints_no_wr"] == 22
    assert "outside a start_poll() session" in v["sgid_outside"]
    assert v["cc"] == "CompCntr" and v["dqp"] == "QP"
    log = {ln[0]: dict(kv.split("=", 1) for kv in ln[1:]) for ln in v["log"]}
    # Each struct: its size is sizeof of rdma-core 65's, every byte zero
    # but the fields the call sets.
    assert (
        log["query_device"]["inlen"] == "32" and log["query_device"]["attr_in"] == "b:" + "00" * 32
    )
    assert log["query_ah"]["inlen"] == "16" and log["query_ah"]["attr_in"] == "b:" + "00" * 16
    assert log["query_mr"]["inlen"] == "16"
    sq_attr = bytes.fromhex(log["get_max_sq_depth"]["attr"][2:])
    assert struct.unpack("<QIIII", sq_attr) == (0, 1, 1, 2, 64)
    assert log["get_max_rq_depth"]["attr"] == "b:" + struct.pack("<QI4x", 0, 2).hex()
    qpa = bytes.fromhex(log["create_qp_ex"]["efa_attr"][2:])
    assert log["create_qp_ex"]["inlen"] == "24"
    assert struct.unpack("<QIHBBQ", qpa) == (0, 0, 1, 3, 0, 1)
    assert log["create_qp_ex"]["attr_ex.qp_type"] == str(0xFF)
    assert int(log["create_qp_ex"]["attr_ex.send_ops_flags"], 16) == int(
        ibverbs.QPCreateSendOpsFlags.SEND | ibverbs.QPCreateSendOpsFlags.RDMA_WRITE
    )
    cqa = bytes.fromhex(log["create_cq"]["efa_attr"][2:])
    assert log["create_cq"]["inlen"] == "56" and struct.unpack("<QQQ", cqa[:24]) == (0, 3, 0)
    assert cqa[24:] == bytes(32)
    assert log["query_qp_wqs"]["inlen"] == "40" and log["query_cq"]["inlen"] == "32"
    assert log["wr_set_processing_hints"]["hints"] == "0x1"
    cca = bytes.fromhex(log["create_comp_cntr"]["efa_attr"][2:])
    assert log["create_comp_cntr"]["inlen"] == "80"
    assert (
        struct.unpack("<QII", cca[:16]) == (0, 1, 0)
        and struct.unpack("<Q", cca[16:24])[0] == 0x1000
    )
    assert cca[24:48] == bytes(24) and cca[48:] == bytes(32)
    assert log["create_driver_qp"]["attr.qp_type"] == str(0xFF)
    assert log["create_driver_qp"]["driver_qp_type"] == "0"
    assert v["refused"][0] == 95 and "efadv_query_device" in v["refused"][1]
    assert v["qp_refused"][0] == 95 and "efadv_create_qp_ex" in v["qp_refused"][1]
    assert v["ebadf"] == [9, 9, 9, 9]
    assert "Context" in v["typeerr"]
    assert res.live == 0


def test_efa_reader_of_the_current_entry(recording, libefa):
    def body(fake, lib):
        import os

        import ibverbs
        from ibverbs import efa

        os.environ["IBVERBS_LIBEFA"] = lib
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            cq = efa.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=16), efa.WCFlags.WITH_SGID)
            qp = pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.UD))
            mr = pd.reg_mr(0x100000, 64, ibverbs.AccessFlags.LOCAL_WRITE)
            qp.to_init(1, qkey=1)
            qp.modify(mask=ibverbs.QPAttrMask.STATE, qp_state=ibverbs.QPState.RTR)
            qp.post_recv(ibverbs.RecvWR(wr_id=5, sg_list=[mr.sge()]))
            assert cq.start_poll()
            out["sgid"] = str(cq.read_sgid())
            try:
                cq.is_unsolicited()
            except ibverbs.VerbsError as e:
                out["unsol"] = e.errno, str(e)
            cq.end_poll()
            cq2 = efa.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=4))
            out["cq2_ok"] = True
            cq2.close()
            qp.close()
            mr.close()
            cq.close()
        return out

    res = recording.run(body, libefa)
    assert res.error is None, res.error.get("traceback", res.error)
    v = res.value
    assert v["sgid"] == str(ibverbs.Gid(bytes(range(0xF0, 0x100))))
    assert v["unsol"][0] == 95 and "WITH_IS_UNSOLICITED" in v["unsol"][1]


def test_missing_symbols_name_function_and_release(recording, libefa_old):
    def body(fake, lib):
        import os

        import ibverbs
        from ibverbs import efa

        os.environ["IBVERBS_LIBEFA"] = lib
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            out["dev"] = efa.query_device(ctx).max_rdma_size
            mr = pd.reg_mr(0x100000, 64)
            for name, call in (
                ("mr", lambda: efa.query_mr(mr)),
                ("sq", lambda: efa.get_max_sq_depth(ctx)),
                ("cc", lambda: efa.create_comp_cntr(ctx)),
            ):
                try:
                    call()
                except ibverbs.VerbsError as e:
                    out[name] = e.errno, str(e)
            mr.close()
        return out

    v = recording.run(body, libefa_old).value
    assert v["dev"] == 1 << 30
    assert v["mr"][0] == 95 and "efadv_query_mr" in v["mr"][1] and "rdma-core 50" in v["mr"][1]
    assert "efadv_get_max_sq_depth" in v["sq"][1] and "rdma-core 63" in v["sq"][1]
    assert "efadv_create_comp_cntr" in v["cc"][1] and "rdma-core 65" in v["cc"][1]


def test_missing_library_names_file_and_package(recording, tmp_path):
    def body(fake, path):
        import os

        import ibverbs
        from ibverbs import efa

        os.environ["IBVERBS_LIBEFA"] = path
        with ibverbs.Context("fake0") as ctx:
            try:
                efa.query_device(ctx)
            except ImportError as e:
                return str(e), efa.libefa_status()[0]
        return None

    msg, ok = recording.run(body, str(tmp_path / "nope" / "libefa.so.1")).value
    assert "libefa" in msg and "ibverbs-providers" in msg and ok is False


def test_efa_queries_failing_name_their_function(recording, libefa):
    def body(fake, lib):
        import ctypes
        import errno as E
        import os

        import ibverbs
        from ibverbs import efa

        os.environ["IBVERBS_LIBEFA"] = lib
        flog = ctypes.CDLL(lib)
        flog.efa_fake_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]
        out = []
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as plain:
            mr = pd.reg_mr(0x100000, 4096, ibverbs.AccessFlags.LOCAL_WRITE)
            ah = efa.create_ah(pd, efa.EndpointInfo(ibverbs.Gid(bytes(range(16))), 7))
            cq = efa.create_cq(ctx, ibverbs.CQInitAttrEx(cqe=16))
            qp = efa.create_qp(pd, ibverbs.QPInitAttrEx(cq))
            calls = {
                "get_max_sq_depth": lambda: efa.get_max_sq_depth(ctx, 1, 2, 64),
                "get_max_rq_depth": lambda: efa.get_max_rq_depth(ctx, 2),
                "query_ah": lambda: efa.query_ah(ah),
                "query_mr": lambda: efa.query_mr(mr),
                "query_qp_wqs": qp.query_wqs,
                "query_cq": cq.query,
            }
            for verb, call in calls.items():
                flog.efa_fake_fail(verb.encode(), E.EOPNOTSUPP)
                try:
                    call()
                    out.append([verb, "no error"])
                except ibverbs.VerbsError as e:
                    out.append([verb, e.errno, e.operation])
                call()  # the next call succeeds
            for bad in (lambda: efa.query_ah(plain), lambda: efa.get_max_rq_depth(pd, 2)):
                try:
                    bad()
                except TypeError as e:
                    out.append(["TypeError", str(e)])
            qp.close()
            cq.close()
            ah.close()
            mr.close()
        return out

    out = recording.run(body, libefa).ok()
    assert out[:6] == [
        [v, errno.EOPNOTSUPP, f"efadv_{v}"]
        for v in (
            "get_max_sq_depth",
            "get_max_rq_depth",
            "query_ah",
            "query_mr",
            "query_qp_wqs",
            "query_cq",
        )
    ]
    assert [o[0] for o in out[6:]] == ["TypeError", "TypeError"]
