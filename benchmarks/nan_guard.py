#!/usr/bin/env python3
"""What the NaN guard costs a range query on a Spark-written (parquet-java) float/double table, which keeps its
statistics pruning: the same query with spark.sparkbloom.nanGuard.enabled true (the default: each file's
created_by is read once per executor and the parquet-java files are read as before) and false (the behaviour
before the guard), and false again as an A/A control (what noise alone gives), the three rotating which runs first,
--runs rounds. Reported: medians, and each round's on/off ratio (paired: same warm-up, same background load) with
its median and a bootstrap 95% interval, next to the control's off2/off. V1 (spark.read.parquet) and V2
(spark.sql.sources.useV1SourceList empty) scans. The first query of each (cold: footers not yet cached) is
reported apart (it also carries the session's warm-up for whichever mode ran first).

Usage (from the repository root, with the sparkbloom wheel installed, e.g. by dev/test):
  .venv/bin/python benchmarks/nan_guard.py [--files 40] [--rows 4000000] [--runs 15] [--scans v1,v2]
      [--queries "d > x,f >= x OR d > x"] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import tempfile
import time

from pyspark.sql import SparkSession

import sparkbloom

GUARD = "spark.sparkbloom.nanGuard.enabled"
QUERIES = {"d > x": "d > 50000.0D", "f >= x OR d > x": "f >= CAST('7900' AS FLOAT) OR d > 50000.0D"}


def bootstrap_ci(xs: list[float], n: int = 4000, seed: int = 1) -> tuple[float, float]:
    """A 95% bootstrap interval of the median of xs (resampled with a fixed seed, so a rerun gives the same)."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--scans", default="v1,v2", help="comma-separated: v1, v2")
    ap.add_argument("--queries", default="d > x,f >= x OR d > x", help="comma-separated query names")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if any(s not in ("v1", "v2") for s in args.scans.split(",")):
        ap.error("--scans: a comma-separated list of v1, v2")
    if any(q not in QUERIES for q in args.queries.split(",")):
        ap.error(f"--queries: a comma-separated list of {', '.join(QUERIES)}")

    tmp = tempfile.mkdtemp(prefix="sparkbloom-nanguard-")
    conf = {"spark.log.level": "WARN", "spark.ui.showConsoleProgress": "false"}
    spark: SparkSession = sparkbloom.session.local_session("nan guard", warehouse_dir=os.path.join(tmp, "wh"),
                                                          conf=conf)
    path = os.path.join(tmp, "t")
    # Sorted by d within each file, several row groups per file: a narrow range reads few row groups.
    (spark.range(0, args.rows, 1, args.files)
     .selectExpr("id", "CAST(id % 100003 AS DOUBLE) * 0.5 AS d", "CAST(id % 7919 AS FLOAT) AS f", "uuid() AS s")
     .sortWithinPartitions("d").write.option("parquet.block.size", str(1 << 20)).parquet(path))
    results: dict[str, dict[str, object]] = {}
    try:
        for scan in args.scans.split(","):
            spark.conf.set("spark.sql.sources.useV1SourceList", "parquet" if scan == "v1" else "")
            for qname, cond in ((q, QUERIES[q]) for q in args.queries.split(",")):
                # "off2" is a second guard-off run in every round: an A/A control whose ratio to "off" shows what
                # the machine's noise alone gives.
                times: dict[str, list[float]] = {"on": [], "off": [], "off2": []}
                cold: dict[str, float] = {}
                rotations = [("on", "off", "off2"), ("off", "off2", "on"), ("off2", "on", "off")]
                n = None
                for i in range(args.runs + 1):
                    for mode in rotations[i % 3]:
                        spark.conf.set(GUARD, "true" if mode == "on" else "false")
                        t0 = time.perf_counter()
                        n = spark.read.parquet(path).where(cond).selectExpr("sum(id)", "count(s)").collect()
                        dt = time.perf_counter() - t0
                        if i == 0:
                            cold[mode] = dt
                        else:
                            times[mode].append(dt)
                assert n is not None
                med = {m: statistics.median(v) for m, v in times.items()}
                # Paired ratios: each round's guard-on time over the same round's guard-off time (same warm-up,
                # same background load), their median and a bootstrap 95% interval of that median.
                paired = [a / b for a, b in zip(times["on"], times["off"])]
                control = [a / b for a, b in zip(times["off2"], times["off"])]
                results[f"{scan} {qname}"] = {
                    "condition": cond, "rows": n[0][1], "median_s": med, "ratio_on_off": med["on"] / med["off"],
                    "paired_ratio_median": statistics.median(paired), "paired_ratio_ci95": bootstrap_ci(paired),
                    "control_ratio_median": statistics.median(control), "control_ratio_ci95": bootstrap_ci(control),
                    "first_run_s": cold, "runs": times,
                }
                lo, hi = bootstrap_ci(paired)
                print(f"{scan} {qname:18s} on {med['on']:.3f}s off {med['off']:.3f}s "
                      f"paired on/off {statistics.median(paired):.3f} [{lo:.3f}, {hi:.3f}], "
                      f"A/A off2/off {statistics.median(control):.3f} (first runs: on {cold['on']:.3f}s "
                      f"off {cold['off']:.3f}s)", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    out = {"files": args.files, "rows": args.rows, "runs": args.runs, "machine": platform.platform(),
           "cpus": os.cpu_count(), "loadavg": os.getloadavg(), "results": results}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
