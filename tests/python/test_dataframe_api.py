"""df.bloomFilterIndex(...): what it accepts, and the clear errors for DataFrames an index cannot cover.

The refusals happen before the index facade is called, so these tests do not depend on it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

import sparkbloom

SUPPORTED = "can only be built over a DataFrame that reads Parquet files directly"


@pytest.fixture(scope="module")
def parquet_path(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("api") / "t")
    spark.range(0, 100, 1, 2).selectExpr("id", "cast(id AS string) AS s").write.parquet(path)
    return path


def test_importing_sparkbloom_adds_bloomFilterIndex_to_dataframes() -> None:
    assert DataFrame.bloomFilterIndex is sparkbloom.bloom_filter_index  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda spark, p: spark.range(10), "its plan contains Range"),
        (lambda spark, p: spark.createDataFrame([(1, "a")], ["id", "s"]), "holds in-memory data"),
        (lambda spark, p: spark.read.parquet(p).groupBy("s").count(), "its plan contains Aggregate"),
        (lambda spark, p: spark.read.parquet(p).join(spark.read.parquet(p), "id"), "its plan contains Join"),
        (lambda spark, p: spark.read.parquet(p).union(spark.read.parquet(p)), "its plan contains Union"),
        (lambda spark, p: spark.read.parquet(p).distinct(), "its plan contains Deduplicate"),
        (lambda spark, p: spark.read.parquet(p, p), "reads 2 paths"),
    ],
    ids=["range", "in-memory", "aggregate", "join", "union", "distinct", "two-paths"],
)
def test_a_dataframe_that_is_not_a_plain_parquet_scan_is_refused_with_what_is_supported(
    spark: SparkSession, parquet_path: str, make, reason: str  # type: ignore[no-untyped-def]
) -> None:
    with pytest.raises(sparkbloom.BloomIndexError) as e:
        make(spark, parquet_path).bloomFilterIndex("id")
    assert SUPPORTED in str(e.value)
    assert reason in str(e.value)
    assert e.value.java_class == "sparkbloom.index.BloomIndexException"
    assert e.value.__cause__ is None and e.value.__suppress_context__  # no py4j traceback attached


def test_files_of_another_format_are_refused(spark: SparkSession, tmp_path: Path) -> None:
    spark.range(5).write.json(str(tmp_path / "j"))
    with pytest.raises(sparkbloom.BloomIndexError, match="reads JSON files, not Parquet"):
        spark.read.json(str(tmp_path / "j")).bloomFilterIndex("id")


def test_an_index_needs_at_least_one_column(spark: SparkSession, parquet_path: str) -> None:
    with pytest.raises(sparkbloom.BloomIndexError, match="at least one column"):
        spark.read.parquet(parquet_path).bloomFilterIndex()


def test_column_names_must_be_strings(spark: SparkSession, parquet_path: str) -> None:
    from pyspark.sql.functions import col

    with pytest.raises(TypeError, match="column names must be strings"):
        spark.read.parquet(parquet_path).bloomFilterIndex(col("id"))  # type: ignore[arg-type]


def target(df: DataFrame, *columns: str) -> dict:
    """What bloomFilterIndex(*columns) would index: the table and the columns' names in the files."""
    api = sparkbloom._jvm.python_api(df.sparkSession)
    with sparkbloom.errors.translate():
        return dict(json.loads(api.indexTarget(df._jdf, sparkbloom._jvm.string_array(df.sparkSession, list(columns)))))


def test_a_selected_and_filtered_parquet_scan_indexes_its_directory(spark: SparkSession, parquet_path: str) -> None:
    df = spark.read.parquet(parquet_path).where("id > 3").select("s", "id")
    table_ref = Path(parquet_path).as_uri().replace("file:///", "file:/")
    assert target(df, "id") == {"table_ref": table_ref, "columns": ["id"]}


def test_a_renamed_column_is_indexed_under_its_name_in_the_files(spark: SparkSession, parquet_path: str) -> None:
    df = spark.read.parquet(parquet_path).withColumnRenamed("id", "key").where("key > 3")
    assert target(df, "key", "S")["columns"] == ["id", "s"]


def test_a_computed_column_is_refused(spark: SparkSession, parquet_path: str) -> None:
    df = spark.read.parquet(parquet_path).selectExpr("id + 1 AS id")
    with pytest.raises(sparkbloom.BloomIndexError, match="Column id is computed by the DataFrame"):
        df.bloomFilterIndex("id")


def test_an_unknown_column_is_refused_with_the_columns_there_are(spark: SparkSession, parquet_path: str) -> None:
    with pytest.raises(sparkbloom.BloomIndexError, match=r"Column nope is not in the DataFrame \(columns: id, s\)"):
        spark.read.parquet(parquet_path).bloomFilterIndex("nope")


def test_a_catalog_table_is_indexed_by_its_name(spark: SparkSession, parquet_path: str) -> None:
    spark.sql("DROP TABLE IF EXISTS api_catalog_t")
    spark.read.parquet(parquet_path).write.saveAsTable("api_catalog_t")
    assert target(spark.table("api_catalog_t").where("id = 1"), "id")["table_ref"] == "default.api_catalog_t"
    spark.read.parquet(parquet_path).createOrReplaceTempView("api_view")
    assert target(spark.table("api_view"), "s")["columns"] == ["s"]


def test_a_session_without_the_jar_gets_a_clear_error(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sparkbloom._jvm, "PYTHON_API", "sparkbloom.api.NotInThisJar")
    with pytest.raises(sparkbloom.JarNotLoadedError, match=r"sparkbloom.configure\(SparkSession.builder\)"):
        sparkbloom.indexes(spark, "t")


def test_a_plain_parquet_scan_gets_an_index_named_after_its_columns(spark: SparkSession, parquet_path: str) -> None:
    index = spark.read.parquet(parquet_path).where("id > 3").bloomFilterIndex("id", "s")
    try:
        assert index.name == "bloom_id_s"
        assert index.columns == ("id", "s")
    finally:
        index.drop(if_exists=True)
