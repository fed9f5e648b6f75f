"""Python exceptions for the errors the JVM side raises.

Every call into the JVM goes through :func:`translate`, which turns the py4j error (or the
``AnalysisException`` PySpark already converted it into) into one of the classes below, with the
JVM's message and without the py4j traceback::

    >>> try:
    ...     spark.range(10).bloomFilterIndex("id")
    ... except sparkbloom.BloomIndexError as e:
    ...     print(e)
    A bloom index can only be built over a DataFrame that reads Parquet files directly: ...
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class SparkBloomError(Exception):
    """Base class of every sparkbloom error. `java_class` names the JVM exception, when there was one."""

    def __init__(self, message: str, java_class: str | None = None, condition: str | None = None):
        super().__init__(message)
        self.message = message
        self.java_class = java_class
        self.condition = condition


class BloomIndexError(SparkBloomError, ValueError):
    """A user error about a bloom index (``sparkbloom.index.BloomIndexException``): unsupported
    DataFrame, unknown index or column, unsupported type, bad option."""


class AnalysisError(SparkBloomError, ValueError):
    """Spark could not analyse the request, e.g. the table does not exist. `condition` is Spark's
    error class (``TABLE_OR_VIEW_NOT_FOUND``...)."""


class InvalidArgumentError(SparkBloomError, ValueError):
    """An argument the JVM side rejected (``IllegalArgumentException``), e.g. a malformed probe."""


class PathNotFoundError(SparkBloomError, FileNotFoundError):
    """A file or directory that does not exist."""


class NotImplementedOnJvmError(SparkBloomError, NotImplementedError):
    """The loaded sparkbloom jar does not implement this yet (``scala.NotImplementedError``)."""


class JarNotLoadedError(SparkBloomError):
    """The session was started without the sparkbloom jar (see :func:`sparkbloom.configure`)."""


@contextmanager
def translate() -> Iterator[None]:
    """Runs a JVM call, re-raising JVM exceptions as the Python exceptions above."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    try:
        yield
    except CapturedException as e:
        origin = getattr(e, "_origin", None)
        if origin is None:
            raise
        raise _from_java(origin) from None
    except Py4JJavaError as e:
        raise _from_java(e.java_exception) from None


def _from_java(exc: Any) -> SparkBloomError:
    from py4j.java_gateway import is_instance_of
    from pyspark import SparkContext

    from . import _jvm

    gateway = SparkContext._gateway
    java_class = str(exc.getClass().getName())
    message = str(exc.getMessage() or java_class)

    def is_a(name: str) -> bool:
        return bool(is_instance_of(gateway, exc, name))

    if is_a(_jvm.BLOOM_INDEX_EXCEPTION):
        return BloomIndexError(message, java_class)
    if is_a(_jvm.ANALYSIS_EXCEPTION):
        condition = _condition(exc) if is_a(_jvm.SPARK_THROWABLE) else None
        return AnalysisError(message, java_class, str(condition) if condition else None)
    if is_a(_jvm.NOT_IMPLEMENTED):
        return NotImplementedOnJvmError(f"not implemented in the loaded sparkbloom jar: {message}", java_class)
    if is_a(_jvm.FILE_NOT_FOUND):
        return PathNotFoundError(message, java_class)
    if is_a(_jvm.ILLEGAL_ARGUMENT):
        return InvalidArgumentError(message, java_class)
    return SparkBloomError(f"{java_class}: {message}", java_class)


def _condition(exc: Any) -> str | None:
    """Spark's error class of a SparkThrowable: ``getCondition()`` from Spark 4.0, ``getErrorClass()`` in 3.5."""
    from py4j.protocol import Py4JError

    try:
        condition = exc.getCondition()
    except Py4JError:
        condition = exc.getErrorClass()
    return None if condition is None else str(condition)
