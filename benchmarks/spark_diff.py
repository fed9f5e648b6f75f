#!/usr/bin/env python3
"""Spark-level differential run (issue 47): random tables, random writers, random queries, sparkbloom on vs off.

Each round (its own seed, derived from --seed and the round number, so one round reproduces alone) makes:

- a random schema: ``id bigint`` and 4-9 columns drawn from every type sparkbloom indexes (tinyint, smallint,
  int, bigint, float, double, decimal(5,2), decimal(15,3), decimal(30,5), date, timestamp, timestamp_ntz,
  string, binary) plus sometimes a boolean (not indexable: its atoms stay with Spark); values clustered by row
  (rows close together share keys, so files and row groups hold different values), 6% edge values (extremes,
  NaN, both zeros, infinities, '', multi-byte strings, empty binary) and 8% nulls;
- a table in one of five forms: Parquet written by Spark (V1 writer, INT96 timestamps, sometimes with
  parquet-java's own bloom filters), by pyarrow, DuckDB or DataFusion (tests/python/foreign_writers.py, the
  last two with their own filters), a Delta table (sometimes with deletion vectors) or an Iceberg table
  (copy-on-write or merge-on-read);
- writes before the index (appends by another writer, an overwrite, deletes and updates on Delta and
  Iceberg), ``CREATE BLOOM INDEX`` on a random subset of the columns (sometimes two indexes), writes after it
  (Spark appends and overwrites, maintained on write; files dropped in or replaced by another writer, which
  the index does not cover or must see as changed; Delta and Iceberg appends, deletes, updates);
- queries, each a SELECT over the table: literal conditions (``=`` both orders, ``<=>``, ``IN`` of 2-10 and
  of 11-40 values, ``IS [NOT] NULL``, ``= NULL``, ranges, ``NOT``, ``NOT IN``, AND/OR trees of depth <= 2)
  and run-time key sets from a small key table K (inner joins on one or two columns, ``<=>`` joins, outer
  joins on either side, ``IN (subquery)``, ``EXISTS``, ``NOT IN``/``NOT EXISTS``, ``IN`` over the table
  itself), read through Spark's V1 and V2 Parquet sources alternately for Parquet tables;
- on Delta and Iceberg, DML statements (MERGE updates, deletes and inserts; UPDATE; DELETE, by literal
  conditions or by subquery on Iceberg) run on the indexed table with sparkbloom on and on an unindexed twin
  with it off; the two tables are compared after each one (counted separately from the queries).

Batching: a batch of up to --batch queries is ONE Spark job: each query becomes
``SELECT <qid>, xxhash64(<its row>) FROM (<query>)``, the batch their ``UNION ALL`` grouped by qid into
``count(*)`` and ``sum(hash)`` (order-independent). Every branch keeps its own scan, so each gets its own
pruning at planning and at read time. The batch runs with ``spark.sparkbloom.enabled`` true, then false; a
batch whose results differ (or that fails on one side only) is re-run query by query, and each differing
query is printed with the seed, round, query number and SQL. Files and row groups skipped are summed from
``sparkbloom.skipping`` of each batch. Every fourth batch runs row by row on both sides (whole-stage code
generation off, as Spark runs a stage wider than ``spark.sql.codegen.maxFields``): filters are then interpreted
on the executors. Any batch may also run (both sides) with Spark settings that change how it plans or reads
(``SETTINGS``: the row reader, no Parquet filter pushdown, files split across tasks, AQE off, no broadcast joins,
ANSI off, no exchange or subquery reuse, key sides computed on their own, parquet-java's record filter, another
session time zone).

Usage (from the repository root, after ``source dev/common.sh; ensure_package``):
  nice -n 10 .venv/bin/python benchmarks/spark_diff.py --queries 100000 --seed 47 \\
      --json benchmarks/results/spark-diff.json
  # one round again, as a failure prints it:
  .venv/bin/python benchmarks/spark_diff.py --seed 47 --start-round 12 --rounds 1
Exits 1 on any mismatch.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import decimal
import glob
import json
import math
import os
import random
import re
import shutil
import signal
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

import sparkbloom

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import foreign_writers as fw  # noqa: E402

EPOCH = datetime.date(1970, 1, 1)
decimal.getcontext().prec = 50  # decimal(30,5): the default context (28 digits) rounds them, pyarrow refuses them
UTC = datetime.timezone.utc
TYPES = ["tinyint", "smallint", "int", "bigint", "float", "double", "decimal(5,2)", "decimal(15,3)",
         "decimal(30,5)", "date", "timestamp", "timestamp_ntz", "string", "binary"]
ARROW: dict[str, Any] = {
    "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64(), "float": pa.float32(),
    "double": pa.float64(), "decimal(5,2)": pa.decimal128(5, 2), "decimal(15,3)": pa.decimal128(15, 3),
    "decimal(30,5)": pa.decimal128(30, 5), "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"), "string": pa.string(), "binary": pa.binary(), "boolean": pa.bool_()}
FORMATS = ["spark", "pyarrow", "duckdb", "datafusion", "delta", "iceberg"]
# The forms that need a jar in target/lakehouse/spark-<line> (tests/python/test_spark_diff.py reads this too)
LAKEHOUSE_JARS = {"delta": "delta-spark", "iceberg": "iceberg-spark-runtime"}
ON = {"spark.sparkbloom.enabled": "true"}
V1_SOURCES = "avro,csv,json,kafka,orc,parquet,text"
V2_SOURCES = "avro,csv,json,kafka,orc,text"
SUFFIXES = ["", "é", "日本語", "😀", " ", "ß"]
F32_MAX = struct.unpack("f", struct.pack("f", 3.4028234663852886e38))[0]
F32_MIN_POS = struct.unpack("f", struct.pack("f", 1.401298464324817e-45))[0]


# ---------------------------------------------------------------- values

def f32(v: float) -> float:
    return float(struct.unpack("f", struct.pack("f", v))[0])


def from_key(k: int, t: str) -> Any:
    """A value derived from a clustering key: equal keys give equal values, distinct keys (mostly) distinct."""
    if t == "tinyint":
        return k % 256 - 128
    if t == "smallint":
        return k % 65536 - 32768
    if t == "int":
        return (k * 7919) % 2147483647 - 1073741823
    if t == "bigint":
        return k * 1_000_000_007 - (1 << 40)
    if t == "float":
        return f32(k * 0.5 - 1000.0)
    if t == "double":
        return k * 0.1 - 500.0
    if t == "decimal(5,2)":
        return decimal.Decimal(k % 99999 - 49999).scaleb(-2)
    if t == "decimal(15,3)":
        return decimal.Decimal(k * 1000003 + 123).scaleb(-3)
    if t == "decimal(30,5)":
        return decimal.Decimal(f"{k * 100000000000000012345}E-5")  # exact: scaleb would round to 28 digits
    if t == "date":
        return EPOCH + datetime.timedelta(days=k % 60000 - 20000)
    if t == "timestamp":
        return datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(seconds=k * 3601 - 100000,
                                                                              microseconds=k % 1000)
    if t == "timestamp_ntz":
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=k * 3599, microseconds=k % 997)
    if t == "string":
        return f"k{k}{SUFFIXES[k % len(SUFFIXES)]}"
    if t == "binary":
        return k.to_bytes(max(1, (k.bit_length() + 8) // 8), "big", signed=True)
    if t == "boolean":
        return k % 3 == 0
    raise KeyError(t)


def specials(t: str) -> list[Any]:
    if t == "tinyint":
        return [-128, 127, 0, -1]
    if t == "smallint":
        return [-32768, 32767, 0, -1]
    if t == "int":
        return [-2147483648, 2147483647, 0, -1]
    if t == "bigint":
        return [-(1 << 63), (1 << 63) - 1, 0, -1]
    if t in ("float", "double"):
        mx, mn = (F32_MAX, F32_MIN_POS) if t == "float" else (sys.float_info.max, 5e-324)
        return [math.nan, -0.0, 0.0, mx, -mx, mn, math.inf, -math.inf]
    if t.startswith("decimal"):
        p, s = (int(x) for x in t[8:-1].split(","))
        big = decimal.Decimal(f"{'9' * p}E-{s}")  # from text: exact at any precision (scaleb rounds to 28 digits)
        return [big, -big, decimal.Decimal(f"0E-{s}"), decimal.Decimal(f"1E-{s}")]
    if t == "date":
        return [EPOCH, EPOCH - datetime.timedelta(days=1), datetime.date(2100, 2, 28), datetime.date(1900, 3, 1)]
    if t == "timestamp":
        return [datetime.datetime(1970, 1, 1, tzinfo=UTC), datetime.datetime(1969, 12, 31, 23, 59, 59, 999999,
                                                                             tzinfo=UTC),
                datetime.datetime(2200, 1, 1, tzinfo=UTC)]
    if t == "timestamp_ntz":
        return [datetime.datetime(1970, 1, 1), datetime.datetime(1900, 1, 2, 0, 0, 0, 1)]
    if t == "string":
        return ["", "日本語", "😀", "ß", "a" * 300, "it's"]
    if t == "binary":
        return [b"", b"\x00", b"\xff\xff\xff"]
    if t == "boolean":
        return [True, False]
    raise KeyError(t)


def sql_lit(t: str, v: Any, rng: random.Random) -> str:
    """`v` as a Spark SQL literal of type `t`, in one of several spellings (some make Spark cast the column)."""
    if v is None:
        return "NULL"
    if t in ("tinyint", "smallint", "int", "bigint"):
        suffix = {"tinyint": "Y", "smallint": "S", "int": "", "bigint": "L"}[t]
        r = rng.random()
        if r < 0.5 and (t != "bigint" or -(1 << 63) < v):
            return f"{v}{suffix}" if v >= 0 or t == "int" else f"CAST({v} AS {t.upper()})"
        if r < 0.8:
            return f"CAST({v} AS {t.upper()})"
        return str(v) if -(1 << 63) < v else f"CAST('{v}' AS BIGINT)"  # a plain integer literal: Spark casts
    if t in ("float", "double"):
        s = "NaN" if math.isnan(v) else ("Infinity" if v == math.inf else ("-Infinity" if v == -math.inf else repr(v)))
        if t == "double" and math.isfinite(v) and rng.random() < 0.5:
            return f"{s}D"
        return f"CAST('{s}' AS {t.upper()})"
    if t.startswith("decimal"):
        if rng.random() < 0.3:
            return f"{v}BD"  # a decimal literal of its own precision: Spark widens the column
        return f"CAST('{v}' AS {t.upper()})"
    if t == "date":
        return f"DATE '{v.isoformat()}'"
    if t == "timestamp":
        return f"TIMESTAMP '{v.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}'"
    if t == "timestamp_ntz":
        return f"TIMESTAMP_NTZ '{v.strftime('%Y-%m-%d %H:%M:%S.%f')}'"
    if t == "string":
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if t == "binary":
        return f"X'{v.hex()}'"
    if t == "boolean":
        return "true" if v else "false"
    raise KeyError(t)


# ---------------------------------------------------------------- tables

@dataclass
class Table:
    fmt: str
    cols: dict[str, str]  # name -> type, id first
    ref: str = ""  # how SQL names it (a view for Parquet)
    path: str = ""
    twin: str = ""  # Delta / Iceberg: the unindexed copy DML is compared with
    indexed: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    seen: dict[str, list[Any]] = field(default_factory=dict)  # values written per column (present candidates)


def random_schema(rng: random.Random, fmt: str) -> dict[str, str]:
    pool = [t for t in TYPES if not (fmt == "iceberg" and t in ("tinyint", "smallint"))]
    chosen = rng.sample(pool, rng.randint(4, min(9, len(pool))))
    if rng.random() < 0.3:
        chosen.append(rng.choice(chosen))  # two columns of one type
    if rng.random() < 0.3:
        chosen.append("boolean")
    cols = {"id": "bigint"}
    for i, t in enumerate(chosen):
        cols[f"c{i}_{t.split('(')[0]}"] = t
    return cols


def random_rows(rng: random.Random, table: Table, n: int, first_id: int, key_lo: int) -> pa.Table:
    """n rows; row i holds key key_lo + i // 8 (clustered), 10% of the rows a random key of the range."""
    data: dict[str, list[Any]] = {c: [] for c in table.cols}
    span = max(1, n // 8)
    for i in range(n):
        data["id"].append(first_id + i)
        base = key_lo + i // 8 if rng.random() >= 0.1 else key_lo + rng.randrange(span)
        for c, t in list(table.cols.items())[1:]:
            r = rng.random()
            if r < 0.08:
                v = None
            elif r < 0.14:
                v = rng.choice(specials(t))
            else:
                v = from_key(base + rng.randrange(2), t)
            data[c].append(v)
    for c, vs in data.items():
        seen = table.seen.setdefault(c, [])
        seen.extend(rng.sample([v for v in vs if v is not None], min(40, n // 50 + 1)))
    return pa.table({c: pa.array(vs, ARROW[table.cols[c]]) for c, vs in data.items()})


class Writer:
    """Writes Arrow tables into a round's table, by the round's writer or another."""

    def __init__(self, spark: SparkSession, work: str, rng: random.Random) -> None:
        self.spark, self.work, self.rng, self.n = spark, work, rng, 0

    def staged(self, t: pa.Table) -> DataFrame:
        """`t` as a Spark DataFrame (through a pyarrow file: the Arrow types map to Spark's exactly)."""
        self.n += 1
        p = os.path.join(self.work, f"stage-{self.n}.parquet")
        pq.write_table(t, p)
        return self.spark.read.parquet(p)

    def parquet_files(self, writer: str, t: pa.Table, dest: str, files: int, rg: int) -> None:
        """`t` cut into `files` files written by `writer` into directory `dest`, under new names."""
        self.n += 1
        if writer == "spark":
            df = self.staged(t).repartition(files) if files > 1 else self.staged(t).coalesce(1)
            w = df.sortWithinPartitions("id").write.mode("append").option("parquet.block.size", 48 * 1024)
            if self.rng.random() < 0.5:  # parquet-java's own bloom filters (on chunks it does not dictionary-encode)
                w = w.option("parquet.bloom.filter.enabled", "true").option(
                    "parquet.enable.dictionary", str(self.rng.random() < 0.5).lower())
            w.parquet(dest)
            return
        tmp = os.path.join(self.work, f"w{self.n}")
        per = (t.num_rows + files - 1) // files
        fw.write(writer, [t.slice(i * per, per) for i in range(files)], tmp, rg)
        os.makedirs(dest, exist_ok=True)
        for f in sorted(os.listdir(tmp)):
            shutil.move(os.path.join(tmp, f), os.path.join(dest, f"{writer}-{self.n}-{f}"))
        shutil.rmtree(tmp, ignore_errors=True)


def conf(spark: SparkSession, settings: dict[str, str]) -> None:
    for k, v in settings.items():
        spark.conf.set(k, v)


class Round:
    """One seeded table with its history of writes, its key table K, and its queries."""

    def __init__(self, spark: SparkSession, seed: int, number: int, base: str, forms: list[str]) -> None:
        self.spark, self.number = spark, number
        self.seed = (seed * 1_000_003 + number) & 0xFFFFFFFF
        self.rng = random.Random(self.seed)
        self.work = os.path.join(base, f"r{number}")
        os.makedirs(self.work, exist_ok=True)
        fmt = forms[number % len(forms)]  # every form in turn
        self.t = Table(fmt, random_schema(self.rng, fmt))
        self.w = Writer(spark, self.work, self.rng)
        self.rows_per_file = self.rng.choice([1024, 2048, 3072])
        self.next_id = 0
        self.key_hi = 0

    def batch_rows(self, n: int) -> pa.Table:
        # New rows overlap the keys already written half the time (duplicates across files), else extend them.
        lo = self.rng.randrange(max(1, self.key_hi)) if self.key_hi and self.rng.random() < 0.5 else self.key_hi
        t = random_rows(self.rng, self.t, n, self.next_id, lo)
        self.next_id += n
        self.key_hi = max(self.key_hi, lo + n // 8 + 2)
        return t

    # -- building
    def build(self) -> None:
        t, rng = self.t, self.rng
        conf(self.spark, ON)
        files = rng.randint(3, 5)
        rows = self.batch_rows(files * self.rows_per_file)
        if t.fmt in ("delta", "iceberg"):
            self._create_lake(rows)
        else:
            t.path, t.ref = os.path.join(self.work, "t"), f"t{self.number}"
            self.w.parquet_files(t.fmt, rows, t.path, files, rng.choice([1024, 2048]))
            t.history.append(f"write {t.fmt} {files} files")
        for _ in range(rng.randint(0, 2)):
            self._write(before_index=True)
        self._index()
        for _ in range(rng.randint(0, 3)):
            self._write(before_index=False)
        self._key_table()

    def split_bytes(self) -> int:
        """``spark.sql.files.maxPartitionBytes`` for a batch that splits files: a quarter of the table's largest data
        file, at least 64 KiB, so that a file spreads over about four tasks whatever its size. (A Spark writer's own
        bloom filters make some files of 2,048 rows 14.7 MB: 64 KiB cut each into ~230 splits, most after the last
        row group, so a batch of 25 scans of 5 files ran ~29,000 tasks a side.) Iceberg splits by its own
        ``read.split.target-size``: its tables get 64 KiB, which it ignores."""
        sizes = [0]
        if self.t.fmt != "iceberg":
            for d, dirs, files in os.walk(self.t.path):
                dirs[:] = [x for x in dirs if not x.startswith(("_", "."))]  # _delta_log, _sparkbloom
                sizes += [os.path.getsize(os.path.join(d, f)) for f in files if f.endswith(".parquet")]
        return max(65536, max(sizes) // 4)

    def _create_lake(self, rows: pa.Table) -> None:
        t, rng = self.t, self.rng
        df = self.w.staged(rows).repartition(rng.randint(3, 6))
        for name, on in (("t", True), ("twin", False)):
            conf(self.spark, {"spark.sparkbloom.enabled": str(on).lower()})
            if t.fmt == "delta":
                path = os.path.join(self.work, name)
                w = df.write.format("delta")
                if rng.random() < 0.5 or name == "twin":
                    w = w.option("delta.enableDeletionVectors", "true")
                w.save(path)
                ref = f"delta.`{path}`"
            else:
                ref = f"ice.db.r{self.number}_{name}"
                mode = rng.choice(["copy-on-write", "merge-on-read"]) if name == "t" else "merge-on-read"
                (df.writeTo(ref).using("iceberg").tableProperty("format-version", "2")
                 .tableProperty("write.delete.mode", mode).tableProperty("write.update.mode", mode)
                 .tableProperty("write.merge.mode", mode).tableProperty("write.distribution-mode", "none")
                 .tableProperty("write.parquet.row-group-size-bytes", str(48 * 1024)).create())
                path = ref
            if name == "t":
                t.ref, t.path = ref, path
            else:
                t.twin = ref
        conf(self.spark, ON)
        t.history.append(f"create {t.fmt}")

    def _index(self) -> None:
        t, rng = self.t, self.rng
        indexable = [c for c, ty in t.cols.items() if ty != "boolean"]
        cols = rng.sample(indexable, rng.randint(1, len(indexable)))
        target = f"parquet.`{t.path}`" if t.fmt not in ("delta", "iceberg") else t.ref
        opts = rng.choice(["", " OPTIONS (fpp = 0.05)", " OPTIONS (false_reads_per_key = 0.01)"])
        self.spark.sql(f"CREATE BLOOM INDEX ix1 ON {target} ({', '.join(cols)}){opts}")
        t.indexed = list(cols)
        t.history.append(f"index ix1 ({', '.join(cols)}){opts}")
        rest = [c for c in indexable if c not in cols]
        if rest and rng.random() < 0.3:
            more = rng.sample(rest, rng.randint(1, len(rest)))
            self.spark.sql(f"CREATE BLOOM INDEX ix2 ON {target} ({', '.join(more)})")
            t.indexed += more
            t.history.append(f"index ix2 ({', '.join(more)})")

    def _write(self, before_index: bool) -> None:
        t, rng = self.t, self.rng
        n = rng.choice([512, 1024, 2048, 4096])
        if t.fmt in ("delta", "iceberg"):
            kind = rng.choice(["append", "append", "delete", "update", "overwrite"])
            rows = self.batch_rows(n) if kind in ("append", "overwrite") else None
            parts = rng.randint(1, 3)
            where = Queries(self, rng).condition(0)
            c, ty = rng.choice([(c, ty) for c, ty in t.cols.items() if c != "id"])
            v = sql_lit(ty, rng.choice(specials(ty) + [None]), rng)
            for ref, on in ((t.ref, True), (t.twin, False)):  # the same statement on both copies
                conf(self.spark, {"spark.sparkbloom.enabled": str(on).lower()})
                if rows is not None:
                    df = self.w.staged(rows).repartition(parts)
                    if t.fmt == "delta":
                        df.write.format("delta").mode(kind).save(ref[len("delta.`"):-1])
                    elif kind == "append":
                        df.writeTo(ref).append()
                    else:
                        df.writeTo(ref).overwrite(sparkbloom_true())
                elif kind == "delete":
                    self.spark.sql(f"DELETE FROM {ref} WHERE {where}")
                else:
                    self.spark.sql(f"UPDATE {ref} SET {c} = {v} WHERE {where}")
            conf(self.spark, ON)
            t.history.append(f"{'pre' if before_index else 'post'}-index {kind}")
            return
        kind = rng.choice(["append-spark", "append-foreign", "replace-file", "delete-file"]
                          + (["overwrite-spark"] if before_index else []))
        if kind == "append-spark" or kind == "overwrite-spark":
            df = self.w.staged(self.batch_rows(n)).repartition(rng.randint(1, 3))
            mode = "append" if kind == "append-spark" else "overwrite"
            df.write.mode(mode).option("parquet.block.size", 48 * 1024).parquet(t.path)
        elif kind == "append-foreign":
            self.w.parquet_files(rng.choice(["pyarrow", "duckdb", "datafusion"]), self.batch_rows(n), t.path,
                                 rng.randint(1, 2), 1024)
        else:
            files = sorted(f for f in os.listdir(t.path) if f.endswith(".parquet"))
            if len(files) < 2:
                return
            victim = os.path.join(t.path, rng.choice(files))
            if kind == "delete-file":
                os.remove(victim)
            else:  # the same name, other rows: the index must see the file as changed
                tmp = os.path.join(self.work, f"replace-{len(t.history)}")
                self.w.parquet_files(rng.choice(["pyarrow", "duckdb"]), self.batch_rows(n), tmp, 1, 1024)
                [new] = os.listdir(tmp)
                os.replace(os.path.join(tmp, new), victim)
            crc = os.path.join(t.path, f".{os.path.basename(victim)}.crc")  # Hadoop's checksum of the old file
            if os.path.exists(crc):
                os.remove(crc)
        t.history.append(f"{'pre' if before_index else 'post'}-index {kind}")

    def _key_table(self) -> None:
        """K: groups kg 0..G-1 of 1-30 rows; column k_<c> holds present, absent, null and edge values of c."""
        t, rng = self.t, self.rng
        data: dict[str, list[Any]] = {"kg": []}
        groups = 40
        for c in t.cols:
            data["k_" + c] = []
        for g in range(groups):
            for _ in range(rng.choice([1, 1, 2, 3, 5, 8, 30])):
                data["kg"].append(g)
                for c, ty in t.cols.items():
                    data["k_" + c].append(self.value(c, ty, rng))
        arrays = {"kg": pa.array(data["kg"], pa.int32())}
        arrays.update({"k_" + c: pa.array(data["k_" + c], ARROW[ty]) for c, ty in t.cols.items()})
        kdir = os.path.join(self.work, "k")
        os.makedirs(kdir)
        pq.write_table(pa.table(arrays), os.path.join(kdir, "k.parquet"))
        self.spark.read.parquet(kdir).createOrReplaceTempView(f"k{self.number}")
        self.groups = groups

    def value(self, c: str, ty: str, rng: random.Random) -> Any:
        r = rng.random()
        seen = self.t.seen.get(c) or [None]
        if r < 0.55:
            return rng.choice(seen)
        if r < 0.85:
            return from_key(self.key_hi + rng.randrange(1, 10**6), ty) if c != "id" else self.next_id + rng.randrange(9)
        if r < 0.93:
            return rng.choice(specials(ty))
        return None

    def views(self, v2: bool) -> None:
        """Parquet: the table as a view, read through the V1 or the V2 source (made fresh, after the writes)."""
        if self.t.fmt in ("delta", "iceberg"):
            return
        self.spark.conf.set("spark.sql.sources.useV1SourceList", V2_SOURCES if v2 else V1_SOURCES)
        self.spark.read.parquet(self.t.path).createOrReplaceTempView(f"t{self.number}")
        self.spark.conf.set("spark.sql.sources.useV1SourceList", V1_SOURCES)
        self.t.ref = f"t{self.number}"

    def describe(self) -> str:
        return (f"round {self.number} (round seed {self.seed}) {self.t.fmt}, schema "
                f"{', '.join(f'{c} {ty}' for c, ty in self.t.cols.items())}; {'; '.join(self.t.history)}")


def sparkbloom_true() -> Any:
    from pyspark.sql.functions import lit

    return lit(True)


# ---------------------------------------------------------------- queries

class Queries:
    """Random queries over a round's table T and key table K; each returns the columns of T (and kg)."""

    def __init__(self, rnd: Round, rng: random.Random) -> None:
        self.r, self.rng, self.t = rnd, rng, rnd.t

    def col(self) -> tuple[str, str]:
        cols = list(self.t.cols.items())
        indexed = [(c, ty) for c, ty in cols if c in self.t.indexed]
        if indexed and self.rng.random() < 0.75:
            return self.rng.choice(indexed)
        return self.rng.choice(cols)

    def lit(self, c: str, ty: str) -> str:
        return sql_lit(ty, self.r.value(c, ty, self.rng) if self.rng.random() < 0.95 else None, self.rng)

    def atom(self, p: str) -> str:
        rng = self.rng
        c, ty = self.col()
        cc = f"{p}{c}"
        r = rng.random()
        if r < 0.30:
            return f"{cc} = {self.lit(c, ty)}" if rng.random() < 0.8 else f"{self.lit(c, ty)} = {cc}"
        if r < 0.38:
            return f"{cc} <=> {self.lit(c, ty)}"
        if r < 0.55:
            n = rng.randint(2, 10) if rng.random() < 0.6 else rng.randint(11, 40)
            return f"{cc} IN ({', '.join(self.lit(c, ty) for _ in range(n))})"
        if r < 0.61:
            return f"{cc} IS NULL"
        if r < 0.64:
            return f"{cc} IS NOT NULL"
        if r < 0.66:
            return f"{cc} = NULL"
        if r < 0.76 and ty != "boolean":
            op = rng.choice([">", ">=", "<", "<="])
            return f"{cc} {op} {sql_lit(ty, self.r.value(c, ty, rng), rng)}"
        if r < 0.80:
            return f"{cc} BETWEEN {self.lit(c, ty)} AND {self.lit(c, ty)}"
        if r < 0.86:
            return f"NOT ({cc} = {self.lit(c, ty)})"
        if r < 0.90:
            return f"{cc} NOT IN ({', '.join(self.lit(c, ty) for _ in range(rng.randint(1, 5)))})"
        return f"{cc} = {self.lit(c, ty)}"

    def condition(self, depth: int, p: str = "") -> str:
        if depth >= 2 or self.rng.random() < 0.5:
            return self.atom(p)
        op = " AND " if self.rng.random() < 0.5 else " OR "
        return "(" + op.join(self.condition(depth + 1, p) for _ in range(self.rng.randint(2, 3))) + ")"

    def literal_query(self) -> str:
        return f"SELECT * FROM {self.t.ref} WHERE {self.condition(0)}"

    def key_set_query(self) -> str:
        rng, t, k = self.rng, self.t.ref, f"k{self.r.number}"
        c, _ = self.col()
        g = rng.randrange(self.r.groups)
        grp = f"k.kg = {g}" if rng.random() < 0.8 else f"k.kg BETWEEN {g} AND {g + rng.randint(1, 5)}"
        extra = f" AND {self.condition(1, 't.')}" if rng.random() < 0.3 else ""
        r = rng.random()
        if r < 0.25:
            on = f"t.{c} = k.k_{c}"
            if rng.random() < 0.2:
                c2, _ = self.col()
                on += f" AND t.{c2} = k.k_{c2}"
            return f"SELECT t.*, k.kg FROM {t} t JOIN {k} k ON {on} WHERE {grp}{extra}"
        if r < 0.32:
            return f"SELECT t.*, k.kg FROM {t} t JOIN {k} k ON t.{c} <=> k.k_{c} WHERE {grp}{extra}"
        if r < 0.37:
            return f"SELECT t.*, k.kg FROM {k} k LEFT JOIN {t} t ON t.{c} = k.k_{c} WHERE {grp}{extra}"
        if r < 0.41:  # T preserved: must not be pruned
            return f"SELECT t.*, k.kg FROM {t} t LEFT JOIN {k} k ON t.{c} = k.k_{c} AND {grp} WHERE true{extra}"
        if r < 0.62:
            neg = "OR" if rng.random() < 0.15 else "AND"
            cond = f"t.{c} IN (SELECT k.k_{c} FROM {k} k WHERE {grp})"
            return f"SELECT t.* FROM {t} t WHERE {cond}{extra.replace(' AND ', f' {neg} ', 1) if extra else ''}"
        if r < 0.80:
            return f"SELECT t.* FROM {t} t WHERE EXISTS (SELECT 1 FROM {k} k WHERE {grp} AND k.k_{c} = t.{c}){extra}"
        if r < 0.86:
            return f"SELECT t.* FROM {t} t WHERE t.{c} NOT IN (SELECT k.k_{c} FROM {k} k WHERE {grp}){extra}"
        if r < 0.92:
            return (f"SELECT t.* FROM {t} t WHERE NOT EXISTS (SELECT 1 FROM {k} k WHERE {grp} AND k.k_{c} = t.{c})"
                    f"{extra}")
        lo = rng.randrange(max(1, self.r.next_id))
        return (f"SELECT t.* FROM {t} t WHERE t.{c} IN (SELECT s.{c} FROM {t} s WHERE s.id BETWEEN {lo} AND "
                f"{lo + rng.randint(0, 40)}){extra}")

    def query(self) -> tuple[str, str]:
        if self.rng.random() < 0.6:
            return "literal", self.literal_query()
        return "key_set", self.key_set_query()


# ---------------------------------------------------------------- running

@dataclass
class Totals:
    queries: int = 0
    literal: int = 0
    key_set: int = 0
    v1: int = 0
    v2: int = 0
    row_by_row: int = 0
    settings: dict[str, int] = field(default_factory=dict)
    both_failed: int = 0
    wrong: int = 0
    spark_alone_wrong: int = 0
    spark_alone_failed: int = 0
    batches: int = 0
    batches_rerun: int = 0
    dml: int = 0
    dml_wrong: int = 0
    dml_both_failed: int = 0
    rounds: int = 0
    on_s: float = 0.0
    off_s: float = 0.0
    by_format: dict[str, int] = field(default_factory=dict)
    scans_pruned: int = 0
    files_total: int = 0
    files_skipped: int = 0
    row_groups_total: int = 0
    row_groups_skipped: int = 0
    native_row_groups_checked: int = 0
    native_row_groups_skipped: int = 0
    files_not_covered: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    spark_alone: list[dict[str, Any]] = field(default_factory=list)


def wrapped(qid: int, sql: str) -> str:
    return f"SELECT {qid} AS qid, xxhash64(*) AS h FROM ({sql})"


def batch_sql(queries: list[tuple[int, str]]) -> str:
    union = "\nUNION ALL\n".join(wrapped(i, q) for i, q in queries)
    return f"SELECT qid, count(*) AS n, sum(CAST(h AS DECIMAL(38,0))) AS s FROM ({union}) GROUP BY qid"


def answer(spark: SparkSession, sql: str, on: bool,
           confs: dict[str, str] | None = None) -> tuple[dict[int, tuple[int, Any]] | str, DataFrame | None]:
    """The batch's per-query (count, hash sum), with sparkbloom on or off, and ``confs`` set for this query only
    (each put back as it was after it)."""
    spark.conf.set("spark.sparkbloom.enabled", str(on).lower())
    with settings(spark, confs or {}):
        try:
            df = spark.sql(sql)
            return {int(r[0]): (int(r[1]), r[2]) for r in df.collect()}, df
        except Exception as e:  # a failing query: compared by its error class with the other side's
            return error_text(e), None


@contextlib.contextmanager
def settings(spark: SparkSession, confs: dict[str, str]) -> Iterator[None]:
    """``confs`` set in the session for the block, each put back as it was after it."""
    before = {k: spark.conf.get(k, None) for k in confs}
    for k, v in confs.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in before.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def record_skipping(tot: Totals, df: DataFrame) -> None:
    for s in sparkbloom.skipping(df):
        if s.index:
            tot.scans_pruned += 1
            tot.files_total += s.files_total
            tot.files_skipped += s.files_skipped
            tot.row_groups_total += s.row_groups_total
            tot.row_groups_skipped += s.row_groups_skipped
            tot.files_not_covered += s.files_not_covered
        tot.native_row_groups_checked += s.native_row_groups_checked
        tot.native_row_groups_skipped += s.native_row_groups_skipped


def error_text(e: Exception) -> str:
    """A failure's first line: for a call into the JVM, the Java exception's (its class and message), not Py4J's
    wrapper, whose "An error occurred while calling o1645.collectToPython" names neither and differs by side."""
    java = getattr(e, "java_exception", None)
    text = (str(java.toString()) if java is not None else str(e)).strip()
    return "error: " + (text.splitlines()[0] if text else type(e).__name__)[:300]


def same_error(a: str, b: str) -> bool:
    return a.split("]")[0] == b.split("]")[0]


def run_batch(spark: SparkSession, rnd: Round, queries: list[tuple[int, str, str]], mode: str, tot: Totals,
              log: Callable[[str], None], confs: dict[str, str] | None = None) -> None:
    """One batch, sparkbloom on then off, both with ``confs`` (a batch evaluated row by row sets code generation
    off); a differing batch is rerun query by query, with the referee for each differing query."""
    confs = confs or {}
    sql = batch_sql([(i, q) for i, _, q in queries])
    t0 = time.perf_counter()
    on, df = answer(spark, sql, True, confs)
    t1 = time.perf_counter()
    off, _ = answer(spark, sql, False, confs)
    tot.on_s += t1 - t0
    tot.off_s += time.perf_counter() - t1
    tot.batches += 1
    if df is not None:
        record_skipping(tot, df)
    if on == off and not isinstance(on, str):
        return
    tot.batches_rerun += 1
    for i, kind, q in queries:  # name the differing queries
        single = batch_sql([(i, q)])
        one_on, _ = answer(spark, single, True, confs)
        one_off, _ = answer(spark, single, False, confs)
        if isinstance(one_on, str) and isinstance(one_off, str) and same_error(one_on, one_off):
            tot.both_failed += 1
            continue
        if one_on != one_off:
            # The referee: the same query with sparkbloom off and no Parquet filter pushdown at all. Where sparkbloom
            # on agrees with it and Spark alone does not, Spark's own row-group filters lost rows that sparkbloom's
            # guards keep (floating zeros in a foreign bloom filter, NaN statistics): recorded, not a sparkbloom error.
            ref, _ = answer(spark, single, False, {**confs, "spark.sql.parquet.filterPushdown": "false"})
            f = {"seed": rnd.seed, "round": rnd.number, "query": i, "kind": kind, "mode": mode, "confs": confs, "sql": q,
                 "on": str(one_on), "off": str(one_off), "unfiltered": str(ref), "table": rnd.describe()}
            # and, to name the level that lost them, Spark alone with one of parquet-java's row-group filters off
            for level in ("dictionary", "bloom", "statistics"):
                f[f"off_without_{level}_filter"] = str(answer(spark, single, False,
                                                              {**confs, f"parquet.filter.{level}.enabled": "false"})[0])
            if one_on == ref and not isinstance(ref, str):
                tot.spark_alone_wrong += 1
                tot.spark_alone.append(f)
                log(f"SPARK ALONE WRONG (sparkbloom on matches the unfiltered read): {json.dumps(f, ensure_ascii=False)}")
                continue
            if not isinstance(one_on, str) and isinstance(one_off, str) and isinstance(ref, str):
                # Spark without sparkbloom failed, unfiltered too, and sparkbloom on answered (an index that rules out
                # every file leaves no scan for the failing part of Spark's planning). Its answer is checked against
                # the query over a copy of the table held in memory (no source, no pushdown, sparkbloom off).
                f["copy"] = str(copy_answer(spark, rnd, single, confs))
                if f["copy"] == str(one_on):
                    tot.spark_alone_failed += 1
                    tot.spark_alone.append(f)
                    log(f"SPARK ALONE FAILED (sparkbloom on matches a copy of the table): "
                        f"{json.dumps(f, ensure_ascii=False)}")
                    continue
            tot.wrong += 1
            tot.failures.append(f)
            log(f"WRONG ANSWER: {json.dumps(f, ensure_ascii=False)}")


def copy_answer(spark: SparkSession, rnd: Round, sql: str, confs: dict[str, str]) -> dict[int, tuple[int, Any]] | str:
    """The single-query batch ``sql`` with sparkbloom off over a copy of the round's table cached in memory (the
    table's name in the SQL swapped for a view of the copy): the answer where Spark fails on the table itself."""
    spark.conf.set("spark.sparkbloom.enabled", "false")
    copy = spark.sql(f"SELECT * FROM {rnd.t.ref}").cache()
    try:
        copy.count()
        view = f"copy_of_{rnd.number}"
        copy.createOrReplaceTempView(view)
        # `answer` sets `confs` for the query
        return answer(spark, re.sub(rf"(?<![\w.`]){re.escape(rnd.t.ref)}(?![\w`])", view, sql), False, confs)[0]
    except Exception as e:
        return error_text(e)
    finally:
        copy.unpersist()


# Spark settings a batch may run under (on both sides): each changes how Spark plans or reads, not the answer.
SETTINGS: list[tuple[str, str]] = [
    ("spark.sql.parquet.enableVectorizedReader", "false"),  # parquet-java's row reader, not Spark's vectorized one
    ("spark.sql.parquet.filterPushdown", "false"),  # no Parquet row-group filters of Spark's own
    # files split (row groups spread over several tasks): 64 KiB, or the round's size (batch_settings' `split`)
    ("spark.sql.files.maxPartitionBytes", "65536"),
    ("spark.sql.adaptive.enabled", "false"),
    ("spark.sql.autoBroadcastJoinThreshold", "-1"),  # shuffle joins: run-time keys from a subquery of their own
    ("spark.sql.ansi.enabled", "false"),  # other casts and their failures
    ("spark.sql.exchange.reuse", "false"),  # a run-time filter cannot read the join's own broadcast
    ("spark.sql.execution.reuseSubquery", "false"),
    ("spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly", "false"),  # a key side computed on its own
    ("spark.sql.parquet.recordLevelFilter.enabled", "true"),  # parquet-java filters rows too (with its row reader)
    ("spark.sql.session.timeZone", "America/Los_Angeles"),  # timestamp literals read in another zone
    ("spark.sql.session.timeZone", "Asia/Kolkata"),
]


def batch_settings(seed: int, batch: int, split: int = 65536) -> dict[str, str]:
    """The settings batch number ``batch`` runs under. Every fourth batch runs row by row (whole-stage code
    generation off, as Spark does for a stage wider than spark.sql.codegen.maxFields or whose code does not
    compile: filters are then interpreted on the executors, and a run-time filter's keys must reach them); any batch
    may also get each of SETTINGS with probability 1/5 (one time zone at most)."""
    st = random.Random(seed * 7919 + batch)
    out = {"spark.sql.codegen.wholeStage": "false"} if batch % 4 == 1 else {}
    for k, v in SETTINGS:
        if st.random() < 0.2 and k not in out:
            out[k] = str(split) if k == "spark.sql.files.maxPartitionBytes" else v
    return out


def table_digest(spark: SparkSession, ref: str) -> Any:
    spark.conf.set("spark.sparkbloom.enabled", "false")
    return tuple(spark.sql(f"SELECT count(*), sum(CAST(xxhash64(*) AS DECIMAL(38,0))) FROM {ref}").first() or ())


def dml(spark: SparkSession, rnd: Round, n: int, tot: Totals, log: Callable[[str], None]) -> None:
    """n random statements on the indexed table (sparkbloom on) and its unindexed twin (off), compared after each."""
    t = rnd.t
    for j in range(n):
        st = random.Random(rnd.seed * 31 + j)
        q = Queries(rnd, st)
        c, ty = q.col()
        others = [x for x in t.cols if x not in ("id", c)] or [c]
        c2 = st.choice(others)
        ty2 = t.cols[c2]
        g = st.randrange(rnd.groups)
        k = f"k{rnd.number}"
        groups = f"kg BETWEEN {g} AND {g + st.randint(0, 3)}"
        src = f"(SELECT k_{c}, min(k_{c2}) AS v FROM {k} WHERE {groups} GROUP BY k_{c})"
        r = st.random()
        if r < 0.25:
            stmt = f"MERGE INTO {{T}} t USING {src} s ON t.{c} = s.k_{c} WHEN MATCHED THEN UPDATE SET t.{c2} = s.v"
        elif r < 0.45:
            stmt = f"MERGE INTO {{T}} t USING {src} s ON t.{c} = s.k_{c} WHEN MATCHED THEN DELETE"
        elif r < 0.6:
            stmt = (f"MERGE INTO {{T}} t USING {src} s ON t.{c} = s.k_{c} WHEN MATCHED THEN UPDATE SET t.{c2} = s.v "
                    f"WHEN NOT MATCHED THEN INSERT (id, {c}) VALUES (-1, s.k_{c})")
        elif r < 0.75:
            stmt = f"UPDATE {{T}} SET {c2} = {sql_lit(ty2, rnd.value(c2, ty2, st), st)} WHERE {q.condition(1)}"
        elif r < 0.85 or t.fmt == "delta":
            stmt = f"DELETE FROM {{T}} WHERE {q.condition(1)}"
        else:  # Iceberg only: Delta has no subqueries in DELETE
            stmt = f"DELETE FROM {{T}} WHERE {c} IN (SELECT k_{c} FROM {k} WHERE kg = {g})"
        res = []
        confs = batch_settings(rnd.seed ^ 0xD3, j)  # the statement runs under the same settings on both tables
        for ref, on in ((t.ref, True), (t.twin, False)):
            spark.conf.set("spark.sparkbloom.enabled", str(on).lower())
            with settings(spark, confs):
                try:
                    spark.sql(stmt.replace("{T}", ref)).collect()
                    res.append("ok")
                except Exception as e:
                    res.append(error_text(e))
        spark.conf.set("spark.sparkbloom.enabled", "true")
        tot.dml += 1
        for k in confs:
            tot.settings["dml:" + k] = tot.settings.get("dml:" + k, 0) + 1
        if res[0] != "ok" and res[1] != "ok" and same_error(res[0], res[1]):
            tot.dml_both_failed += 1
            continue
        a, b = table_digest(spark, t.ref), table_digest(spark, t.twin)
        spark.conf.set("spark.sparkbloom.enabled", "true")
        if res[0] != res[1] or a != b:
            tot.dml_wrong += 1
            f = {"seed": rnd.seed, "round": rnd.number, "dml": j, "sql": stmt, "confs": confs, "on": [res[0], a],
                 "off": [res[1], b],
                 "table": rnd.describe()}
            tot.failures.append(f)
            log(f"WRONG DML RESULT: {json.dumps(f, ensure_ascii=False, default=str)}")


def session(warehouse: str, formats: list[str], jvm_flags: str = "", driver_memory: str = "2g") -> SparkSession:
    """The run's session: Delta's and Iceberg's jars, extensions and catalogs only when `formats` has them (the
    running line's jars, target/lakehouse/spark-<line>: a line without a Delta or Iceberg release runs the Parquet
    forms alone)."""
    line = sparkbloom.session.line_for(*sparkbloom.session.spark_version())
    jars = sorted(glob.glob(os.path.join(ROOT, "target", "lakehouse", f"spark-{line}", "*.jar")))
    missing = [j for f, j in LAKEHOUSE_JARS.items() if f in formats and not any(j in x for x in jars)]
    if missing:
        sys.exit(f"need {' and '.join(missing)} jars for line {line} in target/lakehouse (dev/sbt lakehouseJars), "
                 f"or --formats without {', '.join(f for f, j in LAKEHOUSE_JARS.items() if j in missing)}: {jars}")
    conf = {
        "spark.ui.showConsoleProgress": "false", "spark.log.level": "ERROR", "spark.driver.memory": driver_memory,
        "spark.sql.session.timeZone": "UTC",
        # One task per scan of a small table, so a batch of hundreds of scans is not thousands of tasks.
        "spark.sql.files.openCostInBytes": "1024", "spark.sql.files.minPartitionNum": "1",
        # Run-time pruning on tables this small: on (the defaults decline tables under 1 MB).
        "spark.sparkbloom.runtimePruning.minTableSize": "0", "spark.sparkbloom.runtimePruning.maxKeptFraction": "1.0",
        "spark.sql.adaptive.enabled": "true"}
    # every jar of a chosen format: Delta's are delta-spark and delta-storage (its LogStore)
    lake_jars = [j for j in jars if any(os.path.basename(j).startswith(f + "-") for f in formats)]
    extensions = []
    if "delta" in formats:
        extensions.append("io.delta.sql.DeltaSparkSessionExtension")
        conf.update({"spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
                     "spark.databricks.delta.snapshotPartitions": "2"})
    if "iceberg" in formats:
        extensions.append("org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        conf.update({"spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
                     "spark.sql.catalog.ice.type": "hadoop",
                     "spark.sql.catalog.ice.warehouse": os.path.join(warehouse, "iceberg")})
    if jvm_flags:  # the driver's JVM (local mode: the executors' too); sparkbloom's own flags are added to them
        conf["spark.driver.extraJavaOptions"] = jvm_flags
    if lake_jars:
        conf["spark.jars"] = ",".join(lake_jars)
    if extensions:
        conf["spark.sql.extensions"] = ",".join(extensions)
    return sparkbloom.session.local_session("sparkbloom spark_diff", warehouse_dir=os.path.join(warehouse, "wh"),
                                            conf=conf)


def run(args: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    base = tempfile.mkdtemp(prefix="sparkbloom-diff-", dir=args.work)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    formats = args.formats.split(",")
    spark = session(base, formats, args.jvm_flags, args.driver_memory)
    if "iceberg" in formats:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    tot = Totals()
    setup_s = 0.0
    # Stopped, the totals of what ran are reported and written as after a full run, marked interrupted. By SIGTERM
    # (`kill`, or a timeout): no batch starts after it, the one under way ends. (An exception raised from the handler
    # inside a Py4J call became a failed query that the run went on from: seed 51 ignored two.) By Ctrl-C: the batch
    # under way is dropped.
    interrupted = False
    stopping: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        stopping.append(signum)

    main_thread = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, stop) if main_thread else None
    number = args.start_round
    try:
        def more() -> bool:
            late = bool(args.max_seconds) and time.perf_counter() - t0 > args.max_seconds
            return (tot.queries < args.queries and not late and not stopping
                    and (args.rounds is None or number < args.start_round + args.rounds))

        while more() and not interrupted:
            ts = time.perf_counter()
            rnd = Round(spark, args.seed, number, base, formats)
            try:
                rnd.build()
            except Exception as e:
                log(f"round {number}: setup failed, round skipped ({rnd.describe()}): {str(e).splitlines()[0][:300]}")
                tot.failures.append({"setup_failed": rnd.describe(), "error": str(e)[:500]})
                number += 1
                continue
            setup_s += time.perf_counter() - ts
            log(f"round {number} built in {time.perf_counter() - ts:.1f} s: {rnd.describe()}")
            n = min(args.per_round, args.queries - tot.queries)
            lake = rnd.t.fmt in ("delta", "iceberg")
            qrng = random.Random(rnd.seed ^ 0x5EED)
            qs = Queries(rnd, qrng)
            made = [(i, *qs.query()) for i in range(n)]
            made.sort(key=lambda q: q[1])  # batches of one kind: a mixed union plans more slowly
            split = rnd.split_bytes()
            for b in range(0, n, args.batch):
                if stopping or (args.max_seconds and time.perf_counter() - t0 > args.max_seconds):
                    n = b
                    break
                chunk = made[b:b + args.batch]
                v2 = not lake and (number + b // args.batch) % 2 == 1  # V1 and V2 in turn
                mode = rnd.t.fmt if lake else ("parquet-v2" if v2 else "parquet-v1")
                rnd.views(v2)
                confs = batch_settings(rnd.seed, tot.batches, split)
                try:
                    run_batch(spark, rnd, chunk, mode, tot, log, confs)
                except Exception:
                    if not stopping:
                        raise
                    n = b  # a signal to the whole process group (timeout(1)) ended the JVM too: the batch is dropped
                    break
                tot.row_by_row += len(chunk) if "spark.sql.codegen.wholeStage" in confs else 0
                for k in confs:
                    tot.settings[k] = tot.settings.get(k, 0) + len(chunk)
                tot.queries += len(chunk)
                for _, kind, _ in chunk:
                    setattr(tot, kind, getattr(tot, kind) + 1)
                if not lake:
                    setattr(tot, "v2" if v2 else "v1", getattr(tot, "v2" if v2 else "v1") + len(chunk))
            tot.by_format[rnd.t.fmt] = tot.by_format.get(rnd.t.fmt, 0) + n
            if lake and args.dml and not stopping:
                dml(spark, rnd, args.dml, tot, log)
            tot.rounds += 1
            elapsed = time.perf_counter() - t0
            log(f"round {number} {rnd.t.fmt:10s} {n} queries (round {time.perf_counter() - ts:.0f} s, "
                f"on {tot.on_s:.0f} s, "
                f"off {tot.off_s:.0f} s so far); total {tot.queries} ({tot.queries / elapsed:.1f}/s), "
                f"dml {tot.dml}, wrong {tot.wrong} + {tot.dml_wrong} dml, Spark alone wrong {tot.spark_alone_wrong}, "
                f"failed {tot.spark_alone_failed}, "
                f"both failed {tot.both_failed}, "
                f"files skipped {tot.files_skipped}/{tot.files_total}, row groups {tot.row_groups_skipped}/"
                f"{tot.row_groups_total}, native {tot.native_row_groups_skipped}/{tot.native_row_groups_checked}")
            if args.keep_rounds == 0:
                shutil.rmtree(rnd.work, ignore_errors=True)
            number += 1
        if stopping:
            interrupted = True
            log(f"stopped by signal {stopping[0]} in round {number}: reporting the {tot.queries} queries of the "
                "batches that ended")
    except KeyboardInterrupt:
        interrupted = True
        log(f"interrupted in round {number}: reporting the {tot.queries} queries of the batches that ended")
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, before)
        try:
            spark.stop()
        except Exception:  # a signal to the whole process group (timeout(1)) has ended the JVM too
            if not (interrupted or stopping):
                raise
        shutil.rmtree(base, ignore_errors=True)
    wall = time.perf_counter() - t0
    out = {k: v for k, v in vars(tot).items()}
    out.update({"seed": args.seed, "start_round": args.start_round, "batch": args.batch, "per_round": args.per_round,
                "jvm_flags": args.jvm_flags, "driver_memory": args.driver_memory, "wall_s": round(wall, 1),
                "setup_s": round(setup_s, 1), "interrupted": interrupted,
                "queries_per_s": round(tot.queries / wall, 2),
                "load_before": [round(x, 2) for x in load_before],
                "load_after": [round(x, 2) for x in os.getloadavg()],
                "pyspark": __import__("pyspark").__version__, "writers": fw.versions()})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--seed", type=int, default=47)
    p.add_argument("--start-round", type=int, default=0)
    p.add_argument("--rounds", type=int, default=None, help="stop after this many rounds")
    p.add_argument("--per-round", type=int, default=1500, help="queries per table")
    p.add_argument("--batch", type=int, default=25,
                   help="queries per Spark job (25: 2.9 queries/s here against 2.1 at 250, whose plans cost more a branch)")
    p.add_argument("--dml", type=int, default=3, help="DML statements per Delta / Iceberg round")
    p.add_argument("--formats", default=",".join(FORMATS), help="the table forms, in turn by round number")
    p.add_argument("--work", default=None, help="scratch directory (default: TMPDIR)")
    p.add_argument("--max-seconds", type=float, default=None, help="start no batch after this long; report what ran")
    p.add_argument("--keep-rounds", type=int, default=0)
    p.add_argument("--json", default=None)
    p.add_argument("--jvm-flags", default="", help="JVM flags for the local driver (its executors run in it)")
    p.add_argument("--driver-memory", default="2g", help="the local driver's heap (spark.driver.memory)")
    args = p.parse_args(argv)
    if not args.formats or any(f not in FORMATS for f in args.formats.split(",")):
        p.error(f"--formats: a comma-separated list of {', '.join(FORMATS)}")
    out = run(args, lambda s: print(s, flush=True))
    print(json.dumps({k: v for k, v in out.items() if k != "failures"}, indent=1, default=str))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, default=str, ensure_ascii=False)
    bad = out["wrong"] + out["dml_wrong"] + sum(1 for f in out["failures"] if "setup_failed" in f)
    if bad:
        print(f"FAILED: {out['wrong']} wrong queries, {out['dml_wrong']} wrong DML; reproduce a round with "
              f"--seed {args.seed} --start-round <round> --rounds 1", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
