"""What the bodies of the CM host tests (tests/host/test_cm_*.py) share, in
the child that loads the recording double as libibverbs and librdmacm
(tests/fakes is on its sys.path): an error as a list, the errors of a
call under each failure of a verb, and a resolved CMID with a PD and a CQ
of its Context.  The test's side (tests/ on its sys.path) checks those
errors with verbs_errors_are."""

from __future__ import annotations


def catch(fn, *args, **kw):
    """None when fn(*args, **kw) returns; else [type name, errno,
    operation, message] of what it raised."""
    try:
        fn(*args, **kw)
    except Exception as e:
        return [type(e).__name__, getattr(e, "errno", None), getattr(e, "operation", None), str(e)]
    return None


def each_failure(fake, cases):
    """{key: catch(call)} of each (key, verb, err, skip, call) of cases,
    call made while the (skip + 1)-th next call of verb fails with err;
    and "live" (with_live) after them all."""
    out = {}
    for key, verb, err, skip, call in cases:
        fake.fail_nth(verb, err, skip)
        out[key] = catch(call)
        fake.fail_clear()
    return with_live(fake, out)


def verbs_errors_are(out, want):
    """The test's side of each_failure: nothing left alive, and out[key]
    a VerbsError of errno err from operation op, its message containing
    msg, for each key: (err, op, msg) of want."""
    assert out["live"] == ""
    for key, (err, op, msg) in want.items():
        assert out[key][:3] == ["VerbsError", err, op], (key, out[key])
        assert msg in out[key][3], (key, out[key])


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


def with_live(fake, out, *objs):
    """out, once objs are closed, with "live": the double's report of
    the objects still alive ("" when none)."""
    close_all(*objs)
    out["live"] = fake.live_report()
    return out


def request(fake, listener, private_data=b""):
    """The CMID of a CONNECT_REQUEST queued on listener."""
    import ibverbs as ib

    fake.cm_queue(listener.fd, ib.CMEventType.CONNECT_REQUEST, 0, private_data)
    return listener.get_request(timeout=1)
