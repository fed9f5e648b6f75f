#!/usr/bin/env python3
"""Requests, not bytes: what sparkbloom's lookups, builds and writes cost on an object store.

A real S3 server (MinIO, started by `dev/objectstore start` if none is running) sits behind the latency proxy of
tests/objectstore/s3proxy.py, which delays the first byte of every response (--latencies, default 0,20,100 ms), caps
each connection's bandwidth (--bandwidth-mbps, default 60 MB/s) and counts every request by method and by path class
(data files, the index under _sparkbloom/, the table's log). Spark reaches it through Hadoop's S3A (the jars of
`dev/sbt s3aJars`), in one local session (--master, default local[8]: the tasks of a lookup wait on the network, not
the CPU, as on a cluster's executors).

The tables: `--files` files of `--rows` rows (one row group each) with a bigint key `k` and a UUID string `u`,
written with parquet-java's bloom filters on both (so the index is harvested from them, and "off" is Spark with
its own Parquet bloom filters, the strongest baseline it has), indexed with CREATE BLOOM INDEX on (k, u); a plain copy
of the same files without an index (server-side copies); and `--big-files` tiny files for the cold 10^4-file
lookup. The data stays in the server's bucket between runs of the same sizes (the server keeps it until
`dev/objectstore stop`).

Every on/off pair alternates its order over the runs (off-on, on-off, ...) and reports the medians of each order
as well as of all runs; every query's rows with the index on are compared with the index off (exit 1 on a
difference).

Usage (from the repository root, with the package built: dev/test or `dev/sbt ...PACKAGE_TASKS; ensure_package`):
  .venv/bin/python benchmarks/objectstore.py --json                  # the issue's sizes: 1000 x 2000, 10^4 cold
  .venv/bin/python benchmarks/objectstore.py --quick --json          # 50 files, 1000 cold, latencies 0,20
  options: --files N --rows R --big-files N --latencies 0,20,100 --runs K --out F.json --img-dir DIR
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "objectstore"))
from s3proxy import start_proxy  # noqa: E402
from spark_s3 import s3_session  # noqa: E402

KEY_P, KEY_M = 1000000007, 2147483647


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="50 files, 1000 for the cold lookup, latencies 0,20, 3 runs")
    p.add_argument("--files", type=int, help="files of the indexed table (default 1000)")
    p.add_argument("--rows", type=int, default=2000, help="rows per file (default 2000)")
    p.add_argument("--big-files", type=int, help="files of the cold-lookup table (default 10000; 0: none)")
    p.add_argument("--latencies", help="first-byte delays in ms (default 0,20,100)")
    p.add_argument("--bandwidth-mbps", type=float, default=60.0)
    p.add_argument("--runs", type=int, help="timed runs of each query at 20 ms (default 6; fewer at other latencies)")
    p.add_argument("--master", default="local[8]")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    p.add_argument("--out", help="result file (default benchmarks/results/objectstore-<stamp>.json)")
    p.add_argument("--img-dir", default=str(ROOT / "docs" / "img"), help="where the plots go ('' for none)")
    p.add_argument("--prefix", default="bench-os", help="key prefix of the tables in the bucket")
    p.add_argument("--built-in100", action="store_true",
                   help="also IN of 100 keys against an index built by a scan to the budget, not harvested")
    p.add_argument("--built-only", action="store_true",
                   help="only the lookups with a built index (--built-in100's), on the tables of an earlier run")
    p.add_argument("--harvest-runs", type=int, default=2,
                   help="timed harvests and scans after the first of each, alternating (default 2)")
    p.add_argument("--keep-harvested", action="store_true",
                   help="look up with the index as harvested (spark.sparkbloom.harvest.resizeInBackground=false), not "
                        "as re-sized to its budget in the background after CREATE")
    p.add_argument("--plot-files", metavar="A.json,B.json",
                   help="only plot: each figure against the table's files, from result files of runs at other --files")
    p.add_argument("--writes-only", action="store_true",
                   help="only the appends, maintained against plain, at 20 ms (and the tables and index they need)")
    a = p.parse_args(argv)
    a.files = a.files or (50 if a.quick else 1000)
    a.big_files = a.big_files if a.big_files is not None else (1000 if a.quick else 10000)
    a.latencies = [float(x) for x in (a.latencies or ("0,20" if a.quick else "0,20,100")).split(",")]
    a.runs = a.runs or (3 if a.quick else 6)
    if a.out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        kind = "writes-" if a.writes_only else "quick-" if a.quick else ""
        a.out = str(ROOT / "benchmarks" / "results" / f"objectstore-{kind}{stamp}.json")
    return a


def log(msg: str) -> None:
    print(f"[objectstore {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ server and session

def server_env() -> dict[str, str]:
    env_file = ROOT / "target" / "objectstore" / "env.json"
    subprocess.run([str(ROOT / "dev" / "objectstore"), "install"], check=True, stdout=sys.stderr)
    if subprocess.run([str(ROOT / "dev" / "objectstore"), "status"], capture_output=True).returncode != 0:
        subprocess.run([str(ROOT / "dev" / "objectstore"), "start"], check=True, stdout=sys.stderr)
    env: dict[str, str] = json.loads(env_file.read_text())
    return env


def boto(env: dict[str, str]) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=env["SPARKBLOOM_S3_ENDPOINT"], region_name="us-east-1",
                        aws_access_key_id=env["SPARKBLOOM_S3_ACCESS_KEY"],
                        aws_secret_access_key=env["SPARKBLOOM_S3_SECRET_KEY"],
                        config=Config(s3={"addressing_style": "path"}, max_pool_connections=32))


def keys_under(s3: Any, bucket: str, prefix: str) -> list[str]:
    out: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out += [o["Key"] for o in page.get("Contents", [])]
    return out


# ------------------------------------------------------------------------------------------ data

def uuid_expr(col: str) -> str:
    h = f"md5(cast({col} as string))"
    return (f"concat_ws('-', substr({h},1,8), substr({h},9,4), substr({h},13,4), substr({h},17,4), "
            f"substr({h},21,12))")


def key_of(i: int) -> int:
    return (i * KEY_P % KEY_M) * 4096 + 17


def absent_key(j: int) -> int:
    return 4096 * (KEY_M // 2 + j) + 18  # = 18 (mod 4096): never a key


def table_df(spark: Any, files: int, rows: int, start: int = 0) -> Any:
    return (spark.range(start, start + files * rows, 1, files)
            .selectExpr(f"pmod(id * {KEY_P}, {KEY_M}) * 4096 + 17 AS k", f"{uuid_expr('id')} AS u",
                        "cast(pmod(id * 7919, 1000) as int) AS v"))


def write_local(spark: Any, df: Any, path: str, bloom_ndv: int) -> None:
    w = df.write.mode("overwrite").option("compression", "snappy")
    for c in ("k", "u"):
        w = (w.option(f"parquet.bloom.filter.enabled#{c}", "true")
             .option(f"parquet.bloom.filter.expected.ndv#{c}", str(bloom_ndv))
             .option(f"parquet.bloom.filter.fpp#{c}", "0.01"))
    w.parquet(path)


def upload(s3: Any, bucket: str, local: str, prefix: str) -> int:
    files = sorted(f for f in os.listdir(local) if f.endswith(".parquet"))

    def put(name: str) -> None:
        s3.upload_file(os.path.join(local, name), bucket, f"{prefix}/{name}")

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, files))
    return len(files)


def ensure_table(spark: Any, s3: Any, bucket: str, prefix: str, files: int, rows: int, start: int = 0) -> None:
    """`files` Parquet files under s3://bucket/prefix, written locally by Spark and uploaded (S3A's commit of
    thousands of files would measure the committer, not the lookups)."""
    have = [k for k in keys_under(s3, bucket, prefix + "/") if k.endswith(".parquet") and "/_sparkbloom/" not in k]
    if len(have) == files:
        return
    for k in keys_under(s3, bucket, prefix + "/"):
        s3.delete_object(Bucket=bucket, Key=k)
    with tempfile.TemporaryDirectory() as tmp:
        local = os.path.join(tmp, "t")
        write_local(spark, table_df(spark, files, rows, start), "file://" + local, rows)
        n = upload(s3, bucket, local, prefix)
    log(f"uploaded {n} files to s3://{bucket}/{prefix}")


def server_copy(s3: Any, bucket: str, src: str, dst: str) -> None:
    for k in keys_under(s3, bucket, dst + "/"):
        s3.delete_object(Bucket=bucket, Key=k)
    names = [k for k in keys_under(s3, bucket, src + "/") if "/_sparkbloom/" not in k]

    def cp(k: str) -> None:
        s3.copy_object(Bucket=bucket, Key=dst + k[len(src):], CopySource={"Bucket": bucket, "Key": k})

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(cp, names))


# ------------------------------------------------------------------------------------------ measuring

class Meter:
    """Runs a query with the proxy's counters reset before it; the request log classifies what it did."""

    def __init__(self, spark: Any, proxy: Any) -> None:
        self.spark, self.proxy = spark, proxy

    def index_on(self, on: bool) -> None:
        self.spark.conf.set("spark.sparkbloom.enabled", "true" if on else "false")

    def run(self, fn: Callable[[], Any]) -> dict[str, Any]:
        self.proxy.reset()
        t = time.perf_counter()
        rows = fn()
        ms = (time.perf_counter() - t) * 1000
        reqs = self.proxy.log()  # the newest 20,000 requests: the counts come from the proxy's counters
        st = self.proxy.stats()
        by_class: dict[str, int] = {c: n for c, n in st["by_class"].items() if n}
        by_method: dict[str, int] = dict(st["by_method"])
        data_files = sum(1 for _, m, c, t in reqs if c == "data" and ".parquet" in t.split("?")[0])
        index_lists = sum(1 for _, m, c, _t in reqs if c == "index" and m == "LIST")
        files_read = len({t.split("?")[0] for _, m, c, t in reqs if c == "data" and ".parquet" in t.split("?")[0]})
        return {"ms": ms, "rows": rows, "requests": st["requests"], "by_class": by_class, "by_method": by_method,
                "data_file_requests": data_files, "data_files_touched": files_read, "index_lists": index_lists,
                "log": reqs}


def norm(rows: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in rows) if isinstance(rows, list) else rows


def med(xs: list[float]) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def paired(meter: Meter, make: Callable[[int], Callable[[], Any]], runs: int,
           off_variant: Callable[[int], Callable[[], Any]] | None = None) -> dict[str, Any]:
    """Runs `make(i)` with the index on and off, `runs` times each, alternating which goes first (off-on, on-off);
    checks the rows are equal; medians overall and per order, and the first on run's request counts."""
    on_ms: dict[str, list[float]] = {"off_first": [], "on_first": []}
    off_ms: dict[str, list[float]] = {"off_first": [], "on_first": []}
    on_req: list[dict[str, Any]] = []
    off_req: list[dict[str, Any]] = []
    for i in range(runs):
        order = "off_first" if i % 2 == 0 else "on_first"
        seq = [False, True] if order == "off_first" else [True, False]
        got: dict[bool, dict[str, Any]] = {}
        for on in seq:
            meter.index_on(on)
            fn = make(i) if on or off_variant is None else off_variant(i)
            got[on] = meter.run(fn)
        meter.index_on(True)
        if norm(got[True]["rows"]) != norm(got[False]["rows"]):
            raise SystemExit(f"WRONG ANSWER: index on {got[True]['rows']!r} vs off {got[False]['rows']!r}")
        on_ms[order].append(got[True]["ms"])
        off_ms[order].append(got[False]["ms"])
        on_req.append(got[True])
        off_req.append(got[False])
    strip = lambda r: {k: v for k, v in r.items() if k not in ("rows", "log")}  # noqa: E731
    return {
        "on_ms": med(on_ms["off_first"] + on_ms["on_first"]), "off_ms": med(off_ms["off_first"] + off_ms["on_first"]),
        "on_ms_by_order": {k: med(v) for k, v in on_ms.items()},
        "off_ms_by_order": {k: med(v) for k, v in off_ms.items()},
        "on": strip(on_req[-1]), "off": strip(off_req[-1]),
        "on_requests_median": med([r["requests"] for r in on_req]),
        "off_requests_median": med([r["requests"] for r in off_req]),
    }


def clear_caches(spark: Any) -> None:
    jvm = spark._jvm  # type: ignore[attr-defined]
    try:
        jvm.sparkbloom.index.IndexStore.clearCaches()  # the loaded versions and the newest commits read
    except Exception:  # noqa: BLE001  (a build before the commit cache: the loaded versions only)
        jvm.sparkbloom.index.sliced.IndexCache.clear()


# ------------------------------------------------------------------------------------------ the runs

def point_queries(spark: Any, meter: Meter, path: str, rows_total: int, placement: dict[str, str], runs: int,
                  tag: str) -> dict[str, Any]:
    t = f"parquet.`{path}`"
    ids = sorted(placement)
    out: dict[str, Any] = {}
    # warm: the index loaded once (the first query of the table), then lookups of other keys
    meter.index_on(True)
    spark.sql(f"SELECT * FROM {t} WHERE u = '{placement[ids[0]]}'").collect()
    warm = paired(meter, lambda i: (lambda: spark.sql(f"SELECT * FROM {t} WHERE u = '{placement[ids[i + 1]]}'")
                                    .collect()), runs)
    out["warm"] = warm

    # floor: Spark told the one right file; the index off
    def floor(i: int) -> Callable[[], Any]:
        u = placement[ids[i + 1]]
        name = FILES[u]
        return lambda: spark.sql(f"SELECT * FROM {t} WHERE u = '{u}' AND _metadata.file_name = '{name}'").collect()

    meter.index_on(False)
    fl = [meter.run(floor(i)) for i in range(runs)]
    meter.index_on(True)
    out["floor_ms"] = med([r["ms"] for r in fl])
    out["floor_requests"] = med([r["requests"] for r in fl])
    # cold: every cache of sparkbloom emptied before the lookup
    cold = []
    for i in range(runs):
        clear_caches(spark)
        cold.append(meter.run(lambda: spark.sql(f"SELECT * FROM {t} WHERE u = '{placement[ids[i + 1]]}'").collect()))
    out["cold_ms"] = med([r["ms"] for r in cold])
    out["cold_index_requests"] = med([r["by_class"].get("index", 0) for r in cold])
    out["cold_requests"] = med([r["requests"] for r in cold])
    out["cold_index_log"] = [r[1:] for r in cold[-1]["log"] if r[2] == "index"]
    out["warm_index_log"] = [r[1:] for r in meter.run(
        lambda: spark.sql(f"SELECT * FROM {t} WHERE u = '{placement[ids[1]]}'").collect())["log"] if r[2] == "index"]
    log(f"{tag} point: on {warm['on_ms']:.0f} ms ({warm['on_requests_median']:.0f} req), floor "
        f"{out['floor_ms']:.0f} ms ({out['floor_requests']:.0f} req), off {warm['off_ms']:.0f} ms "
        f"({warm['off_requests_median']:.0f} req); cold index requests {out['cold_index_requests']:.0f}")
    return out


FILES: dict[str, str] = {}  # u -> its file's name


def find_files(spark: Any, path: str, us: list[str]) -> None:
    quoted = ", ".join(f"'{u}'" for u in us)
    spark.conf.set("spark.sparkbloom.enabled", "false")
    for r in spark.sql(f"SELECT u, _metadata.file_name AS f FROM parquet.`{path}` WHERE u IN ({quoted})").collect():
        FILES[r["u"]] = r["f"]
    spark.conf.set("spark.sparkbloom.enabled", "true")


def measure_built(spark: Any, meter: Meter, tbl: str, keys100: str, placement: dict[str, str], ids: list[str],
                  runs: int) -> dict[str, Any]:
    """Point lookups and the IN of 100 keys against an index built by a scan to sparkbloom's false-read budget, in
    place of the harvested one (made again afterwards). Rows are checked against the same queries with the harvested
    index (IN 100, checked against the index off by the paired runs) and with Spark told the key's one file (points)."""
    meter.index_on(True)
    want_in = norm(spark.sql(f"SELECT * FROM {tbl} WHERE k IN ({keys100})").collect())
    meter.index_on(False)
    want_point = {u: norm(spark.sql(f"SELECT * FROM {tbl} WHERE u = '{u}' AND _metadata.file_name = '{FILES[u]}'")
                          .collect()) for u in (placement[ids[i + 1]] for i in range(runs))}
    meter.index_on(True)
    spark.sql(f"DROP BLOOM INDEX IF EXISTS bx ON {tbl}")
    spark.conf.set("spark.sparkbloom.harvest.enabled", "false")
    try:
        built = meter.run(lambda: spark.sql(f"CREATE BLOOM INDEX bx ON {tbl} (k, u)").collect())
        desc = {row[0]: str(row[1]) for row in spark.sql(f"DESCRIBE BLOOM INDEX bx ON {tbl}").collect()}
        spark.sql(f"SELECT * FROM {tbl} WHERE u = '{placement[ids[0]]}'").collect()  # loads the index
        points = []
        for i in range(runs):
            u = placement[ids[i + 1]]
            r = meter.run(lambda: spark.sql(f"SELECT * FROM {tbl} WHERE u = '{u}'").collect())
            if norm(r["rows"]) != want_point[u]:
                raise SystemExit(f"WRONG ANSWER: u = '{u}' with the built index: {r['rows']!r}")
            points.append(r)
        absent = [meter.run(lambda: spark.read.schema("k bigint, u string, v int").parquet(tbl[len("parquet.`"):-1])
                            .where(f"k = {absent_key(j)}").collect()) for j in range(1, 4)]
        if any(a["rows"] for a in absent):
            raise SystemExit("WRONG ANSWER: rows for an absent key")
        ins = []
        for _ in range(max(2, runs // 2)):
            r = meter.run(lambda: spark.sql(f"SELECT * FROM {tbl} WHERE k IN ({keys100})").collect())
            if norm(r["rows"]) != want_in:
                raise SystemExit("WRONG ANSWER: IN 100 with the built index differs from the harvested")
            ins.append(r)
    finally:
        spark.conf.unset("spark.sparkbloom.harvest.enabled")
        spark.sql(f"DROP BLOOM INDEX IF EXISTS bx ON {tbl}")
        spark.sql(f"CREATE BLOOM INDEX bx ON {tbl} (k, u)")
        # its re-size in the background (unless turned off), before anything else is timed
        getattr(spark._jvm.sparkbloom.write.BackgroundMaintenance, "await")(  # type: ignore[attr-defined]
            spark._jsparkSession, 3600000)  # type: ignore[attr-defined]
    out = {
        "build_ms": built["ms"], "build_requests": built["requests"], "describe": desc,
        "point_ms": med([r["ms"] for r in points]), "point_requests": med([r["requests"] for r in points]),
        "point_files_touched": med([r["data_files_touched"] for r in points]),
        "point_index_requests": med([r["by_class"].get("index", 0) for r in points]),
        "absent_data_requests": [a["data_file_requests"] for a in absent],
        "on_ms": med([r["ms"] for r in ins]), "on_requests": med([r["requests"] for r in ins]),
        "files_touched": med([r["data_files_touched"] for r in ins]),
    }
    log(f"built index: point {out['point_ms']:.0f} ms ({out['point_requests']:.0f} req, "
        f"{out['point_files_touched']:.0f} files); IN 100 {out['on_ms']:.0f} ms, {out['files_touched']:.0f} files")
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.plot_files:
        plot_files([json.loads(Path(f).read_text()) for f in args.plot_files.split(",")], args.img_dir)
        return 0
    env = server_env()
    s3 = boto(env)
    bucket = env.get("SPARKBLOOM_S3_BUCKET", "sparkbloom")
    upstream = env["SPARKBLOOM_S3_ENDPOINT"]
    proxy = start_proxy(upstream)
    warehouse = f"s3a://{bucket}/{args.prefix}/wh"
    spark = s3_session(proxy.endpoint, env["SPARKBLOOM_S3_ACCESS_KEY"], env["SPARKBLOOM_S3_SECRET_KEY"],
                       warehouse=warehouse, lakehouse=False, app_name="sparkbloom objectstore benchmark",
                       conf={"spark.master": args.master, "spark.driver.memory": "4g",
                             "spark.sql.shuffle.partitions": "8",
                             "spark.hadoop.fs.s3a.connection.maximum": "64"})
    meter = Meter(spark, proxy)
    result: dict[str, Any] = {"request_counts": "proxy counters",  # not its log, which keeps the newest 20,000
                              "files": args.files, "rows_per_file": args.rows, "big_files": args.big_files,
                              "bandwidth_mbps": args.bandwidth_mbps, "master": args.master,
                              "spark": spark.version, "started": datetime.datetime.now().isoformat()}
    try:
        load_before = os.getloadavg()
        name = f"{args.prefix}/t{args.files}x{args.rows}"
        plain = f"{args.prefix}/p{args.files}x{args.rows}"
        path, plain_path = f"s3a://{bucket}/{name}", f"s3a://{bucket}/{plain}"
        t0 = time.perf_counter()
        ensure_table(spark, s3, bucket, name, args.files, args.rows)
        server_copy(s3, bucket, name, plain)
        log(f"tables ready in {time.perf_counter() - t0:.0f} s")
        tbl = f"parquet.`{path}`"
        rows_total = args.files * args.rows
        ids = [(i * 7919 + 13) % rows_total for i in range(2 * args.runs + 4)]
        placement = {str(i): spark.sql(f"SELECT {uuid_expr(str(i))}").first()[0] for i in ids}
        find_files(spark, path, list(placement.values()))
        placement = dict(sorted(placement.items(), key=lambda kv: int(kv[0])))
        ids_sorted = list(placement)

        lat_main = 20.0 if 20.0 in args.latencies else args.latencies[0]
        proxy.configure(latency_ms=lat_main, bandwidth_mbps=args.bandwidth_mbps)
        keys100 = ", ".join(str(key_of(i)) for i in range(0, rows_total, max(1, rows_total // 100)))
        if args.built_only:  # the lookups with a built index alone, on the tables and harvested index of a run before
            result["latency_ms"] = lat_main
            result["built_in100"] = measure_built(spark, meter, tbl, keys100, placement, ids_sorted, args.runs)
            result["finished"] = datetime.datetime.now().isoformat()
            return finish(args, result)
        if args.writes_only:  # the appends alone, on the index CREATE builds (harvested)
            if not keys_under(s3, bucket, name + "/_sparkbloom/"):
                spark.sql(f"CREATE BLOOM INDEX bx ON {tbl} (k, u)")
        else:
            # ---- harvest against a scan (latency 20 ms, or the only one given)
            def harvest_once() -> dict[str, Any]:
                spark.sql(f"DROP BLOOM INDEX IF EXISTS bx ON {tbl}")
                return meter.run(lambda: spark.sql(f"CREATE BLOOM INDEX bx ON {tbl} (k, u)").collect())

            # the timed harvests leave their index as harvested (no background re-size between them)
            spark.conf.set("spark.sparkbloom.harvest.resizeInBackground", "false")

            def scan_once() -> dict[str, Any]:
                return meter.run(lambda: spark.read.parquet(path).select("k", "u").write.format("noop")
                                 .mode("overwrite").save())

            # The session's first harvest and first scan load and compile their code paths (the AWS SDK's request
            # pipeline, the footer and segment code): 5.7-6.1 s against 2.8 s for the next harvests in a probe of
            # 2026-12-01. They are reported apart (harvest_ms_first, scan_ms_first), not in the medians.
            result["harvest_ms_first"], result["scan_ms_first"] = harvest_once()["ms"], scan_once()["ms"]
            harvest = []
            scan = []
            for i in range(max(1, args.harvest_runs)):
                for what in (("scan", "harvest") if i % 2 == 0 else ("harvest", "scan")):
                    if what == "harvest":
                        harvest.append(harvest_once())
                    else:
                        scan.append(scan_once())
            desc = {row[0]: row[1] for row in spark.sql(f"DESCRIBE BLOOM INDEX bx ON {tbl}").collect()}
            result["describe"] = {k: str(v) for k, v in desc.items()}
            spark.conf.unset("spark.sparkbloom.harvest.resizeInBackground")
            if not args.keep_harvested:
                # CREATE as a user runs it: harvested, then re-sized to the budget in the background when the writer's
                # filters miss it (OPTIMIZE BLOOM INDEX, a scan of the indexed columns). Lookups below use the result.
                created = harvest_once()
                t = time.perf_counter()
                getattr(spark._jvm.sparkbloom.write.BackgroundMaintenance, "await")(  # type: ignore[attr-defined]
                    spark._jsparkSession, 3600000)  # type: ignore[attr-defined]
                result["create_ms"], result["resize_ms"] = created["ms"], (time.perf_counter() - t) * 1000
                desc = {row[0]: row[1] for row in spark.sql(f"DESCRIBE BLOOM INDEX bx ON {tbl}").collect()}
                result["describe_resized"] = {k: str(v) for k, v in desc.items()}
                log(f"CREATE {result['create_ms']:.0f} ms, then the background re-size {result['resize_ms']:.0f} ms: "
                    f"version {desc.get('Version')}, filters harvested {desc.get('Filters Harvested')}")
            else:
                spark.conf.set("spark.sparkbloom.harvest.resizeInBackground", "false")
            result["index_looked_up"] = "harvested" if args.keep_harvested else "re-sized in the background"
            result["harvest_ms"] = med([r["ms"] for r in harvest])
            result["scan_ms"] = med([r["ms"] for r in scan])
            result["harvest_requests"] = med([r["requests"] for r in harvest])
            result["scan_requests"] = med([r["requests"] for r in scan])
            log(f"harvest {result['harvest_ms']:.0f} ms vs scan {result['scan_ms']:.0f} ms")

            # ---- Spark's listing of the table with and without _sparkbloom/ inside
            schema = "k bigint, u string, v int"
            listing = {}
            for which, p in (("indexed", path), ("plain", plain_path)):
                meter.index_on(False)
                r = meter.run(lambda: spark.read.schema(schema).parquet(p).inputFiles())
                meter.index_on(True)
                listing[which] = r
            result["listing_requests_indexed"] = listing["indexed"]["requests"]
            result["listing_requests_plain"] = listing["plain"]["requests"]
            # what each listing asked for: whether Spark looked inside _sparkbloom/ (index requests), and which
            # page of the root's listing the index's one entry (the common prefix _sparkbloom/) fell on
            for which in ("indexed", "plain"):
                result[f"listing_log_{which}"] = [x[1:] for x in listing[which]["log"]]
            result["listing_index_requests"] = listing["indexed"]["by_class"].get("index", 0)

            # ---- per latency: point lookups (warm, cold, floor, off), absent key, IN 100, join 24
            per_latency: dict[str, Any] = {}
            for lat in args.latencies:
                proxy.configure(latency_ms=lat, bandwidth_mbps=args.bandwidth_mbps)
                runs = args.runs if lat == lat_main else max(2, args.runs // 3)
                tag = f"{lat:g} ms"
                L: dict[str, Any] = {"runs": runs}
                L["point"] = point_queries(spark, meter, path, rows_total, placement, runs, tag)
                meter.index_on(True)
                # with the schema given (as a catalog table has it): Spark's schema inference opens a data file
                ab = meter.run(lambda: spark.read.schema("k bigint, u string, v int").parquet(path)
                               .where(f"k = {absent_key(1)}").collect())
                L["absent_data_requests"] = ab["data_file_requests"]
                L["absent_requests"] = ab["requests"]
                L["absent_data_log"] = [x[1:] for x in ab["log"] if x[2] == "data"]
                L["in100"] = paired(meter, lambda i: (lambda: spark.sql(
                    f"SELECT * FROM {tbl} WHERE k IN ({keys100})").collect()), max(2, runs // 2))
                keys24 = [placement[ids_sorted[j]] for j in range(min(24, len(ids_sorted)))]
                keys24 += [f"absent-{j}" for j in range(24 - len(keys24))]
                kdf = spark.createDataFrame([(u,) for u in keys24], "u string")
                kdf.createOrReplaceTempView("keys24")
                L["join"] = paired(meter, lambda i: (lambda: spark.sql(
                    f"SELECT t.* FROM {tbl} t JOIN keys24 s ON t.u = s.u").collect()), max(2, runs // 2))
                log(f"{tag}: in100 on {L['in100']['on_ms']:.0f} off {L['in100']['off_ms']:.0f}; join on "
                    f"{L['join']['on_ms']:.0f} off {L['join']['off_ms']:.0f}; absent data requests "
                    f"{L['absent_data_requests']}")
                per_latency[f"{lat:g}"] = L
            result["per_latency"] = per_latency

            # ---- lookups against an index sparkbloom builds to its false-read budget (a scan of the columns), not
            # harvested from the writer's filters (parquet-java's, fpp 0.01: their false reads grow with the table)
            if args.built_in100:
                proxy.configure(latency_ms=lat_main, bandwidth_mbps=args.bandwidth_mbps)
                b = measure_built(spark, meter, tbl, keys100, placement, ids_sorted, args.runs)
                L = per_latency[f"{lat_main:g}"]
                b.update(harvested_files_touched=L["in100"]["on"]["data_files_touched"],
                         off_files_touched=L["in100"]["off"]["data_files_touched"])
                result["built_in100"] = b

        # ---- appends: maintained (indexed table) against plain (the copy), alternating
        proxy.configure(latency_ms=lat_main, bandwidth_mbps=args.bandwidth_mbps)
        jvm = spark._jvm  # type: ignore[attr-defined]
        maintained, plain_w, awaited, lists = [], [], [], []
        for i in range(max(2, args.runs // 2) * 2):
            order = ("m", "p") if i % 2 == 0 else ("p", "m")
            df = table_df(spark, 1, args.rows, start=rows_total + i * args.rows)
            for w in order:
                if w == "m":
                    r = meter.run(lambda: df.write.mode("append").parquet(path))
                    t = time.perf_counter()
                    getattr(jvm.sparkbloom.write.BackgroundMaintenance, "await")(spark._jsparkSession, 600000)
                    awaited.append((time.perf_counter() - t) * 1000)
                    wlog = meter.proxy.log()
                    lists.append(sum(1 for x in wlog if x[2] == "index" and x[1] == "LIST"))
                    result["write_index_log"] = [x[1:] for x in wlog if x[2] == "index"]
                    # every request of the last maintained append, seconds from its start: where the time goes
                    result["write_timeline_maintained"] = [[x[0], x[1], x[2], x[3][:120]] for x in wlog]
                    result["write_requests_maintained"] = len(wlog)
                    maintained.append(r["ms"])
                else:
                    pr = meter.run(lambda: df.write.mode("append").parquet(plain_path))
                    plain_w.append(pr["ms"])
                    result["write_requests_plain"] = pr["requests"]
                    result["write_timeline_plain"] = [[x[0], x[1], x[2], x[3][:120]] for x in pr["log"]]
        result["write_ms_maintained"] = med(maintained)
        result["write_ms_plain"] = med(plain_w)
        result["write_background_ms"] = med(awaited)
        result["write_index_lists"] = max(lists)
        # Spark's listing again, now that the appends have moved both tables off a multiple of S3's 1,000-key page
        if not args.writes_only:
            for which, p in (("indexed", path), ("plain", plain_path)):
                meter.index_on(False)
                r = meter.run(lambda: spark.read.schema("k bigint, u string, v int").parquet(p).inputFiles())
                meter.index_on(True)
                result[f"listing_requests_{which}_after_writes"] = r["requests"]
                result[f"listing_files_{which}_after_writes"] = len(r["rows"])
        desc = {row[0]: row[1] for row in spark.sql(f"DESCRIBE BLOOM INDEX bx ON {tbl}").collect()}
        result["describe_after_writes"] = {k: str(v) for k, v in desc.items()}
        # the keys a flat listing of the table root pages through: the data's and the index's (S3A lists a root
        # without a delimiter, 1,000 keys a page, and Spark drops _sparkbloom/ only after the listing)
        under = keys_under(s3, bucket, name + "/")
        result["keys_index_after_writes"] = sum(1 for k in under if "/_sparkbloom/" in k)
        result["keys_data_after_writes"] = len(under) - result["keys_index_after_writes"]

        # ---- cold lookup on the big table
        if args.big_files and not args.writes_only:
            proxy.configure(latency_ms=0, bandwidth_mbps=0)
            big = f"{args.prefix}/big{args.big_files}"
            big_path = f"s3a://{bucket}/{big}"
            t0 = time.perf_counter()
            ensure_table(spark, s3, bucket, big, args.big_files, 50)
            if not keys_under(s3, bucket, big + "/_sparkbloom/"):
                spark.sql(f"CREATE BLOOM INDEX bx ON parquet.`{big_path}` (k, u)")
            getattr(spark._jvm.sparkbloom.write.BackgroundMaintenance, "await")(  # type: ignore[attr-defined]
                spark._jsparkSession, 3600000)  # type: ignore[attr-defined]
            result["cold_big_describe"] = {str(r[0]): str(r[1]) for r in spark.sql(
                f"DESCRIBE BLOOM INDEX bx ON parquet.`{big_path}`").collect()}
            log(f"big table ready in {time.perf_counter() - t0:.0f} s")
            result["cold_big"] = {}
            for lat in args.latencies:
                proxy.configure(latency_ms=lat, bandwidth_mbps=args.bandwidth_mbps)
                cold = []
                for i in range(3):
                    clear_caches(spark)
                    u = spark.sql(f"SELECT {uuid_expr(str(7 * i + 1))}").first()[0]
                    cold.append(meter.run(lambda: spark.sql(
                        f"SELECT * FROM parquet.`{big_path}` WHERE u = '{u}'").collect()))
                result["cold_big"][f"{lat:g}"] = {
                    "index_requests": med([r["by_class"].get("index", 0) for r in cold]),
                    "requests": med([r["requests"] for r in cold]),
                    "ms": med([r["ms"] for r in cold]),
                    "index_log": [r[1:] for r in cold[-1]["log"] if r[2] == "index"],
                    "index_bytes_note": "see by_method",
                    "by_method": cold[-1]["by_method"],
                }
            main_big = result["cold_big"][f"{lat_main:g}"]
            result["cold10k_index_requests"] = main_big["index_requests"]
            result["cold10k_ms"] = main_big["ms"]

        # ---- the headline fields at the main latency
        result["load_before"] = load_before
        result["load_after"] = os.getloadavg()
        result["finished"] = datetime.datetime.now().isoformat()
        if args.writes_only:
            result["ratios"] = {"write_maintained/plain": result["write_ms_maintained"] / result["write_ms_plain"]}
            return finish(args, result)
        L = per_latency[f"{lat_main:g}"]
        P = L["point"]
        result.update({
            "latency_ms": lat_main,
            "point_index_requests_warm": P["warm"]["on"]["by_class"].get("index", 0),
            "point_index_requests_cold": P["cold_index_requests"],
            "point_requests_on": P["warm"]["on_requests_median"],
            "point_requests_floor": P["floor_requests"],
            "point_requests_off": P["warm"]["off_requests_median"],
            "point_ms_on": P["warm"]["on_ms"], "point_ms_floor": P["floor_ms"], "point_ms_off": P["warm"]["off_ms"],
            "absent_data_requests": L["absent_data_requests"],
            "in100_ms_on": L["in100"]["on_ms"], "in100_ms_off": L["in100"]["off_ms"],
            "join_ms_on": L["join"]["on_ms"], "join_ms_off": L["join"]["off_ms"],
        })
        result["ratios"] = {
            "point_ms_on/floor": result["point_ms_on"] / result["point_ms_floor"],
            "point_ms_off/on": result["point_ms_off"] / result["point_ms_on"],
            "in100_off/on": result["in100_ms_off"] / result["in100_ms_on"],
            "join_off/on": result["join_ms_off"] / result["join_ms_on"],
            "harvest/scan": result["harvest_ms"] / result["scan_ms"],
            **({"resize/scan": result["resize_ms"] / result["scan_ms"]} if "resize_ms" in result else {}),
            "write_maintained/plain": result["write_ms_maintained"] / result["write_ms_plain"],
        }
        if "built_in100" in result:
            b = result["built_in100"]
            result["ratios"]["in100_off/on_built_index"] = result["in100_ms_off"] / b["on_ms"]
            result["ratios"]["point_ms_built/floor"] = b["point_ms"] / result["point_ms_floor"]
            result["ratios"]["point_ms_off/built"] = result["point_ms_off"] / b["point_ms"]
    finally:
        spark.stop()
        proxy.stop()
    return finish(args, result)


def finish(args: argparse.Namespace, result: dict[str, Any]) -> int:
    """Writes the result file (and the plots of a full run) and prints the result when asked."""
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, default=str)
    log(f"wrote {args.out}")
    if args.img_dir and "per_latency" in result:
        plot(result, args.img_dir, "objectstore-quick" if args.quick else "objectstore")
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k not in ("per_latency", "cold_big")}, default=str))
    return 0


def plot(result: dict[str, Any], img_dir: str, stem: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(img_dir, exist_ok=True)
    lats = sorted(result["per_latency"], key=float)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ax = axes[0]
    L = result["per_latency"][lats[0]]["point"]
    labels = ["point on", "point floor", "point off"]
    vals = [L["warm"]["on_requests_median"], L["floor_requests"], L["warm"]["off_requests_median"]]
    for q in ("in100", "join"):
        Q = result["per_latency"][lats[0]][q]
        labels += [f"{q} on", f"{q} off"]
        vals += [Q["on_requests_median"], Q["off_requests_median"]]
    ax.bar(labels, vals, color=["tab:green", "tab:gray", "tab:red", "tab:green", "tab:red", "tab:green", "tab:red"])
    ax.set_yscale("log")
    ax.set_ylabel("requests per query")
    ax.set_title(f"requests per query, {result['files']} files")
    ax.tick_params(axis="x", rotation=30)
    ax = axes[1]
    x = [max(float(v), 1.0) for v in lats]  # 0 ms drawn at 1 ms on the log axis
    for key, lab, col in (("on", "point on", "tab:green"), ("off", "point off", "tab:red")):
        ax.plot(x, [result["per_latency"][v]["point"]["warm"][f"{key}_ms"] for v in lats], "o-", label=lab, color=col)
    ax.plot(x, [result["per_latency"][v]["point"]["floor_ms"] for v in lats], "o--", label="point floor",
            color="tab:gray")
    ax.plot(x, [result["per_latency"][v]["in100"]["on_ms"] for v in lats], "s-", label="IN 100 on", color="tab:blue")
    ax.plot(x, [result["per_latency"][v]["in100"]["off_ms"] for v in lats], "s-", label="IN 100 off",
            color="tab:orange")
    if result.get("cold_big"):
        ax.plot(x, [result["cold_big"][v]["ms"] for v in lats], "^-",
                label=f"cold, {result['big_files']} files", color="tab:purple")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("first-byte latency, ms (0 drawn at 1)")
    ax.set_ylabel("ms (median)")
    ax.set_title("query time against latency")
    ax.legend(fontsize=7)
    fig.tight_layout()
    out = os.path.join(img_dir, f"{stem}.png")
    fig.savefig(out, dpi=110)
    log(f"plot: {out}")


def plot_files(results: list[dict[str, Any]], img_dir: str) -> None:
    """Each figure of runs at different table sizes (their main latency, which must be the same) against the
    table's files, log-log: time per query on the left, requests per query on the right."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = sorted(results, key=lambda r: r["files"])
    lats = {r["latency_ms"] for r in results}
    if len(lats) != 1:
        raise SystemExit(f"runs at different main latencies: {sorted(lats)}")
    files = [r["files"] for r in results]

    def lat_of(r: dict[str, Any]) -> dict[str, Any]:
        return r["per_latency"][f"{r['latency_ms']:g}"]  # type: ignore[no-any-return]

    ms = {  # label -> (value of a run, style)
        "point on": (lambda r: r["point_ms_on"], "o-", "tab:green"),
        "point on, built index": (lambda r: r.get("built_in100", {}).get("point_ms", float("nan")), "o:", "darkgreen"),
        "point floor": (lambda r: r["point_ms_floor"], "o--", "tab:gray"),
        "point off": (lambda r: r["point_ms_off"], "o-", "tab:red"),
        "point cold": (lambda r: lat_of(r)["point"]["cold_ms"], "o:", "tab:olive"),
        "IN 100 on": (lambda r: r["in100_ms_on"], "s-", "tab:blue"),
        "IN 100 off": (lambda r: r["in100_ms_off"], "s-", "tab:orange"),
        "IN 100 on, built index": (lambda r: r.get("built_in100", {}).get("on_ms", float("nan")), "s:", "navy"),
        "join 24 on": (lambda r: r["join_ms_on"], "^-", "tab:cyan"),
        "join 24 off": (lambda r: r["join_ms_off"], "^-", "tab:brown"),
        "harvest": (lambda r: r["harvest_ms"], "D-", "tab:purple"),
        "scan": (lambda r: r["scan_ms"], "D--", "tab:pink"),
        "re-size after CREATE (background)": (lambda r: r.get("resize_ms", float("nan")), "D:", "indigo"),
        "append maintained": (lambda r: r["write_ms_maintained"], "v-", "black"),
        "append plain": (lambda r: r["write_ms_plain"], "v--", "dimgray"),
    }
    reqs = {
        "point on": (lambda r: r["point_requests_on"], "o-", "tab:green"),
        "point on, built index": (lambda r: r.get("built_in100", {}).get("point_requests", float("nan")), "o:",
                                  "darkgreen"),
        "point floor": (lambda r: r["point_requests_floor"], "o--", "tab:gray"),
        "point off": (lambda r: r["point_requests_off"], "o-", "tab:red"),
        "point index, cold": (lambda r: max(r["point_index_requests_cold"], 0.5), "o:", "tab:olive"),
        "IN 100 on": (lambda r: lat_of(r)["in100"]["on_requests_median"], "s-", "tab:blue"),
        "IN 100 off": (lambda r: lat_of(r)["in100"]["off_requests_median"], "s-", "tab:orange"),
        "IN 100 on, built index": (lambda r: r.get("built_in100", {}).get("on_requests", float("nan")), "s:",
                                   "navy"),
        "join 24 on": (lambda r: lat_of(r)["join"]["on_requests_median"], "^-", "tab:cyan"),
        "join 24 off": (lambda r: lat_of(r)["join"]["off_requests_median"], "^-", "tab:brown"),
        "harvest": (lambda r: r["harvest_requests"], "D-", "tab:purple"),
        "scan": (lambda r: r["scan_requests"], "D--", "tab:pink"),
        "append maintained": (lambda r: r["write_requests_maintained"], "v-", "black"),
        "append plain": (lambda r: r["write_requests_plain"], "v--", "dimgray"),
        "Spark's listing, indexed": (lambda r: r["listing_requests_indexed"], "x-", "tab:green"),
        "Spark's listing, plain": (lambda r: r["listing_requests_plain"], "x--", "tab:red"),
    }
    def capped(r: dict[str, Any], v: float) -> float:
        """Runs before 2026-12-07 counted a query's requests from the proxy's log, which keeps the newest 20,000: such
        a count is a floor, not a figure, and is left out."""
        return float("nan") if r.get("request_counts") is None and v >= 20000 else v

    fig, axes = plt.subplots(1, 2, figsize=(12, 6.2))
    for ax, series, ylabel in ((axes[0], ms, "ms (median)"), (axes[1], reqs, "requests per query")):
        for label, (get, style, color) in series.items():
            ys = [get(r) if series is ms else capped(r, get(r)) for r in results]
            ax.plot(files, ys, style, label=label, color=color)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("files in the table (one row group each)")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.13))
    axes[0].set_title(f"time against table size, {results[0]['latency_ms']:g} ms first-byte latency")
    axes[1].set_title("requests against table size (the point index at 0 drawn at 0.5)")
    fig.tight_layout()
    os.makedirs(img_dir, exist_ok=True)
    out = os.path.join(img_dir, "objectstore-files.png")
    fig.savefig(out, dpi=110)
    log(f"plot: {out}")


if __name__ == "__main__":
    sys.exit(main())
