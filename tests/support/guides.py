"""The code blocks of the guides (docs/guides/*.md) and README.md: found,
classified by the marker before each one, and run.

Every fenced code block in those files is either run by a test or marked
as one that shows output or only illustrates.  The marker is an HTML
comment on the last non-blank line before the fence (Markdown and Sphinx
show nothing of it)::

    <!-- run: host -->                   run on the host (no RDMA device):
                                         tests/host/test_guides.py
    <!-- run: device -->                 run on an RDMA device (rxe0 in the
                                         Soft-RoCE guest):
                                         tests/device/test_guides_device.py
    <!-- run: twonode pair=P role=R -->  one half of a program pair P run on
                                         the two-node rig: role server on
                                         node 0, role client on node 1
                                         (tests/twonode/test_guides_twonode.py)
    <!-- run: no, shows output -->       the output of the runnable block
                                         just before it in the same file: its
                                         lines must appear in that block's
                                         output, in order ("..." matches
                                         anything, within a line or as a
                                         line of its own)
    <!-- run: no, illustrative: WHY -->  not run; WHY says why (a reason is
                                         required)

Options after ``host``/``device``/``twonode``, as ``key=value``:

- ``name=N`` names a block; ``after=N`` runs the block named N of the
  same file first, in the same program (a setup the guide shows once and
  several snippets continue; the combination must be a complete program).
  A setup that other blocks continue runs only as their beginning, and a
  program shown twice (README.md's quickstart is the guide's) runs once.
- ``pair=P role=server|client``: two blocks that run together.  On a
  device the server starts first and the client runs beside it; on the
  two-node rig the server runs on node 0 and the client on node 1.  A
  client that finds nobody listening yet ("refused") is run again until
  the server listens.
- ``ranks=N`` (device): N processes of the block side by side with the
  environment torchrun gives its workers (RANK, WORLD_SIZE, LOCAL_RANK,
  MASTER_ADDR=127.0.0.1, MASTER_PORT).
- ``timeout=S``: seconds in a quiet guest (default 240: the guest is
  emulated), scaled by the guest's time factor (support/timeouts.py).

A block with no marker, or with one not listed here, fails the host test:
nothing is left unrun by accident.

How a block runs: ``python`` blocks with the interpreter running the tests
(the venv's), as a program of its own (``python -c``; ``__name__`` is
``"__main__"``); ``sh`` blocks with ``sh -e -c``, with that interpreter's
directory first on PATH (so ``python`` is the venv's; where that directory
has no ``python``, a private one with a symlink comes first).  Both run in the
repository root.  In device and twonode blocks the examples' rig names are
replaced by this node's: ``rxe0`` (``rxe1`` too, on the two-node rig) by
its RDMA device (``IBVERBS_TEST_DEVICE``) and ``198.18.0.1`` by the
address a server listens on (``IBVERBS_TEST_CM_SERVER`` on a device, node
0's address on the rig).  The examples use port 1 and GID index 1, the
Soft-RoCE guest's IPv4 RoCE v2 GID.
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from support import free_port, timeouts

ROOT = Path(__file__).resolve().parents[2]
GUIDES = ROOT / "docs" / "guides"
README = ROOT / "README.md"
RUN_KINDS = ("host", "device", "twonode")
LANGS = {"python": "python", "py": "python", "sh": "sh", "bash": "sh", "console": "sh"}
OPTIONS = {"name", "after", "pair", "role", "ranks", "timeout"}
DEFAULT_TIMEOUT = 240.0
REFUSED = re.compile(r"refused|ECONNREFUSED|couldn't connect", re.I)

_MARKER = re.compile(r"^\s*<!--\s*run:\s*(.*?)\s*-->\s*$")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`{]*)")


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


class MarkerError(ValueError):
    """A block whose marker is missing or not one of the documented ones."""


@dataclass
class Block:
    """One fenced code block: where it is, its language, its code, and what
    its marker says (``kind`` is host, device, twonode, output or
    illustrative)."""

    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marker: str | None
    kind: str = ""
    options: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    expected: str | None = None  # the output block that follows it
    prelude: str = ""  # the code of its after= block

    @property
    def where(self) -> str:
        return f"{_rel(self.path)}:{self.line}"

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.line}"

    @property
    def timeout(self) -> float:
        return float(self.options.get("timeout", DEFAULT_TIMEOUT))

    def program(self) -> str:
        return self.prelude + self.code


def guide_files() -> list[Path]:
    return sorted(GUIDES.glob("*.md"))


def documents() -> list[Path]:
    """Every file whose blocks run: the guides and README.md."""
    return [*guide_files(), README]


def parse_marker(text: str | None, where: str) -> tuple[str, dict[str, str], str]:
    """``(kind, options, reason)`` of a marker's text; MarkerError when it is
    missing or unknown."""
    if text is None:
        raise MarkerError(
            f"{where}: code block without a marker; put <!-- run: host|device|twonode ... --> "
            "or <!-- run: no, shows output --> / <!-- run: no, illustrative: WHY --> before it "
            "(tests/support/guides.py)"
        )
    if text == "no, shows output":
        return "output", {}, ""
    m = re.fullmatch(r"no, illustrative:\s*(.+)", text)
    if m:
        return "illustrative", {}, m.group(1)
    kind, *rest = text.split()
    if kind not in RUN_KINDS:
        raise MarkerError(f"{where}: unknown marker <!-- run: {text} -->")
    options = {}
    for word in rest:
        key, sep, value = word.partition("=")
        if not sep or key not in OPTIONS or not value:
            raise MarkerError(f"{where}: unknown option {word!r} in <!-- run: {text} -->")
        options[key] = value
    if ("pair" in options) != ("role" in options):
        raise MarkerError(f"{where}: pair= and role= go together")
    if options.get("role", "server") not in ("server", "client"):
        raise MarkerError(f"{where}: role is server or client, not {options['role']!r}")
    if kind == "twonode" and "pair" not in options:
        raise MarkerError(f"{where}: a twonode block is one half of a pair (pair=P role=R)")
    if "ranks" in options and (kind != "device" or not options["ranks"].isdigit()):
        raise MarkerError(f"{where}: ranks=N (a number) is for device blocks")
    return kind, options, ""


def raw_blocks(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file, each with its marker text
    (None when there is none); nested fences are not looked into."""
    lines = path.read_text().splitlines()
    out = []
    i = 0
    last = None  # the last non-blank line before the current one
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                last = lines[i]
            i += 1
            continue
        indent, fence, lang = m.groups()
        start = i
        body = []
        i += 1
        while i < len(lines) and not (
            lines[i].strip().startswith(fence[0] * len(fence))
            and not lines[i].strip().strip(fence[0])
        ):
            line = lines[i]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            i += 1
        if i == len(lines):
            raise MarkerError(f"{_rel(path)}:{start + 1}: unclosed code fence")
        i += 1
        marker = _MARKER.match(last) if last is not None else None
        out.append(Block(path, start + 1, lang, "\n".join(body) + "\n", marker and marker.group(1)))
        last = None
    return out


def blocks(path: Path) -> list[Block]:
    """The blocks of one file, their markers parsed (MarkerError for the
    first bad one), output blocks attached to the runnable block before
    them and ``after=`` preludes resolved."""
    found = raw_blocks(path)
    named: dict[str, Block] = {}
    previous = None
    for b in found:
        b.kind, b.options, b.reason = parse_marker(b.marker, b.where)
        if b.kind in RUN_KINDS:
            if b.lang not in LANGS:
                raise MarkerError(f"{b.where}: cannot run a {b.lang or 'plain'!r} block")
            if "name" in b.options:
                named[b.options["name"]] = b
            previous = b
        elif b.kind == "output":
            if previous is None or previous.expected is not None:
                raise MarkerError(f"{b.where}: an output block follows no runnable block")
            previous.expected = b.code
    for b in found:
        if "after" in b.options:
            first = named.get(b.options["after"])
            if first is None or first.kind != b.kind or first.lang != b.lang:
                raise MarkerError(f"{b.where}: after={b.options['after']}: no such {b.kind} block")
            b.prelude = first.program()
    return found


def all_blocks(kind: str | None = None) -> list[Block]:
    out = [b for p in documents() for b in blocks(p)]
    return [b for b in out if kind is None or b.kind == kind]


def pairs(kind: str) -> list[tuple[str, Block, Block]]:
    """The (name, server, client) pairs of one kind, in document order;
    MarkerError for a pair without both halves."""
    halves: dict[tuple[Path, str], dict[str, Block]] = {}
    for b in all_blocks(kind):
        if "pair" in b.options:
            half = halves.setdefault((b.path, b.options["pair"]), {})
            if b.options["role"] in half:
                raise MarkerError(f"{b.where}: a second {b.options['role']} of the pair")
            half[b.options["role"]] = b
    out = []
    for (path, name), half in halves.items():
        if set(half) != {"server", "client"}:
            raise MarkerError(
                f"{path.name}: pair {name} lacks its {'server' if 'client' in half else 'client'}"
            )
        out.append((f"{path.name}:{name}", half["server"], half["client"]))
    return out


def singles(kind: str) -> list[Block]:
    """The blocks of one kind that run alone: not half of a pair, and not a
    setup that other blocks continue (it runs as their ``after=``)."""
    every = all_blocks(kind)
    continued = {(b.path, b.options["after"]) for b in every if "after" in b.options}
    out, seen = [], set()
    for b in every:
        if "pair" in b.options or (b.path, b.options.get("name")) in continued:
            continue
        if (b.lang, b.program(), tuple(sorted(b.options.items()))) in seen:
            continue  # the same program again (README's quickstart is the guide's)
        seen.add((b.lang, b.program(), tuple(sorted(b.options.items()))))
        out.append(b)
    return out


# Blocks that another test runs, in a way of its own (in its process, with
# checks of its own): the guides' device test leaves them to it.  Keys are
# "file:pair" for a pair, "file:name" for a block with name=.  The host
# test checks that each one exists and that its test names it.
ELSEWHERE = {
    "connection-manager.md:cm": "tests/device/test_cm_device.py::test_readme_example",
    "asyncio.md:aio-cm": "tests/device/test_aio_cm_device.py::test_readme_asyncio_cm_program",
}


def key_of(block: Block) -> str | None:
    """The ELSEWHERE key a block may have (its pair, else its name)."""
    name = block.options.get("pair") or block.options.get("name")
    return f"{block.path.name}:{name}" if name else None


def find(key: str) -> list[Block]:
    """The blocks of an ELSEWHERE key (both halves of a pair)."""
    file, _, name = key.partition(":")
    return [
        b
        for b in blocks(GUIDES / file)
        if b.options.get("pair") == name or b.options.get("name") == name
    ]


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


def localize(code: str, device: str | None, server: str | None, *, any_rxe: bool = False) -> str:
    """The examples' rig names replaced by this node's (module docstring)."""
    if device:
        code = re.sub(r"\brxe[0-9]\b" if any_rxe else r"\brxe0\b", device, code)
    if server:
        code = re.sub(r"\b198\.18\.0\.1\b", server, code)
    return code


def command(block: Block, code: str) -> list[str]:
    if LANGS[block.lang] == "python":
        return [sys.executable, "-c", code]
    return ["sh", "-e", "-c", code]


_python_dir: str | None = None


def python_dir() -> str:
    """A directory whose ``python`` is the interpreter running the tests: its
    own directory where it has one (a venv), else a private one holding a
    ``python`` symlink (the arm64 guest's root has python3.X and python3,
    no ``python``), removed at exit."""
    global _python_dir
    here = os.path.dirname(sys.executable)
    own = os.path.join(here, "python")
    if os.path.exists(own) and os.path.samefile(own, sys.executable):
        return here
    if _python_dir is None:
        _python_dir = tempfile.mkdtemp(prefix="ibverbs-guides-")
        atexit.register(shutil.rmtree, _python_dir, True)
        os.symlink(sys.executable, os.path.join(_python_dir, "python"))
    return _python_dir


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    dirs = dict.fromkeys([python_dir(), os.path.dirname(sys.executable)])
    env["PATH"] = os.pathsep.join([*dirs, env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def start(block: Block, code: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        command(block, code),
        cwd=ROOT,
        env=environment(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(proc: subprocess.Popen, timeout: float) -> tuple[int, str]:
    """Its exit status and output; killed (status -9) past the timeout (a
    quiet guest's seconds, scaled: support/timeouts.py)."""
    start = time.monotonic()
    try:
        out, _ = timeouts.communicate(proc, timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        out += (
            f"\n[killed after {time.monotonic() - start:.0f} s: {timeout:.0f} s"
            f" times the time factor {timeouts.factor():.2f}]"
        )
    return proc.returncode, out


def run(block: Block, code: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    return finish(start(block, code, env), block.timeout)


def run_client(
    block: Block, code: str, server: subprocess.Popen | None, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run a pair's client, again while it finds nobody listening and the
    server (when it is a local process) still runs, up to its timeout."""
    deadline = timeouts.Deadline(block.timeout)
    while True:
        rc, out = run(block, code, env)
        if (
            rc == 0
            or not REFUSED.search(out)
            or (server is not None and server.poll() is not None)
            or deadline.expired()
        ):
            return rc, out
        time.sleep(0.5)


def _matches(want: str, line: str) -> bool:
    """The parts of want between "..." appear in line, in order."""
    at = 0
    for part in want.split("..."):
        part = part.strip()
        found = line.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def run_pair(
    server: Block, client: Block, device: str | None, address: str | None
) -> tuple[tuple[int, str], tuple[int, str]]:
    """Both halves of a pair on this node: the server started, the client
    run beside it (again while nobody listens yet); returns each one's
    (status, output)."""
    srv = start(server, localize(server.program(), device, address))
    try:
        cli = run_client(client, localize(client.program(), device, address), srv)
        if cli[0] != 0 and srv.poll() is None:
            srv.kill()  # it would wait for a client that is not coming
        res = finish(srv, server.timeout)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.communicate()
    return res, cli


# ranks=N: one interpreter imports what the block imports from torch (about
# 15 s in the emulated guest, which N separate processes would each pay),
# then forks the N ranks; each rank runs the block as __main__ with
# torchrun's environment, its output going to a file of its own.
_RANKS_LAUNCHER = r"""
import os, sys, traceback
code, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if "torch" in code:
    try:
        import torch.distributed.rendezvous  # noqa: F401
    except ImportError:
        pass  # the block reports it
pids = []
for rank in range(n):
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            fd = os.open(f"{out}.{rank}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank))
            exec(compile(code, "<block>", "exec"), {"__name__": "__main__"})
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    pids.append(pid)
worst = 0
for pid in pids:
    _, st = os.waitpid(pid, 0)
    worst = max(worst, os.waitstatus_to_exitcode(st) if hasattr(os, "waitstatus_to_exitcode") else st >> 8)
sys.exit(worst)
"""


def run_ranks(block: Block, code: str) -> list[tuple[int, str]]:
    """``ranks=N``: N ranks side by side, with torchrun's environment
    (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
    MASTER_PORT); returns, per rank, the worst exit status of them all
    and that rank's output."""
    import tempfile

    n = int(block.options["ranks"])
    env = {
        "WORLD_SIZE": str(n),
        "LOCAL_WORLD_SIZE": str(n),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rank")
        proc = subprocess.Popen(
            [sys.executable, "-c", _RANKS_LAUNCHER, code, str(n), out],
            cwd=ROOT,
            env=environment(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        rc, launcher = finish(proc, block.timeout)
        results = []
        for rank in range(n):
            try:
                with open(f"{out}.{rank}") as f:
                    text = f.read()
            except OSError:
                text = ""
            results.append((rc, f"{launcher}{text}"))
    return results


def check_output(block: Block, rc: int, out: str, label: str = "") -> None:
    """Exit status 0 and, where the guide shows the output, its lines in
    order ("..." matches anything)."""
    head = f"{block.where}{label} ({' '.join(shlex.quote(a) for a in command(block, '…'))})"
    assert rc == 0, f"{head} exited with {rc}:\n{out}"
    if block.expected is None:
        return
    got = out.splitlines()
    pos = 0
    for want in block.expected.splitlines():
        want = want.strip()
        if not want or want == "...":
            continue
        for j in range(pos, len(got)):
            if _matches(want, got[j]):
                pos = j + 1
                break
        else:
            raise AssertionError(
                f"{head}: the guide shows {want!r}, not in the output (in order):\n{out}"
            )


# ---------------------------------------------------------------------------
# Links (checked on the host; Sphinx checks them again when it builds)
# ---------------------------------------------------------------------------


def slug(heading: str) -> str:
    """A heading's anchor as MyST (myst_heading_anchors) and GitHub make it."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\{[^}]*\}", "", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out = set()
    in_fence = None
    for line in path.read_text().splitlines():
        m = _FENCE.match(line)
        if m:
            in_fence = None if in_fence else m.group(2)
            continue
        if in_fence is None and (h := re.match(r"^#{1,6}\s+(.*)$", line)):
            out.add(slug(h.group(1)))
    return out


def links(path: Path) -> list[str]:
    """The relative Markdown link targets of a file (outside code)."""
    text = re.sub(r"(?ms)^(\s*)(`{3,}).*?^\1\2\s*$", "", path.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)
    out = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if not re.match(r"[a-z]+:", target):
            out.append(target)
    return out
