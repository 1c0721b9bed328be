"""Finding a state table's rows by a column's values: the index the delta rules, the probe and the
path operator look rows up through, so that a batch reads what its changes touch.

A :class:`Lookup` indexes one string column: its dictionary encoding, and the row positions sorted
by code with each code's first position (a CSR layout), in Arrow and numpy. Finding the rows of a
set of values is then a hash lookup per value and a gather of their positions. A run keeps the
indexes of the tables it holds across batches (:mod:`pipelines.engine.held`); :func:`finder`
builds them over tables read whole, once per table and column for as long as it lives (a
batch). A lookup by several columns goes through the index that finds the fewest rows
(:func:`narrowest`).
"""
from __future__ import annotations

import threading
from typing import Callable, Container, Iterable, Mapping, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT

from ..string_index import HashIndex
from .arrow import consolidate, holding
from .threads import Memo


class Find(Protocol):
    """The consolidated rows of a state table that hold, in each column of ``keys``, one of that
    column's values: only ``columns`` of them, if given (a lookup that needs a column or two of
    thousands of rows takes only those). Several keys narrow the rows as their most selective
    column does, and the others filter what it finds: a probe of a batch's (subject, object)
    pairs reads the view's rows of both, not every edge of its popular subjects."""

    def __call__(self, table: str, keys: Mapping[str, pa.Array], columns: list[str] | None = None) -> pa.Table: ...

    def count(self, table: str, column: str, values: pa.Array) -> np.ndarray:
        """How many of the table's consolidated rows hold each of ``values`` (distinct) in
        ``column``: what a node's membership in the graph needs, where its rows would be every
        triple of a popular node (a batch's 21,000 nodes had 434,000 in the view of every triple
        at 1M edges)."""
        ...


class Finder:
    """A :class:`Find` made of a function that finds rows and one that counts them."""

    def __init__(self, rows: Callable[[str, Mapping[str, pa.Array], list[str] | None], pa.Table],
                 counts: Callable[[str, str, pa.Array], np.ndarray]) -> None:
        self._rows, self._counts = rows, counts

    def __call__(self, table: str, keys: Mapping[str, pa.Array], columns: list[str] | None = None) -> pa.Table:
        return self._rows(table, keys, columns)

    def count(self, table: str, column: str, values: pa.Array) -> np.ndarray:
        return self._counts(table, column, values)


def counted(column: pa.Array | pa.ChunkedArray, values: pa.Array,
            weights: pa.Array | pa.ChunkedArray | None = None) -> np.ndarray:
    """How many of ``column``'s entries are each of ``values`` (distinct); the ``weights`` beside
    the entries summed instead, if given (a change's multiplicities)."""
    at = pc.index_in(column, value_set=values)
    held = np.asarray(at.is_valid())
    weight = None if weights is None else np.asarray(weights)[held]
    return np.bincount(np.asarray(at.fill_null(0))[held], weights=weight, minlength=len(values)).astype(np.int64)


#: A lookup of at most 1/_FEW of a column's distinct values may go through the column's hash of them.
_FEW = 16
#: ... once scanning the values for such lookups has cost what building the hash costs: about
#: this many scans (measured: 12-25 ms to index 215,000 IRIs by hash, :class:`HashIndex`, whose
#: kernels are C; 6-10 ms to scan them for 3,300 values, and 1 ms to find those by the hash): the
#: default of a column whose future lookups are unknown (a table read for one batch). A run's held
#: tables (:mod:`.held`) are looked up by the same columns at every batch, and hash at once.
_BUY = 2


class Lookup:
    """The row positions of each value of one string column."""

    def __init__(self, column: pa.ChunkedArray | pa.Array, buy: int = _BUY) -> None:
        """The index of ``column``, whose values are hashed once lookups of few of them have
        scanned them ``buy`` times (:data:`_BUY`; 0: at the first)."""
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        encoded = pc.dictionary_encode(column)
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        starts = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(encoded.dictionary)))])
        self._index(encoded.dictionary, np.argsort(codes, kind="stable"), starts, None, 0, buy)

    def _index(self, values: pa.Array, order: np.ndarray, starts: np.ndarray, hashed: HashIndex | None,
               scanned: int, buy: int) -> None:
        self.values = values
        self.order = order                  # the rows by code
        self.starts = starts                # each code's first entry in ``order``
        self._codes = hashed
        self._scanned = scanned             # values scanned for few wanted ones, while not hashed
        self._buy = buy                     # scans of the values before they are hashed
        self._hashing = threading.Lock()     # threads looking the column up build its hash once

    def extended(self, kept: np.ndarray | None, added: pa.ChunkedArray) -> "Lookup":
        """The index of the column made of this one's rows ``kept`` (a mask; None: all of them)
        followed by ``added``: the rows' codes are carried over and only the added values looked
        up (new ones appended to the values), where indexing the column afresh hashes every value
        again (0.44 s for the roots of a path's 1.65M reach rows). The rows by code are this
        index's, kept ones renumbered, merged with the added rows sorted apart: no sort of every
        row (0.2 s at that size). The hash index of the values, once built, is extended by the
        added ones (:meth:`HashIndex.extended`). Once values no row holds are half the values, the column is
        indexed afresh."""
        by_code = np.repeat(np.arange(len(self.values)), np.diff(self.starts))     # the code of each of ``order``
        order = self.order
        if kept is not None:
            keep = kept[order]
            order, by_code = (np.cumsum(kept) - 1)[order[keep]], by_code[keep]
        added = added.combine_chunks() if isinstance(added, pa.ChunkedArray) else added
        codes, fresh = self._numbered(added)
        values = pa.concat_arrays([self.values, fresh])
        held, adding = np.bincount(by_code, minlength=len(values)), np.bincount(codes, minlength=len(values))
        count = held + adding
        if 2 * np.count_nonzero(count) < len(values):
            all_codes = np.empty(len(order), np.int64)
            all_codes[order] = by_code
            afresh = Lookup(values.take(np.concatenate([all_codes, codes])), self._buy)
            afresh._scanned = self._scanned     # the column is looked up as often as before
            return afresh
        starts = np.concatenate([[0], np.cumsum(count)])
        held_starts = np.concatenate([[0], np.cumsum(held)])
        merged = np.empty(len(order) + len(codes), np.int64)
        merged[np.arange(len(order)) - held_starts[by_code] + starts[by_code]] = order     # a code's kept rows first
        sorted_added = np.argsort(codes, kind="stable")
        code = codes[sorted_added]
        added_starts = np.concatenate([[0], np.cumsum(adding)])
        merged[np.arange(len(codes)) - added_starts[code] + starts[code] + held[code]] = len(order) + sorted_added
        later = Lookup.__new__(Lookup)
        later._index(values, merged, starts, None if self._codes is None else self._codes.extended(values),
                     self._scanned, self._buy)
        return later

    def _numbered(self, added: pa.Array) -> tuple[np.ndarray, pa.Array]:
        """The code of each of ``added`` in this index extended by ``fresh``, the values of
        ``added`` it does not hold (numbered after its own, in the order they come). Through the
        hash of the values when built: a probe per distinct added value, where Arrow's
        ``index_in`` hashes every value of the column (0.15 s for a path's million roots)."""
        if self._codes is None or added.null_count:
            old = pc.index_in(added, value_set=self.values)
            new = pc.is_null(old)
            fresh = pc.unique(added.filter(new)).cast(self.values.type)
            at = pc.fill_null(pc.add(pc.index_in(added, value_set=fresh), len(self.values)), 0)
            return pc.if_else(new, at, old).to_numpy(zero_copy_only=False).astype(np.int64), fresh
        encoded = pc.dictionary_encode(added)
        codes = self._codes.positions(encoded.dictionary)
        fresh = codes < 0
        codes[fresh] = len(self.values) + np.arange(int(fresh.sum()))
        return (codes[encoded.indices.to_numpy(zero_copy_only=False)],
                encoded.dictionary.filter(pa.array(fresh)).cast(self.values.type))

    def _hash(self) -> HashIndex:
        """The values' hash index, built on first use and kept with the index."""
        with self._hashing:
            if self._codes is None:
                self._codes = HashIndex.of(self.values)
        return self._codes

    def _rows_of(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding a value of ``codes``, code by code (each code's range of the rows by
        code), with the position in ``codes`` of each one's code."""
        first = self.starts[codes]
        sizes = self.starts[codes + 1] - first
        gathered = np.repeat(first - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        return self.order[gathered], np.repeat(np.arange(len(codes)), sizes)

    def positions_of(self, codes: np.ndarray) -> np.ndarray:
        """The positions of the rows holding a value of ``codes`` (:meth:`codes_of`), in row order."""
        return np.sort(self._rows_of(codes)[0])

    def counts(self, wanted: pa.Array, alive: np.ndarray | None = None) -> np.ndarray:
        """How many rows hold each of ``wanted`` (distinct), only those ``alive`` marks (a mask by
        row) if given: each code's rows are a range of the rows by code, so nothing is gathered
        but, with a mask, their positions."""
        codes = self.codes_of(wanted)
        at = pc.index_in(wanted, value_set=self.values.take(codes))
        found = np.asarray(at.is_valid())
        if alive is None:
            per_code = self.starts[codes + 1] - self.starts[codes]
        else:
            rows, owner = self._rows_of(codes)
            per_code = np.bincount(owner, weights=alive[rows], minlength=len(codes)).astype(np.int64)
        out = np.zeros(len(wanted), np.int64)
        out[found] = per_code[at.filter(at.is_valid()).to_numpy(zero_copy_only=False)]
        return out

    def count_of(self, codes: np.ndarray) -> int:
        """How many rows hold a value of ``codes`` (what :meth:`positions_of` would gather)."""
        return int((self.starts[codes + 1] - self.starts[codes]).sum())

    def codes_of(self, wanted: pa.Array) -> np.ndarray:
        """The codes of the values of ``wanted`` the column holds. Few values are looked up in a
        hash of the column's values, built once scanning for them has cost about as much
        (``buy`` scans, :data:`_BUY`) and kept with the index (then a batch's lookups each cost what they find,
        not the column); many, and few until then, are probed the other way: the values scanned
        against a hash of ``wanted``. (Arrow's ``index_in`` would hash every value of the column
        at every call.)"""
        if len(wanted) * _FEW < len(self.values):
            if self._codes is None and self._scanned < self._buy * len(self.values):
                self._scanned += len(self.values)   # (threads may lose a count: it only delays the hash)
            else:
                codes = self._hash().positions(wanted)
                return codes[codes >= 0]
        return np.flatnonzero(pc.is_in(self.values, value_set=wanted).to_numpy(zero_copy_only=False))


def considered(columns: Iterable[str], indexed: Container[str]) -> list[str]:
    """The columns, of ``columns``, a lookup may go through: the first and those ``indexed``
    already (indexing another column costs a pass over the table, a lookup by it only what it
    finds)."""
    columns = list(columns)
    return [c for c in columns if c == columns[0] or c in indexed]


def narrowest(keys: Mapping[str, pa.Array], lookup: Callable[[str], Lookup],
              indexed: Container[str]) -> tuple[str, np.ndarray]:
    """Of the :func:`considered` columns of ``keys`` (distinct values by column), the one whose
    values lead to the fewest rows, with the codes of its values. ``lookup`` gives a column's
    index."""
    codes = {c: lookup(c).codes_of(keys[c]) for c in considered(keys, indexed)}
    column = min(codes, key=lambda c: lookup(c).count_of(codes[c]))
    return column, codes[column]


def take_holding(table: pa.Table, positions: np.ndarray, others: Mapping[str, pa.Array],
                 columns: list[str] | None) -> pa.Table:
    """The rows of ``table`` at ``positions`` that also hold a value of each column of ``others``
    (:func:`holding`, on those columns of those rows alone); only ``columns`` of them, if given."""
    if others:
        positions = positions[holding(table.select(list(others)).take(positions), others)]
    return (table if columns is None else table.select(columns)).take(positions)


def finder(read: Callable[[str], pa.Table]) -> Find:
    """Rows of the tables ``read`` gives whole, by their columns' values, consolidated (merge-on-read
    tables hold signed copies of a row), through a :class:`Lookup` built on a table's first
    lookup by that column: a path walk looks the same tables up round after round."""
    tables: Memo[str, pa.Table] = Memo()
    lookups: Memo[tuple[str, str], Lookup] = Memo()

    def consolidated(name: str) -> pa.Table:
        rows = read(name)
        return consolidate(rows, [c for c in rows.column_names if c != MULT]).cast(rows.schema).combine_chunks()

    def lookup(name: str, column: str) -> Lookup:
        table = tables.get(name, lambda: consolidated(name))
        return lookups.get((name, column), lambda: Lookup(table[column]))

    def find(name: str, keys: Mapping[str, pa.Array], columns: list[str] | None = None) -> pa.Table:
        table = tables.get(name, lambda: consolidated(name))
        column, codes = narrowest(keys, lambda c: lookup(name, c), {c for (n, c), _ in lookups.items() if n == name})
        others = {c: values for c, values in keys.items() if c != column}
        return take_holding(table, lookup(name, column).positions_of(codes), others, columns)

    return Finder(find, lambda name, column, values: lookup(name, column).counts(values))
