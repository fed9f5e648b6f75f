"""sparkbloom: Parquet bloom-filter indexes and data skipping for Apache Spark.

    >>> from pyspark.sql import SparkSession
    >>> import sparkbloom
    >>> spark = sparkbloom.configure(SparkSession.builder).getOrCreate()
    >>> events = spark.read.parquet("/data/events")
    >>> idx = events.bloomFilterIndex("user_id")           # CREATE BLOOM INDEX, from Python
    >>> q = events.where("user_id = 42"); rows = q.collect()
    >>> sparkbloom.skipping(q)                              # files and row groups the index skipped
    >>> sparkbloom.indexes(spark, "/data/events")           # SHOW BLOOM INDEXES
    [BloomIndex('bloom_user_id' on 'file:/data/events', columns=('user_id',))]

Importing the package adds ``DataFrame.bloomFilterIndex``.
"""

from .errors import (
    AnalysisError,
    BloomIndexError,
    InvalidArgumentError,
    JarNotLoadedError,
    NotImplementedOnJvmError,
    PathNotFoundError,
    SparkBloomError,
)
from .index import BloomIndex, _attach, bloom_filter_index, indexes
from .inspector import format_report, inspect_parquet
from .session import configure, jar_paths, java_options, spark_conf
from .skipping import ScanSkipping, scan_metrics, skipping

from ._version import __version__ as __version__  # isort: skip  (project/versions.properties, via VERSION)

__all__ = [
    "AnalysisError",
    "BloomIndex",
    "BloomIndexError",
    "InvalidArgumentError",
    "JarNotLoadedError",
    "NotImplementedOnJvmError",
    "PathNotFoundError",
    "ScanSkipping",
    "SparkBloomError",
    "bloom_filter_index",
    "configure",
    "format_report",
    "indexes",
    "inspect_parquet",
    "jar_paths",
    "java_options",
    "scan_metrics",
    "skipping",
    "spark_conf",
]

_attach()
