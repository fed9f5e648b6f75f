"""Session wiring: the bundled jars, the extension, the JVM flags, and configure() merging with user settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import sparkbloom


def test_the_package_carries_sparkbloom_jar_and_the_jars_spark_does_not_ship() -> None:
    names = [Path(p).name for p in sparkbloom.jar_paths()]
    assert "sparkbloom.jar" in names
    assert any(n.startswith("zero-allocation-hashing") for n in names)
    assert all(Path(p).is_file() for p in sparkbloom.jar_paths())


def test_the_jar_is_the_one_of_the_running_spark_line(spark: SparkSession) -> None:
    version, scala = sparkbloom.session.spark_version()
    assert version == spark.version  # read from the spark-core jar of the Spark pyspark launched
    line = sparkbloom.session.line_for(version, scala)
    assert any(p.endswith(f"/spark-{line}/sparkbloom.jar") for p in sparkbloom.jar_paths())
    assert spark.sparkContext._jvm.sparkbloom.BuildInfo.line() == line


@pytest.mark.parametrize("version, scala, line", [
    ("3.5.0", "2.12", "3.5"), ("3.5.9", "2.13", "3.5_2.13"), ("4.0.5", "2.13", "4.0"), ("4.1.0", "2.13", "4.1"),
    ("4.2.1", "2.13", "4.2"), ("4.3.0", "2.13", "4.3"), ("4.3.0-SNAPSHOT", "2.13", "4.3"),
])
def test_each_supported_spark_gets_its_lines_jar(version: str, scala: str, line: str) -> None:
    assert sparkbloom.session.line_for(version, scala) == line


@pytest.mark.parametrize("version", ["3.4.4", "3.3.0", "4.4.0", "5.0.0", "2.4.8", "dev"])
def test_an_unsupported_spark_is_refused_naming_the_supported_lines(version: str) -> None:
    refusal = r"supports Spark 3\.5, 4\.0, 4\.1, 4\.2, 4\.3; this Spark is " + version
    with pytest.raises(sparkbloom.SparkBloomError, match=refusal):
        sparkbloom.session.line_for(version, "2.13")


def test_a_package_without_the_lines_jar_says_which_it_carries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "jars" / "spark-4.0").mkdir(parents=True)
    (tmp_path / "jars" / "spark-4.0" / "sparkbloom.jar").write_bytes(b"")
    monkeypatch.setattr(sparkbloom.session, "_PACKAGE_DIR", tmp_path)
    monkeypatch.setattr(sparkbloom.session, "spark_version", lambda: ("4.3.0", "2.13"))
    with pytest.raises(sparkbloom.SparkBloomError, match=r"no jar for Spark 4\.3 \(Spark 4\.3\.0\); it carries 4\.0"):
        sparkbloom.jar_paths()
    monkeypatch.setattr(sparkbloom.session, "spark_version", lambda: ("4.0.5", "2.13"))
    assert sparkbloom.jar_paths() == [str(tmp_path / "jars" / "spark-4.0" / "sparkbloom.jar")]


def test_the_jvm_flags_come_from_the_projects_single_flags_file() -> None:
    root_flags = Path(__file__).resolve().parents[2] / "project" / "jvm-flags.txt"
    expected = [f.strip() for f in root_flags.read_text().splitlines() if f.strip() and not f.startswith("#")]
    assert sparkbloom.java_options() == expected
    assert "--add-modules=jdk.incubator.vector" in sparkbloom.java_options()


def test_the_session_loads_the_extension_and_the_python_api_class(spark: SparkSession) -> None:
    assert "sparkbloom.SparkBloomExtensions" in spark.conf.get("spark.sql.extensions").split(",")
    from py4j.java_gateway import JavaClass

    assert isinstance(getattr(spark.sparkContext._jvm, "sparkbloom.api.PythonApi"), JavaClass)


def test_the_driver_jvm_runs_with_the_vector_module(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert "--add-modules=jdk.incubator.vector" in args


def test_the_extension_registers_the_sbbf_functions(spark: SparkSession) -> None:
    assert spark.sql("SELECT sbbf_num_bytes(10000, 0.1)").first()[0] == 8192


@pytest.mark.filterwarnings("ignore:a SparkContext is already running")  # the session fixture may be up
def test_configure_appends_to_the_users_extensions_jars_and_java_options() -> None:
    builder = (
        SparkSession.builder.config("spark.sql.extensions", "com.example.Ext")
        .config("spark.jars", "/opt/extra.jar")
        .config("spark.driver.extraJavaOptions", "-Dmy.flag=1 -Xss8m")
        .config("spark.executor.extraJavaOptions", "-Dexec.flag=2")
    )
    options = sparkbloom.configure(builder)._options  # type: ignore[attr-defined]
    assert options["spark.sql.extensions"] == "com.example.Ext,sparkbloom.SparkBloomExtensions"
    assert options["spark.jars"].split(",") == ["/opt/extra.jar", *sparkbloom.jar_paths()]
    driver = options["spark.driver.extraJavaOptions"]
    assert driver.startswith("-Dmy.flag=1 -Xss8m ")
    assert "--add-modules=jdk.incubator.vector" in driver.split()
    executor = options["spark.executor.extraJavaOptions"]
    assert executor.startswith("-Dexec.flag=2 ")
    assert "--add-modules=jdk.incubator.vector" in executor.split()


@pytest.mark.filterwarnings("ignore:a SparkContext is already running")  # the session fixture may be up
def test_configure_twice_adds_nothing_twice() -> None:
    once = dict(sparkbloom.configure(SparkSession.builder)._options)  # type: ignore[attr-defined]
    twice = dict(sparkbloom.configure(sparkbloom.configure(SparkSession.builder))._options)  # type: ignore[attr-defined]
    assert once == twice
    assert once["spark.sql.extensions"] == "sparkbloom.SparkBloomExtensions"


@pytest.mark.filterwarnings("ignore:a SparkContext is already running")  # the session fixture may be up
def test_configure_keeps_a_users_flag_that_is_already_there_once() -> None:
    builder = SparkSession.builder.config("spark.driver.extraJavaOptions", "--add-modules=jdk.incubator.vector")
    driver = sparkbloom.configure(builder)._options["spark.driver.extraJavaOptions"]  # type: ignore[attr-defined]
    assert driver.split().count("--add-modules=jdk.incubator.vector") == 1


def test_configure_warns_when_the_jvm_is_already_running(spark: SparkSession) -> None:
    with pytest.warns(UserWarning, match="already running") as warned:
        sparkbloom.configure(SparkSession.builder)
    assert [w.filename for w in warned] == [__file__]  # the warning names the caller's line


def test_local_session_runs_here_without_ui_with_two_shuffle_partitions(spark: SparkSession) -> None:
    # the session fixture is sparkbloom.session.local_session's, with a warehouse and two more settings
    assert spark.sparkContext.master == "local[2]" and spark.sparkContext.appName == "sparkbloom tests"
    assert spark.conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.conf.get("spark.ui.showConsoleProgress") == "false"
    assert "warehouse" in spark.conf.get("spark.sql.warehouse.dir")
    assert spark.conf.get("spark.sql.extensions").split(",")[-1] == "sparkbloom.SparkBloomExtensions"


def test_spark_conf_lists_what_spark_submit_needs() -> None:
    conf = sparkbloom.spark_conf()
    assert set(conf) == {
        "spark.jars",
        "spark.sql.extensions",
        "spark.driver.extraJavaOptions",
        "spark.executor.extraJavaOptions",
    }
