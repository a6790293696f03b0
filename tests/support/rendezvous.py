"""Where the halves of a two-node test meet: a message channel over TCP.

``tools/rxe-vm --nodes N`` runs the same command once per node, each with
its own RDMA device.  This module is what the per-node processes use to
find each other and to exchange what the verbs need out of band (QPInfo
records, addresses, rkeys, "I am done" signals).

The environment contract (set by tools/rxe-vm for every node):

  IBVERBS_NODE        this node's number: 0, 1, ...
  IBVERBS_NODES       how many nodes there are
  IBVERBS_NODE_ADDRS  the nodes' IPv4 addresses, comma-separated, in node
                      order (198.18.0.1,198.18.0.2,...)
  IBVERBS_DEVICE      this node's RDMA device (rxe<i>; rxe0 with
                      --separate-vms); IBVERBS_TEST_DEVICE,
                      IBVERBS_TEST_PORT and IBVERBS_TEST_GID_INDEX name the
                      same device for the one-device fixtures
  IBVERBS_NODE_NETDEV this node's network interface (veth<i>, or eth0)
  IBVERBS_NODE_LINK   the interface to take down to cut this node off the
                      link (ip link set ... down) without losing its routes

Use::

    from support.rendezvous import Node
    node = Node.from_env()                 # who am I, who are the others
    link = node.connect(peer=1 - node.me)  # one TCP connection per pair
    links = node.mesh()                    # or one to every other node
    chan = link.channel("test_x")          # a per-test view
    theirs = chan.exchange("qp", info.to_bytes())
    chan.send("done"); chan.recv("done")

The node with the lower number listens (on its own address, port
IBVERBS_RENDEZVOUS_PORT, default 18600), the other connects, retrying
until the timeout: the two processes may start seconds apart in the guest.
The connecting side binds no source address, so in the shared-kernel rig
the route lookup takes the local route and this control link runs over lo:
it survives a node's RDMA link going down (tests of that fault need it).
With --separate-vms it crosses the one link between the guests.
Messages are JSON (bytes are carried as hex), each framed by a 4-byte
length (``ibverbs._oob``, which ``ibverbs.perf`` uses too) and tagged with
a channel name and a message name, so the two sides
of one test cannot read each other's messages from another test.  A
message for a channel that is not being read is kept until it is.

When one side of a test fails, its channel sends an "end" message as the
channel closes (``with link.channel(...)``, or ``close()``); a ``recv`` on
the other side for that channel then raises :class:`PeerFailed` at once
instead of waiting out its timeout.  A peer that exits closes the socket:
``recv`` raises :class:`PeerGone`.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from ibverbs import _oob
from support.timeouts import Deadline, factor, scaled

DEFAULT_PORT = 18600
_END = "\x00end"


class RendezvousError(Exception):
    """The peers could not meet or exchange a message."""


class PeerGone(RendezvousError):
    """The peer closed the connection (its process ended)."""


class PeerFailed(RendezvousError):
    """The peer closed this channel (its half of the test ended) before
    sending the message we wait for."""


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    try:
        return _oob.recv_exact(sock, n)
    except _oob.Closed:
        raise PeerGone("the peer closed the connection") from None


class Link:
    """One TCP connection to one peer node, carrying tagged messages."""

    def __init__(self, sock: socket.socket, me: int, peer: int, timeout: float = 60.0):
        self.sock = sock
        self.me = me
        self.peer = peer
        self.timeout = scaled(timeout)  # a quiet guest's seconds, scaled
        self._pending: dict[tuple[str, str], list[Any]] = {}
        self._ended: dict[str, str] = {}

    # -- raw messages ---------------------------------------------------------
    def send(self, channel: str, name: str, value: Any = None) -> None:
        self.sock.settimeout(self.timeout)
        _oob.send(self.sock, [channel, name, value])

    def _read_one(self, deadline: float) -> None:
        # Only the first byte waits for the deadline: once a message has
        # begun, all of it is read (with the link's timeout), so that a
        # deadline never leaves half a frame behind.
        try:
            channel, name, value = _oob.recv(self.sock, deadline=deadline, timeout=self.timeout)
        except _oob.Closed:
            raise PeerGone("the peer closed the connection") from None
        if name == _END:
            self._ended[channel] = value
        else:
            self._pending.setdefault((channel, name), []).append(value)

    def recv(self, channel: str, name: str, timeout: float | None = None) -> Any:
        """The next message NAME on CHANNEL from the peer; TIMEOUT is a
        quiet guest's seconds (support/timeouts.py), the link's by default."""
        deadline = Deadline(self.timeout / factor() if timeout is None else timeout)
        key = (channel, name)
        while True:
            queue = self._pending.get(key)
            if queue:
                return queue.pop(0)
            if channel in self._ended:
                raise PeerFailed(
                    f"node {self.peer} ended {channel!r} "
                    f"({self._ended[channel]}) without sending {name!r}"
                )
            try:
                self._read_one(time.monotonic() + deadline.left())
            except TimeoutError:
                if not deadline.expired():
                    continue  # the machine became slower: the deadline moved
                raise TimeoutError(
                    f"no {name!r} from node {self.peer} on {channel!r}"
                    f" within {deadline.limit:.0f} s"
                ) from None

    def channel(self, name: str) -> Channel:
        return Channel(self, name)

    def close(self) -> None:
        self.sock.close()


class Channel:
    """The messages of one test (or step) on a :class:`Link`."""

    def __init__(self, link: Link, name: str):
        self.link = link
        self.name = name
        self.outcome = "failed"
        self.closed = False

    def send(self, name: str, value: Any = None) -> None:
        self.link.send(self.name, name, value)

    def recv(self, name: str, timeout: float | None = None) -> Any:
        return self.link.recv(self.name, name, timeout)

    def exchange(self, name: str, value: Any = None, timeout: float | None = None) -> Any:
        """Send VALUE as NAME and return the peer's NAME."""
        self.send(name, value)
        return self.recv(name, timeout)

    def barrier(self, name: str, timeout: float | None = None) -> None:
        self.exchange(name, None, timeout)

    def close(self, outcome: str | None = None) -> None:
        """Tell the peer this side is done with the channel."""
        if self.closed:
            return
        self.closed = True
        try:
            self.link.send(self.name, _END, outcome or self.outcome)
        except OSError:
            pass  # the peer is gone: nothing to tell

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, et, ev, tb) -> None:
        self.close("passed" if et is None else f"{et.__name__}: {ev}")


class Node:
    """This node's place among the nodes of a ``tools/rxe-vm --nodes`` run."""

    def __init__(self, me: int, addrs: list[str], device: str, port: int = DEFAULT_PORT):
        if not 0 <= me < len(addrs):
            raise ValueError(f"node {me} is not one of {len(addrs)} nodes")
        self.me = me
        self.addrs = addrs
        self.device = device
        self.port = port
        self._listener: socket.socket | None = None
        self._links: dict[int, Link] = {}  # made by connect()
        self._early: dict[int, Link] = {}  # accepted before connect() asked

    @classmethod
    def from_env(cls, environ=os.environ) -> Node:
        try:
            me = int(environ["IBVERBS_NODE"])
            addrs = environ["IBVERBS_NODE_ADDRS"].split(",")
            device = environ["IBVERBS_DEVICE"]
        except KeyError as e:
            raise RendezvousError(
                f"{e.args[0]} is not set: run under tools/rxe-vm --nodes N"
            ) from None
        port = int(environ.get("IBVERBS_RENDEZVOUS_PORT", DEFAULT_PORT))
        return cls(me, addrs, device, port)

    @property
    def addr(self) -> str:
        return self.addrs[self.me]

    def connect(self, peer: int, timeout: float = 120.0, msg_timeout: float = 60.0) -> Link:
        """The TCP link to node PEER: the lower-numbered node accepts, the
        other connects (retrying until TIMEOUT).  The connecting side says
        who it is first and the accepting side answers at once, so links
        to several peers share one listening port and may be made in any
        order.  A second call for the same peer returns the same link."""
        if peer == self.me or not 0 <= peer < len(self.addrs):
            raise ValueError(f"no peer node {peer} for node {self.me}")
        if peer in self._links:
            return self._links[peer]
        deadline = time.monotonic() + scaled(timeout)
        if self.me < peer:
            link = self._accept_from(peer, deadline, msg_timeout)
        else:
            sock = self._connect_to(peer, deadline)
            link = Link(sock, self.me, peer, msg_timeout)
            link.send("", "hello", self.me)
            got = link.recv("", "hello", timeout=max(1.0, deadline - time.monotonic()))
            if got != peer:
                sock.close()
                raise RendezvousError(f"expected node {peer}, met node {got}")
        self._links[peer] = link
        return link

    def mesh(self, timeout: float = 120.0, msg_timeout: float = 60.0) -> dict[int, Link]:
        """Links to every other node, by node number (a full mesh: every
        node calls this)."""
        return {
            p: self.connect(p, timeout, msg_timeout) for p in range(len(self.addrs)) if p != self.me
        }

    def _accept_from(self, peer: int, deadline: float, msg_timeout: float) -> Link:
        if self._listener is None:
            self._listener = _oob.listen(self.addr, self.port, 16)
        while peer not in self._early:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"node {peer} did not connect to {self.addr}:{self.port}")
            try:
                sock = _oob.accept(self._listener, left)
            except TimeoutError:
                continue
            # Whoever connected: learn who it is and answer at once (a
            # node waiting for our answer may be what another node, and
            # so our wanted peer, waits for); keep it until asked for.
            link = Link(sock, self.me, -1, msg_timeout)
            try:
                got = link.recv("", "hello", timeout=max(1.0, deadline - time.monotonic()))
                if not isinstance(got, int) or not self.me < got < len(self.addrs):
                    raise RendezvousError(f"node {self.me} was greeted by {got!r}")
                if got in self._early or got in self._links:
                    raise RendezvousError(f"node {got} connected twice")
                link.peer = got
                link.send("", "hello", self.me)
            except BaseException:
                sock.close()
                raise
            self._early[got] = link
        return self._early.pop(peer)

    def _connect_to(self, peer: int, deadline: float) -> socket.socket:
        # No source address: in the shared-kernel rig the link then runs
        # over lo, so it survives a node's link going down.
        try:
            return _oob.connect(
                self.addrs[peer], self.port, timeout=max(0.0, deadline - time.monotonic())
            )
        except TimeoutError as e:
            raise TimeoutError(f"node {peer}: {e}") from None

    def close(self) -> None:
        """Close the listening socket and every link made or accepted."""
        for link in [*self._links.values(), *self._early.values()]:
            link.close()
        self._links.clear()
        self._early.clear()
        if self._listener is not None:
            self._listener.close()
            self._listener = None


def exchange_once(
    addr: str, port: int, payload: bytes, *, listen: bool, timeout: float, source: str | None = None
) -> bytes:
    """A one-shot exchange of equal-sized records, as the classic verbs
    examples do it: the client sends first, the server answers.  Raises
    TimeoutError (and leaves no socket open) if the peer does not answer
    within TIMEOUT seconds."""
    n = len(payload)
    if listen:
        with _oob.listen(addr, port, 1) as ls:
            conn = _oob.accept(ls, timeout)
            with conn:
                conn.settimeout(timeout)
                try:
                    theirs = _recv_exact(conn, n)
                    conn.sendall(payload)
                except (socket.timeout, TimeoutError):  # two classes on 3.9
                    raise TimeoutError("the client sent nothing") from None
                return theirs
    with _oob.connect(addr, port, timeout=timeout, retry=False, source=source) as s:
        s.settimeout(timeout)
        try:
            s.sendall(payload)
            return _recv_exact(s, n)
        except (socket.timeout, TimeoutError):  # two classes on 3.9
            raise TimeoutError(f"{addr}:{port} did not answer within {timeout} s") from None
