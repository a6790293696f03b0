"""The API-sequence fuzzer's generator (tests/fuzz/apiseq.py) with two
threads stepping one sequence over shared objects: calls, closes, drops
and injected failures racing on the same Context, PDs, CQs and QPs,
against the recording double.  Driven by random seeds (atheris does not
run under the free-threaded build): under the GIL here, and with the GIL
off under ThreadSanitizer by make sanitize-threads (tools/sanitize-threads
host runs this file).  Every call returns or raises a promised exception,
and at the end every object closes and the double's live count is back.

IBVERBS_FUZZ_THREAD_SEEDS sets the number of sequences (default 24)."""

import os
from pathlib import Path

FUZZ_DIR = str(Path(__file__).resolve().parent.parent / "fuzz")


def test_two_threads_share_one_call_sequence(recording):
    seeds = int(os.environ.get("IBVERBS_FUZZ_THREAD_SEEDS", "24"))

    def body(fake, fuzz_dir, seeds):
        import random
        import sys

        sys.path.insert(0, fuzz_dir)
        import apiseq
        import harness

        import ibverbs

        fake.set_recording(False)
        verbs = harness.verb_names()
        for seed in range(seeds):
            data = random.Random(seed).randbytes(1024)
            apiseq.run_threads(ibverbs, fake, verbs, data, threads=2)
        return fake.live()

    res = recording.run(body, FUZZ_DIR, seeds, timeout=600)
    assert res.ok() == 0, res.live_report
    assert res.live == 0
