"""The API grants no remote access by default: every helper that registers
memory or opens a QP to its peer takes access explicitly (the device
half of the security tests: tests/device/reliability/test_rel_security.py).
"""

import inspect

import pytest

import ibverbs as ib
import ibverbs.cuda


@pytest.mark.parametrize(
    "fn", [ib.reg_tensor, ib.connect_rc, ib.cuda.register_tensor], ids=lambda f: f.__qualname__
)
def test_helpers_take_access_explicitly(fn):
    """No helper defaults to any access right: the caller names them."""
    p = inspect.signature(fn).parameters["access"]
    assert p.default is inspect.Parameter.empty
