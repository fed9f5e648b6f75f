"""Spark Connect: every Python helper from a Connect client, against a real Connect server.

dev/matrix runs this file on each Spark line with a pyspark release, in that line's venv (pyspark, its Connect
client's dependencies, pytest and the sparkbloom wheel), twice: with the server started by Spark's own
``start-connect-server.sh`` with sparkbloom's jars on ``--jars`` (``SPARKBLOOM_CONNECT_SERVER=script``), and by
``sparkbloom.configure(SparkSession.builder.remote("local[2]"))`` (``=local``, the default). Spark 3.5's Connect
server is a plugin from Maven Central (``org.apache.spark:spark-connect_2.12``); 4.x bundles it.

Only the pyspark releases from 4.3 carry ``sbin/start-connect-server.sh``; for the others dev/matrix points
``SPARKBLOOM_CONNECT_SCRIPT`` at pyspark 4.3.0's copy (from PyPI), which starts any line's server (it runs
``spark-daemon.sh submit org.apache.spark.sql.connect.service.SparkConnectServer`` of ``$SPARK_HOME``).

Every lookup is checked against the same query with sparkbloom switched off, through the same client.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
from pyspark.sql import SparkSession

import sparkbloom

MODE = os.environ.get("SPARKBLOOM_CONNECT_SERVER", "local")
SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_35 = pyspark.__version__.startswith("3.")
SCALA = "2.12" if SPARK_35 else "2.13"
# Spark 3.5's Connect server is not in the pyspark release: its plugin comes from Maven Central.
SERVER_URL = ""  # the server start_server started, for the thin client
# (SPARKBLOOM_CONNECT_PLUGIN names another patch release when the mirror at hand lacks this one.)
CONNECT_PLUGIN = os.environ.get(
    "SPARKBLOOM_CONNECT_PLUGIN", f"org.apache.spark:spark-connect_{SCALA}:{pyspark.__version__}"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def connect_script() -> Path:
    own = SPARK_HOME / "sbin" / "start-connect-server.sh"
    script = own if own.is_file() else Path(os.environ.get("SPARKBLOOM_CONNECT_SCRIPT") or own)
    assert script.is_file(), (
        f"no start-connect-server.sh: pyspark {pyspark.__version__} has none; set SPARKBLOOM_CONNECT_SCRIPT to "
        "a Spark release's sbin/start-connect-server.sh (dev/matrix uses pyspark 4.3.0's)"
    )
    return script


def start_server(tmp: Path, with_sparkbloom: bool = True) -> tuple[subprocess.Popen[bytes], int, Path]:
    """Spark's own start-connect-server.sh (in the foreground: --wait), with sparkbloom on --jars (or without)."""
    port = free_port()
    conf = sparkbloom.spark_conf()
    args = ["bash", str(connect_script()), "--wait", "--master", "local[2]"]
    if with_sparkbloom:
        args += [
            "--jars", conf["spark.jars"],
            "--conf", f"spark.sql.extensions={conf['spark.sql.extensions']}",
            "--conf", f"spark.driver.extraJavaOptions={conf['spark.driver.extraJavaOptions']}",
            "--conf", f"spark.executor.extraJavaOptions={conf['spark.executor.extraJavaOptions']}",
        ]
    args += [
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=2",
        "--conf", f"spark.sql.warehouse.dir={tmp / 'warehouse'}",
    ]
    if SPARK_35:
        args += ["--packages", CONNECT_PLUGIN]
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOG_DIR": str(tmp), "SPARK_PID_DIR": str(tmp)}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    log = tmp / f"connect-server-{port}.log"
    with log.open("wb") as out:  # its own process group: the script's JVM is stopped with it (stop_server)
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp, start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the Connect server exited ({proc.returncode}):\n{log.read_text()[-4000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, port, log
        time.sleep(0.5)
    stop_server(proc)
    pytest.fail(f"the Connect server did not listen on {port} within 180 s:\n{log.read_text()[-4000:]}")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Stops the script, spark-submit and the server's JVM (the script's process group): nothing outlives the test."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SparkSession, list[str]]]:
    """The Connect session, and the warnings building it raised."""
    tmp = tmp_path_factory.mktemp("connect")
    proc = None
    global SERVER_URL
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if MODE == "script":
            proc, port, _ = start_server(tmp)
            SERVER_URL = f"sc://localhost:{port}"
            builder = SparkSession.builder.remote(SERVER_URL)
            before = dict(getattr(builder, "_options", {}))
            configured = sparkbloom.configure(builder)
            assert dict(getattr(configured, "_options", {})) == before  # a remote server is configured where it runs
        else:
            assert MODE == "local", MODE
            if SPARK_35:  # pyspark 3.5's local server needs the plugin on the JVM's classpath
                os.environ["PYSPARK_SUBMIT_ARGS"] = f"--packages {shlex.quote(CONNECT_PLUGIN)} pyspark-shell"
            configured = sparkbloom.configure(
                SparkSession.builder.remote("local[2]")
                .config("spark.sql.shuffle.partitions", "2")  # runtime settings: the client may set them
                .config("spark.sql.session.timeZone", "UTC")
            )
        session = configured.getOrCreate()
    assert sparkbloom._connect.is_connect(session), type(session)
    # pyspark 3.5's own DeprecationWarnings (distutils' LooseVersion) are not about the configuration.
    yield session, [f"{w.category.__name__}: {w.message}" for w in caught if w.category is not DeprecationWarning]
    session.stop()
    if proc is not None:
        stop_server(proc)


@pytest.fixture(scope="module")
def table(spark: tuple[SparkSession, list[str]], tmp_path_factory: pytest.TempPathFactory) -> str:
    """20 Parquet files of 500 rows each: k = id, s = 'user-<id>'."""
    session, _ = spark
    path = str(tmp_path_factory.mktemp("data") / "events")
    session.range(0, 10_000, 1, 20).selectExpr("id AS k", "concat('user-', id) AS s").write.parquet(path)
    return path


def rows_off_and_on(session: SparkSession, make: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], Any]:
    """(rows with sparkbloom off, rows with it on, the DataFrame run with it on, after its action)."""
    session.conf.set("spark.sparkbloom.enabled", "false")
    try:
        off = sorted(tuple(r) for r in make().collect())
    finally:
        session.conf.set("spark.sparkbloom.enabled", "true")
    df = make()
    return off, sorted(tuple(r) for r in df.collect()), df


def test_configure_makes_no_warnings(spark: tuple[SparkSession, list[str]]) -> None:
    session, caught = spark
    assert caught == []
    # The server runs sparkbloom: its SQL functions and statements answer.
    assert session.sql("SELECT sbbf_num_bytes(10000, 0.1)").first()[0] == 8192  # type: ignore[index]


def test_every_helper_from_a_connect_client(spark: tuple[SparkSession, list[str]], table: str) -> None:
    session, _ = spark
    events = session.read.parquet(table)
    idx = events.bloomFilterIndex("k")
    assert (idx.name, idx.columns) == ("bloom_k", ("k",))
    described = idx.describe()
    assert described["files_covered"] == 20 and described["files_not_covered"] == 0
    assert [i.name for i in sparkbloom.indexes(session, table)] == ["bloom_k"]

    # An equality lookup: the rows of sparkbloom off, and 1 file of 20 read, per the metrics Connect returned.
    off, on, q = rows_off_and_on(session, lambda: session.read.parquet(table).where("k = 4242"))
    assert on == off == [(4242, "user-4242")]
    if not SPARK_35:  # DataFrame.executionInfo is pyspark 4.0 and later
        [s] = sparkbloom.skipping(q)
        assert (s.index.split(" on ")[0], s.predicate) == ("bloom_k", "k = 4242")
        assert (s.files_total, s.files_kept) == (20, 1), s
        [scan] = sparkbloom.scan_metrics(q)
        assert scan["metrics"]["numFiles"] == 1 and scan["bloom_metrics"]["filesSkipped"] == 19, scan
    # Every pyspark: the metrics that come with toPandas().
    pdf = session.read.parquet(table).where("k IN (3, 9999)").toPandas()
    assert sorted(pdf["k"]) == [3, 9999]
    [s] = sparkbloom.skipping(pdf, session)
    assert (s.files_total, s.files_kept, s.row_groups_total) == (20, 2, 20), s
    assert s.table.endswith(table.lstrip("/")) and s.predicate.startswith("k IN"), s
    [scan] = sparkbloom.scan_metrics(pdf, session)
    assert scan["metrics"]["numFiles"] == 2 and scan["table"].endswith(table.lstrip("/")), scan

    # Run-time keys: a join on the indexed column reads the files its keys can be in.
    session.conf.set("spark.sparkbloom.runtimePruning.minTableSize", "0")
    keys = session.createDataFrame([(17,), (8123,)], "k long")
    off, on, _ = rows_off_and_on(session, lambda: session.read.parquet(table).join(keys, "k"))
    assert on == off == [(17, "user-17"), (8123, "user-8123")]
    pdf = session.read.parquet(table).join(keys, "k").toPandas()
    [s] = sparkbloom.skipping(pdf, session)
    assert s.keys_probed == 2 and s.files_kept == 2, s

    report = sparkbloom.inspect_parquet(session, table, ["k=4242"])
    assert len(report["files"]) == 20 and all(f["status"] == "ok" for f in report["files"])

    assert idx.refresh(full=True).describe()["version"] == 2
    assert idx.drop() is True
    assert sparkbloom.indexes(session, table) == []
    assert idx.drop(if_exists=True) is False


def test_errors_are_sparkbloom_errors(spark: tuple[SparkSession, list[str]], table: str) -> None:
    session, _ = spark
    with pytest.raises(sparkbloom.BloomIndexError, match="not a plain scan"):
        session.range(3).bloomFilterIndex("id")
    with pytest.raises(sparkbloom.BloomIndexError, match="Column nope is not in the DataFrame"):
        session.read.parquet(table).bloomFilterIndex("nope")
    with pytest.raises(sparkbloom.BloomIndexError, match="does not exist"):
        sparkbloom.BloomIndex(session, table, "never_made", ["k"]).describe()
    # The temporary views that carried the DataFrames are gone.
    assert [t.name for t in session.catalog.listTables() if t.name.startswith("sparkbloom_df_")] == []
    # A DataFrame no action ran on has no metrics to read (and pyspark 3.5's keeps none at all).
    with pytest.raises(sparkbloom.SparkBloomError, match="keeps no metrics" if SPARK_35 else "has not run yet"):
        sparkbloom.skipping(session.read.parquet(table))


THIN_CLIENT = r"""
import json, sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import sparkbloom
    from pyspark.sql import SparkSession
    spark = sparkbloom.configure(SparkSession.builder.remote(sys.argv[1])).getOrCreate()
table = sys.argv[2]
idx = spark.read.parquet(table).bloomFilterIndex("s", name="thin_s")
spark.conf.set("spark.sparkbloom.enabled", "false")
off = sorted(tuple(r) for r in spark.read.parquet(table).where("s = 'user-777'").collect())
spark.conf.set("spark.sparkbloom.enabled", "true")
q = spark.read.parquet(table).where("s = 'user-777'")
on = sorted(tuple(r) for r in q.collect())
[s] = [r for r in sparkbloom.skipping(q) if r.index.startswith("thin_s")]
dropped = idx.drop()
print("THIN " + json.dumps({
    "py4j": "py4j" in sys.modules, "warnings": [str(w.message) for w in caught if w.category is not DeprecationWarning],
    "off": off, "on": on, "files": [s.files_total, s.files_kept], "dropped": dropped,
}))
"""


def test_the_thin_pyspark_client_needs_no_py4j(spark: tuple[SparkSession, list[str]], table: str) -> None:
    """Spark 4's pyspark-client (no JVM, no py4j) with the sparkbloom wheel, against the script-started server.
    dev/matrix makes its venv on the default line (SPARKBLOOM_THIN_CLIENT_PYTHON)."""
    python = os.environ.get("SPARKBLOOM_THIN_CLIENT_PYTHON")
    if MODE != "script" or not python:
        pytest.skip("the thin client runs against a script-started server, where dev/matrix gives it a venv")
    check = subprocess.run([python, "-c", "import py4j"], capture_output=True, text=True)
    assert check.returncode != 0, "the thin client's venv has py4j"
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS")}
    proc = subprocess.run([python, "-c", THIN_CLIENT, SERVER_URL, table], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("THIN ")]
    r = json.loads(line[5:])
    assert r["py4j"] is False and r["warnings"] == [], r
    assert r["on"] == r["off"] == [[777, "user-777"]], r
    assert r["files"] == [20, 1] and r["dropped"] is True, r


THIN_WITHOUT_SPARKBLOOM = r"""
import sys
import sparkbloom
from pyspark.sql import SparkSession
spark = sparkbloom.configure(SparkSession.builder.remote(sys.argv[1])).getOrCreate()
try:
    sparkbloom.indexes(spark, "/tmp/anything")
except sparkbloom.JarNotLoadedError as e:
    print("NOT LOADED " + str(e))
"""


def test_a_server_without_sparkbloom_is_named_as_such(tmp_path: Path) -> None:
    """A Connect server started without sparkbloom: the helpers say what the server needs (the thin client, on the
    default line, where dev/matrix gives it a venv)."""
    python = os.environ.get("SPARKBLOOM_THIN_CLIENT_PYTHON")
    if MODE != "script" or not python:
        pytest.skip("runs with the thin client, against a script-started server")
    proc, port, log = start_server(tmp_path, with_sparkbloom=False)
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS")}
        run = subprocess.run([python, "-c", THIN_WITHOUT_SPARKBLOOM, f"sc://localhost:{port}"], capture_output=True,
                             text=True, env=env, timeout=300)
    finally:
        stop_server(proc)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    [line] = [x for x in run.stdout.splitlines() if x.startswith("NOT LOADED ")]
    assert "sparkbloom is not loaded on this Spark Connect server" in line
    assert "spark.sql.extensions=sparkbloom.SparkBloomExtensions" in line and "--packages" in line, line
