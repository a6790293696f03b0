"""The public API used the way README.md uses it, for the type checker only.

``mypy --strict`` checks this file against the package's annotations and
stubs (src/ibverbs/_ibverbs.pyi, enums.pyi): ``make typecheck`` and
tests/host/test_typing.py.  It is never run (it would need a device and a
peer).  ``assert_type`` pins what the stubs promise; each
``# type: ignore[code]`` marks a misuse that must stay a type error
(``warn_unused_ignores`` fails the check if it stops being one).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import ibverbs as ib
import ibverbs.cuda
from ibverbs.enums import WCStatus

if TYPE_CHECKING:
    from typing_extensions import assert_type


def quickstart(remote_bytes: bytes, peer_addr: int, peer_rkey: int, buf: Any) -> None:
    """README, Quickstart (``buf`` stands for the numpy array)."""
    # 1. Open a device and set up resources.
    dev = ib.get_device_list()[0]
    ctx = dev.open()
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(64)
    assert_type(dev, ib.Device)
    assert_type(ctx, ib.Context)
    assert_type(pd, ib.PD)
    assert_type(cq, ib.CQ)

    # 2. Register memory (host or GPU address: any integer VA works).
    access = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE | ib.AccessFlags.REMOTE_READ
    assert_type(access, ib.AccessFlags)
    mr = ib.reg_tensor(pd, buf, access)
    mr2 = pd.reg_mr(buf.ctypes.data, buf.nbytes, access)
    assert_type(mr, ib.MR)
    assert_type(mr2, ib.MR)

    # 3. Create a reliable-connected QP.
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.RC))
    assert_type(qp, ib.QP)

    # 4. Exchange connection info with the peer out-of-band, then connect.
    port = 1
    entry = ctx.find_gid(port)  # the RoCE v2 GID with an IPv4 address
    assert_type(entry, ib.GidEntry)
    gid_index: int = entry.index
    assert_type(ctx.query_gid_table(), list[ib.GidEntry])
    assert_type(ctx.get_pkey_index(port, 0xFFFF), int)
    assert_type(ctx.get_device_index(), int)
    assert_type(ib.port_state_str(ib.PortState.ACTIVE) + ib.node_type_str(ib.NodeType.CA), str)
    assert_type(ib.rate_to_mbps(ib.mult_to_ibv_rate(4)) + ib.rate_to_mult(3), int)
    assert_type(ib.flow_label_to_udp_sport(0x12345) + ib.mbps_to_ibv_rate(10000), int)
    assert_type(ib.is_qpt_supported(0, ib.QPType.RAW_PACKET), bool)
    port_attr = ctx.query_port(port)
    gid = ctx.query_gid(port, gid_index)
    assert_type(port_attr, ib.PortAttr)
    assert_type(gid, ib.Gid)
    local = ib.local_qp_info(qp, port_attr, gid, port=port, psn=0)
    wire: bytes = local.to_bytes()
    remote = ib.QPInfo.from_bytes(remote_bytes)
    assert_type(remote, ib.QPInfo)
    ib.connect_rc(qp, remote, port=port, sgid_index=gid_index, access=access)

    # 5. Post an RDMA write and reap the completion.
    qp.post_send(
        ib.SendWR(
            wr_id=1,
            sg_list=[ib.SGE(mr, 4096)],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=peer_addr,
            rkey=peer_rkey,
        )
    )
    for wc in cq.poll(16):
        assert_type(wc, ib.WC)
        wc.raise_for_status()

    # A list linked once and posted many times.
    with ib.SendWRChain(ib.SendWR(wr_id=i, sg_list=[mr.sge(8, 8 * i)]) for i in range(16)) as chain:
        assert_type(chain[0], ib.SendWR)
        chain[len(chain) - 1].send_flags = ib.SendFlags.SIGNALED
        qp.post_send(chain)
        _first: list[int] = [w.wr_id for w in chain]
    assert_type(chain.released, bool)
    qp.post_recv(ib.RecvWRChain([ib.RecvWR(sg_list=[mr.sge(8)])]))

    # Batches from columns of integers, completions into arrays.
    cols = memoryview(bytearray(16)).cast("Q")
    batch = ib.SendBatch(mr, cols, 8, cols, peer_rkey, remote_base=peer_addr, signal_every=16)
    assert_type(batch.post(qp, 0, 16), int)
    batch.update(remote=cols, imm_data=None)
    qp.post_send_batch(mr, cols, 8, cols, peer_rkey, opcode=ib.WROpcode.RDMA_WRITE)
    assert_type(ib.RecvBatch(mr, cols, 8, wr_id=cols).post(qp), int)
    qp.post_recv_batch(mr, cols, 8)
    assert_type(cq.poll_into(wr_id=cols, status=cols), int)

    # Every resource is a context manager.
    with ctx.alloc_pd() as pd2, pd2.reg_mr(0x1000, 4096) as mr3:
        assert_type(pd2, ib.PD)
        assert_type(mr3.sge(), ib.SGE)
        mr4 = pd2.reg_mr_iova(mr3.addr, 64, 0x10000, ib.AccessFlags.LOCAL_WRITE, owner=None)
        assert_type(mr4.iova, int)
    del wire


def step_by_step(ctx: ib.Context, pd: ib.PD, remote: ib.QPInfo) -> None:
    """The verbs underneath connect_rc, SRQ, UD with an AH, events."""
    channel = ctx.create_comp_channel()
    cq = ctx.create_cq(256, channel, comp_vector=0)
    cq.req_notify()
    assert_type(channel.get_cq_event(), ib.CQ)
    cq.ack_events(1)
    n: int = cq.poll_count(32)
    assert_type(cq.resize(512), None)

    srq = pd.create_srq(max_wr=64)
    qp = pd.create_qp(ib.QPInitAttr(cq, srq=srq, max_send_wr=64, qp_type=ib.QPType.RC))
    qp.to_init(1, ib.AccessFlags.REMOTE_WRITE)
    qp.to_rtr(remote, sgid_index=1, mtu=ib.MTU.MTU_1024)
    qp.to_rts(psn=remote.psn, timeout=14)
    attrs, cap = qp.query()
    assert_type(cap, ib.QPCap)
    if qp.state == ib.QPState.RTS and attrs["qp_state"] == ib.QPState.RTS:
        qp.modify(ib.QPAttrMask.STATE, qp_state=ib.QPState.ERR)

    buf = bytearray(4096)
    mr = ib.reg_tensor(pd, buf, ib.AccessFlags.LOCAL_WRITE)
    srq.post_recv([ib.RecvWR(wr_id=i, sg_list=[mr.sge(512, offset=512 * i)]) for i in range(8)])
    limits: dict[str, int] = srq.query()

    ud = pd.create_qp(ib.QPInitAttr(cq, qp_type=ib.QPType.UD))
    ah = pd.create_ah(ib.AHAttr(dgid=remote.gid, sgid_index=1, port_num=1))
    wr = ib.SendWR(
        wr_id=7,
        sg_list=ib.SGE(mr.addr, 64, lkey=mr.lkey),
        ah=ah,
        remote_qpn=remote.qp_num,
        remote_qkey=0x11111111,
    )
    wr.send_flags = ib.SendFlags.SIGNALED | ib.SendFlags.INLINE
    wr.imm_data = None
    ud.post_send([wr, wr])

    with ctx.get_async_event() as ev:
        if ev.event_type == ib.EventType.QP_FATAL and isinstance(ev.element, ib.QP):
            ev.element.close()

    for wc in cq.poll():
        if wc.status != WCStatus.SUCCESS:
            try:
                wc.raise_for_status()
            except ib.CompletionError as e:
                print(e.wc.vendor_err)
    try:
        pd.reg_dmabuf_mr(0, 4096, 0x7F0000000000, 3, ib.AccessFlags.LOCAL_WRITE)
    except ib.VerbsError as e:
        print(e.errno, e.operation)
    del n, limits


def gpudirect(pd: ib.PD, tensor: Any) -> None:
    """The GPUDirect section (``tensor`` is a CUDA torch tensor)."""
    access = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
    with ibverbs.cuda.register_tensor(pd, tensor, access) as gmr:
        assert_type(gmr, ibverbs.cuda.GpuMR)
        sge: ib.SGE = gmr.sge()
        addr: int = gmr.addr
        mr: ib.MR = gmr.mr
        del sge, addr, mr
    flushed: bool = ibverbs.cuda.flush_gpudirect_writes()
    del flushed


def module_info() -> None:
    verbs: dict[str, bool] = ib.optional_verbs
    version: str | None = ib.library_version
    path: str = ib.library_path
    name: str = ib.__version__
    del verbs, version, path, name


def connection_manager() -> None:
    """Both sides of an RDMA CM connection, as the README shows them."""
    ok: bool = ib.has_rdmacm()
    with ib.CMListener(7471, "198.18.0.1", backlog=8) as listener:
        port: int = listener.port
        server: ib.CMID = listener.get_request(timeout=5.0)
        request: bytes | None = server.private_data
        server.reject(b"busy")
        server.close()
    cmid = ib.CMID.resolve("198.18.0.1", port, None, timeout_ms=1000)
    ctx: ib.Context = cmid.context
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(8)
    qp: ib.QP = cmid.create_qp(pd, ib.QPInitAttr(send_cq=cq))
    reply: bytes = cmid.connect(b"hello", initiator_depth=1, timeout=None)
    ev: ib.CMEvent = cmid.get_event(timeout=0)
    kind: int = ev.event
    fd: int = cmid.fd
    cmid.disconnect()
    qp.close()
    cq.close()
    pd.close()
    cmid.close()
    del ok, request, reply, kind, fd


def misuse(ctx: ib.Context, pd: ib.PD, mr: ib.MR, qp: ib.QP) -> None:
    """Each line is a mistake the stubs must reject."""
    ctx.create_cq("64")  # type: ignore[arg-type]
    pd.reg_mr(mr, 4096)  # type: ignore[arg-type]
    ib.SGE(mr, "4096")  # type: ignore[arg-type]
    qp.post_send(ib.RecvWR())  # type: ignore[arg-type]
    mr.lkey = 5  # type: ignore[misc]
    ib.QPInfo.from_bytes("not bytes")  # type: ignore[arg-type]
    ib.CMID.resolve(b"host")  # type: ignore[arg-type]
    ib.CMListener("7471")  # type: ignore[arg-type]


def extended_cq_and_device_caps(ctx: ib.Context, pd: ib.PD, qp: ib.QP) -> None:
    """Extended CQ, query_device_ex, device memory, flow steering, ODP."""
    flags = ib.CreateCQWCFlags.BYTE_LEN | ib.CreateCQWCFlags.COMPLETION_TIMESTAMP
    cq: ib.CQEx = ctx.create_cq_ex(ib.CQInitAttrEx(64, wc_flags=flags))
    base: ib.CQ = cq  # a CQEx is a CQ: QPs take it
    wcs: list[ib.WCEx] = cq.poll(16)
    ts: int | None = wcs[0].completion_ts if wcs else None
    if cq.start_poll():
        try:
            while True:
                wr_id: int = cq.wr_id
                n: int = cq.read_byte_len()
                t: int = cq.read_completion_ts()
                del wr_id, n, t
                if not cq.next_poll():
                    break
        finally:
            cq.end_poll()
    attr: ib.DeviceAttrEx = ctx.query_device_ex()
    odp: int = attr.odp_caps.general_caps
    dm: ib.DM = ctx.alloc_dm(4096)
    dm.copy_to(0, b"abcd")
    data: bytes = dm.copy_from(0, 4)
    dmr: ib.MR = pd.reg_dm_mr(dm, 0, 4096, ib.AccessFlags.ZERO_BASED)
    rule = ib.FlowAttr(port=1, specs=[ib.FlowSpecEth(ether_type=0x0800), ib.FlowSpecActionDrop()])
    raw: bytes = rule.to_bytes()
    flow: ib.Flow = qp.create_flow(rule)
    odp_mr: ib.MR = pd.reg_implicit_odp_mr(ib.AccessFlags.LOCAL_WRITE)
    pd.advise_mr(ib.AdviseMRAdvice.PREFETCH, ib.AdviseMRFlags.FLUSH, [odp_mr.sge(4096)])
    for h in (flow, dmr, dm, odp_mr, cq):
        h.close()
    del base, ts, odp, data, raw


def memory_windows(pd: ib.PD, qp: ib.QP, mr: ib.MR) -> None:
    """README, Memory windows: bind a type 2 window with a SendWR, rotate
    its rkey, invalidate it; a type 1 window with QP.bind_mw."""
    mw = pd.alloc_mw(ib.MWType.TYPE_2)
    assert_type(mw, ib.MW)
    assert_type(mw.rkey, int)
    new_rkey = ib.inc_rkey(mw.rkey)
    info = ib.MWBindInfo(mr, mr.addr, 4096, ib.AccessFlags.REMOTE_WRITE)
    bind = ib.SendWR(
        wr_id=1,
        opcode=ib.WROpcode.BIND_MW,
        send_flags=ib.SendFlags.SIGNALED,
        mw=mw,
        rkey=new_rkey,
        bind_info=info,
    )
    assert_type(bind.mw, ib.MW | None)
    assert_type(bind.bind_info, ib.MWBindInfo | None)
    qp.post_send(bind)
    qp.post_send(ib.SendWR(opcode=ib.WROpcode.LOCAL_INV, rkey=new_rkey))
    mw1 = pd.alloc_mw(ib.MWType.TYPE_1)
    rkey1: int = qp.bind_mw(mw1, ib.MWBind(info, wr_id=2, send_flags=ib.SendFlags.SIGNALED))
    print(rkey1, mw1.type == ib.MWType.TYPE_1)
    qp.bind_mw(mw1, info)  # type: ignore[arg-type]
    qpx = pd.create_qp_ex(
        ib.QPInitAttrEx(qp.send_cq, send_ops_flags=ib.QPCreateSendOpsFlags.BIND_MW)
    )
    qpx.wr_start()
    qpx.wr_bind_mw(mw, ib.inc_rkey(new_rkey), info)
    qpx.wr_complete()
    mw1.close()
    mw.close()


def extended_qp(ctx: ib.Context, pd: ib.PD, cq: ib.CQ, mr: ib.MR, ah: ib.AH) -> None:
    """The extended QP: a batch of builders and setters."""
    flags = ib.QPCreateSendOpsFlags.RDMA_WRITE | ib.QPCreateSendOpsFlags.SEND
    qp = pd.create_qp_ex(ib.QPInitAttrEx(cq, send_ops_flags=flags, max_inline_data=64))
    assert_type(qp, ib.QPEx)
    qp2: ib.QP = ctx.create_qp_ex(ib.QPInitAttrEx(cq, pd=pd))
    qp.wr_flags = ib.SendFlags.SIGNALED
    qp.wr_start()
    qp.wr_id = 1
    qp.wr_rdma_write(mr.rkey, mr.addr + 64)
    qp.wr_set_sge(mr.sge(8))
    qp.wr_send()
    qp.wr_set_sge(mr.lkey, mr.addr, 8)
    qp.wr_send_imm(5)
    qp.wr_set_sge_list([mr.sge(8), mr.sge(8, offset=8)])
    qp.wr_send()
    qp.wr_set_inline_data(b"hi")
    qp.wr_send()
    qp.wr_set_inline_data_list([b"a", bytearray(b"b"), memoryview(b"c")])
    qp.wr_complete()
    qp.wr_abort()
    ops: int = qp.send_ops_flags
    qp.wr_set_ud_addr(ah, 1, 0x11111111)
    qp.wr_set_sge("x")  # type: ignore[call-overload]
    qp.wr_rdma_write("1", 2)  # type: ignore[arg-type]
    qp.close()
    qp2.close()
    del ops


def xrc_wq_rss(ctx: ib.Context, pd: ib.PD, cq: ib.CQ, mr: ib.MR) -> None:
    """XRC, the extended SRQ, WQs and RSS, ECE, rate limits, TSO."""
    xrcd = ctx.open_xrcd(fd=-1, oflags=os.O_CREAT)
    assert_type(xrcd, ib.XRCD)
    srq = ctx.create_srq_ex(pd, srq_type=ib.SRQType.XRC, xrcd=xrcd, cq=cq, max_wr=64)
    srqn: int = srq.get_srq_num()
    handles: list[int] = srq.post_srq_ops([ib.OpsWR(ib.OpsWROpcode.TAG_ADD, sg_list=[mr.sge(8)])])
    tgt = pd.create_qp_ex(ib.QPInitAttrEx(qp_type=ib.QPType.XRC_RECV, xrcd=xrcd))
    opened: ib.QP = ctx.open_qp(xrcd, tgt.qp_num)
    ini = pd.create_qp_ex(ib.QPInitAttrEx(cq, qp_type=ib.QPType.XRC_SEND, max_tso_header=64))
    ini.wr_start()
    ini.wr_send()
    ini.wr_set_xrc_srqn(srqn)
    ini.wr_send_tso(b"\x00" * 54, 1460)
    ini.wr_complete()
    wq = ctx.create_wq(pd, cq, max_wr=64, create_flags=ib.WQFlags.SCATTER_FCS)
    wq.modify(wq_state=ib.WQState.RDY)
    wq.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr.sge(8)]))
    tbl = ctx.create_rwq_ind_table([wq])
    conf = ib.RXHashConf(ib.RXHashFunctionFlags.TOEPLITZ, bytes(40), ib.RXHashFields.SRC_IPV4)
    rss = pd.create_qp_ex(
        ib.QPInitAttrEx(qp_type=ib.QPType.RAW_PACKET, rwq_ind_tbl=tbl, rx_hash_conf=conf)
    )
    ini.modify_rate_limit(1000, max_burst_sz=4096)
    ece: ib.ECE = ini.query_ece()
    ini.set_ece(ece)
    ctx.create_wq(pd, "cq")  # type: ignore[arg-type]
    for h in (rss, tbl, wq, ini, opened, tgt, srq, xrcd):
        h.close()
    del handles


def memory_import_and_device_verbs(ctx: ib.Context, pd: ib.PD, mr: ib.MR) -> None:
    """reg_mr_ex, Buf, DMAH, rereg, the imports, rt values."""
    dmah: ib.DMAH = ctx.alloc_dmah(cpu_id=0, tph_mem_type=ib.TPHMemType.VM)
    cpu: int | None = dmah.cpu_id
    buf: ib.Buf = pd.alloc_buf(8192)
    mr1 = pd.reg_mr_ex(4096, ib.AccessFlags.LOCAL_WRITE, addr=buf.addr, iova=0x10000, dmah=dmah)
    mr2 = pd.reg_buf_mr(buf, buf.addr, 4096)
    assert_type(mr2.buf, "ib.Buf | None")
    mr1.rereg(ib.ReregMRFlags.CHANGE_ACCESS, access=0)
    fd: int = buf.export_dmabuf_fd()
    null: ib.MR = pd.alloc_null_mr()
    ctx2 = ib.Context.import_device(ctx.cmd_fd)
    pd2: ib.PD = ctx2.import_pd(pd.handle)
    mr3: ib.MR = pd2.import_mr(mr.handle)
    imported: bool = mr3.imported and pd2.imported
    dm: ib.DM = ctx2.import_dm(0, 4096)
    values: ib.ValuesEx = ctx.query_rt_values_ex(ib.ValuesMask.RAW_CLOCK)
    speed: int = ctx.query_port_speed(1)
    pd.reg_mr_ex(64, dmah=buf)  # type: ignore[arg-type]
    del cpu, fd, null, imported, dm, values, speed


def domains_counters_flow_actions(ctx: ib.Context, pd: ib.PD, qp: ib.QP) -> None:
    td: ib.TD = ctx.alloc_td()
    pdom: ib.ParentDomain = ctx.alloc_parent_domain(pd, td=td)
    base: ib.PD | None = pdom.pd
    mr: ib.MR = pdom.reg_mr(0, 64, 0)
    cqx: ib.CQEx = ctx.create_cq_ex(
        ib.CQInitAttrEx(8, wc_flags=ib.CreateCQWCFlags.TM_INFO, parent_domain=pdom)
    )
    cqx.modify(4, 10)
    tm: ib.WCTMInfo = cqx.read_tm_info()
    counters: ib.Counters = ctx.create_counters()
    counters.attach_point_flow(ib.CounterDescription.PACKETS, 0)
    values: list[int] = counters.read(1, ib.ReadCountersFlags.PREFER_CACHED)
    esp = ib.FlowActionESPAttr(spi=1, key=bytes(16), esn=0)
    action: ib.FlowAction = ctx.create_flow_action_esp(esp)
    action.modify_esp(esp)
    rule = ib.FlowAttr(specs=[ib.FlowSpecActionCount(counters), ib.FlowSpecActionHandle(action)])
    flow: ib.Flow = qp.create_flow(rule)
    caps: ib.CompCntrCaps = ctx.query_comp_cntr_caps()
    cc: ib.CompCntr = ctx.create_comp_cntr(ib.CompCntrType.BYTES)
    cc.set(1)
    cc.inc_err(2)
    n: int = cc.read() + cc.read_err()
    qp.attach_comp_cntr(cc, ib.QPAttachCompCntrOp.SEND | ib.QPAttachCompCntrOp.RECV)
    cc.set("1")  # type: ignore[arg-type]
    for o in (flow, action, counters, cc, cqx, mr, pdom, td):
        o.close()
    del base, tm, values, caps, n
