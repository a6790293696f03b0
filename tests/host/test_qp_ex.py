"""The extended QP's host side: QPInitAttrEx, the QPEx type, its enum, and
against the recording double (tests/fakes/recording/) the wr_* batch's
builders and setters and every comp_mask field of create_qp_ex."""

import errno

import pytest

import ibverbs as ib
from ibverbs import enums


def test_init_attr_ex_defaults_and_fields():
    a = ib.QPInitAttrEx("cq", max_inline_data=32)
    assert isinstance(a, ib.QPInitAttr)
    assert a.send_cq == a.recv_cq == "cq" and a.qp_type == ib.QPType.RC
    assert a.send_ops_flags == ib.QPCreateSendOpsFlags.SEND
    assert a.pd is None and a.create_flags == 0 and a.max_inline_data == 32
    b = ib.QPInitAttrEx("cq", send_ops_flags=ib.QPCreateSendOpsFlags.RDMA_READ, pd="pd")
    assert b.send_ops_flags == ib.QPCreateSendOpsFlags.RDMA_READ and b.pd == "pd"
    assert "send_ops_flags=" in repr(b) and repr(b).startswith("QPInitAttrEx(")
    with pytest.raises(AttributeError):
        b.no_such_field = 1
    with pytest.raises(TypeError):
        ib.QPInitAttrEx("cq", None, None, 1, 1, 1, 1, 0, None, False, None, 4)  # keyword-only


def test_qpex_type():
    assert issubclass(ib.QPEx, ib.QP)
    with pytest.raises(TypeError):
        ib.QPEx()
    for name in ("wr_start", "wr_complete", "wr_abort", "wr_send", "wr_set_sge", "post_send"):
        assert callable(getattr(ib.QPEx, name))
    assert ib.QPCreateSendOpsFlags.RDMA_WRITE == 1 and ib.QPCreateSendOpsFlags.ATOMIC_WRITE == 4096


def test_wr_flush_probe_matches_enum():
    # setup.py defines IBVERBS_HAVE_WR_FLUSH with the headers' FLUSH bit:
    # the enum has FLUSH exactly then (wr_flush raises EOPNOTSUPP otherwise).
    import shutil
    import subprocess

    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    src = "#include <infiniband/verbs.h>\nint probe = IBV_QP_EX_WITH_FLUSH;\n"
    r = subprocess.run(
        [cc, "-fsyntax-only", "-x", "c", "-"], input=src.encode(), capture_output=True
    )
    assert ("FLUSH" in ib.QPCreateSendOpsFlags.__members__) == (r.returncode == 0)


QI = enums.QPInitAttrMask


def test_qp_ex_batch_passes_each_builder_and_setter(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        F = enums.QPCreateSendOpsFlags
        ops = F.SEND | F.SEND_WITH_IMM | F.RDMA_WRITE | F.RDMA_READ | F.ATOMIC_FETCH_AND_ADD
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
            attr = ibverbs.QPInitAttrEx(cq, send_ops_flags=ops, max_send_sge=2, max_inline_data=16)
            with pd.create_qp_ex(attr) as qp:
                qp.to_init(1)
                qp.to_rtr(ibverbs.QPInfo(5, 0, 0, bytes(16), 1, 3), sgid_index=0)
                qp.to_rts()
                qp.wr_start()
                qp.wr_id, qp.wr_flags = 21, enums.SendFlags.SIGNALED
                qp.wr_rdma_write(0x55, 0xA000)
                qp.wr_set_sge(7, 0x1000, 64)
                qp.wr_id = 22
                qp.wr_send_imm(0x01020304)
                qp.wr_set_sge_list([ibverbs.SGE(0x2000, 16, 7), ibverbs.SGE(0x3000, 32, 7)])
                qp.wr_id, qp.wr_flags = 23, enums.SendFlags.SIGNALED | enums.SendFlags.INLINE
                qp.wr_send()
                qp.wr_set_inline_data(b"tiny")
                qp.wr_id = 24
                qp.wr_atomic_fetch_add(0x56, 0xB000, 99)
                qp.wr_set_sge(7, 0x4000, 8)
                qp.wr_complete()
                wcs = [[w.wr_id, int(w.opcode), w.byte_len] for w in cq.poll(8)]
                qp.wr_start()
                qp.wr_rdma_read(1, 2)
                qp.wr_abort()
                left = cq.poll(8)
        return [wcs, len(left)]

    res = recording.run(body)
    wcs, left = res.ok()
    W = enums.WCOpcode
    assert wcs == [
        [21, int(W.RDMA_WRITE), 64],
        [22, int(W.SEND), 48],
        [23, int(W.SEND), 4],
        [24, int(W.FETCH_ADD), 8],
    ]
    assert left == 0
    create = res.one("create_qp_ex")
    F = enums.QPCreateSendOpsFlags
    want = F.SEND | F.SEND_WITH_IMM | F.RDMA_WRITE | F.RDMA_READ | F.ATOMIC_FETCH_AND_ADD
    assert create["attr.send_ops_flags"] == int(want)
    assert create["attr.pd"] == res.one("dealloc_pd")["pd"]
    assert create["attr.comp_mask"] == 0x41  # IBV_QP_INIT_ATTR_PD | _SEND_OPS_FLAGS
    assert create["attr.cap.max_inline_data"] == 16
    sig = int(enums.SendFlags.SIGNALED)
    write = res.one("wr_rdma_write")
    assert (write["wr_id"], write["wr_flags"], write["rkey"], write["remote_addr"]) == (
        21,
        sig,
        0x55,
        0xA000,
    )
    assert res.one("wr_send_imm")["imm_data"] == 0x01020304
    sl = res.one("wr_set_sge_list")
    assert sl["num_sge"] == 2
    assert (sl["sg_list[1].addr"], sl["sg_list[1].length"], sl["sg_list[1].lkey"]) == (
        0x3000,
        32,
        7,
    )
    send = res.one("wr_send")
    assert send["wr_flags"] == sig | int(enums.SendFlags.INLINE)
    assert res.one("wr_set_inline_data")["data"] == b"tiny"
    fa = res.one("wr_atomic_fetch_add")
    assert (fa["wr_id"], fa["rkey"], fa["remote_addr"], fa["add"]) == (24, 0x56, 0xB000, 99)
    sges = res.calls("wr_set_sge")
    assert [(s["lkey"], s["addr"], s["length"]) for s in sges] == [(7, 0x1000, 64), (7, 0x4000, 8)]
    assert res.one("wr_complete")["count"] == 4
    assert res.one("wr_abort")["count"] == 1
    assert res.live == 0, res.live_report


def test_create_qp_ex_passes_every_comp_mask_field(recording):
    def body(fake):
        import ibverbs
        from ibverbs import QPInitAttrEx, RXHashConf, enums

        T, S, C = enums.QPType, enums.QPCreateSendOpsFlags, enums.QPCreateFlags
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
            x = ctx.open_xrcd()
            tgt = pd.create_qp_ex(QPInitAttrEx(qp_type=T.XRC_RECV, xrcd=x))
            out["tgt"] = [tgt.xrcd is x, tgt.send_cq, int(tgt.send_ops_flags)]
            try:
                tgt.wr_start()
            except ibverbs.VerbsError as e:
                out["tgt_wr_start"] = e.errno
            try:
                x.close()
            except ibverbs.VerbsError as e:
                out["xrcd_busy"] = e.errno
            tgt.close()
            ini = pd.create_qp_ex(QPInitAttrEx(cq, qp_type=T.XRC_SEND))
            ini.wr_start()
            ini.wr_send()
            ini.wr_set_xrc_srqn(0x4242)
            ini.wr_set_sge(0x1, 0x2000, 16)
            ini.wr_abort()  # not connected: the builders are what counts
            ini.close()
            wqs = [ctx.create_wq(pd, cq) for _ in range(2)]
            tbl = ctx.create_rwq_ind_table(wqs)
            key = bytes(range(40))
            fields = enums.RXHashFields.SRC_IPV4 | enums.RXHashFields.DST_PORT_TCP
            conf = RXHashConf(enums.RXHashFunctionFlags.TOEPLITZ, key, fields)
            rss = pd.create_qp_ex(
                QPInitAttrEx(qp_type=T.RAW_PACKET, rwq_ind_tbl=tbl, rx_hash_conf=conf)
            )
            out["rss"] = [rss.rwq_ind_tbl is tbl, rss.recv_cq, int(rss.send_ops_flags)]
            try:
                tbl.close()
            except ibverbs.VerbsError as e:
                out["tbl_busy"] = e.errno
            rss.close()
            tbl.close()
            for w in wqs:
                w.close()
            ud = pd.create_qp_ex(
                QPInitAttrEx(cq, qp_type=T.UD, source_qpn=0x77, create_flags=C.SCATTER_FCS)
            )
            ud.close()
            tso = pd.create_qp_ex(
                QPInitAttrEx(
                    cq, qp_type=T.RAW_PACKET, send_ops_flags=S.SEND | S.TSO, max_tso_header=128
                )
            )
            tso.wr_start()
            tso.wr_send_tso(bytes(range(54)), 1460)
            tso.wr_set_sge(0x1, 0x1000, 4000)
            tso.wr_abort()
            tso.close()
            x.close()
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["tgt"] == [True, None, 0]
    assert out["tgt_wr_start"] == errno.EINVAL
    assert out["xrcd_busy"] == errno.EBUSY
    assert out["rss"] == [True, None, 0]
    assert out["tbl_busy"] == errno.EBUSY
    tgt, ini, rss, ud, tso = res.calls("create_qp_ex")
    pd_ptr = res.one("dealloc_pd")["pd"]
    assert all(r["attr.pd"] == pd_ptr for r in (tgt, ini, rss, ud, tso))
    # XRC_RECV: PD | XRCD, no CQs, no send ops
    assert tgt["attr.comp_mask"] == int(QI.PD | QI.XRCD)
    assert tgt["attr.xrcd"] == res.one("close_xrcd")["xrcd"]
    assert (tgt["attr.send_cq"], tgt["attr.recv_cq"]) == (0, 0)
    assert tgt["attr.qp_type"] == int(enums.QPType.XRC_RECV)
    # XRC_SEND: the send ops; the batch names the remote SRQ
    assert ini["attr.comp_mask"] == int(QI.PD | QI.SEND_OPS_FLAGS)
    assert ini["attr.qp_type"] == int(enums.QPType.XRC_SEND)
    assert res.one("wr_set_xrc_srqn")["remote_srqn"] == 0x4242
    # RSS: the table and the hash
    assert rss["attr.comp_mask"] == int(QI.PD | QI.IND_TABLE | QI.RX_HASH)
    assert rss["attr.rwq_ind_tbl"] != 0
    assert rss["attr.rx_hash_conf.rx_hash_function"] == int(enums.RXHashFunctionFlags.TOEPLITZ)
    assert rss["attr.rx_hash_conf.rx_hash_key_len"] == 40
    assert rss["attr.rx_hash_conf.rx_hash_key"] == bytes(range(40))
    assert rss["attr.rx_hash_conf.rx_hash_fields_mask"] == int(
        enums.RXHashFields.SRC_IPV4 | enums.RXHashFields.DST_PORT_TCP
    )
    assert (rss["attr.send_cq"], rss["attr.recv_cq"]) == (0, 0)
    # source_qpn adds SOURCE_QPN to the create flags given
    assert ud["attr.comp_mask"] == int(QI.PD | QI.CREATE_FLAGS | QI.SEND_OPS_FLAGS)
    C = enums.QPCreateFlags
    assert ud["attr.create_flags"] == int(C.SCATTER_FCS | C.SOURCE_QPN)
    assert ud["attr.source_qpn"] == 0x77
    # TSO: the header size and the builder's header
    assert tso["attr.comp_mask"] == int(QI.PD | QI.MAX_TSO_HEADER | QI.SEND_OPS_FLAGS)
    assert tso["attr.max_tso_header"] == 128
    S = enums.QPCreateSendOpsFlags
    assert tso["attr.send_ops_flags"] == int(S.SEND | S.TSO)
    st = res.one("wr_send_tso")
    assert (st["hdr"], st["hdr_sz"], st["mss"]) == (bytes(range(54)), 54, 1460)
    assert res.live == 0, res.live_report


def test_qp_ex_batch_state_errors(recording):
    """Each misuse of a batch is refused before the provider sees it: a
    VerbsError (EINVAL) naming the ibv_wr_* verb, or ValueError for a UD
    work request without its destination; the batch stays usable."""

    def body(fake):
        import gc

        import ibverbs
        from ibverbs import enums

        F = enums.QPCreateSendOpsFlags
        out = []

        def err(call):
            try:
                call()
                out.append("no error")
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation, str(e).partition("Invalid argument: ")[2]])
            except ValueError as e:
                out.append(["ValueError", str(e)])

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
            rc = pd.create_qp_ex(
                ibverbs.QPInitAttrEx(cq, send_ops_flags=F.SEND | F.RDMA_READ, max_inline_data=16)
            )
            ud = pd.create_qp_ex(
                ibverbs.QPInitAttrEx(cq, qp_type=ibverbs.QPType.UD, send_ops_flags=F.SEND)
            )
            ah = pd.create_ah(ibverbs.AHAttr(dlid=3, port_num=1))
            fake.clear()
            err(lambda: rc.wr_send())  # no batch
            err(lambda: rc.wr_set_sge(1, 0x1000, 8))  # no batch
            rc.wr_start()
            err(rc.wr_start)  # twice
            err(lambda: rc.wr_set_sge(1, 0x1000, 8))  # no WR yet
            err(lambda: rc.wr_rdma_write(1, 2))  # not in send_ops_flags
            rc.wr_rdma_read(1, 0x2000)
            err(lambda: rc.wr_set_inline_data(b"x"))  # a read takes SGEs only
            rc.wr_set_sge(1, 0x1000, 8)
            err(lambda: rc.wr_set_sge(1, 0x1000, 8))  # data twice
            err(lambda: rc.wr_set_ud_addr(ah, 1, 2))  # not UD
            rc.wr_abort()
            ud.wr_start()
            ud.wr_send()
            ud.wr_set_sge(1, 0x1000, 8)
            err(ud.wr_send)  # the previous WR has no destination
            ud.wr_set_ud_addr(ah, 0x99, 0x1111)
            refs = [r is ah for r in gc.get_referents(ud)]
            err(lambda: ud.wr_set_ud_addr(ah, 0x99, 0x1111))  # twice
            ud.wr_send()
            err(ud.wr_complete)  # the last WR has no destination: aborted
            err(lambda: ud.wr_set_sge(1, 0x1000, 8))  # the batch is gone
            verbs = sorted({r.verb for r in fake.take()})
            rc.close()
            ud.close()
            ah.close()
        return out, any(refs), verbs

    out, kept, verbs = recording.run(body).ok()
    EINVAL = errno.EINVAL
    no_batch = "no batch is open: call wr_start() first"
    assert out[:9] == [
        [EINVAL, "ibv_wr_send", no_batch],
        [EINVAL, "ibv_wr_set_sge", no_batch],
        [EINVAL, "ibv_wr_start", out[2][2]],
        [EINVAL, "ibv_wr_set_sge", out[3][2]],
        [EINVAL, "ibv_wr_rdma_write", out[4][2]],
        [
            EINVAL,
            "ibv_wr_set_inline_data",
            "ibv_wr_rdma_read takes SGEs only (wr_set_sge, wr_set_sge_list), not inline data",
        ],
        [EINVAL, "ibv_wr_set_sge", out[6][2]],
        [EINVAL, "ibv_wr_set_ud_addr", "wr_set_ud_addr is for UD QPs only"],
        ["ValueError", out[8][1]],
    ]
    assert "a batch is already open (0 work requests)" in out[2][2]
    assert "no work request to attach it to" in out[3][2]
    assert "RDMA_WRITE is not in this QP's send_ops_flags" in out[4][2]
    assert "work request 0 (ibv_wr_rdma_read) already has its data" in out[6][2]
    assert "work request 0 of the batch (ibv_wr_send on a UD QP) has no destination" in out[8][1]
    assert out[9] == [EINVAL, "ibv_wr_set_ud_addr", "work request 0 already has its destination"]
    assert out[10][0] == "ValueError" and out[10][1].startswith("ibv_wr_complete: work request 1")
    assert out[11] == [EINVAL, "ibv_wr_set_sge", no_batch]
    assert kept  # the open batch holds the AH (the GC sees it)
    assert "wr_complete" not in verbs and "wr_abort" in verbs
