"""A MERGE of counts by deletion vectors: the rows a change touches are marked deleted where they
lie, and their new counts written as a new file, rather than every file they fall in rewritten.

A consolidated table (a query's gold answers: one row per distinct row with its multiplicity) takes
a batch's signed change by key: a key's count moves, a row whose count reaches zero goes, a new key
comes in. Copy-on-write, as delta-rs's MERGE does it, rewrites every file a changed key falls in,
and a batch's keys fall in all of them: the 4-cycle's 2.2M answers at 10M triples, rewritten for a
few hundred changes, and eleven path queries' 27M answers at 1M edges, for a batch's 10,000 edges.
Here the store holds each such table's key columns with where each row lies (:class:`Placed`),
finds the changed keys' rows by hash, and commits: the touched files again with their deletion vectors
grown by those rows, and one new file with the rows' new counts and the new keys. The cost follows
the change; the table reads as before, consolidated, for any reader of deletion vectors (delta-rs,
Spark, DuckDB's delta extension, Trino; this store's own reads: :mod:`.deletion_vectors`).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _grown(array: np.ndarray, used: int, more: np.ndarray) -> np.ndarray:
    """``array`` (its first ``used`` entries in use) with ``more`` after them: in place while it
    has room, else in a copy with room for as much again, so that appending costs what it appends."""
    if used + len(more) > len(array):
        array = np.concatenate([array[:used], np.empty(max(used, len(more)) + len(more), array.dtype)])
    array[used:used + len(more)] = more
    return array


#: A key column's dictionary is probed for a change's values only while it has fewer entries than
#: this many times the rows the best probe so far leads to: probing an entry costs about a fiftieth
#: of building and comparing a candidate row's whole key (the 4-cycle's gold at 10M triples: its
#: subjects' 1.7M entries took 26 ms, where the 8,445 rows the other three columns left took 6 ms).
_PROBE_RATIO = 50

#: A column's appended dictionary chunks are one array again once there are this many (``is_in``
#: hashes its value set once per chunk); the chunk read from the table stays as it is (copying it
#: cost 20 ms at 10M triples).
_CHUNKS = 8


class _Column:
    """A key column as held: a dictionary of values, in chunks (the parquet row groups' as read,
    then each commit's written values; repeats allowed), and each row's code into it. Finding the
    rows that hold some values is a hash probe per dictionary value and a binary search in an
    index of the rows by code (a gather by code, for rows already found in another column): a path
    query's 7M answers name 1M nodes, and Arrow's ``is_in`` over dictionary-encoded rows decodes
    them (0.73 s where this takes 0.04-0.07 s). The row groups' dictionaries are not unified
    (a second at 7M rows, paid by every process's first merge): they are only concatenated."""

    def __init__(self, column: pa.ChunkedArray) -> None:
        chunks = column.chunks
        if pa.types.is_dictionary(column.type):
            # an unbound value is a null index: its code is a null put after the dictionaries
            starts = np.cumsum([0] + [len(c.dictionary) for c in chunks])
            unbound = int(starts[-1])
            self.dictionary = [pa.concat_arrays([c.dictionary for c in chunks] + [pa.nulls(1, column.type.value_type)])]
            self.codes = np.concatenate([np.zeros(0, np.int64)] + [
                np.where(np.asarray(c.indices.is_valid()), c.indices.fill_null(0).to_numpy(zero_copy_only=False) + start,
                         unbound) for c, start in zip(chunks, starts)])
        else:
            self.dictionary, self.codes = [column.combine_chunks()], np.arange(len(column))
        self.size = len(self.dictionary[0])
        # rows per dictionary entry (dead ones too): how many rows a probe's hits lead to
        self.frequency = np.bincount(self.codes, minlength=self.size)
        # an index of the first rows by code, built on first use and again once a quarter as many
        # rows came after them: the rows in code order, and their codes
        self._order = self._sorted = np.zeros(0, np.int64)

    def positions(self, values: pa.Array) -> np.ndarray:
        """For each dictionary entry, the position in ``values`` (distinct) of its value, -1 for
        none (nulls match nulls)."""
        return np.concatenate([pc.index_in(d, value_set=values).fill_null(-1).to_numpy(zero_copy_only=False)
                               for d in self.dictionary])

    def hits(self, values: pa.Array) -> np.ndarray:
        """The dictionary positions holding one of ``values`` (nulls match nulls), ascending."""
        return np.flatnonzero(self.positions(values) >= 0)

    def values_at(self, rows: np.ndarray, values: pa.Array) -> np.ndarray:
        """For each of ``rows``, the position in ``values`` (distinct) of its value, -1 for none."""
        return pc.index_in(self.take(rows), value_set=values).fill_null(-1).to_numpy(zero_copy_only=False)

    def rows_of(self, hits: np.ndarray, used: int) -> np.ndarray:
        """The rows, of the first ``used``, holding a value of dictionary positions ``hits``:
        found in the index by binary search, not by a pass over every row."""
        if 4 * (used - len(self._order)) > len(self._order):
            self._order = np.argsort(self.codes[:used], kind="stable")
            self._sorted = self.codes[self._order]
        lo, hi = np.searchsorted(self._sorted, hits, "left"), np.searchsorted(self._sorted, hits, "right")
        lengths = hi - lo
        # order[lo:hi] for every hit, concatenated: each range's start, plus 0, 1, ... within it
        within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        indexed = self._order[np.repeat(lo, lengths) + within]
        tail = len(self._order) + np.flatnonzero(np.isin(self.codes[len(self._order):used], hits))
        return np.concatenate([indexed, tail])

    def take(self, rows: np.ndarray) -> pa.Array:
        """The values of ``rows``, taken from each dictionary chunk apart (a take from the chunks
        as one array concatenates them first: 0.1 s for the 4-cycle's subjects at 10M triples)."""
        codes = self.codes[rows]
        if len(self.dictionary) == 1:
            return self.dictionary[0].take(codes)
        starts = np.cumsum([0] + [len(d) for d in self.dictionary])
        chunk = np.searchsorted(starts, codes, "right") - 1
        order = np.argsort(chunk, kind="stable")
        bounds = np.searchsorted(chunk[order], np.arange(len(starts)))
        pieces = [d.take(codes[order[bounds[i]:bounds[i + 1]]] - starts[i]) for i, d in enumerate(self.dictionary)]
        return pa.concat_arrays(pieces).take(np.argsort(order))

    def append(self, values: pa.Array, used: int) -> None:
        """Rows ``used`` onwards hold ``values``."""
        self.dictionary.append(values.cast(self.dictionary[0].type))
        if len(self.dictionary) > _CHUNKS:     # the values appended since reading: the table's stay apart
            self.dictionary = [self.dictionary[0], pa.concat_arrays(self.dictionary[1:])]
        self.codes = _grown(self.codes, used, np.arange(self.size, self.size + len(values)))
        self.frequency = _grown(self.frequency, self.size, np.ones(len(values), np.int64))
        self.size += len(values)


def _numbered(found: list[np.ndarray], wanted: list[np.ndarray], sizes: list[int],
              candidates: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """One number per candidate (of ``candidates``) and per delta row (of ``rows``) for their whole
    key (all 0 without key columns), from each key column's value positions (``found`` for the
    candidates, -1 for a value the delta does not hold; ``wanted`` for the delta's rows, ``sizes``
    the distinct values per column): equal exactly when the keys are; a candidate holding a value
    the delta does not gets -1, which no row's is. The numbers are renumbered densely whenever they
    could pass 2^62."""
    valid = np.ones(candidates, bool)
    for positions in found:
        valid &= positions >= 0
    key = np.zeros(candidates + rows, np.int64)
    bound = 1
    for positions, more, size in zip(found, wanted, sizes):
        if bound * max(size, 1) >= 2 ** 62:
            _, key = np.unique(key, return_inverse=True)
            bound = int(key.max()) + 1 if len(key) else 1
        key = key * max(size, 1) + np.concatenate([np.maximum(positions, 0), more])
        bound *= max(size, 1)
    return np.where(valid, key[:candidates], -1), key[candidates:]


class Placed:
    """A consolidated table's rows at one version: each row's key columns, count, file and
    position in the file, and whether it is still live; and each file's deleted rows (a mask) with
    the descriptor of its deletion vector. A commit marks the rows it touches dead and appends the
    rows it writes, in place: nothing is copied at the size of the table (27M rows for eleven path
    queries at 1M edges). Kept until the table's files are compacted, which moves every row; then
    read again."""

    def __init__(self, version: int, files: list[str], sizes: list[int], columns: dict[str, _Column],
                 count: str, counts: np.ndarray, file: np.ndarray, row: np.ndarray, live: np.ndarray,
                 gone: dict[int, np.ndarray], vectors: dict[int, dict]) -> None:
        self.version = version
        self.count = count              # the count column's name
        self.files = files              # data files, by the path their add actions name
        self.sizes = sizes              # their rows
        self.columns = columns          # the key columns
        self.used = len(counts)         # rows (the arrays below have room for more)
        self.counts, self.file, self.row, self.live = counts, file, row, live
        self.gone = gone                # by file: its rows deleted (a mask)
        self.vectors = vectors          # by file: its deletion vector's descriptor

    @classmethod
    def read(cls, version: int, files: Sequence[str], read: Callable[[str], pa.Table],
             kept: dict[str, np.ndarray], vectors: dict[str, dict], keys: Sequence[str],
             count: str, schema: pa.Schema) -> "Placed":
        """The table's rows from its ``files`` (``read`` gives a file's rows, its string columns
        dictionary-encoded; ``kept`` the masks of the files with deletion vectors, whose
        descriptors are ``vectors``; ``schema`` the table's)."""
        parts, counts, file, row, live, gone, by_file = [], [], [], [], [], {}, {}
        for i, path in enumerate(files):
            rows = read(path)
            parts.append(rows.select(list(keys)))
            counts.append(rows[count].to_numpy())
            file.append(np.full(rows.num_rows, i, dtype=np.int32))
            row.append(np.arange(rows.num_rows))
            mask = kept.get(path)
            live.append(np.ones(rows.num_rows, dtype=bool) if mask is None else mask)
            if mask is not None:
                gone[i], by_file[i] = ~mask, vectors[path]
        join = np.concatenate
        content = pa.concat_tables(parts) if parts else \
            pa.Table.from_batches([], pa.schema([schema.field(k) for k in keys]))
        columns = {k: _Column(content[k]) for k in keys}
        return cls(version, list(files), [len(r) for r in row], columns, count,
                   join(counts) if counts else np.zeros(0, np.int64), join(file) if file else np.zeros(0, np.int32),
                   join(row) if row else np.zeros(0, np.int64), join(live) if live else np.zeros(0, bool),
                   gone, by_file)

    def change(self, delta: pa.Table) -> tuple[np.ndarray, pa.Table]:
        """What adding ``delta`` (signed counts, one row per key) does: the live rows it touches
        (their positions here), and the rows to write: the touched keys' new counts and the new
        keys' (zero counts left out)."""
        keys, count = list(self.columns), self.count
        # candidates: the live rows whose key columns hold values of the delta's. Each column's
        # dictionary is probed, the smallest first, while that costs less than checking the rows
        # the best probe so far leads to; the rows of the best one are found through its index,
        # and those of the others' values kept. Then the candidates whose whole key is the delta's,
        # compared as numbers: each key value's position among the delta's values of its column.
        distinct = {k: pc.unique(delta[k].combine_chunks()) for k in keys}
        probed: dict[str, np.ndarray] = {}     # per probed column: each dictionary entry's position
        best: tuple[int, np.ndarray, _Column] | None = None
        for k in sorted(keys, key=lambda k: self.columns[k].size):
            column = self.columns[k]
            if best is not None and column.size > _PROBE_RATIO * best[0]:
                break
            probed[k] = column.positions(distinct[k])
            hits = np.flatnonzero(probed[k] >= 0)
            rows = int(column.frequency[hits].sum())
            if best is None or rows < best[0]:
                best = rows, hits, column
        if best is not None:
            candidates = best[2].rows_of(best[1], self.used)
            candidates = np.sort(candidates[self.live[candidates]])
            for k, positions in probed.items():
                if self.columns[k] is not best[2]:      # the best one's rows hold its values already
                    candidates = candidates[positions[self.columns[k].codes[candidates]] >= 0]
        else:
            candidates = np.flatnonzero(self.live[:self.used])
        found = [probed[k][self.columns[k].codes[candidates]] if k in probed
                 else self.columns[k].values_at(candidates, distinct[k]) for k in keys]
        wanted = [pc.index_in(delta[k], value_set=distinct[k]).to_numpy(zero_copy_only=False) for k in keys]
        candidate_keys, delta_keys = _numbered(found, wanted, [len(distinct[k]) for k in keys],
                                                len(candidates), delta.num_rows)
        # each candidate's row of the delta (its keys are distinct), by a hash of the delta's keys:
        # a binary search of each candidate in them took 0.12 s of a path query's merge at 1M
        # edges (1.4M candidates for 34,000 keys, probed in no order), the hash 0.015 s
        at = pc.index_in(pa.array(candidate_keys), value_set=pa.array(delta_keys)).fill_null(-1) \
            .to_numpy(zero_copy_only=False)
        exact = at >= 0
        touched, at = candidates[exact], at[exact]
        i = delta.schema.get_field_index(count)
        moved = delta.take(at).set_column(i, delta.schema.field(i),
                                          pa.array(self.counts[touched] + delta[count].to_numpy()[at]))
        fresh = np.ones(delta.num_rows, dtype=bool)
        fresh[at] = False
        written = pa.concat_tables([moved, delta.filter(pa.array(fresh))])
        return touched, written.filter(pc.not_equal(written[count], 0))

    def find(self, column: str, values: pa.Array, schema: pa.Schema) -> pa.Table | None:
        """The live rows whose key ``column`` holds one of ``values``, as :meth:`content` gives them."""
        key = self.columns[column]
        rows = key.rows_of(key.hits(values), self.used)
        return self.content(schema, np.sort(rows[self.live[rows]]))

    def content(self, schema: pa.Schema, rows: np.ndarray | None = None) -> pa.Table | None:
        """The columns of ``schema`` (None unless each is a key column or the count) of the live
        ``rows`` (by default all), in the order a read of the table's files gives them."""
        if not set(schema.names) <= {*self.columns, self.count}:
            return None
        rows = np.flatnonzero(self.live[:self.used]) if rows is None else rows
        return pa.Table.from_arrays([pa.array(self.counts[rows]) if f.name == self.count else self.columns[f.name].take(rows)
                                     for f in schema], schema=pa.schema([f.remove_metadata() for f in schema])).cast(schema)

    @property
    def rows(self) -> int:
        """The live rows: the table's row count at :attr:`version`."""
        return int(np.count_nonzero(self.live[:self.used]))

    def deleted(self, touched: np.ndarray) -> dict[int, np.ndarray]:
        """Per file the touched rows are in, its deleted rows once they are too (a mask)."""
        out = {}
        files, rows = self.file[touched], self.row[touched]
        for f in np.unique(files):
            f = int(f)
            mask = self.gone[f].copy() if f in self.gone else np.zeros(self.sizes[f], dtype=bool)
            mask[rows[files == f]] = True
            out[f] = mask
        return out

    def commit(self, version: int, touched: np.ndarray, deleted: dict[int, np.ndarray],
               vectors: dict[int, dict], path: str | None, written: pa.Table) -> None:
        """The change made at ``version``: the touched rows dead, the ``written`` ones live in the
        new file ``path``, the deletion vectors grown."""
        self.version = version
        self.live[touched] = False
        self.gone.update(deleted)
        self.vectors.update(vectors)
        if path is None:
            return
        n = written.num_rows
        self.files.append(path)
        self.sizes.append(n)
        for k, column in self.columns.items():
            column.append(written[k].combine_chunks(), self.used)
        self.counts = _grown(self.counts, self.used, written[self.count].to_numpy())
        self.file = _grown(self.file, self.used, np.full(n, len(self.files) - 1, dtype=np.int32))
        self.row = _grown(self.row, self.used, np.arange(n))
        self.live = _grown(self.live, self.used, np.ones(n, dtype=bool))
        self.used += n
