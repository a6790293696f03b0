"""`ibverbs.perf` end to end on the recording double (tests/fakes/recording/):
the loopback server forked, the control connection on 127.0.0.1, the
client's loops posting to fake0.  The double completes every WR at once
and moves no bytes, so the figures mean nothing; what is checked is what
the loops post (the client's log: opcodes, flags, lengths, QPs, how many
WRs per call) and the results' fields.  write_lat waits for bytes the
double never writes: its timeout is the check.  On a device:
tests/device/test_perf*.py."""

from __future__ import annotations

import json

from ibverbs import SendFlags, WROpcode

SIGNALED, INLINE = int(SendFlags.SIGNALED), int(SendFlags.INLINE)


def _run(recording, *argv):
    """ibverbs.perf.run(argv + loopback on a free port) in the child;
    the results, or the PerfError's message."""

    def body(fake, argv):
        import socket

        from ibverbs.perf import PerfError
        from ibverbs.perf.cli import run

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            return {"results": run([*argv, "-d", "fake0", "--loopback", "-p", str(port)])}
        except PerfError as e:
            return {"error": str(e)}

    return recording.run(body, list(argv))


def _posts(res):
    """Each post_send call of the client: (qp_num, [(opcode, flags, length)])."""
    out = []
    for r in res.calls("post_send"):
        wrs = [
            (r[f"wr[{i}].opcode"], r[f"wr[{i}].send_flags"], r[f"wr[{i}].sg_list[0].length"])
            for i in range(r["count"])
        ]
        out.append((r["qp_num"], wrs))
    return out


def test_write_bw_chains_post_list_wrs_and_signals_every_cq_mod(recording):
    res = _run(recording, "write_bw", "-n", "8", "-s", "4K", "-l", "2", "--cq-mod", "4")
    out = res.ok()
    (r,) = out["results"]
    assert (r["test"], r["size"], r["msgs"], r["iters"]) == ("write_bw", 4096, 8, 8)
    assert (r["post_list"], r["cq_mod"], r["qps"], r["device"]) == (2, 4, 1, "fake0")
    assert r["MBps"] > 0 and r["msg_rate"] > 0
    posts = _posts(res)
    assert len(posts) == 4 and len({qp for qp, _ in posts}) == 1
    w = int(WROpcode.RDMA_WRITE)
    # a unit of 4 WRs is two chains of 2; only the unit's last WR is signaled
    assert [wrs for _, wrs in posts] == [
        [(w, 0, 4096), (w, 0, 4096)],
        [(w, 0, 4096), (w, SIGNALED, 4096)],
    ] * 2
    first = res.calls("post_send")[0]
    assert first["wr[0].wr.rdma.rkey"] == first["wr[0].sg_list[0].lkey"]


def test_read_bw_over_two_qps_and_two_sizes(recording):
    res = _run(recording, "read_bw", "-q", "2", "-n", "4", "-s", "64,128", "-I", "64")
    out = res.ok()
    assert [(r["size"], r["msgs"], r["qps"]) for r in out["results"]] == [(64, 8, 2), (128, 8, 2)]
    posts = _posts(res)
    assert len(posts) == 16 and len({qp for qp, _ in posts}) == 2
    rd = int(WROpcode.RDMA_READ)
    # reads are never inline, each signaled (cq_mod 1); the sizes in turn
    assert [wrs for _, wrs in posts] == [[(rd, SIGNALED, 64)]] * 8 + [[(rd, SIGNALED, 128)]] * 8


def test_send_bw_inline_up_to_the_inline_size(recording):
    res = _run(recording, "send_bw", "-n", "3", "-s", "32,128", "-I", "64")
    out = res.ok()
    assert [(r["size"], r["msgs"], r["inline"]) for r in out["results"]] == [
        (32, 3, 64),
        (128, 3, 64),
    ]
    s = int(WROpcode.SEND)
    assert [wrs for _, wrs in _posts(res)] == [[(s, SIGNALED | INLINE, 32)]] * 3 + [
        [(s, SIGNALED, 128)]
    ] * 3
    # an inline send: the double copies its bytes (the cleared slot), no rkey
    send = res.calls("post_send")[0]
    assert send["wr[0].sg_list[0].data"] == bytes(32)
    assert "wr[0].wr.rdma.rkey" not in send


def test_send_lat_keeps_one_receive_posted(recording):
    res = _run(recording, "send_lat", "-n", "5", "-s", "16")
    out = res.ok()
    (r,) = out["results"]
    assert (r["test"], r["size"], r["iters"], r["cq_mod"]) == ("send_lat", 16, 5, 1)
    assert r["rtt_us"] == 2 * r["lat_us"] > 0
    s = int(WROpcode.SEND)
    assert [wrs for _, wrs in _posts(res)] == [[(s, SIGNALED, 16)]] * 5
    # the first receive, then one repost after each reply but the last
    recvs = res.calls("post_recv")
    assert len(recvs) == 5
    assert {(x["count"], x["wr[0].sg_list[0].length"]) for x in recvs} == {(1, 16)}


def test_sweep_caps_iterations_by_max_bytes(recording):
    res = _run(recording, "write_bw", "-a", "-n", "100", "--max-bytes", "4K")
    out = res.ok()
    got = [(r["size"], r["iters"]) for r in out["results"]]
    assert got == [(1 << i, min(100, max(16, 4096 >> i))) for i in range(3, 21)]


def test_write_lat_times_out_without_the_peers_write(recording):
    res = _run(recording, "write_lat", "-n", "3", "--timeout", "0.2")
    out = res.ok()
    assert "write_lat size 8: no progress before the timeout" in out["error"]
    # the client wrote once and waited for the answer that never came
    assert len(res.calls("post_send")) == 1
    assert res.one("post_send")["wr[0].opcode"] == int(WROpcode.RDMA_WRITE)


def test_run_needs_a_server_or_loopback_and_the_cli_prints_text(recording):
    def body(fake):
        import socket
        import subprocess
        import sys

        from ibverbs.perf import PerfError
        from ibverbs.perf.cli import run

        out = {}
        try:
            run(["write_bw", "-d", "fake0"])
        except PerfError as e:
            out["run"] = str(e)
        perf = [sys.executable, "-m", "ibverbs", "perf"]
        bad = subprocess.run(
            [*perf, "write_bw", "-d", "fake0", "-l", "2", "--cq-mod", "3", "--loopback"],
            capture_output=True,
            text=True,
        )
        out["bad"] = [bad.returncode, bad.stdout, bad.stderr]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
        ok = subprocess.run(
            [*perf, "send_lat", "-n", "4", "-s", "8,16", "--loopback", "-p", port],
            capture_output=True,
            text=True,
        )
        out["ok"] = [ok.returncode, ok.stdout.splitlines(), ok.stderr]
        return out

    out = recording.run(body).ok()
    assert out["run"] == "run() drives a client: give a server or --loopback"
    assert out["bad"] == [1, "", "error: --cq-mod must be a multiple of --post-list\n"]
    rc, lines, err = out["ok"]
    assert (rc, err) == (0, ""), err
    assert lines[0].split() == ["test", "bytes", "iters", "t_avg[us]", "rtt[us]"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["send_lat", "8", "4"],
        ["send_lat", "16", "4"],
    ]


def _served(recording, *argv):
    """The server as its own process (python -m ibverbs perf, server mode:
    it exits normally, so its coverage counts), the client here with
    ibverbs.perf.run(argv + the server)."""

    def body(fake, argv):
        import os
        import socket
        import subprocess
        import sys

        from ibverbs.perf import PerfError
        from ibverbs.perf.cli import run

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
        r, w = os.pipe()
        server = subprocess.Popen(
            [sys.executable, "-m", "ibverbs", "perf", argv[0], "-d", "fake0"]
            + ["-p", port, "--ready-fd", str(w)],
            pass_fds=[w],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.close(w)
        ready = os.read(r, 2)
        os.close(r)
        try:
            results = run([*argv, "-d", "fake0", "-p", port, "127.0.0.1"])
        except PerfError as e:
            results = {"error": str(e)}
        out, err = server.communicate(timeout=60)
        return {"ready": ready.decode(), "results": results, "server": [server.returncode, err]}

    return recording.run(body, list(argv))


def test_send_bw_against_a_server_process_over_two_qps(recording):
    res = _served(recording, "send_bw", "-q", "2", "-n", "5", "-s", "64", "-r", "4")
    out = res.ok()
    assert out["ready"] == "ok" and out["server"] == [0, ""]
    (r,) = out["results"]
    assert (r["test"], r["qps"], r["msgs"], r["size"]) == ("send_bw", 2, 10, 64)
    posts = _posts(res)
    assert len({qp for qp, _ in posts}) == 2
    assert [wrs for _, wrs in posts] == [[(int(WROpcode.SEND), SIGNALED, 64)]] * 10


def test_send_bw_and_send_lat_against_a_server_process(recording):
    bw = _served(recording, "send_bw", "-n", "6", "-s", "8,32", "-r", "2").ok()
    assert bw["server"] == [0, ""]
    assert [(r["size"], r["msgs"]) for r in bw["results"]] == [(8, 6), (32, 6)]
    lat = _served(recording, "send_lat", "-n", "3", "-s", "8").ok()
    assert lat["server"] == [0, ""]
    assert [(r["test"], r["iters"]) for r in lat["results"]] == [("send_lat", 3)]
    rd = _served(recording, "read_bw", "-n", "2", "-s", "8").ok()
    assert rd["server"] == [0, ""] and rd["results"][0]["msgs"] == 2


def test_a_server_refuses_options_the_client_did_not_check(recording):
    """The server checks the client's options again and sends its error
    back: the client raises PerfError with the server's message."""

    def body(fake):
        import os
        import socket
        import subprocess
        import sys

        from ibverbs import _oob
        from ibverbs.perf import PerfError
        from ibverbs.perf.session import recv_msg

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        r, w = os.pipe()
        cmd = [sys.executable, "-m", "ibverbs", "perf", "write_lat", "-d", "fake0"]
        server = subprocess.Popen(
            [*cmd, "-p", str(port), "--ready-fd", str(w)],
            pass_fds=[w],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.close(w)
        os.read(r, 2)
        os.close(r)
        out = {}
        with _oob.connect("127.0.0.1", port, timeout=30, retry=False) as conn:
            cfg = {"test": "write_lat", "qps": 2, "tx_depth": 8, "rx_depth": 8}
            cfg.update({"post_list": 1, "cq_mod": 1, "inline": 0, "sizes": [8]})
            cfg.update({"iters": 1, "max_bytes": 0, "timeout": 5.0})
            _oob.send(conn, cfg)
            try:
                recv_msg(conn)
            except PerfError as e:
                out["client"] = str(e)
        _, err = server.communicate(timeout=60)
        out["server"] = [server.returncode, err]
        return out

    out = recording.run(body).ok()
    assert out["client"] == "peer: the latency tests use one QP"
    assert out["server"] == [1, "error: the latency tests use one QP\n"]


def test_write_lat_server_times_out_without_the_clients_write(recording):
    out = _served(recording, "write_lat", "-n", "2", "--timeout", "0.2").ok()
    # the double moves no bytes: the server waits for the client's write,
    # the client for the server's; each side gives up after the timeout
    assert out["results"] == {
        "error": "write_lat size 8: no progress before the timeout (iteration 0)"
    }
    rc, err = out["server"]
    assert rc == 1
    assert err == "error: write_lat size 8: no progress before the timeout (iteration 0)\n"


def test_cli_bw_text_json_lines_and_size_errors(recording):
    def body(fake):
        import socket
        import subprocess
        import sys

        def port():
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                return str(s.getsockname()[1])

        perf = [sys.executable, "-m", "ibverbs", "perf"]
        out = {}
        for key, argv in (
            ("text", ["write_bw", "-n", "4", "-s", "64,128", "--loopback", "-p", port()]),
            ("json", ["read_bw", "-n", "2", "-s", "1K", "--json", "--loopback", "-p", port()]),
            ("bad", ["write_bw", "-s", "4X"]),
            ("big", ["write_bw", "-s", "2G"]),
        ):
            p = subprocess.run([*perf, *argv], capture_output=True, text=True, timeout=120)
            out[key] = [p.returncode, p.stdout.splitlines(), p.stderr.splitlines()[-1:]]
        return out

    out = recording.run(body).ok()
    rc, lines, err = out["text"]
    assert (rc, err) == (0, [])
    assert lines[0].split() == ["test", "bytes", "msgs", "K", "msg/s", "MB/s"]
    assert [ln.split()[:3] for ln in lines[1:]] == [
        ["write_bw", "64", "4"],
        ["write_bw", "128", "4"],
    ]
    rc, lines, err = out["json"]
    assert (rc, err) == (0, [])
    (doc,) = [json.loads(ln) for ln in lines]
    assert (doc["test"], doc["size"], doc["msgs"], doc["device"]) == ("read_bw", 1024, 2, "fake0")
    assert out["bad"][0] == 2 and "bad size '4X'" in out["bad"][2][0]
    assert out["big"][0] == 2 and "size '2G' out of 1 B .. 1 GiB" in out["big"][2][0]


def test_qp_timeout_goes_to_each_sides_rts(recording):
    """-u T sets the local ACK timeout of this side's QPs (ibv_modify_qp to
    RTS, attr.timeout), as perftest's -u; 14 when not given."""
    for argv, want in ((["-u", "18"], 18), ([], 14)):
        res = _run(recording, "write_bw", "-n", "4", "-s", "4K", *argv)
        res.ok()
        rts = [r for r in res.calls("modify_qp") if "attr.timeout" in r]
        assert rts and {r["attr.timeout"] for r in rts} == {want}
