"""The examples run as written: quickstart.sql through spark.sql, the demo on a small table, the Scala
example in spark-shell. (quickstart.py runs from a fresh virtual environment in test_package.py.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import sparkbloom

from conftest import ROOT, run_python, running_line

EXAMPLES = ROOT / "examples"


def sql_statements(text: str) -> list[str]:
    """The statements of a .sql file: comments dropped, split at the semicolons that end lines."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    return [s.strip() for s in re.split(r";\s*(?:\n|$)", body) if s.strip()]


def test_quickstart_sql_splits_into_its_statements() -> None:
    statements = sql_statements((EXAMPLES / "quickstart.sql").read_text())
    assert statements[0] == "DROP TABLE IF EXISTS sparkbloom_quickstart"
    assert any(s.startswith("CREATE BLOOM INDEX") for s in statements)
    assert statements[-1] == "DROP TABLE sparkbloom_quickstart"


def test_quickstart_sql_runs_statement_by_statement(spark: SparkSession) -> None:
    results = {}
    for statement in sql_statements((EXAMPLES / "quickstart.sql").read_text()):
        results[statement] = spark.sql(statement).collect()
    point = [v for k, v in results.items() if k.endswith("WHERE user_id = 4242")]
    assert point and all(len(rows) == 1 and rows[0].user_id == 4242 for rows in point)
    [sessions] = [v for k, v in results.items() if "session IN" in k]
    assert sorted(r.session for r in sessions) == ["session-199999", "session-7"]
    [show] = [v for k, v in results.items() if k.startswith("SHOW BLOOM INDEXES")]
    assert "quickstart_keys" in [r[0] for r in show]


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, **extra)
    return env


def test_the_demo_prints_its_table_on_a_small_run(tmp_path: Path) -> None:
    out = run_python(
        sys.executable,
        [str(EXAMPLES / "demo.py"), "--master", "local[2]", "--files", "6", "--rows", "30000"],
        cwd=tmp_path, env=clean_env(),
    )
    assert "files read" in out and "row groups read" in out
    table = [line for line in out.splitlines() if line.startswith(("point", "IN"))]
    assert len(table) == 10  # 5 queries, index off and on
    off_on = [(table[i], table[i + 1]) for i in range(0, 10, 2)]
    for off, on in off_on:
        assert off.split()[-4] == on.split()[-4], (off, on)  # the same rows with the index on and off


def test_the_scala_example_runs_in_spark_shell(tmp_path: Path) -> None:
    conf = tmp_path / "sparkbloom.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in sparkbloom.spark_conf().items()))
    import pyspark

    shell = Path(pyspark.__file__).parent / "bin" / "spark-shell"
    proc = subprocess.run(
        [str(shell), "--master", "local[2]", "--properties-file", str(conf), "--conf", "spark.ui.enabled=false"],
        stdin=(EXAMPLES / "Quickstart.scala").open(), cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env=clean_env(SPARK_HOME=str(shell.parent.parent)),
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "error:" not in out and "Exception" not in out, out[-4000:]
    assert re.search(r"quickstart_user on .*: 20 files", out), out[-4000:]
    assert re.search(r"read \d+ of 20 files", out), out[-4000:]


def versions() -> dict[str, list[str]]:
    """project/versions.properties: each key with its whitespace-separated fields."""
    return {k.strip(): v.split() for k, v in (
        line.split("=", 1) for line in (ROOT / "project" / "versions.properties").read_text().splitlines()
        if "=" in line and not line.lstrip().startswith("#"))}


def lakehouse_jars() -> list[Path]:
    """The running line's Delta Lake and Iceberg runtime jars, as ``sbt lakehouseJars`` (run by dev/test and
    dev/demo) copied them from the build's Maven cache to target/lakehouse/spark-<line>; nothing is fetched here."""
    props = versions()
    line = os.environ.get("SPARKBLOOM_LINE") or running_line()
    if "-" in props.get(f"lakehouse.{line}", ["-", "-"]):
        pytest.skip(f"Spark line {line} lacks Delta or Iceberg artifacts (project/versions.properties)")
    jars = sorted((ROOT / "target" / "lakehouse" / f"spark-{line}").glob("*.jar"))
    names = " ".join(j.name for j in jars)
    assert "delta-spark" in names and "iceberg-spark-runtime" in names, \
        f"run dev/sbt lakehouseJars (or dev/test) first: {jars}"
    return jars


def test_the_lakehouse_example_prunes_delta_and_iceberg_tables(tmp_path: Path) -> None:
    import json
    jars = ",".join(str(j) for j in lakehouse_jars())
    out = run_python(sys.executable, [str(EXAMPLES / "lakehouse.py"), "--jars", jars, "--files", "60", "--json"],
                     cwd=tmp_path, env=clean_env())
    results = json.loads(out.strip().splitlines()[-1])
    # configure() put sparkbloom after both formats' extensions
    assert results["extensions"].split(",")[-1] == "sparkbloom.SparkBloomExtensions"
    for fmt in ("delta", "iceberg"):
        r = results[fmt]
        assert r["same_rows"] and r["rows"] == 1, (fmt, r)
        assert r["files"] == 60 and r["files_read"] <= 3, (fmt, r)
        assert r["index"].startswith("by_user on "), (fmt, r)


@pytest.mark.skipif(os.environ.get("SPARKBLOOM_BENCHMARK_TESTS") != "1",
                    reason="benchmark script smoke: set SPARKBLOOM_BENCHMARK_TESTS=1")
def test_the_lakehouse_benchmark_runs_and_checks_its_answers(tmp_path: Path) -> None:
    """benchmarks/lakehouse.py at a small size: it must run, find every present key once, answer as with the
    index off, and record what the scan's filesSkipped metric counts. Never asserts on time. A check of the
    benchmark script (the lakehouse example's test checks sparkbloom on the same formats): with
    ``SPARKBLOOM_BENCHMARK_TESTS=1`` (the full matrix sets it), not in CI."""
    import json
    jars = ",".join(str(j) for j in lakehouse_jars())
    out = tmp_path / "lakehouse.json"
    run_python(sys.executable, [str(ROOT / "benchmarks" / "lakehouse.py"), "--jars", jars, "--files", "20",
                                "--lookups", "3", "--out", str(out)], cwd=tmp_path, env=clean_env())
    report = json.loads(out.read_text())
    assert report["files"] == 20 and report["rows"] == 2000, report
    by = {(r["source"], r["keys"]): r for r in report["results"]}
    assert set(by) == {(s, k) for s in ("delta", "iceberg", "v2-parquet") for k in ("present", "absent")}, by
    for (_source, keys), r in by.items():
        assert r["rows_differ_from_index_off"] == 0 and r["metric_equals_record"], r
        assert r["rows_found"] == (3 if keys == "present" else 0), r
        # every file's min/max spans the keys: only the index can leave files out; a present key is in one file
        assert r["files_read_mean"] < r["files_after_format_statistics_mean"], r
        assert r["files_read_max"] <= (3 if keys == "present" else 2), r


def test_the_lakehouse_example_fetches_the_builds_the_project_tests_with() -> None:
    """examples/lakehouse.py without --jars fetches PACKAGES for the running line; those coordinates must be the
    Delta and Iceberg builds `sbt lakehouseJars` caches for each line (project/versions.properties), with the
    line's Scala, and every line for which both formats publish a build must have an entry."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lakehouse_example", EXAMPLES / "lakehouse.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    props = versions()
    scala_of = {k[len("line."):]: v[1] for k, v in props.items() if k.startswith("line.")}
    expected = {}
    for key, (delta, iceberg) in ((k, v) for k, v in props.items() if k.startswith("lakehouse.")):
        line = key[len("lakehouse."):]
        if "-" in (delta, iceberg):
            continue
        scala = ".".join(scala_of[line].split(".")[:2])
        delta_artifact, delta_version = delta.split(":")
        iceberg_artifact, iceberg_version = iceberg.split(":")
        coords = {f"io.delta:{delta_artifact}_{scala}:{delta_version}",
                  f"org.apache.iceberg:{iceberg_artifact}_{scala}:{iceberg_version}"}
        expected.setdefault(line.split("_")[0], []).append((scala, coords))
    assert set(example.PACKAGES) == set(expected), "PACKAGES lines differ from the lines with both formats"
    for line, builds in expected.items():
        for scala, coords in builds:
            assert set(example.PACKAGES[line].format(scala=scala).split(",")) == coords, (line, scala)
