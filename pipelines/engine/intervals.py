"""Every window of a batch in one pass: Z-sets whose rows hold over a run of windows.

A batch emits windows 0..n-1 (their index in the batch) for a windowed query. Stepping the engine
once per window pays every Arrow call, every scan of a view and every consolidation of a state
table n times, whatever little each window changes. Here a row of a Z-set carries ``[_lo, _hi)``,
the windows it holds over, and the Z-set at window k is the sum of the rows with ``_lo <= k <
_hi``. Relative to the state as the batch started (window -1), a view's change is such a Z-set:
a key that enters at window 3 and leaves at 7 is +1 over [3, 7). The delta rules of
:mod:`pipelines.engine.bgp` run on it unchanged, on :class:`IntervalZSets`: a join multiplies
indicator functions, so it intersects the intervals; a sum, a projection and a FILTER act per row.
Their answer change is then the change at every window k relative to the batch's start, and the
change from window k-1 to k (the IStream and DStream) is +m at ``_lo`` and -m at ``_hi`` for each
row (:func:`window_changes`); the state after the batch is what holds at window n-1
(:func:`last_window`). So a batch of n windows costs one scan of each view instead of n.

Only the DISTINCT (and ASK) support needs the windows in order, per binding: the count at each
window is a running sum over its changes (:meth:`IntervalZSets.support_delta`). Aggregates are
stepped window by window instead (:mod:`pipelines.engine.windowed`).
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.conditions import Condition
from views.plan import ViewDef

from .arrow import _KEY, ArrowZSets, _with_key, consolidate
from .views import _PAD, same_as_previous, view_schema

Key = TypeVar("Key")
LO, HI = "_lo", "_hi"
WINDOW = "window"
_SPECIAL = (MULT, LO, HI)


def _data_columns(frame: pa.Table) -> list[str]:
    return [c for c in frame.column_names if c not in _SPECIAL]


def _int64(values: np.ndarray) -> pa.Array:
    return pa.array(values, pa.int64())


def with_intervals(schema: pa.Schema) -> pa.Schema:
    """A Z-set schema with the interval columns before the multiplicity."""
    fields = [f for f in schema if f.name != MULT]
    return pa.schema(fields + [pa.field(LO, pa.int64(), nullable=False), pa.field(HI, pa.int64(), nullable=False),
                               pa.field(MULT, pa.int64(), nullable=False)])


def _group_starts(same: np.ndarray) -> np.ndarray:
    """For rows in runs (``same``: continues the run before), the index of each row's run start."""
    idx = np.arange(len(same))
    return np.maximum.accumulate(np.where(same, 0, idx)) if len(same) else idx


def _next_in_run(values: np.ndarray, same: np.ndarray, end: int) -> np.ndarray:
    """Each row's next row's ``values`` within its run, ``end`` for the last row of a run."""
    nxt = np.full(len(values), end, dtype=np.int64)
    if len(values) > 1:
        nxt[:-1] = np.where(same[1:], values[1:], end)
    return nxt


def view_intervals(probed: pa.Table, views: Sequence[ViewDef], windows: np.ndarray, n: int) -> dict[str, pa.Table]:
    """Each view's change over a batch of ``n`` windows, as interval rows, from a probe of the
    batch's messages (:func:`pipelines.engine.views.probe_arrow`; ``windows[seq]`` is the window
    of message ``seq``). Per key, in window and ``seq`` order, the last message of a window says
    whether the key is present at it; the runs of windows where that differs from the presence
    before the batch are the key's intervals (+1 for a key that was absent, -1 for one present)."""
    keys = ["_view", *_PAD]
    is_probe = pc.is_null(probed["seq"])
    present = probed.filter(is_probe).select(keys)
    present = present.append_column("_present", pa.repeat(True, present.num_rows))
    hits = probed.filter(pc.invert(is_probe)).join(present, keys=keys, join_type="left outer", use_threads=False)
    hits = hits.sort_by([(k, "ascending") for k in keys] + [("seq", "ascending")])
    window = windows[hits["seq"].to_numpy()]
    was = pc.fill_null(hits["_present"], False).to_numpy(zero_copy_only=False)
    state = pc.equal(hits["op"], "insert").to_numpy(zero_copy_only=False)
    same = same_as_previous(hits, keys)
    group = np.cumsum(~same)
    last = np.ones(len(window), dtype=bool)                 # the last message of its key and window
    last[:-1] = ~(same[1:] & (window[1:] == window[:-1]))
    rows = np.flatnonzero(last)
    kept_same = np.zeros(len(rows), dtype=bool)
    kept_same[1:] = group[rows[1:]] == group[rows[:-1]]
    before = np.where(kept_same, np.roll(state[rows], 1), was[rows])
    flips = rows[state[rows] != before]
    flip_same = np.zeros(len(flips), dtype=bool)
    flip_same[1:] = group[flips[1:]] == group[flips[:-1]]
    rank = np.arange(len(flips)) - _group_starts(flip_same)
    ends = _next_in_run(window[flips], flip_same, n)
    starts = rank % 2 == 0
    chosen = flips[starts]
    table = hits.take(pa.array(chosen, pa.int64())).select(keys)
    table = table.append_column(LO, _int64(window[chosen])).append_column(HI, _int64(ends[starts]))
    table = table.append_column(MULT, _int64(np.where(was[chosen], -1, 1)))
    out = {}
    for view in views:
        mine = table.filter(pc.equal(table["_view"], view.id))
        out[view.id] = pa.table([mine[_PAD[i]] for i in range(len(view.columns))] + [mine[LO], mine[HI], mine[MULT]],
                                schema=with_intervals(view_schema(view)))
    return out


def window_changes(frame: pa.Table, columns: Sequence[str], n: int) -> pa.Table:
    """The change from each window to the next (``window`` k: from k-1 to k, the first from the
    batch's start) of an interval Z-set over ``n`` windows: ``columns``, ``window``, multiplicity,
    in window order."""
    data = frame.select(list(columns))
    ending = pc.less(frame[HI], n)
    rows = pa.concat_tables([data.append_column(WINDOW, frame[LO]).append_column(MULT, frame[MULT]),
                             data.filter(ending).append_column(WINDOW, frame[HI].filter(ending))
                             .append_column(MULT, pc.negate(frame[MULT].filter(ending)))])
    return consolidate(rows, [*columns, WINDOW]).sort_by([(WINDOW, "ascending")])


def last_window(frame: pa.Table, columns: Sequence[str], n: int) -> pa.Table:
    """An interval Z-set over ``n`` windows at its last window (consolidated, no intervals)."""
    return consolidate(frame.filter(pc.equal(frame[HI], n)).select([*columns, MULT]), columns)


def at_window(frame: pa.Table, columns: Sequence[str], k: int) -> pa.Table:
    """An interval Z-set at window ``k`` (consolidated, no intervals)."""
    held = pc.and_(pc.less_equal(frame[LO], k), pc.greater(frame[HI], k))
    return consolidate(frame.filter(held).select([*columns, MULT]), columns)


class IntervalZSets(ArrowZSets):
    """:class:`pipelines.engine.zsets.ZSetEngine` on Arrow tables of interval rows over ``windows``
    windows (the Arrow engine's sums, semi-joins and FILTERs act on them row by row as they are);
    ``read`` gives a state table as the batch started (it holds over every window until the
    batch's changes say otherwise), ``where`` evaluates a FILTER over an Arrow table."""

    name = "intervals"

    def __init__(self, read: Callable[[str], pa.Table], where: Callable[[pa.Table, Condition], pa.Table],
                 windows: int) -> None:
        super().__init__(read, where)
        self.windows = windows

    def _everywhere(self, table: pa.Table) -> pa.Table:
        n = table.num_rows
        columns = _data_columns(table)
        return pa.table([table[c] for c in columns] + [pa.repeat(pa.scalar(0, pa.int64()), n),
                                                       pa.repeat(pa.scalar(self.windows, pa.int64()), n), table[MULT]],
                        names=[*columns, LO, HI, MULT])

    def read(self, table: str) -> pa.Table:
        return self._tables.get(table, lambda: self._everywhere(self._read(table)))

    def from_arrow(self, table: pa.Table) -> pa.Table:
        return table if LO in table.column_names else self._everywhere(table)

    def size(self, frame: pa.Table) -> None:
        return None     # rows over windows: a backfill's joins keep their planned order

    def rename(self, frame: pa.Table, pairs: Sequence[tuple[str, str]]) -> pa.Table:
        return pa.table([frame[old] for old, _ in pairs] + [frame[LO], frame[HI], frame[MULT]],
                        names=[new for _, new in pairs] + [LO, HI, MULT])

    def join(self, left: pa.Table, right: pa.Table) -> pa.Table:
        shared = [c for c in _data_columns(left) if c in set(_data_columns(right))]
        columns = _data_columns(left) + [c for c in _data_columns(right) if c not in shared]
        if left.num_rows == 0 or right.num_rows == 0:
            fields = [left.schema.field(c) if c in left.column_names else right.schema.field(c) for c in columns]
            return with_intervals(pa.schema(fields)).empty_table()
        a = left.rename_columns([f"{c}_left" if c in _SPECIAL else c for c in left.column_names])
        b = right.rename_columns([f"{c}_right" if c in _SPECIAL else c for c in right.column_names])
        if not shared:
            a, b, shared = _with_key(a), _with_key(b), [_KEY]
        probe, build = (a, b) if a.num_rows >= b.num_rows else (b, a)    # Acero builds on the right
        joined = probe.join(build, keys=shared, join_type="inner", use_threads=False)
        lo = pc.max_element_wise(joined[f"{LO}_left"], joined[f"{LO}_right"])
        hi = pc.min_element_wise(joined[f"{HI}_left"], joined[f"{HI}_right"])
        mult = pc.multiply(joined[f"{MULT}_left"], joined[f"{MULT}_right"])
        out = pa.table([joined[c] for c in columns] + [lo, hi, mult], names=[*columns, LO, HI, MULT])
        return out.filter(pc.less(lo, hi))

    def consolidate(self, frame: pa.Table, columns: Sequence[str]) -> pa.Table:
        return consolidate(frame, [*columns, LO, HI])

    def support_delta(self, bag_delta: pa.Table, bag_old: pa.Table, columns: Sequence[str]) -> pa.Table:
        """The support's change at each window: per binding, its count at window k is its count
        before the batch plus the running sum of its changes up to k (in window order)."""
        columns = list(columns)
        changes = window_changes(bag_delta, columns, self.windows)
        old = bag_old.select([*columns, MULT]).rename_columns([*columns, "_old"])
        if not columns:
            changes, old = _with_key(changes), _with_key(old)
        keys = columns or [_KEY]
        joined = changes.join(old, keys=keys, join_type="left outer", use_threads=False)
        joined = joined.sort_by([(c, "ascending") for c in keys] + [(WINDOW, "ascending")])
        same = same_as_previous(joined, keys)
        step = joined[MULT].to_numpy()
        total = np.cumsum(step)
        starts = _group_starts(same)
        count = total - (total[starts] - step[starts]) if len(step) else step
        before = pc.fill_null(joined["_old"], 0).to_numpy()
        support = (before + count > 0).astype(np.int64) - (before > 0).astype(np.int64)
        window = joined[WINDOW].to_numpy()
        ends = _next_in_run(window, same, self.windows)
        keep = pa.array(support != 0)
        return pa.table([joined[c].filter(keep) for c in columns]
                        + [_int64(window).filter(keep), _int64(ends).filter(keep), _int64(support).filter(keep)],
                        names=[*columns, LO, HI, MULT])

    def collect(self, outputs: Mapping[Key, pa.Table], schemas: Mapping[Key, pa.Schema]) -> dict[Key, pa.Table]:
        out = {}
        for key, schema in schemas.items():
            timed = with_intervals(schema)
            out[key] = outputs[key].select(timed.names).cast(timed) if key in outputs else timed.empty_table()
        return out
