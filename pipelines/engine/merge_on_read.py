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
SQL users.
"""
from __future__ import annotations

from typing import Callable, Collection

import pyarrow as pa

from schemas.tables import MULT

from .arrow import consolidate

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
