"""The views of the queries over the whole graph, kept in one Delta table of the lake
(:data:`~pipelines.lake.VIEWS`) rather than a table each.

A batch changes a dozen views by a few rows each, and a Delta commit costs more than writing those
rows: with a table per view, a nine-query batch of 10,000 updates at 1M triples made 17 view
commits of its 42. In one table a batch's view changes are one commit: the views of every query
appended together, or, once the table's rows would pass :data:`~.merge_on_read.FOLD` times its
content, the table rewritten consolidated (:class:`pipelines.engine.held.HeldTables`).

A view is the table's rows whose ``_view`` is its id, its variables in ``v0``..``v2`` in order
(unused ones null), kept merge-on-read: any number of signed copies of a row, which a reader sums.
The engines and the delta rules still read a view by its id as if it were a table of its own
(:func:`split` for the Arrow engine, :func:`spark_reads` for Spark); only the storage is shared.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from schemas import tables as S
from schemas.tables import MULT, VIEW, VIEW_COLUMNS
from views.plan import ViewDef

from ..lake import VIEWS
from ..storage import TableStore, Txn
from .arrow import consolidate
from .merge_on_read import consolidated
from .views import view_schema

#: The app transaction that moves a view kept in a table of its own (an earlier layout) into the
#: views table: one per view, so a move interrupted by a crash is finished, never doubled.
_ADOPT_APP = "lakegraph-views-adopt"


def stored(view_id: str, rows: pa.Table) -> pa.Table:
    """A view's rows (its variable columns and ``_mult``) in the views table's shape."""
    n = rows.num_rows
    columns = {VIEW: pa.repeat(pa.scalar(view_id, pa.string()), n)}
    columns.update({c: rows[c] if c in rows.column_names else pa.nulls(n, pa.string()) for c in VIEW_COLUMNS})
    columns[MULT] = rows[MULT]
    return pa.table(columns, schema=S.VIEWS)


def of_view_spark(frame: DataFrame, view: ViewDef) -> DataFrame:
    """The views table's rows of ``view`` (as stored: signed copies), in the view's own shape."""
    return frame.where(F.col(VIEW) == F.lit(view.id)).select(*view.columns, MULT)


def split(rows: pa.Table, views: Iterable[ViewDef]) -> tuple[dict[str, pa.Table], pa.Table]:
    """The views table's rows of each of ``views`` in its own shape, and the rows of the views not
    among them. A write puts each view's rows together (a fold view after view, an append its
    views' changes one after the other), so the table is runs of one view each: slices of them,
    found by comparing each ``_view`` with the one before, take no copy (sorting the table by view
    took half the time of reading it)."""
    views = list(views)
    pieces: dict[str, list[pa.RecordBatch]] = {v.id: [] for v in views}
    others: list[pa.RecordBatch] = []
    for batch in rows.to_batches():
        column, n = batch.column(VIEW), batch.num_rows
        if n == 0:
            continue
        change = np.flatnonzero(pc.not_equal(column.slice(1), column.slice(0, n - 1)).to_numpy(zero_copy_only=False)) + 1
        starts, ends = np.concatenate([[0], change]), np.concatenate([change, [n]])
        for view_id, start, end in zip(pc.take(column, pa.array(starts)).to_pylist(), starts, ends):
            pieces.get(view_id, others).append(batch.slice(start, end - start))
    parts = {v.id: _own(pa.Table.from_batches(pieces[v.id], rows.schema), v) for v in views}
    return parts, pa.Table.from_batches(others, rows.schema)


def _own(rows: pa.Table, view: ViewDef) -> pa.Table:
    return rows.select([*view.columns, MULT]).cast(view_schema(view))


def spark_reads(views: Iterable[ViewDef], read: Callable[[str], DataFrame]) -> Callable[[str], DataFrame]:
    """``read`` (a table by name, on Spark) in which a view's id reads its rows of the views
    table: how the Spark engine, which reads a view as a table, sees the shared one."""
    by_id = {v.id: v for v in views}
    return lambda name: of_view_spark(read(VIEWS), by_id[name]) if name in by_id else read(name)


def add_views(store: TableStore, parts: Iterable[pa.Table]) -> None:
    """Add ``parts`` (rows of new views, as :func:`stored` gives them, a view's rows together) to
    the views table: a registration's backfill. The rows are a set of their own, and no other row
    of the table is of their views, so they are appended as part of the table's fold
    (:meth:`TableStore.append_folded`): a run takes them as they are, where rows appended plainly
    would be summed by every run's first batch until the table's next fold (hundreds of batches
    away on a large lake). Folding the whole table at each registration instead made registering
    the eleven path queries at 1M edges 43% slower."""
    rows = pa.concat_tables(list(parts))
    store.append_folded(VIEWS, consolidated(rows)[0])


def forget(store: TableStore, view_ids: Iterable[str]) -> None:
    """Delete the rows of ``view_ids`` (views no registered query uses any more), if the table
    holds any: a DELETE scans every file its predicate's statistics cannot rule out, where reading
    the ``_view`` column alone is cheap (a registration of new views has none to delete)."""
    ids = sorted(view_ids)
    if not ids or not pc.any(pc.is_in(store.read_arrow(VIEWS, columns=[VIEW])[VIEW], pa.array(ids))).as_py():
        return
    # view ids are hex digests: nothing to quote
    store.delete(VIEWS, f"{VIEW} IN ({', '.join(repr(i) for i in ids)})")


def adopt_legacy(store: TableStore, views: Iterable[ViewDef], versions: Mapping[str, int]) -> list[str]:
    """Move each of ``views`` still kept in a table of its own (the layout before the views table)
    into the views table, consolidated, and drop its table; returns the ids moved. A view is taken
    at its version in ``versions`` (those an interrupted batch recorded, which its re-run reads),
    else its newest. Each move is one append carrying its own app transaction, so a move a crash
    interrupted is finished on the next call, never doubled."""
    moved = []
    for view in views:
        if not store.exists(view.id):
            continue
        if store.committed(VIEWS, _ADOPT_APP + ":" + view.id) is None:
            rows = store.read_arrow(view.id, versions.get(view.id))
            content = consolidate(rows, list(view.columns)).cast(view_schema(view))
            store.append(VIEWS, stored(view.id, content), Txn(_ADOPT_APP + ":" + view.id, 1))
        store.drop(view.id)
        moved.append(view.id)
    return moved
