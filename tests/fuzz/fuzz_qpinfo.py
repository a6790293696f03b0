"""QPInfo.from_bytes on a peer's bytes: a QPInfo (whose to_bytes gives
the same bytes back) or ValueError, nothing else."""

import harness

ib, _ = harness.instrumented_import()


def test_one_input(data: bytes) -> None:
    for wrap in (bytes, bytearray, memoryview):
        try:
            info = ib.QPInfo.from_bytes(wrap(data))
        except ValueError:
            continue
        if info.to_bytes() != data:
            raise AssertionError(f"{data!r} read as {info}, written back as {info.to_bytes()!r}")


if __name__ == "__main__":
    harness.main(test_one_input)
