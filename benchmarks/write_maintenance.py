#!/usr/bin/env python3
"""Maintenance on write: what an append to an indexed Parquet table costs, against the same append to an unindexed
one (issue "an index that keeps up": goal <= 1.15x).

Two tables of the same data: one with a bloom index on two columns (a bigint id and a UUID string), one without.
Each round appends the same --files files of --rows rows to both (order alternated per round) with
``df.write.mode("append").parquet``; the indexed table's write returns only once its index covers the new files
(checked after each round: 0 files uncovered). Median wall times over --rounds, after --warmup rounds.

With --format delta or iceberg, each indexed write is followed (outside its time) by a timing of the step that
maintenance after a commit replaced: the table listed whole, against the write's changes read from the table's log.

Usage (from the repository root, with the sparkbloom wheel installed, e.g. by dev/test or dev/demo):
  .venv/bin/python benchmarks/write_maintenance.py [--rows 2000000] [--files 8] [--rounds 5] [--json out.json]
      [--format parquet|delta|iceberg] [--table-files N]
"""
from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import sparkbloom
from pyspark.sql import SparkSession


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows per append")
    ap.add_argument("--files", type=int, default=8, help="files per append")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--native-filters", choices=["on", "off", "both"], default="on",
                    help="spark.sparkbloom.maintainOnWrite.nativeFilters: parquet-java writes the indexed columns' "
                         "bloom filters and the index harvests them (on), or the index reads the new files' columns; "
                         "both: a third table, indexed the same, is appended to with it off in the same rounds")
    ap.add_argument("--in-task", choices=["on", "off"], default="on",
                    help="spark.sparkbloom.maintainOnWrite.inTask: the write's tasks index the rows they write (on), "
                         "or the index is brought up to date after the write (off: --native-filters applies)")
    ap.add_argument("--extra-columns", type=int, default=0,
                    help="unindexed columns added to the four (half bigints, half 24-character strings): a wider "
                         "table, as event tables are")
    ap.add_argument("--format", choices=["parquet", "delta", "iceberg"], default="parquet",
                    help="the tables' format: Spark's Parquet, Delta Lake (path tables) or Iceberg (tables of a Hadoop "
                         "catalog, appended with df.writeTo); the formats' jars from target/lakehouse, as "
                         "`dev/sbt lakehouseJars` copies them; their indexes are brought up to date after the commit")
    ap.add_argument("--table-files", type=int, default=0,
                    help="grow both tables to about this many more files first (one append of that many small "
                         "files), so that a write's cost can be seen against the table's size; the indexed one's "
                         "index then covers them")
    ap.add_argument("--maintain", choices=["on", "off"], default="on",
                    help="spark.sparkbloom.maintainOnWrite.enabled (off: the control, an indexed table written as "
                         "any other; its files are then left uncovered)")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="sparkbloom-write-")
    lake: dict[str, str] = {}
    if args.format != "parquet":
        line = sparkbloom.session.line_for(*sparkbloom.session.spark_version())
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        lake = {"spark.jars": ",".join(sorted(glob.glob(os.path.join(root, "target", "lakehouse", f"spark-{line}",
                                                                     "*.jar"))))}
        if args.format == "delta":
            lake.update({"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                         "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
                         "spark.databricks.delta.snapshotPartitions": "2"})
        else:
            lake.update({"spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
                         "spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
                         "spark.sql.catalog.ice.type": "hadoop",
                         "spark.sql.catalog.ice.warehouse": os.path.join(tmp, "ice")})
    spark: SparkSession = sparkbloom.session.local_session("write maintenance", warehouse_dir=os.path.join(tmp, "wh"),
                                                          conf={**lake, "spark.log.level": "WARN",
                                                                "spark.sparkbloom.maintainOnWrite.enabled":
                                                                    str(args.maintain == "on").lower(),
                                                                "spark.sparkbloom.maintainOnWrite.inTask":
                                                                    str(args.in_task == "on").lower(),
                                                                "spark.sparkbloom.maintainOnWrite.nativeFilters":
                                                                    str(args.native_filters != "off").lower()})
    iceberg = args.format == "iceberg"
    plain, indexed = ("ice.db.plain", "ice.db.indexed") if iceberg else (os.path.join(tmp, "plain"),
                                                                         os.path.join(tmp, "indexed"))
    both = args.native_filters == "both"
    # with --native-filters both: indexed as `indexed`, its appends made with native filters off
    columns = "ice.db.columns" if iceberg else os.path.join(tmp, "columns")
    native_key = "spark.sparkbloom.maintainOnWrite.nativeFilters"

    def append(df, target: str, create: bool = False) -> None:
        if iceberg:
            w = df.writeTo(target)
            if create:
                w.using("iceberg").tableProperty("write.distribution-mode", "none").create()
            else:
                w.append()
        elif create:
            df.write.format(args.format).save(target)
        else:
            df.write.format(args.format).mode("append").save(target)

    def batch(start: int):
        extra = [f"id * {i + 11} AS n{i}" if i % 2 == 0 else f"concat('col{i}-', id % 1000003) AS s{i}"
                 for i in range(args.extra_columns)]
        return (spark.range(start, start + args.rows, 1, args.files)
                .selectExpr("id", "uuid() AS key", "id * 7 AS v", "repeat('x', 40) AS pad", *extra))

    if iceberg:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    append(batch(0), plain, create=True)
    append(batch(0), indexed, create=True)
    if both:
        append(batch(0), columns, create=True)
    if args.table_files:
        grow = (spark.range(-10 * args.table_files, 0, 1, args.table_files)
                .selectExpr("id", "uuid() AS key", "id * 7 AS v", "repeat('x', 40) AS pad",
                            *[f"id * {i + 11} AS n{i}" if i % 2 == 0 else f"concat('col{i}-', id % 1000003) AS s{i}"
                              for i in range(args.extra_columns)]))
        append(grow, plain)
        append(grow, indexed)
        if both:
            append(grow, columns)
    for target in [indexed] + ([columns] if both else []):
        if iceberg:
            spark.sql(f"CREATE BLOOM INDEX ix ON {target} (id, key)")
        else:
            spark.read.format(args.format).load(target).bloomFilterIndex("id", "key", name="ix")

    times: dict[str, list[float]] = {"plain": [], "indexed": [], **({"columns": []} if both else {})}
    # The step that maintenance after a commit replaced, timed after each indexed write (not part of its time): the
    # table's files listed whole (Delta: its new snapshot's state reconstructed; Iceberg: its manifests planned),
    # against the changes since the version before the write read from the table's log (Delta's commit file,
    # Iceberg's new manifests), as maintenance now does.
    listed: dict[str, list[float]] = {"listed_whole_s": [], "from_log_s": []}
    jvm = spark.sparkContext._jvm

    def time_listings() -> None:
        ref = jvm.sparkbloom.index.TableRef.ofDisplay(indexed if iceberg else f"delta.`{indexed}`")
        t = jvm.sparkbloom.api.BloomIndexes.resolve(spark._jsparkSession, ref, True)
        if iceberg:
            hist = spark.sql(f"SELECT snapshot_id FROM {indexed}.snapshots ORDER BY committed_at").collect()
            since = f"Iceberg snapshot {hist[-2][0]}"
        else:
            since = "Delta version %d" % (spark.sql(f"DESCRIBE HISTORY delta.`{indexed}` LIMIT 1").head()[0] - 1)
        s0 = time.perf_counter()
        assert t.changesSince().apply(since).get().added().size() == args.files
        s1 = time.perf_counter()
        t.listing().apply().files().size()
        s2 = time.perf_counter()
        listed["from_log_s"].append(s1 - s0)
        listed["listed_whole_s"].append(s2 - s1)

    jvm_gc = spark.sparkContext._jvm.java.lang.System.gc
    for r in range(args.warmup + args.rounds):
        start = (r + 1) * args.rows
        order = [("plain", plain), ("indexed", indexed)] + ([("columns", columns)] if both else [])
        order = order[r % len(order):] + order[:r % len(order)]  # each table first in turn
        for name, path in order:
            df = batch(start)
            jvm_gc()  # each write starts from a collected heap: neither pays for the other's garbage
            spark.conf.set(native_key, str(name != "columns" and args.native_filters != "off").lower())
            t = time.perf_counter()
            append(df, path)
            elapsed = time.perf_counter() - t
            if r >= args.warmup:
                times[name].append(elapsed)
                if name == "indexed" and args.format != "parquet" and args.maintain == "on":
                    time_listings()
        print(f"round {r}{' (warm-up)' if r < args.warmup else ''}: "
              + ", ".join(f"{k} {v[-1:]}" for k, v in times.items()), flush=True)
    # Checked once, after every write (DESCRIBE reads the whole index, which would load the machine between writes):
    # a write leaves the files it did not cover uncovered, so 0 here means every write returned with its files covered.
    d = sparkbloom.indexes(spark, indexed)[0].describe()
    assert d["files_not_covered"] == 0 or args.maintain == "off", d
    if both:
        dc = sparkbloom.indexes(spark, columns)[0].describe()
        assert dc["files_not_covered"] == 0 or args.maintain == "off", dc
    print(f"files covered {d['files_covered']}, not covered {d['files_not_covered']}", flush=True)

    listing = {f"median_{k}": statistics.median(v) for k, v in listed.items() if v}
    if listing:
        print(f"listing the table whole {listing['median_listed_whole_s']:.3f} s, the write's commit read from the "
              f"log {listing['median_from_log_s']:.3f} s (medians)", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the end",
        "rows_per_append": args.rows, "files_per_append": args.files, "rounds": args.rounds,
        "format": args.format, "extra_columns": args.extra_columns, "maintain": args.maintain, "in_task": args.in_task, "native_filters": args.native_filters,
        "plain_s": times["plain"], "indexed_s": times["indexed"],
        "median_plain_s": med["plain"], "median_indexed_s": med["indexed"],
        "ratio": med["indexed"] / med["plain"],
        **({"columns_s": times["columns"], "median_columns_s": med["columns"],
            "ratio_columns": med["columns"] / med["plain"]} if both else {}),
        "files_covered": d["files_covered"], "files_not_covered": d["files_not_covered"],
        "table_files": args.table_files, **listing, **listed,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
