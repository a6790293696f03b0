"""Each allocation of one call failing in turn, in a child of the
recording double (CPython's ``_testcapi.set_nomemory``, as
tests/support/failinj.py's ``inject_alloc`` does for the World's methods).

    from support.nomem import each_allocation_fails
    out = each_allocation_fails(lambda: mlx5.init_obj(qp))

calls ``fn`` with the k-th allocation from its start failing, k = 0, 1,
..., until eight calls in a row raise no MemoryError (the call has fewer
allocations than k), and returns a dict: ``failed`` (how many calls raised
MemoryError), ``other`` (the repr of any other exception: a wrong error
path) and ``value`` (``fn()``'s value with nothing armed, after the sweep:
the object is still usable).  ``fn`` must be repeatable, and must make no
function (a lambda, a closure) while it runs: CPython 3.12 and 3.13 crash in
PyFunction_New when its own allocation fails; make them before the sweep.

Under make coverage (coverage.py measuring this child too), coverage.py's
tracer is paused for the sweep: it allocates on every line and does not
survive a failed allocation (SIGSEGV inside it); gcc's counters of the C
core, which are what the sweep is for, keep counting.
"""

from __future__ import annotations

import sys


def each_allocation_fails(fn, limit: int = 600) -> dict:
    import _testcapi

    try:
        from coverage import Coverage

        cov = Coverage.current()
    except ImportError:
        cov = None
    if cov is not None:
        cov.stop()
    try:
        return _sweep(_testcapi, fn, limit)
    finally:
        if cov is not None:
            cov.start()


def _sweep(_testcapi, fn, limit):
    sys._getframe()  # this frame's object exists before any failure
    failed, other, streak = 0, [], 0
    for k in range(limit):
        _testcapi.set_nomemory(k, k + 1)
        try:
            fn()
        except MemoryError:
            failed, streak = failed + 1, 0
        except BaseException as e:  # noqa: BLE001 - reported to the test
            other.append(f"allocation {k}: {type(e).__name__}: {e}")
            streak = 0
        else:
            streak += 1
        finally:
            _testcapi.remove_mem_hooks()
        if streak == 8:
            break
    return {"failed": failed, "other": other, "value": fn()}
