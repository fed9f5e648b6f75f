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

from . import _jvm
from .errors import translate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


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


def skipping(df: DataFrame) -> list[ScanSkipping]:
    """The skipping each bloom-pruned scan of `df` did: by bloom indexes at planning time and by the files'
    own bloom filters at read time (``index`` is ``""`` for a scan no index applied to); empty when neither did.

    Reads the executed plan, so run the query first (``collect()``, ``count()``, ``write``...) on this
    very DataFrame object.
    """
    jdf = _jvm.java_dataframe(df)
    api = _jvm.python_api(df.sparkSession)
    with translate():
        found = json.loads(api.skipping(jdf))
    return [ScanSkipping(**s) for s in found]


def scan_metrics(df: DataFrame) -> list[dict[str, Any]]:
    """Spark's own metrics of every file scan in `df`'s executed plan, whether or not an index applied:
    V1 scans (Parquet, Delta; ``numFiles`` is files read) and V2 scans (Spark's V2 Parquet scan, Iceberg, with
    the source's own metrics). ``bloom_metrics`` holds sparkbloom's SQL metrics of a pruned scan
    (``filesSkipped``, ``rowGroupsSkipped``, ``filesNotCovered``, ...), None elsewhere. Run the query first.

    >>> sparkbloom.scan_metrics(q)[0]["metrics"]["numFiles"]
    3
    """
    jdf = _jvm.java_dataframe(df)
    api = _jvm.python_api(df.sparkSession)
    with translate():
        return list(json.loads(api.scans(jdf)))
