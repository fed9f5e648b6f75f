"""Faults between S3A and the S3 server (tests/objectstore/s3proxy.py): 503 SlowDown, connection resets and stalls
on a fraction of requests, or on every request to the index. Lookups keep returning the right rows (an index read
that still fails after S3A's retries means the files are read), a user's write never fails because of its index
update, and a failed build leaves the previous version readable."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import sparkbloom

FILES = 6
KEYS = FILES * 500


def indexed_table(spark: SparkSession) -> str:
    path = f"s3a://sparkbloom/faults/t-{uuid.uuid4().hex[:8]}"
    spark.range(0, KEYS, 1, FILES).selectExpr("id", "concat('k-', id) AS k").write.parquet(path)
    spark.sql(f"CREATE BLOOM INDEX bk ON parquet.`{path}` (k)")
    return path


def forget_index(spark: SparkSession) -> None:
    """Empties the driver's index cache, so that the next lookup reads the index from the store."""
    spark._jvm.sparkbloom.index.sliced.IndexCache.clear()  # type: ignore[attr-defined]


def lookup(spark: SparkSession, path: str, where: str) -> tuple[list[tuple[Any, ...]], int]:
    """(rows, files read) of a lookup; asserts the rows equal those with sparkbloom off."""
    df = spark.read.parquet(path).where(where)
    on = sorted(tuple(r) for r in df.collect())
    read = sum(r.files_kept for r in sparkbloom.skipping(df) if r.index) if on is not None else 0
    spark.conf.set("spark.sparkbloom.enabled", "false")
    try:
        off = sorted(tuple(r) for r in spark.read.parquet(path).where(where).collect())
    finally:
        spark.conf.set("spark.sparkbloom.enabled", "true")
    assert on == off, (where, on, off)
    return on, read


def record(name: str, stats: dict[str, Any]) -> None:
    """The proxy's counts of a fault run, in target/objectstore/faults-<name>.json (docs/object-store.md)."""
    out = Path(__file__).resolve().parents[2] / "target" / "objectstore" / f"faults-{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({k: stats.get(k) for k in ("requests", "by_class", "status", "faults")}, indent=1))


def faults_of(stats: dict[str, Any]) -> int:
    return int(sum(stats.get("faults", {}).values())) if isinstance(stats.get("faults"), dict) \
        else int(stats.get("faults", 0))


@pytest.mark.parametrize("kinds", [["503"], ["reset"], ["stall"], ["503", "reset", "stall"]])
def test_lookups_right_under_index_faults(spark: SparkSession, s3_proxy: Any, kinds: list[str]) -> None:
    path = indexed_table(spark)
    s3_proxy.configure(fault_rate=0.3, fault_kinds=kinds, fault_class="index", stall_ms=600, seed=7)
    for i in range(3):
        forget_index(spark)
        key = (i * 479) % KEYS
        rows, _ = lookup(spark, path, f"k = 'k-{key}'")
        assert rows == [(key, f"k-{key}")]
        rows, _ = lookup(spark, path, "k = 'absent'")
        assert rows == []
    stats = s3_proxy.stats()
    record("index-" + "-".join(kinds), stats)
    assert faults_of(stats) > 0, stats


def test_index_unreachable_means_files_read(spark: SparkSession, s3_proxy: Any) -> None:
    path = indexed_table(spark)
    forget_index(spark)
    s3_proxy.configure(fault_rate=1.0, fault_kinds=["503"], fault_class="index")
    rows, read = lookup(spark, path, "k = 'k-17'")
    assert rows == [(17, "k-17")]
    assert read in (0, FILES), read  # no index used (0 records), or every file kept
    record("index-unreachable", s3_proxy.stats())
    assert faults_of(s3_proxy.stats()) > 0


def test_write_succeeds_when_its_index_update_fails(spark: SparkSession, s3_proxy: Any) -> None:
    path = indexed_table(spark)
    s3_proxy.configure(fault_rate=1.0, fault_kinds=["503"], fault_class="index")
    spark.range(KEYS, KEYS + 100, 1, 1).selectExpr("id", "concat('k-', id) AS k").write.mode("append").parquet(path)
    record("write-index-unreachable", s3_proxy.stats())
    assert faults_of(s3_proxy.stats()) > 0
    s3_proxy.configure(fault_rate=0.0)
    forget_index(spark)
    rows, _ = lookup(spark, path, f"k = 'k-{KEYS + 5}'")
    assert rows == [(KEYS + 5, f"k-{KEYS + 5}")]
    # the next refresh covers the files the failed update left out
    spark.sql(f"REFRESH BLOOM INDEX bk ON parquet.`{path}`")
    d = {r[0]: r[1] for r in spark.sql(f"DESCRIBE BLOOM INDEX bk ON parquet.`{path}`").collect()}
    assert d["Files Not Covered"] == "0" and d["Problems"] == "none", d


def test_failed_build_leaves_the_previous_version(spark: SparkSession, s3_proxy: Any) -> None:
    path = indexed_table(spark)
    before = {r[0]: r[1] for r in spark.sql(f"DESCRIBE BLOOM INDEX bk ON parquet.`{path}`").collect()}
    spark.range(KEYS, KEYS + 100, 1, 1).selectExpr("id", "concat('k-', id) AS k").write.mode("append").parquet(path)
    s3_proxy.configure(fault_rate=1.0, fault_kinds=["503"], fault_class="index")
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    with pytest.raises((Py4JJavaError, CapturedException)):  # the statement fails: its version is not committed
        spark.sql(f"REFRESH BLOOM INDEX bk ON parquet.`{path}` FULL")
    s3_proxy.configure(fault_rate=0.0)
    forget_index(spark)
    after = {r[0]: r[1] for r in spark.sql(f"DESCRIBE BLOOM INDEX bk ON parquet.`{path}`").collect()}
    assert after["Problems"] == "none", after
    assert int(after["Version"]) >= int(before["Version"]), (before, after)
    rows, read = lookup(spark, path, "k = 'k-42'")
    assert rows == [(42, "k-42")] and read == 1, read


def test_lookups_right_under_faults_on_every_kind_of_request(spark: SparkSession, s3_proxy: Any) -> None:
    """503s on a tenth of all requests, data and index alike: S3A retries them, and the rows stay right."""
    path = indexed_table(spark)
    s3_proxy.configure(fault_rate=0.1, fault_kinds=["503"], fault_class=None, seed=11)
    for key in (3, 1777, 2999):
        forget_index(spark)
        rows, _ = lookup(spark, path, f"k = 'k-{key}'")
        assert rows == [(key, f"k-{key}")]
    record("all-requests-503", s3_proxy.stats())
    assert faults_of(s3_proxy.stats()) > 0
