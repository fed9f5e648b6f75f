#!/usr/bin/env python3
"""Native bloom filters at read time: what loading sparkbloom does to tables WITHOUT an index.

Two copies of the same data: plain Parquet, and Parquet with Spark's native bloom filters on `key` and
`uuid` (sized with `parquet.bloom.filter.expected.ndv`, or parquet-java's 1 MiB default with --default-size).
Each query runs under:
  spark          sparkbloom off: Spark's own reader, parquet-java's bloom level on (what Spark does alone)
  sparkbloom     sparkbloom loaded and on, no index: native filters checked by sparkbloom at read time
and, as the truth, with Parquet filter pushdown off. Answers must equal the truth (exit 1 otherwise).
On the plain copy (no filters at all) the same two configs show the overhead of the read-time check.

Usage (from the repository root, after `dev/sbt bundle`):
  .venv/bin/python benchmarks/native.py [--files 200] [--rgs-per-file 4] [--rows-per-rg 10000] [--runs 5]
                                        [--default-size] [--out benchmarks/results/native.json]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402  (shared session, data generator and metric helpers)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=200)
    p.add_argument("--rgs-per-file", type=int, default=4)
    p.add_argument("--rows-per-rg", type=int, default=10000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--default-size", action="store_true",
                   help="native filters at parquet-java's default size (1 MiB per chunk) instead of sized by ndv")
    p.add_argument("--out", default=None)
    p.add_argument("--jars-dir", help="sparkbloom.jar and its dependencies (default target/bundles/spark-<line of this pyspark>)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--driver-memory", default="3g")
    return p.parse_args(argv)


def block_size(spark, path_probe, rows_per_rg):
    return e2e.block_size_for(spark, path_probe, rows_per_rg)


def native_metrics(df):
    """Read-time counts from the BloomIndexSkipping node (0 when sparkbloom did not check native filters)."""
    plan = df._jdf.queryExecution().executedPlan()
    skipping = df.sparkSession._jvm.sparkbloom.scan.SkippingReport.forPlan(plan)
    out = {"native_row_groups_checked": 0, "native_row_groups_skipped": 0, "native_filters_invalid": 0}
    for i in range(skipping.size()):
        s = skipping.apply(i)
        out["native_row_groups_checked"] += s.nativeRowGroupsChecked()
        out["native_row_groups_skipped"] += s.nativeRowGroupsSkipped()
        out["native_filters_invalid"] += s.nativeFiltersInvalid()
    return out


def run(spark, sql, runs):
    times, rows = [], None
    for i in range(runs + 1):
        t = time.perf_counter()
        df = spark.sql(sql)
        rows = df.collect()
        if i > 0:
            times.append(time.perf_counter() - t)
    group = f"native-{time.time_ns():x}"
    spark.sparkContext.setJobGroup(group, "metrics run")
    df = spark.sql(sql)
    df.collect()
    spark.sparkContext.setJobGroup("", "")
    m = e2e.scan_metrics(df)
    m.pop("skipping", None)
    m.update(native_metrics(df))
    m["bytes_read"] = e2e.input_bytes_of_group(spark, group)
    m["median_ms"] = statistics.median(times) * 1000 if times else None
    m["runs_ms"] = [x * 1000 for x in times]
    return m, e2e.norm(rows)


def main(argv=None):
    args = parse_args(argv)
    spark = e2e.make_session(args)
    base = tempfile.mkdtemp(prefix="sparkbloom-native-")
    try:
        total = args.files * args.rgs_per_file * args.rows_per_rg
        plain, native = os.path.join(base, "plain"), os.path.join(base, "native")
        e2e.write(spark, e2e.generate(spark, args.rows_per_rg * 2, 1), os.path.join(base, "probe"))
        bs = e2e.block_size_for(spark, os.path.join(base, "probe"), args.rows_per_rg) if args.rgs_per_file > 1 else None
        e2e.write(spark, e2e.generate(spark, total, args.files), plain, block_size=bs)
        e2e.write(spark, e2e.generate(spark, total, args.files), native,
                  native_bloom_ndv=None if args.default_size else args.rows_per_rg, block_size=bs)
        if args.default_size:  # filters on, parquet-java's default (1 MiB per chunk), dictionary off so they exist
            shutil.rmtree(native)
            w = (e2e.generate(spark, total, args.files).write.option("parquet.enable.dictionary", "false")
                 .option("parquet.bloom.filter.enabled#key", "true").option("parquet.bloom.filter.enabled#uuid", "true"))
            if bs:
                w = w.option("parquet.block.size", str(bs))
            w.parquet(native)
        queries = [
            ("point", f"SELECT * FROM parquet.`{{t}}` WHERE key = {e2e.key_of(total // 3)}"),
            ("point_uuid", f"SELECT * FROM parquet.`{{t}}` WHERE uuid = '{e2e.uuid_of(total // 5)}'"),
            ("absent", f"SELECT * FROM parquet.`{{t}}` WHERE key = {e2e.absent_key(7)}"),
            ("in_5", "SELECT * FROM parquet.`{t}` WHERE key IN (" +
             ", ".join(str(e2e.key_of(total * j // 7)) for j in range(1, 6)) + ")"),
            ("non_selective", "SELECT count(*) FROM parquet.`{t}` WHERE p_int = 7"),
        ]
        result = {"args": vars(args), "rows": total, "environment": e2e.environment(spark), "queries": {},
                  "load_before": os.getloadavg()}
        mismatches = []
        for qname, sql in queries:
            per = {}
            spark.conf.set("spark.sparkbloom.enabled", "false")
            spark.conf.set("spark.sql.parquet.filterPushdown", "false")
            _, truth = run(spark, sql.format(t=native), 0)
            spark.conf.unset("spark.sql.parquet.filterPushdown")
            for table_name, table in (("native", native), ("plain", plain)):
                for cfg in ("spark", "sparkbloom"):
                    spark.conf.set("spark.sparkbloom.enabled", "true" if cfg == "sparkbloom" else "false")
                    m, rows = run(spark, sql.format(t=table), args.runs)
                    if rows != truth:
                        mismatches.append({"query": qname, "table": table_name, "config": cfg,
                                           "rows": len(rows), "expected": len(truth)})
                    per[f"{table_name}/{cfg}"] = m
            result["queries"][qname] = per
            print(f"{qname:14s} " + "  ".join(f"{k} {m['median_ms']:7.1f} ms {m['files_read']:>4} files "
                                              f"skip {m['native_row_groups_skipped']}/{m['native_row_groups_checked']}"
                                              for k, m in per.items()), flush=True)
        spark.conf.set("spark.sparkbloom.enabled", "true")
        result["mismatches"] = mismatches
        result["load_after"] = os.getloadavg()
        out = args.out or os.path.join(e2e.ROOT, "benchmarks", "results", "native.json")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {out}; mismatches: {len(mismatches)}")
        return 1 if mismatches else 0
    finally:
        spark.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
