"""The window operator: a windowed query's graph as one more source of Z-set changes.

A windowed query (``FROM STREAM`` windows, ``FROM`` background graphs) sees, at each window, the
set union of every stream's window content and every background graph. Between two windows the
only triples whose presence in that graph can change are those with a message entering or leaving
a stream's extent (:meth:`views.windows.Clock.slide`), plus, at the first window of a batch, those
the batch's background messages touch. For each such triple the operator decides its presence in
the new window and emits one message, insert or delete; the view maintenance and delta rules of the
whole-graph engine then give the answer changes, which are the window's IStream and DStream. So a
slide costs what enters and leaves, never the window (SPECTRA's incremental eviction).

A triple is in a stream's window when its last message there (by position, then ``seq``) is an
insert; count windows hold inserts only. The operator is pure Arrow over three state tables read at
the batch's start (:data:`schemas.tables.WINDOW_BUFFER`, ``WINDOW_BACKGROUND``,
``WINDOW_PROGRESS``), so a re-run after a crash computes the very same windows.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import cache
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as S
from schemas.tables import MULT
from views.windows import Clock

from ..sorted_sets import distinct

TRIPLE = ["s", "p", "o"]
_NO_TRIPLES = pa.schema([(c, pa.string()) for c in TRIPLE])
#: The shape of the messages the operator emits (what view maintenance reads): ``window`` the index,
#: among the batch's windows, of the window the message moves the graph to; ``t`` is the triple's
#: ``timestamp()`` in that window (a delete's: in the window it leaves), '' when the triple is in no
#: stream's window (background graphs only) or the query asks for no timestamp.
MESSAGES = pa.schema([("window", pa.int64()), ("seq", pa.int64()), ("op", pa.string()), ("s", pa.string()), ("p", pa.string()),
                      ("o", pa.string()), ("t", pa.string())])
_XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"


@dataclass(frozen=True)
class Progress:
    """A windowed query's progress after a batch (one row of its progress table)."""

    batch: int = 0
    max_time_ms: int | None = None
    min_time_ms: int | None = None
    inserts: int = 0
    window: int = 0
    last_close: int | None = None
    late: int = 0
    answers: int = 0

    @classmethod
    def last(cls, table: pa.Table) -> "Progress":
        """The latest row of a progress table (the start for a query that never ran)."""
        if table.num_rows == 0:
            return cls()
        row = max(table.select(S.WINDOW_PROGRESS.names).to_pylist(), key=lambda r: r["batch"])
        return cls(**row)

    def table(self) -> pa.Table:
        return pa.Table.from_pylist([asdict(self)], schema=S.WINDOW_PROGRESS)


@dataclass(frozen=True)
class Emission:
    """One window to emit: its number (None for a query with background graphs only, which follows
    every batch), its bounds in epoch ms, and the messages that turn the previous window's graph
    into this one's."""

    number: int | None
    open_ms: int | None
    close_ms: int | None
    messages: pa.Table


@dataclass(frozen=True)
class WindowStep:
    """What a batch does to a windowed query: the windows it emits, in order, the messages of them
    all (:data:`MESSAGES`), its buffer after the batch (None when unchanged: a table written whole
    costs less than a MERGE of its change) and the signed change of its background table."""

    emissions: list[Emission]
    messages: pa.Table
    buffer: pa.Table | None
    background: pa.Table
    progress: Progress
    late: int


def _concat(tables: Sequence[pa.Table]) -> pa.Table:
    """Tables of one shape whose fields may differ in nullability (Arrow's kernels drop it)."""
    return pa.concat_tables(tables, promote_options="permissive")


def _on(messages: pa.Table, iris: Sequence[str]) -> pa.Table:
    if not iris:
        return messages.slice(0, 0)
    return messages.filter(pc.is_in(messages["stream"], pa.array(list(iris), pa.string())))


def _buffer_rows(messages: pa.Table, pos: pa.Array | np.ndarray) -> pa.Table:
    n = messages.num_rows
    return pa.table({"seq": messages["seq"], "stream": messages["stream"], "pos": pa.array(pos, pa.int64()),
                     "time_ms": messages["time_ms"], "op": messages["op"], "s": messages["s"],
                     "p": messages["p"], "o": messages["o"], MULT: pa.repeat(pa.scalar(1, pa.int64()), n)},
                    schema=S.WINDOW_BUFFER)


def _distinct(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    return table.select(list(keys)).group_by(list(keys), use_threads=False).aggregate([])


def _last_op(rows: pa.Table, keys: Sequence[str], order: Sequence[str]) -> pa.Table:
    """Per ``keys``, the op of the last row in ``order``."""
    ordered = rows.sort_by([(c, "ascending") for c in order])
    last = ordered.group_by(list(keys), use_threads=False).aggregate([("op", "last")])
    return last.rename_columns([*keys, "op"])


def _apply_background(stored: pa.Table, pending: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The background graphs after ``pending`` messages (last message per graph and triple by
    ``seq`` decides), and the signed change of the background table."""
    stored = stored.select(["graph", *TRIPLE])
    last = _last_op(pending.rename_columns(["graph" if c == "stream" else c for c in pending.column_names]),
                    ["graph", *TRIPLE], ["seq"])
    marked = stored.append_column("_was", pa.repeat(True, stored.num_rows))
    joined = last.join(marked, keys=["graph", *TRIPLE], join_type="left outer")
    was = pc.fill_null(joined["_was"], False)
    is_insert = pc.equal(joined["op"], "insert")
    mult = pc.subtract(pc.cast(is_insert, pa.int64()), pc.cast(was, pa.int64()))
    delta = joined.select(["graph", *TRIPLE]).append_column(MULT, mult)
    delta = delta.filter(pc.not_equal(delta[MULT], 0)).cast(S.WINDOW_BACKGROUND)
    gone = delta.filter(pc.less(delta[MULT], 0)).select(["graph", *TRIPLE])
    after = _concat([stored.join(gone, keys=["graph", *TRIPLE], join_type="left anti").select(["graph", *TRIPLE]),
                     delta.filter(pc.greater(delta[MULT], 0)).select(["graph", *TRIPLE])])
    return after, delta


class _Positions:
    """One stream's buffered messages sorted by position, for range lookups."""

    def __init__(self, rows: pa.Table) -> None:
        pos, seq = rows["pos"].to_numpy(), rows["seq"].to_numpy()
        ordered = bool(np.all((pos[1:] > pos[:-1]) | ((pos[1:] == pos[:-1]) & (seq[1:] > seq[:-1]))))
        self.rows = rows if ordered else rows.sort_by([("pos", "ascending"), ("seq", "ascending")])
        self.pos = pos if ordered else self.rows["pos"].to_numpy()

    def between(self, lo: int, hi: int) -> pa.Table:
        i, j = np.searchsorted(self.pos, [lo, hi], side="left")
        return self.rows.slice(int(i), int(j - i))

    def spans(self, windows: Sequence[int], los: Sequence[int], his: Sequence[int]) -> pa.Table:
        """The rows in each window's span ``[lo, hi)``, each with that ``window``: one take for
        every window of a batch (a row in several spans comes once per span)."""
        i = np.searchsorted(self.pos, np.asarray(los, dtype=np.int64), side="left")
        j = np.searchsorted(self.pos, np.asarray(his, dtype=np.int64), side="left")
        counts = np.maximum(j - i, 0)
        starts = np.repeat(i - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
        rows = self.rows.take(pa.array(starts + np.arange(counts.sum(), dtype=np.int64)))
        return rows.append_column("window", pa.array(np.repeat(np.asarray(windows, dtype=np.int64), counts)))


def live_buffer(clock: Clock | None, progress: Progress, stored: pa.Table) -> pa.Table:
    """The rows of a stored buffer that a window may still read: of each stream, those at or after
    the start of the last emitted window's extent. A buffer written append-only (a query without
    background graphs: :func:`pipelines.engine.windowed.run_windowed`) also holds the expired rows
    of earlier batches until it is rewritten; this is what a rewrite would keep."""
    if clock is None or progress.last_close is None or stored.num_rows == 0:
        return stored
    extents = clock.extents(progress.last_close)
    kept = [_Positions(stored.filter(pc.equal(stored["stream"], s))).between(extents[s][0], np.iinfo(np.int64).max)
            for s in clock.streams]
    return _concat(kept + [S.WINDOW_BUFFER.empty_table()]).cast(S.WINDOW_BUFFER)


def _windowed(table: pa.Table, window: int) -> pa.Table:
    return table.append_column("window", pa.repeat(pa.scalar(window, pa.int64()), table.num_rows))


def _extent_rows(pairs: pa.Table, by_stream: dict[str, _Positions], ranges: Sequence[tuple[str, int]],
                 closes: np.ndarray) -> pa.Table:
    """Each (``window``, triple) pair's messages inside its window's extent on every stream, where
    ``closes[window]`` is the close the pair is judged at (-1: no window, hence no extent)."""
    columns = ["stream", "pos", "seq", "op", "time_ms", *TRIPLE]
    parts = [_windowed(S.WINDOW_BUFFER.empty_table().select(columns), 0)]
    subjects = pc.unique(pairs["s"])
    for stream, length in ranges:
        # one pass over the buffer on one column (a hash set of the candidates' subjects), then a
        # join of the few rows left: the buffer holds the whole window, the candidates a slide
        rows = by_stream[stream].rows.select(columns)
        rows = rows.filter(pc.is_in(rows["s"], value_set=subjects))
        joined = rows.join(pairs, keys=TRIPLE, join_type="inner", use_threads=False)
        close = closes[joined["window"].to_numpy()]
        pos = joined["pos"].to_numpy()
        parts.append(joined.filter(pa.array((close >= 0) & (pos >= close - length) & (pos < close))))
    return _concat([p.select([*columns, "window"]) for p in parts])


def _present(rows: pa.Table, backed: pa.Table) -> pa.Table:
    """The (``window``, triple) pairs in their window's graph: on some stream whose last message
    in the extent (``rows``; by position, then ``seq``) is an insert, or in a background graph
    (``backed``)."""
    last = _last_op(rows, ["window", "stream", *TRIPLE], ["pos", "seq"])
    on_streams = last.filter(pc.equal(last["op"], "insert")).select(["window", *TRIPLE])
    return _distinct(_concat([on_streams, backed.select(["window", *TRIPLE])]),
                     ["window", *TRIPLE])


def _stamped(rows: pa.Table, backed: pa.Table) -> pa.Table:
    """:func:`_present` with ``t``: the latest event time of the triple's inserts in the extents
    where it is present, as an xsd:integer term ('' when it is in no stream's extent)."""
    keys = ["window", "stream", *TRIPLE]
    last = _last_op(rows, keys, ["pos", "seq"])
    on_streams = last.filter(pc.equal(last["op"], "insert")).select(keys)
    inserts = rows.filter(pc.equal(rows["op"], "insert"))
    latest = inserts.group_by(keys, use_threads=False).aggregate([("time_ms", "max")])
    stamped = (on_streams.join(latest, keys=keys)
               .group_by(["window", *TRIPLE], use_threads=False).aggregate([("time_ms_max", "max")]))
    terms = pc.binary_join_element_wise('"', pc.cast(stamped["time_ms_max_max"], pa.string()),
                                        f'"^^<{_XSD_INTEGER}>', "")
    stamped = stamped.select(["window", *TRIPLE]).append_column("t", terms)
    backed = backed.select(["window", *TRIPLE]).join(stamped.select(["window", *TRIPLE]), keys=["window", *TRIPLE], join_type="left anti")
    return _concat([stamped, backed.append_column("t", pa.repeat(pa.scalar("", pa.string()), backed.num_rows))])


def _numbered(rows: pa.Table) -> pa.Table:
    """Messages (``window``, ``op``, triple, ``t``) in window order with ``seq`` numbering them."""
    seq = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    return pa.table([rows["window"], seq, rows["op"], rows["s"], rows["p"], rows["o"], rows["t"]],
                    schema=MESSAGES)


def _messages(pairs: pa.Table, present: pa.Table) -> pa.Table:
    """One message per (``window``, triple) pair: insert when the triple is in that window's
    graph, else delete (``t`` left '': the query asks for no timestamp, so none is computed)."""
    keys = ["window", *TRIPLE]
    marked = pairs.join(present.append_column("_in", pa.repeat(True, present.num_rows)), keys=keys,
                        join_type="left outer", use_threads=False).sort_by([("window", "ascending")])
    op = pc.if_else(pc.fill_null(marked["_in"], False), "insert", "delete")
    blank = pa.repeat(pa.scalar("", pa.string()), marked.num_rows)
    return _numbered(marked.select(keys).append_column("op", op).append_column("t", blank))


def _stamped_messages(before: pa.Table, after: pa.Table) -> pa.Table:
    """Messages for a query that reads ``timestamp()``: a triple whose time changes is deleted with
    its old time and inserted with its new one (to a view without a time column, a no-op pair), so
    in each window every delete (``before`` the slide) precedes every insert (``after`` it)."""
    gone = before.join(after, keys=["window", *TRIPLE, "t"], join_type="left anti")
    rows = _concat([gone.append_column("op", pa.repeat(pa.scalar("delete", pa.string()), gone.num_rows)),
                    after.append_column("op", pa.repeat(pa.scalar("insert", pa.string()), after.num_rows))])
    rank = pc.equal(rows["op"], "insert")
    return _numbered(rows.append_column("_rank", rank).sort_by([("window", "ascending"), ("_rank", "ascending")]))


def _candidates(clock: Clock | None, by_stream: dict[str, _Positions], closes: list[int], previous: int | None,
                pending: pa.Table) -> pa.Table:
    """The (``window``, triple) pairs whose presence may change at each window of the batch (its
    index among ``closes``): the triples with a message entering or leaving a stream's extent
    since the window before, and at the first window those the background messages touch."""
    keys = ["window", *TRIPLE]
    parts = [_NO_TRIPLES.empty_table().append_column("window", pa.array([], pa.int64())).select(keys)]
    if closes and pending.num_rows:
        parts.append(_windowed(pending.select(TRIPLE), 0).select(keys))
    spans: dict[str, list[tuple[int, int, int]]] = {}
    for k, close in enumerate(closes if clock is not None else ()):
        for stream, intervals in clock.slide(previous, close).items():
            spans.setdefault(stream, []).extend((k, lo, hi) for lo, hi in intervals)
        previous = close
    for stream, rows in spans.items():
        parts.append(by_stream[stream].spans(*zip(*rows)).select(keys))
    return _distinct(_concat(parts), keys)


def _in_graph(pairs: pa.Table, graph: pa.Table) -> pa.Table:
    """The (``window``, triple) pairs whose triple is in ``graph`` (background graphs)."""
    return pairs.join(graph.select(TRIPLE), keys=TRIPLE, join_type="left semi", use_threads=False)


def _matching(rows: pa.Table, patterns: Sequence[tuple[str | None, str | None, str | None]]) -> pa.Array | None:
    """Which rows' triples match one of ``patterns`` (constants at s, p, o; None a variable), None
    when every triple may match."""
    mask = None
    for pattern in dict.fromkeys(patterns):
        conds = [pc.equal(rows[c], v) for c, v in zip(TRIPLE, pattern) if v is not None]
        if not conds:
            return None
        both = conds[0]
        for cond in conds[1:]:
            both = pc.and_(both, cond)
        mask = both if mask is None else pc.or_(mask, both)
    return mask


def window_step(clock: Clock | None, graphs: Sequence[str], progress: Progress, buffer: pa.Table,
                background: Callable[[], pa.Table], messages: pa.Table, batch: int,
                flush: bool = False, stamps: bool = False,
                patterns: Sequence[tuple[str | None, str | None, str | None]] = ()) -> WindowStep:
    """The windows batch ``batch`` emits for one query and its state changes.

    ``messages`` are the batch's bronze rows (``seq``, ``time_ms``, ``op``, ``s``, ``p``, ``o``,
    ``stream``) in ``seq`` order; ``buffer``, ``background`` (read only when a background message
    is to be applied) and ``progress`` the query's state at the batch's start; ``clock`` None for a
    query with background graphs only; ``stamps`` whether the query reads ``timestamp()`` (its
    messages then carry times, which costs the previous window's graph of the candidates too).
    ``patterns`` are the constants of the query's triple patterns (its views): a time window
    buffers only the stream messages whose triple matches one (SPECTRA's pruning: no other triple
    can change an answer), once they are counted (late, event times). Count and ``[NOW]`` windows
    keep every message: each one moves their positions or makes a window.

    All the batch's windows are computed together: each message carries the ``window`` (0, 1, ...
    among those the batch emits) it moves the query's graph to, every window's in one table
    (:attr:`WindowStep.messages`), in window order.
    """
    streams = clock.streams if clock else ()
    background = cache(background) if graphs else (lambda: S.WINDOW_BACKGROUND.empty_table())
    on_streams, on_graphs = _on(messages, streams), _on(messages, graphs)
    late = 0
    inserts = progress.inserts
    if clock is not None and clock.kind == "count":
        on_streams = on_streams.filter(pc.equal(on_streams["op"], "insert"))    # deletes do not apply
        pos = np.arange(inserts + 1, inserts + 1 + on_streams.num_rows, dtype=np.int64)
        inserts += on_streams.num_rows
    else:
        below = clock.late_below(progress.max_time_ms, progress.last_close) if clock else None
        if below is not None and on_streams.num_rows:
            keep = pc.greater_equal(on_streams["time_ms"], below)
            late = on_streams.num_rows - pc.sum(keep).as_py()
            on_streams = on_streams.filter(keep)
        pos = on_streams["time_ms"]
    max_time, min_time = progress.max_time_ms, progress.min_time_ms
    if on_streams.num_rows:
        bounds = pc.min_max(on_streams["time_ms"]).as_py()
        max_time = bounds["max"] if max_time is None else max(max_time, bounds["max"])
        min_time = bounds["min"] if min_time is None else min(min_time, bounds["min"])
    if clock is not None and clock.kind == "time" and on_streams.num_rows:
        mask = _matching(on_streams, patterns)
        on_streams = on_streams if mask is None else on_streams.filter(mask)
        pos = on_streams["time_ms"]
    new = _concat([_buffer_rows(on_streams, pos), _buffer_rows(on_graphs, on_graphs["seq"])])
    rows = _concat([buffer.select(S.WINDOW_BUFFER.names).cast(S.WINDOW_BUFFER), new])

    by_stream = {s: _Positions(rows if streams == (s,) and not graphs else rows.filter(pc.equal(rows["stream"], s)))
                 for s in streams}
    pending = _on(rows, graphs)
    closes: list[int] = []
    if clock is not None:
        limit = clock.limit(max_time, inserts, flush)
        times = distinct(np.concatenate([p.pos for p in by_stream.values()])) if clock.kind == "now" else ()
        closes = [] if limit is None else clock.closes(progress.last_close, min_time, limit, times)
    elif pending.num_rows:
        closes = [0]                    # a query over background graphs alone follows every batch

    bg_now, bg_delta = None, S.WINDOW_BACKGROUND.empty_table()
    if closes and pending.num_rows:
        bg_now, bg_delta = _apply_background(background(), pending)
    bg_after = background() if bg_now is None else bg_now
    pairs = _candidates(clock, by_stream, closes, progress.last_close, pending)
    ranges = clock.ranges if clock else ()
    at = np.asarray(closes if clock else [-1] * len(closes), dtype=np.int64)
    in_window = _extent_rows(pairs, by_stream, ranges, at)
    if stamps and pairs.num_rows:
        previous = [-1 if progress.last_close is None else progress.last_close] + closes[:-1]
        in_before = _extent_rows(pairs, by_stream, ranges, np.asarray(previous, dtype=np.int64))
        first = pc.equal(pairs["window"], 0)
        backed_before = _concat([_in_graph(pairs.filter(first), background()),
                                 _in_graph(pairs.filter(pc.invert(first)), bg_after)])
        msgs = _stamped_messages(_stamped(in_before, backed_before), _stamped(in_window, _in_graph(pairs, bg_after)))
    else:
        msgs = _messages(pairs, _present(in_window, _in_graph(pairs, bg_after)))
    ends = np.searchsorted(msgs["window"].to_numpy(), np.arange(len(closes) + 1), side="left")
    emissions = []
    for k, close in enumerate(closes):
        mine = msgs.slice(int(ends[k]), int(ends[k + 1] - ends[k]))
        if clock is None:
            emissions.append(Emission(None, None, None, mine))
        else:
            emissions.append(Emission(progress.window + k + 1, *_bounds(clock, close, by_stream), mine))

    last_close = closes[-1] if clock is not None and closes else progress.last_close
    kept = []
    for s, positions in by_stream.items():
        lo = clock.extents(last_close)[s][0] if last_close is not None else None
        kept.append(positions.rows if lo is None else positions.between(lo, np.iinfo(np.int64).max))
    if not closes:
        kept.append(pending)            # background messages wait for the next window
    after = _concat(kept + [S.WINDOW_BUFFER.empty_table()]).cast(S.WINDOW_BUFFER)
    unchanged = after.num_rows == buffer.num_rows and pc.all(pc.is_in(after["seq"], buffer["seq"]), min_count=0).as_py()
    new_progress = replace(progress, batch=batch, max_time_ms=max_time, min_time_ms=min_time, inserts=inserts,
                           window=progress.window + (len(closes) if clock is not None else 0),
                           last_close=last_close, late=progress.late + late)
    return WindowStep(emissions, msgs, None if unchanged else after, bg_delta, new_progress, late)


def _bounds(clock: Clock, close: int, by_stream: dict[str, _Positions]) -> tuple[int, int]:
    """A window's open and close in epoch ms: its extent for time and ``[NOW]`` windows; the event
    times of its first insert and of its last insert + 1 ms (in stream order) for a count window."""
    if clock.kind != "count":
        return close - clock.longest, close
    (stream, (lo, hi)), = clock.extents(close).items()     # the one count-windowed stream
    times = by_stream[stream].between(lo, hi)["time_ms"]
    return times[0].as_py(), times[-1].as_py() + 1
