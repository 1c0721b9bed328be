"""Table maintenance: compact small files and vacuum old ones, without breaking time travel or the
change feed.

Every micro-batch adds a few small files to each table it touches; compaction rewrites them into
larger ones (an OPTIMIZE commit with ``dataChange=false``, which the change feed does not report, so
the Runner never reads compacted rows as new messages). State tables are Z-ordered by the keys a
batch looks them up by (:func:`clustering`), on either backend (delta-rs ``z_order``, delta-spark
``OPTIMIZE ... ZORDER BY``), so a read for a few keys can skip files by their statistics. Vacuum then deletes files that no current
version uses and that were removed longer than ``retention_hours`` ago. Two things still need some of
those files:

* time travel: every version of the last ``TIME_TRAVEL_HORIZON_HOURS`` (7 days) must stay readable, so a
  shorter retention is refused unless forced;
* the bronze change feed: the Runner reads bronze from the last completed batch's ``bronze_to``
  version (inclusive) onwards, so every file of those versions must survive, forced or not. Bronze
  is still compacted (that only marks files removed); its vacuum retention is stretched back to the
  commit time of that version, which keeps exactly the files a version from then on can reference.

An interrupted batch is refused outright: its re-run reads state tables at the versions its plan
recorded, which a forced vacuum could remove. Files a killed Spark append left uncommitted under
``<lake>/_spark_out/`` are removed first (both locks are held: no append is under way).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from schemas.tables import MULT, VIEW

from .. import catalog
from ..engine.bgp import state_tables
from ..lake import BATCHES, BRONZE, QUERIES, VIEWS, BatchLog, now
from ..storage import TableStore, clear_spark_out
from ..storage.lock import ingesting, writer

#: How far back time travel is guaranteed (Delta's own default for deleted-file retention).
TIME_TRAVEL_HORIZON_HOURS = 168


class MaintenanceError(ValueError):
    """Maintenance refused; the message says why in one line."""


@dataclass(frozen=True)
class TableMaintenance:
    """What maintenance did to one table."""

    table: str
    files_removed: int
    files_added: int
    vacuumed: int
    retention_hours: int
    note: str = ""

    def line(self) -> str:
        text = (f"{self.table:<40} compacted {self.files_removed:>4} -> {self.files_added:<4} files, "
                f"vacuumed {self.vacuumed:>4} (retention {self.retention_hours} h)")
        return f"{text}; {self.note}" if self.note else text


@dataclass
class MaintenanceReport:
    tables: list[TableMaintenance] = field(default_factory=list)

    def summary(self) -> str:
        compacted = sum(t.files_removed for t in self.tables)
        vacuumed = sum(t.vacuumed for t in self.tables)
        lines = [t.line() for t in self.tables]
        lines.append(f"maintained {len(self.tables)} table(s): {compacted} small file(s) compacted, "
                     f"{vacuumed} file(s) vacuumed")
        return "\n".join(lines)


def _feed_floor(store: TableStore) -> tuple[int, int] | None:
    """``(bronze version, hours)``: the oldest bronze version the change feed will still read and
    the vacuum retention that keeps its files; None when no batch has completed (the Runner has no
    feed position yet, and a registration reads the bronze snapshot, not the feed)."""
    if not store.exists(BATCHES):
        return None
    last = BatchLog(store).last_done()
    if last is None:
        return None
    stamps = {c["version"]: c["timestamp"] for c in store.history(BRONZE)}
    if last.bronze_to not in stamps:
        raise MaintenanceError(f"bronze version {last.bronze_to}, where the change feed resumes, "
                               "is no longer in its log")
    age = (now() - stamps[last.bronze_to]).total_seconds() / 3600
    return last.bronze_to, math.ceil(age) + 1   # +1 h: deletion stamps and commit stamps may differ slightly


def _files(metrics: dict, key: str) -> int:
    """A count from compaction metrics (delta-rs returns them flat, delta-spark under ``metrics``)."""
    return int(metrics.get("metrics", metrics).get(key) or 0)


def clustering(queries: list[catalog.Registered]) -> dict[str, tuple[str, ...]]:
    """The columns each state table is Z-ordered by when compacted: the keys a batch looks up
    (the views table by view and first variable, a partial embedding by its variables, a path by
    its roots and nodes), at most two (each more column weakens the clustering of the others).
    Gold and the logs stay as written."""
    plans = [q.plan for q in queries]
    keys: dict[str, tuple[str, ...]] = {}
    if catalog.graph_views(plans):
        keys[VIEWS] = (VIEW, "v0")      # a view's rows together, by their first variable
    for path in catalog.distinct_paths(plans):
        keys[path.reach] = ("root", "node")
        if path.columns:
            keys[path.id] = path.columns[:2]
    for plan in plans:
        keys.update({name: tuple(c for c in schema.names if c != MULT)[:2] for name, schema in state_tables(plan).items()
                     if len(schema.names) > 1})
    return keys


def maintain(store: TableStore, retention_hours: int = TIME_TRAVEL_HORIZON_HOURS,
             force: bool = False, wait: float | None = None) -> MaintenanceReport:
    """Compact then vacuum every table of the lake; see the module docstring for what is kept.
    Holds both of the lake's locks (waiting at most ``wait`` seconds for each): no batch,
    registration or ingest has files written but not yet committed, which a vacuum would take for
    unreferenced ones."""
    if retention_hours < 0:
        raise MaintenanceError(f"retention must be at least 0 hours, got {retention_hours}")
    if retention_hours < TIME_TRAVEL_HORIZON_HOURS and not force:
        raise MaintenanceError(f"retention {retention_hours} h is shorter than the {TIME_TRAVEL_HORIZON_HOURS} h "
                               f"time-travel horizon; use force to give up time travel beyond {retention_hours} h")
    with writer(store.root, "maintain", wait), ingesting(store.root, "maintain", wait):
        return _maintain(store, retention_hours)


def _maintain(store: TableStore, retention_hours: int) -> MaintenanceReport:
    if store.exists(BATCHES) and (pending := BatchLog(store).pending()) is not None:
        raise MaintenanceError(f"batch {pending.batch} was interrupted; finish it with 'lakegraph run' "
                               "before maintenance")
    clear_spark_out(store.root)
    floor = _feed_floor(store)
    keys = clustering(catalog.registered(store) if store.exists(QUERIES) else [])
    report = MaintenanceReport()
    for name in store.tables():
        metrics = store.compact(name, keys.get(name, ()))
        retention, note = retention_hours, ("Z-ordered by " + ", ".join(keys[name])) if name in keys else ""
        if name == BRONZE and floor is not None and floor[1] > retention_hours:
            retention = floor[1]
            note = f"kept files from version {floor[0]} on for the unconsumed change feed"
        removed = store.vacuum(name, retention)
        report.tables.append(TableMaintenance(name, _files(metrics, "numFilesRemoved"),
                                              _files(metrics, "numFilesAdded"), len(removed), retention, note))
    return report
