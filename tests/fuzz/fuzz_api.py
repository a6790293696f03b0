"""The API-sequence fuzzer: the input chooses a sequence of public calls
over the recording double (tests/fuzz/apiseq.py says which), the
extension under ASan + UBSan (tools/fuzz api)."""

import harness

ib, _ = harness.instrumented_import()
FAKE = harness.fake()
VERBS = harness.verb_names()

import apiseq  # noqa: E402


def test_one_input(data: bytes) -> None:
    seq = apiseq.Sequence(ib, FAKE, VERBS)
    seq.run(apiseq.Source(data))
    seq.finish()


if __name__ == "__main__":
    harness.main(test_one_input)
