"""BloomIndex handles: create from a DataFrame, describe, list, refresh, drop; the same index SQL sees.

Index handles through the Python API, against the real JVM facade.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import sparkbloom


@pytest.fixture
def table(spark: SparkSession, tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    spark.range(0, 4000, 1, 4).selectExpr("id", "concat('s-', id) AS s").write.parquet(path)
    return path


def test_bloomFilterIndex_creates_an_index_that_describe_reports(spark: SparkSession, table: str) -> None:
    index = spark.read.parquet(table).bloomFilterIndex("id", fpp=0.02)
    d = index.describe()
    assert (index.name, index.columns) == ("bloom_id", ("id",))
    assert d["name"] == "bloom_id" and [c["name"] for c in d["columns"]] == ["id"]
    assert d["fpp"] == 0.02
    assert (d["files_in_table"], d["files_covered"], d["files_not_covered"], d["files_deleted"]) == (4, 4, 0, 0)
    assert d["row_groups_covered"] >= 4 and d["size_in_bytes"] > 0 and d["problems"] == []
    # an explicit fpp keeps one level: no segment summaries (docs/hierarchy.md)
    assert "0 summary segments (layout format 2)" in d["layout"] and "explicit fpp" in d["layout"], d["layout"]
    assert d["table_ref"] == index.table


def test_by_default_the_index_is_sized_by_a_false_read_budget_for_the_whole_table(
    spark: SparkSession, table: str
) -> None:
    d = spark.read.parquet(table).bloomFilterIndex("id", "s").describe()
    assert d["fpp"] is None and d["false_reads_per_key"] == 0.1 and d["max_bits_per_value"] == 32.0
    by_column = {c["column"]: c for c in d["column_stats"]}
    assert set(by_column) == {"id", "s"}
    for c in by_column.values():
        assert c["sizing"] == "false_reads_per_key=0.1"
        assert 0 < c["expected_false_reads_per_key"] <= 0.1
        # a key the table holds passes its own segment's summary: it reads more in error, within the budget
        assert c["expected_false_reads_per_key"] < c["expected_false_reads_per_present_key"] <= 0.1
        assert c["distinct_values"] == 4000 and c["bytes_per_value"] > 1
    # every segment built from the values has a summary above it (docs/hierarchy.md)
    segments = int(d["layout"].split(" segments")[0])
    assert d["layout"].startswith(f"{segments} segments, {segments} of them under "), d["layout"]


def test_false_reads_per_key_and_fpp_are_keywords_and_exclude_each_other(spark: SparkSession, table: str) -> None:
    d = spark.read.parquet(table).bloomFilterIndex("id", false_reads_per_key=0.01).describe()
    assert d["false_reads_per_key"] == 0.01 and d["column_stats"][0]["expected_false_reads_per_key"] <= 0.01
    with pytest.raises(sparkbloom.BloomIndexError, match="either fpp"):
        spark.read.parquet(table).bloomFilterIndex("s", fpp=0.01, false_reads_per_key=0.1)


def test_asking_again_returns_the_same_index_without_rebuilding_it(spark: SparkSession, table: str) -> None:
    first = spark.read.parquet(table).bloomFilterIndex("id", name="by_id")
    second = spark.read.parquet(table).where("id > 10").bloomFilterIndex("id", name="by_id")
    assert first == second
    assert first.describe()["version"] == second.describe()["version"]


def test_the_same_name_on_other_columns_is_an_error(spark: SparkSession, table: str) -> None:
    spark.read.parquet(table).bloomFilterIndex("id", name="k")
    with pytest.raises(sparkbloom.BloomIndexError, match=r"already exists on columns \(id\)"):
        spark.read.parquet(table).bloomFilterIndex("s", name="k")


def test_indexes_lists_the_indexes_of_a_table_however_its_path_is_written(spark: SparkSession, table: str) -> None:
    a = spark.read.parquet(table).bloomFilterIndex("id")
    b = spark.read.parquet(table).bloomFilterIndex("s", name="by_s")
    for written in (table, f"parquet.`{table}`", Path(table).as_uri()):
        assert sorted(i.name for i in sparkbloom.indexes(spark, written)) == sorted([a.name, b.name])
    [found] = [i for i in sparkbloom.indexes(spark, table) if i.name == "by_s"]
    assert found.columns == ("s",)


def test_new_files_are_covered_after_a_refresh_or_when_the_index_is_asked_for_again(
    spark: SparkSession, table: str
) -> None:
    index = spark.read.parquet(table).bloomFilterIndex("id")
    # Files written as another engine would (without sparkbloom's maintenance on write) are not covered until then.
    spark.conf.set("spark.sparkbloom.maintainOnWrite.enabled", "false")
    try:
        spark.range(5000, 5100, 1, 1).selectExpr("id", "concat('s-', id) AS s").write.mode("append").parquet(table)
        assert index.describe()["files_not_covered"] == 1
        assert index.refresh().describe()["files_not_covered"] == 0

        spark.range(6000, 6100, 1, 1).selectExpr("id", "concat('s-', id) AS s").write.mode("append").parquet(table)
        again = spark.read.parquet(table).bloomFilterIndex("id")  # "returns the existing, up-to-date index"
        assert again.describe()["files_not_covered"] == 0
    finally:
        spark.conf.unset("spark.sparkbloom.maintainOnWrite.enabled")
    # Spark's own write through a sparkbloom session, maintenance on write on: covered when it returns.
    version = index.describe()["version"]
    spark.conf.set("spark.sparkbloom.maintainOnWrite.enabled", "true")
    try:
        spark.range(7000, 7100, 1, 1).selectExpr("id", "concat('s-', id) AS s").write.mode("append").parquet(table)
    finally:
        spark.conf.unset("spark.sparkbloom.maintainOnWrite.enabled")
    d = index.describe()
    assert (d["files_not_covered"], d["version"]) == (0, version + 1)

    version = index.describe()["version"]
    assert index.refresh(full=True).describe()["version"] > version


def test_spark_writes_maintain_an_index_by_default_unless_it_opts_out(spark: SparkSession, table: str) -> None:
    kept = spark.read.parquet(table).bloomFilterIndex("id", name="kept")
    left = spark.read.parquet(table).bloomFilterIndex("s", name="left", maintain_on_write=False)
    assert kept.describe()["maintain_on_write"] is True and left.describe()["maintain_on_write"] is False
    spark.range(8000, 8100, 1, 2).selectExpr("id", "concat('s-', id) AS s").write.mode("append").parquet(table)
    assert kept.describe()["files_not_covered"] == 0  # the write returned with its files in the index
    assert left.describe()["files_not_covered"] == 2  # read by every lookup until a refresh
    d = kept.describe()
    assert d["versions_kept"] == 2 and d["segment_files"] >= 1, d
    lookup = spark.read.parquet(table).where("id = 8050")
    assert [r.s for r in lookup.collect()] == ["s-8050"]
    assert sum(s.files_skipped for s in sparkbloom.skipping(lookup)) >= 4  # the new files were pruned too
    with pytest.raises(Exception, match="maintain_on_write must be true or false"):
        spark.sql(f"CREATE BLOOM INDEX bad ON parquet.`{table}` (id) OPTIONS (maintain_on_write = 'sometimes')")


def test_drop_removes_the_index(spark: SparkSession, table: str) -> None:
    index = spark.read.parquet(table).bloomFilterIndex("id")
    assert index.drop() is True
    assert sparkbloom.indexes(spark, table) == []
    assert index.drop(if_exists=True) is False
    with pytest.raises(sparkbloom.BloomIndexError):
        index.drop()


def test_describing_an_index_that_does_not_exist_is_a_bloom_index_error(spark: SparkSession, table: str) -> None:
    with pytest.raises(sparkbloom.BloomIndexError, match="nope"):
        sparkbloom.BloomIndex(spark, table, "nope", ["id"]).describe()


def test_an_index_made_in_python_is_the_one_sql_shows_and_describes(spark: SparkSession, table: str) -> None:
    spark.sql("DROP TABLE IF EXISTS index_sql_t")
    spark.read.parquet(table).write.saveAsTable("index_sql_t")
    index = spark.table("index_sql_t").bloomFilterIndex("id", name="py_made")
    assert "py_made" in [r[0] for r in spark.sql("SHOW BLOOM INDEXES ON index_sql_t").collect()]
    assert spark.sql("DESCRIBE BLOOM INDEX py_made ON index_sql_t").count() > 0
    spark.sql("DROP BLOOM INDEX py_made ON index_sql_t")
    assert sparkbloom.indexes(spark, "index_sql_t") == []
    assert index.drop(if_exists=True) is False
