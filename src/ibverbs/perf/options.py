"""The options of a perf test that depend on each other, and the error of a
test that cannot run as asked; shared by both sides and the CLI."""

from __future__ import annotations

TESTS = ("write_bw", "read_bw", "send_bw", "write_lat", "send_lat")
BW_TESTS = ("write_bw", "read_bw", "send_bw")
SWEEP = tuple(1 << i for i in range(3, 21))  # 8 B .. 1 MiB


class PerfError(Exception):
    """A benchmark cannot run as asked (bad options, the two sides disagree); the
    CLI prints it and exits 1.
    """


def iters_for(args, size: int) -> int:
    """Iterations at this size: --iters, capped by --max-bytes (at least 16)."""
    n = args.iters
    if args.max_bytes:
        n = min(n, max(16, args.max_bytes // size))
    return max(1, n)


def unit_of(args) -> int:
    """WRs per signaled completion."""
    return max(args.post_list, args.cq_mod)


def check_args(args) -> None:
    """Check the options that depend on each other; calls no verb.

    Raises:
        PerfError: --post-list/--cq-mod/--qps/--tx-depth/--rx-depth below
            1, --cq-mod not a multiple of --post-list or above --tx-depth,
            several QPs for a latency test, or a bad --cpus list.
    """
    if args.post_list < 1 or args.cq_mod < 1:
        raise PerfError("--post-list and --cq-mod must be >= 1")
    if unit_of(args) % args.post_list:
        raise PerfError("--cq-mod must be a multiple of --post-list")
    if args.test in BW_TESTS and unit_of(args) > args.tx_depth:
        raise PerfError("--post-list and --cq-mod must not exceed --tx-depth")
    if args.qps < 1 or args.tx_depth < 1 or args.rx_depth < 1:
        raise PerfError("--qps, --tx-depth and --rx-depth must be >= 1")
    if args.test not in BW_TESTS and args.qps != 1:
        raise PerfError("the latency tests use one QP")
    parse_cpus(args.cpus)


def parse_cpus(text):
    if not text:
        return None
    try:
        server, client = (int(c) for c in text.split(","))
    except ValueError:
        raise PerfError(f"--cpus wants SERVER,CLIENT CPU numbers, got {text!r}") from None
    return server, client
