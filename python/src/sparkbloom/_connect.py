"""The Python helpers over Spark Connect: calls as SQL, skipping figures from the metrics that come with results.

A Spark Connect client has no py4j gateway to the driver, so every helper that asks the JVM something sends one
statement instead, ``SPARKBLOOM API <method> '<arguments as JSON>'``, which sparkbloom's SQL extension on the
server answers with one row of JSON (the same ``sparkbloom.api.PythonApi`` methods a classic session calls over
py4j). A DataFrame travels as a temporary view of the client's session.

What a query skipped is read from the metrics Spark Connect returns with its results (``DataFrame.executionInfo``
from pyspark 4.0, the ``metrics`` of a ``toPandas()`` result on every version): the ``BloomIndexSkipping`` nodes'
SQL metrics give the figures, and the server gives, by node id, the names behind them (index, table, predicate)
and the totals it planned with.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .errors import JarNotLoadedError, SparkBloomError, translate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

API_STATEMENT = "SPARKBLOOM API"
METRICS_NODE = "BloomIndexSkipping"  # sparkbloom.scan.BloomScanMetricsExec's nodeName

SERVER_NEEDS = (
    "the Spark Connect server must run sparkbloom: start it with sparkbloom's jar and extension, e.g. "
    "start-connect-server.sh --packages io.github.sparkbloom:sparkbloom-spark-<line>_<scala>:<version> "
    "--conf spark.sql.extensions=sparkbloom.SparkBloomExtensions, or with this package's jars and settings: "
    "start-connect-server.sh --properties-file <(python -m sparkbloom conf)"
)


def is_connect(obj: object) -> bool:
    """Whether `obj` (a SparkSession or DataFrame) is Spark Connect's rather than classic (py4j) PySpark's."""
    return type(obj).__module__.startswith("pyspark.sql.connect.")


def call(spark: SparkSession, method: str, arguments: dict[str, Any]) -> Any:
    """Runs ``SPARKBLOOM API method 'arguments'`` on the server and returns its JSON answer, decoded."""
    from pyspark.errors import ParseException

    text = json.dumps(arguments)
    literal = "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    with translate():
        try:
            rows = spark.sql(f"{API_STATEMENT} {method} {literal}").collect()
        except ParseException as e:  # Spark's own parser answered: the server has no sparkbloom extension
            raise JarNotLoadedError(f"sparkbloom is not loaded on this Spark Connect server: {SERVER_NEEDS}") from e
    return json.loads(rows[0][0])


def with_view(df: DataFrame, method: str, arguments: dict[str, Any]) -> Any:
    """:func:`call` with `df` as the temporary view ``arguments["view"]``, dropped afterwards."""
    spark = df.sparkSession
    view = f"sparkbloom_df_{uuid.uuid4().hex}"
    df.createOrReplaceTempView(view)
    try:
        return call(spark, method, {**arguments, "view": view})
    finally:
        spark.catalog.dropTempView(view)


@dataclass(frozen=True)
class Node:
    """One node of an executed plan, as Spark Connect reports it with the results."""

    id: int
    name: str
    parent: int
    metrics: dict[str, int]


def executed_nodes(source: Any) -> list[Node]:
    """The plan nodes and their metrics of a query that ran over Spark Connect.

    `source` is the Connect DataFrame the action ran on (its ``executionInfo``, pyspark 4.0 and later), that
    ``ExecutionInfo`` itself, or the pandas DataFrame ``toPandas()`` returned (its ``attrs["metrics"]``).
    """
    plan_metrics: Any = None
    attrs = getattr(source, "attrs", None)
    if isinstance(attrs, dict):  # a pandas DataFrame from toPandas()
        if "metrics" not in attrs:
            raise SparkBloomError("this pandas DataFrame has no Spark Connect metrics: pass what toPandas() returned")
        plan_metrics = attrs["metrics"]
    else:
        info = source
        if is_connect(source):
            if not hasattr(type(source), "executionInfo"):
                raise SparkBloomError(
                    "this pyspark's Spark Connect DataFrame keeps no metrics (DataFrame.executionInfo is pyspark 4.0 "
                    "and later): run the query with toPandas() and pass its result, sparkbloom.skipping(df.toPandas())"
                )
            info = source.executionInfo
            if info is None:
                raise SparkBloomError(
                    "this DataFrame has not run yet: run the query on this very DataFrame object first (collect(), "
                    "toPandas(), toArrow(), ...), then ask what it skipped"
                )
        collected = getattr(info, "metrics", None)
        plan_metrics = getattr(collected, "_metrics", None) if collected is not None else []
        if plan_metrics is None:
            raise SparkBloomError(f"cannot read Spark Connect metrics from {type(source).__name__}")
    nodes = [
        Node(int(m.plan_id), str(m.name), int(m.parent_plan_id), {str(v.name): int(v.value) for v in m.metrics})
        for m in plan_metrics
    ]
    if len(nodes) > 1 and all(n.parent == 0 for n in nodes):
        # Spark 3.5's server sends every node with parent 0, in pre-order: a metrics node's one child (its scan)
        # is the node after it.
        for i in range(len(nodes) - 1):
            if nodes[i].name == METRICS_NODE:
                nodes[i + 1] = replace(nodes[i + 1], parent=nodes[i].id)
    return nodes


def session_of(source: Any, spark: SparkSession | None) -> SparkSession:
    """The Connect session to ask for the names behind `source`'s metrics."""
    if spark is not None:
        return spark
    session = getattr(source, "sparkSession", None)
    if session is not None:
        return session  # type: ignore[no-any-return]
    from pyspark.sql import SparkSession as Session

    active = Session.getActiveSession()
    if active is None:
        raise SparkBloomError("no active Spark session to ask: pass spark=")
    return active
