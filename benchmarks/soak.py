#!/usr/bin/env python3
"""A soak (issue 47, item 3): for --minutes, one Spark session runs, all at once against one indexed Delta table,
a streaming append, point and IN lookups, joins with a small key set, MERGE upserts, Delta's automatic and manual
OPTIMIZE, sparkbloom's OPTIMIZE BLOOM INDEX (by hand, and the automatic one maintained writes queue), and VACUUM
(Delta's and VACUUM BLOOM INDEX, both with a short retention). It samples the driver JVM as it goes.

- The table: ``id BIGINT`` (a bijection of the row number onto [0, 2^32), so every file's min/max spans the keys and
  only the index can leave files out), ``u STRING`` (a UUID-shaped md5 of the row number), ``payload STRING``; a bloom
  index on (id, u) made up front; maintenance on write on (the stream's batches, MERGE and OPTIMIZE keep it current).
- The stream: the rate source, ``--rows-per-second`` rows, a micro-batch every ``--trigger-seconds`` into Delta's sink.
- Lookups and joins: each reads the table at one version (``versionAsOf``, the newest version when it starts), once in
  the session with sparkbloom on and once in ``spark.newSession()`` with ``spark.sparkbloom.enabled=false``; the
  sorted rows must be equal (a difference is a *wrong* answer). The files the index skipped are recorded
  (``sparkbloom.skipping``), so the comparison is known to be over pruned scans.
- Conflicts: Delta's optimistic concurrency makes a MERGE or OPTIMIZE fail now and then when another commit
  touched its files (``ConcurrentAppendException``, ``ConcurrentDeleteReadException``, ...). That is Delta's
  behaviour: retried and counted. Any other exception anywhere is a failure (exit 1).
- Every --sample-seconds the sampler calls ``System.gc()`` in the driver JVM and records the heap used after it, the
  JVM's live threads and its open file descriptors (``/proc/<pid>/fd``), and the Python process's.
- Spark's own bounded UI stores (executions, jobs, stages kept for the UI, even with the UI off) are made small
  (``spark.sql.ui.retainedExecutions`` 50, ...) so that they are full after the warm-up and do not pass for growth.

Usage (from the repository root, after `dev/sbt bundle lakehouseJars`, e.g. through dev/test):
  nice -n 10 .venv/bin/python benchmarks/soak.py --minutes 30 --json benchmarks/results/soak-30min.json \\
      --plot docs/img/soak-heap.png
Exit status 0 when nothing was wrong and nothing failed.
"""
from __future__ import annotations

import argparse
import datetime
import glob
import hashlib
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from typing import Any

from pyspark.sql import SparkSession

import sparkbloom

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INITIAL_FILES = 40
INITIAL_ROWS_PER_FILE = 2500
# Delta's optimistic-concurrency conflicts (io.delta.exceptions.*, DeltaConcurrentModificationException): retried.
CONFLICT = re.compile(r"Concurrent(Append|DeleteRead|DeleteDelete|Transaction|Write)Exception|DELTA_CONCURRENT_"
                      r"|DELTA_METADATA_CHANGED|DELTA_PROTOCOL_CHANGED|ProtocolChangedException"
                      r"|MetadataChangedException")
# sparkbloom's own conflict, which its index statements (OPTIMIZE / VACUUM BLOOM INDEX) raise when writes keep
# committing index versions past their rebase attempts ("... was updated concurrently ... retry the statement"):
# retried for those statements only. A user's write that raised it would break sparkbloom's promise never to fail a
# write, so for the writes it stays a failure.
INDEX_CONFLICT = re.compile(r"ConcurrentIndexUpdateException|bloom index \S+ was updated concurrently")


def row_id(v: int) -> int:
    return (v * 2654435761) % 4294967296


def row_u(v: int) -> str:
    m = hashlib.md5(str(v).encode()).hexdigest()
    return f"{m[0:8]}-{m[8:12]}-{m[12:16]}-{m[16:20]}-{m[20:32]}"


# The same two functions in SQL, over a column of row numbers `v`.
ID_SQL = "pmod({v} * 2654435761, 4294967296)"
U_SQL = ("concat_ws('-', substr(md5(cast({v} as string)), 1, 8), substr(md5(cast({v} as string)), 9, 4), "
         "substr(md5(cast({v} as string)), 13, 4), substr(md5(cast({v} as string)), 17, 4), "
         "substr(md5(cast({v} as string)), 21, 12))")


def session(jars: str, warehouse: str, master: str, driver_memory: str) -> SparkSession:
    builder = (SparkSession.builder.master(master).appName("sparkbloom soak")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.log.level", "ERROR").config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", driver_memory).config("spark.jars", jars)
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
               .config("spark.databricks.delta.snapshotPartitions", "2")
               .config("spark.sql.warehouse.dir", warehouse)
               # Delta's automatic compaction after a write that leaves this many small files
               .config("spark.databricks.delta.autoCompact.enabled", "true")
               .config("spark.databricks.delta.autoCompact.minNumFiles", "12")
               # files of ~256 KiB (~5000 rows) out of both compactions, so that a lookup has files to skip
               .config("spark.databricks.delta.autoCompact.maxFileSize", str(256 * 1024))
               .config("spark.databricks.delta.autoCompact.minFileSize", str(128 * 1024))
               .config("spark.databricks.delta.optimize.maxFileSize", str(256 * 1024))
               .config("spark.databricks.delta.optimize.minFileSize", str(128 * 1024))
               # short retentions for both VACUUMs
               .config("spark.databricks.delta.retentionDurationCheck.enabled", "false")
               # Delta's VACUUM lists the table in this many tasks (Spark's default 10,000): with it, each VACUUM
               # queued thousands of tasks ahead of every other query of this one local executor
               .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "4")
               .config("spark.sparkbloom.vacuum.retentionDurationCheck.enabled", "false")
               # sparkbloom's automatic OPTIMIZE BLOOM INDEX after this many maintained writes' small segments
               .config("spark.sparkbloom.maintainOnWrite.optimizeAfterSegments", "16")
               # Spark's bounded stores of finished executions, jobs and stages: full soon, so not mistaken for growth
               .config("spark.sql.ui.retainedExecutions", "50").config("spark.ui.retainedJobs", "100")
               .config("spark.ui.retainedStages", "100").config("spark.ui.retainedTasks", "1000")
               .config("spark.sql.streaming.numRecentProgressUpdates", "20"))
    return sparkbloom.configure(builder).getOrCreate()


class Soak:
    def __init__(self, spark: SparkSession, base: str, args: argparse.Namespace) -> None:
        self.spark = spark
        self.off = spark.newSession()
        self.off.conf.set("spark.sparkbloom.enabled", "false")
        self.args = args
        self.path = os.path.join(base, "table")
        self.checkpoint = os.path.join(base, "checkpoint")
        self.table = f"delta.`{self.path}`"
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.wrong: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.samples: list[dict[str, Any]] = []
        self.done = threading.Event()
        self.started = time.monotonic()
        self.merge_round = 0
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        self.jvm = jvm
        self.jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())

    # -- bookkeeping ------------------------------------------------------------------------------------------------

    def count(self, what: str, n: int = 1) -> None:
        with self.lock:
            self.counts[what] += n

    def fail(self, where: str, e: BaseException) -> None:
        text = f"{where}: {type(e).__name__}: {str(e)[:1500]}\n{traceback.format_exc()[-3000:]}"
        print(f"FAILURE {text}", file=sys.stderr, flush=True)
        with self.lock:
            self.failures.append(text)

    def with_retries(self, what: str, run: Any, index_statement: bool = False) -> Any:
        """Runs `run()`; Delta's concurrency conflicts are retried (counted), and sparkbloom's own for its index
        statements (`index_statement`); anything else raises."""
        for attempt in range(20):
            try:
                return run()
            except Exception as e:  # noqa: BLE001 - classified just below
                found = [p.search(str(e)) or p.search(type(e).__name__)
                         for p in (CONFLICT, INDEX_CONFLICT) if p is CONFLICT or index_statement]
                if not any(found):
                    raise
                self.count(f"{what}_conflicts_retried")
                if self.done.is_set():  # the soak is over: not retried again (the stream still appends)
                    self.count(f"{what}_given_up_at_end")
                    return None
                time.sleep(0.2 * (attempt + 1))
        raise RuntimeError(f"{what}: 20 conflicts in a row")

    def version(self) -> int:
        """The table's newest version: the highest commit file in its log (no Spark job)."""
        log = os.path.join(self.path, "_delta_log")
        return max(int(f[:20]) for f in os.listdir(log) if re.fullmatch(r"\d{20}\.json", f))

    def streamed(self) -> int:
        """Row numbers below this are in the table (the initial rows and those the stream wrote so far)."""
        return INITIAL_FILES * INITIAL_ROWS_PER_FILE + int(self.args.rows_per_second * self.elapsed() * 0.8)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def loop(self, name: str, every: float, step: Any) -> None:
        """Runs step() every `every` seconds until the soak ends; an exception is a failure (and the loop goes on)."""
        while not self.done.is_set():
            t0 = time.monotonic()
            try:
                step()
            except Exception as e:  # noqa: BLE001 - every exception here is reported as a failure
                self.fail(name, e)
            self.done.wait(max(0.0, every - (time.monotonic() - t0)))

    # -- the table --------------------------------------------------------------------------------------------------

    def create(self) -> None:
        rows = INITIAL_FILES * INITIAL_ROWS_PER_FILE
        (self.spark.range(rows, numPartitions=INITIAL_FILES)
         .selectExpr(f"{ID_SQL.format(v='id')} AS id", f"{U_SQL.format(v='id')} AS u",
                     "concat('p', id, '-', repeat('x', 40)) AS payload")
         .write.format("delta").save(self.path))
        self.spark.sql(f"CREATE BLOOM INDEX soak_ix ON {self.table} (id, u)")

    def start_stream(self) -> Any:
        offset = INITIAL_FILES * INITIAL_ROWS_PER_FILE
        return (self.spark.readStream.format("rate").option("rowsPerSecond", self.args.rows_per_second).load()
                .selectExpr(f"value + {offset} AS v")
                .selectExpr(f"{ID_SQL.format(v='v')} AS id", f"{U_SQL.format(v='v')} AS u",
                            "concat('p', v, '-', repeat('x', 40)) AS payload")
                .coalesce(1).writeStream.format("delta").option("checkpointLocation", self.checkpoint)
                .trigger(processingTime=f"{self.args.trigger_seconds} seconds").start(self.path))

    # -- lookups and joins: sparkbloom on against off, at one version ----------------------------------------------

    def compare(self, kind: str, build: Any) -> None:
        """build(session, version) -> DataFrame; runs it at the newest version with sparkbloom on, then off."""
        v = self.version()
        on_df = build(self.spark, v)
        on = sorted(tuple(r) for r in on_df.collect())
        skip = sparkbloom.skipping(on_df)
        off = sorted(tuple(r) for r in build(self.off, v).collect())
        self.count(kind)
        total = sum(s.files_total for s in skip)
        kept = sum(s.files_kept for s in skip)
        self.count(f"{kind}_files_total", total)
        self.count(f"{kind}_files_skipped", total - kept)
        self.count(f"{kind}_files_not_covered", sum(s.files_not_covered for s in skip))
        if total > kept:
            self.count(f"{kind}_pruned")
        if on != off:
            self.count("wrong")
            with self.lock:
                if len(self.wrong) < 20:
                    self.wrong.append({"kind": kind, "version": v, "on": [list(map(str, r)) for r in on[:10]],
                                       "off": [list(map(str, r)) for r in off[:10]],
                                       "plan": on_df._jdf.queryExecution().executedPlan().toString()[:3000]})
            print(f"WRONG {kind} at version {v}: {len(on)} rows with sparkbloom, {len(off)} without",
                  file=sys.stderr, flush=True)

    def at(self, s: SparkSession, v: int) -> Any:
        return s.read.format("delta").option("versionAsOf", v).load(self.path)

    def lookup(self, rng: random.Random) -> None:
        hi = self.streamed()
        present = [rng.randrange(hi) for _ in range(5)]
        absent = -1 - rng.randrange(10**9)  # no row number is negative; ids and UUIDs of one are absent
        merged = -1 - rng.randrange(max(1, self.merge_round * 4))  # a row a MERGE inserted (or will)
        kind = rng.choice(["point_id", "point_u", "in_id", "in_u", "absent", "merged"])
        cond = {
            "point_id": f"id = {row_id(present[0])}",
            "point_u": f"u = '{row_u(present[0])}'",
            "in_id": "id IN ({})".format(", ".join(str(row_id(p)) for p in present)),
            "in_u": "u IN ({})".format(", ".join(f"'{row_u(p)}'" for p in present)),
            "absent": f"u = '{row_u(absent)}' OR id = {10**12 + present[0]}",
            "merged": f"u = '{row_u(merged)}'",
        }[kind]
        self.compare("lookups", lambda s, v: self.at(s, v).where(cond))
        self.count(f"lookups_{kind}")

    def join(self, rng: random.Random) -> None:
        hi = self.streamed()
        keys = [(row_u(rng.randrange(hi)),) for _ in range(8)] + [(row_u(-1 - rng.randrange(10**9)),)]

        def build(s: SparkSession, v: int) -> Any:
            return self.at(s, v).join(s.createDataFrame(keys, "u STRING"), "u")
        self.compare("joins", build)

    # -- writes and maintenance -------------------------------------------------------------------------------------

    def merge(self, rng: random.Random) -> None:
        with self.lock:
            self.merge_round += 1
            r = self.merge_round
        hi = self.streamed()
        rows = [(row_id(v), row_u(v), f"m{r}") for v in (rng.randrange(hi) for _ in range(4))]
        # new rows: negative row numbers, four a round (lookups of kind "merged" look for them)
        rows += [(row_id(v), row_u(v), f"m{r}") for v in range(-4 * r + 3, -4 * r - 1, -1)]
        values = ", ".join(f"({i}, '{u}', '{p}')" for i, u, p in rows)
        sql = (f"MERGE INTO {self.table} t USING (SELECT * FROM VALUES {values} AS s(id, u, payload)) s "
               "ON t.u = s.u WHEN MATCHED THEN UPDATE SET payload = s.payload WHEN NOT MATCHED THEN INSERT *")
        if self.with_retries("merge", lambda: self.spark.sql(sql).collect()) is not None:
            self.count("merges")

    MAINTENANCE = ("optimize_manual", "optimize_bloom_index", "vacuum", "vacuum_bloom_index")

    def maintenance(self, what: str) -> None:
        retain = self.args.vacuum_retain_hours
        sql = {
            "optimize_manual": f"OPTIMIZE {self.table}",
            "optimize_bloom_index": f"OPTIMIZE BLOOM INDEX soak_ix ON {self.table}",
            "vacuum": f"VACUUM {self.table} RETAIN {retain} HOURS",
            "vacuum_bloom_index": f"VACUUM BLOOM INDEX soak_ix ON {self.table} RETAIN {retain} HOURS",
        }[what]
        if self.with_retries(what, lambda: self.spark.sql(sql).collect(),
                             index_statement=what.endswith("_bloom_index")) is not None:
            self.count(what)

    # -- the driver JVM ---------------------------------------------------------------------------------------------

    def sample(self) -> dict[str, Any]:
        mf = self.jvm.java.lang.management.ManagementFactory
        self.jvm.java.lang.System.gc()
        heap = mf.getMemoryMXBean().getHeapMemoryUsage()
        s = {"t_s": round(self.elapsed(), 1), "heap_used_mb": round(heap.getUsed() / 2**20, 1),
             "heap_committed_mb": round(heap.getCommitted() / 2**20, 1),
             "jvm_threads": int(mf.getThreadMXBean().getThreadCount()),
             "jvm_fds": len(os.listdir(f"/proc/{self.jvm_pid}/fd")),
             "python_threads": threading.active_count(), "python_fds": len(os.listdir(f"/proc/{os.getpid()}/fd")),
             "load1": round(os.getloadavg()[0], 2)}
        with self.lock:
            self.samples.append(s)
        return s

    def thread_groups(self) -> dict[str, int]:
        """The driver JVM's live threads by name, digits left out ("Executor task launch worker for task #")."""
        names = [str(t.getName()) for t in self.jvm.java.lang.Thread.getAllStackTraces().keySet().toArray()]
        return dict(sorted(Counter(re.sub(r"\d+", "#", n) for n in names).items(), key=lambda kv: -kv[1]))

    def histogram(self) -> dict[str, dict[str, int]]:
        """The driver's live objects by class (jmap -histo:live, a full GC first): class -> instances, bytes."""
        try:
            out = subprocess.run(["jmap", "-histo:live", str(self.jvm_pid)], capture_output=True, text=True,
                                 timeout=300).stdout
        except (OSError, subprocess.TimeoutExpired):
            return {}
        rows = {}
        for line in out.splitlines():
            m = re.match(r"\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)", line)
            if m:
                rows[m.group(3)] = {"instances": int(m.group(1)), "bytes": int(m.group(2))}
        return rows


def delta_history(spark: SparkSession, table: str) -> dict[str, int]:
    """Commits of the table by operation, automatic OPTIMIZE (auto compaction) apart from the manual ones."""
    out: Counter[str] = Counter()
    for r in spark.sql(f"DESCRIBE HISTORY {table}").select("operation", "operationParameters").collect():
        op = r["operation"]
        if op == "OPTIMIZE" and (r["operationParameters"] or {}).get("auto") == "true":
            op = "OPTIMIZE (auto)"
        out[op] += 1
    return dict(out)


def slope_mb_per_min(points: list[tuple[float, float]]) -> float:
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(t for t, _ in points) / n
    my = sum(h for _, h in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    return 0.0 if var == 0 else sum((t - mx) * (h - my) for t, h in points) / var * 60


def judge(samples: list[dict[str, Any]], warmup_s: float) -> dict[str, Any]:
    """Flatness: post-GC heap after the warm-up; the last third's median against the first third's, and the slope."""
    steady = [s for s in samples if s["t_s"] >= warmup_s] or samples
    third = max(1, len(steady) // 3)

    def median(xs: list[float]) -> float:
        xs = sorted(xs)
        return xs[len(xs) // 2]
    first = median([s["heap_used_mb"] for s in steady[:third]])
    last = median([s["heap_used_mb"] for s in steady[-third:]])
    slope = slope_mb_per_min([(s["t_s"], s["heap_used_mb"]) for s in steady])
    return {"warmup_s": warmup_s, "steady_samples": len(steady), "heap_first_third_median_mb": first,
            "heap_last_third_median_mb": last, "heap_growth_mb": round(last - first, 1),
            "heap_slope_mb_per_min": round(slope, 3),
            # flat: the last third within 10% (and 32 MB) of the first, after the warm-up
            "flat": last - first <= max(32.0, 0.10 * first)}


def plot(samples: list[dict[str, Any]], verdict: dict[str, Any], path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = [s["t_s"] / 60 for s in samples]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(9, 6), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    ax.plot(t, [s["heap_used_mb"] for s in samples], marker=".", label="driver heap used after System.gc()")
    steady = [s for s in samples if s["t_s"] >= verdict["warmup_s"]]
    if len(steady) >= 2:
        mx = sum(s["t_s"] for s in steady) / len(steady)
        my = sum(s["heap_used_mb"] for s in steady) / len(steady)
        k = verdict["heap_slope_mb_per_min"] / 60
        xs = [steady[0]["t_s"], steady[-1]["t_s"]]
        ax.plot([x / 60 for x in xs], [my + k * (x - mx) for x in xs], "--",
                label=f"fit after warm-up: {verdict['heap_slope_mb_per_min']:+.2f} MB/min")
    ax.axvline(verdict["warmup_s"] / 60, color="grey", lw=0.8, ls=":")
    ax.set_ylabel("MB")
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right")
    ax.set_title(title)
    ax2.plot(t, [s["jvm_threads"] for s in samples], label="JVM threads")
    ax2.plot(t, [s["jvm_fds"] for s in samples], label="JVM open fds")
    ax2.set_xlabel("minutes")
    ax2.set_ylim(bottom=0)
    ax2.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=30.0, help="how long everything runs at once")
    p.add_argument("--master", default="local[4]")
    p.add_argument("--driver-memory", default="2g")
    p.add_argument("--rows-per-second", type=int, default=200)
    p.add_argument("--trigger-seconds", type=float, default=2.0)
    p.add_argument("--merge-seconds", type=float, default=6.0, help="a MERGE every this many seconds")
    p.add_argument("--maintenance-seconds", type=float, default=60.0,
                   help="each of OPTIMIZE, OPTIMIZE BLOOM INDEX, VACUUM and VACUUM BLOOM INDEX runs every this many "
                        "seconds, on a thread of its own (started a quarter period apart)")
    p.add_argument("--vacuum-retain-hours", type=float, default=0.02,
                   help="both VACUUMs' retention (0.02 h = 72 s: longer than a lookup takes to read its version twice)")
    p.add_argument("--sample-seconds", type=float, default=10.0)
    p.add_argument("--warmup-seconds", type=float, help="left out of the flatness judgement (default: a tenth)")
    p.add_argument("--histogram", action="store_true", help="jmap -histo:live of the driver at start and end")
    p.add_argument("--jars", default=",".join(sorted(glob.glob(os.path.join(
        ROOT, "target", "lakehouse", f"spark-{sparkbloom.session.line_for(*sparkbloom.session.spark_version())}",
        "*.jar")))))
    p.add_argument("--json", help="write the report here")
    p.add_argument("--plot", help="plot the driver heap over time here (PNG)")
    args = p.parse_args()
    seconds = args.minutes * 60
    warmup = args.warmup_seconds if args.warmup_seconds is not None else seconds / 10

    base = tempfile.mkdtemp(prefix="sparkbloom-soak-")
    spark = session(args.jars, os.path.join(base, "wh"), args.master, args.driver_memory)
    soak = Soak(spark, base, args)
    # the per-session switch really switches: the off session's plans have no bloom-pruned scan
    soak.create()
    probe = f"u = '{row_u(7)}'"
    on_probe, off_probe = soak.at(spark, 0).where(probe), soak.at(soak.off, 0).where(probe)
    on_probe.collect()
    off_probe.collect()
    if not sparkbloom.skipping(on_probe) or sparkbloom.skipping(off_probe):
        print("spark.sparkbloom.enabled=false in spark.newSession() does not switch sparkbloom off "
              f"({sparkbloom.skipping(on_probe)} / {sparkbloom.skipping(off_probe)})", file=sys.stderr)
        return 2
    soak.started = time.monotonic()
    start = soak.sample()
    histo_start = soak.histogram() if args.histogram else {}
    threads_start = soak.thread_groups()
    stream = soak.start_stream()
    print(f"soak: {args.minutes} min, table {soak.path}, driver JVM pid {soak.jvm_pid}; start {start}", flush=True)

    rngs = [random.Random(i) for i in range(3)]

    def sampler() -> None:
        s = soak.sample()
        if not stream.isActive:
            raise RuntimeError(f"the streaming query stopped: {stream.exception()}")
        print(f"[{s['t_s']:7.1f}s] heap {s['heap_used_mb']} MB, threads {s['jvm_threads']}, fds {s['jvm_fds']}, "
              f"load {s['load1']}; {dict(sorted(soak.counts.items()))}", flush=True)

    threads = [threading.Thread(target=soak.loop, args=a, daemon=True) for a in (
        ("lookups", 0.0, lambda: soak.lookup(rngs[0])),
        ("joins", 1.0, lambda: soak.join(rngs[1])),
        ("merges", args.merge_seconds, lambda: soak.merge(rngs[2])),
    )]
    for i, what in enumerate(Soak.MAINTENANCE):
        threads.append(threading.Thread(target=lambda i=i, what=what: (
            soak.done.wait(i * args.maintenance_seconds / 4),
            soak.loop(what, args.maintenance_seconds, lambda: soak.maintenance(what))), daemon=True))
    # the sampler's first sample is the one above; it starts a period later
    threads.append(threading.Thread(target=lambda: (soak.done.wait(args.sample_seconds),
                                                    soak.loop("sampler", args.sample_seconds, sampler)), daemon=True))
    for t in threads:
        t.start()
    soak.done.wait(seconds)
    soak.done.set()
    for t in threads:
        t.join(timeout=600)
    stream_ok = stream.isActive
    stream_error = None if stream_ok else str(stream.exception())
    stream.stop()
    batches = sum(1 for _ in glob.glob(os.path.join(soak.checkpoint, "commits", "[0-9]*")))
    end = soak.sample()
    histo_end = soak.histogram() if args.histogram else {}
    threads_end = soak.thread_groups()
    getattr(soak.jvm.sparkbloom.write.BackgroundMaintenance, "await")(spark._jsparkSession, 120_000)
    history = delta_history(spark, soak.table)
    describe = sparkbloom.indexes(spark, soak.path)[0].describe()
    verdict = judge(soak.samples, warmup)
    counts = dict(sorted(soak.counts.items()))
    growth = []
    if histo_start and histo_end:
        for cls, e in histo_end.items():
            b = histo_start.get(cls, {"instances": 0, "bytes": 0})
            growth.append({"class": cls, "bytes_delta": e["bytes"] - b["bytes"],
                           "instances_delta": e["instances"] - b["instances"]})
        growth = sorted(growth, key=lambda g: -g["bytes_delta"])[:25]
    report = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "command": " ".join(sys.argv), "minutes": args.minutes, "master": args.master,
        "driver_memory": args.driver_memory,
        "load_average": {"min": min(s["load1"] for s in soak.samples), "max": max(s["load1"] for s in soak.samples),
                         "mean": round(sum(s["load1"] for s in soak.samples) / len(soak.samples), 2)},
        "wrong": counts.get("wrong", 0), "failures": soak.failures, "wrong_examples": soak.wrong,
        "stream_active_at_end": stream_ok, "stream_error": stream_error,
        "counts": {"batches_appended": batches, **counts},
        "delta_history": history,
        "index_after": {k: describe.get(k) for k in ("version", "files_in_table", "files_covered",
                                                     "files_not_covered", "segment_files")},
        "start": start, "end": end, "heap": verdict,
        "threads_start_end": [start["jvm_threads"], end["jvm_threads"]],
        "fds_start_end": [start["jvm_fds"], end["jvm_fds"]],
        "python_threads_start_end": [start["python_threads"], end["python_threads"]],
        "python_fds_start_end": [start["python_fds"], end["python_fds"]],
        "thread_groups_start": threads_start, "thread_groups_end": threads_end,
        "histogram_growth_top": growth, "samples": soak.samples,
    }
    print(json.dumps({k: v for k, v in report.items() if k not in ("samples", "histogram_growth_top")}, indent=1),
          flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if args.plot:
        plot(soak.samples, verdict, args.plot,
             f"sparkbloom soak, {args.minutes:g} min: driver heap after GC, threads, fds")
    spark.stop()
    shutil.rmtree(base, ignore_errors=True)
    return 1 if report["wrong"] or soak.failures or not stream_ok else 0


if __name__ == "__main__":
    sys.exit(main())
