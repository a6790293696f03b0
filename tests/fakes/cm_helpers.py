"""What the bodies of the CM host tests (tests/host/test_cm_*.py) share, in
the child that loads the recording double as libibverbs and librdmacm
(tests/fakes is on its sys.path): an error as a list, and a resolved CMID
with a PD and a CQ of its Context."""

from __future__ import annotations


def catch(fn, *args, **kw):
    """None when fn(*args, **kw) returns; else [type name, errno,
    operation, message] of what it raised."""
    try:
        fn(*args, **kw)
    except Exception as e:
        return [type(e).__name__, getattr(e, "errno", None), getattr(e, "operation", None), str(e)]
    return None


def world(host="192.0.2.9"):
    """A CMID resolved to host port 4791, a PD and a CQ of its Context."""
    import ibverbs as ib

    c = ib.CMID.resolve(host, 4791)
    pd = c.context.alloc_pd()
    cq = c.context.create_cq(8)
    return c, pd, cq


def qp_of(c, pd, cq, **kw):
    """c's QP on pd and cq (QPInitAttr's other fields from kw)."""
    import ibverbs as ib

    return c.create_qp(pd, ib.QPInitAttr(send_cq=cq, recv_cq=cq, **kw))


def close_all(*objs):
    for o in objs:
        o.close()


def request(fake, listener, private_data=b""):
    """The CMID of a CONNECT_REQUEST queued on listener."""
    import ibverbs as ib

    fake.cm_queue(listener.fd, ib.CMEventType.CONNECT_REQUEST, 0, private_data)
    return listener.get_request(timeout=1)
