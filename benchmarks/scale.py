#!/usr/bin/env python3
"""Scale benchmark: planning cost of a bloom lookup as the index grows to 10^6 row groups.

For N row groups it writes a real index in the real format (format 2, with sparkbloom's own writer:
segments, layout.bin, commit) over a *simulated* table: the data files are named in the index but not on
disk (a probe reads 32 bytes per row group whatever the data, so a small distinct count per row group keeps
10^6 row groups on this disk). It then measures, in a fresh JVM, the planning code of a lookup exactly as
the rule runs it (newest commit, layout load, block-sliced probe, and BloomSkippingFileIndex.listFiles over
a simulated listing of those files; Spark's own listing of the files is NOT part of the figures):

  point_cold_ms     point lookup, sparkbloom's cache empty (the OS page cache may hold the index files)
  point_warm_ms     point lookup, runs and layout cached (median)
  in100_warm_ms     IN of 100 present keys (median)
  index_bytes_read_point   bytes of filter runs a cold point lookup reads
  driver_heap_retained_mb  heap the driver holds after the lookups (GC'd, minus the listing)

With --whole, the same index is also measured the way sparkbloom worked before block slicing (every
filter loaded into the driver and probed one by one), in another fresh JVM.

Usage (repository root, after `dev/sbt bundle harness/package`; the jars are those of the running pyspark's
Spark line, target/bundles/spark-<line> and target/harness/spark-<line>: benchmarks/line_jars.py):
  .venv/bin/python benchmarks/scale.py --row-groups 100000 --json
  .venv/bin/python benchmarks/scale.py --sweep 10000,100000,1000000 --whole --plot   # docs/img/scale-*.png
  .venv/bin/python benchmarks/scale.py --sweep 1000,10000,100000,1000000 --format both --plot \
      --out benchmarks/results/scale-hierarchy.json                              # docs/img/scale-hierarchy.png

--format: `hierarchy` (the default: segment summaries above the row groups' filters, layout format 2) or
`flat` (the format of sparkbloom 0.1: one level, layout format 1, written by the same code), or `both`.
Further fields: keys10k_ms (IN of 10,000 present keys, planned whole, median of 3),
false_row_groups_per_absent_key_measured (10,000 absent keys) and _model (DESCRIBE's figure),
index_bytes_total (every file of the version), layout_bytes.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import jvm_flags  # noqa: E402  (the JVM flags of project/jvm-flags.txt, as e2e.py passes them)
import line_jars  # noqa: E402  (the jars of the running pyspark's Spark line)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--row-groups", type=int, default=100000, help="N, row groups of the simulated table")
    p.add_argument("--columns", type=int, default=1, help="indexed columns (the lookups use the first)")
    p.add_argument("--row-groups-per-file", type=int, default=1, help="row groups per simulated file (default 1)")
    p.add_argument("--values-per-row-group", type=int, default=32, help="distinct keys per row group (default 32)")
    p.add_argument("--tasks", type=int, default=200, help="build tasks simulated (each writes its own segments)")
    p.add_argument("--false-reads-per-key", type=float, default=0.1)
    p.add_argument("--max-bits-per-value", type=float, default=32.0)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--cache-max-bytes", default="176m", help="spark.sparkbloom.cache.maxBytes (default: its default, 176m)")
    p.add_argument("--driver-memory", default="6g")
    p.add_argument("--data-dir", default="/tmp/sparkbloom-scale")
    p.add_argument("--rewrite", action="store_true", help="rewrite the index even if it exists")
    p.add_argument("--whole", action="store_true", help="also measure the whole-index-loaded design")
    p.add_argument("--format", choices=["hierarchy", "flat", "both"], default="hierarchy",
                   help="index format: hierarchy (now: segment summaries, compact layout), flat (sparkbloom 0.1: one "
                        "level, layout format 1), or both (one JSON object each)")
    p.add_argument("--sweep", help="comma-separated N values; prints one JSON object per N")
    p.add_argument("--plot", action="store_true", help="with --sweep: write log-log plots to docs/img/")
    p.add_argument("--out", help="with --sweep: write all results to this JSON file")
    p.add_argument("--json", action="store_true", help="print only the JSON object")
    p.add_argument("--plot-from", help="only plot the results saved by --out in this file")
    p.add_argument("--jfr", default="", help="record a JFR profile of the measure phase into this file")
    p.add_argument("--real-files", help="comma-separated file counts: real tables of one-row-group files (point lookups, "
                                        "files read, planning overhead over Spark's own listing)")
    p.add_argument("--rows-per-file", type=int, default=100, help="with --real-files (default 100)")
    p.add_argument("--phase", choices=["write", "measure", "whole", "real"], help=argparse.SUPPRESS)
    p.add_argument("--jars-dir", help="sparkbloom.jar and its dependencies (default target/bundles/spark-<line of this pyspark>)")
    return p.parse_args(argv)


def make_session(args):
    from pyspark.sql import SparkSession
    # ScaleBench is in the harness jar (benchmarks/harness), not in sparkbloom.jar.
    jars = line_jars.sparkbloom_jars(args.jars_dir) + [line_jars.harness_jar()]
    spark = (SparkSession.builder.master("local[2]").appName("sparkbloom-scale")
             .config("spark.jars", ",".join(jars))
             .config("spark.sql.extensions", "sparkbloom.SparkBloomExtensions")
             .config("spark.driver.extraJavaOptions", jvm_flags() + (
                 f" -XX:StartFlightRecording=filename={args.jfr},settings=profile" if args.jfr and args.phase in ("measure", "real") else ""))
             .config("spark.driver.memory", args.driver_memory)
             .config("spark.ui.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    return spark


def index_dir(args, n):
    return os.path.join(args.data_dir, f"{args.format}-n{n}-c{args.columns}-r{args.row_groups_per_file}"
                                       f"-v{args.values_per_row_group}")


def run_phase(args, n):
    """One phase in this process (a fresh JVM): prints its JSON object on the last line."""
    spark = make_session(args)
    bench = spark._jvm.sparkbloom.tools.ScaleBench
    d = index_dir(args, n)
    if args.phase == "write":
        files = -(-n // args.row_groups_per_file)
        out = bench.write(spark._jsparkSession, d, n, args.columns, args.row_groups_per_file, args.values_per_row_group,
                          min(args.tasks, files), args.false_reads_per_key, args.max_bits_per_value, args.format)
    elif args.phase == "measure":
        cache = spark._jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(args.cache_max_bytes)
        out = bench.measure(spark._jsparkSession, d, args.values_per_row_group, args.repeats, cache)
    elif args.phase == "real":
        out = real_phase(spark, args, n)
    else:
        out = bench.measureWhole(spark._jsparkSession, d, args.values_per_row_group, args.repeats)
    spark.stop()
    print(out)


def real_phase(spark, args, n):
    """A real table of n one-row-group files (written once), its index (built once), then the lookups."""
    from pyspark.sql import functions as F
    d = os.path.join(args.data_dir, f"real-{n}x{args.rows_per_file}")
    rows = n * args.rows_per_file
    built = {}
    if not os.path.exists(os.path.join(d, "_SUCCESS")):
        t = time.time()
        # Two writer tasks, each cutting its rows into files of rows_per_file rows: one row group per file.
        (spark.range(0, rows, 1, 2)
         .select(((F.col("id") * 1000003) % 2147483647).alias("key"), F.col("id").alias("v"))
         .write.mode("overwrite").option("maxRecordsPerFile", args.rows_per_file).parquet(d))
        built["write_seconds"] = round(time.time() - t, 1)
    if not os.path.exists(os.path.join(d, "_sparkbloom", "ix")):
        t = time.time()
        spark.sql(f"CREATE BLOOM INDEX ix ON parquet.`{d}` (key)")
        built["index_seconds"] = round(time.time() - t, 1)
    keys = [((i * 7919) * 1000003) % 2147483647 for i in range(1, 41)]
    out = json.loads(spark._jvm.sparkbloom.tools.ScaleBench.realFiles(
        spark._jsparkSession, d, "key", spark._jvm.sparkbloom.tools.ScaleBench.longs(",".join(map(str, keys))), args.repeats))
    out.update(built)
    out["rows_per_file"] = args.rows_per_file
    out["table"] = d
    return json.dumps(out)


def phase(args, n, name):
    cmd = [sys.executable, os.path.abspath(__file__), "--phase", name, "--row-groups", str(n)]
    for k in ("columns", "row_groups_per_file", "values_per_row_group", "tasks", "false_reads_per_key",
              "max_bits_per_value", "repeats", "cache_max_bytes", "driver_memory", "data_dir", "jars_dir",
              "rows_per_file", "jfr", "format"):
        if getattr(args, k) is not None:
            cmd += ["--" + k.replace("_", "-"), str(getattr(args, k))]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-4000:])
        sys.exit(f"scale.py: phase {name} failed for N={n}")
    obj = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])
    obj["phase_seconds"] = round(time.time() - t, 1)
    return obj


def one(args, n):
    d = index_dir(args, n)
    written = None
    if args.rewrite or not os.path.exists(os.path.join(d, "t", "_sparkbloom", "ix", "_commits", "1.json")):
        written = phase(args, n, "write")
    result = phase(args, n, "measure")
    result["written"] = written
    result["index_dir"] = d
    if args.whole:
        result["whole"] = phase(args, n, "whole")
    try:
        result["load_average"] = os.getloadavg()[0]
    except OSError:
        pass
    return result


def plot(results, img_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ns = [r["row_groups"] for r in results]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    panels = [("point_warm_ms", "point lookup, warm (ms)"), ("point_cold_ms", "point lookup, cold (ms)"),
              ("driver_heap_retained_mb", "driver heap retained (MB)")]
    index_part = {"point_warm_ms": "index_point_warm_ms", "point_cold_ms": "index_point_cold_ms"}
    for ax, (key, title) in zip(axes, panels):
        ax.loglog(ns, [max(r[key], 1e-3) for r in results], "o-", label="block-sliced (now), with file matching")
        if key in index_part:
            ax.loglog(ns, [max(r[index_part[key]], 1e-3) for r in results], "^-", label="block-sliced (now), index part")
        if all("whole" in r for r in results):
            ax.loglog(ns, [max(r["whole"][key], 1e-3) for r in results], "s--", label="whole index loaded (before)")
        ax.set_xlabel("row groups N")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    axes[0].axhline(50, color="red", lw=0.8, ls=":")
    axes[1].axhline(500, color="red", lw=0.8, ls=":")
    axes[2].axhline(200, color="red", lw=0.8, ls=":")
    fig.suptitle("sparkbloom planning cost vs index size (goals at N=10^6 dotted)")
    fig.tight_layout()
    os.makedirs(img_dir, exist_ok=True)
    path = os.path.join(img_dir, "scale-planning.png")
    fig.savefig(path, dpi=110)
    fig2, ax = plt.subplots(figsize=(6, 4.5))
    ax.loglog(ns, [r["index_bytes_read_point"] for r in results], "o-", label="block-sliced: bytes read (cold point)")
    if all("whole" in r for r in results):
        ax.loglog(ns, [r["whole"]["index_bytes_read_point"] for r in results], "s--", label="whole index loaded")
    ax.loglog(ns, [40 * n for n in ns], ":", color="red", label="goal 40·N")
    ax.set_xlabel("row groups N"); ax.set_ylabel("bytes"); ax.grid(True, which="both", alpha=0.3); ax.legend()
    fig2.tight_layout()
    path2 = os.path.join(img_dir, "scale-bytes.png")
    fig2.savefig(path2, dpi=110)
    return [path, path2]


def slope(ns, ys):
    """Least-squares slope of log y against log N: cost ~ N^slope."""
    import math
    xs = [math.log(n) for n in ns]; ls = [math.log(max(y, 1e-6)) for y in ys]
    mx = sum(xs) / len(xs); my = sum(ls) / len(ls)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ls)) / den if den else float("nan")


def plot_formats(results, img_dir):
    """The hierarchy beside the flat format (sparkbloom 0.1), log-log: docs/img/scale-hierarchy.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [("point_warm_ms", "point lookup, warm (ms)", 5), ("point_cold_ms", "point lookup, cold (ms)", 300),
              ("in100_warm_ms", "IN of 100 keys, warm (ms)", 30), ("keys10k_ms", "10,000 keys (ms)", 2000),
              ("index_bytes_read_point", "index bytes read, cold point lookup", 1 << 20),
              ("false_row_groups_per_absent_key_measured", "false row groups per absent key (measured)", 0.1),
              ("index_bytes_total", "index bytes on disk", None),
              ("driver_heap_retained_mb", "driver heap retained (MB)", 200)]
    fig, axes = plt.subplots(2, 4, figsize=(20, 9))
    for ax, (key, title, goal) in zip(axes.flat, panels):
        for fmt, style in (("hierarchy", "o-"), ("flat", "s--")):
            rs = sorted((r for r in results if r.get("format") == fmt and key in r), key=lambda r: r["row_groups"])
            if not rs:
                continue
            ns = [r["row_groups"] for r in rs]
            ys = [max(r[key], 1e-4) for r in rs]
            # slopes over 10^4..10^6 (the range) where the sweep has it
            big = [(n, y) for n, y in zip(ns, ys) if n >= 10000]
            sl = slope(*zip(*big)) if len(big) >= 2 else float("nan")
            ax.loglog(ns, ys, style, label=f"{fmt}, whole planning (slope {sl:.2f})" if "point" in key or "in100" in key
                      else f"{fmt} (slope {sl:.2f})")
            part = {"point_warm_ms": "index_point_warm_ms", "point_cold_ms": "index_point_cold_ms",
                    "in100_warm_ms": "index_in100_warm_ms"}.get(key)
            if part:
                ps = [max(r[part], 1e-4) for r in rs]
                big = [(n, y) for n, y in zip(ns, ps) if n >= 10000]
                sl = slope(*zip(*big)) if len(big) >= 2 else float("nan")
                ax.loglog(ns, ps, style[0] + ":", alpha=0.7, label=f"{fmt}, index part (slope {sl:.2f})")
            if key == "false_row_groups_per_absent_key_measured":
                ax.loglog(ns, [max(r["false_row_groups_per_absent_key_model"], 1e-4) for r in rs], ":",
                          label=f"{fmt}, model")
        if goal:
            ax.axhline(goal, color="red", lw=0.8, ls=":")
        ax.set_xlabel("row groups R")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("sparkbloom planning cost vs row groups R: segment summaries (hierarchy, now) vs one level (flat, "
                 "sparkbloom 0.1); goals at R=10^6 red; slopes of log cost / log R over 10^4..10^6")
    fig.tight_layout()
    os.makedirs(img_dir, exist_ok=True)
    path = os.path.join(img_dir, "scale-hierarchy.png")
    fig.savefig(path, dpi=100)
    return [path]


def main(argv=None):
    args = parse_args(argv)
    if args.phase:
        return run_phase(args, args.row_groups)
    if args.plot_from:
        with open(args.plot_from) as f:
            saved = json.load(f)
        plotter = plot_formats if any(r.get("format") == "flat" for r in saved) else plot
        for p in plotter(saved, os.path.join(ROOT, "docs", "img")):
            print("wrote", p, file=sys.stderr)
        return
    if args.real_files:
        real = [phase(args, int(n), "real") for n in args.real_files.split(",")]
        for r in real:
            print(json.dumps(r), flush=True)
        if len(real) >= 2:
            print(json.dumps({"overhead_growth": real[-1]["overhead_ms"] / max(real[0]["overhead_ms"], 1e-6),
                              "files_growth": real[-1]["files"] / real[0]["files"]}), flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(real, f, indent=2)
        return
    ns = [int(x) for x in args.sweep.split(",")] if args.sweep else [args.row_groups]
    formats = ["hierarchy", "flat"] if args.format == "both" else [args.format]
    results = []
    for n in ns:
        for fmt in formats:
            r = one(argparse.Namespace(**{**vars(args), "format": fmt}), n)
            r["format"] = fmt
            results.append(r)
            print(json.dumps(r) if args.json or args.sweep else json.dumps(r, indent=2), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=2)
    if args.plot and results:
        plotter = plot_formats if any(r.get("format") == "flat" for r in results) else plot
        for p in plotter(results, os.path.join(ROOT, "docs", "img")):
            print("wrote", p, file=sys.stderr)


if __name__ == "__main__":
    main()
