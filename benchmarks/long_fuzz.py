#!/usr/bin/env python3
"""Long decision-level fuzz: millions of random conditions against files of four Parquet writers.

Writes one random table (tests/python/foreign_writers.py) with Spark (parquet-java, native bloom filters on),
pyarrow (no bloom filters: pyarrow 21 cannot write them), DuckDB and DataFusion (their own bloom filters),
builds a bloom index over each (CREATE BLOOM INDEX: harvested where the files' filters are valid, scanned
otherwise), then runs sparkbloom.tools.DecisionFuzz (benchmarks/harness): for each condition and each file it checks that
NativeFilters.decide and the index keep every row group that holds a matching row (see docs/fuzzing.md).
Exits 1 if any row group that must be kept was pruned; the reproducers are in the JSON.

Usage (repository root, after `source dev/common.sh; ensure_package`, which also builds the harness jar of the
default line; for another line `SPARKBLOOM_LINE=<line> dev/sbt harness/package`):
  .venv/bin/python benchmarks/long_fuzz.py --queries 1000000 --seed 20261123 --json /tmp/long_fuzz.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import foreign_writers as fw  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import line_jars  # noqa: E402  (the harness jar of the running pyspark's Spark line)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queries", type=int, default=1000000, help="random conditions (each checked on every file of one table)")
    p.add_argument("--seed", type=int, default=20261123)
    p.add_argument("--json", help="write the summary to this file")
    p.add_argument("--dir", help="write the tables here (kept); default a temporary directory (removed)")
    p.add_argument("--files", type=int, default=4, help="files per table (default 4)")
    p.add_argument("--rows-per-file", type=int, default=8192)
    p.add_argument("--row-group-size", type=int, default=2048, help="rows per row group (DuckDB rounds to 2048)")
    p.add_argument("--writers", default="spark,pyarrow,duckdb,datafusion")
    p.add_argument("--driver-memory", default="2g")
    return p.parse_args(argv)


def write_spark(spark, tables, out_dir: str, ndv: int) -> None:
    """The same rows written by Spark (parquet-java) with its bloom filters: one file per Arrow table, small
    row groups; dictionary encoding off in the first half of the files (parquet-java writes no filter for a
    chunk that is entirely dictionary-encoded), on in the others."""
    ddl = ", ".join(f"{n} {t}" for n, t, _ in fw.COLUMNS)
    for i, t in enumerate(tables):
        rows = [tuple(r[n] for n in fw.NAMES) for r in t.to_pylist()]
        w = (spark.createDataFrame(rows, ddl).coalesce(1).write.mode("append")
             .option("parquet.bloom.filter.enabled", "true")
             .option("parquet.enable.dictionary", "false" if i < (len(tables) + 1) // 2 else "true")
             .option("parquet.block.size", str(96 * 1024)))
        for n in fw.NAMES:
            w = w.option(f"parquet.bloom.filter.expected.ndv#{n}", str(ndv))
        w.parquet(out_dir)


def main(argv=None) -> int:
    args = parse_args(argv)
    writers = [w.strip() for w in args.writers.split(",") if w.strip()]
    from pyspark.sql import SparkSession

    import sparkbloom

    base = args.dir or tempfile.mkdtemp(prefix="sparkbloom-long-fuzz-")
    load_before = os.getloadavg()
    t0 = time.time()
    # DecisionFuzz is in the harness jar (benchmarks/harness); configure() adds the package's sparkbloom.jar.
    spark = sparkbloom.configure(
        SparkSession.builder.master("local[2]").appName("sparkbloom long fuzz").config("spark.jars", line_jars.harness_jar())
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", args.driver_memory).config("spark.log.level", "WARN")).getOrCreate()
    try:
        tables = fw.random_table(args.seed, args.files, args.rows_per_file, args.row_group_size)
        dirs = {}
        for w in writers:
            d = os.path.join(base, w)
            shutil.rmtree(d, ignore_errors=True)
            if w == "spark":
                write_spark(spark, tables, d, args.row_group_size)
            else:
                fw.write(w, tables, d, args.row_group_size)
            spark.sql(f"CREATE BLOOM INDEX fz ON parquet.`{d}` ({', '.join(fw.NAMES)})").collect()
            dirs[w] = d
        setup_s = time.time() - t0
        print(f"tables written and indexed in {setup_s:.1f} s under {base}; fuzzing {args.queries} conditions, seed {args.seed}",
              flush=True)
        t1 = time.time()
        out = json.loads(spark.sparkContext._jvm.sparkbloom.tools.DecisionFuzz.run(
            spark._jsparkSession, list(dirs.values()), args.queries, args.seed))
        fuzz_s = time.time() - t1
        out["command"] = " ".join([os.path.basename(sys.executable), "benchmarks/long_fuzz.py"] + (argv if argv is not None else sys.argv[1:]))
        out["writers"] = dict(fw.versions(), spark=spark.version)
        out["setup_s"] = round(setup_s, 1)
        out["fuzz_wall_s"] = round(fuzz_s, 1)
        out["load_average_before"] = [round(x, 2) for x in load_before]
        out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        out["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        tot = out["total"]
        print(json.dumps({k: v for k, v in out.items() if k not in ("tables", "reproducers")}, indent=1))
        for t in out["tables"]:
            print(f"  {t['writer']:<45} {t['files']} files {t['row_groups']:>3} row groups, {t['chunks_with_native_filters']:>4} chunks "
                  f"with native filters: native pruned {t['native_pruned']} ({_pct(t['native_pruned_of_prunable'])} of prunable), "
                  f"index pruned {t['index_pruned']} ({_pct(t['index_pruned_of_prunable'])})")
        print(f"{tot['queries']} conditions, {tot['row_groups_decided']} row-group decisions, mismatches: {out['mismatches']}")
        for r in out["reproducers"]:
            print(r)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1, ensure_ascii=False)
        return 1 if out["mismatches"] else 0
    finally:
        spark.stop()
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


if __name__ == "__main__":
    sys.exit(main())
