"""`python -m ibverbs perf` argument handling, on the host (no device):
the server host may come after the options, as with perftest; bad
combinations are refused with PerfError before anything is opened."""

import argparse
import subprocess
import sys

import pytest

from ibverbs import perf
from ibverbs.perf import PerfError
from ibverbs.perf.options import parse_cpus


def parse(*argv):
    parser = argparse.ArgumentParser(prog="python -m ibverbs")
    perf.add_parser(parser.add_subparsers(dest="cmd", required=True))
    return parser.parse_args(["perf", *argv])


def test_server_after_the_options():
    a = parse("write_bw", "-d", "rxe0", "-s", "8,4K", "10.0.0.2")
    assert (a.test, a.server, a.device) == ("write_bw", "10.0.0.2", "rxe0")
    assert a.sizes == [8, 4096]


def test_server_before_the_options_and_none():
    assert parse("send_lat", "host1", "-n", "10").server == "host1"
    assert parse("read_bw", "-d", "rxe0").server is None


def test_unknown_test_is_refused():
    with pytest.raises(SystemExit):
        parse("write_bandwidth")


@pytest.mark.parametrize("text,want", [("0,1", (0, 1)), ("3, 7", (3, 7)), (None, None), ("", None)])
def test_cpus(text, want):
    assert parse_cpus(text) == want


@pytest.mark.parametrize("text", ["1", "0,1,2", "a,b", "0;1"])
def test_bad_cpus(text):
    with pytest.raises(PerfError, match="--cpus wants SERVER,CLIENT"):
        parse_cpus(text)


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["-l", "3", "--cq-mod", "4"], "multiple of --post-list"),
        (["--cq-mod", "64", "-t", "32"], "must not exceed --tx-depth"),
        (["-l", "0"], "must be >= 1"),
    ],
)
def test_bad_combinations(argv, msg):
    a = parse("write_bw", "-d", "rxe0", *argv)
    with pytest.raises(PerfError, match=msg):
        perf.check_args(a)


def test_latency_tests_use_one_qp():
    with pytest.raises(PerfError, match="one QP"):
        perf.check_args(parse("send_lat", "-d", "rxe0", "-q", "2"))


def test_run_needs_a_server_or_loopback():
    with pytest.raises(PerfError, match="give a server or --loopback"):
        perf.run(["write_bw", "-d", "rxe0"])


def test_info_does_not_import_perf():
    """`python -m ibverbs info` leaves the perftest-style tool unimported;
    `perf` still finds its parser."""
    code = (
        "import sys\n"
        "from ibverbs.__main__ import main\n"
        "rc = main(['info', '--json'])\n"
        "assert 'ibverbs.perf' not in sys.modules, 'info imported perf'\n"
        "try:\n"
        "    main(['perf', '--help'])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0\n"
        "assert 'ibverbs.perf' in sys.modules\n"
        "print('RC', rc)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "RC 0" in res.stdout


def test_qp_timeout_is_perftests_u_within_its_5_bits():
    assert parse("write_bw", "-u", "18").qp_timeout == 18
    assert parse("write_bw").qp_timeout == 14
    with pytest.raises(SystemExit):
        parse("write_bw", "-u", "32")
