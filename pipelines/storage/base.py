"""The storage interface: every table the pipeline touches goes through a ``TableStore``.

Why one interface: the Delta JVM jars cannot be fetched on every machine, so commits are made by
delta-rs while Spark reads the files of a version; where the jars are present the same calls run on
delta-spark. The pipeline logic is written once against this protocol.

Idempotence lives here too: every write may carry a ``Txn`` (application id, batch number). A write
whose application id already committed that number (or a later one) is skipped and reports False, so
a re-run after a crash never doubles a commit.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Callable, Collection, ContextManager, Protocol, Sequence, Union

import pyarrow as pa

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import DataFrame, SparkSession

Data = Union[pa.Table, "DataFrame"]


class StorageError(Exception):
    """A table operation failed; the message names the table and the operation."""


class TableNotFound(StorageError):
    """The named table does not exist in the lake."""


@dataclass(frozen=True)
class Txn:
    """An application transaction: ``app_id`` committed up to ``version`` (a batch or ingest number)."""

    app_id: str
    version: int


class TableStore(Protocol):
    """What the pipeline needs from a lake of Delta tables, addressed by table name."""

    root: str
    spark: "SparkSession | None"
    backend: str

    def path(self, name: str) -> str:
        """Filesystem location of table ``name``."""

    def exists(self, name: str) -> bool:
        """Whether table ``name`` exists."""

    def tables(self) -> list[str]:
        """Names of all tables in the lake, sorted."""

    def create(self, name: str, schema: pa.Schema) -> None:
        """Create an empty table with the change data feed on (no-op if it exists)."""

    def drop(self, name: str) -> None:
        """Remove a table and its files."""

    def schema(self, name: str) -> pa.Schema:
        """The table's Arrow schema (types as our schemas spell them)."""

    def add_columns(self, name: str, fields: Sequence[pa.Field]) -> None:
        """Add nullable ``fields`` at the end of the table's schema, in one metadata commit: the rows
        written before read them as null (a table shared by queries widens as they register)."""

    def version(self, name: str) -> int:
        """The latest committed version."""

    def writing(self, others: Collection[str] = ()) -> ContextManager[None]:
        """A section in which this store is the only writer of every table but ``others`` (those
        other processes may commit to meanwhile, as ``ingest`` does to the ingest tables): the
        newest version of any other table may then be taken from what the store last read or wrote
        instead of from the table's log at every access. Outside it, every access sees other
        processes' commits."""

    def committed(self, name: str, app_id: str) -> int | None:
        """The last version ``app_id`` committed to the table (its idempotence marker), or None."""

    def append(self, name: str, data: Data, txn: Txn | None = None) -> bool:
        """Append rows; False when ``txn`` was already committed (nothing written)."""

    def append_parquet(self, name: str, files: Sequence[str], txn: Txn | None = None) -> bool:
        """Append the rows of parquet ``files`` (the table's columns, written outside the table but
        on the lake's filesystem) in one commit, without holding them in memory: a large landing
        file's rows, spilled as it was parsed. The files are taken (moved into the table, or read
        and removed). False when ``txn`` was already committed (then the files are left as they are)."""

    def overwrite(self, name: str, data: Data, txn: Txn | None = None) -> bool:
        """Replace every row with ``data`` in one commit (cheaper than a MERGE, which rewrites the
        files it touches anyway, when the caller holds the table's new content); False when ``txn``
        was already committed."""

    def fold(self, name: str, content: pa.Table, txn: Txn | None = None) -> bool:
        """:meth:`overwrite` with a merge-on-read table's consolidated ``content`` (each row's
        data once, its multiplicity not zero; :mod:`pipelines.engine.merge_on_read`), which a
        later :meth:`read_folded` may hand back as it is. False when ``txn`` was already committed."""

    def append_folded(self, name: str, rows: pa.Table, txn: Txn | None = None) -> bool:
        """:meth:`append` ``rows`` as part of the table's last :meth:`fold`: consolidated rows none
        of which shares its data with any other row of the table (a registration's new views,
        kept in the views table beside the others), which :meth:`read_folded` may hand back with
        the fold's. False when ``txn`` was already committed."""

    def read_folded(self, name: str, version: int | None = None) -> tuple[pa.Table, pa.Table]:
        """Table ``name`` at ``version`` as the rows of its last :meth:`fold` (and of the
        :meth:`append_folded` since) that it still holds (consolidated: none shares another's
        data) and all its other rows (empty and all of them where the backend does not tell a
        fold's rows apart). The table's consolidated content is the first summed with the
        second: a reader that takes the first as it is sums only the rows appended since the
        fold, not the whole table (grouping a path's 1.65M reach rows by their six columns took
        3.6 s)."""

    def concurrently(self, writes: Sequence[Callable[[], object]]) -> None:
        """Make ``writes``, commits to distinct tables each carrying its own transaction, in any
        order or at once (a batch's commits are independent: the batch log's done record, written
        after them, is what says the batch happened); raises the first failure once all have ended."""

    def merge_counts(self, name: str, data: Data, keys: Sequence[str], count: str,
                     txn: Txn | None = None) -> bool:
        """Z-set MERGE: add ``data[count]`` to the row with equal ``keys``; insert new keys;
        delete rows whose count reaches zero. False when ``txn`` was already committed."""

    def delete(self, name: str, predicate: str | None = None, txn: Txn | None = None) -> bool:
        """Delete rows matching a SQL ``predicate`` (all rows when None)."""

    def read(self, name: str, version: int | None = None) -> "DataFrame":
        """A Spark DataFrame of the table at ``version`` (latest when None)."""

    def read_arrow(self, name: str, version: int | None = None,
                   columns: Sequence[str] | None = None) -> pa.Table:
        """The table at ``version`` as Arrow, without Spark (small tables, CLI, tests)."""

    def find_held(self, name: str, column: str, values: pa.Array, version: int) -> pa.Table | None:
        """The rows of table ``name`` at ``version`` whose ``column`` holds one of ``values``, when
        the store holds that version's rows in memory, keyed by that column (else None: the caller
        reads the table): a delta rule's read of a large consolidated table then follows the change."""

    def table_id(self, name: str) -> str | None:
        """The id the table's first commit gave it (None once its log no longer holds that commit):
        a table dropped and created again at the same path has another."""

    def appended(self, name: str, since: int, version: int) -> pa.Table | None:
        """The rows the commits after version ``since`` up to ``version`` appended, when each only
        added files; None otherwise (a file removed or marked, a schema change, a commit the log
        no longer holds)."""

    def row_count(self, name: str, version: int | None = None) -> int:
        """The number of rows at ``version`` (latest when None), from the Delta log's file
        statistics rather than the data where the backend can: ``lakegraph status`` counts every
        table, and reading them all would cost more than the rest of the command."""

    def version_at(self, name: str, when: datetime) -> int:
        """The version that was current at ``when`` (time travel by timestamp)."""

    def changes(self, name: str, start: int, end: int | None = None) -> pa.Table:
        """The change data feed between versions ``start`` and ``end`` inclusive, with
        ``_change_type``, ``_commit_version`` (int64) and ``_commit_timestamp``."""

    def history(self, name: str) -> list[dict]:
        """Commits, newest first: version, timestamp, operation."""

    def compact(self, name: str, zorder: Sequence[str] = ()) -> dict:
        """Rewrite small files into larger ones, Z-ordered by ``zorder`` when given (so that file
        statistics let a read for a few keys skip the other files); returns the metrics."""

    def vacuum(self, name: str, retention_hours: float, dry_run: bool = False) -> list[str]:
        """Remove files unreferenced for longer than ``retention_hours``; returns the files."""
