"""The lake's layout: which tables exist, how they are named, and the micro-batch log.

Per-query tables are named from the query name (checked to be a safe identifier at registration)
and views from their content hash, so two queries with the same triple pattern share one view.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as S

from .storage import TableStore, Txn
from .storage.lock import ingesting

BRONZE = "bronze"
QUARANTINE = "quarantine"
INGEST_LOG = "ingest_log"
QUERIES = "queries"
BATCHES = "batches"
#: The window log of every windowed query: one table, so a batch logs all its windows in one commit.
WINDOW_LOG = "window_log"
#: The state of every windowed query: one table, so a batch writes all their states in one commit.
WINDOW_STATE = "window_state"
#: The views of every query over the whole graph: one table, so a batch writes them in one commit.
VIEWS = "views"
#: The answer changes of every query: one table, so a batch appends them all in one commit.
ANSWER_CHANGES = "answer_changes"

FIXED_TABLES: dict[str, pa.Schema] = {
    BRONZE: S.BRONZE,
    QUARANTINE: S.QUARANTINE,
    INGEST_LOG: S.INGEST_LOG,
    QUERIES: S.QUERIES,
    BATCHES: S.BATCHES,
    WINDOW_LOG: S.WINDOW_LOG,
    WINDOW_STATE: S.WINDOW_STATE,
    VIEWS: S.VIEWS,
    ANSWER_CHANGES: S.ANSWER_CHANGES,
}
#: The tables other commands may commit to while a run goes on: ``ingest`` appends to the first
#: three under its own lock, ``register`` to the catalog.
SHARED_TABLES = (BRONZE, QUARANTINE, INGEST_LOG, QUERIES)

#: Key of a batch record's ``stats``: True when the batch (with those before it) took every row of
#: bronze's version ``bronze_to``, so the next batch reads the change feed from the version after
#: (re-reading that version, the last batch's own, doubled the rows every batch read).
BRONZE_TO_DONE = "bronze_to_done"

#: App id carried by every commit a micro-batch makes (version = batch number).
BATCH_APP = "lakegraph-batch"


def gold_table(query: str) -> str:
    return f"gold_{query}"


def legacy_changes_table(query: str) -> str:
    """Where a query kept its answer changes before the lake had one answer changes table: moved
    into it by the next run or registration (:func:`pipelines.answer_changes.adopt_legacy`)."""
    return f"gold_{query}_changes"


def pe_table(query: str, component: int) -> str:
    return f"pe_{query}_{component}"


def bag_table(query: str) -> str:
    return f"pe_{query}_bag"


def sums_table(query: str) -> str:
    """An aggregate query's running sums (:mod:`views.running`)."""
    return f"pe_{query}_sums"


def legacy_state_table(query: str) -> str:
    """Where a windowed query registered before the lake had one window state table kept its
    state. No longer read: a run refuses such a query (its windows would restart from nothing),
    and registering it again or unregistering it drops the table."""
    return f"w_{query}_state"


def buffer_table(query: str) -> str:
    """A windowed query's messages that a future window still needs: a part of its state in the
    window state table, or a table of its own for a query with background graphs."""
    return f"w_{query}_buffer"


def background_table(query: str) -> str:
    """A windowed query's background graphs as its last emitted window read them."""
    return f"w_{query}_background"


def progress_table(query: str) -> str:
    """A windowed query's progress after each batch (event times seen, windows emitted, late
    messages): a part of its state in the window state table."""
    return f"w_{query}_progress"


def init_lake(store: TableStore, wait: float | None = None) -> list[str]:
    """Create the fixed tables that are missing; returns the names created. Under the ingest lock
    (waiting at most ``wait`` seconds), which an ingest creating the same tables holds too: two
    first commits of one table would race."""
    if all(store.exists(name) for name in FIXED_TABLES):
        return []
    created = []
    with ingesting(store.root, "init", wait):
        for name, schema in FIXED_TABLES.items():
            if not store.exists(name):
                store.create(name, schema)
                created.append(name)
    return created


def now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class BatchRecord:
    """One row of the batch log: the bronze range a batch reads and the table versions it uses."""

    batch: int
    status: str
    bronze_from: int
    bronze_to: int
    seq_from: int
    seq_to: int
    versions: dict[str, int] = field(default_factory=dict)
    stats: dict[str, int | str] = field(default_factory=dict)
    logged_at: datetime | None = None

    def row(self) -> dict:
        return {
            "batch": self.batch, "status": self.status, "bronze_from": self.bronze_from,
            "bronze_to": self.bronze_to, "seq_from": self.seq_from, "seq_to": self.seq_to,
            "versions": json.dumps(self.versions, sort_keys=True),
            "stats": json.dumps(self.stats, sort_keys=True), "logged_at": now(),
        }

    @classmethod
    def from_row(cls, row: dict) -> "BatchRecord":
        return cls(batch=row["batch"], status=row["status"], bronze_from=row["bronze_from"],
                   bronze_to=row["bronze_to"], seq_from=row["seq_from"], seq_to=row["seq_to"],
                   versions=json.loads(row["versions"]), stats=json.loads(row["stats"]),
                   logged_at=row["logged_at"])


class BatchLog:
    """Reads and writes the ``batches`` table. A batch is ``planned`` before it changes any state
    table and ``done`` after its last commit; the app transaction of each row makes both writes
    idempotent."""

    def __init__(self, store: TableStore) -> None:
        self.store = store

    def _rows(self, status: str | None) -> pa.Table:
        """The log's rows, of ``status`` only when given. Filtered in Arrow, records parsed only
        where wanted: the log grows by two rows a batch, and every batch asks for its last one."""
        table = self.store.read_arrow(BATCHES)
        if status is None:
            return table
        # an Arrow scalar: a Python value in an Arrow comparison makes pyarrow import pandas
        return table.filter(pc.equal(table["status"], pa.scalar(status, pa.string())))

    @staticmethod
    def _parsed(rows: pa.Table) -> list[BatchRecord]:
        return sorted((BatchRecord.from_row(r) for r in S.rows(rows)), key=lambda r: r.batch)

    def records(self, status: str | None = None) -> list[BatchRecord]:
        return self._parsed(self._rows(status))

    @classmethod
    def _last(cls, rows: pa.Table) -> BatchRecord | None:
        """The record of the largest batch among ``rows``."""
        if rows.num_rows == 0:
            return None
        largest = pc.max(rows["batch"])
        return cls._parsed(rows.filter(pc.equal(rows["batch"], largest)))[-1]

    def last_done(self) -> BatchRecord | None:
        return self._last(self._rows("done"))

    def pending(self) -> BatchRecord | None:
        """The planned batch that has no done record (a run crashed inside it), if any."""
        planned = self._rows("planned")
        unfinished = pc.invert(pc.is_in(planned["batch"], self._rows("done")["batch"]))
        return self._last(planned.filter(unfinished))

    def write(self, record: BatchRecord) -> None:
        app = "batch-plan" if record.status == "planned" else "batch-done"
        self.store.append(BATCHES, pa.Table.from_pylist([record.row()], schema=S.BATCHES),
                          Txn(app, record.batch))
