"""``python -m bench.cli``: wall-clock time of the CLI commands a user types most, as processes.

Builds the example lake of ``bash scripts/demo.sh`` in a temporary directory, then times each read
command (and ``--help``, a run with nothing to do, an ingest of a small file, a registration with its
backfill, and a ``sql`` query, which alone starts Spark) as a fresh process, the best of
``--repeat`` runs, and writes ``bench/results/cli.md`` (the table in the README).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAKEGRAPH = str(Path(sys.executable).with_name("lakegraph"))

DEMO = [["init"], ["-q", "ingest", "examples/landing/01_initial.nt"],
        *[["register", f"examples/queries/{q}.rq"] for q in ("classmates", "db_students", "teaching")],
        ["-q", "ingest", "examples/landing"], ["-q", "run"]]

TIMED = [["--help"], ["answers", "teaching"], ["changes", "teaching"], ["status"], ["queries"],
         ["explain", "teaching"], ["run"]]


def _run(argv: list[str], lake: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run([LAKEGRAPH, "--lake", str(lake), *argv], cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench.cli: error: lakegraph {' '.join(argv)} failed: {done.stderr.strip()}")
    return elapsed


def measure(repeat: int) -> list[tuple[str, float]]:
    """``(command, best seconds)`` for every timed command, on a fresh example lake."""
    work = Path(tempfile.mkdtemp(prefix="lakegraph-cli-"))
    try:
        lake = work / "lake"
        for argv in DEMO:
            _run(argv, lake)
        rows = [(f"lakegraph {' '.join(argv)}", min(_run(argv, lake) for _ in range(repeat))) for argv in TIMED]
        small = work / "small.nt"
        shutil.copy(ROOT / "examples" / "landing" / "01_initial.nt", small)
        ingest = []
        for i in range(repeat):   # a new file each time (an ingested file is skipped)
            copy = work / f"small_{i}.nt"
            copy.write_bytes(small.read_bytes() + f"# copy {i}\n".encode())
            ingest.append(_run(["ingest", str(copy)], lake))
        rows.append(("lakegraph ingest small.nt (26 triples)", min(ingest)))
        register = [_run(["register", "examples/queries/teaching.rq", "--name", f"teaching_{i}"], lake)
                    for i in range(repeat)]
        rows.append(("lakegraph register examples/queries/teaching.rq (backfill)", min(register)))
        rows.append(("lakegraph sql \"SELECT count(*) FROM bronze\" (starts Spark)",
                     min(_run(["sql", "SELECT count(*) FROM bronze"], lake) for _ in range(repeat))))
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cli", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command; the best is kept (default 5)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "cli.md",
                        help="where the markdown table goes (default bench/results/cli.md)")
    args = parser.parse_args(argv)
    rows = measure(args.repeat)
    table = ["| command | seconds |", "|---|---|"] + [f"| `{c}` | {s:.2f} |" for c, s in rows]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(table) + "\n", encoding="utf-8")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
