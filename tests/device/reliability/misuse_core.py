"""The misuse suite's machinery: a method's parameters (declared in C and
read from ``_ibverbs._specs``, or written here for the hand-parsed data
path), the bad values each implies, the cases one method yields, the
rules for every public member after close, and how an outcome is judged.
The tables and the hand-written cases are in misuse_cases.py."""

from __future__ import annotations

import copy
import errno

import ibverbs as ib

ALLOWED = (TypeError, ValueError, OverflowError, ib.VerbsError)
# The argument declarations of the C extension (core/args.h).
SPECS = ib._ibverbs._specs
OMIT = object()  # a parameter the valid call leaves out

WRONG_TYPES = [
    ("str", "1"),
    ("float", 1.5),
    ("bytes", b"\x01"),
    ("object", object()),
    ("list", [1]),
]
# The world attribute holding an object of each handle type.
OBJ_ATTR = {
    "Context": "ctx",
    "PD": "pd",
    "MR": "mr",
    "CQ": "cq",
    "CompChannel": "ch",
    "QP": "qp",
    "SRQ": "srq",
    "AH": "ah",
    "MW": "mw",
}
# What bad_values treats a declared kind as (an "obj" of its own: wrong
# types and other handles raise, the kind's own type is left out).
KIND_OBJ = {"buffer": "bytes", "list": "list", "text": "str", "number": "float"}


class P:
    """One parameter: its valid value (or a function of the world giving
    it), whether it is passed by keyword, its integer range or the handle
    type it takes, and whether None is legal."""

    def __init__(
        self,
        name,
        valid,
        *,
        kw=False,
        lo=None,
        hi=None,
        obj=None,
        nullable=False,
        foreign=None,
        extra_bad=(),
        free=False,
        optional=False,
    ):
        self.name, self.valid, self.kw = name, valid, kw
        self.optional = optional or kw  # may be left out
        self.free = free  # any object is fine (an owner, a flag)
        self.lo, self.hi, self.obj, self.nullable = lo, hi, obj, nullable
        self.foreign = foreign  # "raise" or "any": another ctx/PD's object
        self.extra_bad = extra_bad  # (label, value-or-fn) pairs that must raise

    def value(self, w):
        return self.valid(w) if callable(self.valid) else self.valid


U32 = dict(lo=0, hi=2**32 - 1)
U64 = dict(lo=0, hi=2**64 - 1)


def bad_values(p: P, w=None, closed_w=None, other_w=None, other_pd_w=None):
    """(label, value, expect) for parameter p; the worlds give the handles
    (none in the host group)."""
    out = []
    if p.free:
        return [(lbl, v, "any") for lbl, v in WRONG_TYPES] + [
            (lbl, v(w) if callable(v) else v, "raise") for lbl, v in p.extra_bad
        ]
    if not p.nullable:
        out.append(("None", None, "raise"))
    if p.obj is None:
        out += [(lbl, v, "raise") for lbl, v in WRONG_TYPES]
        if p.lo is not None:
            if p.lo - 1 >= -(2**63):
                out.append((f"{p.lo - 1}", p.lo - 1, "raise"))
            out.append(("-2**64", -(2**64), "raise"))
        if p.hi is not None:
            out.append((f"{p.hi}+1", p.hi + 1, "raise"))
            out.append(("2**64", 2**64, "raise"))
            out.append(("2**100", 2**100, "raise"))
    else:
        kinds = p.obj.split("|")
        # a kind's own type (a list where a list goes) is no wrong type
        own = {"list", "bytes", "str", "float"} & set(kinds) | {"list"}
        out += [(lbl, v, "raise") for lbl, v in WRONG_TYPES if lbl not in own]
        if "float" not in kinds:  # a number takes an int too
            out.append(("int", 1, "raise"))
        for kind in ("Context", "PD", "MR", "CQ", "CompChannel", "QP", "SRQ", "AH"):
            # A QP has every field a QPInitAttr has (duck typing).
            if w is not None and (
                kind not in kinds
                and not (kind == "QP" and any(k.startswith("QPInitAttr") for k in kinds))
            ):
                out.append((f"a {kind}", getattr(w, OBJ_ATTR[kind]), "raise"))
        for kind in kinds:
            if kind in OBJ_ATTR and w is not None:
                out.append((f"closed {kind}", getattr(closed_w, OBJ_ATTR[kind]), "closed"))
                if p.foreign:
                    other = getattr(other_w, OBJ_ATTR[kind])
                    out.append((f"{kind} of another Context", other, p.foreign))
                    if kind in ("MR", "SRQ", "AH"):
                        other = getattr(other_pd_w, OBJ_ATTR[kind])
                        out.append((f"{kind} of another PD", other, p.foreign))
    for lbl, v in p.extra_bad:
        out.append((lbl, v(w) if callable(v) else v, "raise"))
    return out


class M:
    """A method: its parameters, and what its valid call may do.  bare:
    whether calling it without arguments is a case (not where it would
    wait for ever: a timeout of None)."""

    def __init__(self, *params, valid="any", bare=True):
        self.params = params
        self.valid = valid  # expectation of the unperturbed call
        self.bare = bare

    def call(self, obj, name, w, override=None):
        args, kwargs = [], {}
        by_kw = False  # after a parameter left out, the rest by keyword
        for p in self.params:
            if override and override[0] is p:
                v = override[1]
            elif p.valid is OMIT:
                by_kw = True
                continue
            else:
                v = p.value(w)
            if p.kw or by_kw:
                kwargs[p.name] = v
            else:
                args.append(v)
        fn = getattr(obj, name) if name else obj
        return fn(*args, **kwargs)


class D(M):
    """A declared method: its parameters, their ranges and kinds come from
    its declaration (``_ibverbs._specs``).  ``values`` gives the valid value
    (or a function of the world) of each parameter the valid call passes;
    the others are left out of it, and their bad values tried all the
    same.  ``extra_bad``: {parameter: ((label, value), ...)} that must
    raise besides what the declaration implies."""

    def __init__(self, *, valid="any", bare=True, extra_bad=None, **values):
        super().__init__(valid=valid, bare=bare)
        self.values = values
        self.extra_bad = extra_bad or {}
        self.qual = None

    def bind(self, qual):
        """A copy with the parameters of qual's declaration (one D may
        serve a type and its subclass: QP and QPEx)."""
        declared = SPECS[qual]
        names = {p["name"] for p in declared}
        unknown = (set(self.values) | set(self.extra_bad)) - names
        assert not unknown, f"{qual}: no parameter {sorted(unknown)}"
        bound = copy.copy(self)
        bound.qual = qual
        bound.params = tuple(self._param(qual, p) for p in declared)
        return bound

    def _param(self, qual, p):
        valid = self.values.get(p["name"], OMIT)
        if valid is OMIT and not p["optional"]:
            raise KeyError(f"{qual}: no valid value for its required {p['name']}")
        kind = p["kind"]
        ints = kind in ("int", "flags", "enum")
        extra = tuple(self.extra_bad.get(p["name"], ()))
        if kind == "buffer" and p["lo"] > 1:
            extra += ((f"{p['lo'] - 1} bytes", bytes(p["lo"] - 1)),)
        return P(
            p["name"],
            valid,
            kw=p["kw_only"],
            optional=p["optional"],
            nullable=p["none_ok"],
            lo=p["lo"] if ints else None,
            hi=p["hi"] if ints else None,
            obj=KIND_OBJ.get(kind, p["cls"] if kind in ("handle", "record") else None),
            foreign="raise" if p["parent"] else None,
            free=kind == "object",
            extra_bad=extra,
        )


def declared_name(cls, name, prefix=""):
    """The qualified name under which a method of cls is declared (its own
    class's or a base's), or None; a provider's type declares its own
    methods under its C type's name (prefix "Efa": EfaQP.<name>)."""
    if prefix and f"{prefix}{cls.__name__}.{name}" in SPECS:
        return f"{prefix}{cls.__name__}.{name}"
    for c in cls.__mro__:
        if f"{c.__name__}.{name}" in SPECS:
            return f"{c.__name__}.{name}"
    return None


def bind_methods(cases, tname, obj, methods, prefix="", strict=False):
    """{name: spec}, each D bound to its declaration; strict: a method
    declared but written by hand (M) is a failing case."""
    bound = {}
    for n, spec in methods.items():
        qual = declared_name(type(obj), n, prefix)
        bound[n] = spec.bind(qual) if isinstance(spec, D) else spec
        if strict and qual is not None and not isinstance(spec, D):
            cases.add(
                f"{tname}.{n}: DECLARED ({qual}) BUT WRITTEN BY HAND: use D()", uncovered, "ok"
            )
    return bound


# What no declaration says of a type's members, by member name or
# "Type.name" (a rule of a type holds for its subclasses: QPEx's for
# efa.QP and mlx5.QP).
# Plain Python state, readable after close (XRC, RSS: SRQ.srq_type,
# SRQ.xrcd, SRQ.cq, QP.xrcd, QP.rwq_ind_tbl; memory and imports; a CMID's
# and a listener's addresses) ...
READABLE_AFTER_CLOSE = set(
    """closed name context pd owner access is_dmabuf channel events_unacked qp_type cap
    sq_sig_all send_cq recv_cq srq wc_flags polling send_ops_flags srq_type xrcd cq
    rwq_ind_tbl imported buf dmah CMID.connected CMID.host CMID.port CMID.private_data
    CMID.qp CMID.source CMListener.host CMListener.port""".split()
)
# ... except these: a CMID's Context is its own, closed with it.
CLOSED_WITH_IT = {"CMID.context"}
# Settable (QPEx.wr_id, QPEx.wr_flags; MW.rkey, the C struct field a
# program assigns).
WRITABLE = {"QPEx.wr_id", "QPEx.wr_flags", "MW.rkey"}
# Fine to call after close: close() is idempotent.
CALLABLE_AFTER_CLOSE = {"close"}
# Class methods, which need no open instance.
CALLABLE_ON_CLOSED = {"Context.import_device", "CMID.resolve"}
# Raise on an open handle too: a CQEx's current entry exists only inside
# a start_poll() session (ValueError outside one).
READ_RAISES = {"CQEx.wr_id", "CQEx.status"}


def member_cases(cases, tname, obj, cobj, methods, w):
    """Every public member of obj's type after close (cobj), and each
    property read and written; its names, for the harness's check that
    the table covers them all."""
    names = [n for n in dir(type(obj)) if not n.startswith("_")]
    for n in names:
        member = getattr(type(obj), n)
        qual = f"{tname}.{n}"
        # the member's names the rules may use
        keys = {n, qual} | {f"{c.__name__}.{n}" for c in type(obj).__mro__}
        if type(member).__name__ in ("getset_descriptor", "member_descriptor", "property"):
            readable = READABLE_AFTER_CLOSE & keys and not CLOSED_WITH_IT & keys
            read = "raise" if READ_RAISES & keys else "ok"
            write = "any" if WRITABLE & keys else "attr"
            cases.add(
                f"{qual} read after close",
                lambda n=n: getattr(cobj, n),
                "any" if readable else "closed",
            )
            cases.add(f"{qual} read", lambda n=n: getattr(obj, n), read)
            cases.add(f"{qual} write", lambda n=n: setattr(obj, n, 1), write)
        elif n in CALLABLE_AFTER_CLOSE:
            cases.add(f"{qual}() after close", getattr(cobj, n), "ok")
        elif n not in methods:
            cases.add(f"{qual}: NOT IN THE MISUSE TABLE", uncovered, "ok")
        else:
            expect = "any" if CALLABLE_ON_CLOSED & keys else "closed"
            cases.add(f"{qual} after close", lambda n=n: methods[n].call(cobj, n, w), expect)
    return names


def uncovered():
    raise AssertionError("a method the table does not name, or names by hand though declared")


class Cases(list):
    """The cases of a group: (name, function, expectation)."""

    def add(self, name, fn, expect):
        self.append((name, fn, expect))

    def each(self, fmt, fn, values, expect="raise"):
        """fmt.format(label) -> fn(value) for each (label, value)."""
        for lbl, v in values:
            self.add(fmt.format(lbl), lambda v=v: fn(v), expect)

    def method(self, label, target, name, spec, w, worlds=(None, None, None), after=None):
        """A method's valid call, each parameter perturbed, and its arity;
        target is the object (name None: target is the callable itself),
        worlds the closed, other-Context and other-PD ones; after runs
        after each call (drains a CQ)."""

        def run(o=None):
            try:
                return spec.call(target, name, w, o)
            finally:
                if after:
                    after()

        call = f"{label}.{name}" if name else label
        fn = getattr(target, name) if name else target
        self.add(f"{call}(valid)", run, spec.valid)
        for p in spec.params:
            for lbl, v, expect in bad_values(p, w, *worlds):
                self.add(f"{call}({p.name}={lbl})", lambda p=p, v=v: run((p, v)), expect)
        if spec.params and spec.bare:
            need = any(not p.optional for p in spec.params)
            self.add(f"{call}() without arguments", fn, "raise" if need else "any")
        k = len(spec.params)
        self.add(f"{call}(too many arguments)", lambda: fn(*([0] * (k + 1))), "raise")
        self.add(f"{call}(unknown keyword)", lambda: fn(no_such_keyword=1), "raise")


def judge(expect, exc, result):
    """(ok, why) for one outcome."""
    if exc is None:
        if expect in ("ok", "any", "timeout"):
            return True, ""
        return False, f"returned {result!r:.200} where an exception was expected"
    if expect == "attr":
        return isinstance(exc, AttributeError), ""
    if expect == "raise_or_attr":
        return isinstance(exc, ALLOWED + (AttributeError,)), ""
    if expect == "completion":
        return isinstance(exc, ib.CompletionError), ""
    if expect == "index":
        return isinstance(exc, IndexError), ""
    if expect == "propagate":
        return isinstance(exc, ZeroDivisionError), ""
    if expect == "timeout" and isinstance(exc, TimeoutError):
        return True, ""
    if expect == "ok":
        return False, "the valid call raised"
    if not isinstance(exc, ALLOWED):
        return False, f"{type(exc).__name__} is not TypeError/ValueError/OverflowError/VerbsError"
    if expect == "closed":
        if isinstance(exc, ValueError) or (
            isinstance(exc, ib.VerbsError) and exc.errno == errno.EBADF
        ):
            return True, ""
        return False, "use of a closed handle must raise VerbsError(EBADF)"
    return True, ""
