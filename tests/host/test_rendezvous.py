"""The rendezvous helper on its own, on the host (no RDMA): two "nodes" in
threads on 127.0.0.1 exchange tagged messages; a closed channel fails the
other side at once; a deadline leaves no half-read frame behind."""

import socket
import threading

import pytest

import support.rendezvous as rv
from support import free_port


def run_nodes(addrs, side):
    """side(node) in one thread per "node" at ADDRS (one port for all);
    returns {node number: what side returned}, or raises the first error."""
    port = free_port()
    out, errors = {}, []

    def run(me):
        node = rv.Node(me, addrs, "dev", port=port)
        try:
            out[me] = side(node)
        except BaseException as e:  # reported by the test thread
            errors.append(e)
        finally:
            node.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(addrs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]
    return out


def run_pair(body):
    def side(node):
        link = node.connect(1 - node.me, timeout=20, msg_timeout=20)
        try:
            return body(node.me, link)
        finally:
            link.close()

    return run_nodes(["127.0.0.1", "127.0.0.1"], side)


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


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (3, 2, 1, 0), (2, 0, 3, 1)])
def test_full_mesh_of_four_whatever_order_they_start_in(order):
    """Node.mesh() on four "nodes" (127.0.0.1-4, one port): each node
    accepts its higher peers in whatever order they connect; a node that
    starts late (by ORDER) still meets everyone; every link carries its
    own pair's messages."""
    import time

    def side(node):
        me = node.me
        time.sleep(0.15 * order.index(me))
        links = node.mesh(timeout=20, msg_timeout=20)
        assert sorted(links) == [p for p in range(4) if p != me]
        assert all(lk.peer == p for p, lk in links.items())
        assert node.connect(min(links)) is links[min(links)]  # cached
        for p, lk in links.items():
            lk.channel("m").send("who", [me, p])
        return {p: lk.channel("m").recv("who") for p, lk in links.items()}

    out = run_nodes([f"127.0.0.{i + 1}" for i in range(4)], side)
    assert out == {me: {p: [p, me] for p in range(4) if p != me} for me in range(4)}


def test_a_stranger_is_refused_and_the_listener_survives():
    """Something that connects and greets with a bad node number gets its
    socket closed and an error naming what it said; the node is then still
    reachable by its real peer."""
    port = free_port()
    addrs = ["127.0.0.1", "127.0.0.2"]
    node0 = rv.Node(0, addrs, "dev", port=port)
    errors = []

    def stranger():
        import time

        deadline = time.monotonic() + 10
        while True:  # node 0 listens once connect() runs
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        rv.Link(s, 5, 0).send("", "hello", 7)
        errors.append(s.recv(1))  # b"": closed without an answer
        s.close()

    try:
        with pytest.raises(rv.RendezvousError, match="greeted by 7"):
            t = threading.Thread(target=stranger)
            t.start()
            node0.connect(1, timeout=10)
        t.join(10)
        assert errors == [b""]

        def peer():
            node1 = rv.Node(1, addrs, "dev", port=port)
            try:
                node1.connect(0, timeout=10).channel("c").send("x", 1)
            finally:
                node1.close()

        t = threading.Thread(target=peer)
        t.start()
        assert node0.connect(1, timeout=10).channel("c").recv("x", timeout=10) == 1
        t.join(10)
    finally:
        node0.close()
