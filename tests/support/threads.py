"""Threads released at once: the host and device thread tests' runner
(importable in a recording-double child: its PYTHONPATH has tests/)."""

from __future__ import annotations

import threading


def run_together(worker, n: int) -> list[str]:
    """worker(i) for i in range(n), each in its own thread, all released at
    once by a barrier; waits for them all and returns repr() of what each
    raised (empty when none did)."""
    errors: list[str] = []
    start = threading.Barrier(n)

    def run(i):
        try:
            start.wait()
            worker(i)
        except BaseException as e:  # reported by the caller
            errors.append(repr(e))

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors
