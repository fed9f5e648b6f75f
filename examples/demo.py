"""The sparkbloom demo: point and IN lookups on a few million rows, with the bloom index on and off.

    python examples/demo.py                              # embedded local Spark, 200 files, 3M rows
    python examples/demo.py --files 20 --rows 200000     # a quick run
    python examples/demo.py --master spark://host:7077 --path hdfs:///tmp/sparkbloom-demo

Steps: generate a Parquet table (a high-cardinality long key and a string key, scattered over every
file so min/max statistics cannot skip anything), index the long key with SQL and the string key with
the Python API, then run each lookup with ``spark.sparkbloom.enabled`` false and true and print rows
returned, files read, row groups read and time.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

import sparkbloom

KEY_BASE = 1_000_000_000_000  # long keys look like real ids; only even offsets exist, so odd ones miss
MULTIPLIER = 7919  # prime: i -> (i * 7919) % rows permutes 0..rows-1 (unless rows is a multiple of it)


def log(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def user_id(i: int, rows: int) -> int:
    return KEY_BASE + 2 * ((i * MULTIPLIER) % rows)


def order_ref(i: int) -> str:
    return hashlib.md5(str(i).encode()).hexdigest()[:16]


def generate(spark: SparkSession, path: str, files: int, rows: int, row_group_bytes: int) -> None:
    (
        spark.range(0, rows, 1, numPartitions=files)
        .selectExpr(
            f"{KEY_BASE} + 2 * ((id * {MULTIPLIER}) % {rows}) AS user_id",
            "substr(md5(cast(id AS string)), 1, 16) AS order_ref",
            "element_at(array('NZ', 'FR', 'BR', 'JP', 'KE', 'CA'), cast(id % 6 AS int) + 1) AS country",
            "round(rand(42) * 1000, 2) AS amount",
        )
        .write.mode("overwrite")
        .option("parquet.block.size", row_group_bytes)  # several row groups per file
        .parquet(path)
    )


@dataclass
class Result:
    query: str
    index: str
    rows: int
    files_read: int | None
    row_groups_read: int | None
    seconds: float


def run(
    spark: SparkSession, table: DataFrame, label: str, condition: str, enabled: bool, total_row_groups: int
) -> Result:
    spark.conf.set("spark.sparkbloom.enabled", str(enabled).lower())
    query = table.where(condition)
    start = time.perf_counter()
    rows = len(query.collect())
    seconds = time.perf_counter() - start
    scans = sparkbloom.scan_metrics(query)
    files_read = sum(int(s["metrics"].get("numFiles", 0)) for s in scans) if scans else None
    skipped = sparkbloom.skipping(query)
    # With an index, the report says which row groups were kept; without, every row group of every file is read
    # (the keys are scattered, so Parquet's min/max statistics cannot drop any).
    row_groups = sum(s.row_groups_kept for s in skipped) if skipped else total_row_groups
    return Result(label, "on" if enabled else "off", rows, files_read, row_groups, seconds)


def print_table(results: list[Result]) -> None:
    header = ["query", "index", "rows", "files read", "row groups read", "time (s)"]
    body = [
        [r.query, r.index, f"{r.rows:,}", "?" if r.files_read is None else f"{r.files_read:,}",
         "?" if r.row_groups_read is None else f"{r.row_groups_read:,}", f"{r.seconds:.2f}"]
        for r in results
    ]
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for i, row in enumerate(body):
        print(line(row))
        if i % 2 == 1 and i + 1 < len(body):
            print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--master", default="local[*]", help="Spark master (default: embedded local[*])")
    parser.add_argument("--files", type=int, default=200, help="Parquet files to generate (default 200)")
    parser.add_argument("--rows", type=int, default=3_000_000, help="rows to generate (default 3,000,000)")
    parser.add_argument(
        "--row-group-bytes", type=int, default=128 * 1024, help="Parquet row group size (default 128 KiB)"
    )
    parser.add_argument("--path", help="where to write the table (default: a temporary directory, deleted at the end); "
                        "required with a cluster --master, and must be reachable from the executors")
    args = parser.parse_args(argv)
    local = args.master.startswith("local")
    if not local and not args.path:
        parser.error("--path is required with a cluster --master: executors must reach the table")
    if args.rows % MULTIPLIER == 0:
        parser.error(f"--rows must not be a multiple of {MULTIPLIER}")

    tmp = tempfile.mkdtemp(prefix="sparkbloom-demo-") if not args.path else None
    path = args.path or f"{tmp}/orders"
    log(f"starting Spark ({args.master})")
    builder = (
        SparkSession.builder.master(args.master)
        .appName("sparkbloom demo")
        .config("spark.ui.showConsoleProgress", "true")
        .config("spark.log.level", "WARN")
    )
    spark = sparkbloom.configure(builder).getOrCreate()
    try:
        log(f"generating {args.rows:,} rows in {args.files} Parquet files at {path}")
        start = time.perf_counter()
        generate(spark, path, args.files, args.rows, args.row_group_bytes)
        layout = sparkbloom.inspect_parquet(spark, path)
        files = [f for f in layout["files"] if f["status"] == "ok"]
        row_groups = sum(len(f["row_groups"]) for f in files)
        log(f"wrote {len(files)} files, {row_groups:,} row groups in {time.perf_counter() - start:.1f} s")

        log("creating bloom index demo_user_id on user_id with SQL")
        start = time.perf_counter()
        spark.sql(f"CREATE BLOOM INDEX IF NOT EXISTS demo_user_id ON parquet.`{path}` (user_id)")
        log(f"  done in {time.perf_counter() - start:.1f} s")

        log("creating bloom index demo_order_ref on order_ref with the Python API")
        start = time.perf_counter()
        table = spark.read.parquet(path)
        by_ref = table.bloomFilterIndex("order_ref", name="demo_order_ref", false_reads_per_key=0.1)
        log(f"  done in {time.perf_counter() - start:.1f} s")
        for index in sparkbloom.indexes(spark, path):
            d = index.describe()
            log(f"  {index.name} ({', '.join(index.columns)}): {d['files_covered']} files, "
                f"{d['row_groups_covered']:,} row groups, {d['size_in_bytes']:,} bytes")
            for c in d["column_stats"]:
                log(f"    {c['column']}: {c['sizing']}, expected false reads per key "
                    f"{c['expected_false_reads_per_key']:.3f}, {c['bytes_per_value'] or 0:.2f} bytes per value")

        n = args.rows
        picks = [n // 7, n // 3, n // 2, (2 * n) // 3, n - 1]
        queries = [
            ("point, long key", f"user_id = {user_id(picks[0], n)}"),
            ("point, long key, absent", f"user_id = {user_id(picks[0], n) + 1}"),
            ("IN (5), long key", f"user_id IN ({', '.join(str(user_id(i, n)) for i in picks)})"),
            ("point, string key", f"order_ref = '{order_ref(picks[1])}'"),
            ("IN (3), string key", f"order_ref IN ({', '.join(repr(order_ref(i)) for i in picks[2:])})"),
        ]
        log("warming up")
        table.where("amount < 0").collect()
        results = []
        for label, condition in queries:
            log(f"running {label}: {condition[:70]}{'...' if len(condition) > 70 else ''}")
            for enabled in (False, True):
                results.append(run(spark, table, label, condition, enabled, row_groups))
        spark.conf.set("spark.sparkbloom.enabled", "true")

        print()
        print(f"{n:,} rows in {len(files)} Parquet files, {row_groups:,} row groups; master {args.master}")
        print_table(results)
        print()
        by_ref.drop()
        spark.sql(f"DROP BLOOM INDEX IF EXISTS demo_user_id ON parquet.`{path}`")
        return 0
    except (sparkbloom.SparkBloomError, AnalysisException) as e:
        first_line = next((line for line in str(e).splitlines() if line.strip()), "")
        print(f"demo failed: {type(e).__name__}: {first_line}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
