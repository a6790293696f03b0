"""The memory, import and device verbs of rdma-core 59-64 on rxe.

What the loaded libibverbs and the rxe provider run is run for real and
its effect checked; what they refuse is asserted as a VerbsError naming
the verb, with the errno actually answered, and nothing left behind.

Where each runs:
- ``reg_mr_ex`` (rdma-core 59), ``alloc_buf``/``reg_buf_mr`` (64) and
  ``export_buf_dmabuf_fd`` (65) are libibverbs' own code over rxe's
  ``reg_mr``: they run for real where the library has them, the sid root of
  the distribution matrix (rdma-core 65, tools/distro-subset.txt).  Debian
  12's rdma-core 44 lacks the symbols: there the same tests assert the
  refusal (EOPNOTSUPP naming the release) instead.
- rxe has no op for ``rereg_mr`` (answered as IBV_REREG_MR_ERR_CMD with
  EOPNOTSUPP), ``alloc_null_mr``, ``import_*`` (no
  ``import_context`` either), ``alloc_dmah``, ``query_rt_values`` or
  ``query_port_speed``: refused everywhere (EOPNOTSUPP, answered by
  libibverbs' stand-in ops), their success paths checked against the
  recording double only (tests/host/test_mr.py, test_context.py).
"""

import ctypes
import errno
import os

import numpy as np
import pytest

import ibverbs as ib

from support import PORT, device_name
from support.process import fd_count, full_gc, rdma_counts
from support.rdma import ALL_ACCESS, make_rc_pair, poll_until, refused

pytestmark = pytest.mark.integration

BASE = 0x5_0000_0000


# The release that added each verb these tests run where the library has
# it: a library of that release or newer must have it, so that the sid
# root (rdma-core 65) cannot pass by taking the refusal path.
RELEASE = {"ibv_reg_mr_ex": 59, "ibv_alloc_buf": 64, "ibv_export_buf_dmabuf_fd": 65}


def has(verb):
    found = ib.optional_verbs[verb]
    version = ib.library_version
    if verb in RELEASE and version and not found:
        assert int(version.split(".")[0]) < RELEASE[verb], (verb, version)
    return found


def missing(fn, verb, release):
    """The loaded libibverbs lacks verb: EOPNOTSUPP naming it and release."""
    e = refused(verb, fn)
    assert f"needs rdma-core {release}" in str(e)


def rdma_write(qp, cq, src, remote_addr, rkey):
    qp.post_send(
        ib.SendWR(
            sg_list=[src.sge()],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=remote_addr,
            rkey=rkey,
        )
    )
    poll_until(cq, 1, check=True)


def test_reg_mr_ex_at_an_iova_is_written_through_it(ctx, pd):
    target = np.zeros(8192, dtype=np.uint8)
    iova = BASE + (target.ctypes.data & 4095)

    def reg():
        return pd.reg_mr_ex(
            target.nbytes, ALL_ACCESS, addr=target.ctypes.data, iova=iova, owner=target
        )

    if not has("ibv_reg_mr_ex"):  # Debian 12: rdma-core 44
        missing(reg, "ibv_reg_mr_ex", 59)
        return
    qa, cqa, qb, cqb = make_rc_pair(ctx, pd)
    mr_t = reg()
    assert (mr_t.addr, mr_t.iova, mr_t.length) == (iova, iova, target.nbytes)
    assert mr_t.owner is target and mr_t.buf is None and mr_t.dmah is None
    assert not mr_t.imported
    src = np.arange(1024, dtype=np.uint32).view(np.uint8).copy()
    mr_s = pd.reg_mr(src.ctypes.data, src.nbytes, ALL_ACCESS, owner=src)
    for off in (0, 4000, target.nbytes - src.nbytes):
        target[:] = 0
        rdma_write(qa, cqa, mr_s, mr_t.iova + off, mr_t.rkey)
        assert target[off : off + src.nbytes].tobytes() == src.tobytes()
        assert not target[:off].any() and not target[off + src.nbytes :].any()
    # Only the iova names the memory now: the host address is refused.
    qa.post_send(
        ib.SendWR(
            sg_list=[mr_s.sge()],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=target.ctypes.data,
            rkey=mr_t.rkey,
        )
    )
    (wc,) = poll_until(cqa, 1)
    assert wc.status == ib.WCStatus.REM_ACCESS_ERR
    # A mask libibverbs' translation to rxe's reg_mr cannot take: no ADDR.
    e = refused("ibv_reg_mr_ex", lambda: pd.reg_mr_ex(4096, fd_offset=0), err=errno.EINVAL)
    assert "comp_mask=0x8" in str(e)
    for o in (qa, qb, mr_t, mr_s, cqa, cqb):
        o.close()


def test_alloc_buf_registered_and_written(ctx, pd):
    if not has("ibv_alloc_buf"):  # Debian 12: rdma-core 44
        missing(lambda: pd.alloc_buf(8192), "ibv_alloc_buf", 64)
        return
    qa, cqa, qb, cqb = make_rc_pair(ctx, pd)
    buf = pd.alloc_buf(8192)
    assert isinstance(buf, ib.Buf)
    assert buf.size == 8192 and buf.pd is pd and buf.addr % 4096 == 0
    mr1 = pd.reg_buf_mr(buf, buf.addr, 4096, ALL_ACCESS)
    mr2 = pd.reg_mr_ex(4096, ALL_ACCESS, addr=buf.addr + 4096, buf=buf)
    assert mr1.buf is buf and mr2.buf is buf and mr1.addr == buf.addr
    with pytest.raises(ib.VerbsError) as ei:
        buf.close()
    assert ei.value.errno == errno.EBUSY and not buf.closed
    src = np.frombuffer(os.urandom(4096), dtype=np.uint8).copy()
    mr_s = pd.reg_mr(src.ctypes.data, src.nbytes, ALL_ACCESS, owner=src)
    rdma_write(qa, cqa, mr_s, mr1.addr, mr1.rkey)
    rdma_write(qa, cqa, mr_s, mr2.addr, mr2.rkey)
    assert ctypes.string_at(buf.addr, 8192) == src.tobytes() * 2
    # libibverbs' own allocator has no dma-buf behind it: ENODATA, where
    # the library has the verb (rdma-core 65).
    if has("ibv_export_buf_dmabuf_fd"):
        refused("ibv_export_buf_dmabuf_fd", buf.export_dmabuf_fd, err=errno.ENODATA)
    else:
        missing(buf.export_dmabuf_fd, "ibv_export_buf_dmabuf_fd", 65)
    # Past the buffer's end: libibverbs refuses before the provider.
    refused("ibv_reg_buf_mr", lambda: pd.reg_buf_mr(buf, buf.addr + 4096, 8192), err=errno.EINVAL)
    other = ctx.alloc_pd()
    with pytest.raises(ValueError, match="another PD"):
        other.reg_buf_mr(buf, buf.addr, 64)
    for o in (qa, qb, mr1, mr2, mr_s, cqa, cqb, other):
        o.close()
    assert mr1.buf is None and mr2.buf is None
    buf.close()
    assert buf.closed
    with pytest.raises(ib.VerbsError) as ei:
        buf.addr
    assert ei.value.errno == errno.EBADF


def test_rereg_mr_refused_and_the_mr_unchanged(ctx, pd):
    qa, cqa, qb, cqb = make_rc_pair(ctx, pd)
    target = np.zeros(4096, dtype=np.uint8)
    mr_t = pd.reg_mr(target.ctypes.data, target.nbytes, ALL_ACCESS, owner=target)
    keys = (mr_t.addr, mr_t.length, mr_t.lkey, mr_t.rkey, mr_t.access)
    other = np.zeros(4096, dtype=np.uint8)
    pd2 = ctx.alloc_pd()
    F = ib.ReregMRFlags
    for flags, kw in (
        (F.CHANGE_ACCESS, dict(access=ib.AccessFlags.LOCAL_WRITE)),
        (F.CHANGE_TRANSLATION, dict(addr=other.ctypes.data, length=4096, owner=other)),
        (F.CHANGE_PD, dict(pd=pd2)),
    ):
        e = refused("ibv_rereg_mr", lambda: mr_t.rereg(flags, **kw))
        # libibverbs' stand-in op answers EOPNOTSUPP, which ibv_rereg_mr
        # reports as a command error (measured on rdma-core 44; 65's code
        # is the same); the provider did nothing, so the MR still works.
        assert e.rereg_err == -4 and "IBV_REREG_MR_ERR_CMD" in str(e)
        assert (mr_t.addr, mr_t.length, mr_t.lkey, mr_t.rkey, mr_t.access) == keys
        assert mr_t.owner is target and mr_t.pd is pd
    with pytest.raises(ValueError, match="CHANGE_PD"):
        mr_t.rereg(F.CHANGE_ACCESS, access=0, pd=pd2)
    # Still registered as before: written through its rkey.
    src = np.full(4096, 7, dtype=np.uint8)
    mr_s = pd.reg_mr(src.ctypes.data, src.nbytes, ALL_ACCESS, owner=src)
    rdma_write(qa, cqa, mr_s, mr_t.addr, mr_t.rkey)
    assert (target == 7).all()
    pd2.close()  # no MR moved into it
    for o in (qa, qb, mr_t, mr_s, cqa, cqb):
        o.close()


def test_refused_verbs_name_themselves_and_leave_nothing(ctx, pd):
    name = device_name()
    buf = np.zeros(4096, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)
    full_gc()
    before, fds = rdma_counts(name), fd_count()
    # rxe has no import_context: libibverbs answers for it.
    refused("ibv_import_device", lambda: ib.Context.import_device(ctx.cmd_fd))
    r, w = os.pipe()
    refused("ibv_import_device", lambda: ib.Context.import_device(r), err=errno.EINVAL)
    os.close(r)
    os.close(w)
    refused("ibv_import_device", lambda: ib.Context.import_device(r), err=errno.EBADF)
    refused("ibv_import_pd", lambda: ctx.import_pd(pd.handle))
    refused("ibv_import_mr", lambda: pd.import_mr(mr.handle))
    refused("ibv_import_dm", lambda: ctx.import_dm(0, 4096))
    refused("ibv_alloc_null_mr", pd.alloc_null_mr)
    refused("ibv_query_rt_values_ex", ctx.query_rt_values_ex)
    if has("ibv_alloc_dmah"):
        refused("ibv_alloc_dmah", lambda: ctx.alloc_dmah(cpu_id=0))
    else:
        missing(lambda: ctx.alloc_dmah(cpu_id=0), "ibv_alloc_dmah", 59)
    if has("ibv_query_port_speed"):
        refused("ibv_query_port_speed", lambda: ctx.query_port_speed(PORT))
    else:
        missing(lambda: ctx.query_port_speed(PORT), "ibv_query_port_speed", 62)
    full_gc()
    assert fd_count() == fds
    assert rdma_counts(name) == before
    assert [c for c in (ctx, pd, mr) if c.closed] == []
    mr.close()
