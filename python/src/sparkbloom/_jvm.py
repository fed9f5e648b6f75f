"""Every JVM name the package uses, and the few py4j helpers around them.

Keeping the class names in one module means a rename on the Scala side is a one-line change here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import JarNotLoadedError, SparkBloomError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# sparkbloom's own classes
EXTENSIONS = "sparkbloom.SparkBloomExtensions"
PYTHON_API = "sparkbloom.api.PythonApi"
BLOOM_INDEX_EXCEPTION = "sparkbloom.index.BloomIndexException"

# JVM exceptions given a Python exception of their own (see errors.py)
ANALYSIS_EXCEPTION = "org.apache.spark.sql.AnalysisException"
SPARK_THROWABLE = "org.apache.spark.SparkThrowable"  # has getCondition(): Spark's error class
NOT_IMPLEMENTED = "scala.NotImplementedError"
FILE_NOT_FOUND = "java.io.FileNotFoundException"
ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"

# Spark configuration keys configure() sets
CONF_JARS = "spark.jars"
CONF_EXTENSIONS = "spark.sql.extensions"
CONF_DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
CONF_EXECUTOR_JAVA_OPTIONS = "spark.executor.extraJavaOptions"
CONF_ENABLED = "spark.sparkbloom.enabled"


def python_api(spark: SparkSession) -> Any:
    """The `sparkbloom.api.PythonApi` object of the session's JVM."""
    jvm = spark.sparkContext._jvm
    if jvm is None:  # pragma: no cover - a stopped context
        raise SparkBloomError("the SparkSession has been stopped")
    from py4j.java_gateway import JavaClass

    api = getattr(jvm, PYTHON_API)
    if not isinstance(api, JavaClass):
        raise JarNotLoadedError(
            "the sparkbloom jar is not on this session's classpath: build the session with "
            "sparkbloom.configure(SparkSession.builder), or pass the jars of sparkbloom.jar_paths() "
            "to spark-submit --jars"
        )
    return api


def java_session(spark: SparkSession) -> Any:
    """The JVM SparkSession behind a classic (py4j) PySpark session."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        raise SparkBloomError("sparkbloom needs a classic PySpark session; Spark Connect is not supported")
    return jsession


def java_dataframe(df: DataFrame) -> Any:
    """The JVM Dataset behind a classic (py4j) PySpark DataFrame."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        raise SparkBloomError("sparkbloom needs a classic PySpark DataFrame; Spark Connect is not supported")
    return jdf


def string_array(spark: SparkSession, items: Sequence[str]) -> Any:
    """A Java `String[]` holding `items`."""
    sc = spark.sparkContext
    assert sc._gateway is not None and sc._jvm is not None
    array = sc._gateway.new_array(sc._jvm.java.lang.String, len(items))
    for i, item in enumerate(items):
        array[i] = item
    return array


def java_long(spark: SparkSession, value: int | None) -> Any:
    """A nullable `java.lang.Long` (py4j would send small ints as Integer)."""
    if value is None:
        return None
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return jvm.java.lang.Long.valueOf(str(int(value)))
