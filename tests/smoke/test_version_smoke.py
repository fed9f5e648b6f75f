"""Version smoke: the installed sparkbloom wheel on whichever pyspark this environment has.

dev/matrix runs this file once per supported Spark line, each in a fresh virtual environment holding
only that line's newest pyspark (project/versions.properties), pytest, and the one sparkbloom wheel,
installed *with* its dependencies. Each run checks that installing sparkbloom left pyspark as it was,
then wires a session with ``sparkbloom.session.local_session`` (``sparkbloom.configure`` on a local
builder), creates indexes (SQL and Python), prunes lookups to the rows Spark returns with sparkbloom off,
runs parameterized SQL (named and positional, through Spark's parser and ours), time-travel syntax, and
the ``spark-sql`` shell.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import sparkbloom

EXPECTED_PYSPARK = os.environ.get("SPARKBLOOM_EXPECT_PYSPARK")
ROOT = Path(__file__).resolve().parents[2]


def _fixtures() -> Path:
    """../shared/fixtures next to the checkout (or next to the main checkout of a git worktree)."""
    if os.environ.get("SPARKBLOOM_SHARED"):
        return Path(os.environ["SPARKBLOOM_SHARED"]) / "fixtures"
    for parent in ROOT.parents:
        if (parent / "shared" / "fixtures").is_dir():
            return parent / "shared" / "fixtures"
    return ROOT.parent / "shared" / "fixtures"


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    session = sparkbloom.session.local_session("sparkbloom-smoke", warehouse_dir=tmp_path_factory.mktemp("warehouse"))
    yield session
    session.stop()


@pytest.fixture(scope="module")
def table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """40 Parquet files of 250 rows each: k = id, s = 'user-<id>'."""
    path = str(tmp_path_factory.mktemp("data") / "events")
    (spark.range(0, 10_000, 1, 40)
     .selectExpr("id AS k", "concat('user-', id) AS s", "id % 7 AS g")
     .write.parquet(path))
    return path


def off_and_on(spark: SparkSession, query: str, args=None):
    """(rows with sparkbloom off, rows with it on, the DataFrame run with it on)."""
    def run():
        df = spark.sql(query, args) if args is not None else spark.sql(query)
        return sorted(tuple(r) for r in df.collect()), df
    spark.conf.set("spark.sparkbloom.enabled", "false")
    try:
        off, _ = run()
    finally:
        spark.conf.set("spark.sparkbloom.enabled", "true")
    on, df = run()
    return off, on, df


def by_index(df, name: str):
    """The skipping record of the index `name` for the query `df` ran."""
    found = [r for r in sparkbloom.skipping(df) if r.index.split(" on ")[0] == name]
    assert len(found) == 1, sparkbloom.skipping(df)
    return found[0]


def test_installing_sparkbloom_left_this_pyspark_as_it_was():
    import pyspark

    assert EXPECTED_PYSPARK, "dev/matrix sets SPARKBLOOM_EXPECT_PYSPARK to the pyspark it installed first"
    assert pyspark.__version__ == EXPECTED_PYSPARK


def test_the_session_runs_the_jar_of_its_spark_line(spark: SparkSession):
    version, scala = sparkbloom.session.spark_version()
    line = sparkbloom.session.line_for(version, scala)
    jars = sparkbloom.jar_paths()
    assert any(f"/spark-{line}/sparkbloom.jar" in j.replace(os.sep, "/") for j in jars), jars
    assert spark.version == version
    jvm_line = spark.sparkContext._jvm.sparkbloom.BuildInfo.line()
    assert jvm_line == line
    assert "sparkbloom.SparkBloomExtensions" in spark.conf.get("spark.sql.extensions")


def test_a_jar_of_another_spark_line_refuses_to_start_the_session(tmp_path: Path):
    version, scala = sparkbloom.session.spark_version()
    line = sparkbloom.session.line_for(version, scala)
    if scala != "2.13":
        pytest.skip("no other line's jar is built for Scala 2.12")
    other = "4.1" if line == "4.0" else "4.0"
    jars = Path(sparkbloom.__file__).parent / "jars" / f"spark-{other}"
    script = (
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "b = (SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')\n"
        f"     .config('spark.jars', {','.join(str(j) for j in sorted(jars.glob('*.jar')))!r})\n"
        "     .config('spark.sql.extensions', 'sparkbloom.SparkBloomExtensions'))\n"
        "try:\n"
        "    b.getOrCreate()\n"
        "except Exception as e:\n"
        "    print('REFUSED', e)\n"
        "    sys.exit(0)\n"
        "print('STARTED')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYSPARK_SUBMIT_ARGS="--driver-java-options '"
                                   + " ".join(sparkbloom.java_options()) + "' pyspark-shell"))
    assert "REFUSED" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    assert f"built for Spark {other}" in proc.stdout and f"runs Spark {version}" in proc.stdout, proc.stdout


def test_ddl_and_a_pruned_lookup_return_the_index_off_rows(spark: SparkSession, table: str):
    spark.sql(f"CREATE BLOOM INDEX smoke_k ON parquet.`{table}` (k) OPTIONS (fpp = 0.01)")
    shown = [r[0] for r in spark.sql(f"SHOW BLOOM INDEXES ON parquet.`{table}`").collect()]
    assert "smoke_k" in shown
    off, on, df = off_and_on(spark, f"SELECT k, s FROM parquet.`{table}` WHERE k = 4242")
    assert on == off == [(4242, "user-4242")]
    report = by_index(df, "smoke_k")
    assert report.files_total == 40 and report.files_skipped >= 35, report


def test_python_api_index_and_in_lookup(spark: SparkSession, table: str):
    df = spark.read.parquet(table)
    df.bloomFilterIndex("s", name="smoke_s")
    off, on, q = off_and_on(spark, f"SELECT k FROM parquet.`{table}` WHERE s IN ('user-7', 'user-9001', 'nobody')")
    assert on == off == [(7,), (9001,)]
    assert by_index(q, "smoke_s").files_skipped >= 30


def test_parameterized_sql_keeps_its_parameters(spark: SparkSession, table: str):
    assert spark.sql("SELECT :x AS v", args={"x": 5}).first()[0] == 5
    assert spark.sql("SELECT ? + ? AS v", args=[2, 3]).first()[0] == 5
    off, on, df = off_and_on(spark, f"SELECT s FROM parquet.`{table}` WHERE k = :key", {"key": 1234})
    assert on == off == [("user-1234",)]
    assert by_index(df, "smoke_k").files_skipped >= 35


@pytest.mark.parametrize("name, where, expected", [
    ("bloom_filter_short_numbytes.parquet", "r = 200", 100),  # header smaller than the stored filter
    ("bloom_filter_bad_numbytes.parquet", "r = 0", 1000),
    ("multi_bloom_b.parquet", "a = 2", 1),
])
def test_files_of_other_writers_keep_their_rows(spark: SparkSession, name: str, where: str, expected: int):
    # DuckDB-written files, two with corrupt filters. On Spark 3.5 (parquet-java 1.13 cannot read
    # bloom_filter_length) sparkbloom does not use other writers' filters at all; elsewhere it validates them.
    path = _fixtures() / "duckdb" / name
    assert path.is_file(), f"fixture {path} missing"
    off, on, _ = off_and_on(spark, f"SELECT count(*) FROM parquet.`{path}` WHERE {where}")
    assert on == [(expected,)], (on, off)


def test_spark_errors_carry_their_condition_on_every_line(spark: SparkSession):
    # Spark 3.5 names it getErrorClass(), 4.x getCondition(): sparkbloom reads either.
    from sparkbloom.errors import translate

    with pytest.raises(sparkbloom.AnalysisError) as e:
        with translate():
            spark._jsparkSession.sql("SELECT * FROM no_such_table_anywhere")
    assert e.value.condition == "TABLE_OR_VIEW_NOT_FOUND", e.value


def test_time_travel_syntax_parses_as_spark_parses_it(spark: SparkSession):
    jvm = spark.sparkContext._jvm
    ours = spark._jsparkSession.sessionState().sqlParser()
    assert "BloomSqlParser" in ours.getClass().getName()
    spark_parser = jvm.org.apache.spark.sql.execution.SparkSqlParser()
    for sql in ("SELECT * FROM t VERSION AS OF 3", "SELECT * FROM t TIMESTAMP AS OF '2026-01-01 00:00:00'",
                "SELECT * FROM t FOR SYSTEM_VERSION AS OF 3"):
        assert ours.parsePlan(sql).toString() == spark_parser.parsePlan(sql).toString(), sql
        assert "RelationTimeTravel" in ours.parsePlan(sql).toString(), sql


def test_the_spark_sql_shell_runs_bloom_statements(table: str, tmp_path: Path):
    import pyspark
    from pyspark.find_spark_home import _find_spark_home

    shell = Path(_find_spark_home()) / "bin" / "spark-sql"
    assert shell.is_file(), f"no spark-sql in pyspark {pyspark.__version__}"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    flags = " ".join(sparkbloom.java_options())
    script = (f"SELECT count(*) AS n FROM parquet.`{table}` WHERE k = 77;\n"
              f"SHOW BLOOM INDEXES ON parquet.`{table}`;\n"
              f"DESCRIBE BLOOM INDEX smoke_k ON parquet.`{table}`;\n")
    proc = subprocess.run(
        ["bash", str(shell), "--master", "local[1]", "--jars", ",".join(sparkbloom.jar_paths()),
         "--conf", "spark.sql.extensions=sparkbloom.SparkBloomExtensions", "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.sql.warehouse.dir={tmp_path / 'wh'}", "--driver-java-options", flags,
         "-S", "-e", script],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout.split("\n")
    assert out[0].strip() == "1", proc.stdout
    assert any("smoke_k" in line for line in out[1:]), proc.stdout
