"""What perf prints: a text table (a header, a line a size) or one JSON
object a line (``--json``)."""

from __future__ import annotations

import json

from .options import BW_TESTS


def format_header(test: str) -> str:
    """The header line of the text output for ``test``."""
    if test in BW_TESTS:
        return f"{'test':<10} {'bytes':>8} {'msgs':>9} {'K msg/s':>10} {'MB/s':>10}"
    return f"{'test':<10} {'bytes':>8} {'iters':>9} {'t_avg[us]':>10} {'rtt[us]':>10}"


def format_result(res: dict) -> str:
    """One result (a dict of ``run_client``) as a text line."""
    if "lat_us" in res:
        return (
            f"{res['test']:<10} {res['size']:>8} {res['iters']:>9} "
            f"{res['lat_us']:10.2f} {res['rtt_us']:10.2f}"
        )
    return (
        f"{res['test']:<10} {res['size']:>8} {res['msgs']:>9} "
        f"{res['msg_rate'] / 1e3:10.2f} {res['MBps']:10.2f}"
    )


def printer(args):
    """The ``emit`` callback of ``run_client`` for the output ``args`` ask
    for (``--json`` or text); prints the text header first."""
    if args.json:

        def emit(res):
            print(json.dumps(res), flush=True)

    else:
        print(format_header(args.test), flush=True)

        def emit(res):
            print(format_result(res), flush=True)

    return emit
