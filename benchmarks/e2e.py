#!/usr/bin/env python3
"""End-to-end skipping benchmark: sparkbloom against Spark's native Parquet bloom filters.

One run builds the same data three ways and queries each:
  (a) plain Parquet                                  -> config "plain"   (sparkbloom disabled)
  (b) Parquet with Spark's native bloom filters      -> config "native"  (sparkbloom disabled)
  (c) the files of (a) with a sparkbloom index       -> config "sparkbloom"
It also builds a sparkbloom index over (b) by harvesting its native filters, and times index builds
(scan, harvest) against a full scan of the indexed columns.

Two layouts: N files of one row group each ("1rg"), and N/8 files of 8 row groups each ("8rg"),
with the same rows per row group.

Every query's answer under (b) and (c) is compared with (a); any difference makes the script exit 1.
The configs' runs of a query are interleaved, in alternating order (plain, native, sparkbloom, then the reverse):
each query's median_s_by_order shows what running later is worth.

Usage (from the repository root, after `dev/sbt bundle`; the jars are those of the running pyspark's Spark line,
target/bundles/spark-<line>: benchmarks/line_jars.py):
  .venv/bin/python benchmarks/e2e.py                     # 1000 files x 10000 rows, 5 runs
  .venv/bin/python benchmarks/e2e.py --quick             # smoke-test size
  options: --files N --rows-per-file R --runs K --out results.json --img-dir DIR --data-dir DIR
"""
import argparse
import datetime
import glob
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import line_jars  # noqa: E402  (the jars of the running pyspark's Spark line)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FPP = 0.01
INDEX_OPTIONS = ""
CONFIGS = ("plain", "native", "sparkbloom")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small smoke-test run (16 files x 1000 rows, 1 run)")
    p.add_argument("--files", type=int, help="files in the 1-row-group layout (default 1000; quick 16)")
    p.add_argument("--rows-per-file", type=int, help="rows per file = per row group (default 10000; quick 1000)")
    p.add_argument("--runs", type=int, help="timed runs per query after one warm-up (default 5; quick 1)")
    p.add_argument("--build-runs", type=int, help="timed runs of each build (default 3; quick 1)")
    p.add_argument("--fpp", type=float, default=0.01,
                   help="target fpp of the native filters (default 0.01, Spark's default)")
    p.add_argument("--index-options", default="",
                   help="OPTIONS (...) of CREATE BLOOM INDEX, e.g. 'fpp = 0.01' (default: none, the index's defaults)")
    p.add_argument("--no-8rg", action="store_true", help="skip the 8-row-groups-per-file layout")
    p.add_argument("--out", help="result JSON (default benchmarks/results/e2e-<timestamp>.json)")
    p.add_argument("--img-dir", help="where PNG plots go (default docs/img; '' for none)")
    p.add_argument("--data-dir", help="where the data sets are written (default: a temporary directory, removed)")
    p.add_argument("--keep-data", action="store_true")
    p.add_argument("--jars-dir", help="sparkbloom.jar and its dependencies (default target/bundles/spark-<line of this pyspark>)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--driver-memory", default="3g")
    p.add_argument("--seed", type=int, default=20260505)
    a = p.parse_args(argv)
    a.files = a.files or (16 if a.quick else 1000)
    a.rows_per_file = a.rows_per_file or (1000 if a.quick else 10000)
    a.runs = a.runs or (1 if a.quick else 5)
    a.build_runs = a.build_runs or (1 if a.quick else 3)
    if a.img_dir is None:
        a.img_dir = os.path.join(ROOT, "docs", "img")
    if a.out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        a.out = os.path.join(ROOT, "benchmarks", "results", f"e2e-{'quick-' if a.quick else ''}{stamp}.json")
    return a


# ---------------------------------------------------------------------------------------------- session

def jvm_flags():
    with open(os.path.join(ROOT, "project", "jvm-flags.txt")) as f:
        return " ".join(l.strip() for l in f if l.strip() and not l.strip().startswith("#"))


def make_session(args):
    from pyspark.sql import SparkSession
    jars = line_jars.sparkbloom_jars(args.jars_dir)
    flags = jvm_flags()
    spark = (SparkSession.builder.master(args.master).appName("sparkbloom-e2e")
             .config("spark.jars", ",".join(jars))
             .config("spark.sql.extensions", "sparkbloom.SparkBloomExtensions")
             .config("spark.driver.extraJavaOptions", flags)
             .config("spark.executor.extraJavaOptions", flags)
             .config("spark.driver.memory", args.driver_memory)
             # AQE off: the executed plan is then the plain physical plan whose scan metrics we read.
             .config("spark.sql.adaptive.enabled", "false")
             .config("spark.sql.shuffle.partitions", "4")
             # the harvest build is timed as such, and no background OPTIMIZE of its filters (parquet-java's, over
             # the index's budget) may run beside the builds and queries timed after it
             .config("spark.sparkbloom.harvest.resizeInBackground", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.ui.port", "0")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    return spark


# ---------------------------------------------------------------------------------------------- data

# key: a bijection of the row id (id * P mod M, M prime > rows) spread over the long range, so that
# min/max statistics cannot prune; keys are = 17 (mod 4096), so 4096*x + 18 is never present.
KEY_P, KEY_M = 1000000007, 2147483647


def key_of(i):
    return (i * KEY_P % KEY_M) * 4096 + 17


def uuid_expr(col):
    h = f"md5(cast({col} as string))"
    return (f"concat_ws('-', substr({h},1,8), substr({h},9,4), substr({h},13,4), "
            f"substr({h},17,4), substr({h},21,12))")


def uuid_of(i):
    import hashlib
    h = hashlib.md5(str(i).encode()).hexdigest()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def generate(spark, total_rows, files):
    return (spark.range(0, total_rows, 1, files)
            .selectExpr(f"(pmod(id * {KEY_P}, {KEY_M})) * 4096 + 17 AS key",
                        f"{uuid_expr('id')} AS uuid",
                        "cast(pmod(id * 7919, 1000) as int) AS p_int",
                        "cast(pmod(id * 104729, 1000003) as double) / 1000.0 AS p_double",
                        "substr(sha2(cast(id as string), 256), 1, 24) AS p_str"))


def write(spark, df, path, native_bloom_ndv=None, block_size=None):
    w = df.write.mode("overwrite").option("compression", "snappy")
    if native_bloom_ndv:
        for c in ("key", "uuid"):
            w = (w.option(f"parquet.bloom.filter.enabled#{c}", "true")
                  .option(f"parquet.bloom.filter.expected.ndv#{c}", str(native_bloom_ndv))
                  .option(f"parquet.bloom.filter.fpp#{c}", str(FPP)))
    if block_size:
        w = w.option("parquet.block.size", str(block_size))
    t = time.perf_counter()
    w.parquet(path)
    return time.perf_counter() - t


def data_files(path):
    return sorted(f for f in glob.glob(os.path.join(path, "*.parquet")))


def footers(spark, path):
    """Per file: row counts and uncompressed sizes of its row groups, native bloom filter bytes per column."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    out = []
    for f in data_files(path):
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
            jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(jvm.org.apache.hadoop.fs.Path(f), conf))
        try:
            blocks = reader.getFooter().getBlocks()
            rgs = []
            for i in range(blocks.size()):
                b = blocks.get(i)
                bloom = {}
                cols = b.getColumns()
                for j in range(cols.size()):
                    c = cols.get(j)
                    name = c.getPath().toDotString()
                    if name in ("key", "uuid"):
                        try:
                            n = c.getBloomFilterLength()
                        except Exception:  # parquet-java 1.13 (Spark 3.5) has no bloom_filter_length
                            n = -1
                        if n <= 0 and c.getBloomFilterOffset() >= 0:
                            bf = reader.readBloomFilter(c)
                            n = bf.getBitsetSize() + 16 if bf is not None else 0  # bitset + ~header
                        bloom[name] = max(n, 0)
                rgs.append({"rows": b.getRowCount(), "bytes": b.getTotalByteSize(), "bloom": bloom})
            out.append({"file": f, "size": os.path.getsize(f), "row_groups": rgs})
        finally:
            reader.close()
    return out


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


# ---------------------------------------------------------------------------------------------- metrics

def scan_metrics(df):
    plan = df._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    m = {"files_read": 0, "files_size": 0, "rows_scanned": 0}
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() != "FileSourceScanExec":
            continue
        metrics = leaf.metrics()
        for name, key in (("numFiles", "files_read"), ("filesSize", "files_size"), ("numOutputRows", "rows_scanned")):
            if metrics.contains(name):
                m[key] += metrics.apply(name).value()
    skipping = df.sparkSession._jvm.sparkbloom.scan.SkippingReport.forPlan(plan)
    if skipping.size() > 0:
        s = skipping.apply(0)
        m["skipping"] = {"files_total": s.filesTotal(), "files_kept": s.filesKept(),
                         "row_groups_total": s.rowGroupsTotal(), "row_groups_kept": s.rowGroupsKept()}
    return m


def input_bytes_of_group(spark, group):
    """Bytes read by the tasks of a job group (task input metrics, via the status REST API)."""
    sc = spark.sparkContext
    try:
        sc._jsc.sc().listenerBus().waitUntilEmpty()
    except Exception:
        time.sleep(0.5)
    tracker = sc.statusTracker()
    stages = set()
    for j in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(j)
        if info:
            stages.update(info.stageIds)
    url, app = sc.uiWebUrl, sc.applicationId
    total = 0
    for s in stages:
        try:
            with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/stages/{s}", timeout=10) as r:
                total += sum(a.get("inputBytes", 0) for a in json.load(r))
        except Exception:
            return None
    return total


# ---------------------------------------------------------------------------------------------- queries

def absent_key(j):
    return 4096 * (KEY_M // 2 + j) + 18  # = 18 (mod 4096): never a key


def queries(total_rows, rng):
    ids = rng.sample(range(total_rows), 1000)
    present = ids[0]
    ins = lambda n: ", ".join(str(key_of(i)) for i in ids[:n])
    absent = absent_key(0)
    mixed = ", ".join([str(key_of(i)) for i in ids[:3]] + [str(absent_key(j)) for j in range(1, 98)])
    return [
        ("point_key", f"SELECT * FROM {{t}} WHERE key = {key_of(present)}"),
        ("point_uuid", f"SELECT * FROM {{t}} WHERE uuid = '{uuid_of(ids[1])}'"),
        ("absent_key", f"SELECT * FROM {{t}} WHERE key = {absent}"),
        ("in_10", f"SELECT * FROM {{t}} WHERE key IN ({ins(10)})"),
        ("in_3p_97a", f"SELECT * FROM {{t}} WHERE key IN ({mixed})"),
        ("in_100", f"SELECT * FROM {{t}} WHERE key IN ({ins(100)})"),
        ("in_1000", f"SELECT * FROM {{t}} WHERE key IN ({ins(1000)})"),
        ("non_selective", "SELECT p_int % 10 AS g, count(*) AS n, sum(p_double) AS s FROM {t} "
                          "WHERE p_int < 500 GROUP BY p_int % 10"),
    ]


def norm(rows):
    return sorted(tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in rows)


def run_interleaved(spark, sqls, runs):
    """Each config's query (`sqls`: config -> SQL, sparkbloom on only for "sparkbloom") once as a warm-up, then
    `runs` rounds in alternating order (plain, native, sparkbloom; then the reverse; ...): JIT, caches and the page
    cache favour whoever runs later, so each order's median is kept as well. Then one metrics run each. Returns
    config -> (all timed runs, {order: runs}, rows, metrics)."""
    cfgs = list(sqls)

    def once(cfg):
        spark.conf.set("spark.sparkbloom.enabled", "true" if cfg == "sparkbloom" else "false")
        t = time.perf_counter()
        rows = spark.sql(sqls[cfg]).collect()  # a fresh plan each time: listing and pruning are part of the cost
        return time.perf_counter() - t, rows

    answers = {c: once(c)[1] for c in cfgs}  # warm-up
    by_order = {c: {"forward": [], "reverse": []} for c in cfgs}
    for r in range(runs):
        order = "forward" if r % 2 == 0 else "reverse"
        for c in (cfgs if order == "forward" else cfgs[::-1]):
            dt, rows = once(c)
            by_order[c][order].append(dt)
            if norm(rows) != norm(answers[c]):
                raise RuntimeError("non-deterministic answer for " + sqls[c])
    out = {}
    for c in cfgs:
        spark.conf.set("spark.sparkbloom.enabled", "true" if c == "sparkbloom" else "false")
        _, rows, m = run_query(spark, sqls[c], 0)
        out[c] = (by_order[c]["forward"] + by_order[c]["reverse"], by_order[c], rows, m)
    return out


def run_query(spark, sql, runs):
    times = []
    answer = None
    for i in range(runs + 1):  # run 0 is the warm-up
        t = time.perf_counter()
        df = spark.sql(sql)  # a fresh plan each time: listing and pruning are part of the cost
        rows = df.collect()
        dt = time.perf_counter() - t
        if i > 0:
            times.append(dt)
        answer = rows
    group = f"e2e-{random.getrandbits(48):x}"
    spark.sparkContext.setJobGroup(group, "metrics run")
    t = time.perf_counter()
    df = spark.sql(sql)
    df._jdf.queryExecution().executedPlan()  # analysis + optimisation (index loading) + physical planning
    t_plan = time.perf_counter() - t
    rows = df.collect()
    t_total = time.perf_counter() - t
    spark.sparkContext.setJobGroup("", "")
    m = scan_metrics(df)
    m["profile_s"] = {"plan": t_plan, "execute": t_total - t_plan}
    m["bytes_read"] = input_bytes_of_group(spark, group)
    if norm(rows) != norm(answer):
        raise RuntimeError("non-deterministic answer for " + sql)
    return times, rows, m


# ---------------------------------------------------------------------------------------------- builds

def timed(fn):
    t = time.perf_counter()
    r = fn()
    return time.perf_counter() - t, r


def describe(spark, path):
    rows = spark.sql(f"DESCRIBE BLOOM INDEX ix ON parquet.`{path}`").collect()
    return {r["info_name"]: r["info_value"] for r in rows}


def build_index(spark, path, harvest):
    spark.conf.set("spark.sparkbloom.harvest.enabled", "true" if harvest else "false")
    spark.sql(f"DROP BLOOM INDEX IF EXISTS ix ON parquet.`{path}`").collect()
    options = f" OPTIONS ({INDEX_OPTIONS})" if INDEX_OPTIONS else ""
    dt, _ = timed(lambda: spark.sql(f"CREATE BLOOM INDEX ix ON parquet.`{path}` (key, uuid){options}").collect())
    return dt


def full_scan(spark, path):
    return timed(lambda: spark.read.parquet(path).select("key", "uuid").write.format("noop")
                 .mode("overwrite").save())[0]


# ---------------------------------------------------------------------------------------------- variant

def run_variant(spark, args, name, base, files, rows_per_rg, rgs_per_file, rng, block_size=None):
    total = files * rows_per_rg * rgs_per_file
    print(f"\n== layout {name}: {files} files x {rgs_per_file} row group(s) x {rows_per_rg} rows = {total:,} rows",
          flush=True)
    pa, pb = os.path.join(base, f"{name}-plain"), os.path.join(base, f"{name}-native")
    res = {"files": files, "rows_per_row_group": rows_per_rg, "row_groups_per_file_target": rgs_per_file,
           "rows": total, "block_size": block_size}
    res["write_s"] = {"plain": write(spark, generate(spark, total, files), pa, block_size=block_size),
                      "native": write(spark, generate(spark, total, files), pb,
                                      native_bloom_ndv=rows_per_rg, block_size=block_size)}
    fa, fb = footers(spark, pa), footers(spark, pb)
    rg_counts = [len(f["row_groups"]) for f in fa]
    res["layout"] = {"files": len(fa), "row_groups": sum(rg_counts), "row_groups_per_file_min": min(rg_counts),
                     "row_groups_per_file_max": max(rg_counts), "plain_bytes": sum(f["size"] for f in fa),
                     "native_bytes": sum(f["size"] for f in fb)}
    print(f"   written: {res['layout']}", flush=True)

    # Builds: full scan of the indexed columns, index by scanning (a), index by harvesting (b).
    full_scan(spark, pa)  # warm-up (JIT, page cache)
    b = {"full_scan_s": [], "scan_build_s": [], "harvest_build_s": []}
    for _ in range(args.build_runs):
        b["full_scan_s"].append(full_scan(spark, pa))
        b["scan_build_s"].append(build_index(spark, pa, harvest=False))
        b["harvest_build_s"].append(build_index(spark, pb, harvest=True))
    for k in list(b):
        b[k[:-2] + "_median_s"] = statistics.median(b[k])
    da, db = describe(spark, pa), describe(spark, pb)
    b["scan_index"] = {k: da.get(k) for k in ("Size In Bytes", "Filters Harvested", "Filters Scanned", "Row Groups Covered")}
    b["harvest_index"] = {k: db.get(k) for k in ("Size In Bytes", "Filters Harvested", "Filters Scanned", "Row Groups Covered")}
    res["build"] = b
    print(f"   builds (median s): full scan {b['full_scan_median_s']:.2f}, index by scan {b['scan_build_median_s']:.2f}, "
          f"by harvest {b['harvest_build_median_s']:.2f}", flush=True)

    # Sizes: index vs native filters vs n*log2(1/fpp) at the actual distinct count (unique keys:
    # distinct per row group = its rows, for each of the two columns).
    ndv = sum(rg["rows"] for f in fa for rg in f["row_groups"]) * 2
    bpv_sbbf = spark._jvm.sparkbloom.sbbf.Sizing.bitsPerValue(FPP)
    native = sum(v for f in fb for rg in f["row_groups"] for v in rg["bloom"].values())
    res["sizes"] = {
        "distinct_values": ndv,
        "index_filter_bytes": int(da["Size In Bytes"]),
        "index_on_disk_bytes": dir_bytes(os.path.join(pa, "_sparkbloom")),
        "harvested_index_filter_bytes": int(db["Size In Bytes"]),
        "native_filter_bytes": native,
        "theoretical_bytes": ndv * math.log2(1 / FPP) / 8,
        "sbbf_model_bytes": ndv * bpv_sbbf / 8,
        "sbbf_bits_per_value": bpv_sbbf,
    }
    s = res["sizes"]
    print(f"   sizes: index {s['index_filter_bytes']:,} B (on disk {s['index_on_disk_bytes']:,}), native {native:,} B, "
          f"n*log2(1/fpp) {s['theoretical_bytes']:,.0f} B, SBBF model {s['sbbf_model_bytes']:,.0f} B", flush=True)

    # Queries.
    tables = {"plain": pa, "native": pb, "sparkbloom": pa}
    rows_per_rg_avg = total / max(1, res["layout"]["row_groups"])
    res["queries"], mismatches = {}, []
    for qname, sql in queries(total, rng):
        res["queries"][qname] = {}
        answers = {}
        ran = run_interleaved(spark, {c: sql.format(t=f"parquet.`{tables[c]}`") for c in CONFIGS}, args.runs)
        for cfg in CONFIGS:
            times, by_order, rows, m = ran[cfg]
            answers[cfg] = norm(rows)
            sk = m.pop("skipping", None)
            if cfg == "sparkbloom" and sk:
                m["row_groups_read"], m["row_groups_total"] = sk["row_groups_kept"], sk["row_groups_total"]
                m["row_groups_exact"] = True
            else:  # Spark does not count row groups; vectorised scans output whole row groups
                m["row_groups_read"] = round(m["rows_scanned"] / rows_per_rg_avg, 1)
                m["row_groups_total"] = res["layout"]["row_groups"]
                m["row_groups_exact"] = False
            m.update(runs_s=times, median_s=statistics.median(times), rows_returned=len(rows),
                     median_s_by_order={o: statistics.median(v) if v else None for o, v in by_order.items()})
            res["queries"][qname][cfg] = m
        for cfg in ("native", "sparkbloom"):
            if answers[cfg] != answers["plain"]:
                mismatches.append({"layout": name, "query": qname, "config": cfg,
                                   "rows": len(answers[cfg]), "expected_rows": len(answers["plain"])})
        q = res["queries"][qname]
        print(f"   {qname:14s} " + "  ".join(
            f"{c} {q[c]['median_s']*1000:8.1f} ms/{q[c]['files_read']:>5} files" for c in CONFIGS) +
              ("" if not mismatches or mismatches[-1]["query"] != qname else "  ** ANSWERS DIFFER **"), flush=True)
    spark.conf.set("spark.sparkbloom.enabled", "true")
    res["mismatches"] = mismatches

    # Files read for 20 absent keys (planning only: the pruned listing), and the files that hold IN-100's keys.
    absent_files = []
    for j in range(20):
        df = spark.sql(f"SELECT * FROM parquet.`{pa}` WHERE key = {absent_key(100 + j)}")
        sk = scan_metrics_planned(df)
        absent_files.append(sk["files_kept"] if sk else None)
    res["absent_20_files_read"] = absent_files
    in100 = dict(queries(total, random.Random(args.seed)))["in_100"]
    spark.conf.set("spark.sparkbloom.enabled", "false")
    res["in_100_files_holding_keys"] = len({r[0] for r in spark.sql(in100.format(t=f"parquet.`{pa}`"))
                                            .selectExpr("input_file_name()").collect()})
    spark.conf.set("spark.sparkbloom.enabled", "true")
    res["index_describe"] = {k: v for k, v in da.items() if k in (
        "Sizing", "Expected False Reads Per Key", "Bytes Per Value", "Max Bits Per Value", "False Reads Per Key", "FPP")}
    return res


def scan_metrics_planned(df):
    skipping = df.sparkSession._jvm.sparkbloom.scan.SkippingReport.forPlan(df._jdf.queryExecution().executedPlan())
    if skipping.size() == 0:
        return None
    s = skipping.apply(0)
    return {"files_total": s.filesTotal(), "files_kept": s.filesKept()}


def block_size_for(spark, plain_path, rows_per_rg):
    """parquet.block.size giving about rows_per_rg rows per row group (a bit over, so 8 fit, not 9)."""
    f = footers(spark, plain_path)[0]["row_groups"][0]
    return int(f["bytes"] / f["rows"] * rows_per_rg * 1.06)


# ---------------------------------------------------------------------------------------------- targets

def targets(v):
    q, b, s = v["queries"], v["build"], v["sizes"]
    sp = lambda n: q[n]["native"]["median_s"] / q[n]["sparkbloom"]["median_s"]
    absent = sorted(x for x in v["absent_20_files_read"] if x is not None)
    absent_median = statistics.median(absent) if absent else None
    holding = v["in_100_files_holding_keys"]
    in100_files = q["in_100"]["sparkbloom"]["files_read"]
    return [
        {"target": "absent key: 0 files in the median over 20 absent keys", "value": absent_median, "unit": "files",
         "met": absent_median == 0},
        {"target": "IN of 3 present + 97 absent keys >= 10x faster than native bloom", "value": round(sp("in_3p_97a"), 2),
         "unit": "x", "met": sp("in_3p_97a") >= 10},
        {"target": "IN-100 (present) >= 3x faster than native bloom", "value": round(sp("in_100"), 2), "unit": "x",
         "met": sp("in_100") >= 3},
        {"target": "IN-100 files read <= 1.15x the files holding the keys", "value": round(in100_files / max(1, holding), 3),
         "unit": f"x ({in100_files} / {holding})", "met": in100_files <= 1.15 * holding},
        {"target": "point lookup (present key) >= 20x faster than native bloom", "value": round(sp("point_key"), 2),
         "unit": "x", "met": sp("point_key") >= 20},
        {"target": "point lookup (present uuid) >= 20x faster than native bloom (extra)", "value": round(sp("point_uuid"), 2),
         "unit": "x", "met": sp("point_uuid") >= 20},
        {"target": "absent key: no file read", "value": q["absent_key"]["sparkbloom"]["files_read"], "unit": "files",
         "met": q["absent_key"]["sparkbloom"]["files_read"] == 0},
        {"target": "non-selective query within 2% of plain",
         "value": round(q["non_selective"]["sparkbloom"]["median_s"] / q["non_selective"]["plain"]["median_s"], 3),
         "unit": "x plain", "met": q["non_selective"]["sparkbloom"]["median_s"] <= 1.02 * q["non_selective"]["plain"]["median_s"]},
        {"target": "index build by scanning <= 1.2x full scan of indexed columns",
         "value": round(b["scan_build_median_s"] / b["full_scan_median_s"], 2), "unit": "x full scan",
         "met": b["scan_build_median_s"] <= 1.2 * b["full_scan_median_s"]},
        {"target": "index build by harvesting <= 0.1x full scan",
         "value": round(b["harvest_build_median_s"] / b["full_scan_median_s"], 2), "unit": "x full scan",
         "met": b["harvest_build_median_s"] <= 0.1 * b["full_scan_median_s"]},
    ]


# ---------------------------------------------------------------------------------------------- output

def markdown(result):
    out = []
    for name, v in result["variants"].items():
        L = v["layout"]
        out.append(f"\n### Layout {name}: {L['files']} files, {L['row_groups']} row groups "
                   f"({L['row_groups_per_file_min']}-{L['row_groups_per_file_max']} per file), {v['rows']:,} rows\n")
        out.append("| query | config | median ms | files read | row groups read | rows scanned | bytes read | rows out |")
        out.append("|---|---|---:|---:|---:|---:|---:|---:|")
        for qn, per in v["queries"].items():
            for c in CONFIGS:
                m = per[c]
                rg = f"{m['row_groups_read']}" + ("" if m["row_groups_exact"] else "*")
                br = "n/a" if m["bytes_read"] is None else f"{m['bytes_read']:,}"
                out.append(f"| {qn} | {c} | {m['median_s']*1000:.1f} | {m['files_read']} | {rg} / {m['row_groups_total']} | "
                           f"{m['rows_scanned']:,} | {br} | {m['rows_returned']} |")
        b, s = v["build"], v["sizes"]
        out.append("\n| build | median s | runs |")
        out.append("|---|---:|---|")
        for k, label in (("full_scan", "full scan of key, uuid (noop write)"), ("scan_build", "CREATE BLOOM INDEX by scanning (a)"),
                         ("harvest_build", "CREATE BLOOM INDEX by harvesting (b)")):
            out.append(f"| {label} | {b[k+'_median_s']:.2f} | {', '.join(f'{x:.2f}' for x in b[k+'_s'])} |")
        out.append(f"\nHarvest index: {b['harvest_index']}; scan index: {b['scan_index']}\n")
        out.append(f"Index sizing (DESCRIBE): {v.get('index_describe')}\n")
        out.append(f"Files read for 20 absent keys: {v.get('absent_20_files_read')}; "
                   f"files holding IN-100's keys: {v.get('in_100_files_holding_keys')}\n")
        out.append("| size | bytes | vs n*log2(1/fpp) |")
        out.append("|---|---:|---:|")
        for k, label in (("index_filter_bytes", "sparkbloom index, filters (scan build)"),
                         ("index_on_disk_bytes", "sparkbloom index, on disk"),
                         ("harvested_index_filter_bytes", "sparkbloom index, filters (harvested)"),
                         ("native_filter_bytes", "native Parquet bloom filters"),
                         ("sbbf_model_bytes", f"SBBF model at fpp {FPP} ({s['sbbf_bits_per_value']:.2f} bits/value)"),
                         ("theoretical_bytes", f"n*log2(1/fpp), n = {s['distinct_values']:,}")):
            out.append(f"| {label} | {s[k]:,.0f} | {s[k]/s['theoretical_bytes']:.2f} |")
        out.append("\n| target | value | met |")
        out.append("|---|---:|---|")
        for t in v.get("targets", []):
            out.append(f"| {t['target']} | {t['value']} {t['unit']} | {'met' if t['met'] else 'MISSED'} |")
    out.append("\n\\* row groups for plain/native are derived: rows scanned / rows per row group (Spark does not count them).")
    return "\n".join(out)


def plot(result, img_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(img_dir, exist_ok=True)
    colors = {"plain": "#9e9e9e", "native": "#e69f00", "sparkbloom": "#0072b2"}
    written = []
    for metric, fname, ylabel, log in (("median_s", "e2e-latency.png", "median latency (ms, log scale)", True),
                                       ("files_read", "e2e-files-read.png", "files read", False)):
        variants = list(result["variants"].items())
        fig, axes = plt.subplots(len(variants), 1, figsize=(10, 3.6 * len(variants)), squeeze=False)
        for ax, (name, v) in zip(axes[:, 0], variants):
            qs = list(v["queries"])
            w = 0.27
            for i, c in enumerate(CONFIGS):
                vals = [v["queries"][q][c][metric] * (1000 if metric == "median_s" else 1) for q in qs]
                xs = [j + (i - 1) * w for j in range(len(qs))]
                ax.bar(xs, [max(x, 1e-3) if log else x for x in vals], w, label=c, color=colors[c])
            ax.set_xticks(range(len(qs)))
            ax.set_xticklabels(qs)
            if log:
                ax.set_yscale("log")
            ax.set_ylabel(ylabel)
            L = v["layout"]
            ax.set_title(f"{name}: {L['files']} files, {L['row_groups']} row groups, {v['rows']:,} rows")
            ax.grid(axis="y", alpha=0.3)
            ax.legend()
        fig.tight_layout()
        path = os.path.join(img_dir, fname)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def environment(spark):
    def cmd(c):
        try:
            return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
        except Exception:
            return None
    cpu = cmd("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2")
    return {"cpu": cpu and cpu.strip(), "cores": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "spark": spark.version,
            "java": spark._jvm.java.lang.System.getProperty("java.version"),
            "mem_total": cmd("grep MemTotal /proc/meminfo"), "loadavg_start": os.getloadavg(),
            "git_commit": cmd(f"git -C {ROOT} rev-parse --short HEAD")}


def main(argv=None):
    args = parse_args(argv)
    global FPP, INDEX_OPTIONS
    FPP = args.fpp
    INDEX_OPTIONS = args.index_options
    rng = random.Random(args.seed)
    spark = make_session(args)
    base = args.data_dir or tempfile.mkdtemp(prefix="sparkbloom-e2e-")
    os.makedirs(base, exist_ok=True)
    result = {"args": {k: v for k, v in vars(args).items()}, "environment": environment(spark),
              "started": datetime.datetime.now().isoformat(timespec="seconds"), "fpp": FPP, "variants": {}}
    t0 = time.perf_counter()
    try:
        v1 = run_variant(spark, args, "1rg", base, args.files, args.rows_per_file, 1, rng)
        v1["targets"] = targets(v1)
        result["variants"]["1rg"] = v1
        if not args.no_8rg:
            bs = block_size_for(spark, os.path.join(base, "1rg-plain"), args.rows_per_file)
            v8 = run_variant(spark, args, "8rg", base, max(1, args.files // 8), args.rows_per_file, 8, rng, block_size=bs)
            v8["targets"] = targets(v8)
            result["variants"]["8rg"] = v8
    finally:
        result["environment"]["loadavg_end"] = os.getloadavg()
        result["elapsed_s"] = time.perf_counter() - t0
        if not args.keep_data and not args.data_dir:
            shutil.rmtree(base, ignore_errors=True)
    mismatches = [m for v in result["variants"].values() for m in v["mismatches"]]
    result["correct"] = not mismatches
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, default=str)
    print(markdown(result))
    if args.img_dir:
        for p in plot(result, args.img_dir):
            print("plot:", p)
    print(f"\nresults: {args.out}  (elapsed {result['elapsed_s']:.0f} s)")
    spark.stop()
    if mismatches:
        print("ANSWERS DIFFER:", json.dumps(mismatches, indent=1), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
