"""One benchmark run: per scale, generate the data and the stream once, then drive the four systems
through the same landing files, check after every batch that they agree, and record raw figures.

Queries are registered together in one lake by default (one ``Runner.run`` maintains them all,
sharing views, which is how lakegraph is deployed); ``separate`` gives every query a lake of its own
so that lakegraph's figures are per query too, at the cost of replaying the stream per query. The
recomputes and pyoxigraph re-run each query on its own in both modes, so their per-query
times are always available.

Each scale starts with ``warmup`` unmeasured batches (applied and checked like the others) so
that the first measured batch does not pay for JIT compilation and Python worker start-up.

Raw records go to ``results.jsonl`` as they are made (a run that stops on a disagreement keeps what
it measured); :mod:`bench.report` turns them into the table and the plots.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pyspark.sql import SparkSession

from pipelines.spark import SparkSource, running

from .lubm import MessageWriter, UpdateStream, generate, write_ntriples
from .machine import machine_info
from .measure import lake_sizes, matchable
from .systems import BatchTiming, BenchQuery, DuckDBRecompute, Lakegraph, Oxigraph, SparkRecompute, System

PACKAGE = Path(__file__).parent
QUERY_DIR = PACKAGE / "queries"
RESULTS_DIR = PACKAGE / "results"
#: The systems lakegraph is measured and checked against, in the order they run (the last one is
#: the reference the others are checked with).
OTHERS = ("recompute", "duckdb", "oxigraph")


def default_queries() -> list[Path]:
    """Every query shipped in ``bench/queries``."""
    return sorted(QUERY_DIR.glob("*.rq"))


@dataclass
class Config:
    """What one run measures. The defaults are a quick run (a few minutes on 2 cores); figures worth
    quoting need more batches (``--batches 5``) and larger scales."""

    scales: list[int] = field(default_factory=lambda: [1, 10])
    departments: int = 2
    batch_sizes: list[int] = field(default_factory=lambda: [100, 1000])
    batches: int = 1
    floor_batches: int = 1
    warmup: int = 1                     # unmeasured batches first (JIT, Python workers, caches)
    delete_ratio: float = 0.3
    seed: int = 0
    queries: list[Path] = field(default_factory=default_queries)
    separate: bool = False
    engine: str = "auto"                # lakegraph's Z-set engine (Runner's --engine)
    storage: str = "delta-rs"           # lakegraph's storage backend (--storage)
    # the systems beside lakegraph (--systems): at 10M triples all four do not fit one machine's memory
    others: list[str] = field(default_factory=lambda: list(OTHERS))
    out: Path = RESULTS_DIR
    work: Path | None = None            # kept when given; a temporary directory otherwise


class Disagreement(RuntimeError):
    """Two systems gave different answers: the run stops here."""


def run_command(prog: str, work: Path | None, prefix: str,
                body: Callable[[Path, Callable[[str], None]], Path]) -> int:
    """A benchmark command: ``body(work, log)`` in ``work`` (a temporary directory, removed after,
    when None), logging to stderr, then the report path it returns printed. Interruption, a
    disagreement and any failure are one line on stderr and a non-zero exit status."""
    folder = work or Path(tempfile.mkdtemp(prefix=prefix))
    log = lambda line: print(line, file=sys.stderr, flush=True)   # noqa: E731
    try:
        return exit_status(prog, lambda: print(body(folder, log)))
    finally:
        if work is None:
            shutil.rmtree(folder, ignore_errors=True)


def exit_status(prog: str, call: Callable[[], object], kept: Path | None = None) -> int:
    """``call()``'s exit status as a benchmark command's: 0, or after one line on stderr 130 for
    an interruption and 1 for a disagreement (naming ``kept``, the raw figures a run wrote before
    it, when given) or any other failure."""
    try:
        call()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Disagreement as exc:
        print(f"{prog}: disagreement: {exc}" + (f" (raw figures so far: {kept})" if kept else ""), file=sys.stderr)
        return 1
    except Exception as exc:  # one readable line
        first = str(exc).strip().splitlines()
        print(f"{prog}: error: {type(exc).__name__}: {first[0] if first else ''}", file=sys.stderr)
        return 1
    return 0


class Records:
    """Raw figures, kept in memory and appended to ``results.jsonl`` as they come."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.rows: list[dict] = []
        path.write_text("", encoding="utf-8")

    def add(self, row: dict) -> None:
        self.rows.append(row)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row, sort_keys=True) + "\n")


def _sample(bag: Counter, limit: int = 3) -> str:
    return "; ".join(" ".join(map(str, row)) for row in sorted(bag)[:limit]) or "-"


def check(systems: list[System], queries: list[BenchQuery], where: str) -> None:
    """Raise :class:`Disagreement` unless every system has the same answers as the last one
    (pyoxigraph, unless left out)."""
    reference = systems[-1]
    for query in queries:
        expected = reference.answers(query.name)
        for system in systems[:-1]:
            got = system.answers(query.name)
            if got != expected:
                delta = Counter(got)
                delta.subtract(expected)
                extra = Counter({k: n for k, n in delta.items() if n > 0})
                missing = Counter({k: -n for k, n in delta.items() if n < 0})
                raise Disagreement(
                    f"query {query.name}, {where}: {system.name} and {reference.name} disagree: "
                    f"{sum(extra.values())} answer(s) only in {system.name} (e.g. {_sample(extra)}), "
                    f"{sum(missing.values())} only in {reference.name} (e.g. {_sample(missing)})")


@dataclass(frozen=True)
class Planned:
    """A landing file of the stream: its batch size and the graph size after it."""

    path: Path
    size: int
    triples_after: int


def _record(timing: BatchTiming) -> dict:
    return {"seconds": timing.seconds, "parts": timing.parts, "jobs": timing.jobs,
            "commits": timing.commits, "stats": timing.stats}


def run_benchmark(config: Config, spark: SparkSession, log: Callable[[str], None] | None = None) -> list[dict]:
    """Run the benchmark; returns the raw records (also in ``config.out/results.jsonl``)."""
    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    records = Records(config.out / "results.jsonl")
    records.add({"kind": "machine", **machine_info(spark)})
    records.add({"kind": "config", "scales": config.scales, "departments": config.departments,
                 "batch_sizes": config.batch_sizes, "batches": config.batches, "warmup": config.warmup,
                 "floor_batches": config.floor_batches,
                 "delete_ratio": config.delete_ratio, "seed": config.seed, "separate": config.separate,
                 "engine": config.engine, "systems": ["lakegraph", *config.others],
                 "queries": [p.stem for p in config.queries]})
    queries = [BenchQuery.from_file(p) for p in config.queries]
    groups = [[q] for q in queries] if config.separate else [queries]
    work = config.work or Path(tempfile.mkdtemp(prefix="lakegraph-bench-"))
    try:
        for scale in config.scales:
            _run_scale(config, spark, scale, groups, work / f"scale{scale}", records, say)
    finally:
        if config.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return records.rows


@dataclass
class Landing:
    """One scale's files, written once and replayed to every system: the initial graph, the
    warm-up, measured and floor batches; and the size of the graph the stream leaves behind, whole
    and the part each group of queries can match (the graph itself is not kept: at 10M triples
    the set took gigabytes the systems needed)."""

    initial: Path
    triples: int
    warmups: list[Path]
    planned: list[Planned]
    floors: list[Path]
    floor_size: int
    final_triples: int
    matchable: list[int]


def write_landing(config: Config, scale: int, root: Path, groups: list[list[BenchQuery]]) -> Landing:
    """Generate the data and the stream of ``scale`` and write them under ``root``; ``groups``: the
    query groups whose matchable share of the final graph is counted."""
    dataset = generate(scale, config.departments, config.seed)
    stream = UpdateStream(dataset, config.seed, config.delete_ratio)
    initial = write_ntriples(root / "initial.nt", dataset.triples)
    writer = MessageWriter()
    landing = root / "landing"
    warmups = [writer.write(landing / f"warmup_{k:03d}.jsonl", stream.next_batch(min(config.batch_sizes)))
               for k in range(config.warmup)]
    planned: list[Planned] = []
    for size in config.batch_sizes:
        for i in range(config.batches):
            path = writer.write(landing / f"batch_{size}_{i:03d}.jsonl", stream.next_batch(size))
            planned.append(Planned(path, size, len(stream)))
    floor_size = max(config.batch_sizes)
    floors = [writer.write(landing / f"floor_{j:03d}.jsonl", stream.unrelated_batch(floor_size, str(j)))
              for j in range(config.floor_batches)]
    counts = [matchable(stream.graph, [p for q in group for p in q.query.patterns]) for group in groups]
    return Landing(initial, len(dataset.triples), warmups, planned, floors, floor_size, len(stream.graph), counts)


def settle(spark: SparkSource, pause_s: float = 0.5) -> None:
    """Before a system's timed batch, finish what the others left running: the kernel writes back
    the files they wrote (the Spark recompute rewrites its graph table each batch), the JVM, if one
    runs, collects its garbage (the recompute's jobs, the check's reads of the answers), and the
    machine gets a moment. Otherwise that work is timed in the next system's batch: on 2 cores it
    made lakegraph's 10,000-update batches at 1M triples 0.53 to 0.96 s where alone they took 0.4 s."""
    os.sync()
    live = running(spark)
    if live is not None:
        live._jvm.System.gc()
    time.sleep(pause_s)


def _run_scale(config: Config, spark: SparkSession, scale: int, groups: list[list[BenchQuery]],
               root: Path, records: Records, say: Callable[[str], None]) -> None:
    files = write_landing(config, scale, root, groups)
    base = {"scale": scale, "departments": config.departments, "triples": files.triples}
    say(f"scale {scale}: {files.triples} triples, {len(files.warmups)} warm-up, {len(files.planned)} measured "
        f"and {len(files.floors)} floor batch(es)")
    for group, group_matchable in zip(groups, files.matchable):
        label = "all" if len(groups) == 1 else group[0].name
        gbase = {**base, "group": label, "queries": [q.name for q in group]}
        makers: dict[str, Callable[[], System]] = {"recompute": lambda: SparkRecompute(spark, root / f"recompute_{label}"),
                                                   "duckdb": lambda: DuckDBRecompute(root / f"duckdb_{label}"),
                                                   "oxigraph": Oxigraph}
        systems: list[System] = [Lakegraph(spark, root / f"lake_{label}", config.engine, config.storage),
                                 *(makers[name]() for name in OTHERS if name in config.others)]
        for system in systems:
            load_s = system.load(files.initial)
            register_s = system.register(group)
            records.add({"kind": "setup", **gbase, "system": system.name, "load_s": load_s, "register_s": register_s})
            say(f"  [{label}] {system.name}: load {load_s:.1f}s, register {register_s:.1f}s")
        check(systems, group, f"scale {scale}, after registration")
        for k, path in enumerate(files.warmups, start=1):
            for system in systems:
                system.apply(path)
            check(systems, group, f"scale {scale}, warm-up batch {k} ({path.name})")
        for number, batch in enumerate(files.planned, start=1):
            line = []
            for system in systems:
                settle(spark)
                timing = system.apply(batch.path)
                records.add({"kind": "batch", **gbase, "system": system.name, "batch": number,
                             "batch_size": batch.size, "graph_triples": batch.triples_after, **_record(timing)})
                line.append(f"{system.name} {timing.seconds:.2f}s")
            say(f"  [{label}] batch {number}/{len(files.planned)} ({batch.size} updates): " + ", ".join(line))
            check(systems, group, f"scale {scale}, batch {number} ({batch.path.name})")
        lakegraph = systems[0]
        for j, path in enumerate(files.floors, start=1):
            timing = lakegraph.apply(path)
            records.add({"kind": "floor", **gbase, "system": lakegraph.name, "batch": j, "batch_size": files.floor_size,
                         **_record(timing)})
            say(f"  [{label}] floor batch {j}: {timing.seconds:.2f}s")
            check(systems, group, f"scale {scale}, floor batch {j} ({path.name})")
        records.add({"kind": "state", **gbase, "sizes": lake_sizes(root / f"lake_{label}"),
                     "final_triples": files.final_triples, "matchable_triples": group_matchable,
                     "answers": {q.name: sum(systems[-1].answers(q.name).values()) for q in group}})
        for system in systems:
            system.close()
