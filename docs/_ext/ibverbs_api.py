"""The API reference of ibverbs, enumerated from the modules at build time.

Every public name (the ``__all__`` of the modules in ``MODULES``) gets a
page of its own, docs/reference/api/FULLNAME.rst, written at
``builder-inited`` (``generate_pages``, as autosummary does; git ignores
the folder), whose ``.. ibverbs-object:: FULLNAME`` documents it.  A group
page's ``.. ibverbs-api:: GROUP`` lists the names ``placement`` puts in
GROUP, each with its first sentence, and links their pages; the enums are
documented whole on their page (``INLINE_GROUPS``).  So a new public name
appears in the reference without an edit here: a name that no rule names
goes to the ``module`` group.  At the end of reading, every public name
must have been documented exactly once (a warning otherwise, an error
under ``-W``), and Sphinx itself warns of a page that no toctree links.

Pure-Python names go through autodoc (their signatures are their own).  The
C types and functions of ``ibverbs._ibverbs`` have no
``__text_signature__``: their signatures and attribute types come from the
stub ``_ibverbs.pyi`` (``ibverbs_stubs``), the one place a signature is
written, their text from their docstrings (which carry none; a generated
one, a NamedTuple's, is dropped), through napoleon (Google style).  A
class opens with the list of its methods and attributes.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.ext.napoleon import GoogleDocstring
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, switch_source_input
from sphinx.util.nodes import nested_parse_with_titles

from ibverbs_stubs import StubIndex, strip_signature

logger = logging.getLogger(__name__)

# The public modules, in the order their names are claimed: a name that a
# later module re-exports (ibverbs re-exports the enums and the flow specs)
# is documented once, in the first module whose own object it is.
MODULES = [
    "ibverbs.enums",
    "ibverbs.flow",
    "ibverbs.aio",
    "ibverbs.bootstrap",
    "ibverbs.cuda",
    "ibverbs.efa",
    "ibverbs",
    # provider modules: C names re-exported under other names
    "ibverbs.mlx5",
]

# Groups of the ibverbs package's names: (group, rules).  A rule is a name
# or a regular expression matched against the whole name; the first group
# with a matching rule wins.  The other modules are a group each, named by
# the module.
GROUP_RULES: list[tuple[str, list[str]]] = [
    ("errors", ["VerbsError", "CompletionError", r".*Error"]),
    (
        "devices",
        [
            "Device",
            "get_device_list",
            "Context",
            "DeviceAttr",
            "DeviceAttrEx",
            "PortAttr",
            "Gid",
            "GidEntry",
            r".*Caps",
            "AsyncEvent",
            "ValuesEx",
        ],
    ),
    (
        "memory",
        [
            "PD",
            "MR",
            "MW",
            "MWBind",
            "MWBindInfo",
            "DM",
            "Buf",
            "DMAH",
            "inc_rkey",
            "reg_tensor",
            "tensor_addr_len",
            "TD",
            "ParentDomain",
        ],
    ),
    (
        "cq",
        [
            "CQ",
            "CQEx",
            "CQInitAttrEx",
            "CompChannel",
            "WC",
            "WCEx",
            r"CQ.*",
            r"WC.*",
            "CompCntr",
            "CompCntrCaps",
        ],
    ),
    (
        "qp",
        [
            "QP",
            "QPEx",
            "QPInitAttr",
            "QPInitAttrEx",
            "QPCap",
            "QPInfo",
            "connect_rc",
            "local_qp_info",
            r"QP.*",
            "SRQ",
            "AH",
            "AHAttr",
            # XRC, work queues and RSS, ECE
            "XRCD",
            "WQ",
            "RWQIndTable",
            "RXHashConf",
            "ECE",
        ],
    ),
    ("wr", ["SGE", "SendWR", "RecvWR", "SendWRChain", "RecvWRChain", r".*WR(Chain)?"]),
    ("cm", ["CMID", "CMListener", "CMEvent", r"CM.*", "has_rdmacm"]),
    ("flow", ["Flow", r"Flow.*", "Counters"]),
]
DEFAULT_GROUP = "module"

C_MODULE = "ibverbs._ibverbs"


def placement(module: str, name: str) -> tuple[str, int]:
    """The group (reference page) of ``module.name`` and its rank there:
    the index of the first rule that names it (the page's order)."""
    if module != "ibverbs":
        return module.rsplit(".", 1)[1], 0
    for group, rules in GROUP_RULES:
        for i, rule in enumerate(rules):
            if re.fullmatch(rule, name):
                return group, i
    return DEFAULT_GROUP, 0


def public_names() -> dict[str, tuple[str, int, object]]:
    """Every public name, once, in ``__all__`` order: full name -> (group,
    rank in the group, object)."""
    seen: dict[int, str] = {}
    out: dict[str, tuple[str, int, object]] = {}
    for modname in MODULES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if (inspect.isclass(obj) or inspect.isroutine(obj)) and id(obj) in seen:
                continue  # re-exported: documented where it is defined
            if inspect.isclass(obj) or inspect.isroutine(obj):
                seen[id(obj)] = modname
            out[f"{modname}.{name}"] = (*placement(modname, name), obj)
    return out


# ------------------------------------------------------------ docstrings ---


def rst_lines(app, doc: str, what: str, name: str, obj: object) -> list[str]:
    """A Google-style docstring as reStructuredText lines (napoleon)."""
    if not doc.strip():
        return []
    return str(GoogleDocstring(doc, app.config, app, what, name, obj)).splitlines()


# ------------------------------------------------------------ the C types ---


def _sig_lines(head: str, member) -> list[str]:
    """The directive line ``head`` (``.. py:method:: name``) with the
    signature, and one more line per further overload of the stub."""
    prefix, name = head.split(":: ")
    lines = []
    for i, (args, ret) in enumerate(member.overloads or [(member.args, member.returns)]):
        text = f"{name}{args} -> {ret}" if ret and ret != "Self" else f"{name}{args}"
        lines.append(f"{prefix}:: {text}" if i == 0 else " " * (len(prefix) + 3) + text)
    return lines


def c_name(obj) -> str:
    """obj's name in the C module: a provider module re-exports its C
    names under others (``ibverbs.mlx5.QP`` is ``Mlx5QP``,
    ``ibverbs.mlx5.is_supported`` ``_mlx5_is_supported``)."""
    mod = importlib.import_module(C_MODULE)
    name = getattr(obj, "__name__", "")
    if getattr(mod, name, None) is obj:
        return name
    return next((k for k, v in vars(mod).items() if v is obj), name)


def documented_names(module: str) -> dict[str, str]:
    """For the pages of a module other than ``ibverbs``: the stub's class
    names (and private aliases of them) by the full name each is
    documented under, so that the signatures' types resolve from that
    module (``Context`` -> ``ibverbs.Context``, ``Mlx5CQ`` ->
    ``ibverbs.mlx5.CQ``)."""
    if module == "ibverbs":
        return {}
    mod = importlib.import_module(C_MODULE)
    where = {id(obj): full for full, (_, _, obj) in public_names().items()}
    out = {}
    for k, v in vars(mod).items():
        if inspect.isclass(v) and id(v) in where:
            out[k] = where[id(v)]
    out["_Device"] = where[id(importlib.import_module("ibverbs").Device)]
    for full, (_, _, obj) in public_names().items():  # Python records of the module
        if full.startswith(module + ".") and inspect.isclass(obj):
            out.setdefault(obj.__name__, full)
    return out


class CWriter:
    """rST for one class or function of the C extension, from its stub."""

    def __init__(self, app, stubs: StubIndex, source: str, module: str = "ibverbs"):
        self.app, self.stubs, self.source = app, stubs, source
        self.module = module
        self.mapping = documented_names(module)

    def warn(self, msg: str) -> None:
        logger.warning(msg, location=self.source)

    def function(self, fullname: str, obj) -> list[str]:
        name = fullname.rsplit(".", 1)[1]
        cname = c_name(obj)
        stub = self.stubs.function(cname, self.mapping)
        if stub is None:
            self.warn(f"{fullname}: no signature in _ibverbs.pyi")
            return []
        lines = _sig_lines(f".. py:function:: {name}", stub)
        lines += [f"   :canonical: {C_MODULE}.{cname}", ""]
        doc = rst_lines(self.app, strip_signature(obj.__doc__, cname), "function", fullname, obj)
        return lines + ["   " + x for x in doc] + [""]

    def data(self, fullname: str, obj) -> list[str]:
        name = fullname.rsplit(".", 1)[1]
        if name not in self.stubs.data:
            self.warn(f"{fullname}: not in _ibverbs.pyi")
            return []
        typ, doc = self.stubs.data[name]
        lines = [f".. py:data:: {name}", f"   :type: {typ}", ""]
        doc_lines = rst_lines(self.app, inspect.cleandoc(doc or ""), "data", fullname, obj)
        return lines + ["   " + x for x in doc_lines] + [""]

    def cls(self, fullname: str, obj: type) -> list[str]:
        name = obj.__name__
        cname = c_name(obj)
        if cname not in self.stubs.classes:
            self.warn(f"{fullname}: class not in _ibverbs.pyi")
            return []
        ctor = self.stubs.constructor(cname)
        if ctor is not None:
            lines = _sig_lines(f".. py:class:: {name}", ctor)
        else:  # made by a factory method, never by calling the class
            lines = [f".. py:class:: {name}"]
        lines += [f"   :canonical: {C_MODULE}.{cname}"]
        if not obj.__flags__ & (1 << 10):  # Py_TPFLAGS_BASETYPE: not subclassable
            lines.append("   :final:")
        lines.append("")
        base = obj.__base__
        if base is not None and base is not object:
            ref = self.mapping.get(c_name(base), base.__name__)
            lines += [f"   Bases: :py:class:`~{ref}`", ""]
        doc = rst_lines(self.app, strip_signature(obj.__doc__, name), "class", fullname, obj)
        lines += ["   " + x for x in doc] + [""]
        lines += ["   " + x for x in member_summary(obj)]
        attrs, methods = [], []
        for member, value in vars(obj).items():
            if member.startswith("_"):
                continue
            kind = type(value).__name__
            if kind in ("getset_descriptor", "member_descriptor"):
                attrs.append((member, value))
            else:
                methods.append((member, value))
        # methods (in the order of the type's method table), then attributes
        for member, value in methods:
            lines += self._method(cname, member, value, fullname)
        for member, value in attrs:
            lines += self._attribute(cname, member, value, fullname)
        return lines

    def _attribute(self, cls: str, member: str, value, fullname: str) -> list[str]:
        stub = self.stubs.member(cls, member, self.mapping)
        if stub is None or stub.kind not in ("property", "attribute"):
            self.warn(f"{fullname}.{member}: no attribute or property in _ibverbs.pyi")
            return []
        directive = "property" if stub.kind == "property" else "attribute"
        lines = [f"   .. py:{directive}:: {member}"]
        if stub.returns:
            lines.append(f"      :type: {stub.returns}")
        lines.append("")
        # napoleon's "attribute" reading takes "x: y" for a type: not here
        doc = rst_lines(
            self.app, inspect.cleandoc(value.__doc__ or ""), "method", f"{fullname}.{member}", value
        )
        return lines + ["      " + x for x in doc] + [""]

    def _method(self, cls: str, member: str, value, fullname: str) -> list[str]:
        stub = self.stubs.member(cls, member, self.mapping)
        if stub is None or stub.kind not in ("method", "classmethod", "staticmethod"):
            self.warn(f"{fullname}.{member}: no method in _ibverbs.pyi")
            return []
        lines = _sig_lines(f"   .. py:method:: {member}", stub)
        if stub.kind != "method":
            lines.append(f"      :{stub.kind}:")
        lines.append("")
        doc = rst_lines(
            self.app,
            strip_signature(value.__doc__, member),
            "method",
            f"{fullname}.{member}",
            value,
        )
        return lines + ["      " + x for x in doc] + [""]


# ------------------------------------------------------------ the directive ---


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph (a period
    inside a ``literal`` does not end it)."""
    para = " ".join(doc.strip().split("\n\n")[0].split())
    literal, i = False, 0
    while i < len(para):
        if para.startswith("``", i):
            literal = not literal
            i += 2
            continue
        if not literal and para[i] == "." and (i + 1 == len(para) or para[i + 1] == " "):
            return para[: i + 1]
        i += 1
    return para


def summary(ordered, stubs: StubIndex) -> list[str]:
    """A list of the page's names, each with its first sentence."""
    out = []
    for fullname, _, obj in ordered:
        name = fullname.rsplit(".", 1)[1]
        if inspect.isclass(obj):
            role, doc = "class", obj.__doc__ if "__doc__" in vars(obj) else ""
        elif callable(obj):
            role, doc = "func", obj.__doc__
        else:  # a constant's text: its stub's docstring, if the C module's
            from_c = fullname == f"ibverbs.{name}" and name in stubs.data
            role, doc = "data", stubs.data[name][1] if from_c else ""
        text = first_sentence(strip_signature(doc or "", name))
        out.append(f"- :py:{role}:`~{fullname}`" + (f" -- {text}" if text else ""))
    return out + [""] if out else []


def member_summary(cls: type) -> list[str]:
    """The public methods and attributes a class defines, each linked to
    its entry below and followed by its first sentence: the class page's
    table of contents."""
    methods, attrs = [], []
    slots = vars(cls).get("__slots__")
    slot_docs = slots if isinstance(slots, dict) else {}  # __slots__ = {name: doc}
    for member, value in vars(cls).items():
        if member.startswith("_"):
            continue
        func = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
        if type(value).__name__ in ("getset_descriptor", "member_descriptor") or not callable(func):
            doc = getattr(value, "__doc__", None) if not isinstance(value, (int, str)) else ""
            doc = doc if isinstance(doc, str) else slot_docs.get(member) or ""
            attrs.append((member, doc))
        else:
            methods.append((member, func.__doc__ or ""))
    out = []
    for title, items in (("Methods", methods), ("Attributes", attrs)):
        if items:
            out += [f".. rubric:: {title}", ""]
            for member, doc in items:
                text = first_sentence(strip_signature(inspect.cleandoc(doc), member))
                out.append(f"- :py:obj:`{member}`" + (f" -- {text}" if text else ""))
            out.append("")
    return out


def _class_summary(app, what, name, obj, options, lines):
    """The member summary of a Python class, after its docstring (autodoc)."""
    if what in ("class", "exception") and name.startswith("ibverbs"):
        extra = member_summary(obj)
        if extra:
            lines += [""] + extra


def _is_c(obj) -> bool:
    if getattr(obj, "__module__", None) == C_MODULE:
        return True
    # a C type named for its provider module (tp_name "ibverbs.mlx5.QP")
    mod = importlib.import_module(C_MODULE)
    return inspect.isclass(obj) and any(v is obj for v in vars(mod).values())


def object_lines(app, stubs: StubIndex, writer: CWriter, fullname: str, obj) -> list[str]:
    """rST documenting one public name."""
    module, name = fullname.rsplit(".", 1)
    lines = [f".. py:currentmodule:: {module}", ""]
    if _is_c(obj):
        if inspect.isclass(obj):
            lines += writer.cls(fullname, obj)
        elif callable(obj):
            lines += writer.function(fullname, obj)
    elif module == "ibverbs" and not (inspect.isclass(obj) or callable(obj)):
        # data of the package: from the C module (its stub) or Python
        if name in stubs.data:
            lines += writer.data(fullname, obj)
        else:
            lines += [f".. autodata:: {fullname}", "   :no-value:", ""]
    elif inspect.isclass(obj):
        lines += [f".. autoclass:: {fullname}", "   :members:", "   :undoc-members:"]
        if obj.__base__ is not object and not obj.__base__.__name__.startswith("_"):
            lines.append("   :show-inheritance:")
        lines.append("")
    elif callable(obj):
        lines += [f".. autofunction:: {fullname}", ""]
    else:
        lines += [f".. autodata:: {fullname}", ""]
    return lines


def _ordered(group: str) -> list[tuple[str, int, object]]:
    """The names of a group: classes first, then functions, then data; each
    in the order of the group's rules, then of ``__all__``."""
    names = [(full, r, obj) for full, (g, r, obj) in public_names().items() if g == group]

    def rank(item):
        obj = item[2]
        return (0 if inspect.isclass(obj) else 1 if callable(obj) else 2), item[1]

    return sorted(names, key=rank)


class _Generated(SphinxDirective):
    def parse_generated(self, lines: list[str], sources: list[tuple[str, int]], label: str):
        if os.environ.get("IBVERBS_DOCS_DUMP"):  # the generated rST, to debug
            dump = Path(os.environ["IBVERBS_DOCS_DUMP"]) / f"{label}.rst"
            dump.parent.mkdir(parents=True, exist_ok=True)
            dump.write_text("\n".join(lines) + "\n")
        node = nodes.container()
        content = StringList(lines, items=sources)
        with switch_source_input(self.state, content):  # warnings name the docstring
            nested_parse_with_titles(self.state, content, node)
        return node.children


class ApiDirective(_Generated):
    """``.. ibverbs-api:: GROUP``: the names of GROUP, each with its first
    sentence and linked to its own page (``api/FULLNAME``, written by
    ``generate_pages``)."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        group = self.arguments[0]
        ordered = _ordered(group)
        if not ordered:
            logger.warning(
                f"ibverbs-api: no public name in group {group!r}", location=self.get_location()
            )
        app = self.env.app
        stubs = app.ibverbs_stubs
        lines = summary(ordered, stubs)
        sources = [(f"<ibverbs-api {group}>", i) for i in range(len(lines))]
        if group not in INLINE_GROUPS:
            lines += [".. toctree::", "   :hidden:", ""]
            lines += [f"   {API_DIR}/{fullname}" for fullname, _, _ in ordered] + [""]
            sources = [(f"<ibverbs-api {group}>", i) for i in range(len(lines))]
            return self.parse_generated(lines, sources, f"group-{group}")
        writer = CWriter(app, stubs, self.get_location(), _module_of(ordered))
        done = self.env.domaindata.setdefault("ibverbs_api", {})
        for fullname, _, obj in ordered:
            lines += object_lines(app, stubs, writer, fullname, obj)
            sources += [(f"docstring of {fullname}", i) for i in range(len(lines) - len(sources))]
            done.setdefault(fullname, set()).add(self.env.docname)
        self.env.note_dependency(str(stubs.path))
        return self.parse_generated(lines, sources, f"group-{group}")


def _module_of(ordered) -> str:
    return ordered[0][0].rsplit(".", 1)[0] if ordered else "ibverbs"


class ObjectDirective(_Generated):
    """``.. ibverbs-object:: FULLNAME``: one public name, documented."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        fullname = self.arguments[0]
        names = public_names()
        if fullname not in names:
            logger.warning(f"{fullname} is not a public name", location=self.get_location())
            return []
        app = self.env.app
        stubs = app.ibverbs_stubs
        writer = CWriter(app, stubs, self.get_location(), fullname.rsplit(".", 1)[0])
        lines = object_lines(app, stubs, writer, fullname, names[fullname][2])
        # warnings say "docstring of NAME:LINE", LINE counted from the
        # block's first line
        sources = [(f"docstring of {fullname}", i) for i in range(len(lines))]
        self.env.note_dependency(str(stubs.path))
        done = self.env.domaindata.setdefault("ibverbs_api", {})
        done.setdefault(fullname, set()).add(self.env.docname)
        return self.parse_generated(lines, sources, fullname)


# ------------------------------------------------------------ the pages ---

API_DIR = "api"  # under docs/reference, generated, ignored by git
# Groups documented whole on their own page, not a page per name: the enums,
# 34 classes that are each a list of members (a page each would add a third
# to the build's time for pages of three lines).
INLINE_GROUPS = {"enums"}


def page_title(fullname: str) -> str:
    """``QP`` for a name ibverbs exports, ``aio.poll`` for one of a
    submodule that it does not."""
    module, name = fullname.rsplit(".", 1)
    if module == "ibverbs" or module in ("ibverbs.enums", "ibverbs.flow"):
        return name
    return f"{module.removeprefix('ibverbs.')}.{name}"


def generate_pages(app) -> None:
    """One page per public name in docs/reference/api (as autosummary
    does): a file is rewritten only when its text changes, and a page whose
    name is gone is removed."""
    folder = Path(app.srcdir) / "reference" / API_DIR
    folder.mkdir(exist_ok=True)
    wanted = {}
    for fullname, (group, _, _) in public_names().items():
        if group in INLINE_GROUPS:
            continue
        title = page_title(fullname)
        wanted[f"{fullname}.rst"] = (
            f".. generated by docs/_ext/ibverbs_api.py: do not edit\n\n"
            f"{title}\n{'=' * len(title)}\n\n.. ibverbs-object:: {fullname}\n"
        )
    for path in folder.glob("*.rst"):
        if path.name not in wanted:
            path.unlink()
    for name, text in wanted.items():
        path = folder / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def _purge(app, env, docname):
    for docs in env.domaindata.get("ibverbs_api", {}).values():
        docs.discard(docname)


def _check_all_documented(app, env):
    """Every public name is documented once, on one page."""
    done = env.domaindata.get("ibverbs_api", {})
    for fullname, (group, _, _) in public_names().items():
        pages = sorted(done.get(fullname, ()))
        if not pages:
            logger.warning(
                f"{fullname} (group {group!r}) is on no reference page: add "
                f"'.. ibverbs-api:: {group}' to a page under docs/reference"
            )
        elif len(pages) > 1:
            logger.warning(f"{fullname} is documented on {len(pages)} pages: {pages}")


def _provider_classes_aliased(app, env):
    """A provider module's classes share their last name with the core's
    (``ibverbs.mlx5.QP``, ``ibverbs.QP``): an annotation ``QP`` that Sphinx
    resolves by that last name (from a module that does not define it)
    would find both.  Marked as aliases, they stay out of that search, as
    the C types' ``ibverbs._ibverbs`` names do, and still resolve by their
    full name."""
    domain = env.get_domain("py")
    core = {
        name.split(".")[1]
        for name, entry in domain.objects.items()
        if entry.objtype == "class" and name.count(".") == 1 and name.startswith("ibverbs.")
    }
    for name, entry in list(domain.objects.items()):
        parts = name.split(".")
        if (
            entry.objtype == "class"
            and len(parts) == 3
            and parts[0] == "ibverbs"
            and parts[1] != "_ibverbs"
            and parts[2] in core
        ):
            domain.objects[name] = entry._replace(aliased=True)


def _drop_type_docstring(app, what, name, obj, options, lines):
    """Drop a docstring that is only the type's own (``str``'s for a str
    constant): a constant's text is its ``#:`` comment or nothing."""
    if what in ("data", "attribute") and lines:
        own_doc = type(obj).__doc__
        own = inspect.cleandoc(own_doc).splitlines() if isinstance(own_doc, str) else []
        if own and lines[: len(own)] == own:
            del lines[:]


def _napoleon_for_attributes_too(app) -> None:
    """Read the docstring of an attribute, property or constant as prose.

    napoleon reads an attribute's first line ``X: text`` as "type X, then
    text" (Google style for attributes), which turns a sentence such as
    "How the memory was registered: ..." into a type to link.  Here the
    types come from the annotations and stubs, and a getter's docstring is
    one or two sentences: napoleon's handler is swapped for one that reads
    them as it reads a function's (sections only).
    """
    from sphinx.ext import napoleon

    found = [
        listener
        for listener in app.events.listeners["autodoc-process-docstring"]
        if listener.handler is napoleon._process_docstring
    ]
    if len(found) != 1:
        raise RuntimeError("ibverbs_api: napoleon's autodoc-process-docstring handler not found")
    app.disconnect(found[0].id)

    def process(app, what, name, obj, options, lines):
        if what in ("attribute", "property", "data"):
            what = "method"
        napoleon._process_docstring(app, what, name, obj, options, lines)

    app.connect("autodoc-process-docstring", process, priority=found[0].priority)


def _public_names_of_renamed_types(stubs: StubIndex) -> None:
    """A C type whose tp_name puts it in a public module (``efa.QP`` is
    ``_ibverbs.EfaQP``): its stub name reads, in signatures, as the public
    one."""
    c_module = importlib.import_module(C_MODULE)
    for name, obj in vars(c_module).items():
        if inspect.isclass(obj) and obj.__module__ != C_MODULE and name in stubs.classes:
            stubs.aliases[name] = f"{obj.__module__}.{obj.__name__}"


def _prefer_the_package(domain_cls) -> None:
    """A bare class name in an annotation (``cq: CQ``) means the package's
    (``ibverbs.CQ``) where a provider module has a class of the same name
    (``ibverbs.efa.CQ``): without this Sphinx finds both and warns."""
    find_obj = domain_cls.find_obj

    def find(self, env, modname, classname, name, type, searchmode=0):
        matches = find_obj(self, env, modname, classname, name, type, searchmode)
        if len(matches) > 1:
            package = [m for m in matches if m[0] == f"ibverbs.{name}"]
            if package:
                return package
        return matches

    domain_cls.find_obj = find


def setup(app):
    app.setup_extension("sphinx.ext.napoleon")
    _napoleon_for_attributes_too(app)
    from sphinx.domains.python import PythonDomain

    _prefer_the_package(PythonDomain)
    root = Path(app.confdir).parent
    app.ibverbs_stubs = StubIndex(root / "src" / "ibverbs" / "_ibverbs.pyi")
    _public_names_of_renamed_types(app.ibverbs_stubs)
    app.add_directive("ibverbs-api", ApiDirective)
    app.add_directive("ibverbs-object", ObjectDirective)
    app.connect("builder-inited", generate_pages)
    app.connect("env-purge-doc", _purge)
    app.connect("env-check-consistency", _check_all_documented)
    app.connect("env-check-consistency", _provider_classes_aliased)
    app.connect("autodoc-process-docstring", _drop_type_docstring)
    app.connect("autodoc-process-docstring", _class_summary, priority=600)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
