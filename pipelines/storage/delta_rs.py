"""The default backend: delta-rs makes every commit, Spark reads a version through its active files.

Arrow is the currency between the two: Spark frames become Arrow (``toArrow``) before a commit and
delta-rs reads become Spark frames through the parquet files of the version (no Delta jars needed).
"""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
import uuid
import zlib
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Collection, Iterator, Sequence
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Field, Transaction, WriterProperties, write_deltalake
from deltalake.table import ProtocolVersions
from deltalake.exceptions import TableNotFoundError

from ..spark import session
from .base import Data, StorageError, TableNotFound, Txn
from .deletion_vectors import (FEATURE, current_vectors, deleted_positions, kept_rows, local_path, with_vectors,
                               write_vectors)
from .vector_merge import Placed

# A table is created with its change feed on, and a checkpoint every hundred commits, Delta's
# default on delta-rs. The store commits a batch's appends, overwrites and vector merges itself,
# without replaying the log (:meth:`DeltaRsStore._commit_actions`), so a longer tail since the last
# checkpoint costs only a load (7 ms at 10 commits, 43 ms at 100, measured) and a commit made
# through delta-rs, which the store reloads at each checkpoint (:meth:`DeltaRsStore._committed`).
# A checkpoint every ten commits cost a 10,000-edge path batch at 1M edges a tenth of its CPU
# (40 tables, each checkpoint a load, the checkpoint and the log's cleanup: 30-50 ms).
_CHECKPOINT_EVERY = 100
_NEW_TABLE = {"delta.enableChangeDataFeed": "true", "delta.checkpointInterval": str(_CHECKPOINT_EVERY)}
_DEFAULT_CHECKPOINT_EVERY = 100     # delta-rs's, for tables created without the property
#: Where Spark writes the files of a frame appended to a table, before the commit adopts them.
SPARK_OUT = "_spark_out"
_PINNED_CACHE = 256
_ADD_CACHE = 4096          # data files whose add action is kept (:meth:`DeltaRsStore._add_action`)
_KNOWN_ROWS = 200_000      # the largest table whose rows are kept in memory
_KNOWN_CHUNKS = 16         # appends a table kept in memory gathers as chunks before they are combined
_WRITERS = 4               # commits made at once by :meth:`DeltaRsStore.concurrently`
#: Row groups of at most 64Ki rows (parquet-rs writes up to 1Mi): a reader that filters on a column
#: skips the row groups whose statistics rule its value out, and the views table, one table for
#: every view, is written a view after the other, so Spark reading one view (``_view = id``) reads
#: its row groups rather than the whole table.
_ROW_GROUP = 65_536
_WRITER_PROPERTIES = WriterProperties(max_row_group_size=_ROW_GROUP)
#: A table of at least this many rows takes :meth:`DeltaRsStore.merge_counts` by deletion vectors
#: (:mod:`.vector_merge`), a smaller one by delta-rs's copy-on-write MERGE.
VECTOR_MERGE_ROWS = 50_000
#: A table merged by deletion vectors gains a file per commit; past this many it is compacted.
_VECTOR_FILES = 32
#: An append this store commits itself writes a parquet file per this many rows.
_FILE_ROWS = 1 << 20
#: The versions an append tries, each after another writer took the one before.
_APPEND_TRIES = 20
#: The writer features an append of add actions alone satisfies on lakegraph's tables: those a
#: legacy writer 4 implies (their constraints, invariants and generated columns none of its tables
#: declare) and deletion vectors (which ask nothing of an added file). Another feature (column
#: mapping, row tracking, in-commit timestamps, ...) sends the append through delta-rs.
_APPEND_FEATURES = {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
                    "deletionVectors"}


class VersionTaken(StorageError):
    """Another writer committed the version a commit of this store's was to be."""


@dataclass(frozen=True)
class _LogPolicy:
    """How a table's log is kept, from its properties: a checkpoint every ``checkpoint_every``
    versions, and at each one the commit files older than ``delta.logRetentionDuration`` (30 days
    unless set) removed, unless ``delta.enableExpiredLogCleanup`` is false, as Delta's writers do.
    The store commits most versions itself, so it must do this too: without it a table's log grew
    by a file per batch for as long as the lake lived, and every load lists the whole log."""

    checkpoint_every: int
    expire_logs: bool

    def checkpoint_due(self, name: str, version: int) -> bool:
        """Whether this store's commit of ``version`` to table ``name`` writes a checkpoint: one
        in every ``checkpoint_every`` versions, at an offset of the table's own (a hash of its
        name). A batch commits once to each of dozens of tables created together, whose versions
        then move in step: at the same offset each of them checkpointed in the same batch, which
        took seconds longer than the others. (delta-rs's own commits checkpoint at multiples of
        the interval; Delta readers find a checkpoint at any version.)"""
        return (version + zlib.crc32(name.encode()) % self.checkpoint_every) % self.checkpoint_every == 0


_pools: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_pools_lock = threading.Lock()


def _pool(kind: str, size: int) -> ThreadPoolExecutor:
    """The process's pool of ``kind`` (commits or file reads), started on first use and again in a
    forked child (whose copy of a pool has no threads). A batch makes hundreds of small reads and
    commits; a pool of their own for each started more threads than the work they did needed.
    Neither kind of task submits to a pool, so tasks never wait on one another."""
    with _pools_lock:
        pid, pool = _pools.get(kind, (None, None))
        if pool is None or pid != os.getpid():
            pool = ThreadPoolExecutor(size, thread_name_prefix=f"lakegraph-{kind}")
            _pools[kind] = (os.getpid(), pool)
        return pool


def clear_spark_out(root: str) -> None:
    """Remove what Spark appends left under ``<root>/_spark_out/``: the files of a process killed
    between Spark's write and the commit, which no table references. Call it holding the lake's
    writer lock (no append under way), as ``lakegraph maintain`` does."""
    shutil.rmtree(os.path.join(root, SPARK_OUT), ignore_errors=True)


def quote(column: str) -> str:
    """A column name as a DataFusion identifier (keeps case, allows any character)."""
    return '"' + column.replace('"', '""') + '"'


def _with_columns(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """A data file's ``rows`` in ``schema``: a column added after the file was written
    (:meth:`DeltaRsStore.add_columns`) is null in it, as Delta readers take it."""
    for field in schema:
        if field.name not in rows.column_names:
            rows = rows.append_column(field.name, pa.nulls(rows.num_rows, field.type))
    return rows.select(schema.names).cast(schema)


def _files(dt: DeltaTable) -> list[str]:
    """The local paths of a version's data files."""
    return [local_path(uri) for uri in dt.file_uris()]


def normalise_schema(schema: pa.Schema) -> pa.Schema:
    """The types delta-rs reads back (string_view, uint64, ms timestamps) as the ones Spark and our
    schemas use."""
    fields = []
    for field in schema:
        t = field.type
        if pa.types.is_string_view(t) or pa.types.is_large_string(t):
            t = pa.string()
        elif pa.types.is_uint64(t):
            t = pa.int64()
        elif pa.types.is_timestamp(t) and (t.unit != "us" or t.tz is None):
            t = pa.timestamp("us", tz="UTC")
        fields.append(pa.field(field.name, t, field.nullable))
    return pa.schema(fields)


def _stats(meta: pq.FileMetaData) -> dict:
    """A parquet file's Delta statistics from its footer: ``numRecords``, and per column the null
    count (when every row group has one) and, for integer and string columns, the bounds (a
    footer's are exact; a writer leaves out a string column's when a value is too long for them).
    Timestamps are left out: Delta's are in milliseconds, rounded, which only means no file
    skipping on them."""
    nulls: dict[str, int | None] = {}
    low: dict[str, int] = {}
    high: dict[str, int] = {}
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            column = group.column(c)
            name, stats = column.path_in_schema, column.statistics
            known = stats is not None and stats.has_null_count and nulls.get(name, 0) is not None
            nulls[name] = nulls.get(name, 0) + stats.null_count if known else None
            if stats is not None and stats.has_min_max and (
                    (column.physical_type in ("INT32", "INT64") and stats.logical_type.type in ("NONE", "INT"))
                    or (column.physical_type == "BYTE_ARRAY" and stats.logical_type.type == "STRING")):
                low[name] = min(low.get(name, stats.min), stats.min)
                high[name] = max(high.get(name, stats.max), stats.max)
    counted = {name: count for name, count in nulls.items() if count is not None}
    return {"numRecords": meta.num_rows, "minValues": low, "maxValues": high, "nullCount": counted}


#: How a data file's name starts: ``part`` as delta-rs and Spark name theirs, ``folded`` for one a
#: fold wrote (:meth:`DeltaRsStore.fold`, :meth:`DeltaRsStore.append_folded`), whose rows
#: :meth:`DeltaRsStore.read_folded` hands back apart.
_PART, _FOLDED = "part", "folded"


def _data_file(kind: str = _PART) -> str:
    """A new data file's name (unique, as delta-rs names its own)."""
    return f"{kind}-{uuid.uuid4()}-c000.snappy.parquet"


def _remove_action(path: str, size: int, now: int) -> dict:
    """The remove action of data file ``path`` (``size`` bytes), at time ``now`` (ms)."""
    return {"path": path, "deletionTimestamp": now, "dataChange": True, "extendedFileMetadata": True,
            "partitionValues": {}, "size": size}


def normalise_arrow(table: pa.Table) -> pa.Table:
    """``table`` cast to :func:`normalise_schema` of its schema."""
    schema = normalise_schema(table.schema)
    return table if schema == table.schema else table.cast(schema)


@dataclass
class ReadCounts:
    """What :meth:`DeltaRsStore.read_arrow` has read: rows and compressed bytes from parquet files,
    and rows served from memory (a table this store read or wrote at that version). A batch's
    reads should follow its change, not its tables' size: this is how the bench measures it."""

    file_rows: int = 0
    file_bytes: int = 0
    memory_rows: int = 0


class DeltaRsStore:
    """``TableStore`` on delta-rs; ``spark`` is only needed for :meth:`read`."""

    backend = "delta-rs"

    def __init__(self, root: str, spark=None) -> None:
        """``spark``: a session, a zero-argument function starting one on first use, or None."""
        self.root = os.path.abspath(root)
        self._spark = spark
        self._schemas: dict[str, pa.Schema] = {}
        # Opening a table replays its log; a batch touches each table several times. The newest
        # state is kept per table and brought up to date incrementally; pinned versions never change,
        # so the last few opened are kept as they are.
        self._latest: dict[str, DeltaTable] = {}
        self._pinned: OrderedDict[tuple[str, int], DeltaTable] = OrderedDict()
        self._pinning = threading.Lock()    # the queries of a batch read on threads (Runner)
        # A data file never changes once written, and a MERGE by deletion vectors adds again every
        # file it touches: their add actions are kept rather than made from their footers each time.
        self._adds: OrderedDict[str, dict] = OrderedDict()
        self._adding = threading.Lock()
        # The rows of a table at the last version this store read or wrote, while small: a batch
        # reads the state tables at the versions the previous batch wrote (and versions never
        # change), and reading them back from parquet cost more than the batch's own work on them.
        self._known: dict[str, tuple[int, pa.Table]] = {}
        self.reads = ReadCounts()
        self._counting = threading.Lock()   # read on the threads of a batch's windowed queries
        # Inside :meth:`writing`, the tables whose newest state this store already holds.
        self._current: set[str] | None = None
        self._others: frozenset[str] = frozenset()
        # Per table, a version and the last transaction of each app asked about at it, carried
        # through this store's own commits: asking delta-rs costs a millisecond, dozens of times a batch.
        self._txns: dict[str, tuple[int, dict[str, int | None]]] = {}
        # The tables merged by deletion vectors: their live rows' keys and places, at a version.
        self._placed: dict[str, Placed] = {}
        # Per table, the version of this store's last commit written to the log directly, while the
        # table's state held in ``_latest`` is behind it (:meth:`_commit_actions`).
        self._heads: dict[str, int] = {}
        self._policies: dict[str, _LogPolicy] = {}  # per table, how its log is kept
        # Per table, its protocol, read once and again after a protocol action of this store's
        # (lakegraph's own commits are what change it: the deletion vectors feature).
        self._protocols: dict[str, ProtocolVersions] = {}
        # Per table, its data files (path: size) at a version, from this store's own commits.
        self._files: dict[str, tuple[int, dict[str, int]]] = {}

    @property
    def spark(self):
        """The Spark session, started now if it was lazy (only :meth:`read` needs it)."""
        return None if self._spark is None else session(self._spark)

    # -- naming -----------------------------------------------------------------------------
    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def exists(self, name: str) -> bool:
        return os.path.isdir(os.path.join(self.path(name), "_delta_log"))

    def tables(self) -> list[str]:
        if not os.path.isdir(self.root):
            return []
        return sorted(n for n in os.listdir(self.root) if self.exists(n))

    def _table(self, name: str, version: int | None = None) -> DeltaTable:
        try:
            if version is None:
                dt = self._latest.get(name)
                if dt is None:
                    dt = self._latest[name] = DeltaTable(self.path(name))
                elif ((self._current is None or name not in self._current) and self._moved(name, dt)) \
                        or self._heads.get(name, -1) > dt.version():
                    dt.update_incremental()
                if self._heads.get(name, -1) <= dt.version():
                    self._heads.pop(name, None)
                if self._current is not None and name not in self._others:
                    self._current.add(name)
                return dt
            if version == self._heads.get(name):        # this store's last commit: catch up rather than pin
                self._table(name)
            latest = self._latest.get(name)
            if latest is not None and latest.version() == version:    # the same snapshot, already loaded
                return latest
            key = (name, version)
            with self._pinning:
                dt = self._pinned.get(key)
                if dt is None:
                    dt = self._pinned[key] = DeltaTable(self.path(name), version=version)
                    if len(self._pinned) > _PINNED_CACHE:
                        self._pinned.popitem(last=False)
                self._pinned.move_to_end(key)
            return dt
        except TableNotFoundError as exc:
            raise TableNotFound(f"table {name!r} does not exist in lake {self.root}") from exc
        except Exception as exc:  # delta-rs raises generic errors for a missing version
            raise StorageError(f"table {name!r}: cannot load version {version}: {exc}") from exc

    def _moved(self, name: str, dt: DeltaTable) -> bool:
        """Whether table ``name`` has a commit after ``dt``'s version. Every commit adds the next
        numbered JSON file to the log, so one stat answers what ``update_incremental`` would find
        by listing the log (a few ms a table, on every read of a shared table)."""
        return self._has_commit(name, dt.version() + 1)

    def _has_commit(self, name: str, version: int) -> bool:
        return os.path.exists(os.path.join(self.path(name), "_delta_log", f"{version:020d}.json"))

    def _head(self, name: str) -> int:
        """Table ``name``'s newest version, without reading the log back after this store's own
        commits (:meth:`_commit_actions`): a table another writer may append to is checked for a
        commit after this store's last, a file's existence."""
        head = self._heads.get(name)
        if head is None or ((self._current is None or name not in self._current) and self._has_commit(name, head + 1)):
            return self._table(name).version()
        return head

    @contextmanager
    def writing(self, others: Collection[str] = ()) -> Iterator[None]:
        # A table's newest state is read from its log once; after that only this store's own
        # commits move it, and a write through a DeltaTable moves that object to its commit.
        # Re-listing every log at each access cost a batch of many small tables more than its writes.
        self._current, self._others = set(), frozenset(others)
        try:
            yield
        finally:
            self._current, self._others = None, frozenset()

    # -- lifecycle --------------------------------------------------------------------------
    def create(self, name: str, schema: pa.Schema) -> None:
        if self.exists(name):
            return
        os.makedirs(self.root, exist_ok=True)
        DeltaTable.create(self.path(name), schema, mode="ignore", configuration=_NEW_TABLE)

    def drop(self, name: str) -> None:
        shutil.rmtree(self.path(name), ignore_errors=True)
        self._forget(name)

    def _forget(self, name: str) -> None:
        """Forget what the store knows of table ``name`` (dropped, or its schema changed)."""
        self._schemas.pop(name, None)
        self._known.pop(name, None)
        self._txns.pop(name, None)
        self._latest.pop(name, None)
        self._heads.pop(name, None)
        self._policies.pop(name, None)
        self._protocols.pop(name, None)
        self._files.pop(name, None)
        if self._current is not None:
            self._current.discard(name)
        for key in [k for k in self._pinned if k[0] == name]:
            del self._pinned[key]

    def add_columns(self, name: str, fields: Sequence[pa.Field]) -> None:
        if fields:
            self._table(name).alter.add_columns([Field.from_arrow(f.with_nullable(True)) for f in fields])
            self._forget(name)

    def version(self, name: str) -> int:
        return self._head(name)

    def committed(self, name: str, app_id: str) -> int | None:
        return self._table(name).transaction_version(app_id)

    def schema(self, name: str) -> pa.Schema:
        if name not in self._schemas:
            self._schemas[name] = normalise_schema(pa.schema(self._table(name).schema().to_arrow()))
        return self._schemas[name]

    # -- writes -----------------------------------------------------------------------------
    def _props(self, txn: Txn | None) -> CommitProperties | None:
        if txn is None:
            return None
        return CommitProperties(app_transactions=[Transaction(app_id=txn.app_id, version=txn.version)])

    def _done(self, name: str, txn: Txn | None) -> bool:
        """Whether table ``name`` holds ``txn``'s commit (or a later one of its app)."""
        if txn is None:
            return False
        at = self._head(name)
        known = self._txns.get(name)
        if known is None or known[0] != at:
            known = self._txns[name] = (at, {})
        if txn.app_id not in known[1]:
            known[1][txn.app_id] = self._table(name).transaction_version(txn.app_id)
        last = known[1][txn.app_id]
        return last is not None and last >= txn.version

    def _arrow(self, name: str, data: Data) -> pa.Table:
        table = data if isinstance(data, pa.Table) else data.toArrow()
        schema = self.schema(name)
        return table.select(schema.names).cast(schema)

    def append(self, name: str, data: Data, txn: Txn | None = None) -> bool:
        if not isinstance(data, pa.Table) and self._spark_writes(name):
            return self._append_frame(name, data, txn)
        return self._write(name, data, "append", txn)

    def _spark_writes(self, name: str) -> bool:
        """Whether a Spark frame appended to table ``name`` is written by Spark's parquet writer
        (every column type one Spark writes as our readers read it: no timestamps, which Spark
        writes as INT96)."""
        return not any(pa.types.is_timestamp(f.type) for f in self.schema(name))

    def _append_frame(self, name: str, frame, txn: Txn | None) -> bool:
        """Append a Spark frame: Spark writes its parquet files under ``<lake>/_spark_out/`` and the
        commit adopts them (:meth:`append_parquet`). Collecting it to the driver as Arrow, as a
        small write does, held a registration's whole backfill in Python's memory: past 18 GB for
        the 4-cycle's partial embeddings at 10M triples."""
        if self._done(name, txn):
            return False
        from .spark_arrow import arrow_schema_to_spark

        schema = self.schema(name)
        target = arrow_schema_to_spark(schema)
        out = os.path.join(self.root, SPARK_OUT, uuid.uuid4().hex)
        try:
            frame.select(*[frame[f.name].cast(f.dataType) for f in target.fields]).write.parquet(out)
            files = sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".parquet"))
            return self.append_parquet(name, files, txn)
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def overwrite(self, name: str, data: Data, txn: Txn | None = None) -> bool:
        return self._write(name, data, "overwrite", txn)

    def fold(self, name: str, content: pa.Table, txn: Txn | None = None) -> bool:
        # the files are named as folded only where the store commits the write itself
        return self._write(name, content, "overwrite", txn, kind=_FOLDED)

    def append_folded(self, name: str, rows: pa.Table, txn: Txn | None = None) -> bool:
        return self._write(name, rows, "append", txn, kind=_FOLDED)

    def concurrently(self, writes: Sequence[Callable[[], object]]) -> None:
        # A small commit spends most of its time in delta-rs's Rust code, which releases the GIL
        # (parquet encoding, file and log writes): a batch's dozens of commits overlap on threads.
        if len(writes) < 2:
            for write in writes:
                write()
            return
        futures = [_pool("writers", _WRITERS).submit(write) for write in writes]
        wait(futures)                       # all of them, even when one fails
        for future in futures:
            future.result()

    def _write(self, name: str, data: Data, mode: str, txn: Txn | None, kind: str = _PART) -> bool:
        if self._done(name, txn):
            return False
        table = self._arrow(name, data)
        before = self._head(name)
        if mode == "append" and self._plain(name):
            after = self._commit_appends(name, self._write_files(name, table, kind), txn)
            if after is None:
                return False
        elif mode == "overwrite" and self._plain(name) and (live := self._live_files(name)) is not None:
            after = self._commit_overwrite(name, before, live, self._write_files(name, table, kind), txn)
        else:
            dt = self._table(name)
            write_deltalake(dt, table, mode=mode, commit_properties=self._props(txn),
                            writer_properties=_WRITER_PROPERTIES)
            after = dt.version()                # a write through dt moves it to its own commit
            self._committed(name, dt)
        self._noted(name, before, after, txn)
        known = self._known.get(name)
        if mode == "append":
            table = pa.concat_tables([known[1], table]) if known and known[0] == before == after - 1 else None
            if table is not None and table.num_columns and table.column(0).num_chunks > _KNOWN_CHUNKS:
                table = table.combine_chunks()      # a chunk per append made every read of it slower
        self._remember(name, after, table)
        return True

    def append_parquet(self, name: str, files: Sequence[str], txn: Txn | None = None) -> bool:
        # The files become the table's data files as they are: delta-rs's own writer holds a
        # file's worth of encoded rows and more in memory, a gigabyte for a gigabyte of N-Triples.
        if self._done(name, txn):
            return False
        before = self._head(name)
        moved = []
        for path in files:
            moved.append(_data_file())
            os.replace(path, os.path.join(self.path(name), moved[-1]))
        after = self._commit_appends(name, moved, txn)
        if after is None:
            return False
        self._noted(name, before, after, txn)
        self._remember(name, after, None)
        return True

    def _protocol(self, name: str) -> ProtocolVersions:
        if name not in self._protocols:
            self._protocols[name] = self._table(name).protocol()
        return self._protocols[name]

    def _plain(self, name: str) -> bool:
        """Whether table ``name`` takes an append as add actions and nothing else: its protocol
        asks no more of a writer than lakegraph's tables do (:data:`_APPEND_FEATURES`)."""
        protocol = self._protocol(name)
        if protocol.min_writer_version < 7:
            return protocol.min_writer_version <= 4
        return set(protocol.writer_features or ()) <= _APPEND_FEATURES

    def _with_vectors(self, name: str) -> bool:
        """Whether table ``name``'s protocol has the deletion vectors feature."""
        return FEATURE in (self._protocol(name).reader_features or ())

    def _write_files(self, name: str, table: pa.Table, kind: str = _PART) -> list[str]:
        """``table`` written as parquet files in table ``name``'s folder (one per
        :data:`_FILE_ROWS` rows, none for no rows; their names starting with ``kind``), for a
        commit of this store's to add."""
        paths = []
        for start in range(0, table.num_rows, _FILE_ROWS):
            paths.append(_data_file(kind))
            pq.write_table(table.slice(start, _FILE_ROWS), os.path.join(self.path(name), paths[-1]),
                           row_group_size=_ROW_GROUP)
        return paths

    def _live_files(self, name: str) -> dict[str, int] | None:
        """Table ``name``'s data files at its newest version, with their sizes: kept from this
        store's own commits, else read from the table's state (brought up to date); None when the
        table has deletion vectors on (a file's removal would carry its vector: the table is
        rewritten through delta-rs then)."""
        if self._with_vectors(name):
            return None
        head = self._head(name)
        kept = self._files.get(name)
        if kept is not None and kept[0] == head:
            return kept[1]
        dt = self._table(name)
        adds = pa.RecordBatchReader.from_stream(dt.get_add_actions(flatten=True)).read_all()
        live = dict(zip(adds["path"].to_pylist(), adds["size_bytes"].to_pylist()))
        self._files[name] = (dt.version(), live)
        return live

    def _commit_overwrite(self, name: str, before: int, live: dict[str, int], paths: Sequence[str],
                          txn: Txn | None) -> int:
        """Commit data files ``paths`` as table ``name``'s whole content at the version after
        ``before``, whose files are ``live``: a ``remove`` of each (the change feed reads their
        rows as deleted, the new files' as inserted, as after delta-rs's overwrite) and an
        ``add`` of each new one. Another writer's commit in between is an error, as it is for
        delta-rs: the rows it added would be overwritten unseen."""
        now = int(time.time() * 1000)
        actions = [{"remove": _remove_action(path, size, now)} for path, size in live.items()]
        actions += [{"add": self._add_action(name, path)} for path in paths]
        rows = sum(json.loads(a["add"]["stats"])["numRecords"] for a in actions if "add" in a)
        metrics = {"num_added_files": len(paths), "num_removed_files": len(live), "num_added_rows": rows}
        version = self._commit_actions(name, before, actions, txn, "WRITE", metrics, {"mode": "Overwrite"})
        self._files[name] = (version, {a["add"]["path"]: a["add"]["size"] for a in actions if "add" in a})
        return version

    def _commit_appends(self, name: str, paths: Sequence[str], txn: Txn | None) -> int | None:
        """Commit data files ``paths`` (in table ``name``'s folder) as one append; its version, or
        None when ``txn`` turns out to be committed already. An append commutes with any other
        commit, so when another writer took the next version, the next one after it is tried."""
        actions = [{"add": self._add_action(name, path)} for path in paths]
        rows = sum(json.loads(a["add"]["stats"])["numRecords"] for a in actions)
        metrics = {"num_added_files": len(paths), "num_added_rows": rows}
        for _ in range(_APPEND_TRIES):
            before = self._head(name)
            try:
                version = self._commit_actions(name, before, actions, txn, "WRITE", metrics, {"mode": "Append"})
            except VersionTaken:
                self._table(name).update_incremental()
                self._heads.pop(name, None)
                if self._done(name, txn):
                    return None
                continue
            kept = self._files.pop(name, None)
            if kept is not None and kept[0] == before:
                self._files[name] = (version, {**kept[1], **{a["add"]["path"]: a["add"]["size"] for a in actions}})
            return version
        raise StorageError(f"table {name!r}: other writers took every version tried for an append")

    def _committed(self, name: str, dt: DeltaTable) -> None:
        """After this store's commit through ``dt``: when that commit also wrote a checkpoint, load
        the table afresh from it. A DeltaTable keeps every commit since the checkpoint it was loaded
        from and each commit through it costs more the more it keeps, so a long-running process
        (and a table created before :data:`_NEW_TABLE`) would pay more at every batch."""
        if dt.version() % self._log_policy(name).checkpoint_every == 0 and self._latest.get(name) is dt:
            self._latest[name] = DeltaTable(self.path(name))

    def _noted(self, name: str, before: int, after: int, txn: Txn | None) -> None:
        """Carry table ``name``'s known app transactions from ``before`` to this store's commit
        ``after`` (with ``txn``); they are known only if that commit is the next version."""
        known = self._txns.get(name)
        apps = dict(known[1]) if known is not None and known[0] == before == after - 1 else {}
        if txn is not None:
            apps[txn.app_id] = txn.version
        self._txns[name] = (after, apps)

    def _remember(self, name: str, version: int, table: pa.Table | None) -> None:
        if table is not None and table.num_rows <= _KNOWN_ROWS:
            self._known[name] = (version, table)
        else:
            self._known.pop(name, None)

    def merge_counts(self, name: str, data: Data, keys: Sequence[str], count: str,
                     txn: Txn | None = None) -> bool:
        if self._done(name, txn):
            return False
        source = self._arrow(name, data)
        if source.num_rows == 0 and txn is None:
            return False
        self._known.pop(name, None)
        placed = self._placed.get(name)
        if (placed is not None and placed.version == self._head(name)) or self.row_count(name) >= VECTOR_MERGE_ROWS:
            self._merge_by_vectors(name, source, keys, count, txn)
            return True
        dt = self._table(name)
        # null-safe: an unbound value (a projected timestamp() outside every window) is a key too
        on = " AND ".join(f"(t.{quote(k)} IS NOT DISTINCT FROM s.{quote(k)})" for k in keys) or "true"
        c = quote(count)
        insert = {col: f"s.{quote(col)}" for col in source.schema.names}
        # the source is a batch's change, already in memory: merged unstreamed, delta-rs plans with
        # it materialised (and can skip target files outside its keys' range), 13-18% faster on a
        # gold table of 3M rows than the streamed default
        (dt.merge(source, on, source_alias="s", target_alias="t", streamed_exec=False,
                  commit_properties=self._props(txn))
           .when_matched_delete(predicate=f"t.{c} + s.{c} = 0")
           .when_matched_update(updates={count: f"t.{c} + s.{c}"})
           .when_not_matched_insert(updates=insert, predicate=f"s.{c} <> 0")
           .execute())
        self._committed(name, dt)
        return True

    def _merge_by_vectors(self, name: str, source: pa.Table, keys: Sequence[str], count: str,
                          txn: Txn | None) -> None:
        """:meth:`merge_counts` by deletion vectors (:mod:`.vector_merge`): one commit marks the
        touched rows deleted in their files and adds their new counts, and the new keys, as a
        new file. The first such commit on a table also turns its deletion vectors feature on."""
        before = self._head(name)
        placed = self._placed.pop(name, None)
        if placed is None or placed.version != before:
            placed = self._place(name, self._table(name), keys, count)
        change = placed.change(source)
        deleted, written = placed.deleted(change.touched), change.written
        table = self.path(name)
        actions, path = [], None
        if written.num_rows:
            path = _data_file()
            pq.write_table(written, os.path.join(table, path), row_group_size=_ROW_GROUP)
            actions.append({"add": self._add_action(name, path)})
        vectors = write_vectors(table, {placed.files[f]: np.flatnonzero(mask) for f, mask in deleted.items()}) \
            if deleted else {}
        now = int(time.time() * 1000)
        for f in deleted:
            file = placed.files[f]
            added = self._add_action(name, file)
            removed = _remove_action(file, added["size"], now)
            if f in placed.vectors:
                removed["deletionVector"] = placed.vectors[f]
            actions += [{"remove": removed}, {"add": {**added, "deletionVector": vectors[file]}}]
        metrics = {"num_target_rows_deleted": len(change.touched), "num_target_rows_inserted": written.num_rows}
        if not self._with_vectors(name):
            actions.insert(0, {"protocol": with_vectors(self._protocol(name))})
        version = self._commit_actions(name, before, actions, txn, "MERGE", metrics)
        self._noted(name, before, version, txn)
        placed.commit(version, change, deleted, {f: vectors[placed.files[f]] for f in deleted}, path)
        if len(placed.files) > _VECTOR_FILES:   # compacted: every row moves, read again at the next merge
            dt = self._table(name)
            dt.optimize.compact(writer_properties=_WRITER_PROPERTIES)
            self._committed(name, dt)
        else:
            self._placed[name] = placed

    def _place(self, name: str, dt: DeltaTable, keys: Sequence[str], count: str) -> Placed:
        """Table ``name``'s live rows at ``dt``'s version, with where each lies."""
        table = self.path(name)
        files = [os.path.relpath(path, table) for path in _files(dt)]
        kept = {os.path.relpath(path, table): mask for path, mask in kept_rows(dt).items()}
        vectors = current_vectors(table, dt.version()) if kept else {}
        strings = [k for k in keys if pa.types.is_string(self.schema(name).field(k).type)]

        def read(file: str) -> pa.Table:    # ParquetFile: pq.read_table imports pandas
            return pq.ParquetFile(os.path.join(table, file), read_dictionary=strings).read(columns=[*keys, count])
        return Placed.read(dt.version(), files, read, kept, vectors, keys, count, self.schema(name))

    def _add_action(self, name: str, path: str) -> dict:
        """The add action of data file ``path`` of table ``name`` (statistics from its footer),
        made once per file: the merges of a paths batch at 1M edges re-add a few hundred files,
        and reading their footers again was 2% of the batch's CPU."""
        full = os.path.join(self.path(name), path)
        with self._adding:
            action = self._adds.get(full)
            if action is not None:
                self._adds.move_to_end(full)
                return dict(action)
        info = os.stat(full)
        action = {"path": path, "partitionValues": {}, "size": info.st_size, "modificationTime": int(info.st_mtime * 1000),
                  "dataChange": True, "stats": json.dumps(_stats(pq.read_metadata(full)))}
        with self._adding:
            self._adds[full] = action
            if len(self._adds) > _ADD_CACHE:
                self._adds.popitem(last=False)
        return dict(action)

    def _commit_actions(self, name: str, before: int, actions: list[dict], txn: Txn | None,
                        operation: str, metrics: dict, parameters: dict | None = None) -> int:
        """Commit ``actions`` to table ``name`` as the version after ``before``, the way delta-rs
        commits to a local file system: the commit written aside, then linked to its name, which
        fails (:class:`VersionTaken`) if another writer took the version. Every
        ``delta.checkpointInterval`` versions, a checkpoint (:meth:`_LogPolicy.checkpoint_due`), as
        delta-rs's own commits make.

        The table's state is not read back (:meth:`_head`): delta-rs lists the whole log folder to
        find a table's new commits, so each commit through it, which reads its own back, cost more
        the longer the table's history (12 ms at 50 log files, 59 ms at 3,300). The state is
        brought up to date when a read or a checkpoint needs it."""
        version, policy = before + 1, self._log_policy(name)
        now = int(time.time() * 1000)
        entries = [{"commitInfo": {"timestamp": now, "operation": operation, "operationParameters": parameters or {},
                                   "operationMetrics": metrics, "clientVersion": "lakegraph"}}]
        if txn is not None:
            entries.append({"txn": {"appId": txn.app_id, "version": txn.version, "lastUpdated": now}})
        log = os.path.join(self.path(name), "_delta_log")
        aside = os.path.join(log, f"_commit_{uuid.uuid4()}.json.tmp")
        with open(aside, "w") as out:
            out.write("".join(json.dumps(entry) + "\n" for entry in entries + actions))
        try:
            os.link(aside, os.path.join(log, f"{version:020d}.json"))
        except FileExistsError:
            raise VersionTaken(f"table {name!r}: another writer committed version {version} first") from None
        finally:
            os.remove(aside)
        self._heads[name] = version
        if any("protocol" in action for action in actions):
            self._protocols.pop(name, None)
        if policy.checkpoint_due(name, version):
            # loaded afresh (from the last checkpoint: a short tail to replay) rather than brought
            # up to date, then kept: one listing of the log, where catching up and reloading from
            # the new checkpoint (as :meth:`_committed` does) took two
            dt = self._latest[name] = DeltaTable(self.path(name))
            dt.create_checkpoint()
            if policy.expire_logs:
                dt.cleanup_metadata()
            if dt.version() >= version:
                self._heads.pop(name, None)
        return version

    def _log_policy(self, name: str) -> _LogPolicy:
        """How table ``name``'s log is kept (delta-rs's defaults for properties it lacks)."""
        if name not in self._policies:
            configuration = self._table(name).metadata().configuration
            self._policies[name] = _LogPolicy(
                int(configuration.get("delta.checkpointInterval", _DEFAULT_CHECKPOINT_EVERY)),
                configuration.get("delta.enableExpiredLogCleanup", "true").lower() != "false")
        return self._policies[name]

    def delete(self, name: str, predicate: str | None = None, txn: Txn | None = None) -> bool:
        if self._done(name, txn):
            return False
        dt = self._table(name)
        self._known.pop(name, None)
        dt.delete(predicate, commit_properties=self._props(txn))
        self._committed(name, dt)
        return True

    # -- reads ------------------------------------------------------------------------------
    def read(self, name: str, version: int | None = None):
        if self.spark is None:
            raise StorageError("reading a table as a Spark DataFrame needs a Spark session")
        from .spark_arrow import arrow_schema_to_spark

        dt = self._table(name, version)
        files = _files(dt)
        schema = arrow_schema_to_spark(self.schema(name))
        if not files:
            return self.spark.createDataFrame([], schema)
        frame = self.spark.read.schema(schema).parquet(*files)
        kept = kept_rows(dt)
        if not kept:
            return frame
        # the rows a deletion vector marks: left out by their file and position in it
        from pyspark.sql import functions as F

        from .spark_arrow import frame_of

        gone = frame_of(self.spark, deleted_positions(kept))
        at = [F.col("_metadata.file_name") == gone["file_name"], F.col("_metadata.row_index") == gone["row_index"]]
        return frame.join(F.broadcast(gone), at, "left_anti")

    def read_arrow(self, name: str, version: int | None = None,
                   columns: Sequence[str] | None = None) -> pa.Table:
        schema, at, parts = self._parts(name, version, columns)
        table = pa.concat_tables([rows for _, rows in parts]) if parts else pa.Table.from_batches([], schema)
        if not columns and at is not None:
            self._remember(name, at, table)
        return table

    def read_folded(self, name: str, version: int | None = None) -> tuple[pa.Table, pa.Table]:
        schema, _, parts = self._parts(name, version, None)
        folded, rest = [pa.Table.from_batches([], schema)], [pa.Table.from_batches([], schema)]
        for path, rows in parts:
            (folded if path is not None and os.path.basename(path).startswith(_FOLDED) else rest).append(rows)
        return pa.concat_tables(folded), pa.concat_tables(rest)

    def _parts(self, name: str, version: int | None,
               columns: Sequence[str] | None) -> tuple[pa.Schema, int | None, list[tuple[str | None, pa.Table]]]:
        """Table ``name`` at ``version`` (``columns`` only, if given): its schema, the version read
        from its files (None when its rows came from memory), and its rows by data file (path None
        for rows held in memory)."""
        # Read the version's parquet files with pyarrow: delta-rs's own reader can abort the
        # process at exit (delta-rs#2184). Each file with ParquetFile, on threads as pyarrow.dataset
        # would: pyarrow.dataset and pq.read_table import pandas, half a second of a CLI read (so
        # does schema.empty_table()).
        schema = self.schema(name)
        if columns:
            schema = pa.schema([schema.field(c) for c in columns])
        known = self._known.get(name)
        at = self._head(name) if version is None else version     # a version held opens no table
        if known is not None and known[0] == at:
            return schema, None, [(None, self._from_memory(known[1].select(schema.names)))]
        placed = self._placed.get(name)
        held = placed.content(schema) if placed is not None and placed.version == at else None
        if held is not None:            # a table MERGEd by deletion vectors: its rows are held
            return schema, None, [(None, self._from_memory(held))]
        dt = self._table(name, version)
        files = _files(dt)
        kept = kept_rows(dt) if files else {}
        parts = self._read_files(files, schema, kept)
        return schema, dt.version(), [(path, rows) for path, rows in zip(files, parts)]

    def _read_files(self, files: Sequence[str], schema: pa.Schema, kept: dict[str, np.ndarray]) -> list[pa.Table]:
        """The rows of data ``files`` in ``schema`` (those ``kept`` marks, in a file it names), on
        the readers' threads, counted in :attr:`reads`."""
        wanted = set(schema.names)

        def read(path: str) -> tuple[pa.Table, int]:
            handle = pq.ParquetFile(path)
            meta = handle.metadata
            size = sum(meta.row_group(g).column(c).total_compressed_size for g in range(meta.num_row_groups)
                       for c in range(meta.num_columns) if meta.schema.column(c).name in wanted)
            rows = _with_columns(handle.read(columns=[c for c in schema.names if c in handle.schema_arrow.names],
                                             use_threads=False), schema)
            return (rows if path not in kept else rows.filter(pa.array(kept[path]))), size

        parts = list(_pool("readers", pa.io_thread_count()).map(read, files))
        with self._counting:
            self.reads.file_rows += sum(rows.num_rows for rows, _ in parts)
            self.reads.file_bytes += sum(size for _, size in parts)
        return [rows for rows, _ in parts]

    def table_id(self, name: str) -> str | None:
        """The id table ``name``'s first commit gave it (None once the log no longer holds that
        commit): a table dropped and created again at the same path has another."""
        try:
            with open(os.path.join(self.path(name), "_delta_log", f"{0:020d}.json")) as log:
                for line in log:
                    action = json.loads(line)
                    if "metaData" in action:
                        return action["metaData"]["id"]
        except FileNotFoundError:
            return None
        return None

    def appended(self, name: str, since: int, version: int) -> pa.Table | None:
        """The rows the commits after version ``since`` up to ``version`` appended to table
        ``name``, when each of them only added files (no file removed or marked, no schema or
        protocol change), read from those files alone; None otherwise, or once the log no longer
        holds one of them. A process holding a merge-on-read table another process appends to
        follows it with these rows instead of reading the table again."""
        log = os.path.join(self.path(name), "_delta_log")
        files = []
        for at in range(since + 1, version + 1):
            try:
                with open(os.path.join(log, f"{at:020d}.json")) as commit:
                    actions = [json.loads(line) for line in commit if line.strip()]
            except FileNotFoundError:
                return None
            for action in actions:
                if {"remove", "metaData", "protocol"} & action.keys():
                    return None
                add = action.get("add")
                if add is not None:
                    if add.get("deletionVector") or "://" in add["path"]:
                        return None
                    files.append(os.path.join(self.path(name), unquote(add["path"])))
        schema = self.schema(name)
        parts = self._read_files(files, schema, {})
        return pa.concat_tables(parts) if parts else pa.Table.from_batches([], schema)

    def find_held(self, name: str, column: str, values: pa.Array, version: int) -> pa.Table | None:
        placed = self._placed.get(name)
        if placed is None or placed.version != version or column not in placed.columns:
            return None
        rows = placed.find(column, values, self.schema(name))
        return None if rows is None else self._from_memory(rows)

    def count_reads(self, reads: ReadCounts) -> None:
        """Count ``reads`` made for this store elsewhere: by the executors' tasks of a Spark-engine
        batch (:mod:`pipelines.engine.tasks`), which open the lake themselves."""
        with self._counting:
            self.reads.file_rows += reads.file_rows
            self.reads.file_bytes += reads.file_bytes
            self.reads.memory_rows += reads.memory_rows

    def _from_memory(self, rows: pa.Table) -> pa.Table:
        """``rows``, read from what this store holds rather than from files: counted as such."""
        with self._counting:
            self.reads.memory_rows += rows.num_rows
        return rows

    def row_count(self, name: str, version: int | None = None) -> int:
        placed = self._placed.get(name)
        if placed is not None and placed.version == (self.version(name) if version is None else version):
            # a table MERGEd by deletion vectors: its add actions and vectors, read at a pinned
            # version, took 40 ms for the 4-cycle's gold at 10M triples, at every batch
            return placed.rows
        dt = self._table(name, version)
        # pa.table() on a foreign Arrow object imports pandas; the C stream interface does not.
        adds = pa.RecordBatchReader.from_stream(dt.get_add_actions()).read_all()
        counts = adds.column("num_records").to_pylist()
        if None in counts:  # a file committed without statistics: count from the parquet footers
            counts = [pq.ParquetFile(path).metadata.num_rows for path in _files(dt)]
        return sum(counts) - sum(int((~mask).sum()) for mask in kept_rows(dt).values())

    def version_at(self, name: str, when: datetime) -> int:
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        stamp = when.timestamp() * 1000
        best = None
        for commit in self._table(name).history():
            if commit["timestamp"] <= stamp and (best is None or commit["version"] > best):
                best = commit["version"]
        if best is None:
            raise StorageError(f"table {name!r} did not exist at {when.isoformat()}")
        return best

    def changes(self, name: str, start: int, end: int | None = None) -> pa.Table:
        dt = self._table(name)
        reader = dt.load_cdf(starting_version=start, ending_version=end)
        table = normalise_arrow(pa.table(reader.read_all()))
        if table.num_rows:
            table = table.sort_by([("_commit_version", "ascending")])
        return table

    def history(self, name: str) -> list[dict]:
        out = []
        for commit in self._table(name).history():
            metrics = commit.get("operationMetrics") or {}
            out.append({
                "version": commit.get("version"),
                "timestamp": datetime.fromtimestamp(commit["timestamp"] / 1000, tz=timezone.utc),
                "operation": commit.get("operation"),
                "rows_added": metrics.get("num_added_rows", metrics.get("num_target_rows_inserted")),
            })
        return out

    # -- maintenance ------------------------------------------------------------------------
    def compact(self, name: str, zorder: Sequence[str] = ()) -> dict:
        optimize = self._table(name).optimize
        return optimize.z_order(list(zorder)) if zorder else optimize.compact()

    def vacuum(self, name: str, retention_hours: float, dry_run: bool = False) -> list[str]:
        removed = self._table(name).vacuum(retention_hours=int(retention_hours), dry_run=dry_run,
                                           enforce_retention_duration=False)
        return removed + self._vacuum_change_data(name, retention_hours, dry_run)

    def _vacuum_change_data(self, name: str, retention_hours: float, dry_run: bool) -> list[str]:
        """The change-data files (``_change_data/``, one per MERGE or DELETE) written longer than
        ``retention_hours`` ago, deleted unless ``dry_run``. delta-rs's vacuum passes over every
        name starting with ``_``, so a state table's grew without end; Delta's vacuum on Spark
        deletes them by age, as here. Only the change feed of versions older than the retention
        goes: lakegraph reads only bronze's, which is append-only and has no such files."""
        folder = os.path.join(self.path(name), "_change_data")
        cutoff = time.time() - retention_hours * 3600
        old = [os.path.join(root, n) for root, _, names in os.walk(folder) for n in names
               if os.path.getmtime(os.path.join(root, n)) <= cutoff]
        if not dry_run:
            for path in old:
                os.remove(path)
        return [os.path.relpath(path, self.path(name)) for path in old]

