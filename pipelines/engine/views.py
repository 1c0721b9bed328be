"""Per-triple-pattern views: which update messages touch a view, and the view's net change in a batch.

A view holds the triples of the current graph that match one canonical triple pattern (constants,
repeated variables and pushed-down FILTERs prune before storing), as rows of its variable columns.
The graph is a set, so within a batch the last message on a triple (by ``seq``) decides whether it
is present afterwards; comparing that with the view before the batch gives a +1/-1 change or nothing.
Inserting a present triple and deleting an absent one are counted as no-ops.

A *probe* finds each view's matching messages and, for the keys they touch, whether the key is in
the view before the batch, as rows of one common shape (``_view``, ``seq``, ``op``, ``c0..c3``
padded with '', at most four variable positions: s, p, o and a windowed query's timestamp ``t``; a
presence row has a null ``seq``). Spark probes in one job (:func:`probe_spark`); the Arrow engine
probes in process (:func:`probe_arrow`), reading only the views some message matches. Both match
messages to views, pushed FILTERs included, in process. The walk in ``seq`` order is then done on
those few rows in Arrow.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial, reduce
from typing import Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from schemas.tables import MULT
from views.conditions import Condition
from views.filters import column, sql_string
from views.plan import ViewDef

from .spark import Relation, SparkZSets, where_arrow
from .threads import each

_PAD = ("c0", "c1", "c2", "c3")
#: The probe's rows: a view's matching messages, and (``seq`` null) the keys present before the batch.
_PROBED = pa.schema([("_view", pa.string()), ("seq", pa.int64()), ("op", pa.string())]
                    + [(p, pa.string()) for p in _PAD])


def view_schema(view: ViewDef) -> pa.Schema:
    """The Delta schema of a view table: its variable columns and a multiplicity (always 1)."""
    return pa.schema([pa.field(c, pa.string(), nullable=False) for c in view.columns]
                     + [pa.field(MULT, pa.int64(), nullable=False)])


@dataclass(frozen=True)
class _Match:
    """How a triple matches a view, engine-free: positions that must equal a constant, positions that
    must equal each other (a repeated variable), and the position each view column is bound from."""

    constants: tuple[tuple[str, str], ...]
    repeats: tuple[tuple[str, str], ...]
    source: dict[str, str]


def _match(view: ViewDef) -> _Match:
    first: dict[str, str] = {}
    repeats = []
    for position, name in view.positions:
        if name in first:
            repeats.append((position, first[name]))
        else:
            first[name] = position
    constants = tuple((position, constant) for position, constant in (("s", view.s), ("p", view.p), ("o", view.o))
                      if constant is not None)
    return _Match(constants, tuple(repeats), first)


def _matching_sql(view: ViewDef) -> tuple[list[str], str | None]:
    """:class:`_Match` as Spark SQL over messages: the cells binding the view's columns from the
    triple, and the condition a matching triple meets (None: every triple matches)."""
    m = _match(view)
    conds = [f"{column(position)} = {sql_string(constant)}" for position, constant in m.constants]
    conds += [f"{column(position)} = {column(other)}" for position, other in m.repeats]
    return [f"{column(m.source[c])} AS {column(c)}" for c in view.columns], " AND ".join(conds) or None


def matching(messages: DataFrame, view: ViewDef) -> DataFrame:
    """Messages whose triple matches ``view``, with the view's columns bound from the triple."""
    cells, cond = _matching_sql(view)
    selected = (messages.where(cond) if cond else messages).selectExpr("seq", "op", *cells)
    return selected.where(view.filter_sql) if view.filter_sql else selected


def triples_in_graph(messages: DataFrame) -> DataFrame:
    """The graph a message history leaves behind: triples whose last message is an insert."""
    last = Window.partitionBy("s", "p", "o").orderBy(F.desc("seq"))
    return (messages.withColumn("_rank", F.row_number().over(last))
            .where((F.col("_rank") == 1) & (F.col("op") == "insert"))
            .select("s", "p", "o"))


def for_views(messages: DataFrame, views: list[ViewDef]) -> DataFrame:
    """:func:`for_views_arrow` on Spark: the messages whose triple one of ``views`` matches."""
    conditions = [_matching_sql(view)[1] for view in views]
    if not conditions or any(c is None for c in conditions):
        return messages
    return messages.where(" OR ".join(f"({c})" for c in conditions))


def view_rows(graph: DataFrame, view: ViewDef) -> DataFrame:
    """A view's full contents from a graph of (s, p, o) rows (used by backfill)."""
    as_messages = graph.withColumn("seq", F.lit(0)).withColumn("op", F.lit("insert"))
    return matching(as_messages, view).select(*view.columns).distinct().withColumn(MULT, F.lit(1).cast("long"))


def _shaped(z: SparkZSets, rows: Relation, view: ViewDef, extra: Sequence[str]) -> Relation:
    """A view's rows in the common shape: ``_view``, ``extra`` columns, ``c0..c3`` padded with ''.
    N-Triples terms are never empty, so '' is a safe pad that keeps the keys null-free for joins."""
    pads = [f"{column(c)} AS {_PAD[i]}" for i, c in enumerate(view.columns)]
    pads += [f"'' AS {p}" for p in _PAD[len(view.columns):]]
    cells = [f"{sql_string(view.id)} AS _view", *extra, *pads]
    return z.query(("_view", *extra, *_PAD), f"SELECT {', '.join(cells)} FROM {rows.name}", (rows,))


def _touching(firsts: Sequence[str], keys: Sequence[str]) -> str:
    """Spark SQL selecting a shaped view's rows whose key is one of ``keys`` (the padded columns
    joined by newlines, as :func:`pipelines.engine.merge_on_read.row_keys` joins them: terms never hold
    one), tested first on the first column alone, which parquet statistics can prune on."""
    joined = f"concat_ws({sql_string(chr(10))}, {', '.join(_PAD)})"
    return (f"c0 IN ({', '.join(map(sql_string, firsts))}) "
            f"AND {joined} IN ({', '.join(map(sql_string, keys))})")


def probe_spark(z: SparkZSets, messages: pa.Table, views: list[ViewDef]) -> pa.Table:
    """The probe on the Spark engine. The messages matching each view are found in process, as
    on Arrow, their pushed FILTERs decided in process too (:mod:`.conditions`: a Spark job for them
    cost 0.3-0.4 s of a batch; only a value that leaves undecided still takes one). Then one job,
    whatever the number of views: for the keys the messages touch, whether the key is in the view
    before the batch (rows with a null ``seq``). It reads each view hit through literal keys (its
    first column's values, which parquet statistics can prune on, then the whole key), so nothing
    of a view but its matches leaves Spark and no key set is broadcast (a broadcast is a job of
    its own, one per view). A view as ``z`` reads it may hold signed rows unconsolidated (merge on
    read): a key is present when its rows sum to a positive multiplicity."""
    matches = ((view, matching_arrow(messages, view, partial(where_arrow, z.spark))) for view in views)
    parts = [_shaped_arrow(rows, view, rows["seq"], rows["op"]).cast(_PROBED)
             for view, rows in matches if rows.num_rows]
    hits = pa.concat_tables(parts) if parts else _PROBED.empty_table()
    if hits.num_rows == 0:
        return hits
    stored = []
    for view in views:
        mine = hits.filter(pc.equal(hits["_view"], view.id))
        if mine.num_rows == 0:
            continue
        keys = pc.unique(pc.binary_join_element_wise(*[mine[p] for p in _PAD], "\n")).to_pylist()
        touching = _touching(pc.unique(mine["c0"]).to_pylist(), keys)
        stored.append(z.where(_shaped(z, z.read(view.id), view, (MULT,)), Condition(touching)))
    union = z.add(stored)
    pads = ", ".join(_PAD)
    present = z.query(("_view", "seq", "op", *_PAD),
                      f"SELECT _view, CAST(NULL AS BIGINT) AS seq, CAST(NULL AS STRING) AS op, {pads} "
                      f"FROM {union.name} GROUP BY _view, {pads} HAVING SUM({MULT}) > 0", (union,))
    return pa.concat_tables([hits, z.to_arrow(present).cast(_PROBED)])


def matching_arrow(messages: pa.Table, view: ViewDef,
                   where: Callable[[pa.Table, Condition], pa.Table] | None) -> pa.Table:
    """:func:`matching` on an Arrow table of messages; ``where`` evaluates the view's pushed
    FILTER (None for a view without one)."""
    m = _match(view)
    condition = _condition_arrow(messages, m)
    selected = messages if condition is None else messages.filter(condition)
    rows = pa.table([selected["seq"], selected["op"]] + [selected[m.source[c]] for c in view.columns],
                    names=["seq", "op", *view.columns])
    return where(rows, view.filter) if view.filter_sql and rows.num_rows else rows


def _condition_arrow(messages: pa.Table, m: _Match) -> pa.ChunkedArray | None:
    """Which of ``messages`` have a triple that matches :class:`_Match` ``m`` (None: every one)."""
    conds = [pc.equal(messages[position], constant) for position, constant in m.constants]
    conds += [pc.equal(messages[position], messages[other]) for position, other in m.repeats]
    return reduce(pc.and_, conds) if conds else None


def for_views_arrow(messages: pa.Table, views: list[ViewDef]) -> pa.Table:
    """The messages whose triple one of ``views`` matches (their FILTERs aside): a triple's
    messages stay together, so :func:`triples_in_graph_arrow` of them holds every triple of the
    graph the views can match. A registration's new views match a few predicates of the graph:
    finding the last message per triple of those alone took 0.3 s where all of bronze's took
    1.8 s at 1M triples."""
    conditions = [_condition_arrow(messages, _match(view)) for view in views]
    if not conditions or any(c is None for c in conditions):
        return messages
    return messages.filter(reduce(pc.or_, conditions))


def triples_in_graph_arrow(messages: pa.Table) -> pa.Table:
    """:func:`triples_in_graph` in process: the last message per triple in ``seq`` order decides."""
    ordered = messages.select(["seq", "op", "s", "p", "o"]).sort_by("seq")
    last = ordered.group_by(["s", "p", "o"], use_threads=False).aggregate([("op", "last")])
    present = last.filter(pc.equal(last["op_last"], "insert"))
    return present.select(["s", "p", "o"])


def view_rows_arrow(graph: pa.Table, view: ViewDef, where: Callable[[pa.Table, Condition], pa.Table]) -> pa.Table:
    """:func:`view_rows` in process, from an Arrow graph of (s, p, o) rows."""
    n = graph.num_rows
    as_messages = graph.append_column("seq", pa.repeat(pa.scalar(0, pa.int64()), n)).append_column(
        "op", pa.repeat(pa.scalar("insert", pa.string()), n))
    rows = matching_arrow(as_messages, view, where).select(list(view.columns))
    if view.columns:
        distinct = rows.group_by(list(view.columns), use_threads=False).aggregate([])
    else:   # a ground pattern: one empty row when the triple is there (slice of a column-less
        distinct = rows.slice(0, min(1, rows.num_rows))   # table ignores its length: bound it)
    ones = pa.repeat(pa.scalar(1, pa.int64()), distinct.num_rows)
    return distinct.append_column(MULT, ones).cast(view_schema(view))


def _shaped_arrow(rows: pa.Table, view: ViewDef, seq: pa.Array, op: pa.Array) -> pa.Table:
    """:func:`_shaped` for Arrow rows, with ``seq`` and ``op`` given."""
    n = rows.num_rows
    pads = [rows[c] for c in view.columns] + [pa.repeat(pa.scalar("", pa.string()), n)
                                                for _ in _PAD[len(view.columns):]]
    return pa.table([pa.repeat(pa.scalar(view.id, pa.string()), n), seq, op, *pads],
                    names=["_view", "seq", "op", *_PAD])


def probe_arrow(messages: pa.Table, views: list[ViewDef], before: Callable[[ViewDef, pa.Table], pa.Table],
                where: Callable[[pa.Table, Condition], pa.Table]) -> pa.Table:
    """:func:`probe_spark` in process: a view no message matches is not read at all, and only the
    stored rows whose key some message touches are shaped. ``before(view, keys)`` gives the view's
    rows before the batch, or only those that can hold one of ``keys`` (its columns' values). The
    views are probed on threads (:func:`.threads.each`): each is a match and a lookup, Arrow work
    that releases the GIL, and a batch's first step, which nothing else overlaps."""
    def probe(view: ViewDef) -> list[pa.Table]:
        hits = matching_arrow(messages, view, where)
        if hits.num_rows == 0:
            return []
        shaped = _shaped_arrow(hits, view, hits["seq"], hits["op"])
        if view.columns:
            touched = hits.select(list(view.columns)).group_by(list(view.columns), use_threads=False).aggregate([])
            stored = before(view, touched).select(list(view.columns))
            stored = stored.join(touched, keys=list(view.columns), join_type="left semi", use_threads=False)
        else:   # a ground pattern: its one (empty) key is present when the view holds a row
            stored = before(view, hits.select([]))
            stored = stored.slice(0, min(1, stored.num_rows))
        nulls = (pa.nulls(stored.num_rows, pa.int64()), pa.nulls(stored.num_rows, pa.string()))
        return [shaped, _shaped_arrow(stored, view, *nulls)]
    parts = [part for probed in each(probe, views) for part in probed]
    return pa.concat_tables(parts) if parts else _PROBED.empty_table()


def same_as_previous(rows: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """For rows sorted by ``keys``: whether each row has the keys of the row before it (the first
    row has none), i.e. where the runs of equal keys continue."""
    n = rows.num_rows
    same_as_prev = np.zeros(n, dtype=bool)
    if n > 1:
        same = np.ones(n - 1, dtype=bool)
        for k in keys:
            column = rows[k]
            same &= pc.equal(column.slice(1), column.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        same_as_prev[1:] = same
    return same_as_prev


def _walk(rows: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Messages in ``seq`` order per (view, key): the state before each message is the previous
    message's op, or the key's presence before the batch for the first one. Returns the net changes
    (one row per key whose last message flips its presence) and the no-op messages."""
    keys = ["_view", *_PAD]
    is_probe = pc.is_null(rows["seq"])
    present = rows.filter(is_probe).select(keys).append_column("_present", pa.repeat(True, pc.sum(is_probe).as_py() or 0))
    hits = rows.filter(pc.invert(is_probe)).join(present, keys=keys, join_type="left outer",
                                                 use_threads=False)
    hits = hits.sort_by([(k, "ascending") for k in keys] + [("seq", "ascending")])
    n = hits.num_rows
    was_present = pc.fill_null(hits["_present"], False).to_numpy(zero_copy_only=False)
    is_insert = pc.equal(hits["op"], "insert").to_numpy(zero_copy_only=False)
    same_as_prev = same_as_previous(hits, keys)
    state_before = np.where(same_as_prev, np.roll(is_insert, 1), was_present)
    is_last = np.ones(n, dtype=bool)
    is_last[:-1] = ~same_as_prev[1:]
    mult = is_insert.astype(np.int64) - was_present.astype(np.int64)
    net = hits.append_column(MULT, pa.array(mult)).filter(pa.array(is_last & (mult != 0)))
    noops = hits.filter(pa.array(is_insert == state_before))
    return net, noops


@dataclass
class ViewChanges:
    """A batch's effect on every view: Arrow deltas per view and the no-op message seqs."""

    deltas: dict[str, pa.Table]
    noop_seqs: set[int]


def compute_view_changes(probed: pa.Table, views: Iterable[ViewDef]) -> ViewChanges:
    """Net change of each view from a batch's probe (:func:`probe_spark` or :func:`probe_arrow`)."""
    views = list(views)
    net, noops = _walk(probed)
    deltas: dict[str, pa.Table] = {}
    for view in views:
        mine = net.filter(pc.equal(net["_view"], view.id))
        deltas[view.id] = pa.table(
            [mine[_PAD[i]] for i in range(len(view.columns))] + [mine[MULT]],
            schema=view_schema(view))
    return ViewChanges(deltas, set(noops["seq"].to_pylist()))
