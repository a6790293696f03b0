"""Sphinx configuration of the ibverbs site (make docs -> build/docs).

The reference is generated from the code: docs/_ext/ibverbs_api.py lists the
public names of the modules at build time, autodoc reads the Python ones,
the stub src/ibverbs/_ibverbs.pyi gives the C extension's signatures, and
napoleon reads the Google-style docstrings.  The guides (docs/guides/*.md)
are MyST Markdown.  Every warning is an error (make docs: -W --keep-going),
every cross-reference must resolve (nitpicky) and every #anchor of a guide
must exist (myst_heading_anchors; tools/docs-check checks the built HTML).
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import ibverbs  # noqa: E402  (the in-place build of make build)

project = "ibverbs"
author = "The ibverbs developers"
copyright = "The ibverbs developers"
release = ibverbs.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "ibverbs_api",
    "ibverbs_guides",
    "ibverbs_verbs",
    "ibverbs_providers",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
templates_path: list[str] = []

# ---- strictness ---------------------------------------------------------
nitpicky = True
# The only names that cannot resolve: classes of the standard library and
# typing_extensions that the enums' bases and the stubs name (the enums'
# "Bases: IntFlag", QPEx.wr_set_inline_data's Buffer, find_gid's ip).  Linking them needs
# the Python docs' inventory, which intersphinx would fetch over the
# network at every build; the build stays offline.
nitpick_ignore = [
    ("py:class", "enum.IntEnum"),
    ("py:class", "enum.IntFlag"),
    ("py:class", "typing_extensions.Buffer"),  # collections.abc.Buffer from 3.12
    ("py:class", "ipaddress.IPv4Address"),  # Context.find_gid's ip
    ("py:class", "ipaddress.IPv6Address"),
]

# ---- autodoc, napoleon ------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_inherit_docstrings = False  # a name's text is its own docstring
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False  # "Returns:" text is prose, not a type to link
# A page per public name: each class page opens with a list of its members
# (docs/_ext), so the sidebar's table of contents need not list them too;
# with them, Furo's navigation made the build three times slower (18 s of
# CPU instead of 6, the whole tree being copied into each of 130 pages).
toc_object_entries = False
add_module_names = False
python_use_unqualified_type_names = True

# ---- MyST (the guides) --------------------------------------------------
myst_heading_anchors = 4  # "#section-title" links of the guides resolve
myst_enable_extensions = ["colon_fence", "deflist"]

# ---- HTML ---------------------------------------------------------------
# Furo: a maintained, widely used Sphinx theme whose sidebar folds the
# topic pages over their names, with a readable API layout, a dark mode and
# a layout for phones.  It costs time: its navigation tree is rebuilt for
# each of the ~130 pages (15 s of CPU for the whole build against 9.5 s with
# the built-in alabaster, measured 2026-12-02 with the guides and the new
# docstrings merged); html_theme = "alabaster" is the faster fallback.
html_theme = "furo"
html_title = f"ibverbs {release}"
html_static_path = ["_static"]
html_css_files = ["ibverbs.css"]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
# The site is read from build/docs as files: a search result's text
# snippet is fetched from its page, which a file:// page may not do (CORS:
# the search throws in the console, tools/docs-check fails).  Without the
# snippets the search works the same from a file and from a server.
html_show_search_summary = False
