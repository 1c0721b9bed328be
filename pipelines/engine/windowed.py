"""A windowed query's part of a batch: the window operator, then the delta rules over its windows.

The window operator (:mod:`pipelines.engine.windows`) turns the batch's messages into the windows
to emit, each with the messages that move the query's graph from the previous window to this one.
On the Arrow engine, a query without aggregates then runs the ordinary delta rules once for all the
batch's windows, over rows that each hold over a run of windows (:mod:`pipelines.engine.intervals`):
each view is scanned once per batch, not once per window. Otherwise (the Spark engine, aggregates)
each window is one step of the ordinary engine (:mod:`pipelines.engine.step`) computed in memory:
later windows of a batch read the state tables as the batch started plus the earlier windows'
changes (an overlay). Either way every window is computed from the versions the batch log
recorded, as a batch is. Each table the windows changed (gold, path state) is to be written once,
whole (a Delta MERGE rewrites the files it touches anyway, and costs several times a plain write);
the answer changes of every window (tagged with it) appended, the background graphs merged. Those
writes, the query's state (:mod:`pipelines.engine.window_state`: its views, partial embeddings,
buffer and progress) and its window log rows go back to the runner, which makes every windowed
query's commits at once when all are computed (:func:`write_windows`): the states of all in one
commit of the lake's window state table, their windows in one of its window log, every commit
with the batch's app transaction. A Delta commit costs more than a window's computation, and a
crash anywhere re-runs the batch like any other. So the gold table holds the RStream of each
batch's last window; an earlier window's is that minus the batch's later windows' changes
(:func:`pipelines.answers.window_answers`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cache, partial
from threading import Lock
from typing import Callable, Sequence
from weakref import WeakKeyDictionary

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as S
from schemas.tables import MULT
from views.conditions import Condition
from views.model import validate_name
from views.plan import QueryPlan, construct
from views.windows import Clock, bare

from .. import catalog
from ..lake import (BATCH_APP, WINDOW_LOG, WINDOW_STATE, BatchRecord, background_table, buffer_table, gold_table,
                    progress_table)
from ..ingest import ingest_generated
from ..storage import TableStore, Txn
from . import answer_changes
from .arrow import consolidate, plus
from .bgp import GOLD, QueryMaintainer
from .intervals import WINDOW, IntervalZSets, last_window, view_intervals, window_changes
from .merge_on_read import folds
from .step import compute, gold_schema, unbind_stamps
from .threads import each
from .views import probe_arrow, view_schema
from .window_state import decode, encode, stored_rows, zsets
from .windows import Emission, Progress, WindowStep, live_buffer, window_step
from .zsets import ZSetEngine

#: Columns of the bronze rows the window operator reads.
MESSAGE_COLUMNS = ["seq", "op", "s", "p", "o", "stream", "event_time"]
#: Builds a Z-set engine from an Arrow and a Spark reader of the state tables.
EngineFactory = Callable[[Callable[[str], pa.Table], Callable[[str], object]], ZSetEngine]


def _as_read(plan: QueryPlan, name: str, rows: pa.Table, progress: Progress) -> pa.Table:
    """The stored ``rows`` of part ``name`` of windowed query ``plan``'s state as a batch reads
    them, which is what a rewrite keeps: a Z-set consolidated (a batch appends its signed
    change to it), the buffer's live rows (a batch appends its new messages; ``progress`` the
    query's progress the buffer was written with), the progress's last row."""
    if name in zsets(plan):
        return consolidate(rows, [c for c in rows.column_names if c != MULT])
    if name == buffer_table(plan.name):
        return live_buffer(Clock.of(plan.streams, plan.lateness_ms), progress, rows)
    if name == progress_table(plan.name):
        return progress.table() if rows.num_rows else rows
    return rows


@dataclass(frozen=True)
class _Left:
    """A windowed query's state as a batch of this process left it: the window state table's
    version then, and each part as a batch reads it."""

    version: int
    parts: dict[str, pa.Table]


#: Per store, what the last batch of each windowed query left, and how many part rows the window
#: state table held at which version. The next batch of the process starts from them rather than
#: reading and consolidating every part again, which cost as much as computing the batch's windows
#: (a version never changes, so what it held stays true).
_LEFT: WeakKeyDictionary[TableStore, dict[str, _Left]] = WeakKeyDictionary()
_STORED: WeakKeyDictionary[TableStore, tuple[int, int]] = WeakKeyDictionary()
_LEFT_LOCK = Lock()


def _state_at(store: TableStore, plan: QueryPlan, version: int | None) -> _Left:
    """Windowed query ``plan``'s state at ``version`` of the window state table: from what this
    process's last batch left, or read."""
    with _LEFT_LOCK:
        left = _LEFT.get(store, {}).get(plan.name)
    if left is not None and left.version == version:
        return left
    named = decode(plan, store.read_arrow(WINDOW_STATE, version))
    progress = Progress.last(named[progress_table(plan.name)])
    return _Left(version, {name: _as_read(plan, name, rows, progress) for name, rows in named.items()})


def _stored_at(store: TableStore, version: int) -> int:
    """How many part rows the window state table holds at ``version``."""
    with _LEFT_LOCK:
        known = _STORED.get(store)
    return known[1] if known is not None and known[0] == version else stored_rows(store, version)


def forget_state(store: TableStore, query: str) -> None:
    """Drop windowed query ``query``'s state (unregistered, or registered anew): its rows of the
    window state table, and what its last batch in this process left. A delete that matches no
    row commits nothing."""
    with _LEFT_LOCK:
        _LEFT.get(store, {}).pop(query, None)
    if store.exists(WINDOW_STATE):
        store.delete(WINDOW_STATE, f"query = '{validate_name(query)}'")


def read_state(store: TableStore, plan: QueryPlan) -> dict[str, pa.Table]:
    """Every part of windowed query ``plan``'s state as a batch reads it (its content: the window
    state table holds at most :data:`~pipelines.engine.merge_on_read.FOLD` times the content of
    all its queries)."""
    return _state_at(store, plan, None).parts


def window_tables(plan: QueryPlan) -> dict[str, pa.Schema]:
    """The window tables of a windowed query (none for a query over the whole graph): its
    background graphs, and the buffer of a query with background graphs. (Its state is in the
    lake's window state table, its windows in the lake's window log.)"""
    if not plan.windowed:
        return {}
    tables = {background_table(plan.name): S.WINDOW_BACKGROUND}
    if plan.graphs:
        tables[buffer_table(plan.name)] = S.WINDOW_BUFFER
    return tables


@dataclass(frozen=True)
class StateChange:
    """What a batch does to one windowed query's state: the window state table's rows holding the
    signed rows it appends to each part (encoded by the query's own thread, not at the batch's
    end, where the runner writes every query's), how many part rows they hold, and each part as
    the next batch reads it."""

    plan: QueryPlan
    appended: pa.Table
    added: int
    content: dict[str, pa.Table]


def write_windows(store: TableStore, done: list[dict], batch: int, txn: Txn | None, whole: bool = True,
                  also: Sequence[Callable[[], object]] = (), changes: Sequence[pa.Table] = ()) -> None:
    """Commit what a batch's windowed queries did (each :func:`run_windowed`'s result) with the
    batch's ``also`` writes and answer ``changes`` (the queries' over the whole graph): each
    query's own writes, and the lake's window state table, window log and answer changes table,
    one commit each for all the queries, as a Delta commit costs more than a query's windows in a
    batch of 10 s; all at once, after every query is computed (a query's thread waiting for its
    own commits left a core idle while others still computed). The state table gets the batch's
    signed rows appended; or, when ``whole`` (``done`` holds every windowed query of the lake) and
    its rows would pass twice the content of them all, it is rewritten with that content. Registration writes its one
    query's replay with ``whole`` False and no transaction (the log already holds the batch's)."""
    states: list[StateChange] = [d["state"] for d in done]
    added = sum(c.added for c in states)
    writes = []
    state = before = None
    if added:
        before = store.version(WINDOW_STATE)
        content = sum(t.num_rows for c in states for t in c.content.values())
        if whole and folds(_stored_at(store, before), added, content):
            # every query's content at once, on the cores: a fold encodes megabytes of fresh
            # buffers, most of its time in first-touch page faults, which threads overlap
            rows = pa.concat_tables(each(lambda c: encode(c.plan.name, batch, c.content), states))
            state, kept = partial(store.overwrite, WINDOW_STATE, rows, txn), content
        else:
            rows = pa.concat_tables([c.appended for c in states])
            state, kept = partial(store.append, WINDOW_STATE, rows, txn), _stored_at(store, before) + added
        writes.append(state)
    writes += [*also, *(w for d in done for w in d["writes"])]
    writes.append(partial(answer_changes.append, store, [*changes, *(d["changes"] for d in done)], txn))
    logs = [d["log"] for d in done if d["log"].num_rows]
    if logs:
        writes.append(partial(store.append, WINDOW_LOG, pa.concat_tables(logs), txn))
    store.concurrently(writes)
    version = store.version(WINDOW_STATE) if state is not None else None
    if version != before:
        # every query's state stands at the new version, which added only what it says (a re-run
        # that finds the batch committed leaves the next batch to read it)
        with _LEFT_LOCK:
            _STORED[store] = (version, kept)
            left = _LEFT.setdefault(store, {})
            for change in states:
                left[change.plan.name] = _Left(version, change.content)


def forget_windows(store: TableStore, query: str) -> None:
    """Drop query ``query``'s rows from the window log (unregistered, or registered anew). A delete
    that matches no row commits nothing, so the log is not read first."""
    if store.exists(WINDOW_LOG):
        store.delete(WINDOW_LOG, f"query = '{validate_name(query)}'")


def timed_messages(rows: pa.Table) -> pa.Table:
    """Bronze rows as the window operator reads them: event time in epoch milliseconds."""
    micros = pc.cast(rows["event_time"], pa.int64())
    ms = pc.divide(pc.subtract(micros, pc.if_else(pc.less(micros, 0), 999, 0)), 1000)   # floor
    return rows.select(MESSAGE_COLUMNS[:-1]).append_column("time_ms", ms)


class _Overlay:
    """State tables as the batch started (each read once) plus the changes of the windows computed
    so far, and which tables those changes touched. On Spark, the parts of the state table (read
    with Arrow) and the overlaid tables are handed to the engine as their Arrow rows."""

    def __init__(self, base: Callable[[str], pa.Table], local: set[str]) -> None:
        self.base = cache(base)
        self.local = local
        self.tables: dict[str, pa.Table] = {}
        self.deltas: dict[str, tuple[list[pa.Table], list[str]]] = {}

    def read(self, name: str) -> pa.Table:
        return self.tables[name] if name in self.tables else self.base(name)

    def engine(self, make: EngineFactory, read_spark: Callable[[str], object]) -> ZSetEngine:
        """A Z-set engine reading through the overlay (on Spark, the other tables are read as the
        batch started)."""
        def spark_read(name: str) -> object:
            return self.read(name) if name in self.tables or name in self.local else read_spark(name)

        return make(self.read, spark_read)

    def add(self, name: str, delta: pa.Table, keys: list[str]) -> None:
        rows = pa.concat_tables([self.read(name).select(delta.column_names).cast(delta.schema), delta])
        self.tables[name] = consolidate(rows, keys).select(delta.column_names).cast(delta.schema)
        self.deltas.setdefault(name, ([], keys))[0].append(delta)

    def changed(self) -> dict[str, pa.Table]:
        """The change of each table the windows so far changed (not of those whose changes cancel out)."""
        summed = {name: consolidate(pa.concat_tables(deltas), keys) for name, (deltas, keys) in self.deltas.items()}
        return {name: delta.select(self.tables[name].column_names).cast(self.tables[name].schema)
                for name, delta in summed.items() if delta.num_rows}


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
    stands after the last of them, its change (signed rows), and the answer changes of every
    window (``window`` its index in the batch), in window order."""

    tables: dict[str, pa.Table]
    changes: pa.Table
    deltas: dict[str, pa.Table] = field(default_factory=dict)


def _step_by_step(plan: QueryPlan, step: WindowStep, base: Callable[[str], pa.Table], local: set[str],
                  engine: EngineFactory, read_spark: Callable[[str], object]) -> _Windows:
    """One engine step per window, each reading the state as the batch started plus the earlier
    windows' changes (an overlay): the Spark engine, aggregates (whose answer at a window is a
    function of its groups' rows at that window) and property paths (walked at each window)."""
    overlay = _Overlay(base, local)
    changes = []
    for k, emission in enumerate(step.emissions):
        result = compute(overlay.engine(engine, read_spark), emission.messages, [plan])
        for name, (delta, keys) in result.changed().items():
            overlay.add(name, delta, keys)
        gold = result.gold[plan.name]
        changes.append(gold.append_column(WINDOW, pa.repeat(pa.scalar(k, pa.int64()), gold.num_rows)))
    schema = gold_schema(plan).append(pa.field(WINDOW, pa.int64()))
    deltas = overlay.changed()
    return _Windows({name: overlay.tables[name] for name in deltas},
                    pa.concat_tables([c.select(schema.names).cast(schema) for c in changes] + [schema.empty_table()]),
                    deltas)


def _all_at_once(plan: QueryPlan, step: WindowStep, base: Callable[[str], pa.Table],
                 where: Callable[[pa.Table, Condition | None], pa.Table]) -> _Windows:
    """Every window of the batch in one pass of the delta rules over interval rows
    (:mod:`pipelines.engine.intervals`): each view is scanned once per batch, not once per window."""
    n = len(step.emissions)
    z = IntervalZSets(base, where, n)
    views = catalog.distinct_views([plan])
    probed = probe_arrow(step.messages, views, lambda v, _: base(v.id), where)
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
            tables[name] = plus(before, deltas[name], keys).cast(schema)
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
    given readers; ``read_spark`` reads a table at the batch's start. Returns counters, the
    writes of its own tables (``writes``: gold, background graphs), its answer changes
    (``changes``), the window log rows of the windows emitted (``log``) and the change of its state (``state``, a
    :class:`StateChange`), for the caller to commit with :func:`write_windows`."""
    versions = record.versions
    stored = cache(lambda name: store.read_arrow(name, versions.get(name)))
    start = _state_at(store, plan, versions.get(WINDOW_STATE))
    state = start.parts
    progress = Progress.last(state[progress_table(plan.name)])
    base = cache(lambda name: state[name] if name in state else stored(name))
    clock = Clock.of(plan.streams, plan.lateness_ms)
    buffer = base(buffer_table(plan.name))
    step = window_step(clock, [bare(g) for g in plan.graphs], progress,
                       buffer, lambda: base(background_table(plan.name)),
                       timed_messages(rows), record.batch, flush, stamps=plan.reads_times,
                       patterns=[(v.s, v.p, v.o) for v in plan.views])
    done = _Windows({}, gold_schema(plan).append(pa.field(WINDOW, pa.int64())).empty_table())
    if step.emissions:
        z = engine(base, read_spark)
        done = (_all_at_once(plan, step, base, z.where) if _together(plan, z)
                else _step_by_step(plan, step, base, set(state), engine, read_spark))
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
    # the state's parts: what the batch appends to each, and each one's content after it
    appended, content = {}, {}
    for name, table in done.tables.items():
        if name in state:
            appended[name], content[name] = done.deltas[name], table
        else:
            writes.append(partial(store.overwrite, name, table, txn))
    logged_changes = (answer_changes.change_rows(plan, record, changes.drop_columns([WINDOW]), tag) if changes.num_rows
                      else answer_changes.changes_schema(plan).empty_table())
    gold_version = versions.get(gold_table(plan.name), 0) + int(gold_table(plan.name) in done.tables)
    logged = pa.Table.from_pylist([{**row, "query": plan.name, "gold_version": gold_version} for row in log],
                                  schema=S.WINDOW_LOG)
    if step.buffer is not None:
        if plan.graphs:
            # background messages leave the buffer when a window reads them, not by time: rewritten
            writes.append(partial(store.overwrite, buffer_table(plan.name), step.buffer, txn))
        else:
            name = buffer_table(plan.name)
            appended[name] = step.buffer.filter(pc.invert(pc.is_in(step.buffer["seq"], buffer["seq"])))
            content[name] = step.buffer
    if step.background.num_rows:
        writes.append(partial(store.merge_counts, background_table(plan.name), step.background,
                              ["graph", "s", "p", "o"], MULT, txn))
    final = int(answers[-1]) if len(answers) else progress.answers
    after = replace(step.progress, answers=final)
    if replace(after, batch=progress.batch) != progress:      # a batch that did nothing writes nothing
        appended[progress_table(plan.name)] = content[progress_table(plan.name)] = after.table()
    content = {name: content[name] if name in content else state[name] for name in state}
    change = StateChange(plan, encode(plan.name, record.batch, appended), sum(t.num_rows for t in appended.values()),
                         content)
    return {"windows": len(log), "late": step.late, "answer_changes": int(pc.sum(pc.abs(changes[MULT])).as_py() or 0),
            "log": logged, "writes": writes, "changes": logged_changes, "state": change}
