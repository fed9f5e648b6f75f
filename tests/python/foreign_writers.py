"""One random table, written as Parquet by writers other than Spark, with their own (native) bloom filters.

Used by ``test_foreign_fuzz.py`` and ``benchmarks/long_fuzz.py``. The table has seven columns that cover the
physical types the writers use for them (``COLUMNS``), nulls in every column, duplicate keys clustered by
position (so a present value lives in few row groups and bloom filters can prune the others), ``-0.0``,
``0.0`` and ``NaN`` in the floating columns, each placed in a few row groups only (so a lookup of ``0.0``
must keep the row groups holding ``-0.0`` but may prune the rest), several row groups per file and several
files.

Writers and what they store:

- **pyarrow 21** (Arrow C++ 21): no bloom filters. Arrow C++ 21 can read Parquet bloom filters but its
  writer has no option to write them (``pyarrow.parquet.write_table`` has none; ``parquet/properties.h``
  of the wheel has no bloom filter property), so pyarrow is used as a plain writer: its files exercise the
  index built by scanning (decimals as FIXED_LEN_BYTE_ARRAY, pyarrow's encodings) and must never be pruned
  by native filters.
- **DuckDB**: writes a bloom filter for each dictionary-encoded column chunk. Its dictionary is dropped when
  it exceeds ``DICTIONARY_SIZE_LIMIT``, so the limit is raised to keep every chunk dictionary-encoded
  (and filtered). Decimals as INT64.
- **DataFusion** (arrow-rs): ``COPY ... STORED AS PARQUET OPTIONS ('format.bloom_filter_on_write' 'true')``
  writes a filter for every column chunk, sized by ``format.bloom_filter_ndv`` (its default, one million
  values per chunk, makes ~1 MiB filters; set to the rows of a row group here). INT32 columns without a
  logical type annotation; decimals as INT64.

``bloom_filter_columns(path)`` reads the footers (DuckDB's ``parquet_metadata``) to tell which column chunks
really carry a filter.
"""

from __future__ import annotations

import datetime
import decimal
import math
import os
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

# (name, Spark SQL type, Arrow type)
COLUMNS: list[tuple[str, str, Any]] = [
    ("i32", "int", pa.int32()),
    ("i64", "bigint", pa.int64()),
    ("d", "double", pa.float64()),
    ("f", "float", pa.float32()),
    ("s", "string", pa.string()),
    ("dt", "date", pa.date32()),
    ("dec", "decimal(10,2)", pa.decimal128(10, 2)),
]
NAMES = [c[0] for c in COLUMNS]
SPARK_TYPES = {c[0]: c[1] for c in COLUMNS}
SCHEMA = pa.schema([pa.field(n, t, nullable=True) for n, _, t in COLUMNS])
EPOCH = datetime.date(1970, 1, 1)
WRITERS = ("pyarrow", "duckdb", "datafusion")


def key_value(name: str, k: int) -> Any:
    """The value of column `name` for key `k` (distinct keys give distinct values in every column, except
    the float column, which wraps around every 1500 keys)."""
    if name == "i32":
        return k * 7 - 9000
    if name == "i64":
        return k * 1_000_000_007 - (1 << 40)
    if name == "d":
        return k * 0.5 + 0.25 - 700.0  # never 0.0: zeros are placed explicitly
    if name == "f":
        return (k % 1500) * 0.25 + 0.125  # exact in float32, never 0.0
    if name == "s":
        return f"ключ-{k}" if k % 7 == 0 else ("" if k % 997 == 5 else f"k{k:05d}")
    if name == "dt":
        return EPOCH + datetime.timedelta(days=k * 3 - 2000)
    if name == "dec":
        return decimal.Decimal(k * 37 - 50000).scaleb(-2)
    raise KeyError(name)


def random_table(seed: int, files: int = 3, rows_per_file: int = 8192, row_group_size: int = 2048,
                 null_rate: float = 0.05) -> list[pa.Table]:
    """The rows of each file, as Arrow tables. Row i of the whole table holds key i // 4 (duplicates,
    clustered), or for 10% of the rows a key drawn from the whole range; each column is null at
    `null_rate`. Row group r (counted over the whole table) holds in the floating columns: -0.0 when
    r % 5 == 1, 0.0 when r % 5 == 3, NaN when r % 7 == 2 (a few rows each)."""
    rng = random.Random(seed)
    total = files * rows_per_file
    keys = total // 4
    cols: dict[str, list[Any]] = {n: [] for n in NAMES}
    for i in range(total):
        k = i // 4 if rng.random() >= 0.10 else rng.randrange(keys)
        rg = i // row_group_size
        for n in NAMES:
            v = key_value(n, k) if rng.random() >= null_rate else None
            if n in ("d", "f") and v is not None and rng.random() < 0.02:
                if rg % 5 == 1:
                    v = -0.0
                elif rg % 5 == 3:
                    v = 0.0
                elif rg % 7 == 2:
                    v = math.nan
            cols[n].append(v)
    out = []
    for f in range(files):
        lo, hi = f * rows_per_file, (f + 1) * rows_per_file
        out.append(pa.table({n: pa.array(cols[n][lo:hi], t) for n, _, t in COLUMNS}, schema=SCHEMA))
    return out


def write_pyarrow(tables: Sequence[pa.Table], out_dir: str, row_group_size: int) -> list[str]:
    import pyarrow.parquet as pq

    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for i, t in enumerate(tables):
        p = os.path.join(out_dir, f"part-{i:03d}.parquet")
        # Dictionary encoding for half the files, plain for the others: both are read back the same way.
        pq.write_table(t, p, row_group_size=row_group_size, use_dictionary=(i % 2 == 0), compression="snappy")
        paths.append(p)
    return paths


def write_duckdb(tables: Sequence[pa.Table], out_dir: str, row_group_size: int) -> list[str]:
    import duckdb

    os.makedirs(out_dir, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    paths = []
    try:
        for i, t in enumerate(tables):
            p = os.path.join(out_dir, f"part-{i:03d}.parquet")
            con.register("t", t)
            # DuckDB writes a bloom filter for dictionary-encoded chunks only; keep every chunk dictionary-encoded
            # (its default limit drops the dictionary of these chunks; a much larger one makes COPY slow).
            con.execute(f"COPY (SELECT * FROM t) TO '{p}' (FORMAT parquet, ROW_GROUP_SIZE {row_group_size}, "
                        f"DICTIONARY_SIZE_LIMIT {max(100_000, 20 * row_group_size)})")
            con.unregister("t")
            paths.append(p)
    finally:
        con.close()
    return paths


def write_datafusion(tables: Sequence[pa.Table], out_dir: str, row_group_size: int) -> list[str]:
    import datafusion

    os.makedirs(out_dir, exist_ok=True)
    ctx = datafusion.SessionContext()
    paths = []
    for i, t in enumerate(tables):
        p = os.path.join(out_dir, f"part-{i:03d}.parquet")
        name = f"t{i}"
        ctx.register_record_batches(name, [t.to_batches(max_chunksize=row_group_size)])
        ctx.sql(f"COPY (SELECT * FROM {name}) TO '{p}' STORED AS PARQUET OPTIONS ("
                "'format.bloom_filter_on_write' 'true', "
                f"'format.bloom_filter_ndv' '{row_group_size}', "
                f"'format.max_row_group_size' '{row_group_size}')").collect()
        ctx.deregister_table(name)
        paths.append(p)
    return paths


WRITE = {"pyarrow": write_pyarrow, "duckdb": write_duckdb, "datafusion": write_datafusion}


def write(writer: str, tables: Sequence[pa.Table], out_dir: str, row_group_size: int) -> list[str]:
    return WRITE[writer](tables, out_dir, row_group_size)


def bloom_filter_columns(path: str) -> list[dict[str, Any]]:
    """One dict per column chunk of `path`: row_group, column, has_filter (bloom_filter_offset set), the
    filter's stored length (None when the writer did not store it) and the writer (created_by)."""
    import duckdb
    import pyarrow.parquet as pq

    created_by = pq.ParquetFile(path).metadata.created_by
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    try:
        rows = con.execute("SELECT row_group_id, path_in_schema, bloom_filter_offset, bloom_filter_length "
                           "FROM parquet_metadata(?) ORDER BY row_group_id, column_id", [path]).fetchall()
    finally:
        con.close()
    return [{"row_group": rg, "column": c, "has_filter": off is not None and off >= 0, "length": ln,
             "created_by": created_by} for rg, c, off, ln in rows]


def versions() -> dict[str, str]:
    import datafusion
    import duckdb

    return {"pyarrow": pa.__version__, "duckdb": duckdb.__version__, "datafusion": datafusion.__version__}


def write_all(base: str, seed: int, files: int = 3, rows_per_file: int = 8192, row_group_size: int = 2048,
              writers: Sequence[str] = WRITERS) -> dict[str, str]:
    """Writes the same random table with each writer under base/<writer>/; returns writer → directory."""
    tables = random_table(seed, files, rows_per_file, row_group_size)
    out = {}
    for w in writers:
        d = str(Path(base) / w)
        write(w, tables, d, row_group_size)
        out[w] = d
    return out
