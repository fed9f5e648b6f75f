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
    """Runs a JVM call, re-raising JVM exceptions as the Python exceptions above: py4j's (classic sessions, where
    PySpark may already have converted them) and Spark Connect's (which name the JVM class in their server stack
    trace)."""
    try:
        yield
    except Exception as e:
        converted = _convert(e)
        if converted is None:
            raise
        raise converted from None


def _convert(e: Exception) -> SparkBloomError | None:
    if type(e).__module__ == "pyspark.errors.exceptions.connect":
        return _from_connect(e)
    try:  # a classic session (a Connect-only client has no py4j)
        from py4j.protocol import Py4JJavaError
        from pyspark.errors.exceptions.captured import CapturedException
    except ImportError:  # pragma: no cover - pyspark-client without py4j
        return None
    if isinstance(e, CapturedException):
        origin = getattr(e, "_origin", None)
        return None if origin is None else _from_java(origin)
    if isinstance(e, Py4JJavaError):
        return _from_java(e.java_exception)
    return None


# The JVM exceptions that are a sparkbloom.index.BloomIndexException (Spark Connect names the class, not its parents).
_BLOOM_INDEX_EXCEPTIONS = (
    "sparkbloom.index.BloomIndexException",
    "sparkbloom.index.NotIndexableException",
    "sparkbloom.index.ConcurrentIndexUpdateException",
)


def _from_connect(e: Exception) -> SparkBloomError:
    """A Spark Connect client's exception: the JVM class is the first line of the server's stack trace (Connect
    fetches it by default), else the one the client mapped it to."""
    from . import _jvm

    trace = str(getattr(e, "_stacktrace", None) or "")
    first = trace.strip().splitlines()[0].split(":")[0].strip() if trace.strip() else ""
    java_class = first if first and " " not in first else str(getattr(e, "_reason", None) or "")
    message = str(getattr(e, "_message", None) or getattr(e, "message", None) or e)
    get_condition = getattr(e, "getCondition", None) or getattr(e, "getErrorClass", None)
    condition = get_condition() if get_condition is not None else None
    names = {c.__name__ for c in type(e).__mro__}
    if java_class in _BLOOM_INDEX_EXCEPTIONS:
        return BloomIndexError(message, java_class)
    if not java_class and "AnalysisException" in names and not condition:
        # pyspark 3.5's Connect client keeps neither the JVM class nor the stack trace. Spark's own analysis errors
        # carry an error class there; sparkbloom's (BloomIndexException) carry none.
        return BloomIndexError(message, _jvm.BLOOM_INDEX_EXCEPTION)
    if java_class == _jvm.NOT_IMPLEMENTED:
        return NotImplementedOnJvmError(f"not implemented in the loaded sparkbloom jar: {message}", java_class)
    if java_class == _jvm.FILE_NOT_FOUND:
        return PathNotFoundError(message, java_class)
    if java_class == _jvm.ILLEGAL_ARGUMENT or "IllegalArgumentException" in names:
        return InvalidArgumentError(message, java_class or _jvm.ILLEGAL_ARGUMENT)
    if "AnalysisException" in names:
        return AnalysisError(message, java_class or _jvm.ANALYSIS_EXCEPTION, str(condition) if condition else None)
    return SparkBloomError(f"{java_class}: {message}" if java_class else message, java_class or None)


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
