#!/usr/bin/env bash
# Set up the environment, then run the main job on the bundled example:
# ingest the landing files, register the example queries, run the micro-batches, print the answers;
# then a windowed query over a stream of badge events (docs/windows.md).
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
# a windowed C-SPARQL query: badge events on a stream, a building plan as background graph
lg ingest examples/windows/building.ttl --stream http://example.org/building
lg register examples/windows/together.rq --lateness 2s
lg ingest examples/windows/badges-1.jsonl examples/windows/badges-2.jsonl
lg run --flush
echo "== windows of together"; lg windows together
echo "== changes of together (IStream +, DStream -)"; lg changes together
lg status
