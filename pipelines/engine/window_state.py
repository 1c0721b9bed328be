"""Every windowed query's own state in one Delta table of the lake
(:data:`~pipelines.lake.WINDOW_STATE`): its views, partial embeddings (and bag and running sums),
its progress and, without background graphs, its buffer.

Each of these *parts* has its own columns, so a row of the table holds one part of one query as
one batch changed it: its rows as an LZ4-compressed Arrow IPC stream, with the query, the batch,
the part's name (the name the part had as a table of its own) and its row count beside it. With
10 s batches over a 100 s window a batch changes a dozen small parts per query, and a Delta commit
costs more than computing them: one table for every part of every query takes one commit per
batch (:func:`pipelines.engine.windowed.write_windows`), where a table per part took one per part
and then a table per query one per query. A batch appends its signed rows, and rewrites the table
consolidated once its rows would pass twice the content of all its queries
(:mod:`pipelines.engine.merge_on_read`).

The parts keep their meaning: the views and partial embeddings are Z-sets (any number of rows per
key, summing to its multiplicity), the buffer is read through
:func:`pipelines.engine.windows.live_buffer`, the progress is one row per batch, the latest wins.
"""
from __future__ import annotations

from typing import Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as S
from views.plan import QueryPlan

from ..lake import WINDOW_STATE, buffer_table, progress_table
from ..storage import TableStore
from .bgp import state_tables
from .views import view_schema
from .windows import Progress


def parts(plan: QueryPlan) -> dict[str, pa.Schema]:
    """The parts of windowed query ``plan``'s state, by name, with their schemas. The buffer of a
    query with background graphs stays a table of its own: background messages leave it when a
    window reads them, not by time, so it is rewritten at every batch."""
    named = {v.id: view_schema(v) for v in plan.views}
    named.update(state_tables(plan))
    if not plan.graphs:
        named[buffer_table(plan.name)] = S.WINDOW_BUFFER
    named[progress_table(plan.name)] = S.WINDOW_PROGRESS
    return named


def zsets(plan: QueryPlan) -> set[str]:
    """The parts that are Z-sets: the views and partial embeddings (and bag and sums)."""
    return {v.id for v in plan.views} | set(state_tables(plan))


#: Parts are LZ4-compressed: a part's strings shrink about five times, and a fold's time went
#: mostly to touching the fresh memory that the encoded parts and their parquet pages take.
_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


def _ipc(table: pa.Table) -> memoryview:
    """``table`` as an Arrow IPC stream, a view of its buffer (a part of a fold holds its whole
    content: copying it to ``bytes`` first copied it twice)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_IPC_OPTIONS) as writer:
        writer.write_table(table)
    return memoryview(sink.getvalue())


def encode(query: str, batch: int, rows: Mapping[str, pa.Table]) -> pa.Table:
    """The state table's rows holding ``rows`` (by part name) of query ``query`` after batch
    ``batch`` (a part without rows has none)."""
    kept = [(name, table) for name, table in rows.items() if table.num_rows]
    return pa.table({"query": [query] * len(kept), "batch": [batch] * len(kept), "part": [n for n, _ in kept],
                     "rows": [t.num_rows for _, t in kept], "data": [_ipc(t) for _, t in kept]},
                    schema=S.WINDOW_STATE)


def _stored_parts(stored: pa.Table, query: str, part: str | None = None) -> Iterator[tuple[str, pa.Table]]:
    """The (part, rows) of query ``query`` (of its part ``part`` only, when given) in the state
    table's ``stored`` rows, in stored order; each decoded from its IPC stream."""
    for batch in stored.select(["query", "part", "data"]).to_batches():
        queries, names, data = batch.column(0).to_pylist(), batch.column(1).to_pylist(), batch.column(2)
        for i, (owner, name) in enumerate(zip(queries, names)):
            if owner == query and (part is None or name == part):
                yield name, pa.ipc.open_stream(data[i].as_buffer()).read_all()


def decode(plan: QueryPlan, stored: pa.Table) -> dict[str, pa.Table]:
    """Each part of windowed query ``plan`` in the state table's ``stored`` rows (every part, empty
    when it has none)."""
    schemas = parts(plan)
    found: dict[str, list[pa.Table]] = {}
    for name, table in _stored_parts(stored, plan.name):
        if name in schemas:
            found.setdefault(name, []).append(table.select(schemas[name].names).cast(schemas[name]))
    return {name: pa.concat_tables(found[name]) if name in found else schema.empty_table()
            for name, schema in schemas.items()}


def stored_rows(store: TableStore, version: int | None = None) -> int:
    """How many part rows the state table holds (at ``version``): what its content is folded against."""
    return int(pc.sum(store.read_arrow(WINDOW_STATE, version, columns=["rows"])["rows"]).as_py() or 0)


def last_progress(store: TableStore, query: str, version: int | None = None) -> Progress:
    """Windowed query ``query``'s progress after its last batch (at ``version`` of the state table)."""
    stored = store.read_arrow(WINDOW_STATE, version)
    rows = [table for _, table in _stored_parts(stored, query, progress_table(query))]
    return Progress.last(pa.concat_tables([t.cast(S.WINDOW_PROGRESS) for t in rows]) if rows
                         else S.WINDOW_PROGRESS.empty_table())
