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

import ast
import inspect
import re
import types
from pathlib import Path

import pytest

from ibverbs import _ibverbs

# The stub beside the module under test: src/ibverbs in a checkout, the
# installed package under tools/test-wheels (whose tree has no stub).
STUB = Path(_ibverbs.__file__).resolve().parent / "_ibverbs.pyi"

_METHODS = (
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
    types.BuiltinFunctionType,
    staticmethod,
    classmethod,
)


def _params(fn: ast.FunctionDef, drop_first: bool) -> list[str]:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args]
    if drop_first and names:
        names = names[1:]
    if a.vararg:
        names.append(a.vararg.arg)
    names += [x.arg for x in a.kwonlyargs]
    if a.kwarg:
        names.append(a.kwarg.arg)
    return names


class Stub:
    """The stub's classes (their defs by name, their bases) and functions."""

    def __init__(self, path: Path):
        tree = ast.parse(path.read_text())
        self.functions: dict[str, list[ast.FunctionDef]] = {}
        self.classes: dict[str, tuple[list[str], dict[str, list[ast.FunctionDef]]]] = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.ClassDef):
                bases = [
                    ast.unparse(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases
                ]
                defs: dict[str, list[ast.FunctionDef]] = {}
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        defs.setdefault(item.name, []).append(item)
                self.classes[node.name] = (bases, defs)

    def method(self, cls: str, name: str) -> list[ast.FunctionDef] | None:
        if cls not in self.classes:
            return None
        bases, defs = self.classes[cls]
        if name in defs:
            return defs[name]
        for b in bases:
            found = self.method(b, name)
            if found:
                return found
        return None

    def params(self, defs: list[ast.FunctionDef], drop_first: bool) -> set[str]:
        names: set[str] = set()
        for fn in defs:
            if any(ast.unparse(d) == "property" for d in fn.decorator_list):
                return set()
            is_static = any(ast.unparse(d) == "staticmethod" for d in fn.decorator_list)
            names |= set(_params(fn, drop_first and not is_static))
        return names


def args_section(doc: str) -> list[str] | None:
    """The names in a Google-style ``Args:`` section, or None without one."""
    lines = inspect.cleandoc(doc).split("\n")
    try:
        start = lines.index("Args:")
    except ValueError:
        return None
    names = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        m = re.match(r" {4}\**(\w+)(?: \([^)]*\))?:", line)
        if m:
            names.append(m.group(1))
    return names


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
                if mname.startswith("__") or not isinstance(raw, _METHODS):
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
