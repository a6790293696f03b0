"""SendBatch paths against the recording double that no other host test
takes: SEND, SEND_WITH_IMM and RDMA READ batches through a QPEx's
builders, a QPEx whose send_ops_flags lack the opcode, a start past the
rows, progress on a CQEx or with a piece past the depth, updates that
move rows across the inline threshold, an AH sequence that fails, and
the repr."""

from __future__ import annotations

import pytest

from ibverbs import enums


def _batch_body(fake):
    import ctypes

    from support.outcomes import result, rts

    import ibverbs as ib
    from ibverbs import SendBatch, enums

    W, F = enums.WROpcode, enums.QPCreateSendOpsFlags
    buf = ctypes.create_string_buffer(65536)
    ctx = ib.Context("fake0")
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(256)
    mr = pd.reg_mr(ctypes.addressof(buf), 65536, enums.AccessFlags.LOCAL_WRITE)

    def outcome(fn):
        fake.clear()
        return result(fn)

    def qpex(ops, send_cq=cq):
        attr = ib.QPInitAttrEx(send_cq, send_ops_flags=ops, max_send_wr=64, max_inline_data=64)
        q = pd.create_qp_ex(attr)
        q.to_init(1)
        q.to_rtr(ib.QPInfo(5, 0, 0, bytes(16), 1, 3), sgid_index=0)
        q.to_rts()
        return q

    def builders():
        return [r.verb for r in fake.take() if r.verb.startswith("wr_")]

    local = (ctypes.c_uint64 * 3)(0, 64, 128)
    out = {}
    qx = qpex(F.SEND | F.SEND_WITH_IMM | F.RDMA_READ)
    send = SendBatch(mr, local, 16, opcode=W.SEND, imm_data=7)
    read = SendBatch(mr, local, 16, local, 0x33, opcode=W.RDMA_READ)
    out["repr"] = [repr(send), repr(SendBatch(None, local, 16, opcode=W.SEND, lkey=1))]
    out["send"] = [outcome(lambda: send.post(qx)), builders()]
    out["read"] = [outcome(lambda: read.post(qx)), builders()]
    cq.poll(64)
    # A QPEx without the opcode's builder posts through ibv_post_send.
    qw = qpex(F.RDMA_WRITE)
    out["lacking"] = [outcome(lambda: send.post(qw)), [r.verb for r in fake.records()]]
    cq.poll(64)
    out["start"] = outcome(lambda: send.post(qx, start=4))

    # progress polls a plain CQ, within the depth.
    cqx = ctx.create_cq_ex(ib.CQInitAttrEx(64))
    on_cqx = qpex(F.SEND, send_cq=cqx)
    out["progress cqex"] = outcome(lambda: send.progress(on_cqx))
    plain = rts(pd.create_qp(ib.QPInitAttr(cq, max_send_wr=64)))
    out["progress piece"] = outcome(lambda: send.progress(plain, 2, 16))
    out["progress piece posts"] = [r["count"] for r in fake.records() if r.verb == "post_send"]

    # Updates: lengths crossing the inline threshold set and clear the flag.
    inl = SendBatch(mr, local, 8, opcode=W.SEND, inline_threshold=32)
    inl.update(lengths=(ctypes.c_uint32 * 3)(64, 8, 64))
    out["inline"] = outcome(lambda: inl.post(plain))
    rec = fake.one("post_send")
    out["inline flags"] = [rec[f"wr[{i}].send_flags"] for i in range(rec["count"])]
    cq.poll(64)
    out["update remote"] = outcome(lambda: send.update(remote=local))

    # A UD batch's AHs: a sequence that fails part way, or too short.
    ah = pd.create_ah(ib.AHAttr(dlid=1, port_num=1))

    class Broken:
        """A sequence whose second item fails."""

        def __len__(self):
            return 3

        def __getitem__(self, i):
            if i:
                raise RuntimeError("no more AHs")
            return ah

    def ud(ahs):
        return SendBatch(mr, local, 16, opcode=W.SEND, ah=ahs, remote_qpn=5, remote_qkey=7)

    out["ahs fail"] = outcome(lambda: ud(Broken()))
    out["ahs short"] = outcome(lambda: ud([ah, ah]))
    out["ahs not ahs"] = outcome(lambda: ud([ah, ah, "ah"]))
    out["ahs ok"] = outcome(lambda: len(ud([ah, ah, ah])))
    for o in (on_cqx, cqx, plain, qx, qw, ah, mr, cq, pd, ctx):
        o.close()
    return out


@pytest.fixture(scope="module")
def batch(recording):
    res = recording.run(_batch_body)
    return res, res.ok()


INL = int(enums.SendFlags.INLINE)
SIG = int(enums.SendFlags.SIGNALED)


def test_send_read_and_imm_batches_through_the_builders(batch):
    _, out = batch
    assert out["send"] == [
        3,
        ["wr_start", "wr_send", "wr_set_sge", "wr_send", "wr_set_sge", "wr_send_imm",
         "wr_set_sge", "wr_complete"],
    ]  # fmt: skip
    assert out["read"] == [3, ["wr_start"] + ["wr_rdma_read", "wr_set_sge"] * 3 + ["wr_complete"]]
    # Without SEND_WITH_IMM among its send_ops_flags: ibv_post_send.
    assert out["lacking"] == [3, ["qp_to_qp_ex", "post_send"]]


def test_refusals(batch):
    _, out = batch
    assert out["start"] == ["ValueError", "start 4 is past the batch's 3 rows"]
    assert out["progress cqex"] == [
        "ValueError",
        "progress() polls a plain CQ: this QP's send CQ is a CQEx",
    ]
    assert out["update remote"] == ["ValueError", "a SEND batch has no remote or rkey"]


def test_progress_cuts_the_piece_to_the_depth(batch):
    _, out = batch
    assert out["progress piece"] == 3 and out["progress piece posts"] == [2, 1]


def test_an_update_moves_rows_across_the_inline_threshold(batch):
    _, out = batch
    assert out["inline"] == 3
    assert out["inline flags"] == [0, INL, SIG]


def test_ud_ahs_that_fail(batch):
    res, out = batch
    assert out["ahs fail"] == ["RuntimeError", "no more AHs"]
    assert out["ahs short"] == ["ValueError", "ah has 2 AHs for 3 rows"]
    assert out["ahs not ahs"] == [
        "TypeError",
        "SendBatch row 2: ah must be an AH, not <class 'str'>",
    ]
    assert out["ahs ok"] == 3
    assert res.live == 0, res.live_report


def test_repr(batch):
    _, out = batch
    assert out["repr"] == [
        "<SendBatch of 3 rows, opcode 2>",
        "<SendBatch of 3 rows, opcode 2, by address>",
    ]
