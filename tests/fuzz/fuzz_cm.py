"""The connection manager's private data and events, as a peer and the CM
deliver them: the input becomes the events (type, status, private data of
any length, or none at all) that the librdmacm double (tests/fakes/
recording/cm.c, loaded as librdmacm) answers resolve, connect and accept
with, or queues on a listener and a CMID, and the private data the
package sends.  Checked:

- a CMEvent carries the event's type, status and private data as queued
  (none for the multicast events, whose parameters are not a connection's);
- a request's CMID carries the request's private data;
- connect returns the ESTABLISHED's private data, or raises a VerbsError
  whose event, status and private_data are the event that ended it;
- private data over the transport's limit is a ValueError, never sent;
- anything else raised is a promised exception (harness.PROMISED), and
  once all is closed the double's live objects are back to none.
"""

import errno
import gc
import os

import harness

os.environ.setdefault("IBVERBS_LIBRDMACM", harness.double_path())
ib, _ = harness.instrumented_import()
import atheris  # noqa: E402

FAKE = harness.fake()
T = ib.CMEventType
# The verbs whose failure the input may inject (the double's names).
VERBS = (
    "getaddrinfo",
    "create_event_channel",
    "create_id",
    "resolve_addr",
    "resolve_route",
    "rdma_create_qp",
    "connect",
    "accept",
    "reject",
    "migrate_id",
    "get_cm_event",
    "disconnect",
)
# Not rdma_destroy_id: the error paths drop an id whose destroy failed
# (nothing else to do with it), which the double then counts as live.
NO_PDATA = (T.MULTICAST_JOIN, T.MULTICAST_ERROR)


def events(fdp, most, requests=True):
    """Up to `most` events: (type, status, private data or None).  Without
    requests: none is a CONNECT_REQUEST (an active id's channel has none;
    an unexpected one there would leave its new id to nobody)."""
    out = []
    for _ in range(fdp.ConsumeIntInRange(0, most)):
        ev = fdp.ConsumeIntInRange(0, 17)  # 16, 17: no header of here names them
        if ev == T.CONNECT_REQUEST and not requests:
            ev = 17
        status = fdp.ConsumeIntInRange(-(2**31), 2**31 - 1)
        n = fdp.ConsumeIntInRange(-1, 255)
        out.append((ev, status, None if n < 0 else fdp.ConsumeBytes(n)))
    return out


def check_event(got, want):
    ev, status, pdata = want
    if int(got.event) != ev or got.status != status:
        raise AssertionError(f"{got!r} is not event {ev} status {status}")
    expect = b"" if pdata is None or ev in NO_PDATA else pdata
    if got.private_data != expect:
        raise AssertionError(f"{got!r} carried {got.private_data!r}, not {expect!r}")


def check_error(e, answers):
    """A VerbsError of an error event: the event's fields attached."""
    ev = getattr(e, "event", None)
    if ev is None:
        return
    match = [a for a in answers if a[0] == int(ev) and a[1] == e.status]
    if not match:
        raise AssertionError(f"{e!r}: event {ev} status {e.status} was not delivered")
    pdata = match[0][2]
    expect = b"" if pdata is None or int(ev) in NO_PDATA else pdata
    if e.private_data != expect:
        raise AssertionError(f"{e!r} carried {e.private_data!r}, not {expect!r}")


def answer(verb, answers):
    for ev, status, pdata in answers:
        FAKE.cm_answer(verb, ev, status, pdata or b"")


def drain(c, made):
    """Take what the answers of the last call left after the event it
    waited for."""
    while (left := c.poll_event()) is not None:
        if left.cmid is not None:
            made.insert(0, left.cmid)


def active(fdp, made):
    """resolve, create_qp and connect, answered by the input's events."""
    for verb in ("resolve_addr", "resolve_route"):
        got = events(fdp, 2, requests=False)
        # An answer that is no event would wait out resolve's timeout.
        answer(
            verb, got or [(T.ADDR_RESOLVED if verb == "resolve_addr" else T.ROUTE_RESOLVED, 0, b"")]
        )
    try:
        c = ib.CMID.resolve("192.0.2.9", 4791, timeout_ms=1)
    except ib.VerbsError:
        return
    finally:
        FAKE.cm_answer_clear()
    made.append(c)
    drain(c, made)
    pd = c.context.alloc_pd()
    made.insert(0, pd)
    cq = c.context.create_cq(4)
    made.insert(0, cq)
    qp = c.create_qp(pd, ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    made.insert(0, qp)
    pdata = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64))
    answers = events(fdp, 3, requests=False)
    answer("connect", answers or [(-1, 0, None)])
    try:
        got = c.connect(pdata, timeout=0)
    except ValueError:
        if len(pdata) <= 56:
            raise
        return
    except ib.VerbsError as e:
        check_error(e, answers)
        return
    except TimeoutError:
        return
    finally:
        FAKE.cm_answer_clear()
    est = [a for a in answers if a[0] == T.ESTABLISHED]
    want = est[0][2] or b"" if est else None
    if want is None or got != want:
        raise AssertionError(f"connect returned {got!r}, not {want!r} ({answers})")
    drain(c, made)
    for want in events(fdp, 3):
        FAKE.cm_queue(c.fd, *want)
        got = c.poll_event()
        if got.cmid is not None:  # a CONNECT_REQUEST: a CMID of its own
            made.insert(0, got.cmid)
        check_event(got, want)


def passive(fdp, made):
    """Requests and events on a listener, taken as events or as requests;
    the first request accepted or rejected with the input's private data."""
    L = ib.CMListener(4420)
    made.append(L)
    pending = events(fdp, 4)
    for ev, status, pdata in pending:
        FAKE.cm_queue(L.fd, ev, status, pdata)
    while pending:
        how = fdp.ConsumeIntInRange(0, 2)
        if how == 0:
            want = pending.pop(0)
            got = L.poll_event()
            check_event(got, want)
            r = got.cmid
            if r is not None:
                made.insert(0, r)
            if (r is None) != (want[0] != T.CONNECT_REQUEST):
                raise AssertionError(f"{got!r} of {want} has cmid {r!r}")
        else:
            # get_request and poll_request skip what is neither a request
            # nor the device's removal
            while pending and pending[0][0] not in (T.CONNECT_REQUEST, T.DEVICE_REMOVAL):
                pending.pop(0)
            want = pending.pop(0) if pending else None
            try:
                r = L.poll_request() if how == 1 else L.get_request(0)
            except ib.VerbsError as e:
                if want is None or want[0] != T.DEVICE_REMOVAL:
                    raise
                check_error(e, [want])
                continue
            except TimeoutError:
                if want is not None or how != 2:
                    raise
                return
            if (r is None) != (want is None):
                raise AssertionError(f"took {r!r} for {want}")
            if r is None:
                return
            made.insert(0, r)
            if r.private_data != (want[2] or b""):
                raise AssertionError(f"{r!r} carried {r.private_data!r}, not {want}")
        if r is None:
            continue
        pdata = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 255))
        try:
            if fdp.ConsumeBool():
                r.reject(pdata)
            else:
                pd = r.context.alloc_pd()
                made.insert(0, pd)
                cq = r.context.create_cq(4)
                made.insert(0, cq)
                made.insert(0, r.create_qp(pd, ib.QPInitAttr(send_cq=cq, recv_cq=cq)))
                answer("accept", events(fdp, 2, requests=False) or [(T.ESTABLISHED, 0, b"")])
                r.accept(pdata, timeout=0)
        except ValueError:
            if len(pdata) <= 148:
                raise
        except (ib.VerbsError, TimeoutError):
            pass
        finally:
            FAKE.cm_answer_clear()
        return  # the rest stays queued: closing frees it


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    made = []
    if fdp.ConsumeIntInRange(0, 3) == 0:
        verb = VERBS[fdp.ConsumeIntInRange(0, len(VERBS) - 1)]
        err = fdp.ConsumeIntInRange(1, 133)
        # get_cm_event's EAGAIN is the race with another reader: a poll
        # then finds nothing (tests/host/test_cm_event.py), not a failure
        FAKE.fail(verb, errno.EIO if (verb, err) == ("get_cm_event", errno.EAGAIN) else err)
    try:
        (active if fdp.ConsumeBool() else passive)(fdp, made)
    except Exception as e:
        if not harness.is_promised(e):
            raise
    finally:
        FAKE.fail_clear()
        FAKE.cm_answer_clear()
        for o in made:
            try:
                o.close()
            except ib.VerbsError:
                o.close()  # an injected failure of its destroy: once
        made.clear()
    if FAKE.live() != 0:
        gc.collect()  # a CMID and its Context hold each other
    if FAKE.live() != 0:
        raise AssertionError(f"left live: {FAKE.live_report()}")


if __name__ == "__main__":
    harness.main(test_one_input)
