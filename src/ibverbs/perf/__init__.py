"""perftest-style benchmarks from Python: ``python -m ibverbs perf``.

    python -m ibverbs perf write_bw -d rxe0 -x 1 --loopback -s 8 -n 100000
    python -m ibverbs perf write_bw -d rxe0 -x 1 --loopback -a --json
    python -m ibverbs perf send_lat -d mlx5_0 -x 3            # server
    python -m ibverbs perf send_lat -d mlx5_0 -x 3 SERVER     # client

Like perftest, a server and a client exchange their QP information (and
the buffer's address and rkey) over TCP, then the client drives the test:
``write_bw``, ``read_bw`` and ``send_bw`` measure bandwidth and message
rate, ``write_lat`` and ``send_lat`` latency (one-way, half the round
trip, as perftest reports it; ``rtt_us`` is the whole round trip).
``--loopback`` forks the server as a child process on 127.0.0.1 (both
ends on one device).  ``-s`` takes one size or a list (``8,64,4K,1M``),
``-a`` sweeps 8 B to 1 MiB; one connection serves every size.

Posting for the bandwidth tests (perftest's scheme): WRs are posted while
fewer than ``--tx-depth`` are outstanding; by default every WR is posted
alone and signaled.  ``--post-list N`` posts chained lists of N WRs with
one ``post_send`` call, only the last one signaled; ``--cq-mod M`` signals
every M-th WR (both: M must be a multiple of N, like perftest, which sets
M = N).  Completions are reaped with ``CQ.poll_count`` (the
zero-allocation path); with several QPs, ``CQ.poll`` attributes each
completion to its QP by ``wc.qp_num``.

The hot loops bind methods to locals, reuse the same WR objects (they hold
their native ``ibv_send_wr``, so posting converts nothing) and count
posts in WRs, like perftest.

The package: ``options`` (the options that depend on each other,
PerfError), ``loops`` (the Endpoint and the measurement loops),
``session`` (the server, the client and the control connection between
them, ``ibverbs._oob``'s messages), ``report`` (the text and JSON output)
and ``cli`` (the argument parser, ``cmd_perf``, ``run``).
"""

from __future__ import annotations

from .cli import add_parser, cmd_perf, parse_size, parse_sizes, run
from .loops import Endpoint
from .options import BW_TESTS, SWEEP, TESTS, PerfError, check_args, iters_for, unit_of
from .report import format_header, format_result
from .session import run_client, run_loopback, run_server

__all__ = [
    "BW_TESTS",
    "SWEEP",
    "TESTS",
    "Endpoint",
    "PerfError",
    "add_parser",
    "check_args",
    "cmd_perf",
    "format_header",
    "format_result",
    "iters_for",
    "parse_size",
    "parse_sizes",
    "run",
    "run_client",
    "run_loopback",
    "run_server",
    "unit_of",
]
