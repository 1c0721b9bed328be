#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install lakegraph with its test, bench and Airflow extras.
# Idempotent: a second run with unchanged sources of the install only checks that the packages import.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! command -v java >/dev/null 2>&1; then
  echo "setup: Java (OpenJDK 17) is required by Spark; install it, e.g. apt-get install -y openjdk-17-jre-headless" >&2
  exit 1
fi
if ! command -v cc >/dev/null 2>&1; then
  echo "setup: a C compiler is required to build lakegraph's string kernels (pipelines/_kernels.c); install one, e.g. apt-get install -y gcc" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
STAMP=.venv/.lakegraph-installed
# the install is redone when what it builds from changes: the dependencies, or the C kernel it compiles
WANT=$(cat pyproject.toml setup.py pipelines/_kernels.c | sha256sum | cut -d' ' -f1)
install() {
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  if ! .venv/bin/python -m pip install -q -e ".[test,bench,airflow]" >.venv/pip.log 2>&1; then
    tail -n 20 .venv/pip.log >&2
    echo "setup: pip install failed (whole log: .venv/pip.log)" >&2
    exit 1
  fi
  # quality.gx imports Great Expectations behind the guard that keeps pyspark's connect module from
  # exiting a `python -c` process silently (which would make this check pass without checking);
  # airflow last, since importing it turns on its logging, and GX then logs every class it registers.
  .venv/bin/python -c "import pyspark, deltalake, rdflib, pyoxigraph, pipelines._kernels, quality.gx, airflow" \
    || { echo "setup: installation failed: a package does not import" >&2; exit 1; }
  echo "$WANT" >"$STAMP"
}
# installed from this pyproject.toml, and checked then: skip the install
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ] || ! .venv/bin/lakegraph --version >/dev/null 2>&1; then
  install
fi
# The Delta Lake JVM jars matching the installed delta-spark, with Maven (a no-op once present).
# Without them (no Maven, no network) set-up still succeeds: storage stays on delta-rs.
.venv/bin/python -m pipelines.delta_jars || true
# The driver JVM's class archive, made with the jars above (a no-op once made for what is installed):
# Spark starts faster with it, and as before without it.
.venv/bin/python -m pipelines.jvm_archive || true
