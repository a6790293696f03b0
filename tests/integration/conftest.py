"""Fixtures for tests against a real RDMA device (rxe0 in the guest)."""

import os

import pytest

import ibverbs as ib

DEVICE = os.environ.get("IBVERBS_TEST_DEVICE")
PORT = int(os.environ.get("IBVERBS_TEST_PORT", "1"))
GID_INDEX = int(os.environ.get("IBVERBS_TEST_GID_INDEX", "1"))

ALL_ACCESS = (
    ib.AccessFlags.LOCAL_WRITE
    | ib.AccessFlags.REMOTE_WRITE
    | ib.AccessFlags.REMOTE_READ
    | ib.AccessFlags.REMOTE_ATOMIC
)


@pytest.fixture
def device_name():
    if DEVICE:
        return DEVICE
    devs = ib.get_device_list()
    if not devs:
        pytest.skip("no RDMA device")
    return devs[0].name


@pytest.fixture
def ctx(device_name):
    c = ib.Context(device_name)
    yield c
    _close_tree(c)


@pytest.fixture
def port():
    return PORT


@pytest.fixture
def gid_index():
    return GID_INDEX


@pytest.fixture
def pd(ctx):
    return ctx.alloc_pd()


@pytest.fixture
def cq(ctx):
    return ctx.create_cq(256)


def _close_tree(ctx):
    """Nothing to do: tests close what they create, and the GC closes the
    rest in a safe order because children hold their parents."""
    import gc

    gc.collect()


def make_rc_pair(ctx, pd, *, qp_type=None, max_send_wr=128, max_recv_wr=128,
                 max_send_sge=2, max_recv_sge=2, max_inline_data=0,
                 access=ALL_ACCESS, srq=None, rnr_retry=7, cq_size=256):
    """Two QPs on the same device connected to each other (loopback), each
    with its own CQ.  Returns (qp_a, cq_a, qp_b, cq_b)."""
    qp_type = ib.QPType.RC if qp_type is None else qp_type
    port_attr = ctx.query_port(PORT)
    gid = ctx.query_gid(PORT, GID_INDEX)
    out = []
    for _ in range(2):
        cq = ctx.create_cq(cq_size)
        qp = pd.create_qp(ib.QPInitAttr(
            send_cq=cq, recv_cq=cq, qp_type=qp_type, srq=srq,
            max_send_wr=max_send_wr, max_recv_wr=max_recv_wr,
            max_send_sge=max_send_sge, max_recv_sge=max_recv_sge,
            max_inline_data=max_inline_data))
        out.append((qp, cq))
    (qa, ca), (qb, cb) = out
    ia = ib.local_qp_info(qa, port_attr, gid, port=PORT, psn=0x1234)
    ibb = ib.local_qp_info(qb, port_attr, gid, port=PORT, psn=0x4321)
    ib.connect_rc(qa, ibb, port=PORT, sgid_index=GID_INDEX, access=access,
                  local_psn=ia.psn, rnr_retry=rnr_retry)
    ib.connect_rc(qb, ia, port=PORT, sgid_index=GID_INDEX, access=access,
                  local_psn=ibb.psn, rnr_retry=rnr_retry)
    return qa, ca, qb, cb


def mkbuf(pd, n, access=ALL_ACCESS, dtype=None, fill=0):
    """A numpy buffer of n items (uint8 unless dtype says otherwise),
    filled with fill, and its MR."""
    import numpy as np

    buf = np.full(n, fill, dtype=np.uint8 if dtype is None else dtype)
    return buf, pd.reg_mr(buf.ctypes.data, buf.nbytes, access)


def ok(wcs, opcode=None):
    """Raise for a failed completion; check the opcode when given."""
    for wc in wcs:
        wc.raise_for_status()
        if opcode is not None:
            assert wc.opcode == opcode
    return wcs


def poll_until(cq, n=1, timeout=10.0):
    """Poll cq until n completions arrived; returns them (fails on timeout)."""
    import time

    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        got.extend(cq.poll(n - len(got)))
        if len(got) < n and time.monotonic() > deadline:
            raise AssertionError(f"timed out: {len(got)} of {n} completions")
    return got
