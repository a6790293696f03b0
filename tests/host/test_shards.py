"""support/shards.py, which splits the device suite between the two pytest
processes of ``make test-guest``: every file in exactly one shard, the
torch importers together, the split balanced and the same in every
process; IBVERBS_TEST_SHARD checked; the durations it splits by recorded
by a session (IBVERBS_STORE_DURATIONS) and merged (make shard-durations).
The last tests shard a real collection of the device suite, as the guest
does."""

import json
import os
import subprocess
import sys

import pytest

from support import TESTS, shards


@pytest.mark.parametrize(
    ("value", "want"), [(None, None), ("", None), ("0/2", (0, 2)), ("1/2", (1, 2)), ("2/3", (2, 3))]
)
def test_parse(value, want):
    assert shards.parse(value) == want


@pytest.mark.parametrize("value", ["1", "a/b", "2/2", "-1/2", "0/0", "0/2/3"])
def test_parse_refuses_what_is_not_k_of_n(value):
    with pytest.raises(ValueError, match="IBVERBS_TEST_SHARD"):
        shards.parse(value)


def test_assign_every_file_once_balanced_and_fixed():
    weights = shards.durations()
    files = sorted(weights) + ["tests/device/test_new_file.py"]
    for count in (1, 2, 3):
        of = shards.assign(files, count)
        assert set(of) == set(files) and set(of.values()) <= set(range(count))
        load = [0.0] * count
        for f, k in of.items():
            load[k] += weights.get(f, shards.DEFAULT)
        # Greedy, heaviest first: no shard ends more than the heaviest
        # unit above another.
        heaviest = max(
            [
                *weights.values(),
                *(sum(weights[f] for f in g) for g in shards.TOGETHER),
            ]
        )
        assert max(load) - min(load) <= heaviest, load
        # The same split whatever order the files come in.
        assert shards.assign(reversed(files), count) == of
    assert shards.assign(files, 2)["tests/device/test_new_file.py"] in (0, 1)


def test_together_files_share_a_shard():
    of = shards.assign(["a", "b", "c", "d"], 2, {"a": 5, "b": 5, "c": 5, "d": 5}, [("a", "b")])
    assert of["a"] == of["b"] != of["c"] == of["d"]
    # A group whose files were not all collected still goes as one.
    of = shards.assign(["a", "c", "d"], 2, {"a": 5, "c": 5, "d": 5}, [("a", "b")])
    assert set(of) == {"a", "c", "d"}


def test_durations_name_files_that_exist():
    root = TESTS.parent
    weights = shards.durations()
    assert weights and all(s >= 0 for s in weights.values())
    missing = [f for f in weights if not (root / f).is_file()]
    assert not missing, (
        f"{shards.DURATIONS.name} lists files that are gone: {missing} (make shard-durations)"
    )


def test_durations_round_trip_and_merge(tmp_path):
    a, b, out = tmp_path / "d.0.json", tmp_path / "d.1.json", tmp_path / "d.json"
    shards.write_durations(a, {"y.py": 2.04, "x.py": 1.26})
    shards.write_durations(b, {"z.py": 0.01, "x.py": 0.5})
    assert json.loads(a.read_text()) == {"x.py": 1.3, "y.py": 2.0}
    assert list(json.loads(a.read_text())) == ["x.py", "y.py"]  # sorted
    out.write_text('{"gone.py": 9}')  # written afresh, not merged into
    assert shards.merge(out, [a, b]) == {"x.py": 1.3, "y.py": 2.0, "z.py": 0.0}
    assert shards.read_durations(out) == {"x.py": 1.3, "y.py": 2.0, "z.py": 0.0}
    p = subprocess.run(
        [sys.executable, shards.__file__, "merge", str(out), str(a)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0 and "2 files" in p.stdout, p.stdout + p.stderr
    assert shards.read_durations(out) == {"x.py": 1.3, "y.py": 2.0}
    out.write_text("[1, 2]")
    with pytest.raises(ValueError, match="file: seconds"):
        shards.read_durations(out)


def pytest_collect(*args, shard=None):
    """``pytest --collect-only -q ARGS`` in a subprocess, from the
    repository root, with IBVERBS_TEST_SHARD set to SHARD (or unset)."""
    env = {k: v for k, v in os.environ.items() if k != shards.ENV}
    if shard is not None:
        env[shards.ENV] = shard
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *args],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def collect(shard):
    p = pytest_collect("-m", "integration", "tests/device", "tests/gpu", shard=shard)
    assert p.returncode == 0, p.stdout + p.stderr
    return {line for line in p.stdout.splitlines() if "::" in line}


def test_two_shards_of_the_device_suite_split_it_exactly():
    whole = collect(None)
    a, b = collect("0/2"), collect("1/2")
    assert whole and a and b
    assert a | b == whole and not a & b
    files = lambda ids: {i.split("::")[0] for i in ids}  # noqa: E731
    assert not files(a) & files(b)  # whole files, never split
    torch = {"tests/device/test_bootstrap_device.py", "tests/gpu/test_gpudirect.py"}
    assert torch <= files(a) or torch <= files(b)


def test_a_session_stores_the_durations_of_what_ran(tmp_path):
    """IBVERBS_STORE_DURATIONS=PATH: the seconds per file of the tests that
    ran, in the format shard-durations.json has."""
    out = tmp_path / "durations.json"
    env = {k: v for k, v in os.environ.items() if k != shards.ENV}
    env[shards.STORE_ENV] = str(out)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "tests/host/test_shards.py",
            "-k",
            "test_parse",
        ],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    got = shards.read_durations(out)
    assert list(got) == ["tests/host/test_shards.py"] and got[list(got)[0]] >= 0


def test_a_bad_shard_value_stops_the_session():
    p = pytest_collect("tests/device/test_srq_device.py", shard="2/2")
    assert p.returncode != 0 and "K must be 0 .. N-1" in p.stdout + p.stderr


def test_integration_tests_live_where_the_guest_looks():
    """tools/guest-suite collects tests/device and tests/gpu only (it saves
    each guest process seconds of collection): no other directory may hold
    a test marked integration."""
    others = [
        str(p.relative_to(TESTS.parent))
        for p in sorted(TESTS.iterdir())
        if p.is_dir() and p.name not in ("device", "gpu", "support", "fakes", "__pycache__")
    ]
    p = pytest_collect("-m", "integration", *others)
    assert p.returncode == 5, p.stdout + p.stderr  # 5: nothing collected
    assert "tests/host" in others and "tests/twonode" in others
