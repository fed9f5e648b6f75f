"""Lakehouse smoke: Delta Lake and Iceberg tables with the installed sparkbloom wheel, on this pyspark.

dev/matrix runs this file once per Spark line whose table formats publish artifacts (the `lakehouse.<line>`
rows of project/versions.properties), in that line's smoke venv, with SPARKBLOOM_LAKEHOUSE_JARS naming the
runtime jars `sbt lakehouseJars` copied from Maven Central's cache (nothing is downloaded here). Each format
present gets a 40-file table, an index, and a life (delete, rename of the indexed column, append and
incremental refresh, time travel, compaction for Iceberg), with every lookup's rows compared with the same
query run with sparkbloom off.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Callable

import pytest
from pyspark.sql import DataFrame, SparkSession

import sparkbloom

JARS = os.environ.get("SPARKBLOOM_LAKEHOUSE_JARS", "")
if not JARS:
    pytest.skip("SPARKBLOOM_LAKEHOUSE_JARS is not set (dev/matrix sets it for lines with Delta or Iceberg)",
                allow_module_level=True)
HAS_DELTA = "delta-spark" in JARS
HAS_ICEBERG = "iceberg-spark-runtime" in JARS
FILES = 40
KEYS = FILES * 100


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    warehouse = tmp_path_factory.mktemp("lake")
    conf = {"spark.jars": JARS}
    # sparkbloom's extension listed first on purpose: configure() must put it after the formats' own.
    extensions = ["sparkbloom.SparkBloomExtensions"]
    if HAS_DELTA:
        extensions.append("io.delta.sql.DeltaSparkSessionExtension")
        conf["spark.sql.catalog.spark_catalog"] = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        conf["spark.databricks.delta.snapshotPartitions"] = "2"
    if HAS_ICEBERG:
        extensions.append("org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        conf["spark.sql.catalog.ice"] = "org.apache.iceberg.spark.SparkCatalog"
        conf["spark.sql.catalog.ice.type"] = "hadoop"
        conf["spark.sql.catalog.ice.warehouse"] = str(warehouse / "ice")
    conf["spark.sql.extensions"] = ",".join(extensions)
    session = sparkbloom.session.local_session(
        "sparkbloom-lakehouse-smoke", warehouse_dir=warehouse / "spark", conf=conf)
    yield session
    session.stop()


def keys(spark: SparkSession) -> DataFrame:
    """FILES files of user keys `u-<n>` spread so that every file's min/max spans the key range."""
    return spark.range(0, KEYS, 1, FILES).selectExpr(
        "id", f"concat('u-', cast((id * 7919) % {KEYS} as string)) AS k", "id % 7 AS v")


def appended(spark: SparkSession) -> DataFrame:
    """Two more files, keys `n-<id>`, the key column already renamed to user_key."""
    return spark.range(KEYS, KEYS + 200, 1, 2).selectExpr(
        "id", "concat('n-', cast(id as string)) AS user_key", "id % 7 AS v")


def compare(spark: SparkSession, query: Callable[[], DataFrame]):
    """(rows with sparkbloom on, the skipping records of that run); asserts the rows equal those with it off
    and the scans' SQL metrics count the files the records say were skipped."""
    df = query()
    on = sorted(tuple(r) for r in df.collect())
    records = sparkbloom.skipping(df)
    metered = [m["bloom_metrics"]["filesSkipped"] for m in sparkbloom.scan_metrics(df) if m["bloom_metrics"]]
    assert sum(metered) == sum(r.files_total - r.files_kept for r in records if r.index), (metered, records)
    spark.conf.set("spark.sparkbloom.enabled", "false")
    try:
        off = sorted(tuple(r) for r in query().collect())
    finally:
        spark.conf.set("spark.sparkbloom.enabled", "true")
    assert on == off, (on, off)
    return on, records


def test_configure_lists_sparkbloom_after_the_formats(spark: SparkSession):
    listed = spark.conf.get("spark.sql.extensions").split(",")
    assert listed[-1] == "sparkbloom.SparkBloomExtensions", listed
    assert any("Delta" in e or "Iceberg" in e for e in listed[:-1]), listed


@pytest.mark.skipif(not HAS_DELTA, reason="this Spark line has no delta-spark")
def test_delta_table_life(spark: SparkSession):
    spark.sql("CREATE TABLE dl (id BIGINT, k STRING, v BIGINT) USING delta TBLPROPERTIES ("
              "'delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true')")
    keys(spark).write.format("delta").mode("append").saveAsTable("dl")
    spark.sql("CREATE BLOOM INDEX dix ON dl (k)")

    rows, [rec] = compare(spark, lambda: spark.sql("SELECT * FROM dl WHERE k = 'u-1234'"))
    assert len(rows) == 1 and rec.files_total == FILES and rec.files_kept <= 3, rec
    explained = spark.sql("EXPLAIN SELECT * FROM dl WHERE k = 'u-1234'").head()[0]
    assert "BloomIndexSkipping [dix]" in explained and "BloomDeltaFileIndex" in explained, explained

    # deletion vectors: the deleted row stays deleted though its file is read
    spark.sql("DELETE FROM dl WHERE k = 'u-2345'")
    rows, [rec] = compare(spark, lambda: spark.sql("SELECT * FROM dl WHERE k = 'u-2345' OR k = 'u-2346'"))
    assert len(rows) == 1 and rec.files_kept <= 4, rec

    # rename: the files keep the physical name, so the index answers under the new one
    spark.sql("ALTER TABLE dl RENAME COLUMN k TO user_key")
    rows, [rec] = compare(spark, lambda: spark.sql("SELECT * FROM dl WHERE user_key = 'u-777'"))
    assert len(rows) == 1 and rec.files_kept <= 3, rec

    # append: maintained on write, the new files are covered when the write returns (a REFRESH finds nothing new)
    appended(spark).write.format("delta").mode("append").saveAsTable("dl")
    rows, [rec] = compare(spark, lambda: spark.sql(f"SELECT * FROM dl WHERE user_key = 'n-{KEYS + 7}'"))
    assert len(rows) == 1 and rec.files_not_covered == 0 and rec.files_kept <= 3, rec
    spark.sql("REFRESH BLOOM INDEX dix ON dl INCREMENTAL")
    d = {r[0]: r[1] for r in spark.sql("DESCRIBE BLOOM INDEX dix ON dl").collect()}
    assert d["Table Version Covered"] == d["Table Version Now"], d
    rows, [rec] = compare(spark, lambda: spark.sql("SELECT * FROM dl WHERE user_key = 'u-888'"))
    assert len(rows) == 1 and rec.files_not_covered == 0 and rec.files_kept <= 3, rec

    # time travel to the first write: the deleted row is there, under the old name
    rows, _ = compare(spark, lambda: spark.sql("SELECT * FROM dl VERSION AS OF 1 WHERE k = 'u-2345'"))
    assert len(rows) == 1


@pytest.mark.skipif(not HAS_ICEBERG, reason="this Spark line has no iceberg-spark-runtime")
def test_iceberg_table_life(spark: SparkSession):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    spark.sql("CREATE TABLE ice.db.t (id BIGINT, k STRING, v BIGINT) USING iceberg TBLPROPERTIES ("
              "'format-version' = '2', 'write.distribution-mode' = 'none', 'write.delete.mode' = 'merge-on-read')")
    keys(spark).writeTo("ice.db.t").append()
    first = spark.sql("SELECT snapshot_id FROM ice.db.t.snapshots").head()[0]
    ix = spark.table("ice.db.t").bloomFilterIndex("k", name="iix")  # the Python API on spark.table(...)
    assert ix.describe()["files_covered"] == FILES

    rows, [rec] = compare(spark, lambda: spark.sql("SELECT * FROM ice.db.t WHERE k = 'u-1234'"))
    assert len(rows) == 1 and rec.files_total == FILES and rec.files_kept <= 3, rec
    rows, [rec] = compare(spark, lambda: spark.sql("SELECT count(*) FROM ice.db.t WHERE k IN ('u-1', 'u-2')"))
    assert rows == [(2,)] and rec.files_kept <= 4, rec
    explained = spark.sql("EXPLAIN SELECT * FROM ice.db.t WHERE k = 'u-1234'").head()[0]
    assert "BloomIndexSkipping [iix]" in explained, explained

    # merge-on-read delete: the position delete file still applies to the kept file
    spark.sql("DELETE FROM ice.db.t WHERE k = 'u-2345'")
    rows, _ = compare(spark, lambda: spark.sql("SELECT * FROM ice.db.t WHERE k = 'u-2345' OR k = 'u-2346'"))
    assert len(rows) == 1

    # time travel to the first snapshot: the deleted row is back (pruned or not, the rows are Iceberg's)
    rows, _ = compare(spark, lambda: spark.sql(f"SELECT * FROM ice.db.t VERSION AS OF {first} WHERE k = 'u-2345'"))
    assert len(rows) == 1

    # rename: the field id stays
    spark.sql("ALTER TABLE ice.db.t RENAME COLUMN k TO user_key")
    rows, [rec] = compare(spark, lambda: spark.sql("SELECT * FROM ice.db.t WHERE user_key = 'u-777'"))
    assert len(rows) == 1 and rec.files_kept <= 3, rec

    # append: maintained on write, the new files are covered when the write returns
    appended(spark).writeTo("ice.db.t").append()
    rows, [rec] = compare(spark, lambda: spark.sql(f"SELECT * FROM ice.db.t WHERE user_key = 'n-{KEYS + 7}'"))
    assert len(rows) == 1 and rec.files_not_covered == 0 and rec.files_kept <= 3, rec
    ix.refresh()
    d = ix.describe()
    assert d["files_not_covered"] == 0 and d["table_version_covered"] == d["table_version_now"], d

    # compaction by Iceberg's procedure: no plan marks it, Iceberg's commit event does; covered when it returns
    before = ix.describe()["files_in_table"]
    spark.sql("CALL ice.system.rewrite_data_files(table => 'db.t', options => map('rewrite-all', 'true'))")
    d = ix.describe()
    assert d["files_in_table"] < before and d["files_not_covered"] == 0, d
    rows, [rec] = compare(spark, lambda: spark.sql("SELECT * FROM ice.db.t WHERE user_key = 'u-999'"))
    assert len(rows) == 1 and rec.files_not_covered == 0, rec
    ix.refresh()
    rows, [rec] = compare(spark, lambda: spark.sql("SELECT * FROM ice.db.t WHERE user_key = 'u-999'"))
    assert len(rows) == 1 and rec.files_not_covered == 0, rec
