"""QPInfo.from_bytes on a peer's bytes (as bytes, bytearray, memoryview):
a QPInfo whose to_bytes gives the same bytes back, or ValueError."""

import harness

ib, _ = harness.instrumented_import()


def test_one_input(data: bytes) -> None:
    for wrap in (bytes, bytearray, memoryview):
        harness.round_trip(ib.QPInfo.from_bytes, wrap(data))


if __name__ == "__main__":
    harness.main(test_one_input)
