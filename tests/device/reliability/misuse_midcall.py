"""Misuse cases where Python code runs in the middle of a call (an
attribute read, __bool__, __bytes__, a GC finalizer) and closes what the
call uses: the call must see the handle closed (EBADF), never use it
freed.  No declaration can say these: they are the objects' own code."""

from __future__ import annotations

import gc

import ibverbs as ib

from support import GID_INDEX, PORT


class Closer:
    """Closes the given handles (best effort) when triggered."""

    def __init__(self, *handles):
        self.handles = handles

    def fire(self):
        for h in self.handles:
            try:
                h.close()
            except ib.VerbsError:
                pass


class EvilBool(Closer):
    def __bool__(self):
        self.fire()
        return False


def evil_record(base, name, closer=None, **fields):
    """An object with base's fields (fields override them) whose `name`
    attribute, when read, runs closer.fire() first."""
    attrs = {
        k: getattr(base, k)
        for k in dir(base)
        if not k.startswith("_") and not callable(getattr(base, k))
    }
    attrs.update(fields)

    class Evil:
        def __getattr__(self, key):
            if key == name and closer:
                closer.fire()
            if key in attrs:
                return attrs[key]
            raise AttributeError(key)

    return Evil()


class EvilGid(bytearray):
    """16 bytes whose conversion by Gid() (bytes(value) calls __bytes__)
    closes handles."""

    def __init__(self, raw, *handles):
        super().__init__(raw)
        self.closer = Closer(*handles)

    def __bytes__(self):
        self.closer.fire()
        return bytes(bytearray(self))


def midcall_cases(cases, w, device):
    add = cases.add
    IA = ib.QPInitAttr

    def evil_init_attr(which):
        ctx = w.ctx
        pd = ctx.alloc_pd()
        cq1, cq2 = ctx.create_cq(4), ctx.create_cq(4)
        srq = pd.create_srq(max_wr=4) if which == "srq" else None
        target = {"pd": pd, "send_cq": cq1, "recv_cq": cq2, "srq": srq}[which]
        base = IA(send_cq=cq1, recv_cq=cq2, srq=srq)
        # The last attribute read_init_attr reads closes the target.
        rec = evil_record(base, "max_inline_data", Closer(target))
        return pd.create_qp(rec)

    for which in ("pd", "send_cq", "recv_cq", "srq"):
        add(
            f"create_qp: init_attr attribute closes the {which} mid-call",
            lambda which=which: evil_init_attr(which),
            "closed",
        )

    def evil_sig_all():
        pd = w.ctx.alloc_pd()
        cq = w.ctx.create_cq(4)
        return pd.create_qp(evil_record(IA(send_cq=cq), "x", None, sq_sig_all=EvilBool(cq)))

    add("create_qp: sq_sig_all.__bool__ closes the CQ", evil_sig_all, "closed")

    def evil_ah(field):
        pd = w.ctx.alloc_pd()
        return pd.create_ah(evil_record(w.ah_attr, field, Closer(pd)))

    for field in ("dgid", "is_global", "sgid_index"):
        add(f"create_ah: reading attr.{field} closes the PD", lambda f=field: evil_ah(f), "closed")

    def evil_ah_gid():
        pd = w.ctx.alloc_pd()
        return pd.create_ah(evil_record(w.ah_attr, "", None, dgid=EvilGid(w.gid.raw, pd)))

    add("create_ah: Gid(dgid) conversion closes the PD", evil_ah_gid, "closed")

    def evil_to_rtr_gid():
        cq = w.ctx.create_cq(4)
        qp = w.pd.create_qp(IA(send_cq=cq))
        qp.to_init(PORT, 0)
        remote = evil_record(w.info, "", None, gid=EvilGid(w.gid.raw, qp))
        return qp.to_rtr(remote, sgid_index=GID_INDEX, port=PORT, mtu=1)

    add("to_rtr: Gid(remote.gid) conversion closes the QP", evil_to_rtr_gid, "closed")

    def evil_req_notify():
        cq = w.ctx.create_cq(4)
        return cq.req_notify(solicited_only=EvilBool(cq))

    add("req_notify: solicited_only.__bool__ closes the CQ", evil_req_notify, "closed")

    def evil_to_rtr(field):
        cq = w.ctx.create_cq(4)
        qp = w.pd.create_qp(IA(send_cq=cq))
        qp.to_init(PORT, 0)
        remote = evil_record(w.info, field, Closer(qp))
        return qp.to_rtr(remote, sgid_index=GID_INDEX)

    for field in ("qp_num", "gid", "mtu"):
        add(
            f"to_rtr: reading remote.{field} closes the QP",
            lambda f=field: evil_to_rtr(f),
            "closed",
        )

    def evil_to_rtr_port():
        cq = w.ctx.create_cq(4)
        qp = w.pd.create_qp(IA(send_cq=cq))
        qp.to_init(PORT, 0)
        remote = evil_record(w.info, "gid", Closer(qp))
        return qp.to_rtr(remote, sgid_index=GID_INDEX, port=PORT, mtu=1)

    add("to_rtr(port=, mtu=): reading remote.gid closes the QP", evil_to_rtr_port, "closed")

    def evil_modify():
        cq = w.ctx.create_cq(4)
        qp = w.pd.create_qp(IA(send_cq=cq))
        return qp.modify(ib.QPAttrMask.AV, ah_attr=evil_record(w.ah_attr, "dgid", Closer(qp)))

    add("modify: reading ah_attr.dgid closes the QP", evil_modify, "closed")

    def evil_modify_cap():
        cq = w.ctx.create_cq(4)
        qp = w.pd.create_qp(IA(send_cq=cq))
        cap = evil_record(qp.cap, "max_inline_data", Closer(qp))
        return qp.modify(ib.QPAttrMask.CAP, cap=cap)

    add("modify: reading cap.max_inline_data closes the QP", evil_modify_cap, "closed")

    # A finalizer run by a GC pass inside a factory closes its parent.
    def gc_finalizer(factory_name):
        ctx = ib.Context(device)
        pd = ctx.alloc_pd()
        cq = ctx.create_cq(4)
        target = ctx if factory_name == "create_cq" else pd
        calls = {
            "create_cq": lambda: ctx.create_cq(4),
            "create_srq": lambda: pd.create_srq(max_wr=4),
            "create_qp": lambda: pd.create_qp(IA(send_cq=cq)),
        }
        if factory_name == "create_cq":
            cq.close()
            pd.close()
        results = []
        old = gc.get_threshold()
        try:
            for k in range(1, 40):

                class Cycle:
                    def __del__(self, t=target):
                        try:
                            t.close()
                        except ib.VerbsError:
                            pass

                c = Cycle()
                c.self = c
                del c
                gc.set_threshold(1 + k % 3)
                try:
                    obj = calls[factory_name]()
                    results.append("made")
                    obj.close()
                except ib.VerbsError as e:
                    results.append(e.errno)
                finally:
                    gc.set_threshold(*old)
                if target.closed:
                    break
        finally:
            gc.set_threshold(*old)
        return results

    for fname in ("create_cq", "create_srq", "create_qp"):
        add(
            f"{fname}: a GC finalizer closes the parent mid-call",
            lambda f=fname: gc_finalizer(f),
            "any",
        )
