"""One table's rows from one landing file, gathered chunk by chunk for a single commit.

Why staged: a file must land in one commit per table (the ingest's crash recovery counts on it),
but a large file's rows do not fit in memory. The first chunk's rows stay in memory (most files are
one chunk, and pay nothing more); from the second on, every chunk is written to parquet files under
``<lake>/_ingest/``, which the commit takes as they are (:meth:`TableStore.append_parquet`). The
directory holds only the file being ingested, under the ingest lock; :func:`clear` removes what a
killed ingest left there.
"""
from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq

from .storage import TableStore, Txn

#: Where a file's staged rows are spilled, inside the lake.
STAGING = "_ingest"
#: A spilled parquet file is closed, and the next one started, past this size (Delta's usual
#: target file size).
FILE_BYTES = 128 << 20


def clear(root: str) -> None:
    """Remove the staging directory of the lake at ``root`` (call it under the ingest lock)."""
    shutil.rmtree(os.path.join(root, STAGING), ignore_errors=True)


class Staged:
    """Rows of ``schema`` for table ``name``: :meth:`add` each chunk's, then :meth:`commit` once."""

    def __init__(self, root: str, name: str, schema: pa.Schema) -> None:
        self.directory = os.path.join(root, STAGING)
        self.name = name
        self.schema = schema
        self.rows = 0
        self.files: list[str] = []
        self._first: pa.Table | None = None
        self._writer: pq.ParquetWriter | None = None

    def add(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        self.rows += table.num_rows
        if self._first is None and not self.files:
            self._first = table
            return
        if self._first is not None:
            self._spill(self._first)
            self._first = None
        self._spill(table)

    def _spill(self, table: pa.Table) -> None:
        if self._writer is None:
            os.makedirs(self.directory, exist_ok=True)
            self.files.append(os.path.join(self.directory, f"{self.name}-{len(self.files)}.parquet"))
            self._writer = pq.ParquetWriter(self.files[-1], self.schema)
        self._writer.write_table(table)
        if os.path.getsize(self.files[-1]) > FILE_BYTES:
            self.close()

    def close(self) -> None:
        """Close the spill file being written, if any."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def commit(self, store: TableStore, txn: Txn | None) -> None:
        """Append the rows added to the table, in one commit carrying ``txn``."""
        if self._first is not None:
            store.append(self.name, self._first, txn)
        elif self.files:
            self.close()
            store.append_parquet(self.name, self.files, txn)
