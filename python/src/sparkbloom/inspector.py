"""The Parquet bloom filter inspector: what native filters files carry, and what they answer.

The files are read by the JVM side (``sparkbloom.api.Inspector``), with the same strict parser the
index uses, so the inspector and the index never disagree about a filter.

    >>> report = sparkbloom.inspect_parquet(spark, "/data/events", probes=["user_id=42"])
    >>> print(sparkbloom.format_report(report))

From a shell (starts a small local JVM)::

    python -m sparkbloom inspect /data/events --probe user_id=42 --probe country=NZ
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from . import _connect, _jvm
from .errors import translate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def inspect_parquet(spark: SparkSession, path: str, probes: Iterable[str] = ()) -> dict[str, Any]:
    """Inspects a Parquet file, or every Parquet file under a directory (``_*`` and ``.*`` skipped).

    `probes` are ``column=value`` strings; each row group answers ``maybe``, ``no``, ``no filter``,
    ``corrupt filter``, ``no such column`` or ``cannot probe: <why>``. Returns a dict::

        {"path": ..., "ndv_note": ..., "probes": [...],
         "files": [{"file", "size_in_bytes", "status": "ok" | "encrypted" | "not parquet" | "unreadable: ...",
                    "created_by", "num_rows",
                    "row_groups": [{"index", "num_rows",
                                    "columns": [{"column", "physical_type", "logical_type", "values",
                                                 "bloom_filter": "ok" | "absent" | "corrupt: <reason>",
                                                 "offset", "stored_length", "num_bytes",
                                                 "ndv_upper_bound", "fpp_estimated", "fpp_observed"}],
                                    "probes": [{"column", "value", "result"}]}]}]}
    """
    probe_list = list(probes)
    if _connect.is_connect(spark):
        return dict(_connect.call(spark, "inspect", {"path": str(path), "probes": probe_list}))
    api = _jvm.python_api(spark)
    with translate():
        text = api.inspect(_jvm.java_session(spark), str(path), _jvm.string_array(spark, probe_list))
    return dict(json.loads(text))


def format_report(report: dict[str, Any]) -> str:
    """The report as text: one block per file, a table of column chunks per row group, probe answers."""
    out: list[str] = []
    files = report["files"]
    for f in files:
        out.append(f["file"])
        status = f["status"]
        if status != "ok":
            note = f.get("note")
            out.append(f"  {status}" + (f" ({note})" if note else ""))
            out.append("")
            continue
        groups = f["row_groups"]
        out.append(
            f"  {f['size_in_bytes']:,} bytes, {_n(f['num_rows'], 'row')}, {_n(len(groups), 'row group')}"
            + (f", written by {f['created_by']}" if f.get("created_by") else "")
        )
        for g in groups:
            out.append(f"  row group {g['index']} ({_n(g['num_rows'], 'row')})")
            rows = [["column", "type", "values", "filter bytes", "fpp est.*", "fpp obs.", "bloom filter"]]
            for c in g["columns"]:
                rows.append(
                    [
                        c["column"],
                        c["physical_type"] + (f" {c['logical_type']}" if c.get("logical_type") else ""),
                        f"{c['values']:,}",
                        f"{c['num_bytes']:,}" if c.get("num_bytes") is not None else "-",
                        _fpp(c.get("fpp_estimated")),
                        _fpp(c.get("fpp_observed")),
                        c["bloom_filter"],
                    ]
                )
            out.extend("    " + line for line in _table(rows, right=(2, 3, 4, 5)))
            for p in g["probes"]:
                if p["result"] != "no such column":
                    out.append(f"    probe {p['column']} = {p['value']!r}: {p['result']}")
        absent = sorted({p["column"] for g in groups for p in g["probes"] if p["result"] == "no such column"})
        if absent:
            out.append(f"  not probed, no such column: {', '.join(absent)}")
        out.append("")
    out.append(_summary(files))
    if any(c.get("fpp_estimated") is not None for f in files for g in f.get("row_groups", []) for c in g["columns"]):
        out.append(f"* {report['ndv_note']}")
    return "\n".join(out)


def _summary(files: Sequence[dict[str, Any]]) -> str:
    chunks = [c for f in files for g in f.get("row_groups", []) for c in g["columns"]]
    with_filter = sum(1 for c in chunks if c["bloom_filter"] != "absent")
    corrupt = sum(1 for c in chunks if c["bloom_filter"].startswith("corrupt"))
    parts = [
        _n(sum(1 for f in files if f["status"] == "ok"), "Parquet file"),
        f"{with_filter} of {len(chunks)} column chunks with a bloom filter",
        f"{corrupt} corrupt",
    ]
    for status, label in (("encrypted", "encrypted (not read)"), ("not parquet", "not Parquet (skipped)")):
        n = sum(1 for f in files if f["status"] == status)
        if n:
            parts.append(f"{n} {label}")
    unreadable = sum(1 for f in files if f["status"].startswith("unreadable"))
    if unreadable:
        parts.append(f"{unreadable} unreadable")
    return "; ".join(parts)


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _fpp(value: Any) -> str:
    if value is None:
        return "-"
    return "0" if value == 0 else f"{value:.2e}"


def _table(rows: list[list[str]], right: Sequence[int] = ()) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return lines
