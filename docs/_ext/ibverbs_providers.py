"""The provider coverage tables: every public function of a provider's
direct-verbs header (libefa's ``efadv.h``, ...), the Python names under
the provider module that reach it and where it ran.

Each table is ``docs/reference/<header>-coverage.txt``, in the line format
of the libibverbs table (``verbs-coverage.txt``): ``function python where``,
``## `` opens a section, ``#`` starts a comment.  ``function`` is the full C
name, ``python`` the names under the provider module (a trailing ``*``
marks a function called inside that name, whose docstring need not name
it; ``-`` when nothing reaches it) and ``where`` one of ``WHERE``.
``read_table`` parses one; ``tests/host/test_provider_coverage.py`` checks
each table against the code and the tests; the ``provider-coverage``
directive (``.. provider-coverage:: efadv``) renders one, opening with its
counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REFERENCE = Path(__file__).resolve().parent.parent / "reference"

WHERE = {
    "refuses": (
        "the real library, in the Soft-RoCE guest, refuses rxe objects "
        "(asserted); the fake library checks the arguments"
    ),
    "twonode-fake": (
        "the user path ran between two nodes of the rig: the fake library "
        "over real rxe UD QPs; the fake checks the arguments"
    ),
    "fake": (
        "never ran on hardware: the project's fake library records and "
        "checks its arguments and struct bytes"
    ),
    "none": "not reached",
}


@dataclass(frozen=True)
class Provider:
    """A provider header's table and where its pieces live."""

    header: str  # "efadv"
    library: str  # "libefa.so.1"
    module: str  # "ibverbs.efa"
    c_dir: str  # the C tree's folder of its wrappers: "efa"
    prefix: str  # of its functions: "efadv_"
    total: int | None  # the header's public functions (rdma-core 65), if all listed
    real: str  # where the real library's refusals run

    @property
    def table(self) -> Path:
        return REFERENCE / f"{self.header}-coverage.txt"


PROVIDERS = {
    "efadv": Provider(
        "efadv",
        "libefa.so.1",
        "ibverbs.efa",
        "efa",
        "efadv_",
        16,
        "Debian 12's, rdma-core 44",
    ),
    # Not complete: mlx5dv.h has 174 public names; the table lists those
    # the engines call (../PROVIDERS.md) and the DC setters.
    "mlx5dv": Provider(
        "mlx5dv",
        "libmlx5.so.1",
        "ibverbs.mlx5",
        "mlx5",
        "mlx5dv_",
        None,
        "Debian 12's, rdma-core 44",
    ),
}


@dataclass(frozen=True)
class Function:
    section: str
    function: str  # the full C name
    names: tuple[str, ...]  # under the provider module ("QP.query_wqs")
    inside: tuple[bool, ...]  # the name calls it inside (no docstring mention needed)
    where: str


def read_table(path: Path) -> list[Function]:
    out: list[Function] = []
    section = ""
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 3 or parts[2] not in WHERE:
            raise ValueError(f"{path.name}:{lineno}: want 'function python where', got {raw!r}")
        function, python, where = parts
        names = () if python == "-" else tuple(python.split(","))
        out.append(
            Function(
                section,
                function,
                tuple(n.rstrip("*") for n in names),
                tuple(n.endswith("*") for n in names),
                where,
            )
        )
    return out


def counts(functions: list[Function]) -> dict[str, int]:
    out = dict.fromkeys(WHERE, 0)
    for f in functions:
        out[f.where] += 1
    return out


def _rst(p: Provider, functions: list[Function]) -> list[str]:
    c = counts(functions)
    total = len(functions)
    of = f"all {total}" if p.total == total else f"{total}"
    lines = [
        f"The table lists {of} public functions of ``{p.header}.h``; "
        f"``{p.module}`` reaches {total - c['none']}.  "
        f"{c['refuses']} reached the real {p.library} ({p.real}) in the "
        f"Soft-RoCE guest only, which refuses rxe objects (the refusal "
        f"asserted); {c['twonode-fake']} ran end to end between two nodes "
        f"of the rig over the fake library; {c['fake']} never ran on "
        f"hardware and are checked only against the fake library; "
        f"{c['none']} are not reached.",
        "",
    ]
    section = None
    for f in functions:
        if f.section != section:
            section = f.section
            title = section.replace("_", "\\_")
            lines += [
                "",
                title,
                "~" * len(title),
                "",
                ".. list-table::",
                "   :header-rows: 1",
                "",
                "   * - Function",
                "     - Python",
                "     - Where",
            ]
        mod = p.module.removeprefix("ibverbs.")
        py = ", ".join(
            f"``{mod}.{n}``" + (" (inside)" if i else "") for n, i in zip(f.names, f.inside)
        )
        lines += [f"   * - ``{f.function}``", f"     - {py or '--'}", f"     - {WHERE[f.where]}"]
    return lines


def setup(app):
    # Sphinx only here: the host test reads the tables without it.
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective
    from sphinx.util.nodes import nested_parse_with_titles

    class ProviderCoverage(SphinxDirective):
        has_content = False
        required_arguments = 1

        def run(self):
            p = PROVIDERS[self.arguments[0]]
            self.env.note_dependency(str(p.table))
            node = nodes.section()
            node.document = self.state.document
            rst = _rst(p, read_table(p.table))
            nested_parse_with_titles(self.state, StringList(rst), node)
            return node.children

    app.add_directive("provider-coverage", ProviderCoverage)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
