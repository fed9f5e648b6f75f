#!/usr/bin/env python3
"""Point lookups on a Delta Lake table, an Iceberg table and a V2 Parquet path read.

Each source holds the same rows in --files files (100 rows each, keys spread so that every file's min/max
spans the whole key range: the formats' own statistics cannot drop a file). Each gets a bloom index (Delta and
V2 through the DataFrame API, Iceberg through SQL); then --lookups present keys and as many absent ones are
looked up with sparkbloom on and off. Per source it records the files left after the format's own statistics
(Delta's and Iceberg's min/max drop a few for keys near the ends of the string range), the files read (the
skipping record), the files
skipped by sparkbloom's SQL metric (`scan_metrics(...)["bloom_metrics"]`), whether the rows equal the
index-off rows (exit 1 otherwise), the median wall time of a lookup on and off, and the median time sparkbloom
itself spent at planning (reading index pages and probing; the skipping record's probe time), which separates
sparkbloom's cost from the format's own planning.

Usage (from the repository root, after `dev/sbt bundle lakehouseJars`, e.g. through dev/demo or dev/test):
  .venv/bin/python benchmarks/lakehouse.py [--files 200] [--lookups 50] [--out benchmarks/results/lakehouse.json]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import statistics
import sys
import tempfile
import time

from pyspark.sql import SparkSession

import sparkbloom

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def session(jars: str, warehouse: str) -> SparkSession:
    builder = (SparkSession.builder.master("local[2]").appName("sparkbloom lakehouse benchmark")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.log.level", "ERROR").config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", "3g").config("spark.jars", jars)
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension,"
                       "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
               .config("spark.databricks.delta.snapshotPartitions", "2")
               .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
               .config("spark.sql.catalog.ice.type", "hadoop")
               .config("spark.sql.catalog.ice.warehouse", f"{warehouse}/iceberg"))
    return sparkbloom.configure(builder).getOrCreate()


def run(spark: SparkSession, query, on: bool):
    spark.conf.set("spark.sparkbloom.enabled", str(on).lower())
    t0 = time.perf_counter()
    df = query()
    rows = sorted(tuple(r) for r in df.collect())
    elapsed = time.perf_counter() - t0
    return rows, elapsed, df


def measure(spark: SparkSession, name: str, query_of, keys, files: int, v2: bool = False) -> dict:
    if v2:
        spark.conf.set("spark.sql.sources.useV1SourceList", "")
    read, planned, metered, t_on, t_off, probe, mismatches, rows_found = [], [], [], [], [], [], 0, 0
    try:
        for k in keys:
            q = lambda: query_of(k)  # noqa: E731
            off, e_off, _ = run(spark, q, on=False)
            on, e_on, df = run(spark, q, on=True)
            mismatches += on != off
            rows_found += len(on)
            [rec] = [r for r in sparkbloom.skipping(df) if r.index]
            planned.append(rec.files_total)  # what the format's own skipping (min/max) left to sparkbloom
            read.append(rec.files_kept)
            probe.append(rec.probe_time_ms)  # sparkbloom's own part of planning: index reads and probes
            metered.append(sum(m["bloom_metrics"]["filesSkipped"] for m in sparkbloom.scan_metrics(df)
                               if m["bloom_metrics"]))
            t_on.append(e_on)
            t_off.append(e_off)
    finally:
        spark.conf.set("spark.sparkbloom.enabled", "true")
        spark.conf.unset("spark.sql.sources.useV1SourceList")
    return {"source": name, "files": files, "lookups": len(keys), "rows_found": rows_found,
            "rows_differ_from_index_off": mismatches,
            "files_read_mean": statistics.mean(read), "files_read_max": max(read),
            "files_skipped_metric_mean": statistics.mean(metered),
            "files_after_format_statistics_mean": statistics.mean(planned),
            "metric_equals_record": all(m == p - r for m, p, r in zip(metered, planned, read)),
            "median_s_index_on": round(statistics.median(t_on), 3),
            "median_s_index_off": round(statistics.median(t_off), 3),
            "median_ms_sparkbloom_probe": round(statistics.median(probe), 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=200)
    p.add_argument("--lookups", type=int, default=50, help="present keys; as many absent keys again")
    p.add_argument("--jars", default=",".join(sorted(glob.glob(os.path.join(
        ROOT, "target", "lakehouse", f"spark-{sparkbloom.session.line_for(*sparkbloom.session.spark_version())}", "*.jar")))))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if "delta-spark" not in args.jars or "iceberg-spark-runtime" not in args.jars:
        sys.exit(f"need delta-spark and iceberg-spark-runtime jars (dev/sbt lakehouseJars): {args.jars!r}")
    load_at_start = os.getloadavg()
    warehouse = tempfile.mkdtemp(prefix="sparkbloom-lakebench-")
    spark = session(args.jars, warehouse)
    n = args.files * 100
    data = spark.range(0, n, 1, args.files).selectExpr(
        "id", f"concat('user-', cast((id * 7919) % {n} as string)) AS user_key")

    delta = f"{warehouse}/delta"
    data.write.format("delta").save(delta)
    spark.read.format("delta").load(delta).bloomFilterIndex("user_key", name="by_user")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    spark.sql("CREATE TABLE ice.db.events (id BIGINT, user_key STRING) USING iceberg "
              "TBLPROPERTIES ('write.distribution-mode' = 'none')")
    data.writeTo("ice.db.events").append()
    spark.sql("CREATE BLOOM INDEX by_user ON ice.db.events (user_key)")
    v2 = f"{warehouse}/v2"
    data.write.parquet(v2)
    spark.conf.set("spark.sql.sources.useV1SourceList", "")
    spark.read.parquet(v2).bloomFilterIndex("user_key", name="by_user")
    spark.conf.unset("spark.sql.sources.useV1SourceList")

    rng = random.Random(20261124)
    # absent keys inside every file's min/max range (user-<n> with n past the last key), so that only the
    # bloom index can drop files for them
    keysets = {"present": [f"user-{rng.randrange(n)}" for _ in range(args.lookups)],
               "absent": [f"user-{n + rng.randrange(n)}x" for _ in range(args.lookups)]}
    sources = {
        "delta": (lambda k: spark.read.format("delta").load(delta).where(f"user_key = '{k}'"), False),
        "iceberg": (lambda k: spark.sql(f"SELECT * FROM ice.db.events WHERE user_key = '{k}'"), False),
        "v2-parquet": (lambda k: spark.read.parquet(v2).where(f"user_key = '{k}'"), True),
    }
    results = [dict(measure(spark, name, q, keys, args.files, v2=is_v2), keys=kind)
               for name, (q, is_v2) in sources.items() for kind, keys in keysets.items()]
    report = {"spark": spark.version, "files": args.files, "rows": n,
              "load_average_at_start": load_at_start, "load_average_at_end": os.getloadavg(),
              "cores": os.cpu_count(), "results": results}
    print(json.dumps(report, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)
    spark.stop()
    if any(r["rows_differ_from_index_off"] or not r["metric_equals_record"] for r in results):
        sys.exit("rows or metrics differ: see above")


if __name__ == "__main__":
    main()
