"""Command line: ``python -m sparkbloom inspect|jars|conf``.

    python -m sparkbloom inspect data/ --probe user_id=42       # bloom filters in Parquet files
    python -m sparkbloom jars                                    # for spark-submit --jars
    python -m sparkbloom conf > sparkbloom.conf                  # for spark-submit --properties-file
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkbloom", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    inspect = sub.add_parser("inspect", help="show the native bloom filters of Parquet files")
    inspect.add_argument("path", metavar="FILE_OR_DIR", help="a Parquet file or a directory (read recursively)")
    inspect.add_argument(
        "--probe", action="append", default=[], metavar="COLUMN=VALUE",
        help="answer 'might contain' for each row group (repeatable); FIXED_LEN_BYTE_ARRAY values as 0x<hex>",
    )
    inspect.add_argument("--json", action="store_true", help="print the report as JSON")
    inspect.add_argument("--master", default="local[1]", help="Spark master of the JVM that reads (default local[1])")

    sub.add_parser("jars", help="print the bundled jars, comma separated (for spark-submit --jars)")
    sub.add_parser("conf", help="print the Spark properties sparkbloom needs (for --properties-file)")

    args = parser.parse_args(argv)
    if args.command == "jars":
        from .session import jar_paths

        print(",".join(jar_paths()))
        return 0
    if args.command == "conf":
        from .session import spark_conf

        for key, value in spark_conf().items():
            print(f"{key}={value}")
        return 0
    return _inspect(args.path, args.probe, args.json, args.master)


def _inspect(path: str, probes: list[str], as_json: bool, master: str) -> int:
    from pyspark.sql import SparkSession

    from .errors import SparkBloomError
    from .inspector import format_report, inspect_parquet
    from .session import configure

    builder = (
        SparkSession.builder.master(master)
        .appName("sparkbloom inspect")
        .config("spark.ui.enabled", "false")
        .config("spark.log.level", "ERROR")
    )
    spark = configure(builder).getOrCreate()
    try:
        report = inspect_parquet(spark, path, probes)
    except SparkBloomError as e:
        print(f"sparkbloom inspect: {e}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    print(json.dumps(report, indent=2) if as_json else format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
