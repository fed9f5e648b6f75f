"""Index commits without atomic rename: K writer processes (separate JVMs, tests/objectstore/racing_writer.py) write
new partitions of one indexed Parquet table on the object store at once, by dynamic partition overwrite, with
maintenance on write: every write commits a version of the index, and racing writers race for version numbers.

Afterwards: no version lost (every version a writer was told it published is there, and every partition's files are
covered by the newest version with no catch-up refresh run), no version torn (every commit reads whole and names its
version), no write failed, and lookups' rows equal those with sparkbloom off.

The proxy delays each COPY of a commit file (S3A's rename is a copy and a delete) to widen the window a rename-based
commit leaves open; `test_rename_commits_lose_versions` shows that window losing versions with the commit of before
(`sparkbloom.commit.store=rename`), so the test is known to catch the failure it guards against.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

HERE = Path(__file__).resolve().parent
WRITERS = int(os.environ.get("SPARKBLOOM_RACING_WRITERS", "4"))
COMMITS = int(os.environ.get("SPARKBLOOM_RACING_COMMITS", "12"))  # 200 in the runs of docs/object-store.md


def run_writers(s3_proxy: Any, s3: dict[str, str], table: str, writers: int, writes: int,
                commit_store: str) -> list[dict[str, Any]]:
    endpoint = s3_proxy.endpoint
    procs = [subprocess.Popen(
        [sys.executable, str(HERE / "racing_writer.py"), "--endpoint", endpoint, "--access-key", s3["access_key"],
         "--secret-key", s3["secret_key"], "--table", table, "--writer", str(w), "--writes", str(writes),
         "--commit-store", commit_store],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(writers)]
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=3600)
        assert p.returncode == 0, err[-4000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def outcome(spark: SparkSession, table: str) -> dict[str, Any]:
    """What the index holds after the race: its commits, and the table's files it does not cover."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    conf = spark._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    commits = jvm.org.apache.hadoop.fs.Path(f"{table}/_sparkbloom/bk/_commits")
    fs = commits.getFileSystem(conf)
    versions = sorted(int(s.getPath().getName()[:-5]) for s in fs.listStatus(commits)
                      if s.getPath().getName().endswith(".json"))
    # none torn: every commit reads whole and names its own version
    index_dir = jvm.org.apache.hadoop.fs.Path(f"{table}/_sparkbloom/bk")
    torn = [v for v in versions if jvm.sparkbloom.index.IndexStore.readMeta(fs, index_dir, v).version() != v]
    spark.catalog.clearCache()
    d = {r[0]: r[1] for r in spark.sql(f"DESCRIBE BLOOM INDEX bk ON parquet.`{table}`").collect()}
    return {"versions": versions, "torn": torn, "files_in_table": int(d["Files In Table"]),
            "files_not_covered": int(d["Files Not Covered"]), "problems": d["Problems"], "describe": d}


def race(spark: SparkSession, s3_proxy: Any, s3: dict[str, str], writers: int, commits: int,
         commit_store: str) -> dict[str, Any]:
    table = f"s3a://sparkbloom/racing/t-{uuid.uuid4().hex[:8]}"
    spark.range(0, 10, 1, 1).selectExpr("id", "concat('k-', id) AS k", "-1 AS w", "0 AS n") \
        .write.partitionBy("w", "n").parquet(table)
    spark.sql(f"CREATE BLOOM INDEX bk ON parquet.`{table}` (k)")
    # the window of a rename-based commit: S3A's copy of `_commits/.<N>...tmp` to `_commits/<N>.json`
    s3_proxy.configure(copy_delay_ms=1500, copy_delay_match="/_commits/")
    try:
        reports = run_writers(s3_proxy, s3, table, writers, commits // writers, commit_store)
    finally:
        s3_proxy.configure(copy_delay_ms=0, copy_delay_match=None)
    result = outcome(spark, table)
    # a version a writer was told it won but that is not there was lost (overwritten by another writer's)
    published = sum(r["published"] for r in reports)
    result.update(published=published, lost=published - (len(result["versions"]) - 1))
    result.update(table=table, writes=sum(r["writes"] for r in reports), failed=sum(r["failed"] for r in reports),
                  seconds=max(r["seconds"] for r in reports), stats=s3_proxy.stats())
    out = HERE.parents[1] / "target" / "objectstore" / f"racing-{commit_store}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({k: v for k, v in result.items() if k != "describe"}, indent=1, default=str))
    print(f"racing writers ({commit_store}): {writers} writers, {result['writes']} writes, "
          f"{result['failed']} failed, {result['published']} versions published, {len(result['versions'])} there "
          f"(highest {max(result['versions'])}), {result['lost']} lost, {len(result['torn'])} torn, "
          f"{result['files_not_covered']} of {result['files_in_table']} files not covered, {result['seconds']} s")
    return result


def test_racing_writers_lose_no_version(spark: SparkSession, s3_proxy: Any, s3_server: dict[str, str]) -> None:
    r = race(spark, s3_proxy, s3_server, WRITERS, COMMITS, "auto")
    assert r["failed"] == 0, r
    assert r["problems"] == "none", r["describe"]
    assert r["lost"] == 0 and r["torn"] == [], r
    # no version lost: every partition written is covered, without any refresh after the race
    assert r["files_not_covered"] == 0, r["describe"]
    assert r["files_in_table"] == 1 + r["writes"], r["describe"]  # one file a write, and the first
    # no version torn or skipped: 1 (CREATE) .. highest, each readable (DESCRIBE read the newest; a gap would mean a
    # commit published out of order)
    assert r["versions"] == list(range(1, max(r["versions"]) + 1)), r["versions"]
    assert len(r["versions"]) >= 1 + r["writes"], r["versions"]
    rows = spark.read.parquet(r["table"]).where("k IN ('k-0', 'k-1000010', 'k-3000500', 'absent')")
    on = sorted(tuple(x) for x in rows.collect())
    spark.conf.set("spark.sparkbloom.enabled", "false")
    try:
        off = sorted(tuple(x) for x in spark.read.parquet(r["table"])
                     .where("k IN ('k-0', 'k-1000010', 'k-3000500', 'absent')").collect())
    finally:
        spark.conf.set("spark.sparkbloom.enabled", "true")
    assert on == off and len(on) >= 2, (on, off)


@pytest.mark.skipif(os.environ.get("SPARKBLOOM_RACING_BEFORE", "1") == "0", reason="SPARKBLOOM_RACING_BEFORE=0")
def test_rename_commits_lose_versions(spark: SparkSession, s3_proxy: Any, s3_server: dict[str, str]) -> None:
    """The same race with the commit of before (a rename without overwrite: on S3A a check, a copy and a delete)
    loses versions: the test above would catch a regression to it.

    A loss needs two writers' commits of one version to meet in the copy's window, which two writers of 8 writes
    each do not always do: the clean-clone CI run of d370627 (a loaded machine) had 16 writes publish 16 versions, none
    lost, where earlier runs lost some. So up to three races are run, and at least one must lose a version."""
    results = []
    for _ in range(3):
        r = race(spark, s3_proxy, s3_server, 2, int(os.environ.get("SPARKBLOOM_RACING_BEFORE_COMMITS", "16")),
                 "rename")
        assert r["failed"] == 0, r
        results.append({k: r[k] for k in ("writes", "published", "lost", "seconds")})
        if r["lost"] > 0:
            break
    # the next write's refresh lists the table and covers a lost version's files again: what is lost is versions
    assert results[-1]["lost"] > 0, f"no version lost in {len(results)} races with rename commits: {results}"
