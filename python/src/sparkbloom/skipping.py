"""What the bloom indexes did for a query, read from its executed plan after it ran.

    >>> q = spark.read.parquet("/data/events").where("user_id = 42")
    >>> rows = q.collect()
    >>> for s in sparkbloom.skipping(q):
    ...     print(s.index, f"{s.files_kept}/{s.files_total} files",
    ...           f"{s.row_groups_kept}/{s.row_groups_total} row groups")
    bloom_user_id on parquet.`file:/data/events` 3/200 files 3/600 row groups
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from . import _connect, _jvm
from .errors import translate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class ScanSkipping:
    """The skipping of one bloom-pruned scan: files and row groups kept out of the total."""

    index: str
    """"name on table" of each index used, comma separated."""
    table: str
    predicate: str
    """The pushed predicate, as in EXPLAIN."""
    files_total: int
    files_kept: int
    row_groups_total: int
    row_groups_kept: int
    files_not_covered: int
    """Files read because the index does not cover them (new or changed since it was built)."""
    # How the decision was reached, not what it was: left out of ``==`` (they depend on timing and caches).
    index_bytes_read: int = field(default=0, compare=False)
    """Bytes of filter runs read from storage for this lookup (0 when the driver's cache had them)."""
    probe_time_ms: float = field(default=0.0, compare=False)
    """Planning time spent probing the indexes and deciding what to read."""
    distributed_probe: bool = field(default=False, compare=False)
    """True when the runs did not fit ``spark.sparkbloom.cache.maxBytes`` and were probed by a Spark job."""
    keys_probed: int = field(default=0, compare=False)
    """Run-time pruning (a join, ``IN (subquery)``, ``EXISTS``, a MERGE): the distinct keys the other side gave."""
    # Read time, counted by the executors: 0 until the query has run.
    native_row_groups_checked: int = field(default=0, compare=False)
    """Row groups checked at read time against the bloom filters stored in the files themselves."""
    native_row_groups_skipped: int = field(default=0, compare=False)
    """Of those, row groups skipped because their own filters rule the values out."""
    native_filters_invalid: int = field(default=0, compare=False)
    """Filters found in the files but ignored as corrupt or unsupported (their row groups were read)."""

    @property
    def files_skipped(self) -> int:
        return self.files_total - self.files_kept

    @property
    def row_groups_skipped(self) -> int:
        return self.row_groups_total - self.row_groups_kept

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def skipping(df: Any, spark: SparkSession | None = None) -> list[ScanSkipping]:
    """The skipping each bloom-pruned scan of `df` did: by bloom indexes at planning time and by the files'
    own bloom filters at read time (``index`` is ``""`` for a scan no index applied to); empty when neither did.

    Reads the executed plan, so run the query first (``collect()``, ``count()``, ``write``...) on this
    very DataFrame object.

    Over Spark Connect the figures come from the metrics the server returned with the results: pass the
    DataFrame an action ran on (``collect()``, ``toPandas()``, ``toArrow()``: its ``executionInfo``, pyspark 4.0
    and later), or the pandas DataFrame ``toPandas()`` returned (every pyspark, 3.5 included). The names behind
    the figures (index, table, predicate) and the totals the index planned with come from the server, by node;
    `spark` is the session to ask when `df` is a pandas DataFrame (default: the active one).
    """
    if _connect.is_connect(df) or _is_metrics_carrier(df):
        return _connect_skipping(df, spark)
    jdf = _jvm.java_dataframe(df)
    api = _jvm.python_api(df.sparkSession)
    with translate():
        found = json.loads(api.skipping(jdf))
    return [ScanSkipping(**s) for s in found]


def scan_metrics(df: Any, spark: SparkSession | None = None) -> list[dict[str, Any]]:
    """Spark's own metrics of every file scan in `df`'s executed plan, whether or not an index applied:
    V1 scans (Parquet, Delta; ``numFiles`` is files read) and V2 scans (Spark's V2 Parquet scan, Iceberg, with
    the source's own metrics). ``bloom_metrics`` holds sparkbloom's SQL metrics of a pruned scan
    (``filesSkipped``, ``rowGroupsSkipped``, ``filesNotCovered``, ...), None elsewhere. Run the query first.
    Over Spark Connect, pass what :func:`skipping` takes; a scan no bloom index or native filter applied to is
    named as Spark names its node (``Scan parquet <table>``, ``BatchScan <table>``).

    >>> sparkbloom.scan_metrics(q)[0]["metrics"]["numFiles"]
    3
    """
    if _connect.is_connect(df) or _is_metrics_carrier(df):
        return _connect_scans(df, spark)
    jdf = _jvm.java_dataframe(df)
    api = _jvm.python_api(df.sparkSession)
    with translate():
        return list(json.loads(api.scans(jdf)))


def _is_metrics_carrier(source: Any) -> bool:
    """A pandas DataFrame from a Connect ``toPandas()``, or an ``ExecutionInfo``."""
    attrs = getattr(source, "attrs", None)
    return (isinstance(attrs, dict) and "metrics" in attrs) or type(source).__name__ == "ExecutionInfo"


def _records(source: Any, spark: SparkSession | None, ids: list[int]) -> dict[int, dict[str, Any]]:
    if not ids:
        return {}
    found = _connect.call(_connect.session_of(source, spark), "scans", {"plan_ids": ids})
    return {int(r["plan_id"]): r for r in found}


def _connect_skipping(source: Any, spark: SparkSession | None) -> list[ScanSkipping]:
    nodes = _connect.executed_nodes(source)
    ours = [n for n in nodes if n.name == _connect.METRICS_NODE]
    records = _records(source, spark, [n.id for n in ours])
    out = []
    for node in ours:
        m = node.metrics
        planned: dict[str, Any] = dict((records.get(node.id) or {}).get("skipping") or {})
        scan = next((n for n in nodes if n.parent == node.id), None)
        read = (scan.metrics.get("numFiles") if scan is not None else None) or 0
        files_skipped = m.get("filesSkipped", 0)
        files_total = int(planned.get("files_total", read + files_skipped))
        if not planned.get("index") and "filesSkipped" not in m:
            # No index, native filters only: row groups are those the read checked (as a classic session reports).
            checked, skipped = m.get("nativeRowGroupsChecked", 0), m.get("nativeRowGroupsSkipped", 0)
            row_groups_total, row_groups_kept = checked, checked - skipped
        else:
            row_groups_total = int(planned.get("row_groups_total", m.get("rowGroupsSkipped", 0)))
            row_groups_kept = row_groups_total - m.get("rowGroupsSkipped", 0)
        out.append(
            ScanSkipping(
                index=str(planned.get("index", "")),
                table=str(planned.get("table", "")),
                predicate=str(planned.get("predicate", "")),
                files_total=files_total,
                files_kept=files_total - files_skipped,
                row_groups_total=row_groups_total,
                row_groups_kept=row_groups_kept,
                files_not_covered=m.get("filesNotCovered", int(planned.get("files_not_covered", 0))),
                index_bytes_read=m.get("indexBytesRead", 0),
                probe_time_ms=float(m.get("probeTime", 0)),
                distributed_probe=bool(planned.get("distributed_probe", False)),
                keys_probed=m.get("keysProbed", 0),
                native_row_groups_checked=m.get("nativeRowGroupsChecked", 0),
                native_row_groups_skipped=m.get("nativeRowGroupsSkipped", 0),
                native_filters_invalid=m.get("nativeFiltersInvalid", 0),
            )
        )
    return out


# Spark's file scan nodes: FileSourceScanExec ("Scan <format> [table]") and BatchScanExec ("BatchScan <table>").
_V1_FORMATS = ("parquet", "orc", "csv", "json", "text", "avro", "delta", "binaryFile")


def _connect_scans(source: Any, spark: SparkSession | None) -> list[dict[str, Any]]:
    nodes = _connect.executed_nodes(source)
    by_id = {n.id: n for n in nodes}
    scans = [
        n
        for n in nodes
        if n.name.startswith("BatchScan ") or any(n.name.split(" ")[:2] == ["Scan", f] for f in _V1_FORMATS)
    ]
    records = _records(source, spark, sorted({n.parent for n in scans if n.parent in by_id}))
    out = []
    for scan in scans:
        parent = by_id.get(scan.parent)
        bloom = parent if parent is not None and parent.name == _connect.METRICS_NODE else None
        record = records.get(bloom.id) if bloom is not None else None
        words = scan.name.split(" ")
        if record is not None:
            table, format_ = str(record["scan_table"]), str(record["scan_format"])
        elif words[0] == "BatchScan":
            table, format_ = " ".join(words[1:]).strip(), ""
        else:
            table, format_ = " ".join(words[2:]).strip(), words[1]
        out.append(
            {
                "table": table,
                "format": format_,
                "metrics": dict(sorted(scan.metrics.items())),
                "bloom_metrics": dict(sorted(bloom.metrics.items())) if bloom is not None else None,
            }
        )
    return out
