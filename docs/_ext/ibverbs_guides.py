"""``guides-toctree``: a ``toctree`` whose glob lists the guides in reading
order.

A glob sorts by file name, which would open the guides with "asyncio".  This
toctree puts the guides named in ``FIRST`` first (those that exist: a
renamed guide falls back into the alphabetical rest), so a new guide appears
without an edit here.
"""

from __future__ import annotations

from sphinx.directives.other import TocTree

FIRST = ["guides/quickstart", "guides/install-and-portability"]


def _key(docname: str) -> tuple[int, str]:
    return (FIRST.index(docname) if docname in FIRST else len(FIRST), docname)


class GuidesTocTree(TocTree):
    def parse_content(self, toctree) -> None:
        super().parse_content(toctree)
        toctree["entries"].sort(key=lambda entry: _key(entry[1]))
        toctree["includefiles"].sort(key=_key)


def setup(app):
    app.add_directive("guides-toctree", GuidesTocTree)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
