"""Spark sessions on the object store: Hadoop's S3A (hadoop-aws at the Hadoop of this pyspark, resolved by
`sbt s3aJars` into target/s3a/spark-<line>/classpath.txt) pointed at the S3 server dev/objectstore starts, or at
the fault and latency proxy in front of it (tests/objectstore/s3proxy.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[2]


def line() -> str:
    from sparkbloom.session import line_for, spark_version

    return line_for(*spark_version())


def s3a_classpath() -> list[str]:
    """The S3A jars of this Spark line (`dev/sbt s3aJars` lists them; dev/test runs it)."""
    listing = ROOT / "target" / "s3a" / f"spark-{line()}" / "classpath.txt"
    if not listing.is_file():
        raise FileNotFoundError(f"{listing} is missing: run `dev/sbt s3aJars` (SPARKBLOOM_LINE={line()})")
    jars = [j for j in listing.read_text(encoding="utf-8").split() if j]
    missing = [j for j in jars if not os.path.isfile(j)]
    if missing:
        raise FileNotFoundError(f"S3A jars listed in {listing} are gone: {missing}; run `dev/sbt s3aJars` again")
    return jars


def lakehouse_jars() -> list[str]:
    """The Delta Lake and Iceberg runtime jars of this line (`sbt lakehouseJars`), if it has those formats."""
    directory = ROOT / "target" / "lakehouse" / f"spark-{line()}"
    return sorted(str(p) for p in directory.glob("*.jar")) if directory.is_dir() else []


def s3a_conf(endpoint: str, access_key: str, secret_key: str, *, fast_retries: bool = True) -> dict[str, str]:
    """S3A settings for an S3-compatible server on loopback: path-style, plain HTTP, its credentials."""
    conf = {
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.access.key": access_key,
        "spark.hadoop.fs.s3a.secret.key": secret_key,
        "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "spark.hadoop.fs.s3a.change.detection.mode": "none",
    }
    if fast_retries:  # faults are injected: S3A's retries, fewer and quicker than its defaults (500 ms, 7 and 20)
        conf.update({
            "spark.hadoop.fs.s3a.retry.interval": "20ms",
            "spark.hadoop.fs.s3a.retry.limit": "4",
            "spark.hadoop.fs.s3a.retry.throttle.interval": "20ms",
            "spark.hadoop.fs.s3a.retry.throttle.limit": "4",
            "spark.hadoop.fs.s3a.attempts.maximum": "1",
            "spark.hadoop.fs.s3a.connection.timeout": "5000",
            "spark.hadoop.fs.s3a.connection.request.timeout": "10s",
        })
    return conf


def s3_session(endpoint: str, access_key: str, secret_key: str, *, warehouse: str,
               conf: Mapping[str, str] | None = None, lakehouse: bool = True,
               app_name: str = "sparkbloom object store") -> SparkSession:
    """A local sparkbloom session with S3A on the driver's class path; Delta (spark_catalog) and Iceberg
    (catalog `ice`, a Hadoop catalog under `warehouse`/ice) when the line has them and `lakehouse`."""
    import sparkbloom

    settings = {
        "spark.driver.extraClassPath": os.pathsep.join(s3a_classpath()),
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "WARN",
        **s3a_conf(endpoint, access_key, secret_key),
    }
    jars = lakehouse_jars() if lakehouse else []
    if jars:
        settings["spark.jars"] = ",".join(jars)
        extensions = []
        if any("delta-spark" in j for j in jars):
            extensions.append("io.delta.sql.DeltaSparkSessionExtension")
            settings["spark.sql.catalog.spark_catalog"] = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
            settings["spark.databricks.delta.snapshotPartitions"] = "2"
        if any("iceberg-spark-runtime" in j for j in jars):
            extensions.append("org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            settings["spark.sql.catalog.ice"] = "org.apache.iceberg.spark.SparkCatalog"
            settings["spark.sql.catalog.ice.type"] = "hadoop"
            settings["spark.sql.catalog.ice.warehouse"] = f"{warehouse.rstrip('/')}/ice"
        settings["spark.sql.extensions"] = ",".join(extensions)
    settings.update(conf or {})
    return sparkbloom.session.local_session(app_name, warehouse_dir=f"{warehouse.rstrip('/')}/spark", conf=settings)
