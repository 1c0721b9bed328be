"""Deletion vectors: the rows of a Delta version's files that the version no longer holds.

A writer with deletion vectors on (delta-spark's DELETE, UPDATE and MERGE with
``delta.enableDeletionVectors``, Databricks, Trino) removes rows from a file by marking their
positions rather than rewriting the file: the version's rows are each file's rows less the marked
ones. delta-rs reads them, but this store reads a version's parquet files itself (with pyarrow, and
with Spark as plain parquet), so it applies them itself: a table it reads may have been written by
another engine, or by the delta-spark backend of the same lake.
"""
from __future__ import annotations

from urllib.parse import unquote

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable

#: The reader feature a table declares once any of its versions may carry deletion vectors.
FEATURE = "deletionVectors"


def local_path(uri: str) -> str:
    """A data file's local path from the URI delta-rs gives (percent-encoded: a lake path with a
    space, a quote or a % would otherwise name files that do not exist)."""
    return unquote(uri.removeprefix("file://"))


def kept_rows(dt: DeltaTable) -> dict[str, np.ndarray]:
    """Per data file of ``dt``'s version that has a deletion vector (by local path), a mask of
    the rows the version keeps; files without one keep every row and are left out. A table that
    never declared the feature costs no read."""
    if FEATURE not in (dt.protocol().reader_features or ()):
        return {}
    vectors = pa.RecordBatchReader.from_stream(dt.deletion_vectors()).read_all()
    masks = vectors.column("selection_vector").to_pylist()
    return {local_path(uri): np.asarray(mask, dtype=bool)
            for uri, mask in zip(vectors.column("filepath").to_pylist(), masks)}


def deleted_positions(kept: dict[str, np.ndarray]) -> pa.Table:
    """The rows the masks leave out, as (file name, row index): what Spark's ``_metadata``
    columns name a parquet row by."""
    names, positions = [], []
    for path, mask in kept.items():
        gone = np.flatnonzero(~mask)
        names.append(np.full(len(gone), path.rsplit("/", 1)[-1], dtype=object))
        positions.append(gone)
    return pa.table({"file_name": pa.array(np.concatenate(names) if names else [], pa.string()),
                     "row_index": pa.array(np.concatenate(positions) if positions else [], pa.int64())})
