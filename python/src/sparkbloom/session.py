"""Session wiring: the bundled jars, the SQL extension and the JVM flags, merged into a builder.

Nothing is downloaded: the jars travel inside this package.

    >>> from pyspark.sql import SparkSession
    >>> import sparkbloom
    >>> spark = sparkbloom.configure(SparkSession.builder.master("local[2]")).getOrCreate()
    >>> spark.sql("SELECT sbbf_num_bytes(10000, 0.1)").first()[0]
    8192
"""

from __future__ import annotations

import shlex
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List

from . import _jvm
from .errors import SparkBloomError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_PACKAGE_DIR = Path(__file__).resolve().parent


def jar_paths() -> List[str]:
    """The jars sparkbloom needs on the classpath: its own and the ones Spark does not ship.

    For ``spark-submit``, ``spark-shell`` and ``spark-sql``::

        spark-submit --jars "$(python -c 'import sparkbloom; print(",".join(sparkbloom.jar_paths()))')" ...
    """
    jars = sorted(str(p) for p in (_PACKAGE_DIR / "jars").glob("*.jar"))
    if not any(Path(j).name == "sparkbloom.jar" for j in jars):
        raise SparkBloomError(
            f"sparkbloom.jar is missing from {_PACKAGE_DIR / 'jars'}: this package was built without its "
            "jars (build it with dev/common.sh ensure_package, as the README says)"
        )
    return jars


def java_options() -> List[str]:
    """The JVM flags sparkbloom needs (``--add-modules=jdk.incubator.vector`` and Spark's own opens)."""
    path = _PACKAGE_DIR / "jvm-flags.txt"
    if not path.is_file():
        raise SparkBloomError(f"{path} is missing: this package was built without its JVM flags")
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def spark_conf(existing: Dict[str, str] | None = None) -> Dict[str, str]:
    """The Spark settings :func:`configure` applies, merged into `existing` settings.

    Lists are appended to (``spark.jars``, ``spark.sql.extensions``) and JVM flags added to the
    user's, never replacing them:

    >>> conf = spark_conf({"spark.sql.extensions": "my.Ext"})
    >>> conf["spark.sql.extensions"]
    'my.Ext,sparkbloom.SparkBloomExtensions'
    """
    existing = existing or {}
    flags = java_options()
    return {
        _jvm.CONF_JARS: _merge_list(existing.get(_jvm.CONF_JARS), jar_paths()),
        _jvm.CONF_EXTENSIONS: _merge_list(existing.get(_jvm.CONF_EXTENSIONS), [_jvm.EXTENSIONS]),
        _jvm.CONF_DRIVER_JAVA_OPTIONS: _merge_flags(existing.get(_jvm.CONF_DRIVER_JAVA_OPTIONS), flags),
        _jvm.CONF_EXECUTOR_JAVA_OPTIONS: _merge_flags(existing.get(_jvm.CONF_EXECUTOR_JAVA_OPTIONS), flags),
    }


def configure(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Returns `builder` set up for sparkbloom: bundled jars, SQL extension, driver and executor flags.

    Settings already on the builder are kept and added to. Call it before ``getOrCreate()`` of the
    first session of the process: a JVM that is already running cannot take new jars or flags.

    >>> builder = SparkSession.builder.master("local[2]").config("spark.sql.extensions", "my.Ext")
    >>> spark = sparkbloom.configure(builder).getOrCreate()
    >>> spark.conf.get("spark.sql.extensions")
    'my.Ext,sparkbloom.SparkBloomExtensions'
    """
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        warnings.warn(
            "a SparkContext is already running: sparkbloom.configure() cannot add jars or JVM flags to it; "
            "configure the builder before the first getOrCreate()",
            stacklevel=2,
        )
    options = getattr(builder, "_options", {})
    existing = {k: str(v) for k, v in options.items()}
    for key, value in spark_conf(existing).items():
        builder = builder.config(key, value)
    return builder


def _merge_list(existing: str | None, additions: List[str]) -> str:
    items = [s.strip() for s in (existing or "").split(",") if s.strip()]
    items += [a for a in additions if a not in items]
    return ",".join(items)


def _merge_flags(existing: str | None, additions: List[str]) -> str:
    present = set(shlex.split(existing or ""))
    missing = [f for f in additions if f not in present]
    return " ".join(([existing.strip()] if existing and existing.strip() else []) + missing)
