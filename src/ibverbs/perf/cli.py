"""The ``python -m ibverbs perf`` command line: its options, ``cmd_perf``
(what the subcommand runs) and ``run`` (the same from Python)."""

from __future__ import annotations

import argparse
import socket
import sys

import ibverbs as ib

from .options import BW_TESTS, SWEEP, TESTS, PerfError, check_args
from .report import printer
from .session import run_client, run_loopback, run_server


def parse_size(text: str) -> int:
    """Bytes from ``"64"``, ``"4K"``, ``"1M"``, ``"1G"`` (a trailing ``B``
    allowed), for argparse.

    Raises:
        argparse.ArgumentTypeError: not a size, or outside 1 B .. 1 GiB.
    """
    t = text.strip().upper().rstrip("B")
    mult = 1
    if t and t[-1] in "KMG":
        mult = 1 << {"K": 10, "M": 20, "G": 30}[t[-1]]
        t = t[:-1]
    try:
        n = int(t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {text!r}") from None
    if not 1 <= n <= 1 << 30:
        raise argparse.ArgumentTypeError(f"size {text!r} out of 1 B .. 1 GiB")
    return n


def parse_sizes(text: str) -> list[int]:
    """The sizes of a comma-separated list (``"64,4K,1M"``), for argparse.

    Raises:
        argparse.ArgumentTypeError: as ``parse_size``.
    """
    return [parse_size(s) for s in text.split(",") if s.strip()]


def complete(args) -> None:
    """Defaults that depend on other arguments."""
    if args.device is None:
        devs = ib.get_device_list()
        if not devs:
            raise PerfError("no RDMA device")
        args.device = devs[0].name
    if args.all:
        args.sizes = list(SWEEP)
    elif args.sizes is None:
        args.sizes = [65536 if args.test in BW_TESTS else 8]


def run(argv: list[str]) -> list[dict]:
    """Run the client side (or, with --loopback, both sides) of a perf test
    from Python and return the results, one dict per size: what --json
    prints.  ``run(["write_bw", "-d", "rxe0", "-x", "1", "--loopback"])``."""
    parser = argparse.ArgumentParser(prog="python -m ibverbs")
    add_parser(parser.add_subparsers(dest="cmd", required=True))
    args = parser.parse_args(["perf", *argv])
    complete(args)
    if args.server is None and not args.loopback:
        raise PerfError("run() drives a client: give a server or --loopback")
    check_args(args)
    return run_loopback(args) if args.loopback else run_client(args)


def cmd_perf(args) -> int:
    """``python -m ibverbs perf``: the server, the client, or both over
    loopback; prints text or JSON lines.  Returns the exit code: 1 with a
    message for a PerfError, a failed completion, a lost connection or a
    timeout; other errors (VerbsError) propagate.
    """
    try:
        complete(args)
        if getattr(args, "server_only", False) or (args.server is None and not args.loopback):
            return run_server(args)
        check_args(args)
        emit = printer(args)
        if args.loopback:
            run_loopback(args, emit)
        else:
            run_client(args, emit)
    except (PerfError, ib.CompletionError, ConnectionError, TimeoutError, socket.timeout) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


class _IntermixedParser(argparse.ArgumentParser):
    """Like perftest, the server name comes last, after the options: a
    plain parser takes both positionals from the first run of them
    (``write_bw``) and rejects the host at the end."""

    _nested = False

    def parse_known_args(self, args=None, namespace=None):
        """argparse's, taking positionals intermixed with options."""
        if self._nested:
            return super().parse_known_args(args, namespace)
        self._nested = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._nested = False


def add_parser(sub) -> None:
    """Add the ``perf`` subcommand and its options to ``sub``."""
    p = sub.add_parser(
        "perf",
        help="perftest-style benchmarks (bandwidth, message rate, latency)",
        description="perftest-style benchmarks; see the ibverbs.perf docstring",
    )
    p.__class__ = _IntermixedParser
    p.add_argument("test", choices=TESTS)
    p.add_argument("server", nargs="?", help="server host (client mode)")
    p.add_argument("-d", "--device", help="device (default: the first one)")
    p.add_argument("-i", "--ib-port", type=int, default=1)
    p.add_argument("-x", "--gid-index", type=int, default=0)
    p.add_argument(
        "-s",
        "--size",
        dest="sizes",
        type=parse_sizes,
        help="message size or comma-separated sizes, e.g. 8,4K,1M "
        "(default 65536 for bandwidth, 8 for latency)",
    )
    p.add_argument(
        "-a", "--all", action="store_true", help="sweep the sizes 8 B .. 1 MiB (powers of two)"
    )
    p.add_argument(
        "-n",
        "--iters",
        type=int,
        default=5000,
        help="messages per QP (bandwidth) or round trips (latency)",
    )
    p.add_argument(
        "--max-bytes",
        type=parse_size,
        default=0,
        help="cap iterations at this many bytes per size (sweeps)",
    )
    p.add_argument(
        "-t", "--tx-depth", type=int, default=128, help="WRs outstanding per QP (default 128)"
    )
    p.add_argument(
        "-r",
        "--rx-depth",
        type=int,
        default=512,
        help="receives kept posted per QP (send_bw; default 512)",
    )
    p.add_argument("-q", "--qps", type=int, default=1)
    p.add_argument(
        "-l",
        "--post-list",
        type=int,
        default=1,
        help="WRs per post_send call, chained; the last is signaled",
    )
    p.add_argument(
        "--cq-mod", type=int, default=1, help="signal every N-th WR (default 1: every one)"
    )
    p.add_argument(
        "-I",
        "--inline",
        type=int,
        default=0,
        help="max inline data; sizes up to it are sent INLINE",
    )
    p.add_argument(
        "-u",
        "--qp-timeout",
        type=int,
        default=14,
        choices=range(32),
        metavar="T",
        help="this side's RC QPs' local ACK timeout, 4.096 us * 2**T (default 14: 67 ms), "
        "as perftest's -u",
    )
    p.add_argument("-p", "--port", type=int, default=18515, help="TCP port")
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="give up after this many seconds without progress",
    )
    p.add_argument(
        "--loopback", action="store_true", help="fork the server as a child process on 127.0.0.1"
    )
    p.add_argument(
        "--cpus",
        metavar="SERVER,CLIENT",
        help="with --loopback: pin the server and the client to "
        "these CPUs (taskset for the two ends)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per size, one per line")
    p.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_perf)
