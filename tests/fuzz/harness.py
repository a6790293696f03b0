"""What the fuzzers of tests/fuzz share: the recording double loaded in
this process, the exceptions a caller is promised, and atheris's start.

tools/fuzz runs each fuzz_*.py file under atheris (libFuzzer) with the
extension built by clang under ASan + UBSan with coverage counters
(setup.py's IBVERBS_INSTRUMENT=fuzz) and IBVERBS_LIBIBVERBS naming the
recording double (tests/fakes/recording), so every verb family runs
without a device.  A fuzzer's input either returns, or raises one of
PROMISED (the documented answer to bad input); anything else (another
exception, a SystemError from a C function that returned NULL without an
exception, a sanitizer report, a crash) is a finding: libFuzzer writes
the input to crash-<sha1> and stops.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fakes"))

import recording  # noqa: E402
from cshared import unit_sources  # noqa: E402

# The exceptions a public call may raise on bad input or a failed verb;
# ibverbs.VerbsError is an OSError.  SystemError is never one of them.
PROMISED: tuple[type[BaseException], ...] = (
    OSError,
    ValueError,
    TypeError,
    OverflowError,
    IndexError,
    KeyError,
    BufferError,
    NotImplementedError,
)


def is_promised(exc: BaseException) -> bool:
    """exc is a documented answer to bad input (an AttributeError is not:
    a wrong type is a TypeError, in the C core and the Python records)."""
    return isinstance(exc, PROMISED)


def double_path() -> str:
    """The recording double this process loads (IBVERBS_LIBIBVERBS; built
    by tools/fuzz, or here into build/fuzz/double when unset)."""
    path = os.environ.get("IBVERBS_LIBIBVERBS")
    if not path:
        path = recording.build(ROOT / "build" / "fuzz" / "double")
        os.environ["IBVERBS_LIBIBVERBS"] = path
    return path


def fake() -> recording.Fake:
    """The double's controls, its log off (a fuzz run makes millions of
    calls): failure injection and live counts still work."""
    f = recording.Fake(double_path())
    f.set_recording(False)
    f.clear()
    return f


def verb_names() -> list[str]:
    """Every name the double's failure injection knows (its fake_begin
    calls), sorted: the fuzzers pick injected failures from these."""
    import re

    names = set()
    for src in unit_sources(recording.SOURCE_DIR):
        names.update(re.findall(r'fake_begin\(\s*&?\w+\s*,\s*"(\w+)"', src.read_text()))
    return sorted(names)


def instrumented_import(*names: str):
    """Import ibverbs (and the named submodules) with atheris's bytecode
    instrumentation, so the Python parsers' branches count as coverage."""
    import importlib

    import atheris

    double_path()
    with atheris.instrument_imports(include=["ibverbs"]):
        import ibverbs

        mods = [importlib.import_module(n) for n in names]
    return ibverbs, mods


def main(test_one_input) -> None:
    """atheris.Setup + Fuzz with this process's argv (libFuzzer's flags).
    argv[0] becomes "python script": libFuzzer's -merge, -fork and -jobs
    run argv[0] through the shell, and the script is not executable."""
    import atheris

    argv = [f"{sys.executable} {os.path.abspath(sys.argv[0])}", *sys.argv[1:]]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


def round_trip(parse, data) -> None:
    """A peer record's parser on data: ValueError, or a record whose
    to_bytes() gives data back (AssertionError otherwise)."""
    try:
        rec = parse(data)
    except ValueError:
        return
    if rec.to_bytes() != bytes(data):
        raise AssertionError(f"{bytes(data)!r} read as {rec}, written back as {rec.to_bytes()!r}")
