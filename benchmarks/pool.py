#!/usr/bin/env python3
"""Pool the samples of several compare.py runs (their compare.json files):
for each case, ours / C and pyverbs / C of the medians in each run and of
all samples together, with the target judged as compare.py judges it
(compare.Case: the same medians, ratios and target test).

    python3 benchmarks/pool.py benchmarks/results/2026-11-29/targets-*/compare.json

Pool only runs of the same code: a case whose code path changed between
runs is a different measurement.
"""

from __future__ import annotations

import json
import sys

from compare import Case


def as_case(doc: dict, samples: dict) -> Case:
    return Case(
        doc["key"],
        doc["title"],
        doc["metric"],
        c=None,
        ours=None,
        target=doc.get("target"),
        samples=samples,
    )


def fmt(case: Case) -> str:
    def r(impl):
        x = case.median_ratio(impl)
        return "-" if x is None else f"{x:.2f}x"

    met = case.met()
    verdict = "" if met is None else (" met" if met else " MISSED")
    return f"ours/C {r('ours')}{verdict}, pyverbs/C {r('pyverbs')}"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    pooled: dict[str, tuple[dict, list, dict]] = {}
    for path in argv:
        with open(path) as f:
            for doc in json.load(f)["cases"]:
                first, runs, merged = pooled.setdefault(
                    doc["key"], (doc, [], {"c": [], "ours": [], "pyverbs": []})
                )
                runs.append((path, as_case(doc, doc["samples"])))
                for impl, samples in doc["samples"].items():
                    merged.setdefault(impl, []).extend(samples)
    for first, runs, merged in pooled.values():
        total = as_case(first, merged)
        sense = ">=" if total.higher_is_better else "<="
        print(f"{total.title} (target {sense} {total.target})")
        for path, case in runs:
            print(f"  {path}: {fmt(case)} (n={len(case.samples.get('ours', []))})")
        n = {impl: len(v) for impl, v in merged.items()}
        print(f"  pooled: {fmt(total)} (n={n})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
