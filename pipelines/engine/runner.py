"""Micro-batches from the bronze change feed into views, partial embeddings and gold, exactly once.

A batch is a range of bronze rows (by ``seq``) taken from the change feed after the last completed
batch, whole commits at a time and capped by ``max_rows`` (never splitting an event). Its life:

1. a ``planned`` row in the batch log records the range and the version of every state table;
2. every delta is computed from those versions (so a re-run computes the very same deltas);
3. commits: views, partial embeddings, bags, gold answers, and every query's answer changes in one
   append (:mod:`.answer_changes`), each carrying the app transaction (``lakegraph-batch``, batch)
   so a commit that already happened is skipped;
4. a ``done`` row with the versions after the batch (time travel by batch reads them).

A crash anywhere leaves a planned batch without a done row; the next run finishes it first.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from views.plan import QueryPlan
from views.windows import bare

from .. import catalog
from ..lake import (ANSWER_CHANGES, BATCH_APP, BRONZE, BRONZE_TO_DONE, SHARED_TABLES, WINDOW_STATE, BatchLog,
                    BatchRecord, gold_table, init_lake)
from ..spark import SparkSource, master_of, session
from ..storage import TableStore, Txn
from ..storage.lock import writer
from . import answer_changes
from .arrow import ArrowZSets
from .bgp import state_tables
from .lookup import Find
from .held import HeldTables, batch_reads, held_tables
from .held_bags import HeldBags
from . import views_table
from .spark import BATCH_CONF, PLAN_CONF, SparkZSets, where_arrow
from . import tasks
from .threads import each
from .step import compute
from .windowed import run_windowed, window_tables, write_windows
from .zsets import ZSetEngine

@dataclass
class RunReport:
    batches: list[dict] = field(default_factory=list)

    def summary(self) -> str:
        if not self.batches:
            return "up to date: no new bronze rows"
        rows = sum(b["messages"] for b in self.batches)
        changes = sum(b["answer_changes"] for b in self.batches)
        return (f"ran {len(self.batches)} batch(es) {self.batches[0]['batch']}..{self.batches[-1]['batch']}: "
                f"{rows} messages, {changes} answer changes")


ENGINES = ("auto", "arrow", "spark")
ARROW_MAX_MESSAGES = 200_000
#: The largest bronze a registration's backfill takes in process on ``auto``. A backfill is one
#: pass over the graph, where Spark pays a job per join: at 1M triples the bench's nine queries
#: registered in 29 s on Arrow (the JVM's start included, for one HAVING) and 102 s on Spark, local[2].
ARROW_MAX_BACKFILL = 5_000_000


def choose_engine(engine: str, messages: int, master: str, limit: int = ARROW_MAX_MESSAGES) -> str:
    """The Z-set engine a batch runs on. ``auto`` takes Arrow in process for a batch of at most
    ``limit`` messages on a local master (where Spark's per-job cost is most of a small batch and the
    driver holds the views anyway) and Spark otherwise (a cluster scales out)."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}: use one of {', '.join(ENGINES)}")
    if engine != "auto":
        return engine
    return "arrow" if master.startswith("local") and messages <= limit else "spark"


def _each(work: Callable[[QueryPlan], dict], plans: list[QueryPlan], engine: str) -> list[dict]:
    """``work`` for each windowed query of a batch. Their tables are their own, so on the Arrow
    engine they run on threads (:func:`.threads.each`), the largest first (by views: a query's
    work grows with its patterns). In order on Spark (its jobs already spread), and when a query
    appends its windows to bronze (``REGISTER STREAM``), which the others share."""
    if engine != "arrow" or any(p.output_stream for p in plans):
        return [work(p) for p in plans]
    return each(work, plans, weight=lambda p: len(p.views))


def zset_engine(name: str, spark: SparkSource, read_arrow: Callable[[str], pa.Table],
                read_spark: Callable[[str], Any], find: Find | None = None, bulk: bool = False) -> ZSetEngine:
    """The Z-set engine ``name`` reading state tables through ``read_arrow`` or ``read_spark``
    (and on Arrow finding their rows by key through ``find``, by default a filter of
    ``read_arrow``'s). The Arrow engine decides FILTERs in process, handing Spark (a lazy source
    stays lazy) only the rows that leaves undecided (:mod:`.conditions`).
    ``bulk`` (a backfill) runs Spark's plans with the session's partitions, not a batch's few."""
    if name == "arrow":
        return ArrowZSets(read_arrow, partial(where_arrow, spark), find)
    return SparkZSets(session(spark), read_spark, read_arrow, PLAN_CONF if bulk else BATCH_CONF)


def flush_order(plans: list[QueryPlan]) -> list[list[str]]:
    """The windowed queries to flush, level by level: a query reading another's ``REGISTER STREAM``
    output is flushed only after that output has been flushed and run, or its last windows would
    close before their input arrives (and find it late). Queries in a cycle come last, together."""
    windowed = {p.name: p for p in plans if p.streams}
    producers = {p.output_stream: p.name for p in windowed.values() if p.output_stream}
    upstream = {name: {producers[bare(w.stream)] for w in p.streams if bare(w.stream) in producers} - {name}
                for name, p in windowed.items()}
    levels, flushed = [], set()
    while len(flushed) < len(windowed):
        level = sorted(n for n in windowed if n not in flushed and upstream[n] <= flushed)
        level = level or sorted(set(windowed) - flushed)
        levels.append(level)
        flushed |= set(level)
    return levels


class Runner:
    """Runs micro-batches for every registered query over one lake, on the engine ``engine`` picks
    (see :func:`choose_engine`)."""

    def __init__(self, store: TableStore, spark: SparkSource, engine: str = "auto",
                 master: str | None = None) -> None:
        """``spark`` may be lazy (:class:`pipelines.spark.LazySpark`): it is started only by a batch
        that needs it (the Spark engine, or a FILTER to evaluate). ``master`` is the one a lazy
        session would get, for the engine choice."""
        choose_engine(engine, 0, "local")   # refuse a bad name before any work
        self.store = store
        self._spark = spark
        self.master = master_of(spark, master)
        self.engine = engine
        self.log = BatchLog(store)
        # The state tables' versions after the last batch this runner completed: the next batch of
        # the run starts from them (nothing writes a state table between two batches), which spares
        # reading every table's log again.
        self._after: dict[str, int] | None = None
        # The views and the path operator's tables, indexed at the versions the last batch wrote
        # (the next batch's): a batch looks up the keys it touches instead of reading them whole.
        self.held = HeldTables(store)
        # Gold, partial embeddings and bags, as the last batch wrote them: rewritten whole from memory
        # (MERGEd once large).
        self.bags = HeldBags(store)

    # -- batch boundaries -------------------------------------------------------------------
    def _pending_rows(self, after: BatchRecord, head: int) -> pa.Table:
        """Bronze rows after the last batch, in seq order: the change feed from the version after its
        last, or from its last when it left rows of that version (cut by ``--max-rows``) or does not
        say (a log written before :data:`BRONZE_TO_DONE`). Bronze is at version ``head``."""
        start = after.bronze_to + 1 if after.stats.get(BRONZE_TO_DONE) else after.bronze_to
        if start > head:
            return pa.table({})         # nothing committed since: no rows (and no read)
        feed = self.store.changes(BRONZE, start)
        feed = feed.filter(pc.and_(pc.equal(feed["_change_type"], "insert"), pc.greater(feed["seq"], after.seq_to)))
        return feed.sort_by("seq")

    @staticmethod
    def _cut(rows: pa.Table, max_rows: int | None) -> int:
        """How many of ``rows`` the next batch takes: all, or ``max_rows`` extended to the end of the
        event the last one belongs to (an event's messages are never split across batches)."""
        if max_rows is None or rows.num_rows <= max_rows:
            return rows.num_rows
        events = rows["event_id"].to_pylist()
        end = max_rows
        while end < len(events) and events[end] == events[end - 1]:
            end += 1
        return end

    def _state_tables(self, plans) -> list[str]:
        names = catalog.shared_storage(plans)
        for plan in plans:
            names.append(gold_table(plan.name))
            names += list(window_tables(plan)) if plan.windowed else list(state_tables(plan))
        return names + [ANSWER_CHANGES] + [WINDOW_STATE] * any(plan.windowed for plan in plans)

    def _versions(self, plans) -> dict[str, int]:
        """Every state table's newest version. At a run's start each table's log is listed once
        (another process may have committed since): on threads, as dozens of directory listings."""
        names = self._state_tables(plans)
        with ThreadPoolExecutor(4) as pool:
            return dict(zip(names, pool.map(self.store.version, names)))

    def _start(self, plans) -> dict[str, int]:
        """The versions a new batch starts from."""
        return self._versions(plans) if self._after is None else dict(self._after)

    def _engine(self, name: str, versions: dict[str, int], held: set[str]) -> tuple[ZSetEngine, Find]:
        """A Z-set engine reading every state table at the version the batch started from (the
        merge-on-read ``held`` tables consolidated, as the run holds them on Arrow), and how it
        finds a table's rows by key (:func:`.held.batch_reads`)."""
        arrow, find = batch_reads(self.store, self.held, versions, held)
        # one frame per table for the batch (its version is fixed): the Spark engine's delta rules
        # read a view once per rule that joins it, and building each read anew cost a third of
        # the py4j calls of a nine-query batch
        stored = cache(lambda table: self.store.read(table, versions.get(table)))
        spark = cache(views_table.spark_reads(self.held.views(), stored))
        z = zset_engine(name, self._spark, arrow, spark, find)
        return z, find

    # -- the loop ---------------------------------------------------------------------------
    def run(self, max_rows: int | None = None, max_batches: int | None = None,
            on_batch: Callable[[dict], None] | None = None, flush: bool = False,
            wait: float | None = None) -> RunReport:
        """Run batches until bronze is consumed (or ``max_batches``), holding the lake's writer
        lock (waiting at most ``wait`` seconds for it: :mod:`pipelines.storage.lock`). With
        ``flush`` (end of stream), then a batch that emits every window still holding data; what
        that appends to bronze (``REGISTER STREAM`` output) is run and flushed in turn, so a chain
        drains to its end (:func:`flush_order`)."""
        with writer(self.store.root, "run", wait):
            init_lake(self.store)
            with self.store.writing(others=SHARED_TABLES):
                return self._run(max_rows, max_batches, on_batch, flush)

    def _run(self, max_rows: int | None, max_batches: int | None, on_batch: Callable[[dict], None] | None,
             flush: bool) -> RunReport:
        report = RunReport()
        plans = [q.plan for q in catalog.registered(self.store)]
        if not plans:
            return report
        catalog.refuse_legacy_state(self.store, plans)
        pending = self.log.pending()
        views_table.adopt_legacy(self.store, catalog.graph_views(plans),
                                 pending.versions if pending is not None else {})
        answer_changes.adopt_legacy(self.store, plans, pending.versions if pending is not None else {})

        def room() -> bool:
            return max_batches is None or len(report.batches) < max_batches

        def done(stats: dict) -> None:
            report.batches.append(stats)
            if on_batch:
                on_batch(stats)

        if pending is not None:
            done(self._process(pending, self._rows_of(pending), plans))
        self._drain(plans, max_rows, room, done)
        for level in flush_order(plans) if flush and not self._flushed() else []:
            if not room():
                break
            last = self.log.last_done()
            record = BatchRecord(batch=last.batch + 1, status="planned", bronze_from=last.bronze_to,
                                 bronze_to=last.bronze_to, seq_from=last.seq_to, seq_to=last.seq_to,
                                 versions=self._start(plans),
                                 stats={"flush": level, BRONZE_TO_DONE: last.stats.get(BRONZE_TO_DONE, False)})
            self.log.write(record)
            done(self._process(record, self._rows_of(record), plans))
            self._drain(plans, max_rows, room, done)
        return report

    def _flushed(self) -> bool:
        """Whether the last completed batch is a flush with nothing after it: flushing again would
        only add a batch that emits nothing, so a ``run --flush`` restarted after a kill, or run
        twice, ends with the batches a single one leaves. (In a chain of REGISTER STREAM queries,
        a restart after the first level's output has been run flushes every level again.)"""
        last = self.log.last_done()
        return last is not None and any("flush" in r.stats for r in self.log.records("planned") if r.batch == last.batch)

    def _drain(self, plans, max_rows: int | None, room: Callable[[], bool], done: Callable[[dict], None]) -> int:
        """Batches over the bronze rows after the last completed batch while ``room()``; how many ran."""
        ran = 0
        # Successive batches come from one read of the feed, unless a REGISTER STREAM query may
        # append to bronze during a batch: then each batch reads it again, so that where batches
        # are cut depends on bronze alone, not on when it was read (a re-run after a crash cuts
        # them where an uninterrupted run did).
        chains = any(p.output_stream for p in plans)
        read_at = None          # bronze's version when a read's rows were all run
        while room():
            version = self.store.version(BRONZE)
            if version == read_at:
                break                           # nothing committed to bronze since: no new rows
            last = self.log.last_done()
            rows = self._pending_rows(last, version)
            if rows.num_rows == 0:
                break
            while rows.num_rows and room():
                take = self._cut(rows, max_rows)
                batch_rows, rows = rows.slice(0, take), rows.slice(take)
                versions = batch_rows["_commit_version"]
                bronze_to = pc.max(versions).as_py()
                whole = rows.num_rows == 0 or rows["_commit_version"][0].as_py() > bronze_to
                record = BatchRecord(batch=last.batch + 1, status="planned",
                                     bronze_from=pc.min(versions).as_py(), bronze_to=bronze_to,
                                     seq_from=last.seq_to, seq_to=pc.max(batch_rows["seq"]).as_py(),
                                     versions=self._start(plans), stats={BRONZE_TO_DONE: whole})
                self.log.write(record)
                done(self._process(record, batch_rows, plans))
                ran += 1
                last = self.log.last_done()
                if chains:
                    break
            read_at = version if rows.num_rows == 0 else None
        return ran

    def _in_tasks(self, engine: str, messages: int) -> bool:
        """Whether a batch of ``messages`` runs its queries' delta rules in executor tasks
        (:mod:`.tasks`): on the Spark engine, for a batch of at most ``TASKS_MAX_MESSAGES``, when the
        executors can open the lake as the driver does (the delta-rs backend)."""
        return engine == "spark" and messages <= tasks.TASKS_MAX_MESSAGES and self.store.backend == "delta-rs"

    def _rows_of(self, record: BatchRecord) -> pa.Table:
        feed = self.store.changes(BRONZE, record.bronze_from, record.bronze_to)
        seq = feed["seq"]
        keep = pc.and_(pc.equal(feed["_change_type"], "insert"),
                       pc.and_(pc.greater(seq, record.seq_from), pc.less_equal(seq, record.seq_to)))
        return feed.filter(keep).sort_by("seq")

    def _process(self, record: BatchRecord, rows: pa.Table, plans) -> dict:
        """Apply batch ``record`` (its bronze ``rows``): one engine step for the queries over the
        whole graph, the windows of each windowed query, then the done record."""
        versions = record.versions
        txn = Txn(BATCH_APP, record.batch)
        engine = choose_engine(self.engine, rows.num_rows, self.master)
        whole = [p for p in plans if not p.windowed]
        held = held_tables(whole)
        self.held.track(catalog.graph_views(whole))
        z, find = self._engine(engine, versions, held)
        messages = rows.select(["seq", "op", "s", "p", "o"])
        stepped = partial(compute, z, messages, find=find, coded=self.held.coded(versions))
        in_tasks = 0
        if whole and self._in_tasks(engine, rows.num_rows):
            step, in_tasks = tasks.compute_in_tasks(session(self._spark), self.store, messages, whole, versions, stepped)
        else:
            step = stepped(whole)
        changed = step.changed()
        writes = self.held.writes({t: changed.pop(t)[0] for t in held & set(changed)}, versions, txn)
        writes += self.bags.writes({t: rows for t, (rows, _) in changed.items()}, versions, txn)
        changes = [answer_changes.change_rows(p, record, step.gold[p.name]) for p in whole]
        stats = {"batch": record.batch, "messages": rows.num_rows, "noops": step.noops,
                 "view_changes": sum(t.num_rows for t in step.view_deltas.values()),
                 "answer_changes": step.answer_changes(), "bronze_from": record.bronze_from,
                 "bronze_to": record.bronze_to, "engine": engine, "tasks": in_tasks, "windows": 0, "late": 0,
                 BRONZE_TO_DONE: record.stats.get(BRONZE_TO_DONE, False)}
        read_spark = lambda table: self.store.read(table, versions.get(table))   # noqa: E731

        def windowed(plan: QueryPlan) -> dict:
            return run_windowed(self.store, plan, rows, record,
                                lambda arrow, spark: zset_engine(engine, self._spark, arrow, spark),
                                read_spark, flush=plan.name in record.stats.get("flush", ()))

        results = list(_each(windowed, [p for p in plans if p.windowed], engine))
        for result in results:
            for key in ("windows", "late", "answer_changes"):
                stats[key] += result[key]
        write_windows(self.store, results, record.batch, txn, also=writes, changes=changes)
        done = BatchRecord(batch=record.batch, status="done", bronze_from=record.bronze_from,
                           bronze_to=record.bronze_to, seq_from=record.seq_from, seq_to=record.seq_to,
                           versions=self._versions(plans), stats=stats)
        self.log.write(done)
        self._after = done.versions
        return stats
