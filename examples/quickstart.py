"""sparkbloom in a few lines: write a Parquet table, index a column, look a key up, see what was skipped.

    pip install sparkbloom-0.1.0-py3-none-any.whl     # the jar is inside; nothing is downloaded
    python examples/quickstart.py
"""

import tempfile

from pyspark.sql import SparkSession

import sparkbloom


def main() -> None:
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("sparkbloom quickstart")
        .config("spark.ui.enabled", "false")
        .config("spark.log.level", "WARN")
    )
    spark = sparkbloom.configure(builder).getOrCreate()  # bundled jar, SQL extension, JVM flags

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/events"
        # 20 Parquet files. user_id is scattered over every file, so min/max statistics skip nothing:
        # only a bloom filter can tell that a file does not hold a given user.
        (
            spark.range(0, 200_000, 1, numPartitions=20)
            .selectExpr("(id * 7919) % 200000 AS user_id", "concat('session-', id) AS session", "id % 7 AS kind")
            .write.parquet(path)
        )
        events = spark.read.parquet(path)

        index = events.bloomFilterIndex("user_id")  # = CREATE BLOOM INDEX bloom_user_id ON ...
        d = index.describe()
        print(f"{index}: {d['files_covered']} files, {d['size_in_bytes']:,} bytes")

        lookup = events.where("user_id = 4242")
        rows = lookup.collect()
        print(f"user_id = 4242 -> {[r.asDict() for r in rows]}")

        for s in sparkbloom.skipping(lookup):
            print(
                f"{s.index}: read {s.files_kept} of {s.files_total} files, "
                f"{s.row_groups_kept} of {s.row_groups_total} row groups"
            )
        assert len(rows) == 1, rows

        index.drop()
    spark.stop()


if __name__ == "__main__":
    main()
