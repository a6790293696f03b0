"""The provider coverage tables (docs/reference/<header>-coverage.txt, the
Provider coverage page) against the code and the tests, one table per
parameter, so that the page cannot claim what they do not back.

For each table:

- it lists each function once, with the provider's prefix, and where the
  table means to be complete (efadv: 16) exactly the public functions of
  the rdma-core 65 header (tools/rdma-headers sid);
- each listed function is a symbol of the provider loader's table (an
  ``X(...)`` entry of the C tree's provider folder) or a static inline of
  the header that the C tree re-implements (names it outside comments);
- each Python name exists under the provider module, and its docstring
  (or its class's) names the function unless marked ``*``;
- a test exercises each name where the table says it ran: a host test
  taking the fake library's fixture for ``fake`` (and for every reached
  row: the fake checks the arguments), a device test of the provider that
  also names the C function (the refusal it asserts) for ``refuses``, a
  two-node test for ``twonode-fake``.

A second provider is one entry in TABLES.  No device needed.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import subprocess
from pathlib import Path

import pytest
from support import load_path
from support.coverage import name_problems

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "docs" / "_ext" / "ibverbs_providers.py"
C_TREE = ROOT / "src" / "ibverbs" / "_ibverbs"
TESTS = ROOT / "tests"

pytestmark = pytest.mark.skipif(
    not EXT.exists(), reason="docs/ is not in this tree (the wheel tests copy tests/ only)"
)

# header -> (the fake library's fixture in the host tests, the host test
# files, the device test files, the two-node test files)
TABLES = {
    "efadv": ("libefa", "host/test_efa*.py", "device/test_efa*_device.py", "twonode/test_efa*.py"),
    "mlx5dv": (
        "mlx5_fake",
        "host/test_mlx5*.py",
        "device/test_mlx5*_device.py",
        "twonode/test_mlx5*.py",
    ),
}


@pytest.fixture(scope="module")
def ext():
    return load_path("ibverbs_providers", EXT, register=True)


@pytest.fixture(params=sorted(TABLES))
def case(request, ext):
    p = ext.PROVIDERS[request.param]
    return p, ext.read_table(p.table), TABLES[request.param]


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _c_text(p) -> str:
    return "\n".join(
        _strip_comments(f.read_text()) for f in sorted((C_TREE / p.c_dir).rglob("*.[ch]"))
    )


def _loader_symbols(p) -> set[str]:
    """The functions of the loader's X(...) lists: the first argument with
    the prefix, or a second argument that is the full name."""
    out = set()
    for m in re.finditer(r"\bX\(\s*(\w+)\s*,\s*(\w+|\"[^\"]*\")", _c_text(p)):
        out.add(p.prefix + m.group(1))
        if m.group(2).startswith(p.prefix):
            out.add(m.group(2))
    return out


def _header_functions(p) -> tuple[set[str], set[str]]:
    """(all public functions, the static inline ones) of the rdma-core 65
    header."""
    r = subprocess.run(
        [str(ROOT / "tools" / "rdma-headers"), "sid"], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, f"tools/rdma-headers sid failed:\n{r.stderr}"
    text = (Path(r.stdout.strip()) / "infiniband" / f"{p.header}.h").read_text()
    text = _strip_comments(text)
    names = set(re.findall(rf"\b({p.prefix}\w+)\s*\(", text))
    # a name only called (inside an inline's body) is no declaration:
    # keep those declared with a return type before them
    declared = {
        n for n in names if re.search(rf"^[^\n;{{}}()]*\b\w[\w\s\*]*[\s\*]{n}\s*\(", text, re.M)
    }
    # "static inline", or mlx5dv.h's "static MLX5DV_ALWAYS_INLINE"
    inline = set(
        re.findall(rf"static\s+(?:inline|\w+_INLINE)\b[^;{{]*?\b({p.prefix}\w+)\s*\(", text)
    )
    return declared, inline


def test_each_function_once_and_complete(case):
    p, table, _ = case
    functions = [f.function for f in table]
    assert len(set(functions)) == len(functions)
    assert all(f.startswith(p.prefix) for f in functions)
    if p.total is not None:
        assert len(functions) == p.total
        declared, _ = _header_functions(p)
        assert set(functions) == declared, (
            f"the table and {p.header}.h of rdma-core 65 differ: "
            f"missing {sorted(declared - set(functions))}, extra {sorted(set(functions) - declared)}"
        )


def test_each_reached_function_is_loaded_or_reimplemented(case):
    p, table, _ = case
    symbols = _loader_symbols(p)
    _, inline = _header_functions(p)
    c = _c_text(p)
    bad = []
    for f in table:
        if f.where == "none" or f.function in symbols:
            continue
        if f.function in inline and re.search(rf"\b{f.function}\b", c):
            continue
        bad.append(f.function)
    assert not bad, f"neither in the loader's symbol table nor a re-implemented inline: {bad}"


def _resolve(module, name):
    obj, owner = module, None
    for part in name.split("."):
        owner, obj = obj, getattr(obj, part)
    return obj, owner


def test_names_exist_and_name_the_function(case):
    p, table, _ = case
    module = importlib.import_module(p.module)

    def docs_of(name):
        obj, owner = _resolve(module, name)
        docs = inspect.getdoc(obj) or ""
        if inspect.isclass(owner):
            docs += inspect.getdoc(owner) or ""
        return docs

    bad = name_problems(
        table, lambda f: f.function, p.module, docs_of, lambda f, docs: f.function in docs
    )
    assert not bad, "\n".join(bad)


def _texts(pattern: str) -> dict[Path, str]:
    return {path: path.read_text() for path in sorted(TESTS.glob(pattern))}


def _fixture_tests(texts: dict[Path, str], fixture: str) -> dict[Path, str]:
    """The source of each test function taking `fixture`, with the
    module's helper functions it names (a body run in the fake's child
    process is often one: ``mlx5_fake.run(_qp_body)``)."""
    out = {}
    for path, text in texts.items():
        tree = ast.parse(text)
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        funcs = [
            n
            for n in defs
            if n.name.startswith("test_") and fixture in {a.arg for a in n.args.args}
        ]
        src = [ast.get_source_segment(text, n) or "" for n in funcs]
        helpers = [
            n
            for n in defs
            if not n.name.startswith("test_") and any(re.search(rf"\b{n.name}\b", t) for t in src)
        ]
        src += [ast.get_source_segment(text, n) or "" for n in helpers]
        if funcs:
            out[path] = "\n".join(src)
    return out


def _uses(name: str, texts: dict[Path, str]) -> bool:
    attr = name.split(".")[-1]
    return any(re.search(rf"\.{re.escape(attr)}\b", t) for t in texts.values())


@pytest.mark.parametrize("where", ["fake", "refuses", "twonode-fake"])
def test_a_test_exercises_each_name(case, where):
    p, table, (fixture, host, device, twonode) = case
    fake = _fixture_tests(_texts(host), fixture)
    assert fake, f"no host test in {host} takes the {fixture} fixture"
    lacking = []
    for f in table:
        if f.where == "none":
            continue
        # every reached row: the fake library checks the arguments
        if where == "fake" and not any(_uses(n, {k: v}) for n in f.names for k, v in fake.items()):
            lacking.append(f"{f.function} ({', '.join(f.names)}): no host test with the fake")
        if f.where != where or where == "fake":
            continue
        texts = _texts(device if where == "refuses" else twonode)
        if not any(_uses(n, texts) for n in f.names):
            lacking.append(
                f"{f.function} ({', '.join(f.names)}): no test in {texts and list(texts)}"
            )
        elif where == "refuses" and not any(f.function in t for t in texts.values()):
            lacking.append(f"{f.function}: the device test does not assert its refusal by name")
    assert not lacking, "\n".join(lacking)


def test_the_page_counts_add_up(ext, case):
    p, table, _ = case
    c = ext.counts(table)
    assert sum(c.values()) == len(table)
    text = "\n".join(ext._rst(p, table))
    assert f"reaches {len(table) - c['none']}" in text
    assert f"{c['refuses']} reached the real {p.library}" in text
