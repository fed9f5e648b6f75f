"""A real Spark standalone cluster: one master and two workers on 127.0.0.1, started from the pyspark
distribution by the fixture and stopped by it. A driver attached to it (cluster_driver.py, its own
process) writes a 40-file table, creates a bloom index with SQL (the build job runs on the executors,
which load sparkbloom.jar shipped through spark.jars) and runs point and IN lookups. The test checks the
rows against the index switched off, that the tasks ran on the executors, and that a local-mode session
reading the same index reads the same files.

Skip with ``pytest -m "not cluster"``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import sparkbloom

from cluster_driver import FILES, QUERIES, run_queries
from conftest import run_python

pytestmark = pytest.mark.cluster

HERE = Path(__file__).resolve().parent
WORKERS = 2
STARTUP_TIMEOUT = 180


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def master_state(webui: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json", timeout=5) as response:
        return json.load(response)


@dataclass
class Cluster:
    url: str
    webui: str
    work_dir: Path
    env: dict[str, str]


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=20)


def _processes_under(base: Path) -> list[int]:
    """Live processes (executors included) started in or for the cluster's temp directory."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if (cwd == str(base) or cwd.startswith(str(base) + os.sep) or str(base) in cmdline) \
                and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("java") is None:
        pytest.fail("java is not on PATH: a standalone cluster needs it")
    base = tmp_path_factory.mktemp("cluster")
    home = spark_home()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARK_")}
    env.update(
        SPARK_HOME=str(home),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_SCALA_VERSION="2.13",  # the launcher library asks for it when SPARK_HOME is not a build tree
        SPARK_LOCAL_DIRS=str(base / "local"),
        SPARK_LOG_DIR=str(base / "logs"),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    java = [
        "java", "-Xmx256m", "-cp", f"{home / 'jars'}/*", *sparkbloom.java_options(),
    ]
    port, webui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    logs: list[Path] = []
    procs: list[subprocess.Popen] = []

    def launch(name: str, args: list[str]) -> None:
        log = base / f"{name}.log"
        logs.append(log)
        with log.open("wb") as out:
            procs.append(subprocess.Popen([*java, *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, cwd=base))

    def tails() -> str:
        return "\n".join(f"--- {log.name} ---\n{log.read_text(errors='replace')[-3000:]}" for log in logs)

    try:
        launch("master", ["org.apache.spark.deploy.master.Master",
                          "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui)])
        for n in range(WORKERS):
            work = base / f"worker{n}"
            work.mkdir()
            launch(f"worker{n}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                  "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()),
                                  "--work-dir", str(work), url])
        deadline, alive = time.monotonic() + STARTUP_TIMEOUT, 0
        while True:
            if any(p.poll() is not None for p in procs):
                pytest.fail(f"a cluster JVM exited during start-up:\n{tails()}")
            try:
                state = master_state(webui)
                alive = sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")
            except OSError:
                alive = 0
            if alive == WORKERS:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"{alive} of {WORKERS} workers ALIVE on {url} after {STARTUP_TIMEOUT}s:\n{tails()}")
            time.sleep(1)
        yield Cluster(url=url, webui=f"http://127.0.0.1:{webui}", work_dir=base, env=env)
    finally:
        _stop(procs)
        leftovers = _processes_under(base)
        for pid in leftovers:  # executors a killed worker could not stop
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        assert not leftovers, f"processes left behind by the cluster: {leftovers}"


def test_a_standalone_cluster_builds_the_index_on_its_executors_and_skips_like_local_mode(
    cluster: Cluster, spark: SparkSession, bloom_enabled: None, tmp_path: Path
) -> None:
    data = str(tmp_path / "events")
    out = run_python(sys.executable,
                     [str(HERE / "cluster_driver.py"), "--master", cluster.url, "--data", data,
                      "--build", "--master-ui", cluster.webui],
                     cwd=tmp_path, env=cluster.env, timeout=900)
    [line] = [line for line in out.splitlines() if line.startswith("RESULT:")]
    report = json.loads(line[len("RESULT:"):])

    # The driver was attached to the standalone master, with two executors from the two workers.
    assert report["master"] == cluster.url
    assert report["data_files"] == FILES
    executors = [e for e in report["executors"] if e != "driver"]
    assert len(executors) == WORKERS, report["executors"]
    assert [a["id"] for a in report["master_apps"]] == [report["app_id"]], report["master_apps"]
    # CREATE BLOOM INDEX ran its tasks on the executors (a standalone driver runs none itself) ...
    build = report["build_tasks"]
    assert build.get("driver", 0) == 0 and sum(build[e] for e in executors) > 0, build
    # ... which loaded sparkbloom.jar, fetched from the driver through spark.jars.
    shipped = sorted(p.parent.name for p in cluster.work_dir.glob(f"worker*/{report['app_id']}/*/sparkbloom.jar"))
    assert shipped == sorted(executors), list(cluster.work_dir.glob("worker*/**/*.jar"))

    # A local-mode session reading the same table and the same index.
    local = run_queries(spark, spark.read.parquet(data))

    assert set(report["queries"]) == set(QUERIES)
    for name, on_cluster in report["queries"].items():
        on_local = local[name]
        # The same rows with the index on and off, on the cluster and locally.
        assert on_cluster["rows_on"] == on_cluster["rows_off"] == on_local["rows_on"] == on_local["rows_off"], name
        if not name.startswith("absent"):
            assert on_cluster["rows_on"], name
        # Without the index every file is read; with it, the same files on the cluster as locally.
        assert on_cluster["num_files_off"] == on_local["num_files_off"] == FILES, name
        assert on_cluster["skipping_off"] == [] == on_local["skipping_off"], name
        assert on_cluster["num_files_on"] == on_local["num_files_on"], (name, on_cluster, on_local)
        [rec_cluster] = on_cluster["skipping_on"]
        [rec_local] = on_local["skipping_on"]
        # The same decision (probe time and bytes read from storage depend on timing and on each driver's cache).
        decision = ("index", "table", "predicate", "files_total", "files_kept", "row_groups_total", "row_groups_kept",
                    "files_not_covered")
        assert {k: rec_cluster[k] for k in decision} == {k: rec_local[k] for k in decision}, name
        assert rec_cluster["probe_time_ms"] >= 0 and rec_cluster["index_bytes_read"] >= 0, (name, rec_cluster)
        assert rec_cluster["files_total"] == FILES and rec_cluster["files_not_covered"] == 0, (name, rec_cluster)
        assert rec_cluster["files_kept"] == on_cluster["num_files_on"], (name, rec_cluster)
        assert rec_cluster["files_kept"] < FILES / 4, (name, rec_cluster)  # the lookups really skip

    expected_kept = {"point id": 1, "point email": 1, "IN id": 3, "IN email": 2, "absent id": 0, "absent email": 0}
    kept = {name: q["num_files_on"] for name, q in report["queries"].items()}
    print(f"\nbuild tasks per executor: {build}; jar fetched by executors {shipped}")
    print(f"files read on the cluster (40 files): {kept}; local: "
          f"{ {name: q['num_files_on'] for name, q in local.items()} }")
    assert {n: k for n, k in kept.items() if n.startswith("absent")} == {"absent id": 0, "absent email": 0}
    # Present keys: at least their own files; a bloom false positive (fpp 0.001) may add one.
    for name, n in expected_kept.items():
        assert n <= kept[name] <= n + 1, (name, kept)
