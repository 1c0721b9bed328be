"""Tables kept merge-on-read: a batch appends its signed change, a read sums each row's signed copies.

A Delta MERGE scans and rewrites its whole target (its rows are in every file a batch's keys hit),
so a state table MERGEd at every batch costs what the table holds, not what the batch changed.
A Z-set table need not be consolidated on disk: any number of signed rows for a key sum to its
multiplicity. So a batch appends its change, every read consolidates, and the table is rewritten
consolidated only when its rows would exceed :data:`FOLD` times its content: the rewrite's cost,
spread over the appends since the last one, stays a constant times theirs, and a read never holds
more than :data:`FOLD` times the content.

Windowed queries keep their state table this way (:mod:`.windowed`, :mod:`.window_state`), the path
operator its path views and reach tables (:mod:`.held`); gold tables stay consolidated for
SQL users. A row is named by its values (:func:`row_keys`), and a change summed only where two of
its rows share a name (:func:`consolidated`), by the run that holds these tables and by the
registration that fills them.
"""
from __future__ import annotations

from typing import Callable, Collection

import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT

from .arrow import consolidate, data_columns

#: A merge-on-read table is rewritten consolidated once its rows would exceed this many times its content.
FOLD = 2


def folds(stored: int, delta: int, content: int) -> bool:
    """Whether a table holding ``stored`` rows is rewritten consolidated (``content`` rows after
    the change) rather than the ``delta`` rows of its change appended."""
    return stored + delta > FOLD * content


def content_arrow(merged: Collection[str], read: Callable[[str], pa.Table]) -> Callable[[str], pa.Table]:
    """``read`` (a table's rows as Arrow) with the tables of ``merged`` consolidated: what the
    delta rules must see of a merge-on-read table."""
    def arrow(name: str) -> pa.Table:
        rows = read(name)
        return consolidate(rows, [c for c in rows.column_names if c != MULT]).cast(rows.schema) if name in merged else rows
    return arrow


def row_keys(rows: pa.Table) -> pa.Array:
    """One string per row naming its values in the data columns, unbound values included (a null
    is the empty string, which no term and no number is; terms never hold a newline, N-Triples
    escapes it): two rows share a key exactly when a null-safe equality of those columns holds."""
    columns = data_columns(rows)
    if not columns:
        return pa.repeat(pa.scalar("", pa.string()), rows.num_rows)
    parts = [pc.cast(rows[c], pa.string()) for c in columns]
    if len(parts) == 1:
        keys = pc.fill_null(parts[0], "")
    else:
        keys = pc.binary_join_element_wise(*parts, "\n", null_handling="replace", null_replacement="")
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys


def consolidated(delta: pa.Table) -> tuple[pa.Table, pa.Array]:
    """``delta`` consolidated, with its rows' :func:`row_keys`. A change comes consolidated from
    the engine (a view's net change, a path step's rows of distinct nodes): it is summed only when
    two rows share a key or one has no multiplicity, which the distinct keys tell (a group-by over
    a path's six reach columns cost more than the rest of taking its change; Arrow's ``unique``
    takes half the time of its ``count_distinct``, an aggregation)."""
    keys = row_keys(delta)
    if len(pc.unique(keys)) == len(keys) and pc.all(pc.not_equal(delta[MULT], 0)).as_py():
        return delta, keys
    delta = consolidate(delta, data_columns(delta)).select(delta.column_names).cast(delta.schema)
    return delta, row_keys(delta)
