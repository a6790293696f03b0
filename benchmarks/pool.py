#!/usr/bin/env python3
"""Pool the samples of several compare.py runs (their compare.json files):
for each case, ours / C and pyverbs / C of the medians in each run and of
all samples together, with the target judged as compare.py judges it.

    python3 benchmarks/pool.py benchmarks/results/2026-11-29/targets-*/compare.json

Pool only runs of the same code: a case whose code path changed between
runs is a different measurement.
"""

from __future__ import annotations

import json
import statistics
import sys


def medians(case: dict) -> dict:
    m = case["metric"]
    return {impl: [s[m] for s in samples if m in s]
            for impl, samples in case["samples"].items()}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    pooled: dict[str, dict] = {}
    for path in argv:
        with open(path) as f:
            for case in json.load(f)["cases"]:
                p = pooled.setdefault(case["key"], {"case": case, "runs": [],
                                                    "all": {}})
                vals = medians(case)
                p["runs"].append((path, vals))
                for impl, v in vals.items():
                    p["all"].setdefault(impl, []).extend(v)
    for key, p in pooled.items():
        case = p["case"]
        lower = case["metric"].endswith("_us")
        target = case.get("target")

        def ratio(vals: dict, impl: str):
            if not vals.get("c") or not vals.get(impl):
                return None
            return statistics.median(vals[impl]) / statistics.median(vals["c"])

        def fmt(r, judge=True):
            if r is None:
                return "-"
            if not judge:
                return f"{r:.2f}x"
            ok = "" if target is None else (
                " met" if (r <= target if lower else r >= target) else " MISSED")
            return f"{r:.2f}x{ok}"
        print(f"{case['title']} (target {'<=' if lower else '>='} {target})")
        for path, vals in p["runs"]:
            print(f"  {path}: ours/C {fmt(ratio(vals, 'ours'))}, pyverbs/C "
                  f"{fmt(ratio(vals, 'pyverbs'), False)} (n={len(vals.get('ours', []))})")
        n = {impl: len(v) for impl, v in p["all"].items()}
        print(f"  pooled: ours/C {fmt(ratio(p['all'], 'ours'))}, pyverbs/C "
              f"{fmt(ratio(p['all'], 'pyverbs'), False)} (n={n})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
