"""Signatures of the C extension ``ibverbs._ibverbs``, read from its stub.

The extension has no ``__text_signature__`` and its docstrings carry no
signature line (tests/host/test_c_docs.py).  The stub
``src/ibverbs/_ibverbs.pyi`` is the one place a signature is written: it is what
``mypy.stubtest`` checks against the built module, so the reference takes
every signature and attribute type of the C types from there, with ``ast``
(never a copy by hand).  Names a stub class inherits from a base that exists
only in the stub (``_Handle``, ``_WRChain[SendWR]``) are found through its
bases, with the type variables of a generic base replaced.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class StubMember:
    """One name of a stub class: a method, a property or an attribute."""

    kind: str  # "method", "classmethod", "staticmethod", "property", "attribute"
    args: str = ""  # "(a: int, b: str = 0)" without self / cls
    returns: str | None = None  # the return annotation, or the attribute's type
    overloads: list[tuple[str, str | None]] = field(default_factory=list)


@dataclass
class StubClass:
    name: str
    bases: list[tuple[str, list[str]]]  # (base name, its type arguments)
    members: dict[str, StubMember]  # annotated attributes
    defs: dict[str, list[ast.FunctionDef]]  # methods and properties
    typevars: list[str]  # of Generic[...]


class _Rename(ast.NodeTransformer):
    """Replace the names of type variables by a generic base's arguments."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.mapping:
            return ast.copy_location(ast.Name(id=self.mapping[node.id], ctx=node.ctx), node)
        return node


def _unparse(node: ast.AST | None, mapping: dict[str, str]) -> str | None:
    if node is None:
        return None
    if mapping:
        node = _Rename(mapping).visit(ast.parse(ast.unparse(node), mode="eval")).body
    return ast.unparse(node)


def _arglist(fn: ast.FunctionDef, drop_first: bool, mapping: dict[str, str]) -> str:
    args = fn.args
    if drop_first:
        # a copy without self / cls (positional-only first, then plain)
        args = ast.arguments(**{f: getattr(args, f) for f in args._fields})
        if args.posonlyargs:
            args.posonlyargs = args.posonlyargs[1:]
        elif args.args:
            args.args = args.args[1:]
    text = "(" + ast.unparse(args) + ")"
    if mapping:
        expr = ast.parse(f"def f{text}: ...").body[0]
        expr = _Rename(mapping).visit(expr)
        text = "(" + ast.unparse(expr.args) + ")"
    return text


def _decorators(fn: ast.FunctionDef) -> set[str]:
    names = set()
    for d in fn.decorator_list:
        if isinstance(d, ast.Name):
            names.add(d.id)
        elif isinstance(d, ast.Attribute):
            names.add(d.attr)
    return names


def _kind(fn: ast.FunctionDef) -> str:
    decos = _decorators(fn)
    for kind in ("property", "classmethod", "staticmethod"):
        if kind in decos:
            return kind
    return "method"


class StubIndex:
    """The classes, functions and module data of one ``.pyi`` file."""

    def __init__(self, path: Path):
        self.path = path
        tree = ast.parse(path.read_text(), filename=str(path))
        self.classes: dict[str, StubClass] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        self.overloads: dict[str, list[ast.FunctionDef]] = {}
        self.data: dict[str, tuple[str, str | None]] = {}  # name -> (type, docstring)
        body = tree.body
        # private aliases of imports (``Buffer as _Buffer``) by their real
        # name, which is the one a reader can look up
        self.aliases: dict[str, str] = {}
        for node in body:
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.asname and a.asname.startswith("_"):
                        self.aliases[a.asname] = f"{node.module}.{a.name}"
        for i, node in enumerate(body):
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = self._class(node)
            elif isinstance(node, ast.FunctionDef):
                if "overload" in _decorators(node):
                    self.overloads.setdefault(node.name, []).append(node)
                else:
                    self.functions[node.name] = node
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                doc = None
                nxt = body[i + 1] if i + 1 < len(body) else None
                if (
                    isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)
                ):
                    doc = nxt.value.value
                self.data[node.target.id] = (ast.unparse(node.annotation), doc)

    def _class(self, node: ast.ClassDef) -> StubClass:
        bases = []
        for b in node.bases:
            if isinstance(b, ast.Subscript) and isinstance(b.value, ast.Name):
                params = b.slice.elts if isinstance(b.slice, ast.Tuple) else [b.slice]
                bases.append((b.value.id, [ast.unparse(p) for p in params]))
            elif isinstance(b, ast.Name):
                bases.append((b.id, []))
        typevars: list[str] = []
        for b in node.bases:  # Generic[_W]: the class's own type variables
            if isinstance(b, ast.Subscript) and ast.unparse(b.value) == "Generic":
                params = b.slice.elts if isinstance(b.slice, ast.Tuple) else [b.slice]
                typevars = [ast.unparse(p) for p in params]
        members: dict[str, StubMember] = {}
        raw: dict[str, list[ast.FunctionDef]] = {}
        for item in node.body:
            if isinstance(item, ast.FunctionDef):
                raw.setdefault(item.name, []).append(item)
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                members[item.target.id] = StubMember(
                    "attribute", returns=ast.unparse(item.annotation)
                )
        return StubClass(node.name, bases, members, raw, typevars)

    # ------------------------------------------------------------ lookups --

    def _typevar_map(self, base: str, args: list[str]) -> dict[str, str]:
        cls = self.classes.get(base)
        if cls is None:
            return {}
        return dict(zip(cls.typevars, args))

    def member(self, cls_name: str, name: str, mapping: dict | None = None):
        """The StubMember for ``cls_name.name``, searched through the stub
        bases; None when the stub has none."""
        mapping = {**self.aliases, **(mapping or {})}
        cls = self.classes.get(cls_name)
        if cls is None:
            return None
        defs = cls.defs.get(name)
        if defs:
            return self._from_defs(defs, mapping)
        if name in cls.members:
            m = cls.members[name]
            returns = _unparse(ast.parse(m.returns or "None", mode="eval").body, mapping)
            return StubMember(m.kind, returns=returns)
        for base, args in cls.bases:
            inner = self._typevar_map(base, args)
            inner = {k: mapping.get(v, v) for k, v in inner.items()}
            found = self.member(base, name, inner)
            if found is not None:
                return found
        return None

    def _from_defs(self, defs: list[ast.FunctionDef], mapping: dict[str, str]) -> StubMember:
        first = StubMember(_kind(defs[0]))
        if first.kind == "property":
            first.returns = _unparse(defs[0].returns, mapping)
            return first
        drop = first.kind != "staticmethod"
        sigs = [
            (_arglist(d, drop, mapping), _unparse(d.returns, mapping))
            for d in defs
            if "overload" in _decorators(d) or len(defs) == 1
        ]
        if not sigs:  # an implementation after overloads: keep the last
            sigs = [(_arglist(defs[-1], drop, mapping), _unparse(defs[-1].returns, mapping))]
        first.args, first.returns = sigs[0]
        first.overloads = sigs
        return first

    def constructor(self, cls_name: str) -> StubMember | None:
        """``__new__`` or ``__init__`` of a class (through its bases)."""
        for name in ("__new__", "__init__"):
            m = self.member(cls_name, name)
            if m is not None:
                return m
        return None

    def function(self, name: str, mapping: dict | None = None) -> StubMember | None:
        aliases = {**self.aliases, **(mapping or {})}
        if name in self.overloads:
            defs = self.overloads[name]
        elif name in self.functions:
            defs = [self.functions[name]]
        else:
            return None
        sigs = [(_arglist(d, False, aliases), _unparse(d.returns, aliases)) for d in defs]
        return StubMember("function", sigs[0][0], sigs[0][1], sigs)


_SIG_START = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\(")


def strip_signature(doc: str, name: str) -> str:
    """The docstring without its opening ``name(args) -> Ret`` (the stub is
    where the signature comes from).  What follows on that line is kept:
    the text after a ``:`` (the one-line form) or a remark in parentheses."""
    doc = inspect.cleandoc(doc or "")
    m = _SIG_START.match(doc)
    if not m or m.group(1) != name:
        return doc
    depth, i = 0, m.end() - 1
    while i < len(doc):
        depth += {"(": 1, ")": -1}.get(doc[i], 0)
        i += 1
        if depth == 0:
            break
    rest = doc[i:]
    first, _, tail = rest.partition("\n")
    # the return annotation ends at a ":" or a " (" that opens a remark
    first = re.sub(r"^\s*->\s*.*?(?=:|\s\(|$)", "", first)
    first = re.sub(r"^\s*:\s*", "", first)
    return inspect.cleandoc(first + "\n" + tail) if first.strip() else inspect.cleandoc(tail)
