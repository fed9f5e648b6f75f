"""The jars a benchmark loads, for the Spark line of the pyspark it runs on.

`dev/sbt bundle` puts a line's sparkbloom.jar (with the jars Spark does not ship) in target/bundles/spark-<line>/
(dev/matrix does it for every line; target/bundle holds only the last line built), and `dev/sbt harness/package`
the harness classes the scripts call (ScaleBench, DecisionFuzz: benchmarks/harness) in
target/harness/spark-<line>/sparkbloom-harness.jar. The line is the row `line.<id>` of project/versions.properties
whose Spark major.minor and Scala binary version are those of the Spark pyspark launches, read as the sparkbloom
package reads them (python/src/sparkbloom/session.py: the spark-core jar of the Spark home, else pyspark's version).
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spark_version():
    """(Spark version, Scala binary version) of the Spark pyspark launches."""
    import pyspark
    try:
        from pyspark.find_spark_home import _find_spark_home
        for jar in sorted(glob.glob(os.path.join(_find_spark_home(), "jars", "spark-core_*.jar"))):
            m = re.fullmatch(r"spark-core_(2\.1[23])-(\d+\.\d+\.\d+)(?:[-.].*)?\.jar", os.path.basename(jar))
            if m:
                return m.group(2), m.group(1)
    except Exception:  # no Spark home found: pyspark's own version
        pass
    return pyspark.__version__, ("2.12" if pyspark.__version__.startswith("3.") else "2.13")


def spark_line():
    """The line (`line.<id>` of project/versions.properties: spark scala parquet pyspark jarsFrom) of this pyspark."""
    version, scala = spark_version()
    minor = version.split(".")[:2]
    with open(os.path.join(ROOT, "project", "versions.properties")) as f:
        for row in f:
            m = re.match(r"line\.(\S+)\s*=\s*(\S+)\s+(\S+)", row)
            if m and m.group(2).split(".")[:2] == minor and m.group(3).startswith(scala + "."):
                return m.group(1)
    sys.exit(f"no line of project/versions.properties builds for Spark {version} on Scala {scala}")


def sparkbloom_jars(jars_dir=None):
    """The jars of `jars_dir` (default: target/bundles/spark-<line> of this pyspark), which must hold sparkbloom.jar."""
    line = None if jars_dir else spark_line()
    jars_dir = jars_dir or os.path.join(ROOT, "target", "bundles", f"spark-{line}")
    jars = sorted(glob.glob(os.path.join(jars_dir, "*.jar")))
    if not any(os.path.basename(j) == "sparkbloom.jar" for j in jars):
        sys.exit(f"no sparkbloom.jar in {jars_dir}: run `"
                 + (f"SPARKBLOOM_LINE={line} dev/sbt bundle" if line else "dev/sbt bundle") + "` first")
    return jars


def harness_jar():
    """target/harness/spark-<line>/sparkbloom-harness.jar of this pyspark's line (ScaleBench, DecisionFuzz)."""
    line = spark_line()
    jar = os.path.join(ROOT, "target", "harness", f"spark-{line}", "sparkbloom-harness.jar")
    if not os.path.isfile(jar):
        sys.exit(f"{jar} is missing: run `SPARKBLOOM_LINE={line} dev/sbt harness/package` first")
    return jar
