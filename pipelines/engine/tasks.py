"""The Spark engine's placement for a small batch: each query's delta rules in an executor task.

As one SQL statement (:mod:`.spark`) a batch's rules cost Spark a fixed price per operator: some
470 common table expressions for the bench's ten queries, 4-6 s in the driver before the first
task and 125 stages after it, whatever the batch's size (docs/engines.md), so at 1M triples a
batch of 10,000 updates took as long as recomputing every query. A small batch touches few keys,
and the Arrow kernels (:mod:`.arrow`) look those up instead of joining whole views. So on the
Spark engine a batch of at most :data:`TASKS_MAX_MESSAGES` messages is one Spark job with a task
per query: the task opens the lake (storage the executors share with the driver), reads the
query's views and state tables at the versions the batch log recorded (the views as its worker
holds them from its last task, caught up by the rows appended since: :data:`_HELD`), and applies
the batch's messages to them with the very delta rules of the driver's Arrow engine. The driver gathers the
tasks' changes into one :class:`.step.Step` and commits it as any batch's (exactly once as
before: the tasks only compute).

A query whose FILTER or HAVING leaves a value to Spark SQL (:mod:`.conditions`; an executor has
no session to ask) is run by the caller instead, on the SQL plan.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable, Mapping, NoReturn

import pyarrow as pa
from pyspark.sql import SparkSession

from views.plan import QueryPlan, ViewDef

from .. import catalog
from ..lake import QUERIES
from ..spark import LazySpark
from ..storage import open_store
from ..storage.delta_rs import DeltaRsStore, ReadCounts
from .arrow import ArrowZSets
from .held import HeldTables, batch_reads, held_tables
from .spark import where_arrow
from .step import Step, compute

#: The largest batch the Spark engine runs in tasks; a larger one is one SQL plan, whose joins
#: the cluster spreads by key. The Arrow engine's limit in the driver (``ARROW_MAX_MESSAGES``),
#: for the same reason: beyond it a batch's keys are a large part of its views.
TASKS_MAX_MESSAGES = 200_000


class _NeedsSparkSql(Exception):
    """A condition left a value to Spark SQL, which a task cannot run."""


def _no_session() -> NoReturn:
    """The session a task's conditions would start: none, on an executor."""
    raise _NeedsSparkSql


#: A lake as a worker may hold it: its root, the id of its catalog table and the catalog's version.
#: Registering or unregistering a query moves the version, and may drop and make again tables of
#: the names held (a query registered again): its worker's tables are then read afresh, as are
#: those of a lake made again at the same path (another catalog table id).
_Lake = tuple[str, str | None, int]


def lake_of(store: DeltaRsStore) -> _Lake:
    """``store``'s lake as its catalog stands now."""
    return store.root, store.table_id(QUERIES), store.version(QUERIES)


@dataclass(frozen=True)
class _Task:
    """What one task needs besides the batch's messages: the lake, a query, the versions it reads,
    and the views of every query of the batch (what a worker holds: :func:`_held`)."""

    lake: _Lake
    plan: QueryPlan
    versions: Mapping[str, int]
    views: tuple[ViewDef, ...]


#: What an executor's Python worker holds of the lakes it ran tasks on: the store and the
#: merge-on-read tables, indexed at the version the last task read (a worker runs task after
#: task: Spark reuses it). A batch's task then reads only the rows the batch before appended
#: (:meth:`.held.HeldTables._appended`), not every view of its query again: at 1M triples each
#: task read the 800,000 rows of the views table. The lakes used longest ago are let go past
#: :data:`_LAKES_HELD` (a worker serving many lakes, as a test run's does, would otherwise keep
#: them all).
_HELD: OrderedDict[_Lake, HeldTables] = OrderedDict()
_LAKES_HELD = 2


def _held(lake: _Lake, views: tuple[ViewDef, ...]) -> HeldTables:
    """The worker's held tables of ``lake``, tracking ``views``: those of every query of the
    batch, not only the task's own, so that the worker's next task, whichever query it steps,
    finds them held (a change of the views tracked reads the views table again)."""
    held = _HELD.get(lake)
    if held is None:
        for old in [k for k in _HELD if k[0] == lake[0]]:      # the lake as its catalog stood before
            del _HELD[old]
        held = _HELD[lake] = HeldTables(open_store(lake[0], None, backend="delta-rs"))
        while len(_HELD) > _LAKES_HELD:
            _HELD.popitem(last=False)
    _HELD.move_to_end(lake)
    held.track(views)
    return held


def _run(task: _Task, messages: pa.Table) -> tuple[Step | None, ReadCounts]:
    """In an executor: ``task``'s query stepped by the batch's ``messages`` on the Arrow engine,
    over the lake as the batch log says the batch reads it (None when a condition needs Spark
    SQL), and what the task read."""
    held = _held(task.lake, task.views)
    store = held.store
    before = replace(store.reads)
    queries = [task.plan]
    read, find = batch_reads(store, held, task.versions, held_tables(queries))
    z = ArrowZSets(read, lambda rows, condition: where_arrow(LazySpark(_no_session), rows, condition), find)
    try:
        step = compute(z, messages, queries, find, held.coded(task.versions))
    except _NeedsSparkSql:
        step = None
    after = store.reads
    return step, ReadCounts(after.file_rows - before.file_rows, after.file_bytes - before.file_bytes,
                            after.memory_rows - before.memory_rows)


def compute_in_tasks(spark: SparkSession, store: DeltaRsStore, messages: pa.Table, plans: list[QueryPlan],
                     versions: Mapping[str, int], rest: Callable[[list[QueryPlan]], Step]) -> tuple[Step, int]:
    """:func:`.step.compute` for ``plans`` over the lake of ``store``, a task per query on
    ``spark``'s executors (the queries with the most views first: they take longest; the messages
    broadcast, one copy per executor), and ``rest`` for the queries a task could not decide.
    Returns the step and how many queries the tasks stepped; ``store`` counts the tasks' reads.
    The queries' views overlap: each task computes the changes of its own, the same from the same
    messages and versions, and one copy of each is kept."""
    ordered = sorted(plans, key=lambda p: -len(p.views))
    views = tuple(catalog.graph_views(plans))
    lake = lake_of(store)
    tasks = [_Task(lake, plan, dict(versions), views) for plan in ordered]
    shared = spark.sparkContext.broadcast(messages)
    try:
        results = spark.sparkContext.parallelize(tasks, len(tasks)).map(lambda t: _run(t, shared.value)).collect()
    finally:
        shared.destroy()
    for _, reads in results:
        store.count_reads(reads)
    steps = [step for step, _ in results]
    left = [plan for plan, step in zip(ordered, steps) if step is None]
    done = [step for step in steps if step is not None] + ([rest(left)] if left else [])
    return merged(done, plans), len(plans) - len(left)


def merged(steps: list[Step], plans: list[QueryPlan]) -> Step:
    """One step of the steps of disjoint sets of ``plans`` (their views' changes agree)."""
    view_deltas: dict[str, pa.Table] = {}
    path_deltas: dict[str, pa.Table] = {}
    noops: set[int] = set()
    state, gold = {}, {}
    for step in steps:
        for view, delta in step.view_deltas.items():
            view_deltas.setdefault(view, delta)
        for table, delta in step.path_deltas.items():
            path_deltas.setdefault(table, delta)
        noops |= step.noop_seqs
        state.update(step.state)
        gold.update(step.gold)
    return Step(catalog.distinct_views(plans), view_deltas, path_deltas, noops, state, gold)
