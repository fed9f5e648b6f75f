#!/usr/bin/env python3
"""Key-set pruning benchmark: joins, MERGE upserts and erasures whose keys are known only at run time.

Side by side in one run, on the same tables: sparkbloom off (Spark's own dynamic partition pruning and runtime
bloom filter at their defaults, Delta's own MERGE) and sparkbloom on. Cases (issue "key-set pruning"):

  star    a Parquet fact of --files files joined with a dimension filtered to 100 keys, each key in <= 5 files
  merge   MERGE of --merge-keys random UUID keys (half present, half new) into a Delta table of --files files
  gdpr    MERGE ... WHEN MATCHED THEN DELETE of 100 ids from a Delta table of --files files
  gdpr_iceberg      DELETE ... WHERE id IN (SELECT ...) of 100 ids from an Iceberg table of --files files
                    (copy-on-write, Iceberg's default: sparkbloom prunes Spark's group-filter query)
  gdpr_iceberg_mor  the same in a merge-on-read table (sparkbloom prunes the read that finds the rows)
  huge    the fact joined with a 1,000,000-key side: pruning must be declined, at no cost

For each: the files the fact / target scan read (Spark's numFiles; for MERGE, the files its touched-file pass
read, from the index usage DESCRIBE BLOOM INDEX reports; for an Iceberg DELETE, the files its query that finds the
rows to delete read, the same way), the files truly holding a key (from the data), the
rows (must equal with sparkbloom off: exit 1 otherwise; for MERGE, the whole table after it), and median wall
times. Writes JSON and a plot (docs/img/joins.png).

Usage (from the repository root, with the sparkbloom wheel installed and `dev/sbt lakehouseJars` run, e.g. by
dev/test or dev/demo; jars of the running pyspark's line):
  .venv/bin/python benchmarks/joins.py [--files 10000] [--runs 3] [--out benchmarks/results/joins.json]
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
import uuid

import sparkbloom
from pyspark.sql import SparkSession

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS_PER_FILE = 20


def session(jars: str, warehouse: str) -> SparkSession:
    builder = (SparkSession.builder.master("local[2]").appName("sparkbloom joins benchmark")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.log.level", "ERROR").config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "6g").config("spark.jars", jars)
               .config("spark.sql.warehouse.dir", f"{warehouse}/spark")
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension" +
                       (",org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
                        if "iceberg-spark-runtime" in jars else ""))
               .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
               .config("spark.sql.catalog.ice.type", "hadoop")
               .config("spark.sql.catalog.ice.warehouse", f"{warehouse}/ice")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
               .config("spark.databricks.delta.snapshotPartitions", "2"))
    return sparkbloom.configure(builder).getOrCreate()


def timed(spark: SparkSession, on: bool, action):
    spark.conf.set("spark.sparkbloom.enabled", str(on).lower())
    t0 = time.perf_counter()
    out = action()
    return out, time.perf_counter() - t0


def scan_files(df, path_part: str) -> int:
    """Files read by the scans of the table whose location contains `path_part` (Spark's numFiles)."""
    return sum(int(m["metrics"].get("numFiles", 0)) for m in sparkbloom.scan_metrics(df)
               if path_part in json.dumps(m))


def index_usage(spark: SparkSession, table: str) -> tuple[int, int]:
    """(lookups, files skipped) this driver planned through the table's index (the figures DESCRIBE shows)."""
    from sparkbloom import _jvm
    d = json.loads(_jvm.python_api(spark).describe(_jvm.java_session(spark), table, "ix"))
    return int(d["usage"]["lookups"]), int(d["usage"]["files_skipped"])


def star(spark: SparkSession, base: str, files: int, runs: int) -> dict:
    keys = files * ROWS_PER_FILE // 5  # each key value in 5 rows, scattered over the files
    fact = f"{base}/fact"
    (spark.range(0, files * ROWS_PER_FILE, 1, files)
     .selectExpr(f"(id * 7919) % {keys} AS k", "id AS payload", "id % 13 AS m").write.parquet(fact))
    spark.read.parquet(fact).bloomFilterIndex("k")
    # 100 keys with country 'IS', spread over the key range
    step = keys // 100
    (spark.range(0, keys).selectExpr("id AS dk", f"CASE WHEN id % {step} = 7 AND id < {step * 100} THEN 'IS' "
                                     "ELSE 'XX' END AS country").coalesce(1).write.parquet(f"{base}/dim"))
    spark.read.parquet(fact).createOrReplaceTempView("fact")
    spark.read.parquet(f"{base}/dim").createOrReplaceTempView("dim")
    q = "SELECT f.* FROM fact f JOIN dim d ON f.k = d.dk WHERE d.country = 'IS'"
    spark.conf.set("spark.sparkbloom.enabled", "false")
    true_files = spark.sql("SELECT count(DISTINCT f) FROM (SELECT input_file_name() AS f FROM fact WHERE k IN "
                           "(SELECT dk FROM dim WHERE country = 'IS'))").first()[0]
    result = {"case": "star", "fact_files": files, "true_files": true_files}
    # One warm-up of each, then runs alternating which goes first (off-on, on-off, ...): JIT, caches and the
    # file system's page cache favour whichever runs second; the medians of each order are reported too.
    times: dict = {(on, o): [] for on in (False, True) for o in ("off_first", "on_first")}
    read: dict = {}
    rows: dict = {}
    for i in range(runs + 1):
        order = "off_first" if i % 2 == 0 else "on_first"
        for on in ((False, True) if order == "off_first" else (True, False)):
            df = spark.sql(q)
            r, t = timed(spark, on, lambda df=df: sorted(tuple(x) for x in df.collect()))
            if i > 0:
                times[(on, order)].append(t)
            read[on], rows[on] = scan_files(df, "/fact"), r
    for on in (False, True):
        all_t = times[(on, "off_first")] + times[(on, "on_first")]
        result["on" if on else "off"] = {
            "files_read": read[on], "median_s": statistics.median(all_t), "rows": len(rows[on]),
            "median_s_by_order": {o: statistics.median(times[(on, o)]) if times[(on, o)] else None
                                  for o in ("off_first", "on_first")}}
    result["rows_equal"] = rows[True] == rows[False]
    return result


def huge(spark: SparkSession, base: str, runs: int) -> dict:
    spark.range(0, 1_000_000).selectExpr("id * 3 AS hk").write.parquet(f"{base}/huge")
    spark.read.parquet(f"{base}/huge").createOrReplaceTempView("hugekeys")
    q = "SELECT count(*), sum(f.payload) FROM fact f JOIN hugekeys h ON f.k = h.hk"
    result = {"case": "huge", "key_side_rows": 1_000_000}
    for on in (False, True):
        times, rows, planned = [], None, False
        for _ in range(runs + 1):
            df = spark.sql(q)
            rows, t = timed(spark, on, lambda df=df: df.collect())
            times.append(t)
            planned = "run-time keys" in df._jdf.queryExecution().executedPlan().toString()
        result["on" if on else "off"] = {"median_s": statistics.median(times[1:]), "rows": [tuple(r) for r in rows],
                                         "pruning_planned": planned}
    result["rows_equal"] = result["on"]["rows"] == result["off"]["rows"]
    return result


def target_table(spark: SparkSession, name: str, files: int, keys: list[str], index: bool, budget: float,
                 iceberg_mode: str | None = None) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    df = spark.createDataFrame([(k, i, i % 7) for i, k in enumerate(keys)], "id string, n long, v long")
    if iceberg_mode is None:
        df.repartition(files).write.format("delta").saveAsTable(name)
    else:
        (df.repartition(files).writeTo(name).using("iceberg").tableProperty("format-version", "2")
         .tableProperty("write.distribution-mode", "none").tableProperty("write.delete.mode", iceberg_mode)
         .create())
    if index:
        spark.sql(f"CREATE BLOOM INDEX ix ON {name} (id) OPTIONS (false_reads_per_key = {budget})")


def merge_case(spark: SparkSession, case: str, files: int, n_keys: int, budget: float, on_first: bool) -> dict:
    iceberg_mode = {"gdpr_iceberg": "copy-on-write", "gdpr_iceberg_mor": "merge-on-read"}.get(case)
    rows = files * ROWS_PER_FILE
    keys = [str(uuid.UUID(int=(i * 0x9E3779B97F4A7C15 + 12345) % (1 << 128))) for i in range(rows)]
    n_present = n_keys if case.startswith("gdpr") else n_keys // 2
    present = keys[:: max(1, rows // n_present)][:n_present]
    new = [str(uuid.UUID(int=(i * 0x9E3779B97F4A7C15 + 999) % (1 << 128))) for i in range(n_keys - len(present))]
    # The source lands as files, as a CDC batch or an erasure list does: Spark knows its size, so the MERGE's
    # join broadcasts it, and its keys are read from that broadcast (Delta's source is never computed twice).
    src_path = f"{spark.conf.get('spark.sql.warehouse.dir')}/../{case}_src"
    (spark.createDataFrame([(k, j) for j, k in enumerate(present + new)], "key string, nv long")
     .coalesce(1).write.mode("overwrite").parquet(src_path))
    spark.read.parquet(src_path).createOrReplaceTempView(f"{case}_src")
    result = {"case": case, "target_files": files, "source_keys": len(present) + len(new),
              "present_keys": len(present), "budget": budget, "order": "on, off" if on_first else "off, on",
              "format": f"iceberg ({iceberg_mode})" if iceberg_mode else "delta"}
    if iceberg_mode:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    out = {}
    for on in ((True, False) if on_first else (False, True)):
        t = f"{'ice.db.' if iceberg_mode else ''}{case}_{'on' if on else 'off'}"
        target_table(spark, t, files, keys, index=on, budget=budget, iceberg_mode=iceberg_mode)
        spark.conf.set("spark.sparkbloom.enabled", "false")
        if on:
            file_col = "_file" if iceberg_mode else "_metadata.file_path"
            result["true_files"] = spark.sql(f"SELECT count(DISTINCT {file_col}) FROM {t} "
                                             f"WHERE id IN (SELECT key FROM {case}_src)").first()[0]
        if iceberg_mode:  # an erasure as Iceberg users write it
            stmt = f"DELETE FROM {t} WHERE id IN (SELECT key FROM {case}_src)"
        elif case == "gdpr":
            stmt = f"MERGE INTO {t} t USING {case}_src s ON t.id = s.key WHEN MATCHED THEN DELETE"
        else:
            stmt = (f"MERGE INTO {t} t USING {case}_src s ON t.id = s.key WHEN MATCHED THEN UPDATE SET v = s.nv "
                    f"WHEN NOT MATCHED THEN INSERT (id, n, v) VALUES (s.key, -1, s.nv)")
        before = index_usage(spark, t) if on else (0, 0)
        _, elapsed = timed(spark, on, lambda stmt=stmt: spark.sql(stmt).collect())
        after = index_usage(spark, t) if on else (0, 0)
        spark.conf.set("spark.sparkbloom.enabled", "false")
        out[on] = sorted(tuple(r) for r in spark.table(t).collect())
        entry = {"wall_s": elapsed}
        if on:
            entry["touched_pass_files_read"] = files - (after[1] - before[1])
            entry["lookups"] = after[0] - before[0]
        result["on" if on else "off"] = entry
    result["table_equal"] = out[True] == out[False]
    return result


def both_orders(runs: list[dict]) -> dict:
    """One MERGE case run in each order (off then on, on then off): the first run's figures, each order's wall
    times, and the speedup both ways (warm-up and caching favour whichever runs second)."""
    result = dict(runs[0])
    if len(runs) > 1:
        result["by_order"] = {r["order"]: {"on_s": r["on"]["wall_s"], "off_s": r["off"]["wall_s"],
                                           "speedup": r["off"]["wall_s"] / r["on"]["wall_s"]} for r in runs}
        result["order"] = "both"
        result["table_equal"] = all(r["table_equal"] for r in runs)
        result["on"] = dict(result["on"], wall_s=statistics.median([r["on"]["wall_s"] for r in runs]))
        result["off"] = dict(result["off"], wall_s=statistics.median([r["off"]["wall_s"] for r in runs]))
    return result


def plot(results: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5))
    label = {"merge": "MERGE\n(Delta)", "gdpr": "erasure\n(Delta)", "gdpr_iceberg": "erasure\n(Iceberg CoW)",
             "gdpr_iceberg_mor": "erasure\n(Iceberg MoR)"}
    names = [label.get(r["case"], r["case"]) for r in results]
    off = [r["off"].get("median_s", r["off"].get("wall_s")) for r in results]
    on = [r["on"].get("median_s", r["on"].get("wall_s")) for r in results]
    xs = range(len(names))
    a.bar([x - 0.2 for x in xs], off, 0.4, label="sparkbloom off (Spark DPP + runtime bloom filter, Delta MERGE)")
    a.bar([x + 0.2 for x in xs], on, 0.4, label="sparkbloom on")
    a.set_xticks(list(xs), names, fontsize=8); a.set_ylabel("wall time (s)"); a.set_yscale("log")
    a.legend(fontsize=7, loc="upper left")
    a.set_title("time per case (log)")
    reads = [(label.get(r["case"], r["case"]), r["off"].get("files_read", r.get("fact_files", r.get("target_files"))),
              r["on"].get("files_read", r["on"].get("touched_pass_files_read")), r.get("true_files"))
             for r in results if r["case"] != "huge"]
    xs = range(len(reads))
    b.bar([x - 0.27 for x in xs], [x[1] for x in reads], 0.27, label="files read, off")
    b.bar([x for x in xs], [x[2] for x in reads], 0.27, label="files read, on")
    b.bar([x + 0.27 for x in xs], [x[3] for x in reads], 0.27, label="files truly holding a key")
    b.set_xticks(list(xs), [x[0] for x in reads], fontsize=8); b.set_yscale("log"); b.legend(fontsize=7, loc="center right")
    b.set_title("files read by the pruned scan (log)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=10000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--merge-keys", type=int, default=1000)
    p.add_argument("--budget", type=float, default=0.01,
                   help="false_reads_per_key of the Delta indexes (k keys cost about k x budget false files)")
    p.add_argument("--cases", default="star,huge,merge,gdpr,gdpr_iceberg,gdpr_iceberg_mor")
    p.add_argument("--warmup", action="store_true", help="a small MERGE (on and off) first, not measured")
    p.add_argument("--one-order", action="store_true",
                   help="each MERGE case once, in the order --on-first says (default: once in each order)")
    p.add_argument("--on-first", action="store_true",
                   help="run each MERGE with sparkbloom on before the one with it off (default: off first)")
    p.add_argument("--min-table-size", default=None,
                   help="spark.sparkbloom.runtimePruning.minTableSize for the run (default: sparkbloom's default)")
    p.add_argument("--max-bits-per-value", default=None,
                   help="spark.sparkbloom.maxBitsPerValue while the indexes are built (default: sparkbloom's, 32)")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "joins.json"))
    p.add_argument("--img", default=os.path.join(ROOT, "docs", "img", "joins.png"))
    p.add_argument("--replot", nargs="+", metavar="JSON",
                   help="only draw --img from the results of earlier runs (their JSON files), in order")
    args = p.parse_args(argv)
    if args.replot:
        results = []
        for path in args.replot:
            with open(path) as f:
                results += json.load(f)["results"]
        plot(results, args.img)
        return 0
    line = sparkbloom.session.line_for(*sparkbloom.session.spark_version())
    jars = ",".join(sorted(glob.glob(os.path.join(ROOT, "target", "lakehouse", f"spark-{line}", "*.jar"))))
    if "delta-spark" not in jars:
        sys.exit("need the delta-spark jars of this Spark line (dev/sbt lakehouseJars)")
    base = tempfile.mkdtemp(prefix="sparkbloom-joins-")
    spark = session(jars, base)
    if args.min_table_size is not None:
        spark.conf.set("spark.sparkbloom.runtimePruning.minTableSize", args.min_table_size)
    if args.max_bits_per_value is not None:
        spark.conf.set("spark.sparkbloom.maxBitsPerValue", args.max_bits_per_value)
    cases = args.cases.split(",")
    results = []
    load = os.getloadavg()
    t0 = time.time()
    if "star" in cases:
        results.append(star(spark, base, args.files, args.runs)); print(json.dumps(results[-1]), flush=True)
    if "huge" in cases:
        results.append(huge(spark, base, args.runs)); print(json.dumps(results[-1]), flush=True)
    if args.warmup and any(c in cases for c in ("merge", "gdpr", "gdpr_iceberg", "gdpr_iceberg_mor")):
        # The first MERGE in a JVM pays for class loading and JIT: one small one, on and off, results discarded.
        merge_case(spark, "warm", 200, 20, args.budget, args.on_first)
        if any(c.startswith("gdpr_iceberg") for c in cases):
            merge_case(spark, "gdpr_iceberg", 200, 20, args.budget, args.on_first)
    for c in ("merge", "gdpr", "gdpr_iceberg", "gdpr_iceberg_mor"):
        if c in cases:
            if c.startswith("gdpr_iceberg") and "iceberg-spark-runtime" not in jars:
                sys.exit(f"{c}: no Iceberg runtime for this Spark line (dev/sbt lakehouseJars)")
            orders = [args.on_first] if args.one_order else [False, True]
            runs = [merge_case(spark, c, args.files, args.merge_keys if c == "merge" else 100, args.budget, o)
                    for o in orders]
            results.append(both_orders(runs))
            print(json.dumps(results[-1]), flush=True)
    doc = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "spark": spark.version,
           "machine": f"{platform.machine()}, {os.cpu_count()} cores", "load_before": load,
           "load_after": os.getloadavg(), "seconds": round(time.time() - t0), "args": vars(args), "results": results}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    if args.img:
        plot(results, args.img)
    bad = [r["case"] for r in results if not r.get("rows_equal", r.get("table_equal"))]
    if bad:
        print(f"ROWS DIFFER with sparkbloom on: {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
