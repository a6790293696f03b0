"""The guides (docs/guides/*.md) and README.md: every code block is marked
(tests/support/guides.py says how), the host blocks run and print what the
guide shows, links and anchors between the documents exist, and every
``{py:...}`` reference names something the package has.  The device and
two-node blocks run in tests/device/test_guides_device.py and
tests/twonode/test_guides_twonode.py."""

from __future__ import annotations

import importlib
import re

import pytest

from support import guides
from support.guides import ROOT, MarkerError

pytestmark = pytest.mark.skipif(
    not guides.GUIDES.is_dir() or not (ROOT / "setup.py").exists(),
    reason="no docs/guides in this tree (a copy of tests/ outside the source tree, "
    "as tools/test-wheels makes)",
)

# The guides the README promises (a new guide joins this list and the README).
EXPECTED = {
    "asyncio.md",
    "command-line.md",
    "compatibility.md",
    "connection-manager.md",
    "efa.md",
    "extended-verbs.md",
    "install-and-portability.md",
    "kv-transfer.md",
    "many-ranks.md",
    "mlx5-devx.md",
    "mlx5.md",
    "multicast.md",
    "performance.md",
    "quickstart.md",
    "safety.md",
    "testing.md",
}


def _docs():
    return guides.documents() if guides.GUIDES.is_dir() else []


def _host_blocks():
    out = []
    for path in _docs():
        try:
            out += [b for b in guides.blocks(path) if b.kind == "host"]
        except MarkerError:
            pass  # test_every_block_is_marked says what
    return out


def test_every_guide_is_collected():
    names = {p.name for p in guides.guide_files()}
    assert names == EXPECTED, f"guides: {sorted(names)}; EXPECTED: {sorted(EXPECTED)}"
    readme = guides.README.read_text()
    missing = [n for n in sorted(names) if f"(docs/guides/{n}" not in readme]
    assert not missing, f"README.md links to no docs/guides/{missing}"


@pytest.mark.parametrize("path", _docs(), ids=lambda p: p.name)
def test_every_block_is_marked(path):
    found = guides.blocks(path)  # MarkerError for a block without a valid marker
    assert found, f"{path.name}: no code block"
    for b in found:
        if b.kind == "illustrative":
            assert len(b.reason) > 5, f"{b.where}: say why it is only illustrative"


def test_most_blocks_run():
    """Illustration is the exception: a guide's blocks mostly run."""
    every = guides.all_blocks()
    runs = [b for b in every if b.kind in guides.RUN_KINDS]
    shown = [b for b in every if b.kind == "illustrative"]
    assert len(runs) > len(shown), (len(runs), len(shown))
    for kind in guides.RUN_KINDS:
        assert guides.all_blocks(kind), f"no {kind} block"


def test_markers_are_refused_when_wrong(tmp_path):
    def parse(text):
        return guides.parse_marker(text, "x.md:1")

    assert parse("host") == ("host", {}, "")
    assert parse("twonode pair=p role=client")[1] == {"pair": "p", "role": "client"}
    assert parse("no, illustrative: boots a guest") == ("illustrative", {}, "boots a guest")
    for bad in (
        None,
        "hots",
        "no",
        "no, illustrative:",
        "device colour=red",
        "device pair=x",
        "twonode",
        "host ranks=2",
        "device pair=p role=peer",
    ):
        with pytest.raises(MarkerError):
            parse(bad)
    doc = tmp_path / "x.md"
    doc.write_text("# X\n\n```python\nprint(1)\n```\n")
    with pytest.raises(MarkerError, match="without a marker"):
        guides.blocks(doc)
    doc.write_text("# X\n\n<!-- run: no, shows output -->\n```text\n1\n```\n")
    with pytest.raises(MarkerError, match="follows no runnable block"):
        guides.blocks(doc)


def test_pairs_have_both_halves():
    for kind in guides.RUN_KINDS:
        for name, server, client in guides.pairs(kind):
            assert server.options["role"] == "server" and client.options["role"] == "client"


def test_readme_quickstart_is_the_guides():
    """README.md shows the quickstart guide's program, unchanged (it runs
    once, as the guide's)."""
    (readme,) = [b for b in guides.blocks(guides.README) if b.kind == "device"]
    first = next(b for b in guides.blocks(guides.GUIDES / "quickstart.md") if b.kind == "device")
    assert readme.code == first.code and readme.expected == first.expected


def test_blocks_run_elsewhere_exist():
    for key, test in guides.ELSEWHERE.items():
        found = guides.find(key)
        assert found and all(b.kind == "device" for b in found), key
        file, _, func = test.partition("::")
        text = (ROOT / file).read_text()
        assert f"def {func}(" in text and "support.guides" in text, f"{test} runs no {key}"


@pytest.mark.parametrize("block", _host_blocks(), ids=lambda b: b.id)
def test_host_block(block):
    if "pair" in block.options:
        pytest.skip("a host pair runs with its server block")  # none today
    rc, out = guides.run(block, block.program())
    guides.check_output(block, rc, out)


def test_output_matching():
    b = guides.Block(ROOT / "README.md", 1, "sh", "true\n", "host", kind="host")
    b.expected = "first\n...\nthird ... end\n"
    guides.check_output(b, 0, "first\nsecond\nthird and the end\n")
    with pytest.raises(AssertionError, match="third"):
        guides.check_output(b, 0, "third and the end\nfirst\n")
    with pytest.raises(AssertionError, match="exited with 3"):
        guides.check_output(b, 3, "")


# --------------------------------------------------------------------------
# Links, anchors and references
# --------------------------------------------------------------------------


@pytest.mark.parametrize("path", _docs(), ids=lambda p: p.name)
def test_links_and_anchors_exist(path):
    bad = []
    for target in guides.links(path):
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if path.parent == guides.GUIDES and (file.startswith("..") or "/" in file):
            bad.append(f"{target}: a guide links to other guides only (Sphinx builds docs/)")
        elif not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and anchor not in guides.anchors(dest):
            bad.append(f"{target}: no heading with that anchor in {dest.name}")
    assert not bad, f"{path.name}: " + "; ".join(bad)


def test_one_title_per_guide():
    for path in guides.guide_files():
        text = re.sub(r"(?ms)^(`{3,}).*?^\1\s*$", "", path.read_text())
        titles = re.findall(r"^# .+$", text, re.M)
        assert len(titles) == 1 and text.startswith(titles[0]), f"{path.name}: {titles}"


def test_anchors_are_unique():
    for path in guides.guide_files():
        text = re.sub(r"(?ms)^(`{3,}).*?^\1\s*$", "", path.read_text())
        slugs = [guides.slug(h) for h in re.findall(r"^#{1,6}\s+(.*)$", text, re.M)]
        dup = {s for s in slugs if slugs.count(s) > 1}
        assert not dup, f"{path.name}: headings with one anchor: {dup}"


def _resolve(target):
    parts = target.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(target)


def test_py_references_exist():
    bad = []
    for path in guides.guide_files():
        text = re.sub(r"(?ms)^(`{3,}).*?^\1\s*$", "", path.read_text())
        for role, target in re.findall(r"\{py:(\w+)\}`([^`]+)`", text):
            target = re.sub(r"^.*<(.+)>$", r"\1", target).lstrip("~")
            if not target.startswith("ibverbs"):
                bad.append(f"{path.name}: {target} (not a name of ibverbs)")
                continue
            try:
                _resolve(target)
            except (ImportError, AttributeError):
                bad.append(f"{path.name}: {{py:{role}}}`{target}`")
    assert not bad, "references to names the package lacks: " + ", ".join(bad)
