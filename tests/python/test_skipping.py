"""sparkbloom.skipping(df): what the index did for a query. Every test states the answer *and* the work:
the same rows as with the index off, and how many files / row groups were read.

Table: 8 files of 1000 rows; `key` is scattered so every file spans nearly the whole key range and min/max
statistics skip nothing. Which file holds a key follows from the generator (see `file_of`).
At fpp 0.001 a wrong "maybe" for one of the 7 other files has a ~0.7% chance; the data is fixed, so a test
either always passes or (if this data happens to hit a false positive) always fails and needs another key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, Row, SparkSession

import sparkbloom

ROWS, FILES, STEP = 8000, 8, 7919  # key = (i * STEP) % ROWS permutes 0..7999; row i lands in file i // 1000


def key_of(i: int) -> int:
    return (i * STEP) % ROWS


@pytest.fixture(scope="module")
def table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DataFrame]:
    path = str(tmp_path_factory.mktemp("skipping") / "t")
    (spark.range(0, ROWS, 1, FILES)
     .selectExpr(f"(id * {STEP}) % {ROWS} AS key", "concat('ref-', id) AS ref", "id AS i")
     .write.parquet(path))
    df = spark.read.parquet(path)
    yield df


def run(spark: SparkSession, df: DataFrame, condition: str, enabled: bool) -> tuple[list[Row], DataFrame]:
    spark.conf.set("spark.sparkbloom.enabled", str(enabled).lower())
    query = df.where(condition)
    return sorted(query.collect()), query


def files_read(query: DataFrame) -> int:
    return sum(int(s["metrics"]["numFiles"]) for s in sparkbloom.scan_metrics(query))


@pytest.mark.usefixtures("bloom_enabled")
def test_a_point_lookup_reads_only_the_file_holding_the_key(spark: SparkSession, table: DataFrame) -> None:
    table.bloomFilterIndex("key", fpp=0.001)
    condition = f"key = {key_of(4242)}"
    off, off_query = run(spark, table, condition, enabled=False)
    on, on_query = run(spark, table, condition, enabled=True)
    assert on == off and [r.i for r in on] == [4242]
    assert sparkbloom.skipping(off_query) == [] and files_read(off_query) == FILES
    [s] = sparkbloom.skipping(on_query)
    assert (s.files_total, s.files_kept, s.row_groups_total, s.row_groups_kept) == (FILES, 1, FILES, 1)
    assert s.files_skipped == FILES - 1 and s.files_not_covered == 0
    assert files_read(on_query) == 1


@pytest.mark.usefixtures("bloom_enabled")
def test_an_absent_key_reads_no_file(spark: SparkSession, table: DataFrame) -> None:
    table.bloomFilterIndex("key", fpp=0.001)
    on, on_query = run(spark, table, f"key = {ROWS + 17}", enabled=True)
    assert on == []
    [s] = sparkbloom.skipping(on_query)
    assert (s.files_kept, s.row_groups_kept) == (0, 0)


@pytest.mark.usefixtures("bloom_enabled")
def test_an_in_list_reads_the_files_of_its_values_only(spark: SparkSession, table: DataFrame) -> None:
    table.bloomFilterIndex("key", fpp=0.001)
    keys = [key_of(i) for i in (10, 3010, 6010)]  # files 0, 3 and 6
    condition = f"key IN ({', '.join(map(str, keys))})"
    off, _ = run(spark, table, condition, enabled=False)
    on, on_query = run(spark, table, condition, enabled=True)
    assert on == off and sorted(r.i for r in on) == [10, 3010, 6010]
    [s] = sparkbloom.skipping(on_query)
    assert (s.files_total, s.files_kept) == (FILES, 3)
    assert files_read(on_query) == 3


@pytest.mark.usefixtures("bloom_enabled")
def test_a_string_key_is_pruned_like_a_long_key(spark: SparkSession, table: DataFrame) -> None:
    table.bloomFilterIndex("ref", fpp=0.001)
    off, _ = run(spark, table, "ref = 'ref-5555'", enabled=False)
    on, on_query = run(spark, table, "ref = 'ref-5555'", enabled=True)
    assert on == off and [r.i for r in on] == [5555]
    [s] = sparkbloom.skipping(on_query)
    assert s.files_kept == 1


@pytest.mark.usefixtures("bloom_enabled")
def test_files_added_after_the_index_was_built_are_always_read(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "growing")
    spark.range(0, 2000, 1, 2).selectExpr("id AS key").write.parquet(path)
    spark.read.parquet(path).bloomFilterIndex("key", fpp=0.001)
    spark.conf.set("spark.sparkbloom.maintainOnWrite.enabled", "false")  # as another engine would write it
    try:
        spark.range(9000, 9010, 1, 1).selectExpr("id AS key").write.mode("append").parquet(path)
    finally:
        spark.conf.unset("spark.sparkbloom.maintainOnWrite.enabled")
    on, on_query = run(spark, spark.read.parquet(path), "key = 9005", enabled=True)
    assert [r.key for r in on] == [9005]
    [s] = sparkbloom.skipping(on_query)
    assert (s.files_total, s.files_not_covered) == (3, 1)
    assert files_read(on_query) == 1  # the new file; both indexed files cannot hold 9005


@pytest.mark.usefixtures("bloom_enabled")
def test_skipping_reports_index_bytes_and_probe_time_and_describe_sums_them(
    spark: SparkSession, table: DataFrame
) -> None:
    idx = table.bloomFilterIndex("key", name="usage_ix", fpp=0.001)
    before = idx.describe()["usage"]
    condition = f"key = {key_of(777)}"
    off, _ = run(spark, table, condition, enabled=False)
    on, on_query = run(spark, table, condition, enabled=True)
    assert on == off and [r.i for r in on] == [777]
    found = sparkbloom.skipping(on_query)
    assert found and all(s.probe_time_ms >= 0 and not s.distributed_probe for s in found)
    after = idx.describe()["usage"]
    assert after["lookups"] - before["lookups"] == len(found)
    by_usage_ix = [s for s in found if "usage_ix" in s.index]
    assert after["files_skipped"] - before["files_skipped"] == sum(s.files_skipped for s in by_usage_ix)
    assert after["index_bytes_read"] - before["index_bytes_read"] == sum(s.index_bytes_read for s in by_usage_ix)


def test_scan_skipping_equality_is_the_decision_not_its_cost() -> None:
    a = sparkbloom.ScanSkipping("ix on t", "t", "k = 1", 8, 1, 8, 1, 0, index_bytes_read=256, probe_time_ms=1.5)
    b = sparkbloom.ScanSkipping("ix on t", "t", "k = 1", 8, 1, 8, 1, 0, index_bytes_read=0, probe_time_ms=0.2,
                                distributed_probe=True)
    assert a == b and a.as_dict()["index_bytes_read"] == 256
    assert a != sparkbloom.ScanSkipping("ix on t", "t", "k = 1", 8, 2, 8, 2, 0)


@pytest.mark.usefixtures("bloom_enabled")
def test_without_an_index_the_files_own_bloom_filters_skip_row_groups_at_read_time(
        spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "native")
    (spark.range(0, 4000, 1, 2).selectExpr("id AS key", "concat('v-', id) AS v")
     .write.option("parquet.bloom.filter.enabled#key", "true").option("parquet.enable.dictionary", "false")
     .option("parquet.block.size", "4096").parquet(path))
    df = spark.read.parquet(path)

    def rows(condition: str) -> list[Row]:
        return sorted(df.where(condition).collect())

    spark.conf.set("spark.sparkbloom.enabled", "false")
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")  # the truth: no row-group filtering at all
    try:
        truth = rows("key = 1234")
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")
    spark.conf.set("spark.sparkbloom.enabled", "true")
    query = df.where("key = 1234")
    assert sorted(query.collect()) == truth and [r.v for r in truth] == ["v-1234"]
    [s] = sparkbloom.skipping(query)
    assert s.index == "" and s.files_total == 2 and s.files_not_covered == 2
    assert s.native_row_groups_checked > 4 and s.native_row_groups_skipped == s.native_row_groups_checked - 1
    assert (s.row_groups_total, s.row_groups_kept) == (s.native_row_groups_checked, 1)
    assert s.native_filters_invalid == 0


@pytest.mark.usefixtures("bloom_enabled")
def test_a_v2_parquet_read_is_indexed_and_pruned_like_a_v1_read(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "v2")
    spark.range(0, 8000, 1, 8).selectExpr("id AS key", "concat('v-', id) AS v").write.parquet(path)
    before = spark.conf.get("spark.sql.sources.useV1SourceList")
    spark.conf.set("spark.sql.sources.useV1SourceList", "")  # spark.read.parquet is now Spark's V2 scan
    try:
        df = spark.read.parquet(path)
        assert "BatchScan" in df._jdf.queryExecution().executedPlan().toString()
        df.bloomFilterIndex("key")
        query = df.where("key = 4321")
        rows = query.collect()
        [s] = sparkbloom.skipping(query)
        assert [r.v for r in rows] == ["v-4321"]
        assert (s.files_total, s.files_kept) == (8, 1)
        # the V2 scan is in scan_metrics, with the pruned count in sparkbloom's SQL metrics
        [scan] = sparkbloom.scan_metrics(query)
        assert scan["bloom_metrics"]["filesSkipped"] == 7, scan
    finally:
        spark.conf.set("spark.sql.sources.useV1SourceList", before)


@pytest.mark.usefixtures("bloom_enabled")
def test_nan_lookups_find_their_rows_in_files_whose_statistics_leave_nan_out(
    spark: SparkSession, tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "nan"
    path.mkdir()
    # Arrow C++ (as arrow-rs and DuckDB) leaves NaN out of min/max, as the format asks: min 1.0, max 2.0 here.
    pq.write_table(pa.table({"d": [float("nan"), 1.0, 2.0, -0.0], "i": [1, 2, 3, 4]}), str(path / "part-0.parquet"))
    meta = pq.ParquetFile(str(path / "part-0.parquet")).metadata.row_group(0).column(0).statistics
    assert meta.has_min_max and meta.max == 2.0
    df = spark.read.parquet(str(path))

    def ids(condition: str) -> list[int]:
        return sorted(r.i for r in df.where(condition).collect())

    spark.conf.set("spark.sparkbloom.enabled", "false")
    alone = {c: ids(c) for c in ("d = double('NaN')", "d IN (double('NaN'), 5.0)", "d = 0.0")}
    spark.conf.set("spark.sparkbloom.enabled", "true")
    assert ids("d = double('NaN')") == [1]  # Spark: NaN = NaN
    assert ids("d IN (double('NaN'), 5.0)") == [1]
    assert ids("d = 0.0") == [4]  # -0.0 = 0.0
    print(f"Spark alone: {alone}")


@pytest.mark.usefixtures("bloom_enabled")
def test_a_join_skips_by_the_keys_the_other_side_gives_at_run_time(spark: SparkSession, table: DataFrame) -> None:
    table.bloomFilterIndex("key", fpp=0.001)
    keys = spark.createDataFrame([(key_of(10),), (key_of(5010),), (-1,)], "k long")
    spark.conf.set("spark.sparkbloom.runtimePruning.minTableSize", "0")
    try:
        spark.conf.set("spark.sparkbloom.enabled", "false")
        off = sorted(table.join(keys, table.key == keys.k).collect())
        spark.conf.set("spark.sparkbloom.enabled", "true")
        query = table.join(keys, table.key == keys.k)
        on = sorted(query.collect())
    finally:
        spark.conf.unset("spark.sparkbloom.runtimePruning.minTableSize")
    assert on == off and sorted(r.i for r in on) == [10, 5010]
    [s] = [s for s in sparkbloom.skipping(query) if s.index]
    assert s.keys_probed == 3 and "run-time keys" in s.predicate
    assert (s.files_total, s.files_kept) == (FILES, 2)
