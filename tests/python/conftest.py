"""Shared fixtures: one small local Spark session for the whole run, paths."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from sparkbloom.session import local_session

ROOT = Path(__file__).resolve().parents[2]


def _shared_dir() -> Path:
    """../shared next to the checkout (or next to the main checkout of a git worktree)."""
    if os.environ.get("SPARKBLOOM_SHARED"):
        return Path(os.environ["SPARKBLOOM_SHARED"])
    for parent in ROOT.parents:
        if (parent / "shared" / "fixtures").is_dir():
            return parent / "shared"
    return ROOT.parent / "shared"


FIXTURES = _shared_dir() / "fixtures"


def running_line() -> str:
    """The Spark line (project/versions.properties) of the Spark pyspark launches; dev/matrix's full mode runs the
    suites on every line's pyspark."""
    from sparkbloom.session import line_for, spark_version

    return line_for(*spark_version())


def harness_jar() -> Path:
    """The harness classes of the running Spark line (benchmarks/harness: DecisionFuzz), built by
    `dev/sbt harness/package` (dev/test does it) into target/harness/spark-<line>/; not part of the package."""
    return ROOT / "target" / "harness" / f"spark-{running_line()}" / "sparkbloom-harness.jar"


def stored_length_readable() -> bool:
    """Whether this Spark's parquet-java reads bloom_filter_length: not 1.13 (Spark 3.5), where sparkbloom
    therefore uses only the filters parquet-java itself wrote (other writers' files are scanned instead).
    Read from the pyspark jars, so it needs no session."""
    from sparkbloom.session import spark_version

    return not spark_version()[0].startswith("3.5.")


# Skips a test about the stored bloom_filter_length (other writers' filters) on Spark 3.5.
needs_stored_length = pytest.mark.skipif(
    not stored_length_readable(), reason="parquet-java 1.13 (Spark 3.5) does not read bloom_filter_length")


def run_python(python: str, args: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> str:
    """Runs a Python program and returns its stdout; AssertionError with its output if it fails."""
    proc = subprocess.run([python, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f"{args} exited with {proc.returncode}:\n{output[-6000:]}")
    return proc.stdout


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    conf = {"spark.ui.showConsoleProgress": "false", "spark.log.level": "WARN",
            # tests check the index versions their statements make: a CREATE over writers' filters that miss the
            # budget does not re-size them in the background here (the Scala suites test that)
            "spark.sparkbloom.harvest.resizeInBackground": "false"}
    if harness_jar().is_file():  # for test_foreign_fuzz.py's decision level; that test fails without it
        conf["spark.jars"] = str(harness_jar())
    session = local_session("sparkbloom tests", warehouse_dir=tmp_path_factory.mktemp("warehouse"), conf=conf)
    yield session
    session.stop()


@pytest.fixture
def bloom_enabled(spark: SparkSession) -> Iterator[None]:
    """Leaves spark.sparkbloom.enabled as the test found it."""
    before = spark.conf.get("spark.sparkbloom.enabled", "true")
    yield
    spark.conf.set("spark.sparkbloom.enabled", before)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster: starts a Spark standalone master and workers on 127.0.0.1 (deselect: -m 'not cluster')"
    )
