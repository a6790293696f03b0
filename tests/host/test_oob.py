"""ibverbs._oob, the out-of-band messages of perf and the tests'
rendezvous, over socket pairs and 127.0.0.1 (no device)."""

import socket
import threading
import time

import pytest

from ibverbs import _oob


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_messages_keep_bytes_and_structures(pair):
    a, b = pair
    _oob.send(a, {"qp": b"\x00\x01", "l": (1, None, "x"), "f": 1.5})
    _oob.send(a, ["ch", "name", True])
    assert _oob.recv(b) == {"qp": b"\x00\x01", "l": [1, None, "x"], "f": 1.5}
    assert _oob.recv(b) == ["ch", "name", True]


def test_unsendable_values_are_a_type_error(pair):
    with pytest.raises(TypeError, match="cannot send a object"):
        _oob.send(pair[0], {"x": object()})


def test_limit_and_closed(pair):
    a, b = pair
    _oob.send(a, "x" * 100)
    with pytest.raises(_oob.TooLarge):
        _oob.recv(b, limit=10)
    a.close()
    with pytest.raises(_oob.Closed):
        _oob.recv(b)


def test_deadline_waits_for_the_first_byte_only(pair):
    a, b = pair
    with pytest.raises(TimeoutError):
        _oob.recv(b, deadline=time.monotonic() + 0.05, timeout=5)
    a.sendall(b"\x00")  # a message begins ...
    t = threading.Timer(0.2, lambda: a.sendall(b"\x00\x00\x04null"))
    t.start()
    # ... and is read whole although the deadline passes meanwhile.
    assert _oob.recv(b, deadline=time.monotonic() + 0.1, timeout=5) is None
    t.join()


def test_listen_accept_connect():
    with _oob.listen("127.0.0.1", 0) as ls:
        port = ls.getsockname()[1]
        with pytest.raises(TimeoutError, match="nobody connected"):
            _oob.accept(ls, 0.05)
        c = _oob.connect("127.0.0.1", port, timeout=5)
        s = _oob.accept(ls, 5)
        with c, s:
            assert c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            assert s.gettimeout() is None and c.gettimeout() is None
            _oob.send(c, {"hello": 1})
            assert _oob.recv(s) == {"hello": 1}


def test_connect_retries_until_the_timeout():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens there
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=f"cannot reach 127.0.0.1:{port}"):
        _oob.connect("127.0.0.1", port, timeout=0.5, interval=0.05)
    assert time.monotonic() - t0 >= 0.5
    with pytest.raises(ConnectionRefusedError):
        _oob.connect("127.0.0.1", port, timeout=1, retry=False)


def test_deadline_already_past_closed_peer_and_a_taken_port(pair):
    a, b = pair
    with pytest.raises(TimeoutError, match="no message before the deadline"):
        _oob.recv(b, deadline=time.monotonic() - 1)
    a.close()
    with pytest.raises(_oob.Closed, match="the peer closed the connection"):
        _oob.recv(b, deadline=time.monotonic() + 5)
    with _oob.listen("127.0.0.1", 0) as first:
        port = first.getsockname()[1]
        # SO_REUSEADDR does not share a port that is listening
        with pytest.raises(OSError):
            _oob.listen("127.0.0.1", port)
