"""The stub of the C extension (src/ibverbs/_ibverbs.pyi), read with ast:
its classes and functions and their parameters; and the names of a
Google-style ``Args:`` section.  Shared by tests/host/test_c_docs.py and
tests/host/test_specs.py."""

from __future__ import annotations

import ast
import inspect
import re
import types
from pathlib import Path

from ibverbs import _ibverbs

# The stub beside the module under test: src/ibverbs in a checkout, the
# installed package under tools/test-wheels (whose tree has no stub).
STUB = Path(_ibverbs.__file__).resolve().parent / "_ibverbs.pyi"

METHODS = (
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
