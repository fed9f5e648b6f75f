"""Every sparkbloom feature on `s3a://` tables in a real S3 server (MinIO, dev/objectstore), through the proxy of
tests/objectstore/s3proxy.py (no latency, no faults unless a test asks): the DDL, literal lookups and run-time key
sets, Delta and Iceberg DML, maintenance on write (path and catalog appends, Delta and Iceberg commits, a streaming
sink), V1 and V2 Parquet, an index root on another bucket, and a harvest of other writers' filters. Every query's
rows are compared with the same query with sparkbloom off; after every write, DESCRIBE shows no file uncovered and a
lookup of a key the write added reads one file.
"""

from __future__ import annotations

import os
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import sparkbloom

FILES = 8
KEYS = FILES * 500


def fresh(prefix: str) -> str:
    return f"s3a://sparkbloom/features/{prefix}-{uuid.uuid4().hex[:8]}"


def keys_df(spark: SparkSession, start: int = 0, n: int = KEYS, files: int = FILES) -> DataFrame:
    """`files` files of keys k-<id>, spread so that min/max statistics cannot prune."""
    return spark.range(start, start + n, 1, files).selectExpr(
        "id", "concat('k-', cast(id as string)) AS k", "cast(id % 5 as int) AS v")


def compare(spark: SparkSession, query: Callable[[], DataFrame]) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """Rows with sparkbloom on (and its skipping records); asserts they equal the rows with it off."""
    df = query()
    on = sorted(tuple(r) for r in df.collect())
    records = sparkbloom.skipping(df)
    spark.conf.set("spark.sparkbloom.enabled", "false")
    try:
        off = sorted(tuple(r) for r in query().collect())
    finally:
        spark.conf.set("spark.sparkbloom.enabled", "true")
    assert on == off, (on, off)
    return on, records


def files_read(records: list[Any]) -> int:
    return sum(r.files_kept for r in records if r.index)


def describe(spark: SparkSession, name: str, table: str) -> dict[str, str]:
    return {r[0]: r[1] for r in spark.sql(f"DESCRIBE BLOOM INDEX {name} ON {table}").collect()}


def settle(spark: SparkSession) -> None:
    """Waits for the background refreshes and OPTIMIZEs queued so far (streaming sinks, catch-ups)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    assert getattr(jvm.sparkbloom.write.BackgroundMaintenance, "await")(spark._jsparkSession, 120_000)


def assert_covered_and_one_file(spark: SparkSession, name: str, table: str, lookup: Callable[[], DataFrame]) -> None:
    d = describe(spark, name, table)
    assert d["Files Not Covered"] == "0" and d["Problems"] == "none", d
    rows, records = compare(spark, lookup)
    assert rows, "the key looked up is in the table"
    assert files_read(records) == 1, records


@pytest.fixture
def parquet_table(spark: SparkSession) -> Iterator[str]:
    path = fresh("parquet")
    keys_df(spark).write.parquet(path)
    yield path


def test_parquet_ddl_lookups_and_maintenance(spark: SparkSession, parquet_table: str) -> None:
    t = f"parquet.`{parquet_table}`"
    spark.sql(f"CREATE BLOOM INDEX bk ON {t} (k)")
    d = describe(spark, "bk", t)
    assert d["Files Covered"] == str(FILES) and d["Files Not Covered"] == "0", d
    assert d["Commit Safety"].startswith("atomic (s3a: conditional PUT"), d["Commit Safety"]
    # present, absent, IN, <=>
    rows, rec = compare(spark, lambda: spark.read.parquet(parquet_table).where("k = 'k-1234'"))
    assert len(rows) == 1 and files_read(rec) == 1, rec
    rows, rec = compare(spark, lambda: spark.read.parquet(parquet_table).where("k = 'absent'"))
    assert rows == [] and files_read(rec) == 0, rec
    rows, rec = compare(spark, lambda: spark.read.parquet(parquet_table).where("k IN ('k-1', 'k-2', 'nope')"))
    assert len(rows) == 2 and files_read(rec) <= 2, rec
    # maintenance on write: a plain append (the committer's rename is a copy on S3A)
    keys_df(spark, KEYS, 200, 2).write.mode("append").parquet(parquet_table)
    assert_covered_and_one_file(spark, "bk", t, lambda: spark.read.parquet(parquet_table).where(f"k = 'k-{KEYS + 7}'"))
    # V2 Parquet scan
    before = spark.conf.get("spark.sql.sources.useV1SourceList")
    spark.conf.set("spark.sql.sources.useV1SourceList", "")
    try:
        rows, rec = compare(spark, lambda: spark.read.parquet(parquet_table).where(f"k = 'k-{KEYS + 8}'"))
        assert len(rows) == 1 and files_read(rec) == 1, rec
    finally:
        spark.conf.set("spark.sql.sources.useV1SourceList", before)
    # run-time key sets: a join and IN (subquery)
    spark.createDataFrame([(f"k-{i}",) for i in (3, 1500, KEYS + 1, 99999999)], "key string") \
        .createOrReplaceTempView("probe_keys")
    spark.read.parquet(parquet_table).createOrReplaceTempView("s3_table")
    rows, rec = compare(spark, lambda: spark.sql("SELECT t.id, t.k FROM s3_table t JOIN probe_keys p ON t.k = p.key"))
    assert len(rows) == 3 and files_read(rec) <= 3, rec
    rows, rec = compare(spark, lambda: spark.read.parquet(parquet_table)
                        .where("k IN (SELECT key FROM probe_keys)").select("id"))
    assert len(rows) == 3 and files_read(rec) <= 3, rec
    # REFRESH (incremental, full), OPTIMIZE, VACUUM
    spark.sql(f"REFRESH BLOOM INDEX bk ON {t}")
    spark.sql(f"REFRESH BLOOM INDEX bk ON {t} FULL")
    spark.sql(f"OPTIMIZE BLOOM INDEX bk ON {t}")
    d = describe(spark, "bk", t)
    assert int(d["Versions Kept"]) > 1 and d["Files Not Covered"] == "0", d
    spark.conf.set("spark.sparkbloom.vacuum.retentionDurationCheck.enabled", "false")
    try:
        spark.sql(f"VACUUM BLOOM INDEX bk ON {t} RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.sparkbloom.vacuum.retentionDurationCheck.enabled")
    d = describe(spark, "bk", t)
    assert d["Versions Kept"] == "1" and d["Problems"] == "none", d
    rows, rec = compare(spark, lambda: spark.read.parquet(parquet_table).where("k = 'k-42'"))
    assert len(rows) == 1 and files_read(rec) == 1, rec


def test_catalog_table_appends(spark: SparkSession) -> None:
    name = f"cat_{uuid.uuid4().hex[:8]}"
    location = fresh("catalog")
    keys_df(spark).write.option("path", location).format("parquet").saveAsTable(name)
    spark.sql(f"CREATE BLOOM INDEX bk ON {name} (k)")
    spark.sql(f"INSERT INTO {name} SELECT id, concat('k-', id), 1 FROM range({KEYS}, {KEYS + 100}, 1, 1)")
    assert_covered_and_one_file(spark, "bk", name, lambda: spark.table(name).where(f"k = 'k-{KEYS + 50}'"))
    keys_df(spark, KEYS + 100, 100, 1).write.mode("append").saveAsTable(name)
    assert_covered_and_one_file(spark, "bk", name, lambda: spark.table(name).where(f"k = 'k-{KEYS + 150}'"))
    spark.sql(f"DROP TABLE {name}")


def test_index_root_on_another_bucket(spark: SparkSession, parquet_table: str) -> None:
    spark.conf.set("spark.sparkbloom.index.root", "s3a://sparkbloom-index/indexes")
    try:
        t = f"parquet.`{parquet_table}`"
        spark.sql(f"CREATE BLOOM INDEX bk ON {t} (k)")
        d = describe(spark, "bk", t)
        assert d["Location"].startswith("s3a://sparkbloom-index/indexes/"), d["Location"]
        keys_df(spark, KEYS, 100, 1).write.mode("append").parquet(parquet_table)
        assert_covered_and_one_file(spark, "bk", t, lambda: spark.read.parquet(parquet_table).where(f"k = 'k-{KEYS}'"))
        jvm = spark._jvm  # type: ignore[attr-defined]
        p = jvm.org.apache.hadoop.fs.Path(parquet_table + "/_sparkbloom")
        assert not p.getFileSystem(spark._jsc.hadoopConfiguration()).exists(p), "nothing under the table root"
    finally:
        spark.conf.unset("spark.sparkbloom.index.root")


def test_housekeeping_of_version_directories_by_their_files_age(spark: SparkSession, s3_client: Callable[..., Any],
                                                                parquet_table: str) -> None:
    """S3A lists a directory with the time of the listing (a key prefix has none): the cleaning of old versions and
    VACUUM tell a directory's age by its files. Before 2026-12-07 every directory looked brand new, so on S3 no old
    version directory was ever removed. Here an old one goes, and another writer's version directory, its first
    segment written a moment ago and not committed yet, stays (the grace period set to 10 s from 60 s)."""
    t = f"parquet.`{parquet_table}`"
    bucket, key = parquet_table[len("s3a://"):].split("/", 1)
    s3 = s3_client()

    def version_dirs() -> set[str]:
        found = s3.list_objects_v2(Bucket=bucket, Prefix=f"{key}/_sparkbloom/bk/")["Contents"]
        return {o["Key"].split("/_sparkbloom/bk/")[1].split("/")[0] for o in found} - {"_commits"}

    spark.conf.set("spark.sparkbloom.index.versionDirGracePeriod", "10s")
    try:
        spark.sql(f"CREATE BLOOM INDEX bk ON {t} (k)")
        first = version_dirs()
        spark.sql(f"REFRESH BLOOM INDEX bk ON {t} FULL")  # the newest two versions read both directories
        time.sleep(11)  # the first directory's files older than the grace period
        being_written = f"{key}/_sparkbloom/bk/v99-0123abcd/p0-c0-b1-0.seg"
        s3.put_object(Bucket=bucket, Key=being_written, Body=b"a segment being written")
        spark.sql(f"REFRESH BLOOM INDEX bk ON {t} FULL")  # cleans after the statement returns, on a remote store
        jvm = spark._jvm  # type: ignore[attr-defined]
        assert jvm.sparkbloom.parquet.StoreFiles.awaitBackground(60_000), "the cleaning did not end in 60 s"
    finally:
        spark.conf.unset("spark.sparkbloom.index.versionDirGracePeriod")
    left = version_dirs()
    assert len(first) == 1 and not first & left, (first, left)  # the old version's directory is gone
    assert "v99-0123abcd" in left and len(left) == 3, left  # the two versions read, and the one being written
    d = describe(spark, "bk", t)
    assert d["Files Not Covered"] == "0" and d["Problems"] == "none", d
    rows, records = compare(spark, lambda: spark.read.parquet(parquet_table).where("k = 'k-77'"))
    assert len(rows) == 1 and 1 <= files_read(records) < FILES, records  # the key's file, and what the filters keep


def test_one_index_listing_after_the_listing_ttl(spark: SparkSession, s3_proxy: Any, parquet_table: str) -> None:
    """Once `spark.sparkbloom.index.listingTtl` has passed, a lookup and a maintained write list the table's indexes
    in one request: a flat LIST of `_sparkbloom/` gives every index's directory and commits (listing by directories
    took a LIST of `_sparkbloom/` and one of each index's `_commits/`: 3 here, with two indexes)."""
    t = f"parquet.`{parquet_table}`"
    spark.sql(f"CREATE BLOOM INDEX bk ON {t} (k)")
    spark.sql(f"CREATE BLOOM INDEX bi ON {t} (id)")
    ttl_ms = 1500
    spark.conf.set("spark.sparkbloom.index.listingTtl", f"{ttl_ms}ms")

    def one_flat_listing(step: Callable[[int], None]) -> None:
        """`step` after the TTL makes one index LIST, a flat one (no delimiter). One earlier full run of this suite
        (2026-12-02) saw the 3 LISTs of listing by directories on the first lookup, not seen in 3 runs since and not
        explained: a step that misses is warned of with its index requests and run once more, which must not miss."""
        for attempt in range(2):
            time.sleep(ttl_ms / 1000 + 0.2)
            s3_proxy.reset()
            step(attempt)
            index_log = [x for x in s3_proxy.log() if x[2] == "index"]
            lists = [x[3] for x in index_log if x[1] == "LIST"]
            if len(lists) == 1 and "delimiter" not in lists[0]:
                return
            assert attempt == 0, index_log
            warnings.warn(f"index listings after the TTL, first attempt: {index_log}", stacklevel=2)

    def lookup(key: int) -> None:
        rows, rec = compare(spark, lambda: spark.read.parquet(parquet_table).where(f"k = 'k-{key}'"))
        assert len(rows) == 1 and files_read(rec) == 1, rec

    appended = [KEYS]

    def append(_: int) -> None:  # a maintained append of 100 new keys
        keys_df(spark, appended[0], 100, 1).write.mode("append").parquet(parquet_table)
        appended[0] += 100
        settle(spark)

    try:
        one_flat_listing(lambda _: lookup(1234))
        one_flat_listing(append)  # a maintained append after the TTL
        one_flat_listing(lambda _: lookup(KEYS + 3))  # a key of that append
        one_flat_listing(append)
        for name in ("bk", "bi"):
            d = describe(spark, name, t)
            assert d["Files Not Covered"] == "0" and d["Problems"] == "none", (name, d)
        rows, rec = compare(spark, lambda: spark.read.parquet(parquet_table).where(f"id = {appended[0] - 50}"))
        assert len(rows) == 1 and files_read(rec) == 1, rec
    finally:
        spark.conf.unset("spark.sparkbloom.index.listingTtl")


def test_harvest_of_duckdb_filters_on_the_object_store(spark: SparkSession, tmp_path: Path,
                                                      s3_client: Any) -> None:
    duckdb = pytest.importorskip("duckdb")
    prefix = f"features/duckdb-{uuid.uuid4().hex[:8]}"
    con = duckdb.connect()
    client = s3_client()
    for i in range(4):
        local = tmp_path / f"part-{i}.parquet"
        con.execute(f"COPY (SELECT range AS id, 'd-' || range::VARCHAR AS k FROM range({i * 1000}, {(i + 1) * 1000}))"
                    f" TO '{local}' (FORMAT PARQUET, ROW_GROUP_SIZE 500, DICTIONARY_SIZE_LIMIT 100000)")
        client.upload_file(str(local), "sparkbloom", f"{prefix}/part-{i}.parquet")
    path = f"s3a://sparkbloom/{prefix}"
    t = f"parquet.`{path}`"
    spark.sql(f"CREATE BLOOM INDEX bk ON {t} (k)")
    d = describe(spark, "bk", t)
    row_groups = int(d["Row Groups Covered"])
    import pyspark

    if not pyspark.__version__.startswith("3.5."):
        # every row group's filter taken from DuckDB's files, none built by reading the column
        assert int(d["Filters Harvested"]) == row_groups > 0 and d["Filters Scanned"] == "0", d
    else:  # parquet-java 1.13 cannot read bloom_filter_length: other writers' filters are scanned instead (README)
        assert d["Filters Harvested"] == "0" and int(d["Filters Scanned"]) == row_groups > 0, d
    rows, rec = compare(spark, lambda: spark.read.parquet(path).where("k = 'd-2500'"))
    assert len(rows) == 1 and files_read(rec) == 1, rec
    rows, rec = compare(spark, lambda: spark.read.parquet(path).where("k = 'x'"))
    assert rows == [] and files_read(rec) == 0, rec


def test_streaming_file_sink(spark: SparkSession, parquet_table: str) -> None:
    t = f"parquet.`{parquet_table}`"
    spark.sql(f"CREATE BLOOM INDEX bk ON {t} (k)")
    source = fresh("stream-src")
    keys_df(spark, KEYS + 1000, 10, 1).write.parquet(source)  # a file source needs its directory
    query = (spark.readStream.schema("id long, k string, v int").parquet(source)
             .writeStream.format("parquet").option("checkpointLocation", fresh("checkpoint"))
             .option("path", parquet_table).trigger(processingTime="0 seconds").start())
    try:
        for batch in range(3):
            keys_df(spark, KEYS + batch * 100, 100, 1).write.mode("append").parquet(source)
            query.processAllAvailable()
    finally:
        query.stop()
    settle(spark)
    # the file sink's own metadata log lists the table's files: the lookup reads through it
    assert_covered_and_one_file(spark, "bk", t,
                                lambda: spark.read.parquet(parquet_table).where(f"k = 'k-{KEYS + 250}'"))


def has_format(spark: SparkSession, marker: str) -> bool:
    return marker in spark.conf.get("spark.sql.extensions", "")


def test_delta_dml_maintenance_and_vacuum(spark: SparkSession) -> None:
    if not has_format(spark, "Delta"):
        pytest.skip("no Delta Lake build for this Spark line")
    path = fresh("delta")
    keys_df(spark).selectExpr("*", "v AS _part").write.format("delta").partitionBy("_part").save(path)
    t = f"delta.`{path}`"
    spark.sql(f"CREATE BLOOM INDEX bk ON {t} (k)")
    rows, rec = compare(spark, lambda: spark.read.format("delta").load(path).where("k = 'k-77'"))
    assert len(rows) == 1 and files_read(rec) == 1, rec
    # MERGE, UPDATE, DELETE: the target's rows after each equal those of a copy changed with sparkbloom off
    spark.createDataFrame([(f"k-{i}", i) for i in (5, 6, KEYS + 3)], "key string, val long") \
        .createOrReplaceTempView("delta_src")
    spark.sql(f"""MERGE INTO {t} AS t USING delta_src AS s ON t.k = s.key
                 WHEN MATCHED THEN UPDATE SET t.id = s.val + 1000000
                 WHEN NOT MATCHED THEN INSERT (id, k, v, _part) VALUES (s.val, s.key, 0, 0)""")
    spark.sql(f"UPDATE {t} SET id = -1 WHERE k = 'k-8'")
    # an erasure by key set (Delta's DELETE takes no subquery: MERGE ... THEN DELETE)
    spark.sql(f"MERGE INTO {t} AS t USING (SELECT key FROM delta_src WHERE val = 6) AS s ON t.k = s.key "
              "WHEN MATCHED THEN DELETE")
    rows, _ = compare(spark, lambda: spark.read.format("delta").load(path).where("k IN ('k-5', 'k-6', 'k-8')"))
    assert rows == [(-1, "k-8", 3, 3), (1000005, "k-5", 0, 0)], rows
    settle(spark)
    assert_covered_and_one_file(spark, "bk", t,
                                lambda: spark.read.format("delta").load(path).where(f"k = 'k-{KEYS + 3}'"))
    keys_df(spark, KEYS + 10, 100, 1).selectExpr("*", "v AS _part").write.format("delta").mode("append").save(path)
    assert_covered_and_one_file(spark, "bk", t,
                                lambda: spark.read.format("delta").load(path).where(f"k = 'k-{KEYS + 20}'"))
    # Delta's VACUUM skips directories whose names start with '_' (the index, and a partition column's)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    spark.sql(f"VACUUM {t} RETAIN 0 HOURS")
    d = describe(spark, "bk", t)
    assert d["Problems"] == "none" and d["Files Not Covered"] == "0", d
    rows, rec = compare(spark, lambda: spark.read.format("delta").load(path).where("k = 'k-99'"))
    assert len(rows) == 1 and files_read(rec) == 1, rec


def test_iceberg_dml_maintenance_and_orphans(spark: SparkSession) -> None:
    if not has_format(spark, "Iceberg"):
        pytest.skip("no Iceberg build for this Spark line")
    name = f"ice.db.t_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (id bigint, k string, v int, _p int) USING iceberg PARTITIONED BY (_p)")
    keys_df(spark).selectExpr("*", "v AS _p").writeTo(name).append()
    spark.sql(f"CREATE BLOOM INDEX bk ON {name} (k)")
    rows, rec = compare(spark, lambda: spark.table(name).where("k = 'k-77'"))
    assert len(rows) == 1 and files_read(rec) == 1, rec
    spark.createDataFrame([(f"k-{i}", i) for i in (5, 6, KEYS + 3)], "key string, val long") \
        .createOrReplaceTempView("ice_src")
    spark.sql(f"""MERGE INTO {name} AS t USING ice_src AS s ON t.k = s.key
                 WHEN MATCHED THEN UPDATE SET t.id = s.val + 1000000
                 WHEN NOT MATCHED THEN INSERT (id, k, v, _p) VALUES (s.val, s.key, 0, 0)""")
    spark.sql(f"UPDATE {name} SET id = -1 WHERE k = 'k-8'")
    spark.sql(f"DELETE FROM {name} WHERE k IN (SELECT key FROM ice_src WHERE val = 6)")
    rows, _ = compare(spark, lambda: spark.table(name).where("k IN ('k-5', 'k-6', 'k-8')"))
    assert rows == [(-1, "k-8", 3, 3), (1000005, "k-5", 0, 0)], rows
    settle(spark)
    keys_df(spark, KEYS + 10, 100, 1).selectExpr("*", "v AS _p").writeTo(name).append()
    assert_covered_and_one_file(spark, "bk", name, lambda: spark.table(name).where(f"k = 'k-{KEYS + 20}'"))
    # Iceberg's orphan-file removal (its Action API: the procedure refuses an interval under 24 hours) deletes a
    # planted orphan, and leaves `_sparkbloom/` and the `_p=` partition directories (it skips `_` directories
    # that are not partitions)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    orphan = f"{table.location()}/data/orphan.parquet"
    orphan_path = jvm.org.apache.hadoop.fs.Path(orphan)
    ofs = orphan_path.getFileSystem(spark._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
    ofs.create(orphan_path).close()
    import time

    jvm.org.apache.iceberg.spark.actions.SparkActions.get(spark._jsparkSession).deleteOrphanFiles(table) \
        .olderThan(int(time.time() * 1000) + 60_000).execute()
    assert not ofs.exists(orphan_path), "the orphan-file removal ran"
    d = describe(spark, "bk", name)
    assert d["Problems"] == "none" and d["Files Not Covered"] == "0", d
    rows, rec = compare(spark, lambda: spark.table(name).where("k = 'k-99'"))
    assert len(rows) == 1 and files_read(rec) == 1, rec


def test_python_api_on_s3(spark: SparkSession, parquet_table: str) -> None:
    idx = spark.read.parquet(parquet_table).bloomFilterIndex("k")  # type: ignore[attr-defined]
    assert idx.describe()["files_not_covered"] == 0
    assert os.path.basename(idx.describe()["location"]) == "bloom_k"
