"""support/timeouts.py: the time factor that scales the guest tests' limits,
and a Deadline that moves out when the machine becomes slower."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from support import timeouts


@pytest.fixture
def fresh(monkeypatch):
    """timeouts with no factor cached, the environment restored after."""
    monkeypatch.setattr(timeouts, "_factor", None)
    monkeypatch.delenv(timeouts.ENV, raising=False)
    monkeypatch.delenv("RXE_VM", raising=False)
    return timeouts


def test_factor_comes_from_the_environment_and_never_goes_below_one(fresh, monkeypatch):
    monkeypatch.setenv(timeouts.ENV, "2.5")
    assert fresh.factor() == 2.5
    assert fresh.scaled(10) == 25.0
    monkeypatch.setattr(fresh, "_factor", None)
    monkeypatch.setenv(timeouts.ENV, "0.3")
    assert fresh.factor() == 1.0
    monkeypatch.setattr(fresh, "_factor", None)
    monkeypatch.setenv(timeouts.ENV, "not a number")
    assert fresh.factor() == 1.0  # outside a guest: nothing to measure


def test_outside_a_guest_nothing_is_measured(fresh, monkeypatch):
    monkeypatch.setattr(fresh, "measure", lambda: pytest.fail("measured on the host"))
    assert fresh.factor() == 1.0
    assert fresh.recheck() == 1.0


def test_in_a_guest_the_factor_is_measured_once_and_passed_to_children(fresh, monkeypatch):
    calls = []
    monkeypatch.setenv("RXE_VM", "1")
    monkeypatch.setattr(fresh, "measure", lambda: calls.append(1) or 3.0)
    assert fresh.factor() == 3.0
    assert fresh.factor() == 3.0
    assert calls == [1]
    child = subprocess.run(
        [sys.executable, "-c", f"import os; print(os.environ[{timeouts.ENV!r}])"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout.strip() == "3.00"


def test_measure_is_bounded():
    f = timeouts.measure()
    assert 1.0 <= f <= timeouts.MAX_FACTOR


def test_a_deadline_moves_out_when_the_machine_became_slower(fresh, monkeypatch):
    monkeypatch.setenv("RXE_VM", "1")
    speeds = iter([1.0, 4.0, 4.0, 4.0])
    monkeypatch.setattr(fresh, "measure", lambda: next(speeds))
    d = fresh.Deadline(0.05)
    assert d.limit == pytest.approx(0.05)
    time.sleep(0.06)
    # Reached: measured again (4.0 > 1.0), the end moved out by 0.05 s * 3,
    # and the factor of the process grew with it.
    assert d.left() > 0
    assert d.limit == pytest.approx(0.2)
    assert fresh.factor() == 4.0
    time.sleep(0.16)
    assert d.expired()  # measured 4.0 again: final
    assert d.left() == 0.0


def test_communicate_raises_only_past_the_deadline(fresh):
    with subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], stdout=subprocess.PIPE, text=True
    ) as proc:
        with pytest.raises(subprocess.TimeoutExpired):
            timeouts.communicate(proc, 0.2)
        proc.kill()
        proc.communicate()
    with subprocess.Popen(
        [sys.executable, "-c", "print('hi')"], stdout=subprocess.PIPE, text=True
    ) as proc:
        out, _ = timeouts.communicate(proc, 60)
    assert out == "hi\n"
