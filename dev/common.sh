# Shared by the dev/ scripts: installs sbt's launcher and the Python environment, both from the
# project's own files (project/versions.properties), idempotently. Source it; do not run it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
prop() { grep "^$1=" "$ROOT/project/versions.properties" | cut -d= -f2; }

PYSPARK_VERSION="$(prop pyspark)"
SBT_LAUNCH_VERSION="$(prop sbtLaunch)"
SBT_JAR="$TOOLS/sbt-launch-$SBT_LAUNCH_VERSION.jar"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

log() { printf '\033[1m[sparkbloom]\033[0m %s\n' "$*" >&2; }

ensure_sbt() {
  if [[ ! -s "$SBT_JAR" ]]; then
    mkdir -p "$TOOLS"
    log "downloading sbt launcher $SBT_LAUNCH_VERSION from Maven Central"
    curl -fsSL --retry 3 -o "$SBT_JAR.part" \
      "https://repo1.maven.org/maven2/org/scala-sbt/sbt-launch/$SBT_LAUNCH_VERSION/sbt-launch-$SBT_LAUNCH_VERSION.jar"
    mv "$SBT_JAR.part" "$SBT_JAR"
  fi
}

# sbt resolves everything (itself, plugins, libraries) from Maven Central only: see project/repositories.
sbt() {
  ensure_sbt
  (cd "$ROOT" && java -Xms512m -Xmx3g -Xss4m \
    -Dsbt.boot.directory="$TOOLS/sbt-boot" \
    -Dsbt.global.base="$TOOLS/sbt-global" \
    -Dsbt.ivy.home="$TOOLS/ivy2" \
    -Dsbt.coursier.home="$TOOLS/coursier" \
    -Dsbt.repository.config="$ROOT/project/repositories" \
    -Dsbt.override.build.repos=true \
    -Dsbt.server.forcestart=false -Dsbt.ci=true -Dsbt.supershell=false -Dsbt.color=false \
    -jar "$SBT_JAR" "$@" </dev/null)
}

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

# Builds sparkbloom.jar (+ the jars Spark does not ship) and installs the Python package into the venv.
ensure_package() {
  ensure_venv
  log "building sparkbloom.jar"
  sbt bundle
  rm -rf "$ROOT/python/src/sparkbloom/jars"; mkdir -p "$ROOT/python/src/sparkbloom/jars"
  cp "$ROOT"/target/bundle/*.jar "$ROOT/python/src/sparkbloom/jars/"
  cp "$ROOT/project/jvm-flags.txt" "$ROOT/python/src/sparkbloom/jvm-flags.txt"
  log "building and installing the sparkbloom Python package"
  rm -rf "$ROOT/python/dist"
  "$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$ROOT/python/dist" "$ROOT/python"
  "$PY" -m pip install -q --no-deps --force-reinstall "$ROOT"/python/dist/sparkbloom-*.whl
}
