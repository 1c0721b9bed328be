#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install lakegraph with its test and Airflow extras.
# Idempotent: a second run only re-checks the installed packages.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! command -v java >/dev/null 2>&1; then
  echo "setup: Java (OpenJDK 17) is required by Spark; install it, e.g. apt-get install -y openjdk-17-jre-headless" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e ".[test,bench,airflow]" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import pyspark, deltalake, rdflib, great_expectations, pyoxigraph" \
  || { echo "setup: installation failed" >&2; exit 1; }
