"""Text lint of the C extension's GIL-free regions (after msgspec's).

The rule that keeps close() from racing a blocking call (README, "Safety"):
every region between ``Py_BEGIN_ALLOW_THREADS`` and ``Py_END_ALLOW_THREADS``

- is paired in the same block, with no ``return``/``goto``/``break``/
  ``continue`` between the two macros (leaving the region without
  re-taking the GIL is fatal), and no Python C-API call inside it;
- sits inside ``HANDLE_BUSY_ENTER(x)`` ... ``HANDLE_BUSY_EXIT(x)`` of the
  handle it uses, again with no way out in between (a busy mark that is
  never cleared makes close() refuse forever), so that close() of that
  handle raises EBUSY instead of freeing what the call is using.

Parents need no mark of their own: a parent cannot be closed while it has
open children (EBUSY), and a CQ/SRQ/CompChannel cannot be closed while a
QP/CQ uses it.  AUDITED records, per function, the handle each GIL-free
region marks busy after a review of everything the call touches; a new
region fails this test until it is reviewed and added there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "ibverbs" / "_ibverbs"

# function -> the handle expression its GIL-free region(s) mark busy.
# Reviewed: what each call uses with the GIL released, and why nothing
# else can be freed under it.
AUDITED = {
    # poll() on a CompChannel's or a Context's fd.  The channel/Context
    # is busy; the CQs of a channel are not touched until the GIL is back
    # (the event is read and matched under the GIL, cq/channel.c;
    # fd_wait_readable is in core/handle.c).
    "fd_wait_readable": "h",
    # ibv_reg_mr / ibv_reg_dmabuf_mr on the PD (busy); its Context cannot
    # close while the PD is open; the memory itself is the caller's
    # (a raw address) or retained by the owner argument, which the call
    # holds (an argument of the running method).
    "mr_register": "pd",
    "pd_reg_dmabuf_mr": "pd",
    # mlx5dv_reg_dmabuf_mr on the PD argument (busy), as above.
    "mlx5_mod_reg_dmabuf_mr": "a.pd",
    # ibv_modify_qp / ibv_query_qp on the QP (busy); its PD, CQs and SRQ
    # cannot close while the QP is open; attr/init are on the C stack.
    "qp_modify_raw": "self",
    "qp_query_raw": "self",
    # Only in the benchmark build (-DIBVERBS_BENCH_RELEASE_GIL, made by
    # benchmarks/prepare.py for the GIL measurement; never shipped):
    # ibv_post_send/ibv_post_recv on the QP (busy) touch the WRs, linked
    # and held by the running method's argument, and the QP's provider
    # queues; ibv_poll_cq on the CQ (busy) writes into the CQ's own wcs
    # array, which a concurrent poll() on the same CQ could reallocate:
    # that build is for the single-threaded measurement only.
    "qp_post_send": "self",
    "qp_post_recv": "self",
    "cq_poll_count": "self",
    # cm/cm_event.c: poll() + rdma_get_cm_event on the CMID's/CMListener's own
    # event channel (busy; a stand-in handle while resolve() has none yet);
    # the event is copied into a C struct and acked before the GIL is back.
    "cm_next_event": "h",
    # cm/cm.c: rdma_destroy_id (the kernel may wait for the CM): the CMID is busy,
    # its QP and Context are already closed.
    "cmid_destroy": "h",
    # qp/qp.c: ibv_attach_mcast / ibv_detach_mcast on the QP (busy); the
    # GID is on the C stack.
    "qp_mcast": "self",
    # qp/ah.c: ibv_init_ah_from_wc (sysfs reads of the GID table) on the
    # Context (busy), ibv_create_ah_from_wc on the PD (busy; its Context
    # cannot close while it is open); wc, grh and attr are C copies.
    "context_init_ah_from_wc": "self",
    "pd_create_ah_from_wc": "self",
    # mem/mr.c: ibv_reg_mr_ex / ibv_reg_buf_mr on the PD (busy), and the Buf
    # and DMAH the MR will use (each busy too: their close() refuses); the
    # init attr is on the caller's C stack.  ibv_rereg_mr on the MR (busy)
    # and the new PD (busy when given); addr is the caller's memory, held by
    # the owner argument of the running method.
    "mr_reg_ex_call": "pd",
    "mr_rereg": "self",
}

# GIL-free regions that use no handle at all, so mark none busy: function
# -> what the region does.
NO_HANDLE = {
    # core/handle.c, free-threaded build only: close() sleeps, detached,
    # while it waits for other threads' calls on the handle to end.
    "nap": "nanosleep",
}

EXITS = re.compile(r"\b(return|goto|break|continue)\b")
PY_API = re.compile(r"\b(_?Py[A-Za-z]*_\w+|Py[A-Z]\w*)\s*\(")


def strip_c(text: str) -> str:
    """Comments, string/char literals and preprocessor lines blanked out
    (newlines kept, so line numbers stay right)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1 : j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    lines = "".join(out).split("\n")
    cont = False
    for k, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            lines[k] = ""
    return "\n".join(lines)


def functions(text: str):
    """(name, body, first line) of each top-level brace block that follows
    a function head."""
    depth, start = 0, None
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and start is not None:
                head = text[max(0, text.rfind(";", 0, start), text.rfind("}", 0, start)) : start]
                m = re.search(r"(\w+)\s*\([^;{}]*\)\s*$", head)
                if m:
                    yield m.group(1), text[start : i + 1], text.count("\n", 0, start) + 1
                start = None


def block_depths(body: str):
    """Brace depth at each offset of body."""
    d, out = 0, []
    for c in body:
        if c == "{":
            d += 1
        out.append(d)
        if c == "}":
            d -= 1
    return out


def check_function(name: str, body: str, audited: dict) -> list[str]:
    errors = []
    depth = block_depths(body)
    begins = [m.start() for m in re.finditer(r"\bPy_BEGIN_ALLOW_THREADS\b", body)]
    ends = [m.start() for m in re.finditer(r"\bPy_END_ALLOW_THREADS\b", body)]
    if re.search(r"\bPy_(UN)?BLOCK_THREADS\b", body):
        errors.append(
            f"{name}: Py_BLOCK_THREADS/Py_UNBLOCK_THREADS: keep to one BEGIN/END pair per region"
        )
    if len(begins) != len(ends):
        errors.append(
            f"{name}: {len(begins)} Py_BEGIN_ALLOW_THREADS but {len(ends)} Py_END_ALLOW_THREADS"
        )
        return errors
    busy_enter = list(re.finditer(r"\bHANDLE_BUSY_ENTER\s*\(\s*([^()]+?)\s*\)", body))
    busy_exit = list(re.finditer(r"\bHANDLE_BUSY_EXIT\s*\(\s*([^()]+?)\s*\)", body))
    if len(busy_enter) != len(busy_exit):
        errors.append(
            f"{name}: {len(busy_enter)} HANDLE_BUSY_ENTER but {len(busy_exit)} HANDLE_BUSY_EXIT"
        )
    for b, e in zip(begins, ends):
        if e < b or depth[b] != depth[e] or min(depth[b : e + 1]) < depth[b]:
            errors.append(f"{name}: Py_BEGIN/END_ALLOW_THREADS not paired in one block")
            continue
        region = body[b + len("Py_BEGIN_ALLOW_THREADS") : e]
        m = EXITS.search(region)
        if m:
            errors.append(
                f"{name}: '{m.group(1)}' between Py_BEGIN_ALLOW_THREADS and Py_END_ALLOW_THREADS"
            )
        m = PY_API.search(region)
        if m:
            errors.append(f"{name}: Python C-API call {m.group(1)}() without the GIL")
        if re.search(r"\b(HANDLE_CHECK|handle_\w+|verbs_error\w*)\s*\(", region):
            errors.append(f"{name}: handle/exception helper called without the GIL")
        if name in NO_HANDLE:
            if not re.fullmatch(rf"\s*{NO_HANDLE[name]}\s*\([^;()]*\)\s*;\s*", region):
                errors.append(f"{name}: its GIL-free region is not just {NO_HANDLE[name]}()")
            continue
        # The busy mark around it: the nearest ENTER before, EXIT after.
        enter = [m for m in busy_enter if m.start() < b]
        leave = [m for m in busy_exit if m.start() > e]
        if not enter or not leave:
            errors.append(
                f"{name}: GIL-free region outside HANDLE_BUSY_ENTER/"
                "HANDLE_BUSY_EXIT: close() could free what it uses"
            )
            continue
        en, ex = enter[-1], leave[0]
        if en.group(1) != ex.group(1):
            errors.append(
                f"{name}: HANDLE_BUSY_ENTER({en.group(1)}) closed by "
                f"HANDLE_BUSY_EXIT({ex.group(1)})"
            )
        if (
            depth[en.start()] != depth[b]
            or depth[ex.start()] != depth[b]
            or min(depth[en.start() : ex.start() + 1]) < depth[b]
        ):
            errors.append(f"{name}: busy mark and GIL-free region not in one block")
        for gap in (body[en.end() : b], body[e : ex.start()]):
            m = EXITS.search(gap)
            if m:
                errors.append(
                    f"{name}: '{m.group(1)}' between the busy mark "
                    "and the GIL-free region leaves the handle busy"
                )
        want = audited.get(name)
        if want is None:
            errors.append(
                f"{name}: GIL-free region not in AUDITED: review what "
                "it touches and which handle must be busy, then add it"
            )
        elif want != en.group(1):
            errors.append(f"{name}: marks {en.group(1)!r} busy, AUDITED says {want!r}")
    return errors


def lint(text: str, audited: dict) -> list[str]:
    errors = []
    stripped = strip_c(text)
    seen = 0
    for name, body, line in functions(stripped):
        errors += [f"line {line}: {e}" for e in check_function(name, body, audited)]
        seen += body.count("Py_BEGIN_ALLOW_THREADS")
    if seen != stripped.count("Py_BEGIN_ALLOW_THREADS"):
        errors.append("Py_BEGIN_ALLOW_THREADS outside a function body")
    if re.search(r"#\s*define[^\n]*(\\\n[^\n]*)*ALLOW_THREADS", text):
        errors.append("Py_*_ALLOW_THREADS inside a macro: this lint cannot see it")
    return errors


C_FILES = sorted(SRC.rglob("*.c")) + sorted(SRC.rglob("*.h"))


def rel(p: Path) -> str:
    """A C file's name in messages and tables: its path below SRC."""
    return p.relative_to(SRC).as_posix()


@pytest.mark.parametrize("path", C_FILES, ids=rel)
def test_gil_free_regions(path):
    assert lint(path.read_text(), AUDITED) == []


def test_audited_functions_exist():
    """Every AUDITED and NO_HANDLE entry still has a GIL-free region (no
    stale entries)."""
    found = set()
    for path in C_FILES:
        for name, body, _ in functions(strip_c(path.read_text())):
            if "Py_BEGIN_ALLOW_THREADS" in body:
                found.add(name)
    assert found == set(AUDITED) | set(NO_HANDLE)


GOOD = """
static int f(Handle *h)
{
	int rc;
	/* Py_BEGIN_ALLOW_THREADS in a comment is ignored */
	HANDLE_BUSY_ENTER(h);
	Py_BEGIN_ALLOW_THREADS
	rc = poll(0, 0, -1);
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(h);
	return rc;
}
"""


@pytest.mark.parametrize(
    "bad, why",
    [
        (GOOD.replace("rc = poll(0, 0, -1);", "if (x) return -1;"), "'return'"),
        (GOOD.replace("rc = poll(0, 0, -1);", "goto out;"), "'goto'"),
        (GOOD.replace("rc = poll(0, 0, -1);", "Py_DECREF(o);"), "Python C-API"),
        (GOOD.replace("rc = poll(0, 0, -1);", "handle_check(h);"), "helper"),
        (GOOD.replace("\tPy_END_ALLOW_THREADS\n", ""), "Py_END_ALLOW_THREADS"),
        (
            GOOD.replace("\tHANDLE_BUSY_ENTER(h);\n", "").replace("\tHANDLE_BUSY_EXIT(h);\n", ""),
            "outside HANDLE_BUSY",
        ),
        (GOOD.replace("HANDLE_BUSY_EXIT(h)", "HANDLE_BUSY_EXIT(g)"), "closed by"),
        (
            GOOD.replace(
                "\tPy_BEGIN_ALLOW_THREADS\n", "\tif (x) return 1;\n\tPy_BEGIN_ALLOW_THREADS\n"
            ),
            "leaves the handle busy",
        ),
        (
            GOOD.replace("\tPy_END_ALLOW_THREADS\n", "\tif (1) {\n\tPy_END_ALLOW_THREADS\n\t}\n"),
            "not paired",
        ),
        (GOOD.replace("static int f", "static int g"), "not in AUDITED"),
        (
            GOOD.replace("HANDLE_BUSY_ENTER(h)", "HANDLE_BUSY_ENTER(x)").replace(
                "HANDLE_BUSY_EXIT(h)", "HANDLE_BUSY_EXIT(x)"
            ),
            "AUDITED says",
        ),
    ],
)
def test_lint_catches(bad, why):
    """The lint is not vacuous: each broken variant of GOOD is reported."""
    assert lint(GOOD, {"f": "h"}) == []
    errors = lint(bad, {"f": "h"})
    assert any(why in e for e in errors), errors


# No code hidden in a long macro body: a variant that must exist twice is
# a template header included twice (wr/templates/, its README.md).
MAX_MACRO_LINES = 40


def macro_lengths(text: str) -> dict[str, int]:
    """#define name -> number of lines of its body (continuations)."""
    res = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"\s*#\s*define\s+(\w+)", lines[i])
        start = i
        while lines[i].endswith("\\") and i + 1 < len(lines):
            i += 1
        if m:
            res[m.group(1)] = i - start + 1
        i += 1
    return res


@pytest.mark.parametrize("path", C_FILES, ids=rel)
def test_macro_size(path):
    text = path.read_text()
    long_macros = {k: v for k, v in macro_lengths(text).items() if v > MAX_MACRO_LINES}
    assert long_macros == {}


def test_macro_lengths_counts_continuations():
    assert macro_lengths("#define A 1\n#define B \\\n\tx \\\n\ty\nint z;\n") == {"A": 1, "B": 3}


# ---------------------------------------------------------------------
# No include or call cycle between two type files.  Calls are read from
# the objects (nm), so template names (sendwr_link) and method tables
# count: file A uses B when an undefined symbol of A.o is defined in B.o.
# Every file of every folder is a node, core/module.c too: it names every
# type and calls into every file, and none calls into it (ST, the state
# they share, is core/state.c's).
# ---------------------------------------------------------------------

# Headers a .c file may include with quotes, and who may include them.
TEMPLATES = {
    "wr/templates/post_link.h": {"wr/post.c"},
    "wr/templates/wrchain_kind.h": {"wr/wrchain.c"},
    "wr/templates/batch_run.h": {"wr/batch.c", "wr/recv_batch.c"},
    "wr/templates/wr_kind_send.h": {"wr/post.c", "wr/wrchain.c"},
    "wr/templates/wr_kind_recv.h": {"wr/post.c", "wr/wrchain.c"},
    "wr/templates/wr_kind_undef.h": {"wr/post.c", "wr/wrchain.c"},
}
# The shared header and one per family (what a family's files share
# beyond it, and what other files use of them: its objects, type specs
# and factories); each includes only ibverbs.h.  Any other file may
# include any of them: core/module.c includes every family header, since
# it names every type spec.
SHARED_HEADERS = {
    "ibverbs.h",
    "cm/cm.h",
    "counters/counters.h",
    "cq/cq.h",
    "device/device.h",
    "mem/mem.h",
    "qp/qp.h",
    "wr/wr.h",
    "wq/wq.h",
    "xrc/xrc.h",
    "efa/efa.h",
    "mlx5/mlx5.h",
}
# Parts of ibverbs.h kept apart: the declarations old rdma-core headers
# lack, the argument declarations (glibc_floor.h is force-included by
# setup.py, never by a file).
PRIVATE_HEADERS = {
    "core/compat.h": {"ibverbs.h"},
    "core/args.h": {"ibverbs.h"},
    "efa/efa_abi.h": {"efa/efa.h"},  # also the fake libefa's
}


def object_symbols(tmp: Path) -> tuple[dict[str, str], dict[str, set[str]]]:
    """(symbol -> the .c defining it, .c -> the symbols it uses)."""
    import shutil
    import subprocess
    import sysconfig
    from concurrent.futures import ThreadPoolExecutor

    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc and shutil.which("nm"), "cc and nm (binutils) are needed"
    inc = sysconfig.get_paths()["include"]
    # The defines of a real build: setup.py's, its header probes included
    # (without them compat.h would redeclare what these headers declare).
    from support import load_path

    setup_py = SRC.parents[2] / "setup.py"
    if not setup_py.exists():  # tools/test-wheels: the C sources as text only
        pytest.skip("no setup.py beside the C sources: the build's defines are unknown")
    setup = load_path("_ibverbs_setup", setup_py)
    defines = [f"-D{k}={v}" for k, v in setup.DEFINES + setup.probed_defines([])]

    includes = ["-I", str(SRC), "-I", inc]  # setup.py's include_dirs, Python's

    def compile_one(c: Path) -> Path:
        o = tmp / (rel(c).replace("/", "+")[:-2] + ".o")
        subprocess.run(
            [cc, "-c", "-O0", "-std=gnu11", *defines, *includes, str(c), "-o", str(o)],
            check=True,
        )
        return o

    sources = sorted(SRC.rglob("*.c"))
    with ThreadPoolExecutor(4) as ex:
        objs = list(ex.map(compile_one, sources))
    defs: dict[str, str] = {}
    uses: dict[str, set[str]] = {}
    for o in objs:
        f = o.stem.replace("+", "/") + ".c"
        out = subprocess.run(["nm", str(o)], capture_output=True, text=True, check=True)
        for line in out.stdout.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRC":
                defs[p[2]] = f
            elif len(p) == 2 and p[0] == "U":
                uses.setdefault(f, set()).add(p[1])
    return defs, uses


def file_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    res: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                res.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return res


def test_file_cycles_finds_a_cycle():
    assert file_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert file_cycles({"a": {"b"}, "b": set()}) == []


def test_no_call_cycle_between_type_files(tmp_path):
    defs, uses = object_symbols(tmp_path)
    edges: dict[str, set[str]] = {}
    why: dict[tuple[str, str], set[str]] = {}
    for f, syms in uses.items():
        for s in syms:
            g = defs.get(s)
            if g is None or f == g:
                continue
            edges.setdefault(f, set()).add(g)
            why.setdefault((f, g), set()).add(s)
    assert "sendwr_link" in defs and defs["sendwr_link"] == "wr/post.c"
    cycles = file_cycles(edges)
    detail = [{(a, b): sorted(why[(a, b)]) for a in c for b in c if (a, b) in why} for c in cycles]
    assert cycles == [], detail


def test_no_include_cycle_between_type_files():
    errors = []
    for path in sorted(SRC.rglob("*.[ch]")):
        name = rel(path)
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(), re.M):
            if inc in SHARED_HEADERS and name not in SHARED_HEADERS:
                continue
            if name in SHARED_HEADERS and inc == "ibverbs.h":
                continue
            if name in TEMPLATES.get(inc, ()):
                continue
            if name in PRIVATE_HEADERS.get(inc, ()):
                continue
            errors.append(f"{name} includes {inc}")
    assert errors == []


# ---------------------------------------------------------------------
# The map of the C tree (src/ibverbs/_ibverbs/README.md) names every
# file: each folder's row names each of its .c and .h files (a file of a
# subfolder by its subfolder, e.g. `templates/`), and no file that is gone.
# ---------------------------------------------------------------------


def readme_rows() -> dict[str, set[str]]:
    text = (SRC / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)/` *\| (.*)\|$", text, re.M))
    return {d: set(re.findall(r"`([\w./]+)`", row)) for d, row in rows.items()}


def test_the_readme_maps_every_file():
    rows = readme_rows()
    missing, stale = [], []
    for d in sorted(p for p in SRC.iterdir() if p.is_dir() and p.name != "__pycache__"):
        names = rows.get(d.name)
        if names is None:
            missing.append(f"{d.name}/ (no row)")
            continue
        for f in sorted(d.rglob("*.[ch]")):
            r = f.relative_to(d)
            if r.name not in names and f"{r.parts[0]}/" not in names:
                missing.append(rel(f))
        for n in names:
            if re.fullmatch(r"\w+\.[ch]", n) and not (d / n).exists() and not (SRC / n).exists():
                stale.append(f"{d.name}/{n}")
    assert missing == [] and stale == [], (missing, stale)
