"""The failure-injection cases, run in a child process on the recording
double by tests/host/test_failure_injection.py.

    python failinj.py CHUNK NCHUNKS [--start N]

Generated, not written per verb.  The methods are the misuse suite's
(tests/device/reliability/misuse_cases.py): every declared method of every
handle type of its World, built here on the double's fake0, with its valid
call; plus the module functions and constructors below.  For each method:

1. learn: in a fresh World, the valid call once with the double's log
   cleared before it: the libibverbs calls it makes, in order;
2. for each call of that log in turn (the k-th call of a verb: the
   double's ``fail_nth``) and each errno of ``errnos(verb)`` (the ones the
   verb's man page names, EINVAL where it names none, and ENOMEM), in a
   fresh World: that call fails, and the method must raise VerbsError with
   that errno and the verb's name in its message (or do what
   ``DOCUMENTED`` says); a call of a verb of ``ERRNO_VERBS`` also fails
   without errno (the double's ``NO_ERRNO``), and the method must raise
   VerbsError with the call site's fallback errno (``FALLBACK``), its
   message naming the verb, never "Success"; the same call then succeeds
   with nothing armed
   (the object is still usable); the World and whatever the calls
   returned close, and the double's live objects are back to the
   baseline (nothing leaked);
3. the same for the calls of closing what the valid call returned (a
   factory's object): its close fails, stays open, and closes on retry;
   dropped without close(), its failed destroy is reported as unraisable;
   and once per chunk for closing the World, type by type;
4. each allocation of the valid call in turn (``inject_alloc``).

Each case prints ``BEGIN <i> <label>`` before it runs and one JSON line
after (the misuse suite's format: support.process.run_cases reads it); a
BEGIN with no result line is a crash, and the parent starts the chunk
again with ``--start`` after it.  ``DONE <n>`` ends the chunk.
"""

from __future__ import annotations

import array
import errno as E
import gc
import json
import os
import sys
import traceback

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (TESTS, os.path.join(TESTS, "device", "reliability"), os.path.join(TESTS, "fakes")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

# The double is librdmacm too (tests/fakes/recording/cm.c): CMID and
# CMListener run on it.
if "IBVERBS_LIBIBVERBS" in os.environ:
    os.environ.setdefault("IBVERBS_LIBRDMACM", os.environ["IBVERBS_LIBIBVERBS"])
import ibverbs as ib  # noqa: E402
import misuse_cases as MC  # noqa: E402
import recording  # noqa: E402
from misuse_core import OMIT, D, declared_name  # noqa: E402
from misuse_world import World  # noqa: E402

from support import GID_INDEX, PORT  # noqa: E402
from support.process import can_fail_allocations  # noqa: E402

# ---------------------------------------------------------------------------
# Data: the errnos each verb's man page names (rdma-core 65's man3 pages;
# the log name, without ibv_), EINVAL for the others; ENOMEM for every one.
# ---------------------------------------------------------------------------

MAN_ERRNOS = {
    "advise_mr": (E.EOPNOTSUPP, E.EFAULT, E.EINVAL, E.ENOENT, E.EPERM, E.ENOSYS),
    "attach_counters_point_flow": (E.EBUSY, E.EINVAL, E.EOPNOTSUPP),
    "create_counters": (E.EOPNOTSUPP, E.EINVAL, E.ENOSYS),
    "destroy_counters": (E.EINVAL, E.EOPNOTSUPP),
    "create_flow": (E.EINVAL, E.ENXIO, E.EPERM),
    "destroy_flow": (E.EINVAL, E.ENXIO, E.EPERM),
    "get_device_list": (E.EPERM, E.ENOSYS),
    "modify_qp_rate_limit": (E.EINVAL, E.ENOSYS, E.EOPNOTSUPP),
    "query_ece": (E.EINVAL, E.EOPNOTSUPP),
    "set_ece": (E.EINVAL, E.EOPNOTSUPP),
    "query_gid_ex": (E.ENODATA,),
    "read_counters": (E.EOPNOTSUPP,),
    "fork_init": (E.EINVAL,),
}


def errnos(verb):
    return tuple(dict.fromkeys(MAN_ERRNOS.get(verb, (E.EINVAL,)) + (E.ENOMEM,)))


# Verbs that report a failure through errno (NULL, or -1 and errno set:
# their man pages; the double's fake_set_errno), libibverbs' and
# librdmacm's.  Some providers fail them without setting errno: each call
# of one also fails that way (recording.NO_ERRNO, errno 0), and the method
# must raise VerbsError with its call site's fallback errno (its
# errno_or(...)): EINVAL, or what FALLBACK says.  The verbs that return
# their errno (destroy, modify, query, post) have no such failure.
ERRNO_VERBS = set(
    """alloc_buf alloc_dm alloc_dmah alloc_mw alloc_null_mr alloc_parent_domain alloc_pd
    alloc_td create_ah create_ah_from_wc create_comp_channel create_comp_cntr create_counters
    create_cq create_cq_ex create_flow create_flow_action_esp create_qp create_qp_ex
    create_rwq_ind_table create_srq create_srq_ex create_wq dm_export_dmabuf_fd
    export_buf_dmabuf_fd get_async_event get_cq_event get_device_list get_pkey_index
    import_device import_dm import_mr import_pd init_ah_from_wc open_device open_qp open_xrcd
    query_gid query_pkey reg_buf_mr reg_dm_mr reg_dmabuf_mr reg_mr reg_mr_ex reg_mr_iova
    rereg_mr
    accept bind_addr connect create_event_channel create_id destroy_id disconnect
    get_cm_event getaddrinfo listen migrate_id rdma_create_qp reject resolve_addr
    resolve_route""".split()
)
NO_ERRNO = recording.NO_ERRNO
# The fallbacks that are not EINVAL: by verb, or by (method label, verb)
# where call sites of one verb differ.
FALLBACK = {
    "alloc_buf": E.ENOMEM,  # mem/buf.c
    "get_pkey_index": E.ENOENT,  # device/gid.c
    # the reads of an event: device/event.c, cq/channel.c, cm/cm_event.c
    "get_async_event": E.EIO,
    "get_cq_event": E.EIO,
    "get_cm_event": E.EIO,
    "destroy_id": E.EIO,  # cm/cm.c
    # opening a device: device/context.c (the module's get_device_list: EINVAL)
    **{
        (m, v): E.ENODEV
        for m in ("Context", "Device.open")
        for v in ("get_device_list", "open_device")
    },
}


def injected(verb):
    """The failures a call of verb is made to take: each errno, and for a
    verb of ERRNO_VERBS, none (NO_ERRNO)."""
    return errnos(verb) + ((NO_ERRNO,) if verb in ERRNO_VERBS else ())


def errname(err):
    return "no errno" if err == NO_ERRNO else E.errorcode[err]


def fallback(label, verb):
    """The errno a method raises when verb fails without one."""
    return FALLBACK.get((label, verb), FALLBACK.get(verb, E.EINVAL))


# Calls with no failure channel: libibverbs declares them void (the
# ibv_wr_* builders report at ibv_wr_complete; acks; freeing a list), or
# the binding only reads a value.  An armed failure of one is not a case.
NO_FAILURE = set(
    """free_device_list ack_cq_events ack_async_event wr_start wr_abort wr_send wr_send_imm
    wr_send_inv wr_rdma_write wr_rdma_write_imm wr_rdma_read wr_atomic_cmp_swp
    wr_atomic_fetch_add wr_local_inv wr_atomic_write wr_flush wr_set_sge wr_set_sge_list
    wr_set_inline_data wr_set_inline_data_list wr_set_ud_addr wr_bind_mw wr_send_tso
    wr_set_xrc_srqn end_poll read_opcode read_vendor_err read_byte_len read_imm_data
    read_invalidated_rkey read_qp_num read_src_qp read_wc_flags read_slid read_sl
    read_dlid_path_bits read_completion_ts read_completion_wallclock_ns read_cvlan
    read_flow_tag read_tm_info get_device_name get_device_guid wc_status_str
    event_type_str node_type_str port_state_str rate_to_mbps rate_to_mult mbps_to_ibv_rate
    mult_to_ibv_rate unimport_pd unimport_mr unimport_dm free_buf
    query_qp_data_in_order is_fork_initialized
    ack_cm_event destroy_event_channel freeaddrinfo rdma_destroy_qp""".split()
)

# (method label, verb, errno) -> what the method's docstring says happens
# instead of a VerbsError of that errno: "ok" (it succeeds: a documented
# fallback), or the errno of the VerbsError it raises.  "*": any errno.
DOCUMENTED = {
    # "EOPNOTSUPP or EIO when it returns a bad count": a negative count
    # is no errno (providers disagree on what it means).
    **{(f"{t}.{m}", "poll_cq", "*"): E.EIO for t in ("CQ", "CQEx") for m in ("poll", "poll_count")},
    **{
        (m, "poll_cq", "*"): E.EIO
        for m in ("CQ.poll_into", "SendBatch.progress", "RecvBatch.progress")
    },
    # "ENODEV when no device has that name (or none can be listed)":
    # ENOSYS is the kernel without RDMA.
    ("Context", "get_device_list", E.ENOSYS): E.ENODEV,
    ("Device.open", "get_device_list", E.ENOSYS): E.ENODEV,
    # "A failed next_poll after some entries: those are returned, and the
    # next call reports the error if it persists" (cq/cq_ex.c)
    **{(f"CQEx.{m}", "next_poll", "*"): "ok" for m in ("poll", "poll_count")},
    # "An empty list when the kernel has no RDMA support (ENOSYS)"
    ("get_device_list", "get_device_list", E.ENOSYS): "ok",
    # -1 is the verb's only failure: "EOPNOTSUPP when the kernel gives none"
    ("Context.get_device_index", "get_device_index", "*"): E.EOPNOTSUPP,
    # NULL: "EOPNOTSUPP when ... the provider makes no extended QP"
    **{(f"{t}.create_qp_ex", "qp_to_qp_ex", "*"): E.EOPNOTSUPP for t in ("Context", "PD")},
    # and a batch's post on such a QPEx (wr/batch.c)
    **{
        (m, "qp_to_qp_ex", "*"): E.EOPNOTSUPP
        for m in ("QPEx.post_send_batch", "SendBatch.post", "SendBatch.progress")
    },
}

# Calls the double makes inside another verb (libibverbs' own
# ibv_import_device lists and opens the device): the message names that
# verb, the one the binding called.
NESTED = {"Context.import_device": "import_device"}

# Methods whose call ends what their setup began (wr_complete ends the
# batch, failed or not): the call after the failure runs its setup again,
# on the same objects.
SETUP_AGAIN = {"QPEx.wr_complete"}

# Allocation failures (inject_alloc): the most allocations tried per
# method, and the methods whose call changes what the next one does (a
# batch, a poll session, an fd handed over): each try in a new World.
ALLOC_MAX = 200
FRESH_EACH = {"Context.import_device", "CMID.create_qp"}  # a CMID has one QP

# Methods the generator does not reach, and why (checked: every public
# method of a World type is run or named here).
NOT_REACHED = {
    "AsyncEvent.ack": "the double raises no async event (get_async_event: EAGAIN); "
    "ibv_ack_async_event is void",
    **{
        f"{t}.*": "libefa's calls (tests/fakes/efa, misuse_cases.py's efa group)"
        for t in ("EfaCQ", "EfaQP")
    },
    **{
        f"{t}.*": "libmlx5's calls (tests/fakes/mlx5, misuse_mlx5.py)"
        for t in "Mlx5DevxEventChannel Mlx5DevxObj Mlx5DevxUAR Mlx5DevxUmem Mlx5Mkey Mlx5QP".split()
    },
}


# ---------------------------------------------------------------------------
# The methods and how to reach each
# ---------------------------------------------------------------------------

QPEX_BATCH = {n for n in MC.QPEX if n.startswith("wr_") and n != "wr_start"}
# Posting needs a connected QP: these run on one moved to RTS first.
NEEDS_RTS = {"post_send", "post_recv", "post_send_batch", "post_recv_batch", "bind_mw"}
NEEDS_RTS |= {"wr_complete"}
# CQEx's poll session needs a completion: a send on a QP of the CQEx.
NEEDS_COMPLETION = {"poll", "poll_count", "start_poll", "next_poll", "end_poll"}
NEEDS_COMPLETION |= {f"read_{f}" for f in MC.CQEX_FIELDS.split()} | {"read_tm_info"}


def to_rts(w, qp):
    qp.to_init(PORT, 0)
    qp.to_rtr(w.info, GID_INDEX)
    qp.to_rts(0)


def cqx_completion(w):
    """Two signaled sends on a QP of the CQEx (the double completes them at
    once); the poll methods but start_poll run inside a session."""
    qp = w.keep(w.pd.create_qp(ib.QPInitAttr(send_cq=w.cqx, recv_cq=w.cq)))
    to_rts(w, qp)
    sig = ib.SendFlags.SIGNALED
    qp.post_send([ib.SendWR(wr_id=i, sg_list=[w.sge], send_flags=sig) for i in (7, 8)])


def table_prelude(w, tname, name):
    """What must run before a table method's valid call (outside the log)."""
    if tname in ("QP", "QPEx") and name in NEEDS_RTS:
        to_rts(w, w.qp if tname == "QP" else w.qpx)
    if tname == "QPEx" and name in QPEX_BATCH:
        w.qpx.wr_start()
        if name.startswith("wr_set_") or name == "wr_complete":
            w.qpx.wr_send()
        if name == "wr_complete":
            w.qpx.wr_set_sge(w.mr.lkey, w.mr.addr, 8)
    if tname == "CQEx" and name in NEEDS_COMPLETION:
        cqx_completion(w)
        if name not in ("start_poll", "poll", "poll_count"):
            w.cqx.start_poll()
    if tname == "CQEx" and name == "next_poll":
        pass


class C:
    """A call made ready: the C function or method and its arguments, so
    that the harness calls it from its own frame (an allocation failure
    then lands in the C core, not in a Python frame between)."""

    def __init__(self, fn, *args, **kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs


def spec_call(spec, obj, name, w):
    """A misuse table's valid call (misuse_core.M.call) made ready."""
    args, kwargs, by_kw = [], {}, False
    for p in spec.params:
        if p.valid is OMIT:
            by_kw = True  # after a parameter left out, the rest by keyword
            continue
        if p.kw or by_kw:
            kwargs[p.name] = p.value(w)
        else:
            args.append(p.value(w))
    return C(getattr(obj, name) if name else obj, *args, **kwargs)


class Method:
    """One public method: its label, what it needs first (setup(w), outside
    the log: a value for invoke), and its valid call made ready
    (invoke(w, value) -> C)."""

    def __init__(self, label, setup, invoke):
        self.label, self.setup, self.invoke = label, setup, invoke

    def call(self, w, state):
        c = self.invoke(w, state)
        return c.fn(*c.args, **c.kwargs)


def fresh_each(label):
    t, _, n = label.partition(".")
    return (t == "QPEx" and n.startswith("wr_")) or t == "CQEx"


def from_table(tname, attr, n, spec):
    def setup(w):
        table_prelude(w, tname, n)

    return Method(f"{tname}.{n}", setup, lambda w, _: spec_call(spec, getattr(w, attr), n, w))


def _xrcd(w):
    return w.keep(w.ctx.open_xrcd(fd=-1, oflags=os.O_CREAT))


def _wq(w):
    return w.keep(w.ctx.create_wq(w.pd, w.cq))


def _dm(w):
    return w.keep(w.ctx.alloc_dm(4096))


def _buf(w):
    return w.keep(w.pd.alloc_buf(4096))


def _cntr(w):
    return w.keep(w.ctx.create_comp_cntr())


def _counters(w):
    return w.keep(w.ctx.create_counters())


def _esp(w):
    return w.keep(w.ctx.create_flow_action_esp(ib.FlowActionESPAttr(spi=1)))


def _null_fd(w):
    return os.open(os.devnull, os.O_RDWR)


def _rts_qp(w):
    to_rts(w, w.qp)
    return w.qp


def _send_chain(w):
    to_rts(w, w.qp)
    return ib.SendWRChain([ib.SendWR(wr_id=i, sg_list=[w.sge]) for i in (1, 2)])


def _recv_chain(w):
    to_rts(w, w.qp)
    return ib.RecvWRChain([ib.RecvWR(wr_id=i, sg_list=[w.sge]) for i in (1, 2)])


def _send_batch(w):
    to_rts(w, w.qp)
    loc = array.array("Q", [0, 8])
    rem = array.array("Q", [w.mr.addr, w.mr.addr + 8])
    return ib.SendBatch(w.mr, loc, 8, rem, w.mr.rkey)


def _recv_batch(w):
    to_rts(w, w.qp)
    return ib.RecvBatch(w.mr, array.array("Q", [0, 8]), 8)


def _esp_attr():
    return ib.FlowActionESPAttr(spi=2)


# The methods the misuse tables give no valid call of (an argument that
# only the double can make: an XRCD, a WQ, a DM, a Buf, a completion
# counter), and the methods of the objects those factories make.
EXTRA = [
    Method("Context.open_qp", _xrcd, lambda w, x: C(w.ctx.open_qp, x, 1, ib.QPType.XRC_RECV)),
    Method("Context.create_rwq_ind_table", _wq, lambda w, q: C(w.ctx.create_rwq_ind_table, [q])),
    Method("Context.import_device", _null_fd, lambda w, fd: C(ib.Context.import_device, fd)),
    # an XRC SRQ: ibv_create_srq_ex (a basic one is ibv_create_srq)
    Method(
        "Context.create_srq_ex(XRC)",
        _xrcd,
        lambda w, x: C(w.ctx.create_srq_ex, w.pd, srq_type=ib.SRQType.XRC, xrcd=x, cq=w.cq),
    ),
    Method(
        "PD.reg_dm_mr", _dm, lambda w, d: C(w.pd.reg_dm_mr, d, 0, 64, ib.AccessFlags.ZERO_BASED)
    ),
    Method("PD.reg_buf_mr", _buf, lambda w, b: C(w.pd.reg_buf_mr, b, b.addr, 64)),
    Method("QP.attach_comp_cntr", _cntr, lambda w, c: C(w.qp.attach_comp_cntr, c, 1)),
    Method("DM.copy_to", _dm, lambda w, d: C(d.copy_to, 0, b"abcd")),
    Method("DM.copy_from", _dm, lambda w, d: C(d.copy_from, 0, 4)),
    Method("DM.export_dmabuf_fd", _dm, lambda w, d: C(d.export_dmabuf_fd)),
    Method("Buf.export_dmabuf_fd", _buf, lambda w, b: C(b.export_dmabuf_fd)),
    *(
        Method(f"CompCntr.{n}", _cntr, lambda w, c, n=n, a=a: C(getattr(c, n), *a))
        for n, a in (("set", (1,)), ("set_err", (1,)), ("inc", (1,)), ("inc_err", (1,)))
        + (("read", ()), ("read_err", ()))
    ),
    Method("Counters.attach_point_flow", _counters, lambda w, c: C(c.attach_point_flow, 0, 0)),
    Method("Counters.read", _counters, lambda w, c: C(c.read, 1)),
    Method("FlowAction.modify_esp", _esp, lambda w, f: C(f.modify_esp, _esp_attr())),
    Method("WQ.modify", _wq, lambda w, q: C(q.modify, wq_state=1)),
    Method("WQ.post_recv", _wq, lambda w, q: C(q.post_recv, w.rwr)),
    Method("SendBatch.post", _send_batch, lambda w, b: C(b.post, w.qp)),
    Method("RecvBatch.post", _recv_batch, lambda w, b: C(b.post, w.qp)),
    Method("RecvBatch.post(SRQ)", _recv_batch, lambda w, b: C(b.post, w.srq)),
    Method("QP.post_send(chain)", _send_chain, lambda w, ch: C(w.qp.post_send, ch)),
    Method("QP.post_recv(chain)", _recv_chain, lambda w, ch: C(w.qp.post_recv, ch)),
    Method("SendBatch.update", _send_batch, lambda w, b: C(b.update, lkey=w.mr.lkey)),
    Method("SendBatch.progress", _send_batch, lambda w, b: C(b.progress, w.qp)),
    Method("SendBatch.reset", _send_batch, lambda w, b: C(b.reset)),
    Method("RecvBatch.progress", _recv_batch, lambda w, b: C(b.progress, w.qp)),
    Method("RecvBatch.reset", _recv_batch, lambda w, b: C(b.reset)),
    Method("SendWRChain.release", lambda w: None, lambda w, _: C(ib.SendWRChain([w.swr]).release)),
    Method("RecvWRChain.release", lambda w: None, lambda w, _: C(ib.RecvWRChain([w.rwr]).release)),
    Method("WC.raise_for_status", lambda w: None, lambda w, _: C(ib.WC(wr_id=1).raise_for_status)),
    # libibverbs' string and rate helpers (no failure channel), and the
    # module's own
    *(
        Method(n, lambda w: None, lambda w, _, n=n, a=a: C(getattr(ib._ibverbs, n), *a))
        for n, a in (
            ("wc_status_str", (5,)),
            ("event_type_str", (1,)),
            ("node_type_str", (1,)),
            ("port_state_str", (4,)),
            ("rate_to_mbps", (7,)),
            ("rate_to_mult", (3,)),
            ("mbps_to_ibv_rate", (10000,)),
            ("mult_to_ibv_rate", (4,)),
            ("flow_label_to_udp_sport", (1,)),
            ("inc_rkey", (0x1234,)),
            ("has_rdmacm", ()),
        )
    ),
    Method("get_device_list", lambda w: None, lambda w, _: C(ib.get_device_list)),
    Method("Device.open", lambda w: None, lambda w, _: C(ib.Device("fake0").open)),
    Method("fork_init", lambda w: None, lambda w, _: C(ib.fork_init)),
    Method("is_fork_initialized", lambda w: None, lambda w, _: C(ib.is_fork_initialized)),
]


def methods():
    out = []
    for tname, (attr, table) in MC.DEVICE_METHODS.items():
        cls = getattr(ib, tname)
        for n, spec in table.items():
            if isinstance(spec, D):
                spec = spec.bind(declared_name(cls, n))
            out.append(from_table(tname, attr, n, spec))
    for n, spec in MC.UD_METHODS.items():
        out.append(
            Method(f"UD QP.{n}", lambda w: None, lambda w, _, n=n, s=spec: spec_call(s, w.ud, n, w))
        )
    for fn, spec in MC.declared_functions("fake0"):
        out.append(
            Method(fn.__name__, lambda w: None, lambda w, _, f=fn, s=spec: spec_call(s, f, None, w))
        )
    # EXTRA's call replaces a table's that stops at an argument
    extra = {m.label for m in EXTRA}
    return [m for m in out if m.label not in extra] + EXTRA


# ---------------------------------------------------------------------------
# Worlds
# ---------------------------------------------------------------------------

WORLD_CLOSE = "cm_cq cm_pd cmid listener cqx mw1 mw ah qpx ud qp srq mr cq_ch cq ch pd ctx".split()


class FIWorld(World):
    """The misuse World on the double's fake0 (and its librdmacm: a
    resolved CMID with a PD and CQ of its Context, a listener), with what
    a case adds (``keep``), closed first."""

    def __init__(self):
        super().__init__("fake0")
        self.extra = []

    def keep(self, obj):
        self.extra.append(obj)
        return obj


def new_world():
    return FIWorld()


def handles(value):
    """The handles in a method's result (an object, or a list/tuple)."""
    if isinstance(value, (list, tuple)):
        return [h for v in value for h in handles(v)]
    if hasattr(value, "close") and hasattr(value, "closed"):
        return [value]
    return []


def close_all(w, made=()):
    """Close what the calls returned, what the case added, then the World
    (an open batch or poll session ended first)."""
    for end in (lambda: w.qpx.wr_abort(), lambda: w.cqx.end_poll()):
        try:
            end()
        except (ib.VerbsError, ValueError):
            pass
    for h in [*made][::-1] + w.extra[::-1]:
        h.close()
    for a in WORLD_CLOSE:
        getattr(w, a).close()


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------


def outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - judged by the caller
        return None, e


def describe(e):
    return None if e is None else f"{type(e).__name__}: {e}"[:300]


def judge_failure(label, verb, err, exc, value):
    """'' when the injected failure gave what it must, else why not."""
    doc = DOCUMENTED.get((label, verb, err), DOCUMENTED.get((label, verb, "*")))
    if doc == "ok":
        return "" if exc is None else f"documented to succeed, raised {describe(exc)}"
    if doc is not None:
        err = doc
    elif err == NO_ERRNO:
        err = fallback(label.removesuffix(" close").removesuffix(" dealloc"), verb)
    if exc is None:
        return f"returned {value!r:.120} where VerbsError({E.errorcode[err]}) was expected"
    if not isinstance(exc, ib.VerbsError):
        return f"{describe(exc)} is no VerbsError"
    if exc.errno != err:
        return f"errno {exc.errno}, injected {err}: {exc}"
    named = NESTED.get(label, verb)
    if named not in str(exc):
        return f"the message does not name {named}: {exc}"
    if "Success" in str(exc):
        return f"the message reads errno 0: {exc}"
    return ""


class Runner:
    def __init__(self, fake):
        self.fake = fake
        self.baseline = fake.live()
        self.made = {}  # label -> the types its valid call returned
        self.learned_exc = {}  # label -> its valid call's exception or None
        self.kept = []  # Worlds left open on purpose (inject_dealloc)

    def leak_check(self):
        """'' or the objects left beyond the baseline (then the new one)."""
        gc.collect()
        live = self.fake.live()
        if live == self.baseline:
            return ""
        why = f"{live - self.baseline} live objects left: {self.fake.live_report()}"
        self.baseline = live
        return why

    def finish(self, w, made, why, got):
        """A case's end: close what it made and the World, count what is
        left; (why, leak, got)."""
        try:
            close_all(w, made)
        except Exception as e:  # noqa: BLE001
            why = why or f"closing after the failure: {describe(e)}"
        return why, self.leak_check(), got

    def learn(self, m):
        """(verbs of the valid call, its exception or None, its handles,
        verbs of closing them)."""
        f = self.fake
        w = new_world()
        state = m.setup(w)
        f.clear()
        value, exc = outcome(lambda: m.call(w, state))
        verbs = [r.verb for r in f.take()]
        hs = handles(value)
        self.made[m.label] = [type(h).__name__ for h in hs]
        self.learned_exc[m.label] = exc
        f.clear()
        close_verbs = []
        for h in hs[::-1]:
            h.close()
        close_verbs = [r.verb for r in f.take()]
        close_all(w)
        self.leak_check()
        return verbs, exc, hs and [type(h).__name__ for h in hs], close_verbs

    def inject_call(self, m, verb, nth, err, learned_exc):
        f = self.fake
        w = new_world()
        state = m.setup(w)
        f.fail_nth(verb, err, nth)
        value, exc = outcome(lambda: m.call(w, state))
        f.fail_clear()
        why = judge_failure(m.label, verb, err, exc, value)
        made = handles(value)
        # still usable: the same valid call, nothing armed, does what it
        # did (in a World of its own where the first one changed state)
        if m.label in SETUP_AGAIN:
            state = m.setup(w)
        again, exc2 = outcome(lambda: m.call(w, state))
        made += handles(again)
        if not why and type(exc2) is not type(learned_exc):
            why = (
                f"the call after the failure: {describe(exc2)}, first run: {describe(learned_exc)}"
            )
        return self.finish(w, made, why, describe(exc))

    def inject_close(self, m, verb, nth, err):
        """The k-th call of closing the valid call's objects fails: the
        close raises, the object stays open, a second close succeeds."""
        f = self.fake
        w = new_world()
        hs = handles(m.call(w, m.setup(w)))
        f.fail_nth(verb, err, nth)
        exc = None
        for h in hs[::-1]:
            _, exc = outcome(h.close)
            if exc is not None:
                break
        f.fail_clear()
        why = judge_failure(m.label + " close", verb, err, exc, None)
        if not why and not any(not h.closed for h in hs):
            why = "every object is closed after its close failed"
        return self.finish(w, hs, why, describe(exc))

    def inject_dealloc(self, m, verb, nth, err):
        """The valid call's objects dropped without close(), the k-th call
        of their destroy failing: reported as unraisable (a VerbsError of
        that errno naming the verb), no crash.  The kernel object stays
        (the process owns it), and with it what it holds: its CQs and
        channel refuse to close (EBUSY).  That World is kept as it is, so
        no later collection changes the next case's count."""
        f = self.fake
        w = new_world()
        hs = handles(m.call(w, m.setup(w)))
        caught = []
        hook, sys.unraisablehook = sys.unraisablehook, lambda u: caught.append(u.exc_value)
        try:
            f.fail_nth(verb, err, nth)
            del hs[:]
            gc.collect()
        finally:
            f.fail_clear()
            sys.unraisablehook = hook
        exc = caught[0] if caught else None
        why = judge_failure(m.label + " dealloc", verb, err, exc, None)
        if not why and len(caught) > 1:
            why = f"{len(caught)} errors reported: {[describe(e) for e in caught]}"
        for a in WORLD_CLOSE:
            try:
                getattr(w, a).close()
            except ib.VerbsError as e:
                if e.errno != E.EBUSY:
                    why = why or f"closing the rest: {describe(e)}"
        self.kept.append(w)
        gc.collect()
        self.baseline = f.live()
        return why, "", describe(exc)

    def learn_world_close(self):
        """[(attribute, verbs of its close)] for closing a World."""
        f = self.fake
        w = new_world()
        out = []
        for a in WORLD_CLOSE:
            f.clear()
            getattr(w, a).close()
            out.append((a, [r.verb for r in f.take()]))
        self.leak_check()
        return out

    def inject_world_close(self, attr, verb, nth, err):
        """Closing the World, the k-th call of closing w.<attr> fails: that
        close raises, the object stays open and usable, a second close
        succeeds, and the rest of the World closes."""
        f = self.fake
        w = new_world()
        i = WORLD_CLOSE.index(attr)
        for a in WORLD_CLOSE[:i]:
            getattr(w, a).close()
        obj = getattr(w, attr)
        f.fail_nth(verb, err, nth)
        _, exc = outcome(obj.close)
        f.fail_clear()
        why = judge_failure(f"{type(obj).__name__}.close", verb, err, exc, None)
        if not why and obj.closed:
            why = "closed after its close failed"
        if not why:
            _, exc2 = outcome(lambda: repr(obj) and obj.close())
            why = "" if exc2 is None else f"the second close: {describe(exc2)}"
        try:
            for a in WORLD_CLOSE[i + 1 :]:
                getattr(w, a).close()
        except Exception as e:  # noqa: BLE001
            why = why or f"closing the rest: {describe(e)}"
        return why, self.leak_check(), describe(exc)

    def inject_alloc(self, m, learned_exc):
        """Each allocation of the valid call in turn fails (CPython's
        _testcapi.set_nomemory(k, k + 1), the k-th from the call's start):
        MemoryError or what the call does without it, never another
        exception or a crash; nothing leaked once all is closed.  Stops
        after three calls in a row that no failure changed."""
        import _testcapi

        sys._getframe()  # this frame's object exists before any failure
        w = new_world()
        state = m.setup(w)
        made, problems, failed, streak = [], [], 0, 0
        for k in range(ALLOC_MAX):
            if m.label in FRESH_EACH or fresh_each(m.label):
                close_all(w, made)
                made, w = [], new_world()
                state = m.setup(w)
            c = m.invoke(w, state)
            fn, args, kwargs = c.fn, c.args, c.kwargs
            # A FlowAttr goes in as its bytes (create_flow takes either):
            # its to_bytes is pure Python, and CPython 3.13 itself crashes
            # (SIGSEGV) in it under set_nomemory, with no C of ours on the
            # stack; the failures here are aimed at the C core.
            args = tuple(a.to_bytes() if isinstance(a, ib.FlowAttr) else a for a in args)
            _testcapi.set_nomemory(k, k + 1)
            try:
                value, exc = fn(*args, **kwargs), None
            except BaseException as e:  # noqa: BLE001 - judged below
                value, exc = None, e
            finally:
                _testcapi.remove_mem_hooks()
            made += handles(value)
            if isinstance(exc, MemoryError):
                failed, streak = failed + 1, 0
            elif type(exc) is type(learned_exc):
                streak += 1
            else:
                problems.append(f"allocation {k}: {describe(exc)}")
                streak = 0
            exc = None
            if streak == 3:
                break
        else:
            problems.append(f"still failing after {ALLOC_MAX} allocations")
        return self.finish(w, made, "; ".join(problems[:3]), f"MemoryError {failed} times")


def counted(verbs):
    """(verb, k): the k-th call of each verb in the log, the ones with a
    failure channel only."""
    seen = {}
    for v in verbs:
        k = seen[v] = seen.get(v, -1) + 1
        if v not in NO_FAILURE:
            yield v, k


def cases(fake):
    """(label, fn) for every case, in a fixed order."""
    r = Runner(fake)
    out = []
    for m in methods():
        verbs, exc, made, close_verbs = r.learn(m)
        for v, k in counted(verbs):
            for err in injected(v):
                label = f"{m.label} | {v}#{k} | {errname(err)}"
                fn = lambda m=m, v=v, k=k, err=err, x=exc: r.inject_call(m, v, k, err, x)  # noqa: E731
                out.append((m.label, v, label, fn))
        for v, k in counted(close_verbs):
            for err in injected(v):
                label = f"{m.label} -> {'+'.join(made)}.close | {v}#{k} | {errname(err)}"
                fn = lambda m=m, v=v, k=k, err=err: r.inject_close(m, v, k, err)  # noqa: E731
                out.append((f"{'+'.join(made)}.close", v, label, fn))
                label = f"{m.label} -> {'+'.join(made)} dropped | {v}#{k} | {errname(err)}"
                fn = lambda m=m, v=v, k=k, err=err: r.inject_dealloc(m, v, k, err)  # noqa: E731
                out.append((f"{'+'.join(made)}.__del__", v, label, fn))
    for m in methods() if can_fail_allocations() else ():
        if m.label in r.learned_exc:
            fn = lambda m=m: r.inject_alloc(m, r.learned_exc[m.label])  # noqa: E731
            out.append((m.label, "PyMem", f"{m.label} | allocation | MemoryError", fn))
    for attr, verbs in r.learn_world_close():
        for v, k in counted(verbs):
            for err in injected(v):
                label = f"World.{attr}.close | {v}#{k} | {errname(err)}"
                fn = lambda a=attr, v=v, k=k, err=err: r.inject_world_close(a, v, k, err)  # noqa: E731
                out.append((f"World.{attr}.close", v, label, fn))
    return r, out


def public_methods():
    """Type.method for every public method of every type of the C core
    (``ibverbs._ibverbs``), and its module functions."""
    mod = ib._ibverbs
    out = set()
    for tname in dir(mod):
        cls = getattr(mod, tname)
        if not isinstance(cls, type) or tname.startswith("_"):
            continue
        for n, v in vars(cls).items():
            if not n.startswith("_") and callable(v) and not isinstance(v, type):
                out.add(f"{tname}.{n}")
    for n in dir(mod):
        v = getattr(mod, n)
        if not n.startswith("_") and callable(v) and not isinstance(v, type):
            out.add(n)
    return out


def reached_by_name(label):
    """The public method a case label reaches ("UD QP.post_send" is
    QP.post_send; "QP.post_send(chain)" too)."""
    label = label.split("(")[0].replace("UD QP.", "QP.")
    return {"Context": "Context.__new__", "Device.open": "Device.open"}.get(label, label)


def coverage(fake):
    """{"reached": [...], "unreached": {name: reason or None}}: every
    public method, whether a case ran it (and so failed each call it
    makes), else why not (NOT_REACHED) or None."""
    r, all_cases = cases(fake)
    reached = {reached_by_name(m) for m, *_ in all_cases}
    # every method run, whether or not its calls can fail
    reached |= {reached_by_name(m.label) for m in methods()}
    # a close reached: of a World's object or of a factory's result
    reached |= {f"{t}.close" for made in r.made.values() for t in made}
    for m, *_ in all_cases:
        if m.endswith(".close"):
            obj = m.split(" ")[0].removesuffix(".close")
            if obj.startswith("World."):
                reached.add(f"{type(getattr(new_world(), obj[6:])).__name__}.close")
            for t in obj.split("+"):
                reached.add(f"{t}.close")
    gc.collect()
    unreached = {}
    for name in sorted(public_methods() - reached):
        why = NOT_REACHED.get(name) or NOT_REACHED.get(name.split(".")[0] + ".*")
        unreached[name] = why
    return {"reached": sorted(reached), "unreached": unreached}


def main(argv):
    fake = recording.Fake(os.environ["IBVERBS_LIBIBVERBS"])
    if argv[1] == "coverage":
        print(json.dumps(coverage(fake)))
        return
    if argv[1] == "learn":
        r = Runner(fake)
        for m in methods():
            verbs, exc, made, close_verbs = r.learn(m)
            print(json.dumps([m.label, verbs, describe(exc), made, close_verbs]))
        return
    chunk, nchunks = int(argv[1]), int(argv[2])
    start = int(argv[argv.index("--start") + 1]) if "--start" in argv else 0
    r, all_cases = cases(fake)
    print(json.dumps({"total": len(all_cases)}), flush=True)
    mine = [c for i, c in enumerate(all_cases) if i % nchunks == chunk]
    for i, (method, verb, label, fn) in enumerate(mine):
        if i < start:
            continue
        print(f"BEGIN {i} {label}", flush=True)
        try:
            why, leak, got = fn()
        except Exception:  # noqa: BLE001 - a case's own machinery failed
            why, leak, got = "the case raised: " + traceback.format_exc()[-800:], "", None
        why = "; ".join(x for x in (why, leak) if x)
        rec = {"i": i, "name": label, "method": method, "verb": verb, "ok": not why}
        rec.update(why=why, exc=(got or "").split(":")[0] or None, msg=got)
        print(json.dumps(rec), flush=True)
    print(f"DONE {len(mine)}", flush=True)
    # The Worlds inject_dealloc kept hold kernel objects that cannot be
    # destroyed: their refusals at exit are expected, not news.
    sys.unraisablehook = lambda unraisable: None


if __name__ == "__main__":
    main(sys.argv)
