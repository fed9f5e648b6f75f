"""Driver program of test_cluster.py, run as its own process (one SparkContext per process, and the test
process may already hold the shared local session).

    python cluster_driver.py --master spark://127.0.0.1:7077 --data DIR --build --master-ui http://...
    python cluster_driver.py --master local[2] --data DIR

With --build it writes the table (FILES files) and creates the bloom index with SQL, then it runs QUERIES
with spark.sparkbloom.enabled off and on. It prints one JSON line prefixed with RESULT: the rows, the
files read (sparkbloom.skipping and Spark's numFiles) and, for a cluster, where the tasks ran.
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request
from typing import Any

from pyspark.sql import DataFrame, SparkSession

import sparkbloom

FILES, PER_FILE, STEP = 40, 500, 7919
ROWS = FILES * PER_FILE  # id = (i * STEP) % ROWS permutes 0..ROWS-1; row i lands in file i // PER_FILE


def key_of(i: int) -> int:
    return (i * STEP) % ROWS


def email_of(i: int) -> str:
    return f"user{key_of(i)}@example.com"


QUERIES: dict[str, str] = {
    "point id": f"id = {key_of(12345)}",
    "point email": f"email = '{email_of(777)}'",
    "IN id": f"id IN ({key_of(10)}, {key_of(9010)}, {key_of(19990)})",
    "IN email": f"email IN ('{email_of(4321)}', '{email_of(15000)}')",
    "absent id": f"id = {ROWS + 17}",
    "absent email": "email = 'nobody@example.com'",
}


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def executor_tasks(spark: SparkSession) -> dict[str, int]:
    """Tasks completed per active executor id ("driver" is the driver), from the driver's status store:
    what the UI's REST API serves, read without HTTP."""
    summaries = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    return {summaries.apply(n).id(): int(summaries.apply(n).totalTasks()) for n in range(summaries.size())}


def settled_executor_tasks(spark: SparkSession, before: dict[str, int]) -> dict[str, int]:
    """The listener bus is asynchronous: wait until the task counts stop moving after a job."""
    last, stable_since = executor_tasks(spark), time.monotonic()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = executor_tasks(spark)
        if now != last:
            last, stable_since = now, time.monotonic()
        elif now != before and time.monotonic() - stable_since >= 1.5:
            break
    return last


def run_queries(spark: SparkSession, df: DataFrame) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, condition in QUERIES.items():
        result: dict[str, Any] = {"condition": condition}
        for enabled in (False, True):
            spark.conf.set("spark.sparkbloom.enabled", str(enabled).lower())
            query = df.where(condition)
            rows = sorted([r.id, r.email, r.i] for r in query.collect())
            label = "on" if enabled else "off"
            result[f"rows_{label}"] = rows
            result[f"num_files_{label}"] = sum(int(s["metrics"]["numFiles"]) for s in sparkbloom.scan_metrics(query))
            result[f"skipping_{label}"] = [s.as_dict() for s in sparkbloom.skipping(query)]
        out[name] = result
    spark.conf.set("spark.sparkbloom.enabled", "true")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--master", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--build", action="store_true", help="write the table and CREATE BLOOM INDEX")
    parser.add_argument("--master-ui", help="the standalone master's web UI, to read its JSON")
    args = parser.parse_args()
    cluster = args.master.startswith("spark://")

    builder = (
        SparkSession.builder.master(args.master)
        .appName("sparkbloom cluster test" if cluster else "sparkbloom cluster test (local)")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.log.level", "WARN")
    )
    if cluster:
        builder = (builder.config("spark.executor.memory", "512m").config("spark.cores.max", "2")
                   .config("spark.executor.cores", "1"))
    spark = sparkbloom.configure(builder).getOrCreate()
    report: dict[str, Any] = {"master": spark.sparkContext.master, "app_id": spark.sparkContext.applicationId}
    try:
        if cluster:
            # The executors register asynchronously; the build must not start before both are there.
            deadline = time.monotonic() + 120
            while len([e for e in executor_tasks(spark) if e != "driver"]) < 2:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"executors never registered: {executor_tasks(spark)}")
                time.sleep(0.5)
        if args.build:
            (spark.range(0, ROWS, 1, FILES)
             .selectExpr(f"(id * {STEP}) % {ROWS} AS id",
                         f"concat('user', (id * {STEP}) % {ROWS}, '@example.com') AS email", "id AS i")
             .write.parquet(args.data))
            before = executor_tasks(spark) if cluster else {}
            spark.sql(f"CREATE BLOOM INDEX ix ON parquet.`{args.data}` (id, email) OPTIONS (fpp = 0.001)")
            if cluster:
                after = settled_executor_tasks(spark, before)
                report["build_tasks"] = {e: after[e] - before.get(e, 0) for e in after}
        report["describe"] = [r.asDict() for r in
                              spark.sql(f"DESCRIBE BLOOM INDEX ix ON parquet.`{args.data}`").collect()]
        df = spark.read.parquet(args.data)
        report["data_files"] = len(df.inputFiles())
        report["queries"] = run_queries(spark, df)
        if cluster:
            report["executors"] = sorted(executor_tasks(spark))
            report["status_tracker_hosts"] = sorted(
                e.host() for e in spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos())
            if args.master_ui:
                state = get_json(f"{args.master_ui}/json")
                report["master_apps"] = [
                    {k: a.get(k) for k in ("id", "name", "cores", "state")} for a in state.get("activeapps", [])]
    finally:
        spark.stop()
    print("RESULT:" + json.dumps(report, default=str))


if __name__ == "__main__":
    main()
