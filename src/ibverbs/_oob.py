"""Out-of-band messages between two processes: JSON over one TCP connection.

What the verbs cannot carry themselves (QPInfo records, addresses, rkeys,
"ready" and "done" steps) goes between two peers before and around an
RDMA transfer.  Two users share this one implementation:

- ``ibverbs.perf``: the control connection between a perf server and its
  client (the options, each side's QPs and buffer, the steps of every
  size), as perftest has one;
- ``tests/support/rendezvous.py``: the links between the nodes of a
  two-node test (tagged messages of many tests over one connection, and
  the one-shot record exchange of the classic verbs examples).

A message is a JSON value framed by its length (4 bytes, big-endian);
``bytes`` travel as ``{"$bytes": hex}`` and come back as bytes, so a
QPInfo record goes as is.  :func:`listen`, :func:`accept` and
:func:`connect` (retrying until a deadline, for peers that start seconds
apart) make the connection; :func:`send` and :func:`recv` carry the
messages; :func:`recv` with a deadline waits only for the first byte of a
message within it, then reads the whole message, so a timeout never leaves
half a frame behind.  A peer that closes the connection is
:class:`Closed`.

Why not ``ibverbs.bootstrap``'s Store: a Store is a key-value rendezvous
for N ranks that a job already runs (torch's TCPStore and its kin), with
counters and blocking gets and no notion of a connection.  The perf tool
is two processes with nothing else running (one waits for the other, as
perftest does), and the two-node tests need an ordered conversation on
which a peer that exits is seen at once (a closed socket), not after a
get's timeout.  Both need a stream between two peers, which is this.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from typing import Any

_LEN = struct.Struct(">I")


class Closed(ConnectionError):
    """The peer closed the connection."""


class TooLarge(ValueError):
    """A message longer than the reader's limit."""


def encode(obj: Any) -> Any:
    """``obj`` as JSON-ready values: bytes as ``{"$bytes": hex}``, tuples
    as lists.  TypeError for anything JSON cannot carry."""
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"$bytes": bytes(obj).hex()}
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(
        f"cannot send a {type(obj).__name__} (bytes, str, numbers, lists and dicts only)"
    )


def decode(obj: Any) -> Any:
    """The inverse of :func:`encode`."""
    if isinstance(obj, dict):
        if set(obj) == {"$bytes"}:
            return bytes.fromhex(obj["$bytes"])
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj


def send(sock: socket.socket, obj: Any) -> None:
    """Send one message (with the socket's own timeout)."""
    data = json.dumps(encode(obj)).encode()
    sock.sendall(_LEN.pack(len(data)) + data)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes; :class:`Closed` when the peer closes first."""
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except socket.timeout as e:  # not yet TimeoutError on Python 3.9
            raise TimeoutError(str(e) or "timed out") from None
        if not chunk:
            raise Closed("the peer closed the connection")
        buf += chunk
    return bytes(buf)


def recv(
    sock: socket.socket,
    *,
    limit: int | None = None,
    deadline: float | None = None,
    timeout: float | None = None,
) -> Any:
    """The next message.

    Without ``deadline`` it is read with the socket's own timeout.  With
    one (a ``time.monotonic()`` value), only the message's first byte is
    waited for until then (TimeoutError); the rest is read with
    ``timeout`` (None: blocking).

    Raises:
        Closed: the peer closed the connection.
        TooLarge: the message is longer than ``limit`` bytes.
        TimeoutError: the deadline or a socket timeout passed.
    """
    if deadline is None:
        head = recv_exact(sock, _LEN.size)
    else:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no message before the deadline")
        sock.settimeout(left)
        try:
            first = sock.recv(1)  # the only read that may hit the deadline
        except socket.timeout:  # not yet TimeoutError on Python 3.9
            raise TimeoutError("no message before the deadline") from None
        if not first:
            raise Closed("the peer closed the connection")
        sock.settimeout(timeout)
        head = first + recv_exact(sock, _LEN.size - 1)
    (n,) = _LEN.unpack(head)
    if limit is not None and n > limit:
        raise TooLarge(f"a message of {n} bytes, over the limit of {limit}")
    return decode(json.loads(recv_exact(sock, n)))


def _nodelay(sock: socket.socket) -> socket.socket:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def listen(host: str, port: int, backlog: int = 16) -> socket.socket:
    """A listening IPv4 socket on ``host:port`` ("" for every address),
    with SO_REUSEADDR (a port a test just used is free again at once)."""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host, port))
        ls.listen(backlog)
    except BaseException:
        ls.close()
        raise
    return ls


def accept(listener: socket.socket, timeout: float | None) -> socket.socket:
    """The next connection to ``listener`` (TCP_NODELAY, blocking), waiting
    up to ``timeout`` seconds (None: for ever); TimeoutError after it."""
    listener.settimeout(timeout)
    try:
        sock, _ = listener.accept()
    except socket.timeout:
        host, port = listener.getsockname()[:2]
        raise TimeoutError(f"nobody connected to {host}:{port} within {timeout} s") from None
    sock.settimeout(None)
    return _nodelay(sock)


def connect(
    host: str,
    port: int,
    *,
    timeout: float,
    retry: bool = True,
    attempt_timeout: float = 5.0,
    interval: float = 0.2,
    source: str | None = None,
) -> socket.socket:
    """A connection to ``host:port`` (TCP_NODELAY, blocking).

    With ``retry`` a refused or failed attempt (each up to
    ``attempt_timeout`` s) is tried again every ``interval`` s until
    ``timeout`` s have passed, then TimeoutError naming the last error;
    without, one attempt of ``timeout`` s, whose OSError propagates.
    ``source`` binds the local address (None: the route decides).
    """
    src = (source, 0) if source else None
    if not retry:
        sock = socket.create_connection((host, port), timeout=timeout, source_address=src)
        sock.settimeout(None)
        return _nodelay(sock)
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection(
                (host, port), timeout=attempt_timeout, source_address=src
            )
        except OSError as e:
            if time.monotonic() > deadline:
                raise TimeoutError(f"cannot reach {host}:{port}: {e}") from None
            time.sleep(interval)
            continue
        sock.settimeout(None)
        return _nodelay(sock)
