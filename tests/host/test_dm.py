"""Device memory against the recording double (tests/fakes/recording/):
alloc, copy and register, and failures naming the verb.  A check of what the
binding hands libibverbs and what it makes of the answers, not evidence that
a provider runs the verbs.  rxe refuses it:
tests/device/test_dm_device.py."""

from __future__ import annotations

import errno

from ibverbs import enums


def test_device_memory_alloc_copy_and_register(recording):
    def body(fake):
        import ibverbs
        from ibverbs import enums

        access = enums.AccessFlags.ZERO_BASED | enums.AccessFlags.LOCAL_WRITE
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            with ctx.alloc_dm(4096, log_align_req=6) as dm:
                dm.copy_to(8, b"hello, dm!!!")
                back = dm.copy_from(8, 12)
                with pd.reg_dm_mr(dm, 64, 1024, access) as mr:
                    keys = [mr.lkey, mr.rkey, mr.length]
        return {"back": back.hex(), "keys": keys}

    res = recording.run(body)
    v = res.ok()
    assert bytes.fromhex(v["back"]) == b"hello, dm!!!"
    a = res.one("alloc_dm")
    assert a.prefixed("attr.") == {"length": 4096, "log_align_req": 6, "comp_mask": 0}
    to, frm = res.one("memcpy_to_dm"), res.one("memcpy_from_dm")
    assert (to["dm_offset"], to["length"], to["data"]) == (8, 12, b"hello, dm!!!")
    assert (frm["dm_offset"], frm["length"]) == (8, 12)
    reg = res.one("reg_dm_mr")
    assert reg["dm"] == to["dm"] == frm["dm"]
    assert (reg["dm_offset"], reg["length"]) == (64, 1024)
    access = enums.AccessFlags.ZERO_BASED | enums.AccessFlags.LOCAL_WRITE
    assert reg["access"] == int(access)
    assert reg["pd"] == res.one("dealloc_pd")["pd"]
    assert v["keys"][2] == 1024 and v["keys"][0] == v["keys"][1] != 0
    assert res.one("free_dm")["dm"] == to["dm"]
    assert res.verbs().index("dereg_mr") < res.verbs().index("free_dm")
    assert res.live == 0, res.live_report


def test_device_memory_failures_name_the_verb(recording):
    def body(fake):
        import errno

        import ibverbs

        out = []
        with ibverbs.Context("fake0") as ctx:
            fake.fail("alloc_dm", errno.ENOMEM)
            try:
                ctx.alloc_dm(4096)
            except ibverbs.VerbsError as e:
                out.append([e.errno, e.operation])
            with ctx.alloc_dm(4096) as dm:
                fake.fail("memcpy_to_dm", errno.EIO)
                try:
                    dm.copy_to(0, b"abcd")
                except ibverbs.VerbsError as e:
                    out.append([e.errno, e.operation])
        return out

    res = recording.run(body)
    assert res.ok() == [
        [errno.ENOMEM, "ibv_alloc_dm"],
        [errno.EIO, "ibv_memcpy_to_dm"],
    ]
    assert res.live == 0, res.live_report


def test_device_memory_attributes_ranges_and_data_types(recording):
    def body(fake):
        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            dm = ctx.alloc_dm(256, log_align_req=3)
            out["attrs"] = [dm.length, dm.log_align_req, dm.handle, dm.imported]
            out["repr"] = repr(dm)
            out["ctx"] = dm.context is ctx
            fake.clear()
            dm.copy_to(4, bytearray(b"from a bytearray"))
            dm.copy_to(0, b"")  # nothing to copy: no verb
            out["empty"] = dm.copy_from(16, 0) == b""
            took = fake.take()
            out["verbs"] = [r.verb for r in took]
            out["data"] = [took[0]["dm_offset"], took[0]["data"].hex()]
            for call in (
                lambda: dm.copy_to(250, b"too long"),
                lambda: dm.copy_from(200, 57),
                lambda: dm.copy_from(257, 0),
                lambda: pd.reg_dm_mr(dm, 128, 129, 0),
                lambda: dm.copy_to(0, memoryview(b"x")),
                lambda: dm.copy_to(0, "text"),
            ):
                try:
                    call()
                except (ValueError, TypeError) as e:
                    out.setdefault("errors", []).append([type(e).__name__, str(e)])
            out["after"] = [r.verb for r in fake.take()]
            dm.close()
            out["closed"] = [repr(dm), dm.length, dm.log_align_req]
            try:
                dm.handle
            except ibverbs.VerbsError as e:
                out["handle"] = e.errno
        return out

    res = recording.run(body)
    out = res.ok()
    # the double's handles are ids from 0x100 up
    assert out["attrs"][:2] == [256, 3] and out["attrs"][3] is False
    assert out["attrs"][2] >= 0x100
    assert out["repr"] == "<ibverbs.DM length=256>"
    assert out["ctx"] is True
    assert out["empty"] is True
    assert out["verbs"] == ["memcpy_to_dm"]
    assert out["data"] == [4, b"from a bytearray".hex()]
    beyond = "offset {} + length {} is beyond the DM's 256 bytes"
    assert out["errors"] == [
        ["ValueError", beyond.format(250, 8)],
        ["ValueError", beyond.format(200, 57)],
        ["ValueError", beyond.format(257, 0)],
        ["ValueError", beyond.format(128, 129)],
        ["TypeError", "data must be bytes or bytearray, not <class 'memoryview'>"],
        ["TypeError", "data must be bytes or bytearray, not <class 'str'>"],
    ]
    assert out["after"] == []  # refused before any verb
    assert out["closed"] == ["<ibverbs.DM closed>", 256, 3]
    assert out["handle"] == errno.EBADF
    assert res.live == 0, res.live_report
