"""The rendezvous helper on its own, on the host (no RDMA): two "nodes" in
threads on 127.0.0.1 exchange tagged messages; a closed channel fails the
other side at once; a deadline leaves no half-read frame behind."""

import socket
import threading

import pytest

import support.rendezvous as rv


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_pair(body):
    port = free_port()
    out, errors = {}, []

    def side(me):
        node = rv.Node(me, ["127.0.0.1", "127.0.0.1"], "dev", port=port)
        try:
            link = node.connect(1 - me, timeout=20, msg_timeout=20)
            try:
                out[me] = body(me, link)
            finally:
                link.close()
        except BaseException as e:  # reported by the test thread
            errors.append(e)
        finally:
            node.close()

    threads = [threading.Thread(target=side, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]
    return out


def test_exchange_bytes_and_structures():
    def body(me, link):
        with link.channel("a") as c:
            return c.exchange("x", {"me": me, "raw": bytes([me, 255]), "l": [1, None]})

    out = run_pair(body)
    assert out[0] == {"me": 1, "raw": b"\x01\xff", "l": [1, None]}
    assert out[1]["me"] == 0 and out[1]["raw"] == b"\x00\xff"


def test_messages_of_other_channels_wait_for_their_reader():
    def body(me, link):
        if me == 0:
            link.channel("later").send("m", "for later")
            link.channel("now").send("m", "for now")
            return None
        return [link.channel("now").recv("m"), link.channel("later").recv("m")]

    assert run_pair(body)[1] == ["for now", "for later"]


def test_closed_channel_fails_the_waiting_side_at_once():
    def body(me, link):
        c = link.channel("t")
        if me == 0:
            c.close("failed")
            return None
        with pytest.raises(rv.PeerFailed, match="ended 't' .failed. without sending 'x'"):
            c.recv("x", timeout=15)
        return "ok"

    assert run_pair(body)[1] == "ok"


def test_timeout_then_the_link_still_works():
    def body(me, link):
        c = link.channel("t")
        if me == 1:
            with pytest.raises(TimeoutError):
                c.recv("late", timeout=0.2)
            c.send("asked")
            return c.recv("late")
        c.recv("asked")
        c.send("late", 42)
        return None

    assert run_pair(body)[1] == 42


def test_send_refuses_what_json_cannot_carry():
    def body(me, link):
        with pytest.raises(TypeError, match="cannot send a object"):
            link.send("c", "n", object())
        return "ok"

    assert run_pair(body) == {0: "ok", 1: "ok"}


def test_exchange_once_times_out_cleanly():
    with socket.create_server(("127.0.0.1", 0)) as ls:  # never accepts
        port = ls.getsockname()[1]
        with pytest.raises(TimeoutError, match="did not answer"):
            rv.exchange_once("127.0.0.1", port, b"x" * 28, listen=False, timeout=0.5)


def test_from_env_needs_the_rig():
    with pytest.raises(rv.RendezvousError, match="IBVERBS_NODE is not set"):
        rv.Node.from_env({})
    n = rv.Node.from_env(
        {
            "IBVERBS_NODE": "1",
            "IBVERBS_NODE_ADDRS": "198.18.0.1,198.18.0.2",
            "IBVERBS_DEVICE": "rxe1",
        }
    )
    assert n.me == 1 and n.addr == "198.18.0.2" and n.port == rv.DEFAULT_PORT
