#!/usr/bin/env python3
"""Freshness under streaming: a Structured Streaming query appends --batches micro-batches to an indexed table
(Delta's sink, then Spark's Parquet file sink), and point lookups run beside it, each for a key an earlier batch
wrote (issue "an index that keeps up": lookups during the run read <= 2 files, p50 latency flat).

Each micro-batch writes --rows rows in one file. Keys are unique and random-looking (``<8 hex digits>-<n>``), so
every file's min/max statistics span the whole key range and Delta's own data skipping cannot drop a file. The
index is created over the first batch; from then on no REFRESH is run: the sink's batches are indexed by maintenance on write (the refresh that
follows each batch's progress event). A lookup thread picks a key written at least one batch earlier and runs
``k = key`` with sparkbloom on, recording the files the scan read (the skipping record's ``files_kept``: the
files the index kept plus those not yet covered), the table's file count and the wall time; every --check-every
lookup it runs the same query with sparkbloom off and compares the rows (exit 1 on a difference). Latency is
reported per tenth of the run (p50 per decile), so a latency that grows with the table shows as a slope.

Usage (from the repository root, after `dev/sbt bundle lakehouseJars`, e.g. through dev/demo or dev/test):
  .venv/bin/python benchmarks/freshness.py [--batches 500] [--rows 200] [--sinks delta,parquet]
      [--out benchmarks/results/freshness.json]
"""
from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time

import sparkbloom
from pyspark.sql import SparkSession

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def session(jars: str, warehouse: str) -> SparkSession:
    builder = (SparkSession.builder.master("local[2]").appName("sparkbloom freshness benchmark")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.log.level", "ERROR").config("spark.sql.shuffle.partitions", "1")
               .config("spark.driver.memory", "3g").config("spark.jars", jars)
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
               .config("spark.databricks.delta.snapshotPartitions", "1")
               .config("spark.sql.warehouse.dir", warehouse))
    return sparkbloom.configure(builder).getOrCreate()


def key(i: int) -> str:
    return f"{(i * 2654435761) % 4294967296:08x}-{i}"


def run_sink(spark: SparkSession, sink: str, base: str, args) -> dict:
    path, inputs, checkpoint = (os.path.join(base, sink, d) for d in ("table", "input", "checkpoint"))
    os.makedirs(inputs)
    reader = spark.read.format("delta") if sink == "delta" else spark.read.format("parquet")

    def batch_file(b: int) -> None:
        # one input file per micro-batch (maxFilesPerTrigger=1), written atomically (rename) for the file source
        tmp = os.path.join(base, sink, f".b{b}.json")
        with open(tmp, "w") as f:
            for i in range(b * args.rows, (b + 1) * args.rows):
                f.write(f'{{"id": {i}, "k": "{key(i)}", "v": {i % 7}}}\n')
        os.rename(tmp, os.path.join(inputs, f"b{b:06d}.json"))

    batch_file(0)
    stream = (spark.readStream.schema("id BIGINT, k STRING, v BIGINT").option("maxFilesPerTrigger", 1).json(inputs)
              .coalesce(1).writeStream.format(sink).option("checkpointLocation", checkpoint).start(path))
    stream.processAllAvailable()
    budget = f" OPTIONS (false_reads_per_key = {args.false_reads_per_key})" if args.false_reads_per_key else ""
    spark.sql(f"CREATE BLOOM INDEX ix ON {sink}.`{path}` (k){budget}")

    done = threading.Event()
    written = [1]  # batches committed so far (the lookup thread reads keys of earlier ones only)
    samples: list[dict] = []
    mismatches: list[str] = []

    def lookups() -> None:
        rng = random.Random(7)
        n = 0
        while not done.is_set():
            committed = written[0]
            if committed < 2:
                time.sleep(0.05)
                continue
            k = key(rng.randrange(0, (committed - 1) * args.rows))
            t0 = time.perf_counter()
            df = reader.load(path).where(f"k = '{k}'")
            rows = df.collect()
            elapsed = time.perf_counter() - t0
            skip = sparkbloom.skipping(df)
            kept = sum(s.files_kept for s in skip) if skip else None
            total = sum(s.files_total for s in skip) if skip else None
            uncovered = sum(s.files_not_covered for s in skip) if skip else None
            samples.append({"batch": committed, "seconds": elapsed, "files_read": kept, "files_total": total,
                            "files_uncovered": uncovered, "rows": len(rows)})
            n += 1
            if n % args.check_every == 0:
                spark.conf.set("spark.sparkbloom.enabled", "false")  # shared session: the lookup thread's only use
                try:
                    off = reader.load(path).where(f"k = '{k}'").collect()
                finally:
                    spark.conf.set("spark.sparkbloom.enabled", "true")
                if sorted(map(tuple, rows)) != sorted(map(tuple, off)):
                    mismatches.append(f"{k}: {rows} with the index, {off} without")

    t = threading.Thread(target=lookups, daemon=True)
    t.start()
    started = time.perf_counter()
    try:
        for b in range(1, args.batches):
            batch_file(b)
            stream.processAllAvailable()
            written[0] = b + 1
            if b % 50 == 0:
                print(f"{sink}: {b + 1} batches, {len(samples)} lookups", flush=True)
    finally:
        done.set()
        t.join()
        stream.stop()
    run_s = time.perf_counter() - started
    jvm = spark.sparkContext._jvm
    # the last batches' refreshes follow their progress events, which the listener bus delivers asynchronously
    deadline = time.time() + 120
    while True:
        getattr(jvm.sparkbloom.write.BackgroundMaintenance, "await")(spark._jsparkSession, 60_000)  # a Python keyword
        d = sparkbloom.indexes(spark, path)[0].describe()
        if d["files_not_covered"] == 0 or time.time() > deadline:
            break
        time.sleep(0.5)

    measured = [s for s in samples if s["files_read"] is not None]

    def false_positives(s: dict) -> int:
        """Covered files read without the key: besides the uncovered ones and the one holding it."""
        return max(0, s["files_read"] - s["files_uncovered"] - (1 if s["rows"] else 0))
    deciles = []
    if measured:
        for i in range(10):
            part = [s for s in measured if (s["batch"] - 1) * 10 // args.batches == i]
            if part:
                deciles.append({"decile": i, "lookups": len(part),
                                "p50_s": statistics.median(s["seconds"] for s in part),
                                "files_total_median": statistics.median(s["files_total"] for s in part),
                                "files_read_max": max(s["files_read"] for s in part),
                                "files_uncovered_max": max(s["files_uncovered"] for s in part),
                                "index_false_positives": sum(false_positives(s) for s in part)})
    reads = [s["files_read"] for s in measured]
    return {
        "sink": sink, "batches": args.batches, "rows_per_batch": args.rows, "run_s": run_s,
        "lookups": len(samples), "lookups_pruned": len(measured),
        "files_read_max": max(reads) if reads else None,
        "files_read_p50": statistics.median(reads) if reads else None,
        "files_read_p99": sorted(reads)[int(len(reads) * 0.99)] if reads else None,
        "lookups_over_2_files": sum(r > 2 for r in reads),
        # why a lookup read more than the file holding its key: files the index did not cover yet (freshness), or
        # covered files the index kept without the key (its false positives, within the false-read budget)
        "files_uncovered_max": max(s["files_uncovered"] for s in measured) if measured else None,
        "lookups_over_1_uncovered": sum(s["files_uncovered"] > 1 for s in measured),
        "lookups_over_2_files_by_false_positives": sum(
            s["files_read"] > 2 and s["files_read"] - s["files_uncovered"] > 1 for s in measured),
        "index_false_positives": sum(false_positives(s) for s in measured),
        "p50_s": statistics.median(s["seconds"] for s in samples) if samples else None,
        "deciles": deciles, "mismatches": mismatches,
        "after": {**{k: d.get(k) for k in ("files_in_table", "files_covered", "files_not_covered", "segment_files",
                                           "version", "false_reads_per_key")},
                  # every lookup here is of a key the table holds: compare with the present-key figure
                  "expected_false_reads_per_key": [c["expected_false_reads_per_key"] for c in d["column_stats"]],
                  "expected_false_reads_per_present_key": [c.get("expected_false_reads_per_present_key")
                                                           for c in d["column_stats"]]},
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batches", type=int, default=500)
    p.add_argument("--rows", type=int, default=200, help="rows per micro-batch (one file each)")
    p.add_argument("--sinks", default="delta,parquet")
    p.add_argument("--false-reads-per-key", type=float,
                   help="the index's false-read budget (default: the index's default, 0.1): a lookup also reads the "
                        "covered files the index keeps without its key, about this many on average")
    p.add_argument("--check-every", type=int, default=10, help="compare with sparkbloom off every Nth lookup")
    p.add_argument("--jars", default=",".join(sorted(glob.glob(os.path.join(
        ROOT, "target", "lakehouse", f"spark-{sparkbloom.session.line_for(*sparkbloom.session.spark_version())}",
        "*.jar")))))
    p.add_argument("--out", help="write the results here (JSON)")
    args = p.parse_args()
    base = tempfile.mkdtemp(prefix="sparkbloom-freshness-")
    spark = session(args.jars, os.path.join(base, "wh"))
    results = []
    for sink in args.sinks.split(","):
        r = run_sink(spark, sink, base, args)
        print(json.dumps({k: v for k, v in r.items() if k != "deciles"}), flush=True)
        results.append(r)
    out = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the end",
           "command": " ".join(sys.argv), "results": results}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)
    spark.stop()
    return 1 if any(r["mismatches"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
