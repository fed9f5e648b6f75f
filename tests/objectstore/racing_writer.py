"""One of K writer processes of the racing-writers test (tests/objectstore/test_racing_writers.py): its own JVM,
writing `--writes` new partitions (`w=<writer>/n=<n>`) into one indexed Parquet table on the object store by
dynamic partition overwrite, with maintenance on write (every write commits a version of the table's bloom index).
Lookups never catch up here (refreshOnRead off), so a version lost to a race shows as files not covered.

Prints one JSON line: {"writer", "writes", "failed", "published" (index versions it was told it won), "seconds"}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_s3 import s3_session  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--access-key", required=True)
    ap.add_argument("--secret-key", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--writer", type=int, required=True)
    ap.add_argument("--writes", type=int, required=True)
    ap.add_argument("--commit-store", default="auto", help="auto, or rename (the commit of before conditional PUTs)")
    args = ap.parse_args()
    spark = s3_session(args.endpoint, args.access_key, args.secret_key, warehouse="s3a://sparkbloom/racing-wh",
                       lakehouse=False, app_name=f"racing writer {args.writer}", conf={
                           "spark.master": "local[1]",
                           "spark.sql.sources.partitionOverwriteMode": "dynamic",
                           "spark.sparkbloom.maintainOnWrite.refreshOnRead": "false",
                           "spark.sparkbloom.maintainOnWrite.optimizeInBackground": "false",
                           "spark.hadoop.sparkbloom.commit.store": args.commit_store,
                       })
    failed = 0
    start = time.time()
    for n in range(args.writes):
        key0 = (args.writer * 100000 + n) * 10
        try:
            (spark.range(key0, key0 + 10, 1, 1)
             .selectExpr("id", "concat('k-', id) AS k", f"{args.writer} AS w", f"{n} AS n")
             .write.mode("overwrite").partitionBy("w", "n").parquet(args.table))
        except Exception as e:  # a user's write must never fail because of its index: counted, reported
            failed += 1
            print(f"write {n} failed: {e}", file=sys.stderr)
    # the index versions this JVM was told it published (each commit that "won")
    published = int(spark._jvm.sparkbloom.index.IndexStore.published())  # type: ignore[attr-defined]  (py4j: a Number)
    print(json.dumps({"writer": args.writer, "writes": args.writes, "failed": failed, "published": published,
                      "seconds": round(time.time() - start, 1)}))
    spark.stop()


if __name__ == "__main__":
    main()
