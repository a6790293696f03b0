"""efa.EndpointInfo.from_bytes on a peer's bytes: an EndpointInfo whose
to_bytes gives the same bytes back, or ValueError."""

import harness

_, (efa,) = harness.instrumented_import("ibverbs.efa")


def test_one_input(data: bytes) -> None:
    harness.round_trip(efa.EndpointInfo.from_bytes, data)


if __name__ == "__main__":
    harness.main(test_one_input)
