"""Bloom indexes on a Delta Lake table and an Apache Iceberg table, from Python.

    python examples/lakehouse.py                  # fetches delta-spark and iceberg-spark-runtime with --packages
    python examples/lakehouse.py --jars a.jar,b.jar,c.jar   # or uses jars you already have

Each table gets 200 small files of user keys, a bloom index (Delta through the DataFrame API, Iceberg through
SQL), and a point lookup that is run with sparkbloom on and off: same rows, far fewer files. Without --jars,
the builds of the running Spark line are fetched (PACKAGES; the versions sparkbloom is tested with).
"""

from __future__ import annotations

import argparse
import json
import tempfile

from pyspark.sql import SparkSession

import sparkbloom

# Per Spark line (major.minor): the Delta Lake and Iceberg builds for it (project/versions.properties).
PACKAGES = {
    "3.5": "io.delta:delta-spark_{scala}:3.3.2,org.apache.iceberg:iceberg-spark-runtime-3.5_{scala}:1.10.1",
    "4.0": "io.delta:delta-spark_2.13:4.0.1,org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.1",
    "4.1": "io.delta:delta-spark_4.1_2.13:4.4.0,org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0",
}


def session(jars: str | None, warehouse: str) -> SparkSession:
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("sparkbloom lakehouse example")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", "ERROR")
        .config("spark.sql.shuffle.partitions", "2")
        # Any order: sparkbloom.configure() puts sparkbloom's extension after Delta's and Iceberg's.
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension,"
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.ice.type", "hadoop")
        .config("spark.sql.catalog.ice.warehouse", f"{warehouse}/iceberg")
    )
    if jars:
        builder = builder.config("spark.jars", jars)
    else:
        version, scala = sparkbloom.session.spark_version()
        line = ".".join(version.split(".")[:2])
        if line not in PACKAGES:
            raise SystemExit(f"Spark {version}: Delta Lake and Iceberg do not both publish a build for it; pass --jars")
        builder = builder.config("spark.jars.packages", PACKAGES[line].format(scala=scala))
    return sparkbloom.configure(builder).getOrCreate()


def lookup(spark: SparkSession, query) -> dict:
    """The query with sparkbloom on (rows, skipping) and off (rows)."""
    df = query()
    on = sorted(tuple(r) for r in df.collect())
    [skip] = sparkbloom.skipping(df)
    spark.conf.set("spark.sparkbloom.enabled", "false")
    try:
        off = sorted(tuple(r) for r in query().collect())
    finally:
        spark.conf.set("spark.sparkbloom.enabled", "true")
    return {"rows": len(on), "same_rows": on == off, "files": skip.files_total, "files_read": skip.files_kept,
            "index": skip.index}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jars", help="comma-separated delta-spark, delta-storage and iceberg-spark-runtime jars")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    warehouse = tempfile.mkdtemp(prefix="sparkbloom-lakehouse-")
    spark = session(args.jars, warehouse)
    n = args.files * 100
    keys = spark.range(0, n, 1, args.files).selectExpr(
        "id", f"concat('user-', cast((id * 7919) % {n} as string)) as user_key")

    # Delta Lake: a path table, indexed from the DataFrame that reads it.
    delta = f"{warehouse}/delta/events"
    keys.write.format("delta").save(delta)
    spark.read.format("delta").load(delta).bloomFilterIndex("user_key", name="by_user")
    results = {"delta": lookup(spark, lambda: spark.read.format("delta").load(delta).where("user_key = 'user-4242'"))}

    # Iceberg: a table of a Hadoop catalog, indexed in SQL.
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    spark.sql("CREATE TABLE ice.db.events (id BIGINT, user_key STRING) USING iceberg "
              "TBLPROPERTIES ('write.distribution-mode' = 'none')")
    keys.writeTo("ice.db.events").append()
    spark.sql("CREATE BLOOM INDEX by_user ON ice.db.events (user_key)")
    results["iceberg"] = lookup(spark, lambda: spark.sql("SELECT * FROM ice.db.events WHERE user_key = 'user-4242'"))
    results["extensions"] = spark.conf.get("spark.sql.extensions")

    if args.json:
        print(json.dumps(results))
    else:
        print(f"{'table':<10}{'files':>7}{'read, index on':>16}{'rows':>6}  same rows as index off")
        for fmt in ("delta", "iceberg"):
            r = results[fmt]
            print(f"{fmt:<10}{r['files']:>7}{r['files_read']:>16}{r['rows']:>6}  {r['same_rows']}")
    spark.stop()


if __name__ == "__main__":
    main()
