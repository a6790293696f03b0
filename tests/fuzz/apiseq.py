"""Sequences of public calls chosen by input bytes, over the recording
double: the engine of tests/fuzz/fuzz_api.py (atheris chooses the bytes)
and of tests/host/test_fuzz_threads.py (random bytes, two threads sharing
the objects; under ThreadSanitizer with make sanitize-threads).

A sequence starts from two contexts (fake0 and fake1, so another parent's
handle is always at hand) and a pool of values; each step, read from the
input, is one of:

- a call of a public method (or a read of a property) of a pooled object,
  with arguments drawn from the pool: objects (open, closed, of the other
  context), records, integers at and past every width's edge, wrong types;
- the construction of a record or a work request (SGE, SendWR, RecvWR,
  chains, batches, QPInitAttr, AHAttr, ...) from pooled values;
- close() of a pooled object (then its use after close follows from the
  pool);
- dropping the last reference to a pooled object (its dealloc);
- an injected failure: the next 1-4 calls of one of the double's verbs
  fail with one errno.

Every call must return or raise one of harness.PROMISED.  At the end every
object is closed (children first), the pool dropped and the garbage
collected, and the double's live objects must be back where they were
(unless a destroy verb was made to fail, when the object cannot be freed
by design).
"""

from __future__ import annotations

import errno
import gc
import inspect
import threading

import harness

INTS = (
    0, 1, 2, 3, 4, 7, 8, 16, 64, 255, 256, 4096, 65535, 65536,
    -1, -2, 2**15, 2**16 - 1, 2**24, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
    2**53, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**31), -(2**63), -(2**63) - 1,
    2**100,
)  # fmt: skip
ERRNOS = (
    errno.ENOMEM, errno.EINVAL, errno.EBUSY, errno.EAGAIN, errno.EOPNOTSUPP,
    errno.EPERM, errno.EIO, errno.ENOSYS, errno.ENODEV, errno.EFAULT,
    errno.ENOENT, errno.EACCES, errno.ENOSPC, errno.EPROTONOSUPPORT,
)  # fmt: skip
# Methods never called: they wait for an event that the double never
# sends (they block without a timeout), or act on the process (fork,
# file descriptors by number).
BLOCKING = frozenset(
    {
        "get_async_event",
        "get_cq_event",
        "get_event",
        "get_request",
        "import_device",
        "fork_init",
    }
)
# The records and requests a sequence builds (their constructors are
# inputs too), by name in ibverbs.
RECORDS = (
    "SGE", "SendWR", "RecvWR", "SendWRChain", "RecvWRChain", "SendBatch",
    "RecvBatch", "QPInitAttr", "QPInitAttrEx", "AHAttr", "CQInitAttrEx", "MWBind",
    "MWBindInfo", "ECE", "OpsWR", "RXHashConf", "WC", "QPCap", "FlowAttr",
    "FlowSpecEth", "FlowSpecIPv4", "FlowSpecTCPUDP", "FlowSpecActionTag",
    "FlowSpecActionDrop", "FlowActionESPAttr",
)  # fmt: skip
POOL_MAX = 48
STEPS_MAX = 64


class Source:
    """Choices read from bytes; once they run out every choice is 0."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def more(self) -> bool:
        return self.pos < len(self.data)

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        b = self.data[self.pos]
        self.pos += 1
        return b

    def below(self, n: int) -> int:
        """0..n-1 (n >= 1)."""
        v = self.byte()
        if n > 256:
            v = v << 8 | self.byte()
        return v % n

    def pick(self, seq):
        return seq[self.below(len(seq))]

    def take(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out


class Leak(AssertionError):
    """Objects of the double left alive after every object was closed."""


class Sequence:
    """One run of steps over a pool shared by the threads that step it."""

    def __init__(self, ib, fake, verbs):
        self.ib = ib
        self.fake = fake
        self.verbs = verbs
        self.lock = threading.Lock()
        self.destroy_failed = False
        self.base_live = fake.live()
        self.objects: list = []  # created, in order: closed children first at the end
        self.records: list = []
        self.records_cls = [getattr(ib, n) for n in RECORDS if hasattr(ib, n)]
        self.others = (None, True, "", "fake0", b"", bytes(64), bytearray(64), 1.5, [], (), {})
        for name in ("fake0", "fake1"):
            self._keep(ib.Context(name))

    # ------------------------------------------------------------ pool ---

    def _keep(self, value) -> None:
        if isinstance(value, (list, tuple)):
            for v in value[:4]:
                self._keep(v)
            return
        mod = getattr(type(value), "__module__", "") or ""
        if not mod.startswith("ibverbs") or isinstance(value, (int, str, bytes, float)):
            # Not the enums: their methods are int's (int.to_bytes(2**53)
            # asks for 8 PiB), not this package's.
            return
        with self.lock:
            bucket = self.objects if hasattr(value, "close") else self.records
            bucket.append(value)
            if len(bucket) > POOL_MAX:
                # The oldest record goes; an object keeps its place (its
                # close at the end frees the double's object).
                if bucket is self.records:
                    del bucket[0]

    def _any(self, src: Source):
        with self.lock:
            pools = [p for p in (self.objects, self.records) if p]
            if not pools:
                return None
            pool = src.pick(pools)
            return src.pick(pool)

    def value(self, src: Source):
        kind = src.below(10)
        if kind < 3:
            return self._any(src)
        if kind < 6:
            return src.pick(INTS)
        if kind == 6:
            return int.from_bytes(src.take(4), "little")
        if kind == 7:
            return src.pick(self.others)
        if kind == 8:
            return [self._any(src) for _ in range(src.below(4))]
        return src.take(src.below(64))

    def args(self, src: Source, fn):
        args = [self.value(src) for _ in range(src.below(5))]
        kwargs = {}
        if src.below(4) == 0:
            params = parameters(fn)
            for _ in range(src.below(3) + 1 if params else 0):
                kwargs[src.pick(params)] = self.value(src)
        return args, kwargs

    # ----------------------------------------------------------- steps ---

    def call(self, fn, *args, **kwargs):
        try:
            result = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - sorted below
            if harness.is_promised(e):
                return None
            raise
        self._keep(result)
        return result

    def step(self, src: Source) -> None:
        action = src.below(16)
        if action < 8:
            obj = self._any(src)
            names = public_names(type(obj))
            if not names:
                return
            name = src.pick(names)
            try:
                attr = getattr(obj, name)
            except BaseException as e:  # noqa: BLE001 - sorted below
                if harness.is_promised(e) or isinstance(e, AttributeError):
                    return
                raise
            if callable(attr) and not isinstance(attr, type):
                args, kwargs = self.args(src, attr)
                self.call(attr, *args, **kwargs)
            else:
                self._keep(attr)
        elif action < 11:
            cls = src.pick(self.records_cls)
            args, kwargs = self.args(src, cls)
            self.call(cls, *args, **kwargs)
        elif action < 13:
            with self.lock:
                obj = src.pick(self.objects) if self.objects else None
            if obj is not None:
                self.call(obj.close)
        elif action == 13:
            with self.lock:
                pool = src.pick((self.objects, self.records))
                if pool:
                    del pool[src.below(len(pool))]
            if src.below(2):
                gc.collect()
        else:
            verb = src.pick(self.verbs)
            if verb.startswith(("destroy", "dealloc", "dereg", "close", "free", "detach")):
                self.destroy_failed = True
            try:
                self.fake.fail(verb, src.pick(ERRNOS), src.below(4) + 1)
            except RuntimeError:  # every slot armed
                self.fake.fail_clear()

    def run(self, src: Source, steps: int = STEPS_MAX) -> None:
        for _ in range(steps):
            if not src.more():
                break
            self.step(src)

    # ------------------------------------------------------------- end ---

    def finish(self) -> None:
        """Close everything (children first), drop the pool, collect, and
        check the double's live objects; Leak when some are left."""
        self.fake.fail_clear()
        objects = self.objects
        for _ in range(8):
            left = []
            for obj in reversed(objects):
                try:
                    obj.close()
                except OSError:
                    left.append(obj)
            if not left:
                break
            objects = list(reversed(left))
        self.objects.clear()
        self.records.clear()
        objects = left = obj = None
        gc.collect()
        live = self.fake.live()
        if live != self.base_live and not self.destroy_failed:
            raise Leak(
                f"{live - self.base_live} objects of the double left: {self.fake.live_report()}"
            )


_NAMES: dict[type, list[str]] = {}
_PARAMS: dict[object, list[str]] = {}


def parameters(fn) -> list[str]:
    """The names fn takes (none when it has no signature), cached."""
    owner = getattr(fn, "__self__", None)
    key = (type(owner), getattr(fn, "__qualname__", None) or id(fn))
    params = _PARAMS.get(key)
    if params is None:
        try:
            params = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            params = []
        params = [p for p in params if p not in ("self", "cls")]
        _PARAMS[key] = params
    return params


def public_names(cls) -> list[str]:
    """The public attributes of cls a sequence may use, sorted."""
    names = _NAMES.get(cls)
    if names is None:
        names = sorted(
            n for n in dir(cls) if not n.startswith("_") and n not in BLOCKING and n != "close"
        )
        _NAMES[cls] = names
    return names


def run_threads(ib, fake, verbs, data: bytes, threads: int = 2) -> None:
    """One sequence stepped by several threads at once, sharing the pool:
    the input split in as many parts, one for each."""
    seq = Sequence(ib, fake, verbs)
    part = max(1, len(data) // threads)
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def body(chunk: bytes) -> None:
        try:
            barrier.wait()
            seq.run(Source(chunk))
        except BaseException as e:  # noqa: BLE001 - re-raised by the caller
            errors.append(e)

    ts = [
        threading.Thread(target=body, args=(data[i * part : (i + 1) * part],))
        for i in range(threads)
    ]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    seq.finish()
