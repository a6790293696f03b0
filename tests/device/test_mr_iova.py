"""PD.reg_mr_iova() (ibv_reg_mr_iova) on rxe: a buffer registered at a
chosen iova, written and read by the peer through remote_addr = iova."""

import errno

import numpy as np
import pytest

import ibverbs as ib

from support.rdma import ALL_ACCESS, make_rc_pair, poll_until, send_wr

pytestmark = pytest.mark.integration

BASE = 0x7_0000_0000


def iova_for(buf, base=BASE):
    """The kernel wants addr and iova at the same offset in their page."""
    return base + (buf.ctypes.data & 4095)


def test_reg_mr_iova_attributes(pd):
    buf = np.zeros(4096, dtype=np.uint8)
    IOVA = iova_for(buf)
    with pd.reg_mr_iova(buf.ctypes.data, buf.nbytes, IOVA, ALL_ACCESS, owner=buf) as mr:
        assert mr.addr == mr.iova == IOVA
        assert mr.length == buf.nbytes
        assert mr.owner is buf
        assert mr.sge(8, offset=16).addr == IOVA + 16
    with pytest.raises(ib.VerbsError) as ei:
        mr.iova
    assert ei.value.errno == errno.EBADF
    with pytest.raises(ValueError, match="iova"):
        pd.reg_mr_iova(buf.ctypes.data, 64, 2**64 - 8, 0)
    with pytest.raises(ValueError):
        pd.reg_mr_iova(buf.ctypes.data, 0, IOVA, 0)
    # rxe (the kernel's uverbs) refuses an iova at another page offset.
    with pytest.raises(ib.VerbsError) as ei:
        pd.reg_mr_iova(buf.ctypes.data, 64, IOVA ^ 8, 0)
    assert ei.value.errno == errno.EINVAL
    assert ei.value.operation == "ibv_reg_mr_iova"
    with pytest.raises(TypeError):
        pd.reg_mr_iova(buf.ctypes.data, 64, "x", 0)


def test_rdma_write_and_read_through_iova(ctx, pd):
    qa, cqa, qb, cqb = make_rc_pair(ctx, pd)
    target = np.zeros(4096, dtype=np.uint8)
    IOVA = iova_for(target)
    mr_t = pd.reg_mr_iova(target.ctypes.data, target.nbytes, IOVA, ALL_ACCESS, owner=target)
    src = np.arange(256, dtype=np.uint32).view(np.uint8).copy()
    back = np.zeros(src.nbytes, dtype=np.uint8)
    mr_s = pd.reg_mr(src.ctypes.data, src.nbytes, ALL_ACCESS, owner=src)
    mr_b = pd.reg_mr(back.ctypes.data, back.nbytes, ALL_ACCESS, owner=back)
    for wr_id, off in enumerate((0, 100, 4096 - src.nbytes)):
        qa.post_send(
            send_wr(
                [mr_s.sge()],
                wr_id=wr_id,
                opcode=ib.WROpcode.RDMA_WRITE,
                remote_addr=mr_t.iova + off,
                rkey=mr_t.rkey,
            )
        )
        poll_until(cqa, 1, check=True)
        assert bytes(target[off : off + src.nbytes]) == src.tobytes()
        back[:] = 0
        qa.post_send(
            send_wr(
                [mr_b.sge()],
                wr_id=10 + wr_id,
                opcode=ib.WROpcode.RDMA_READ,
                remote_addr=IOVA + off,
                rkey=mr_t.rkey,
            )
        )
        poll_until(cqa, 1, check=True)
        assert back.tobytes() == src.tobytes()
    # The host address is not the MR's address any more: rxe refuses it.
    qa.post_send(
        send_wr(
            [mr_s.sge()],
            wr_id=99,
            opcode=ib.WROpcode.RDMA_WRITE,
            remote_addr=target.ctypes.data,
            rkey=mr_t.rkey,
        )
    )
    (wc,) = poll_until(cqa, 1)
    assert wc.status == ib.WCStatus.REM_ACCESS_ERR
    for o in (qa, qb, mr_t, mr_s, mr_b, cqa, cqb):
        o.close()


def test_local_sge_through_iova(ctx, pd):
    """The iova is also the local address: a SEND from an iova MR."""
    qa, cqa, qb, cqb = make_rc_pair(ctx, pd)
    src = np.frombuffer(b"iova-local-sge!!", dtype=np.uint8).copy()
    dst = np.zeros(64, dtype=np.uint8)
    mr_s = pd.reg_mr_iova(src.ctypes.data, src.nbytes, iova_for(src), ALL_ACCESS, owner=src)
    mr_d = pd.reg_mr_iova(
        dst.ctypes.data, dst.nbytes, iova_for(dst, BASE + 0x100000), ALL_ACCESS, owner=dst
    )
    qb.post_recv(ib.RecvWR(wr_id=1, sg_list=[mr_d.sge(32, offset=8)]))
    qa.post_send(ib.SendWR(wr_id=2, sg_list=[mr_s.sge()], send_flags=ib.SendFlags.SIGNALED))
    poll_until(cqa, 1, check=True)
    (wc,) = poll_until(cqb, 1, check=True)
    assert wc.byte_len == src.nbytes
    assert dst[8 : 8 + src.nbytes].tobytes() == src.tobytes()
    for o in (qa, qb, mr_s, mr_d, cqa, cqb):
        o.close()
