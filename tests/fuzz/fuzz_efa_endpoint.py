"""efa.EndpointInfo.from_bytes on a peer's bytes: an EndpointInfo whose
to_bytes gives the same bytes back, or ValueError."""

import harness

_, (efa,) = harness.instrumented_import("ibverbs.efa")


def test_one_input(data: bytes) -> None:
    try:
        ep = efa.EndpointInfo.from_bytes(data)
    except ValueError:
        return
    if ep.to_bytes() != data:
        raise AssertionError(f"{data!r} read as {ep}, written back as {ep.to_bytes()!r}")


if __name__ == "__main__":
    harness.main(test_one_input)
