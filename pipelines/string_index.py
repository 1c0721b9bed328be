"""Strings hashed and looked up from their Arrow buffers, in C and numpy: no Python string per value.

Terms are strings everywhere in the lake, and a batch finds many of them in large columns: the
stored rows of a change's keys, the codes of a walk's vertices, the rows a MERGE touches. Done
through Python (``hash`` of each value, a ``dict`` of a column's values) that work holds the GIL,
so the batch's other threads wait on it: 0.87 s to build the dict of a million IRIs and 0.15 s to
look 100,000 up in it. Hashed here, by a C kernel over the Arrow buffers that releases the GIL
(:mod:`pipelines._kernels`), a million IRIs take about 25 ms; a :class:`HashIndex` of a column
is its values' hashes in an open-addressing table (:class:`HashTable`), and a lookup a probe or
two per wanted value, checked against the values themselves.
"""
from __future__ import annotations

import copy

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._kernels import hash_strings, table_find, table_insert

#: The hash of a null (any value would do: a hash is only ever a hint, checked by comparing values).
_NULL = np.uint64(0x5BD1E9955BD1E995)


def mixed(numbers: np.ndarray) -> np.ndarray:
    """``numbers`` (uint64) with their bits mixed (splitmix64's finaliser), so that every bit of a
    hash depends on every bit of what was summed into it."""
    numbers = (numbers ^ (numbers >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    numbers = (numbers ^ (numbers >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return numbers ^ (numbers >> np.uint64(31))


def is_string_like(kind: pa.DataType) -> bool:
    """Whether :func:`string_hashes` takes an array of type ``kind``."""
    if pa.types.is_dictionary(kind):
        return is_string_like(kind.value_type)
    return (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind) or pa.types.is_string_view(kind) or pa.types.is_binary_view(kind))


def same_values(held: pa.Array, values: pa.Array) -> np.ndarray:
    """Whether each of ``held`` equals the value beside it in ``values``, nulls equal to nulls: how
    a value a hash points at is told from another of the same hash."""
    values = values.cast(held.type)
    equal = pc.fill_null(pc.equal(held, values), False)
    return np.asarray(pc.or_(equal, pc.and_(held.is_null(), values.is_null())))


def string_hashes(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of each value of a string or binary array (nulls included): equal bytes hash
    alike in any array, slice or process. The C kernel :mod:`pipelines._kernels` reads each string
    straight from the array's buffers and hashes it with the GIL released (about 25 ns for an
    IRI, where a numpy hash of 8-byte words took 200 ns holding the GIL). Two values may still
    share a hash, so a caller compares the values it finds."""
    if isinstance(values, pa.ChunkedArray):     # chunk by chunk: combining them copies every string
        return np.concatenate([np.zeros(0, np.uint64), *map(string_hashes, values.chunks)])
    if pa.types.is_dictionary(values.type):
        hashes = string_hashes(values.dictionary)
        indices = values.indices
        out = hashes[indices.fill_null(0).to_numpy(zero_copy_only=False)] if len(hashes) else \
            np.full(len(values), _NULL, np.uint64)
        if indices.null_count:
            out[~np.asarray(indices.is_valid())] = _NULL
        return out
    if pa.types.is_string_view(values.type) or pa.types.is_binary_view(values.type):
        values = values.cast(pa.large_binary())
    if not is_string_like(values.type):
        raise TypeError(f"string_hashes takes strings or binaries, not {values.type}")
    hashes = np.empty(len(values), np.uint64)
    if len(values):
        _, offsets, data = values.buffers()
        wide = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
        hash_strings(offsets, b"" if data is None else data, values.offset, len(values), wide, hashes)
    if values.null_count:
        hashes[~np.asarray(values.is_valid())] = _NULL
    return hashes


class HashTable:
    """Rows by a 64-bit hash: an open-addressing hash table (linear probing) in two numpy arrays,
    a slot's hash and row, probed and filled by C kernels (:mod:`pipelines._kernels`) with the GIL
    released. Each wanted hash is a probe or two, where a binary search in sorted hashes cost
    ~25 cache misses per hash (the search was most of a 10,000-edge batch's merges
    into eleven path queries' 27M answers, and a third of finding a batch's terms in a column's
    values). Rows whose hashes collide each have a slot, all found along the probe chain, so a
    caller compares the values of the rows it finds. A consolidated table's live rows by
    whole-key hash (:mod:`.storage.vector_merge`) move in place: a commit points the slot of a key
    whose count moves at the key's new row, and a slot whose row died stays until the table is
    rebuilt (at half full, from the live rows). A column's values (:class:`HashIndex`) only grow,
    into a new table each time (:meth:`grown`)."""

    def __init__(self, hashes: np.ndarray, rows: np.ndarray, room: int = 0) -> None:
        """The table of ``rows`` (different keys, whose hashes are ``hashes``), a quarter full
        once it holds ``room`` rows more."""
        size = 16
        while size < 4 * (len(rows) + room):
            size *= 2
        self.hash = np.zeros(size, np.uint64)
        self.row = np.full(size, -1, np.int64)      # -1: an empty slot
        self.filled = 0
        self.insert(hashes, rows)

    def find(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows whose hash is one of ``wanted`` (dead ones too), each with the position in
        ``wanted`` of its hash and its slot."""
        wanted = np.ascontiguousarray(wanted, np.uint64)
        room = len(wanted) + 16         # most wanted hashes find one row, some none, few several
        while True:
            rows, owners, slots = (np.empty(room, np.int64) for _ in range(3))
            found = table_find(self.hash, self.row, wanted, rows, owners, slots)
            if found <= room:
                return rows[:found], owners[:found], slots[:found]
            room = found

    def insert(self, hashes: np.ndarray, rows: np.ndarray) -> None:
        """New keys' ``hashes`` (from different keys) and their ``rows``, each in a slot of its own."""
        self.filled += len(rows)
        table_insert(self.hash, self.row, np.ascontiguousarray(hashes, np.uint64),
                     np.ascontiguousarray(rows, np.int64))

    def rebuilt(self, live: np.ndarray | None, more: int) -> "HashTable":
        """This table with room for ``more`` rows: itself, or, once it would be half full, a new
        one of the slots whose row is ``live`` (a mask by row; None: every row)."""
        if 2 * (self.filled + more) <= len(self.row):
            return self
        held = np.flatnonzero(self.row >= 0)
        if live is not None:
            held = held[live[self.row[held]]]
        return HashTable(self.hash[held], self.row[held], more)

    def grown(self, hashes: np.ndarray, rows: np.ndarray) -> "HashTable":
        """A new table of this one's rows and ``rows`` (of ``hashes``); this one stays as it is."""
        table = self.rebuilt(None, len(rows))
        if table is self:
            table = copy.copy(self)
            table.hash, table.row = self.hash.copy(), self.row.copy()
        table.insert(hashes, rows)
        return table


class HashIndex:
    """The position of each of some distinct strings, found by hash (a :class:`HashTable` of
    their hashes). Immutable: :meth:`extended` gives a new index, so a reader of the older one
    (a batch that started before a commit) keeps what it had."""

    def __init__(self, values: pa.Array, table: HashTable) -> None:
        self.values = values
        self._table = table             # each value's position by its hash

    @classmethod
    def of(cls, values: pa.Array) -> "HashIndex":
        """The index of ``values`` (distinct)."""
        return cls(values, HashTable(string_hashes(values), np.arange(len(values))))

    def positions(self, wanted: pa.Array) -> np.ndarray:
        """The position of each of ``wanted`` among the values, -1 where absent. The values whose
        hash is a wanted one's are compared with it: a value's own position is always among them."""
        found = np.full(len(wanted), -1, np.int64)
        rows, owners, _ = self._table.find(string_hashes(wanted))
        same = same_values(self.values.take(rows), wanted.take(owners))
        found[owners[same]] = rows[same]
        return found

    def extended(self, values: pa.Array) -> "HashIndex":
        """The index of ``values``: this index's values followed by fresh ones (distinct, none of
        them held), their hashes added to a new table."""
        size = len(self.values)
        return HashIndex(values, self._table.grown(string_hashes(values.slice(size)), np.arange(size, len(values))))
