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

from typing import Callable, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..sorted_sets import distinct, repeats
from ..string_index import HashTable, is_string_like, mixed, same_values, string_hashes


def _grown(array: np.ndarray, used: int, more: np.ndarray) -> np.ndarray:
    """``array`` (its first ``used`` entries in use) with ``more`` after them: in place while it
    has room, else in a copy with room for as much again, so that appending costs what it appends."""
    if used + len(more) > len(array):
        array = np.concatenate([array[:used], np.empty(max(used, len(more)) + len(more), array.dtype)])
    array[used:used + len(more)] = more
    return array


class _Column:
    """A key column as held: a dictionary of values, in chunks (the parquet row groups' as read,
    then each commit's written values; repeats allowed), and each row's code into it. Finding the
    rows that hold some values (a read of some nodes' answers) is a hash probe per dictionary value
    and a binary search in an index of the rows by code: a path query's 7M answers name 1M nodes,
    and Arrow's ``is_in`` over dictionary-encoded rows decodes them (0.73 s where this takes
    0.04-0.07 s). The row groups' dictionaries are not unified (a second at 7M rows, paid by every
    process's first merge): they are only concatenated."""

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
        self.index = _Index()           # the rows by code

    def hits(self, values: pa.Array) -> np.ndarray:
        """The dictionary positions holding one of ``values`` (nulls match nulls), ascending."""
        return np.flatnonzero(np.concatenate([pc.is_in(d, value_set=values).to_numpy(zero_copy_only=False)
                                              for d in self.dictionary]))

    def rows_of(self, hits: np.ndarray, used: int) -> np.ndarray:
        """The rows, of the first ``used``, holding a value of dictionary positions ``hits``."""
        return self.index.find(self.codes, used, hits)[0]

    def hashes(self, rows: np.ndarray) -> np.ndarray:
        """The hash of the value of each of ``rows`` (:func:`_hashes`): each dictionary entry's,
        taken by code."""
        return np.concatenate([_hashes(d) for d in self.dictionary])[self.codes[rows]]

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
        # The commits' chunks are merged as a binary counter carries (a chunk with the one before
        # it while that one is not twice as long): each is more than twice the next, so there
        # are a few (``is_in`` hashes its value set once per chunk), and a value is copied a few
        # times. Merging them all every few commits copied every value appended since reading, a
        # long run's most, again and again. The chunks that carry are found first and concatenated
        # once. The chunk read from the table stays as it is (copying it cost 20 ms at 10M triples).
        start, size = len(self.dictionary) - 1, len(values)
        while start > 1 and len(self.dictionary[start - 1]) <= 2 * size:
            start -= 1
            size += len(self.dictionary[start])
        if start < len(self.dictionary) - 1:
            self.dictionary[start:] = [pa.concat_arrays(self.dictionary[start:])]
        self.codes = _grown(self.codes, used, np.arange(self.size, self.size + len(values)))
        self.size += len(values)


def _hashes(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each value's hash: equal values (nulls too) hash alike within a process. Strings (a key
    column's terms) are hashed in C from their buffers (:func:`string_hashes`: 2.5 ms for
    100,000 IRIs, with the GIL released, where Python's ``hash`` of each distinct one held it
    while the batch's other threads waited). Other values are dictionary-encoded and each
    distinct one hashed by Python once (no hash outlives the process: it is only compared with
    others made in it)."""
    if is_string_like(values.type):
        return string_hashes(values)
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    encoded = pc.dictionary_encode(values, null_encoding="encode")
    dictionary = encoded.dictionary
    hashes = np.fromiter(map(hash, dictionary.to_pylist()), np.int64, len(dictionary)).view(np.uint64)
    return hashes[encoded.indices.to_numpy(zero_copy_only=False)]


def _key_hashes(columns: Sequence[np.ndarray], rows: int) -> np.ndarray:
    """One hash per row of its whole key, from each key column's hashes (all 0 without any)."""
    key = np.zeros(rows, np.uint64)
    for hashes in columns:
        key = mixed(key + np.uint64(0x9E3779B97F4A7C15) ^ hashes)
    return key


def _spans(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position of the ranges ``lo[i]:hi[i]``, concatenated, with the range ``i`` each is of."""
    lengths = hi - lo
    owner = np.repeat(np.arange(len(lo)), lengths)
    return np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths) + lo[owner], owner


class _Index:
    """The rows of a column of numbers (a key column's codes: many rows each) by number, in
    sorted runs: one of the rows there when first asked, then one of each commit's rows, a run
    merged with the one before it while that one is no longer than it (as a binary counter
    carries: a few runs, each row sorted a few times). The wanted numbers are sorted and found in
    each run by binary search; nothing passes over every row, where a read's values fall in most
    of a path query's 2M answers."""

    def __init__(self) -> None:
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []    # each: its rows in number order, their numbers
        self._covered = 0                                        # the rows in a run

    def find(self, numbers: np.ndarray, used: int, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows, of the first ``used`` of ``numbers``, whose number is one of ``wanted``, each
        with the position in ``wanted`` of its number (a row per position its number is at)."""
        if used > self._covered:
            order = np.argsort(numbers[self._covered:used], kind="stable")
            self._runs.append((self._covered + order, numbers[self._covered:used][order]))
            self._covered = used
            while len(self._runs) > 1 and len(self._runs[-2][0]) <= len(self._runs[-1][0]):
                (rows, sorted_), (more, sorted_more) = self._runs.pop(-2), self._runs.pop()
                merged = np.concatenate([sorted_, sorted_more])
                order = np.argsort(merged, kind="stable")
                self._runs.append((np.concatenate([rows, more])[order], merged[order]))
        order = np.argsort(wanted, kind="stable")
        ordered = wanted[order]
        found, which = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for rows, sorted_ in self._runs:
            at, owner = _spans(np.searchsorted(sorted_, ordered, "left"), np.searchsorted(sorted_, ordered, "right"))
            found.append(rows[at])
            which.append(order[owner])
        return np.concatenate(found), np.concatenate(which)


class Change(NamedTuple):
    """What adding a change does to a :class:`Placed` table: the live rows it touches (their
    positions), the rows to write (the touched keys' new counts, then the new keys', zero counts
    left out), the index slots of the touched keys written again, in that order, and the new keys'
    whole-key hashes."""
    touched: np.ndarray
    written: pa.Table
    slots: np.ndarray
    hashes: np.ndarray


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
        self.keys: HashTable | None = None      # the live rows by whole-key hash, from the first change on

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

    def change(self, delta: pa.Table) -> Change:
        """What adding ``delta`` (signed counts) does. The rows of its keys are found by whole-key
        hash (:class:`~pipelines.string_index.HashTable`), their values compared with the keys'
        for the hashes that collide; the rows held are hashed and indexed at the first change. A
        change is summed by key only when two of its rows hash alike: an engine's change has a row
        per key already, and grouping Q11's 34,000 took as long as finding their rows does."""
        keys, count = list(self.columns), self.count
        if self.keys is None:
            live = np.flatnonzero(self.live[:self.used])
            hashes = _key_hashes([column.hashes(live) for column in self.columns.values()], len(live))
            self.keys = HashTable(hashes, live)

        def hashed(rows: pa.Table) -> np.ndarray:
            return _key_hashes([_hashes(rows[k]) for k in keys], rows.num_rows)
        wanted = hashed(delta)
        if repeats(wanted):
            summed = delta.group_by(keys, use_threads=False).aggregate([(count, "sum")])
            delta = summed.rename_columns([*keys, count]).select(delta.column_names).cast(delta.schema)
            wanted = hashed(delta)
        rows, at, slots = self.keys.find(wanted)
        live = self.live[rows]
        rows, at, slots = rows[live], at[live], slots[live]
        same = np.ones(len(rows), bool)
        for k in keys:
            same &= same_values(self.columns[k].take(rows), delta[k].take(at).combine_chunks())
        touched, at, slots = rows[same], at[same], slots[same]
        counts = delta[count].to_numpy()
        fresh = np.ones(delta.num_rows, dtype=bool)
        fresh[at] = False
        source = np.concatenate([at, np.flatnonzero(fresh)])
        moved = np.concatenate([self.counts[touched] + counts[at], counts[fresh]])
        kept = moved != 0
        again = kept[:len(at)]
        source = source[kept]
        i = delta.schema.get_field_index(count)
        written = delta.take(source).set_column(i, delta.schema.field(i), pa.array(moved[kept]))
        return Change(touched, written, slots[again], wanted[source[int(again.sum()):]])

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
        for f in distinct(files):
            f = int(f)
            mask = self.gone[f].copy() if f in self.gone else np.zeros(self.sizes[f], dtype=bool)
            mask[rows[files == f]] = True
            out[f] = mask
        return out

    def commit(self, version: int, change: Change, deleted: dict[int, np.ndarray],
               vectors: dict[int, dict], path: str | None) -> None:
        """``change`` made at ``version``: the touched rows dead, the written ones live in the
        new file ``path``, the deletion vectors grown."""
        self.version = version
        self.live[change.touched] = False
        self.gone.update(deleted)
        self.vectors.update(vectors)
        if path is None:
            return
        written = change.written
        n = written.num_rows
        self.files.append(path)
        self.sizes.append(n)
        for k, column in self.columns.items():
            column.append(written[k].combine_chunks(), self.used)
        self.counts = _grown(self.counts, self.used, written[self.count].to_numpy())
        self.file = _grown(self.file, self.used, np.full(n, len(self.files) - 1, dtype=np.int32))
        self.row = _grown(self.row, self.used, np.arange(n))
        self.live = _grown(self.live, self.used, np.ones(n, dtype=bool))
        rows = np.arange(self.used, self.used + n)
        again = len(change.slots)
        self.keys.row[change.slots] = rows[:again]
        self.keys = self.keys.rebuilt(self.live, n - again)
        self.keys.insert(change.hashes, rows[again:])
        self.used += n
