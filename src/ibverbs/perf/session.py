"""Both sides of a perf run and the control connection between them.

The server takes the client's options, both build their
:class:`~ibverbs.perf.loops.Endpoint`, exchange what the peer needs
(``Endpoint.info``) and connect; then, size by size, the client says the
size, waits for the server to be ready, runs the loop and both say
"finished".  The messages are ``ibverbs._oob``'s (length-prefixed JSON
over TCP); a message ``{"error": ...}`` is the peer's PerfError.
"""

from __future__ import annotations

import os
import socket
import sys

import ibverbs as ib

from .. import _oob
from .loops import Endpoint, bw_client, send_bw_server, send_lat, write_lat
from .options import BW_TESTS, PerfError, check_args, iters_for, parse_cpus, unit_of

CFG_KEYS = (
    "test",
    "sizes",
    "iters",
    "max_bytes",
    "tx_depth",
    "rx_depth",
    "qps",
    "post_list",
    "cq_mod",
    "inline",
    "timeout",
)

_MAX_MESSAGE = 1 << 20


def recv_msg(sock: socket.socket):
    """The next control message.

    Raises:
        PerfError: the peer closed the connection, sent a message over
            1 MiB, or sent its error.
    """
    try:
        msg = _oob.recv(sock, limit=_MAX_MESSAGE)
    except _oob.Closed:
        raise PerfError("the peer closed the control connection") from None
    except _oob.TooLarge:
        raise PerfError("control message too large") from None
    if isinstance(msg, dict) and "error" in msg:
        raise PerfError(f"peer: {msg['error']}")
    return msg


def _clear(ep: Endpoint) -> None:
    ep.buf[:] = bytes(ep.buflen)


def _server_size(ep: Endpoint, conn, size: int, iters: int) -> None:
    a = ep.args
    _clear(ep)
    if a.test == "send_bw":
        send_bw_server(ep, size, iters, lambda: _oob.send(conn, {"ready": True}))
    elif a.test == "send_lat":
        send_lat(ep, size, iters, False, lambda: _oob.send(conn, {"ready": True}))
    else:
        _oob.send(conn, {"ready": True})
        if a.test == "write_lat":
            write_lat(ep, size, iters, client=False)


def run_server(args) -> int:
    """Serve one client: take its options over TCP, build the Endpoint,
    exchange QPInfo, run the test's passive side.  Returns the exit code.

    Raises:
        PerfError: the client's options are inconsistent.
        VerbsError: a verb failed.
        OSError: the TCP side failed (e.g. the port is taken).
    """
    host = "127.0.0.1" if args.loopback else ""
    with _oob.listen(host, args.port) as srv:
        if args.ready_fd is not None:
            os.write(args.ready_fd, b"ok")
            os.close(args.ready_fd)
        conn = _oob.accept(srv, args.timeout or None)
    with conn:
        cfg = recv_msg(conn)
        for k in CFG_KEYS:
            setattr(args, k, cfg[k])
        try:
            check_args(args)
            ep = Endpoint(args)
        except (PerfError, ib.VerbsError) as e:
            _oob.send(conn, {"error": str(e)})
            raise
        try:
            _oob.send(conn, ep.info())
            ep.connect(recv_msg(conn))
            _oob.send(conn, {"connected": True})
            while True:
                msg = recv_msg(conn)
                if "bye" in msg:
                    break
                _server_size(ep, conn, msg["size"], msg["iters"])
                recv_msg(conn)  # the client's "finished"
                _oob.send(conn, {"finished": True})
        finally:
            ep.close()
    return 0


def run_client(args, emit=None) -> list[dict]:
    """Run every size; returns the results (and calls emit(result) as each
    one is ready)."""
    check_args(args)
    results = []
    with _oob.connect(args.server, args.port, timeout=60, retry=False) as conn:
        _oob.send(conn, {k: getattr(args, k) for k in CFG_KEYS})
        ep = Endpoint(args)
        try:
            remote = recv_msg(conn)
            _oob.send(conn, ep.info())
            ep.connect(remote)
            recv_msg(conn)
            op = {
                "write_bw": ib.WROpcode.RDMA_WRITE,
                "read_bw": ib.WROpcode.RDMA_READ,
                "send_bw": ib.WROpcode.SEND,
            }.get(args.test)
            for size in args.sizes:
                iters = iters_for(args, size)
                _clear(ep)
                _oob.send(conn, {"size": size, "iters": iters})
                if args.test == "send_lat":
                    res = send_lat(ep, size, iters, True, lambda: recv_msg(conn))
                else:
                    recv_msg(conn)  # the server is ready
                    if args.test == "write_lat":
                        res = write_lat(ep, size, iters, client=True)
                    else:
                        res = bw_client(ep, op, size, iters)
                _oob.send(conn, {"finished": True})
                recv_msg(conn)
                res.update(
                    {
                        "test": args.test,
                        "size": size,
                        "qps": args.qps,
                        "tx_depth": args.tx_depth,
                        "post_list": args.post_list,
                        "cq_mod": unit_of(args) if args.test in BW_TESTS else 1,
                        "inline": args.inline,
                        "device": args.device,
                        "impl": "ibverbs",
                    }
                )
                results.append(res)
                if emit is not None:
                    emit(res)
            _oob.send(conn, {"bye": True})
        finally:
            ep.close()
    return results


def run_loopback(args, emit=None) -> list[dict]:
    """The server in a forked child (it shares the imports: no second
    interpreter start-up), the client here; both on 127.0.0.1.  Nothing of
    verbs is open yet when it forks."""
    cpus = parse_cpus(args.cpus)
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if cpus:
                os.sched_setaffinity(0, {cpus[0]})
            os.close(r)
            args.ready_fd, args.server_only = w, True
            code = run_server(args)
        except BaseException as e:  # the child must never return
            print(f"perf server: {type(e).__name__}: {e}", file=sys.stderr)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(w)
    if cpus:
        os.sched_setaffinity(0, {cpus[1]})
    try:
        ok = os.read(r, 2)
        os.close(r)
        if ok != b"ok":
            raise PerfError("the perf server failed to start")
        args.server = "127.0.0.1"
        results = run_client(args, emit)
    except BaseException:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        raise
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise PerfError(f"the perf server failed (wait status {status:#x})")
    return results
