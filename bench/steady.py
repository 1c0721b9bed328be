"""``python -m bench.steady``: whether a long-running job's batches stay as cheap as its first ones.

The main bench times a handful of batches after registration. A job that runs for hours goes on:
merge-on-read tables gather appended rows until they fold, the run's held indexes gather the rows
changed since they were built, the batch log and the answer-change tables grow by every batch. A
batch whose work follows its change costs the same at batch 300 as at batch 3; one whose work
grows with any of those does not. This replays ``--batches`` batches of ``--batch-size`` LUBM
updates at ``--scale`` on one :class:`Runner`, as one long ``lakegraph run`` (or a job that keeps
its process) would, and reports lakegraph's batch time per ``--window`` batches.

Beside it DuckDB is kept in step: every batch is merged into its graph table, and every
``--check-every`` batches (and after the last) it re-runs the queries, timed, and its answers and
lakegraph's are compared as bags; a disagreement stops the run. Each lakegraph batch starts
settled, as in the main bench (:func:`bench.runner.settle`: the files written before it synced).
Every ``--maintain-every`` batches ``maintain`` compacts the lake's tables, as the maintenance DAG
would between runs (with the default time-travel horizon: it removes no file a recent version
reads); its time is reported apart. Without it the small files a batch appends to each table pile
up, and a Delta commit costs more the more files its table has.
Results: ``steady.md`` and the raw ``steady.jsonl`` in ``--out``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from pipelines.ops.maintain import maintain
from pipelines.spark import LazySpark, get_spark

from .__main__ import _Parser, _positive, _ratio
from .lubm import MessageWriter, UpdateStream, generate, write_ntriples
from .machine import machine_info
from .report import _table, rebuild, write_markdown
from .runner import RESULTS_DIR, Records, check, default_queries, run_command, settle
from .systems import BenchQuery, DuckDBRecompute, Lakegraph


@dataclass(frozen=True)
class Settings:
    scale: int
    batch_size: int
    batches: int
    window: int
    check_every: int
    maintain_every: int
    delete_ratio: float
    seed: int
    out: Path
    work: Path | None


def run(settings: Settings, spark: LazySpark, work: Path, command: str,
        log: Callable[[str], None]) -> list[dict]:
    """Generate, load and register, replay the batches; returns the records (also in ``steady.jsonl``)."""
    records = Records(settings.out / "steady.jsonl")
    records.add({"kind": "config", "command": command, **{k: v for k, v in vars(settings).items()
                                                           if k not in ("out", "work")}})
    records.add({"kind": "machine", **machine_info(None)})
    dataset = generate(settings.scale, 2, settings.seed)
    stream = UpdateStream(dataset, settings.seed, settings.delete_ratio)
    initial = write_ntriples(work / "initial.nt", dataset.triples)
    queries = [BenchQuery.from_file(path) for path in default_queries()]
    lakegraph, duckdb = Lakegraph(spark, work / "lake"), DuckDBRecompute(work / "duckdb")
    for system in (lakegraph, duckdb):
        load_s, register_s = system.load(initial), system.register(queries)
        records.add({"kind": "setup", "system": system.name, "load_s": load_s, "register_s": register_s,
                     "triples": len(dataset.triples)})
    log(f"scale {settings.scale}: {len(dataset.triples):,} triples, {len(queries)} queries registered")
    writer = MessageWriter()
    for number in range(1, settings.batches + 1):
        path = writer.write(work / "landing" / f"batch_{number:04d}.jsonl", stream.next_batch(settings.batch_size))
        settle(spark, pause_s=0.1)
        timing = lakegraph.apply(path)
        records.add({"kind": "batch", "batch": number, "seconds": timing.seconds, **timing.parts,
                     "commits": timing.commits, "held_changed": lakegraph.runner.held.changed_rows(),
                     "graph_triples": len(stream.graph)})
        if number % settings.check_every == 0 or number == settings.batches:
            recompute = duckdb.apply(path)
            check([lakegraph, duckdb], queries, f"batch {number}")
            records.add({"kind": "check", "batch": number, "duckdb_s": recompute.seconds})
            log(f"  batch {number}: lakegraph {timing.seconds:.3f}s, DuckDB recompute {recompute.seconds:.2f}s; agree")
        else:
            duckdb.merge(path)
        if settings.maintain_every and number % settings.maintain_every == 0 and number < settings.batches:
            start = time.perf_counter()
            maintain(lakegraph.store)
            seconds = time.perf_counter() - start
            records.add({"kind": "maintain", "batch": number, "seconds": seconds})
            log(f"  after batch {number}: maintain {seconds:.1f}s")
    duckdb.close()
    return records.rows


def _windows(records: list[dict], size: int) -> list[list[str]]:
    """Per window of ``size`` batches: lakegraph's median and p90 seconds, median commits, the held
    rows changed since their bases at its end, and DuckDB's recompute at the checks inside it."""
    batches = [r for r in records if r["kind"] == "batch"]
    checks = {r["batch"]: r["duckdb_s"] for r in records if r["kind"] == "check"}
    rows = []
    for start in range(0, len(batches), size):
        part = batches[start:start + size]
        seconds = sorted(r["seconds"] for r in part)
        recompute = [checks[r["batch"]] for r in part if r["batch"] in checks]
        median = statistics.median(seconds)
        rows.append([f"{part[0]['batch']}–{part[-1]['batch']}", f"{median:.3f}",
                     f"{seconds[min(len(seconds) - 1, int(0.9 * len(seconds)))]:.3f}",
                     f"{statistics.median(r['commits'] for r in part):.0f}", f"{part[-1]['held_changed']:,}",
                     f"{statistics.median(recompute):.2f}" if recompute else "·",
                     f"{statistics.median(recompute) / median:.1f}x" if recompute else "·"])
    return rows


def _machine(m: dict) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    return (f"Machine: {m['cores']} cores ({m['cpu']}), {(m['memory_bytes'] or 0) / 2**30:.0f} GiB, {m['platform']}; "
            f"Python {m['python']}; {versions}; lakegraph at commit {m['commit']}.")


def write_report(records: list[dict], out: Path) -> Path:
    """``steady.md`` from the records of a run."""
    config = next(r for r in records if r["kind"] == "config")
    setup = {r["system"]: r for r in records if r["kind"] == "setup"}
    batches = [r for r in records if r["kind"] == "batch"]
    maintained = [r for r in records if r["kind"] == "maintain"]
    first, last = (statistics.median(r["seconds"] for r in part)
                   for part in (batches[:config["window"]], batches[-config["window"]:]))
    seconds = [r["seconds"] for r in batches]
    trend = 100 * float(np.polyfit([r["batch"] for r in batches], seconds, 1)[0]) if len(batches) > 1 else 0.0
    lines = [
        "# A long run: batch time from the first batches to the last",
        "",
        f"`{config['command']}`",
        "",
        f"LUBM scale {config['scale']} ({setup['lakegraph']['triples']:,} triples, 2 departments per university, "
        f"seed {config['seed']}), the ten bench queries registered together; {config['batches']} batches of "
        f"{config['batch_size']:,} updates ({config['delete_ratio']:.0%} deletes) on one `Runner`; "
        + (f"`maintain` (compaction; the default 7-day time-travel horizon, so no vacuum of recent files) after "
           f"batches {', '.join(str(r['batch']) for r in maintained)}, "
           f"{statistics.median(r['seconds'] for r in maintained):.1f} s each, not counted in a batch. "
           if maintained else "no `maintain` between them. ")
        + "lakegraph's batch time is end to end (ingest and `Runner.run`), each batch started settled (the "
        f"files written before it synced); DuckDB merges every batch into its graph and re-runs the queries "
        f"every {config['check_every']} batches, where the answers are compared (they agree at every check, or "
        f"there is no report).",
        "",
        _machine(next(r for r in records if r["kind"] == "machine")),
        "",
        *_table(["batches", "lakegraph median s", "p90 s", "commits per batch", "held rows changed since their base",
                 "DuckDB recompute s", "DuckDB ÷ lakegraph"], _windows(records, config["window"])),
        "",
        f"**Drift:** the last {config['window']} batches' median is {last / first:.2f}x the first {config['window']}'s "
        f"({first:.3f} s → {last:.3f} s); the trend over every batch (least squares) is {trend * 1000:+.1f} ms per "
        f"100 batches, {trend / statistics.median(seconds):+.1%} of the median batch.",
        "",
        "Held rows changed since their base: the rows the run's indexed views and path tables hold beside their "
        "indexed base (removed from it or added since, `pipelines/engine/held.py`); the added rows join a new base "
        "once going through them has cost about what that costs, or once the changed rows pass a quarter of the "
        "base (whose rows removed are dropped from it at a quarter), so they stay bounded and so does the work of "
        "a lookup.",
    ]
    return write_markdown(out, "steady.md", "\n".join(lines) + "\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m bench.steady", description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=_positive, default=75, help="LUBM universities (default 75: about 1M triples)")
    p.add_argument("--batch-size", type=_positive, default=1000, help="updates per batch (default 1000)")
    p.add_argument("--batches", type=_positive, default=300, help="batches in the run (default 300)")
    p.add_argument("--window", type=_positive, default=30, help="batches per row of the report (default 30)")
    p.add_argument("--check-every", type=_positive, default=100,
                   help="batches between DuckDB's recomputes and the answer checks (default 100)")
    p.add_argument("--maintain-every", type=int, default=100,
                   help="batches between compactions of the lake (default 100; 0: none)")
    p.add_argument("--delete-ratio", type=_ratio, default=0.3, help="share of deletes in the stream (default 0.3)")
    p.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory (default bench/results)")
    p.add_argument("--work", type=Path, default=None, help="keep the lake and landing files here")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.maintain_every < 0:
        print("bench.steady: error: --maintain-every must be 0 or more", file=sys.stderr)
        return 2
    settings = Settings(scale=args.scale, batch_size=args.batch_size, batches=args.batches, window=args.window,
                        check_every=args.check_every, maintain_every=args.maintain_every,
                        delete_ratio=args.delete_ratio, seed=args.seed, out=args.out, work=args.work)
    command = " ".join(["python -m bench.steady", *(sys.argv[1:] if argv is None else argv)])

    def body(work: Path, log: Callable[[str], None]) -> Path:
        spark = LazySpark(lambda: get_spark(app_name="lakegraph-bench-steady", jvm_log=str(work / "spark.log")))
        return write_report(run(settings, spark, work, command, log), settings.out)

    return run_command("bench.steady", settings.work, "lakegraph-steady-", body)


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1].endswith(".jsonl"):
        rebuild(write_report, sys.argv)
    else:
        sys.exit(main())
