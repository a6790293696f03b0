"""What a call gave, as JSON a child of the recording double returns to
its test (tests/host/test_*_paths.py): the exception's type and text, or
the value.  Also the state changes a QP of the double needs before a
post."""

from __future__ import annotations

from typing import Any, Callable


def raised(fn: Callable[[], Any]) -> list[str] | None:
    """[type name, message] of what fn() raised, or None when it returned."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the caller's test judges it
        return [type(e).__name__, str(e)]
    return None


def result(fn: Callable[[], Any]) -> Any:
    """fn()'s value (a list or tuple as its length), or [type name,
    message] of what it raised."""
    try:
        v = fn()
    except Exception as e:  # noqa: BLE001 - the caller's test judges it
        return [type(e).__name__, str(e)]
    return len(v) if isinstance(v, (list, tuple)) else v


def rts(qp):
    """qp moved RESET -> INIT -> RTR -> RTS by modify(STATE) alone (the
    double asks for no more); qp."""
    from ibverbs import enums

    for s in (enums.QPState.INIT, enums.QPState.RTR, enums.QPState.RTS):
        qp.modify(enums.QPAttrMask.STATE, qp_state=s)
    return qp
