"""The verbs coverage table: every public verb of libibverbs, the Python
names that wrap it and where it ran.

The table itself is docs/reference/verbs-coverage.txt (one line per verb:
verb, Python names, where; ``## `` lines open a section).  ``read_table``
parses it; ``tests/host/test_verbs_coverage.py`` checks it against the code
(each listed name exists and its docstring names the verb, the C core
calls the verb, a test exercises the name where the table says it ran, no
docstring wraps a verb the table calls unreached), and the
``verbs-coverage`` directive renders it on the reference's Verbs coverage
page, opening with the counts.  So the page cannot claim what the code or
the tests do not back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).resolve().parent.parent / "reference" / "verbs-coverage.txt"

WHERE = {
    "rxe": "runs on Soft-RoCE (the device suite)",
    "rxe-sid": (
        "runs on Soft-RoCE with rdma-core 65 (the sid root of the distribution "
        "matrix); Debian 12's rdma-core 44 lacks it (the refusal asserted)"
    ),
    "rxe-7.2": (
        "runs on Soft-RoCE only with a newer kernel and rdma-core: kernel 7.2 "
        "under rdma-core 65 (make test-kernels, in Debian sid's root); 6.1 and "
        "6.12, and rdma-core 44 on any kernel, refuse it (the refusal asserted)"
    ),
    "lib": "libibverbs' own code (the host suite)",
    "rxe-refuses": "rxe refuses it; the device suite asserts the refusal",
    "double": "never ran on hardware: rxe refuses it (asserted), the recording double checks its arguments",
    "none": "not reached",
}

# The section of verbs without the ibv_ prefix, left out of the count.
UNPREFIXED = "Public without the ibv_ prefix"


@dataclass(frozen=True)
class Verb:
    section: str
    verb: str  # without the ibv_ prefix
    names: tuple[str, ...]  # Python names under ibverbs ("Context.alloc_pd")
    inside: tuple[bool, ...]  # name calls it inside (no docstring mention needed)
    where: str

    @property
    def counted(self) -> bool:
        return not self.section.startswith(UNPREFIXED)

    @property
    def symbol(self) -> str:
        return self.verb if not self.counted else "ibv_" + self.verb


def read_table(path: Path = TABLE) -> list[Verb]:
    verbs: list[Verb] = []
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
            raise ValueError(f"{path.name}:{lineno}: want 'verb python where', got {raw!r}")
        verb, python, where = parts
        names = () if python == "-" else tuple(python.split(","))
        verbs.append(
            Verb(
                section,
                verb,
                tuple(n.rstrip("*") for n in names),
                tuple(n.endswith("*") for n in names),
                where,
            )
        )
    return verbs


def counts(verbs: list[Verb]) -> dict[str, int]:
    out = dict.fromkeys(WHERE, 0)
    for v in verbs:
        if v.counted:
            out[v.where] += 1
    return out


def _rst(verbs: list[Verb]) -> list[str]:
    c = counts(verbs)
    total = sum(c.values())
    lines = [
        f"Of the {total} public verbs of libibverbs, the C core calls "
        f"{total - c['none']}: {c['rxe'] + c['rxe-sid'] + c['rxe-7.2']} run on "
        f"Soft-RoCE ({c['rxe-sid']} of them only with rdma-core 65, in the sid "
        f"root of the distribution matrix, and {c['rxe-7.2']} only on kernel 7.2 "
        f"under rdma-core 65, in make test-kernels), {c['lib']} are "
        f"libibverbs' own code run by the host suite, {c['rxe-refuses']} are "
        f"refused by rxe (the refusal asserted), {c['double']} never ran on "
        f"hardware and are checked only against the recording double; "
        f"{c['none']} are not reached yet.",
        "",
    ]
    section = None
    for v in verbs:
        if v.section != section:
            section = v.section
            title = section.replace("_", "\\_")
            lines += [
                "",
                title,
                "-" * len(title),
                "",
                ".. list-table::",
                "   :header-rows: 1",
                "",
            ]
            lines += ["   * - Verb", "     - Python", "     - Where"]
        py = ", ".join(f"``{n}``" + (" (inside)" if i else "") for n, i in zip(v.names, v.inside))
        lines += [f"   * - ``{v.symbol}``", f"     - {py or '--'}", f"     - {WHERE[v.where]}"]
    return lines


def setup(app):
    # Sphinx only here: the host test reads the table without it.
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective
    from sphinx.util.nodes import nested_parse_with_titles

    class VerbsCoverage(SphinxDirective):
        has_content = False

        def run(self):
            self.env.note_dependency(str(TABLE))
            node = nodes.section()
            node.document = self.state.document
            nested_parse_with_titles(self.state, StringList(_rst(read_table())), node)
            return node.children

    app.add_directive("verbs-coverage", VerbsCoverage)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
