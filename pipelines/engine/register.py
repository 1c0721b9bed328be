"""Registering and unregistering queries: backfill from the current snapshot, and clean-up.

A query registered on a lake that already holds data starts from the snapshot of the last completed
batch (the checkpoint every other query is at), so its first batch is already right: its new views
are filled from bronze up to that point, its partial embeddings and gold from the views. The backfill
is recorded as the query's answer changes at that batch. The catalog row is written last: a crash
before it leaves only tables no registered query uses (and answer changes of no registered query),
and they are rebuilt on the next attempt.
"""
from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from views.path_views import PathDef
from views.plan import QueryPlan, ViewDef

from .. import catalog
from ..lake import BRONZE, BRONZE_TO_DONE, VIEWS, WINDOW_STATE, BatchLog, BatchRecord, gold_table, init_lake
from ..spark import SparkSource, master_of
from ..storage import TableStore
from ..storage.lock import writer
from . import answer_changes
from .bgp import QueryMaintainer
from .merge_on_read import consolidated, content_arrow
from .held import held_tables
from .paths import path_backfill, path_tables
from .runner import ARROW_MAX_BACKFILL, choose_engine, zset_engine
from .step import gold_schema
from .views import for_views, for_views_arrow, triples_in_graph, triples_in_graph_arrow, view_rows, view_rows_arrow
from .window_state import last_progress
from .windowed import forget_state, forget_windows, run_windowed, window_tables, write_windows
from .windows import Progress
from .zsets import ZSetEngine
from . import views_table


class RegistrationError(ValueError):
    """The query cannot be registered now (name taken, a batch half done)."""


def checkpoint(store: TableStore) -> BatchRecord:
    """The last completed batch; on a lake that never ran one, batch 0 at the current bronze head."""
    log = BatchLog(store)
    pending = log.pending()
    if pending is not None:
        raise RegistrationError(f"batch {pending.batch} was interrupted; finish it with 'lakegraph run' first")
    last = log.last_done()
    if last is not None:
        return last
    head = store.version(BRONZE)
    # at that version: an ingest may commit meanwhile, and a seq_to past ``head`` would make the
    # first batch, which reads the feed after ``head``, skip the rows in between
    seqs = store.read_arrow(BRONZE, head, columns=["seq"])["seq"]
    record = BatchRecord(batch=0, status="done", bronze_from=0, bronze_to=head, seq_from=0,
                         seq_to=pc.max(seqs).as_py() if len(seqs) else 0,
                         stats={"batch": 0, "messages": len(seqs), BRONZE_TO_DONE: True})
    log.write(record)
    return record


def _fill_views(store: TableStore, z: ZSetEngine, at: BatchRecord, views: list[ViewDef]) -> None:
    """Create ``views`` filled from the graph bronze holds at checkpoint ``at``, on engine ``z``."""
    if z.name == "arrow":
        bronze = store.read_arrow(BRONZE, at.bronze_to, columns=["seq", "op", "s", "p", "o"])
        bronze = bronze.filter(pc.less_equal(bronze["seq"], at.seq_to))
        graph = triples_in_graph_arrow(for_views_arrow(bronze, views))
        rows = {view.id: view_rows_arrow(graph, view, z.where) for view in views}
    else:
        from pyspark.sql import functions as F

        bronze = store.read(BRONZE, at.bronze_to).where(F.col("seq") <= at.seq_to)
        frame = triples_in_graph(for_views(bronze, views)).cache()
        rows = {view.id: view_rows(frame, view).toArrow() for view in views}
        frame.unpersist()
    views_table.add_views(store, [views_table.stored(view.id, rows[view.id]) for view in views])


def _fill_path(store: TableStore, path: PathDef, read: Callable[[str], pa.Table], kept: set[str]) -> None:
    """Create a path view's tables, filled from its edge views (filled first, ``read`` reads them),
    but for those in ``kept``: a reach table the lake keeps already for a path view sharing the
    walk. Adds the tables made to ``kept``."""
    for name, rows in path_backfill(path, read).items():
        if name not in kept:
            store.create(name, rows.schema)
            store.fold(name, consolidated(rows)[0])     # (a read then takes its rows as they are)
            kept.add(name)


def register(store: TableStore, spark: SparkSource, plan: QueryPlan, engine: str = "auto",
             master: str | None = None, wait: float | None = None) -> dict:
    """Register ``plan``; returns counts of what the backfill wrote. The backfill runs on the Z-set
    engine :func:`~pipelines.engine.runner.choose_engine` picks for the checkpoint's bronze rows
    (Arrow in process for a small lake on a local master: no Spark job unless a FILTER needs one).
    Holds the lake's writer lock, waiting at most ``wait`` seconds for it."""
    with writer(store.root, "register", wait):
        return _register(store, spark, plan, engine, master)


def _register(store: TableStore, spark: SparkSource, plan: QueryPlan, engine: str, master: str | None) -> dict:
    init_lake(store)
    active = catalog.registered(store)
    # case-insensitively: Spark SQL (lakegraph sql) does not tell gold_Q from gold_q
    taken = [q.plan.name for q in active if q.plan.name.lower() == plan.name.lower()]
    if taken:
        raise RegistrationError(f"a query named {taken[0]!r} is already registered; unregister it first")
    at = checkpoint(store)
    whole = [q.plan for q in active if not q.plan.windowed]
    views_table.adopt_legacy(store, catalog.distinct_views(whole), {})
    answer_changes.adopt_legacy(store, [q.plan for q in active], {})
    in_use = set(catalog.shared_tables([q.plan for q in active]))
    # leftovers of an interrupted registration of this name, and views nobody uses
    unused = [t for t in catalog.shared_tables([plan]) if t not in in_use]
    for name in catalog.owned_tables(plan) + unused:
        store.drop(name)
    views_table.forget(store, [v.id for v in plan.views if v.id in unused])
    answer_changes.forget(store, plan.name)
    answer_changes.widen(store, plan)
    chosen = choose_engine(engine, store.row_count(BRONZE, at.bronze_to), master_of(spark, master), ARROW_MAX_BACKFILL)
    if plan.windowed:
        progress = _replay_windows(store, spark, plan, at, chosen)
        catalog.add(store, plan, at.batch)
        return {"batch": at.batch, "views": len(plan.views), "new_views": len(plan.views), "engine": chosen,
                "answers": progress.answers, "windows": progress.window}
    # a view another query keeps is merge-on-read (:mod:`.held`): consolidated as read on Arrow;
    # the Spark engine reads it as stored (its rules are linear: :class:`.spark.SparkZSets`)
    views = catalog.distinct_views(whole + [plan])
    arrow = content_arrow(held_tables(whole), _newest(store, views))
    z = zset_engine(chosen, spark, arrow, views_table.spark_reads(views, store.read), bulk=True)
    new_views = [v for v in plan.views if v.id not in in_use]
    if new_views:
        _fill_views(store, z, at, new_views)
    for path in plan.paths:
        if path.id not in in_use:
            _fill_path(store, path, arrow, in_use)
    maintainer = QueryMaintainer(plan, z)
    result = maintainer.full()
    for name, schema in maintainer.tables().items():
        store.create(name, schema)
        store.append(name, result.state[name])
    store.create(gold_table(plan.name), gold_schema(plan))
    store.append(gold_table(plan.name), result.gold)
    answer_changes.append(store, [answer_changes.change_rows(plan, at, result.gold)], None)
    catalog.add(store, plan, at.batch)
    return {"batch": at.batch, "views": len(plan.views), "new_views": len(new_views), "engine": chosen,
            "answers": int(pc.sum(result.gold["_mult"]).as_py() or 0)}


def _newest(store: TableStore, views: list[ViewDef]) -> Callable[[str], pa.Table]:
    """``store.read_arrow`` of a table's newest version, in which a view's id reads its rows of the
    views table: that table read and split once per version (a backfill reads a view per pattern
    of the query, and filtering the whole table for each cost a pass over it)."""
    split: dict[int, dict[str, pa.Table]] = {}
    ids = {v.id for v in views}

    def read(name: str) -> pa.Table:
        if name not in ids:
            return store.read_arrow(name)
        version = store.version(VIEWS)
        if version not in split:
            split.clear()
            split[version] = views_table.split(store.read_arrow(VIEWS, version), views)[0]
        return split[version][name]
    return read


def _replay_windows(store: TableStore, spark: SparkSource, plan: QueryPlan, at: BatchRecord,
                    engine: str) -> Progress:
    """A windowed query starts empty and replays bronze up to checkpoint ``at`` as one batch: the
    windows that history closes are emitted (with no message late: lateness is judged between
    batches), the others wait for the next run. Returns the query's progress after it."""
    tables = {name: schema for path in plan.paths for name, schema in path_tables(path).items()}
    tables[gold_table(plan.name)] = gold_schema(plan)
    tables.update(window_tables(plan))
    forget_state(store, plan.name)
    forget_windows(store, plan.name)
    for name, schema in tables.items():
        store.create(name, schema)
    bronze = store.read_arrow(BRONZE, at.bronze_to)
    rows = bronze.filter(pc.less_equal(bronze["seq"], at.seq_to)).sort_by("seq")
    replay = BatchRecord(batch=at.batch, status="planned", bronze_from=at.bronze_from, bronze_to=at.bronze_to,
                         seq_from=at.seq_from, seq_to=at.seq_to,
                         versions={name: store.version(name) for name in [*tables, WINDOW_STATE]})
    done = run_windowed(store, plan, rows, replay, lambda arrow, read: zset_engine(engine, spark, arrow, read),
                        lambda name: store.read(name, replay.versions.get(name)))
    # without the batch's transaction: the lake's window tables, unlike the query's own, already
    # hold it; and appended, as the other queries' states are not at hand to fold the table
    write_windows(store, [done], at.batch, None, whole=False)
    return last_progress(store, plan.name)


def unregister(store: TableStore, name: str, wait: float | None = None) -> tuple[list[str], list[str]]:
    """Remove query ``name`` and what only it uses; returns the tables dropped and the views whose
    rows left the views table. Holds the lake's writer lock, waiting at most ``wait`` seconds for it."""
    with writer(store.root, "unregister", wait):
        return _unregister(store, name)


def _unregister(store: TableStore, name: str) -> tuple[list[str], list[str]]:
    query = catalog.lookup(store, name)
    others = set(catalog.shared_tables([q.plan for q in catalog.registered(store) if q.plan.name != name]))
    catalog.remove(store, name)
    unused = [t for t in catalog.shared_tables([query.plan]) if t not in others]
    views = [v.id for v in catalog.graph_views([query.plan]) if v.id in unused]
    dropped = [t for t in catalog.owned_tables(query.plan) if store.exists(t)] + [t for t in unused if t not in views]
    for table in dropped:
        store.drop(table)
    views_table.forget(store, views)
    forget_state(store, name)
    forget_windows(store, name)
    answer_changes.forget(store, name)
    return dropped, views
