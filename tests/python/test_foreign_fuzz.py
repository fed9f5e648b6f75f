"""Differential fuzz over Parquet files written by pyarrow, DuckDB and DataFusion, in Spark.

The same random table (``foreign_writers.random_table``) is written by each writer, with the writer's own
bloom filters where it can write them. Random conditions (``=``, ``IN`` short and long, ``<=>``, ``IS
NULL``, AND/OR, values present and absent, ±0.0, NaN) run in Spark under these settings:

- ``exact``: sparkbloom off and Spark's Parquet filter pushdown off: Spark evaluates every row. The answer.
- ``truth``: sparkbloom off, parquet-java's bloom filtering off (``parquet.filter.bloom.enabled=false``):
  no bloom pruning at all, but Spark's statistics, dictionary and page-index filtering as usual.
- ``native``: sparkbloom on, no index: the files' own filters, checked by ``NativeFilters``.
- ``index``: sparkbloom on after ``CREATE BLOOM INDEX`` (harvested from the files where valid).
- ``spark``: sparkbloom off, parquet-java's bloom filtering on: Spark alone (reported, not asserted).

``native`` and ``index`` must return exactly ``exact``'s rows: with sparkbloom loaded no row is lost, neither
by bloom filters nor by parquet-java's dictionary, statistics and page-index filters, which sparkbloom turns
off for a scan whose condition compares with a floating zero or NaN. How often ``truth`` and ``spark`` differ
from ``exact`` is printed (``-s``) and recorded as a test property; the known cases are asserted in
``test_float_lookups_*`` and ``test_negative_zeros_*`` below.

Size: ``SPARKBLOOM_FUZZ_QUERIES`` conditions per writer (default 10; 25, then 15, until CI's time ran
close to 30 minutes), ``SPARKBLOOM_FUZZ_SEED`` (default
fixed); ``SPARKBLOOM_DECISION_QUERIES`` for the decision-level case (default 20000).
"""

from __future__ import annotations

import datetime
import decimal
import glob
import json
import math
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import sparkbloom

import foreign_writers as fw
from conftest import FIXTURES, harness_jar, stored_length_readable

SEED = int(os.environ.get("SPARKBLOOM_FUZZ_SEED", "1313"))
QUERIES = int(os.environ.get("SPARKBLOOM_FUZZ_QUERIES", "10"))
DECISION_QUERIES = int(os.environ.get("SPARKBLOOM_DECISION_QUERIES", "20000"))
ALL_COLUMNS = ", ".join(fw.NAMES)

SETTINGS: dict[str, dict[str, str]] = {
    "exact": {"spark.sparkbloom.enabled": "false", "spark.sql.parquet.filterPushdown": "false"},
    "truth": {"spark.sparkbloom.enabled": "false", "parquet.filter.bloom.enabled": "false"},
    "spark": {"spark.sparkbloom.enabled": "false"},
    "native": {"spark.sparkbloom.enabled": "true"},
}
_KEYS = ("spark.sparkbloom.enabled", "spark.sql.parquet.filterPushdown", "parquet.filter.bloom.enabled")


@pytest.fixture
def settings(spark: SparkSession) -> Iterator[Any]:
    """Applies one of SETTINGS (every other key at its default); restores the session's values afterwards."""
    before = {k: spark.conf.get(k, None) for k in _KEYS}

    def apply(name: str) -> None:
        for k in _KEYS:
            spark.conf.unset(k)
        for k, v in SETTINGS[name].items():
            spark.conf.set(k, v)

    yield apply
    for k, v in before.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("foreign")
    data = fw.random_table(SEED)
    dirs = {w: str(base / w) for w in fw.WRITERS}
    for w, d in dirs.items():
        fw.write(w, data, d, 2048)
    return {"dirs": dirs, "data": data}


# ------------------------------------------------------------------------------------------ the writers


def test_each_writer_wrote_several_files_of_several_row_groups_and_its_own_bloom_filters(
    tables: dict[str, Any],
) -> None:
    versions = fw.versions()
    for w, d in tables["dirs"].items():
        files = sorted(glob.glob(f"{d}/*.parquet"))
        assert len(files) == 3, (w, files)
        chunks = [c for f in files for c in fw.bloom_filter_columns(f)]
        assert {c["row_group"] for c in chunks} == {0, 1, 2, 3}, w
        assert {c["column"] for c in chunks} == set(fw.NAMES), w
        created_by = {c["created_by"] for c in chunks}
        with_filter = [c for c in chunks if c["has_filter"]]
        if w == "pyarrow":
            # pyarrow 21 (Arrow C++ 21) has no way to write bloom filters: a plain writer here.
            assert created_by == {f"parquet-cpp-arrow version {versions['pyarrow']}"}
            assert with_filter == []
        else:
            # Every chunk is filtered, and the writer stored each filter's length (bloom_filter_length).
            assert len(with_filter) == len(chunks) == 3 * 4 * 7, w
            assert all(c["length"] and c["length"] > 32 for c in with_filter), w
            writer_name = {"duckdb": "DuckDB version", "datafusion": "datafusion version"}[w]
            assert all(c.startswith(writer_name) for c in created_by)


def test_duckdb_itself_finds_present_values_in_the_foreign_filters(tables: dict[str, Any]) -> None:
    """The writers' filters are valid as far as another reader is concerned (DuckDB's parquet_bloom_probe): a
    value of row group r of a file is never excluded from r; an absent key is excluded from most row groups."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    first = tables["data"][0]
    present = next(v for v in first.column("i64").to_pylist()[2048 * 2:] if v is not None)  # from row group 2
    absent = fw.key_value("i64", 10**6)
    for w in ("duckdb", "datafusion"):
        f = f"{tables['dirs'][w]}/part-000.parquet"
        probe = "SELECT row_group_id, bloom_filter_excludes FROM parquet_bloom_probe(?, 'i64', ?)"
        hit = dict(con.execute(probe, [f, present]).fetchall())
        miss = dict(con.execute(probe, [f, absent]).fetchall())
        assert hit[2] is False, (w, hit)
        assert sum(1 for x in miss.values() if x) >= 3, (w, miss)


# ------------------------------------------------------------------------------------------ conditions


def _literal(col: str, v: Any) -> str:
    if v is None:
        return "NULL"
    t = fw.SPARK_TYPES[col]
    if col == "i32":
        return str(v)
    if col == "i64":
        return f"{v}L"
    if col in ("d", "f"):
        s = "NaN" if math.isnan(v) else ("Infinity" if v == math.inf else ("-Infinity" if v == -math.inf else repr(v)))
        return f"CAST('{s}' AS {t.upper()})"
    if col == "s":
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if col == "dt":
        return f"DATE'{v.isoformat()}'"
    if col == "dec":
        return f"CAST('{v}' AS DECIMAL(10,2))"
    raise KeyError(col)


class Conditions:
    """Random conditions over the table's columns, with values present in the table, absent and special."""

    def __init__(self, data: list[Any]):
        self.present: dict[str, list[Any]] = {}
        for c in fw.NAMES:
            seen: dict[Any, Any] = {}
            for t in data:
                for v in t.column(c).to_pylist():
                    if v is not None:
                        key = repr(v) if isinstance(v, float) else v  # -0.0 and 0.0 both kept
                        seen.setdefault(key, v)
            self.present[c] = list(seen.values())

    def value(self, rng: random.Random, col: str) -> Any:
        x = rng.random()
        if x < 0.55:
            return rng.choice(self.present[col])
        if x < 0.88:
            return self.absent(rng, col)
        return self.special(rng, col)

    def absent(self, rng: random.Random, col: str) -> Any:
        near = rng.choice(self.present[col]) if rng.random() < 0.5 else None
        if col == "i32":
            return near + 1 + rng.randrange(3) if near is not None else rng.randrange(-2**31, 2**31)
        if col == "i64":
            return near + 1 + rng.randrange(3) if near is not None else rng.randrange(-2**63, 2**63)
        if col == "d":
            return near + 0.125 if near is not None and not math.isnan(near) else round(rng.gauss(0, 1000), 3)
        if col == "f":
            return near + 0.0625 if near is not None and not math.isnan(near) else rng.randrange(-4000, 4000) * 0.5
        if col == "s":
            if near is not None:
                return near + rng.choice(["x", " "])
            return "".join(rng.choice("abcxyz019") for _ in range(rng.randrange(9)))
        if col == "dt":
            return (near or fw.EPOCH) + datetime.timedelta(days=1 + rng.randrange(2))
        if col == "dec":
            if near is not None:
                return near + decimal.Decimal("0.01")
            return decimal.Decimal(rng.randrange(-(10**9), 10**9)).scaleb(-2)
        raise KeyError(col)

    def special(self, rng: random.Random, col: str) -> Any:
        return rng.choice({
            "i32": [0, -1, 2**31 - 1, -2**31], "i64": [0, -1, 2**63 - 1, -2**63],
            "d": [0.0, -0.0, math.nan, math.inf], "f": [0.0, -0.0, math.nan, -1.0],
            "s": ["", " ", "ключ"], "dt": [fw.EPOCH, datetime.date(1, 1, 1)],
            "dec": [decimal.Decimal("0.00"), decimal.Decimal("99999999.99")],
        }[col])

    def atom(self, rng: random.Random) -> str:
        col = rng.choice(fw.NAMES)
        lit = lambda v: _literal(col, v)  # noqa: E731
        x = rng.random()
        if x < 0.33:
            v = lit(self.value(rng, col))
            return f"{v} = {col}" if rng.random() < 0.1 else f"{col} = {v}"
        if x < 0.43:
            return f"{col} <=> {lit(None) if rng.random() < 0.25 else lit(self.value(rng, col))}"
        if x < 0.58:
            return f"{col} IN ({', '.join(lit(self.value(rng, col)) for _ in range(rng.randrange(2, 11)))})"
        if x < 0.76:  # more than spark.sql.optimizer.inSetConversionThreshold (10): planned as InSet
            return f"{col} IN ({', '.join(lit(self.value(rng, col)) for _ in range(rng.randrange(11, 41)))})"
        if x < 0.82:
            return f"{col} IS NULL"
        col = rng.choice(["d", "f"])
        return f"{col} = {_literal(col, rng.choice([0.0, -0.0, math.nan]))}"

    def condition(self, rng: random.Random, depth: int = 2) -> str:
        if depth == 0 or rng.random() < 0.4:
            return self.atom(rng)
        op = rng.choice(["AND", "OR"])
        return f"({self.condition(rng, depth - 1)} {op} {self.condition(rng, depth - 1)})"


# ------------------------------------------------------------------------------------------ running them


def _rows(df: DataFrame) -> list[str]:
    return sorted("|".join(str(x) for x in r) for r in df.collect())


def _bloom_node_metrics(df: DataFrame) -> dict[str, int]:
    """The native-filter metrics of the BloomIndexSkipping nodes of df's executed plan (summed). Run df first."""
    out: dict[str, int] = {}
    stack = [df._jdf.queryExecution().executedPlan()]
    while stack:
        p = stack.pop()
        if p.nodeName() == "BloomIndexSkipping":
            metrics = p.metrics()
            for k in ("nativeRowGroupsChecked", "nativeRowGroupsSkipped", "nativeFiltersInvalid",
                      "nativeFilesUnreadable"):
                m = metrics.get(k)
                if m.isDefined():
                    out[k] = out.get(k, 0) + int(m.get().value())
        if p.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            stack.append(p.executedPlan())
        kids = p.children()
        stack.extend(kids.apply(i) for i in range(kids.size()))
    return out


def _query(spark: SparkSession, path: str, cond: str) -> DataFrame:
    return spark.read.parquet(path).where(cond).select(*fw.NAMES)


@pytest.mark.parametrize("writer", fw.WRITERS)
def test_random_conditions_return_the_same_rows_with_native_filters_and_with_an_index(
        spark: SparkSession, settings: Any, tables: dict[str, Any], writer: str, record_property: Any) -> None:
    path = tables["dirs"][writer]
    gen = Conditions(tables["data"])
    rng = random.Random(f"{SEED}-{writer}")
    conds = [gen.condition(rng) for _ in range(QUERIES)]
    results: dict[str, list[list[str]]] = {}
    native: list[dict[str, int]] = []
    for name in ("exact", "truth", "spark", "native"):
        settings(name)
        results[name] = []
        for c in conds:
            df = _query(spark, path, c)
            results[name].append(_rows(df))
            if name == "native":
                native.append(_bloom_node_metrics(df))

    settings("native")
    spark.sql(f"CREATE BLOOM INDEX fuzz ON parquet.`{path}` ({ALL_COLUMNS})")
    try:
        d = sparkbloom.indexes(spark, path)[0].describe()
        assert d["files_covered"] == 3 and d["problems"] == [], d
        # Every filter the writer stored is valid and harvested; pyarrow's chunks (no filters) are scanned.
        chunks = 3 * 4 * len(fw.NAMES)
        # On Spark 3.5 (no bloom_filter_length) other writers' filters are never used: their chunks are scanned.
        expected = (0, chunks) if writer == "pyarrow" or not stored_length_readable() else (chunks, 0)
        assert (d["filters_harvested"], d["filters_scanned"]) == expected, d
        results["index"] = []
        index_skipped = 0
        for c in conds:
            df = _query(spark, path, c)
            results["index"].append(_rows(df))
            index_skipped += sum(s.row_groups_skipped for s in sparkbloom.skipping(df))
    finally:
        spark.sql(f"DROP BLOOM INDEX fuzz ON parquet.`{path}`")

    def differing(a: str, b: str) -> list[int]:
        return [i for i in range(len(conds)) if results[a][i] != results[b][i]]

    def show(a: str, b: str, i: int) -> str:
        x, y = results[a][i], results[b][i]
        return (f"{writer} WHERE {conds[i]}\n  {a}: {len(x)} rows, {b}: {len(y)} rows; in {b} only: "
                f"{sorted(set(y) - set(x))[:3]}; in {a} only: {sorted(set(x) - set(y))[:3]}")

    report = {
        "writer": writer, "conditions": len(conds),
        "rows_returned": sum(len(r) for r in results["truth"]),
        "native_row_groups_checked": sum(m.get("nativeRowGroupsChecked", 0) for m in native),
        "native_row_groups_skipped": sum(m.get("nativeRowGroupsSkipped", 0) for m in native),
        "native_filters_invalid": sum(m.get("nativeFiltersInvalid", 0) for m in native),
        "index_row_groups_skipped": index_skipped,
        "truth_differs_from_exact": len(differing("truth", "exact")),
        "spark_alone_differs_from_exact": len(differing("spark", "exact")),
        "spark_alone_differs_from_truth": len(differing("spark", "truth")),
        "native_differs_from_exact": len(differing("native", "exact")),
        "examples_spark_alone_wrong": [show("spark", "exact", i) for i in differing("spark", "exact")[:3]],
        "examples_truth_wrong": [show("truth", "exact", i) for i in differing("truth", "exact")[:3]],
    }
    print("\n" + json.dumps(report, indent=1, ensure_ascii=False))
    record_property("foreign_fuzz", json.dumps(report, ensure_ascii=False))

    wrong = [show("native", "exact", i) for i in differing("native", "exact")] + \
            [show("index", "exact", i) for i in differing("index", "exact")]
    assert not wrong, (
        f"seed {SEED}: {len(wrong)} answers differ from Spark evaluating every row:\n" + "\n".join(wrong[:5])
    )
    assert report["native_filters_invalid"] == 0
    assert report["rows_returned"] > 0 and index_skipped > 0, report
    if writer == "pyarrow" or not stored_length_readable():
        # pyarrow's files carry no filters; Spark 3.5 does not use other writers' filters
        assert report["native_row_groups_skipped"] == 0, report
    else:
        assert report["native_row_groups_skipped"] > report["native_row_groups_checked"] // 10, report


@pytest.mark.parametrize("writer", ["duckdb", "datafusion"])
def test_an_absent_key_is_pruned_by_the_foreign_files_own_filters(spark: SparkSession, settings: Any,
                                                                  tables: dict[str, Any], writer: str) -> None:
    settings("native")
    checked = skipped = 0
    for k in (10**6, 10**6 + 1, 10**6 + 2):
        for col in ("i64", "s", "dec"):
            df = _query(spark, tables["dirs"][writer], f"{col} = {_literal(col, fw.key_value(col, k))}")
            assert df.collect() == []
            m = _bloom_node_metrics(df)
            checked += m["nativeRowGroupsChecked"]
            skipped += m["nativeRowGroupsSkipped"]
    assert checked == 3 * 3 * 12
    if stored_length_readable():
        assert skipped >= checked * 0.75, (skipped, checked)  # the writers' filters are sized for ~1-5% false positives
    else:  # Spark 3.5: other writers' filters are not used
        assert skipped == 0, (skipped, checked)


# ------------------------------------------------------------------------------------------ known cases


def test_duckdb_fixtures_with_damaged_filters_give_the_right_counts(spark: SparkSession, settings: Any) -> None:
    settings("native")
    duck = FIXTURES / "duckdb"
    assert spark.read.parquet(str(duck / "bloom_filter_short_numbytes.parquet")).where("r = 200").count() == 100
    df = spark.read.parquet(str(duck / "bloom_filter_bad_numbytes.parquet")).where("r = 0")
    assert df.count() == 1000
    assert spark.read.parquet(str(duck / "bloom_filter_bad_numbytes.parquet")).count() == 100000


def _negative_zeros(spark: SparkSession, path: str, dictionary: bool) -> str:
    (spark.range(500).selectExpr("CAST('-0.0' AS DOUBLE) AS x").coalesce(1).write
     .option("parquet.bloom.filter.enabled#x", "true").option("parquet.enable.dictionary", str(dictionary).lower())
     .parquet(path))
    return path


def test_negative_zeros_in_a_spark_written_bloom_filter_are_found_by_a_lookup_of_zero(
        spark: SparkSession, settings: Any, tmp_path: Path, record_property: Any) -> None:
    # Without dictionary encoding parquet-java writes the filter (a fully dictionary-encoded chunk gets none).
    path = _negative_zeros(spark, str(tmp_path / "z"), dictionary=False)
    [chunk] = fw.bloom_filter_columns(glob.glob(f"{path}/*.parquet")[0])
    assert chunk["has_filter"]
    settings("native")
    assert spark.read.parquet(path).where("x = 0.0").count() == 500
    assert spark.read.parquet(path).where("x IN (0.0D, 1.0D)").count() == 500
    settings("spark")
    alone = spark.read.parquet(path).where("x = 0.0").count()
    record_property("spark_alone_negative_zero_count", alone)
    print(f"\nSpark alone (parquet-java's bloom filter): count(*) WHERE x = 0.0 over 500 rows of -0.0 = {alone}")
    assert alone == 0  # the filter holds the hash of -0.0 only; Spark trusts it


def test_negative_zeros_in_a_dictionary_encoded_spark_file_are_found_by_a_lookup_of_zero(
        spark: SparkSession, settings: Any, tmp_path: Path) -> None:
    """parquet-java's dictionary filter compares doubles by bits (a dictionary holding -0.0 is dropped for
    x = 0.0): sparkbloom turns it off for conditions that compare with a floating zero."""
    path = _negative_zeros(spark, str(tmp_path / "z"), dictionary=True)
    settings("spark")
    alone = spark.read.parquet(path).where("x = 0.0").count()
    print(f"\nSpark alone (dictionary filter): count(*) WHERE x = 0.0 over 500 rows of -0.0 = {alone}")
    settings("native")
    assert spark.read.parquet(path).where("x = 0.0").count() == 500


@pytest.mark.parametrize("writer", ["pyarrow", "datafusion"])
def test_float_lookups_of_nan_and_zeros_return_every_matching_row_with_sparkbloom_on(
        spark: SparkSession, settings: Any, tables: dict[str, Any], writer: str) -> None:
    path = tables["dirs"][writer]
    conds = ["d = CAST('NaN' AS DOUBLE)", "f = CAST('NaN' AS FLOAT)", "d = 0.0D", "d = CAST('-0.0' AS DOUBLE)",
             "f = CAST('0.0' AS FLOAT)", "f = CAST('-0.0' AS FLOAT)"]
    settings("exact")
    exact = [_query(spark, path, c).count() for c in conds]
    settings("spark")
    alone = [_query(spark, path, c).count() for c in conds]
    settings("native")
    assert [_query(spark, path, c).count() for c in conds] == exact and min(exact) > 0
    # parquet-java's statistics, page-index and dictionary filters drop row groups holding NaN (Arrow writers
    # leave NaN out of min/max) and -0.0/0.0 (dictionaries compared by bits) when Spark runs alone
    print(f"\n{writer}: exact {exact}, Spark alone {alone}")
    assert alone != exact


def _spark_written(spark: SparkSession, tables: dict[str, Any]) -> str:
    """The fuzz table written again by Spark (parquet-java: a chunk holding NaN gets NaN as its max), 3 files of
    several row groups; written once per module."""
    out = str(Path(tables["dirs"]["pyarrow"]).parent / "spark")
    if not os.path.isdir(out):
        (spark.read.parquet(tables["dirs"]["pyarrow"]).coalesce(3).write
         .option("parquet.block.size", str(64 * 1024)).parquet(out))
    return out


def _scan_rows(df: DataFrame) -> int:
    """Rows the Parquet scans of df's executed plan produced (the rows of the row groups read; Spark's filter
    above them drops the others). Run df first."""
    rows = 0
    stack = [df._jdf.queryExecution().executedPlan()]
    while stack:
        p = stack.pop()
        if p.getClass().getSimpleName() in ("FileSourceScanExec", "BatchScanExec"):
            m = p.metrics().get("numOutputRows")
            if m.isDefined():
                rows += int(m.get().value())
        if p.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            stack.append(p.executedPlan())
        kids = p.children()
        stack.extend(kids.apply(i) for i in range(kids.size()))
    return rows


NAN_RANGES = ["d > 1000000.0D", "f > CAST('100000' AS FLOAT)", "NOT (d <= 1000000.0D)", "d >= 1000000.0D",
              "(d > 1000000.0D OR i32 = 1)"]


@pytest.mark.parametrize("scan", ["v1", "v2"])
@pytest.mark.parametrize("writer", ["pyarrow", "duckdb", "datafusion", "spark"])
def test_range_conditions_keep_the_nan_rows_with_sparkbloom_on(spark: SparkSession, settings: Any,
                                                              tables: dict[str, Any], writer: str,
                                                              scan: str) -> None:
    """In Spark NaN is greater than every value, so d > 1e6 holds for the NaN rows. pyarrow and arrow-rs leave
    NaN out of min/max, and parquet-java's statistics and page-index filters then drop them; with sparkbloom on,
    such files are read with only the pushed filters that cannot be true for NaN (NanGuard), V1 and V2 alike."""
    path = _spark_written(spark, tables) if writer == "spark" else tables["dirs"][writer]
    before = spark.conf.get("spark.sql.sources.useV1SourceList")
    if scan == "v2":
        spark.conf.set("spark.sql.sources.useV1SourceList", "")
    try:
        settings("exact")
        exact = [_query(spark, path, c).count() for c in NAN_RANGES]
        assert min(exact) > 0  # the NaN rows
        settings("spark")
        alone = [_query(spark, path, c).count() for c in NAN_RANGES]
        settings("native")
        assert [_query(spark, path, c).count() for c in NAN_RANGES] == exact
        spark.conf.set("spark.sparkbloom.nanGuard.enabled", "false")
        unguarded = [_query(spark, path, c).count() for c in NAN_RANGES]
    finally:
        spark.conf.unset("spark.sparkbloom.nanGuard.enabled")
        spark.conf.set("spark.sql.sources.useV1SourceList", before)
    print(f"\n{writer} ({scan}): exact {exact}, Spark alone {alone}")
    if writer in ("pyarrow", "datafusion"):
        assert alone != exact and unguarded == alone  # what Spark alone, and sparkbloom without the guard, lose
    else:  # DuckDB and parquet-java count NaN in max, which parquet-java's reader then ignores
        assert alone == exact


@pytest.mark.parametrize("scan", ["v1", "v2"])
def test_spark_written_tables_keep_statistics_pruning_of_ranges_with_sparkbloom_on(
        spark: SparkSession, settings: Any, tmp_path: Path, scan: str) -> None:
    """parquet-java's files count NaN in float min/max: NanGuard leaves their statistics filtering on, so a range
    over a float or double column reads as few row groups as with the guard off."""
    path = str(tmp_path / "sorted")
    (spark.range(0, 40000).selectExpr("CAST(id AS DOUBLE) AS d", "CAST(id AS FLOAT) AS f", "id").coalesce(2)
     .sortWithinPartitions("id").write.option("parquet.block.size", str(32 * 1024)).parquet(path))
    conds = ["d > 39000.0D", "f >= CAST('39500' AS FLOAT)", "NOT (d <= 39000.0D)"]
    before = spark.conf.get("spark.sql.sources.useV1SourceList")
    if scan == "v2":
        spark.conf.set("spark.sql.sources.useV1SourceList", "")
    read: dict[str, list[int]] = {}
    try:
        for name, extra in (("guarded", {}), ("guard off", {"spark.sparkbloom.nanGuard.enabled": "false"}),
                            ("no statistics", {"parquet.filter.stats.enabled": "false",
                                               "parquet.filter.columnindex.enabled": "false"})):
            settings("native")
            for k, v in extra.items():
                spark.conf.set(k, v)
            read[name] = []
            try:
                for c in conds:
                    df = spark.read.parquet(path).where(c)
                    df.collect()
                    read[name].append(_scan_rows(df))
            finally:
                for k in extra:
                    spark.conf.unset(k)
    finally:
        spark.conf.set("spark.sql.sources.useV1SourceList", before)
    print(f"\nrows read by the scan ({scan}): {read}")
    assert read["guarded"] == read["guard off"]
    assert all(g < n // 4 for g, n in zip(read["guarded"], read["no statistics"])), read


def test_float_lookups_of_nan_and_zeros_return_every_matching_row_on_duckdb_files(
        spark: SparkSession, settings: Any, tables: dict[str, Any]) -> None:
    """DuckDB's files keep NaN out of nothing Spark filters on: with sparkbloom on the answers are exact, while
    Spark alone trusts the filters' hash of one zero and loses the other's rows."""
    path = tables["dirs"]["duckdb"]
    conds = ["d = CAST('NaN' AS DOUBLE)", "f = CAST('NaN' AS FLOAT)", "d = 0.0D", "d = CAST('-0.0' AS DOUBLE)",
             "f = CAST('0.0' AS FLOAT)", "f = CAST('-0.0' AS FLOAT)"]
    counts = {}
    for name in ("exact", "native", "spark"):
        settings(name)
        counts[name] = [_query(spark, path, c).count() for c in conds]
    assert counts["native"] == counts["exact"] and min(counts["exact"]) > 0
    assert counts["spark"][2:] != counts["exact"][2:]  # Spark alone loses rows of the other zero


# ------------------------------------------------------------------------------------------ decision level


def test_decision_level_fuzz_keeps_every_row_group_that_holds_a_match(spark: SparkSession, settings: Any,
                                                                      tables: dict[str, Any], tmp_path: Path) -> None:
    """DecisionFuzz (sparkbloom.tools, in the harness jar): NativeFilters.decide and the index probe against the rows
    themselves."""
    if not harness_jar().is_file():
        pytest.fail(f"{harness_jar()} is missing: build it with `dev/sbt harness/package` (dev/test does)")
    settings("native")
    dirs = {}
    for w, d in tables["dirs"].items():  # a copy, so the index does not change the Spark-level tests' table
        dirs[w] = str(tmp_path / w)
        shutil.copytree(d, dirs[w])
        spark.sql(f"CREATE BLOOM INDEX fz ON parquet.`{dirs[w]}` ({ALL_COLUMNS})")
    jvm = spark.sparkContext._jvm
    fuzz = jvm.sparkbloom.tools.DecisionFuzz
    out = json.loads(fuzz.run(spark._jsparkSession, list(dirs.values()), DECISION_QUERIES, SEED))
    print("\n" + json.dumps({k: v for k, v in out.items() if k != "tables"}, indent=1))
    assert out["mismatches"] == 0, "\n".join(out["reproducers"])
    t = out["total"]
    assert t["queries"] == DECISION_QUERIES and t["errors"] == 0
    assert t["split_checks"] > 0 and t["storage_checks"] > 0
    by_writer = {x["path"].rstrip("/").rsplit("/", 1)[-1]: x for x in out["tables"]}
    for w in ("duckdb", "datafusion"):
        x = by_writer[w]
        assert x["chunks_with_native_filters"] == 84
        if stored_length_readable():  # Spark 3.5 does not use other writers' filters
            assert x["native_pruned_of_prunable"] > 0.5, x
    for x in by_writer.values():
        assert x["index_pruned_of_prunable"] > 0.5, x
        assert x["must_keep"] > 0 and x["prunable"] > 0, x
