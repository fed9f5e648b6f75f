#!/usr/bin/env python3
"""What the NaN guard costs a range query on a Spark-written (parquet-java) float/double table, which keeps its
statistics pruning: the same query with spark.sparkbloom.nanGuard.enabled true (the default: each file's
created_by is read once per executor and the parquet-java files are read as before) and false (the behaviour
before the guard), alternating which runs first, medians over --runs runs each. V1 (spark.read.parquet) and V2
(spark.sql.sources.useV1SourceList empty) scans. The first query of each (cold: footers not yet cached) is
reported apart (it also carries the session's warm-up for whichever mode ran first).

Usage (from the repository root, with the sparkbloom wheel installed, e.g. by dev/test):
  .venv/bin/python benchmarks/nan_guard.py [--files 40] [--rows 4000000] [--runs 15] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time

from pyspark.sql import SparkSession

import sparkbloom

GUARD = "spark.sparkbloom.nanGuard.enabled"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="sparkbloom-nanguard-")
    conf = {"spark.log.level": "WARN", "spark.ui.showConsoleProgress": "false"}
    spark: SparkSession = sparkbloom.session.local_session("nan guard", warehouse_dir=os.path.join(tmp, "wh"),
                                                          conf=conf)
    path = os.path.join(tmp, "t")
    # Sorted by d within each file, several row groups per file: a narrow range reads few row groups.
    (spark.range(0, args.rows, 1, args.files)
     .selectExpr("id", "CAST(id % 100003 AS DOUBLE) * 0.5 AS d", "CAST(id % 7919 AS FLOAT) AS f", "uuid() AS s")
     .sortWithinPartitions("d").write.option("parquet.block.size", str(1 << 20)).parquet(path))
    queries = {"d > x": "d > 50000.0D", "f >= x OR d > x": "f >= CAST('7900' AS FLOAT) OR d > 50000.0D"}
    results: dict[str, dict[str, object]] = {}
    try:
        for scan in ("v1", "v2"):
            spark.conf.set("spark.sql.sources.useV1SourceList", "parquet" if scan == "v1" else "")
            for qname, cond in queries.items():
                times: dict[str, list[float]] = {"on": [], "off": []}
                cold: dict[str, float] = {}
                for i in range(args.runs + 1):
                    order = ("on", "off") if i % 2 == 0 else ("off", "on")
                    for mode in order:
                        spark.conf.set(GUARD, "true" if mode == "on" else "false")
                        t0 = time.perf_counter()
                        n = spark.read.parquet(path).where(cond).selectExpr("sum(id)", "count(s)").collect()
                        dt = time.perf_counter() - t0
                        if i == 0:
                            cold[mode] = dt
                        else:
                            times[mode].append(dt)
                med = {m: statistics.median(v) for m, v in times.items()}
                results[f"{scan} {qname}"] = {
                    "condition": cond, "rows": n[0][1], "median_s": med, "ratio_on_off": med["on"] / med["off"],
                    "first_run_s": cold, "runs": times,
                }
                print(f"{scan} {qname:18s} on {med['on']:.3f}s off {med['off']:.3f}s "
                      f"ratio {med['on'] / med['off']:.3f} (first runs: on {cold['on']:.3f}s off {cold['off']:.3f}s)",
                      flush=True)
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
