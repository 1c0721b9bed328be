"""``python -m bench.windows``: sliding-window throughput in SPECTRA's LUBM setting (its Table 1).

LUBM-shaped triples (:mod:`bench.lubm`, streamed in generation order, one triple per event) arrive
at a steady ``--rate`` per second of event time on one stream; the seven LUBM queries
(``bench/queries/q1..q7.rq``) run over ``[RANGE W STEP s]`` windows for each ``--window-seconds`` W.
Throughput is stream triples over wall seconds, for three systems fed the same landing files:

* lakegraph: the seven queries registered together (Arrow engine) in one lake per window size; each
  landing file (``--file-seconds`` of event time) is ingested, then ``Runner.run`` emits the windows
  it closes (``flush`` after the last). Registration is not timed, nor one warm-up batch on a
  scratch lake before the first window size. A query's own figure is the
  ingest plus its share of the run (the runner's call of the window operator for that query);
* pyoxigraph re-evaluation: the landing files parsed once, then for every window a fresh in-memory
  store loaded with the window's triples and the seven queries run;
* Spark SQL re-evaluation: per window one DataFrame of its triples and each query's basic graph
  pattern as SQL self-joins (:func:`bench.systems.bgp_sql`); a few windows are timed and the mean
  extrapolated to all (every window on Spark would take far longer than the rest of the run).

Before any figure is written the systems must agree: lakegraph emits exactly the windows the
semantics give; every window's answer count in its window log equals pyoxigraph's; for a sample of
windows per query lakegraph's RStream (as ``lakegraph answers --window`` reads it) and Spark's
answers equal pyoxigraph's as bags. A disagreement is one line on stderr and exit status 1. Then the buffer sizes
recorded after every batch show whether the state stays bounded, and a last run of lakegraph alone
over a stream ``--stretch`` (10) times the largest window shows it stays flat once the window is
full. Results: ``windows.md`` and the raw ``windows.jsonl`` in ``--out``.
"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import shutil
import sys
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.json as pa_json
import pyoxigraph as ox

from pipelines.answers import answers, windows as window_log
from pipelines.engine import runner as runner_module
from pipelines.engine.register import register
from pipelines.engine.runner import Runner
from pipelines.engine.window_state import stored_rows
from pipelines.engine.windowed import read_state
from pipelines.ingest import ingest_paths
from pipelines.lake import buffer_table
from pipelines.spark import LazySpark, get_spark, running
from pipelines.storage import TableStore, open_store
from pipelines.storage.spark_arrow import frame_of
from views.plan import QueryPlan, compile_query
from views.sparql import parse_query

from .__main__ import _Parser, _ints, _positive
from .lubm import Triple, generate
from .machine import machine_info, speed_probe
from .measure import commits
from .runner import QUERY_DIR, RESULTS_DIR, Disagreement, Records, run_command
from .systems import BenchQuery, _quads, bgp_sql
from .windows_report import write_report

STREAM_IRI = "http://lakegraph.example/lubm"
START_MS = int(datetime(2026, 11, 1, 9, 0, tzinfo=timezone.utc).timestamp() * 1000)
QUERIES = tuple(f"q{i}" for i in range(1, 8))

Bag = Counter


@dataclass(frozen=True)
class Settings:
    """One run's knobs (the command line). The defaults take about eight minutes on 2 cores."""

    windows_s: list[int] = field(default_factory=lambda: [10, 50, 100])
    step_s: int = 1
    rate: int = 1000
    duration_s: int = 300
    file_s: int = 10
    longer_batches_s: list[int] = field(default_factory=lambda: [30, 60])
    spark_windows: int = 4
    check_windows: int = 6
    departments: int = 2
    seed: int = 0
    stretch: int = 10
    out: Path = RESULTS_DIR
    work: Path | None = None
    master: str = "local[2]"


@dataclass(frozen=True)
class Window:
    """One window: its number (1, 2, ... as the window log counts) and extent [open, close) in ms."""

    number: int
    open_ms: int
    close_ms: int


@dataclass(frozen=True)
class Stream:
    """The timestamped stream: triples in stream order, their event times (ms, non-decreasing) and
    the landing files that carry them, in order."""

    triples: list[Triple]
    times_ms: list[int]
    files: list[Path]
    universities: int

    def span(self, window: Window) -> slice:
        """The stream positions whose event time is in the window (a contiguous run: times are sorted)."""
        return slice(bisect.bisect_left(self.times_ms, window.open_ms),
                     bisect.bisect_left(self.times_ms, window.close_ms))

    def windows(self, range_ms: int, step_ms: int) -> list[Window]:
        """The windows lakegraph must emit (lateness 0, flushed at the end): closes at the multiples
        of STEP from the first after the first event up to the last whose extent [close - RANGE,
        close) still holds the last event."""
        first = (self.times_ms[0] // step_ms + 1) * step_ms
        last = (self.times_ms[-1] + range_ms) // step_ms * step_ms
        return [Window(k + 1, close - range_ms, close) for k, close in enumerate(range(first, last + 1, step_ms))]


# -- the stream -------------------------------------------------------------------------------------
def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def make_stream(settings: Settings, landing: Path) -> Stream:
    """``rate * duration`` triples of the smallest LUBM-shaped dataset that has them, timed at the
    steady rate from :data:`START_MS`, written as one landing file per ``file_s`` seconds."""
    need = settings.rate * settings.duration_s
    universities = 1
    dataset = generate(universities, settings.departments, settings.seed)
    while len(dataset.triples) < need:
        universities = -(-need * universities // len(dataset.triples))   # ceil: the size is ~linear
        dataset = generate(universities, settings.departments, settings.seed)
    triples = dataset.triples[:need]
    times = [START_MS + i * 1000 // settings.rate for i in range(need)]
    per_file = settings.rate * settings.file_s
    files = []
    for first in range(0, need, per_file):
        path = landing / f"stream-{first // per_file:04d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            for (s, p, o), ms in zip(triples[first:first + per_file], times[first:first + per_file]):
                handle.write(json.dumps({"op": "+", "s": s, "p": p, "o": o, "stream": STREAM_IRI,
                                         "time": _iso(ms)}) + "\n")
        files.append(path)
    return Stream(triples, times, files, universities)


def windowed_plan(query: BenchQuery, range_s: int, step_s: int) -> QueryPlan:
    """The bench query registered over the stream's sliding window: its text with a REGISTER
    header and a ``FROM STREAM`` clause before its WHERE."""
    head, sep, body = query.text.partition("WHERE {")
    if not sep:
        raise ValueError(f"{query.name}: no 'WHERE {{' to put the window before")
    text = (f"REGISTER QUERY {query.name} AS\n{head}"
            f"FROM STREAM <{STREAM_IRI}> [RANGE {range_s}s STEP {step_s}s]\n{sep}{body}")
    return compile_query(parse_query(text, query.name), query.name, lateness_ms=0)


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# -- lakegraph --------------------------------------------------------------------------------------
@dataclass
class LakeRun:
    """lakegraph over one window size: wall seconds (ingest + run), per-query run seconds, the
    window log per query, and the state sizes after every batch."""

    ingest_s: float = 0.0
    run_s: float = 0.0
    cpu_s: float = 0.0
    register_s: float = 0.0
    query_s: dict[str, float] = field(default_factory=dict)
    logs: dict[str, list[dict]] = field(default_factory=dict)
    state: list[dict] = field(default_factory=list)
    commits: int = 0
    batches: int = 0


@contextmanager
def window_seconds_per_query() -> Iterator[dict[str, float]]:
    """Seconds the runner spends in each windowed query's window operator and engine steps, by
    timing its calls of ``run_windowed`` from outside (the engine reports no per-query times)."""
    seconds: dict[str, float] = defaultdict(float)
    original = runner_module.run_windowed

    def timed(store: TableStore, plan: QueryPlan, *args, **kwargs) -> dict:
        start = time.perf_counter()
        try:
            return original(store, plan, *args, **kwargs)
        finally:
            seconds[plan.name] += time.perf_counter() - start

    runner_module.run_windowed = timed
    try:
        yield seconds
    finally:
        runner_module.run_windowed = original


def _state_rows(store: TableStore, plans: list[QueryPlan]) -> dict:
    """Rows of each query's window buffer and of all its views as a batch reads them (the buffer's
    live rows, the views consolidated), and the rows the window state table holds (appended to, at
    most twice their content)."""
    states = {p.name: read_state(store, p) for p in plans}
    buffers = {p.name: states[p.name][buffer_table(p.name)].num_rows for p in plans}
    views = sum(states[p.name][v.id].num_rows for p in plans for v in p.views)
    stored = stored_rows(store)
    return {"buffer": buffers, "views": views, "stored": stored}


def run_lakegraph(stream: Stream, plans: list[QueryPlan], lake: Path, spark: LazySpark) -> LakeRun:
    """Register ``plans`` on a fresh lake, then per landing file ingest and run (flush after the
    last), timing both; the state sizes are read between batches, off the clock."""
    store = open_store(str(lake), spark, backend="delta-rs")
    out = LakeRun()
    out.register_s = sum(_timed(lambda p=p: register(store, spark, p, engine="arrow")) for p in plans)
    before = commits(lake)
    with window_seconds_per_query() as per_query:
        for i, path in enumerate(stream.files):
            cpu = time.process_time()
            out.ingest_s += _timed(lambda: ingest_paths(store, [str(path)]))
            last = i == len(stream.files) - 1
            out.run_s += _timed(lambda: Runner(store, spark, engine="arrow").run(flush=last))
            out.cpu_s += time.process_time() - cpu
            out.state.append({"batch": i + 1, "file": path.name, **_state_rows(store, plans)})
    out.query_s = dict(per_query)
    out.commits = commits(lake) - before
    out.batches = len(stream.files)
    for plan in plans:
        keys = ["window", "open_ms", "close_ms", "answers"]
        out.logs[plan.name] = [{k: row[k] for k in keys} for row in window_log(store, plan.name)]
    return out


def warm_up(stream: Stream, queries: list[BenchQuery], range_s: int, step_s: int, lake: Path,
            spark: LazySpark) -> None:
    """One untimed batch (the first landing file, flushed) on a scratch lake: the first window size
    measured would otherwise also pay for the process's first Delta writes, Arrow kernels and
    imports (Spark gets a warm-up window too)."""
    first = Stream(stream.triples, stream.times_ms, stream.files[:1], stream.universities)
    run_lakegraph(first, [windowed_plan(q, range_s, step_s) for q in queries], lake, spark)
    shutil.rmtree(lake, ignore_errors=True)


def rstream_bag(store: TableStore, plan: QueryPlan, window: int) -> Bag:
    """A windowed query's RStream at one window, as ``lakegraph answers --window`` reads it."""
    bag: Bag = Counter()
    for row in answers(store, plan.name, window=window).to_pylist():
        bag[tuple(row[v] for v in plan.projection)] += row["_mult"]
    return bag


# -- re-evaluation baselines ------------------------------------------------------------------------
@dataclass
class Reevaluation:
    """A re-evaluating system over the windows it evaluated: seconds to read the stream, to build
    each window's graph, per query; the answers per (query, window number)."""

    read_s: float = 0.0
    build_s: float = 0.0
    cpu_s: float = 0.0
    query_s: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    answers: dict[tuple[str, int], Bag] = field(default_factory=dict)
    evaluated: list[int] = field(default_factory=list)


def run_oxigraph(stream: Stream, queries: list[BenchQuery], windows: list[Window]) -> Reevaluation:
    """Every window: a fresh pyoxigraph store holding the window's triples, every query run on it."""
    out = Reevaluation()
    start, cpu = time.perf_counter(), time.process_time()
    quads = [quad for path in stream.files for _, quad in _quads(path)]
    out.read_s = time.perf_counter() - start
    for window in windows:
        start = time.perf_counter()
        store = ox.Store()
        store.extend(quads[stream.span(window)])
        out.build_s += time.perf_counter() - start
        for query in queries:
            start = time.perf_counter()
            variables = query.query.projection
            out.answers[(query.name, window.number)] = Counter(
                tuple(str(s[v]) for v in variables) for s in store.query(query.text))
            out.query_s[query.name] += time.perf_counter() - start
        out.evaluated.append(window.number)
    out.cpu_s = time.process_time() - cpu
    return out


def spread(items: list, count: int) -> list:
    """``count`` items evenly spaced over ``items``, in order (the first and the last among them
    when ``count`` > 1)."""
    if count >= len(items):
        return list(items)
    if count <= 0:
        return []
    if count == 1:
        return [items[len(items) // 2]]
    return [items[round(k * (len(items) - 1) / (count - 1))] for k in range(count)]


def run_spark(spark: LazySpark, stream: Stream, queries: list[BenchQuery], windows: list[Window],
              sample: int) -> Reevaluation:
    """``sample`` windows spread over ``windows`` (after one untimed warm-up window): per window a
    DataFrame of its triples as the temporary view ``graph``, every query as SQL over it."""
    session = spark()
    out = Reevaluation()
    start = time.perf_counter()
    triples = pa.concat_tables([pa_json.read_json(path).select(["s", "p", "o"]) for path in stream.files])
    out.read_s = time.perf_counter() - start
    sql = {q.name: bgp_sql(q.query) for q in queries}

    def evaluate(window: Window, record: bool) -> None:
        span = stream.span(window)
        start = time.perf_counter()
        frame_of(session, triples.slice(span.start, span.stop - span.start)).createOrReplaceTempView("graph")
        built = time.perf_counter()
        for query in queries:
            begin = time.perf_counter()
            table = session.sql(sql[query.name]).toArrow()
            bag = Counter(zip(*(table.column(v).to_pylist() for v in query.query.projection)))
            if record:
                out.query_s[query.name] += time.perf_counter() - begin
                out.answers[(query.name, window.number)] = bag
        if record:
            out.build_s += built - start
            out.evaluated.append(window.number)

    chosen = spread(windows, sample)
    evaluate(chosen[len(chosen) // 2], record=False)
    for window in chosen:
        evaluate(window, record=True)
    session.catalog.dropTempView("graph")
    return out


# -- checks -----------------------------------------------------------------------------------------
def _same(got: Bag, expected: Bag, what: str) -> None:
    """Raise :class:`Disagreement` naming ``what`` unless the bag ``got`` is pyoxigraph's ``expected``."""
    if got != expected:
        extra, missing = got - expected, expected - got
        raise Disagreement(f"{what} differs from pyoxigraph: {sum(extra.values())} answer(s) only there "
                           f"(e.g. {sorted(extra)[:1]}), {sum(missing.values())} only in pyoxigraph "
                           f"(e.g. {sorted(missing)[:1]})")


def bag_sample(log: list[dict], count: int) -> list[dict]:
    """``count`` window-log rows to compare as bags: spread over the windows with answers first
    (an empty window proves little), then over the others."""
    answered = spread([r for r in log if r["answers"]], count)
    empty = [r for r in log if not r["answers"]]
    return answered + spread(empty, count - len(answered))


def check(store: TableStore, plans: list[QueryPlan], lake: LakeRun, windows: list[Window],
          oxigraph: Reevaluation, spark: Reevaluation, sample: int, where: str) -> dict:
    """Raise :class:`Disagreement` unless, for every query, lakegraph emitted exactly ``windows``,
    each window's logged answer count is pyoxigraph's, lakegraph's RStream equals pyoxigraph's
    answers on ``sample`` windows, and Spark's do on every window it evaluated. Returns how many
    (query, window) counts and bags were compared."""
    expected = [(w.number, w.open_ms, w.close_ms) for w in windows]
    bags = 0
    for plan in plans:
        log = lake.logs[plan.name]
        emitted = [(r["window"], r["open_ms"], r["close_ms"]) for r in log]
        if emitted != expected:
            raise Disagreement(f"{where}, {plan.name}: lakegraph emitted {len(emitted)} windows "
                               f"{emitted[:2]}..., the semantics give {len(expected)} {expected[:2]}...")
        for row in log:
            oracle = sum(oxigraph.answers[(plan.name, row["window"])].values())
            if row["answers"] != oracle:
                raise Disagreement(f"{where}, {plan.name}, window {row['window']}: lakegraph logged "
                                   f"{row['answers']} answers, pyoxigraph has {oracle}")
        for row in bag_sample(log, sample):
            _same(rstream_bag(store, plan, row["window"]), oxigraph.answers[(plan.name, row["window"])],
                  f"{where}, {plan.name}, window {row['window']}: lakegraph's RStream")
        for number in spark.evaluated:
            _same(spark.answers[(plan.name, number)], oxigraph.answers[(plan.name, number)],
                  f"{where}, {plan.name}, window {number}: Spark SQL's answers")
        bags += min(sample, len(log)) + len(spark.evaluated)
    return {"windows": len(windows) * len(plans), "bags": bags,
            "answered": sum(1 for p in plans for r in lake.logs[p.name] if r["answers"])}


# -- one window size --------------------------------------------------------------------------------
def _lakegraph_record(range_s: int, stream: Stream, run: LakeRun, windows: int) -> dict:
    return {"kind": "lakegraph", "window_s": range_s, "triples": len(stream.triples),
            "seconds": run.ingest_s + run.run_s, "ingest_s": run.ingest_s, "run_s": run.run_s, "cpu_s": run.cpu_s,
            "register_s": run.register_s, "query_s": run.query_s, "windows": windows,
            "windows_emitted": sum(len(log) for log in run.logs.values()), "commits": run.commits,
            "batches": run.batches}


def _reevaluation_record(kind: str, range_s: int, stream: Stream, run: Reevaluation, windows: int) -> dict:
    """Measured seconds, and the estimate for all ``windows`` (equal to them when none was skipped)."""
    n = len(run.evaluated)
    scale = windows / n
    return {"kind": kind, "window_s": range_s, "triples": len(stream.triples), "windows": windows,
            "evaluated": n, "read_s": run.read_s, "build_s": run.build_s, "query_s": dict(run.query_s),
            "cpu_s": run.cpu_s * scale,
            "seconds": run.read_s + (run.build_s + sum(run.query_s.values())) * scale,
            "per_query_s": {q: run.read_s + (run.build_s + s) * scale for q, s in run.query_s.items()}}


def measure_window(settings: Settings, stream: Stream, queries: list[BenchQuery], range_s: int,
                   spark: LazySpark, work: Path, records: Records, log: Callable[[str], None]) -> None:
    """Run the three systems over ``[RANGE range_s STEP step_s]`` windows, check them, record them
    (each system's record with the 1-minute load average after it: other processes competing for
    the cores show there)."""
    plans = [windowed_plan(q, range_s, settings.step_s) for q in queries]
    windows = stream.windows(range_s * 1000, settings.step_s * 1000)
    lake = work / f"lake-{range_s}s"
    probe = speed_probe()
    run = run_lakegraph(stream, plans, lake, spark)
    measured = [{**_lakegraph_record(range_s, stream, run, len(windows)), "load_1m": os.getloadavg()[0],
                 "probe_ms": [probe, speed_probe()]}]
    log(f"{range_s}s: lakegraph {run.ingest_s + run.run_s:.1f}s for {len(windows)} windows x {len(plans)} queries")
    probe = speed_probe()
    oxigraph = run_oxigraph(stream, queries, windows)
    measured.append({**_reevaluation_record("oxigraph", range_s, stream, oxigraph, len(windows)),
                     "load_1m": os.getloadavg()[0], "probe_ms": [probe, speed_probe()]})
    log(f"{range_s}s: pyoxigraph {measured[-1]['seconds']:.1f}s")
    sparked = Reevaluation()
    if settings.spark_windows:
        sparked = run_spark(spark, stream, queries, windows, settings.spark_windows)
        measured.append({**_reevaluation_record("spark", range_s, stream, sparked, len(windows)),
                         "load_1m": os.getloadavg()[0]})
        log(f"{range_s}s: Spark SQL {measured[-1]['seconds']:.1f}s estimated from {len(sparked.evaluated)} windows")
    store = open_store(str(lake), spark, backend="delta-rs")
    checked = check(store, plans, run, windows, oxigraph, sparked, settings.check_windows, f"{range_s}s windows")
    for record in measured:
        records.add(record)
    records.add({"kind": "check", "window_s": range_s, **checked})
    for row in run.state:
        records.add({"kind": "state", "window_s": range_s, **row})
    content = sum(stream.span(w).stop - stream.span(w).start for w in windows)
    records.add({"kind": "windows", "window_s": range_s, "count": len(windows), "content_triples": content})


# -- state over a long stream ----------------------------------------------------------------------
def long_settings(settings: Settings) -> Settings:
    """The stream of the state run: ``stretch`` times the largest window long, as many triples and
    landing files (batches) as the main stream, so it costs about what one window size does."""
    window = max(settings.windows_s)
    duration = settings.stretch * window
    files = max(1, settings.duration_s // settings.file_s)
    return replace(settings, duration_s=duration, rate=max(1, settings.rate * settings.duration_s // duration),
                   file_s=max(1, duration // files), windows_s=[window])


def measure_state(settings: Settings, queries: list[BenchQuery], spark: LazySpark, work: Path,
                  records: Records, log: Callable[[str], None]) -> None:
    """lakegraph alone over a stream ``stretch`` times its largest window: the window buffers and
    views after every batch, to show they stay flat once the window is full."""
    long = long_settings(settings)
    window = long.windows_s[0]
    stream = make_stream(long, work / "landing-long")
    plans = [windowed_plan(q, window, long.step_s) for q in queries]
    run = run_lakegraph(stream, plans, work / f"lake-long-{window}s", spark)
    log(f"state: {window}s windows over {long.duration_s}s of stream, {len(stream.files)} batches")
    records.add({"kind": "state_config", "window_s": window, "duration_s": long.duration_s, "rate": long.rate,
                 "file_s": long.file_s, "step_s": long.step_s, "triples": len(stream.triples)})
    for row in run.state:
        records.add({"kind": "state_long", "window_s": window, **row})


# -- longer batches -------------------------------------------------------------------------------
def measure_batches(settings: Settings, queries: list[BenchQuery], spark: LazySpark, work: Path,
                    records: Records, log: Callable[[str], None]) -> None:
    """lakegraph alone at the largest window over the same stream cut into longer batches: what a
    batch costs whatever its size (its commits, its calls) is then spread over more of the stream.
    The re-evaluations do not depend on how the stream is batched."""
    window = max(settings.windows_s)
    plans = [windowed_plan(q, window, settings.step_s) for q in queries]
    for file_s in settings.longer_batches_s:
        stream = make_stream(replace(settings, file_s=file_s), work / f"landing-{file_s}s")
        run = run_lakegraph(stream, plans, work / f"lake-{window}s-batches-{file_s}s", spark)
        windows = len(stream.windows(window * 1000, settings.step_s * 1000))
        records.add({**_lakegraph_record(window, stream, run, windows), "kind": "lakegraph_batches", "file_s": file_s,
                     "load_1m": os.getloadavg()[0]})
        log(f"{window}s windows, {file_s}s batches: lakegraph {run.ingest_s + run.run_s:.1f}s")


# -- command line -----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    d = Settings()
    p = _Parser(prog="python -m bench.windows",
                description="Sliding-window throughput in SPECTRA's LUBM setting: lakegraph against "
                            "per-window re-evaluation with pyoxigraph and Spark SQL, checked against each other.")
    p.add_argument("--window-seconds", type=_ints, default=d.windows_s, metavar="W,W",
                   help="window RANGEs in seconds (default 10,50,100)")
    p.add_argument("--step-seconds", type=_positive, default=d.step_s, help="window STEP in seconds (default 1)")
    p.add_argument("--rate", type=_positive, default=d.rate, help="stream triples per second of event time "
                   f"(default {d.rate})")
    p.add_argument("--duration-seconds", type=_positive, default=d.duration_s,
                   help=f"event time the stream spans (default {d.duration_s}: three times the largest "
                        "window, so most windows are full, as in a stream that runs on)")
    p.add_argument("--file-seconds", type=_positive, default=d.file_s,
                   help=f"event time per landing file, i.e. per lakegraph batch (default {d.file_s})")
    p.add_argument("--longer-batches", type=lambda text: [] if text.strip() == "0" else _ints(text),
                   default=d.longer_batches_s, metavar="S,S",
                   help="batch lengths in seconds at which lakegraph alone runs again at the largest window, "
                        "0 to skip (default 30,60)")
    p.add_argument("--spark-windows", type=int, default=d.spark_windows,
                   help=f"windows timed on Spark SQL per window size, 0 to skip Spark (default {d.spark_windows})")
    p.add_argument("--check-windows", type=_positive, default=d.check_windows,
                   help=f"windows per query whose RStream bag is compared (default {d.check_windows})")
    p.add_argument("--departments", type=_positive, default=d.departments,
                   help="departments per university (default 2)")
    p.add_argument("--seed", type=int, default=d.seed, help="generator seed (default 0)")
    p.add_argument("--stretch", type=int, default=d.stretch,
                   help=f"the state run's stream, in lengths of the largest window, 0 to skip it (default {d.stretch})")
    p.add_argument("--out", type=Path, default=d.out, help="results directory (default bench/results)")
    p.add_argument("--work", type=Path, help="keep the landing files and lakes here (default: a temporary directory)")
    p.add_argument("--master", default=d.master, help=f"Spark master (default {d.master})")
    return p


def _settings(args: argparse.Namespace) -> Settings:
    bad = [w for w in args.window_seconds if w < args.step_seconds]
    if bad:
        raise ValueError(f"window {bad[0]}s is shorter than the step {args.step_seconds}s")
    if args.spark_windows < 0:
        raise ValueError("--spark-windows must be 0 or more")
    if args.stretch < 0:
        raise ValueError("--stretch must be 0 or more")
    return Settings(windows_s=args.window_seconds, step_s=args.step_seconds, rate=args.rate,
                    duration_s=args.duration_seconds, file_s=args.file_seconds,
                    longer_batches_s=args.longer_batches, spark_windows=args.spark_windows,
                    check_windows=args.check_windows, departments=args.departments, seed=args.seed,
                    stretch=args.stretch, out=args.out, work=args.work, master=args.master)


def run(settings: Settings, work: Path, command: str, log: Callable[[str], None]) -> list[dict]:
    """The whole benchmark in ``work``; returns the raw records (also in ``out/windows.jsonl``)."""
    records = Records(settings.out / "windows.jsonl")
    started = time.perf_counter()
    stream = make_stream(settings, work / "landing")
    log(f"stream: {len(stream.triples):,} triples ({stream.universities} universities) "
        f"in {len(stream.files)} landing files")
    config = {k: str(v) if isinstance(v, Path) else v for k, v in settings.__dict__.items() if k != "work"}
    records.add({"kind": "config", **config, "command": command, "stream": STREAM_IRI, "triples": len(stream.triples),
                 "universities": stream.universities, "files": len(stream.files), "queries": list(QUERIES)})
    queries = [BenchQuery.from_file(QUERY_DIR / f"{name}.rq") for name in QUERIES]
    spark = LazySpark(lambda: get_spark(settings.master, app_name="lakegraph-bench-windows",
                                        jvm_log=str(work / "spark.log")))
    warm_up(stream, queries, min(settings.windows_s), settings.step_s, work / "lake-warm-up", spark)
    for range_s in settings.windows_s:
        measure_window(settings, stream, queries, range_s, spark, work, records, log)
    measure_batches(settings, queries, spark, work, records, log)
    if settings.stretch:
        measure_state(settings, queries, spark, work, records, log)
    records.add({"kind": "machine", **machine_info(running(spark))})
    records.add({"kind": "elapsed", "seconds": time.perf_counter() - started})
    return records.rows


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = _settings(args)
    except ValueError as exc:
        print(f"bench.windows: error: {exc}", file=sys.stderr)
        return 2
    command = " ".join(["python -m bench.windows", *(sys.argv[1:] if argv is None else argv)])
    return run_command("bench.windows", settings.work, "lakegraph-windows-",
                       lambda work, log: write_report(run(settings, work, command, log), settings.out))


if __name__ == "__main__":
    sys.exit(main())
