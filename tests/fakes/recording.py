"""The recording test double of libibverbs (tests/fakes/recording/*.c):
build it, run Python against it in a child process, read its call log.

ibverbs resolves libibverbs once per process, and the test process has
already loaded the real one: code that must see the double runs in a child
started with IBVERBS_LIBIBVERBS pointing at it.  The pytest fixture
``recording`` (tests/support/fixtures.py) is a :class:`Runner`::

    def test_alloc_pd(recording):
        def body(fake):                 # runs in the child
            import ibverbs
            with ibverbs.open_device("fake0") as ctx, ctx.alloc_pd():
                pass
            return fake.live()

        res = recording.run(body)
        assert res.value == 0
        assert res.one("alloc_pd")["context"] != 0

``body`` must be self-contained (it is sent as source: import inside it,
use only its arguments, which must be JSON values like its return value).
It gets a :class:`Fake`, the ctypes controller of the double in the child:
``fake.records()``/``fake.take()`` read the log there, ``fake.fail(verb,
errno, count)`` injects failures, ``fake.live()`` counts live objects.
``run`` returns a :class:`Result`: the value (or the exception, as
``res.error``), the whole log parsed, and the live objects left after the
body returned and the child collected its garbage.  To keep a test file
fast, do several checks in one body.

Log format (one line per call): ``verb key=value key=value ...``; a value
is an integer (decimal, or 0x-hex), ``b:<hex>`` (bytes) or ``s:<text>``
(text, with %20/%25/%0a escapes).  :func:`parse_log` turns it into a list
of :class:`Record` (``verb``, ``fields``).
"""

from __future__ import annotations

import ctypes
import inspect
import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import unquote

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from cshared import BuildError, compile_shared, compile_unit, compiler  # noqa: E402,F401

SOURCE_DIR = HERE / "recording"
LIB_NAME = "libibverbs-recording.so"
# Fake.fail's err for a failure without errno (fake.h's FAKE_NO_ERRNO): the
# verb fails as its man page says (NULL, -1; a verb that returns its errno
# returns -1) and leaves errno 0, as some providers do.
NO_ERRNO = -1


# ------------------------------------------------------------------ build ---


def include_flags() -> list[str]:
    """The include flags the extension is built with (setup.py): CPPFLAGS,
    then IBVERBS_EXTRA_CFLAGS, so both see the same rdma-core headers."""
    return (
        shlex.split(os.environ.get("CPPFLAGS", ""))
        + os.environ.get("IBVERBS_EXTRA_CFLAGS", "").split()
    )


def build(outdir) -> str:
    """Compile the double into outdir/libibverbs-recording.so (one unit that
    includes every file of tests/fakes/recording) and return its path.
    BuildError without a compiler, or when it fails or warns."""
    outdir = Path(outdir)
    return compile_unit(
        SOURCE_DIR,
        outdir / "recording_unit.c",
        outdir / LIB_NAME,
        cflags=[f"-I{SOURCE_DIR}", *include_flags()],
        libs=["-lpthread"],
    )


# -------------------------------------------------------------------- log ---


class Record(tuple):
    """One call: ``(verb, fields)``; also ``.verb`` and ``.fields``, and
    ``rec[key]`` reads a field (KeyError naming the record if absent)."""

    __slots__ = ()

    def __new__(cls, verb: str, fields: dict):
        return super().__new__(cls, (verb, fields))

    @property
    def verb(self) -> str:
        return tuple.__getitem__(self, 0)

    @property
    def fields(self) -> dict:
        return tuple.__getitem__(self, 1)

    def __getitem__(self, key):
        if isinstance(key, (int, slice)):
            return tuple.__getitem__(self, key)
        try:
            return self.fields[key]
        except KeyError:
            raise KeyError(f"{key!r} not in the record {self.verb} {self.fields}") from None

    def get(self, key, default=None):
        return self.fields.get(key, default)

    def __contains__(self, key):
        return key in self.fields

    def prefixed(self, prefix: str) -> dict:
        """The fields under ``prefix`` ("wr[0].", "attr."), without it."""
        n = len(prefix)
        return {k[n:]: v for k, v in self.fields.items() if k.startswith(prefix)}


def parse_value(text: str):
    if text.startswith("b:"):
        return bytes.fromhex(text[2:])
    if text.startswith("s:"):
        return unquote(text[2:])
    try:
        return int(text, 0)
    except ValueError:
        return text


def parse_log(text: str) -> list[Record]:
    """The log's lines as Records."""
    out = []
    for line in text.splitlines():
        if not line:
            continue
        verb, *pairs = line.split(" ")
        fields = {}
        for pair in pairs:
            key, _, value = pair.partition("=")
            fields[key] = parse_value(value)
        out.append(Record(verb, fields))
    return out


def _one(records, verb):
    found = [r for r in records if r.verb == verb]
    if len(found) != 1:
        raise AssertionError(
            f"expected one {verb} call, found {len(found)} in: {[r.verb for r in records]}"
        )
    return found[0]


# ------------------------------------------------------- in the child: ctypes ---


class Fake:
    """ctypes access to the double's controls (in the process that loaded
    it: dlopen of the same path shares its state with ibverbs)."""

    def __init__(self, path: str):
        self.path = path
        self.lib = lib = ctypes.CDLL(path)
        sz, i, L = ctypes.c_size_t, ctypes.c_int, ctypes.c_long
        lib.fake_log_size.restype = sz
        lib.fake_log_read.argtypes = [ctypes.c_char_p, sz]
        lib.fake_log_read.restype = sz
        lib.fake_clear.restype = None
        lib.fake_set_recording.argtypes = [i]
        lib.fake_set_recording.restype = None
        lib.fake_fail.argtypes = [ctypes.c_char_p, i, i]
        lib.fake_fail.restype = i
        lib.fake_fail_nth.argtypes = [ctypes.c_char_p, i, i]
        lib.fake_fail_nth.restype = i
        lib.fake_fail_clear.restype = None
        lib.fake_live.restype = L
        lib.fake_live_report.argtypes = [ctypes.c_char_p, sz]
        lib.fake_live_report.restype = None
        u64, u = ctypes.c_uint64, ctypes.c_uint
        lib.fake_set_wc_ex.argtypes = [u64, u64, u, u]
        lib.fake_set_wc_ex.restype = None
        lib.fake_cq_overflows.restype = L
        lib.fake_srq_posted.restype = L
        cp = ctypes.c_char_p
        lib.fake_cm_queue.argtypes = [i, i, i, cp, i]
        lib.fake_cm_queue.restype = i
        lib.fake_cm_answer.argtypes = [cp, i, i, cp, i]
        lib.fake_cm_answer.restype = i
        lib.fake_cm_answer_clear.restype = None
        lib.fake_cm_set_request_family.argtypes = [i]
        lib.fake_cm_set_request_family.restype = None
        lib.fake_async_event.argtypes = [i, cp, i]
        lib.fake_async_event.restype = i

    # the log
    def log_text(self) -> str:
        n = self.lib.fake_log_size()
        buf = ctypes.create_string_buffer(n + 1)
        k = self.lib.fake_log_read(buf, n + 1)
        return buf.raw[:k].decode()

    def records(self) -> list[Record]:
        """Every call logged so far."""
        return parse_log(self.log_text())

    def take(self) -> list[Record]:
        """The calls logged since the last take() or clear(), then clear."""
        recs = self.records()
        self.clear()
        return recs

    def one(self, verb: str) -> Record:
        """The one call of verb in the log (AssertionError otherwise)."""
        return _one(self.records(), verb)

    def clear(self) -> None:
        self.lib.fake_clear()

    def set_recording(self, on: bool) -> None:
        self.lib.fake_set_recording(1 if on else 0)

    # failures
    def fail(self, verb: str, err: int, count: int = 1) -> None:
        """The next ``count`` calls of ``verb`` (its log name) fail with
        ``err`` (count -1: all, until fail_clear), or, with ``err``
        :data:`NO_ERRNO`, fail without errno (NULL or -1 with errno 0).
        ``"completion"`` sets the status of the next ``count`` completions
        to ``err`` instead."""
        if self.lib.fake_fail(verb.encode(), err, count) != 0:
            raise RuntimeError("the double has no free failure slot")

    def fail_nth(self, verb: str, err: int, skip: int = 0) -> None:
        """Only the (skip + 1)-th next call of ``verb`` fails with ``err``
        (the ones before it go through)."""
        if self.lib.fake_fail_nth(verb.encode(), err, skip) != 0:
            raise RuntimeError("the double has no free failure slot")

    def fail_clear(self) -> None:
        self.lib.fake_fail_clear()

    # objects and values
    def live(self) -> int:
        """Objects created and not destroyed (contexts, PDs, MRs, ...)."""
        return self.lib.fake_live()

    def live_report(self) -> str:
        buf = ctypes.create_string_buffer(1024)
        self.lib.fake_live_report(buf, len(buf))
        return buf.value.decode()

    def set_wc_ex(self, ts_base: int, wallclock_base: int, cvlan: int, flow_tag: int) -> None:
        """The extended CQ's completion_ts/wallclock bases (+n for the n-th
        completion of a CQ), cvlan and flow_tag."""
        self.lib.fake_set_wc_ex(ts_base, wallclock_base, cvlan, flow_tag)

    def cq_overflows(self) -> int:
        return self.lib.fake_cq_overflows()

    def srq_posted(self) -> int:
        return self.lib.fake_srq_posted()

    # the librdmacm double (recording/cm.c)
    def cm_queue(
        self, fd: int, event: int, status: int = 0, private_data: bytes | None = b""
    ) -> None:
        """Queue an event (a CMEventType value) on the event channel whose
        fd is ``fd`` (CMID.fd, CMListener.fd); a CONNECT_REQUEST brings a
        new id.  At most 255 bytes of private data; None: a NULL pointer."""
        pd = bytes(private_data or b"")
        n = -1 if private_data is None else len(pd)
        if self.lib.fake_cm_queue(fd, int(event), status, pd, n) != 0:
            raise RuntimeError(f"the double has no event channel with fd {fd}")

    def cm_answer(self, verb: str, event: int, status: int = 0, private_data: bytes = b"") -> None:
        """The next call of ``verb`` (resolve_addr, resolve_route, connect,
        accept) queues this event instead of its success event; several
        armed are queued by one call, in order; event -1: none."""
        pd = bytes(private_data)
        if self.lib.fake_cm_answer(verb.encode(), int(event), status, pd, len(pd)) != 0:
            raise RuntimeError("the double has no free answer slot")

    def cm_answer_clear(self) -> None:
        self.lib.fake_cm_answer_clear()

    def cm_request_family(self, family: int) -> None:
        """The address family of the requests cm_queue makes (AF_INET,
        AF_INET6, or another: the family alone)."""
        self.lib.fake_cm_set_request_family(family)

    # asynchronous events (recording/device.c)
    def async_event(self, event_type: int, about: str, port: int = 1) -> None:
        """The next get_async_event answers one event of ``event_type``
        about ``about``: "port" (``port``), "stranger" (an object ibverbs
        did not create) or the newest live "qp", "cq", "srq" or "wq"."""
        if self.lib.fake_async_event(event_type, about.encode(), port) != 0:
            raise RuntimeError(f"the double has no live {about}")


# ------------------------------------------------------- the parent side ---


class Result:
    """What a run in the child gave: ``value`` (the body's return value),
    ``error`` (None, or a dict: type, message, errno, operation, and
    ``repr``), ``records`` (the whole log), ``live`` and ``live_report``
    (objects left after the body and a gc.collect())."""

    def __init__(self, out: dict):
        self.value = out["value"]
        self.error = out["error"]
        self.records = parse_log(out["log"])
        self.live = out["live"]
        self.live_report = out["live_report"]

    def ok(self):
        """The value; AssertionError with the child's traceback when the
        body raised."""
        if self.error is not None:
            raise AssertionError(f"the body raised:\n{self.error['traceback']}")
        return self.value

    def calls(self, verb: str) -> list[Record]:
        return [r for r in self.records if r.verb == verb]

    def one(self, verb: str) -> Record:
        return _one(self.records, verb)

    def verbs(self) -> list[str]:
        return [r.verb for r in self.records]


class ChildFailed(AssertionError):
    """The child died or wrote no result (a crash in the binding or the
    double)."""


_CHILD = r"""
import gc, json, os, sys, traceback
sys.path.insert(0, {fakes!r})
import recording
fake = recording.Fake(os.environ["IBVERBS_LIBIBVERBS"])
fake.clear()
ns = {{"__name__": "recording_body"}}
exec(compile({src!r}, {filename!r}, "exec"), ns)
value, error = None, None
try:
    value = ns[{name!r}](fake, *json.loads({args!r}))
except BaseException as e:
    error = {{"type": type(e).__name__, "message": str(e), "repr": repr(e),
             "errno": getattr(e, "errno", None),
             "operation": getattr(e, "operation", None),
             "traceback": traceback.format_exc()}}
    del e
ns.clear()
gc.collect()
out = {{"value": value, "error": error, "log": fake.log_text(),
       "live": fake.live(), "live_report": fake.live_report()}}
def enc(o):
    if isinstance(o, (bytes, bytearray, memoryview)):
        return bytes(o).hex()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return repr(o)
with open(sys.argv[1], "w") as f:
    json.dump(out, f, default=enc)
"""


class Runner:
    """Runs code in a child process whose ibverbs loads the double."""

    def __init__(self, lib: str, workdir, *, rdmacm: bool = False):
        self.lib = lib
        self.workdir = Path(workdir)
        self.rdmacm = rdmacm
        self._n = 0

    def with_rdmacm(self) -> Runner:
        """A Runner whose child also loads the double as librdmacm
        (IBVERBS_LIBRDMACM: recording/cm.c)."""
        return Runner(self.lib, self.workdir, rdmacm=True)

    def env(self) -> dict:
        env = dict(
            os.environ,
            IBVERBS_LIBIBVERBS=self.lib,
            PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
        )
        if self.rdmacm:
            env["IBVERBS_LIBRDMACM"] = self.lib
        return env

    def run(self, body, *args, timeout: float = 120) -> Result:
        """Call ``body(fake, *args)`` in a fresh child (``body`` is a
        function, sent as its source, or the source of a module that
        defines ``body``) and return its Result."""
        if callable(body):
            lines, first = inspect.getsourcelines(body)
            # Blank lines first: the child's tracebacks show the file's lines.
            src = "\n" * max(first - 1, 0) + textwrap.dedent("".join(lines))
            name = body.__name__
            filename = inspect.getsourcefile(body) or "<body>"
        else:
            src, name, filename = textwrap.dedent(body), "body", "<body>"
        self._n += 1
        tag = "cm-" if self.rdmacm else ""
        out_path = self.workdir / f"result-{tag}{os.getpid()}-{self._n}.json"
        code = _CHILD.format(
            fakes=str(HERE), src=src, filename=filename, name=name, args=json.dumps(list(args))
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, str(out_path)],
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
        )
        if proc.returncode != 0 or not out_path.exists():
            raise ChildFailed(
                f"the child exited with {proc.returncode} and no result:\n{proc.stdout[-6000:]}"
            )
        with open(out_path) as f:
            out = json.load(f)
        out_path.unlink()
        return Result(out)
