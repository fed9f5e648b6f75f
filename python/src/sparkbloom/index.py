"""Bloom indexes from Python: ``df.bloomFilterIndex(...)``, :class:`BloomIndex` handles, :func:`indexes`.

Everything here calls the same Scala facade as the SQL statements (``CREATE BLOOM INDEX`` ...), through
``sparkbloom.api.PythonApi``: over py4j in a classic session, as ``SPARKBLOOM API`` statements over Spark Connect
(see ``_connect``); nothing is decided in Python.

    >>> events = spark.read.parquet("/data/events")
    >>> idx = events.bloomFilterIndex("user_id")
    >>> idx
    BloomIndex('bloom_user_id' on 'file:/data/events', columns=('user_id',))
    >>> events.where("user_id = 42").count()           # skips files that cannot hold 42
    >>> idx.describe()["files_covered"]
    200
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import _connect, _jvm
from .errors import translate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class BloomIndex:
    """A handle on one bloom index: its name, the table it covers and its columns.

    Obtained from ``df.bloomFilterIndex(...)`` or :func:`indexes`; it holds no state of its own, so
    :meth:`describe` always reports the index as it is now.
    """

    def __init__(self, spark: SparkSession, table: str, name: str, columns: Sequence[str]):
        self._spark = spark
        self._table = table
        self._name = name
        self._columns = tuple(columns)

    @property
    def name(self) -> str:
        """The index name, as in ``DROP BLOOM INDEX <name> ON ...``."""
        return self._name

    @property
    def columns(self) -> tuple[str, ...]:
        """The indexed columns, in index order."""
        return self._columns

    @property
    def table(self) -> str:
        """The table the index covers: a catalog table name or a path."""
        return self._table

    def describe(self) -> dict[str, Any]:
        """The facts ``DESCRIBE BLOOM INDEX`` shows, as a dict.

        >>> d = idx.describe()
        >>> d["files_covered"], d["files_not_covered"], d["size_in_bytes"]
        (200, 0, 1048576)
        """
        if _connect.is_connect(self._spark):
            return dict(_connect.call(self._spark, "describe", {"table": self._table, "name": self._name}))
        api = _jvm.python_api(self._spark)
        with translate():
            return dict(json.loads(api.describe(_jvm.java_session(self._spark), self._table, self._name)))

    def refresh(self, full: bool = False) -> BloomIndex:
        """Brings the index up to date with the table: only new and changed files by default
        (``REFRESH BLOOM INDEX ... INCREMENTAL``), every file with ``full=True``. Returns this handle.

        >>> idx.refresh().describe()["files_not_covered"]
        0
        """
        if _connect.is_connect(self._spark):
            _connect.call(self._spark, "refresh", {"table": self._table, "name": self._name, "full": bool(full)})
            return self
        api = _jvm.python_api(self._spark)
        with translate():
            api.refresh(_jvm.java_session(self._spark), self._table, self._name, bool(full))
        return self

    def drop(self, if_exists: bool = False) -> bool:
        """Deletes the index (``DROP BLOOM INDEX``). Returns whether there was one to drop.

        >>> idx.drop()
        True
        """
        if _connect.is_connect(self._spark):
            arguments = {"table": self._table, "name": self._name, "if_exists": bool(if_exists)}
            return bool(_connect.call(self._spark, "drop", arguments))
        api = _jvm.python_api(self._spark)
        with translate():
            return bool(api.drop(_jvm.java_session(self._spark), self._table, self._name, bool(if_exists)))

    def __repr__(self) -> str:
        return f"BloomIndex({self._name!r} on {self._table!r}, columns={self._columns!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BloomIndex) and (self._table, self._name.lower()) == (
            other._table,
            other._name.lower(),
        )

    def __hash__(self) -> int:
        return hash((self._table, self._name.lower()))


def _handle(spark: SparkSession, description: dict[str, Any]) -> BloomIndex:
    return BloomIndex(
        spark,
        description["table_ref"],
        description["name"],
        [c["name"] for c in description["columns"]],
    )


def indexes(spark: SparkSession, table_or_path: str) -> list[BloomIndex]:
    """The bloom indexes on a table (``SHOW BLOOM INDEXES ON ...``).

    `table_or_path` is a path when it contains ``/`` or starts with ``file:``, ``hdfs:``, ``s3:``, ``s3a:`` or
    ``s3n:`` (or is written ``parquet.`/path```), else a catalog table name.

    >>> [i.name for i in sparkbloom.indexes(spark, "/data/events")]
    ['bloom_user_id']
    """
    if _connect.is_connect(spark):
        found = _connect.call(spark, "list", {"table": table_or_path})
    else:
        api = _jvm.python_api(spark)
        with translate():
            found = json.loads(api.list(_jvm.java_session(spark), table_or_path))
    return [_handle(spark, d) for d in found]


def bloom_filter_index(
    df: DataFrame,
    *columns: str | Sequence[str],
    name: str | None = None,
    fpp: float | None = None,
    ndv: int | None = None,
    false_reads_per_key: float | None = None,
    maintain_on_write: bool | None = None,
) -> BloomIndex:
    """Creates the bloom index `name` over the table `df` reads, or returns it brought up to date.

    `df` must read one table's Parquet files directly: ``spark.read.parquet(path)`` of one directory or file
    (through Spark's V1 Parquet source or its V2 Parquet scan), ``spark.table(name)`` of a Parquet, Delta Lake
    or Iceberg table, or ``spark.read.format("delta").load(path)``, optionally with ``select``, ``where`` or
    ``filter`` on top; `columns` are the DataFrame's, traced back through renames to the files' own. The
    index covers the whole table, not only the rows a ``where`` keeps. Anything else (a join, an aggregate,
    in-memory data, another file format, several paths, a column the DataFrame computes) raises
    :class:`BloomIndexError`. An index `name` that already exists on the same columns is refreshed
    incrementally if the table has files it does not cover or no longer has files it covered; on other
    columns it raises :class:`BloomIndexError`. `name` defaults to ``bloom_<columns>`` (the files' column
    names joined by ``_``, lower case).

    Sizing: by default the filters share a budget of ``false_reads_per_key`` (0.1, or the session's
    ``spark.sparkbloom.falseReadsPerKey``): the expected number of row groups read in error per looked-up
    value, summed over the whole table, so false reads do not grow with the table. An explicit `fpp` (or,
    when neither is given, the session's ``spark.sparkbloom.fpp``) instead fixes the false-positive
    probability of every row group (false reads then grow as row groups × fpp); give one or the other. `ndv`
    caps the distinct values a row group's filter is sized for (measured when not given).

    Spark's writes into the table keep the index up to date (``spark.sparkbloom.maintainOnWrite.enabled``, on by
    default; Iceberg's compaction and streaming sink included), and files written without it (another engine)
    are indexed in the background after the first lookup that reads them
    (``spark.sparkbloom.maintainOnWrite.refreshOnRead``):
    ``maintain_on_write=False`` opts this index out of both, and its new files are then read until a refresh.

    Also available as the DataFrame method
    ``df.bloomFilterIndex(*columns, name=None, fpp=None, ndv=None, false_reads_per_key=None,
    maintain_on_write=None)``:

    >>> idx = spark.read.parquet("/data/events").bloomFilterIndex("user_id", "session", false_reads_per_key=0.05)
    >>> idx.columns
    ('user_id', 'session')
    """
    names = _column_names(columns)
    if _connect.is_connect(df):  # the DataFrame travels as a temporary view of the client's session
        arguments = {"columns": names, "name": name, "fpp": fpp, "ndv": ndv, "false_reads_per_key": false_reads_per_key,
                     "maintain_on_write": maintain_on_write}
        return _handle(df.sparkSession, _connect.with_view(df, "create", arguments))
    jdf = _jvm.java_dataframe(df)
    spark = df.sparkSession
    api = _jvm.python_api(spark)
    with translate():
        description = json.loads(
            api.createForDataFrame(
                jdf,
                _jvm.string_array(spark, names),
                name,
                None if fpp is None else float(fpp),
                _jvm.java_long(spark, ndv),
                None if false_reads_per_key is None else float(false_reads_per_key),
                None if maintain_on_write is None else bool(maintain_on_write),
            )
        )
    return _handle(spark, description)


def _column_names(columns: Sequence[str | Sequence[str]]) -> list[str]:
    """Accepts ``("a", "b")`` or a single list ``(["a", "b"],)``."""
    items: Sequence[object] = columns
    if len(columns) == 1 and isinstance(columns[0], (list, tuple)):
        items = tuple(columns[0])
    names: list[str] = []
    for c in items:
        if not isinstance(c, str):
            raise TypeError(f"column names must be strings, got {type(c).__name__}: {c!r}")
        names.append(c)
    return names


def _attach() -> None:
    """Adds ``bloomFilterIndex`` to PySpark's DataFrame (done once, when sparkbloom is imported)."""
    try:
        from pyspark.sql import DataFrame
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            "sparkbloom needs pyspark 3.5 to 4.3, or Spark 4's Spark Connect client pyspark-client: "
            "pip install 'sparkbloom[pyspark]', or install the pyspark your cluster runs"
        ) from e

    # A method added to pyspark's class at run time, which its type hints cannot know about. From pyspark 4.0,
    # pyspark.sql.DataFrame is the parent of both the classic and the Spark Connect DataFrame; in 3.5 Connect's
    # is a class of its own, given the method too when its client is installed.
    DataFrame.bloomFilterIndex = bloom_filter_index  # type: ignore[attr-defined]
    import pyspark

    if pyspark.__version__.startswith("3."):
        try:
            from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
        except Exception:  # no Spark Connect client (grpc, pandas...) installed: nothing to add it to
            return
        ConnectDataFrame.bloomFilterIndex = bloom_filter_index  # type: ignore[attr-defined]
