"""The inspector on Parquet files written by other implementations (../shared/fixtures).

What each fixture holds, and what other readers assert about it, is in fixtures/README.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import sparkbloom

from conftest import FIXTURES, needs_stored_length

PT = FIXTURES / "parquet-testing"
DUCK = FIXTURES / "duckdb"
FOURTEEN = ["Hello", "This is", "a", "test", "How", "are you", "doing ", "today",
            "the quick", "brown fox", "jumps", "over", "the lazy", "dog"]
ABSENT = ["NOT_EXISTS", "Hello_Not_Exists", "b", "c", "d", "hello", "doing", ""]

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"fixtures not found at {FIXTURES}")


def only_file(report: dict[str, Any]) -> dict[str, Any]:
    assert len(report["files"]) == 1
    return report["files"][0]


def chunks(file: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for g in file["row_groups"] for c in g["columns"]]


def answers(file: dict[str, Any]) -> dict[str, str]:
    return {p["value"]: p["result"] for g in file["row_groups"] for p in g["probes"]}


@pytest.mark.parametrize(
    "name, num_bytes, stored_length",
    [("data_index_bloom_encoding_stats.parquet", 1024, None),  # parquet-mr: no bloom_filter_length
     ("data_index_bloom_encoding_with_length.parquet", 2048, 2064)],  # parquet-rs: 16-byte header + bitset
)
@needs_stored_length
def test_a_native_filter_is_found_and_answers_maybe_for_the_14_values_and_no_for_absent_ones(
    spark: SparkSession, name: str, num_bytes: int, stored_length: int
) -> None:
    probes = [f"String={v}" for v in FOURTEEN + ABSENT]
    f = only_file(sparkbloom.inspect_parquet(spark, str(PT / name), probes))
    assert f["status"] == "ok" and f["num_rows"] == 14
    [c] = chunks(f)
    assert (c["column"], c["physical_type"], c["logical_type"]) == ("String", "BYTE_ARRAY", "STRING")
    assert (c["bloom_filter"], c["num_bytes"], c["stored_length"]) == ("ok", num_bytes, stored_length)
    assert c["ndv_upper_bound"] == 14 and 0 < c["fpp_estimated"] < 1e-6 and 0 < c["fpp_observed"] < 1e-6
    got = answers(f)
    assert {v: got[v] for v in FOURTEEN} == {v: "maybe" for v in FOURTEEN}
    assert {v: got[v] for v in ABSENT} == {v: "no" for v in ABSENT}


@needs_stored_length
def test_a_header_that_disagrees_with_the_stored_length_is_corrupt_and_never_answers_no(spark: SparkSession) -> None:
    # numBytes 256 in the header, bloom_filter_length 528: trusting the header would miss r = 200.
    f = only_file(sparkbloom.inspect_parquet(spark, str(DUCK / "bloom_filter_short_numbytes.parquet"), ["r=200"]))
    [c] = chunks(f)
    assert c["bloom_filter"].startswith("corrupt: ") and "528" in c["bloom_filter"]
    assert answers(f) == {"200": "corrupt filter"}


@pytest.mark.parametrize(
    "name, first_reason",
    [("bloom_filter_bad_numbytes.parquet", "not a positive multiple of 32"),
     ("bloom_filter_bad_length_range.parquet", "run past the end of the file")],
)
@needs_stored_length
def test_damaged_duckdb_files_report_every_filter_corrupt(spark: SparkSession, name: str, first_reason: str) -> None:
    # Patching row group 0's header to numBytes 10000 lengthened it by two bytes, which moved every later
    # filter away from the offset the footer records: none of them can be read where they are said to be.
    f = only_file(sparkbloom.inspect_parquet(spark, str(DUCK / name), ["r=0"]))
    assert f["status"] == "ok" and f["num_rows"] == 100_000 and len(f["row_groups"]) == 10
    assert all(c["bloom_filter"].startswith("corrupt: ") for c in chunks(f))
    assert first_reason in f["row_groups"][0]["columns"][0]["bloom_filter"]
    assert {p["result"] for g in f["row_groups"] for p in g["probes"]} == {"corrupt filter"}


def test_single_value_filters_keep_only_the_file_holding_the_value(spark: SparkSession) -> None:
    report = sparkbloom.inspect_parquet(spark, str(DUCK), ["a=1"])
    got = {Path(f["file"]).name: answers(f).get("1") for f in report["files"] if f["file"].endswith(".parquet")}
    assert got["multi_bloom_a.parquet"] == "maybe"
    assert got["multi_bloom_b.parquet"] == "no"
    assert got["multi_bloom_c.parquet"] == "no"


def test_an_encrypted_file_is_reported_encrypted_and_nothing_is_read(spark: SparkSession) -> None:
    name = "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
    f = only_file(sparkbloom.inspect_parquet(spark, str(PT / name), ["double_field=0.5"]))
    assert f["status"] == "encrypted"
    assert "row_groups" not in f


def test_a_directory_is_read_recursively_and_files_that_are_not_parquet_are_skipped(spark: SparkSession) -> None:
    report = sparkbloom.inspect_parquet(spark, str(FIXTURES))
    status = {Path(f["file"]).name: f["status"] for f in report["files"]}
    assert status["bloom_filter.bin"] == "not parquet"
    assert status["bloom_filter.xxhash.bin"] == "not parquet"
    assert status["encrypt_columns_and_footer_bloom_filter.parquet.encrypted"] == "encrypted"
    assert status["data_index_bloom_encoding_stats.parquet"] == "ok"
    assert status["multi_bloom_c.parquet"] == "ok"
    assert "README.md" not in status or status["README.md"] == "not parquet"


def test_names_starting_with_underscore_or_dot_are_skipped_in_directories(spark: SparkSession, tmp_path: Path) -> None:
    spark.range(10).coalesce(1).write.parquet(str(tmp_path / "t"))  # writes _SUCCESS and .crc files too
    report = sparkbloom.inspect_parquet(spark, str(tmp_path))
    names = [Path(f["file"]).name for f in report["files"]]
    assert len(names) == 1 and names[0].startswith("part-")
    assert only_file(report)["status"] == "ok"
    assert chunks(only_file(report))[0]["bloom_filter"] == "absent"


def test_probe_values_are_written_in_the_columns_physical_type(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "typed")
    (spark.range(0, 50, 1, 1)
     .selectExpr("cast(id AS int) AS i", "id AS l", "cast(id AS double) + 0.5 AS d", "cast(id AS float) AS f",
                 "date_add(DATE'2024-01-01', cast(id AS int)) AS day")
     .write.option("parquet.bloom.filter.enabled", "true").parquet(path))
    probes = ["i=7", "i=700", "l=7", "l=700", "d=7.5", "d=7.0", "f=7", "f=700", "day=2024-01-08", "day=2025-01-01",
              "i=seven"]
    report = sparkbloom.inspect_parquet(spark, path, probes)
    [f] = [f for f in report["files"] if f["status"] == "ok"]
    got = {(p["column"], p["value"]): p["result"] for g in f["row_groups"] for p in g["probes"]}
    assert got[("i", "7")] == got[("l", "7")] == got[("d", "7.5")] == got[("f", "7")] == "maybe"
    assert got[("day", "2024-01-08")] == "maybe"
    assert got[("i", "700")] == got[("l", "700")] == got[("d", "7.0")] == got[("f", "700")] == "no"
    assert got[("day", "2025-01-01")] == "no"
    assert got[("i", "seven")].startswith("cannot probe")


@needs_stored_length
def test_the_command_line_prints_a_readable_report_with_corrupt_filters_shown_as_corrupt() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sparkbloom", "inspect", str(FIXTURES), "--probe", "String=Hello", "--probe", "a=1"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "corrupt: bloom filter header says 16 + 256 bytes but the stored length is 528" in out
    assert "probe String = 'Hello': maybe" in out
    assert "encrypted" in out and "not parquet" in out
    assert "* fpp_estimated" in out  # the footnote saying the ndv is an upper bound


def test_the_command_line_lists_the_jars_and_spark_properties_for_spark_submit() -> None:
    jars = subprocess.run([sys.executable, "-m", "sparkbloom", "jars"], capture_output=True, text=True, check=True)
    assert jars.stdout.strip().split(",") == sparkbloom.jar_paths()
    conf = subprocess.run([sys.executable, "-m", "sparkbloom", "conf"], capture_output=True, text=True, check=True)
    assert "spark.sql.extensions=sparkbloom.SparkBloomExtensions" in conf.stdout.splitlines()
