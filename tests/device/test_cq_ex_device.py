"""Extended CQs (ibv_create_cq_ex, start/next/end_poll, read_*) and
query_device_ex against a real device (rxe0 in the Soft-RoCE guest)."""

import errno
import gc
import time

import pytest

import ibverbs as ib

from support import GID_INDEX, PORT
from support.rdma import make_rc_pair, mkbuf, poll_until, refused, write_wr
from support.timeouts import scaled

pytestmark = pytest.mark.integration

F = ib.CreateCQWCFlags
STANDARD = F.BYTE_LEN | F.IMM | F.QP_NUM | F.SRC_QP | F.SLID | F.SL | F.DLID_PATH_BITS


def wait_entries(cq, n, timeout=10.0):
    """Raw iteration: the fields of n entries, read with the accessors."""
    got = []
    deadline = time.monotonic() + scaled(timeout)
    while len(got) < n:
        if not cq.start_poll():
            assert time.monotonic() < deadline, f"timed out: {len(got)} of {n}"
            time.sleep(0.001)
            continue
        more = True
        while more:
            e = dict(wr_id=cq.wr_id, status=cq.status, opcode=cq.read_opcode())
            e["wc_flags"] = cq.read_wc_flags()
            e["qp_num"] = cq.read_qp_num()
            e["byte_len"] = cq.read_byte_len()
            e["src_qp"] = cq.read_src_qp()
            e["sl"] = cq.read_sl()
            e["slid"] = cq.read_slid()
            e["dlid_path_bits"] = cq.read_dlid_path_bits()
            e["vendor_err"] = cq.read_vendor_err()
            if e["wc_flags"] & ib.WCFlags.WITH_IMM:
                e["imm"] = cq.read_imm_data()
            got.append(e)
            more = cq.next_poll()
        cq.end_poll()
    return got


def test_cq_ex_is_a_cq(ctx):
    cq = ctx.create_cq_ex(ib.CQInitAttrEx(16, wc_flags=STANDARD))
    assert isinstance(cq, ib.CQ) and isinstance(cq, ib.CQEx)
    assert cq.cqe >= 16
    assert cq.wc_flags == int(STANDARD)
    assert cq.context is ctx and cq.channel is None and not cq.polling
    assert cq.poll(4) == []
    assert cq.poll_count(4) == 0
    assert cq.start_poll() is False  # empty: no session
    assert not cq.polling
    cq.req_notify()
    assert "CQEx" in repr(cq)
    cq.close()
    assert cq.closed and "closed" in repr(cq)
    with pytest.raises(ib.VerbsError) as ei:
        cq.start_poll()
    assert ei.value.errno == errno.EBADF


def test_raw_iteration_send_imm_and_write_imm(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=64, wc_flags=STANDARD)
    src, smr = mkbuf(pd, 256, fill=7)
    dst, dmr = mkbuf(pd, 256)
    qb.post_recv([ib.RecvWR(wr_id=100 + i, sg_list=[dmr.sge(128)]) for i in range(2)])
    qa.post_send(
        ib.SendWR(
            wr_id=1,
            sg_list=[smr.sge(40)],
            opcode=ib.WROpcode.SEND_WITH_IMM,
            send_flags=ib.SendFlags.SIGNALED,
            imm_data=0xDEADBEEF,
        )
    )
    qa.post_send(
        ib.SendWR(
            wr_id=2,
            sg_list=[smr.sge(16)],
            opcode=ib.WROpcode.RDMA_WRITE_WITH_IMM,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=dmr.addr + 128,
            rkey=dmr.rkey,
            imm_data=0x01020304,
        )
    )
    sent = wait_entries(ca, 2)
    assert [e["wr_id"] for e in sent] == [1, 2]
    assert all(e["status"] == ib.WCStatus.SUCCESS for e in sent)
    assert [e["opcode"] for e in sent] == [ib.WCOpcode.SEND, ib.WCOpcode.RDMA_WRITE]
    assert all(e["qp_num"] == qa.qp_num for e in sent)
    recv = wait_entries(cb, 2)
    assert [e["wr_id"] for e in recv] == [100, 101]
    assert recv[0]["opcode"] == ib.WCOpcode.RECV
    assert recv[0]["byte_len"] == 40 and recv[0]["imm"] == 0xDEADBEEF
    assert recv[1]["opcode"] == ib.WCOpcode.RECV_RDMA_WITH_IMM
    assert recv[1]["imm"] == 0x01020304
    assert all(e["qp_num"] == qb.qp_num for e in recv)
    assert bytes(dst[:40]) == bytes([7]) * 40
    assert bytes(dst[128:144]) == bytes([7]) * 16


def test_poll_returns_wcs_with_the_fields(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=64, wc_flags=STANDARD)
    src, smr = mkbuf(pd, 64, fill=3)
    dst, dmr = mkbuf(pd, 64)
    qb.post_recv(ib.RecvWR(wr_id=9, sg_list=[dmr.sge(64)]))
    qa.post_send(
        ib.SendWR(
            wr_id=8,
            sg_list=[smr.sge(24)],
            opcode=ib.WROpcode.SEND_WITH_IMM,
            send_flags=ib.SendFlags.SIGNALED,
            imm_data=77,
        )
    )
    (s,) = poll_until(ca, 1)
    (r,) = poll_until(cb, 1)
    for wc in (s, r):
        assert isinstance(wc, ib.WC) and isinstance(wc, ib.WCEx)
        wc.raise_for_status()
        # Not asked for: None.
        assert wc.completion_ts is None and wc.completion_wallclock_ns is None
        assert wc.cvlan is None and wc.flow_tag is None
    assert s.wr_id == 8 and s.opcode == ib.WCOpcode.SEND and s.qp_num == qa.qp_num
    assert r.wr_id == 9 and r.opcode == ib.WCOpcode.RECV and r.byte_len == 24
    assert r.imm_data == 77 and r.wc_flags & ib.WCFlags.WITH_IMM
    assert r.qp_num == qb.qp_num
    assert "wr_id=9" in repr(r)


def test_ud_src_qp_and_sl(ctx, pd):
    """UD receives carry the sender's QP number (SRC_QP) and its SL."""
    cq = ctx.create_cq_ex(ib.CQInitAttrEx(32, wc_flags=STANDARD))
    qps = []
    for psn in (0x10, 0x20):
        qp = pd.create_qp(
            ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.UD, max_send_wr=8)
        )
        qp.to_init(PORT, 0)
        qp.to_rtr(None)
        qp.to_rts(psn)
        qps.append(qp)
    qa, qb = qps
    gid = ctx.query_gid(PORT, GID_INDEX)
    ah = pd.create_ah(ib.AHAttr(dgid=gid, sgid_index=GID_INDEX, port_num=PORT))
    src, smr = mkbuf(pd, 64, fill=5)
    dst, dmr = mkbuf(pd, 40 + 64)
    qb.post_recv(ib.RecvWR(wr_id=20, sg_list=[dmr.sge()]))
    qa.post_send(
        ib.SendWR(
            wr_id=10,
            sg_list=[smr.sge(32)],
            send_flags=ib.SendFlags.SIGNALED,
            ah=ah,
            remote_qpn=qb.qp_num,
            remote_qkey=0x11111111,
        )
    )
    got = {e["wr_id"]: e for e in wait_entries(cq, 2)}
    assert got[10]["opcode"] == ib.WCOpcode.SEND and got[10]["qp_num"] == qa.qp_num
    r = got[20]
    assert r["opcode"] == ib.WCOpcode.RECV and r["qp_num"] == qb.qp_num
    assert r["src_qp"] == qa.qp_num
    assert r["byte_len"] == 40 + 32 and r["wc_flags"] & ib.WCFlags.GRH
    assert bytes(dst[40:72]) == bytes([5]) * 32
    qa.close()
    qb.close()
    ah.close()


def test_poll_count_and_a_failed_completion(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=64, wc_flags=STANDARD)
    src, smr = mkbuf(pd, 64)
    # A write to a bad rkey fails with REM_ACCESS_ERR (the QP then errors).
    qa.post_send(write_wr(smr, 8, smr, wr_id=5, rkey=(smr.rkey + 0x100) & 0xFFFFFFFF))
    deadline = time.monotonic() + 10
    while True:
        try:
            n = ca.poll_count(4)
        except ib.CompletionError as e:
            assert e.wc.wr_id == 5 and e.wc.status != ib.WCStatus.SUCCESS
            assert isinstance(e.wc, ib.WCEx)
            break
        assert n == 0 and time.monotonic() < deadline


def test_accessor_misuse(ctx, pd):
    qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=64, wc_flags=F.BYTE_LEN)
    # Outside a session: every accessor raises before the provider.
    for name in ("read_opcode", "read_byte_len", "read_vendor_err", "read_wc_flags"):
        with pytest.raises(ValueError, match="outside a start_poll"):
            getattr(ca, name)()
    for prop in ("wr_id", "status"):
        with pytest.raises(ValueError):
            getattr(ca, prop)
    with pytest.raises(ValueError):
        ca.next_poll()
    with pytest.raises(ValueError):
        ca.end_poll()
    src, smr = mkbuf(pd, 64)
    for i in range(2):
        qa.post_send(write_wr(smr, 8, smr, at=32, wr_id=i))
    deadline = time.monotonic() + 10
    while not ca.start_poll():
        assert time.monotonic() < deadline
    try:
        assert ca.polling and ca.wr_id == 0
        # Fields not asked for in wc_flags.
        for name in ("read_qp_num", "read_imm_data", "read_src_qp", "read_slid", "read_sl"):
            with pytest.raises(ValueError, match="wc_flags"):
                getattr(ca, name)()
        for name in ("read_completion_ts", "read_cvlan", "read_flow_tag"):
            with pytest.raises(ValueError, match="wc_flags"):
                getattr(ca, name)()
        assert ca.read_byte_len() >= 0
        # Neither a second session, nor the classic poll, nor close.
        with pytest.raises(ValueError, match="end_poll"):
            ca.start_poll()
        with pytest.raises(ValueError, match="end_poll"):
            ca.poll(4)
        with pytest.raises(ValueError, match="end_poll"):
            ca.poll_count(4)
        with pytest.raises(ib.VerbsError) as ei:
            ca.close()
        assert ei.value.errno == errno.EBUSY and not ca.closed
        while ca.next_poll():
            pass
        # Past the last entry: no current entry to read.
        with pytest.raises(ValueError, match="no current entry"):
            ca.read_opcode()
    finally:
        ca.end_poll()
    assert not ca.polling


def test_session_left_open_is_ended_by_dealloc_and_exit(ctx, pd):
    src, smr = mkbuf(pd, 64)
    for use_with in (False, True):
        qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=64, wc_flags=STANDARD)
        qa.post_send(write_wr(smr, 8, smr, at=8, wr_id=1))
        deadline = time.monotonic() + 10
        while not ca.start_poll():
            assert time.monotonic() < deadline
        qa.close()
        qb.close()
        cb.close()
        if use_with:
            with ca:
                assert ca.polling
            assert ca.closed and not ca.polling
        else:
            del qa, ca  # the deallocator ends the session, then destroys
            gc.collect()


def test_completion_channel_returns_the_cq_ex(ctx, pd):
    ch = ctx.create_comp_channel()
    qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=64, wc_flags=STANDARD, channel=ch)
    assert ca.channel is ch
    src, smr = mkbuf(pd, 64)
    ca.req_notify()
    qa.post_send(write_wr(smr, 8, smr, at=8, wr_id=3))
    got = ch.get_cq_event()
    assert got is ca
    ca.ack_events(1)
    (wc,) = poll_until(ca, 1)
    assert wc.wr_id == 3


@pytest.mark.parametrize(
    "flag, field",
    [
        (F.COMPLETION_TIMESTAMP, "completion_ts"),
        (F.COMPLETION_TIMESTAMP_WALLCLOCK, "completion_wallclock_ns"),
    ],
)
def test_completion_timestamps(ctx, pd, flag, field):
    try:
        ctx.create_cq_ex(ib.CQInitAttrEx(16, wc_flags=STANDARD | flag)).close()
    except ib.VerbsError as e:
        assert e.errno in (errno.EOPNOTSUPP, errno.ENOSYS), e
        code = "EOPNOTSUPP" if e.errno == errno.EOPNOTSUPP else "ENOSYS"
        pytest.skip(
            f"{flag.name}: ibv_create_cq_ex answered {code} ({ctx.name} has no completion clock)"
        )
    if flag == F.COMPLETION_TIMESTAMP:
        assert ctx.query_device_ex().completion_timestamp_mask != 0
    qa, ca, qb, cb = make_rc_pair(ctx, pd, cq_size=64, wc_flags=STANDARD | flag)
    src, smr = mkbuf(pd, 64)
    stamps = []
    for i in range(2):
        qa.post_send(write_wr(smr, 8, smr, at=32, wr_id=i))
        (wc,) = poll_until(ca, 1)
        wc.raise_for_status()
        stamps.append(getattr(wc, field))
    assert None not in stamps and stamps[1] >= stamps[0] > 0


def test_bad_init_attr(ctx):
    with pytest.raises(ValueError, match="wc_flags"):
        ctx.create_cq_ex(ib.CQInitAttrEx(8, wc_flags=1 << 40))
    with pytest.raises(ValueError):
        ctx.create_cq_ex(ib.CQInitAttrEx(0))
    with pytest.raises(ValueError):
        ctx.create_cq_ex(ib.CQInitAttrEx(8, flags=1 << 5))
    with pytest.raises(TypeError):
        ctx.create_cq_ex(ib.CQInitAttrEx(8, channel=ctx))
    with pytest.raises(TypeError):
        ctx.create_cq_ex(8)
    ch = ctx.create_comp_channel()
    ch.close()
    with pytest.raises(ib.VerbsError):
        ctx.create_cq_ex(ib.CQInitAttrEx(8, channel=ch))


def test_single_threaded_flag(ctx):
    try:
        cq = ctx.create_cq_ex(ib.CQInitAttrEx(8, flags=ib.CreateCQAttrFlags.SINGLE_THREADED))
    except ib.VerbsError as e:
        assert e.errno in (errno.EOPNOTSUPP, errno.EINVAL), e
        pytest.skip(f"SINGLE_THREADED: {errno.errorcode.get(e.errno)} from {ctx.name}")
    assert cq.poll() == []
    cq.close()


def test_query_device_ex(ctx):
    a = ctx.query_device_ex()
    assert isinstance(a, ib.DeviceAttrEx)
    assert a.orig_attr == ctx.query_device()
    assert isinstance(a.odp_caps, ib.ODPCaps)
    for f in ("general_caps", "rc_odp_caps", "uc_odp_caps", "ud_odp_caps"):
        assert getattr(a.odp_caps, f) >= 0
    for f in (
        "completion_timestamp_mask",
        "hca_core_clock",
        "device_cap_flags_ex",
        "max_wq_type_rq",
        "raw_packet_caps",
        "max_dm_size",
        "xrc_odp_caps",
        "phys_port_cnt_ex",
    ):
        assert getattr(a, f) >= 0
    assert isinstance(a.tso_caps, ib.TSOCaps) and isinstance(a.rss_caps, ib.RSSCaps)
    assert isinstance(a.cq_mod_caps, ib.CQModerationCaps)
    assert isinstance(a.pci_atomic_caps, ib.PCIAtomicCaps)
    assert isinstance(a.tm_caps, ib.TMCaps)
    assert isinstance(a.packet_pacing_caps, ib.PacketPacingCaps)
    # device_cap_flags_ex repeats device_cap_flags in its low 32 bits.
    if not a.legacy:
        assert a.device_cap_flags_ex & 0xFFFFFFFF == a.orig_attr.device_cap_flags
        assert a.phys_port_cnt_ex in (0, a.orig_attr.phys_port_cnt)


# rxe has no tag matching (the counted_objects fixture: nothing left).
def test_tm_info(counted_objects):
    ctx = counted_objects[0]
    # rxe's create_cq_ex takes none of the wc_flags beyond the standard ones
    refused(
        "ibv_create_cq_ex",
        ctx.create_cq_ex,
        ib.CQInitAttrEx(8, wc_flags=ib.CreateCQWCFlags.TM_INFO),
    )
    cqx = ctx.create_cq_ex(ib.CQInitAttrEx(8, wc_flags=ib.CreateCQWCFlags.BYTE_LEN))
    with pytest.raises(ValueError, match="session"):
        cqx.read_tm_info()
    cqx.close()
