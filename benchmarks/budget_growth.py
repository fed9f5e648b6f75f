#!/usr/bin/env python3
"""The budget as a table grows through maintained writes (issue "an index that keeps up", goal 3): a table of
--start row groups is indexed, then grown --growth times over by appends of --files-per-write one-row-group files,
each append maintained by sparkbloom (on by default). At the end, the index's expected false reads per key
(DESCRIBE, from the stored filters' measured FPPs, summaries included) are compared with those of a fresh CREATE
BLOOM INDEX over the grown table (goal: within 1.5x), along with its size, segment files and versions.

Usage (from the repository root, with the sparkbloom wheel installed, e.g. by dev/test or dev/demo):
  .venv/bin/python benchmarks/budget_growth.py [--start 1000] [--growth 10] [--files-per-write 100] [--json out.json]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time

import sparkbloom
from pyspark.sql import SparkSession


def expected(d: dict) -> dict:
    return {s["column"]: s["expected_false_reads_per_key"] for s in d["column_stats"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--start", type=int, default=1000, help="row groups (one-row-group files) before growing")
    ap.add_argument("--growth", type=int, default=10, help="grow the table this many times over")
    ap.add_argument("--files-per-write", type=int, default=100)
    ap.add_argument("--rows-per-file", type=int, default=200)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="sparkbloom-growth-")
    spark: SparkSession = sparkbloom.session.local_session("budget growth", warehouse_dir=os.path.join(tmp, "wh"),
                                                          conf={"spark.log.level": "WARN"})
    path = os.path.join(tmp, "t")
    n = args.rows_per_file

    def files(first_file: int, count: int):
        return (spark.range(first_file * n, (first_file + count) * n, 1, count)
                .selectExpr("id", "uuid() AS key"))

    files(0, args.start).write.parquet(path)
    index = spark.read.parquet(path).bloomFilterIndex("id", "key", name="grown")
    start = index.describe()
    written, writes, t0 = args.start, 0, time.perf_counter()
    while written < args.start * args.growth:
        files(written, args.files_per_write).write.mode("append").parquet(path)
        written += args.files_per_write
        writes += 1
        if writes % 10 == 0:
            print(f"{written} row groups, {writes} writes, {time.perf_counter() - t0:.0f} s", flush=True)
    write_s = time.perf_counter() - t0
    # the automatic OPTIMIZE runs in the background: the grown index is described once it has finished
    getattr(spark._jvm.sparkbloom.write.BackgroundMaintenance, "await")(spark._jsparkSession, 600_000)
    grown = index.describe()
    assert grown["files_not_covered"] == 0, grown
    fresh = spark.read.parquet(path).bloomFilterIndex("id", "key", name="fresh").describe()

    def facts(d: dict) -> dict:
        return {"row_groups": d["row_groups_covered"], "expected_false_reads_per_key": expected(d),
                "size_in_bytes": d["size_in_bytes"], "segment_files": d["segment_files"],
                "versions_kept": d["versions_kept"], "layout": d["layout"]}

    ratio = {c: grown_e / expected(fresh)[c] for c, grown_e in expected(grown).items()}
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the end",
        "start_row_groups": args.start, "growth": args.growth, "files_per_write": args.files_per_write,
        "rows_per_file": n, "writes": writes, "write_seconds_total": write_s,
        "at_start": facts(start), "grown_by_writes": facts(grown), "fresh_create": facts(fresh),
        "expected_false_reads_ratio_grown_over_fresh": ratio,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
