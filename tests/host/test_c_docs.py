"""The C extension's docstrings against its stub, the one place a
signature is written (src/ibverbs/_ibverbs.pyi; mypy, stubtest and the
docs tooling in docs/_ext read it).

For every method and function of ``ibverbs._ibverbs`` (and every class
whose stub has a constructor with parameters):

- the docstring carries no signature line (``name(args) -> X``): it would
  be a second copy of the stub's, free to drift;
- the names of its ``Args:`` section are exactly the parameters of its
  stub signature, self/cls left out (the union over ``@overload``\\ s; a
  ``*args``/``**kwargs`` by its name); a method without parameters has no
  ``Args:`` section.

No device needed.
"""

from __future__ import annotations

import inspect
import re
import types

import pytest

from ibverbs import _ibverbs
from support.stub import METHODS, STUB, Stub, args_section


def signature_line(doc: str, name: str) -> bool:
    first = inspect.cleandoc(doc).split("\n\n", 1)[0]
    return re.match(rf"{re.escape(name)}\(.*\)(\s*->.*)?$", first, re.S) is not None


def c_callables():
    """(qualified name, docstring, stub parameters or None) of each method
    and function of the extension, and of each class with a constructor."""
    stub = Stub(STUB)
    for name, obj in sorted(vars(_ibverbs).items()):
        if name.startswith("__"):
            continue
        if isinstance(obj, types.BuiltinFunctionType):
            defs = stub.functions.get(name)
            yield name, obj.__doc__, stub.params(defs, False) if defs else None
        elif isinstance(obj, type) and obj.__module__ == _ibverbs.__name__:
            own = stub.classes.get(name, ([], {}))[1]  # a constructor of its own
            ctor = own.get("__new__") or own.get("__init__")
            if ctor:
                yield name, obj.__doc__, stub.params(ctor, True)
            for mname, raw in sorted(vars(obj).items()):
                if mname.startswith("__") or not isinstance(raw, METHODS):
                    continue
                defs = stub.method(name, mname)
                if defs is None:
                    yield f"{name}.{mname}", raw.__doc__, None
                    continue
                yield f"{name}.{mname}", raw.__doc__, stub.params(defs, True)


CALLABLES = list(c_callables())


def test_the_walk_sees_the_extension():
    names = {q for q, _, _ in CALLABLES}
    for expected in (
        "QP.post_send",
        "QPEx.wr_atomic_cmp_swp",
        "CQEx.read_byte_len",
        "SendWR",
        "CMID.connect",
        "inc_rkey",
    ):
        assert expected in names, expected
    assert len(names) > 120


@pytest.mark.parametrize("qual, doc, params", CALLABLES, ids=[q for q, _, _ in CALLABLES])
def test_args_match_the_stub(qual, doc, params):
    assert params is not None, f"{qual}: not in _ibverbs.pyi"
    doc = doc or ""
    name = qual.rsplit(".", 1)[-1]
    assert not signature_line(doc, name), f"{qual}: a signature line (the stub has it)"
    args = args_section(doc)
    if not params:
        assert args is None, f"{qual}: an Args section, but no parameters"
        return
    assert args is not None, f"{qual}: no Args section for {sorted(params)}"
    assert len(args) == len(set(args)), f"{qual}: a name twice in Args: {args}"
    assert set(args) == params, (
        f"{qual}: Args {sorted(set(args) - params)} not in the stub, "
        f"{sorted(params - set(args))} undocumented"
    )


@pytest.mark.parametrize(
    "doc, names",
    [
        ("Text.", None),
        ("Text.\n\nArgs:\n    a: one.\n    b (int): two,\n        more.\n\nRaises:\n", ["a", "b"]),
        ("Text.\n\nArgs:\n    **attrs: by keyword.\n", ["attrs"]),
    ],
)
def test_args_section(doc, names):
    assert args_section(doc) == names


def test_signature_line():
    assert signature_line("f(a, b) -> None\n\nText.", "f")
    assert signature_line("f(a,\n  b)\n\nText.", "f")
    assert not signature_line("release() the chain.", "__exit__")
    assert not signature_line("Text about f(a).", "f")
