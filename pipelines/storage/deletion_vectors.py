"""Deletion vectors: the rows of a Delta version's files that the version no longer holds.

A writer with deletion vectors on (delta-spark's DELETE, UPDATE and MERGE with
``delta.enableDeletionVectors``, Databricks, Trino) removes rows from a file by marking their
positions rather than rewriting the file: the version's rows are each file's rows less the marked
ones. delta-rs reads them, but this store reads a version's parquet files itself (with pyarrow, and
with Spark as plain parquet), so it applies them itself: a table it reads may have been written by
another engine, or by the delta-spark backend of the same lake.
"""
from __future__ import annotations

import json
import os
import struct
import uuid
import zlib
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
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


# -- writing --------------------------------------------------------------------------------
#: The RoaringBitmapArray's magic number, then its 64-bit portable layout: a count of 32-bit
#: bitmaps, then each with the high half of its values (row positions stay below 2**32 here).
_MAGIC = 1681511377
_NO_RUNS = 12346            # the portable format's cookie for bitmaps without run containers
_ARRAY_MAX = 4096           # a container of more values is a 65,536-bit bitmap
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _z85(data: bytes) -> str:
    """ZeroMQ's Z85 text of ``data`` (a multiple of 4 bytes): how a descriptor names its file."""
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i:i + 4], "big")
        chunk = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            chunk.append(_Z85[digit])
        out.append("".join(reversed(chunk)))
    return "".join(out)


def _bitmap(rows: np.ndarray) -> bytes:
    """The serialized deletion vector of ``rows`` (sorted, distinct row positions)."""
    if len(rows) and rows[-1] >= 2 ** 32:
        raise ValueError("a deletion vector here holds row positions below 2**32")
    high, low = (rows >> 16).astype(np.uint16), (rows & 0xFFFF).astype("<u2")
    keys, starts, counts = np.unique(high, return_index=True, return_counts=True)
    bodies = []
    for start, n in zip(starts, counts):
        values = low[start:start + n]
        if n <= _ARRAY_MAX:
            bodies.append(values.tobytes())
        else:
            bits = np.zeros(65536, dtype=bool)
            bits[values] = True
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
    header = struct.pack("<II", _NO_RUNS, len(keys)) + b"".join(
        struct.pack("<HH", int(key), int(n) - 1) for key, n in zip(keys, counts))
    offset = len(header) + 4 * len(keys)
    offsets = []
    for body in bodies:
        offsets.append(struct.pack("<I", offset))
        offset += len(body)
    return struct.pack("<IqI", _MAGIC, 1, 0) + header + b"".join(offsets) + b"".join(bodies)


#: The writer features a legacy writer version implies, which a table moving to table features
#: (writer 7) lists, as delta-spark does when it upgrades one.
_LEGACY_WRITER_FEATURES = {2: ["appendOnly", "invariants"], 3: ["checkConstraints"],
                           4: ["changeDataFeed", "generatedColumns"]}


def with_vectors(protocol) -> dict:
    """The protocol action that adds the deletion vectors feature to a table at ``protocol``
    (delta-rs's :class:`ProtocolVersions`): reader 3 and writer 7, with the features the table had,
    named, and this one."""
    writer = list(protocol.writer_features or [])
    if protocol.min_writer_version < 7:
        writer = [f for version, names in _LEGACY_WRITER_FEATURES.items()
                  if version <= protocol.min_writer_version for f in names]
    return {"minReaderVersion": 3, "minWriterVersion": 7,
            "readerFeatures": sorted({*(protocol.reader_features or []), FEATURE}),
            "writerFeatures": sorted({*writer, FEATURE})}


def write_vectors(table_path: str, rows: dict[str, np.ndarray]) -> dict[str, dict]:
    """Write the deletion vectors of some files (each file's deleted row positions, sorted and
    distinct) into one new file of the table, ``deletion_vector_<uuid>.bin``; each file's
    descriptor, for its add action. The file: a format version byte, then per vector its size
    (big-endian), the bitmap and its CRC-32."""
    name = uuid.uuid4()
    descriptors, parts, offset = {}, [b"\x01"], 1
    for path, positions in rows.items():
        bitmap = _bitmap(positions)
        parts.append(struct.pack(">i", len(bitmap)) + bitmap + struct.pack(">I", zlib.crc32(bitmap)))
        descriptors[path] = {"storageType": "u", "pathOrInlineDv": _z85(name.bytes), "offset": offset,
                             "sizeInBytes": len(bitmap), "cardinality": len(positions)}
        offset += len(parts[-1])
    with open(os.path.join(table_path, f"deletion_vector_{name}.bin"), "xb") as out:
        out.write(b"".join(parts))
    return descriptors


def current_vectors(table_path: str, version: int) -> dict[str, dict]:
    """The descriptor of each data file that has a deletion vector at ``version`` (by the path
    its add action names), replayed from the log: a commit that replaces a file's vector must
    remove the file with the vector it had (a reader tells a file's versions apart by both), and
    delta-rs does not expose them. From the newest checkpoint at or below ``version`` (a single
    parquet file, as delta-rs writes them), then the commits after it."""
    log = os.path.join(table_path, "_delta_log")
    checkpoints = [int(f.split(".")[0]) for f in os.listdir(log) if f.endswith(".checkpoint.parquet")]
    start = max((v for v in checkpoints if v <= version), default=-1)
    vectors: dict[str, dict] = {}
    if start >= 0:
        adds = pq.read_table(os.path.join(log, f"{start:020d}.checkpoint.parquet"), columns=["add"])["add"]
        for add in adds.drop_null().to_pylist():
            if add.get("deletionVector"):
                vectors[unquote(add["path"])] = add["deletionVector"]
    for at in range(start + 1, version + 1):
        with open(os.path.join(log, f"{at:020d}.json")) as commit:
            actions = [json.loads(line) for line in commit if line.strip()]
        # a commit's removes name files as they were before it, its adds as they are after it
        for action in actions:
            if "remove" in action:
                vectors.pop(unquote(action["remove"]["path"]), None)
        for action in actions:
            if "add" in action and action["add"].get("deletionVector"):
                vectors[unquote(action["add"]["path"])] = action["add"]["deletionVector"]
    return vectors
