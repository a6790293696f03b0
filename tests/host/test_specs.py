"""The argument declarations of the C extension (``_ibverbs._specs``, one
per method, core/args.h) against what else states the contract: the stub
(src/ibverbs/_ibverbs.pyi) and the docstring's ``Args:``; and the one
parser's behaviour (core/args.c), run against the recording double.

For each declared method:

- it is a method of the class its name says;
- its stub signature lists the same parameters in the same order, each
  keyword-only exactly when declared so, with a default exactly when the
  declaration says it may be left out (and the same default for an
  integer), annotated ``int`` for an integer kind, the class for a handle,
  a flag set or an enum (or ``int``), and ``None`` among the annotation's
  types when None is accepted;
- its docstring's ``Args:`` names the parameters in the same order;
- its integer ranges are well formed, with the default inside.

No device needed.
"""

from __future__ import annotations

import ast
import inspect

import pytest

from ibverbs import _ibverbs

from support.stub import STUB, Stub, args_section

SPECS = _ibverbs._specs
STUB_DEFS = Stub(STUB)

KINDS = {"int", "flags", "enum", "handle", "record", "buffer", "list", "text", "number", "object"}


def test_the_specs_are_exported():
    assert isinstance(SPECS, dict)
    for name in ("PD.reg_mr", "PD.reg_mr_ex", "MR.rereg"):
        assert name in SPECS
    for name, params in SPECS.items():
        assert isinstance(params, tuple), name
        for p in params:
            assert p["kind"] in KINDS, (name, p)


def _target(qual: str):
    """The object a declaration names: Class.method, or a module function."""
    if "." not in qual:
        return getattr(_ibverbs, qual)
    cls, meth = qual.split(".")
    return getattr(getattr(_ibverbs, cls), meth)


def _stub_def(qual: str) -> tuple[ast.FunctionDef, bool]:
    """The stub's def of qual, and whether its first parameter (self or
    cls) is left out of the comparison."""
    if "." not in qual:
        defs, method = STUB_DEFS.functions.get(qual), False
    else:
        cls, meth = qual.split(".")
        defs, method = STUB_DEFS.method(cls, meth), True
    assert defs, f"{qual}: not in the stub"
    assert len(defs) == 1, f"{qual}: overloaded in the stub; declare it by hand"
    return defs[0], method


def _annotation_names(node: ast.expr | None) -> set[str]:
    if node is None:
        return set()
    return (
        {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
        | (
            {"None"}
            if any(isinstance(n, ast.Constant) and n.value is None for n in ast.walk(node))
            else set()
        )
    )


@pytest.mark.parametrize("qual", sorted(SPECS))
def test_declared_method_exists(qual):
    assert callable(_target(qual))


@pytest.mark.parametrize("qual", sorted(SPECS))
def test_stub_matches_the_declaration(qual):
    fn, method = _stub_def(qual)
    a = fn.args
    positional = a.posonlyargs + a.args
    posonly = {x.arg for x in a.posonlyargs}
    if method:
        assert positional and positional[0].arg in ("self", "cls"), qual
        positional = positional[1:]
    pos_defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    stub = [(x, d, False) for x, d in zip(positional, pos_defaults)]
    stub += [(x, d, True) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
    assert a.vararg is None and a.kwarg is None, qual
    declared = SPECS[qual]
    assert [x.arg for x, _, _ in stub] == [p["name"] for p in declared], qual
    for (arg, default, kw_only), p in zip(stub, declared):
        where = f"{qual}({p['name']})"
        assert kw_only == p["kw_only"], f"{where}: keyword-only in one place only"
        assert (arg.arg in posonly) == p["pos_only"], f"{where}: positional-only in one place only"
        assert (default is not None) == p["optional"], f"{where}: a default in one place only"
        names = _annotation_names(arg.annotation)
        if p["kind"] in ("int", "flags", "enum"):
            assert "int" in names or p["cls"] in names, f"{where}: annotated {names}"
            if p["optional"] and not p["none_ok"]:
                assert ast.literal_eval(default) == p["default"], f"{where}: default"
        elif p["kind"] in ("handle", "record"):
            assert p["cls"] in names or "object" in names, f"{where}: annotated {names}"
        if p["none_ok"]:
            assert "None" in names or "object" in names, f"{where}: None not in {names}"
            if p["optional"]:
                assert ast.literal_eval(default) is None, f"{where}: default not None"


@pytest.mark.parametrize("qual", sorted(SPECS))
def test_docstring_args_match_the_declaration(qual):
    # A constructor's Args are in its class's docstring.
    target = _target(qual)
    if qual.endswith(".__new__"):
        target = getattr(_ibverbs, qual.split(".")[0])
    doc = inspect.getdoc(target)
    assert doc, qual
    assert args_section(doc) == [p["name"] for p in SPECS[qual]], qual


@pytest.mark.parametrize("qual", sorted(SPECS))
def test_ranges_are_well_formed(qual):
    for p in SPECS[qual]:
        if p["kind"] in ("int", "flags", "enum"):
            assert p["lo"] <= p["hi"], (qual, p)
            assert -(2**63) <= p["lo"] and p["hi"] < 2**64, (qual, p)
            if p["optional"] and not p["none_ok"]:
                assert p["lo"] <= p["default"] <= p["hi"], (qual, p)
        elif p["kind"] == "buffer":
            assert p["lo"] >= 0 and p["hi"] is None, (qual, p)
        else:
            assert p["lo"] is None and p["hi"] is None, (qual, p)
        if p["kind"] == "handle":
            assert isinstance(getattr(_ibverbs, p["cls"]), type), (qual, p)
        else:
            assert p["parent"] is None, (qual, p)


def test_the_parser(recording):
    """Every kind of bad argument, with its one wording, on declared methods
    of the recording double's objects."""

    def body(fake):
        import ibverbs

        def err(fn, *a, **k):
            try:
                fn(*a, **k)
            except (TypeError, ValueError, ibverbs.VerbsError) as e:
                return [type(e).__name__, str(e)]
            return None

        buf = bytearray(64)
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.alloc_pd() as pd2:
            a = 0x10000
            out["too_many"] = err(pd.reg_mr, a, 8, 0, 1)
            out["unknown_kw"] = err(pd.reg_mr, a, 8, nope=1)
            out["twice"] = err(pd.reg_mr, a, 8, length=8)
            out["missing"] = err(pd.reg_mr, a)
            out["kw_only_by_position"] = err(pd.reg_mr, a, 8, 0, buf)
            out["type"] = err(pd.reg_mr, "1", 8)
            out["range_low"] = err(pd.reg_mr, a, 0)
            out["range_high"] = err(pd.reg_mr, a, 8, 2**31)
            out["negative"] = err(pd.reg_mr, -1, 8)
            out["huge"] = err(pd.reg_mr, 2**100, 8)
            out["signed"] = err(pd.reg_dmabuf_mr, 0, 8, 0, 2**31)
            out["bad_fd"] = err(pd.reg_dmabuf_mr, 0, 8, 0, -1)
            mr = pd.reg_mr(a, 8, owner=buf)
            out["handle_type"] = err(mr.rereg, ibverbs.ReregMRFlags.CHANGE_PD, pd=mr)
            with ibverbs.Context("fake0") as other, other.alloc_pd() as opd:
                out["other_context"] = err(mr.rereg, ibverbs.ReregMRFlags.CHANGE_PD, pd=opd)
            closed = ctx.alloc_pd()
            closed.close()
            out["closed"] = err(mr.rereg, ibverbs.ReregMRFlags.CHANGE_PD, pd=closed)
            out["flag_alone"] = err(mr.rereg, ibverbs.ReregMRFlags.CHANGE_PD)
            out["none_is_not_given"] = err(
                mr.rereg, ibverbs.ReregMRFlags.CHANGE_ACCESS, access=None
            )
            s = mr.sge(4, offset=2)
            out["sge"] = [s.length, s.addr - mr.addr]
            out["sge_none"] = mr.sge(None).length
            mr.close()
            out["kwargs_dict"] = pd.reg_mr(**{"addr": a, "length": 8}).length
            del pd2
        return out

    res = recording.run(body)
    assert res.error is None, res.error
    v = res.value
    assert v["too_many"] == ["TypeError", "reg_mr() takes at most 3 positional arguments (4 given)"]
    assert v["unknown_kw"] == ["TypeError", "'nope' is an invalid keyword argument for reg_mr()"]
    assert v["twice"] == [
        "TypeError",
        "argument for reg_mr() given by name ('length') and position (2)",
    ]
    assert v["missing"] == ["TypeError", "reg_mr() missing required argument 'length' (pos 2)"]
    assert v["kw_only_by_position"][0] == "TypeError"
    assert v["type"] == [
        "TypeError",
        "addr must be an int, not <class 'str'> (use ibverbs.reg_tensor() for arrays and tensors)",
    ]
    assert v["range_low"] == ["ValueError", "length must be in range 1..2**64-1"]
    assert v["range_high"] == ["ValueError", "access must be in range 0..2**31-1"]
    assert v["negative"] == ["ValueError", "addr must be in range 0..2**64-1"]
    assert v["huge"] == ["ValueError", "addr must be in range 0..2**64-1"]
    assert v["signed"] == ["ValueError", "fd must be in range -2**31..2**31-1"]
    assert v["bad_fd"][0] == "VerbsError" and "not a file descriptor" in v["bad_fd"][1]
    assert v["handle_type"] == [
        "TypeError",
        "pd must be a PD or None, not <class 'ibverbs._ibverbs.MR'>",
    ]
    assert v["other_context"] == ["ValueError", "pd belongs to another Context"]
    assert v["closed"][0] == "VerbsError" and "PD is closed" in v["closed"][1]
    assert v["flag_alone"] == ["ValueError", "pd goes with ReregMRFlags.CHANGE_PD, and it needs pd"]
    assert (
        v["none_is_not_given"][0] == "ValueError"
        and "access goes with" in v["none_is_not_given"][1]
    )
    assert v["sge"] == [4, 2]
    assert v["sge_none"] == 8
    assert v["kwargs_dict"] == 8
