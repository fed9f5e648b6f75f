"""JVM exceptions reach Python as sparkbloom exceptions with the JVM's message and no py4j traceback."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

import sparkbloom
from sparkbloom.errors import translate


def test_an_analysis_exception_becomes_an_analysis_error_with_sparks_condition(spark: SparkSession) -> None:
    with pytest.raises(sparkbloom.AnalysisError) as e:
        with translate():
            spark._jsparkSession.sql("SELECT * FROM no_such_table_anywhere")
    assert e.value.condition == "TABLE_OR_VIEW_NOT_FOUND"
    assert "no_such_table_anywhere" in str(e.value)
    assert e.value.__suppress_context__


def test_an_unimplemented_jvm_method_becomes_not_implemented_error(spark: SparkSession) -> None:
    with pytest.raises(NotImplementedError) as e:
        with translate():
            getattr(spark.sparkContext._jvm, "scala.Predef").__getattr__("$qmark$qmark$qmark")()
    assert isinstance(e.value, sparkbloom.SparkBloomError)
    assert e.value.java_class == "scala.NotImplementedError"


def test_a_missing_path_becomes_file_not_found_error(spark: SparkSession, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FileNotFoundError) as e:
        sparkbloom.inspect_parquet(spark, str(tmp_path / "missing"))
    assert isinstance(e.value, sparkbloom.PathNotFoundError)
    assert "missing" in str(e.value)


def test_a_malformed_argument_becomes_value_error(spark: SparkSession, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="is not column=value") as e:
        sparkbloom.inspect_parquet(spark, str(tmp_path), probes=["no-equals-sign"])
    assert isinstance(e.value, sparkbloom.InvalidArgumentError)


def test_other_jvm_exceptions_keep_their_class_name(spark: SparkSession) -> None:
    with pytest.raises(sparkbloom.SparkBloomError, match="java.lang.ArithmeticException"):
        with translate():
            spark.sparkContext._jvm.java.lang.Math.floorDiv(1, 0)
