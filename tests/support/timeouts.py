"""Timeouts that hold on a loaded machine.

Every watchdog of the device and two-node tests (a child process's time
limit, a wait for a completion, an event, a peer's message) was tuned in a
quiet emulated guest; on a machine where other work takes the CPUs, the
guest runs several times slower and a fixed limit kills a test that was
merely slow.  So a limit is written as the seconds it takes in a quiet guest
and scaled here by the *time factor*: how much slower than quiet the guest
runs now.

- ``factor()``: the factor of this process.  tools/rxe-vm's guest measures
  it at boot (tools/rxe-vm.d/timefactor: an empty shell loop against its
  time in a quiet guest) and passes it in ``IBVERBS_TIME_FACTOR``; without
  it (a guest started otherwise), the first call measures it with
  ``measure()`` inside a guest (``RXE_VM`` set) and takes 1 elsewhere.
- ``scaled(seconds)``: SECONDS times the factor.
- ``Deadline(seconds)``: a scaled deadline that, when it is reached,
  measures the speed again (``recheck()``) and moves itself out if the
  machine has become slower since: load that begins in the middle of a run
  (make test's background prefetch) is seen, not only load at boot.
- ``communicate(proc, seconds)``: ``Popen.communicate`` under a Deadline,
  killing the process only when the deadline has really passed.

A limit that a test *asserts* (a verb's own timeout argument that must fire,
the retry timer of a QP) is not a watchdog and is never scaled.
"""

from __future__ import annotations

import os
import subprocess
import time

ENV = "IBVERBS_TIME_FACTOR"
# measure()'s loop: ITERATIONS additions, REFERENCE_S seconds in a quiet
# amd64 guest of tools/rxe-vm (CPython 3.11, Debian's 6.1 kernel, 2
# vCPUs; the fastest of 30 rounds, measured 2026-12-03).
ITERATIONS = 50_000
REFERENCE_S = 0.026
MAX_FACTOR = 50.0

_factor: float | None = None


def in_guest() -> bool:
    return bool(os.environ.get("RXE_VM"))


def _round() -> float:
    t = time.perf_counter()
    x = 0
    for i in range(ITERATIONS):
        x += i
    return time.perf_counter() - t


def measure() -> float:
    """The factor now: the median of five rounds of the loop against its
    quiet time, between 1 and MAX_FACTOR (about 0.15 s in a quiet guest)."""
    rounds = sorted(_round() for _ in range(5))
    return min(MAX_FACTOR, max(1.0, rounds[2] / REFERENCE_S))


def _set(value: float) -> None:
    global _factor
    _factor = value
    # Child processes (the guides' snippets, the case scripts) inherit it.
    os.environ[ENV] = f"{value:.2f}"


def factor() -> float:
    """This process's time factor (see the module's doc)."""
    if _factor is None:
        given = os.environ.get(ENV)
        try:
            value = float(given) if given else None
        except ValueError:
            value = None
        if value is None:
            value = measure() if in_guest() else 1.0
        _set(min(MAX_FACTOR, max(1.0, value)))
    assert _factor is not None
    return _factor


def recheck() -> float:
    """Measure again (in a guest); the factor grows if the machine has
    become slower, never shrinks.  The factor after it."""
    current = factor()
    if in_guest():
        now = measure()
        if now > current:
            _set(now)
    return factor()


def scaled(seconds: float) -> float:
    """SECONDS, a limit for a quiet guest, for this machine now."""
    return seconds * factor()


class Deadline:
    """SECONDS (a quiet guest's) from now, scaled; when reached, it
    re-measures once per expiry and moves out if the factor grew."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._factor = factor()
        self._end = time.monotonic() + seconds * self._factor

    def left(self) -> float:
        """Seconds to the deadline (0 once it has passed for good)."""
        left = self._end - time.monotonic()
        if left <= 0:
            now = recheck()
            if now > self._factor:
                self._end += self.seconds * (now - self._factor)
                self._factor = now
                left = self._end - time.monotonic()
        return max(0.0, left)

    def expired(self) -> bool:
        return self.left() <= 0

    @property
    def limit(self) -> float:
        """The scaled limit, in seconds, as it stands (for messages)."""
        return self.seconds * self._factor


def communicate(proc: subprocess.Popen, seconds: float | Deadline, input=None):
    """``proc.communicate(input)`` within a Deadline of SECONDS (or the
    Deadline given); past it, subprocess.TimeoutExpired (the process is
    left running: the caller kills it)."""
    deadline = seconds if isinstance(seconds, Deadline) else Deadline(seconds)
    while True:
        try:
            return proc.communicate(input, timeout=max(0.01, deadline.left()))
        except subprocess.TimeoutExpired:
            input = None  # written already
            if deadline.expired():
                raise
