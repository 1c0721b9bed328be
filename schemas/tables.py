"""Arrow schemas of the lake's fixed tables.

Every table is created from one of these schemas so that delta-rs and Spark agree on the
column types (timestamps are UTC microseconds; terms are N-Triples strings). The per-query
tables (views, partial embeddings, gold) get their schemas from the query plan; their
metadata columns are named here so that no other module spells them.
"""
from __future__ import annotations

from datetime import timezone

import pyarrow as pa

UTC_TS = pa.timestamp("us", tz="UTC")

#: Columns reserved for lakegraph metadata in per-query tables; variables may not use them.
MULT = "_mult"          # multiplicity of a binding (a Z-set weight in state tables)
BATCH = "_batch"
SIGN = "_sign"
COUNT = "_count"
QUERY = "_query"
BRONZE_FROM = "_bronze_from"
BRONZE_TO = "_bronze_to"
WINDOW = "_window"      # the window an answer change of a windowed query belongs to
CLOSE_MS = "_close_ms"  # that window's close, epoch milliseconds
RESERVED_COLUMNS = frozenset({MULT, BATCH, SIGN, COUNT, QUERY, BRONZE_FROM, BRONZE_TO, WINDOW, CLOSE_MS})

DEFAULT_STREAM = "urn:lakegraph:stream:default"

BRONZE = pa.schema([
    pa.field("seq", pa.int64(), nullable=False),
    pa.field("event_id", pa.string(), nullable=False),
    pa.field("event_time", UTC_TS, nullable=False),
    pa.field("op", pa.string(), nullable=False),
    pa.field("s", pa.string(), nullable=False),
    pa.field("p", pa.string(), nullable=False),
    pa.field("o", pa.string(), nullable=False),
    pa.field("stream", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("ingest_id", pa.int64(), nullable=False),
])

QUARANTINE = pa.schema([
    pa.field("ingest_id", pa.int64(), nullable=False),
    pa.field("file", pa.string(), nullable=False),
    pa.field("line", pa.int64(), nullable=False),
    pa.field("raw", pa.string(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("quarantined_at", UTC_TS, nullable=False),
])

INGEST_LOG = pa.schema([
    pa.field("ingest_id", pa.int64(), nullable=False),
    pa.field("path", pa.string(), nullable=False),
    pa.field("sha256", pa.string(), nullable=False),
    pa.field("format", pa.string(), nullable=False),
    pa.field("lines", pa.int64(), nullable=False),
    pa.field("ingested", pa.int64(), nullable=False),
    pa.field("quarantined", pa.int64(), nullable=False),
    pa.field("first_seq", pa.int64(), nullable=True),
    pa.field("last_seq", pa.int64(), nullable=True),
    pa.field("ingested_at", UTC_TS, nullable=False),
])

#: Registered queries: one row per active registration (unregistering deletes the row).
QUERIES = pa.schema([
    pa.field("name", pa.string(), nullable=False),
    pa.field("text", pa.string(), nullable=False),
    pa.field("plan", pa.string(), nullable=False),          # JSON of the compiled plan
    pa.field("registered_batch", pa.int64(), nullable=False),
    pa.field("registered_at", UTC_TS, nullable=False),
])

#: The micro-batch log: a `planned` row is written before any state table changes, a `done`
#: row after the last one. A re-run finishes a planned batch reading state at the recorded versions.
BATCHES = pa.schema([
    pa.field("batch", pa.int64(), nullable=False),
    pa.field("status", pa.string(), nullable=False),        # planned | done
    pa.field("bronze_from", pa.int64(), nullable=False),    # first bronze version read (inclusive)
    pa.field("bronze_to", pa.int64(), nullable=False),      # last bronze version read (inclusive)
    pa.field("seq_from", pa.int64(), nullable=False),       # last seq of the previous batch (exclusive)
    pa.field("seq_to", pa.int64(), nullable=False),         # last seq of this batch (inclusive)
    pa.field("versions", pa.string(), nullable=False),      # JSON {table: version} (before for planned, after for done)
    pa.field("stats", pa.string(), nullable=False),         # JSON counters
    pa.field("logged_at", UTC_TS, nullable=False),
])


#: A windowed query's buffer: the messages of its streams a future window still needs (``pos`` is
#: the event time in ms, or the insert's number for a count window) and its background graphs'
#: messages not yet read by a window. Keyed by ``seq``; ``_mult`` is 1 (a Z-set, so one MERGE both
#: appends a batch's messages and prunes the expired ones).
WINDOW_BUFFER = pa.schema([
    pa.field("seq", pa.int64(), nullable=False),
    pa.field("stream", pa.string(), nullable=False),
    pa.field("pos", pa.int64(), nullable=False),
    pa.field("time_ms", pa.int64(), nullable=False),
    pa.field("op", pa.string(), nullable=False),
    pa.field("s", pa.string(), nullable=False),
    pa.field("p", pa.string(), nullable=False),
    pa.field("o", pa.string(), nullable=False),
    pa.field(MULT, pa.int64(), nullable=False),
])

#: A windowed query's background graphs as of its last window: the triples present in each graph.
WINDOW_BACKGROUND = pa.schema([
    pa.field("graph", pa.string(), nullable=False),
    pa.field("s", pa.string(), nullable=False),
    pa.field("p", pa.string(), nullable=False),
    pa.field("o", pa.string(), nullable=False),
    pa.field(MULT, pa.int64(), nullable=False),
])

#: A windowed query's progress, one row per batch that ran it (cumulative values).
WINDOW_PROGRESS = pa.schema([
    pa.field("batch", pa.int64(), nullable=False),
    pa.field("max_time_ms", pa.int64(), nullable=True),     # latest event time on its streams
    pa.field("min_time_ms", pa.int64(), nullable=True),     # earliest (where time windows start)
    pa.field("inserts", pa.int64(), nullable=False),        # inserts seen (count windows)
    pa.field("window", pa.int64(), nullable=False),         # windows emitted
    pa.field("last_close", pa.int64(), nullable=True),      # position of the last close
    pa.field("late", pa.int64(), nullable=False),           # late messages, in total
    pa.field("answers", pa.int64(), nullable=False),        # answer rows of the last window
])

#: The window log, one table for the lake: every emitted window of every windowed query, with the
#: gold version holding its answers (its RStream) for time travel.
WINDOW_LOG = pa.schema([
    pa.field("query", pa.string(), nullable=False),
    pa.field("window", pa.int64(), nullable=False),
    pa.field("open", UTC_TS, nullable=False),
    pa.field("close", UTC_TS, nullable=False),
    pa.field("open_ms", pa.int64(), nullable=False),
    pa.field("close_ms", pa.int64(), nullable=False),
    pa.field("answers", pa.int64(), nullable=False),
    pa.field("batch", pa.int64(), nullable=False),
    pa.field("gold_version", pa.int64(), nullable=False),
])

#: Every per-triple-pattern view of the queries over the whole graph, one table for the lake
#: (:mod:`pipelines.engine.views_table`): a row is one signed copy of a view's row (merge on read),
#: ``_view`` names the view, ``v0``..``v2`` are its variables in order (unused ones null).
VIEW = "_view"
VIEW_COLUMNS = ("v0", "v1", "v2")
VIEWS = pa.schema([pa.field(VIEW, pa.string(), nullable=False)]
                  + [pa.field(c, pa.string()) for c in VIEW_COLUMNS]
                  + [pa.field(MULT, pa.int64(), nullable=False)])

#: Every query's answer changes, one table for the lake (:mod:`pipelines.answer_changes`): a row is
#: one signed change of query ``_query``'s answers in batch ``_batch`` (of a windowed query, in
#: window ``_window``, else null there); the bindings follow, a string column per variable name the
#: registered queries use, added as they register (a query's row leaves the others' null).
ANSWER_CHANGES = pa.schema([
    pa.field(QUERY, pa.string(), nullable=False),
    pa.field(BATCH, pa.int64(), nullable=False),
    pa.field(BRONZE_FROM, pa.int64(), nullable=False),
    pa.field(BRONZE_TO, pa.int64(), nullable=False),
    pa.field(WINDOW, pa.int64()),
    pa.field(CLOSE_MS, pa.int64()),
    pa.field(SIGN, pa.string(), nullable=False),
    pa.field(COUNT, pa.int64(), nullable=False),
])

#: The state of every windowed query, one table for the lake (:mod:`pipelines.engine.window_state`):
#: a row holds one part of one query's state (a view, a partial embedding, its buffer, its progress)
#: as a batch changed it, ``rows`` rows encoded as an LZ4-compressed Arrow IPC stream in ``data``
#: (each part has its own columns, so no one table schema fits them all).
WINDOW_STATE = pa.schema([
    pa.field("query", pa.string(), nullable=False),
    pa.field("batch", pa.int64(), nullable=False),
    pa.field("part", pa.string(), nullable=False),
    pa.field("rows", pa.int64(), nullable=False),
    pa.field("data", pa.binary(), nullable=False),
])


def rows(table: pa.Table) -> list[dict]:
    """``table.to_pylist()`` with UTC timestamps as aware datetimes, without importing pandas.

    pyarrow imports pandas (a quarter of a second, most of a CLI read) to turn a timestamp with a
    time zone into Python, but not one without: so UTC columns are converted naive and given UTC back.
    """
    utc = [f.name for f in table.schema if f.type == UTC_TS]
    if not utc:
        return table.to_pylist()
    naive = pa.schema([f.with_type(pa.timestamp("us")) if f.name in utc else f for f in table.schema])
    out = table.cast(naive).to_pylist()
    for row in out:
        for name in utc:
            if row[name] is not None:
                row[name] = row[name].replace(tzinfo=timezone.utc)
    return out
