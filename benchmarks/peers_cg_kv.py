#!/usr/bin/env python3
"""examples/kv_transfer.py with callgrind's counters around each batch.

    valgrind --tool=callgrind --instr-atstart=no ... \\
        python benchmarks/peers_cg_kv.py -d rxe1 --connect ADDR [kv_transfer's options]

For benchmarks/peers_callgrind.py: runs the example unchanged, except
that kv_transfer.run_batch (posting every chain and reaping every
completion of one batch) is wrapped in cgtoggle.so's cg_start / cg_stop
(CG_TOGGLE names it), so that each batch's user-space instructions are
dumped apart ("loop"), nothing of the set-up, the TCP exchange or the
receiver's CRC check counted.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import kv_transfer  # noqa: E402

_lib = ctypes.CDLL(os.environ["CG_TOGGLE"])
_run_batch = kv_transfer.run_batch


def counted_run_batch(*args, **kwargs):
    _lib.cg_start()
    try:
        return _run_batch(*args, **kwargs)
    finally:
        _lib.cg_stop()


kv_transfer.run_batch = counted_run_batch

if __name__ == "__main__":
    sys.exit(kv_transfer.main(sys.argv))
