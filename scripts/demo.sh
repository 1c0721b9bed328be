#!/usr/bin/env bash
# Set up the environment, then run the main job on the bundled example:
# ingest the landing files, register the example queries, run the micro-batches, print the answers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
LAKE=${LAKEGRAPH_LAKE:-./lake}
lg() { .venv/bin/lakegraph --lake "$LAKE" "$@"; }
rm -rf "$LAKE"
lg init
lg ingest examples/landing/01_initial.nt
for q in examples/queries/*.rq; do lg register "$q"; done
lg ingest examples/landing
lg run
for q in examples/queries/*.rq; do
  name=$(basename "$q" .rq)
  echo "== answers of $name"; lg answers "$name"
  echo "== changes of $name"; lg changes "$name"
done
lg status
