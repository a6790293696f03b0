"""Security properties of memory registration and access rights.

- The API grants no remote access by default: PD.reg_mr's access defaults
  to 0 (local read only), and every helper that registers memory or opens
  a QP to its peer takes access explicitly (no default; a host test:
  tests/host/reliability/test_rel_security_host.py).
- An MR over Python-owned memory retains its owner until it is closed, so
  the NIC never writes into freed memory; a bytearray cannot be resized
  (moved) while registered.
- Immutable memory (bytes, read-only buffers) is never registered
  writable.
- Once an MR is closed its rkey is dead: a remote write with it fails with
  REM_ACCESS_ERR and leaves the memory untouched.
(QPInfo.from_bytes on untrusted input: tests/host/test_qpinfo_fuzz.py.)
"""

import gc
import weakref

import pytest

import ibverbs as ib
import ibverbs.cuda

from support.rdma import ALL_ACCESS, make_rc_pair, poll_until, send_wr

A = ib.AccessFlags
S = ib.WCStatus
SIG = ib.SendFlags.SIGNALED
WRITABLE = (A.LOCAL_WRITE, A.REMOTE_WRITE, A.REMOTE_ATOMIC)


class Buf(bytearray):
    """A bytearray that can be weakly referenced."""


# ---------------------------------------------------------------------------
# Device
# ---------------------------------------------------------------------------


def one_sided(ctx, pd, opcode, buf, access, addr, rkey):
    """Post one OPCODE (RDMA write or read) of BUF, registered with ACCESS,
    to (addr, rkey) from a fresh connected QP; the completion status."""
    qa, ca, qb, cb = make_rc_pair(ctx, pd, rnr_retry=0)
    mr = ib.reg_tensor(pd, buf, access)
    qa.post_send(send_wr([mr.sge()], wr_id=1, opcode=opcode, remote_addr=addr, rkey=rkey))
    st = poll_until(ca, 1, timeout=30)[0].status
    for o in (qa, qb, ca, cb, mr):
        o.close()
    return st


def remote_write(ctx, pd, addr, rkey, data=b"\xee" * 64):
    """RDMA-write data to (addr, rkey) from a fresh connected QP; the
    completion status."""
    return one_sided(ctx, pd, ib.WROpcode.RDMA_WRITE, bytearray(data), 0, addr, rkey)


def remote_read(ctx, pd, addr, rkey, n=64):
    dst = bytearray(n)
    st = one_sided(ctx, pd, ib.WROpcode.RDMA_READ, dst, A.LOCAL_WRITE, addr, rkey)
    return st, bytes(dst)


@pytest.mark.integration
def test_default_access_refuses_remote_access(ctx, pd):
    buf = bytearray(b"\x11" * 4096)
    addr, n = ib.tensor_addr_len(buf)
    mr = pd.reg_mr(addr, n, owner=buf)
    assert mr.access == 0
    assert remote_write(ctx, pd, mr.addr, mr.rkey) == S.REM_ACCESS_ERR
    st, _ = remote_read(ctx, pd, mr.addr, mr.rkey)
    assert st == S.REM_ACCESS_ERR
    assert buf == bytearray(b"\x11" * 4096)
    mr.close()


@pytest.mark.integration
def test_qp_without_remote_write_access_refuses_writes(ctx, pd):
    """The QP's own access flags are checked too: connect_rc(access=0)."""
    qa, ca, qb, cb = make_rc_pair(ctx, pd, rnr_retry=0, access=0)
    dst = bytearray(64)
    mr_dst = ib.reg_tensor(pd, dst, ALL_ACCESS)
    src = bytearray(b"\x22" * 64)
    mr_src = ib.reg_tensor(pd, src, 0)
    qa.post_send(send_wr([mr_src.sge()], wr_id=1, opcode=ib.WROpcode.RDMA_WRITE, dest=mr_dst))
    # rxe reports REM_INV_REQ_ERR here, other devices REM_ACCESS_ERR.
    assert poll_until(ca, 1)[0].status in (S.REM_ACCESS_ERR, S.REM_INV_REQ_ERR)
    assert dst == bytearray(64)
    for o in (qa, qb, ca, cb, mr_src, mr_dst):
        o.close()


@pytest.mark.integration
def test_registration_retains_the_owner(ctx, pd):
    """The MR keeps the buffer alive after every other reference is gone;
    the NIC writes into it; closing the MR lets it go."""
    buf = Buf(4096)
    alive = weakref.ref(buf)
    mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
    with pytest.raises(BufferError):
        buf.extend(b"x")  # resizing would move registered memory
    addr, rkey = mr.addr, mr.rkey
    del buf
    gc.collect()
    assert alive() is not None
    assert remote_write(ctx, pd, addr, rkey, b"\x33" * 64) == S.SUCCESS
    assert bytes(alive()[:64]) == b"\x33" * 64
    mr.close()
    assert mr.owner is None
    gc.collect()
    assert alive() is None


@pytest.mark.integration
def test_raw_address_registration_holds_owner_keyword(ctx, pd):
    buf = Buf(4096)
    alive = weakref.ref(buf)
    addr, n = ib.tensor_addr_len(buf)
    mr = pd.reg_mr(addr, n, A.LOCAL_WRITE, owner=buf)
    del buf
    gc.collect()
    assert alive() is not None and mr.owner is alive()
    mr.close()
    gc.collect()
    assert alive() is None


@pytest.mark.integration
@pytest.mark.parametrize("flag", WRITABLE, ids=lambda f: f.name)
def test_bytes_are_never_registered_writable(pd, flag):
    data = b"immutable" * 100
    with pytest.raises(ValueError, match="read-only"):
        ib.reg_tensor(pd, data, flag | A.REMOTE_READ)
    with pytest.raises(ValueError, match="read-only"):
        ib.reg_tensor(pd, memoryview(data), flag)


@pytest.mark.integration
def test_bytes_registered_read_only_stay_immutable(ctx, pd):
    """bytes registered for remote reads: readable remotely; a remote
    write with the same rkey fails and the bytes are unchanged; a receive
    into them fails locally."""
    data = bytes(range(256)) * 16
    mr = ib.reg_tensor(pd, data, A.REMOTE_READ)
    assert mr.owner is data
    st, got = remote_read(ctx, pd, mr.addr, mr.rkey, 64)
    assert st == S.SUCCESS and got == data[:64]
    assert remote_write(ctx, pd, mr.addr, mr.rkey) == S.REM_ACCESS_ERR
    # A receive buffer in the bytes: the incoming SEND may not land there.
    qa, ca, qb, cb = make_rc_pair(ctx, pd, rnr_retry=0)
    qb.post_recv(ib.RecvWR(wr_id=5, sg_list=[mr.sge(64)]))
    src = bytearray(b"\x44" * 64)
    mr_src = ib.reg_tensor(pd, src, 0)
    qa.post_send(ib.SendWR(wr_id=6, sg_list=[mr_src.sge()], send_flags=SIG))
    recv = poll_until(cb, 1, timeout=30)[0]
    assert recv.status != S.SUCCESS
    assert data == bytes(range(256)) * 16
    for o in (qa, qb, ca, cb, mr_src, mr):
        o.close()


@pytest.mark.integration
def test_closed_mr_rkey_is_dead(ctx, pd):
    """A peer that kept an rkey cannot use it after close(): REM_ACCESS_ERR,
    memory untouched, also after new MRs were registered in the PD."""
    buf = bytearray(4096)
    mr = ib.reg_tensor(pd, buf, ALL_ACCESS)
    addr, rkey = mr.addr, mr.rkey
    assert remote_write(ctx, pd, addr, rkey, b"\x01" * 64) == S.SUCCESS
    buf[:] = bytes(4096)
    mr.close()
    assert remote_write(ctx, pd, addr, rkey) == S.REM_ACCESS_ERR
    assert buf == bytearray(4096)
    # New registrations (the same memory too) get other keys; the old one
    # stays dead.
    others = [ib.reg_tensor(pd, bytearray(4096), ALL_ACCESS) for _ in range(4)]
    again = ib.reg_tensor(pd, buf, ALL_ACCESS)
    assert rkey not in {m.rkey for m in others + [again]}
    assert remote_write(ctx, pd, addr, rkey) == S.REM_ACCESS_ERR
    assert buf == bytearray(4096)
    for m in others + [again]:
        m.close()


@pytest.mark.integration
def test_mr_of_another_pd_is_refused(ctx, pd):
    """An SGE over an MR of another PD (or Context): the post is accepted
    by the verbs API, the device refuses the access (a completion error),
    and nothing is read or written."""
    other_pd = ctx.alloc_pd()
    foreign = bytearray(b"\x55" * 64)
    mr_foreign = ib.reg_tensor(other_pd, foreign, ALL_ACCESS)
    qa, ca, qb, cb = make_rc_pair(ctx, pd, rnr_retry=0)
    dst = bytearray(64)
    mr_dst = ib.reg_tensor(pd, dst, ALL_ACCESS)
    qa.post_send(send_wr([mr_foreign.sge()], wr_id=1, opcode=ib.WROpcode.RDMA_WRITE, dest=mr_dst))
    wc = poll_until(ca, 1, timeout=30)[0]
    assert wc.status != S.SUCCESS
    with pytest.raises(ib.CompletionError):
        wc.raise_for_status()
    assert dst == bytearray(64)
    for o in (qa, qb, ca, cb, mr_dst, mr_foreign, other_pd):
        o.close()
