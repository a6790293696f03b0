"""The out-of-band channel's frames (ibverbs._oob, perf's control
connection): a peer's bytes on a socket read message by message.  Each
read returns a message, or raises Closed (the bytes ran out), TooLarge or
ValueError (not JSON, not UTF-8); the reader never hangs on a frame that
announces more than it sends."""

import socket

import harness

_, (oob,) = harness.instrumented_import("ibverbs._oob")
LIMIT = 1 << 16


def test_one_input(data: bytes) -> None:
    a, b = socket.socketpair()
    try:
        a.sendall(data)
        a.shutdown(socket.SHUT_WR)
        b.settimeout(5)
        for _ in range(64):
            try:
                msg = oob.recv(b, limit=LIMIT)
            except oob.Closed:
                return
            except (oob.TooLarge, ValueError, RecursionError):
                return
            # What was read goes back out unchanged.
            oob.encode(msg)
    finally:
        a.close()
        b.close()


if __name__ == "__main__":
    harness.main(test_one_input)
