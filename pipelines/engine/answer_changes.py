"""The answer changes of every query, kept in one Delta table of the lake
(:data:`~pipelines.lake.ANSWER_CHANGES`) rather than a table each.

A batch's answer changes were one append per query whose answers changed: ten of the 26 Delta
commits of a nine-query batch of 10,000 updates at 1M triples. In one table they are one append
per batch, however many queries it changes (:func:`append`). The table is an append-only log, as
each query's was, and its time travel says what had been logged by a version.

A query's rows are those whose ``_query`` is its name. The variables of its bindings are columns
named after them: queries that use a name share its column, matched case-insensitively as Spark SQL
and Delta compare column names (the first query to use a name spells the column; :func:`of_query`
gives each query its own spelling back). Registering a query adds the columns it brings
(:func:`widen`); unregistering it deletes its rows and keeps its columns (dropping one would
rewrite the whole log). :func:`of_query` and :func:`of_query_spark` read a query's rows in the
shape its own table had (:func:`changes_schema`), which is how ``answers``, the gold suites and
``lakegraph sql`` (as the view ``gold_<query>_changes``) see them.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from schemas import tables as S
from views.model import validate_name
from views.plan import QueryPlan

from .. import catalog
from ..lake import ANSWER_CHANGES, BatchRecord, legacy_changes_table
from ..storage import TableStore, Txn
from .step import gold_schema

#: The app transaction that moves a query's answer changes kept in a table of its own (an earlier
#: layout) into the lake's table: one per query, so a move a crash interrupted is finished, never doubled.
_ADOPT_APP = "lakegraph-changes-adopt"

#: A window's number and close (epoch ms), one per answer change.
WindowTag = tuple[pa.Array, pa.Array]


def changes_schema(plan: QueryPlan) -> pa.Schema:
    """A query's answer changes as it reads them: the batch, the bronze versions it read, for a
    query with stream windows the window, the sign and count, then the binding."""
    meta = [pa.field(S.QUERY, pa.string(), nullable=False), pa.field(S.BATCH, pa.int64(), nullable=False),
            pa.field(S.BRONZE_FROM, pa.int64(), nullable=False), pa.field(S.BRONZE_TO, pa.int64(), nullable=False)]
    if plan.streams:
        meta += [pa.field(S.WINDOW, pa.int64(), nullable=False), pa.field(S.CLOSE_MS, pa.int64(), nullable=False)]
    meta += [pa.field(S.SIGN, pa.string(), nullable=False), pa.field(S.COUNT, pa.int64(), nullable=False)]
    return pa.schema(meta + list(gold_schema(plan).remove(len(plan.projection))))


def change_rows(plan: QueryPlan, record: BatchRecord, gold: pa.Table, window: WindowTag | None = None) -> pa.Table:
    """Signed answer changes (a binding and ``_mult``) as the query's rows of the table."""
    mult = gold[S.MULT]
    n = gold.num_rows

    def repeat(value: int | str, kind: pa.DataType) -> pa.Array:
        return pa.repeat(pa.scalar(value, kind), n)

    columns = {S.QUERY: repeat(plan.name, pa.string()), S.BATCH: repeat(record.batch, pa.int64()),
               S.BRONZE_FROM: repeat(record.bronze_from, pa.int64()), S.BRONZE_TO: repeat(record.bronze_to, pa.int64())}
    if window is not None:
        columns[S.WINDOW], columns[S.CLOSE_MS] = window
    columns[S.SIGN] = pc.if_else(pc.greater(mult, 0), "+", "-")
    columns[S.COUNT] = pc.abs(mult)
    columns.update({v: gold[v] for v in plan.projection})
    return pa.table(columns, schema=changes_schema(plan))


def _by_lower(schema: pa.Schema) -> dict[str, str]:
    return {name.lower(): name for name in schema.names}


def widen(store: TableStore, plan: QueryPlan) -> None:
    """Add the columns of ``plan``'s variables the table does not have yet."""
    have = _by_lower(store.schema(ANSWER_CHANGES))
    store.add_columns(ANSWER_CHANGES, [pa.field(v, pa.string()) for v in plan.projection if v.lower() not in have])


def stored(schema: pa.Schema, changes: Sequence[pa.Table]) -> pa.Table:
    """Queries' answer changes (each in its :func:`changes_schema`) as rows of the table of
    ``schema``: each variable in its column, the others' null."""
    column = _by_lower(schema)
    parts = [rows.rename_columns([column[c.lower()] for c in rows.column_names]) for rows in changes]
    whole = pa.concat_tables([*parts, schema.empty_table()], promote_options="permissive")
    return whole.select(schema.names).cast(schema)


def append(store: TableStore, changes: Sequence[pa.Table], txn: Txn | None) -> bool:
    """Append queries' answer changes in one commit (none when they are empty); False when ``txn``
    was already committed."""
    changes = [rows for rows in changes if rows.num_rows]
    if not changes:
        return False
    return store.append(ANSWER_CHANGES, stored(store.schema(ANSWER_CHANGES), changes), txn)


def _selected(schema: pa.Schema, plan: QueryPlan) -> list[tuple[str, str]]:
    """(column of the table, column of the query's shape) for each of the query's columns."""
    column = _by_lower(schema)
    return [(column[f.name.lower()], f.name) for f in changes_schema(plan)]


def of_query(table: pa.Table, plan: QueryPlan) -> pa.Table:
    """``plan``'s rows of the table (read as Arrow), in the query's own shape."""
    rows = table.filter(pc.equal(table[S.QUERY], plan.name))
    pairs = _selected(table.schema, plan)
    return rows.select([c for c, _ in pairs]).rename_columns([n for _, n in pairs]).cast(changes_schema(plan))


def of_query_spark(frame: DataFrame, plan: QueryPlan) -> DataFrame:
    """``plan``'s rows of the table (read as a Spark frame), in the query's own shape."""
    pairs = _selected(pa.schema([pa.field(n, pa.string()) for n in frame.columns]), plan)
    return frame.where(F.col(S.QUERY) == F.lit(plan.name)).select(*[F.col(f"`{c}`").alias(n) for c, n in pairs])


def sql_views(store: TableStore) -> dict[str, QueryPlan]:
    """Each registered query by the name ``lakegraph sql`` gives its rows (the one its own table
    had: ``gold_<query>_changes``, so the SQL written for that layout reads on)."""
    return {legacy_changes_table(q.plan.name): q.plan for q in catalog.registered(store)}


def forget(store: TableStore, query: str) -> None:
    """Delete query ``query``'s rows (unregistered, or registered anew). A delete that matches no
    row commits nothing, so the table is not read first."""
    if store.exists(ANSWER_CHANGES):
        store.delete(ANSWER_CHANGES, f"{S.QUERY} = '{validate_name(query)}'")


def adopt_legacy(store: TableStore, plans: Sequence[QueryPlan], versions: Mapping[str, int]) -> list[str]:
    """Move the answer changes of each of ``plans`` still kept in a table of its own (the layout
    before the lake's table) into the table, and drop its table; returns the queries moved. A
    table is taken at its version in ``versions`` (those an interrupted batch recorded: its re-run
    appends that batch's changes again), else its newest. Each move is one append carrying its
    own app transaction, so a move a crash interrupted is finished on the next call, never doubled."""
    moved = []
    for plan in plans:
        legacy = legacy_changes_table(plan.name)
        if not store.exists(legacy):
            continue
        app = f"{_ADOPT_APP}:{plan.name}"
        if store.committed(ANSWER_CHANGES, app) is None:
            widen(store, plan)
            rows = store.read_arrow(legacy, versions.get(legacy))
            rows = rows.select(changes_schema(plan).names).cast(changes_schema(plan))
            store.append(ANSWER_CHANGES, stored(store.schema(ANSWER_CHANGES), [rows]), Txn(app, 1))
        store.drop(legacy)
        moved.append(plan.name)
    return moved
