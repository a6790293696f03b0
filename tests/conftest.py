"""Shared test configuration.

Integration tests (marker ``integration``) need an RDMA device; ``make test``
runs them inside the Soft-RoCE guest (tools/rxe-vm), where
IBVERBS_TEST_DEVICE=rxe0.  Elsewhere they skip, saying so.

With IBVERBS_REQUIRE_INTEGRATION=1 (set by ``make test-guest``) a missing
device is an error, not a skip, and the run fails unless at least one
integration test passed: an integration run that ran nothing is a defect.

Tests marked ``runs_last`` (the device removal, which takes rxe0 away
and adds it back) run after every other test of the session.

With IBVERBS_TEST_SHARD=K/N (set by ``make test-guest``, which runs the
device suite as two processes side by side) only the test files of shard
K run; support/shards.py says how files are split, by the durations in
support/shard-durations.json.  With IBVERBS_STORE_DURATIONS=PATH the
session writes the seconds each test file took to PATH (JSON, the format
of that file; ``make shard-durations`` records it from a guest run).

The shared fixtures (ctx, pd, cq, ...) are in support/fixtures.py, loaded
here as a plugin; shared helpers are imported from the support package.
"""

import os

import pytest

from support import PassCount, device_name, shards, timeouts

pytest_plugins = ["support.fixtures"]

REQUIRE = os.environ.get("IBVERBS_REQUIRE_INTEGRATION") == "1"
STORE_DURATIONS = os.environ.get(shards.STORE_ENV)


def _device_name():
    """support.device_name, or None where ibverbs does not import."""
    try:
        return device_name()
    except ImportError:
        return None


def pytest_report_header(config):
    """In a guest: the time factor that scales the tests' time limits
    (support/timeouts.py), so that a log says how loaded the machine was."""
    if timeouts.in_guest():
        return f"time factor: {timeouts.factor():.2f} (IBVERBS_TIME_FACTOR; support/timeouts.py)"
    return None


_timings = None  # seconds per file, when sharded or storing durations


# Several threads per test (make test-freethreaded's parallel stage:
# pytest-run-parallel's --parallel-threads=N runs each test's body in N
# threads at once, sharing its fixtures).  A test that is not thread-safe
# by construction says so with pytest.mark.thread_unsafe(reason=...), the
# plugin's marker, registered here too so that it is known where the
# plugin is not installed (the GIL venv, CPython 3.9).  The plugin finds
# monkeypatch, capsys and friends, warnings.catch_warnings (up to 3.13)
# and gc.collect itself; these fixtures are marked here, by name: each
# one's object is shared by the N copies of the test.
THREAD_UNSAFE_FIXTURES = {
    "recording": "the recording double runs the body in a child process, one at a time, "
    "against its process-wide call log",
    "chan": "a test double of a completion channel whose queue the test drives",
    "cmid": "a test double of a CM ID whose event queue the test drives",
}


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "thread_unsafe(reason=None): run in one thread only under pytest-run-parallel's "
        "--parallel-threads (the plugin's marker; registered for runs without it)",
    )


def _mark_thread_unsafe(items):
    for item in items:
        names = getattr(item, "fixturenames", ())
        for name, reason in THREAD_UNSAFE_FIXTURES.items():
            if name in names:
                item.add_marker(pytest.mark.thread_unsafe(reason=f"fixture {name}: {reason}"))
                break


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(config, items):
    global _timings
    _mark_thread_unsafe(items)
    which = shards.select(config, items)
    if which is not None or STORE_DURATIONS:
        _timings = shards.Timings(which)
    # A stable sort: the order of everything else is kept.
    items.sort(key=lambda i: i.get_closest_marker("runs_last") is not None)
    need = [i for i in items if i.get_closest_marker("integration")]
    if not need or _device_name() is not None:
        return
    if REQUIRE:
        raise pytest.UsageError("IBVERBS_REQUIRE_INTEGRATION=1 but no RDMA device is visible")
    skip = pytest.mark.skip(
        reason="no RDMA device: run `make test` (boots the Soft-RoCE guest) "
        "or set IBVERBS_TEST_DEVICE on a host with an RDMA NIC"
    )
    for item in need:
        item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    if _timings is not None and _timings.which is not None:
        for line in _timings.lines():
            terminalreporter.write_line(line)


_integration = PassCount("integration")


def pytest_runtest_logreport(report):
    _integration.add(report)
    if _timings is not None:
        _timings.add(report)


def pytest_sessionfinish(session, exitstatus):
    if STORE_DURATIONS and _timings is not None:
        _timings.write(STORE_DURATIONS)
    if REQUIRE and _integration.passed == 0 and exitstatus == 0:
        print("\nIBVERBS_REQUIRE_INTEGRATION: no integration test passed")
        session.exitstatus = 1


# The free-threaded stage (make test-freethreaded, tools/test-wheels
# --python, the guest's 3.13t/3.14t runs) sets IBVERBS_EXPECT_FREETHREADED=1:
# the interpreter must be free-threaded, `import ibverbs` must leave the GIL
# off (the module's Py_mod_gil slot), and so must every test module: an
# extension imported along the way without the slot would turn it back on
# for the whole process, and the rest of the run would prove nothing.
EXPECT_FREETHREADED = os.environ.get("IBVERBS_EXPECT_FREETHREADED") == "1"


def _gil_enabled():
    import sys

    return getattr(sys, "_is_gil_enabled", lambda: True)()


def pytest_sessionstart(session):
    if not EXPECT_FREETHREADED:
        return
    import sysconfig

    import ibverbs  # noqa: F401  (the import under test)

    if not sysconfig.get_config_var("Py_GIL_DISABLED"):
        raise pytest.UsageError(
            "IBVERBS_EXPECT_FREETHREADED=1 but this CPython is not free-threaded"
        )
    if _gil_enabled():
        raise pytest.UsageError("import ibverbs turned the GIL on (no Py_mod_gil slot?)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    if not EXPECT_FREETHREADED:
        return
    if nextitem is not None and nextitem.module is item.module:
        return
    if _gil_enabled():
        pytest.fail(
            f"the GIL is on after {item.module.__name__} (an extension without Py_mod_gil?)",
            pytrace=False,
        )
