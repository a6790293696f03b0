"""Asynchronous events against a real device (rxe0 in the Soft-RoCE guest).

The link-flap test takes veth0 (rxe0's netdev, see tools/rxe-vm) down and
up: it needs root and the guest's network, and restores the link.
"""

import errno
import os
import shutil
import threading
import time

import numpy as np
import pytest

import ibverbs as ib

from support import GID_INDEX, PORT
from support.rdma import (
    ALL_ACCESS,
    drain_async_events,
    overrun_cq,
    set_link,
    wait_async_event,
    wait_port_active,
)
from support.timeouts import scaled

pytestmark = pytest.mark.integration

ET = ib.EventType


def test_nonblocking_async_fd_without_event_is_eagain(ctx):
    os.set_blocking(ctx.async_fd, False)
    with pytest.raises(ib.VerbsError) as ei:
        ctx.get_async_event()
    assert ei.value.errno == errno.EAGAIN
    assert ei.value.operation == "ibv_get_async_event"
    assert not ctx.closed


def test_async_event_not_instantiable():
    with pytest.raises(TypeError):
        ib.AsyncEvent()


def overflow_cq(ctx, pd):
    """A CQ of one entry that gets more completions than it holds (rxe
    reports CQ_ERR).  Returns (small, qa, qb, other, mr)."""
    small = ctx.create_cq(1)
    other = ctx.create_cq(64)
    qa = pd.create_qp(ib.QPInitAttr(send_cq=small, recv_cq=other))
    qb = pd.create_qp(ib.QPInitAttr(send_cq=other, recv_cq=other))
    port_attr = ctx.query_port(PORT)
    gid = ctx.query_gid(PORT, GID_INDEX)
    ia = ib.local_qp_info(qa, port_attr, gid, port=PORT)
    ibb = ib.local_qp_info(qb, port_attr, gid, port=PORT)
    ib.connect_rc(qa, ibb, port=PORT, sgid_index=GID_INDEX, access=ALL_ACCESS)
    ib.connect_rc(qb, ia, port=PORT, sgid_index=GID_INDEX, access=ALL_ACCESS)
    buf = np.zeros(4096, dtype=np.uint8)
    mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=buf)
    overrun_cq(qa, small, mr, offset=1024)
    return small, qa, qb, other, mr


def test_cq_overflow_event_holds_the_cq(ctx, pd):
    small, qa, qb, other, mr = overflow_cq(ctx, pd)
    ev = wait_async_event(ctx, ET.CQ_ERR, timeout=15)
    assert ev.element_type == "cq"
    assert ev.element is small
    assert ev.context is ctx
    assert not ev.acked
    assert "cq=" in repr(ev)
    qa.close()
    # ibv_destroy_cq would wait for the ack forever: close refuses instead.
    with pytest.raises(ib.VerbsError) as ei:
        small.close()
    assert ei.value.errno == errno.EBUSY
    assert not small.closed
    ev.ack()
    assert ev.acked
    ev.ack()  # idempotent
    # Each dropped completion raised a CQ_ERR: hold the others unacked.
    time.sleep(0.2)
    os.set_blocking(ctx.async_fd, False)
    pending = []
    while True:
        try:
            pending.append(ctx.get_async_event())
        except ib.VerbsError as e:
            assert e.errno == errno.EAGAIN
            break
    for p in pending:
        if p.event_type == ET.CQ_ERR:
            assert p.element is small
    if any(p.element is small for p in pending):
        with pytest.raises(ib.VerbsError):
            small.close()
    # Dropping an unacked event acks it.
    del pending, p
    small.close()
    assert small.closed
    qb.close()
    other.close()


def test_event_context_manager_acks(ctx, pd):
    small, qa, qb, other, mr = overflow_cq(ctx, pd)
    with wait_async_event(ctx, ET.CQ_ERR, timeout=15) as ev:
        assert ev.element is small
    assert ev.acked
    qa.close()
    time.sleep(0.2)
    drain_async_events(ctx)
    small.close()
    assert small.closed


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="needs root and ip(8) (runs in the rxe guest)",
)
def test_link_flap_delivers_port_events(ctx):
    drain_async_events(ctx)
    result = []

    def waiter():
        try:
            result.append(ctx.get_async_event())
        except Exception as e:  # pragma: no cover - reported below
            result.append(e)

    t = threading.Thread(target=waiter)
    t.start()
    try:
        time.sleep(0.3)
        assert t.is_alive()
        # The blocked thread marks the context busy; the GIL is free.
        with pytest.raises(ib.VerbsError, match="another thread") as ei:
            ctx.close()
        assert ei.value.errno == errno.EBUSY
        set_link("down")
        t.join(scaled(15))
        assert not t.is_alive()
    finally:
        if t.is_alive():
            set_link("down")
            t.join(scaled(15))
        set_link("up")
    (ev,) = result
    assert isinstance(ev, ib.AsyncEvent), ev
    if ev.event_type != ET.PORT_ERR:  # e.g. a GID change came first
        ev.ack()
        ev = wait_async_event(ctx, ET.PORT_ERR, timeout=15)
    assert ev.element_type == "port"
    assert ev.element == PORT
    assert ev.context is ctx
    assert "port" in repr(ev).lower()
    ev.ack()
    ev = wait_async_event(ctx, ET.PORT_ACTIVE, timeout=15)
    assert ev.element_type == "port" and ev.element == PORT
    ev.ack()
    wait_port_active(ctx, timeout=20)
    drain_async_events(ctx)
    ctx.close()
    assert ctx.closed
