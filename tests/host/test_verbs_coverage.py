"""The Verbs coverage page's table (docs/reference/verbs-coverage.txt)
against the code and the tests, so that the page cannot go stale.

For every public verb of libibverbs the table names the Python names that
wrap it and where it ran.  Checked here:

- it lists the 174 public verbs of rdma-core 65, each once;
- each Python name exists, and its docstring (or its class's, for a
  constructor or close) names the verb, unless the table marks the verb as
  called inside the name;
- the C core calls every verb the table says is reached (a call of
  ``ibv_X`` or of the loader's ``IBV.X``, outside comments and strings),
  and no docstring says it wraps a verb the table calls unreached;
- a test exercises the name where the table says it ran: the device or
  two-node suite for ``rxe`` and ``rxe-refuses``, the host suite for
  ``lib``, a recording-double test (a host test taking the ``recording``
  fixture) for ``double``, and for ``rxe-sid`` a device test that the distribution
  matrix runs (listed in tools/distro-subset.txt: the sid root, whose
  rdma-core 65 has the verb), and for ``rxe-7.2`` a test that make
  test-kernels runs on kernel 7.2 chrooted into sid's root (the Makefile's
  ``tools/rxe-vm.d/in-root`` command).

Reads the docs and C sources of the checkout (the wheel tests' copy has
no docs/: skipped there, with the reason).  No device needed.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
from support import load_path
from support.coverage import name_problems

import ibverbs

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "docs" / "_ext" / "ibverbs_verbs.py"
C_TREE = ROOT / "src" / "ibverbs" / "_ibverbs"
DISTRO_SUBSET = ROOT / "tools" / "distro-subset.txt"
MAKEFILE = ROOT / "Makefile"
TESTS = ROOT / "tests"

pytestmark = pytest.mark.skipif(
    not EXT.exists(), reason="docs/ is not in this tree (the wheel tests copy tests/ only)"
)


@pytest.fixture(scope="module")
def ext():
    return load_path("ibverbs_verbs", EXT, register=True)


@pytest.fixture(scope="module")
def table(ext):
    return ext.read_table()


def _strip_c(text: str) -> str:
    """C source without comments and string literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


@pytest.fixture(scope="module")
def c_code() -> str:
    parts = []
    for path in sorted(C_TREE.rglob("*.[ch]")):
        code = _strip_c(path.read_text())
        # The loader's symbol lists (X(field, ibv_sym)) resolve a verb;
        # they do not call it.
        code = re.sub(r"\bX\([^()]*\)", " ", code)
        parts.append(code)
    return "\n".join(parts)


def _resolve(name: str):
    obj = ibverbs
    owner = None
    for part in name.split("."):
        owner = obj
        obj = getattr(obj, part)
    return obj, owner


def _docs_of(name: str) -> str:
    obj, owner = _resolve(name)
    docs = [inspect.getdoc(obj) or ""]
    if inspect.isclass(owner):
        docs.append(inspect.getdoc(owner) or "")
    if inspect.isclass(obj) or name.endswith(".open"):
        docs.append(inspect.getdoc(owner) or "")
    return "\n".join(docs)


def _wrapped_in_docstrings() -> dict[str, set[str]]:
    """Verb -> the names whose docstring says "Wraps ``ibv_verb``"."""
    out: dict[str, set[str]] = {}
    seen: set[int] = set()

    def visit(prefix, obj, depth):
        if id(obj) in seen or depth > 2:
            return
        seen.add(id(obj))
        for key in dir(obj):
            if key.startswith("_"):
                continue
            try:
                value = getattr(obj, key)
            except AttributeError:
                continue
            doc = getattr(value, "__doc__", None)
            name = f"{prefix}{key}"
            if isinstance(doc, str):
                for m in re.finditer(r"Wraps((?:\s*(?:,|and)?\s*``\w+``)+)", doc):
                    for verb in re.findall(r"``(?:_?ibv_)?(\w+)``", m.group(1)):
                        out.setdefault(verb, set()).add(name)
            if inspect.isclass(value) and value.__module__.startswith("ibverbs"):
                visit(name + ".", value, depth + 1)

    visit("", ibverbs, 0)
    return out


def _test_texts(*patterns: str) -> dict[Path, str]:
    files: dict[Path, str] = {}
    for pattern in patterns:
        for path in sorted(TESTS.glob(pattern)):
            if path.name != Path(__file__).name:
                files[path] = path.read_text()
    return files


def test_every_public_verb_once(table):
    counted = [v.verb for v in table if v.counted]
    assert len(counted) == 174
    assert len(set(counted)) == len(counted)
    assert {v.verb for v in table if not v.counted} == {"mult_to_ibv_rate", "mbps_to_ibv_rate"}


def test_names_exist_and_name_the_verb(table):
    def names_it(v, docs):
        return v.symbol in docs or v.symbol.lstrip("_") in docs

    bad = name_problems(table, lambda v: v.verb, "ibverbs", _docs_of, names_it)
    assert not bad, "\n".join(bad)


def test_c_core_calls_every_reached_verb(table, c_code):
    missing = [
        v.verb
        for v in table
        if v.where != "none"
        and not re.search(rf"(?:\b_?ibv_|\bIBV\.){re.escape(v.verb)}\b|\b{v.verb}\s*\(", c_code)
    ]
    assert not missing, f"the table says reached, the C core never calls: {missing}"


def test_no_unlisted_wrapper(table):
    wrapped = _wrapped_in_docstrings()
    stale = [
        f"{v.verb} (wrapped by {sorted(wrapped[v.verb])})"
        for v in table
        if v.where == "none" and v.verb in wrapped
    ]
    assert not stale, f"marked unreached in the table but wrapped: {stale}"


def _exercised(name: str, texts: dict[Path, str]) -> list[Path]:
    attr = name.split(".")[-1]
    if attr in ("close", "open"):
        # close()/open() are everywhere: look for the class instead.
        attr = name.split(".")[-2] if "." in name else attr
    pat = re.compile(rf"\b{re.escape(attr)}\b")
    return [p for p, t in texts.items() if pat.search(t)]


EVIDENCE = {
    "rxe": ("device/**/*.py", "twonode/*.py"),
    "rxe-refuses": ("device/**/*.py",),
    "lib": ("host/*.py", "device/**/*.py"),
    "double": ("host/*.py",),
}
# The recording-double tests are spread over the host files by object:
# for "double" only the test functions that take the fixture count.
RECORDING_ONLY = {"double"}


def _recording_tests(texts: dict[Path, str]) -> dict[Path, str]:
    """The source of each test function taking the ``recording`` fixture,
    with its file's constants and helpers (no docstring, no imports)."""
    out = {}
    for path, text in texts.items():
        tree = ast.parse(text)
        lines = text.splitlines()
        tests = [
            n
            for n in tree.body
            if isinstance(n, ast.FunctionDef)
            and n.name.startswith("test_")
            and "recording" in {a.arg for a in n.args.args}
        ]
        if not tests:
            continue
        helpers = [
            n
            for n in tree.body
            if isinstance(n, (ast.Assign, ast.FunctionDef, ast.ClassDef)) and n not in tests
        ]
        keep = helpers + tests
        out[path] = "\n".join("\n".join(lines[n.lineno - 1 : n.end_lineno]) for n in keep)
    return out


def _node_texts(node_ids) -> dict[str, str]:
    """Node id -> the source of that test function (of the whole file for
    a bare path)."""
    out = {}
    for line in node_ids:
        path, _, func = line.partition("::")
        source = (ROOT / path).read_text()
        if not func:
            out[line] = source
            continue
        tree = ast.parse(source)
        node = next(
            n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func.split("[")[0]
        )
        out[line] = ast.get_source_segment(source, node) or ""
    return out


def _distro_subset_texts() -> dict[str, str]:
    """The tests of the distribution matrix's device subset."""
    lines = [line.strip() for line in DISTRO_SUBSET.read_text().splitlines()]
    return _node_texts(line for line in lines if line and not line.startswith("#"))


def _in_root_tests() -> list[str]:
    """The tests make test-kernels runs on kernel 7.2 chrooted into
    Debian sid's root (rdma-core 65): the Makefile's in-root command."""
    recipe = MAKEFILE.read_text().replace("\\\n", " ")
    # The command may name its tests through a variable (NAME := tests...).
    variables = dict(re.findall(r"^([A-Z_]+)\s*:?=\s*(.*)$", recipe, re.M))
    found = []
    for line in recipe.splitlines():
        if "--kernel sid" in line and "tools/rxe-vm.d/in-root" in line:
            line = re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables.get(m.group(1), ""), line)
            found += re.findall(r"\btests/\S+\.py(?:::\S+)?", line)
    return found


def test_the_in_root_run_is_found():
    # Else rxe-7.2's evidence below would be empty and prove nothing.
    assert "tests/device/test_kernel_caps.py" in _in_root_tests()


@pytest.mark.parametrize("where", sorted(EVIDENCE) + ["rxe-sid", "rxe-7.2"])
def test_a_test_exercises_each_name(table, where):
    if where == "rxe-sid":
        texts = _distro_subset_texts()
    elif where == "rxe-7.2":
        texts = _node_texts(_in_root_tests())
    else:
        texts = _test_texts(*EVIDENCE[where])
        if where in RECORDING_ONLY:
            texts = _recording_tests(texts)
    lacking = [
        f"{v.verb} ({', '.join(v.names)})"
        for v in table
        if v.where == where
        and not any(_exercised(n, texts) for n in v.names)
        # a recording test checks the double's record of the verb itself
        and not (where == "double" and any(re.search(rf"\b{v.verb}\b", t) for t in texts.values()))
    ]
    assert not lacking, f"where={where}: no test in {EVIDENCE.get(where, where)} uses {lacking}"


def test_the_page_counts_add_up(ext, table):
    c = ext.counts(table)
    assert sum(c.values()) == 174
    text = "\n".join(ext._rst(table))
    assert f"the C core calls {174 - c['none']}" in text
