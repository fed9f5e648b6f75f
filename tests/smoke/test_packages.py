"""--packages smoke: sparkbloom's Maven artifacts, as a user without the Python package gets them.

dev/matrix runs this file on each Spark line with a pyspark release, in that line's plain venv (pyspark and pytest,
the sparkbloom wheel uninstalled first), after building every line's artifacts into the Maven-layout repository
dist/maven (dev/common.sh build_lines; dev/release makes the same). It starts Spark's own launchers from this
pyspark with

    --packages io.github.sparkbloom:sparkbloom-spark-<line>_<scala>:<version> --repositories file://<root>/dist/maven
    --conf spark.sql.extensions=sparkbloom.SparkBloomExtensions --conf spark.jars.ivy=<fresh directory>

(a fresh ivy home per session, so a jar resolved earlier can never be used; zero-allocation-hashing comes from
Maven Central) and checks:

- spark-submit of a Python script (every line): a pruned lookup on an indexed Parquet table returns the rows Spark
  returns with sparkbloom off and reads fewer files (Spark's own `numFiles` metric of the scan);
- spark-sql -e (default line): an sbbf_* function's value;
- the pyspark shell fed a script on stdin (default line): the extension's functions;
- a Maven build of tests/smoke/consumer (default line): resolves the artifact and its compile dependencies, compiles
  and runs Java code against sparkbloom's bloom filter with no Spark on the classpath.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROPS = (ROOT / "project" / "versions.properties").read_text().splitlines()
VERSION = next(p.split("=", 1)[1].strip() for p in PROPS if p.startswith("version="))
DEFAULT_LINE = next(p.split("=", 1)[1].strip() for p in PROPS if p.startswith("defaultLine="))
REPO = ROOT / "dist" / "maven"
EXTENSIONS = "sparkbloom.SparkBloomExtensions"
# The JVM flag the README recommends for the driver (the Vector API kernel; without it, the scalar one).
DRIVER_FLAGS = "--add-modules=jdk.incubator.vector"


def _spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def _line() -> tuple[str, str]:
    """(line id of project/versions.properties, Scala binary version) of the Spark this pyspark launches."""
    for jar in sorted(glob.glob(str(_spark_home() / "jars" / "spark-core_*.jar"))):
        m = re.fullmatch(r"spark-core_(2\.1[23])-(\d+)\.(\d+)\.\d+.*\.jar", os.path.basename(jar))
        if m:
            scala, minor = m.group(1), f"{m.group(2)}.{m.group(3)}"
            for p in PROPS:
                row = re.match(r"line\.(\S+)\s*=\s*(\S+)\s+(\S+)", p)
                if row and row.group(2).startswith(minor + ".") and row.group(3).startswith(scala + "."):
                    return row.group(1), scala
    pytest.fail(f"no line of project/versions.properties for the Spark in {_spark_home()}")


LINE, SCALA = _line()
ARTIFACT = f"sparkbloom-spark-{LINE.split('_')[0]}_{SCALA}"
COORDINATES = f"io.github.sparkbloom:{ARTIFACT}:{VERSION}"
PUBLISHED = REPO / "io" / "github" / "sparkbloom" / ARTIFACT / VERSION / f"{ARTIFACT}-{VERSION}.jar"
on_default_line_only = pytest.mark.skipif(LINE != DEFAULT_LINE, reason=f"runs on the default line {DEFAULT_LINE}")


@pytest.fixture(scope="session")
def ivy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Spark's ivy home for this session: empty at first, so every launch resolves from dist/maven and Central."""
    assert PUBLISHED.is_file(), f"{PUBLISHED} is missing: build it first (dev/release, or dev/matrix)"
    return tmp_path_factory.mktemp("ivy")


def launch(tool: str, ivy: Path, cwd: Path, args: list[str], stdin: str | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Runs `<pyspark's Spark home>/bin/<tool>` with sparkbloom from --packages, in `cwd`."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "PYTHONPATH")
           and not k.startswith("PYSPARK_DRIVER_PYTHON")} | (env or {})
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    command = [str(_spark_home() / "bin" / tool), "--master", "local[2]",
               "--packages", COORDINATES, "--repositories", REPO.as_uri(),
               "--conf", f"spark.sql.extensions={EXTENSIONS}", "--conf", f"spark.jars.ivy={ivy}",
               "--conf", "spark.ui.enabled=false", "--conf", f"spark.sql.warehouse.dir={cwd / 'warehouse'}",
               "--driver-java-options", DRIVER_FLAGS, *args]
    proc = subprocess.run(command, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{tool} exited with {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    # The artifact came from dist/maven: the jar in this session's ivy home is the published one, byte for byte.
    resolved = ivy / "jars" / f"io.github.sparkbloom_{ARTIFACT}-{VERSION}.jar"
    assert resolved.is_file(), f"{resolved} missing:\n{proc.stderr[-5000:]}"
    assert hashlib.sha256(resolved.read_bytes()).digest() == hashlib.sha256(PUBLISHED.read_bytes()).digest()
    return proc


def result(proc: subprocess.CompletedProcess, tag: str) -> dict:
    found = [line[len(tag) + 1:] for line in proc.stdout.splitlines() if line.startswith(tag + " ")]
    assert len(found) == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(found[0])


def test_no_sparkbloom_python_package_is_importable_here(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-c", "import sparkbloom"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode != 0 and "No module named 'sparkbloom'" in proc.stderr, (proc.stdout, proc.stderr)


SUBMITTED = '''
import json, sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("sparkbloom-packages-smoke").getOrCreate()
try:
    import sparkbloom
    # spark-submit puts --packages jars on the PYTHONPATH: the jar's classes make `sparkbloom` a namespace package.
    importable = hasattr(sparkbloom, "configure")
except ImportError:
    importable = False
path = sys.argv[1]
spark.range(0, 20000, 1, 20).selectExpr("id AS k", "concat('v-', id) AS v").write.parquet(path)
spark.sql(f"CREATE BLOOM INDEX packages_k ON parquet.`{path}` (k)")
indexes = [r[0] for r in spark.sql(f"SHOW BLOOM INDEXES ON parquet.`{path}`").collect()]


def lookup(enabled):
    spark.conf.set("spark.sparkbloom.enabled", enabled)
    df = spark.sql(f"SELECT k, v FROM parquet.`{path}` WHERE k = 12345")
    rows = sorted([list(r) for r in df.collect()])
    plan = df._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    # Spark's own metric of the file scan: the files it read.
    files = sum(leaves.apply(i).metrics().get("numFiles").get().value() for i in range(leaves.size())
                if leaves.apply(i).metrics().contains("numFiles"))
    return rows, files, "BloomIndexSkipping" in plan.toString()


off_rows, off_files, off_node = lookup("false")
on_rows, on_files, on_node = lookup("true")
print("PACKAGES_SMOKE " + json.dumps(dict(
    importable=importable, line=spark._jvm.sparkbloom.BuildInfo.line(), indexes=indexes,
    off_rows=off_rows, off_files=off_files, off_node=off_node, on_rows=on_rows, on_files=on_files, on_node=on_node)))
spark.stop()
'''


def test_spark_submit_runs_a_pruned_lookup_with_the_index_off_rows(ivy: Path, tmp_path: Path):
    script = tmp_path / "lookup.py"
    script.write_text(SUBMITTED)
    proc = launch("spark-submit", ivy, tmp_path,
                  ["--conf", "spark.sql.adaptive.enabled=false", str(script), str(tmp_path / "table")])
    r = result(proc, "PACKAGES_SMOKE")
    print(r)
    assert r["importable"] is False  # the driver's Python has no sparkbloom package: the jar alone did this
    assert r["line"] == LINE
    assert r["indexes"] == ["packages_k"]
    assert r["on_rows"] == r["off_rows"] == [[12345, "v-12345"]]
    assert r["off_files"] == 20 and not r["off_node"], r
    assert r["on_files"] <= 2 and r["on_node"], r


@on_default_line_only
def test_spark_sql_runs_a_sparkbloom_function(ivy: Path, tmp_path: Path):
    proc = launch("spark-sql", ivy, tmp_path, ["-S", "-e", "SELECT sbbf_num_bytes(10000, 0.1)"])
    assert proc.stdout.split() == ["8192"], proc.stdout


# Read by the shell's interactive loop (python -i): a compound statement ends with a blank line.
PYSPARK_SHELL = '''
import json
try:
    import sparkbloom
    importable = hasattr(sparkbloom, "configure")
except ImportError:
    importable = False

row = spark.sql("SELECT sbbf_num_bytes(10000, 0.01) AS n, sbbf_might_contain(b, 7L) AS member, "
                "(SELECT count(*) FROM range(1000, 11000) WHERE sbbf_might_contain(b, id)) AS false_positives "
                "FROM (SELECT sbbf_agg(id, sbbf_num_bytes(1000, 0.01)) AS b FROM range(1000))").first()
print("PYSPARK_SHELL " + json.dumps(dict(importable=importable, extensions=spark.conf.get("spark.sql.extensions"),
                                         **row.asDict())))
'''


@on_default_line_only
def test_the_pyspark_shell_runs_sparkbloom_functions(ivy: Path, tmp_path: Path):
    # The shell's start-up (PYTHONSTARTUP: the `spark` session) runs only in interactive mode, so python -i.
    proc = launch("pyspark", ivy, tmp_path, [], stdin=PYSPARK_SHELL, env={"PYSPARK_DRIVER_PYTHON_OPTS": "-i"})
    r = result(proc, "PYSPARK_SHELL")
    print(r)
    assert r["importable"] is False and r["extensions"] == EXTENSIONS
    assert r["n"] == 16384 and r["member"] is True
    assert r["false_positives"] < 500, r  # 10000 absent values at fpp 0.01


@on_default_line_only
def test_a_maven_build_resolves_the_artifact_and_runs_java_against_it(tmp_path: Path):
    mvn = shutil.which("mvn")
    assert mvn, "Maven (mvn) is not on PATH"
    project = tmp_path / "consumer"
    shutil.copytree(Path(__file__).parent / "consumer", project)
    # Maven's own plugins and zero-allocation-hashing are cached between runs; sparkbloom never is.
    local = ROOT / "target" / "smoke-m2"
    shutil.rmtree(local / "io" / "github" / "sparkbloom", ignore_errors=True)
    classpath = tmp_path / "classpath.txt"
    proc = subprocess.run(
        [mvn, "-B", "-q", f"-Dmaven.repo.local={local}", f"-Dsparkbloom.repo={REPO.as_uri()}",
         f"-Dsparkbloom.artifact={ARTIFACT}", f"-Dsparkbloom.version={VERSION}", "compile",
         "dependency:build-classpath", f"-Dmdep.outputFile={classpath}"],
        cwd=project, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    jars = classpath.read_text().strip().split(os.pathsep)
    names = sorted(os.path.basename(j) for j in jars)
    assert f"{ARTIFACT}-{VERSION}.jar" in names and "zero-allocation-hashing-0.16.jar" in names, names
    assert any(n.startswith("scala-library-") for n in names), names
    assert not any(n.startswith("spark-") for n in names), names  # Spark is provided: not resolved for the user
    resolved = next(j for j in jars if os.path.basename(j) == f"{ARTIFACT}-{VERSION}.jar")
    assert Path(resolved).read_bytes() == PUBLISHED.read_bytes()
    run = subprocess.run(["java", "-cp", os.pathsep.join([str(project / "target" / "classes"), *jars]),
                          "consumer.Consumer"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    print(run.stdout)
    fields = dict(f.split("=", 1) for f in run.stdout.split()[1:])
    assert run.stdout.startswith("CONSUMER ") and fields["hashAgrees"] == "true", run.stdout
    assert fields["numBytes"] == "2048" and fields["missing"] == "0", run.stdout
    assert int(fields["falsePositives"]) < 500, run.stdout
    # No --add-modules=jdk.incubator.vector on this JVM: the scalar kernel, with the same results.
    assert fields["kernel"] == "scalar", run.stdout
