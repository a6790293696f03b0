"""``python -m ibverbs info`` on the recording double (tests/fakes/recording/):
the text and JSON output of its two devices, fake0 (RoCE) and fake1 (IB),
and the exit code of an unknown device.  No sysfs entry exists for the
double's devices: the GID types come from ibv_query_gid_ex."""

from __future__ import annotations

import errno
import json


def _main(recording, *argv, fail=()):
    """main(argv) in the double's child, the failures in fail armed first
    ((verb, errno, skip) for the double's fail_nth)."""

    def body(fake, argv, fail):
        import contextlib
        import io

        from ibverbs.__main__ import main

        for verb, err, skip in fail:
            fake.fail_nth(verb, err, skip)

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
        return [rc, out.getvalue(), err.getvalue()]

    return recording.run(body, list(argv), [list(f) for f in fail])


def test_info_json_of_one_device(recording):
    res = _main(recording, "info", "--json", "-d", "fake0")
    rc, text, err = res.ok()
    assert (rc, err) == (0, "")
    doc = json.loads(text)
    assert set(doc) == {"ibverbs", "libibverbs", "rdmacm", "devices"}
    assert "available" in doc["rdmacm"]
    (dev,) = doc["devices"]
    qd = res.calls("query_device")
    assert dev["name"] == "fake0" and dev["phys_port_cnt"] >= 1
    assert len(qd) == 1
    (port,) = dev["ports"][:1]
    assert port["link_layer"] == "ETHERNET" and port["state"] == "ACTIVE"
    # GIDs 0 and 1 are set on fake0 (the rest ENODATA, skipped); no sysfs:
    # the type from ibv_query_gid_ex
    assert [(g["index"], g["type"], g["ndev"]) for g in port["gids"]] == [
        (0, "RoCE v2", None),
        (1, "RoCE v2", None),
    ]
    assert port["gids"][1]["gid"] == "::ffff:192.0.2.1"
    assert len(res.calls("query_gid_ex")) == 2


def test_info_text_of_every_device(recording):
    rc, text, err = _main(recording, "info").ok()
    assert (rc, err) == (0, "")
    lines = text.splitlines()
    assert lines[0].startswith("ibverbs ") and ", libibverbs " in lines[0]
    assert lines[1].startswith("connection manager: ")
    assert [ln for ln in lines if ln.startswith("hca_id:")] == ["hca_id: fake0", "hca_id: fake1"]
    assert "\t\t\tlink_layer:\tINFINIBAND" in lines
    gids = [ln.strip() for ln in lines if ln.strip().startswith("GID[")]
    assert gids[1] == "GID[  1]:\t::ffff:192.0.2.1  (RoCE v2)"
    assert gids[2].endswith("(IB)")  # fake1's GID 0


def test_info_of_an_unknown_device_is_exit_code_1(recording):
    rc, text, err = _main(recording, "info", "-d", "nosuch").ok()
    assert (rc, text) == (1, "")
    assert err.startswith("error: ") and "nosuch" in err


def test_info_skips_a_gid_it_cannot_read_and_a_type_it_cannot_query(recording):
    fail = [("query_gid", errno.EIO, 0), ("query_gid_ex", errno.EINVAL, 0)]
    rc, text, err = _main(recording, "info", "--json", "-d", "fake0", fail=fail).ok()
    assert (rc, err) == (0, "")
    (port,) = json.loads(text)["devices"][0]["ports"][:1]
    # GID 0 unreadable: left out; GID 1's type unknown: None
    assert [(g["index"], g["type"]) for g in port["gids"]] == [(1, None)]
