"""The recording double of libibverbs itself (tests/fakes/recording/):
it loads in place of libibverbs, answers as a provider would, logs each
call, injects failures and counts live objects.  The field-by-field checks
of the binding are in the host test file of each object (test_mr.py, ...)."""

from __future__ import annotations

import ctypes
import errno

import ibverbs


def test_the_double_exports_every_optional_verb_the_binding_knows(recording):
    # Required verbs are checked by every run (the import would fail).
    lib = ctypes.CDLL(recording.lib)
    missing = [name for name in ibverbs.optional_verbs if not hasattr(lib, name)]
    assert missing == [], f"add recorders for {missing} (tests/fakes/recording/README.md)"


def test_open_query_and_close_with_the_log_and_no_leak(recording):
    def body(fake):
        import ibverbs

        names = [d.name for d in ibverbs.get_device_list()]
        with ibverbs.Context("fake0") as ctx:
            port = ctx.query_port(1)
            dev = ctx.query_device()
            with ctx.alloc_pd() as pd:
                inside = fake.live_report()
                pd_handle = pd.handle if hasattr(pd, "handle") else None
        return {
            "names": names,
            "state": int(port.state),
            "link_layer": int(port.link_layer),
            "gid_tbl_len": port.gid_tbl_len,
            "fw_ver": dev.fw_ver,
            "max_qp": dev.max_qp,
            "inside": inside,
            "pd_handle": pd_handle,
        }

    res = recording.run(body)
    res.ok()
    v = res.value
    assert v["names"] == ["fake0", "fake1"]
    assert (v["state"], v["link_layer"], v["gid_tbl_len"]) == (4, 2, 4)  # ACTIVE, Ethernet
    assert (v["fw_ver"], v["max_qp"]) == ("1.2.3", 1024)
    assert "context=1" in v["inside"] and "pd=1" in v["inside"]
    assert res.one("open_device")["device"] == "fake0"
    q = res.one("query_port")
    assert q["port_num"] == 1 and q["port_attr_len"] > 0  # the verbs_context op
    pd = res.one("alloc_pd")
    assert pd["context"] != 0
    assert res.one("dealloc_pd")["pd"] != 0
    assert res.verbs().index("dealloc_pd") < res.verbs().index("close_device")
    assert res.live == 0, res.live_report


def test_injected_failure_is_a_verbs_error_naming_the_verb(recording):
    def body(fake):
        import errno

        import ibverbs

        fake.fail("alloc_pd", errno.ENOMEM)
        with ibverbs.Context("fake0") as ctx:
            try:
                ctx.alloc_pd()
            except ibverbs.VerbsError as e:
                first = [e.errno, e.operation]
            else:
                first = None
            with ctx.alloc_pd():  # once: the next call succeeds
                pass
        return first

    res = recording.run(body)
    res.ok()
    assert res.value == [12, "ibv_alloc_pd"]
    calls = res.calls("alloc_pd")
    assert [c.get("injected_errno") for c in calls] == [12, None]
    assert res.live == 0, res.live_report


def test_a_post_and_poll_loop_completes_every_work_request(recording):
    def body(fake):
        import ctypes

        import ibverbs
        from ibverbs import enums

        out = []
        buf = ctypes.create_string_buffer(4096)
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            mr = pd.reg_mr(ctypes.addressof(buf), len(buf), enums.AccessFlags.LOCAL_WRITE)
            cq = ctx.create_cq(64)
            qp = pd.create_qp(ibverbs.QPInitAttr(cq, cq, max_send_wr=16, max_recv_wr=16))
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.INIT)
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.RTR)
            qp.modify(enums.QPAttrMask.STATE, qp_state=enums.QPState.RTS)
            for i in range(100):
                qp.post_recv(ibverbs.RecvWR(wr_id=2 * i, sg_list=[mr.sge(64)]))
                qp.post_send(
                    ibverbs.SendWR(
                        wr_id=2 * i + 1,
                        sg_list=[mr.sge(32)],
                        send_flags=enums.SendFlags.SIGNALED,
                    )
                )
                out += [(wc.wr_id, int(wc.opcode), wc.byte_len) for wc in cq.poll(4)]
            qp.close()
            cq.close()
            mr.close()
        return out

    res = recording.run(body)
    res.ok()
    recv, send = int(ibverbs.WCOpcode.RECV), int(ibverbs.WCOpcode.SEND)
    want = []
    for i in range(100):
        want += [(2 * i, recv, 64), (2 * i + 1, send, 32)]
    assert [tuple(x) for x in res.value] == want
    assert len(res.calls("post_send")) == len(res.calls("post_recv")) == 100
    assert res.live == 0, res.live_report


def test_injected_failures_raise_verbs_error_and_leak_nothing(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import enums

        out = []

        def expect(verb, err, call):
            fake.fail(verb, err)
            try:
                call()
            except ibverbs.VerbsError as e:
                out.append([verb, e.errno, e.operation])
            else:
                out.append([verb, "no error"])

        expect("open_device", errno.ENODEV, lambda: ibverbs.Context("fake0"))
        with ibverbs.Context("fake0") as ctx:
            expect("create_cq", errno.ENOMEM, lambda: ctx.create_cq(8))
            expect("create_comp_channel", errno.EMFILE, ctx.create_comp_channel)
            with ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
                expect("reg_mr", errno.EFAULT, lambda: pd.reg_mr(0x1000, 64, 0))
                expect("create_qp", errno.EINVAL, lambda: pd.create_qp(ibverbs.QPInitAttr(cq)))
                expect("create_srq", errno.ENOSYS, pd.create_srq)
                with pd.create_qp(ibverbs.QPInitAttr(cq)) as qp:
                    expect("modify_qp", errno.EINVAL, lambda: qp.to_init(1))
                    qp.to_init(1)
                    qp.to_rtr(ibverbs.QPInfo(1, 0, 0, bytes(16), 1, 3), sgid_index=0)
                    qp.to_rts()
                    wrs = [ibverbs.SendWR(i, [ibverbs.SGE(0x1000, 8, 1)]) for i in (1, 2)]
                    expect("post_send", errno.ENOMEM, lambda: qp.post_send(wrs))
                    expect("post_recv", errno.ENOMEM, lambda: qp.post_recv(ibverbs.RecvWR(1)))
                    expect("poll_cq", errno.EIO, lambda: cq.poll(1))
                    expect("query_qp", errno.EIO, qp.query)
                fake.fail("destroy_cq", errno.EBUSY)
                c2 = ctx.create_cq(4)
                try:
                    c2.close()
                except ibverbs.VerbsError as e:
                    out.append(["destroy_cq", e.errno, e.operation, c2.closed])
                c2.close()  # the retry frees it
            expect("query_port", errno.EIO, lambda: ctx.query_port(1))
        return [out, int(enums.QPState.RTS)]

    res = recording.run(body)
    out, _ = res.ok()
    assert out == [
        ["open_device", errno.ENODEV, "ibv_open_device"],
        ["create_cq", errno.ENOMEM, "ibv_create_cq"],
        ["create_comp_channel", errno.EMFILE, "ibv_create_comp_channel"],
        ["reg_mr", errno.EFAULT, "ibv_reg_mr"],
        ["create_qp", errno.EINVAL, "ibv_create_qp"],
        ["create_srq", errno.ENOSYS, "ibv_create_srq"],
        ["modify_qp", errno.EINVAL, "ibv_modify_qp"],
        ["post_send", errno.ENOMEM, "ibv_post_send"],
        ["post_recv", errno.ENOMEM, "ibv_post_recv"],
        ["poll_cq", errno.EIO, "ibv_poll_cq"],
        ["query_qp", errno.EIO, "ibv_query_qp"],
        ["destroy_cq", errno.EBUSY, "ibv_destroy_cq", False],
        ["query_port", errno.EIO, "ibv_query_port"],
    ]
    assert res.live == 0, res.live_report
