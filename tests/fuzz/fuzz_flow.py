"""Flow specs: QP.create_flow on a buffer from a peer or a user (the C
check of struct ibv_flow_attr and its specs, qp/flow.c), on the recording
double.  A Flow (closed again) or ValueError / VerbsError; the double
sees only buffers whose sizes hold."""

import harness

ib, _ = harness.instrumented_import("ibverbs.flow")
FAKE = harness.fake()
CTX = ib.Context("fake0")
PD = CTX.alloc_pd()
CQ = CTX.create_cq(16)
QP = PD.create_qp(ib.QPInitAttr(send_cq=CQ, qp_type=ib.QPType.RAW_PACKET))


def test_one_input(data: bytes) -> None:
    base = FAKE.live()
    for wrap in (bytes, bytearray):
        try:
            flow = QP.create_flow(wrap(data))
        except (ValueError, TypeError, OSError):
            continue
        flow.close()
    if FAKE.live() != base:
        raise AssertionError(f"left in the double: {FAKE.live_report()}")


if __name__ == "__main__":
    harness.main(test_one_input)
