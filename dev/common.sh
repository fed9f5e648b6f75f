# Shared by the dev/ scripts: installs sbt's launcher and the Python environment, both from the
# project's own files (project/versions.properties), idempotently. Source it; do not run it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
# What every checkout of the project downloads alike (sbt's launcher, its boot files, the compiled Zinc bridges and
# the Maven artifacts coursier fetches) is kept outside the checkout, in the user's cache, so that a fresh clone (CI's)
# does not fetch and compile them again. Keyed by version, and shared safely (coursier and sbt lock their caches).
# SPARKBLOOM_CACHE_DIR moves it; the project's own outputs (.tools/ivy2, .tools/pyspark-jars, target/) stay inside.
CACHE="${SPARKBLOOM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sparkbloom}"
prop() { grep "^$1=" "$ROOT/project/versions.properties" | cut -d= -f2; }
# Field N of a line's row in the versions table: 1 spark, 2 scala, 3 parquet, 4 pyspark, 5 jars from.
line_field() { awk -v k="line.$1" -v n="$2" '$1 == k && $2 == "=" { print $(n + 2); f = 1 } END { exit !f }' "$ROOT/project/versions.properties"; }
# Every line of the table, in its order.
all_lines() { awk '$1 ~ /^line\./ && $2 == "=" { print substr($1, 6) }' "$ROOT/project/versions.properties"; }

DEFAULT_LINE="$(prop defaultLine)"
PYSPARK_VERSION="$(line_field "$DEFAULT_LINE" 4)"
SBT_LAUNCH_VERSION="$(prop sbtLaunch)"
SBT_JAR="$CACHE/sbt-launch-$SBT_LAUNCH_VERSION.jar"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

# Cleanup run when the script exits, in the order added (one EXIT trap for all of them).
EXIT_HOOKS=()
on_exit() { EXIT_HOOKS+=("$1"); trap 'for hook in "${EXIT_HOOKS[@]}"; do eval "$hook" || true; done' EXIT; }

# Test scratch on a RAM disk. Spark's tests write and delete thousands of small files; on a virtual disk that was a
# third of the Scala suites' time (StaleDataSuite, DeltaSuite, DifferentialFuzzSuite and KeySetPruningSuite: 331 s
# with their files under /tmp, 236 s under /dev/shm, same machine and hour). When /dev/shm is a tmpfs with 8 GiB or
# more free and the caller has not chosen a TMPDIR, a directory there becomes TMPDIR (pytest's tmp_path, the Python
# tests' tables; build.sbt passes it to the test JVM as java.io.tmpdir) and SPARK_LOCAL_DIRS (Spark's shuffle and
# spill files), and is removed on exit. SPARKBLOOM_RAM_SCRATCH=0 keeps everything under /tmp.
use_ram_scratch() {
  [[ "${SPARKBLOOM_RAM_SCRATCH:-1}" != 0 && -z "${TMPDIR:-}" ]] || return 0
  [[ "$(stat -f -c %T /dev/shm 2>/dev/null)" == tmpfs ]] || return 0
  local free_kib; free_kib="$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')"
  [[ "${free_kib:-0}" -ge $((8 * 1024 * 1024)) ]] || return 0
  local dir; dir="$(mktemp -d /dev/shm/sparkbloom-scratch.XXXXXX)" || return 0
  export TMPDIR="$dir" SPARK_LOCAL_DIRS="$dir"
  on_exit "rm -rf '$dir'"
  log "test scratch (TMPDIR, SPARK_LOCAL_DIRS): $dir (RAM disk)"
}

log() { printf '\033[1m[sparkbloom %s]\033[0m %s\n' "$(date +%T)" "$*" >&2; }

ensure_sbt() {
  if [[ ! -s "$SBT_JAR" ]]; then
    mkdir -p "$CACHE"
    log "downloading sbt launcher $SBT_LAUNCH_VERSION from Maven Central"
    curl -fsSL --retry 3 -o "$SBT_JAR.part.$$" \
      "https://repo1.maven.org/maven2/org/scala-sbt/sbt-launch/$SBT_LAUNCH_VERSION/sbt-launch-$SBT_LAUNCH_VERSION.jar"
    mv "$SBT_JAR.part.$$" "$SBT_JAR"
  fi
}

# For a line whose Spark is not on Maven Central yet: the Spark jars inside its pyspark release (from
# PyPI), extracted once into .tools/pyspark-jars/<version>/ for the build to compile against.
ensure_pyspark_jars() {
  local line="$1" ver dir
  [[ "$(line_field "$line" 5)" == pyspark ]] || return 0
  ver="$(line_field "$line" 4)"; dir="$TOOLS/pyspark-jars/$ver"
  [[ -s "$dir/.complete" ]] && return 0
  log "extracting Spark's jars from pyspark $ver (PyPI) for line $line"
  rm -rf "$dir" "$dir.dl"; mkdir -p "$dir" "$dir.dl"
  python3 -m pip download -q --no-deps --no-binary :all: "pyspark==$ver" -d "$dir.dl"
  tar -xzf "$dir.dl"/pyspark-"$ver".tar.gz -C "$dir" --strip-components=3 --wildcards "pyspark-$ver/deps/jars/*.jar"
  rm -rf "$dir.dl"; echo "$ver" > "$dir/.complete"
}

# sbt resolves everything (itself, plugins, libraries) from Maven Central only: see project/repositories.
# The line is the default one unless SPARKBLOOM_LINE names another (see sbt_line).
sbt() {
  ensure_sbt
  local line="${SPARKBLOOM_LINE:-$DEFAULT_LINE}"
  line_field "$line" 1 > /dev/null || { log "unknown Spark line '$line' (project/versions.properties has: $(all_lines | tr '\n' ' '))"; return 2; }
  ensure_pyspark_jars "$line"
  (cd "$ROOT" && java -Xms512m -Xmx3g -Xss4m \
    -Dsbt.boot.directory="$CACHE/sbt-boot" \
    -Dsbt.global.base="$CACHE/sbt-global" \
    -Dsbt.ivy.home="$TOOLS/ivy2" \
    -Dsbt.coursier.home="$CACHE/coursier" \
    -Dsbt.repository.config="$ROOT/project/repositories" \
    -Dsbt.override.build.repos=true \
    -Dsbt.server.forcestart=false -Dsbt.ci=true -Dsbt.supershell=false -Dsbt.color=false \
    -Dsparkbloom.line="$line" \
    -jar "$SBT_JAR" "$@" </dev/null)
}

# sbt for one line: sbt_line 4.1 compile
sbt_line() { local line="$1"; shift; SPARKBLOOM_LINE="$line" sbt "$@"; }

ensure_venv() {
  local reqs="$ROOT/python/requirements-dev.txt" stamp="$VENV/.requirements-dev.sha256"
  if [[ ! -x "$PY" ]] || ! "$PY" -c "import pyspark,sys; sys.exit(pyspark.__version__ != '$PYSPARK_VERSION')" 2>/dev/null; then
    log "creating $VENV with pyspark==$PYSPARK_VERSION"
    python3 -m venv "$VENV"
    "$PY" -m pip install -q --upgrade pip setuptools wheel
    "$PY" -m pip install -q -r "$reqs"
    sha256sum "$reqs" | cut -d' ' -f1 > "$stamp"
  elif [[ "$(cat "$stamp" 2>/dev/null)" != "$(sha256sum "$reqs" | cut -d' ' -f1)" ]]; then
    # requirements-dev.txt changed since the venv was made (e.g. a package added): install what is missing.
    log "updating $VENV from python/requirements-dev.txt"
    "$PY" -m pip install -q -r "$reqs"
    sha256sum "$reqs" | cut -d' ' -f1 > "$stamp"
  fi
  export JAVA_HOME="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}"
  export PYSPARK_PYTHON="$PY" PYSPARK_DRIVER_PYTHON="$PY"
  export SPARK_HOME="$("$PY" -c 'import os,pyspark; print(os.path.dirname(pyspark.__file__))')"
}

PACKAGE_TASKS=(bundle lakehouseJars harness/package)
# Builds the default line's sparkbloom.jar (+ the jars Spark does not ship) and installs the Python
# package with it into the venv; also the line's harness jar (benchmarks/harness: DecisionFuzz for
# tests/python/test_foreign_fuzz.py and benchmarks/long_fuzz.py), which the package does not carry.
# dev/matrix builds the wheel with every line's jar.
# `ensure_package built` skips the sbt run when the caller's own sbt session has just run those tasks (dev/test).
ensure_package() {
  ensure_venv
  if [[ "${1:-}" != built ]]; then
    log "building sparkbloom.jar (Spark line $DEFAULT_LINE)"
    sbt "${PACKAGE_TASKS[@]}"
  fi
  rm -rf "$ROOT/python/src/sparkbloom/jars"; mkdir -p "$ROOT/python/src/sparkbloom/jars/spark-$DEFAULT_LINE"
  # target/bundles/spark-<line>, not target/bundle: that holds whichever line `bundle` ran last (dev/matrix's last)
  cp "$ROOT/target/bundles/spark-$DEFAULT_LINE"/*.jar "$ROOT/python/src/sparkbloom/jars/spark-$DEFAULT_LINE/"
  build_wheel
  "$PY" -m pip install -q --no-deps --force-reinstall "$ROOT"/python/dist/sparkbloom-*.whl
}

# The wheel, from python/ with whatever jars python/src/sparkbloom/jars holds.
build_wheel() {
  cp "$ROOT/project/jvm-flags.txt" "$ROOT/python/src/sparkbloom/jvm-flags.txt"
  # The package's version (pyproject.toml reads it, and so does sparkbloom.__version__): project/versions.properties'.
  prop version > "$ROOT/python/src/sparkbloom/VERSION"
  # The wheel redistributes zero-allocation-hashing's jar: it carries the licence and notice (python/pyproject.toml).
  cp "$ROOT/LICENSE" "$ROOT/NOTICE" "$ROOT/python/"
  log "building the sparkbloom wheel (jars: $(cd "$ROOT/python/src/sparkbloom/jars" && ls | tr '\n' ' '))"
  rm -rf "$ROOT/python/dist" "$ROOT/python/build"
  "$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$ROOT/python/dist" "$ROOT/python"
}

# Every line of project/versions.properties in one sbt session (a JVM start and a warm compiler saved per line:
# each `reload` re-reads build.sbt with the next line's -Dsparkbloom.line): the line's jar (`bundle`:
# target/bundles/spark-<line>), its Maven artifacts (`root/publish`: jar, sources jar and POM in the Maven-layout
# repository dist/maven), then the tasks given (e.g. `harness/package`); then the one wheel carrying every line's
# jar (python/dist). Used by dev/matrix and dev/release. Usage: build_lines [sbt task per line ...]
# A caller may define `line_tasks <line>` (that line's tasks, one a line, instead of the arguments) and
# `line_test_sources <line>` (the regex of the test files compiled on that line, build.sbt's sparkbloom.testSources;
# empty: every test file).
build_lines() {
  local cmds=() line tasks sources desc
  for line in $(all_lines); do
    ensure_pyspark_jars "$line"
    tasks=("$@"); declare -F line_tasks > /dev/null && mapfile -t tasks < <(line_tasks "$line")
    sources=""; declare -F line_test_sources > /dev/null && sources="$(line_test_sources "$line")"
    desc="${tasks[*]:+, ${tasks[*]}}"; desc="${desc//\"/\'}"  # printed inside a Scala string: no double quotes
    cmds+=("eval { println(\"[sparkbloom] line $line: Spark $(line_field "$line" 1), Scala $(line_field "$line" 2): jar, Maven artifacts$desc\"); System.setProperty(\"sparkbloom.line\", \"$line\"); System.setProperty(\"sparkbloom.testSources\", \"$sources\") }"
           reload bundle root/publish "${tasks[@]+"${tasks[@]}"}")
  done
  rm -rf "$ROOT/target/bundles" "$ROOT/dist/maven"
  sbt "${cmds[@]}"
  rm -rf "$ROOT/python/src/sparkbloom/jars"; mkdir -p "$ROOT/python/src/sparkbloom/jars"
  for line in $(all_lines); do
    cp -r "$ROOT/target/bundles/spark-$line" "$ROOT/python/src/sparkbloom/jars/"
  done
  build_wheel
}

# A line's `lakehouse.<line>` row (delta-spark and iceberg-spark-runtime, "-" for none); "- -" without a row.
lakehouse_row() { sed -n "s/^lakehouse\.$1 *= *//p" "$ROOT/project/versions.properties" | grep . || echo "- -"; }

# The Delta Lake and Iceberg runtime jars of a line (default: the default line), comma-separated, as
# `sbt lakehouseJars` copied them from sbt's Maven cache to target/lakehouse/spark-<line>; empty when the
# line has neither format (project/versions.properties).
lakehouse_jars() {
  local jars=("$ROOT/target/lakehouse/spark-${1:-$DEFAULT_LINE}"/*.jar)
  [[ -e "${jars[0]}" ]] || return 0
  (IFS=,; echo "${jars[*]}")
}
