"""The reference's reading of the C extension (docs/_ext/ibverbs_stubs.py).

make docs takes every signature and attribute type of ``ibverbs._ibverbs``
from the stub ``_ibverbs.pyi`` and drops the signature line that opens each
C docstring.  These checks run that reading against the built module here,
in a second, without Sphinx: every public C name must find its stub entry
(the build would fail on one that does not), the stub-only bases and
generics must resolve, and the signature line must go while the text after
it stays.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

import ibverbs

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "docs" / "_ext"
STUB = ROOT / "src" / "ibverbs" / "_ibverbs.pyi"

pytestmark = pytest.mark.skipif(
    not (EXT / "ibverbs_stubs.py").exists() or not STUB.exists(),
    reason="no docs/_ext or stub: a copy of tests/ outside the source tree (tools/test-wheels)",
)


@pytest.fixture(scope="module")
def stubs():
    sys.path.insert(0, str(EXT))
    try:
        import ibverbs_stubs
    finally:
        sys.path.remove(str(EXT))
    return ibverbs_stubs, ibverbs_stubs.StubIndex(STUB)


def c_names():
    for name in ibverbs.__all__:
        obj = getattr(ibverbs, name)
        if getattr(obj, "__module__", None) == "ibverbs._ibverbs":
            yield name, obj


def test_every_public_c_name_has_its_stub_entry(stubs):
    _, index = stubs
    kinds = {
        "getset_descriptor": {"property", "attribute"},
        "member_descriptor": {"property", "attribute"},
        "method_descriptor": {"method"},
        "classmethod_descriptor": {"classmethod"},
        "builtin_function_or_method": {"staticmethod", "classmethod"},
    }
    missing, checked = [], 0
    for name, obj in c_names():
        if inspect.isclass(obj):
            assert name in index.classes, name
            for member, value in vars(obj).items():
                if member.startswith("_"):
                    continue
                stub = index.member(name, member)
                checked += 1
                if stub is None or stub.kind not in kinds[type(value).__name__]:
                    missing.append(f"{name}.{member} ({type(value).__name__}: {stub})")
                elif stub.kind in ("property", "attribute"):
                    assert stub.returns, f"{name}.{member}: no type"
        elif callable(obj):
            checked += 1
            if index.function(name) is None:
                missing.append(name)
        else:
            checked += 1
            if name not in index.data:
                missing.append(name)
    assert not missing, f"public C names the reference finds no stub for: {missing}"
    assert checked > 200, checked  # the walk reached the members


def test_stub_only_bases_and_generics_resolve(stubs):
    _, index = stubs
    # _Handle (a stub-only base) gives every handle close() and closed
    assert index.member("QP", "close").args == "()"
    assert index.member("QP", "closed").returns == "bool"
    # _WRChain[SendWR]: the type variable becomes the argument
    assert index.constructor("SendWRChain").args == "(wrs: Iterable[SendWR])"
    assert index.member("RecvWRChain", "__getitem__").returns == "RecvWR"
    # a subclass finds its own and its base's members
    assert index.member("QPEx", "post_send").args.startswith("(wr_or_list: SendWR")
    # self / cls are dropped, keyword-only and positional-only markers kept
    sge = index.constructor("SGE").args
    assert sge.startswith("(mr_or_addr: MR | int,") and "*, owner" in sge
    assert index.member("CMID", "resolve").kind == "classmethod"
    assert index.member("CMID", "resolve").args.startswith("(host: str")
    assert index.function("inc_rkey").args == "(rkey: int, /)"
    # overloads: one signature each
    sge = index.member("QPEx", "wr_set_sge").overloads
    assert sge == [("(lkey: SGE)", "None"), ("(lkey: int, addr: int, length: int)", "None")]
    # a private import alias reads as the name it stands for
    inline = index.member("QPEx", "wr_set_inline_data").args
    assert inline == "(data: typing_extensions.Buffer)"
    # module data: its type and the docstring after it in the stub
    typ, doc = index.data["library_path"]
    assert typ == "str" and doc


@pytest.mark.parametrize(
    ("doc", "name", "expected"),
    [
        # the form of the docstring convention: signature line, blank, body
        (
            "reg_mr(addr, length, access=0, *, owner=None) -> MR\n\nRegister.\n\nArgs:\n"
            "    addr: start.",
            "reg_mr",
            "Register.\n\nArgs:\n    addr: start.",
        ),
        # one line: the text after the colon stays
        ("post_send(wr_or_list): post a SendWR", "post_send", "post a SendWR"),
        ("Context(name): an opened RDMA device.", "Context", "an opened RDMA device."),
        # a remark after the return annotation stays
        ("alloc_mw(type=MWType.TYPE_2) -> MW (ibv_alloc_mw)", "alloc_mw", "(ibv_alloc_mw)"),
        # parentheses inside the arguments, a generic return annotation
        ("q(a=(1, 2), b=f(3)) -> tuple[dict[str, Any], QPCap]\n\nBody.", "q", "Body."),
        # no signature line, or another name's: untouched
        ("A plain docstring.", "x", "A plain docstring."),
        ("other(x): y", "name", "other(x): y"),
    ],
)
def test_strip_signature(stubs, doc, name, expected):
    mod, _ = stubs
    assert mod.strip_signature(doc, name) == expected
