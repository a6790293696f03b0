"""A device test that skips must release what it opened, like one that passes.

A skip raised inside a test's body, after it opened a CMListener (or any
other kernel object) and started a thread blocked on it, leaves that object
open and busy: the later tests then fail with VerbsError(EBUSY) ("CMListener
is in use by another thread"). It happened when rdma-core's rdma_client was
missing. So the helpers of tests/device that may skip (those that call
pytest.skip) are called from fixtures, which skip before the body runs, or
from a test's body outside every ``with`` block, never inside one; and
test_cm_device.py's ``tool()`` (rdma_server, rdma_client) from fixtures only.
Static checks: the device tests cannot run here.
"""

import ast
from pathlib import Path

DEVICE = Path(__file__).resolve().parents[1] / "device"


def is_fixture(fn):
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
        if isinstance(target, ast.Name) and target.id == "fixture":
            return True
    return False


def calls_skip(fn):
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "skip"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "pytest"
        ):
            return True
    return False


def functions(tree):
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def skipping_helpers(tree):
    """Module-level helpers (not tests, not fixtures) that may pytest.skip."""
    return {
        fn.name
        for fn in functions(tree)
        if not fn.name.startswith("test_") and not is_fixture(fn) and calls_skip(fn)
    }


def calls_inside_with(fn, names):
    """(line, name) of each call to one of NAMES inside a with block of FN
    (or of a function nested in one)."""
    found = []
    for node in ast.walk(fn):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for stmt in node.body:
                for sub in ast.walk(stmt):
                    if (
                        isinstance(sub, ast.Call)
                        and isinstance(sub.func, ast.Name)
                        and sub.func.id in names
                    ):
                        found.append((sub.lineno, sub.func.id))
    return found


def test_no_skipping_helper_inside_a_with_block():
    bad = []
    checked = 0
    for path in sorted(DEVICE.rglob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        names = skipping_helpers(tree)
        for fn in functions(tree):
            if fn.name.startswith("test_") and names:
                checked += 1
                for line, name in calls_inside_with(fn, names):
                    bad.append(f"{path.relative_to(DEVICE)}:{line}: {fn.name} calls {name}()")
    assert checked, "no device test calls a skipping helper: is DEVICE right?"
    assert not bad, "a skip there would leave the with block's object open:\n" + "\n".join(bad)


def test_cm_tools_are_found_by_fixtures():
    tree = ast.parse((DEVICE / "test_cm_device.py").read_text())
    assert "tool" in skipping_helpers(tree)
    callers = set()
    for fn in functions(tree):
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "tool"
            ):
                callers.add((fn.name, is_fixture(fn)))
    assert callers, "test_cm_device.py no longer calls tool()"
    assert all(fixture for _, fixture in callers), sorted(callers)


def test_the_check_sees_the_old_defect():
    # The shape of the defect itself: tool() called inside the listener's
    # with block, after a serving thread started.
    old = ast.parse(
        "import pytest\n"
        "def tool(name):\n"
        "    pytest.skip(name)\n"
        "def test_x():\n"
        "    with CMListener(1) as listener:\n"
        "        join = run_serving(listener, None)\n"
        "        run([tool('rdma_client')])\n"
    )
    names = skipping_helpers(old)
    assert names == {"tool"}
    (fn,) = [f for f in functions(old) if f.name == "test_x"]
    assert calls_inside_with(fn, names) == [(7, "tool")]
