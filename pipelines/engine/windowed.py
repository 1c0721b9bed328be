"""A windowed query's part of a batch: the window operator, then the delta rules over its windows.

The window operator (:mod:`pipelines.engine.windows`) turns the batch's messages into the windows
to emit, each with the messages that move the query's graph from the previous window to this one.
On the Arrow engine, a query without aggregates then runs the ordinary delta rules once for all the
batch's windows, over rows that each hold over a run of windows (:mod:`pipelines.engine.intervals`):
each view is scanned once per batch, not once per window. Otherwise (the Spark engine, aggregates)
each window is one step of the ordinary engine (:mod:`pipelines.engine.step`) computed in memory:
later windows of a batch read the state tables as the batch started plus the earlier windows'
changes (an overlay). Either way every window is computed from the versions the batch log
recorded, as a batch is. Then each table the windows changed (views, partial embeddings, bags,
gold) and the buffer are written once, whole (a Delta MERGE rewrites the files it touches anyway,
and costs several times a plain write), the answer changes of every window (tagged with it), the
window log and the progress row appended, the background graphs merged, every commit with the
batch's app transaction: a Delta commit costs more than a window's computation, and a crash
anywhere re-runs the batch like any other. So the gold table holds the RStream of each batch's last
window; an earlier window's is that minus the batch's later windows' changes
(:func:`pipelines.answers.window_answers`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cache, partial
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as S
from schemas.tables import MULT
from views.plan import QueryPlan, construct
from views.windows import Clock, bare

from .. import catalog
from ..lake import (BATCH_APP, BatchRecord, background_table, buffer_table, changes_table, gold_table,
                    progress_table, windows_table)
from ..ingest import ingest_generated
from ..storage import TableStore, Txn
from .arrow import consolidate
from .bgp import GOLD, QueryMaintainer, state_tables
from .intervals import WINDOW, IntervalZSets, last_window, view_intervals, window_changes
from .merge_on_read import FOLD
from .spark import consolidate_frame
from .step import change_rows, compute, gold_schema, unbind_stamps
from .views import probe_arrow, view_schema
from .windows import Emission, Progress, WindowStep, live_buffer, window_step
from .zsets import ZSetEngine

#: Columns of the bronze rows the window operator reads.
MESSAGE_COLUMNS = ["seq", "op", "s", "p", "o", "stream", "event_time"]
#: Builds a Z-set engine from an Arrow and a Spark reader of the state tables.
EngineFactory = Callable[[Callable[[str], pa.Table], Callable[[str], object]], ZSetEngine]


def merge_on_read(plan: QueryPlan) -> set[str]:
    """The tables of a windowed query kept merge-on-read: its views and partial embeddings (Z-sets,
    so any number of signed rows for a key sum to its multiplicity). A batch appends its change to
    them, and rewrites one consolidated only when its rows would exceed :data:`FOLD` times its
    consolidated content; every read consolidates. Writing a window's whole content at every batch
    made a batch's writes grow with the window instead of with what entered and left it. Gold stays
    consolidated for SQL users. The buffer of a query without background graphs is kept the same
    way by time: a batch appends its new messages, a read drops the expired ones
    (:func:`~pipelines.engine.windows.live_buffer`), a rewrite keeps the live ones."""
    if not plan.windowed:
        return set()
    return {v.id for v in plan.views} | set(state_tables(plan))


def _as_read(plan: QueryPlan, name: str, rows: pa.Table, progress: Callable[[], Progress]) -> pa.Table:
    """The stored ``rows`` of table ``name`` of windowed query ``plan`` as a batch reads them: a
    merge-on-read table consolidated, an append-only buffer's live rows (``progress``: the query's
    progress the buffer was written with)."""
    if name in merge_on_read(plan):
        return consolidate(rows, [c for c in rows.column_names if c != MULT])
    if name == buffer_table(plan.name) and not plan.graphs:
        return live_buffer(Clock.of(plan.streams, plan.lateness_ms), progress(), rows)
    return rows


def state_content(store: TableStore, plan: QueryPlan, name: str) -> pa.Table:
    """A table of windowed query ``plan`` as a batch reads it (what its rows and a bound on them
    mean; the stored rows are at most :data:`FOLD` times as many)."""
    return _as_read(plan, name, store.read_arrow(name),
                    lambda: Progress.last(store.read_arrow(progress_table(plan.name))))


def window_tables(plan: QueryPlan) -> dict[str, pa.Schema]:
    """The window state tables of a windowed query (none for a query over the whole graph)."""
    if not plan.windowed:
        return {}
    tables = {buffer_table(plan.name): S.WINDOW_BUFFER, background_table(plan.name): S.WINDOW_BACKGROUND,
              progress_table(plan.name): S.WINDOW_PROGRESS}
    if plan.streams:
        tables[windows_table(plan.name)] = S.WINDOW_LOG
    return tables


def timed_messages(rows: pa.Table) -> pa.Table:
    """Bronze rows as the window operator reads them: event time in epoch milliseconds."""
    micros = pc.cast(rows["event_time"], pa.int64())
    ms = pc.divide(pc.subtract(micros, pc.if_else(pc.less(micros, 0), 999, 0)), 1000)   # floor
    return rows.select(MESSAGE_COLUMNS[:-1]).append_column("time_ms", ms)


class _Overlay:
    """State tables as the batch started (each read once) plus the changes of the windows computed
    so far, and which tables those changes touched."""

    def __init__(self, base: Callable[[str], pa.Table]) -> None:
        self.base = cache(base)
        self.tables: dict[str, pa.Table] = {}
        self.deltas: dict[str, tuple[list[pa.Table], list[str]]] = {}

    def read(self, name: str) -> pa.Table:
        return self.tables[name] if name in self.tables else self.base(name)

    def engine(self, make: EngineFactory, read_spark: Callable[[str], object]) -> ZSetEngine:
        """A Z-set engine reading through the overlay (on Spark, an overlaid table is a frame of its
        Arrow rows; the others are read as the batch started)."""
        def spark_read(name: str) -> object:
            return z.from_arrow(self.tables[name]) if name in self.tables else read_spark(name)

        z = make(self.read, spark_read)
        return z

    def add(self, name: str, delta: pa.Table, keys: list[str]) -> None:
        rows = pa.concat_tables([self.read(name).select(delta.column_names).cast(delta.schema), delta])
        self.tables[name] = consolidate(rows, keys).select(delta.column_names).cast(delta.schema)
        self.deltas.setdefault(name, ([], keys))[0].append(delta)

    def changed(self) -> list[str]:
        """The tables whose content the windows so far changed (not those whose changes cancel out)."""
        return [name for name, (deltas, keys) in self.deltas.items()
                if consolidate(pa.concat_tables(deltas), keys).num_rows]


def _ms_time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, timezone.utc)


def _emit_stream(store: TableStore, plan: QueryPlan, emission: Emission, answers: pa.Table) -> None:
    """A ``REGISTER STREAM`` query's window output: the triples its template makes from the
    window's answers, appended to bronze on its output stream, stamped with the window's close
    (ingested as a generated file named after the query, the window and the content, so a re-run
    adds it once)."""
    triples = construct(plan.template, answers.select(list(plan.projection)).to_pylist())
    if not triples:
        return
    time = _ms_time(emission.close_ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    lines = [json.dumps({"op": "+", "s": s, "p": p, "o": o, "time": time, "stream": f"<{plan.output_stream}>"})
             for s, p, o in triples]
    ingest_generated(store, f"{plan.name}/window-{emission.number:09d}",
                     ("\n".join(lines) + "\n").encode("utf-8"))


@dataclass
class _Windows:
    """What a batch's windows do to a windowed query's engine state: each table they changed as it
    stands after the last of them, the change itself where it is known (signed rows), and the
    answer changes of every window (``window`` its index in the batch), in window order."""

    tables: dict[str, pa.Table]
    changes: pa.Table
    deltas: dict[str, pa.Table] = field(default_factory=dict)


def _step_by_step(plan: QueryPlan, step: WindowStep, base: Callable[[str], pa.Table], engine: EngineFactory,
                  read_spark: Callable[[str], object]) -> _Windows:
    """One engine step per window, each reading the state as the batch started plus the earlier
    windows' changes (an overlay): the Spark engine, aggregates (whose answer at a window is a
    function of its groups' rows at that window) and property paths (walked at each window)."""
    overlay = _Overlay(base)
    changes = []
    for k, emission in enumerate(step.emissions):
        result = compute(overlay.engine(engine, read_spark), emission.messages, [plan])
        for name, (delta, keys) in result.changed().items():
            overlay.add(name, delta, keys)
        gold = result.gold[plan.name]
        changes.append(gold.append_column(WINDOW, pa.repeat(pa.scalar(k, pa.int64()), gold.num_rows)))
    schema = gold_schema(plan).append(pa.field(WINDOW, pa.int64()))
    return _Windows({name: overlay.tables[name] for name in overlay.changed()},
                    pa.concat_tables([c.select(schema.names).cast(schema) for c in changes] + [schema.empty_table()]))


def _all_at_once(plan: QueryPlan, step: WindowStep, base: Callable[[str], pa.Table],
                 where: Callable[[pa.Table, str | None], pa.Table]) -> _Windows:
    """Every window of the batch in one pass of the delta rules over interval rows
    (:mod:`pipelines.engine.intervals`): each view is scanned once per batch, not once per window."""
    n = len(step.emissions)
    z = IntervalZSets(base, where, n)
    views = catalog.distinct_views([plan])
    probed = probe_arrow(step.messages, views, lambda v: base(v.id), where)
    deltas = view_intervals(probed, views, step.messages[WINDOW].to_numpy(), n)
    maintainer = QueryMaintainer(plan, z)
    results = z.collect(maintainer.outputs({v: t for v, t in deltas.items() if t.num_rows}), maintainer.schemas())
    gold = results[GOLD]
    changed = {v.id: (deltas[v.id], view_schema(v)) for v in views}
    changed.update({name: (results[name], schema) for name, schema in maintainer.tables().items()})
    changed[gold_table(plan.name)] = (gold, gold_schema(plan))
    tables, deltas = {}, {}
    for name, (rows, schema) in changed.items():
        keys = [c for c in schema.names if c != MULT]
        delta = last_window(rows, keys, n)
        if name == gold_table(plan.name):       # gold holds unbound stamps, the engine ''
            delta = unbind_stamps(plan, delta)
        if delta.num_rows:
            before = base(name).select(schema.names).cast(schema)
            deltas[name] = delta.select(schema.names).cast(schema)
            tables[name] = consolidate(pa.concat_tables([before, deltas[name]]), keys).cast(schema)
    changes = window_changes(gold, plan.projection, n)
    return _Windows(tables, unbind_stamps(plan, changes.drop_columns([WINDOW])).append_column(WINDOW, changes[WINDOW]),
                    deltas)


def _together(plan: QueryPlan, engine: ZSetEngine) -> bool:
    """Whether a batch's windows can be computed in one pass: on the Arrow engine, for a query
    without aggregates or property paths (a path view's change at a window comes from its walk at
    that window)."""
    return engine.name == "arrow" and plan.aggregation is None and not plan.paths


def run_windowed(store: TableStore, plan: QueryPlan, rows: pa.Table, record: BatchRecord,
                 engine: EngineFactory, read_spark: Callable[[str], object], flush: bool = False) -> dict:
    """Run batch ``record`` (bronze ``rows``) for windowed query ``plan``: emit its windows and
    advance its state. ``engine(read_arrow, read_spark)`` builds the batch's Z-set engine over
    given readers; ``read_spark`` reads a table at the batch's start. Returns counters."""
    versions = record.versions
    stored = cache(lambda name: store.read_arrow(name, versions.get(name)))
    merged = merge_on_read(plan)
    progress = Progress.last(stored(progress_table(plan.name)))
    base = cache(lambda name: _as_read(plan, name, stored(name), lambda: progress))

    def spark_base(name: str) -> object:
        frame = read_spark(name)
        return consolidate_frame(frame, [c for c in frame.columns if c != MULT]) if name in merged else frame

    clock = Clock.of(plan.streams, plan.lateness_ms)
    buffer = base(buffer_table(plan.name))
    step = window_step(clock, [bare(g) for g in plan.graphs], progress,
                       buffer, lambda: base(background_table(plan.name)),
                       timed_messages(rows), record.batch, flush, stamps=plan.reads_times,
                       patterns=[(v.s, v.p, v.o) for v in plan.views])
    done = _Windows({}, gold_schema(plan).append(pa.field(WINDOW, pa.int64())).empty_table())
    if step.emissions:
        z = engine(base, spark_base)
        done = (_all_at_once(plan, step, base, z.where) if _together(plan, z)
                else _step_by_step(plan, step, base, engine, spark_base))
    changes = done.changes
    index = changes[WINDOW].to_numpy()
    per_window = np.bincount(index, weights=changes[MULT].to_numpy(), minlength=len(step.emissions))
    answers = progress.answers + np.cumsum(per_window.astype(np.int64))
    numbered = [e for e in step.emissions if e.number is not None]
    tag = None
    if numbered:
        tag = (pa.array([numbered[k].number for k in index], pa.int64()),
               pa.array([numbered[k].close_ms for k in index], pa.int64()))
    log = [{"window": e.number, "open": _ms_time(e.open_ms), "close": _ms_time(e.close_ms), "open_ms": e.open_ms,
            "close_ms": e.close_ms, "answers": int(answers[k]), "batch": record.batch} for k, e in enumerate(numbered)]
    if plan.output_stream:
        gold = base(gold_table(plan.name))
        for k, emission in enumerate(numbered):
            gold = consolidate(pa.concat_tables([gold.select(changes.column_names[:-1]).cast(gold_schema(plan)),
                                                 changes.filter(pc.equal(changes[WINDOW], k)).drop_columns([WINDOW])]),
                               list(plan.projection))
            _emit_stream(store, plan, emission, gold)
    txn = Txn(BATCH_APP, record.batch)
    writes = []
    for name, table in done.tables.items():
        delta = done.deltas.get(name) if name in merged else None
        if delta is not None and stored(name).num_rows + delta.num_rows <= FOLD * table.num_rows:
            writes.append(partial(store.append, name, delta, txn))
        else:
            writes.append(partial(store.overwrite, name, table, txn))
    if changes.num_rows:
        writes.append(partial(store.append, changes_table(plan.name),
                              change_rows(plan, record, changes.drop_columns([WINDOW]), tag), txn))
    if log:
        gold_version = versions.get(gold_table(plan.name), 0) + int(gold_table(plan.name) in done.tables)
        writes.append(partial(store.append, windows_table(plan.name),
                              pa.Table.from_pylist([{**row, "gold_version": gold_version} for row in log],
                                                   schema=S.WINDOW_LOG), txn))
    if step.buffer is not None:
        # background messages leave the buffer when a window reads them, not by time: rewritten
        added = None if plan.graphs else step.buffer.filter(pc.invert(pc.is_in(step.buffer["seq"], buffer["seq"])))
        kept = stored(buffer_table(plan.name)).num_rows
        if added is not None and kept + added.num_rows <= FOLD * step.buffer.num_rows:
            writes.append(partial(store.append, buffer_table(plan.name), added, txn))
        else:
            writes.append(partial(store.overwrite, buffer_table(plan.name), step.buffer, txn))
    if step.background.num_rows:
        writes.append(partial(store.merge_counts, background_table(plan.name), step.background,
                              ["graph", "s", "p", "o"], MULT, txn))
    final = int(answers[-1]) if len(answers) else progress.answers
    after = replace(step.progress, answers=final)
    if replace(after, batch=progress.batch) != progress:      # a batch that did nothing writes nothing
        writes.append(partial(store.append, progress_table(plan.name), after.table(), txn))
    store.concurrently(writes)
    return {"windows": len(log), "late": step.late, "answer_changes": int(pc.sum(pc.abs(changes[MULT])).as_py() or 0)}
