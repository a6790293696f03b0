"""The worlds the misuse cases run in: one set of live objects of every
handle type, the same set closed, one on another Context, a second PD on
the first world's Context."""

from __future__ import annotations

import os

import ibverbs as ib

from support import GID_INDEX, PORT
from support.rdma import ALL_ACCESS

# Every operation an RC extended QP can be created with on rxe.
_F = ib.QPCreateSendOpsFlags
QPEX_OPS = (
    _F.RDMA_WRITE
    | _F.RDMA_WRITE_WITH_IMM
    | _F.SEND
    | _F.SEND_WITH_IMM
    | _F.RDMA_READ
    | _F.ATOMIC_CMP_AND_SWP
    | _F.ATOMIC_FETCH_AND_ADD
    | _F.LOCAL_INV
    | _F.BIND_MW
    | _F.SEND_WITH_INV
    | _F.ATOMIC_WRITE
)
HANDLE_ATTRS = ["ctx", "pd", "mr", "cq", "ch", "qp", "srq", "ah", "cqx"]
# The CM peer a CMID resolves (no listener needed to resolve): the node's
# own address in the rig (tools/rxe-vm.d/guest-rig).
CM_ADDR = os.environ.get("IBVERBS_TEST_CM_SERVER", "198.18.0.1")


class World:
    def __init__(self, device, *, close=False):
        self.ctx = ib.Context(device)
        os.set_blocking(self.ctx.async_fd, False)
        self.pd = self.ctx.alloc_pd()
        self.buf = bytearray(8192)
        self.mr = ib.reg_tensor(self.pd, self.buf, ALL_ACCESS)
        self.ch = self.ctx.create_comp_channel()
        os.set_blocking(self.ch.fd, False)
        self.cq = self.ctx.create_cq(512)
        self.cq_ch = self.ctx.create_cq(16, self.ch)
        self.srq = self.pd.create_srq(max_wr=64)
        self.qp = self.pd.create_qp(ib.QPInitAttr(send_cq=self.cq, recv_cq=self.cq))
        self.qpx = self.pd.create_qp_ex(
            ib.QPInitAttrEx(self.cq, send_ops_flags=QPEX_OPS, max_inline_data=64)
        )
        self.ud = self.pd.create_qp(
            ib.QPInitAttr(send_cq=self.cq, recv_cq=self.cq, qp_type=ib.QPType.UD)
        )
        self.ud.to_init(PORT, 0)
        self.ud.to_rtr(None)
        self.ud.to_rts(0)
        self.gid = self.ctx.query_gid(PORT, GID_INDEX)
        self.ah_attr = ib.AHAttr(dgid=self.gid, sgid_index=GID_INDEX, port_num=PORT)
        self.ah = self.pd.create_ah(self.ah_attr)
        self.mw = self.pd.alloc_mw(ib.MWType.TYPE_2)
        self.mw1 = self.pd.alloc_mw(ib.MWType.TYPE_1)
        self.bind_info = ib.MWBindInfo(self.mr, self.mr.addr, 64, ib.AccessFlags.REMOTE_READ)
        self.mw_bind = ib.MWBind(self.bind_info)
        self.sge = self.mr.sge(64)
        self.swr = ib.SendWR(wr_id=1, sg_list=[self.sge])
        self.rwr = ib.RecvWR(wr_id=1, sg_list=[self.sge])
        self.ud_wr = ib.SendWR(
            wr_id=2,
            sg_list=[self.sge],
            ah=self.ah,
            remote_qpn=self.ud.qp_num,
            remote_qkey=0x11111111,
        )
        self.info = ib.QPInfo(self.qp.qp_num, 0, 0, self.gid, PORT, ib.MTU.MTU_1024)
        self.cqx = self.ctx.create_cq_ex(
            ib.CQInitAttrEx(16, wc_flags=ib.CreateCQWCFlags.BYTE_LEN | ib.CreateCQWCFlags.QP_NUM)
        )
        self.flow_attr = ib.FlowAttr(port=PORT, specs=[ib.FlowSpecEth(ether_type=0x0800)])
        # A resolved CMID (no QP yet) with a PD and CQ of its Context, and
        # a listener.
        if ib.has_rdmacm():
            self.cmid = ib.CMID.resolve(CM_ADDR, 7999)
            # On the node's own address: a wildcard listener would make a
            # cm_id on every device of the kernel, which the other node of
            # a two-node guest counts (test_rel_leaks).
            self.listener = ib.CMListener(0, CM_ADDR)
            if not close:
                self.cm_pd = self.cmid.context.alloc_pd()
                self.cm_cq = self.cmid.context.create_cq(4)
        if close:
            self.cqx.close()
            for o in (
                self.mw1,
                self.mw,
                self.ah,
                self.qpx,
                self.ud,
                self.qp,
                self.srq,
                self.mr,
                self.cq_ch,
                self.cq,
                self.ch,
                self.pd,
                self.ctx,
                getattr(self, "cmid", None),
                getattr(self, "listener", None),
            ):
                if o is not None:
                    o.close()

    def drain(self):
        if not self.cq.closed:
            while self.cq.poll(512):
                pass


class OtherPD:
    """Objects of a second PD on the main world's Context."""

    def __init__(self, w):
        self.pd = w.ctx.alloc_pd()
        self.buf = bytearray(4096)
        self.mr = ib.reg_tensor(self.pd, self.buf, ALL_ACCESS)
        self.srq = self.pd.create_srq(max_wr=8)
        self.ah = self.pd.create_ah(w.ah_attr)
        self.ctx, self.cq, self.ch, self.qp = w.ctx, w.cq, w.ch, w.qp


def worlds(device):
    """(world, the same closed, one on another Context, another PD of the
    world's Context): what a method's cases perturb its arguments with."""
    w = World(device)
    return w, World(device, close=True), World(device), OtherPD(w)
