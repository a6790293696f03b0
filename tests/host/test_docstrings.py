"""Every public name of the package has a docstring worth reading.

Walks the public API of ``ibverbs``, ``ibverbs.cuda``, ``ibverbs.aio``,
``ibverbs.bootstrap``, ``ibverbs.flow`` and ``ibverbs.enums`` (public: in a
module's ``__all__`` where it has one, else not starting with ``_``; for a
class, the methods, class and static methods, properties, getters and
members it or a base of the package defines, not those inherited from
``object``, ``int``, ``Enum`` or ``Exception``), and fails with the whole
list of names whose docstring is

- missing or blank;
- only a signature line (``name(...) -> X`` with nothing after it, which is
  also what ``dataclasses`` and ``NamedTuple`` write when a class has none);
- for a function or method: mentions a verb (``ibv_xxx``/``rdma_xxx``) or
  says "Wraps" without naming a man page (``ibv_xxx(3)``), the convention
  of the docs (HACKING.md).

Enum classes need a docstring, their members do not.  No device needed.
"""

from __future__ import annotations

import collections
import enum
import importlib
import inspect
import re
import types

import pytest

MODULES = (
    "ibverbs",
    "ibverbs.cuda",
    "ibverbs.aio",
    "ibverbs.bootstrap",
    "ibverbs.flow",
    "ibverbs.enums",
)


# A signature line of ``name``: ``name(...)`` maybe ``-> X``, as a C
# method's first line or what dataclasses and NamedTuple generate.
def _signature_only(text: str, name: str) -> bool:
    if "\n\n" in text:
        return False  # a body follows
    return re.fullmatch(rf"{re.escape(name)}\(.*\)(\s*->\s*[^:;.]+)?", text, re.S) is not None


# A verb's name in prose: ibv_reg_mr, rdma_connect; not a type
# (struct ibv_wc, enum ibv_mtu) nor a field (ibv_sge.addr).
VERB = re.compile(r"(?<!struct )(?<!union )(?<!enum )\b(?:ibv|rdma)_[a-z0-9_]+\b(?![.\w*])")
# A man page reference: ibv_reg_mr(3), rdma_cm(7).
MAN_PAGE = re.compile(r"\b(?:ibv|rdma)_[a-z0-9_]+\([1-8]\)")

# Members every class gets from outside the package.
_FOREIGN = (object, int, enum.Enum, enum.Flag, BaseException, tuple, dict, str)
_CALLABLES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
    classmethod,
    staticmethod,
)
# A NamedTuple's field is a _tuplegetter, documented "Alias for field
# number N" unless the package says more.
_FIELD = type(collections.namedtuple("_T", "a").a)
_ATTRIBUTES = (property, types.GetSetDescriptorType, types.MemberDescriptorType, _FIELD)
_GENERATED = re.compile(r"Alias for field number \d+")


def _ours(obj: object) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "ibverbs"


def _public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return sorted(set(names))


def _problem(doc: str | None, name: str, is_callable: bool) -> str | None:
    """What is wrong with the docstring of ``name``, or None."""
    text = inspect.cleandoc(doc).strip() if doc else ""
    if not text or _GENERATED.fullmatch(text):
        return "no docstring"
    if _signature_only(text, name):
        return "only a signature line"
    if is_callable and (VERB.search(text) or "Wraps" in text) and not MAN_PAGE.search(text):
        return "names a verb but no man page (write ibv_xxx(3))"
    return None


def _class_members(cls: type):
    """(name, raw attribute, its docstring) of what the package defines on
    ``cls``.  A slot's docstring is its value in a dict ``__slots__`` (which
    Sphinx and pydoc read; CPython before 3.13 does not copy it onto the
    member descriptor)."""
    seen = set()
    for base in cls.__mro__:
        if base in _FOREIGN or not _ours(base):
            continue
        slots = vars(base).get("__slots__")
        for name, raw in vars(base).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            doc = getattr(getattr(raw, "__func__", raw), "__doc__", None)
            if isinstance(raw, types.MemberDescriptorType) and isinstance(slots, dict):
                doc = doc or slots.get(name)
            yield name, raw, doc


def _walk():
    """(qualified name, docstring, is_callable) of every public object;
    the last dotted part of the qualified name is the object's name."""
    done = set()
    for modname in MODULES:
        module = importlib.import_module(modname)
        yield modname, module.__doc__, False
        for name in _public_names(module):
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType) or not (inspect.isclass(obj) or callable(obj)):
                continue  # constants (``__version__``) carry no docstring
            if not _ours(obj):
                continue  # re-exported from elsewhere
            if id(obj) in done:
                continue
            done.add(id(obj))
            # Named by its module when that is public (ibverbs.flow.FlowAttr),
            # else where first exported (ibverbs.SGE, ibverbs.QPInfo).
            home = obj.__module__ if obj.__module__ in MODULES else modname
            qual = f"{home}.{obj.__qualname__}"
            yield qual, obj.__doc__, not inspect.isclass(obj)
            if not inspect.isclass(obj) or issubclass(obj, enum.Enum):
                continue  # enum members need no docstring
            for mname, raw, doc in _class_members(obj):
                if isinstance(raw, _CALLABLES):
                    yield f"{qual}.{mname}", doc, True
                elif isinstance(raw, _ATTRIBUTES) or (inspect.isclass(raw) and _ours(raw)):
                    yield f"{qual}.{mname}", doc, False


def undocumented() -> list[str]:
    """``name: problem`` for every public name whose docstring falls short."""
    out = []
    for qual, doc, is_callable in _walk():
        problem = _problem(doc, qual.rsplit(".", 1)[-1], is_callable)
        if problem:
            out.append(f"{qual}: {problem}")
    return out


def test_the_walk_sees_the_api():
    """The walk reaches C methods, getters, members, Python methods,
    properties and enum classes (a walk that finds nothing passes)."""
    names = {q for q, _, _ in _walk()}
    for expected in (
        "ibverbs.PD.reg_mr",  # C method
        "ibverbs.WC.status_str",  # C getter
        "ibverbs.WC.byte_len",  # C member
        "ibverbs.Device.open",  # Python method
        "ibverbs.QPInfo",  # Python class
        "ibverbs.enums.AccessFlags",  # enum class
        "ibverbs.aio.completions",
        "ibverbs.bootstrap.Store.get",
        "ibverbs.bootstrap.RemoteMR.rkey",  # NamedTuple field
        "ibverbs.Gid.raw",  # slot documented in a dict __slots__
        "ibverbs.flow.FlowAttr",
    ):
        assert expected in names, expected
    assert not any(n.startswith("ibverbs.enums.AccessFlags.") for n in names)
    assert len(names) > 400


@pytest.mark.parametrize(
    "doc, is_callable, problem",
    [
        (None, False, "no docstring"),
        ("  \n ", True, "no docstring"),
        ("Alias for field number 2", False, "no docstring"),
        ("reg_mr(addr, length, access=0) -> MR", True, "only a signature line"),
        ("reg_mr(addr,\n       length) -> MR | None\n", True, "only a signature line"),
        ("reg_mr(qp_num: int, lid: int)", False, "only a signature line"),
        ("reg_mr(addr) -> MR: register memory, ibv_reg_mr(3).", True, None),
        ("len(sg_list)", False, None),  # prose that looks like a call
        ("Register memory (``ibv_reg_mr``).", True, "names a verb"),
        ("Register memory.\n\nWraps the verb.", True, "names a verb"),
        ("Register memory.\n\nWraps ``ibv_reg_mr`` (ibv_reg_mr(3)).", True, None),
        ("reg_mr(addr) -> MR\n\nRegister memory, ibv_reg_mr(3).", True, None),
        ("A completion (``struct ibv_wc``).", False, None),
        ("Pack the ``struct ibv_flow_spec_*``.", True, None),
        ("Read ``ibv_sge.addr``.", True, None),
    ],
)
def test_the_rules(doc, is_callable, problem):
    got = _problem(doc, "reg_mr", is_callable)
    if problem is None:
        assert got is None
    else:
        assert got is not None and got.startswith(problem)


def test_every_public_name_has_a_docstring():
    missing = undocumented()
    assert not missing, f"{len(missing)} public names fall short:\n" + "\n".join(missing)
