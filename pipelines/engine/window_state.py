"""A windowed query's own state in one Delta table: its views, partial embeddings (and bag and
running sums), its progress and, without background graphs, its buffer.

Each of these *parts* is a struct column of the state table, and a row holds one part's row,
tagged in :data:`TAG` with the part's name (the name the part had as a table of its own). A batch
of a windowed query changes a dozen small parts, and as tables each took a Delta commit and a log
read whatever its size: with 10 s batches over a 100 s window, the commits were most of a batch's
time. As one table, a batch appends all its signed rows in one commit, and rewrites the table
consolidated once its rows pass twice its content (:func:`pipelines.engine.windowed.run_windowed`).

The parts keep their meaning: the views and partial embeddings are Z-sets (any number of rows per
key, summing to its multiplicity), the buffer is read through
:func:`pipelines.engine.windows.live_buffer`, the progress is one row per batch, the latest wins.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as S
from views.plan import QueryPlan

from ..lake import buffer_table, progress_table, state_table
from ..storage import TableStore
from .bgp import state_tables
from .views import view_schema
from .windows import Progress

#: The column naming the part a row of the state table belongs to.
TAG = "_part"


def parts(plan: QueryPlan) -> dict[str, pa.Schema]:
    """The parts of windowed query ``plan``'s state table, by name, with their schemas. The buffer
    of a query with background graphs stays a table of its own: background messages leave it when
    a window reads them, not by time, so it is rewritten at every batch."""
    named = {v.id: view_schema(v) for v in plan.views}
    named.update(state_tables(plan))
    if not plan.graphs:
        named[buffer_table(plan.name)] = S.WINDOW_BUFFER
    named[progress_table(plan.name)] = S.WINDOW_PROGRESS
    return named


def zsets(plan: QueryPlan) -> set[str]:
    """The parts that are Z-sets: the views and partial embeddings (and bag and sums)."""
    return {v.id for v in plan.views} | set(state_tables(plan))


def _struct(schema: pa.Schema) -> pa.StructType:
    # every field nullable: a row of another part holds a null struct here
    return pa.struct([field.with_nullable(True) for field in schema])


def table_schema(plan: QueryPlan) -> pa.Schema:
    """The Delta schema of the state table."""
    return pa.schema([pa.field(TAG, pa.string(), nullable=False)]
                     + [pa.field(name, _struct(schema)) for name, schema in parts(plan).items()])


def _runs(stored: pa.Table) -> dict[str, list[tuple[int, int]]]:
    """Each part's runs of rows (offset, length) in the stored rows. A write puts each part's rows
    together, so there are a few runs per write, and slicing them copies nothing (filtering the
    struct columns by tag copied every part's column once per part)."""
    if not stored.num_rows:
        return {}
    tags = stored[TAG].combine_chunks().dictionary_encode()
    codes = tags.indices.to_numpy()
    starts = np.concatenate([[0], np.flatnonzero(np.diff(codes)) + 1])
    ends = np.append(starts[1:], len(codes))
    runs: dict[str, list[tuple[int, int]]] = {}
    for start, end in zip(starts.tolist(), ends.tolist()):
        runs.setdefault(tags.dictionary[codes[start]].as_py(), []).append((start, end - start))
    return runs


def _part(stored: pa.Table, runs: list[tuple[int, int]], name: str, schema: pa.Schema) -> pa.Table:
    """Part ``name``'s rows of the state table's ``stored`` rows, at ``runs``."""
    batches = [pa.RecordBatch.from_struct_array(chunk) for start, length in runs
               for chunk in stored[name].slice(start, length).chunks if len(chunk)]
    return pa.Table.from_batches(batches).cast(schema) if batches else schema.empty_table()


def unpack(plan: QueryPlan, stored: pa.Table) -> dict[str, pa.Table]:
    """Each part's stored rows (every part, empty when it has none)."""
    runs = _runs(stored)
    return {name: _part(stored, runs.get(name, []), name, schema) for name, schema in parts(plan).items()}


def pack(plan: QueryPlan, rows: Mapping[str, pa.Table]) -> pa.Table:
    """The state table's rows holding ``rows`` (by part name)."""
    schema = table_schema(plan)
    pieces = []
    for name, table in rows.items():
        if not table.num_rows:
            continue
        n = table.num_rows
        struct = schema.field(name).type
        values = pa.StructArray.from_arrays(
            [table[f.name].combine_chunks().cast(f.type) for f in struct], fields=list(struct))
        columns = [pa.repeat(pa.scalar(name, pa.string()), n)]
        columns += [values if f.name == name else pa.nulls(n, f.type) for f in list(schema)[1:]]
        pieces.append(pa.Table.from_arrays(columns, schema=schema))
    return pa.concat_tables(pieces) if pieces else schema.empty_table()


def last_progress(store: TableStore, query: str, version: int | None = None) -> Progress:
    """Windowed query ``query``'s progress after its last batch (at ``version`` of its state)."""
    name = progress_table(query)
    stored = store.read_arrow(state_table(query), version, columns=[TAG, name])
    return Progress.last(_part(stored, _runs(stored).get(name, []), name, S.WINDOW_PROGRESS))
