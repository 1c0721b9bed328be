"""The Arrow Z-set engine: eager tables in this process, for batches too small to pay for Spark jobs.

Joins are Acero hash joins built on the smaller side, so a term that starts from a batch's few
changed rows probes a view once; each state table is read once per batch (the versions the batch
log recorded) and shared by every term and query that uses it. FILTERs are decided by a ``where``
the caller gives (in process, :mod:`.conditions`, with Spark SQL for what that leaves undecided).
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.conditions import Condition
from views.decompose import PatternSize

from .threads import Memo

Key = TypeVar("Key")
_KEY = "_k"          # a constant join key: Acero has no cross join, so a product joins on it


def consolidate(frame: pa.Table, columns: Sequence[str]) -> pa.Table:
    """Project onto ``columns``, summing multiplicities, dropping rows that cancel out."""
    summed = frame.group_by(list(columns), use_threads=False).aggregate([(MULT, "sum")])
    summed = summed.select([*columns, f"{MULT}_sum"]).rename_columns([*columns, MULT])
    return summed.filter(pc.fill_null(pc.not_equal(summed[MULT], 0), False))


#: Chunks a table summed into batch after batch may gather (each sum adds one) before they are
#: combined: a batch's new content shares the old one's buffers but for the rows it changes.
CHUNKS = 16


def sum_touched(content: pa.Table, delta: pa.Table, columns: Sequence[str],
                touched: pa.Array | pa.ChunkedArray) -> tuple[pa.Table, pa.Table]:
    """``content`` plus ``delta`` on ``columns`` (both consolidated) in two parts: the rows of
    ``content`` not ``touched``, as they are, and the ``touched`` ones (at least every row that
    shares a key with ``delta``) summed with ``delta``. A group-by of the whole of a large
    ``content`` cost several times this for a small ``delta``."""
    summed = consolidate(pa.concat_tables([content.filter(touched), delta]), columns).cast(content.schema)
    return content.filter(pc.invert(touched)), summed


def plus(content: pa.Table, delta: pa.Table, columns: Sequence[str]) -> pa.Table:
    """``content`` plus ``delta`` on ``columns``, consolidated, when both are: the rows of
    ``content`` that may share a key with ``delta`` are those sharing a value of its first column
    (one hashed column), as :func:`sum_touched`."""
    if not columns or content.num_rows < 2 * delta.num_rows:
        return consolidate(pa.concat_tables([content, delta]), columns)
    touched = pc.is_in(content[columns[0]], value_set=pc.unique(delta[columns[0]].combine_chunks()))
    kept, summed = sum_touched(content, delta, columns, touched)
    out = pa.concat_tables([kept, summed])
    return out.combine_chunks() if out[0].num_chunks > CHUNKS else out


def holding(rows: pa.Table, keys: Mapping[str, pa.Array]) -> np.ndarray:
    """Whether each of ``rows`` holds, in each column of ``keys``, one of that column's values."""
    hold = np.ones(rows.num_rows, dtype=bool)
    for column, values in keys.items():
        hold &= pc.is_in(rows[column], value_set=values).to_numpy(zero_copy_only=False)
    return hold


def data_columns(frame: pa.Table) -> list[str]:
    """A Z-set table's data columns: all but the multiplicity."""
    return [c for c in frame.column_names if c != MULT]


def _with_key(frame: pa.Table) -> pa.Table:
    return frame.append_column(_KEY, pa.repeat(pa.scalar(1, pa.int8()), frame.num_rows))


class ArrowZSets:
    """:class:`pipelines.engine.zsets.ZSetEngine` on Arrow tables.

    ``read`` gives a state table at the batch's version; ``where`` evaluates a condition over an
    Arrow table (in process, :mod:`.conditions`); ``find`` gives a state table's rows whose columns hold some values
    (:class:`pipelines.engine.lookup.Find`; by default a filter of what ``read`` gives; a run
    finds those of the tables it holds indexed without reading them, :mod:`pipelines.engine.held`).
    """

    name = "arrow"

    def __init__(self, read: Callable[[str], pa.Table],
                 where: Callable[[pa.Table, Condition], pa.Table],
                 find: Callable[[str, Mapping[str, pa.Array]], pa.Table] | None = None) -> None:
        self._read = read
        self._where = where
        self._find = find or self._filter
        self._tables: Memo[str, pa.Table] = Memo()     # (a step's queries run on threads)

    def read(self, table: str) -> pa.Table:
        return self._tables.get(table, lambda: self._read(table))

    def arrow(self, table: str) -> pa.Table:
        return self.read(table)

    def _filter(self, table: str, keys: Mapping[str, pa.Array]) -> pa.Table:
        rows = self.read(table)
        return rows.filter(holding(rows, keys))

    def lookup(self, table: str, frame: pa.Table, on: Sequence[tuple[str, str]]) -> pa.Table:
        keys = {column: pc.unique(frame[variable].combine_chunks()) for column, variable in on
                if variable in frame.column_names}
        return self._find(table, keys) if keys else self.read(table)

    def from_arrow(self, table: pa.Table) -> pa.Table:
        return table

    def size(self, frame: pa.Table) -> PatternSize:
        return frame.num_rows, {c: pc.count_distinct(frame[c]).as_py() for c in data_columns(frame)}

    def rename(self, frame: pa.Table, pairs: Sequence[tuple[str, str]]) -> pa.Table:
        return pa.table([frame[old] for old, _ in pairs] + [frame[MULT]], names=[new for _, new in pairs] + [MULT])

    def join(self, left: pa.Table, right: pa.Table) -> pa.Table:
        shared = [c for c in data_columns(left) if c in set(data_columns(right))]
        if left.num_rows == 0 or right.num_rows == 0:
            columns = data_columns(left) + [c for c in data_columns(right) if c not in shared]
            fields = [left.schema.field(c) if c in left.column_names else right.schema.field(c) for c in columns]
            return pa.schema(fields + [pa.field(MULT, pa.int64())]).empty_table()
        a = left.rename_columns([("_m_left" if c == MULT else c) for c in left.column_names])
        b = right.rename_columns([("_m_right" if c == MULT else c) for c in right.column_names])
        if not shared:
            a, b, shared = _with_key(a), _with_key(b), [_KEY]
        # Acero builds its hash table on the right input: make that the smaller one. One thread:
        # on a few cores shared with the rest of the pipeline, Acero's threads cost more than they
        # gain, for the small joins of a window step and the large ones of a backfill alike
        probe, build = (a, b) if a.num_rows >= b.num_rows else (b, a)
        joined = probe.join(build, keys=shared, join_type="inner", use_threads=False)
        mult = pc.multiply(joined["_m_left"], joined["_m_right"])
        keep = [c for c in joined.column_names if c not in ("_m_left", "_m_right", _KEY)]
        return joined.select(keep).append_column(MULT, mult)

    def semijoin(self, frame: pa.Table, keys: pa.Table, columns: Sequence[str]) -> pa.Table:
        if frame.num_rows == 0 or keys.num_rows == 0:
            return frame.slice(0, 0)
        wanted = keys.select(list(columns)).group_by(list(columns), use_threads=False).aggregate([])
        return frame.join(wanted, keys=list(columns), join_type="left semi", use_threads=True)

    def add(self, frames: Sequence[pa.Table]) -> pa.Table:
        order = frames[0].column_names
        return pa.concat_tables([f.select(order) for f in frames], promote_options="default")

    def consolidate(self, frame: pa.Table, columns: Sequence[str]) -> pa.Table:
        return consolidate(frame, columns)

    def where(self, frame: pa.Table, condition: Condition | None) -> pa.Table:
        return self._where(frame, condition) if condition and frame.num_rows else frame

    def support_delta(self, bag_delta: pa.Table, bag_old: pa.Table, columns: Sequence[str]) -> pa.Table:
        before = _with_key(bag_old.rename_columns([("_old" if c == MULT else c) for c in bag_old.column_names]))
        joined = _with_key(bag_delta).join(before, keys=[*columns, _KEY], join_type="left outer",
                                           use_threads=False)
        old = pc.fill_null(joined["_old"], 0)
        new = pc.add(old, joined[MULT])
        change = pc.subtract(pc.cast(pc.greater(new, 0), pa.int64()), pc.cast(pc.greater(old, 0), pa.int64()))
        rows = pa.table([joined[c] for c in columns] + [change], names=[*columns, MULT])
        return rows.filter(pc.not_equal(rows[MULT], 0))

    def collect(self, outputs: Mapping[Key, pa.Table], schemas: Mapping[Key, pa.Schema]) -> dict[Key, pa.Table]:
        return {key: outputs[key].select(schema.names).cast(schema) if key in outputs else schema.empty_table()
                for key, schema in schemas.items()}
