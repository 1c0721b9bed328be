"""``python -m bench.paths``: streaming regular path queries (issue 12's benchmark, in the setting of
the streaming RPQ paper's LDBC SNB runs).

A social graph (:mod:`bench.snb`: ``knows``, ``likes``, ``replyOf``, ``hasCreator``, power-law
degrees) of ``--scale`` edges is loaded, the eleven queries of the paper (``bench/queries/paths``,
Q1..Q11 on those labels, both ends variables: every node is a root, as in the paper) are registered
together in one lake, and then the stream goes on in batches: for each batch size (1,000 and 10,000
edges) and deletion ratio (0% and 5%), ``--warmup`` unmeasured and ``--batches`` measured batches,
one configuration after the other on the same, growing graph. Three systems get the same landing
files, side by side, batch after batch:

* lakegraph: ingest and ``Runner.run`` (the path operator on the Arrow engine);
* pyoxigraph re-evaluation: the in-memory store updated, then the eleven queries re-run on it;
* Spark closure recompute: the graph as parquet, merged with each batch; every path of the queries
  computed from scratch as a DataFrame fixpoint (:class:`SparkClosure`), then each query as SQL
  joins over the graph and those pairs. The fixpoint costs a Spark job or two per round, so it is
  timed on ``--spark-batches`` batches per configuration (the first ones); the merge runs on every
  batch so that the graph stays the others'.

After every batch lakegraph's answers must equal pyoxigraph's, as bags, for every query (and
Spark's on the batches it evaluated): a disagreement stops the run (exit status 1). Results go to
``paths.md`` and the raw ``paths.jsonl`` in ``--out``; ``python -m bench.paths_report FILE.jsonl``
rebuilds the report.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.spark import LazySpark, SparkSource, get_spark, running, session
from views.automata import BACKWARD, compile_path
from views.model import Var
from views.paths import PathPattern, path_text

from .__main__ import _Parser, _ints, _positive, _ratio
from .lubm import MessageWriter, write_ntriples
from .machine import machine_info, speed_probe
from .runner import QUERY_DIR, RESULTS_DIR, Disagreement, Records, check, run_command
from .snb import SocialGraph
from .systems import BatchTiming, BenchQuery, Lakegraph, Oxigraph, SparkRecompute, bgp_sql

PATH_QUERIES = QUERY_DIR / "paths"
#: The systems a run can measure (``--systems``); lakegraph always, the others to compare with.
#: ``pyoxigraph-once`` re-evaluates only once, after the last batch (:func:`reevaluate_once`): at 1M
#: edges one re-evaluation of the eleven queries takes longer than the whole lakegraph run.
SYSTEMS = ("lakegraph", "pyoxigraph", "pyoxigraph-once", "spark")
#: What a run measures unless told: every system, pyoxigraph at every batch.
DEFAULT_SYSTEMS = ("lakegraph", "pyoxigraph", "spark")

Bag = Counter


def path_queries() -> list[BenchQuery]:
    """Q1..Q11, in order, each planned as registered after the ones before it (sharing the path
    views they keep)."""
    queries: list[BenchQuery] = []
    for path in sorted(PATH_QUERIES.glob("q*.rq"), key=lambda p: int(p.stem[1:])):
        queries.append(BenchQuery.from_file(path, {p.id for q in queries for p in q.plan.paths}))
    return queries


@dataclass(frozen=True)
class Settings:
    """One run's knobs (the command line). The defaults are what fits a shared 2-core machine."""

    scale: int = 20_000
    batch_sizes: list[int] = field(default_factory=lambda: [1_000, 10_000])
    delete_ratios: list[float] = field(default_factory=lambda: [0.0, 0.05])
    batches: int = 3
    warmup: int = 1
    spark_batches: int = 1
    seed: int = 0
    out: Path = RESULTS_DIR
    work: Path | None = None
    master: str = "local[2]"
    systems: list[str] = field(default_factory=lambda: list(DEFAULT_SYSTEMS))


@dataclass(frozen=True)
class Batch:
    """A landing file: its configuration, its number within it (0 for the warm-up ones) and the
    graph's size after it."""

    path: Path
    size: int
    delete_ratio: float
    number: int
    edges_after: int


def write_stream(settings: Settings, root: Path) -> tuple[Path, int, list[Batch]]:
    """The initial graph as N-Triples and every landing file, in the order they are applied."""
    graph = SocialGraph(settings.seed)
    initial = write_ntriples(root / "initial.nt", graph.grow(settings.scale))
    edges = len(graph)
    writer = MessageWriter()
    batches = []
    for size in settings.batch_sizes:
        for ratio in settings.delete_ratios:
            for k in range(settings.warmup + settings.batches):
                number = k - settings.warmup + 1 if k >= settings.warmup else 0
                path = root / "landing" / f"b{size}_d{round(ratio * 100)}_{k:03d}.jsonl"
                writer.write(path, graph.next_batch(size, ratio))
                batches.append(Batch(path, size, ratio, number, len(graph)))
    return initial, edges, batches


# -- the Spark baseline -----------------------------------------------------------------------------
def closure(spark: SparkSession, graph: DataFrame, pattern: PathPattern) -> tuple[DataFrame, int]:
    """The (s, o) pairs of a path with both ends variables over ``graph(s, p, o)``, and the rounds
    it took: the product graph (graph × the path's minimal DFA) walked breadth-first from every
    node with a first move, semi-naively (each round joins only the pairs the previous one found,
    minus those already reached), each round checkpointed so the plan does not grow; plus every
    node of the graph with itself when the path matches the empty word."""
    if not (isinstance(pattern.s, Var) and isinstance(pattern.o, Var)) or pattern.s == pattern.o:
        raise ValueError(f"the Spark baseline walks paths between two distinct variables, not {pattern.text()}")
    automaton = compile_path(pattern.path)
    if automaton.uses_other:
        raise ValueError(f"the Spark baseline does not walk negated property sets ({pattern.text()})")
    moves = spark.createDataFrame([(q, p, d == BACKWARD, n) for q, (p, d), n in automaton.moves],
                                  "state int, p string, backward boolean, next_state int")
    labelled = graph.join(F.broadcast(moves), "p")
    step = labelled.select(F.when(F.col("backward"), F.col("o")).otherwise(F.col("s")).alias("node"), "state",
                           F.when(F.col("backward"), F.col("s")).otherwise(F.col("o")).alias("next"),
                           "next_state").localCheckpoint()
    reached = step.where("state = 0").select(F.col("node").alias("root"), "node", "state").distinct().localCheckpoint()
    frontier, rounds = reached, 0
    while True:
        found = (frontier.join(step, ["node", "state"])
                 .select("root", F.col("next").alias("node"), F.col("next_state").alias("state")).distinct()
                 .join(reached, ["root", "node", "state"], "left_anti").localCheckpoint())
        rounds += 1
        if found.isEmpty():
            break
        reached = reached.unionByName(found).localCheckpoint()
        frontier = found
    finals = list(automaton.finals)
    pairs = reached.where(F.col("state").isin(finals)).select(F.col("root").alias("s"), F.col("node").alias("o"))
    if automaton.nullable:
        nodes = graph.select(F.col("s").alias("n")).union(graph.select(F.col("o").alias("n")))
        pairs = pairs.union(nodes.select(F.col("n").alias("s"), F.col("n").alias("o")))
    return pairs.distinct(), rounds


class SparkClosure(SparkRecompute):
    """The graph as parquet, merged with every batch (as :class:`bench.systems.SparkRecompute`);
    on the batches it evaluates, every distinct path of the queries recomputed as a fixpoint
    (:func:`closure`, shared by the queries naming it), then each query as SQL over the graph and
    those pairs."""

    name = "spark"

    def __init__(self, spark: SparkSession, workdir: Path) -> None:
        super().__init__(spark, workdir)
        self.rounds: dict[str, int] = {}
        self._pairs: dict[str, str] = {}      # path text -> temporary view of its pairs, this batch

    def _path_view(self, pattern: PathPattern) -> str:
        key = path_text(pattern.path)
        if key not in self._pairs:
            name = f"pairs_{len(self._pairs)}"
            pairs, self.rounds[key] = closure(self.spark, self.spark.table("graph"), pattern)
            pairs.localCheckpoint().createOrReplaceTempView(name)
            self._pairs[key] = name
        return self._pairs[key]

    def _evaluate(self, query: BenchQuery) -> Bag:
        sources = {i: self._path_view(p) for i, p in enumerate(query.query.patterns) if isinstance(p, PathPattern)}
        table = self.spark.sql(bgp_sql(query.query, sources=sources)).toArrow()
        return Counter(zip(*(table.column(v).to_pylist() for v in query.query.projection)))

    def register(self, queries: list[BenchQuery]) -> float:
        """Nothing is evaluated before the first batch it times."""
        self.queries = queries
        return 0.0

    def merge(self, batch_path: Path) -> float:
        """Bring the graph up to date (every batch); returns seconds."""
        start = time.perf_counter()
        self._merge(batch_path)
        return time.perf_counter() - start

    def evaluate(self, merge_s: float) -> BatchTiming:
        """Every query from scratch on the graph as it stands."""
        self._pairs = {}
        seconds = {}
        for query in self.queries:
            start = time.perf_counter()
            self.current[query.name] = self._evaluate(query)
            seconds[query.name] = time.perf_counter() - start
        return BatchTiming(merge_s + sum(seconds.values()), {"apply": merge_s, **seconds},
                           stats={"rounds": dict(self.rounds)})


# -- the run ----------------------------------------------------------------------------------------
def state_rows(system: Lakegraph) -> dict:
    """Per path view of the lake: its reach rows (the witness forest, of the table it may share
    with another path view: a star's is its plus's) and its pairs."""
    paths = {p.id: p for q in system.queries for p in q.plan.paths}
    return {p.canonical: {"reach": system.store.row_count(p.reach), "reach_table": p.reach,
                          "pairs": system.store.row_count(p.id)} for p in paths.values()}


def run(settings: Settings, spark: SparkSource, work: Path, command: str, log: Callable[[str], None]) -> list[dict]:
    """The whole benchmark in ``work`` for ``settings.systems``; returns the raw records (also in
    ``out/paths.jsonl``). ``spark`` may be lazy: without the Spark baseline nothing starts it."""
    records = Records(settings.out / "paths.jsonl")
    started = time.perf_counter()
    queries = path_queries()
    initial, edges, batches = write_stream(settings, work)
    config = {k: str(v) if isinstance(v, Path) else v for k, v in settings.__dict__.items() if k != "work"}
    records.add({"kind": "config", **config, "command": command, "edges": edges,
                 "queries": {q.name: q.text.splitlines()[-1] for q in queries}})
    chosen = set(settings.systems)
    sp = SparkClosure(session(spark), work / "spark") if "spark" in chosen else None
    records.add({"kind": "machine", **machine_info(running(spark))})
    log(f"graph: {edges:,} edges; {len(batches)} batches")
    lake, ox = Lakegraph(spark, work / "lake"), Oxigraph() if "pyoxigraph" in chosen else None
    incremental = [s for s in (lake, ox) if s is not None]     # the systems that see every batch
    for system in [*incremental, *([sp] if sp else [])]:
        cpu = time.process_time()
        load_s = system.load(initial)
        register_s = system.register(queries)
        records.add({"kind": "setup", "system": system.name, "load_s": load_s, "register_s": register_s,
                     "cpu_s": time.process_time() - cpu})
        log(f"{system.name}: load {load_s:.1f}s, register {register_s:.1f}s")
    if ox:
        check([lake, ox], queries, "after registration")
    records.add({"kind": "state", "after": "registration", "edges": edges, "paths": state_rows(lake)})
    evaluated: Counter = Counter()
    for batch in batches:
        where = f"batch {batch.path.name}"
        base = {"kind": "batch" if batch.number else "warmup", "size": batch.size,
                "delete_ratio": batch.delete_ratio, "number": batch.number, "edges_after": batch.edges_after}
        line = []
        for system in incremental:
            probe = speed_probe()
            cpu = time.process_time()
            timing = system.apply(batch.path)
            cpu_s = time.process_time() - cpu
            records.add({**base, "system": system.name, "seconds": timing.seconds, "cpu_s": cpu_s,
                         "commits": timing.commits, "parts": timing.parts, "stats": timing.stats,
                         "load_1m": os.getloadavg()[0], "probe_ms": [probe, speed_probe()]})
            line.append(f"{system.name} {timing.seconds:.2f}s (CPU {cpu_s:.2f}s)")
        if ox:
            check([lake, ox], queries, where)
        if sp is not None:
            merge_s = sp.merge(batch.path)
            key = (batch.size, batch.delete_ratio)
            if batch.number and evaluated[key] < settings.spark_batches:
                evaluated[key] += 1
                timing = sp.evaluate(merge_s)
                records.add({**base, "system": sp.name, "seconds": timing.seconds, "parts": timing.parts,
                             "stats": timing.stats, "load_1m": os.getloadavg()[0]})
                line.append(f"{sp.name} {timing.seconds:.2f}s")
                if ox:
                    check([sp, ox], queries, where)
        log(f"{where}: " + ", ".join(line))
        if batch.number == settings.batches:
            records.add({"kind": "state", "after": batch.path.name, "size": batch.size,
                         "delete_ratio": batch.delete_ratio, "edges": batch.edges_after, "paths": state_rows(lake)})
    answers = {q.name: lake.count(q.name) for q in queries}
    records.add({"kind": "answers", **answers})
    if "pyoxigraph-once" in chosen:
        log("pyoxigraph: loading the graph and applying every batch, then each query once")
        records.add(reevaluate_once(initial, batches, queries, answers))
    records.add({"kind": "elapsed", "seconds": time.perf_counter() - started})
    for system in [*incremental, *([sp] if sp else [])]:
        system.close()
    return records.rows


def reevaluate_once(initial: Path, batches: list[Batch], queries: list[BenchQuery], answers: dict[str, int]) -> dict:
    """What one batch costs pyoxigraph at a size where re-evaluating at every batch would take
    hours: the initial graph loaded and every batch applied (timed apart), then each query run once
    on the graph after the last batch, its answers counted as they stream. With no bag kept and no
    diff this is less than a batch costs a re-evaluating system. The counts must equal lakegraph's
    (``answers``), or :class:`Disagreement` is raised."""
    system = Oxigraph()
    load_s = system.load(initial)
    start = time.perf_counter()
    for batch in batches:
        system.update(batch.path)
    update_s = time.perf_counter() - start
    counts, seconds = {}, {}
    for query in queries:
        start = time.perf_counter()
        counts[query.name] = system.count(query)
        seconds[query.name] = time.perf_counter() - start
    wrong = {name: (answers[name], n) for name, n in counts.items() if n != answers[name]}
    if wrong:
        raise Disagreement(f"after the last batch, lakegraph and pyoxigraph count different answers "
                           f"(query: (lakegraph, pyoxigraph)): {wrong}")
    system.close()
    return {"kind": "reevaluation", "system": "oxigraph", "load_s": load_s, "update_s": update_s,
            "edges": batches[-1].edges_after if batches else None, "seconds": seconds, "answers": counts,
            "load_1m": os.getloadavg()[0]}


# -- command line -----------------------------------------------------------------------------------
def _ratios(text: str) -> list[float]:
    return [_ratio(v) for v in text.split(",") if v.strip()]


def _systems(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = sorted(set(names) - set(SYSTEMS))
    if unknown or "lakegraph" not in names or {"pyoxigraph", "pyoxigraph-once"} <= set(names):
        raise argparse.ArgumentTypeError(f"choose among {', '.join(SYSTEMS)}, lakegraph included and one pyoxigraph "
                                         f"at most (got {text!r})")
    return [name for name in SYSTEMS if name in names]


def build_parser() -> argparse.ArgumentParser:
    d = Settings()
    p = _Parser(prog="python -m bench.paths",
                description="Streaming regular path queries (Q1-Q11 on a social graph): lakegraph against "
                            "pyoxigraph re-evaluation and a Spark closure recompute, checked against each other.")
    p.add_argument("--scale", type=_positive, default=d.scale,
                   help=f"edges of the initial graph (default {d.scale:,}; the issue's target is set at 1000000)")
    p.add_argument("--batch-sizes", type=_ints, default=d.batch_sizes, metavar="N,N",
                   help="edges per batch, comma-separated (default 1000,10000)")
    p.add_argument("--delete-ratios", type=_ratios, default=d.delete_ratios, metavar="R,R",
                   help="shares of deletions in a batch, comma-separated (default 0,0.05)")
    p.add_argument("--batches", type=_positive, default=d.batches,
                   help=f"measured batches per batch size and deletion ratio (default {d.batches})")
    p.add_argument("--warmup", type=int, default=d.warmup,
                   help=f"unmeasured batches before them, per configuration (default {d.warmup})")
    p.add_argument("--spark-batches", type=int, default=d.spark_batches,
                   help=f"measured batches per configuration Spark evaluates, 0 to skip (default {d.spark_batches})")
    p.add_argument("--seed", type=int, default=d.seed, help="generator seed (default 0)")
    p.add_argument("--out", type=Path, default=d.out, help="results directory (default bench/results)")
    p.add_argument("--work", type=Path, help="keep the landing files and lakes here (default: a temporary directory)")
    p.add_argument("--master", default=d.master, help=f"Spark master (default {d.master})")
    p.add_argument("--systems", type=_systems, default=d.systems, metavar="S,S",
                   help=f"what to measure among {','.join(SYSTEMS)}, comma-separated, lakegraph among them "
                        f"(default {','.join(DEFAULT_SYSTEMS)}): without spark no JVM starts, without pyoxigraph "
                        "the answers go unchecked; pyoxigraph-once re-evaluates once, after the last batch, and "
                        "checks the answer counts")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.warmup < 0 or args.spark_batches < 0:
        print("bench.paths: error: --warmup and --spark-batches must be 0 or more", file=sys.stderr)
        return 2
    settings = Settings(scale=args.scale, batch_sizes=args.batch_sizes, delete_ratios=args.delete_ratios,
                        batches=args.batches, warmup=args.warmup, spark_batches=args.spark_batches, seed=args.seed,
                        out=args.out, work=args.work, master=args.master, systems=args.systems)
    command = " ".join(["python -m bench.paths", *(sys.argv[1:] if argv is None else argv)])

    def body(work: Path, log: Callable[[str], None]) -> Path:
        from .paths_report import write_report

        spark = LazySpark(lambda: get_spark(settings.master, app_name="lakegraph-bench-paths",
                                            jvm_log=str(work / "spark.log")))
        return write_report(run(settings, spark, work, command, log), settings.out)

    return run_command("bench.paths", settings.work, "lakegraph-paths-", body)


if __name__ == "__main__":
    sys.exit(main())
