"""Session wiring: the bundled jars, the SQL extension and the JVM flags, merged into a builder.

Nothing is downloaded: the jars travel inside this package.

    >>> from pyspark.sql import SparkSession
    >>> import sparkbloom
    >>> spark = sparkbloom.configure(SparkSession.builder.master("local[2]")).getOrCreate()
    >>> spark.sql("SELECT sbbf_num_bytes(10000, 0.1)").first()[0]
    8192
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from . import _connect, _jvm
from .errors import SparkBloomError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_PACKAGE_DIR = Path(__file__).resolve().parent


# The Spark lines this package carries a jar for (jars/spark-<line>/), as (major, minor). Spark 3.5 has
# a Scala 2.12 jar (what pyspark 3.5 ships) and a 2.13 one; every later line is Scala 2.13 only.
SUPPORTED_LINES = ((3, 5), (4, 0), (4, 1), (4, 2), (4, 3))


def spark_version() -> tuple[str, str]:
    """The Spark version and Scala binary version the JVM of a new session will run.

    Read from the ``spark-core`` jar of the Spark home pyspark launches (``$SPARK_HOME``, or the jars
    inside the pyspark package), so a pyspark pointed at another Spark installation gets the jar for
    that Spark. Falls back to ``pyspark.__version__`` (and Scala 2.12 for 3.x, 2.13 for 4.x).
    """
    import pyspark

    try:
        from pyspark.find_spark_home import _find_spark_home

        jars = Path(_find_spark_home()) / "jars"  # type: ignore[no-untyped-call]  # pyspark leaves it unannotated
        for jar in sorted(jars.glob("spark-core_*.jar")):
            m = re.fullmatch(r"spark-core_(2\.1[23])-(\d+\.\d+\.\d+)(?:[-.].*)?\.jar", jar.name)
            if m:
                return m.group(2), m.group(1)
    except Exception:  # no Spark home found: use pyspark's own version
        pass
    version = pyspark.__version__
    return version, ("2.12" if version.startswith("3.") else "2.13")


def line_for(version: str, scala: str) -> str:
    """The jar line (``jars/spark-<line>``) serving Spark `version` on Scala `scala`.

    >>> line_for("4.2.1", "2.13"), line_for("3.5.9", "2.12"), line_for("3.5.3", "2.13")
    ('4.2', '3.5', '3.5_2.13')
    """
    m = re.match(r"(\d+)\.(\d+)", version)
    if not m or (int(m.group(1)), int(m.group(2))) not in SUPPORTED_LINES:
        supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED_LINES)
        raise SparkBloomError(
            f"sparkbloom supports Spark {supported}; this Spark is {version}. "
            "Install a supported pyspark (the sparkbloom package never changes yours)."
        )
    line = f"{m.group(1)}.{m.group(2)}"
    if line == "3.5" and scala == "2.13":
        return "3.5_2.13"
    if scala != ("2.12" if line == "3.5" else "2.13"):
        raise SparkBloomError(f"sparkbloom has no jar for Spark {version} on Scala {scala}")
    return line


def jar_paths() -> list[str]:
    """The jars sparkbloom needs on the classpath of the running Spark: its own, built for that Spark
    line, and the ones Spark does not ship. Raises :class:`SparkBloomError` for an unsupported Spark.

    For ``spark-submit``, ``spark-shell`` and ``spark-sql``::

        spark-submit --jars "$(python -m sparkbloom jars)" ...
    """
    version, scala = spark_version()
    line = line_for(version, scala)
    directory = _PACKAGE_DIR / "jars" / f"spark-{line}"
    jars = sorted(str(p) for p in directory.glob("*.jar"))
    if not any(Path(j).name == "sparkbloom.jar" for j in jars):
        built = sorted(p.name[len("spark-"):] for p in (_PACKAGE_DIR / "jars").glob("spark-*") if p.is_dir())
        raise SparkBloomError(
            f"this sparkbloom package has no jar for Spark {line} (Spark {version}); it carries "
            f"{', '.join(built) or 'none'}. A development build carries the default line only: "
            "build every line with dev/matrix, as the README says"
        )
    return jars


def java_options() -> list[str]:
    """The JVM flags sparkbloom needs (``--add-modules=jdk.incubator.vector`` and Spark's own opens)."""
    path = _PACKAGE_DIR / "jvm-flags.txt"
    if not path.is_file():
        raise SparkBloomError(f"{path} is missing: this package was built without its JVM flags")
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def spark_conf(existing: dict[str, str] | None = None) -> dict[str, str]:
    """The Spark settings :func:`configure` applies, merged into `existing` settings.

    Lists are appended to (``spark.jars``, ``spark.sql.extensions``) and JVM flags added to the
    user's, never replacing them. sparkbloom's extension goes last, after Delta Lake's and Iceberg's:
    Spark runs extensions' rules in the order they are listed, and sparkbloom prunes Delta scans after
    Delta's own data skipping has prepared them (listed first, it would leave Delta tables unpruned):

    >>> conf = spark_conf({"spark.sql.extensions": "my.Ext"})
    >>> conf["spark.sql.extensions"]
    'my.Ext,sparkbloom.SparkBloomExtensions'
    >>> spark_conf({"spark.sql.extensions": "sparkbloom.SparkBloomExtensions,io.delta.sql.DeltaSparkSessionExtension"})[
    ...     "spark.sql.extensions"]
    'io.delta.sql.DeltaSparkSessionExtension,sparkbloom.SparkBloomExtensions'
    """
    existing = existing or {}
    flags = java_options()
    return {
        _jvm.CONF_JARS: _merge_list(existing.get(_jvm.CONF_JARS), jar_paths()),
        _jvm.CONF_EXTENSIONS: _last(existing.get(_jvm.CONF_EXTENSIONS), _jvm.EXTENSIONS),
        _jvm.CONF_DRIVER_JAVA_OPTIONS: _merge_flags(existing.get(_jvm.CONF_DRIVER_JAVA_OPTIONS), flags),
        _jvm.CONF_EXECUTOR_JAVA_OPTIONS: _merge_flags(existing.get(_jvm.CONF_EXECUTOR_JAVA_OPTIONS), flags),
    }


def configure(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Returns `builder` set up for sparkbloom: bundled jars, SQL extension, driver and executor flags.

    Settings already on the builder are kept and added to. Call it before ``getOrCreate()`` of the
    first session of the process: a JVM that is already running cannot take new jars or flags.

    Spark Connect: with ``builder.remote("local...")`` pyspark starts a Connect server in this process, and
    sparkbloom's settings go to that server's JVM when it starts (through ``PYSPARK_SUBMIT_ARGS``, so that the
    client, which may not change a server's static settings, is not asked to: no warnings). A remote server
    (``sc://...``) is configured where it starts, not here: it needs sparkbloom's jar and
    ``spark.sql.extensions=sparkbloom.SparkBloomExtensions`` (``start-connect-server.sh --packages
    io.github.sparkbloom:sparkbloom-spark-<line>_<scala>:<version> --conf spark.sql.extensions=...``, or
    ``--properties-file`` from ``python -m sparkbloom conf``); the builder is returned as it is, and the first
    helper call against a server without sparkbloom raises :class:`JarNotLoadedError` saying so.

    >>> builder = SparkSession.builder.master("local[2]").config("spark.sql.extensions", "my.Ext")
    >>> spark = sparkbloom.configure(builder).getOrCreate()
    >>> spark.conf.get("spark.sql.extensions")
    'my.Ext,sparkbloom.SparkBloomExtensions'
    """
    return _configure(builder)


def _configure(builder: SparkSession.Builder) -> SparkSession.Builder:
    """What :func:`configure` does, one call below it and :func:`local_session` so that the warning names
    the line that called either."""
    options = getattr(builder, "_options", {})
    existing = {k: str(v) for k, v in options.items()}
    remote = _remote_url(existing)
    if remote is not None and not remote.startswith("local"):
        # (pyspark-client, Spark 4's thin Connect client, has no SparkContext or py4j: nothing below is needed.)
        logging.getLogger("sparkbloom").info(
            "sparkbloom.configure: %s is a remote Spark Connect server, nothing to set on the client; %s",
            remote,
            _connect.SERVER_NEEDS,
        )
        return builder
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        warnings.warn(
            "a SparkContext is already running: sparkbloom.configure() cannot add jars or JVM flags to it; "
            "configure the builder before the first getOrCreate()",
            stacklevel=3,
        )
    for key, value in spark_conf(existing).items():
        if remote is None or key in existing:
            # Classic, or a setting the user gave the remote builder already (pyspark replays those as it does).
            builder = builder.config(key, value)
        else:
            _add_submit_conf(key, value)
    return builder


def _remote_url(options: Mapping[str, str]) -> str | None:
    """The Spark Connect URL a builder will connect to (``local...`` when pyspark starts the server itself),
    None for a classic session."""
    url = options.get("spark.remote") or os.environ.get("SPARK_REMOTE")
    if url:
        return url
    if options.get("spark.api.mode", os.environ.get("SPARK_API_MODE", "classic")).lower() == "connect":
        master = options.get("spark.master", os.environ.get("MASTER", "local"))
        return master if master.startswith("sc://") else "local"
    return None


def _add_submit_conf(key: str, value: str) -> None:
    """Adds ``--conf key=value`` to the spark-submit arguments pyspark launches its JVM with, before the user's."""
    argument = f"--conf {shlex.quote(f'{key}={value}')}"
    current = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    if argument not in current:
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"{argument} {current}"


def local_session(
    app_name: str,
    *,
    master: str = "local[2]",
    warehouse_dir: str | os.PathLike[str] | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A small SparkSession on this machine, set up for sparkbloom: for tests, notebooks and local scripts.

    Spark runs in this process (`master`, ``local[2]`` by default) without its web UI, with 2 shuffle
    partitions instead of the 200 made for clusters; `warehouse_dir` sets ``spark.sql.warehouse.dir`` and
    `conf` any other setting. All go on the builder before :func:`configure` adds sparkbloom's jars, extension
    and JVM flags to them (a ``spark.jars`` or ``spark.sql.extensions`` in `conf` is added to, not replaced), so
    this must start the process's first session, as :func:`configure` says.

    >>> spark = sparkbloom.session.local_session("my tests", warehouse_dir="/tmp/wh", conf={"spark.log.level": "WARN"})
    >>> spark.conf.get("spark.sql.shuffle.partitions")
    '2'
    """
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    if warehouse_dir is not None:
        builder = builder.config("spark.sql.warehouse.dir", os.fspath(warehouse_dir))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return _configure(builder).getOrCreate()


def _last(existing: str | None, item: str) -> str:
    items = [s.strip() for s in (existing or "").split(",") if s.strip() and s.strip() != item]
    return ",".join(items + [item])


def _merge_list(existing: str | None, additions: list[str]) -> str:
    items = [s.strip() for s in (existing or "").split(",") if s.strip()]
    items += [a for a in additions if a not in items]
    return ",".join(items)


def _merge_flags(existing: str | None, additions: list[str]) -> str:
    present = set(shlex.split(existing or ""))
    missing = [f for f in additions if f not in present]
    return " ".join(([existing.strip()] if existing and existing.strip() else []) + missing)
